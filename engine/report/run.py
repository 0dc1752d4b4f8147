"""Find a run (or a child run of a sub-loop) and read what `explain` and `report` need (IO)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from engine.model.errors import UsageError
from engine.model.timefmt import epoch_seconds
from engine.report.explain import RunFacts
from engine.report.runlog import Trace, child_trace, read_trace
from engine.runtime.resume import RunSnapshot, find_run, find_run_dir, read_events
from engine.runtime.runstore import read_state


@dataclass(frozen=True)
class RunView:
    """One run as the report sees it: its facts, its trace, where it lives, its loop file."""

    facts: RunFacts
    trace: Trace | None
    dir: Path
    loop_file: str
    started_at: str = ""  # ISO time the run started (a loop file changed since is not its loop)
    child: bool = False  # a sub-loop's run, whose events are in its top run's log


def open_run(ref: str, root: Path | None = None) -> RunView:
    """A run by id, prefix or directory; a `children/<state>-<n>` directory is a child run,
    whose events are in its top run's log. A run whose state.json is gone or does not parse is
    told from its event log alone, when that has its start."""
    try:
        snapshot = find_run(ref, root)
    except UsageError as problem:
        return _from_log_alone(ref, root, problem)
    top_dir = _top_dir(snapshot.dir)
    trace = _read_log(top_dir / "events.jsonl")
    if top_dir != snapshot.dir:
        if trace is None:
            raise UsageError(f"the event log of {top_dir} has no loop_start")
        trace = child_trace(trace, top_dir, snapshot.dir)
        if trace is None:
            raise UsageError(
                f"no sub-loop run in the event log of {top_dir.name} matches {snapshot.dir}",
                hint="give the top run's id instead; its explanation lists its sub-loops",
            )
    facts = _facts(snapshot)
    if top_dir != snapshot.dir:  # a child's state.json holds its top run's id: say which child
        where = snapshot.dir.resolve().relative_to(top_dir.resolve())
        facts = replace(facts, place=str(where))
    return RunView(
        facts,
        trace,
        snapshot.dir,
        snapshot.loop_file,
        snapshot.started_at,
        child=top_dir != snapshot.dir,
    )


def _from_log_alone(ref: str, root: Path | None, problem: UsageError) -> RunView:
    """The run in `ref`'s directory as its event log tells it (its state.json unreadable);
    `problem` (why find_run refused it) when the log cannot tell it either."""
    directory = find_run_dir(ref, root)
    trace = _read_log(directory / "events.jsonl")
    if trace is None or _top_dir(directory) != directory:
        raise problem
    end = trace.end or {}
    last = trace.current
    why = "missing" if not (directory / "state.json").exists() else "damaged (it does not parse)"
    facts = RunFacts(
        run_id=directory.name,
        loop=trace.loop,
        status="finished" if end else "unknown",
        current=str(end.get("final_state") or (last.state if last else trace.initial)),
        steps=_int(end.get("steps"), sum(1 for s in trace.steps if s.routed)),
        elapsed_ms=_int(end.get("duration_ms"), 0),
        cost_usd=trace.spent()[1],
        result=end or None,
        state_problem=f"its state.json is {why}; this is the event log's account alone",
    )
    return RunView(facts, trace, directory, "", trace.started_at)


def _read_log(path: Path) -> Trace | None:
    """The trace in an event log; None when it has none, or cannot be read at all (a
    directory in its place, no permission), or is no file (a FIFO would block the reader
    forever, /dev/zero never ends a line): the run is then told from state.json."""
    try:
        if path.exists() and not path.is_file():
            return None
        return read_trace(read_events(path))
    except OSError:
        return None


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _top_dir(directory: Path) -> Path:
    """`.../runs/<id>` for `.../runs/<id>/children/a-1/children/b-2`."""
    current = directory
    while current.parent.name == "children":
        current = current.parent.parent
    return current


def _facts(snapshot: RunSnapshot) -> RunFacts:
    try:
        saved = read_state(snapshot.dir / "state.json")
    except (OSError, ValueError):
        saved = {}
    cost = saved.get("cost_usd")
    max_cost, timeout = _limits(snapshot.loop_file, snapshot.started_at)
    return RunFacts(
        run_id=snapshot.run_id,
        loop=snapshot.loop,
        status=snapshot.status,
        current=snapshot.current,
        steps=snapshot.steps,
        elapsed_ms=int(snapshot.elapsed_s() * 1000),
        cost_usd=float(cost) if isinstance(cost, int | float) else 0.0,
        result=snapshot.result,
        max_cost_usd=max_cost,
        timeout_s=timeout,
        replay_from=str(saved.get("replay_from") or ""),
        killed_attempts=snapshot.killed_attempts,
    )


def _limits(loop_file: str, started_at: str) -> tuple[float | None, float | None]:
    """The loop's `max_cost_usd` and `timeout` (the run directory keeps neither); None when
    unknown, and when the file changed after the run started (its limits may not be the run's)."""
    if not loop_file:
        return None, None
    from engine.load.loader import load_loop_file
    from engine.model.errors import LoopError

    started = epoch_seconds(started_at)
    try:
        if started is None or Path(loop_file).stat().st_mtime > started:
            return None, None
        loop = load_loop_file(Path(loop_file))
    except (LoopError, OSError):
        return None, None
    return loop.max_cost_usd, loop.timeout
