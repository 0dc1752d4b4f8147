"""Reading runs back from `.loops/runs/<run_id>/` (IO): status, events, and what resume needs.

A run directory is the truth about a run: `state.json` (atomic, rewritten at every state
boundary) says where it stands, `events.jsonl` says how it got there. A record that says
`running` is believed only while its process lives: `state.json` names the process by pid and
start time (as the lock registry does), so a run killed with SIGKILL, or by a power cut, shows as
`interrupted` and can be resumed.

`events.jsonl` (and `llm.jsonl`) are appended line by line, so a crash can leave half a line at
the end. Readers skip such a torn tail; `repair_log` cuts it off before a resumed run appends to
the file.
"""

from __future__ import annotations

import bisect
import fcntl
import json
import math
import os
import signal
import stat
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from engine.load.project import (
    loops_dir,
    open_file,
    project_root,
    refuse_links,
    refuse_non_directory,
)
from engine.model.errors import UsageError
from engine.model.timefmt import epoch_seconds
from engine.processes.group import signal_group
from engine.runtime.locks import Record, holders, process_alive
from engine.runtime.orphans import orphaned_actions
from engine.runtime.runstore import read_state, runs_root

Status = Literal["running", "interrupted", "stopped", "finished"]
MAX_EVENT_LINE = 16 * 1024 * 1024  # bytes: a longer line is no event of ours; it is skipped
_decode = json.JSONDecoder().decode
_raw_decode = json.JSONDecoder().raw_decode


@dataclass(frozen=True)
class RunSnapshot:
    """What one run directory says about its run, with the liveness of its process."""

    run_id: str
    dir: Path
    loop: str
    loop_file: str
    current: str
    steps: int
    recorded_status: str  # running | stopped | finished, as state.json says
    started_at: str
    elapsed_ms: int
    pid: int | None
    pid_start: int | None
    alive: bool
    result: dict[str, Any] | None
    updated_at: float  # mtime of state.json
    cost_usd: float = 0.0  # LLM spend so far (state.json, updated at every state boundary)
    signals: bool = True  # its process's SIGTERM stops it (else: `STOP_REQUEST` in its dir)
    saved_at: float = 0.0  # when state.json (and its `elapsed_ms`) was written
    last_write: float = 0.0  # mtime of events.jsonl: the last sign of life of a killed run
    resume_queued: Record | None = None  # an `ll-loop resume --queue` of it, waiting for the lock
    cost_unknown_in: tuple[str, ...] = ()  # states whose agent reported no cost (state.json)
    killed_attempts: int = 0  # sessions killed and then resumed (state.json; older runs: 0)

    @property
    def status(self) -> Status:
        """`running` only while its process lives; a dead `running` record is `interrupted`."""
        if self.recorded_status == "finished":
            return "finished"
        if self.recorded_status == "stopped" and not self.alive:
            return "stopped"
        if self.alive:
            return "running"
        return "interrupted"

    @property
    def elapsed_is_lower_bound(self) -> bool:
        """Killed (now, or in an attempt a resume continued): it ran on after its record."""
        return self.status == "interrupted" or self.killed_attempts > 0

    @property
    def resumable(self) -> bool:
        return self.status in {"interrupted", "stopped"}

    def elapsed_s(self) -> float:
        """Wall time: for a live run, what state.json recorded plus the time since (a resumed
        run's time stopped is no part of it), else what state.json recorded. A killed
        run recorded its time at its last state boundary only (0 when killed in its first
        step); the events it wrote after that boundary count up to the last of them."""
        if self.status == "running":
            if self.saved_at > 0:  # its time so far, every session's, not the gaps between
                return self.elapsed_ms / 1000 + max(0.0, time.time() - self.saved_at)
            started = epoch_seconds(self.started_at)  # a run of a version without saved_at
            if started is not None:
                return max(0.0, time.time() - started)
        since = 0.0
        if self.status == "interrupted" and self.saved_at > 0:
            since = max(0.0, self.last_write - self.saved_at)
        return self.elapsed_ms / 1000 + since

    def to_json(self) -> dict[str, Any]:
        result = self.result or {}
        return {
            "run_id": self.run_id,
            "loop": self.loop,
            "status": self.status,
            "state": self.current,
            "steps": self.steps,
            "elapsed_ms": int(self.elapsed_s() * 1000),
            "started_at": self.started_at,
            "pid": self.pid,
            "alive": self.alive,
            "outcome": result.get("outcome"),
            "terminated_by": result.get("terminated_by"),
            "run_dir": str(self.dir),
        }


