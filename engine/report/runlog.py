"""A run read back from its directory into steps: what `explain` and the HTML report show.

The event log is the story of a run; `state.json` says where it stands. Events are read
defensively — other parts of ll-loop add events and fields, a killed run leaves a torn tail,
a resumed run repeats the state it was in — so every field is optional here, unknown events are
ignored, and a step that never got its `route` event is kept as interrupted.

Sub-loop events carry `depth`; a child's steps are nested under the parent step that ran it
(`Step.child`), in the order the children started, which is the order of their directories
(`children/<state>-<n>/`).

A run of a million events is read in memory that grows by little per step: a step is a slotted
object whose repeated names (state, verdict, evaluator, target) and evaluator details (the
same exit code, pattern and match on step after step) are shared, and once the next
step starts it keeps only what is ever shown of a step that is not the last — the start of its
output, flattened (the HTML step table shows `OUTPUT_KEPT` characters at most), not its stderr
(only the last step's failing action is quoted, or the last earlier one that failed: the trace
keeps that one) nor its action text. A run of 100,000 shell steps
printing 2 KB each held every output, stderr and action: ~1 GB to print one screen.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from sys import intern
from typing import Any

from engine.harness.verdicts import JudgeNote, judge_notes
from engine.load.gcpause import collector_paused

OUTPUT_KEPT = 200  # characters of an earlier step's output kept (flattened), for the step table
_SCALARS = frozenset({str, int, float, bool, type(None)})


@dataclass(eq=False, slots=True)  # identity: a step is one event-log position
class Step:
    """One execution of a state (its step number at its depth), filled in as events arrive."""

    step: int
    state: str
    depth: int
    started_at: str = ""
    ended_at: str = ""  # when it was routed: after its action and its judges
    stopped_at: str = ""  # when a stop ended the run in this step, which was never routed
    action_type: str | None = None
    exit_code: int | None = None
    duration_ms: int | None = None
    timeout: float | None = None  # the action's time limit, as it started
    timed_out: bool = False
    signal: int | None = None
    spawn_error: str | None = None
    output: str = ""
    stderr: str = ""
    evaluator: str | None = None
    verdict: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    target: str | None = None
    routed: bool = False
    route_error: str | None = None
    out_of_time: bool = False  # the loop's own timeout cut this step: the run ended in it
    budget_end: bool = False  # the `on_max_steps` state, run once when the budget was spent
    stopped: bool = False  # cut short by `ll-loop stop` (its session ended `stopped`), not a kill
    log_cut: bool = False  # the last step of a finished run whose event log ends inside it
    retry: dict[str, Any] | None = None
    llm_calls: int = 0
    cached_calls: int = 0  # of those, answered from the `--cache` (no call was made)
    replay_misses: int = 0  # of those, replayed ones the replayed log had no answer for
    cost_usd: float = 0.0
    cost_unknown: bool = False  # an agent CLI's action that reported no cost (not $0)
    child: Trace | None = None
    child_continued: bool = False  # a resume continued this step's child in a later step

    @property
    def finished(self) -> bool:
        return self.routed

    def settle(self) -> None:
        """A later step has started: keep of this one only what is shown of an earlier step
        (the start of its output, whitespace runs as one space), not its stderr."""
        if self.output:
            self.output = " ".join(self.output.split())[:OUTPUT_KEPT]
        self.stderr = ""

    @property
    def action_failed(self) -> bool:
        """Its action crashed, timed out or exited non-zero."""
        return bool(self.spawn_error or self.timed_out or self.exit_code not in (None, 0))

    @property
    def ended(self) -> bool:
        """Routed, or run as `on_max_steps` (which is never routed): the step is over."""
        return self.routed or self.budget_end

    @property
    def went_to(self) -> str | None:
        """The state the run entered after this step: the route's target, or that state's
        `on_retry_exhausted` when its retries ran out."""
        exhausted = self.exhausted
        return exhausted[1] if exhausted else self.target

    @property
    def exhausted(self) -> tuple[str, str] | None:
        """(the state whose retries ran out, where the run went instead) when this step's
        route re-entered a state once too often."""
        retry = self.retry
        if not retry:
            return None
        state, after = retry.get("state"), retry.get("target")
        if retry.get("exhausted") and isinstance(state, str) and isinstance(after, str):
            return state, after
        return None

    def timeout_note(self) -> str:
        """`its action ran past its 30s timeout` when the state's own timeout ended it."""
        if not self.timed_out or self.out_of_time:
            return ""
        limit = f" {self.timeout:g}s" if self.timeout is not None else ""
        return f"its action ran past its{limit} timeout"

    def hop_note(self) -> str:
        """Why this step went somewhere other than its route, or nowhere: '' when it simply
        followed its route (or has none, or is unfinished)."""
        exhausted = self.exhausted
        if exhausted is not None:
            limit = (self.retry or {}).get("max_retries")
            times = f" {limit}" if isinstance(limit, int) else ""
            return f"{exhausted[0]!r} had used its{times} retries"
        if self.out_of_time:
            return "the loop's time limit ran out"
        if self.budget_end:
            return "on_max_steps; the run ended"
        if self.stopped and not self.routed:
            return "stopped"  # read after a resume too, where the run's status is another
        if self.log_cut and not self.routed:
            return "the event log ends here"  # the run went on: it finished, its log did not
        return ""

    def spent(self) -> tuple[int, float]:
        """LLM calls and dollars of this step, a sub-loop's whole child run included (once: a
        child a resume continued counts in the step that continued it)."""
        calls, cost = self.llm_calls, self.cost_usd
        if self.child is not None and not self.child_continued:
            more_calls, more_cost = self.child.spent()
            calls, cost = calls + more_calls, cost + more_cost
        return calls, cost

    def cached(self) -> int:
        """Of `spent()`'s calls, those the `--cache` answered (counted as `spent` counts)."""
        cached = self.cached_calls
        if self.child is not None and not self.child_continued:
            cached += self.child.cached()
        return cached

    def missed(self) -> int:
        """Of `spent()`'s calls, replayed ones with no answer in the replayed log."""
        missed = self.replay_misses
        if self.child is not None and not self.child_continued:
            missed += self.child.missed()
        return missed

    def judges(self) -> list[JudgeNote]:
        return judge_notes(self.evaluator, self.details)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "state": self.state,
            "depth": self.depth,
            "started_at": self.started_at,
            "action_type": self.action_type,
            "exit_code": self.exit_code,
            "duration_ms": self.duration_ms,
            "timed_out": self.timed_out,
            "spawn_error": self.spawn_error,
            "evaluator": self.evaluator,
            "verdict": self.verdict,
            "target": self.target,
            "finished": self.finished,
            "route_error": self.route_error,
            "retry": self.retry,
            "llm_calls": self.spent()[0],
            "cost_usd": round(self.spent()[1], 6),
            "judges": [j.to_json() for j in self.judges()],
            "child": self.child.to_json() if self.child else None,
        }


