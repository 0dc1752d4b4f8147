"""Routes that take the same path as little-loops did, under ll-loop's stricter routing.

little-loops routes a verdict `v` like this: with a `route:` table, `route[v]`, else `_`, else
`_error` (for `error` and for `no`); without one, `on_yes`/`on_partial`/`on_blocked`/custom
`on_v`, `no` falling back to `on_error`. Anything else ends its run ("No valid transition").
ll-loop falls back differently (`partial`/`blocked` → `on_no`, `cannot_judge` → `on_error`,
`_error` before `_`). For each verdict the converted evaluator can produce, `plan_routes` writes
the target little-loops would have taken wherever ll-loop's own fallback would go elsewhere;
a verdict little-loops left unrouted keeps ll-loop's fallback when it has one (that is the
dead end ll-loop fixes), and otherwise goes to `unrouted` — the caller adds that terminal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

UNROUTED = "\x00unrouted"  # placeholder target: the caller names and adds the terminal
_OUR_FALLBACKS = {"partial": "no", "blocked": "no", "cannot_judge": "error"}
_ON_VERDICT = re.compile(r"^on_[A-Za-z0-9_]+$")


def is_verdict_route(key: str) -> bool:
    """`on_<verdict>`: a route one of the state's verdicts takes (not `on_retry_exhausted`)."""
    return _ON_VERDICT.match(key) is not None and key != "on_retry_exhausted"


def output_capture(out: dict[str, Any], name: str) -> str:
    """The capture an added state reads state `name`'s output from: its own, else
    `<name>_output` (set on it here)."""
    capture: str = out.setdefault("capture", re.sub(r"\W", "_", name) + "_output")
    return capture


def take_routes(out: dict[str, Any]) -> dict[str, Any]:
    """Remove the state's verdict routes (`on_<verdict>`, a `route:` table) and return them,
    for a state added after it that judges in its place."""
    routes = {k: out.pop(k) for k in list(out) if is_verdict_route(k)}
    if "route" in out:
        routes["route"] = out.pop("route")
    return routes


@dataclass
class Routing:
    """The routing keys to write for one state, and the verdicts that had no route there."""

    shorthand: dict[str, str] = field(default_factory=dict)  # verdict -> target (on_<verdict>)
    table: dict[str, str] | None = None  # a route: table (verdicts, `_`, `_error`)
    unrouted: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # routes for verdicts that never occur
    shadowed: str | None = None  # the `_error` target little-loops never reached (`_` first)
    added: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # v -> (to, ours)


def their_target(
    verdict: str, shorthand: Mapping[str, str], table: Mapping[str, str] | None
) -> str | None:
    """Where little-loops sent `verdict` (its own verdict name), or None: the run ended."""
    if table is not None:
        if verdict in table and not verdict.startswith("_"):
            return table[verdict]
        if "_" in table:
            return table["_"]
        if verdict in ("error", "no") and "_error" in table:
            return table["_error"]
        return None
    if verdict == "no":
        return shorthand.get("no") or shorthand.get("error")
    return shorthand.get(verdict)


def our_target(
    verdict: str, shorthand: Mapping[str, str], table: Mapping[str, str] | None
) -> str | None:
    """Where ll-loop sends `verdict` given these keys (see engine.graph.routing)."""
    if table is not None:
        if verdict in table:
            return table[verdict]
        if verdict == "error" and "_error" in table:
            return table["_error"]
        return table.get("_")
    if verdict in shorthand:
        return shorthand[verdict]
    fallback = _OUR_FALLBACKS.get(verdict)
    return shorthand.get(fallback) if fallback else None


def plan_routes(
    verdicts: Iterable[str],
    shorthand: Mapping[str, str],
    table: Mapping[str, str] | None,
    theirs: Callable[[str], str],
) -> Routing:
    """Routing keys for ll-loop that send each of `verdicts` where little-loops sent it.

    `theirs(v)` names our verdict `v` in little-loops' vocabulary (diff_stall's `progress` was
    its `yes`; a classify token was upper case). Keys for verdicts outside `verdicts` are
    dropped: the converted evaluator never produces them.
    """
    wanted = list(dict.fromkeys(verdicts))
    plan = Routing()
    if table is not None:
        out = {k: v for k, v in table.items() if k in ("_", "_error")}
        if "_" in out and out.get("_error") not in (None, out["_"]):
            plan.shadowed = out.pop("_error")  # little-loops checks `_` first
        by_ours = {theirs(v): v for v in wanted}
        for key, target in table.items():
            if key.startswith("_"):
                continue
            if key in by_ours:
                out[by_ours[key]] = target
            else:
                plan.dropped.append(key)
        plan.table = out
    else:
        known = {theirs(v): v for v in wanted}
        for key, target in shorthand.items():
            if key in known:
                plan.shorthand[known[key]] = target
            else:
                plan.dropped.append(key)
    for verdict in wanted:
        want = their_target(theirs(verdict), shorthand, table)
        have = our_target(verdict, plan.shorthand, plan.table)
        if want is None:
            if have is None and verdict != "error":
                plan.unrouted.append(verdict)
                set_route(plan, verdict, UNROUTED)
            continue
        if have != want:
            plan.added[verdict] = (want, have)
            set_route(plan, verdict, want)
    return plan


def set_route(plan: Routing, verdict: str, target: str) -> None:
    """Route `verdict` to `target` in the plan's table or shorthand, whichever it writes."""
    if plan.table is not None:
        plan.table[verdict] = target
    else:
        plan.shorthand[verdict] = target