def read_run(directory: Path, *, lock_pids: dict[str, Record] | None = None) -> RunSnapshot | None:
    """The snapshot of one run directory, or None when it has no readable state.json (nor a
    readable temp copy of the boundary before, see `restore_state`). `lock_pids`: the live
    records of the lock registry, by run id."""
    found = _readable_state(directory)
    if found is None:
        return None
    data, mtime = found
    run_id = str(data.get("run_id") or directory.name)
    pid = _int_or_none(data.get("pid"))
    pid_start = _int_or_none(data.get("pid_start"))
    record = (lock_pids or {}).get(run_id)
    if pid is None and record is not None and record.holding:
        pid, pid_start = record.pid, record.start_time
    recorded = str(data.get("status", "running"))
    alive = pid is not None and recorded != "finished" and process_alive(pid, pid_start)
    resume_queued = None
    if not alive and recorded != "finished" and record is not None:
        if process_alive(record.pid, record.start_time) and not record.holding:
            # `resume --queue` waits for the scope lock: the run has not been taken over yet.
            resume_queued = record
        elif process_alive(record.pid, record.start_time):
            # A resume holds the run's lock before its state.json names the new process.
            pid, pid_start, alive = record.pid, record.start_time, True
    result = data.get("result")
    return RunSnapshot(
        run_id=run_id,
        dir=directory,
        loop=str(data.get("loop", "")),
        loop_file=str(data.get("loop_file", "")),
        current=str(data.get("current", "")),
        steps=_int_or_none(data.get("steps")) or 0,
        recorded_status=recorded,
        started_at=str(data.get("started_at", "")),
        elapsed_ms=_int_or_none(data.get("elapsed_ms")) or 0,
        pid=pid,
        pid_start=pid_start,
        alive=alive,
        result=result if isinstance(result, dict) else None,
        updated_at=mtime,
        cost_usd=_cost(data.get("cost_usd")),
        signals=data.get("signals") is not False,
        saved_at=_seconds(data.get("saved_at")),
        resume_queued=resume_queued,
        last_write=_mtime(directory / "events.jsonl"),
        cost_unknown_in=_names(data.get("cost_unknown_in")),
        killed_attempts=_count(data.get("killed_attempts")),
    )


def _names(value: Any) -> tuple[str, ...]:
    """A recorded list of names, () for anything else (an older or damaged state.json)."""
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, str))


def _seconds(value: Any) -> float:
    """A recorded epoch time, 0.0 for anything that is not a positive finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if 0 < value < float("inf") else 0.0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _cost(value: Any) -> float:
    """A recorded spend, 0.0 for anything that is not a finite non-negative number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if 0 <= value < float("inf") else 0.0


def _readable_state(directory: Path) -> tuple[dict[str, Any], float] | None:
    """state.json and its mtime; if it does not parse, `state.json.tmp` (the boundary before)."""
    for name in ("state.json", "state.json.tmp"):
        try:
            return read_state(directory / name), (directory / name).stat().st_mtime
        except (OSError, ValueError):
            continue
    return None


