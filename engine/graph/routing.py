"""Verdict routing (docs/format.md, "Routing"): pure functions shared by the interpreter and lint.

The interpreter asks `route_for(state, verdict)` after every step; lint asks
`unrouted_verdicts(state)` to prove statically that no reachable state can dead-end.
"""

from __future__ import annotations

from engine.model.loop import CURRENT, FALLBACKS, SUBLOOP_VERDICTS, State

# Verdicts of a state whose action either worked or failed, with no evaluator (a `next:` state).
STEP_VERDICTS = frozenset({"yes", "error"})


def route_for(state: State, verdict: str) -> str | None:
    """The state to enter after `state` produced `verdict`, or None when it is unrouted."""
    target = _lookup(state, verdict)
    if target == CURRENT:
        return state.name
    return target


def _lookup(state: State, verdict: str) -> str | None:
    if state.next is not None and state.evaluate is None and not state.is_subloop:
        if verdict == "error":
            return state.routes.get("error")
        return state.next
    if state.route is not None:
        table = state.route
        if verdict in table:
            return table[verdict]
        if verdict == "error" and "_error" in table:
            return table["_error"]
        return table.get("_")
    if verdict in state.routes:
        return state.routes[verdict]
    fallback = FALLBACKS.get(verdict)
    if fallback is not None:
        return state.routes.get(fallback)
    if state.next is not None and verdict == "yes":
        return state.next  # only success advances along `next`; failures never do
    return None


def possible_verdicts(state: State) -> frozenset[str]:
    """Every verdict `state` can produce, from its evaluator's closed set (terminal: none)."""
    if state.terminal:
        return frozenset()
    if state.evaluate is not None:
        return state.evaluate.verdict_set()
    if state.is_subloop:
        return SUBLOOP_VERDICTS
    return STEP_VERDICTS


def unrouted_verdicts(state: State) -> list[str]:
    """Verdicts `state` can produce that lead nowhere, in a stable order."""
    return sorted(v for v in possible_verdicts(state) if route_for(state, v) is None)