def run_again(steps: list[Step]) -> set[int]:
    """Positions of attempts a stop or kill cut short and a resume ran again: an unfinished
    step with another after it. They are shown on the path, not counted as steps."""
    return {i for i, step in enumerate(steps[:-1]) if not step.finished}


@dataclass(eq=False)
class Trace:
    """The steps of one loop run (the top run, or one child of a sub-loop state)."""

    loop: str
    depth: int
    file: str = ""
    initial: str = ""
    max_steps: int | None = None
    max_cost_usd: float | None = None  # the limits its `loop_start` recorded (older logs: None)
    timeout: float | None = None
    started_at: str = ""
    steps: list[Step] = field(default_factory=list)
    end: dict[str, Any] | None = None  # the `loop_complete` fields
    resumes: list[dict[str, Any]] = field(default_factory=list)
    output_errors: list[str] = field(default_factory=list)
    # (step, state, stderr) of the last earlier step whose action failed, kept when it settles
    # and only while the steps after it say nothing of their own (each `yes`, as clean-up steps
    # do): a run that took `on_error` to such steps and then a failure terminal is explained by
    # it. One step's stderr (at most the 2,000 characters an event holds), not every step's.
    failed_before: tuple[int, str, str] | None = None

    @property
    def current(self) -> Step | None:
        return self.steps[-1] if self.steps else None

    def spent(self) -> tuple[int, float]:
        """LLM calls and dollars of the whole run, its children included."""
        totals = [step.spent() for step in self.steps]
        return sum(c for c, _ in totals), sum(d for _, d in totals)

    def cached(self) -> int:
        """LLM calls of the whole run the `--cache` answered, its children included."""
        return sum(step.cached() for step in self.steps)

    def missed(self) -> int:
        """Replayed LLM calls of the whole run its replayed log had no answer for."""
        return sum(step.missed() for step in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "loop": self.loop,
            "depth": self.depth,
            "file": self.file,
            "initial": self.initial,
            "max_steps": self.max_steps,
            "end": self.end,
            "resumes": len(self.resumes),
            "steps": [s.to_json() for s in self.steps],
        }


