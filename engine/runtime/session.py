"""One run of a checked loop, wired end to end (IO): run directory, actions and their
environment, LLM services, sub-loops, history, signals.

The caller (the Python API) has already done what may refuse a run — load, lint, credentials,
the scope lock — and hands over a `Launch`. What happens here never refuses: it creates the run
directory (or takes a resumed run's), runs the interpreter to the end and records the run in
`.loops/history.db`. Nothing is written to `os.environ`: the run's own variables (`LL_RUN_ID`,
`LL_RUN_DIR`, the lease) go into the environment of its actions only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from engine.model.loop import Loop
from engine.model.ports import Event, LineFields, Recorder, RunResult
from engine.model.terminal import printable
from engine.processes.group import output_cap
from engine.runtime.actions import ActionRunner
from engine.runtime.history import RunRecorder
from engine.runtime.interpreter import RunState, Runtime, StopSignal, run
from engine.runtime.locks import process_start_time
from engine.runtime.runstore import RunStore, now_iso, runs_root
from engine.runtime.subloop import ChildLoader

EventListener = Callable[[Event], None]


@dataclass
class _Live:
    """A run this process is running: how to stop it, and when it has ended."""

    stop: StopSignal
    thread: threading.Thread
    ended: threading.Event
    flush: Callable[[], None]  # writes the event lines still waiting (`RunStore.flush`)
    watcher: threading.Thread | None = None  # reads stop requests (a run that takes no signal)

    def end(self) -> None:
        """The run has ended: its stop watcher ends with it, before the run returns."""
        self.ended.set()
        if self.watcher is not None:
            self.watcher.join()


_live: dict[str, _Live] = {}
_live_lock = threading.Lock()


STOP_REQUEST = "stop-requested"
"""The file `stop` writes in the directory of a run its process's SIGTERM would not stop."""


def _watch_stop_requests(
    run_dir: Path, stop: StopSignal, ended: threading.Event
) -> threading.Thread:
    """A run that takes no signals is stopped from another process (`ll-loop stop`) by a
    `STOP_REQUEST` file in its directory: SIGTERM would kill the process hosting it (a thread
    installs no handler) or reach a handler that is not the run's. Checked every 0.1 s."""
    request = run_dir / STOP_REQUEST
    request.unlink(missing_ok=True)  # one left from an earlier session is no request to this

    def watch() -> None:
        while not ended.wait(0.1):
            if request.exists():
                request.unlink(missing_ok=True)
                stop.request("stopped by ll-loop stop")
        request.unlink(missing_ok=True)

    watcher = threading.Thread(target=watch, name=f"ll-loop stop watch {run_dir.name}", daemon=True)
    watcher.start()
    return watcher


def stop_in_process(run_id: str, reason: str, wait: float) -> bool | None:
    """Stop a run this process is running (in any thread), as SIGTERM would stop it, without a
    signal: a SIGTERM to our own pid would kill the whole process when the run is in a thread
    (which installs no handler), or stop another run (the one in the main thread, whose handler
    it is). None when the run is not running here; else whether it ended within `wait` seconds
    (not waited for when the caller is the run's own thread: an `on_event` callback)."""
    with _live_lock:
        live = _live.get(run_id)
    if live is None:
        return None
    live.stop.request(reason)
    if live.thread is threading.current_thread():
        return False
    return live.ended.wait(wait)


def listening_runs() -> frozenset[str]:
    """The runs of this process whose thread is the caller's: the caller is their `on_event`
    listener (or runs under it), and they go on only when it returns."""
    me = threading.current_thread()
    with _live_lock:
        return frozenset(run_id for run_id, live in _live.items() if live.thread is me)


def flush_live(run_id: str) -> None:
    """Write the event lines a run this process is running still holds (it writes them in
    batches, where it may wait), so a reader of its log — an `on_event` listener calling
    `engine.events` — finds every event emitted so far. Readers pay for it, steps do not."""
    with _live_lock:
        live = _live.get(run_id)
    if live is not None:
        live.flush()


