"""Sub-loops (docs/format.md, "Sub-loops"): a state with `loop:` runs another loop in-process and
routes on its end.

The interpreter calls `run_subloop(...)` for a state with `loop:` and hands over a `RunChild`
callable that runs a loaded loop to its end; everything else happens here: resolving the child's
name (relative to the parent file, then `.loops/`, then the built-ins), loading it through the
caller's `ChildLoader` (which also lints it: the runtime does not import lint), binding `with:`
to its `parameters` (types, required, defaults, enum), clamping its timeout to the parent's
remaining time, bounding the nesting depth, and turning the child's `RunResult` into the parent's
verdict and capture. A child that cannot be found, loaded or bound yields verdict `error` with the
reason in the details; it never crashes the parent.

A child keeps its own `state.json` in its directory (`children/<state>-<n>/`), written at each
of its boundaries: a run that died or was stopped inside a child continues that child from its
last boundary on resume (`unfinished_child`), instead of starting it afresh.

Verdicts: yes (success terminal), no (failure terminal, step or cost budget exhausted, timeout),
error (the child could not start, errored, or was stopped). `on_terminal` routes on the child's
terminal name before the verdict is looked at (`route_subloop`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.graph.routing import route_for
from engine.load.locate import near_loop_name, not_a_file
from engine.load.project import ensure_dir, open_file
from engine.load.resources import builtin_loops_dir
from engine.model.errors import InterpolationError, LoopError
from engine.model.expressions import lone_expression
from engine.model.loop import CURRENT, Loop, State
from engine.model.params import ParameterError, coerce
from engine.model.ports import Recorder, RunResult, Verdict
from engine.runtime.runstore import RunStore, now_iso, read_state, saved_at

if TYPE_CHECKING:
    from engine.runtime.interpreter import Namespaces, RunState, Runtime, SubloopHook

MAX_DEPTH = 8
_SUFFIXES = (".yaml", ".yml")


class SubloopError(LoopError):
    """A sub-loop could not be started: not found, invalid, bad `with:` values, too deep."""

    code = "SUBLOOP"


@dataclass(frozen=True)
class ChildRequest:
    """Everything the interpreter needs to run one child loop in-process."""

    loop: Loop
    context: Mapping[str, Any]  # the child's `context` defaults with the bound parameters
    timeout: float | None  # the child's own timeout, clamped to the parent's remaining time
    depth: int  # the child's depth: 1 for a child of the top-level run
    run_dir: Path  # `<parent run dir>/children/<state>-<n>/`
    state: str  # the parent state that started it
    run_id: str  # the parent's run id: one run, one event log (child events have `depth`)
    resume: Mapping[str, Any] | None = None  # the child's saved state.json when continuing it


RunChild = Callable[[ChildRequest], RunResult]

# Loads a child loop file and holds it to the bar of a top-level run (schema and lint), raising
# a `LoopError` that says why when it falls short. The caller supplies it: checking a loop is
# lint's job, and the runtime does not import lint (docs/architecture.md, "Layers").
ChildLoader = Callable[[Path], Loop]


@dataclass(frozen=True)
class SubloopOutcome:
    """What the parent state produced: a verdict for routing and the capture to store."""

    verdict: Verdict
    capture: Mapping[str, Any]
    terminal: str | None = None
    result: RunResult | None = None
    cost_usd: float = 0.0
    details: Mapping[str, Any] = field(default_factory=dict)


# --- resolution and loading ------------------------------------------------------------------


def resolve_child(ref: str, parent_source: str, project_root: Path) -> Path:
    """The file a `loop:` reference names, looked up like the CLI does (raises SubloopError).

    A path (has a `/` or a YAML suffix) is relative to the parent file's directory. A name is
    looked for next to the parent file, then in `<project>/.loops/`, then in the built-ins.
    """
    ref = ref.strip()
    if not ref:
        raise SubloopError("the `loop:` reference is empty", hint="name a loop or a .yaml path")
    parent_dir = Path(parent_source).resolve().parent if parent_source else project_root
    candidate = Path(ref).expanduser()
    if candidate.suffix in _SUFFIXES or "/" in ref:
        path = candidate if candidate.is_absolute() else parent_dir / candidate
        if path.is_file():
            return path
        there = not_a_file(path)
        # `loop: sub/child`: a path gets no suffix added, but the file may be there with one
        found = [end for end in _SUFFIXES if Path(f"{path}{end}").is_file()]
        meant = ref + found[0] if found and not candidate.suffix else None
        raise SubloopError(
            f"{path} is {there}, not a loop file"
            if there
            else f"no loop file at {path}" + (f" (did you mean {meant}?)" if meant else ""),
            hint="a `loop:` path is relative to the file of the loop that calls it",
        )
    folders = (parent_dir, project_root / ".loops", builtin_loops_dir())
    for folder in folders:
        for suffix in _SUFFIXES:
            path = folder / f"{ref}{suffix}"
            if path.is_file():
                return path
    raise SubloopError(
        f"no loop named {ref!r} next to the parent loop, in .loops/ or in the built-ins"
        + near_loop_name(ref, folders),
        hint="check the name with `ll-loop list`, or give a path relative to the parent file",
    )


def static_family(loop: Loop, project_root: Path, load: ChildLoader) -> list[Loop]:
    """`loop` and every descendant its `loop:` states name literally (a `${...}` reference is
    only known at run time), each once, for checks that must cover the whole run before it
    starts. A child that cannot be found or loaded is left out: lint and the run report it."""
    family: list[Loop] = [loop]
    seen = {str(Path(loop.source).resolve()) if loop.source else loop.name}
    for parent in family:  # grows while it is walked: breadth first, cycles cut by `seen`
        for state in parent.states.values():
            if state.loop is None or "${" in state.loop:
                continue
            try:
                path = resolve_child(state.loop, parent.source, project_root)
                key = str(path.resolve())
                if key in seen:
                    continue
                seen.add(key)
                family.append(load(path))
            except (LoopError, OSError):
                continue
    return family


def chooses_child_at_run_time(loop: Loop) -> bool:
    """`loop` has a `loop: ${...}` state: which loop it runs, and whether that calls an LLM, is
    only known at run time."""
    return any(s.loop is not None and "${" in s.loop for s in loop.states.values())


# --- parameters ------------------------------------------------------------------------------


INPUT_KEY = "input"  # a child's INPUT: `with: {input: ...}` needs no declaration


def bind_parameters(child: Loop, values: Mapping[str, Any]) -> dict[str, Any]:
    """The child's context: its `context` defaults, then defaults and `with:` values of params.

    Strings are coerced where the type asks for it (`"3"` for an integer), because `with:` values
    are often interpolated from text output; anything else that does not fit is an error.
    `input` is accepted even when the child does not declare it: it is the child's INPUT, the
    `context.input` that `ll-loop run CHILD INPUT` would give it.
    """
    unknown = sorted(set(values) - set(child.parameters) - {INPUT_KEY})
    if unknown:
        declared = ", ".join(sorted(child.parameters)) or "none"
        raise SubloopError(
            f"loop {child.name!r} has no parameter {unknown[0]!r} (declared: {declared})",
            hint="pass only declared parameters in `with:`, or declare it under `parameters:`",
        )
    bound = dict(child.context)
    target = child.input_key or INPUT_KEY
    if INPUT_KEY in values and target != INPUT_KEY and target not in values:
        values = {**values, target: values[INPUT_KEY]}  # the child's INPUT is its input_key
    elif INPUT_KEY in values and INPUT_KEY not in child.parameters:
        bound[INPUT_KEY] = values[INPUT_KEY]
    for name, param in child.parameters.items():
        if name in values:
            try:
                bound[name] = coerce(param, values[name], child.name)
            except ParameterError as exc:
                raise SubloopError(exc.message, hint=exc.hint) from None
        elif param.has_default:
            bound[name] = param.default
        elif param.required:
            raise SubloopError(
                f"loop {child.name!r} requires parameter {name!r}, and `with:` does not give it",
                hint=f"add `{name}: ...` under the state's `with:`",
            )
    return bound


def check_command_bindings(state: State, parent: Loop, child: Loop) -> None:
    """Refuse a `with:` value that hands text (a capture, the previous output, a string) to a
    child parameter declared `type: command`: the child would run it as code."""
    from engine.shell.interpolate import ValueTypes, undeclared_code  # only loops with `loop:`

    types = ValueTypes.of(parent.parameters)
    for name, value in (state.with_ or {}).items():
        param = child.parameters.get(name)
        if param is None or param.type != "command":
            continue
        found = undeclared_code(value, types)
        if found is not None:
            raise SubloopError(
                f"state {state.name!r} binds ${{{found}}} to {name!r}, a `type: command` "
                f"parameter of loop {child.name!r}, which runs it as code; only a command this "
                "loop's caller declared may go there",
                hint="declare a `type: command` parameter in this loop and pass it on, or hand "
                "the output to the child as a plain string parameter",
            )


# --- results ---------------------------------------------------------------------------------


def capture_of(result: RunResult, child_dir: Path | None = None) -> dict[str, Any]:
    """The parent's `captured.<name>` for a child that ran (docs/format.md, "Sub-loops"); with
    `child_dir`, its `events` too (`events_of`)."""
    return {
        "terminal": result.terminal,
        "outcome": result.outcome,
        "terminated_by": result.terminated_by,
        "steps": result.steps,
        "outputs": dict(result.outputs),
        **({} if child_dir is None else events_of(child_dir)),
    }


def events_of(child_dir: Path) -> dict[str, Any]:
    """`events` of a sub-loop capture: the child's event log (`<child dir>/events.jsonl`, JSONL,
    every event of the child's run and of its own children, a resumed child's whole log) and
    `events_path`, that file. Bounded as an action's stderr is: the capture (and state.json)
    keeps its last `CAPTURE_LIMIT` characters, where the child's end is, and interpolating
    `${captured.C.events}` reads the whole file back (`_WholeOutput`)."""
    from engine.runtime.interpreter import CAPTURE_LIMIT

    path = child_dir / "events.jsonl"
    try:  # never through a link planted in the run directory
        with os.fdopen(open_file(path, os.O_RDONLY), "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - 4 * CAPTURE_LIMIT))  # at most 4 bytes a character
            tail = handle.read().decode("utf-8", errors="replace")
    except (OSError, LoopError):  # no log: a child that ended before its first event
        return {"events": "", "events_path": str(path)}
    return {"events": tail.rstrip("\r\n")[-CAPTURE_LIMIT:], "events_path": str(path)}


def verdict_of(result: RunResult) -> Verdict:
    """yes for a success terminal; no for a failure terminal or an exhausted budget; else error."""
    details: dict[str, Any] = {
        "loop": result.loop,
        "terminal": result.terminal,
        "terminated_by": result.terminated_by,
        "steps": result.steps,
    }
    if result.error:
        details["error"] = result.error
    if result.terminated_by == "terminal":
        return Verdict("yes" if result.outcome == "success" else "no", details)
    if result.terminated_by in {"max_steps", "timeout", "max_cost"}:
        return Verdict("no", details)
    return Verdict("error", details)


def failed_start(reason: str, *, loop_ref: str) -> SubloopOutcome:
    """The outcome of a child that never ran: verdict error, a capture that says so."""
    capture: dict[str, Any] = {
        "terminal": None,
        "outcome": "error",
        "terminated_by": "error",
        "steps": 0,
        "outputs": {},
        "events": "",  # it never ran: no events, and no file of them
        "events_path": "",
    }
    details = {"loop": loop_ref, "error": reason}
    return SubloopOutcome(Verdict("error", details), capture, details=details)


def route_subloop(state: State, outcome: SubloopOutcome) -> str | None:
    """Next state: `on_terminal[<child terminal>]` first, then the usual verdict routing."""
    if outcome.terminal is not None and outcome.terminal in state.on_terminal:
        target = state.on_terminal[outcome.terminal]
        return state.name if target == CURRENT else target
    return route_for(state, outcome.verdict.name)


def clamp_timeout(own: float | None, remaining: float | None) -> float | None:
    """The child's wall clock: its own timeout, never beyond what the parent has left."""
    if remaining is None:
        return own
    remaining = max(remaining, 0.0)
    return remaining if own is None else min(own, remaining)


