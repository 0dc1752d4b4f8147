"""Scope locks: a run holds the paths in its `scope`, so two runs never change the same files.

The registry is a directory, `.loops/locks/`, with one JSON record per holder or waiter. Every
check-and-insert happens under one exclusive `flock(2)` on `.loops/locks/.registry.lock` (the
kernel drops it with its process, so it cannot go stale), so the records themselves need no
locking. A record names its process by pid *and* start time (field 22 of `/proc/<pid>/stat`): a
record whose process is gone, or whose pid now belongs to another process, is dead and is reaped
by whoever looks next. Nothing has to clean up after a SIGKILL. A holder killed that way keeps
its paths while an action it started still runs (`engine.runtime.orphans`): the action is still
changing them; `ll-loop stop RUN` ends it, and `resume` of that run takes the paths over.

Two scopes overlap when a path is the same or one contains the other; no `scope` means the whole
project root. A conflicting live holder makes `acquire_scope` fail fast with `LockConflict`
(exit 2); with `queue=True` it waits its turn: tickets are handed out in order of arrival, and a
waiter takes the lock only when no holder and no earlier live waiter overlaps it.

A run that holds a lease passes it to its actions as `LL_LOCK_LEASE` (the run id),
`LL_LOCK_PATHS` (JSON list) and `LL_LOCK_ROOT`. An `ll-loop run` started from such an action,
whose scope lies within the leased paths, inherits the lease instead of waiting for its own
parent (a deadlock); it does not release what it did not take. It records its own paths under
the lease (`Record.inherits`), which no other run of that lease waits for: a nested run started
in the background (`ll-loop run child.yaml &`) can outlive its parent, and keeps its paths
until it ends instead of running on unlocked.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from engine.load.project import UnsafePath, ensure_dir, loops_dir, open_file
from engine.model.errors import LockConflict, StoppedWaiting, UsageError
from engine.runtime.orphans import orphaned_actions

LEASE_ENV = "LL_LOCK_LEASE"
PATHS_ENV = "LL_LOCK_PATHS"
ROOT_ENV = "LL_LOCK_ROOT"
POLL_SECONDS = 0.05  # how often a queued run looks again
_TICKET_FILE = ".ticket"
_REGISTRY_LOCK = ".registry.lock"


# --- processes -----------------------------------------------------------------------------


def process_start_time(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat), or None.

    None means the process does not exist (or /proc cannot tell). The command name (field 2) may
    contain spaces and parentheses, so the fields are counted from the last `)`.
    """
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    try:
        return int(fields[19])  # fields[0] is field 3 (state), so field 22 is fields[19]
    except (IndexError, ValueError):
        return None


def process_alive(pid: int, start_time: int | None) -> bool:
    """True when `pid` runs and is the same process that was recorded (same start time)."""
    if pid <= 0:
        return False
    current = process_start_time(pid)
    if current is not None:
        if _is_zombie(pid):
            return False
        return start_time is None or current == start_time
    if Path("/proc/self/stat").exists():
        return False  # /proc works, so the pid is gone
    try:  # no /proc (not Linux): fall back to a signal probe, pid alone
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_zombie(pid: int) -> bool:
    """A zombie has exited; its pid stays until the parent reaps it, but it holds nothing."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    return raw[raw.rfind(")") + 2 :].startswith("Z")


# --- scopes --------------------------------------------------------------------------------


def scope_paths(root: Path, scope: Sequence[str] | None) -> tuple[str, ...]:
    """The absolute, normalised paths a scope covers; no scope (or `[]`) means the whole root."""
    base = Path(root).resolve()
    if not scope:
        return (str(base),)
    paths = {_resolved(base, entry) for entry in scope}
    return tuple(sorted(paths))


def _resolved(base: Path, entry: str) -> str:
    """`base / entry` with its links followed; a link loop or a NUL is the user's to fix."""
    try:
        return str((base / entry).resolve())
    except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: a link loop (< 3.13)
        reason = "a symbolic link loop" if isinstance(exc, RuntimeError) else str(exc)
        raise UsageError(
            f"scope path {entry!r} cannot be locked: {reason}",
            hint="fix or remove the link it names, or correct the loop's `scope`",
        ) from None


