"""Inline `check:` snippets run in child processes (IO), so that no snippet can stop the run.

In this process a snippet held the interpreter: one stuck in C (`re.search` backtracking over an
output, `sum(range(10**12))`) kept the GIL, so its time limit, Ctrl-C, SIGTERM and every other
thread waited with it, and `'x' * 10**11` took the machine's memory. In a child it is ended
with SIGKILL at its time limit, bounded in memory (`LL_CHECK_MEMORY_BYTES`, default 4 GiB),
and the judge errors with one sentence; the next check gets a new child.

Children are pooled: a thread takes an idle one (or starts one, ~20 ms) and gives it back after
the call, so a suite with N workers keeps N of them; each is sent a snippet's compiled code once.
A call costs a round trip through two pipes (the record pickled once each way: tens of µs).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import itertools
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any

from engine.judges.check_child import HEADER
from engine.model.errors import UsageError
from engine.processes.group import size_setting

CHILD = Path(__file__).with_name("check_child.py")
MEMORY_ENV = "LL_CHECK_MEMORY_BYTES"
DEFAULT_MEMORY = 4 << 30  # bytes of address space a check's process may take


class SnippetRaised(Exception):
    """The snippet raised in its process: `description` ("Type: message", or with `said` the
    whole sentence: it tried to end the process), `line` (0: unknown)."""

    def __init__(self, description: str, line: int, *, said: bool = False) -> None:
        super().__init__(description)
        self.description, self.line, self.said = description, line, said


class SnippetFailed(Exception):
    """The snippet did not answer: it overran its time limit (`timed_out`), called sys.exit(),
    returned what cannot be sent back, or its process died (out of memory, a crash)."""

    def __init__(self, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.timed_out = reason, timed_out


_keys = itertools.count(1)
_IDLE: list[_Child] = []
_LIVE: set[_Child] = set()  # idle or busy: killed when this process leaves
_LOCK = threading.Lock()


@atexit.register
def kill_all() -> None:
    """End every child (a stuck one would otherwise outlive this process, holding its
    stderr): on the way out, and when a suite is stopped."""
    with _LOCK:
        children = list(_LIVE)
        _IDLE.clear()
    for child in children:
        child.kill()


def _forget_after_fork() -> None:
    """In a process forked from this one, the children are the parent's: using one (a library
    caller's fork pool) crossed the two processes' answers, and the fork's exit handler killed
    them. The fork closes its copies of their pipes and starts children of its own."""
    global _LOCK
    _LOCK = threading.Lock()  # another thread may have held it at the fork
    for child in _LIVE:
        for pipe in (child.proc.stdin, child.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        child.proc.returncode = 0  # not ours to wait for
    _LIVE.clear()
    _IDLE.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def snippet_key() -> int:
    """A new id for a compiled snippet (each child is sent its code once)."""
    return next(_keys)


def prepare() -> None:
    """Start a child now when none is idle: it starts (~20 ms of its own) while this process
    goes on preparing the run, and the first check finds it ready."""
    with _LOCK:
        if _IDLE:
            return
    try:
        child = _Child()
    except (OSError, UsageError):
        return  # said by the check that needs it
    with _LOCK:
        _IDLE.append(child)


def run_snippet(key: int, code: bytes, args: tuple[Any, ...], timeout: float) -> Any:
    """The snippet's return value; `SnippetRaised` or `SnippetFailed` otherwise."""
    child, answer = _answer(key, code, args, timeout)
    with _LOCK:
        _IDLE.append(child)
    kind = answer[0]
    if kind == "ok":
        return answer[1]
    if kind == "raised":
        raise SnippetRaised(answer[1], answer[2])
    if kind == "quit":
        if answer[1] == "SystemExit":
            what = f"called sys.exit({answer[2] or ''}); a judge cannot end the run"
        else:
            what = f"raised {answer[1]}; a judge cannot stop the run"
        raise SnippetRaised(what, answer[3], said=True)
    raise SnippetFailed(f"the check returned a value that cannot be sent back: {answer[1]}")