@dataclass(frozen=True)
class Launch:
    """Everything a run needs once it has been allowed to start."""

    loop: Loop
    context: Mapping[str, Any]
    root: Path  # the project root: `.loops/` lives here, `scope:` paths resolve from it
    env: Mapping[str, str]  # the actions' environment, before the run adds its own variables
    workdir: Path | None = None  # where actions run (None: the root); the caller's directory
    load_child: ChildLoader | None = None  # loads and checks a sub-loop (None: no sub-loops)
    replay_from: Path | None = None  # answer LLM calls from this earlier run directory
    cache: bool = False
    on_event: EventListener | None = None
    handle_signals: bool = True  # SIGTERM/SIGINT stop the run gracefully (main thread only)

    def takes_signals(self) -> bool:
        """Whether SIGTERM/SIGINT reach this run, started from the calling thread: only the
        main thread installs handlers; otherwise `stop` asks through the run's files."""
        return self.handle_signals and threading.current_thread() is threading.main_thread()


@dataclass(frozen=True)
class Resumed:
    """An interrupted run to continue: its directory, its saved state and what the resume did
    before it (fields of the `loop_resume` event)."""

    store: RunStore
    state: RunState
    note: Mapping[str, Any]


def start_run(
    launch: Launch,
    *,
    run_id: str,
    lease_env: Mapping[str, str] | None = None,
    resume: Resumed | None = None,
) -> RunResult:
    """Create the run directory (or take a resumed run's), wire the IO, run to the end."""
    loop = launch.loop
    store = resume.store if resume is not None else RunStore.create(runs_root(launch.root), run_id)
    env = {
        **launch.env,
        **(lease_env or {}),
        "LL_RUN_ID": store.run_id,
        "LL_RUN_DIR": str(store.artifacts_dir),
    }
    workdir = launch.root if launch.workdir is None else launch.workdir
    actions = ActionRunner(
        cwd=workdir, env=env, outputs_dir=store.outputs_dir, max_output=output_cap(env)
    )
    stop = StopSignal(listeners=[actions.terminate])
    recorder: Recorder = store
    if launch.on_event is not None:
        recorder = _Tee(store, launch.on_event)
    runtime = Runtime(
        recorder=recorder,
        actions=actions,
        artifacts_dir=store.artifacts_dir,
        outputs_dir=store.outputs_dir,
        save_state=store.save_state,
        stop=stop,
    )
    if launch.load_child is not None and any(s.is_subloop for s in loop.states.values()):
        from engine.runtime.subloop import make_hook

        runtime.run_subloop = make_hook(launch.root, launch.load_child)
    if loop.uses_llm() or _family_uses_llm(launch):
        from engine.llm import create_llm_services

        try:
            runtime.llm = create_llm_services(
                loop,
                run_dir=store.dir,
                recorder=recorder,
                replay_from=launch.replay_from,
                cache=launch.cache,
                environ=launch.env,
            )
        except BaseException:  # a replay log that cannot be read: no run took place
            actions.close()
            if resume is None:
                _discard(store)
            raise
        stop.listeners.append(runtime.llm.stop)
    state = resume.state if resume is not None else _fresh_state(launch, store.run_id)
    state.pid, state.pid_start = os.getpid(), process_start_time(os.getpid())
    state.signals = launch.takes_signals()
    previous = _install_stop_handlers(stop) if launch.handle_signals else {}
    live = _Live(stop, threading.current_thread(), threading.Event(), store.flush)
    with _live_lock:
        _live[state.run_id] = live
    if not state.signals:
        live.watcher = _watch_stop_requests(store.dir, stop, live.ended)
    history = RunRecorder(launch.root, warn=_warn)
    try:  # from the moment state.json names this process, an exception releases the run
        if resume is not None:  # name this process at once: `status`/`stop` must see it alive
            state.saved_at = time.time()  # its cost counts every call logged so far
            store.save_state(state.to_json())
            recorder.emit(
                "loop_resume",
                depth=0,
                step=state.steps,
                state=state.current,
                loop=loop.name,
                max_steps=loop.max_steps,
                cost_usd=state.cost_usd,
                **resume.note,
            )
        started = now_iso()
        history.start(state.run_id, loop.name, started_at=started, resumed=resume is not None)
        result = run(loop, state, runtime, resumed=resume is not None)
        if result.terminated_by == "stopped":
            # The run no longer belongs to this process, which may live on (a Python caller):
            # without its pid the run reads as stopped, and can be resumed, at once.
            state.pid = state.pid_start = None
            store.save_state(state.to_json())
    except BaseException:  # a caller's on_event raised, or a bug: the run ends here
        _release(store)
        live.end()
        raise
    finally:
        _restore_handlers(previous)
        actions.close()
        _close_llm(runtime.llm)
        store.close()
        with _live_lock:
            _live.pop(state.run_id, None)
    history.end(result)
    live.end()  # after its history row: a `stop` that returns finds the run ended there
    return result


