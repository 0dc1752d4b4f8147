"""The static cost bound: the most LLM calls and dollars a run of a loop can spend (pure).

What one execution of each state costs at most (`StepCost`) is LLM knowledge and comes from
`engine.llm.costs`; this module only walks the graph. A run executes at most `max_steps`
states, each followed by the route of some verdict, so the worst case is the heaviest walk of
at most `max_steps` states from `initial` (plus the `on_max_steps` state once, when the budget
runs out). `heaviest_walks` computes it exactly by dynamic programming over (steps left, state),
assuming any verdict can happen at any state — the same assumption lint makes.

A loop in which no state that calls an LLM lies on a cycle has a bound independent of
`max_steps`: each such state runs at most once, so the heaviest walk is found within as many
steps as there are states. With `max_cost_usd`, the run stops at the first boundary where its
spend reached the limit, so dollars are also bounded by the limit plus the dearest single step.
See docs/llm.md ("The cost bound before a run") for how the per-call figures are built.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.graph.loop_graph import LoopGraph, reachable_from

# Walks longer than this many (steps x edges) are not enumerated: the bound falls back to
# `max_steps` times the dearest step, which is still an upper bound, just not the exact one.
DP_WORK_LIMIT = 3_000_000


@dataclass(frozen=True)
class StepCost:
    """What one execution of a state can cost: at most (`calls`, `usd`), at least (`min_*`).

    `unknown` says why the cost of this state cannot be bounded (an interpolated sub-loop, an
    evaluator this bound does not know); such a state makes the whole bound unknown.
    """

    calls: int = 0
    usd: float = 0.0
    min_calls: int = 0
    min_usd: float = 0.0
    unknown: str | None = None
    note: str = ""  # how the figure was made, for `show --cost`
    # Spend this state may add that no bound can see: an agent CLI's own (a `cmd:` runner), which
    # still counts toward `max_cost_usd` at run time. `show --cost` said "no LLM calls (cost $0)"
    # of a loop of agents that spent dollars.
    outside: str = ""

    @property
    def uses_llm(self) -> bool:
        return self.calls > 0 or self.usd > 0 or self.unknown is not None


FREE = StepCost()


@dataclass(frozen=True)
class CheapestPath:
    """The least a run must spend to reach a success terminal (estimate), and along which states."""

    usd: float
    calls: int
    path: tuple[str, ...]


@dataclass(frozen=True)
class CostBound:
    """The worst case of one run (without resumes), and how it was obtained."""

    loop: str
    max_steps: int
    calls: int | None  # None: not bounded (see `unknown`)
    usd: float | None
    exact: bool  # the heaviest walk was computed, not estimated
    independent_of_max_steps: bool  # no LLM state on a cycle: the bound holds for any budget
    cyclic_llm_states: tuple[str, ...]
    capped_by_max_cost: bool  # `max_cost_usd` + the dearest step is below the walk's dollars
    max_cost_usd: float | None
    worst_walk: tuple[str, ...]  # a walk that spends `usd` (empty when not computed)
    cheapest_success: CheapestPath | None
    steps: Mapping[str, StepCost] = field(default_factory=dict)
    unknown: Mapping[str, str] = field(default_factory=dict)

    @property
    def bounded(self) -> bool:
        return self.calls is not None and self.usd is not None

    def to_json(self) -> dict[str, Any]:
        cheapest = self.cheapest_success
        return {
            "loop": self.loop,
            "bounded": self.bounded,
            "calls": self.calls,
            "usd": None if self.usd is None else round(self.usd, 6),
            "exact": self.exact,
            "independent_of_max_steps": self.independent_of_max_steps,
            "max_steps": self.max_steps,
            "max_cost_usd": self.max_cost_usd,
            "capped_by_max_cost": self.capped_by_max_cost,
            "cyclic_llm_states": list(self.cyclic_llm_states),
            "worst_walk": list(self.worst_walk),
            "cheapest_success": None
            if cheapest is None
            else {
                "usd": round(cheapest.usd, 6),
                "calls": cheapest.calls,
                "path": list(cheapest.path),
            },
            "states": {
                name: {
                    "calls": cost.calls,
                    "usd": round(cost.usd, 6),
                    "min_calls": cost.min_calls,
                    "min_usd": round(cost.min_usd, 6),
                    "unknown": cost.unknown,
                    "note": cost.note,
                }
                for name, cost in self.steps.items()
                if cost.uses_llm
            },
            "unknown": dict(self.unknown),
            "outside": dict(self.outside),
        }

    @property
    def outside(self) -> dict[str, str]:
        """The states whose own spend this bound leaves out, and why."""
        return {name: cost.outside for name, cost in self.steps.items() if cost.outside}


def cost_bound(
    graph: LoopGraph,
    steps: Mapping[str, StepCost],
    *,
    max_steps: int,
    max_cost_usd: float | None = None,
) -> CostBound:
    """The bound of a compiled loop whose states cost `steps` (missing states cost nothing)."""
    extra = (graph.on_max_steps,) if graph.on_max_steps in graph.order else ()
    live = reachable_from(graph, graph.initial, *extra)
    costs = {name: steps.get(name, FREE) for name in graph.nodes if name in live}
    unknown = {name: c.unknown for name, c in costs.items() if c.unknown is not None}
    cyclic = tuple(
        n for n in graph.nodes if n in costs and costs[n].uses_llm and _on_cycle(graph, n)
    )
    calls: int | None = None
    usd: float | None = None
    exact = capped = False
    walk: tuple[str, ...] = ()
    if not unknown:
        # Without an LLM state on a cycle, a walk longer than the number of states adds nothing.
        horizon = max_steps if cyclic else min(max_steps, len(graph.nodes))
        by_calls = heaviest_walks(graph, {n: float(c.calls) for n, c in costs.items()}, horizon)
        by_usd = heaviest_walks(graph, {n: c.usd for n, c in costs.items()}, horizon)
        calls, usd, walk = round(by_calls.total), by_usd.total, by_usd.walk
        exact = by_calls.exact and by_usd.exact
        if max_cost_usd is not None:
            ceiling = max_cost_usd + max((c.usd for c in costs.values()), default=0.0)
            if ceiling < usd:
                usd, capped = ceiling, True
    return CostBound(
        loop=graph.name,
        max_steps=max_steps,
        calls=calls,
        usd=usd,
        exact=exact,
        independent_of_max_steps=not cyclic and not unknown,
        cyclic_llm_states=cyclic,
        capped_by_max_cost=capped,
        max_cost_usd=max_cost_usd,
        worst_walk=walk,
        cheapest_success=cheapest_success(graph, costs),
        steps=costs,
        unknown=unknown,
    )


@dataclass(frozen=True)
class Walk:
    """The heaviest walk's total weight, the walk itself, and whether it was computed exactly."""

    total: float
    walk: tuple[str, ...]
    exact: bool


