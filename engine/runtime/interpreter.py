"""The interpreter: run a loaded loop, one state at a time, exactly as docs/architecture.md
("One step") describes.

Each turn, in this order: (1) a terminal state finishes the run; (2) an exhausted step budget runs
`on_max_steps` once (if set; it is not counted as a step and is not routed) and finishes
`max_steps`; (3) a passed loop `timeout` finishes `timeout`; (4) otherwise the state runs
(`steps += 1`), is evaluated and routed. A stop request is honoured between steps and interrupts
the running action.

All mutable data of a run lives in one `RunState`, saved to `state.json` at every state boundary,
so `run(loop, run_state, runtime)` continues from any boundary: resuming is "load, then run".
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.graph.loop_graph import compile_graph, retry_edges
from engine.judges.evaluators import Judged, crash_verdict, error, judge, step_verdict
from engine.load.project import ensure_dir, open_file
from engine.model.errors import InterpolationError
from engine.model.expressions import lone_expression
from engine.model.loop import Evaluate, Loop, State
from engine.model.ports import (
    ActionResult,
    LlmServices,
    Outcome,
    ProcessSetting,
    Recorder,
    RunResult,
    TerminatedBy,
    Verdict,
)
from engine.runtime.actions import WHOLE_OUTPUT_LIMIT, ActionRunner
from engine.runtime.actions import read_whole as _read_whole
from engine.runtime.subloop import route_verdict

CAPTURE_LIMIT = 64 * 1024  # characters of an output kept in captures / prev / state.json
PREVIEW_LIMIT = 2000  # characters of an output shown in an event
TAIL_LIMIT = 200  # and of its end, when the preview does not reach it (the progress line's)
# A spend this close below `max_cost_usd` has reached it: a run's cost is a float sum of call
# costs (ten calls of $0.10 add up to 0.9999999999999999), and a nano-dollar is far below the
# price of one token.
COST_EPSILON = 1e-9


@dataclass
class RunState:
    """Everything that changes while a loop runs; JSON-serialisable (`state.json`)."""

    run_id: str
    loop: str
    current: str
    loop_file: str = ""
    steps: int = 0
    context: dict[str, Any] = field(default_factory=dict)
    captured: dict[str, dict[str, Any]] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    prev: dict[str, Any] | None = None
    last_values: dict[str, float] = field(default_factory=dict)  # convergence memory per state
    stalls: dict[str, int] = field(default_factory=dict)  # checks without progress, per state
    diffs: dict[str, str] = field(default_factory=dict)  # diff_stall: last `git diff` digest
    cost_usd: float = 0.0
    # States whose agent CLI reported no cost (a child's as "state > inner"): `cost_usd` is then
    # a lower bound, not the spend (`explain` and the report say "+ unknown").
    cost_unknown_in: list[str] = field(default_factory=list)
    started_at: str = ""
    elapsed_ms: int = 0  # wall time spent in earlier sessions (resume adds to it)
    # sessions killed and then resumed: what each ran after its last boundary is in no record,
    # so `elapsed_ms` is a lower bound (`status`, `explain` and the report show `≥`)
    killed_attempts: int = 0
    # time.time() when this state was saved: the model calls logged after it are not in
    # `cost_usd` (resume adds them; the file's mtime can lag the clock by a tick)
    saved_at: float = 0.0
    status: str = "running"  # running | finished
    ran_on_max_steps: bool = False
    result: dict[str, Any] | None = None  # RunResult.to_json() once finished
    max_steps: int | None = None  # the budget the run started with (a --max-steps override)
    # Where the run's LLM answers come from (`run --replay`, `--cache`): a resume keeps them.
    replay_from: str | None = None
    cache: bool = False
    pid: int | None = None  # the process running it, with its start time (liveness for status)
    pid_start: int | None = None
    # False: the process's SIGTERM does not stop this run (a run in a worker thread, or with
    # handle_signals=False); `stop` from another process asks through the run directory.
    signals: bool = True

    def to_json(self) -> dict[str, Any]:
        """A shallow dict (json.dumps walks the nested values; no deep copy per step)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunState:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class StopSignal:
    """A cooperative stop: checked between steps; `request()` also kills the running action."""

    requested: bool = False
    reason: str = ""
    listeners: list[Callable[[], None]] = field(default_factory=list)

    def request(self, reason: str = "stop requested") -> None:
        if not self.requested:
            self.requested, self.reason = True, reason
        for listener in self.listeners:
            listener()


# Runs a `loop:` state's child to its end: (verdict, capture, next state or None to route it).
SubloopHook = Callable[["Loop", "State", "RunState", "Runtime", "Namespaces"], Verdict]


