"""The run directory `.loops/runs/<run_id>/` (IO): state.json, events.jsonl, outputs/, artifacts/.

`state.json` is replaced atomically (a temp file swapped in) at every state boundary, so a crash
leaves either the previous or the next boundary, never half a file. `events.jsonl` is appended
one JSON object per line; the lines of a step are held until the run may wait (an action starts,
an evaluator that may wait begins, a judge or model call ends, a state without an action is
entered) or reaches a boundary, then written with one write(2), so at most one step's events are
ever in memory and a run of 100,000 steps costs no more memory than a run of ten. `llm.jsonl`
belongs to the LLM layer.

Durability: a killed process loses nothing it waited on (the events reach the OS before every
action and every judge, and state.json is swapped in only after the events that lead to it).
Against a power cut the files are fsynced at a state boundary at most once per `SYNC_INTERVAL`
and always when the run ends or is stopped (`close`): an fsync costs ~3 ms here, more than a
trivial shell step, so one per boundary would more than double the cost of a short step
(measured on the 1000-step benchmark: ratio 1.9x -> 2.7x). A power cut therefore loses at most
the last second of boundaries, and `ll-loop resume` continues from the last one that reached the
disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from engine.load.project import (
    ensure_dir,
    loops_dir,
    open_file,
    refuse_links,
    regular_file_bytes,
)

SYNC_INTERVAL = 1.0  # seconds: at most one fsync of events + state.json per this, at a boundary


def new_run_id() -> str:
    """Sortable by start time and unique: `20261130-122301-a1b2c3` (UTC)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(3).hex()


_second_text: tuple[int, str] = (-1, "")  # the last whole second formatted, reused per event


# Events after which the run may wait: an action runs, or a judge or model call ends with others
# still to come. The log is written then, and whenever `flush` is called (the interpreter does
# before an evaluator that may wait, and at every state boundary).
_WAIT_FOLLOWS = frozenset({"action_start", "llm_call", "judge"})


def now_iso() -> str:
    """UTC now as `2026-11-30T14:43:52.123Z`; every event needs one, so the part up to the
    second is formatted once per second (datetime's isoformat took a fifth of an emit)."""
    global _second_text
    now = time.time()
    second = int(now)
    cached = _second_text  # read once: judge threads emit events too
    if second != cached[0]:
        cached = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        _second_text = cached
    return f"{cached[1]}.{int((now - second) * 1000):03d}Z"


def runs_root(root: Path | None = None) -> Path:
    """`.loops/runs` of the project `root` (default: the project of the working directory)."""
    return loops_dir(root) / "runs"


