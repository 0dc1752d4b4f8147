"""Cases on Ray actors (`ll-harness suite --executor ray`): the same `Executor` as the local ones.

Each `--jobs` slot is one `CaseRunner` actor, which runs the cases sent to it one at a time with
`run_case`, in workspaces made on its node; their `CaseOutcome`s stream back to the driver,
which alone records rows and builds the report (so the output is the local executor's). Ray
places and restarts the actors; this module only
- connects (`--address`, else `RAY_ADDRESS`, else a Ray instance of its own for the run),
- ships our code to the workers when they lack it (a runtime environment: `runtime_env()`),
- reserves each slot's resources (`resources:` of the suite file) and bounds the retries of a
  call whose worker died (`MAX_RETRIES`),
- sends each ready actor its running call and the next (short cases a few per call), and
- starts one limiter actor shared by every worker's LLM client (`engine.suites.ray_limiter`).

`ray` is an optional extra, imported only here and only when this executor is chosen. See
docs/scale.md.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.model.errors import UsageError
from engine.model.suite import Case, Suite
from engine.suites.casework import interrupt_run, run_case
from engine.suites.spec import CaseOutcome, CaseSpec, RunSettings

MAX_RETRIES = 3  # a case whose worker died is run again this many times, then errored
PROBE_TIMEOUT = 120.0  # seconds for every node to say which code its workers run
DEPTH = 2  # calls sent to one actor at a time: the one it runs and the next
BATCH_SECONDS = 0.1  # short cases travel together in calls of about this many seconds
MAX_BATCH = 16  # cases in one call at most
CANCEL_POLL = 0.1  # seconds between a running case's looks at `ray.cancel`
SWITCH_INTERVAL = 0.0005  # seconds: the GIL switch interval of a worker (see CaseRunner)
INSTALL = "pip install 'll-loop[ray]'"
_SKIPPED = ("__pycache__", "*.pyc")
ENGINE_DIR = Path(__file__).resolve().parents[1]  # engine/ (without importing the public API)


# Seconds a cluster's port may take to accept a connection before `--address` is refused.
CONNECT_TIMEOUT = 10.0
# `host:port` or `ray://host:port` (Ray Client); `auto`, `local` and the like are Ray's to read.
_HOST_PORT = re.compile(
    r"^(?:ray://)?(?P<host>\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):(?P<port>\d{1,5})/?$"
)


def _answers(address: str) -> None:
    """Refuse an `address` at which nothing accepts a connection: `ray.init` would retry it for
    minutes, Ray's connection warnings scrolling on stderr, before saying anything."""
    import socket

    found = _HOST_PORT.match(address)
    if found is None or not 0 < int(found["port"]) < 65536:
        return
    host = found["host"].strip("[]")
    try:
        with socket.create_connection((host, int(found["port"])), timeout=CONNECT_TIMEOUT):
            return
    except OSError as exc:
        if isinstance(exc, TimeoutError):
            reason = f"nothing answered within {CONNECT_TIMEOUT:g} s"
        else:
            reason = exc.strerror or type(exc).__name__
        raise RayUnavailable(
            f"could not connect to the Ray cluster at {address}: {reason}",
            hint="start one with `ray start --head`, or check --address / RAY_ADDRESS",
        ) from None


class RayUnavailable(UsageError):
    """`--executor ray` without Ray installed: one sentence saying how to install it."""

    code = "RAY"