@dataclass
class Runtime:
    """The IO a run uses. A sub-loop shares it with `depth + 1` and no `save_state`."""

    recorder: Recorder
    actions: ActionRunner
    artifacts_dir: Path
    outputs_dir: Path
    save_state: Callable[[dict[str, Any]], None] | None = None
    llm: LlmServices | None = None
    stop: StopSignal = field(default_factory=StopSignal)
    depth: int = 0
    deadline: float | None = None  # monotonic time the loop must end by (its `timeout`)
    # Monotonic time this loop's `loop.elapsed_ms` counts from: its start, moved back by the
    # time earlier sessions of a resumed run spent (set when `run` starts).
    started: float = 0.0
    run_subloop: SubloopHook | None = None
    # This loop's spend = cost_offset + the LLM services' total, which a resumed run starts
    # from zero and a sub-loop shares with its parent (set when `run` starts).
    cost_offset: float = 0.0
    # The services' total at which this loop, or a loop it runs under, has spent its
    # `max_cost_usd` (set when `run` starts; a child starts from its parent's): a parent's
    # budget ends a child's run at the child's next boundary, not after the child's last step.
    cost_cap: float | None = None

    def sync_cost(self, rs: RunState) -> None:
        """Bring `rs.cost_usd` up to date with what the LLM services have spent."""
        if self.llm is not None:
            rs.cost_usd = self.cost_offset + self.llm.cost_usd


@dataclass(frozen=True)
class StepResult:
    """One executed state: its action's result, verdict, and where it routes (None: nowhere)."""

    result: ActionResult
    verdict: Verdict
    target: str | None
    error: str | None = None
    interrupted: bool = False  # a stop came while the action ran


def run(loop: Loop, rs: RunState, rt: Runtime, *, resumed: bool = False) -> RunResult:
    """Run `loop` from wherever `rs` stands until it finishes; never raises for a bad step.
    A `resumed` run has its `loop_resume` event already: it starts nothing anew, even when it
    was killed inside its first step."""
    started = rt.started = time.monotonic() - rs.elapsed_ms / 1000
    if rt.llm is not None:
        rt.cost_offset = rs.cost_usd - rt.llm.cost_usd
        if loop.max_cost_usd is not None:
            own = loop.max_cost_usd - rt.cost_offset
            rt.cost_cap = own if rt.cost_cap is None else min(own, rt.cost_cap)
    if loop.timeout is not None and rt.deadline is None:
        rt.deadline = started + loop.timeout
    retry = retry_edges(compile_graph(loop))
    if rs.steps == 0 and rs.prev is None and not resumed:
        persist(rs, rt, started)
        rt.recorder.emit(
            "loop_start",
            depth=rt.depth,
            step=0,
            loop=loop.name,
            file=loop.source,
            initial=loop.initial,
            max_steps=loop.max_steps,
            context=rs.context,
            # the limits as this run had them: explain names them, whatever the file says later
            **({"max_cost_usd": loop.max_cost_usd} if loop.max_cost_usd is not None else {}),
            **({"timeout": loop.timeout} if loop.timeout is not None else {}),
        )
    while True:
        state = loop.states[rs.current]
        if state.terminal:
            outcome: Outcome = "failure" if state.failure else "success"
            return _finish(loop, rs, rt, started, outcome, "terminal", terminal=state.name)
        if rs.steps >= loop.max_steps:
            return _finish_budget(loop, rs, rt, started)
        if rt.deadline is not None and time.monotonic() >= rt.deadline:
            return _finish(loop, rs, rt, started, "inconclusive", "timeout")
        if _over_budget(loop, rs, rt):
            # checked after the terminal test: the step that reached success may cost the most
            return _finish(
                loop, rs, rt, started, "inconclusive", "max_cost", error=_whose_budget(loop, rs)
            )
        if rt.stop.requested:
            return _finish(loop, rs, rt, started, "inconclusive", "stopped", error=rt.stop.reason)
        rs.steps += 1
        step = execute_and_evaluate(loop, state, rs, rt)
        if step.interrupted:  # stopped mid-state: not routed; the state runs again on resume
            rs.steps -= 1
            return _finish(loop, rs, rt, started, "inconclusive", "stopped", error=rt.stop.reason)
        if _out_of_time(step.result, rt):
            return _finish(loop, rs, rt, started, "inconclusive", "timeout")
        if step.target is None:
            return _finish(loop, rs, rt, started, "error", "error", error=step.error)
        target = enter(loop, state.name, step.target, rs, rt, retry)
        if target is None:
            reason = f"state {step.target!r} exhausted its retries and has no on_retry_exhausted"
            return _finish(loop, rs, rt, started, "error", "error", error=reason)
        rs.current = target
        persist(rs, rt, started)


