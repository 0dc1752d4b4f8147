"""Run one process in a process group of its own, bounded in time and in output (IO).

An agent CLI (the `cmd:` prompt runner) and every `ll-harness` subject (a `bash -c` command, a
nested `ll-loop run`, a host agent CLI) run through here; shell actions of a run have their own
faster runner (`engine.runtime.actions`), which shares the output cap and `signal_group`.

- The process gets its own session, and the whole group is signalled: a timeout (or Ctrl-C, or
  SIGTERM, in the caller) must not leave a `sleep` behind. SIGTERM first, SIGKILL after `grace`.
- It ends when the process exits, not when its pipes close: a command that starts a background
  job (`server & echo started`) hands the job its stdout, and waiting for the pipe's end would
  grade a command that finished at once as timed out. After the exit, what is still in the
  pipes is read for a moment (as for an action), then the run is done.
- What it prints is held in memory (it is judged and reported), so it is bounded by the cap of
  an action's output (`LL_MAX_OUTPUT_BYTES`, default 1 GiB, both streams together): past it the
  group is ended as on a timeout and the result says so (`output_capped`). `yes` would
  otherwise fill the memory in seconds.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from engine.model.errors import UsageError
from engine.model.ports import ActionResult

GRACE_SECONDS = 2.0  # between SIGTERM and SIGKILL of the group, unless the caller says
MAX_OUTPUT_ENV = "LL_MAX_OUTPUT_BYTES"
DEFAULT_MAX_OUTPUT = 1 << 30  # bytes an action may print (both streams) before it is ended
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
DRAIN_SECONDS = 0.2  # after the process exits, read what is left in its pipes this long
TICK_SECONDS = 0.1  # how often a still-running process is checked for its exit
_READ_SIZE = 65536


def run_process(
    argv: Sequence[str],
    *,
    timeout: float | None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    max_output: int | None = None,
    grace: float = GRACE_SECONDS,
    stopped: Callable[[], bool] | None = None,
) -> ActionResult:
    """Run `argv` to completion or timeout; never raises for a failing or unspawnable command.

    `max_output`: the byte cap on both streams together (default: `LL_MAX_OUTPUT_BYTES`);
    `grace`: seconds between SIGTERM and SIGKILL of the group when it is ended; `stopped`:
    asked every `TICK_SECONDS`, True ends the group as a timeout would (the caller's run is
    stopping), though the result is not a timeout."""
    cap = output_cap() if max_output is None else max_output
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return ActionResult(output="", exit_code=None, spawn_error=str(exc))
    try:
        data = stdin.encode() if stdin is not None else b""
        out, err, timed_out, capped = _collect(proc, data, timeout, cap, grace, stopped)
    except BaseException:
        # Ctrl-C or SIGTERM: the subject has a session of its own, so the terminal's signal
        # never reached it; without this it would outlive the harness, still running.
        _end_group(proc, grace)
        raise
    finally:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
    code = proc.returncode
    killed = code is not None and code < 0
    return ActionResult(
        output=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        exit_code=None if killed or timed_out or capped else code,
        duration_ms=int((time.monotonic() - start) * 1000),
        timed_out=timed_out,
        signal=-code if killed and not (timed_out or capped) else None,
        output_capped=cap if capped else None,
    )


def _collect(
    proc: subprocess.Popen[bytes],
    data: bytes,
    timeout: float | None,
    cap: int,
    grace: float,
    stopped: Callable[[], bool] | None,
) -> tuple[bytearray, bytearray, bool, bool]:
    """Feed `data` to stdin and read stdout and stderr until the process has exited and its
    pipes are drained (or the drain time is up); on timeout, or past `cap` bytes printed, end
    the group. (out, err, timed out, capped)."""
    assert proc.stdout is not None and proc.stderr is not None
    buffers = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    poller = select.poll()
    for fd in buffers:
        poller.register(fd, select.POLLIN)
    stdin_fd = _open_stdin(proc, data, poller)
    deadline = None if timeout is None else time.monotonic() + timeout
    kill_at: float | None = None
    drain_until: float | None = None
    timed_out = capped = False
    printed = 0
    open_fds = len(buffers)
    while True:  # until the process has exited and its pipes are drained (or given up on)
        now = time.monotonic()
        if drain_until is None and proc.poll() is not None:
            drain_until = now + DRAIN_SECONDS
        if drain_until is not None and now >= drain_until:
            break  # the process is gone; only a background child of it still holds the pipes
        if kill_at is not None and now >= kill_at:
            signal_group(proc.pid, signal.SIGKILL)
            kill_at = None
        elif deadline is not None and now >= deadline:
            timed_out, deadline = True, None
            signal_group(proc.pid, signal.SIGTERM)
            kill_at = now + grace
        elif stopped is not None and kill_at is None and stopped():
            deadline, stopped = None, None
            signal_group(proc.pid, signal.SIGTERM)
            kill_at = now + grace
        if not open_fds:  # both pipes closed (at its exit, or it closed them): wait for it
            limits = [t for t in (deadline, kill_at) if t is not None]
            if stopped is not None:
                limits.append(now + TICK_SECONDS)
            try:
                proc.wait(timeout=max(0.0, min(limits) - now) if limits else None)
            except subprocess.TimeoutExpired:
                continue
            break
        upcoming = [t for t in (deadline, kill_at, drain_until) if t is not None]
        upcoming.append(now + TICK_SECONDS)
        for fd, _mask in poller.poll(max(0, int((min(upcoming) - now) * 1000) + 1)):
            if fd == stdin_fd:
                data = _feed(fd, data)
                if not data:
                    poller.unregister(fd)
                    _close_stdin(proc)
                    stdin_fd = None
                continue
            chunk = os.read(fd, _READ_SIZE)
            if chunk and not capped:  # once capped, what it prints while ending is dropped
                buffers[fd].extend(chunk[: cap - printed])
                printed += len(chunk)
                if printed > cap:
                    capped, deadline = True, None
                    signal_group(proc.pid, signal.SIGTERM)
                    kill_at = kill_at or time.monotonic() + grace
            elif not chunk:
                poller.unregister(fd)
                open_fds -= 1
    if stdin_fd is not None:
        _close_stdin(proc)
    if timed_out or capped or kill_at is not None:
        signal_group(proc.pid, signal.SIGKILL)  # whatever of the group outlived the SIGTERM
    proc.wait()
    out, err = buffers.values()
    return out, err, timed_out, capped


def output_cap(env: Mapping[str, str] | None = None) -> int:
    """The byte cap on an action's output: `LL_MAX_OUTPUT_BYTES`, else 1 GiB."""
    return size_setting(MAX_OUTPUT_ENV, DEFAULT_MAX_OUTPUT, env)


