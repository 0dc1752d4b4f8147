"""The SQLite history database `.loops/history.db`: one row per run and per harness attempt (IO).

Why SQLite: several processes (parallel runs, `ll-harness --jobs`, nested runs) write at once, and
readers want SQL over the rows. WAL mode lets readers proceed while one writer writes; the busy
timeout makes concurrent writers wait instead of failing. `synchronous = NORMAL`: a power cut
may lose the last rows written, never the database. A write still refused when the busy timeout
ends (another process held the database all that time) is kept in `.loops/history-spool/` and
written by the next process that opens the history (`engine.runtime.history_spool`).

The schema is versioned with `PRAGMA user_version`. `MIGRATIONS` is an ordered list; opening a
database applies the missing ones in one transaction, so an old database is upgraded in place and
keeps its rows — it is never dropped and recreated. A database newer than this code is refused.
"""

from __future__ import annotations

import base64
import json
import math
import operator
import os
import re
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from engine.load.locate import not_a_file
from engine.load.project import ensure_dir, loops_dir, refuse_links
from engine.model.errors import LoopError, UsageError
from engine.model.ports import RunResult
from engine.model.terminal import printable
from engine.model.timefmt import counted
from engine.runtime import history_spool

DB_NAME = "history.db"
SQLITE_MAX_INT = (1 << 63) - 1  # the largest INTEGER SQLite stores
BUSY_TIMEOUT_S = 30.0
BUSY_TIMEOUT_MAX_S = 2_147_483  # SQLite's busy timeout: an int of milliseconds
BUSY_TIMEOUT_ENV = "LL_HISTORY_BUSY_TIMEOUT"  # seconds a write waits for the database
START_WAIT_S = 2.0  # at most, for a run's start row (`RunRecorder.start`)
Notify = Callable[[str], None]

AttemptOutcome = Literal["pass", "fail", "abstain", "error"]
AttemptKind = Literal["repetition", "retry", "baseline", "task"]

# Each entry moves the schema from version i to i+1. Append only; never edit a shipped entry.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # v1: the run table as first shipped.
    (
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            loop TEXT NOT NULL,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            terminated_by TEXT,
            final_state TEXT,
            outcome TEXT,
            steps INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            error TEXT
        )""",
        "CREATE INDEX runs_by_loop ON runs (loop, started_at)",
    ),
    # v2: nested runs (a sub-loop or a loop started from an action) point at their parent.
    (
        "ALTER TABLE runs ADD COLUMN parent_run_id TEXT",
        "ALTER TABLE runs ADD COLUMN depth INTEGER NOT NULL DEFAULT 0",
    ),
    # v3: one row per ll-harness sample (attempt).
    (
        """CREATE TABLE harness_attempts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            invocation_id TEXT NOT NULL,
            runner TEXT NOT NULL,
            target TEXT NOT NULL,
            input_hash TEXT NOT NULL,
            target_content_hash TEXT NOT NULL,
            conditions_fp TEXT NOT NULL,
            sample_index INTEGER NOT NULL DEFAULT 0,
            attempt_kind TEXT NOT NULL DEFAULT 'repetition',
            exit_code INTEGER,
            expected_exit_code INTEGER,
            exit_passed INTEGER,
            semantic_criterion TEXT,
            semantic_verdict TEXT,
            confidence REAL,
            reason TEXT,
            evidence TEXT,
            model TEXT,
            judge_model TEXT,
            timed_out INTEGER NOT NULL DEFAULT 0,
            errored INTEGER NOT NULL DEFAULT 0,
            outcome TEXT NOT NULL,
            duration_ms INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            git_head TEXT,
            git_dirty INTEGER,
            superseded_by INTEGER REFERENCES harness_attempts (id),
            retry_of INTEGER REFERENCES harness_attempts (id),
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX attempts_by_target ON harness_attempts (target, created_at)",
        "CREATE INDEX attempts_by_invocation ON harness_attempts (invocation_id)",
        """CREATE INDEX attempts_by_cell ON harness_attempts
            (runner, target, input_hash, target_content_hash, conditions_fp)""",
    ),
    # v4: the sample count an attempt's invocation asked for, so an infra retry (always one
    # sample) can rebuild the conditions fingerprint of the invocation it retries.
    ("ALTER TABLE harness_attempts ADD COLUMN samples_requested INTEGER NOT NULL DEFAULT 1",),
    # v5: the git branch checked out when the attempt ran (NULL: detached HEAD, no repository,
    # or a row recorded before v5).
    ("ALTER TABLE harness_attempts ADD COLUMN git_branch TEXT",),
    # v6: suites. One row per suite run (its options, for --resume), per case and arm (how the
    # subject ran, its outputs record compressed), and per case x judge x sample. The unique keys
    # make a resumed run unable to record a case twice.
    (
        """CREATE TABLE suite_runs (
            run_id TEXT PRIMARY KEY,
            suite TEXT NOT NULL,
            path TEXT NOT NULL,
            suite_hash TEXT NOT NULL,
            conditions_fp TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'run',
            options TEXT NOT NULL DEFAULT '{}',
            cases_planned INTEGER NOT NULL DEFAULT 0,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            result TEXT,
            cost_usd REAL NOT NULL DEFAULT 0,
            git_head TEXT,
            git_dirty INTEGER,
            git_branch TEXT
        )""",
        "CREATE INDEX suite_runs_by_suite ON suite_runs (suite, kind, started_at)",
        """CREATE TABLE suite_cases (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES suite_runs (run_id),
            arm TEXT NOT NULL,
            case_id TEXT NOT NULL,
            case_key TEXT NOT NULL,
            subject_hash TEXT NOT NULL,
            status TEXT NOT NULL,
            error TEXT,
            exit_code INTEGER,
            timed_out INTEGER NOT NULL DEFAULT 0,
            duration_ms INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            workspace TEXT,
            record BLOB,
            created_at TEXT NOT NULL,
            UNIQUE (run_id, arm, case_id)
        )""",
        """CREATE TABLE suite_judgements (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES suite_runs (run_id),
            suite TEXT NOT NULL,
            arm TEXT NOT NULL,
            case_id TEXT NOT NULL,
            case_key TEXT NOT NULL,
            judge TEXT NOT NULL,
            judge_kind TEXT NOT NULL,
            sample_index INTEGER NOT NULL DEFAULT 0,
            samples INTEGER NOT NULL DEFAULT 1,
            status TEXT NOT NULL,
            value REAL,
            is_bool INTEGER,
            passed INTEGER,
            sample_status TEXT,
            sample_value REAL,
            rationale TEXT,
            evidence TEXT,
            error TEXT,
            score_low REAL,
            score_high REAL,
            duration_ms INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            conditions_fp TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (run_id, arm, case_id, judge, sample_index)
        )""",
    ),
    # v7: what was uncommitted when the attempt ran, fingerprinted (NULL: a clean tree, no
    # repository, or a row recorded before v7), so that a baseline measured on a dirty HEAD is
    # reused only for the same uncommitted code.
    ("ALTER TABLE harness_attempts ADD COLUMN git_worktree TEXT",),
    # v8: a case whose subject's agent reported no cost (0: its cost_usd leaves that spend out).
    ("ALTER TABLE suite_cases ADD COLUMN cost_known INTEGER NOT NULL DEFAULT 1",),
    # v9: the states of a run whose agent reported no cost (JSON list; NULL: none known).
    ("ALTER TABLE runs ADD COLUMN cost_unknown_in TEXT",),
)
SCHEMA_VERSION = len(MIGRATIONS)