def execute_and_evaluate(loop: Loop, state: State, rs: RunState, rt: Runtime) -> StepResult:
    """Run one state's action, judge it, store its capture, and pick its route."""
    result, verdict, stopped = run_state(loop, state, rs, rt)
    if stopped:
        return StepResult(result, verdict, None, interrupted=True)
    if _out_of_time(result, rt):  # the run ends `timeout` here: no state is entered after it
        rt.recorder.emit(
            "route",
            depth=rt.depth,
            step=rs.steps,
            state=state.name,
            verdict=verdict.name,
            target=None,
            timeout=True,
        )
        return StepResult(result, verdict, None)
    target = route_verdict(state, verdict)
    problem = None if target is not None else _unrouted(state, verdict, result)
    rt.recorder.emit(
        "route",
        depth=rt.depth,
        step=rs.steps,
        state=state.name,
        verdict=verdict.name,
        target=target,
        **({"error": problem} if problem else {}),
    )
    return StepResult(result, verdict, target, problem)


def _over_budget(loop: Loop, rs: RunState, rt: Runtime) -> bool:
    """This loop's spend has reached its `max_cost_usd`, or the run's has reached that of a
    loop this one runs under."""
    if loop.max_cost_usd is not None and rs.cost_usd >= loop.max_cost_usd - COST_EPSILON:
        return True
    return (
        rt.cost_cap is not None
        and rt.llm is not None
        and rt.llm.cost_usd >= rt.cost_cap - COST_EPSILON
    )


def _whose_budget(loop: Loop, rs: RunState) -> str | None:
    """None when this loop spent its own `max_cost_usd`; else which budget ended it."""
    if loop.max_cost_usd is not None and rs.cost_usd >= loop.max_cost_usd - COST_EPSILON:
        return None
    return "the max_cost_usd of a loop it runs under"


def _out_of_time(result: ActionResult, rt: Runtime) -> bool:
    """The action was cut short by the loop's own timeout (its time is up, not the state's)."""
    return result.timed_out and rt.deadline is not None and time.monotonic() >= rt.deadline


# Evaluators that may wait (a model, a test command, git): the step's events are written before
# they start. The others judge in microseconds, and the boundary writes the events soon after.
_WAITING_EVALUATORS = frozenset({"llm_structured", "assessment", "diff_stall"})


def run_state(
    loop: Loop, state: State, rs: RunState, rt: Runtime
) -> tuple[ActionResult, Verdict, bool]:
    """Enter `state`, run its action, judge it and remember the result.

    The flag is True when a stop arrived during the action (the result is then not judged) or
    during its judging (the verdict is not kept: a judge abandoned by the stop said nothing).
    """
    rt.recorder.emit("state_enter", depth=rt.depth, step=rs.steps, state=state.name)
    if state.action is None:  # no action_start will write it before a judge or sub-loop waits
        rt.recorder.flush()
    ns = Namespaces(loop, rs, rt, state)
    before = None
    if state.evaluate is not None and state.evaluate.type == "assessment":
        from engine.runtime.assessment import before_action

        before = before_action(loop, state, rt)  # what modified_files is measured against
    result, verdict = execute(loop, state, rs, rt, ns)
    if rt.stop.requested:
        return result, Verdict("error", {"reason": "stopped"}), True
    if verdict is None:
        if _evaluator_name(state) in _WAITING_EVALUATORS:  # its events go out before it waits
            rt.recorder.flush()
        verdict = evaluate(loop, state, result, rs, rt, ns, before=before)
        if rt.stop.requested:  # stopped while judged: a killed test is no verdict to route on
            return result, Verdict("error", {"reason": "stopped"}), True
    rt.recorder.emit(
        "evaluate",
        depth=rt.depth,
        step=rs.steps,
        state=state.name,
        evaluator=_evaluator_name(state),
        verdict=verdict.name,
        details=verdict.details,
    )
    remember(state, result, verdict, rs, rt)
    return result, verdict, False