# --- the whole step --------------------------------------------------------------------------


def run_subloop(
    state: State,
    *,
    loop_ref: str,
    with_values: Mapping[str, Any],
    parent: Loop,
    project_root: Path,
    depth: int,
    parent_run_id: str,
    remaining: float | None,
    run_dir: Path,
    index: int,
    run_child: RunChild,
    load: ChildLoader,
    lock_env: MutableMapping[str, str] | None = None,
) -> SubloopOutcome:
    """Run `state`'s child loop to its end and say how the parent should see it.

    `loop_ref` and `with_values` are already interpolated by the caller; `depth` is the child's
    depth (1 under a top-level run); `index` numbers this state's child runs. `lock_env` is
    the environment of the run's actions, which carries its lease (`child_lease`).
    """
    if depth > MAX_DEPTH:
        return failed_start(
            f"sub-loops nest deeper than {MAX_DEPTH} levels: loop {parent.name!r} calls "
            f"{loop_ref!r} at depth {depth} (a loop that calls itself without end?)",
            loop_ref=loop_ref,
        )
    try:
        path = resolve_child(loop_ref, parent.source, project_root)
        child = load(path)
        check_command_bindings(state, parent, child)
        context = bind_parameters(child, with_values)
    except LoopError as exc:
        reason = exc.message if not exc.hint else f"{exc.message} ({exc.hint})"
        return failed_start(reason, loop_ref=loop_ref)
    # The state's own `timeout` bounds its child's whole run, as it bounds an action.
    limit = clamp_timeout(child.timeout, state.timeout)
    unfinished = unfinished_child(run_dir / "children", state.name, index - 1, child)
    if unfinished is not None:  # the run died (or was stopped) inside this child: continue it
        child_dir, saved = unfinished
        from engine.runtime.resume import saved_state_problem

        problem = saved_state_problem(saved)  # as the run's own state.json is checked
        if problem is not None:
            return failed_start(
                f"the child run in {child_dir} cannot be continued: its state.json is damaged "
                f"({problem})",
                loop_ref=loop_ref,
            )
        spent = int(saved.get("elapsed_ms") or 0) / 1000
        own = None if limit is None else max(0.0, limit - spent)
        request = ChildRequest(
            loop=child,
            context=saved.get("context", context),
            timeout=clamp_timeout(own, remaining),
            depth=depth,
            run_dir=child_dir,
            state=state.name,
            run_id=parent_run_id,
            resume=saved,
        )
    else:
        request = ChildRequest(
            loop=child,
            context=context,
            timeout=clamp_timeout(limit, remaining),
            depth=depth,
            run_dir=run_dir / "children" / f"{state.name}-{index}",
            state=state.name,
            run_id=parent_run_id,
        )
    with ExitStack() as lease:
        try:
            lease.enter_context(child_lease(child, request, project_root, lock_env))
        except LoopError as exc:
            reason = exc.message if not exc.hint else f"{exc.message} ({exc.hint})"
            return failed_start(reason, loop_ref=loop_ref)
        result = run_child(request)
    verdict = verdict_of(result)
    verdict = Verdict(verdict.name, {**verdict.details, "child_dir": str(request.run_dir)})
    return SubloopOutcome(
        verdict,
        capture_of(result, request.run_dir),
        terminal=result.terminal,
        result=result,
        cost_usd=result.cost_usd,
        details=verdict.details,
    )


