"""Inline `check:` snippets and `module:` functions run in child processes (IO), so that no
judge's Python code can stop the run.

In this process such code held the interpreter: code stuck in C (`re.search` backtracking over
an output, `sum(range(10**12))`) kept the GIL, so its time limit, Ctrl-C, SIGTERM and every other
thread waited with it, and `'x' * 10**11` took the machine's memory. In a child it is ended
with SIGKILL at its time limit, bounded in memory (`LL_CHECK_MEMORY_BYTES`, default 4 GiB),
and the judge errors with one sentence; the next call gets a new child.

Children are pooled: a thread takes an idle one (or starts one, ~20 ms) and gives it back after
the call, so a suite with N workers keeps N of them; each is sent a snippet's compiled code once,
and imports a module function at its first call. A call costs a round trip through two pipes
(the record pickled once each way: tens of µs).
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
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from engine.judges.check_child import HEADER
from engine.model.errors import UsageError
from engine.processes.group import size_setting

CHILD = Path(__file__).with_name("check_child.py")
MEMORY_ENV = "LL_CHECK_MEMORY_BYTES"
DEFAULT_MEMORY = 4 << 30  # bytes of address space a check's process may take
DEFAULT_CHECK_TIMEOUT = 30.0  # seconds, when a check judge sets no `timeout:`
# A module judge is a project's own code, which may call a service or a model: more room, but
# still a limit (it had none, and a `while True` in it hung a suite for good).
DEFAULT_MODULE_TIMEOUT = 300.0


class SnippetRaised(Exception):
    """The snippet or function raised in its process: `description` ("Type: message", or with
    `said` the sentence after "the check" / "the function": it tried to end the process),
    `line` (0: unknown)."""

    def __init__(self, description: str, line: int, *, said: bool = False) -> None:
        super().__init__(description)
        self.description, self.line, self.said = description, line, said


class SnippetFailed(Exception):
    """The snippet or function did not answer: it overran its time limit (`timed_out`; the
    caller says so, naming it), returned what cannot be sent back, did not import, or its
    process died (out of memory, a crash)."""

    def __init__(self, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.timed_out = reason, timed_out


_keys = itertools.count(1)
_IDLE: list[_Child] = []
_LIVE: set[_Child] = set()  # idle or busy: killed when this process leaves
_LOCK = threading.Lock()


@atexit.register
def kill_all() -> None:
    """End every child on the way out (ll-loop and ll-harness run the exit handlers before
    `os._exit`): a stuck one would otherwise outlive this process, holding its stderr."""
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


def run_snippet(
    key: int, code: bytes, args: tuple[Any, ...], timeout: float, cwd: str | None = None
) -> Any:
    """The snippet's return value, run in directory `cwd` (None: the child's own);
    `SnippetRaised` or `SnippetFailed` otherwise."""

    def request(child: _Child) -> tuple[Any, ...]:
        sent = key in child.sent
        child.sent.add(key)
        return ("call", key, None if sent else code, args, timeout, cwd)

    return _result(request, timeout, "check")


def run_function(
    root: str,
    module: str,
    function: str,
    outputs: Any,
    arguments: Mapping[str, Any],
    timeout: float,
    cwd: str | None = None,
) -> Any:
    """`module.function(outputs=outputs, **arguments)`, imported from `root` (first on the
    child's `sys.path` while it imports and runs) and run in directory `cwd` (None: the
    child's own); `SnippetRaised` or `SnippetFailed` otherwise, a module that does not import
    or lacks the function included."""
    message = ("module", root, module, function, outputs, dict(arguments), timeout, cwd)
    return _result(lambda _: message, timeout, "function")


def _result(request: Callable[[_Child], tuple[Any, ...]], timeout: float, what: str) -> Any:
    """The value the child answers `request` with; `what` ran ("check", "function") names it
    in the errors."""
    child, answer = _answer(request, timeout, what)
    with _LOCK:
        _IDLE.append(child)
    kind = answer[0]
    if kind == "ok":
        return answer[1]
    if kind == "raised":
        raise SnippetRaised(answer[1], answer[2])
    if kind == "quit":
        if answer[1] == "SystemExit":
            said = f"called sys.exit({answer[2] or ''}); a judge cannot end the run"
        else:
            said = f"raised {answer[1]}; a judge cannot stop the run"
        raise SnippetRaised(said, answer[3], said=True)
    if kind == "unloadable":
        raise SnippetFailed(answer[1])
    raise SnippetFailed(f"the {what} returned a value that cannot be sent back: {answer[1]}")


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
    request: Callable[[_Child], tuple[Any, ...]], timeout: float, what: str
) -> tuple[_Child, tuple[Any, ...]]:
    """An idle child's (or a new one's) answer to the request, and the child, healthy."""
    while True:
        with _LOCK:
            idle = _IDLE.pop() if _IDLE else None
        if idle is not None and idle.memory_setting != os.environ.get(MEMORY_ENV):
            idle.kill()  # started under another LL_CHECK_MEMORY_BYTES (a program changed it)
            idle = None
        try:
            child = idle or _Child()
        except OSError as exc:
            raise SnippetFailed(f"cannot start the {what}'s process: {exc}") from None
        except UsageError as exc:
            raise SnippetFailed(f"{exc.message} ({exc.hint})") from None
        try:
            return child, child.call(request(child), timeout, what)
        except _Gone:  # it ended since it was last used (killed from outside): nothing ran
            child.kill()
            if idle is None:
                raise SnippetFailed(child.death(what)) from None
        except BaseException:
            child.kill()  # a stuck or interrupted child is never reused
            raise


class _Gone(Exception):
    """The child was not there to take the request."""


class _Child:
    """One child process and the snippets it has been sent (by key)."""

    def __init__(self) -> None:
        # the setting it was started under: an idle child started under another is not reused
        self.memory_setting = os.environ.get(MEMORY_ENV)
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

    def call(self, request: tuple[Any, ...], timeout: float, what: str) -> Any:
        if not self.started:  # it imports what this process would: the same sys.path
            self._send(("path", list(sys.path)))
            self.started = True
        self._send(request)
        return self._receive(time.monotonic() + timeout, timeout, what)

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

    def _receive(self, deadline: float, timeout: float, what: str) -> Any:
        data = bytearray()  # grows in place: `bytes +=` copied the whole answer per 64 KiB read
        size: int | None = None
        while size is None or len(data) < HEADER.size + size:
            left = deadline - time.monotonic()
            if left <= 0 or not self.poller.poll(max(1, int(left * 1000))):
                raise SnippetFailed(f"the {what} did not finish in time", timed_out=True)
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise SnippetFailed(self.death(what))
            data += chunk
            if size is None and len(data) >= HEADER.size:
                (size,) = HEADER.unpack(data[: HEADER.size])
        try:
            return pickle.loads(memoryview(data)[HEADER.size :])
        except Exception as exc:  # a class this process cannot import: the child is fine
            return ("unsendable", _unreadable(exc))

    def death(self, what: str) -> str:
        """Why the child stopped answering, in a sentence."""
        code = self.proc.wait()
        if code == -signal.SIGKILL:
            return f"the {what}'s process was killed (out of memory?)"
        if code < 0:
            return f"the {what}'s process died of {signal.Signals(-code).name}"
        return f"the {what}'s process ended (exit code {code})"


def _unreadable(exc: Exception) -> str:
    """Why an answer could not be read back, as `unsendable` says it."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