def size_setting(name: str, default: int, env: Mapping[str, str] | None = None) -> int:
    """A size in bytes from the environment variable `name` (a whole number of bytes, or with a
    K, M, G or T suffix in powers of 1024: `512M`), else `default`. A value that is not a
    positive size is a `UsageError`, never silently "no limit"."""
    raw = (os.environ if env is None else env).get(name, "").strip()
    if not raw:
        return default
    text = raw.lower().removesuffix("ib").removesuffix("b")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    digits = text[: len(text) - len(unit)].strip()
    # at most 19 digits: int() refuses over 4300, and a size must fit the kernel's 64 bits
    if (
        not digits.isascii()
        or not digits.isdigit()
        or len(digits) > 19
        or not 1 <= int(digits) * _UNITS[unit] < 1 << 63
    ):
        shown = f"{default >> 30}G" if default % (1 << 30) == 0 else str(default)
        raise UsageError(
            f"{name}={raw!r} is not a size in bytes",
            hint=f"write a whole number of bytes (below 2^63) such as 1073741824, or 512M or 2G; "
            f"unset it for the default of {shown}",
        )
    return int(digits) * _UNITS[unit]


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal a whole process group (an action's pgid is its pid); one already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _open_stdin(proc: subprocess.Popen[bytes], data: bytes, poller: select.poll) -> int | None:
    """The stdin descriptor to feed `data` through (registered for writing), or None."""
    if proc.stdin is None:
        return None
    if not data:
        _close_stdin(proc)
        return None
    fd = proc.stdin.fileno()
    os.set_blocking(fd, False)
    poller.register(fd, select.POLLOUT)
    return fd


def _feed(fd: int, data: bytes) -> bytes:
    """Write what the pipe takes now; what is left to write (nothing once the reader quit)."""
    try:
        return data[os.write(fd, data) :]
    except BlockingIOError:
        return data
    except OSError:  # the process closed its stdin or exited: the rest is not wanted
        return b""


def _close_stdin(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def _end_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the group, SIGKILL it after `grace` seconds (at once on a second interrupt)."""
    signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    finally:
        signal_group(proc.pid, signal.SIGKILL)  # what is left of the group