class HistoryError(LoopError):
    """The history database cannot be used (newer schema, corrupt file)."""

    code = "HISTORY"


class RetryConflict(LoopError):
    """A retry whose attempt another retry replaced while it ran: it is not recorded."""

    code = "HISTORY_RETRY"

    def __init__(self, attempt_id: int, by: int | None) -> None:
        super().__init__(
            f"attempt {attempt_id} was replaced by attempt {by} while this retry ran (another "
            "--retry-of of it ended first): this retry is not recorded",
            hint=f"see `ll-harness history TARGET`; if attempt {by} timed out too, retry that one",
        )


def _superseder(db: sqlite3.Connection, attempt_id: int) -> int | None:
    row = db.execute(
        "SELECT superseded_by FROM harness_attempts WHERE id = ?", (attempt_id,)
    ).fetchone()
    return None if row is None else row[0]


def utc_now() -> str:
    """A sortable UTC timestamp; every time column uses this one format, the one of the run's
    events and state.json (`2026-11-30T14:43:52.123Z`): a run's start and end read alike."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class RunRow:
    """One `ll-loop run` as recorded (ended_at and outcome are None while it runs)."""

    run_id: str
    loop: str
    started_at: str
    ended_at: str | None
    terminated_by: str | None
    final_state: str | None
    outcome: str | None
    steps: int
    cost_usd: float
    error: str | None
    parent_run_id: str | None
    depth: int
    # JSON list of the states whose agent reported no cost (NULL: none, or recorded before v9)
    cost_unknown_in: str | None = None


@dataclass(frozen=True)
class NewAttempt:
    """One graded ll-harness sample, as the harness hands it over for recording."""

    invocation_id: str
    runner: str
    target: str
    input_hash: str
    target_content_hash: str
    conditions_fp: str
    outcome: AttemptOutcome
    sample_index: int = 0
    samples_requested: int = 1
    attempt_kind: AttemptKind = "repetition"
    exit_code: int | None = None
    expected_exit_code: int | None = None
    exit_passed: bool | None = None
    semantic_criterion: str | None = None
    semantic_verdict: str | None = None
    confidence: float | None = None
    reason: str | None = None
    evidence: str | None = None
    model: str | None = None
    judge_model: str | None = None
    timed_out: bool = False
    errored: bool = False
    duration_ms: int = 0
    cost_usd: float = 0.0
    git_head: str | None = None
    git_dirty: bool | None = None
    git_branch: str | None = None
    retry_of: int | None = None
    git_worktree: str | None = None  # the uncommitted changes' fingerprint, when dirty


@dataclass(frozen=True)
class Attempt(NewAttempt):
    """A recorded attempt: the row id, when, and the retry that replaced it (if any)."""

    id: int = 0
    created_at: str = ""
    superseded_by: int | None = None

    @property
    def authoritative(self) -> bool:
        """Counted in rates: not replaced by a later infra retry."""
        return self.superseded_by is None


@dataclass(frozen=True)
class AttemptGroup:
    """How many attempts share a runner, an outcome, whether they count (not superseded by a
    retry) and whether they are a retry (`History.attempt_counts`)."""

    runner: str
    outcome: str
    authoritative: bool
    retry: bool
    count: int


@dataclass(frozen=True)
class JudgedGroup:
    """How many authoritative attempts one `--semantic` judge graded alike on one input
    (`History.judged_counts`)."""

    criterion: str
    judge_model: str | None
    target: str
    input_hash: str
    content_hash: str
    verdict: str | None
    errored: bool
    count: int


@dataclass(frozen=True)
class SuiteRunRow:
    """One `ll-harness suite` run: what ran, under which conditions, and how it ended."""

    run_id: str
    suite: str
    path: str
    suite_hash: str
    conditions_fp: str
    started_at: str
    kind: str = "run"  # run | baseline (measured with --measure-baseline)
    options: str = "{}"  # JSON: what --resume needs to continue exactly this run
    cases_planned: int = 0
    ended_at: str | None = None
    result: str | None = None
    cost_usd: float = 0.0
    git_head: str | None = None
    git_dirty: bool | None = None
    git_branch: str | None = None


@dataclass(frozen=True, slots=True)
class SuiteCaseRow:
    """How one case's subject ran in one arm (subject, baseline or pairwise)."""

    run_id: str
    arm: str
    case_id: str
    case_key: str
    subject_hash: str
    status: str  # ok | error
    error: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    duration_ms: int = 0
    cost_usd: float = 0.0
    workspace: str | None = None
    record: bytes | None = None  # zlib-compressed JSON of the outputs record
    cost_known: bool = True  # False: the subject's agent reported no cost (not in cost_usd)


@dataclass(frozen=True, slots=True)
class SuiteJudgementRow:
    """One judge on one case, one sample of it: the judgement's value and the sample's own."""

    run_id: str
    suite: str
    arm: str
    case_id: str
    case_key: str
    judge: str
    judge_kind: str
    status: str  # ok | skipped | error | abstain
    conditions_fp: str
    sample_index: int = 0
    samples: int = 1
    value: float | None = None
    is_bool: bool | None = None
    passed: bool | None = None
    sample_status: str | None = None
    sample_value: float | None = None
    rationale: str | None = None
    evidence: str | None = None
    error: str | None = None
    score_low: float | None = None
    score_high: float | None = None
    duration_ms: int = 0
    cost_usd: float = 0.0


