"""Rules about one state's own configuration: dead or contradictory keys, typos in routes.

Contradictions the JSON Schema already rejects at load time (`failure` on a non-terminal,
`route` mixed with `on_*` or `next`, an invalid regex) are not repeated here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from engine.graph.routing import possible_verdicts, route_for
from engine.model.loop import State
from lint._context import LintContext
from lint._paths import did_you_mean, names, route_path, state_path
from lint._registry import Finding, rule

_TABLE_KEYS = frozenset({"_", "_error"})


def _is_step(state: State) -> bool:
    """A `next:` state without evaluator or child loop: its action either worked or failed."""
    return state.next is not None and state.evaluate is None and not state.is_subloop


@rule("LL010", "error", "terminal-with-action")
def terminal_with_action(ctx: LintContext) -> Iterator[Finding]:
    """A terminal with an action, evaluator, sub-loop, capture, retries or routes: none runs.

    A terminal has no edges, so LL001 never sees where its routes point."""
    for state in ctx.loop.terminals():
        dead = [
            key
            for key, present in (
                ("action", state.action is not None),
                ("loop", state.loop is not None),
                ("evaluate", state.evaluate is not None),
                ("next", state.next is not None),
                ("route", state.route is not None),
                ("capture", state.capture is not None),
                ("max_retries", state.max_retries is not None),
                ("on_retry_exhausted", state.on_retry_exhausted is not None),
            )
            if present
        ] + [f"on_{v}" for v in state.routes]
        if dead:
            yield Finding(
                f"terminal state {state.name!r} has {', '.join(dead)}, which never runs: "
                "a terminal ends the run",
                state_path(state, dead[0]),
                "move the work into a non-terminal state that routes to this terminal",
            )


@rule("LL012", "warning", "next-with-routes")
def next_with_routes(ctx: LintContext) -> Iterator[Finding]:
    """`next` combined with `evaluate` or verdict routes other than `on_error`: dead config."""
    for state in ctx.loop.states.values():
        if state.next is None or state.terminal:
            continue
        if state.evaluate is not None:
            yield Finding(
                f"state {state.name!r} has both `next` and `evaluate`; with an evaluator `next` "
                "only stands in for on_yes"
                + (", which is also set, so `next` is dead" if "yes" in state.routes else ""),
                state_path(state, "next"),
                "route the verdicts with on_yes/on_no and drop `next`, or drop `evaluate`",
            )
        elif not state.is_subloop:
            dead = [f"on_{v}" for v in state.routes if v != "error"]
            if state.route is not None:
                dead.append("route")
            if dead:
                yield Finding(
                    f"state {state.name!r} has `next`, so {', '.join(dead)} never "
                    "applies: a successful step always follows `next`",
                    state_path(state, dead[0]),
                    "remove them (only on_error combines with next), or add an `evaluate` "
                    "block and route its verdicts instead of `next`",
                )


@rule("LL014", "error", "impossible-verdict")
def impossible_verdict(ctx: LintContext) -> Iterator[Finding]:
    """A route for a verdict this state's evaluator can never produce (often a typo)."""
    for state in ctx.loop.states.values():
        if state.terminal or _is_step(state):
            continue
        possible = possible_verdicts(state)
        table = state.route if state.route is not None else state.routes
        for verdict in table:
            if verdict in possible or verdict in _TABLE_KEYS:
                continue
            producer = state.evaluate.type if state.evaluate else "this state"
            yield Finding(
                f"state {state.name!r} routes verdict {verdict!r}, which {producer} never "
                f"produces{did_you_mean(verdict, possible)}",
                route_path(state, verdict),
                f"route one of its verdicts: {names(sorted(possible))}",
            )


_FAILURE_WORDS = frozenset(
    [
        "fail",
        "failed",
        "failure",
        "failing",
        "error",
        "errored",
        "errors",
        "abort",
        "aborted",
        "crash",
        "crashed",
        "fatal",
        "reject",
        "rejected",
        "broken",
        "gave",
        "giveup",
        "cancelled",
        "canceled",
        "invalid",
        "timeout",
        "timed",
        "timedout",
    ]
)


@rule("LL015", "warning", "failure-sounding-terminal")
def failure_sounding_terminal(ctx: LintContext) -> Iterator[Finding]:
    """A terminal named like a failure (`failed`, `error`, `abort`, …) without `failure: true`."""
    for state in ctx.loop.terminals():
        parts = re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", state.name).lower())
        words = {*parts, "".join(parts)}  # `give_up` is the one word `giveup`
        if not state.failure and words & _FAILURE_WORDS:
            yield Finding(
                f"terminal {state.name!r} sounds like a failure but counts as success: "
                "the outcome comes from `failure: true`, never from the name",
                state_path(state, "terminal"),
                "add `failure: true` (exit code 1), or rename the state",
            )


# Evaluators whose model calls take the state's `model` (before their own).
_MODEL_EVALUATORS = frozenset({"llm_structured", "assessment"})