class RunStore:
    """One run's directory; also the `Recorder` the interpreter emits events to."""

    def __init__(self, directory: Path, run_id: str) -> None:
        self.run_id = run_id
        self.dir = directory
        self.outputs_dir = directory / "outputs"
        self.artifacts_dir = directory / "artifacts"
        self.state_path = directory / "state.json"
        self.events_path = directory / "events.jsonl"
        self._state_temp = os.fsencode(directory / "state.json.tmp")
        self._state_target = os.fsencode(self.state_path)  # both encoded once, not per boundary
        self._state_written = self.state_path.exists()
        # Once swaps work, the two files' descriptors stay open: the one at the temp name is
        # written next, then the names are exchanged and the two trade places (no open/close
        # per boundary). Each descriptor's size, to truncate only when the content shrinks.
        self._temp_fd: int | None = None
        self._state_fd: int | None = None
        self._sizes: dict[int, int] = {}
        self._exchange: bool | None = None  # False once the exchange proved unsupported
        self._events: int | None = None  # the event log, O_APPEND
        self._pending: list[str] = []  # event lines not written yet (`emit`)
        self._pending_lock = threading.Lock()  # judge and model-call threads emit too
        self._synced = time.monotonic()  # when the files were last fsynced
        # No circular-reference check: records are trees built here (the check cost a quarter
        # of encoding state.json, ~5 µs a boundary).
        self._dumps = json.JSONEncoder(
            ensure_ascii=False, separators=(",", ":"), default=_jsonable, check_circular=False
        ).encode

    @classmethod
    def create(cls, root: Path, run_id: str | None = None) -> RunStore:
        """Make a fresh run directory under `root` (normally `.loops/runs`)."""
        run_id = run_id or new_run_id()
        store = cls(ensure_dir(root) / run_id, run_id)
        store.dir.mkdir()  # a fresh directory of ours: nothing in it can be a planted link
        store.artifacts_dir.mkdir()
        store.outputs_dir.mkdir()
        return store

    @classmethod
    def open(cls, root: Path, run_id: str) -> RunStore:
        """An existing run directory (to resume it or read it); refused when it is a link."""
        refuse_links(root / run_id)
        return cls(root / run_id, run_id)

    def emit(self, event: str, **fields: Any) -> None:
        """Add one event line to the log. Lines are written (one write(2) for all that are
        waiting) where the run may wait: once an action is about to start, after each judge or
        model call, when the interpreter says so (`flush`: before an evaluator that may wait, or
        a state without an action is entered) and at every state boundary. So a reader
        (`ll-loop history RUN`, `tail -f`) sees each event before the run waits on anything, and
        a killed run loses at most what it did in the microseconds since; one write per event
        cost 1000 quick steps ~35 ms."""
        self._add(event, fields)

    def emit_line(self, event: str, **fields: Any) -> str:
        """`emit`, returning the line as the log has it (what a listener is handed)."""
        return self._add(event, fields)

    def _add(self, event: str, fields: dict[str, Any]) -> str:
        record = {"ts": now_iso(), "event": event, "run_id": self.run_id, **fields}
        line = self._dumps(record)
        with self._pending_lock:
            self._pending.append(line)
        if event in _WAIT_FOLLOWS:
            self.flush()
        return line

    def flush(self) -> None:
        """Write the waiting event lines (the run directory's event log) in one write(2)."""
        with self._pending_lock:
            if not self._pending:
                return
            if self._events is None:
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
                self._events = open_file(self.events_path, flags)
            data = _utf8("\n".join(self._pending) + "\n")
            self._pending.clear()
            _write_all(self._events, data)

    def save_state(self, data: dict[str, Any]) -> None:
        """Replace state.json atomically: a crash leaves the previous boundary or this one.

        The new content is written to `state.json.tmp`, which is then swapped in. On Linux the
        swap is `renameat2(RENAME_EXCHANGE)`, after which the temp file holds the previous
        boundary and is overwritten in place next time, through the descriptor kept open for it.
        Both halves matter on ext4: a rename *over* an existing file flushes data to disk
        (auto_da_alloc, 0.3-1.5 ms), and creating and unlinking a fresh temp file each time
        costs ~60 µs of inode churn, against ~15 µs for write + ftruncate + exchange (the temp
        is never truncated to zero, which would trigger the same flush). Elsewhere it is a
        plain `os.replace`.

        A reader of a live run opens state.json and reads it at once; the inode it holds is
        rewritten only two boundaries later, so `read_state` retries the rare torn read.
        """
        self.flush()
        sync = time.monotonic() - self._synced >= SYNC_INTERVAL
        if sync and self._events is not None:
            os.fsync(self._events)
        content = _utf8(self._dumps(data))
        if self._exchange is not False and self._state_written:
            fd = self._temp_fd if self._temp_fd is not None else self._open_temp()
            self._write_at_start(fd, content, sync)
            self._exchange = _exchange(self._state_temp, self._state_target)
            if self._exchange:  # the names traded places, and so do the descriptors
                self._temp_fd, self._state_fd = self._state_fd, fd
            else:  # no swaps on this system: a plain replace from now on
                self._forget(fd)
                self._temp_fd = None
        if not self._exchange:
            fd = self._open_temp()
            try:
                self._write_at_start(fd, content, sync)
            finally:
                self._forget(fd)
            os.replace(self._state_temp, self.state_path)
            self._state_written = True
        if sync:  # the swap too reaches the disk at each sync point, not only the content
            _fsync_path(self.dir)

    def _open_temp(self) -> int:
        """The temp file, created if needed; never through a link (the directory was made or
        checked by us, so only the file is guarded)."""
        fd = open_file(self._state_temp, os.O_WRONLY | os.O_CREAT, parents_checked=True)
        self._sizes[fd] = os.fstat(fd).st_size
        return fd

    def _write_at_start(self, fd: int, content: bytes, sync: bool) -> None:
        """`content` as the whole file: written over the old from its start, cut only when it is
        shorter (never to zero first, which would make ext4 flush the file at its close)."""
        _write_all(fd, content, at=0)
        if len(content) < self._sizes[fd]:
            os.ftruncate(fd, len(content))
        self._sizes[fd] = len(content)
        if sync:
            os.fsync(fd)
            self._synced = time.monotonic()

    def _forget(self, fd: int) -> None:
        self._sizes.pop(fd, None)
        os.close(fd)

    def load_state(self) -> dict[str, Any]:
        return read_state(self.state_path)

    def sync(self) -> None:
        """fsync the event log, state.json and the directory (the run ends or is stopped)."""
        self.flush()
        if self._events is not None:
            os.fsync(self._events)
        for path in (self.state_path, self.dir):
            _fsync_path(path)
        self._synced = time.monotonic()

    def close(self) -> None:
        """Sync and close: a finished or stopped run (or sub-loop) is on disk, power cut or
        not. The temp file (an earlier boundary) goes."""
        self.flush()
        if self._events is not None or self._state_written:
            self.sync()
        if self._events is not None:
            os.close(self._events)
            self._events = None
        for fd in (self._temp_fd, self._state_fd):
            if fd is not None:
                self._forget(fd)
        self._temp_fd = self._state_fd = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._state_temp)