def require_ray() -> Any:
    """The `ray` module, or RayUnavailable saying how to install it."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable(
            f"--executor ray needs Ray, which is not installed here: {INSTALL}"
        ) from None
    return ray


def package_dir() -> Path:
    """Our code as it travels to workers: `engine/` (with its schemas and built-in loops under
    `engine/_data/`, as in the wheel) and `lint/`, staged once per driver process."""
    global _STAGED
    with _STAGE_LOCK:
        if _STAGED is not None and _STAGED.is_dir():
            return _STAGED
        import lint
        from engine.load.resources import data_dir

        staged = Path(tempfile.mkdtemp(prefix="ll-ray-pkg-"))
        ignore = shutil.ignore_patterns(*_SKIPPED)
        shutil.copytree(ENGINE_DIR, staged / "engine", ignore=ignore)
        shutil.copytree(Path(lint.__file__).parent, staged / "lint", ignore=ignore)
        for name in ("schemas", "loops"):
            target = staged / "engine" / "_data" / name
            if not target.exists():
                shutil.copytree(data_dir(name), target, ignore=ignore)
        _STAGED = staged
        return staged


_STAGED: Path | None = None
_STAGE_LOCK = threading.Lock()


def runtime_env() -> dict[str, Any]:
    """What every case task runs in: our packages, uploaded by Ray to each node that needs them.
    Third-party libraries (pyyaml, jsonschema, anthropic...) must already be on the workers."""
    staged = package_dir()
    return {
        "py_modules": [str(staged / "engine"), str(staged / "lint")],
        "excludes": list(_SKIPPED),
    }


FORWARDED = ("LL_", "ANTHROPIC_")  # environment prefixes every case task gets from the driver


def forwarded_env() -> dict[str, str]:
    """The driver's ll-loop and Anthropic settings (models, retry policy, endpoint, credentials),
    so a worker judges as a local run would; the rest of a worker's environment is its own."""
    return {k: v for k, v in os.environ.items() if k.startswith(FORWARDED)}


def adopt_env(env: dict[str, str]) -> None:
    """On a worker (a process of this driver's job only): take the driver's `LL_*` and
    `ANTHROPIC_*` variables, and drop the worker's own, before a case reads them."""
    for name in [k for k in os.environ if k.startswith(FORWARDED) and k not in env]:
        del os.environ[name]
    os.environ.update(env)


class _RayFootprint:
    """What `ray.init` changes in its process and `ray.shutdown` leaves: a SIGTERM handler
    (`sys.exit` in the main thread), `PYTHONBREAKPOINT` (Ray's debugger) and `RAY_*`
    variables. A program that ran a suite on a Ray of ours kept them: a
    SIGTERM then raised SystemExit in it, and `breakpoint()` called Ray's debugger. Taken
    before the executor starts Ray; the handler is put back as soon as Ray is started (the
    suite's own handler replaces it while cases run, and put Ray's back after them), the rest
    once Ray is shut down (only what Ray changed)."""

    def __init__(self) -> None:
        self.environ = dict(os.environ)
        self.sigterm = signal.getsignal(signal.SIGTERM)

    def restore_handler(self) -> None:
        handler = signal.getsignal(signal.SIGTERM)
        if (
            self.sigterm is not None
            and handler is not self.sigterm
            and getattr(handler, "__module__", "").startswith("ray")
            and threading.current_thread() is threading.main_thread()
        ):
            signal.signal(signal.SIGTERM, self.sigterm)

    def restore(self) -> None:
        self.restore_handler()
        for name in set(os.environ) | set(self.environ):
            if not (name.startswith("RAY_") or name == "PYTHONBREAKPOINT"):
                continue
            before = self.environ.get(name)
            if before is None:
                os.environ.pop(name, None)
            elif os.environ.get(name) != before:
                os.environ[name] = before