def execute(
    loop: Loop, state: State, rs: RunState, rt: Runtime, ns: Namespaces
) -> tuple[ActionResult, Verdict | None]:
    """Run the state's action (shell, prompt, sub-loop or none). A verdict here means the
    action never ran properly (missing interpolation value, sub-loop outcome)."""
    if state.is_subloop:
        if rt.run_subloop is None:
            return ActionResult(exit_code=None), error("sub-loops are not available in this run")
        return ActionResult(), rt.run_subloop(loop, state, rs, rt, ns)
    if state.action is None:
        return ActionResult(), None
    timeout = _state_timeout(loop, state, rt)
    runner: str | None = None
    try:
        if state.action_type == "prompt":
            text = ns.render_text(state.action)
            runner = _runner(loop, state, ns)
        else:
            text = ns.render_shell(state.action)
    except InterpolationError as exc:  # judged as error, never a crash
        return ActionResult(exit_code=None), _interpolation_error(exc)
    rt.recorder.emit(
        "action_start",
        depth=rt.depth,
        step=rs.steps,
        state=state.name,
        action_type=state.action_type,
        action=text[:PREVIEW_LIMIT],
        timeout=timeout,
    )
    if rt.stop.requested:  # asked while a listener held the run: the action never starts
        result = ActionResult(exit_code=None)
    elif state.action_type == "prompt":
        if rt.llm is None:
            result = ActionResult(exit_code=None, spawn_error="no LLM services in this run")
        else:
            llm = rt.llm.bind(depth=rt.depth, step=rs.steps)
            # A `cmd:` agent gets the actions' environment (LL_RUN_ID, the lease) and directory.
            env = {**rt.actions.env, "LL_STATE": state.name}
            stop = rt.stop
            process = ProcessSetting(env=env, cwd=rt.actions.cwd, stopped=lambda: stop.requested)
            result = llm.run_prompt(
                text, state=state, loop=loop, timeout=timeout, runner=runner, process=process
            )
            rt.sync_cost(rs)
    else:
        env = ns.shell_env(state.action)
        result = rt.actions.run_shell(text, state=state.name, timeout=timeout, env=env)
    rt.recorder.emit(
        "action_complete",
        depth=rt.depth,
        step=rs.steps,
        state=state.name,
        exit_code=result.exit_code,
        duration_ms=result.duration_ms,
        timed_out=result.timed_out,
        signal=result.signal,
        spawn_error=result.spawn_error,
        output=result.output[:PREVIEW_LIMIT],
        # the preview is the start: a progress line quoting its last line quoted a fragment
        **output_tail(result.output),
        output_path=result.output_path,
        stderr=result.stderr[-PREVIEW_LIMIT:],  # the end: where a failure says why
        # An agent CLI's own spend is in no `llm_call` event: without it `explain`, the report
        # and the progress line left it out of the state's (and the run's) cost.
        **({"agent_cost_usd": result.cost_usd} if result.trace is not None else {}),
        # an agent CLI that reported no cost: its spend is in no total and no max_cost_usd
        **({} if result.cost_known else {"agent_cost_known": False}),
    )
    if not result.cost_known:
        note_cost_unknown(rs, state.name)
    return result, None


def output_tail(output: str) -> dict[str, str]:
    """`output_tail` of an `action_complete` event: the end of an output its preview does not
    reach (the last line a progress line quotes), else nothing."""
    return {"output_tail": output[-TAIL_LIMIT:]} if len(output) > PREVIEW_LIMIT else {}


def note_cost_unknown(rs: RunState, where: str) -> None:
    """Record that the spend of `where` (a state, or "state > inner" in a child) is unknown."""
    if where not in rs.cost_unknown_in:
        rs.cost_unknown_in.append(where)


def evaluate(
    loop: Loop,
    state: State,
    result: ActionResult,
    rs: RunState,
    rt: Runtime,
    ns: Namespaces,
    *,
    before: Any = None,
) -> Verdict:
    """The verdict for a result: crashed → error; then the state's evaluator (or its default)."""
    if result.crashed:
        return crash_verdict(result)
    spec = state.evaluate
    if spec is None:
        if state.next is not None or not (state.routes or state.route):
            return step_verdict(result)
        if state.action_type == "prompt":
            spec = Evaluate(type="llm_structured", implicit=True)
        else:
            spec = Evaluate(type="exit_code")
    if spec.type == "diff_stall":  # the state's own action (often a placeholder) must work first
        from engine.runtime.stall import diff_stall

        if result.exit_code and not spec.ignore_exit_code:
            return step_verdict(result)
        return diff_stall(spec, state, loop, rs, rt, ns)
    # exit_code never reads the text, nor does any evaluator of a failed action (error)
    skips_text = spec.type == "exit_code" or (result.exit_code != 0 and not spec.ignore_exit_code)
    written = spec.prompt  # as in the file: a `<FILL: ...>` there is a criterion left to write
    try:
        if spec.source is None:
            whole = result.output if skips_text else _whole_output(result)
            if isinstance(whole, Verdict):
                return whole
            text = whole
        else:
            text = ns.render_text(spec.source)
        target = spec.target
        if isinstance(target, str):
            target = ns.typed(target)
        if spec.prompt is not None:  # the judge sees the prompt rendered, like any action
            spec = replace(spec, prompt=ns.render_text(spec.prompt))
    except InterpolationError as exc:
        return _interpolation_error(exc)
    if spec.type == "assessment":
        if result.exit_code != 0 and not spec.ignore_exit_code:
            return step_verdict(result)
        from engine.runtime.assessment import assess_state

        return assess_state(loop, state, spec, result, text, rs, rt, ns, before)
    if spec.type == "llm_structured":
        if result.exit_code != 0 and not spec.ignore_exit_code:
            return step_verdict(result)
        if rt.llm is None:
            return error("no LLM services in this run")
        from engine.llm.judge import unfilled_verdict

        unfilled = unfilled_verdict(written)
        if unfilled is not None:
            return unfilled
        llm = rt.llm.bind(depth=rt.depth, step=rs.steps)
        verdict = llm.judge(spec, text, state=state, loop=loop)
        rt.sync_cost(rs)
        return verdict
    previous: Any = None
    if spec.type == "convergence":
        previous = _previous_value(spec, state, rs, ns)
    stalled = rs.stalls.get(state.name, 0)
    verdict = judge(spec, Judged(text, result, target=target, previous=previous, stalled=stalled))
    if spec.type == "convergence" and "value" in verdict.details:
        rs.last_values[state.name] = verdict.details["value"]
        rs.stalls[state.name] = verdict.details.get("stalled", 0)
    return verdict