def read_trace(events: Iterable[Mapping[str, Any]]) -> Trace | None:
    """The top run's trace (children nested), or None when the log has no `loop_start`.

    A long run is many small acyclic objects (steps, their details), read with the cyclic
    collector paused as a loop is loaded: its full collections would walk them over and over."""
    builder = _Builder()
    with collector_paused():
        for event in events:
            builder.add(event)
    return builder.top


def _limit(value: Any) -> float | None:
    """A recorded `max_cost_usd` or `timeout`: a finite number >= 0, else None."""
    number = _float(value)
    return number if number is not None and math.isfinite(number) and number >= 0 else None


class _Builder:
    """Folds events into traces; `open[d]` is the trace events of depth `d` go to."""

    def __init__(self) -> None:
        self.top: Trace | None = None
        self.open: dict[int, Trace] = {}
        self.details: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = {}

    def add(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        depth = event.get("depth")
        if type(depth) is not int:  # `_int`, inlined: a long run has hundreds of thousands
            depth = 0
        if kind == "loop_start":
            self._start(event, depth)
            return
        trace = self.open.get(depth)
        if trace is None or type(kind) is not str:
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, trace, event, depth)

    def _start(self, event: Mapping[str, Any], depth: int) -> None:
        trace = Trace(
            loop=str(event.get("loop") or ""),
            depth=depth,
            file=str(event.get("file") or ""),
            initial=str(event.get("initial") or ""),
            max_steps=_int(event.get("max_steps")),
            max_cost_usd=_limit(event.get("max_cost_usd")),
            timeout=_limit(event.get("timeout")),
            started_at=str(event.get("ts") or ""),
        )
        if depth == 0:
            if self.top is None:
                self.top = trace
            else:  # a second loop_start at the top: a log appended to; keep the first run
                return
        else:
            parent = self.open.get(depth - 1)
            step = parent.current if parent else None
            if step is not None:
                if step.child is not None and parent is not None:  # not continued: a new child
                    for earlier in parent.steps[:-1]:
                        if earlier.child is step.child:
                            earlier.child_continued = False
                step.child = trace
        self.open[depth] = trace
        for deeper in [d for d in self.open if d > depth]:
            del self.open[deeper]

    def state_enter(self, trace: Trace, event: Mapping[str, Any], depth: int) -> None:
        state = event.get("state")
        if not isinstance(state, str) or not state:
            return  # no state of ours: a damaged line must not stand in for the real step
        step = Step(
            step=_int(event.get("step")) or len(trace.steps) + 1,
            state=intern(state),
            depth=depth,
            started_at=str(event.get("ts") or ""),
        )
        previous = trace.current
        if previous is not None:
            if previous.stderr.strip() and previous.action_failed:
                trace.failed_before = (previous.step, previous.state, previous.stderr)
            elif previous.verdict not in (None, "yes"):
                # a later verdict of its own (a judge's no) is what the run went on from
                trace.failed_before = None
            previous.settle()
        trace.steps.append(step)
        # The state of an interrupted step runs again after a resume; a sub-loop child it was
        # running is continued (a `loop_resume` at the child's depth), not started anew.
        if previous is not None and not previous.finished and previous.state == step.state:
            step.child = previous.child
            previous.child_continued = previous.child is not None

    def action_start(self, trace: Trace, event: Mapping[str, Any], depth: int) -> None:
        step = _step_for(trace, event)
        if step is not None:
            step.action_type = _name(event.get("action_type"))
            step.timeout = _float(event.get("timeout"))

    def action_complete(self, trace: Trace, event: Mapping[str, Any], depth: int) -> None:
        step = _step_for(trace, event)
        if step is None:
            return
        step.exit_code = _int(event.get("exit_code"))
        step.duration_ms = _int(event.get("duration_ms"))
        step.timed_out = bool(event.get("timed_out"))
        step.signal = _int(event.get("signal"))
        step.spawn_error = _str(event.get("spawn_error"))
        step.output = str(event.get("output") or "")
        step.stderr = str(event.get("stderr") or "")
        step.cost_usd += _float(event.get("agent_cost_usd")) or 0.0  # an agent CLI's own spend
        step.cost_unknown = step.cost_unknown or event.get("agent_cost_known") is False

    def evaluate(self, trace: Trace, event: Mapping[str, Any], depth: int) -> None:
        step = _step_for(trace, event)
        if step is None:
            return
        step.evaluator = _name(event.get("evaluator"))
        step.verdict = _name(event.get("verdict"))
        details = event.get("details")
        step.details = self._details(details) if isinstance(details, Mapping) else {}

    def _details(self, details: Mapping[str, Any]) -> dict[str, Any]:
        """An evaluator's details, read only: the same few scalars on step after step (an exit
        code, a pattern and whether it matched) are one dict, not one per step."""
        if len(details) > 8 or not all(type(v) in _SCALARS for v in details.values()):
            return dict(details)
        key = tuple(details.items())
        shared = self.details.get(key)
        if shared is None:
            shared = self.details[key] = dict(details)
        return shared

    def route(self, trace: Trace, event: Mapping[str, Any], depth: int) -> None:
        step = _step_for(trace, event)
        if step is None:
            return
        step.routed = True
        step.ended_at = str(event.get("ts") or "")
        step.target = _name(event.get("target"))
        step.route_error = _str(event.get("error"))
        step.out_of_time = event.get("timeout") is True
        if step.verdict is None:
            step.verdict = _name(event.get("verdict"))

    def retry(self, trace: Trace, event: Mapping[str, Any], depth: int) -> None:
        step = trace.current
        if step is not None:
            keys = ("state", "retries", "max_retries", "exhausted", "target")
            step.retry = {k: event.get(k) for k in keys}

    def llm_call(self, trace: Trace, event: Mapping[str, Any], depth: int) -> None:
        step = _step_for(trace, event)
        if step is None:
            return
        step.llm_calls += 1
        if event.get("source") == "cache":
            step.cached_calls += 1
        elif event.get("source") == "replay" and str(event.get("error")).startswith("replay miss"):
            step.replay_misses += 1  # not a recorded failure, which replays as that failure
        cost = event.get("cost_usd")
        if isinstance(cost, int | float):
            step.cost_usd += float(cost)

    def loop_resume(self, trace: Trace, event: Mapping[str, Any], depth: int) -> None:
        trace.resumes.append(dict(event))
        if depth > 0:  # a child continued: it belongs to the parent's re-run step
            parent = self.open.get(depth - 1)
            if parent is not None and parent.current is not None:
                parent.current.child = trace

    def loop_complete(self, trace: Trace, event: Mapping[str, Any], depth: int) -> None:
        trace.end = {k: v for k, v in event.items() if k not in ("ts", "event", "run_id")}
        step = trace.current
        if event.get("terminated_by") == "stopped" and step is not None and not step.routed:
            step.stopped = True
            step.stopped_at = str(event.get("ts") or "")
        if event.get("terminated_by") == "max_steps" and step is not None:
            # a judged step the budget's end left unrouted ran as the `on_max_steps` state
            step.budget_end = not step.routed and step.verdict is not None

    def output_error(self, trace: Trace, event: Mapping[str, Any], depth: int) -> None:
        trace.output_errors.append(f"{event.get('output')}: {event.get('error')}")