def _close_llm(llm: object) -> None:
    """Close the run's LLM services (their HTTP connections), when they can be closed."""
    close = getattr(llm, "close", None)
    if callable(close):
        close()


def _discard(store: RunStore) -> None:
    """Remove the directory of a run refused before its first step (it holds only the empty
    folders made with it): `status` would not list it, and nothing would ever clean it up."""
    store.close()
    shutil.rmtree(store.dir, ignore_errors=True)


def _release(store: RunStore) -> None:
    """Drop this process's name from the last boundary the run saved (whatever happened
    after it is not kept): the run reads as interrupted and resumable at once, and `stop` does
    not signal a process that lives on (a Python caller whose callback raised)."""
    with contextlib.suppress(OSError, ValueError):  # save_state writes the held events first
        saved = store.load_state()
        store.save_state({**saved, "pid": None, "pid_start": None})


def _fresh_state(launch: Launch, run_id: str) -> RunState:
    loop = launch.loop
    return RunState(
        run_id=run_id,
        loop=loop.name,
        loop_file=str(Path(loop.source).resolve()) if loop.source else "",
        current=loop.initial,
        context=dict(launch.context),
        started_at=now_iso(),
        max_steps=loop.max_steps,
        replay_from=str(launch.replay_from.resolve()) if launch.replay_from else None,
        cache=launch.cache,
    )


def _family_uses_llm(launch: Launch) -> bool:
    """A sub-loop named literally that calls an LLM, or one chosen at run time (`loop: ${...}`),
    which may: one set of services serves the whole run, so replay, cache and the cost limit
    see the children's calls too (a child with services of its own replayed nothing: it called
    the API during `--replay`). The services are built on first use: a run that never calls a
    model pays nothing for them."""
    if launch.load_child is None or not any(s.is_subloop for s in launch.loop.states.values()):
        return False
    from engine.runtime.subloop import chooses_child_at_run_time, static_family

    family = static_family(launch.loop, launch.root, launch.load_child)
    return any(member.uses_llm() or chooses_child_at_run_time(member) for member in family)


def _warn(message: str) -> None:
    """A problem that does not stop the run (history): one line on stderr, shown not obeyed."""
    print(printable(message), file=sys.stderr)


class _Tee:
    """The run's recorder when a caller listens: the run directory first, then the listener."""

    def __init__(self, store: RunStore, listener: EventListener) -> None:
        self.store = store
        self.listener = listener

    def emit(self, event: str, **fields: Any) -> None:
        """The listener gets the event as its line in `events.jsonl` reads (as `engine.events`
        gives it): `ts` included, values as JSON has them, nothing the run goes on changing.
        The line may still be waiting to be written: `engine.events` writes it first
        (`flush_live`), so a listener that reads the log finds it."""
        line = self.store.emit_line(event, **fields)
        self.listener(Event(event, self.store.run_id, LineFields(line)))

    def flush(self) -> None:
        self.store.flush()


def _install_stop_handlers(stop: StopSignal) -> dict[int, Any]:
    """SIGTERM / SIGINT / SIGHUP stop the run gracefully: the action's group is killed, state
    is saved. A closed terminal's SIGHUP killed `ll-loop` outright, leaving its action running
    in its own process group. SIGHUP is taken only where it would kill the process.

    Only the main thread may install signal handlers; a run started from another thread is
    stopped through its process's own handlers (or `ll-loop stop` finds nothing to signal)."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handle(signum: int, frame: FrameType | None) -> None:
        stop.request(f"stopped by {signal.Signals(signum).name}")

    previous: dict[int, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        if sig == signal.SIGHUP and signal.getsignal(sig) != signal.SIG_DFL:
            continue  # ignored (nohup) or the caller's own (a daemon's reload): theirs
        previous[sig] = signal.signal(sig, handle)
    return previous


def _restore_handlers(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
