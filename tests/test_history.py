"""The SQLite history: runs, harness attempts, versioned migrations, concurrent writers."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.model.ports import RunResult
from engine.runtime.history import (
    SCHEMA_VERSION,
    HistoryError,
    NewAttempt,
    RetryConflict,
    history_path,
    migrate,
    open_history,
)


def _attempt(target: str = "echo hi", **overrides: object) -> NewAttempt:
    values: dict[str, object] = {
        "invocation_id": "inv-1",
        "runner": "cmd",
        "target": target,
        "input_hash": "i",
        "target_content_hash": "c",
        "conditions_fp": "f",
        "outcome": "pass",
    }
    values.update(overrides)
    return NewAttempt(**values)  # type: ignore[arg-type]


def test_fresh_database_is_current_version_in_wal_mode(tmp_path: Path) -> None:
    with open_history(tmp_path) as history:
        assert history.path == tmp_path / ".loops" / "history.db"
    db = sqlite3.connect(history_path(tmp_path))
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_run_rows_round_trip(tmp_path: Path) -> None:
    with open_history(tmp_path) as history:
        history.record_run_start("r1", "demo", started_at="2026-01-01T00:00:00+00:00")
        history.record_run_start("r2", "child", parent_run_id="r1", depth=1)
        assert history.run("r1") is not None
        assert history.run("r1").outcome is None  # type: ignore[union-attr]
        result = RunResult(
            run_id="r1",
            loop="demo",
            final_state="done",
            outcome="success",
            terminated_by="terminal",
            steps=4,
            duration_ms=10,
            cost_usd=0.25,
        )
        history.record_run_end(result)
        row = history.run("r1")
        assert row is not None
        assert (row.outcome, row.terminated_by, row.final_state, row.steps, row.cost_usd) == (
            "success",
            "terminal",
            "done",
            4,
            0.25,
        )
        assert row.started_at == "2026-01-01T00:00:00+00:00"
        assert row.ended_at is not None
        child = history.run("r2")
        assert child is not None and (child.parent_run_id, child.depth) == ("r1", 1)
        assert [r.run_id for r in history.runs(loop="demo")] == ["r1"]
        assert {r.run_id for r in history.runs()} == {"r1", "r2"}


def test_run_end_without_start_still_creates_the_row(tmp_path: Path) -> None:
    with open_history(tmp_path) as history:
        refused = RunResult(
            run_id="r9",
            loop="bad",
            final_state=None,
            outcome="error",
            terminated_by="error",
            steps=0,
            duration_ms=0,
            error="invalid loop",
        )
        history.record_run_end(refused)
        row = history.run("r9")
        assert row is not None and row.error == "invalid loop" and row.outcome == "error"


def test_attempts_round_trip_and_retry_supersedes(tmp_path: Path) -> None:
    with open_history(tmp_path) as history:
        first = history.record_attempt(
            _attempt(outcome="error", timed_out=True, errored=True, git_dirty=False)
        )
        assert first.authoritative
        assert first.timed_out is True and first.git_dirty is False
        retry = history.record_attempt(
            _attempt(outcome="pass", retry_of=first.id, attempt_kind="retry", exit_passed=True)
        )
        old = history.attempt(first.id)
        assert old is not None and old.superseded_by == retry.id and not old.authoritative
        again = history.attempt(retry.id)
        assert again is not None and again.exit_passed is True and again.retry_of == first.id
        assert [a.id for a in history.attempts("echo hi")] == [retry.id, first.id]
        assert [a.id for a in history.attempts("echo hi", authoritative_only=True)] == [retry.id]
        assert history.attempts("other") == []


def test_attempts_since_filters_by_date(tmp_path: Path) -> None:
    with open_history(tmp_path) as history:
        history.record_attempt(_attempt(), created_at="2026-01-01T10:00:00.000000+00:00")
        history.record_attempt(_attempt(), created_at="2026-03-01T10:00:00.000000+00:00")
        assert len(history.attempts("echo hi", since="2026-02-01")) == 1
        assert len(history.attempts("echo hi", since="2026-01-01")) == 2


def test_v1_database_rows_survive_migration(tmp_path: Path) -> None:
    path = history_path(tmp_path)
    path.parent.mkdir()
    old = sqlite3.connect(path, isolation_level=None)
    migrate(old, target=1)
    assert old.execute("PRAGMA user_version").fetchone()[0] == 1
    old.execute(
        "INSERT INTO runs (run_id, loop, started_at, ended_at, outcome, steps, cost_usd) "
        "VALUES ('old-run', 'legacy', '2025-01-01T00:00:00+00:00', "
        "'2025-01-01T00:01:00+00:00', 'failure', 7, 0.5)"
    )
    old.close()

    with open_history(tmp_path) as history:
        row = history.run("old-run")
        assert row is not None
        assert (row.loop, row.outcome, row.steps, row.cost_usd) == ("legacy", "failure", 7, 0.5)
        assert (row.parent_run_id, row.depth) == (None, 0)  # columns added by v2
        history.record_attempt(_attempt())  # table added by v3
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_v4_attempt_rows_survive_the_git_branch_migration(tmp_path: Path) -> None:
    path = history_path(tmp_path)
    path.parent.mkdir()
    old = sqlite3.connect(path, isolation_level=None)
    migrate(old, target=4)
    old.execute(
        "INSERT INTO harness_attempts (invocation_id, runner, target, input_hash, "
        "target_content_hash, conditions_fp, outcome, git_head, git_dirty, created_at) "
        "VALUES ('old-inv', 'cmd', 'make test', 'i', 'c', 'f', 'fail', 'abc123', 1, "
        "'2025-06-01T00:00:00.000000+00:00')"
    )
    old.close()

    with open_history(tmp_path) as history:
        [legacy] = history.invocation("old-inv")
        assert (legacy.outcome, legacy.git_head, legacy.git_dirty) == ("fail", "abc123", True)
        assert legacy.git_branch is None  # recorded before v5: no branch known
        fresh = history.record_attempt(_attempt(git_head="def456", git_branch="feature-x"))
        again = history.attempt(fresh.id)
        assert again is not None and again.git_branch == "feature-x"
        assert [a.id for a in history.attempts("make test")] == [legacy.id]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 9
    columns = {r[1] for r in db.execute("PRAGMA table_info(harness_attempts)")}
    assert "git_branch" in columns
    assert db.execute(
        "SELECT git_branch FROM harness_attempts WHERE invocation_id = 'old-inv'"
    ).fetchone() == (None,)


def test_v7_suite_cases_are_of_known_cost_after_the_cost_known_migration(tmp_path: Path) -> None:
    """v8 adds suite_cases.cost_known (an agent that reported no cost): a case recorded before
    it had its cost counted as known, and reads back so."""
    path = history_path(tmp_path)
    path.parent.mkdir()
    old = sqlite3.connect(path, isolation_level=None)
    migrate(old, target=7)
    old.execute(
        "INSERT INTO suite_cases (run_id, arm, case_id, case_key, subject_hash, status, "
        "cost_usd, created_at) VALUES ('r1', 'subject', 'c1', 'k1', 'h', 'ok', 0.5, "
        "'2026-06-01T00:00:00.000000+00:00')"
    )
    old.close()
    with open_history(tmp_path) as history:
        [case] = history.suite_cases("r1")
    assert (case.cost_usd, case.cost_known) == (0.5, True)


def test_failed_migration_rolls_back_whole_transaction(tmp_path: Path) -> None:
    path = history_path(tmp_path)
    path.parent.mkdir()
    db = sqlite3.connect(path, isolation_level=None)
    migrate(db, target=1)
    # Sabotage: a column the v2 migration wants to add already exists.
    db.execute("ALTER TABLE runs ADD COLUMN depth INTEGER")
    with pytest.raises(sqlite3.OperationalError):
        migrate(db)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "harness_attempts" not in names


def test_newer_database_is_refused(tmp_path: Path) -> None:
    path = history_path(tmp_path)
    path.parent.mkdir()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(HistoryError, match="newer than this"):
        open_history(tmp_path)


def test_garbage_file_is_a_clear_error(tmp_path: Path) -> None:
    path = history_path(tmp_path)
    path.parent.mkdir()
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(HistoryError, match="cannot open the history database"):
        open_history(tmp_path)


def test_a_database_another_process_locks_is_not_called_damaged(tmp_path: Path) -> None:
    """A process holding the database exclusively (a `sqlite3` shell in exclusive locking mode)
    made opening it say 'move the file aside; ll-loop creates a new one': advice that hides
    every recorded row, for a database that only had to be waited for."""
    with open_history(tmp_path):
        pass
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "db.execute('PRAGMA locking_mode = EXCLUSIVE')\n"
            "db.execute('BEGIN EXCLUSIVE')\n"
            "db.execute('SELECT count(*) FROM runs').fetchall()\n"
            "print('held', flush=True)\n"
            "sys.stdin.readline()\n",
            str(history_path(tmp_path)),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(HistoryError, match="locked") as caught:
            open_history(tmp_path, wait=0.2)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert caught.value.hint is not None
    assert "another process holds it" in caught.value.hint
    assert "aside" not in caught.value.hint
    with open_history(tmp_path) as history:  # once let go, it opens as it was
        assert history.runs() == []


def test_concurrent_processes_all_write(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from engine.runtime.history import NewAttempt, open_history
        n = sys.argv[1]
        with open_history(Path({str(tmp_path)!r})) as h:
            for i in range(25):
                h.record_run_start(f"run-{{n}}-{{i}}", "par")
                h.record_attempt(NewAttempt(invocation_id=n, runner="cmd", target="t",
                    input_hash="i", target_content_hash="c", conditions_fp="f",
                    outcome="pass", sample_index=i))
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(n)]) for n in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    with open_history(tmp_path) as history:
        assert len(history.runs(loop="par", limit=1000)) == 100
        assert len(history.attempts("t")) == 100


def test_two_retries_of_one_attempt_record_only_the_first_to_end(tmp_path: Path) -> None:
    """Two `--retry-of 1` started together are both admitted (attempt 1 is not superseded yet
    when each starts); the one that ends second must not replace it again, or the retry chain
    counts twice."""
    with open_history(tmp_path) as history:
        timed_out = history.record_attempt(_attempt(outcome="error", timed_out=True))
        first = history.record_attempt(_attempt(retry_of=timed_out.id, attempt_kind="retry"))
        with pytest.raises(RetryConflict, match=f"replaced by attempt {first.id} while"):
            history.record_attempt(_attempt(retry_of=timed_out.id, attempt_kind="retry"))
        rows = history.attempts("echo hi")
    assert [(r.id, r.superseded_by, r.retry_of) for r in rows] == [
        (first.id, None, timed_out.id),
        (timed_out.id, first.id, None),
    ]


def test_a_resumed_runs_start_reopens_its_row_but_a_late_start_erases_no_later_end(
    tmp_path: Path,
) -> None:
    """A stopped run, resumed, kept its stop as its end in the database: `history` showed
    `inconclusive (stopped)` while it ran again. A resume's start reopens the row; written
    late (kept in the spool while the database was busy) it leaves a later end alone."""
    from engine.runtime.history import run_start_write

    stopped = RunResult(
        run_id="r1",
        loop="l",
        final_state="a",
        outcome="inconclusive",
        terminated_by="stopped",
        steps=1,
        duration_ms=5,
    )
    with open_history(tmp_path) as history:
        history.record_run_start("r1", "l", started_at="2026-12-06T08:00:00.000Z")
        history.record_run_end(stopped, ended_at="2026-12-06T08:01:00.000Z")
        history.apply(run_start_write("r1", "l", "2026-12-06T09:00:00.000Z", resumed=True))
        row = history.run("r1")
        assert row is not None and (row.ended_at, row.outcome, row.terminated_by) == (
            None,
            None,
            None,
        )
        assert row.started_at == "2026-12-06T08:00:00.000Z"  # the run's first start
        history.record_run_end(stopped, ended_at="2026-12-06T09:05:00.000Z")
        history.apply(run_start_write("r1", "l", "2026-12-06T09:00:00.000Z", resumed=True))
        row = history.run("r1")
        assert row is not None and row.ended_at == "2026-12-06T09:05:00.000Z"


def test_a_large_suite_runs_rows_are_read_in_little_memory(tmp_path: Path) -> None:
    """A resumed suite run (and its report) reads every row the run recorded: 20,000 cases x 7
    judges took 273 MB, SQLite making a new string for each of the 14 texts of each row (the
    run id, suite, judge names, the case's key...). Rows are slotted now, made as they are
    fetched, and a text the rows repeat is one string."""
    import tracemalloc

    from engine.runtime.history import SuiteCaseRow, SuiteJudgementRow, SuiteRunRow

    (tmp_path / ".loops").mkdir()
    run = "20260101-000000-abcdef"
    judges = ["exits", "matches", "format", "size", "quality"]
    with open_history(tmp_path) as history:
        history.record_suite_run(SuiteRunRow(run, "suite", "s.yaml", "h" * 64, "f" * 64, "x"))
        for batch in range(4):
            ids = [f"case-{batch}-{i:04d}" for i in range(500)]
            history.record_suite_cases(
                [SuiteCaseRow(run, "subject", c, c * 4, "s" * 64, "ok") for c in ids],
                [
                    SuiteJudgementRow(
                        run,
                        "suite",
                        "subject",
                        c,
                        c * 4,
                        j,
                        "check",
                        "ok",
                        "f" * 64,
                        value=1.0,
                        is_bool=True,
                        passed=True,
                        sample_status="ok",
                        sample_value=1.0,
                    )
                    for c in ids
                    for j in judges
                ],
            )
    with open_history(tmp_path) as history:
        tracemalloc.start()
        try:
            rows = history.suite_judgements(run)
            held, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert len(rows) == 10_000 and rows[7].passed is True
    assert rows[0].judge is rows[5].judge and rows[0].case_key is rows[4].case_key
    # ~1 KB a row with a dict per row and a string per value; ~0.33 KB now
    assert held / len(rows) < 600, f"{held / len(rows):.0f} bytes per row"


def test_a_database_that_cannot_be_opened_is_not_left_open(tmp_path: Path) -> None:
    """Opening a damaged or too new database raised with its connection still open, freed only
    when the garbage collector found the cycle through the traceback: a program (or a worker)
    that kept trying held a file descriptor per try."""
    import gc

    damaged, newer = tmp_path / "damaged", tmp_path / "newer"
    history_path(damaged).parent.mkdir(parents=True)
    history_path(damaged).write_bytes(b"this is not a database" * 100)
    history_path(newer).parent.mkdir(parents=True)
    db = sqlite3.connect(history_path(newer))
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()

    def open_files() -> list[str]:
        fds = Path("/proc/self/fd")
        return [str(p.readlink()) for p in fds.iterdir() if p.is_symlink() and p.exists()]

    gc.disable()
    try:
        for root in (damaged, newer):
            with pytest.raises(HistoryError):
                open_history(root)
        assert [f for f in open_files() if f.startswith(str(tmp_path))] == []
    finally:
        gc.enable()


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_history_db_that_is_not_a_file_is_named_for_what_it_is(tmp_path: Path, kind: str) -> None:
    """A FIFO at .loops/history.db was opened by SQLite: `ll-loop history` said "cannot open the
    history database ...: disk I/O error" (a directory: "unable to open database file"). It is
    refused before SQLite opens it, saying what stands there; a run keeps its row in the spool."""
    import os

    from tests import cli

    (tmp_path / ".loops").mkdir()
    place = tmp_path / ".loops" / "history.db"
    os.mkfifo(place) if kind == "fifo" else place.mkdir()
    what = "a pipe (FIFO)" if kind == "fifo" else "a directory"
    with pytest.raises(HistoryError) as refused:
        open_history(tmp_path)
    assert refused.value.message == f"{place} is {what}, not a database file"
    shown = cli.ll_loop(tmp_path, "history")
    assert shown.code == 2 and f"error: {place} is {what}, not a database file" in shown.stderr
    assert "disk I/O" not in shown.stderr and "unable to open" not in shown.stderr