def remember(
    state: State, result: ActionResult, verdict: Verdict, rs: RunState, rt: Runtime
) -> None:
    """Store the capture (if any) and `prev`, with outputs bounded in memory."""
    output, output_path = _bounded(result.output, result.output_path, state, rs, rt)
    stderr, stderr_path = _bounded_end(result.stderr, result.stderr_path, state, rs, rt)
    name = state.capture_name  # an assessment is always captured: its judges' results
    if name and not state.is_subloop:
        rs.captured[name] = {
            "output": output,
            "stderr": stderr,
            "exit_code": result.exit_code,
            "duration_ms": result.duration_ms,
            "timed_out": result.timed_out,
            "verdict": verdict.name,
            "details": dict(verdict.details),
            **({"output_path": output_path} if output_path else {}),
            **({"stderr_path": stderr_path} if stderr_path else {}),
            **_judged(verdict),
            **_traced(result),
        }
    rs.prev = {
        "state": state.name,
        "output": output,
        "exit_code": result.exit_code,
        "verdict": verdict.name,
        "details": dict(verdict.details),
        **({"output_path": output_path} if output_path else {}),
    }


def enter(
    loop: Loop,
    source: str,
    target: str,
    rs: RunState,
    rt: Runtime,
    retry: frozenset[tuple[str, str]],
) -> str | None:
    """Apply the retry rule to entering `target` from `source`; the state actually entered.

    An entry along a retry (back) edge counts; any other entry resets the count. When the count
    would exceed `max_retries`, `on_retry_exhausted` is entered instead (None when unset).
    """
    for _ in range(len(loop.states) + 1):
        state = loop.states.get(target)
        if state is None:
            return target
        if (source, target) not in retry:
            rs.retries.pop(target, None)
            return target
        count = rs.retries.get(target, 0) + 1
        limit = state.max_retries
        exhausted = limit is not None and count > limit
        if limit is not None:
            rt.recorder.emit(
                "retry",
                depth=rt.depth,
                step=rs.steps,
                state=target,
                retries=count,
                max_retries=limit,
                exhausted=exhausted,
                **({"target": state.retry_exhausted_target} if exhausted else {}),
            )
        if not exhausted:
            rs.retries[target] = count
            return target
        rs.retries.pop(target, None)
        if state.retry_exhausted_target is None:
            return None
        source, target = target, state.retry_exhausted_target
    return target


def persist(rs: RunState, rt: Runtime, started: float) -> None:
    """Write state.json (atomically) at a state boundary."""
    if rt.save_state is not None:
        rs.elapsed_ms = int((time.monotonic() - started) * 1000)
        rs.saved_at = time.time()
        rt.save_state(rs.to_json())


class Namespaces:
    """The interpolation namespaces of one step, built only when a template needs them."""

    def __init__(self, loop: Loop, rs: RunState, rt: Runtime, state: State) -> None:
        self.loop, self.rs, self.rt, self.state = loop, rs, rt, state
        self._ns: dict[str, Any] | None = None

    def mapping(self) -> dict[str, Any]:
        if self._ns is None:
            from engine.shell.interpolate import EnvVars

            loop, rs = self.loop, self.rs
            self._ns = {
                "context": rs.context,
                "param": {k: rs.context[k] for k in loop.parameters if k in rs.context},
                "captured": {k: _read_back(v, f"captured.{k}") for k, v in rs.captured.items()},
                "prev": _read_back(rs.prev or {}, "prev"),
                "state": {
                    "name": self.state.name,
                    "step": rs.steps,
                    "retries": rs.retries.get(self.state.name, 0),
                },
                "loop": {
                    "name": loop.name,
                    "max_steps": loop.max_steps,
                    "steps": rs.steps,
                    "elapsed_ms": int((time.monotonic() - self.rt.started) * 1000),
                },
                "run": {
                    "id": rs.run_id,
                    "dir": str(self.rt.artifacts_dir),
                    "started_at": rs.started_at,
                },
                "env": EnvVars(self.rt.actions.env),  # the actions' environment, not ours
            }
        return self._ns

    def render_shell(self, template: str) -> str:
        if "${" not in template:
            return template
        from engine.shell.interpolate import ValueTypes, render_shell

        return render_shell(template, self.mapping(), ValueTypes.of(self.loop.parameters))

    def shell_env(self, template: str) -> dict[str, str]:
        """The values a shell action interpolates or names, as `LL_CONTEXT_name`-style
        variables."""
        if "${" not in template and "LL_" not in template:
            return {}
        from engine.shell.interpolate import shell_env

        return shell_env(template, self.mapping())

    def render_text(self, template: str) -> str:
        if "${" not in template:
            return template
        from engine.shell.interpolate import render_text

        return render_text(template, self.mapping())

    def typed(self, template: str) -> Any:
        """A template that is one `${...}` keeps its value's JSON type (`target: ${context.n}`
        with n = 2 is the number 2, as `output_json` compares it with the document's 2, not the
        text "2"); any other template renders to text."""
        expression = lone_expression(template)
        if expression is not None:
            value = self.value(expression)
            if isinstance(value, str) or _is_json(value):
                return value
        return self.render_text(template)

    def value(self, expression: str) -> Any:
        from engine.shell.interpolate import evaluate

        return evaluate(expression, self.mapping())