@contextmanager
def child_lease(
    child: Loop, request: ChildRequest, project_root: Path, env: MutableMapping[str, str] | None
) -> Iterator[None]:
    """Hold the paths of the child's `scope` that lie outside the run's lease while it runs.

    A child runs under its parent's lock; one without a `scope` of its own changes what its
    parent does. A child whose scope reaches elsewhere (`docs/` under a parent holding `src/`)
    wrote there unlocked, beside a run holding it: it takes those paths now, under the run's
    id, failing fast (the state's error) when another run holds them, and its actions' lease
    covers them too. A run without a lease (`--no-lock`) locks nothing for its children.
    """
    from engine.runtime.locks import LEASE_ENV, PATHS_ENV, acquire_scope, scope_paths, within
    from engine.runtime.scope import run_scope

    if env is None or not env.get(LEASE_ENV) or not child.scope:
        yield
        return
    scope = run_scope(child, request.run_id, request.context, root=project_root, env=env)
    leased = [str(p) for p in json.loads(env.get(PATHS_ENV) or "[]")]
    extra = [p for p in scope_paths(project_root, scope) if not within([p], leased)]
    if not scope or not extra:
        yield
        return
    mine = {k: v for k, v in env.items() if k != LEASE_ENV}  # its own lock, not an inherited one
    with acquire_scope(project_root, request.run_id, extra, env=mine, loop=child.name) as lease:
        outer = env.get(PATHS_ENV, "[]")
        env[PATHS_ENV] = json.dumps([*leased, *lease.paths])
        try:
            yield
        finally:
            env[PATHS_ENV] = outer


