"""Shell actions: run a script in `bash`, in its own process group, with a timeout (IO).

This is the hot path of every run, so it avoids threads and `communicate()` (measurably slower):
one spawn, a poll loop over stdout, stderr and a pidfd, and nothing else. The spawn is
`os.posix_spawn` (glibc's vfork + exec, with no Python in between: ~0.1 ms less per action than
`Popen`) whenever it can do all that `Popen` would: the action runs in our own working directory
(posix_spawn has no chdir) and no descriptor beyond stdio would leak into it (posix_spawn cannot
close them as `Popen`'s close_fds does). Otherwise it is `Popen`. Output is kept in
memory up to `memory_limit` bytes per stream; beyond that the whole stream is spilled to a file in
the run's `outputs/` directory and `ActionResult.output_path` points at it.

Each action runs in its own process group (its pgid is its pid). On timeout (or a stop request)
the whole process group gets SIGTERM, then SIGKILL after a grace
period, so a `sleep` started in the background by the action does not outlive it.

Disk is bounded too: once an action has printed more than `max_output` bytes (stdout and stderr
together; `LL_MAX_OUTPUT_BYTES`, default 1 GiB) nothing more is kept, its process group is ended
the same way, and the result says so (`output_capped`): `yes` for three seconds would otherwise
write gigabytes into the run directory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Protocol

from engine.load.project import ensure_dir, open_file
from engine.model.errors import LoopError
from engine.model.ports import ActionResult
from engine.processes.group import GRACE_SECONDS, output_cap, signal_group

MEMORY_LIMIT = 1024 * 1024  # bytes of one stream kept in memory before spilling to a file
WHOLE_OUTPUT_LIMIT = 64 * 1024 * 1024  # bytes of a spilled stream read back for judging
_READ_SIZE = 65536
_DRAIN_SECONDS = 0.2  # after bash exits, read what is left for at most this long
_HAS_PIDFD = hasattr(os, "pidfd_open")
_MAX_WAIT_MS = 3_600_000
# The signals Popen's restore_signals gives back their default in the child (Python ignores them).
_RESTORED_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)


class _Child(Protocol):
    """What the runner uses of a started process: Popen's, or `_Spawned`'s."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


@dataclass
class _Stream:
    """One captured stream: bounded in memory, spilled whole to `path` when it grows too big."""

    limit: int
    spill_dir: Path | None
    spill_name: str  # the file in `spill_dir` (joined only when it spills: most never do)
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    file: IO[bytes] | None = None
    path: Path | None = None  # the spill file, once there is one

    def add(self, data: bytes) -> None:
        self.size += len(data)
        if self.file is not None:
            self.file.write(data)
            return
        self.chunks.append(data)
        if self.size > self.limit and self.spill_dir is not None:
            self.path = ensure_dir(self.spill_dir) / self.spill_name
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            self.file = os.fdopen(open_file(self.path, flags), "wb")
            for chunk in self.chunks:
                self.file.write(chunk)
            self.chunks = [b"".join(self.chunks)[: self.limit]]

    def finish(self, *, end: bool = False) -> tuple[str, str | None]:
        """The text and the path of the whole stream, if it spilled: then the text is its first
        `limit` bytes, or its last with `end` (stderr, where a failure says why)."""
        data = b"".join(self.chunks)
        if self.file is None:
            return data.decode("utf-8", "replace"), None
        self.file.close()
        if end and self.path is not None:
            with self.path.open("rb") as whole:
                whole.seek(max(0, self.size - self.limit))
                data = whole.read(self.limit)
        return data[: self.limit].decode("utf-8", "replace"), str(self.path)