def restore_state(directory: Path) -> bool:
    """Put the boundary before back as state.json when state.json does not parse (a power cut
    in the middle of its rewrite); True when it did. A kill never needs this.

    Resume writes to the run's files from here on, so a link among them is refused first.
    """
    for name in ("", "state.json", "state.json.tmp", "events.jsonl", "llm.jsonl"):
        refuse_links(directory / name if name else directory)
    try:
        read_state(directory / "state.json")
        return False
    except (OSError, ValueError):
        pass
    try:
        read_state(directory / "state.json.tmp")
    except (OSError, ValueError):
        return False
    os.replace(directory / "state.json.tmp", directory / "state.json")
    return True


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count(value: Any) -> int:
    """A count state.json keeps (`killed_attempts`): a whole number >= 0, else (absent, a hand
    edit: `true`, `1e999`) 0."""
    return value if _whole(value) else 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < math.inf


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _list_of_text(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _mapping_of(check: Any) -> Any:
    return lambda value: isinstance(value, dict) and all(check(v) for v in value.values())


# What resume reads back from state.json, by key: what each must be (a key left out is its
# default). Our writer never breaks these; a hand edit or a file from elsewhere can.
_SAVED_SHAPE: tuple[tuple[str, str, Any], ...] = (
    ("current", "a state name", lambda v: isinstance(v, str)),
    ("loop_file", "the loop file's path", lambda v: isinstance(v, str)),
    ("steps", "a whole number", _whole),
    ("context", "a mapping", lambda v: isinstance(v, dict)),
    ("captured", "a mapping of captures", _mapping_of(lambda v: isinstance(v, dict))),
    ("retries", "a mapping of whole numbers", _mapping_of(_whole)),
    ("prev", "a mapping or null", lambda v: v is None or isinstance(v, dict)),
    ("last_values", "a mapping of numbers", _mapping_of(_finite)),
    ("stalls", "a mapping of whole numbers", _mapping_of(_whole)),
    ("diffs", "a mapping of texts", _mapping_of(lambda v: isinstance(v, str))),
    ("cost_usd", "a number of dollars", _number),
    ("cost_unknown_in", "a list of state names", lambda v: _list_of_text(v)),
    ("started_at", "a time", lambda v: isinstance(v, str)),
    ("elapsed_ms", "a number of milliseconds", _number),
    ("ran_on_max_steps", "true or false", lambda v: isinstance(v, bool)),
    ("max_steps", "a whole number or null", lambda v: v is None or _whole(v)),
    ("replay_from", "a run directory or null", lambda v: v is None or isinstance(v, str)),
    ("cache", "true or false", lambda v: isinstance(v, bool)),
    ("killed_attempts", "a whole number", _whole),
)


def saved_state_problem(saved: dict[str, Any]) -> str | None:
    """What makes a parsed state.json unfit to resume from (a key of the wrong kind), or None."""
    for key, kind, fits in _SAVED_SHAPE:
        if key in saved and not fits(saved[key]):
            return f"its {key!r} is {json.dumps(saved[key])[:40]}, not {kind}"
    return None


def list_runs(root: Path | None = None) -> list[RunSnapshot]:
    """Every readable run of the project, newest first (run ids sort by start time)."""
    folder = runs_root(root)
    refuse_non_directory(folder.parent, folder)
    if not folder.is_dir():
        return []
    pids = _lock_pids(root)
    found = (read_run(d, lock_pids=pids) for d in sorted(folder.iterdir(), reverse=True))
    return [s for s in found if s is not None]


def unreadable_runs(
    root: Path | None = None, read: Collection[str] = frozenset()
) -> list[tuple[Path, str]]:
    """The run directories `list_runs` leaves out, newest first, each with what is wrong: no
    state.json at all, or one that does not parse (nor its temp copy). `read`: the ids of runs
    `list_runs` has just read, whose state.json is not read a second time."""
    folder = runs_root(root)
    if not folder.is_dir():
        return []
    starting = _lock_pids(root)  # a run holding its lock before its first state.json
    return [
        (d, _state_problem(d))
        for d in sorted(folder.iterdir(), reverse=True)
        if d.name not in read
        and d.is_dir()
        and not d.is_symlink()
        and d.name not in starting
        and _readable_state(d) is None
    ]


def _state_problem(directory: Path) -> str:
    if (directory / "state.json").exists():
        if not (directory / "events.jsonl").is_file():
            return "its state.json is damaged (it does not parse), and it has no events.jsonl"
        return (
            "its state.json is damaged (it does not parse); "
            f"`ll-loop history {directory.name}` shows its events"
        )
    return (
        "it has no state.json (the run died before its first state boundary): nothing to "
        "resume; start the loop again"
    )


def find_run(ref: str, root: Path | None = None) -> RunSnapshot:
    """A run by id (a unique prefix will do) or by the path of its directory in this project's
    `.loops/runs/`; UsageError otherwise. Any other directory is refused, whatever it holds:
    `stop` signals the process a run directory names."""
    directory = find_run_dir(ref, root)
    snapshot = read_run(directory, lock_pids=_lock_pids(root))
    if snapshot is None:
        if (directory / "state.json").exists():
            events = directory / "events.jsonl"
            raise UsageError(
                f"run {directory.name}'s state.json is damaged (it does not parse)",
                hint=f"its events are still in {events}: "
                f"`ll-loop history {directory.name}` shows them"
                if events.is_file()
                else f"it has no events.jsonl either: nothing of the run can be read; "
                f"remove {directory} and start the loop again",
            )
        raise UsageError(
            f"run {directory.name} has no state.json",
            hint="the run died before its first state boundary; start it again",
        )
    return snapshot


def ambiguous_run_id(ref: str, names: list[str]) -> UsageError:
    """The refusal of a prefix that names more than one run (the first four named)."""
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    return UsageError(
        f"run id {ref!r} is ambiguous: {', '.join(names[:4])}{more}", hint="give more of the id"
    )


def find_run_dir(ref: str, root: Path | None = None) -> Path:
    """The directory of a run by id, unique prefix or path (as `find_run`), whatever its
    state.json says: its event log can be read without it."""
    folder = runs_root(root)
    refuse_non_directory(folder.parent, folder)  # a file there: not "no run RUN in .loops/runs"
    candidates: list[Path] = []
    if not ref.strip():
        raise UsageError("no run id given", hint="`ll-loop status --all` lists the runs here")
    if os.sep in ref or ref in {".", ".."}:
        candidates = [_run_dir_at(Path(ref), folder)]
    elif os.path.isdir(folder / ref):  # False, not a crash, for a name too long
        candidates = [folder / ref]
    elif folder.is_dir():
        candidates = sorted(d for d in folder.iterdir() if d.name.startswith(ref))
    if len(candidates) > 1:
        raise ambiguous_run_id(ref, [d.name for d in candidates])
    if not candidates:
        raise UsageError(
            f"no run {ref!r} in {folder}", hint="`ll-loop status --all` lists the runs here"
        )
    return candidates[0]


def _run_dir_at(path: Path, folder: Path) -> Path:
    """`path` when it is a run directory of this project (`.loops/runs/<id>`, or a child run's
    `children/<state>-<n>` inside one), else UsageError."""
    resolved, runs = path.resolve(), folder.resolve()
    inside = resolved != runs and resolved.is_relative_to(runs)
    if not inside or not resolved.is_dir() or path.is_symlink():
        raise UsageError(
            f"{path} is not a run directory of this project",
            hint=f"pass a run id, or a directory in {folder}; `ll-loop status --all` lists them",
        )
    return resolved


def _lock_pids(root: Path | None) -> dict[str, Record]:
    """Run id → its live lock record (holder or waiter): liveness for records without a pid,
    and a resume that holds the run's lock, or waits for it, before state.json names it."""
    root = project_root() if root is None else root
    if not (loops_dir(root) / "locks").is_dir():
        return {}
    return {r.run_id: r for r in holders(root)}


RESUME_LOCK = "resume.lock"


@contextmanager
def resuming(directory: Path) -> Iterator[None]:
    """Hold the run's resume lock (an exclusive `flock(2)` on `resume.lock` in its directory)
    for as long as this process continues the run; UsageError when another process holds it.

    Two `ll-loop resume RUN` started together both read the run as interrupted before either
    names its process in state.json: without this both ran it, each ending the other's actions
    as orphans and writing the same files. The kernel drops the lock with its process.
    """
    fd = open_file(directory / RESUME_LOCK, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(
                f"run {directory.name} is being resumed by another process",
                hint=f"let that resume run; `ll-loop status {directory.name}` shows where it is",
            ) from None
        yield
    finally:
        os.close(fd)


# --- events --------------------------------------------------------------------------------


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of a log, skipping a torn (unterminated or unparsable) last line; a log that
    is not a regular file (a FIFO: waited for a writer forever; /dev/zero: read forever; a
    directory) is a `UsageError`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    except IsADirectoryError:
        fd = -1
    if fd < 0 or not stat.S_ISREG(os.fstat(fd).st_mode):
        if fd >= 0:
            os.close(fd)
        raise UsageError(
            f"{path} is not a regular file (a FIFO, device or directory), so its events "
            "cannot be read",
            hint="move it aside; `ll-loop explain RUN` says what the run's state.json holds",
        )
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as handle:
        while raw := handle.readline(MAX_EVENT_LINE):
            if not raw.endswith(b"\n"):
                if len(raw) < MAX_EVENT_LINE:
                    return  # a torn tail: the writer died mid-line
                _skip_line(handle)  # no event is this long: skip it, never hold it whole
                continue
            try:
                event = _event(raw)
            except ValueError:
                continue
            if isinstance(event, dict):
                yield event


def _event(line: bytes) -> Any:
    """`json.loads(line)`, without its per-line guess of the encoding and the two whitespace
    scans around the value (an event line starts with `{` and ends with a newline)."""
    text = line.decode("utf-8", "surrogatepass").removeprefix("\ufeff")
    try:
        value, end = _raw_decode(text)
    except ValueError:
        return _decode(text)  # leading whitespace, or no JSON: as json.loads says
    if text[end:].strip(" \t\n\r"):
        raise ValueError("extra data after the event")
    return value


def abandoned_calls(events_path: Path) -> range:
    """The model calls of the interrupted session that the resumed run makes anew, as their
    positions among the run's `llm_call` events (the n-th event is the n-th call of
    `llm.jsonl`): those after the boundary it continues from, and after the last resume, which
    dealt with the ones before it.

    That boundary is the last `route` of the top-level run, or, when the run died in a
    sub-loop that is continued, the last `route` of that child (and so on down). A run's
    `loop_start` is its first boundary; its `loop_complete` ends it (a stopped one stays open:
    it is continued).
    """
    boundaries: list[int] = []  # per depth: the index of the open run's last boundary
    resumed = -1
    calls: list[int] = []  # the indexes of the llm_call events
    for index, event in enumerate(read_events(events_path)):
        kind, depth = event.get("event"), event.get("depth")
        if not isinstance(depth, int) or depth < 0:
            continue
        if kind == "llm_call":
            calls.append(index)
        elif kind in {"loop_start", "route"}:
            del boundaries[depth:]
            boundaries += [index] * (depth + 1 - len(boundaries))
        elif kind == "loop_resume" and depth == 0:
            resumed = index
        elif kind == "loop_complete" and event.get("terminated_by") != "stopped":
            del boundaries[depth:]
    since = max(boundaries[-1] if boundaries else -1, resumed)
    first = bisect.bisect_right(calls, since)
    return range(first, len(calls))


def _skip_line(handle: BinaryIO) -> None:
    """Read past the end of the current line in bounded pieces."""
    while piece := handle.readline(MAX_EVENT_LINE):
        if piece.endswith(b"\n"):
            return


def repair_log(path: Path) -> int:
    """Cut a torn last line off a log (`events.jsonl`, `llm.jsonl`) so the lines a resumed run
    appends start on a line of their own.

    Returns how many bytes were dropped. Only the tail after the last newline is ever cut; a
    complete line is never touched.
    """
    # The log is opened without following a link: a planted `events.jsonl -> ~/file` would
    # otherwise have that file's tail cut off (UnsafePath instead).
    try:
        fd = open_file(path, os.O_RDWR)
    except FileNotFoundError:
        return 0
    with os.fdopen(fd, "rb+") as handle:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0
        tail_start = max(0, size - (1 << 20))
        handle.seek(tail_start)
        tail = handle.read()
        if tail.endswith(b"\n"):
            return 0
        cut = tail.rfind(b"\n")
        keep = tail_start + cut + 1 if cut >= 0 else tail_start
        if cut < 0 and tail_start > 0:
            return 0  # a single line over 1 MiB without a newline: leave it to the reader
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
        return size - keep


# --- actions a killed run left running ----------------------------------------------------


def end_orphaned_actions(run_id: str, grace: float = 2.0) -> list[int]:
    """SIGTERM each orphaned action group of `run_id`, SIGKILL what is left after `grace`
    seconds, as a timeout would; the groups that were ended."""
    groups = orphaned_actions(run_id)
    for pgid in groups:
        signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(process_alive(g, None) for g in groups):
        time.sleep(0.02)
    for pgid in groups:  # the rest of each group (a leader that obeyed may leave children)
        signal_group(pgid, signal.SIGKILL)
    return groups


# --- helpers -------------------------------------------------------------------------------


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None