_RUN_COLUMNS = tuple(f.name for f in fields(RunRow))
_ATTEMPT_COLUMNS = tuple(f.name for f in fields(Attempt))
_BOOL_COLUMNS = frozenset({"exit_passed", "timed_out", "errored", "git_dirty"})
_SUITE_RUN_COLUMNS = tuple(f.name for f in fields(SuiteRunRow))
_SUITE_CASE_COLUMNS = tuple(f.name for f in fields(SuiteCaseRow))
_SUITE_JUDGEMENT_COLUMNS = tuple(f.name for f in fields(SuiteJudgementRow))
_SUITE_BOOLS = frozenset({"timed_out", "git_dirty", "is_bool", "passed", "cost_known"})
_SuiteRow = TypeVar("_SuiteRow", SuiteCaseRow, SuiteJudgementRow)
_SUITE_ROW_COLUMNS: dict[type, tuple[str, ...]] = {
    SuiteCaseRow: _SUITE_CASE_COLUMNS,
    SuiteJudgementRow: _SUITE_JUDGEMENT_COLUMNS,
}
# Columns whose texts many rows of a run share (free text, as a judge's rationale, is not).
_SUITE_REPEATED = frozenset(
    {
        "run_id", "suite", "arm", "case_id", "case_key", "subject_hash", "status", "judge",
        "judge_kind", "sample_status", "conditions_fp", "error",
    }
)  # fmt: skip