class CaseRunner:
    """A Ray actor: one slot of `--jobs` on some node, running the cases it is sent one at a
    time. A long-lived worker per slot costs each case one call (no worker lease per case, the
    run's settings fetched once), which is most of what a Ray task used to add to a short case."""

    def __init__(self) -> None:
        import sys

        # As on the driver while cases run: a subject that exited is collected at once rather
        # than after Python's default 5 ms switch interval (Ray's threads share this GIL).
        sys.setswitchinterval(SWITCH_INTERVAL)
        self.shared_key = ""
        self.shared: tuple[RunSettings, dict[str, str]] | None = None
        self.running = ""  # the run id of the case running now ("" between cases)
        threading.Thread(target=self._watch_cancel, daemon=True).start()

    def hello(self) -> tuple[str, str]:
        """(this worker's node id, the fingerprint of the ll-loop code it runs)."""
        import ray

        return ray.get_runtime_context().get_node_id(), code_fingerprint()

    def run(
        self, shared: list[Any], cases: list[tuple[Case, int, bytes | None, str | None]]
    ) -> tuple[list[CaseOutcome], float]:
        """A few cases, one after the other: (their outcomes, the seconds they took). `shared`
        wraps the ref of the run's settings (in a list, so Ray hands us the ref and we fetch it
        once per run, not once per call)."""
        import ray

        key = shared[0].hex()
        if key != self.shared_key or self.shared is None:
            self.shared, self.shared_key = ray.get(shared[0]), key
        settings, env = self.shared
        adopt_env(env)
        context = ray.get_runtime_context()
        started = time.perf_counter()
        outcomes = []
        for case, index, baseline_record, baseline_gap in cases:
            self.running = settings.run_id
            try:
                spec = CaseSpec(settings, case, index, baseline_record, baseline_gap)
                outcomes.append(run_case(spec))
            finally:
                self.running = ""
            if context.is_canceled():
                raise KeyboardInterrupt(f"case {case.id} cancelled")
        return outcomes, time.perf_counter() - started

    def _watch_cancel(self) -> None:
        """`ray.cancel` of an actor's call only raises a flag: stop the running case's subjects
        when it goes up, as Ctrl-C does in a local run (the case then ends at once)."""
        import ray

        context = ray.get_runtime_context()
        while True:
            time.sleep(CANCEL_POLL)
            running = self.running
            if running and context.is_canceled():
                interrupt_run(running)