def _runner(loop: Loop, state: State, ns: Namespaces) -> str | None:
    """A `cmd:` runner with `${...}` rendered as the shell command line it is (None: as set)."""
    spec = state.runner or loop.llm.runner
    if spec is None or "${" not in spec or not spec.startswith("cmd:"):
        return None
    return "cmd:" + ns.render_shell(spec.removeprefix("cmd:"))


def _finish_budget(loop: Loop, rs: RunState, rt: Runtime, started: float) -> RunResult:
    """Steps exhausted: run `on_max_steps` once (not counted, not routed), then finish."""
    final = rs.current
    if loop.on_max_steps is not None and not rs.ran_on_max_steps:
        final = loop.on_max_steps
        state = loop.states.get(final)
        if state is not None and not state.terminal:
            _, _, stopped = run_state(loop, state, rs, rt)
            if stopped:  # a stop, not the budget, ended the run; on resume the state runs again
                return _finish(
                    loop, rs, rt, started, "inconclusive", "stopped", error=rt.stop.reason
                )
        rs.ran_on_max_steps = True
        rs.current = final
    return _finish(loop, rs, rt, started, "inconclusive", "max_steps")


def _finish(
    loop: Loop,
    rs: RunState,
    rt: Runtime,
    started: float,
    outcome: Outcome,
    terminated_by: TerminatedBy,
    *,
    terminal: str | None = None,
    error: str | None = None,
) -> RunResult:
    """End the run: outputs, the `loop_complete` event, and the final state.json."""
    rt.sync_cost(rs)
    outputs = _outputs(loop, rs, rt) if terminal is not None and loop.outputs else {}
    duration_ms = int((time.monotonic() - started) * 1000)
    result = RunResult(
        run_id=rs.run_id,
        loop=loop.name,
        final_state=rs.current,
        outcome=outcome,
        terminated_by=terminated_by,
        steps=rs.steps,
        duration_ms=duration_ms,
        cost_usd=rs.cost_usd,
        error=error,
        outputs=outputs,
        terminal=terminal,
        cost_unknown_in=tuple(rs.cost_unknown_in),
    )
    rt.recorder.emit(
        "loop_complete",
        depth=rt.depth,
        step=rs.steps,
        **result.to_json(),
    )
    # A stopped run stays resumable; every other ending is final.
    rs.status = "stopped" if terminated_by == "stopped" else "finished"
    rs.result = result.to_json()
    persist(rs, rt, started)
    return result


def _outputs(loop: Loop, rs: RunState, rt: Runtime) -> dict[str, Any]:
    """Evaluate the loop's `outputs:` in its final namespaces (a failing one says why)."""
    ns = Namespaces(loop, rs, rt, loop.states[rs.current])
    values: dict[str, Any] = {}
    for name, template in loop.outputs.items():
        expression = lone_expression(template)
        try:
            if expression is not None:
                values[name] = ns.value(expression)
            else:
                values[name] = ns.render_text(template)
            if not _json_finite(values[name]):
                raise InterpolationError(
                    expression or template.strip(),
                    "its value is not a finite number (NaN or infinity), which JSON cannot carry",
                )
        except InterpolationError as exc:
            values[name] = None
            rt.recorder.emit(
                "output_error", depth=rt.depth, step=rs.steps, output=name, error=str(exc)
            )
    return values


def _is_json(value: Any) -> bool:
    """`value` is made of JSON's own types (a template's value that can stand for a document's)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    return False


def _json_finite(value: Any) -> bool:
    """False when `value` holds a NaN or an infinity: `run --json` printed them as `NaN`, which
    no strict JSON reader (jq, JSON.parse) accepts, and a parent's capture took them in."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_json_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_json_finite(v) for v in value)
    return True