@rule("LL016", "warning", "inert-llm-setting")
def inert_llm_setting(ctx: LintContext) -> Iterator[Finding]:
    """A state's `model` or `runner` that nothing in the state reads (no prompt, no LLM judge).

    The key is accepted, so its author believes it chose a model or an agent for, say, a
    sub-loop, which it never does."""
    for state in ctx.loop.states.values():
        prompt = state.action_type == "prompt" and state.action is not None
        judged = state.evaluate is not None and state.evaluate.type in _MODEL_EVALUATORS
        what = "a sub-loop" if state.is_subloop else "a terminal" if state.terminal else None
        if state.runner is not None and not prompt:
            yield Finding(
                f"state {state.name!r} sets `runner`, but it has no prompt action "
                f"({what or 'its action runs in bash'}), so no runner is ever used",
                state_path(state, "runner"),
                "remove `runner`, or set it in the state that has `action_type: prompt`"
                + (" (a child loop's states choose their own runner)" if state.is_subloop else ""),
            )
        runner = state.runner or ctx.loop.llm.runner or ""
        if state.model is not None and prompt and runner.startswith("cmd:") and not judged:
            yield Finding(
                f"state {state.name!r} sets `model`, but its prompt runs through the agent CLI "
                f"{runner!r}, which is given the prompt and no model, and it has no LLM judge, "
                "so no model call uses it",
                state_path(state, "model"),
                "choose the model in the runner's command line (e.g. runner: \"cmd:claude -p "
                '--model NAME"), or remove `model`',
            )
        if state.model is not None and not prompt and not judged:
            yield Finding(
                f"state {state.name!r} sets `model`, but it has neither a prompt action nor an "
                f"LLM judge{f' ({what})' if what else ''}, so no model call uses it",
                state_path(state, "model"),
                "remove `model`, or set it where a prompt or an llm_structured judge runs"
                + (" (a child loop's states choose their own model)" if state.is_subloop else ""),
            )


@rule("LL017", "warning", "retry-exhausted-into-itself")
def retry_exhausted_into_itself(ctx: LintContext) -> Iterator[Finding]:
    """`on_retry_exhausted` names the state itself (`$current`), so `max_retries` ends nothing.

    Entering the state again starts its count afresh: the state runs on until `max_steps`,
    which is what the author set `max_retries` to prevent."""
    for state in ctx.loop.states.values():
        if state.max_retries is not None and state.retry_exhausted_target == state.name:
            yield Finding(
                f"state {state.name!r} goes back to itself when its {state.max_retries} "
                "retries are used up, so `max_retries` never ends its retrying: it runs on "
                "until `max_steps`",
                state_path(state, "on_retry_exhausted"),
                "route `on_retry_exhausted` to a state that gives up or tries another way "
                "(a failure terminal, an escalation)",
            )


def _error_route_key(state: State) -> str:
    """The key under the state that routes its `error` verdict (see `route_for`)."""
    if state.route is not None:
        return next(k for k in ("error", "_error", "_") if k in state.route)
    return "on_error"


@rule("LL019", "warning", "inert-setting")
def inert_setting(ctx: LintContext) -> Iterator[Finding]:
    """A setting that can never apply: `_error` beside `error`, or `timeout` on a terminal.

    The error verdict takes a route table's `error:` first; a terminal runs nothing."""
    for state in ctx.loop.states.values():
        table = state.route or {}
        if "error" in table and "_error" in table and not state.terminal:
            yield Finding(
                f"state {state.name!r} routes both `error: {table['error']}` and "
                f"`_error: {table['_error']}`: the error verdict takes `error:`, so `_error:` "
                "never applies",
                state_path(state, "route", "_error"),
                "keep one of them (`_error:` is the table's fallback for the error verdict)",
            )
        if state.terminal and state.timeout is not None:
            yield Finding(
                f"terminal state {state.name!r} sets `timeout`, which never applies: a terminal "
                "runs nothing, it ends the run",
                state_path(state, "timeout"),
                "remove it; the loop's wall clock is the top-level `timeout:`, and a state's "
                "`timeout` belongs on a state that runs an action",
            )


@rule("LL018", "warning", "error-to-success")
def error_to_success(ctx: LintContext) -> Iterator[Finding]:
    """A state's `error` verdict (a crashed or timed-out action) ends at a success terminal.

    The failure then ends the run as a success (exit 0). Grading a crash as a pass is the
    pitfall DESIGN §9 fixes by design; the author usually meant a failure terminal, or a `_`
    default that was not meant to catch errors."""
    for state in ctx.reachable_states():
        if "error" not in possible_verdicts(state):
            continue
        target = route_for(state, "error")
        end = ctx.loop.states.get(target) if target is not None else None
        if end is None or not end.terminal or end.failure:
            continue
        key = _error_route_key(state)
        via = f"`on_error: {target}`" if key == "on_error" else f"`route: {{{key}: {target}}}`"
        yield Finding(
            f"if state {state.name!r} fails (a crashed, timed-out or failed action: the error "
            f"verdict), {via} ends the run at {target!r}, a success terminal: the run reports "
            "success and exits 0",
            state_path(state, "route", key) if key != "on_error" else state_path(state, key),
            "route errors to a terminal with `failure: true` or to a state that recovers"
            + (" (add `_error:` to the route table)" if key == "_" else "")
            + "; if a failure here really is fine, suppress LL018 with the reason",
        )