def read_state(path: Path) -> dict[str, Any]:
    """A run's state.json as a dict; a torn read of a live run's file is retried.

    Raises OSError when unreadable, ValueError when it is not a JSON object.
    """
    for attempt in range(3):
        try:
            data = json.loads(regular_file_bytes(path).decode("utf-8"))  # never waits on a FIFO
        except ValueError:
            if attempt == 2:
                raise
            continue
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a JSON object")
        return data
    raise AssertionError("unreachable")


def saved_at(state: Mapping[str, Any], path: Path) -> float:
    """When `state`, read from `path`, was saved: its `saved_at`, else (a run of an earlier
    version) the file's modification time."""
    value = state.get("saved_at")
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return path.stat().st_mtime


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@cache
def _renameat2() -> Any:
    """libc's renameat2, or None where there is none (not Linux, old libc)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None


def _exchange(source: bytes, target: bytes) -> bool:
    """Atomically swap two existing paths; False when the system or filesystem cannot."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    return bool(renameat2(_AT_FDCWD, source, _AT_FDCWD, target, _RENAME_EXCHANGE) == 0)


def _fsync_path(path: Path) -> None:
    """fsync a file or directory by path; one that is not there is nothing to sync."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _utf8(text: str) -> bytes:
    """UTF-8 for the run's records. A value that holds bytes that are not UTF-8 (an environment
    variable, a file name; Python carries them as lone surrogates) is written as `\\udcff`
    escapes: a record is never lost to an encoding error."""
    return text.encode("utf-8", "backslashreplace")


def _write_all(fd: int, data: bytes, *, at: int | None = None) -> None:
    """write(2) until all of `data` is written (a short write is rare but allowed); from offset
    `at` with pwrite(2) when given, else at the descriptor's position."""
    view = memoryview(data)
    while view:
        done = len(data) - len(view)
        view = view[os.write(fd, view) if at is None else os.pwrite(fd, view, at + done) :]


def _jsonable(value: Any) -> Any:
    """JSON for the odd non-JSON value (tuples are lists already; sets, paths, mappings)."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if hasattr(value, "items"):
        return dict(value.items())
    return str(value)