_HANDLERS = {
    name: getattr(_Builder, name)
    for name in (
        "state_enter",
        "action_start",
        "action_complete",
        "evaluate",
        "route",
        "retry",
        "llm_call",
        "loop_resume",
        "loop_complete",
        "output_error",
    )
}


def _step_for(trace: Trace, event: Mapping[str, Any]) -> Step | None:
    """The step an event belongs to: the current one, when its state (if given) matches."""
    step = trace.current
    state = event.get("state")
    if step is None or (state is not None and state != step.state):
        return None
    return step


def child_trace(top: Trace, top_dir: Path, child_dir: Path) -> Trace | None:
    """The trace of the child run in `child_dir` (`<run>/children/<state>-<n>/...`)."""
    try:
        parts = child_dir.resolve().relative_to(top_dir.resolve()).parts
    except ValueError:
        return None
    trace: Trace | None = top
    for holder, name in zip(parts[::2], parts[1::2], strict=False):
        if holder != "children" or trace is None:
            return None
        state, _, index = name.rpartition("-")
        if not index.isdigit():
            return None
        started = distinct_children(trace, state)
        trace = started[int(index) - 1] if 0 < int(index) <= len(started) else None
    return trace if trace is not top else None


def distinct_children(trace: Trace, state: str) -> list[Trace]:
    """The children `state` started in `trace`, in order (a continued child counted once)."""
    seen: list[Trace] = []
    for step in trace.steps:
        if (
            step.state == state
            and step.child is not None
            and all(c is not step.child for c in seen)
        ):
            seen.append(step.child)
    return seen


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    """A number from the log as a float; not a number, or a whole number too large for a
    float (JSON has no limit): None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _name(value: Any) -> str | None:
    """A state, verdict or evaluator name: one shared string for the run's many steps."""
    return intern(value) if type(value) is str else None