def heaviest_walks(graph: LoopGraph, weight: Mapping[str, float], budget: int) -> Walk:
    """The largest total `weight` of the states a run executes with at most `budget` steps.

    `best[k][s]`: the most a run standing in `s` with `k` steps left can still spend. A terminal
    spends nothing; with no step left, the `on_max_steps` state runs once; otherwise the state
    runs and the run moves on along any edge (a state without edges ends the run: unrouted).
    """
    extra = weight.get(graph.on_max_steps, 0.0) if graph.on_max_steps else 0.0
    edges = sum(len(e) for e in graph.out_edges.values()) + len(graph.nodes)
    if budget * edges > DP_WORK_LIMIT:
        dearest = max((weight.get(n, 0.0) for n in graph.nodes), default=0.0)
        return Walk(budget * dearest + extra, (), False)
    nodes = graph.nodes
    exhausted = {n: 0.0 if n in graph.terminals else extra for n in nodes}
    table = [exhausted]
    for _ in range(budget):
        before = table[-1]
        table.append(
            {
                n: 0.0
                if n in graph.terminals
                else weight.get(n, 0.0) + max((before[t] for t in graph.successors(n)), default=0.0)
                for n in nodes
            }
        )
    return Walk(table[budget][graph.initial], _trace(graph, table, budget), True)


