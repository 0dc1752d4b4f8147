"""Where cases run: the `Executor` boundary, and the local executors behind it.

The driver only ever calls `submit(spec) -> Future[CaseOutcome]` (as many as `capacity` allows
in flight), waits on the futures, and `shutdown()`. A case is `run_case(spec)`: a plain function
of a picklable `CaseSpec` (`engine.suites.spec`), so an executor may run it anywhere:

- `threads` (the default): a thread pool in this process; cases spend their time in
  subprocesses and model calls, which release the GIL;
- `processes`: a process pool (specs and outcomes are pickled across);
- another backend (a Ray cluster, say) implements the same three members: submit a remote
  `run_case(spec)`, hand back a `concurrent.futures.Future` (Ray's `ObjectRef.future()` is one),
  shut down. Results stream back to the driver, which alone writes `history.db` and the report.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor as _PoolExecutor
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from engine.suites.casework import run_case
from engine.suites.spec import CaseOutcome, CaseSpec


class Executor(Protocol):
    """Runs cases somewhere and streams their outcomes back as futures."""

    @property
    def capacity(self) -> int:
        """How many cases may usefully be in flight at once (the driver keeps ~2x that
        submitted, so a worker never waits for the next spec and memory stays bounded)."""
        ...

    def submit(self, spec: CaseSpec) -> Future[CaseOutcome]: ...

    def shutdown(self, *, cancel: bool = False) -> None:
        """Stop: wait for running cases, or with `cancel` drop the ones not started and do
        not wait for the running ones (the driver has stopped them, or given up on them)."""
        ...


class LocalExecutor:
    """`jobs` workers in this machine: threads (default) or processes."""

    def __init__(
        self,
        jobs: int,
        *,
        processes: bool = False,
        work: Callable[[CaseSpec], CaseOutcome] = run_case,
    ) -> None:
        self.jobs = max(1, jobs)
        self.work = work
        self.pool: _PoolExecutor
        if processes:
            import multiprocessing  # not imported by a suite of threads (~4 ms of start-up)
            from concurrent.futures import ProcessPoolExecutor

            # fork would copy the driver's threads and locks mid-flight; spawn starts clean.
            context = multiprocessing.get_context("spawn")
            self.pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=context)
        else:
            self.pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="case")

    @property
    def capacity(self) -> int:
        return self.jobs

    def submit(self, spec: CaseSpec) -> Future[CaseOutcome]:
        return self.pool.submit(self.work, spec)

    def shutdown(self, *, cancel: bool = False) -> None:
        if not cancel:
            self.pool.shutdown(wait=True)
            return
        # A thread stuck in a judge cannot be killed: it is left behind (the CLI leaves with
        # os._exit); a worker process can, and is, so that nothing spins on after the suite.
        processes = dict(getattr(self.pool, "_processes", None) or {})
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in processes.values():
            if process.is_alive():
                process.terminate()


EXECUTORS = ("threads", "processes")


def local_executor(name: str, jobs: int) -> Executor:
    """The executor named on the command line (`--executor`)."""
    if name not in EXECUTORS:
        raise ValueError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")
    return LocalExecutor(jobs, processes=name == "processes")
