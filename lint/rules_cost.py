"""A money limit no successful run can stay under: `max_cost_usd` below the cheapest path."""

from __future__ import annotations

from collections.abc import Iterator

from lint._context import LintContext
from lint._registry import Finding, rule


@rule("LL022", "warning", "max-cost-below-cheapest-path")
def max_cost_below_cheapest_path(ctx: LintContext) -> Iterator[Finding]:
    """`max_cost_usd` is below the estimated least a run spends to reach a success terminal."""
    limit = ctx.loop.max_cost_usd
    if limit is None or not ctx.initial_known:
        return
    from engine.graph.cost import cheapest_success
    from engine.llm.costs import state_cost
    from engine.llm.prices import PriceTable

    prices = PriceTable()  # built-in prices: lint reads no files
    costs = {
        state.name: state_cost(ctx.loop, state, prices, None, 0)
        for state in ctx.loop.states.values()
        if not state.terminal
    }
    cheapest = cheapest_success(ctx.graph, costs)
    if cheapest is None or cheapest.usd <= limit:
        return
    yield Finding(
        f"max_cost_usd {limit:g} is below the cheapest path to a success terminal, estimated at "
        f"${cheapest.usd:.4f} ({cheapest.calls} LLM calls: {' → '.join(cheapest.path)}), so "
        "every run that could succeed stops with max_cost first",
        ("max_cost_usd",),
        "raise max_cost_usd, or use a cheaper model (`ll-loop show LOOP --cost` shows the figures)",
    )
