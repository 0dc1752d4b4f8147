"""Rules over the compiled graph: where a run can go, and whether it can finish."""

from __future__ import annotations

from collections.abc import Iterator

from engine.graph.loop_graph import closed_components, shortest_path_length, success_terminals
from engine.graph.routing import unrouted_verdicts
from engine.model.loop import CURRENT
from lint._context import LintContext
from lint._paths import did_you_mean, names, route_path, state_path
from lint._registry import Finding, rule


@rule("LL001", "error", "unknown-target")
def unknown_target(ctx: LintContext) -> Iterator[Finding]:
    """A route, `initial`, `on_max_steps`, `on_retry_exhausted` or `on_terminal` names no state."""
    states = ctx.loop.states
    hint = "name one of the states defined under `states:` (or `$current`)"
    for key in ("initial", "on_max_steps"):
        target = getattr(ctx.loop, key)
        if target == CURRENT:  # the state a route leaves: a top-level key leaves none
            yield Finding(
                f"`{key}` cannot be `$current`: it means the state a route leaves, and "
                f"`{key}` is not a route of a state",
                (key,),
                "name one of the states defined under `states:`",
            )
        elif target is not None and target not in states:
            yield Finding(
                f"`{key}` names state {target!r}, which does not exist"
                f"{did_you_mean(target, states)}",
                (key,),
                "name one of the states defined under `states:`",
            )
    for edge in ctx.graph.dangling:
        state = states[edge.source]
        key = str(route_path(state, edge.label)[-1])
        yield Finding(
            f"state {edge.source!r} routes `{key}` to {edge.target!r}, which does not exist"
            f"{did_you_mean(edge.target, states)}",
            route_path(state, edge.label),
            hint,
        )


@rule("LL002", "warning", "unreachable-state")
def unreachable_state(ctx: LintContext) -> Iterator[Finding]:
    """A state no route from `initial` (or `on_max_steps`) ever enters."""
    if not ctx.initial_known:
        return
    for state in ctx.loop.states.values():
        if state.name not in ctx.entered:
            yield Finding(
                f"state {state.name!r} is unreachable from initial state {ctx.loop.initial!r}",
                state_path(state),
                "route to it from a reachable state, or delete it",
            )


@rule("LL003", "error", "trap-state")
def trap_state(ctx: LintContext) -> Iterator[Finding]:
    """A reachable state from which no path leads to any terminal."""
    in_closed_cycle = {s for c in _closed(ctx) for s in c}
    for state in ctx.reachable_states():
        if state.name in ctx.finishing or state.name in in_closed_cycle:
            continue
        yield Finding(
            f"state {state.name!r} has no path to any terminal state, so a run that enters it "
            "can only end by exhausting its budget",
            state_path(state),
            "route one of its verdicts (or a state after it) to a terminal state",
        )


def _closed(ctx: LintContext) -> list[list[str]]:
    return closed_components(ctx.graph, ctx.reachable)


@rule("LL004", "error", "inescapable-cycle")
def inescapable_cycle(ctx: LintContext) -> Iterator[Finding]:
    """A reachable cycle of states that no verdict can leave."""
    for component in _closed(ctx):
        first = ctx.loop.states[component[0]]
        what = (
            f"state {first.name!r} routes every verdict back to itself"
            if len(component) == 1
            else f"states {names(component)} form a cycle that no verdict can leave"
        )
        yield Finding(
            f"{what}, so a run that gets there never reaches a terminal",
            state_path(first),
            "route at least one verdict of the cycle (e.g. on_yes) to a state outside it",
        )


@rule("LL005", "error", "no-success-terminal")
def no_success_terminal(ctx: LintContext) -> Iterator[Finding]:
    """No terminal without `failure: true` is reachable from `initial`."""
    if not ctx.initial_known:
        return
    if not success_terminals(ctx.graph) & ctx.reachable:
        yield Finding(
            f"no success terminal is reachable from initial state {ctx.loop.initial!r}, "
            "so this loop can never succeed",
            ("initial",),
            "add a `terminal: true` state without `failure: true` and route to it",
        )


@rule("LL006", "error", "max-steps-too-short")
def max_steps_too_short(ctx: LintContext) -> Iterator[Finding]:
    """`max_steps` is smaller than the fewest steps any run needs to reach a success terminal."""
    if not ctx.initial_known:
        return
    need = shortest_path_length(ctx.graph, ctx.loop.initial, success_terminals(ctx.graph))
    if need is not None and ctx.loop.max_steps < need:
        yield Finding(
            f"max_steps is {ctx.loop.max_steps} but the shortest path from {ctx.loop.initial!r} "
            f"to a success terminal takes {need} steps, so no run can succeed",
            ("max_steps",),
            f"raise max_steps to at least {need} (plus room for retries)",
        )


@rule("LL007", "error", "unrouted-verdict")
def unrouted_verdict(ctx: LintContext) -> Iterator[Finding]:
    """A reachable state can produce a verdict (other than `error`) that no route handles."""
    for state in ctx.reachable_states():
        missing = [v for v in unrouted_verdicts(state) if v != "error"]
        if not missing:
            continue
        keys = ", ".join(f"on_{v}" for v in missing)
        via = "a `route` entry (or `_`)" if state.route is not None else f"`{keys}`"
        yield Finding(
            f"state {state.name!r} can produce verdict{'s' if len(missing) > 1 else ''} "
            f"{names(missing)} that no route handles; the run would end with an error",
            state_path(state),
            f"add {via}",
        )


@rule("LL008", "info", "unhandled-error")
def unhandled_error(ctx: LintContext) -> Iterator[Finding]:
    """A reachable state has no route for the `error` verdict; a failure there ends the run."""
    for state in ctx.reachable_states():
        if "error" in unrouted_verdicts(state):
            yield Finding(
                f"if state {state.name!r} fails (error verdict) the run ends with "
                "terminated_by: error",
                state_path(state),
                "add `on_error: <state>` to recover, or leave it to end the run",
            )


@rule("LL009", "warning", "retries-never-counted")
def retries_never_counted(ctx: LintContext) -> Iterator[Finding]:
    """`max_retries` on a state that no cycle re-enters, so the retry count never grows."""
    entered_by_retry = {target for _, target in ctx.retries}
    for state in ctx.reachable_states():
        if state.terminal:
            continue  # a terminal's max_retries is dead like the rest of its keys: LL010
        if state.max_retries is not None and state.name not in entered_by_retry:
            yield Finding(
                f"state {state.name!r} sets max_retries but no cycle leads back into it, "
                "so its retry count never grows",
                state_path(state, "max_retries"),
                "put max_retries on the state the retry cycle re-enters, or remove it",
            )