def unfinished_child(
    children: Path, state: str, index: int, child: Loop
) -> tuple[Path, dict[str, Any]] | None:
    """The latest child run of `state` (`<state>-<index>`) when it stopped halfway: its directory
    and saved state. A finished child, another loop, or a state the loop no longer has: None.

    A child that has not finished its first step is continued too: that step may be a sub-loop
    of its own, whose child has steps to keep (starting the middle one afresh ran the whole
    grandchild again)."""
    directory = children / f"{state}-{index}"
    try:
        saved = read_state(directory / "state.json")
    except (OSError, ValueError):
        return None
    if saved.get("status") == "finished" or saved.get("loop") != child.name:
        return None
    if saved.get("current") not in child.states:
        return None
    return directory, saved


# --- the interpreter hook ----------------------------------------------------------------------


def route_verdict(state: State, verdict: Verdict) -> str | None:
    """Routing for any state: a sub-loop's `on_terminal` first, then `route_for`."""
    if state.is_subloop and state.on_terminal:
        terminal = verdict.details.get("terminal")
        if isinstance(terminal, str) and terminal in state.on_terminal:
            target = state.on_terminal[terminal]
            return state.name if target == CURRENT else target
    return route_for(state, verdict.name)


def make_hook(project_root: Path, load: ChildLoader) -> SubloopHook:
    """The `Runtime.run_subloop` hook of a run in `project_root` (shared by its children);
    `load` loads and checks each child before it runs."""
    known: dict[tuple[Path, str], int] = {}  # child runs of a state so far (`_next_index`)

    def hook(loop: Loop, state: State, rs: RunState, rt: Runtime, ns: Namespaces) -> Verdict:
        ref = state.loop or ""
        try:
            ref = ns.render_text(ref)
            values = {name: _interpolate(value, ns) for name, value in state.with_.items()}
        except InterpolationError as exc:
            outcome = failed_start(exc.message, loop_ref=ref)
        else:
            parent_dir = rt.artifacts_dir.parent
            outcome = run_subloop(
                state,
                loop_ref=ref,
                with_values=values,
                parent=loop,
                project_root=project_root,
                depth=rt.depth + 1,
                parent_run_id=rs.run_id,
                remaining=None if rt.deadline is None else rt.deadline - time.monotonic(),
                run_dir=parent_dir,
                index=_next_index(parent_dir / "children", state.name, known),
                run_child=lambda request: _run_child(request, rt),
                load=load,
                lock_env=rt.actions.env,
            )
        if rt.llm is None:
            rs.cost_usd += outcome.cost_usd  # a child with its own LLM services (see _run_child)
        else:
            rt.sync_cost(rs)  # shared services: the parent's max_cost_usd sees the child's spend
        for inner in () if outcome.result is None else outcome.result.cost_unknown_in:
            if f"{state.name} > {inner}" not in rs.cost_unknown_in:
                rs.cost_unknown_in.append(f"{state.name} > {inner}")  # its spend: unknown
        if not rt.stop.requested:  # a stopped child is no result: the state runs again
            rs.captured[state.capture or state.name] = dict(outcome.capture)
        return Verdict(
            outcome.verdict.name, {**outcome.verdict.details, "terminal": outcome.terminal}
        )

    return hook


