"""A history row is never lost to a busy database: another process holds `.loops/history.db`
(a `sqlite3` session in a write transaction) past the busy timeout, the row waits in
`.loops/history-spool/`, and the next command that opens the history writes it, once."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine.model.ports import RunResult
from engine.runtime.history import (
    NewAttempt,
    RunRecorder,
    SuiteCaseRow,
    SuiteJudgementRow,
    SuiteRunRow,
    history_path,
    open_history,
)
from engine.runtime.history_spool import spool_dir
from tests.cli import BIN, ll_harness, ll_loop
from tests.run_helpers import write_loop

QUICK = """
name: quick
initial: go
scope: ["x.txt"]
states:
  go:
    action: "echo hi"
    next: done
  done: {terminal: true}
"""

SHORT_WAIT = {"LL_HISTORY_BUSY_TIMEOUT": "0.3"}

HOLDER = textwrap.dedent(
    """
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("BEGIN IMMEDIATE")
    print("held", flush=True)
    sys.stdin.readline()  # until the test lets go
    db.execute("COMMIT")
    """
)


@contextmanager
def held(db: Path) -> Iterator[None]:
    """Another process holds a write transaction on `db` (as `sqlite3 db` + `BEGIN IMMEDIATE`)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def _project(tmp_path: Path) -> Path:
    """A project whose history exists (the first run made it)."""
    write_loop(tmp_path, QUICK, "quick.yaml")
    with open_history(tmp_path):
        pass
    return history_path(tmp_path)