def code_fingerprint() -> str:
    """A hash of our code as this process would run it: `engine/` and `lint/` sources and the
    shipped schemas and built-in loops, named the same in a checkout and in a wheel."""
    import hashlib

    import lint
    from engine.load.resources import data_dir

    roots = {
        "engine": ENGINE_DIR,
        "lint": Path(lint.__file__).parent,
        "schemas": data_dir("schemas"),
        "loops": data_dir("loops"),
    }
    digest = hashlib.sha256()
    for name, root in roots.items():
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root).as_posix()
            if not path.is_file() or path.suffix == ".pyc" or relative.startswith("_data/"):
                continue
            digest.update(f"{name}/{relative}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


class _CaseFuture(Future[CaseOutcome]):
    """Our side of one case; cancelling it while it runs cancels its Ray call (the worker
    stops the case's subjects), so an interrupted suite does not wait for running cases."""

    ray: Any = None
    ref: Any = None
    stopped = False  # a case waiting to be run again alone is dropped instead

    def cancel(self) -> bool:
        self.stopped = True
        if super().cancel():
            return True
        if self.ref is not None and not self.done():
            self.ray.cancel(self.ref)
        return False


@dataclass(eq=False)  # a slot is itself (a dict key), not its fields
class _Slot:
    """One CaseRunner actor and the cases sent to it that have not come back."""

    actor: Any
    ready: bool = False
    sent: int = 0
    hellos: int = 0  # hellos that failed
    alone: bool = False  # running a case that must not share the actor


@dataclass(frozen=True, eq=False)  # a call is itself (a dict key)
class _Sent:
    """Cases sent to an actor in one call, not yet back."""

    slot: _Slot
    batch: list[tuple[CaseSpec, Future[CaseOutcome]]]
    alone: bool


class RayExecutor:
    """Runs cases on `jobs` CaseRunner actors (default: as many as the cluster's CPUs hold at
    the suite's `resources.cpus` each), so at most `jobs` cases run at once."""

    def __init__(
        self,
        suite: Suite,
        jobs: int | None = None,
        *,
        address: str | None = None,
        max_retries: int = MAX_RETRIES,
        depth: int = DEPTH,
    ) -> None:
        self.ray = require_ray()
        self.suite = suite
        self.depth = max(1, depth)
        from engine.suites.ray_limiter import rpm_from_env, start_limiter

        rpm = rpm_from_env() if suite.uses_llm else None
        self.owns_ray = not self.ray.is_initialized()
        self.shipped = False  # whether our code travels to the workers (`runtime_env()`)
        self._lock = threading.Lock()
        self._waiting: deque[tuple[CaseSpec, Future[CaseOutcome]]] = deque()
        self._running: dict[_Sent, Any] = {}  # calls on their way -> Ray's ObjectRef
        self._per_case: float | None = None  # seconds a case takes on a worker (a running mean)
        self._lonely: deque[tuple[CaseSpec, Future[CaseOutcome]]] = deque()
        self._idle = threading.Condition(self._lock)
        self._settings: tuple[RunSettings, Any] | None = None
        self.slots: list[_Slot] = []
        where = address or os.environ.get("RAY_ADDRESS") or None
        self._footprint = _RayFootprint() if self.owns_ray else None
        if self.owns_ray:
            self._connect(where)
        # A caller who started Ray itself passes `runtime_env=runtime_env()` to `ray.init`
        # when the workers lack our code (docs/scale.md).
        self.jobs = max(1, jobs if jobs is not None else self._cluster_jobs())
        options: dict[str, Any] = {
            "num_cpus": suite.resources.cpus,
            "max_restarts": -1,  # a killed worker comes back; each case's retries are bounded
            "max_task_retries": max_retries,
        }
        if suite.resources.memory_mb is not None:
            options["memory"] = suite.resources.memory_mb * 1024 * 1024
        self.runner = self.ray.remote(CaseRunner).options(**options)
        self._start_slots()
        if self.owns_ray and where is not None and not self._workers_run_our_code():
            # Ray uploads local packages only for a whole job: join again with them.
            self._kill_slots()
            self.ray.shutdown()
            self._connect(where, ship=True)
            self.runner = self.ray.remote(CaseRunner).options(**options)
            self._start_slots()
        self.limiter: Any = start_limiter(self.ray, rpm) if suite.uses_llm else None

    def _connect(self, address: str | None, *, ship: bool = False) -> None:
        """Join the cluster at `address`, or start a Ray instance of our own (None, on this
        machine: its workers run our code as it is here); `ship` uploads our code."""
        self.shipped = ship
        if address is not None:
            _answers(address)
        try:
            self.ray.init(
                address=address,
                runtime_env=runtime_env() if ship else None,
                include_dashboard=False,
                log_to_driver=False,
                logging_level="ERROR",
            )
            if self._footprint is not None:
                self._footprint.restore_handler()
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError...
            if self._footprint is not None:
                self._footprint.restore()
            reason = " ".join(str(exc).split())[:300] or type(exc).__name__
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            raise RayUnavailable(
                f"could not connect to {where}: {reason}",
                hint="start one with `ray start --head`, or check --address / RAY_ADDRESS",
            ) from None

    def _start_slots(self) -> None:
        """Create the `jobs` actors; each takes cases once it has said hello (it is placed and
        its worker runs), so an actor the cluster cannot place yet never holds a case."""
        self.slots = [_Slot(self.runner.remote()) for _ in range(self.jobs)]
        self.hellos: dict[_Slot, Any] = {slot: self._ask_hello(slot) for slot in self.slots}

    def _ask_hello(self, slot: _Slot) -> Any:
        ref = slot.actor.hello.options(max_task_retries=0).remote()
        ref.future().add_done_callback(lambda done: self._hello(slot, done))
        return ref

    def _hello(self, slot: _Slot, done: Future[Any]) -> None:
        failed = done.exception() is not None
        with self._lock:
            if slot not in self.slots:
                return  # killed at the end of the run
            slot.hellos += failed
            slot.ready = not failed
            started = self._dispatch()
        self._watch(started)
        if failed and slot.hellos <= MAX_RETRIES:
            # Its worker died before it said hello (it restarts), or cannot load our code: ask
            # again a few times; an actor that never answers takes no case.
            self._ask_hello(slot)

    def _workers_run_our_code(self) -> bool:
        """Whether the workers on every node run exactly our code (the same fingerprint): the
        first actor to say hello speaks for its node, a light task for every other node. Not
        shipping our code saves an upload and, above all, a fresh worker start per job."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ours = code_fingerprint()
        deadline = time.monotonic() + PROBE_TIMEOUT
        ready, _ = self.ray.wait(list(self.hellos.values()), num_returns=1, timeout=PROBE_TIMEOUT)
        try:
            node, found = self.ray.get(ready[0], timeout=0) if ready else ("", "")
        except Exception:  # no engine there (ModuleNotFoundError), an older one
            return False
        if found != ours:
            return False
        probe = self.ray.remote(code_fingerprint)
        refs = [
            probe.options(
                num_cpus=0,
                max_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(other, soft=False),
            ).remote()
            for other in (n["NodeID"] for n in self.ray.nodes() if n.get("Alive"))
            if other != node
        ]
        try:
            others = self.ray.get(refs, timeout=max(1.0, deadline - time.monotonic()))
        except Exception:  # no engine there, an older one, a slow node
            return False
        return set(others) <= {ours}

    def _cluster_jobs(self) -> int:
        cpus = float(self.ray.cluster_resources().get("CPU", 1))
        return int(cpus // self.suite.resources.cpus) or 1

    @property
    def capacity(self) -> int:
        return self.jobs * self.depth * MAX_BATCH

    def submit(self, spec: CaseSpec) -> Future[CaseOutcome]:
        ours = _CaseFuture()
        # Put here, in the caller's thread: a `ray.put` from a Ray callback thread (where
        # `_dispatch` also runs) can deadlock.
        self._shared(spec.settings)
        with self._lock:
            self._waiting.append((spec, ours))
            started = self._dispatch()
        self._watch(started)
        return ours

    def _dispatch(self) -> list[tuple[_Sent, Any]]:
        """Send waiting cases to ready actors, the least busy first, up to `depth` calls each:
        one running and the next already there when it ends (called with the lock held). A
        case to be run alone waits for an idle actor; until it has one, nothing else is sent."""
        started: list[tuple[_Sent, Any]] = []
        while self._lonely:
            idle = [s for s in self.slots if s.ready and s.sent == 0]
            if not idle:
                return started
            spec, ours = self._lonely.popleft()
            if isinstance(ours, _CaseFuture) and ours.stopped:
                ours.set_exception(CancelledError())
                continue
            self._send(idle[0], [(spec, ours)], started, alone=True)
        while self._waiting:
            free = [s for s in self.slots if s.ready and not s.alone and s.sent < self.depth]
            if not free:
                break
            batch: list[tuple[CaseSpec, Future[CaseOutcome]]] = []
            while self._waiting and len(batch) < self._batch_size():
                spec, ours = self._waiting.popleft()
                if ours.set_running_or_notify_cancel():
                    batch.append((spec, ours))
            if batch:
                self._send(min(free, key=lambda s: s.sent), batch, started)
        return started

    def _batch_size(self) -> int:
        """Cases per call: as many as run in about BATCH_SECONDS (one while a case takes
        longer, or before any has finished), so a call's cost is shared by short cases while
        outcomes still come back every fraction of a second."""
        if self._per_case is None or self._per_case >= BATCH_SECONDS:
            return 1
        return max(1, min(MAX_BATCH, int(BATCH_SECONDS / max(self._per_case, 1e-4))))

    def _send(
        self,
        slot: _Slot,
        batch: list[tuple[CaseSpec, Future[CaseOutcome]]],
        started: list[tuple[_Sent, Any]],
        *,
        alone: bool = False,
    ) -> None:
        call = slot.actor.run.options(max_task_retries=0) if alone else slot.actor.run
        shared = [self._shared(batch[0][0].settings)]
        try:
            cases = [(s.case, s.index, s.baseline_record, s.baseline_gap) for s, _ in batch]
            ref = call.remote(shared, cases)
        except Exception as exc:  # Ray refused the call (the cluster went away)
            for _, ours in batch:
                ours.set_exception(exc)
            return
        for _, ours in batch:
            if isinstance(ours, _CaseFuture):
                ours.ray, ours.ref = self.ray, ref
        slot.sent += 1
        slot.alone = alone
        sent = _Sent(slot, batch, alone)
        self._running[sent] = ref
        started.append((sent, ref))

    def _watch(self, started: list[tuple[_Sent, Any]]) -> None:
        """Outside the lock: a callback on a finished ref runs at once, in this thread."""
        for sent, ref in started:
            ref.future().add_done_callback(lambda done, sent=sent: self._finished(sent, done))

    def _finished(self, sent: _Sent, done: Future[Any]) -> None:
        error = done.exception()
        again = (
            not sent.alone
            and isinstance(error, self.ray.exceptions.RayActorError)
            and sent.slot in self.slots  # not killed by shutdown
        )
        with self._lock:
            self._running.pop(sent, None)
            sent.slot.sent -= 1
            sent.slot.alone = False
            if again:
                # Ray's retries are spent, maybe only because a case waited behind one that
                # killed the worker each time (Ray may charge a retry to every call sent to a
                # dying actor, started or not): one last attempt for each, alone on an actor.
                self._lonely.extend(sent.batch)
            elif error is None:
                outcomes, seconds = done.result()
                per_case = seconds / max(1, len(outcomes))
                self._per_case = (
                    per_case if self._per_case is None else (self._per_case + per_case) / 2
                )
            started = self._dispatch()
            self._idle.notify_all()
        self._watch(started)
        if again:
            return
        for i, (_, ours) in enumerate(sent.batch):
            if error is None:
                ours.set_result(outcomes[i])
            else:  # the call failed for good (retries spent, cancelled)
                ours.set_exception(error)

    def _shared(self, settings: RunSettings) -> Any:
        """The run's settings and the driver's forwarded environment in the object store (put
        once), with the LLM limiter attached when the suite talks to a model."""
        if self._settings is not None and self._settings[0] is settings:
            return self._settings[1]
        shipped = settings
        if self.limiter is not None:
            from engine.suites.ray_limiter import ActorGate

            shipped = replace(settings, llm_gate=ActorGate(self.limiter))
        ref = self.ray.put((shipped, forwarded_env()))
        self._settings = (settings, ref)
        return ref

    def _kill_slots(self) -> None:
        """Kill every actor; never while holding `_lock`: Ray runs our future callbacks (which
        take the lock) on the thread a kill waits for, so a kill under the lock can deadlock."""
        with self._lock:
            slots, self.slots = self.slots, []
        for slot in slots:
            self.ray.kill(slot.actor, no_restart=True)

    def shutdown(self, *, cancel: bool = False) -> None:
        with self._lock:
            if cancel:
                while self._waiting:
                    self._waiting.popleft()[1].cancel()
                while self._lonely:
                    self._lonely.popleft()[1].set_exception(CancelledError())
            else:
                while self._running or self._waiting or self._lonely:
                    self._idle.wait(timeout=1.0)
        self._kill_slots()  # with cancel, the running cases' workers go with their actors
        if self.limiter is not None:
            self.ray.kill(self.limiter)
            self.limiter = None
        if self.owns_ray:
            self.ray.shutdown()
            if self._footprint is not None:
                self._footprint.restore()