class ActionRunner:
    """Runs shell actions for one run; `terminate()` (signal-safe) kills the running one."""

    def __init__(
        self,
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        outputs_dir: Path | None = None,
        memory_limit: int = MEMORY_LIMIT,
        grace: float = GRACE_SECONDS,
        max_output: int | None = None,
    ) -> None:
        self.cwd = str(cwd)
        self.max_output = output_cap() if max_output is None else max_output
        # The actions' own copy (None: of this process's environment): the run's variables
        # (LL_RUN_ID, LL_STATE, the lease) are set here and never in `os.environ`.
        self.env: MutableMapping[str, str] = dict(os.environ if env is None else env)
        self.outputs_dir = outputs_dir
        self.memory_limit = memory_limit
        self.grace = grace
        # Its own process group either way (killpg). A new session also detaches the action
        # from our controlling terminal, so a program that opens /dev/tty fails instead of being
        # stopped by SIGTTIN; without a terminal there is nothing to detach from, and setpgid
        # spawns measurably faster than setsid (~0.3 ms per action).
        self._detach = _has_controlling_tty()
        # Found once: Popen would otherwise search PATH for `bash` on every spawn.
        self._bash = shutil.which("bash") or "bash"
        self._devnull: int | None = None  # stdin of every action, opened once per run
        self._wake: tuple[int, int] | None = None  # (read, write): terminate() wakes the wait
        self._proc: _Child | None = None
        self._fast: bool | None = None  # whether posix_spawn may be used (found on first need)
        self._terminated = False
        self._spawns = 0
        # state -> (the environment as it was, encoded): Popen encodes a str environment entry
        # by entry in Python on every spawn, which cost a quick action ~0.25 ms.
        self._encoded: dict[str, tuple[dict[str, str], dict[bytes, bytes]]] = {}

    def close(self) -> None:
        """Release what the runner keeps open between actions."""
        if self._devnull is not None:
            os.close(self._devnull)
            self._devnull = None
        if self._wake is not None:
            for fd in self._wake:
                os.close(fd)
            self._wake = None

    def terminate(self) -> None:
        """Ask the running action (if any) to stop: SIGTERM to its process group, and a byte
        that wakes the wait for its output (a retried poll() would otherwise sleep on until
        the action printed or ended, and SIGKILL after the grace would never come)."""
        self._terminated = True
        proc = self._proc
        if proc is not None:
            signal_group(proc.pid, signal.SIGTERM)
        if self._wake is not None:
            with contextlib.suppress(OSError):  # full: a wake-up is already waiting
                os.write(self._wake[1], b"x")

    def run_shell(
        self,
        script: str,
        *,
        state: str,
        timeout: float | None,
        env: Mapping[str, str] | None = None,
    ) -> ActionResult:
        """Run `script` with `bash -c`; never raises for a failing or unspawnable action.

        `env`: variables added for this action only (the interpolated values, `LL_CONTEXT_*`).
        """
        self._spawns += 1
        self.env["LL_STATE"] = state
        start = time.monotonic()
        if self._devnull is None:
            self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            self._wake = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        # Our own pipes, passed as plain fds: Popen's PIPE wraps each in a file object we would
        # not use (measurably slower per spawn). Both ends are close-on-exec in this process.
        out_read, out_write = os.pipe2(os.O_CLOEXEC)
        err_read, err_write = os.pipe2(os.O_CLOEXEC)
        self._terminated = False  # before the spawn: a stop during it is not forgotten
        try:
            proc = self._spawn(script, self._spawn_env(state, env), out_write, err_write)
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the script
            for fd in (out_read, err_read):
                os.close(fd)
            return ActionResult(
                output="", stderr="", exit_code=None, spawn_error=_spawn_problem(exc), duration_ms=0
            )
        finally:
            os.close(out_write)
            os.close(err_write)
        self._proc = proc
        if self._terminated:  # the stop came while it was being spawned: it stops at once
            signal_group(proc.pid, signal.SIGTERM)
        try:
            out, err, timed_out, capped = self._collect(
                proc, out_read, err_read, start, timeout, state
            )
        except BaseException:  # the caller unwinds (Ctrl-C as KeyboardInterrupt, a handler's
            self._end(proc)  # exception): the action must not run on unseen, changing files
            raise
        finally:
            self._proc = None
            os.close(out_read)
            os.close(err_read)
        output, output_path = out.finish()
        stderr, stderr_path = err.finish(end=True)
        code = proc.returncode
        sig = -code if code is not None and code < 0 else None
        return ActionResult(
            output=output,
            stderr=stderr,
            exit_code=None if sig is not None else code,
            duration_ms=int((time.monotonic() - start) * 1000),
            timed_out=timed_out,
            signal=None if timed_out or capped else sig,
            output_path=output_path,
            stderr_path=stderr_path,
            output_capped=self.max_output if capped else None,
        )

    def _spawn(self, script: str, env: dict[bytes, bytes], stdout: int, stderr: int) -> _Child:
        """Start `bash -c script` in its own process group with our pipes as stdout/stderr."""
        argv = ["bash", "-c", script]
        assert self._devnull is not None
        if self._may_posix_spawn(stdout, stderr):
            group = {"setsid": True} if self._detach else {"setpgroup": 0}
            try:
                pid = os.posix_spawn(
                    self._bash,
                    argv,
                    env,
                    file_actions=[
                        (os.POSIX_SPAWN_DUP2, self._devnull, 0),
                        (os.POSIX_SPAWN_DUP2, stdout, 1),
                        (os.POSIX_SPAWN_DUP2, stderr, 2),
                    ],
                    setsigdef=_RESTORED_SIGNALS,
                    **group,
                )
                return _Spawned(pid)
            except NotImplementedError:  # a libc without POSIX_SPAWN_SETSID: Popen from now on
                self._fast = False
        return subprocess.Popen(
            argv,
            executable=self._bash,
            cwd=self.cwd,
            env=env,
            stdin=self._devnull,
            stdout=stdout,
            stderr=stderr,
            start_new_session=self._detach,
            process_group=None if self._detach else 0,
        )

    def _may_posix_spawn(self, stdout: int, stderr: int) -> bool:
        """Whether posix_spawn does what Popen would: the action's directory is ours right now,
        the descriptors it gets are not already 0-2 (dup2 onto itself keeps close-on-exec), and
        no other descriptor would leak (checked once: only an inherited one could)."""
        if not _HAS_PIDFD or min(stdout, stderr, self._devnull or 0) <= 2:
            return False
        if self._fast is None:
            self._fast = hasattr(os, "posix_spawn") and _only_stdio_inheritable()
        return self._fast and _same_directory(".", self.cwd)

    def _spawn_env(self, state: str, extra: Mapping[str, str] | None) -> dict[bytes, bytes]:
        """The action's environment as bytes: `self.env` (which callers may change between
        actions) encoded once per state while it stays the same, then this action's `extra`."""
        cached = self._encoded.get(state)
        if cached is None or cached[0] != self.env:
            cached = (dict(self.env), {os.fsencode(k): os.fsencode(v) for k, v in self.env.items()})
            self._encoded[state] = cached
        if not extra:
            return cached[1]
        return {**cached[1], **{os.fsencode(k): os.fsencode(v) for k, v in extra.items()}}

    def _collect(
        self,
        proc: _Child,
        out_fd: int,
        err_fd: int,
        start: float,
        timeout: float | None,
        state: str,
    ) -> tuple[_Stream, _Stream, bool, bool]:
        """Read both pipes until the process exits and the pipes drain (or time runs out).

        The flags: timed out, and ended for printing more than `max_output` bytes.
        """
        tag = f"{self._spawns:06d}-{state}"
        streams = {
            out_fd: _Stream(self.memory_limit, self.outputs_dir, f"{tag}.stdout"),
            err_fd: _Stream(self.memory_limit, self.outputs_dir, f"{tag}.stderr"),
        }
        poller = select.poll()
        for fd in streams:
            poller.register(fd, select.POLLIN)
        pidfd = _open_pidfd(proc.pid)
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        wake = self._wake[0] if self._wake is not None else None
        if wake is not None:
            poller.register(wake, select.POLLIN)
        deadline = None if timeout is None else start + timeout
        kill_at: float | None = None  # when SIGKILL follows the SIGTERM already sent
        timed_out = killed = capped = False
        printed = 0  # bytes read from both pipes
        open_fds = len(streams)
        drain_until: float | None = None  # set when bash has exited
        try:
            while open_fds:
                events = poller.poll(_wait_ms(deadline, kill_at, drain_until))
                now = time.monotonic()
                if drain_until is None and pidfd is None and proc.poll() is not None:
                    drain_until = now + _DRAIN_SECONDS
                if drain_until is not None and now >= drain_until:
                    break  # bash is done; only a detached child still holds the pipes
                if kill_at is not None and now >= kill_at:
                    signal_group(proc.pid, signal.SIGKILL)
                    kill_at, killed = None, True
                elif deadline is not None and now >= deadline:
                    timed_out = True
                    signal_group(proc.pid, signal.SIGTERM)
                    kill_at, deadline = now + self.grace, None
                elif self._terminated and kill_at is None and not killed:
                    kill_at, deadline = now + self.grace, None  # stop: SIGTERM already sent
                if not events:
                    continue
                for fd, _mask in events:
                    if fd == wake:  # terminate(): the branches above have seen it by now
                        with contextlib.suppress(BlockingIOError):
                            while os.read(fd, _READ_SIZE):
                                pass
                        continue
                    if fd == pidfd:
                        poller.unregister(fd)
                        drain_until = now + _DRAIN_SECONDS
                        continue
                    data = os.read(fd, _READ_SIZE)
                    if not data:
                        poller.unregister(fd)
                        open_fds -= 1
                    elif not capped:  # once capped, what it still prints while ending is dropped
                        streams[fd].add(data[: self.max_output - printed])
                        printed += len(data)
                        if printed > self.max_output:
                            capped = True
                            signal_group(proc.pid, signal.SIGTERM)
                            kill_at = kill_at if kill_at is not None else now + self.grace
                            deadline = None
            self._reap(proc, kill_at, timed_out or capped or self._terminated)
        finally:
            if pidfd is not None:
                os.close(pidfd)
        out_stream, err_stream = streams.values()
        return out_stream, err_stream, timed_out, capped

    def _end(self, proc: _Child) -> None:
        """End the action's whole group as a stop does: SIGTERM, SIGKILL after the grace (at
        once if the wait is interrupted too)."""
        signal_group(proc.pid, signal.SIGTERM)
        try:
            self._reap(proc, time.monotonic() + self.grace, killing=True)
        except BaseException:
            signal_group(proc.pid, signal.SIGKILL)
            raise

    def _reap(self, proc: _Child, kill_at: float | None, killing: bool) -> None:
        """Wait for bash; after a timeout or stop, sweep the group with SIGKILL."""
        if kill_at is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, kill_at - time.monotonic()))
        if killing or kill_at is not None:
            signal_group(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_ms(deadline: float | None, kill_at: float | None, drain_until: float | None) -> int:
    """How long to block in poll(): until the next deadline (or drain end), else forever.

    At most an hour at a time: poll() takes a C int, and a far deadline (`timeout: 1e12`) is
    simply waited for in several turns.
    """
    upcoming = [t for t in (deadline, kill_at, drain_until) if t is not None]
    if not upcoming:
        return -1 if _HAS_PIDFD else 100
    return max(0, min(_MAX_WAIT_MS, int((min(upcoming) - time.monotonic()) * 1000) + 1))


class _Spawned:
    """A child started by posix_spawn, with the members of Popen the runner uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Reap the child; with `timeout`, raise `subprocess.TimeoutExpired` when it is still
        running by then (polled: only the runner's kill path waits with a timeout)."""
        if timeout is None and self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        end = time.monotonic() + (timeout or 0.0)
        while (code := self.poll()) is None:
            if time.monotonic() >= end:
                raise subprocess.TimeoutExpired(["bash"], timeout or 0.0)
            time.sleep(0.01)
        return code


def _spawn_problem(exc: Exception) -> str:
    """Why bash could not start, in words a loop's author can act on."""
    if isinstance(exc, OSError) and exc.errno == errno.E2BIG:
        return (
            f"{exc.strerror}: the script or an interpolated value is larger than the system lets "
            "a command line or one environment variable be (128 KiB on Linux); pass a large "
            "value through a file, e.g. $LL_CAPTURED_name__output_path or "
            "${captured.name.output_path} (a sub-loop's event log: "
            "${captured.name.events_path})"
        )
    return str(exc)


def _only_stdio_inheritable() -> bool:
    """Whether no descriptor beyond 0-2 would pass to a child. Python opens every descriptor
    close-on-exec, so only one inherited from our parent could (a CI runner's, a jobserver's)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return False
    for name in names:
        fd = int(name)
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            if fd > 2 and os.get_inheritable(fd):
                return False
    return True


def _same_directory(a: str, b: str) -> bool:
    try:
        first, second = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def _has_controlling_tty() -> bool:
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def _open_pidfd(pid: int) -> int | None:
    if not _HAS_PIDFD:
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def read_whole(path: Path) -> str | int:
    """A spilled stream's whole text, or its size in bytes when that passes
    `WHOLE_OUTPUT_LIMIT` (read back for an evaluator, interpolation and a suite's judges)."""
    try:  # never through a link, nor from a FIFO (waiting for a writer forever) or a directory
        fd = open_file(path, os.O_RDONLY)
    except LoopError as exc:  # the path is a run's record: state.json can be edited
        raise OSError(errno.EINVAL, exc.message) from None
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        if size > WHOLE_OUTPUT_LIMIT:
            return size
        return handle.read().decode("utf-8", errors="replace")


def read_back(result: ActionResult, who: str) -> tuple[ActionResult, str | None]:
    """`result` with its whole stdout and stderr, or why they cannot be had. The runner keeps
    one MiB of each in memory and spills the rest to a file: judges reading only that MiB
    passed a `negate` pattern whose match came later (a test log's FAILED line is at its end),
    and a `metric` read a number from the middle of what its command printed. Beyond
    `WHOLE_OUTPUT_LIMIT` there is no judging it, never a judgement of a part."""
    whole = {"output": result.output, "stderr": result.stderr}
    for key, path, stream in (
        ("output", result.output_path, "stdout"),
        ("stderr", result.stderr_path, "stderr"),
    ):
        if path is None:
            continue
        try:
            text = read_whole(Path(path))
        except OSError as exc:
            return result, f"{who}'s whole {stream} cannot be read from {path}: {exc}"
        if isinstance(text, int):
            return result, (
                f"{who} printed {text:,} bytes to {stream}, more than the "
                f"{WHOLE_OUTPUT_LIMIT:,} a judge reads (all of it is in {path}); make it "
                "print less, e.g. `... | tail -c 1000000`"
            )
        whole[key] = text
    return replace(result, output=whole["output"], stderr=whole["stderr"]), None


def judge_output(result: ActionResult) -> ActionResult:
    """A judge command's result with its whole output (see `read_back`); a crashed command's as
    it is (its judge says it crashed), and `JudgeError` when the output cannot be had."""
    from engine.judges.result import JudgeError

    if result.crashed:
        return result
    whole, problem = read_back(result, "the judge's command")
    if problem is not None:
        raise JudgeError(problem)
    return whole