def _run_ids(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [row[0] for row in con.execute("SELECT run_id FROM runs ORDER BY rowid")]


def test_a_run_finishing_while_another_process_holds_the_database_keeps_its_row(
    tmp_path: Path,
) -> None:
    db = _project(tmp_path)
    with held(db):
        ran = ll_loop(tmp_path, "run", "quick.yaml", "--json", env=SHORT_WAIT, process=True)
        assert ran.code == 0, ran.stderr
        run_id = ran.json["run_id"]
        assert _run_ids(db) == []
    waiting = sorted(spool_dir(db).iterdir())
    assert [p.name.split("-")[-1] for p in waiting] == ["run_start.json", "run_end.json"]
    assert str(spool_dir(db)) in ran.stderr and "is written by the next" in ran.stderr
    assert ran.stderr.count("warning:") == 1  # once per run, not once per row
    # the next command that opens the history writes the row, once
    listed = ll_loop(tmp_path, "history", "--json", process=True)
    assert [r["run_id"] for r in listed.json["runs"]] == [run_id]
    assert listed.json["runs"][0]["outcome"] == "success"
    assert list(spool_dir(db).iterdir()) == []
    ll_loop(tmp_path, "history", process=True)
    assert _run_ids(db) == [run_id]


def test_a_kept_row_written_twice_is_one_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes draining at once, or a kill between the commit and the unlink."""
    monkeypatch.setenv("LL_HISTORY_BUSY_TIMEOUT", "0.3")
    db = _project(tmp_path)
    with held(db), open_history(tmp_path) as history:
        history.notify = lambda message: None
        history.record_run_start("r1", "quick", started_at="2026-01-01T00:00:00.000Z")
        attempt = history.record_attempt(
            NewAttempt(
                invocation_id="inv",
                runner="cmd",
                target="true",
                input_hash="i",
                target_content_hash="c",
                conditions_fp="f",
                outcome="pass",
            )
        )
        assert attempt.id == 0
    copies = tmp_path / "copies"
    shutil.copytree(spool_dir(db), copies)
    for _ in range(2):
        with open_history(tmp_path) as history:
            assert history.run("r1") is not None
            assert history.run("r1").started_at == "2026-01-01T00:00:00.000Z"  # type: ignore[union-attr]
            assert len(history.attempts("true")) == 1
        shutil.copytree(copies, spool_dir(db), dirs_exist_ok=True)


def test_a_harness_sample_recorded_while_the_database_is_held_is_not_lost(
    tmp_path: Path,
) -> None:
    db = _project(tmp_path)
    with held(db):
        ran = ll_harness(tmp_path, "cmd", "true", "--exit-code", "0", env=SHORT_WAIT, process=True)
        assert ran.code == 0, ran.stderr
        assert "1 waiting in .loops/history-spool/" in ran.stdout
        assert "waits in" in ran.stderr
    for _ in range(2):
        history = ll_harness(tmp_path, "history", "true", "--json", process=True)
        assert history.code == 0, history.stderr
        with open_history(tmp_path) as opened:
            assert [a.outcome for a in opened.attempts("true")] == ["pass"]


def test_a_suite_s_cases_kept_while_the_database_is_held_are_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_HISTORY_BUSY_TIMEOUT", "0.3")
    db = _project(tmp_path)
    with open_history(tmp_path) as history:
        history.record_suite_run(SuiteRunRow("s1", "suite", "s.yaml", "h", "fp", "2026-01-01"))
    case = SuiteCaseRow("s1", "subject", "c1", "k1", "sh", "ok", record=b"\x00\xffzlib")
    judgement = SuiteJudgementRow("s1", "suite", "subject", "c1", "k1", "j", "check", "ok", "fp")
    told: list[str] = []
    with held(db), open_history(tmp_path) as history:
        history.notify = told.append
        history.record_suite_cases([case], [judgement])
        history.finish_suite_run("s1", result="PASS", cost_usd=0.5)
    assert len(told) == 2 and all(str(spool_dir(db)) in m for m in told)
    for _ in range(2):
        with open_history(tmp_path) as history:
            assert [c.case_id for c in history.suite_cases("s1")] == ["c1"]
            assert history.suite_record("s1", "subject", "c1") == b"\x00\xffzlib"
            assert [j.judge for j in history.suite_judgements("s1")] == ["j"]
            assert history.suite_run("s1").result == "PASS"  # type: ignore[union-attr]


def test_a_held_database_does_not_hold_back_a_run_s_first_step(tmp_path: Path) -> None:
    """The start row waits 2 s at most (then the spool keeps it); the end row the full timeout,
    and when the holder lets go in time it writes both, the start's own time kept."""
    db = _project(tmp_path)
    with held(db):
        run = subprocess.Popen(
            [str(BIN / "ll-loop"), "run", "quick.yaml", "--json"],
            cwd=tmp_path,
            env={**os.environ, "LL_HISTORY_BUSY_TIMEOUT": "30"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not _finished(tmp_path):
            time.sleep(0.1)
        assert _finished(tmp_path), "the run waited for the database before its steps"
        assert run.poll() is None  # its end row still waits for the database
    out, err = run.communicate(timeout=30)
    assert run.returncode == 0, err
    run_id = json.loads(out)["run_id"]
    with open_history(tmp_path) as history:
        row = history.run(run_id)
    assert row is not None and row.outcome == "success"
    assert row.started_at < row.ended_at  # type: ignore[operator]
    assert list(spool_dir(db).iterdir()) == []


def _finished(root: Path) -> bool:
    """Has the (only) run written its last event?"""
    logs = list((root / ".loops" / "runs").glob("*/events.jsonl"))
    return bool(logs) and '"loop_complete"' in logs[0].read_text()


def test_a_retry_kept_in_the_spool_replaces_its_attempt_when_written(tmp_path: Path) -> None:
    db = _project(tmp_path)
    command = "test -f ok || sleep 5"
    first = ll_harness(tmp_path, "cmd", command, "--exit-code", "0", "--timeout", "0.5")
    with open_history(tmp_path) as history:
        (timed_out,) = history.attempts(command)
    assert timed_out.timed_out, first.stdout
    (tmp_path / "ok").write_text("")
    with held(db):
        retry = ll_harness(
            tmp_path,
            "cmd",
            command,
            "--exit-code",
            "0",
            "--timeout",
            "0.5",
            "--retry-of",
            str(timed_out.id),
            env=SHORT_WAIT,
            process=True,
        )
        assert retry.code == 0, retry.stdout + retry.stderr
        assert "waiting in .loops/history-spool/" in retry.stdout
    with open_history(tmp_path) as history:
        rows = history.attempts(command)
    assert [(a.outcome, a.authoritative) for a in rows] == [("pass", True), ("error", False)]


def test_a_run_s_end_written_before_its_kept_start_still_starts_at_its_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder lets go while the end row waits, after its opener found the spool busy."""
    db = _project(tmp_path)
    monkeypatch.setenv("LL_HISTORY_BUSY_TIMEOUT", "10")
    told: list[str] = []
    recorder = RunRecorder(tmp_path, warn=told.append)
    result = RunResult("r9", "quick", "done", "success", "terminal", 1, 5)
    with held(db):
        recorder.start("r9", "quick", started_at="2026-01-01T00:00:00.000Z")
        assert len(list(spool_dir(db).iterdir())) == 1
        ending = threading.Thread(target=recorder.end, args=(result,))
        ending.start()
        time.sleep(1.0)
    ending.join(timeout=30)
    with open_history(tmp_path) as history:
        row = history.run("r9")
    assert row is not None and row.started_at == "2026-01-01T00:00:00.000Z"
    assert row.outcome == "success" and len(told) == 1


def test_a_busy_timeout_that_is_no_number_is_said_not_replaced(tmp_path: Path) -> None:
    """A command refuses it in one sentence, a run before its first step (it used to run and
    keep its row in the spool, the value found only when the history was written)."""
    db = _project(tmp_path)
    bad = {"LL_HISTORY_BUSY_TIMEOUT": "soon"}
    listed = ll_loop(tmp_path, "history", env=bad)
    assert listed.code == 2
    assert "LL_HISTORY_BUSY_TIMEOUT='soon' is not a number of seconds" in listed.stderr
    assert "Traceback" not in listed.stderr
    ran = ll_loop(tmp_path, "run", "quick.yaml", "--json", env=bad)
    assert ran.code == 2 and ran.stderr.count("LL_HISTORY_BUSY_TIMEOUT='soon'") == 1
    assert ran.json["steps"] == 0 and ran.json["run_id"] is None
    ll_loop(tmp_path, "history")
    assert _run_ids(db) == []


def test_a_fifo_or_a_link_in_the_spool_is_passed_over_not_waited_on(tmp_path: Path) -> None:
    """Every command drains the spool when it opens the history: a FIFO named like a kept
    write there would have hung each of them at its open (and a link been followed)."""
    spool = spool_dir(_project(tmp_path))
    spool.mkdir(parents=True, exist_ok=True)
    os.mkfifo(spool / "00000000000000000001-1-000000-run_end.json")
    (spool / "00000000000000000002-1-000000-run_end.json").symlink_to("/etc/hostname")
    done = subprocess.run(
        [str(BIN / "ll-loop"), "history", "--json"], cwd=tmp_path, capture_output=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in spool.iterdir()) == [
        "00000000000000000001-1-000000-run_end.json",
        "00000000000000000002-1-000000-run_end.json",
    ]  # left for a person to look at


def test_a_kept_write_that_is_json_but_not_ours_is_left_not_raised(tmp_path: Path) -> None:
    """A file in the spool that reads as JSON with a known kind but rows of the wrong shape (a
    row too short, too long, a list where a number goes) made every command that opens the
    history an internal error (IndexError, sqlite3.ProgrammingError). It is left for a
    person to look at, and the good writes around it are written."""
    db = _project(tmp_path)
    spool = spool_dir(db)
    spool.mkdir(parents=True, exist_ok=True)
    strange = {
        "1": {"kind": "suite_cases", "cases": [[1]], "judgements": []},
        "2": {"kind": "suite_cases", "cases": [], "judgements": [[1]]},
        "3": {
            "kind": "run_start",
            "run_id": "r",
            "loop": "l",
            "started_at": "t",
            "parent_run_id": None,
            "depth": [1],
        },
        "4": {"kind": "run_end", "run_id": 7, "loop": {}, "ended_at": 1},
    }
    for n, write in strange.items():
        (spool / f"0000000000000000000{n}-1-000000-{write['kind']}.json").write_text(
            json.dumps(write)
        )
    good = RunRecorder(tmp_path, warn=print)
    good.start("good-run", "quick")
    done = subprocess.run(
        [str(BIN / "ll-loop"), "history", "--json"], cwd=tmp_path, capture_output=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert [r["run_id"] for r in json.loads(done.stdout)["runs"]] == ["good-run"]
    assert len(list(spool.iterdir())) == len(strange)


def test_a_write_the_disk_refuses_leaves_no_half_file_in_the_spool(tmp_path: Path) -> None:
    """A full disk refused the kept write's bytes, and its temporary file stayed in the spool,
    one more for every refused write. (The disk is made full for one process: a file size
    limit, with SIGXFSZ ignored, refuses the write as ENOSPC would.)"""
    db = _project(tmp_path)
    script = textwrap.dedent(
        f"""
        import resource, signal
        from pathlib import Path
        from engine.runtime import history_spool
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
        for _ in range(2):
            try:
                history_spool.keep(Path({str(db)!r}), {{"kind": "run_end", "x": "y" * 1000}})
            except OSError as exc:
                print(exc.errno)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
    )  # fmt: skip
    assert done.stdout.split() == ["27", "27"], done.stderr
    assert list(spool_dir(db).iterdir()) == []


def test_a_kept_row_the_database_cannot_take_leaves_the_history_readable(tmp_path: Path) -> None:
    """A run kept its row for a database it could not write (here its runs table is damaged;
    a read-only file does the same), and from then on every command that opened the history
    failed, `ll-harness history` of a target whose rows read fine among them (exit 2): the
    drain raised. The kept rows now stay where they are, said in one warning."""
    db = _project(tmp_path)
    with open_history(tmp_path) as history:
        for i in range(300):  # the runs table gets pages of its own
            history.record_run_start(f"run-{i:04d}", "filler" + "x" * 200)
    ran = ll_harness(tmp_path, "cmd", "true", "--exit-code", "0", process=True)
    assert ran.code == 0, ran.stderr
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [
            n
            for (n,) in conn.execute(
                "SELECT pageno FROM dbstat WHERE name IN "
                "('runs', 'sqlite_autoindex_runs_1', 'runs_by_loop') AND pageno > 2"
            )
        ]
    with db.open("r+b") as damaged:
        for page in pages:
            damaged.seek((page - 1) * size)
            damaged.write(b"\xff" * size)
    run = ll_loop(tmp_path, "run", "quick.yaml", process=True)
    assert run.code == 0, run.stderr
    kept = sorted(spool_dir(db).iterdir())
    assert len(kept) == 2 and "waits in" in run.stderr
    listed = ll_harness(tmp_path, "history", "true", "--json", process=True)
    assert listed.code == 0, listed.stderr
    assert json.loads(listed.stdout)["rows"] == 1
    assert listed.stderr.count("warning:") == 1 and "the 2 write(s) kept" in listed.stderr
    assert "Traceback" not in listed.stderr
    assert sorted(spool_dir(db).iterdir()) == kept  # not lost, not written half


def _damage(db: Path, *names: str) -> None:
    """Overwrite every page of these tables and indexes (the schema page stays whole)."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        marks = ", ".join("?" for _ in names)
        pages = [
            n
            for (n,) in conn.execute(
                f"SELECT pageno FROM dbstat WHERE name IN ({marks}) AND pageno > 1", names
            )
        ]
    assert pages
    with db.open("r+b") as damaged:
        for page in pages:
            damaged.seek((page - 1) * size)
            damaged.write(b"\xff" * size)


def test_a_sample_the_database_cannot_take_is_kept_not_lost(tmp_path: Path) -> None:
    """A sample ran, then the database refused its row for another reason than a lock (here a
    damaged index; a read-only file does the same): `ll-harness cmd` printed one error and
    exit 2, no report, and the sample's result was gone. It is kept in the spool as a busy
    database's would be, and the report says so."""
    db = _project(tmp_path)
    first = ll_harness(tmp_path, "cmd", "true", "--exit-code", "0", process=True)
    assert first.code == 0, first.stderr
    _damage(db, "attempts_by_invocation")
    ran = ll_harness(tmp_path, "cmd", "true", "--exit-code", "0", process=True)
    assert ran.code == 0, ran.stderr
    assert "1 waiting in .loops/history-spool/" in ran.stdout
    assert ran.stderr.count("warning:") == 1 and "cannot take it" in ran.stderr
    [kept] = spool_dir(db).iterdir()
    assert json.loads(kept.read_text())["attempt"]["target"] == "true"
