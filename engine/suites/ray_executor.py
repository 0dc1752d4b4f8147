"""Cases as Ray tasks (`ll-harness suite --executor ray`): the same `Executor` as the local ones.

Each case is one Ray task running `run_case` on a worker, in a workspace made on that worker's
node; its `CaseOutcome` streams back to the driver, which alone records rows and builds the
report (so the output is the local executor's). Ray does the scheduling; this module only
- connects (`--address`, else `RAY_ADDRESS`, else a Ray instance of its own for the run),
- ships our code to the workers (a runtime environment: `runtime_env()`),
- asks for each case's resources (`resources:` of the suite file) with bounded retries for a
  worker that dies mid-case (`MAX_RETRIES`; the case's outcome is returned once, by the retry),
- keeps at most `jobs` tasks running (the rest wait here, not in the cluster), and
- starts one limiter actor shared by every worker's LLM client (`engine.suites.ray_limiter`).

`ray` is an optional extra, imported only here and only when this executor is chosen. See
docs/scale.md.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.model.errors import UsageError
from engine.model.suite import Case, Suite
from engine.suites.casework import interrupt_run, run_case
from engine.suites.spec import CaseOutcome, CaseSpec, RunSettings

MAX_RETRIES = 3  # a case whose worker died is run again this many times, then errored
PROBE_TIMEOUT = 120.0  # seconds for every node to say which code its workers run
INSTALL = "pip install 'll-loop[ray]'"
_SKIPPED = ("__pycache__", "*.pyc")
ENGINE_DIR = Path(__file__).resolve().parents[1]  # engine/ (without importing the public API)


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


def _case_task(
    shared: tuple[RunSettings, dict[str, str]],
    case: Case,
    index: int,
    baseline_record: bytes | None,
) -> CaseOutcome:
    """The body of one Ray task (Ray resolves `shared` from the object store)."""
    settings, env = shared
    adopt_env(env)
    spec = CaseSpec(settings, case, index, baseline_record)
    done: Future[CaseOutcome] = Future()
    # The case runs in a thread so that this one can hear `ray.cancel` (a KeyboardInterrupt)
    # and stop the case's subjects, as Ctrl-C does in a local run.
    thread = threading.Thread(target=lambda: done.set_result(run_case(spec)), daemon=True)
    thread.start()
    try:
        return done.result()
    except KeyboardInterrupt:
        interrupt_run(settings.run_id)
        thread.join(timeout=30)
        raise


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
    """Our side of one case; cancelling it while it runs cancels its Ray task (the worker
    stops the case's subjects), so an interrupted suite does not wait for running cases."""

    ray: Any = None
    ref: Any = None

    def cancel(self) -> bool:
        if super().cancel():
            return True
        if self.ref is not None and not self.done():
            self.ray.cancel(self.ref)
        return False


class RayExecutor:
    """Runs each case as a Ray task; at most `jobs` at once (default: what the cluster's CPUs
    hold at the suite's `resources.cpus` per case)."""

    def __init__(
        self,
        suite: Suite,
        jobs: int | None = None,
        *,
        address: str | None = None,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        self.ray = require_ray()
        self.suite = suite
        from engine.suites.ray_limiter import rpm_from_env, start_limiter

        rpm = rpm_from_env() if suite.uses_llm else None
        self.owns_ray = not self.ray.is_initialized()
        self.shipped = False  # whether our code travels to the workers (`runtime_env()`)
        if self.owns_ray:
            where = address or os.environ.get("RAY_ADDRESS") or None
            self._connect(where)
            if where is not None and not self._workers_run_our_code():
                # Ray uploads local packages only for a whole job: join again with them.
                self.ray.shutdown()
                self._connect(where, ship=True)
        # A caller who started Ray itself passes `runtime_env=runtime_env()` to `ray.init`
        # when the workers lack our code (docs/scale.md).
        self.jobs = max(1, jobs if jobs is not None else self._cluster_jobs())
        options: dict[str, Any] = {
            "num_cpus": suite.resources.cpus,
            "max_retries": max_retries,
            "retry_exceptions": False,  # run_case never raises: only a dead worker is retried
        }
        if suite.resources.memory_mb is not None:
            options["memory"] = suite.resources.memory_mb * 1024 * 1024
        self.task = self.ray.remote(_case_task).options(**options)
        self.limiter: Any = start_limiter(self.ray, rpm) if suite.uses_llm else None
        self._settings: tuple[RunSettings, Any] | None = None
        self._lock = threading.Lock()
        self._waiting: deque[tuple[CaseSpec, Future[CaseOutcome]]] = deque()
        self._running: dict[Future[CaseOutcome], Any] = {}  # ours -> Ray's ObjectRef
        self._idle = threading.Condition(self._lock)

    def _connect(self, address: str | None, *, ship: bool = False) -> None:
        """Join the cluster at `address`, or start a Ray instance of our own (None, on this
        machine: its workers run our code as it is here); `ship` uploads our code."""
        self.shipped = ship
        try:
            self.ray.init(
                address=address,
                runtime_env=runtime_env() if ship else None,
                include_dashboard=False,
                log_to_driver=False,
                logging_level="ERROR",
            )
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError...
            reason = " ".join(str(exc).split())[:300] or type(exc).__name__
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            raise RayUnavailable(
                f"could not connect to {where}: {reason}",
                hint="start one with `ray start --head`, or check --address / RAY_ADDRESS",
            ) from None

    def _workers_run_our_code(self) -> bool:
        """Whether a worker on every node runs exactly our code (the same fingerprint). Not
        shipping it saves an upload and, above all, a fresh worker start per job."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        probe = self.ray.remote(code_fingerprint)
        nodes = [n["NodeID"] for n in self.ray.nodes() if n.get("Alive")]
        refs = [
            probe.options(
                num_cpus=0,
                max_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            ).remote()
            for node in nodes
        ]
        try:
            found = self.ray.get(refs, timeout=PROBE_TIMEOUT)
        except Exception:  # no engine there (ModuleNotFoundError), an older one, a slow node
            return False
        return bool(found) and set(found) == {code_fingerprint()}

    def _cluster_jobs(self) -> int:
        cpus = float(self.ray.cluster_resources().get("CPU", 1))
        return int(cpus // self.suite.resources.cpus) or 1

    @property
    def capacity(self) -> int:
        return self.jobs

    def submit(self, spec: CaseSpec) -> Future[CaseOutcome]:
        ours = _CaseFuture()
        with self._lock:
            self._waiting.append((spec, ours))
            started = self._dispatch()
        self._watch(started)
        return ours

    def _dispatch(self) -> list[tuple[Future[CaseOutcome], Any]]:
        """Start waiting cases while fewer than `jobs` run (called with the lock held)."""
        started = []
        while self._waiting and len(self._running) < self.jobs:
            spec, ours = self._waiting.popleft()
            if not ours.set_running_or_notify_cancel():
                continue
            try:
                ref = self.task.remote(
                    self._shared(spec.settings), spec.case, spec.index, spec.baseline_record
                )
            except Exception as exc:  # Ray refused the task (the cluster went away)
                ours.set_exception(exc)
                continue
            if isinstance(ours, _CaseFuture):
                ours.ray, ours.ref = self.ray, ref
            self._running[ours] = ref
            started.append((ours, ref))
        return started

    def _watch(self, started: list[tuple[Future[CaseOutcome], Any]]) -> None:
        """Outside the lock: a callback on a finished ref runs at once, in this thread."""
        for ours, ref in started:
            ref.future().add_done_callback(lambda done, ours=ours: self._finished(ours, done))

    def _finished(self, ours: Future[CaseOutcome], done: Future[Any]) -> None:
        with self._lock:
            self._running.pop(ours, None)
            started = self._dispatch()
            self._idle.notify_all()
        self._watch(started)
        try:
            ours.set_result(done.result())
        except BaseException as exc:  # the task failed for good (retries spent, cancelled)
            ours.set_exception(exc)

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

    def shutdown(self, *, cancel: bool = False) -> None:
        with self._lock:
            if cancel:
                while self._waiting:
                    self._waiting.popleft()[1].cancel()
                for ref in self._running.values():
                    self.ray.cancel(ref, force=True)
            else:
                while self._running or self._waiting:
                    self._idle.wait(timeout=1.0)
        if self.limiter is not None:
            self.ray.kill(self.limiter)
            self.limiter = None
        if self.owns_ray:
            self.ray.shutdown()