def _pickled(message: tuple[Any, ...]) -> bytes:
    """`message` pickled with read-only mappings (the loaded model's) as plain dicts: the child
    knows no ll-loop types, and a snippet has always been given a copy to read."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {MappingProxyType: _as_dict}
    pickler.dump(message)
    return buffer.getvalue()


def _as_dict(proxy: MappingProxyType[Any, Any]) -> tuple[type[dict[Any, Any]], tuple[Any, ...]]:
    return dict, (dict(proxy),)


def _answer(
    key: int, code: bytes, args: tuple[Any, ...], timeout: float
) -> tuple[_Child, tuple[Any, ...]]:
    """An idle child's (or a new one's) answer to the call, and the child, healthy."""
    while True:
        with _LOCK:
            idle = _IDLE.pop() if _IDLE else None
        try:
            child = idle or _Child()
        except OSError as exc:
            raise SnippetFailed(f"cannot start the check's process: {exc}") from None
        except UsageError as exc:
            raise SnippetFailed(f"{exc.message} ({exc.hint})") from None
        try:
            return child, child.call(key, code, args, timeout)
        except _Gone:  # it ended since it was last used (killed from outside): nothing ran
            child.kill()
            if idle is None:
                raise SnippetFailed(child.death()) from None
        except BaseException:
            child.kill()  # a stuck or interrupted child is never reused
            raise


class _Gone(Exception):
    """The child was not there to take the request."""


class _Child:
    """One child process and the snippets it has been sent."""

    def __init__(self) -> None:
        memory = size_setting(MEMORY_ENV, DEFAULT_MEMORY)  # a UsageError, said by the judge
        self.proc = subprocess.Popen(
            [sys.executable, "-P", str(CHILD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
            env={**os.environ, MEMORY_ENV: str(memory)},
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.to_child, self.from_child = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self.poller = select.poll()
        self.poller.register(self.from_child, select.POLLIN)
        self.sent: set[int] = set()
        self.started = False
        with _LOCK:
            _LIVE.add(self)

    def call(self, key: int, code: bytes, args: tuple[Any, ...], timeout: float) -> Any:
        if not self.started:  # it imports what this process would: the same sys.path
            self._send(("path", list(sys.path)))
            self.started = True
        self._send(("call", key, None if key in self.sent else code, args, timeout))
        self.sent.add(key)
        return self._receive(time.monotonic() + timeout, timeout)

    def kill(self) -> None:
        with _LOCK:
            _LIVE.discard(self)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.proc.wait()

    def _send(self, message: tuple[Any, ...]) -> None:
        data = _pickled(message)
        view = memoryview(HEADER.pack(len(data)) + data)
        try:
            while view:  # the child reads while it waits for a request: this never blocks long
                view = view[os.write(self.to_child, view) :]
        except BrokenPipeError:
            raise _Gone from None

    def _receive(self, deadline: float, timeout: float) -> Any:
        data = bytearray()  # grows in place: `bytes +=` copied the whole answer per 64 KiB read
        size: int | None = None
        while size is None or len(data) < HEADER.size + size:
            left = deadline - time.monotonic()
            if left <= 0 or not self.poller.poll(max(1, int(left * 1000))):
                raise SnippetFailed(
                    f"the check did not finish within its time limit of {timeout:g} s (set the "
                    "judge's timeout: to change it)",
                    timed_out=True,
                )
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise SnippetFailed(self.death())
            data += chunk
            if size is None and len(data) >= HEADER.size:
                (size,) = HEADER.unpack(data[: HEADER.size])
        return pickle.loads(memoryview(data)[HEADER.size :])

    def death(self) -> str:
        """Why the child stopped answering, in a sentence."""
        code = self.proc.wait()
        if code == -signal.SIGKILL:
            return "the check's process was killed (out of memory?)"
        if code < 0:
            return f"the check's process died of {signal.Signals(-code).name}"
        return f"the check's process ended (exit code {code})"