def _state_timeout(loop: Loop, state: State, rt: Runtime) -> float | None:
    """The state's timeout (else the loop default), clamped to the loop's remaining time."""
    own = state.timeout if state.timeout is not None else loop.default_timeout
    if rt.deadline is None:
        return own
    remaining = max(0.0, rt.deadline - time.monotonic())
    return remaining if own is None else min(own, remaining)


def _previous_value(spec: Evaluate, state: State, rs: RunState, ns: Namespaces) -> Any:
    """`previous` rendered (a missing value means none yet), else this state's last value."""
    if spec.previous is None:
        return rs.last_values.get(state.name)
    try:
        return ns.render_text(spec.previous)
    except InterpolationError:  # a missing value: no previous value yet
        return None


def _bounded(
    output: str, output_path: str | None, state: State, rs: RunState, rt: Runtime
) -> tuple[str, str | None]:
    """An output for captures/prev (trailing newline stripped, at most CAPTURE_LIMIT chars)
    and the file holding it whole when it was cut."""
    text = _without_line_end(output)
    if len(text) > CAPTURE_LIMIT:
        output_path = output_path or _keep_whole(output, "out", state, rs, rt)
        text = text[:CAPTURE_LIMIT]
    return text, output_path


def _without_line_end(text: str) -> str:
    """`text` without its trailing newline: `\n`, or `\r\n` from a program that ends its lines
    so (`printf 'yes\r\n'` is captured `yes`, not `yes\r`, which no `==` would match)."""
    if text.endswith("\r\n"):
        return text[:-2]
    return text.removesuffix("\n")


def _bounded_end(
    stderr: str, stderr_path: str | None, state: State, rs: RunState, rt: Runtime
) -> tuple[str, str | None]:
    """Stderr for a capture: its last CAPTURE_LIMIT chars (where a failure says why) and the
    file holding it whole when it was cut."""
    text = stderr.rstrip("\r\n")
    if len(text) > CAPTURE_LIMIT or stderr_path is not None:
        stderr_path = stderr_path or _keep_whole(stderr, "err", state, rs, rt)
        text = text[-CAPTURE_LIMIT:]
    return text, stderr_path


def _keep_whole(text: str, suffix: str, state: State, rs: RunState, rt: Runtime) -> str:
    """Write a stream too long for a capture to the run's outputs/; its path."""
    path = ensure_dir(rt.outputs_dir) / f"{rs.steps:06d}-{state.name}.{suffix}"
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)  # never through a link
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return str(path)


class _WholeOutput(Mapping[str, Any]):
    """A capture (or `prev`) whose `output` or `stderr` was cut to `CAPTURE_LIMIT` characters
    to keep the run's memory and state.json small: interpolating it reads the whole stream back
    from its file, as an evaluator does. `${captured.log.output}` gave the first 64 Ki
    characters of a 200 KB output, silently, to the next action or prompt."""

    def __init__(self, entry: Mapping[str, Any], name: str) -> None:
        self._entry, self._name = entry, name

    def __getitem__(self, key: str) -> Any:
        path_key = _WHOLE_STREAMS.get(key)
        if path_key is None or not _was_cut(self._entry, key):
            return self._entry[key]
        saved = self._entry[path_key]
        if not isinstance(saved, str):  # a state.json edited by hand, or from elsewhere
            raise InterpolationError(
                f"{self._name}.{key}",
                f"its whole {key} is in no file: {path_key} is {saved!r}, not a path",
            )
        path = Path(saved)
        try:
            text = _read_whole(path)
            if isinstance(text, str):
                return _without_line_end(text) if key == "output" else text.rstrip("\r\n")
            reason = f"the {key} is {text:,} bytes, more than the {WHOLE_OUTPUT_LIMIT:,} read back"
        except OSError as exc:
            reason = f"its whole {key} cannot be read from {path}: {exc.strerror or exc}"
        raise InterpolationError(
            f"{self._name}.{key}",
            f"{reason}; use the file instead: ${{{self._name}.{path_key}}}",
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self._entry)

    def __len__(self) -> int:
        return len(self._entry)


# the text kept in a capture when it is short, and the file holding it whole (a sub-loop
# capture's `events` keeps the end of the child's event log: `engine.runtime.subloop.events_of`)
_WHOLE_STREAMS = {"output": "output_path", "stderr": "stderr_path", "events": "events_path"}


def _was_cut(entry: Mapping[str, Any], key: str) -> bool:
    text = entry.get(key)
    return (
        isinstance(text, str)
        and len(text) >= CAPTURE_LIMIT
        and bool(entry.get(_WHOLE_STREAMS[key]))
    )


