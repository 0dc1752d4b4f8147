"""The static cost bound as `show --cost` and `validate --verbose` print it: the project's prices
(`LL_PRICES`, `.loops/prices.json`) and sub-loops resolved like the runtime resolves them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.graph.cost import CostBound
    from engine.model.loop import Loop


def loop_bound(loop: Loop, max_steps: int | None = None) -> CostBound:
    """The worst case of one run of `loop`; a bad price file raises its PreflightError."""
    from engine.cli.validate_cmd import child_resolver
    from engine.llm.costs import loop_cost
    from engine.llm.prices import load_prices

    return loop_cost(
        loop,
        prices=load_prices(Path.cwd()),
        resolve_child=child_resolver(loop.source),
        max_steps=max_steps,
    )


def bound_line(loop: Loop) -> str | None:
    """One line for `validate --verbose` (None for a loop that calls no LLM)."""
    bound = loop_bound(loop)
    if bound.bounded and not bound.calls:
        return None
    if not bound.bounded:
        why = "; ".join(f"{state}: {reason}" for state, reason in bound.unknown.items())
        return f"cost bound: none ({why})"
    basis = "any max_steps" if bound.independent_of_max_steps else f"max_steps {bound.max_steps}"
    return f"cost bound: at most {bound.calls} LLM calls, ${bound.usd:.4f} per run ({basis})"