def _trace(graph: LoopGraph, table: list[dict[str, float]], budget: int) -> tuple[str, ...]:
    """One walk that achieves `table[budget][initial]`: the states it executes in order, then
    the terminal it reaches or the `on_max_steps` state that runs when the budget is spent."""
    walk = [graph.initial]
    node = graph.initial
    for left in range(budget, 0, -1):
        if node in graph.terminals:
            break
        successors = graph.successors(node)
        if not successors:
            break
        node = max(successors, key=lambda t: table[left - 1][t])
        walk.append(node)
    else:
        if node not in graph.terminals:  # the budget ran out before this state could run
            walk.pop()
            if graph.on_max_steps:
                walk.append(graph.on_max_steps)
    return tuple(walk)


def cheapest_success(graph: LoopGraph, costs: Mapping[str, StepCost]) -> CheapestPath | None:
    """The least (estimated) spend on any path from `initial` to a success terminal (Dijkstra
    over state weights), or None when no success terminal is reachable."""
    goals = graph.terminals - graph.failures
    if graph.initial not in graph.order or not goals:
        return None
    start = costs.get(graph.initial, FREE)
    best: dict[str, tuple[float, int]] = {graph.initial: (start.min_usd, start.min_calls)}
    parent: dict[str, str] = {}
    queue = [(start.min_usd, start.min_calls, graph.order[graph.initial], graph.initial)]
    while queue:
        usd, calls, _, node = heapq.heappop(queue)
        if (usd, calls) > best[node]:
            continue
        if node in goals:
            path = [node]
            while path[-1] in parent:
                path.append(parent[path[-1]])
            return CheapestPath(usd, calls, tuple(reversed(path)))
        if node in graph.terminals:
            continue
        for nxt in graph.successors(node):
            cost = costs.get(nxt, FREE)
            candidate = (usd + cost.min_usd, calls + cost.min_calls)
            if nxt not in best or candidate < best[nxt]:
                best[nxt] = candidate
                parent[nxt] = node
                heapq.heappush(queue, (*candidate, graph.order[nxt], nxt))
    return None


def _on_cycle(graph: LoopGraph, node: str) -> bool:
    """True when a run can come back to `node` after leaving it."""
    return node in reachable_from(graph, *graph.successors(node))


def render_bound(bound: CostBound) -> str:
    """The text `ll-loop show LOOP --cost` prints."""
    if not bound.bounded:
        lines = [f"{bound.loop}: no static cost bound"]
        lines += [f"  {state}: {why}" for state, why in bound.unknown.items()]
        return "\n".join(lines)
    assert bound.calls is not None and bound.usd is not None
    outside = [
        f"  not counted: {state}: {why} (it counts toward max_cost_usd at run time)"
        for state, why in bound.outside.items()
    ]
    if bound.calls == 0:
        return "\n".join([f"{bound.loop}: no LLM calls (cost $0)", *outside])
    lines = [f"{bound.loop}: at most {bound.calls} LLM calls, ${bound.usd:.4f} per run", *outside]
    if bound.independent_of_max_steps:
        lines.append(
            "  no state that calls an LLM is on a cycle: the bound holds for any max_steps"
        )
    else:
        states = ", ".join(bound.cyclic_llm_states)
        lines.append(f"  bounded by max_steps {bound.max_steps}: LLM states on a cycle: {states}")
    if bound.capped_by_max_cost and bound.max_cost_usd is not None:
        lines.append(
            f"  dollars capped by max_cost_usd {bound.max_cost_usd:g} plus the dearest single step"
        )
    if not bound.exact:
        lines.append("  (estimated: the walk was too long to enumerate; max_steps x dearest step)")
    if bound.worst_walk:
        lines.append(f"  dearest walk: {_fold(bound.worst_walk)}")
    if bound.cheapest_success is not None and bound.cheapest_success.calls:
        path = bound.cheapest_success
        lines.append(
            f"  cheapest path to success: about ${path.usd:.4f}, {path.calls} calls "
            f"({' → '.join(path.path)})"
        )
    lines.append("  per execution of a state:")
    for name, cost in bound.steps.items():
        if cost.uses_llm:
            lines.append(
                f"    {name}: ≤ {cost.calls} calls, ≤ ${cost.usd:.4f}  {cost.note}".rstrip()
            )
    return "\n".join(lines)


def _fold(walk: tuple[str, ...]) -> str:
    """A walk on one line: whole when short, else its start and end around a count."""
    if len(walk) <= 12:
        return " → ".join(walk)
    return " → ".join(walk[:5]) + f" → … ({len(walk) - 8} more) … → " + " → ".join(walk[-3:])