def _contains(outer: str, inner: str) -> bool:
    return inner == outer or Path(inner).is_relative_to(outer)


def overlap(mine: Sequence[str], theirs: Sequence[str]) -> str | None:
    """The first of `mine` that equals, contains or lies inside one of `theirs`; else None."""
    for path in mine:
        for other in theirs:
            if _contains(path, other) or _contains(other, path):
                return path if len(path) >= len(other) else other
    return None


def within(paths: Sequence[str], leased: Sequence[str]) -> bool:
    """True when every path lies inside (or equals) one of the leased paths."""
    return all(any(_contains(outer, p) for outer in leased) for p in paths)


# --- the registry --------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One holder or waiter in `.loops/locks/`."""

    run_id: str
    pid: int
    start_time: int | None
    paths: tuple[str, ...]
    ticket: int
    holding: bool
    queued_at: float
    acquired_at: float | None = None
    loop: str = ""  # the loop's name, for `status` while the run waits in the queue
    # False: a SIGTERM to `pid` would not end this wait (a run queued in a worker thread, whose
    # process it would kill); `stop` asks through the file `stop_request` instead.
    signals: bool = True
    # The lease (its first holder's run id) this record holds paths under: a nested run that
    # inherited it. Every other run waits for it; one of the same lease fails fast instead.
    inherits: str | None = None
    locked: bool = field(default=False, compare=False)  # its process keeps it flocked: it runs

    @property
    def filename(self) -> str:
        return f"{self.ticket:012d}.json"

    @property
    def stop_request(self) -> str:
        """The file in the registry's directory that asks this waiter to give up."""
        return f"{self.ticket:012d}.stop"

    def live(self) -> bool:
        """Its run's process runs; or, for a holder, an action its killed run left behind
        still does (`kill -9` cannot take an action with it, and the action is still changing
        the scope's files)."""
        if process_alive(self.pid, self.start_time):
            return True
        return self.holding and bool(orphaned_actions(self.run_id))

    def describe(self) -> str:
        role = "held" if self.holding else "queued"
        if self.holding and not self.locked and not process_alive(self.pid, self.start_time):
            left = orphaned_actions(self.run_id)
            if left:
                groups = ", ".join(str(g) for g in left)
                return (
                    f"run {self.run_id} (pid {self.pid} was killed; its action, process group "
                    f"{groups}, still runs)"
                )
        return f"run {self.run_id} (pid {self.pid}, {role})"

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "pid": self.pid,
            "start_time": self.start_time,
            "paths": list(self.paths),
            "ticket": self.ticket,
            "holding": self.holding,
            "queued_at": self.queued_at,
            "acquired_at": self.acquired_at,
            "loop": self.loop,
            "signals": self.signals,
            "inherits": self.inherits,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        start = data.get("start_time")
        acquired = data.get("acquired_at")
        return cls(
            run_id=str(data["run_id"]),
            pid=int(data["pid"]),
            start_time=int(start) if start is not None else None,
            paths=tuple(str(p) for p in data["paths"]),
            ticket=int(data["ticket"]),
            holding=bool(data["holding"]),
            queued_at=float(data.get("queued_at", 0.0)),
            acquired_at=float(acquired) if acquired is not None else None,
            loop=str(data.get("loop") or ""),
            signals=data.get("signals") is not False,
            inherits=str(data["inherits"]) if data.get("inherits") else None,
        )