class History:
    """An open history database. Safe to share between threads; each call is one transaction.

    Opening it writes what earlier processes kept in the spool (`drain`). A write the database
    refuses because another process holds it past the busy timeout is kept there instead, and
    `notify` hears one sentence saying where it waits (default: a warning on stderr)."""

    def __init__(
        self, path: Path, *, notify: Notify | None = None, wait: float | None = None
    ) -> None:
        self.path = path
        self.notify = notify or warn_on_stderr
        self._lock = threading.Lock()
        timeout = busy_timeout() if wait is None else wait
        self._busy_ms = int(timeout * 1000)
        try:
            self._db = sqlite3.connect(
                path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.DatabaseError as exc:
            raise self._unopenable(exc) from exc
        try:
            self._prepare()
            self.drain()
        except BaseException:
            # closed now: the traceback keeps this object (and the file) alive until the
            # garbage collector finds it, a descriptor per failed open for a program that retries
            self._db.close()
            raise

    def _prepare(self) -> None:
        try:
            self._db.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            self._db.execute("PRAGMA journal_mode = WAL")
            # In WAL mode NORMAL never corrupts the database; a power cut may roll back the last
            # commits. FULL would fsync on every commit, twice per run (~3 ms each here).
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            migrate(self._db)
        except sqlite3.DatabaseError as exc:
            raise self._unopenable(exc) from exc

    def _unopenable(self, exc: sqlite3.DatabaseError) -> HistoryError:
        # A database another process holds is not damaged: moving it aside would hide
        # every row it keeps from the next command.
        hint = (
            "another process holds it (an open `sqlite3` shell, a long transaction): let it "
            f"finish, or raise {BUSY_TIMEOUT_ENV} (seconds)"
            if _busy_error(exc)
            else "move the file aside; ll-loop creates a new one on the next run"
        )
        return HistoryError(f"cannot open the history database {self.path}: {exc}", hint=hint)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def drain(self) -> int:
        """Write the writes kept in the spool, oldest first, and remove their files; how many.

        Without waiting: a database still held by another process is left for the next opener
        (that process may be the one whose long transaction made the spool). One that cannot
        take them (read-only, damaged) keeps them too, said through `notify`."""
        kept = history_spool.waiting(self.path)
        if not kept:
            return 0
        written = 0
        self._db.execute("PRAGMA busy_timeout = 100")
        try:
            for path, write in kept:
                apply = _APPLY.get(write["kind"])
                if apply is None:
                    continue  # a kind a newer ll-loop wrote: left for it
                try:
                    with self._write() as db:
                        apply(db, write)
                except RetryConflict:
                    pass  # that retry is not recorded, as it would not have been then
                except HistoryError as exc:
                    if not _busy(exc):
                        # Read-only, full or damaged: the rows stay kept, and the command that
                        # opened the history still reads it (raising made every reader fail
                        # once a run had kept a row for a database it could not write).
                        # A run's recorder warns once: this line is its only one, so it
                        # speaks for the row the run keeps next as well.
                        self.notify(
                            f"warning: {self.path} cannot take the {len(kept) - written} "
                            f"write(s) kept in {path.parent} ({exc.__cause__ or exc.message}): "
                            "they stay there, with any this command keeps, for the next "
                            "command that opens the history"
                        )
                    break
                except Exception:  # the file's content, not the database's state
                    # Not a write we can make sense of (valid JSON, not ours or damaged: a row
                    # too short, a list where a number goes): left for a person to look at. It
                    # made every command that opens the history an internal error.
                    continue
                path.unlink(missing_ok=True)
                written += 1
        finally:
            self._db.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        return written

    def _record(
        self,
        apply: Callable[[sqlite3.Connection], Any],
        write: Callable[[], dict[str, Any]],
        what: str,
        *,
        any_error: bool = False,
    ) -> Any:
        """`apply` in one transaction; when the database stays busy past the timeout (or, with
        `any_error`, cannot take the write at all: read-only, damaged), `write()` (the same
        write as JSON) is kept in the spool instead, and None returned. A harness sample has
        already run when it is recorded; a suite's cases instead stop the suite (exit 2, and
        `--resume` records them), so a full disk is not filled further with spool files."""
        try:
            with self._write() as db:
                return apply(db)
        except HistoryError as exc:
            if not (any_error or _busy(exc)):
                raise
            try:
                kept = history_spool.keep(self.path, write())
            except (OSError, LoopError):
                raise exc from None
            why = (
                f"stayed locked by another process for {self._busy_ms / 1000:g} s"
                if _busy(exc)
                else f"cannot take it ({exc.__cause__ or exc.message})"
            )
            self.notify(
                f"warning: {self.path} {why}: {what} waits in {kept} and is written by the next "
                "ll-loop or ll-harness command that opens the history"
            )
            return None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._usable():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock, self._usable():
            cursor = self._db.execute(sql, params)
            cursor.row_factory = sqlite3.Row
            return list(cursor.fetchall())

    def _read_tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows as plain tuples: a resumed suite reads thousands, and a `sqlite3.Row` made
        into a dict per row cost more than the query."""
        with self._lock, self._usable():
            return list(self._db.execute(sql, params).fetchall())

    def _read_typed(
        self, kind: type[_SuiteRow], sql: str, params: Sequence[Any]
    ) -> list[_SuiteRow]:
        """Suite rows (selected in `kind`'s field order) made as they are fetched, never all
        held as tuples too, with each repeated text kept once (`_typed_rows`)."""
        with self._lock, self._usable():
            return _typed_rows(kind, self._db.execute(sql, params))

    @contextmanager
    def _usable(self) -> Iterator[None]:
        """A database that opened fine can still fail under a query: damaged pages SQLite only
        finds when it reads them, a full disk, a lock held past the busy timeout. Those are the
        file's state, not bugs, so they are a `HistoryError`; a violated key or malformed SQL
        (IntegrityError, ProgrammingError) is ours and goes up as it is."""
        try:
            yield
        except (sqlite3.IntegrityError, sqlite3.ProgrammingError):
            raise
        except sqlite3.DatabaseError as exc:
            raise HistoryError(
                f"the history database {self.path} cannot be used: {exc}",
                hint="if the disk is full (SQLite may say 'disk I/O error'), free space; if "
                "another process holds it, let that one finish; if it is damaged, move it aside "
                "(ll-loop creates a new one) or recover its rows: `sqlite3 history.db .recover`",
            ) from exc

    # ---- runs -----------------------------------------------------------------------------

    def record_run_start(
        self,
        run_id: str,
        loop: str,
        *,
        started_at: str | None = None,
        parent_run_id: str | None = None,
        depth: int = 0,
    ) -> None:
        """Insert the row of a run that just started (a resumed run keeps its first row)."""
        self.apply(run_start_write(run_id, loop, started_at, parent_run_id, depth))

    def record_run_end(
        self,
        result: RunResult,
        *,
        ended_at: str | None = None,
        parent_run_id: str | None = None,
        depth: int = 0,
    ) -> None:
        """Fill in how a run ended; creates the row too if its start was never recorded."""
        self.apply(run_end_write(result, ended_at, parent_run_id, depth))

    def apply(self, write: dict[str, Any]) -> None:
        """Make one write of a run (`run_start_write`, `run_end_write`), or keep it."""
        what = f"the row of run {write['run_id']}"
        self._record(lambda db: _APPLY[write["kind"]](db, write), lambda: write, what)

    def run(self, run_id: str) -> RunRow | None:
        rows = self._read(f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE run_id = ?", (run_id,))
        return RunRow(**dict(rows[0])) if rows else None

    def runs(self, loop: str | None = None, limit: int = 50) -> list[RunRow]:
        """The most recent runs first, optionally of one loop."""
        where, params = ("WHERE loop = ?", [loop]) if loop is not None else ("", [])
        rows = self._read(
            f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs {where} "
            "ORDER BY started_at DESC, rowid DESC LIMIT ?",
            [*params, _sql_limit(limit)],
        )
        return [RunRow(**dict(row)) for row in rows]

    # ---- harness attempts -----------------------------------------------------------------

    def record_attempt(self, attempt: NewAttempt, *, created_at: str | None = None) -> Attempt:
        """Insert one attempt row; a retry (`retry_of`) supersedes its predecessor atomically.
        An attempt kept in the spool (the database stayed busy or could not take it) comes back
        with id 0."""
        values = asdict(attempt)
        values["created_at"] = created_at or utc_now()
        write = {"kind": "attempt", "attempt": values}
        what = f"attempt {attempt.sample_index} of invocation {attempt.invocation_id}"
        kept = {**write, "kept": True}  # from the spool: may have been written already
        new_id = self._record(
            lambda db: _apply_attempt(db, write), lambda: kept, what, any_error=True
        )
        return Attempt(**{**values, "id": new_id or 0})

    def attempt(self, attempt_id: int) -> Attempt | None:
        """The attempt with this id; None when there is none (an id past SQLite's 64-bit
        integers, typed on a command line, cannot exist and is not sent to SQLite)."""
        if not -SQLITE_MAX_INT - 1 <= attempt_id <= SQLITE_MAX_INT:
            return None
        rows = self._select_attempts("WHERE id = ?", [attempt_id])
        return rows[0] if rows else None

    def invocation(self, invocation_id: str) -> list[Attempt]:
        """Every attempt one ll-harness invocation wrote, in sample order."""
        return self._select_attempts(
            "WHERE invocation_id = ? ORDER BY sample_index, id", [invocation_id]
        )

    def attempts(
        self,
        target: str,
        *,
        since: str | None = None,
        runner: str | None = None,
        semantic: str | None = None,
        authoritative_only: bool = False,
        limit: int | None = None,
    ) -> list[Attempt]:
        """Attempts on `target`, newest first; `since` is an ISO date or timestamp (UTC);
        `semantic`: only those judged by that criterion."""
        where, params = _attempt_filter(target, since, runner, semantic)
        if authoritative_only:
            where += " AND superseded_by IS NULL"
        tail = "" if limit is None else f" LIMIT {_sql_limit(limit)}"
        return self._select_attempts(
            f"WHERE {where} ORDER BY created_at DESC, id DESC{tail}", params
        )

    def attempt_counts(
        self,
        target: str,
        *,
        since: str | None = None,
        runner: str | None = None,
        semantic: str | None = None,
    ) -> list[AttemptGroup]:
        """How many of the attempts `attempts` selects there are of each runner, outcome,
        authority and retry: what a summary of them counts, without reading every row (a
        target measured in CI for months has hundreds of thousands)."""
        where, params = _attempt_filter(target, since, runner, semantic)
        rows = self._read_tuples(
            "SELECT runner, outcome, superseded_by IS NULL, retry_of IS NOT NULL, COUNT(*) "
            f"FROM harness_attempts WHERE {where} GROUP BY 1, 2, 3, 4",
            params,
        )
        return [AttemptGroup(str(r), str(o), bool(a), bool(t), int(n)) for r, o, a, t, n in rows]

    def invocation_rates(
        self, target: str, *, limit: int
    ) -> tuple[list[tuple[str, str, str, int, int, int, int]], int]:
        """The last `limit` invocations on `target` (by their first row), oldest first, each
        (id, first row's time, runner, passes, graded, abstentions, errors) over its
        authoritative rows; and how many invocations there are in all. Counted here: a target
        measured in CI for months has tens of thousands of invocations."""
        where = "target = ? AND superseded_by IS NULL"
        rows = self._read_tuples(
            "SELECT * FROM (SELECT invocation_id, MIN(created_at) AS at, MAX(runner), "
            "SUM(outcome = 'pass'), SUM(outcome IN ('pass', 'fail')), SUM(outcome = 'abstain'), "
            f"SUM(outcome = 'error') FROM harness_attempts WHERE {where} GROUP BY invocation_id "
            f"ORDER BY at DESC, invocation_id DESC LIMIT {_sql_limit(limit)}) "
            "ORDER BY at, invocation_id",
            (target,),
        )
        total = self._read_tuples(
            f"SELECT COUNT(DISTINCT invocation_id) FROM harness_attempts WHERE {where}", (target,)
        )
        return [
            (str(i), str(a), str(r), int(p), int(g), int(b), int(e)) for i, a, r, p, g, b, e in rows
        ], int(total[0][0])

    def targets(self) -> list[str]:
        """Every target with a recorded attempt (for a "did you mean" on a mistyped one)."""
        rows = self._read_tuples("SELECT DISTINCT target FROM harness_attempts")
        return [str(r[0]) for r in rows]

    def judged_attempts(self, *, since: str | None = None) -> list[Attempt]:
        """Every authoritative attempt an LLM judge graded (`--semantic`), oldest first."""
        clauses = ["semantic_criterion IS NOT NULL", "superseded_by IS NULL"]
        params: list[Any] = []
        if since is not None:
            clauses.append("created_at >= ?")
            params.append(since)
        return self._select_attempts(
            f"WHERE {' AND '.join(clauses)} ORDER BY created_at, id", params
        )

    def judged_counts(
        self, *, target: str | None = None, since: str | None = None
    ) -> list[JudgedGroup]:
        """The authoritative attempts an LLM judge graded (`--semantic`), of `target` or all,
        counted per judge (criterion and model), input and verdict: what judge stability
        needs, without reading every row (a busy project has hundreds of thousands)."""
        clauses = ["semantic_criterion != ''", "superseded_by IS NULL"]  # NULL is not != ''
        params: list[Any] = []
        if target is not None:
            clauses.append("target = ?")
            params.append(target)
        if since is not None:
            clauses.append("created_at >= ?")
            params.append(since)
        columns = (
            "semantic_criterion, judge_model, target, input_hash, target_content_hash, "
            "semantic_verdict, errored"
        )
        rows = self._read_tuples(
            f"SELECT {columns}, COUNT(*) FROM harness_attempts "
            f"WHERE {' AND '.join(clauses)} GROUP BY {columns}",
            params,
        )
        return [
            JudgedGroup(str(c), m, str(t), str(i), str(h), v, bool(e), int(n))
            for c, m, t, i, h, v, e, n in rows
        ]

    def cell_attempts(
        self,
        runner: str,
        target: str,
        input_hash: str,
        target_content_hash: str,
        *,
        conditions_fp: str | None = None,
        code: tuple[str | None, bool, str | None] | None = None,
        limit: int | None = None,
    ) -> list[Attempt]:
        """Authoritative attempts of one (runner, target, input, content), newest first, any
        conditions or only `conditions_fp`'s; with `code` (git HEAD, dirty, the uncommitted
        changes' fingerprint), only those measured on that code. Filtered here, not by the
        caller: a command measured in CI at every commit has a row per sample per commit."""
        where = "runner = ? AND target = ? AND input_hash = ? AND target_content_hash = ?"
        params: list[Any] = [runner, target, input_hash, target_content_hash]
        if conditions_fp is not None:
            where += " AND conditions_fp = ?"
            params.append(conditions_fp)
        if code is not None:
            head, dirty, worktree = code
            where += " AND git_head IS ? AND COALESCE(git_dirty, 0) = ? AND git_worktree IS ?"
            params += [head, int(bool(dirty)), worktree]
        tail = "" if limit is None else f" LIMIT {_sql_limit(limit)}"
        return self._select_attempts(
            f"WHERE {where} AND superseded_by IS NULL ORDER BY created_at DESC, id DESC{tail}",
            params,
        )

    def _select_attempts(self, tail: str, params: Sequence[Any]) -> list[Attempt]:
        rows = self._read(
            f"SELECT {', '.join(_ATTEMPT_COLUMNS)} FROM harness_attempts {tail}", params
        )
        return [_attempt_from_row(row) for row in rows]

    # ---- suites ---------------------------------------------------------------------------

    def record_suite_run(self, row: SuiteRunRow) -> None:
        with self._write() as db:
            _insert(db, "suite_runs", asdict(row))

    def finish_suite_run(
        self, run_id: str, *, result: str, cost_usd: float, ended_at: str | None = None
    ) -> None:
        write = {
            "kind": "suite_finish",
            "run_id": run_id,
            "result": result,
            "cost_usd": cost_usd,
            "ended_at": ended_at or utc_now(),
        }
        what = f"the end of suite run {run_id}"
        self._record(lambda db: _apply_suite_finish(db, write), lambda: write, what)

    def suite_run(self, run_id: str) -> SuiteRunRow | None:
        rows = self._read(
            f"SELECT {', '.join(_SUITE_RUN_COLUMNS)} FROM suite_runs WHERE run_id = ?", (run_id,)
        )
        return SuiteRunRow(**_suite_values(rows[0])) if rows else None

    def suite_runs_named(self, given: str, *, limit: int = 3) -> list[SuiteRunRow]:
        """The suite run whose id is `given`, else those whose id starts with it (at most
        `limit`, oldest first): a unique prefix names a run, as every RUN argument of ll-loop.
        Text that is not UTF-8 (an argument's undecodable bytes) names none."""
        try:
            given.encode("utf-8")
        except UnicodeEncodeError:
            return []  # no run id holds a byte that is not text, and SQLite takes none
        exact = self.suite_run(given)
        if exact is not None or not given:
            return [exact] if exact is not None else []
        # a range, not LIKE: a prefix holding `_` or `%` is text, not a pattern; its end is
        # `given` and the last code point (its last character plus one may be a surrogate)
        upper = given + "\U0010ffff"
        rows = self._read(
            f"SELECT {', '.join(_SUITE_RUN_COLUMNS)} FROM suite_runs "
            "WHERE run_id >= ? AND run_id < ? ORDER BY run_id LIMIT ?",
            (given, upper, limit),
        )
        return [SuiteRunRow(**_suite_values(row)) for row in rows]

    def suite_runs(
        self,
        suite: str,
        *,
        kind: str | None = None,
        conditions_fp: str | None = None,
        finished: bool = False,
        upto: str | None = None,
        limit: int | None = None,
    ) -> list[SuiteRunRow]:
        """Runs of `suite`, newest first; `finished`: only those that ended; `upto`: the run
        with that id and those before it; at most `limit` (a suite run in CI for years has
        tens of thousands of runs, and a report wants the last few)."""
        clauses: list[str] = ["suite = ?"]
        params: list[Any] = [suite]
        if kind is not None:
            clauses.append("kind = ?")
            params.append(kind)
        if conditions_fp is not None:
            clauses.append("conditions_fp = ?")
            params.append(conditions_fp)
        if finished:
            clauses.append("ended_at IS NOT NULL")
        if upto is not None:
            clauses.append(
                "(started_at, rowid) <= (SELECT started_at, rowid FROM suite_runs WHERE run_id = ?)"
            )
            params.append(upto)
        tail = "" if limit is None else f" LIMIT {_sql_limit(limit)}"
        rows = self._read(
            f"SELECT {', '.join(_SUITE_RUN_COLUMNS)} FROM suite_runs "
            f"WHERE {' AND '.join(clauses)} ORDER BY started_at DESC, rowid DESC{tail}",
            params,
        )
        return [SuiteRunRow(**_suite_values(r)) for r in rows]

    def record_suite_cases(
        self, cases: Sequence[SuiteCaseRow], judgements: Sequence[SuiteJudgementRow]
    ) -> None:
        """Whole cases' rows (each arm, every judge x sample) in one transaction: a run killed
        at any moment has all of a case or none of it."""
        now = utc_now()
        case_rows = [_values(c, _SUITE_CASE_COLUMNS, now) for c in cases]
        judgement_rows = [_values(j, _SUITE_JUDGEMENT_COLUMNS, now) for j in judgements]

        def apply(db: sqlite3.Connection) -> None:
            db.executemany(_SUITE_CASE_INSERT, case_rows)
            db.executemany(_SUITE_JUDGEMENT_INSERT, judgement_rows)

        def write() -> dict[str, Any]:
            return {
                "kind": "suite_cases",
                "cases": [[_jsonable(v) for v in row] for row in case_rows],
                "judgements": judgement_rows,
            }

        run = cases[0].run_id if cases else judgements[0].run_id if judgements else ""
        what = f"the rows of {counted(len({c.case_id for c in cases}), 'case')} of suite run {run}"
        self._record(apply, write, what)

    def suite_cases(self, run_id: str, *, with_records: bool = False) -> list[SuiteCaseRow]:
        """The case rows of a run in the order they were recorded (records only if asked)."""
        columns = [
            c if c != "record" or with_records else "NULL AS record" for c in _SUITE_CASE_COLUMNS
        ]
        return self._read_typed(
            SuiteCaseRow,
            f"SELECT {', '.join(columns)} FROM suite_cases WHERE run_id = ? ORDER BY id",
            (run_id,),
        )

    def suite_case_ids(self, run_id: str) -> frozenset[str]:
        """The cases a run has recorded: what `--resume` need not run (nor read) again."""
        rows = self._read_tuples(
            "SELECT DISTINCT case_id FROM suite_cases WHERE run_id = ?", (run_id,)
        )
        return frozenset(str(row[0]) for row in rows)

    def suite_record(self, run_id: str, arm: str, case_id: str) -> bytes | None:
        rows = self._read(
            "SELECT record FROM suite_cases WHERE run_id = ? AND arm = ? AND case_id = ?",
            (run_id, arm, case_id),
        )
        return bytes(rows[0]["record"]) if rows and rows[0]["record"] is not None else None

    def suite_judgements(self, run_id: str) -> list[SuiteJudgementRow]:
        return self._read_typed(
            SuiteJudgementRow,
            f"SELECT {', '.join(_SUITE_JUDGEMENT_COLUMNS)} FROM suite_judgements "
            "WHERE run_id = ? ORDER BY id",
            (run_id,),
        )


def _attempt_filter(
    target: str, since: str | None, runner: str | None, semantic: str | None
) -> tuple[str, list[Any]]:
    """The WHERE clause (and its parameters) of a target's attempts, optionally filtered."""
    clauses, params = ["target = ?"], [target]
    for clause, value in (
        ("created_at >= ?", since),
        ("runner = ?", runner),
        ("semantic_criterion = ?", semantic),
    ):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    return " AND ".join(clauses), params


def _insert(db: sqlite3.Connection, table: str, values: dict[str, Any]) -> None:
    names = list(values)
    db.execute(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
        [_to_sql(values[name]) for name in names],
    )


def _values(row: object, columns: tuple[str, ...], created_at: str) -> tuple[object, ...]:
    """The row's column values in order (sqlite3 stores bools as 0 and 1 itself)."""
    return (*_GETTERS[columns](row), created_at)


def _insert_sql(table: str, columns: tuple[str, ...]) -> str:
    names = [*columns, "created_at"]
    # OR IGNORE: a case's rows kept in the spool and written by two processes are one case.
    return (
        f"INSERT OR IGNORE INTO {table} ({', '.join(names)}) "
        f"VALUES ({', '.join('?' for _ in names)})"
    )


_GETTERS = {
    columns: operator.attrgetter(*columns)
    for columns in (_SUITE_CASE_COLUMNS, _SUITE_JUDGEMENT_COLUMNS)
}
_SUITE_CASE_INSERT = _insert_sql("suite_cases", _SUITE_CASE_COLUMNS)
_SUITE_JUDGEMENT_INSERT = _insert_sql("suite_judgements", _SUITE_JUDGEMENT_COLUMNS)


def _typed_rows(kind: type[_SuiteRow], rows: Iterable[tuple[Any, ...]]) -> list[_SuiteRow]:
    """Rows selected in `kind`'s field order as `kind`, with the stored 0/1 of bool columns as
    bools, and one string for each text the rows repeat (a run's id, its suite, the judges'
    names, a case's id and key on each of its judgements): SQLite makes a new one per value, and
    the 140,000 judgement rows of 20,000 cases held 111 MB of copies of a few thousand texts."""
    columns = _SUITE_ROW_COLUMNS[kind]
    bools = [i for i, name in enumerate(columns) if name in _SUITE_BOOLS]
    repeated = [i for i, name in enumerate(columns) if name in _SUITE_REPEATED]
    shared: dict[str, str] = {}
    typed: list[_SuiteRow] = []
    for row in rows:
        values = list(row)
        for i in repeated:
            value = values[i]
            if type(value) is str:
                values[i] = shared.setdefault(value, value)
        for i in bools:
            if values[i] is not None:
                values[i] = bool(values[i])
        typed.append(kind(*values))
    return typed


def _suite_values(row: sqlite3.Row) -> dict[str, Any]:
    values = dict(row)
    for name in _SUITE_BOOLS & values.keys():
        if values[name] is not None:
            values[name] = bool(values[name])
    return values


def _to_sql(value: object) -> object:
    return int(value) if isinstance(value, bool) else value


def _attempt_from_row(row: sqlite3.Row) -> Attempt:
    values = dict(row)
    for name in _BOOL_COLUMNS:
        if values[name] is not None:
            values[name] = bool(values[name])
    return Attempt(**values)


def _sql_limit(limit: int) -> int:
    """`limit` as SQLite can bind it: a command line's `--limit` has no upper bound, and one
    past SQLite's 64-bit integers raised OverflowError (no table holds that many rows)."""
    return min(int(limit), 2**63 - 1)


def schema_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring `db` (autocommit connection) to version `target`, in one write transaction.

    The version is re-read after taking the write lock, so two processes opening an old
    database at once apply each migration exactly once.
    """
    if schema_version(db) == target:
        return target
    db.execute("BEGIN IMMEDIATE")
    try:
        current = schema_version(db)
        if current > SCHEMA_VERSION:
            raise HistoryError(
                f"the history database has schema version {current}, newer than this "
                f"ll-loop understands ({SCHEMA_VERSION})",
                hint="upgrade ll-loop, or move .loops/history.db aside",
            )
        for version in range(current, target):
            for statement in MIGRATIONS[version]:
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {version + 1}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return target


# ---- the writes, as JSON objects (what the spool keeps) and how each is made ------------------


def run_start_write(
    run_id: str,
    loop: str,
    started_at: str | None = None,
    parent_run_id: str | None = None,
    depth: int = 0,
    *,
    resumed: bool = False,
) -> dict[str, Any]:
    """The start of a run; `resumed`: a resume's, which makes the row's recorded end (a stop,
    a crash's error) no longer the run's (`_apply_run_start`)."""
    write = {
        "kind": "run_start",
        "run_id": run_id,
        "loop": loop,
        "started_at": started_at or utc_now(),
        "parent_run_id": parent_run_id,
        "depth": depth,
    }
    return {**write, "resumed": True} if resumed else write


def run_end_write(
    result: RunResult,
    ended_at: str | None = None,
    parent_run_id: str | None = None,
    depth: int = 0,
    started_at: str | None = None,
) -> dict[str, Any]:
    """How a run ended; `started_at`, when known, makes a row its start row did not make yet
    (kept in the spool, written after this one) start at the right time."""
    return {
        "kind": "run_end",
        "run_id": result.run_id,
        "loop": result.loop,
        "started_at": started_at,
        "ended_at": ended_at or utc_now(),
        "terminated_by": result.terminated_by,
        "final_state": result.final_state,
        "outcome": result.outcome,
        "steps": result.steps,
        "cost_usd": result.cost_usd,
        "error": result.error,
        "parent_run_id": parent_run_id,
        "depth": depth,
        "cost_unknown_in": list(result.cost_unknown_in),
    }


def _apply_run_start(db: sqlite3.Connection, w: Mapping[str, Any]) -> None:
    db.execute(
        "INSERT OR IGNORE INTO runs (run_id, loop, started_at, parent_run_id, depth) "
        "VALUES (?, ?, ?, ?, ?)",
        (w["run_id"], w["loop"], w["started_at"], w["parent_run_id"], w["depth"]),
    )
    if w.get("resumed"):
        # A resumed run runs again: the end its stop recorded is gone (`history` then asks the
        # run directory). Only an end from before this resume: a start kept in the spool and
        # written late must not erase the end of the session it began.
        db.execute(
            "UPDATE runs SET ended_at = NULL, terminated_by = NULL, final_state = NULL, "
            "outcome = NULL, error = NULL WHERE run_id = ? AND ended_at <= ?",
            (w["run_id"], w["started_at"]),
        )


def _apply_run_end(db: sqlite3.Connection, w: Mapping[str, Any]) -> None:
    db.execute(
        "INSERT OR IGNORE INTO runs (run_id, loop, started_at, parent_run_id, depth) "
        "VALUES (?, ?, ?, ?, ?)",
        (
            w["run_id"],
            w["loop"],
            w.get("started_at") or w["ended_at"],
            w["parent_run_id"],
            w["depth"],
        ),
    )
    db.execute(
        "UPDATE runs SET ended_at = ?, terminated_by = ?, final_state = ?, outcome = ?, "
        "steps = ?, cost_usd = ?, error = ?, cost_unknown_in = ? WHERE run_id = ?",
        (
            w["ended_at"],
            w["terminated_by"],
            w["final_state"],
            w["outcome"],
            w["steps"],
            w["cost_usd"],
            w["error"],
            # a write spooled before v9 has no such key: nothing known to be unknown
            json.dumps(w["cost_unknown_in"]) if w.get("cost_unknown_in") else None,
            w["run_id"],
        ),
    )


def _apply_attempt(db: sqlite3.Connection, w: Mapping[str, Any]) -> int:
    """Insert the attempt; one from the spool (`kept`) only if it is not there already (a kept
    write made twice): within an invocation a sample's index and time name it."""
    values = dict(w["attempt"])
    if w.get("kept"):
        found = db.execute(
            "SELECT id FROM harness_attempts "
            "WHERE invocation_id = ? AND sample_index = ? AND created_at = ?",
            (values["invocation_id"], values["sample_index"], values["created_at"]),
        ).fetchone()
        if found is not None:
            return int(found[0])
    names = [name for name in values if name in _NEW_ATTEMPT_COLUMNS]
    cursor = db.execute(
        f"INSERT INTO harness_attempts ({', '.join(names)}) "
        f"VALUES ({', '.join('?' for _ in names)})",
        [_to_sql(values[name]) for name in names],
    )
    new_id = int(cursor.lastrowid or 0)
    retry_of = values.get("retry_of")
    if retry_of is not None:
        # Only a row nobody superseded yet: two `--retry-of` of one attempt run at once
        # were both admitted when they started, and only the first to end may replace it.
        replaced = db.execute(
            "UPDATE harness_attempts SET superseded_by = ? WHERE id = ? AND superseded_by IS NULL",
            (new_id, retry_of),
        ).rowcount
        if not replaced:
            raise RetryConflict(retry_of, _superseder(db, retry_of))
    return new_id


def _apply_suite_cases(db: sqlite3.Connection, w: Mapping[str, Any]) -> None:
    record = _SUITE_CASE_COLUMNS.index("record")
    cases = [
        (*row[:record], _unpack(row[record]), *row[record + 1 :])
        # a row spooled before v8 has no cost_known (before its created_at): it was known
        if len(row) > len(_SUITE_CASE_COLUMNS)
        else (*row[:record], _unpack(row[record]), True, *row[record + 1 :])
        for row in w["cases"]
    ]
    db.executemany(_SUITE_CASE_INSERT, cases)
    db.executemany(_SUITE_JUDGEMENT_INSERT, [tuple(row) for row in w["judgements"]])


def _apply_suite_finish(db: sqlite3.Connection, w: Mapping[str, Any]) -> None:
    db.execute(
        "UPDATE suite_runs SET ended_at = ?, result = ?, cost_usd = ? WHERE run_id = ?",
        (w["ended_at"], w["result"], w["cost_usd"], w["run_id"]),
    )


_APPLY: dict[str, Callable[[sqlite3.Connection, Mapping[str, Any]], Any]] = {
    "run_start": _apply_run_start,
    "run_end": _apply_run_end,
    "attempt": _apply_attempt,
    "suite_cases": _apply_suite_cases,
    "suite_finish": _apply_suite_finish,
}
_NEW_ATTEMPT_COLUMNS = frozenset({f.name for f in fields(NewAttempt)} | {"created_at"})


def _jsonable(value: object) -> object:
    """A column value as JSON holds it: bytes (a case's compressed record) as base64."""
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    return value


def _unpack(value: object) -> object:
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    return value


def _busy(exc: HistoryError) -> bool:
    """Did the database refuse because another connection held it past the busy timeout?"""
    return _busy_error(exc.__cause__)


def _busy_error(cause: BaseException | None) -> bool:
    if not isinstance(cause, sqlite3.OperationalError):
        return False
    code = getattr(cause, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(cause) or "busy" in str(cause)


def busy_timeout() -> float:
    """Seconds a write waits for a database another process holds: `LL_HISTORY_BUSY_TIMEOUT`
    (a number >= 0), else 30. Any other value is a `UsageError`, never silently 30."""
    text = os.environ.get(BUSY_TIMEOUT_ENV, "").strip()
    if not text:
        return BUSY_TIMEOUT_S
    # plain ASCII decimals, as the size settings take: float() also reads `1_000`, `1e3`, `٥`
    plain = re.fullmatch(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+", text) is not None
    value = float(text) if plain else -1.0
    # SQLite keeps the busy timeout as an int of milliseconds: a larger one it reads as 0
    if not math.isfinite(value) or not 0 <= value <= BUSY_TIMEOUT_MAX_S:
        raise UsageError(
            f"{BUSY_TIMEOUT_ENV}={text!r} is not a number of seconds",
            hint=f"write a number of seconds from 0 to {BUSY_TIMEOUT_MAX_S} (SQLite's limit, about "
            f"24 days) such as 5, or unset it for {BUSY_TIMEOUT_S:g}",
        )
    return value


def warn_on_stderr(message: str) -> None:
    """The history's one way to speak when its caller gave none: a line on stderr."""
    print(printable(message), file=sys.stderr)


def history_path(root: Path | None = None) -> Path:
    """`.loops/history.db` of project `root` (default: the working directory's project)."""
    return loops_dir(root) / DB_NAME


def open_history(
    root: Path | None = None, *, notify: Notify | None = None, wait: float | None = None
) -> History:
    """Open (creating and migrating as needed) the history database of project `root`, and
    write what earlier processes kept in its spool. `notify` hears where a write waits when the
    database stays busy (default: a warning on stderr); `wait` is how long a write waits for
    it (default: `busy_timeout()`).

    SQLite cannot be told not to follow links, so the database and its journal files are
    checked first: a link there is refused (`UnsafePath`), as everywhere under `.loops/`.
    """
    path = history_path(root)
    ensure_dir(path.parent)
    for suffix in ("", "-wal", "-shm", "-journal"):
        refuse_links(path.with_name(path.name + suffix))
        what = not_a_file(path.with_name(path.name + suffix))
        if what is not None:  # SQLite would open a FIFO or a directory: "disk I/O error"
            raise HistoryError(
                f"{path.with_name(path.name + suffix)} is {what}, not a database file",
                hint="move it aside; ll-loop creates a new database on the next run",
            )
    return History(path, notify=notify, wait=wait)


class RunRecorder:
    """Writes a run's start and end rows; a history problem never fails the run. A row the
    database cannot take (busy past the timeout, damaged, a link) is kept in the spool, to be
    written by the next process that opens it; said once per run through `warn`."""

    def __init__(self, root: Path | None, warn: Callable[[str], None]) -> None:
        self.root = root
        self.warn = warn
        self.failed = False
        self.started_at: str | None = None

    def start(
        self, run_id: str, loop: str, *, started_at: str | None = None, resumed: bool = False
    ) -> None:
        """The start row waits at most `START_WAIT_S` for a busy database: the first step
        should not wait 30 s for a row the spool keeps as well (the run's end writes it)."""
        write = run_start_write(run_id, loop, started_at, resumed=resumed)
        self.started_at = write["started_at"]
        self._record(write, START_WAIT_S)

    def end(self, result: RunResult) -> None:
        self._record(run_end_write(result, started_at=self.started_at))

    def _record(self, write: dict[str, Any], at_most: float = math.inf) -> None:
        try:
            wait = min(busy_timeout(), at_most)
            with open_history(self.root, notify=self._once, wait=wait) as history:
                history.apply(write)
            return
        except (LoopError, sqlite3.Error, OSError) as exc:
            problem = exc
        path = history_path(self.root)
        try:
            kept = history_spool.keep(path, write)
        except (LoopError, OSError) as exc:
            self._once(
                f"warning: could not record the run in {path} ({problem}), nor keep its "
                f"row for later ({exc})"
            )
            return
        self._once(
            f"warning: could not record the run in {path} ({problem}): its row waits in {kept} "
            "and is written by the next ll-loop or ll-harness command that opens the history"
        )

    def _once(self, message: str) -> None:
        if not self.failed:
            self.warn(message)
        self.failed = True