def _read_back(entry: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """`entry` as interpolation sees it: whole, or read back where a stream of it was cut."""
    if any(_was_cut(entry, key) for key in _WHOLE_STREAMS):
        return _WholeOutput(entry, name)
    return entry


def _whole_output(result: ActionResult) -> str | Verdict:
    """The action's whole stdout for its evaluator: the runner keeps only the first MiB in
    memory and spills the rest to a file, but `output_contains`, a JSON parse or a judge reading
    a test log's summary need all of it (the end most of all). Beyond `WHOLE_OUTPUT_LIMIT` an
    honest error beats a verdict on part of the output."""
    if result.output_path is None:
        return result.output
    path = Path(result.output_path)
    try:
        text = _read_whole(path)
    except OSError as exc:
        return error(f"cannot read the action's output from {path}: {exc.strerror or exc}")
    if isinstance(text, str):
        return text
    return error(
        f"the output is {text:,} bytes, more than the {WHOLE_OUTPUT_LIMIT:,} an "
        f"evaluator reads (all of it is in {path}); make the action print less, e.g. "
        "`... | tail -c 1000000`"
    )


def _judged(verdict: Verdict) -> dict[str, Any]:
    """An assessment's judges in its capture: `captured.<state>.judges.<name>`, the failing
    ones lowest-scoring first, and their feedback text (what a fix prompt reads)."""
    details = verdict.details
    if "judges" not in details:
        return {}
    return {key: details.get(key) for key in ("judges", "failing", "feedback")}


def _traced(result: ActionResult) -> dict[str, Any]:
    """What an agent CLI's event stream told about the work (the stream itself is not kept)."""
    trace = result.trace
    if not trace:
        return {}
    calls = [{"name": c.get("name"), "input": c.get("input")} for c in trace.get("tool_calls", [])]
    return {
        "cost_usd": trace.get("cost_usd", 0.0),
        "num_turns": trace.get("num_turns", 0),
        "token_usage": trace.get("token_usage", {}),
        "tool_calls": calls[:200],
    }


def _interpolation_error(exc: InterpolationError) -> Verdict:
    """A missing value or bad expression: verdict error naming the expression."""
    return Verdict("error", {"reason": exc.message, "expression": "${" + exc.expression + "}"})


_CHILD_CHAIN = re.compile(
    r"^state '[^']*' produced verdict 'error', which has no route: "
    r"its loop ('[^']*') failed(?: \(inside ([^)]*)\))?: "
)


_MORE = re.compile(r"… (\d+) more")


def _child_error(details: Mapping[str, Any]) -> str | None:
    """Why a sub-loop ended in error: the child's own message holds the cause (a failed
    action, a loop that calls itself), which "verdict 'error'" alone hides. A child that ended
    on its own child's error passes that cause up once, not wrapped once per level, with the
    loops it went through (`inside 'inner'`): the failing state is in the innermost."""
    error = details.get("error")
    if not isinstance(error, str) or not error:
        return None
    loop = details.get("loop")
    chain = _CHILD_CHAIN.match(error)
    if chain is None:
        return f"its loop {loop!r} failed: {error}"
    names: list[str | None] = [chain.group(1)]  # None: a loop a deeper level left unnamed
    for name in chain.group(2).split(" → ") if chain.group(2) else ():
        more = _MORE.fullmatch(name)
        names += [None] * int(more.group(1)) if more else [name]
    if len(names) > 3:  # a loop calling itself: the first, how many between, the last
        names = [names[0], f"… {len(names) - 2} more", names[-1]]
    inside = " → ".join(name or "…" for name in names)
    return f"its loop {loop!r} failed (inside {inside}): {error[chain.end() :]}"


def _unrouted(state: State, verdict: Verdict, result: ActionResult) -> str:
    """Why the run ends: a failed `next:` step, or a verdict with no route."""
    if verdict.name == "error" and state.next is not None and state.evaluate is None:
        why = verdict.details.get("reason") or result.failure_reason()
        return f"state {state.name!r} failed ({why}) and has no on_error route"
    reason = verdict.details.get("reason")
    failed = verdict.name == "error" and not reason
    child = _child_error(verdict.details) if failed and state.is_subloop else None
    if child is not None:
        return f"state {state.name!r} produced verdict 'error', which has no route: {child}"
    if failed and isinstance(verdict.details.get("error"), str):
        reason = verdict.details["error"]  # a judge's own failure (its call, its answer)
    suffix = f" ({reason})" if verdict.name == "error" and reason else ""
    return f"state {state.name!r} produced verdict {verdict.name!r}{suffix}, which has no route"


def _evaluator_name(state: State) -> str:
    if state.evaluate is not None:
        return state.evaluate.type
    if state.is_subloop:
        return "subloop"
    if state.next is not None or not (state.routes or state.route):
        return "step"
    return "llm_structured" if state.action_type == "prompt" else "exit_code"