class RegistryGuard:
    """An exclusive `flock(2)` on the registry's lock file, held for one check-and-update.

    Plain `fcntl` rather than the `filelock` package: this is all we need of it, and its import
    (logging, decimal, secrets, ctypes, uuid, platform) cost ~15 ms of every run's start-up.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> None:
        with _refused_as_conflict(self.path.parent):
            try:
                fd = open_file(self.path, os.O_RDWR | os.O_CREAT)
            except FileNotFoundError:  # `.loops/locks/` removed by hand while a run waits in it
                ensure_dir(self.path.parent)
                fd = open_file(self.path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def __exit__(self, *exc_info: object) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing our only descriptor of it releases the lock


_REFUSED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


@contextlib.contextmanager
def _refused_as_conflict(where: Path) -> Iterator[None]:
    """The registry at `where` cannot be written by this user (made by another, e.g. under
    sudo) or at all (a read-only mount): one sentence, not an internal error or a hint about
    disk space."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in _REFUSED:
            raise
        raise LockConflict(
            f"cannot take the scope lock: the lock registry {where} is not writable "
            f"({exc.strerror})",
            hint="make .loops/locks writable for you (a run under sudo or another user may "
            "have made it), or run with --no-lock",
        ) from None


class Registry:
    """The records of one project root; every method but `records` needs `self.guard` held."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        where = loops_dir(self.root) / "locks"
        with _refused_as_conflict(where):
            self.dir = ensure_dir(where)
        self.guard = RegistryGuard(self.dir / _REGISTRY_LOCK)

    def records(self) -> list[Record]:
        """Every readable record, oldest ticket first (a torn or foreign file is skipped)."""
        return _records_in(self.dir)

    def live_records(self) -> list[Record]:
        """The records whose process still runs; dead ones are deleted on the way."""
        live: list[Record] = []
        for record in self.records():
            if _held(self.dir / record.filename):
                live.append(replace(record, locked=True))
            elif record.live():
                live.append(record)
            else:
                self.remove(record)
        return live

    def next_ticket(self, live: Sequence[Record]) -> int:
        """One more than any ticket handed out (the counter file) or still in use (`live`).

        The counter is written in place, not renamed (a rename over a file makes ext4 flush);
        a torn counter can only read low, and `live` keeps the result above every record.
        """
        path = self.dir / _TICKET_FILE
        try:  # never waiting on a FIFO planted there: `_write` refuses it in one sentence
            with os.fdopen(open_file(path, os.O_RDONLY), "rb") as handle:
                last = int(handle.read().decode("utf-8").strip() or 0)
        except (OSError, ValueError, UnsafePath):
            last = 0
        ticket = max(last, *(r.ticket for r in live), 0) + 1
        _write(path, str(ticket), os.O_TRUNC)
        return ticket

    def write(self, record: Record) -> None:
        path = self.dir / record.filename
        _write_atomic(path, json.dumps(record.to_json()))
        _hold(path)

    def remove(self, record: Record) -> None:
        path = self.dir / record.filename
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        _let_go(path)

    def remove_own(self, record: Record) -> None:
        """Remove `record`'s file if it is still `record`'s: when the registry was cleared by
        hand, its ticket may have been handed to another run, whose lock that file is now."""
        current = self._read(self.dir / record.filename)
        if current is not None and (current.run_id, current.pid) == (record.run_id, record.pid):
            self.remove(record)
        else:
            _let_go(self.dir / record.filename)

    def rejoin(self, record: Record, live: Sequence[Record]) -> Record:
        """`record` written back if the registry lost it (cleared by hand while it waited);
        under a new ticket if another run has been given its own."""
        if any(
            (r.run_id, r.pid, r.ticket) == (record.run_id, record.pid, record.ticket) for r in live
        ):
            return record
        if (self.dir / record.filename).exists():
            record = replace(record, ticket=self.next_ticket(live))
        self.write(record)
        return record

    @staticmethod
    def _read(path: Path) -> Record | None:
        """The record at `path`, or None: torn, foreign, or not a regular file (a FIFO named
        like a record made every run and `status` wait for a writer forever)."""
        try:
            with os.fdopen(open_file(path, os.O_RDONLY), "rb") as handle:
                return Record.from_json(json.loads(handle.read().decode("utf-8")))
        except (OSError, ValueError, KeyError, TypeError, UnsafePath):
            return None


def _records_in(folder: Path) -> list[Record]:
    """Every readable record in `folder`, oldest ticket first (a torn or foreign file is
    skipped)."""
    found = (Registry._read(path) for path in sorted(folder.glob("*.json")))
    return [record for record in found if record is not None]


# This process's records, each kept open with a shared `flock(2)` while it is in the registry:
# the kernel drops it with the process. A record so locked is live whatever `/proc` says: its
# holder may run in another pid namespace (a container sharing the project) or be hidden from
# this user (`hidepid`), where its pid looked gone and its paths were taken.
_OWN: dict[str, int] = {}


def _hold(path: Path) -> None:
    """Keep this process's record at `path` (just written: a new file) locked while it lives."""
    _let_go(path)
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:  # the registry was cleared by hand just now: a waiter's next
        return  # look writes its record back (`rejoin`), a holder's lock is gone with it
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return
    _OWN[str(path)] = fd


