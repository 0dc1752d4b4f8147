"""Time limits for judge code that still runs in this process, and which interrupts are stops.

Inline checks and module functions run in child processes (`engine.judges.check_process`); what
is left here is an `if:` condition (one expression without builtins, `CONDITION_SECONDS`) and an
LLM judge's template render. Each runs in a thread of this process (a case's worker, or the
loop's own thread). Python cannot stop another thread, and an expression stuck in a Python loop
never returns, so one watchdog thread (shared by every call, not one per call) keeps the
deadlines of the calls running and, when one passes, raises `CheckTimeout` in the call's thread
through `PyThreadState_SetAsyncExc`: the interpreter delivers it at the next bytecode. Code
blocked inside C only sees it when that call returns; the suite's stop does not wait for such a
case (engine/suites/driver.py).
"""

from __future__ import annotations

import heapq
import itertools
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

REFIRE_SECONDS = 1.0  # a snippet that swallowed the exception gets it again after this

T = TypeVar("T")


class CheckTimeout(BaseException):
    """Raised in a check's thread when its time is up (a BaseException, so a snippet's own
    `except Exception:` does not swallow it)."""


class SignalInterrupt(KeyboardInterrupt):
    """A stop requested by a signal (SIGTERM) to the main thread: never a judge's error."""


def raise_on_stop_signals() -> dict[int, Any]:
    """SIGTERM, and SIGHUP (a closed terminal) unless ignored or someone else's, raise
    `SignalInterrupt` in the main thread, so what finished is recorded and running process
    groups are ended; SIGHUP's default killed the process outright, leaving them running.
    Returns the handlers replaced, for `restore_handlers`; none outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handle(signum: int, frame: FrameType | None) -> None:
        raise SignalInterrupt(signal.Signals(signum).name)

    previous: dict[int, Any] = {signal.SIGTERM: signal.signal(signal.SIGTERM, handle)}
    if signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:  # nohup's SIG_IGN stays
        previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, handle)
    return previous


def restore_handlers(previous: dict[int, Any]) -> None:
    """Put back what `raise_on_stop_signals` replaced."""
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def real_interrupt(exc: BaseException) -> bool:
    """Whether `exc` is a stop of the process, not something user code raised: a
    KeyboardInterrupt in the main thread while Python's own SIGINT handler is installed (the
    handler raises it there), or our own signal stop. Worker threads never receive signals."""
    if isinstance(exc, SignalInterrupt):
        return True
    return (
        isinstance(exc, KeyboardInterrupt)
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )


class _Watchdog:
    """Deadlines of the running checks; one daemon thread fires the late ones."""

    def __init__(self) -> None:
        self.mutex = threading.Lock()  # a C lock: entering it runs no Python bytecode
        self.wake = threading.Condition(self.mutex)
        self.heap: list[tuple[float, int]] = []
        self.active: dict[int, tuple[int, float]] = {}  # token -> (thread ident, deadline)
        self.fired: set[int] = set()
        self.tokens = itertools.count()
        self.thread: threading.Thread | None = None

    def arm(self, seconds: float) -> int:
        deadline = time.monotonic() + seconds
        with self.mutex:
            token = next(self.tokens)
            self.active[token] = (threading.get_ident(), deadline)
            earliest = self.heap[0][0] if self.heap else None
            heapq.heappush(self.heap, (deadline, token))
            if self.thread is None:
                self.thread = threading.Thread(target=self._watch, name="check-watchdog")
                self.thread.daemon = True
                self.thread.start()
            elif earliest is None or deadline < earliest:
                self.wake.notify()
            if len(self.heap) > 2 * len(self.active) + 64:  # drop finished checks' entries
                self.heap = [(d, t) for d, t in self.heap if t in self.active]
                heapq.heapify(self.heap)
        return token

    def _watch(self) -> None:
        with self.wake:
            while True:
                if not self.heap:
                    self.wake.wait()
                    continue
                deadline, token = self.heap[0]
                now = time.monotonic()
                if deadline > now:
                    self.wake.wait(deadline - now)
                    continue
                heapq.heappop(self.heap)
                found = self.active.get(token)
                if found is None or found[1] != deadline:
                    continue
                self.fired.add(token)
                _raise_in(found[0], CheckTimeout)
                again = now + REFIRE_SECONDS
                self.active[token] = (found[0], again)
                heapq.heappush(self.heap, (again, token))


def _raise_in(ident: int, exc: type[BaseException]) -> None:
    """Raise `exc` in thread `ident` at its next bytecode."""
    import ctypes  # only when a check overruns

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exc))


_WATCHDOG = _Watchdog()


def within(seconds: float, call: Callable[[], T]) -> T:
    """`call()`, interrupted with `CheckTimeout` when it runs longer than `seconds`."""
    token = _WATCHDOG.arm(seconds)
    try:
        return call()
    finally:
        _disarm(token)


def _disarm(token: int) -> None:
    """Take the check off the watchdog, and let a `CheckTimeout` fired at it that has not
    landed yet land here, not later in whatever the thread does next.

    A pending one is never withdrawn with `PyThreadState_SetAsyncExc(ident, NULL)`: on
    Python 3.11 that leaves the interpreter's eval breaker set for good, and every thread
    then crawls (found as a suite that never finished). One may land anywhere in here, even
    while the lock is taken: the loop goes round until the token is gone and nothing is
    pending (once the token is gone, the watchdog fires no more)."""
    watchdog = _WATCHDOG
    fired = False
    while True:
        try:
            with watchdog.mutex:
                watchdog.active.pop(token, None)
                if token in watchdog.fired:
                    watchdog.fired.discard(token)
                    fired = True
            if fired:
                _let_it_land()
            return
        except CheckTimeout:
            fired = False  # that was the pending one; go round to finish the disarm


def _let_it_land() -> None:
    """Run a few bytecodes, where a pending asynchronous exception is delivered."""
    for _ in range(1000):
        pass