class ChildLog:
    """A child run's recorder: each event goes to the run's one event log (`outer`, where the
    child's events have `depth`) and to the child's own `events.jsonl` in its directory, which
    a resumed child appends to: the parent's `${captured.C.events}` (`events_of`). A grandchild's
    events pass through here too. `llm_call` events go to the run's log only (the run's LLM
    services are shared, and emit there)."""

    def __init__(self, outer: Recorder, store: RunStore) -> None:
        self.outer = outer
        self.store = store

    def emit(self, event: str, **fields: Any) -> None:
        self.outer.emit(event, **fields)
        self.store.emit(event, **fields)

    def flush(self) -> None:
        self.outer.flush()
        self.store.flush()


def _run_child(request: ChildRequest, rt: Runtime) -> RunResult:
    """Run a child in this process, sharing the parent's event log, actions, LLM and stop."""
    from engine.runtime.interpreter import RunState, Runtime, run

    artifacts = request.run_dir / "artifacts"
    outputs = request.run_dir / "outputs"
    ensure_dir(artifacts)
    ensure_dir(outputs)
    llm = rt.llm
    own_llm = None
    if llm is None and request.loop.uses_llm():
        from engine.llm import create_llm_services

        llm = own_llm = create_llm_services(
            request.loop, run_dir=request.run_dir, recorder=rt.recorder, environ=rt.actions.env
        )
        rt.stop.listeners.append(own_llm.stop)
    # The child's own state.json, at every boundary of the child: a resume continues it there.
    store = RunStore(request.run_dir, request.run_id)
    if request.resume is not None:  # a torn last event would be glued to the next one
        from engine.runtime.resume import repair_log

        repair_log(store.events_path)
    recorder = ChildLog(rt.recorder, store)
    child_rt = Runtime(
        recorder=recorder,
        actions=rt.actions,
        artifacts_dir=artifacts,
        outputs_dir=outputs,
        save_state=store.save_state,
        llm=llm,
        stop=rt.stop,
        depth=request.depth,
        deadline=None if request.timeout is None else time.monotonic() + request.timeout,
        run_subloop=rt.run_subloop,
        cost_cap=rt.cost_cap if llm is rt.llm else None,
    )
    if request.resume is not None:
        child_rs = RunState.from_json(request.resume)
        child_rs.status, child_rs.result = "running", None
        if llm is not None:  # the calls after its boundary were billed, though they run again
            boundary = saved_at(request.resume, request.run_dir / "state.json")
            child_rs.cost_usd += llm.spent_since(boundary)
        recorder.emit(
            "loop_resume",
            depth=request.depth,
            step=child_rs.steps,
            loop=request.loop.name,
            state=child_rs.current,
            previous_status=request.resume.get("status"),
        )
    else:
        child_rs = RunState(
            run_id=request.run_id,
            loop=request.loop.name,
            current=request.loop.initial,
            loop_file=request.loop.source,
            context=dict(request.context),
            started_at=now_iso(),
        )
    env = rt.actions.env  # the child's actions see its own directory as $LL_RUN_DIR
    outer = env.get("LL_RUN_DIR")
    env["LL_RUN_DIR"] = str(artifacts)
    try:
        return run(request.loop, child_rs, child_rt, resumed=request.resume is not None)
    finally:
        store.close()
        if own_llm is not None:
            rt.stop.listeners.remove(own_llm.stop)
        if outer is None:
            env.pop("LL_RUN_DIR", None)
        else:
            env["LL_RUN_DIR"] = outer


def _next_index(children: Path, state: str, known: dict[tuple[Path, str], int]) -> int:
    """1 + the number of earlier child runs of `state` (a resumed run keeps counting). The
    directory is listed once per run and state, then the count follows the children as they
    are made (`<state>-<n>`, n = 1, 2, ...): listing it for every child made a run of 3,000
    sub-loop steps quadratic (43 s; 1,000 took 5 s)."""
    count = known.get((children, state))
    if count is None:
        count = _children_of(children, state)
    while (children / f"{state}-{count + 1}").is_dir():
        count += 1
    known[(children, state)] = count
    return count + 1


def _children_of(children: Path, state: str) -> int:
    """How many child runs of `state` the directory `children` holds."""
    if not children.is_dir():
        return 0
    return sum(1 for d in children.glob(f"{state}-*") if d.name[len(state) + 1 :].isdigit())


def _interpolate(value: Any, ns: Namespaces) -> Any:
    """A `with:` value: a lone `${expr}` keeps its type; other strings render as text."""
    if isinstance(value, str):
        expression = lone_expression(value)
        return ns.render_text(value) if expression is None else ns.value(expression)
    if isinstance(value, Mapping):
        return {k: _interpolate(v, ns) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_interpolate(v, ns) for v in value]
    return value