def _let_go(path: Path) -> None:
    fd = _OWN.pop(str(path), None)
    if fd is not None:
        os.close(fd)


def _held(path: Path) -> bool:
    """True when a live process keeps the record at `path` locked (see `_OWN`)."""
    if str(path) in _OWN:
        return True
    try:
        fd = open_file(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # also lets go of the lock just taken
    return False


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _write(tmp, text, os.O_TRUNC)
    os.replace(tmp, path)


def _write(path: Path, text: str, flags: int) -> None:
    """Write `text` to `path`, never through a link (see `engine.load.project`)."""
    with os.fdopen(open_file(path, os.O_WRONLY | os.O_CREAT | flags), "w", encoding="utf-8") as f:
        f.write(text)


def blocker(
    record: Record, others: Sequence[Record], parent: str | None = None
) -> tuple[Record, str] | None:
    """Who keeps `record` from taking its paths: an overlapping holder, else an earlier waiter.

    A run started by a live holder's action (`parent`) is that holder's work, which arrived
    before every waiter: it waits for holders only. Queued behind a waiter that waits for its
    own parent, it would wait for ever (the parent waits for it)."""
    others = [o for o in others if o.run_id != record.run_id]  # a resumed run's own record
    for other in others:
        if other.ticket != record.ticket and other.holding:
            path = overlap(record.paths, other.paths)
            if path is not None:
                return other, path
    if parent is not None and any(_of_lease(o, parent) and o.holding for o in others):
        return None
    for other in others:
        if other.ticket < record.ticket and not other.holding:
            path = overlap(record.paths, other.paths)
            if path is not None:
                return other, path
    return None


# --- leases --------------------------------------------------------------------------------


@dataclass
class Lease:
    """The right to change `paths` for the life of a run; a context manager that releases."""

    run_id: str
    paths: tuple[str, ...]
    root: Path
    inherited_from: str | None = None  # the parent run id when the lease was inherited
    record: Record | None = None
    waited_s: float = 0.0
    _released: bool = field(default=False, repr=False)

    @property
    def holder(self) -> str:
        """The run id whose lease this is (the parent's, when inherited)."""
        return self.inherited_from or self.run_id

    def env(self) -> dict[str, str]:
        """What actions of this run get, so a nested `ll-loop run` inherits the lease."""
        if not self.paths:
            return {}
        return {
            LEASE_ENV: self.holder,
            PATHS_ENV: json.dumps(list(self.paths)),
            ROOT_ENV: str(self.root),
        }

    def release(self) -> None:
        """Give the paths back (idempotent); a run that inherited its lease gives back only the
        record of its own paths: the lease is its holder's to release."""
        if self._released:
            return
        self._released = True
        if self.record is None:
            return
        registry = Registry(self.root)
        with registry.guard:
            registry.remove_own(self.record)

    def __enter__(self) -> Lease:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def acquire_scope(
    root: Path,
    run_id: str,
    scope: Sequence[str] | None,
    *,
    queue: bool = False,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    loop: str = "",
    signals: bool = True,
    on_wait: Callable[[str], None] | None = None,
    callers: frozenset[str] = frozenset(),
) -> Lease:
    """Take the scope's paths for `run_id`, or raise `LockConflict`.

    `callers`: runs that cannot go on until this call returns (the runs whose `on_event`
    listener makes it); one of them holding an overlapping path is a conflict, queue or not.

    `queue` waits FIFO (up to `timeout` seconds when given), after telling `on_wait` whom it
    waits for; `env` is where an inherited lease
    is looked for (`os.environ` when None). An uncontended lock costs one pass under the
    registry lock and two small file writes.
    """
    env = os.environ if env is None else env
    registry = Registry(root)
    paths = scope_paths(registry.root, scope)
    parent = env.get(LEASE_ENV) or None
    started = time.monotonic()
    with registry.guard:
        live = registry.live_records()
        pid = os.getpid()
        record = Record(
            run_id=run_id,
            pid=pid,
            start_time=process_start_time(pid),
            paths=paths,
            ticket=registry.next_ticket(live),
            holding=False,
            queued_at=time.time(),
            loop=loop,
            signals=signals,
        )
        inherited = _inherited(live, paths, env)
        if inherited is not None:
            lease = inherited.inherits or inherited.run_id
            own = replace(record, holding=True, acquired_at=time.time(), inherits=lease)
            registry.write(own)  # its paths stay held if it outlives the lease's holder
            leased = tuple(str(p) for p in json.loads(env.get(PATHS_ENV, "[]")))
            return Lease(run_id, leased, registry.root, inherited_from=lease, record=own)
        _refuse_callers(record, live, callers)
        found = blocker(record, live, parent)
        if found is None:
            held = replace(record, holding=True, acquired_at=time.time())
            registry.write(held)
            return Lease(run_id, paths, registry.root, record=held)
        _refuse_unless_queued(found, queue, parent)
        registry.write(record)  # a waiter: its ticket keeps its place in the queue
    waiting = [record]  # its ticket changes if the registry is cleared under it
    try:
        if on_wait is not None:  # a queued run that says nothing looks hung
            other, path = found
            on_wait(f"waiting for scope path {path}, locked by {other.describe()}")
        held = _wait_turn(registry, waiting, timeout, started, parent)
    except BaseException:
        with registry.guard:
            registry.remove_own(waiting[0])
        raise
    finally:
        with contextlib.suppress(OSError):
            (registry.dir / waiting[0].stop_request).unlink()
    return Lease(run_id, paths, registry.root, record=held, waited_s=time.monotonic() - started)


def _wait_turn(
    registry: Registry,
    waiting: list[Record],
    timeout: float | None,
    started: float,
    parent: str | None,
) -> Record:
    """Poll until nothing blocks the queued record (`waiting[0]`), then mark it holding; raise
    on timeout. A record the registry lost is written back (`Registry.rejoin`)."""
    while True:
        time.sleep(POLL_SECONDS)
        if (registry.dir / waiting[0].stop_request).exists():
            raise StoppedWaiting(
                "stopped by ll-loop stop while waiting for the scope lock; the run never started",
                hint="run it again (with --queue to wait) when you want it",
                by="ll-loop stop",
            )
        with registry.guard:
            live = registry.live_records()
            record = waiting[0] = registry.rejoin(waiting[0], live)
            found = blocker(record, live, parent)
            if found is None:
                held = replace(record, holding=True, acquired_at=time.time())
                registry.write(held)
                return held
        _refuse_unless_queued(found, True, parent)
        other, path = found
        if timeout is not None and time.monotonic() - started >= timeout:
            raise LockConflict(
                f"gave up after {timeout:g}s waiting for scope path {path}, "
                f"locked by {other.describe()}",
                hint="raise --queue-timeout, or stop the holder with `ll-loop stop "
                f"{other.run_id}`",
            )


def _refuse_callers(record: Record, live: Sequence[Record], callers: frozenset[str]) -> None:
    """Waiting for a run that waits for us (its listener made this call) would never end."""
    for other in live:
        if other.run_id in callers and other.holding:
            path = overlap(record.paths, other.paths)
            if path is not None:
                raise LockConflict(
                    f"scope path {path} is locked by {other.describe()}, whose on_event "
                    "listener is making this call: waiting for it would never end",
                    hint=f"start this run after run {other.run_id} has ended, or with lock=False",
                )


def _refuse_unless_queued(found: tuple[Record, str], queue: bool, parent: str | None) -> None:
    """Fail fast on a conflict, or on any conflict with our own parent (waiting would hang)."""
    other, path = found
    if parent is not None and _of_lease(other, parent):
        whose = "this run's parent" if other.run_id == parent else "a run under its parent's lease"
        raise LockConflict(
            f"scope path {path} is held by {whose}, {other.describe()}",
            hint="a nested run inherits its parent's lock only when its scope lies within "
            "the parent's scope; narrow the child's scope: or run it with --no-lock",
        )
    if not queue:
        raise LockConflict(
            f"scope path {path} is locked by {other.describe()}",
            hint="wait for it with --queue, stop it with `ll-loop stop "
            f"{other.run_id}`, or skip locking with --no-lock",
        )


def _of_lease(record: Record, lease: str) -> bool:
    """`record` is the holder of `lease` or a nested run holding paths under it: a run of that
    lease that waited for it would wait for its own ancestor."""
    return record.run_id == lease or record.inherits == lease


def _inherited(
    live: Sequence[Record], paths: tuple[str, ...], env: Mapping[str, str]
) -> Record | None:
    """The live holding record of the lease `env` carries, when it covers `paths`: its
    holder's, else (the holder has ended) that of a run holding paths under it, like the nested
    run whose action this is."""
    parent = env.get(LEASE_ENV)
    if not parent:
        return None
    try:
        leased = tuple(str(p) for p in json.loads(env.get(PATHS_ENV, "[]")))
    except ValueError:
        return None
    if not within(paths, leased):
        return None
    for record in live:
        if record.run_id == parent and record.holding and within(paths, record.paths):
            return record
    for record in live:
        if record.inherits == parent and record.holding and within(paths, record.paths):
            return record
    return None


def ask_to_stop_waiting(root: Path, run_id: str, wait: float) -> bool:
    """Ask a run waiting in the queue that a SIGTERM would not stop (queued in a worker
    thread, or in this very process: the signal would kill the process, or stop another of its
    waits) to give up, through its `stop_request` file; wait up to `wait` seconds for it to
    leave the queue. False when the run is not such a waiter (a SIGTERM is what stops it)."""
    registry = Registry(root)
    with registry.guard:
        found = [r for r in registry.live_records() if r.run_id == run_id and not r.holding]
    if not found or (found[0].signals and found[0].pid != os.getpid()):
        return False
    record = found[0]
    (registry.dir / record.stop_request).touch()
    deadline = time.monotonic() + wait
    while (registry.dir / record.filename).exists() and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
    return True


def holders(root: Path) -> list[Record]:
    """The live records (holders and waiters) of a project, dead ones reaped on the way."""
    try:
        registry = Registry(root)
        with registry.guard:
            return registry.live_records()
    except LockConflict:  # a registry this user cannot write is still read (`status`)
        readonly = loops_dir(Path(root).resolve()) / "locks"
        return [r for r in _records_in(readonly) if _held(readonly / r.filename) or r.live()]


def no_lock(root: Path, run_id: str) -> Lease:
    """A lease that holds nothing (for `--no-lock`), so callers need only one code path."""
    return Lease(run_id, (), Path(root).resolve(), _released=True)
