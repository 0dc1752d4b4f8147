"""The static cost bound as `show --cost` and `validate --verbose` print it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.graph.cost import CostBound
    from engine.model.loop import Loop


def loop_bound(loop: Loop) -> CostBound:
    """The worst case of one run of `loop` here; a bad price file raises its PreflightError."""
    from engine.load.project import project_root
    from engine.report.bound import static_bound

    return static_bound(loop, project_root())


def bound_line(loop: Loop) -> str | None:
    """One line for `validate --verbose` (None for a loop that calls no LLM)."""
    bound = loop_bound(loop)
    if bound.bounded and not bound.calls:
        return None
    if not bound.bounded:
        why = "; ".join(f"{state}: {reason}" for state, reason in bound.unknown.items())
        return f"cost bound: none ({why})"
    basis = "any max_steps" if bound.independent_of_max_steps else f"max_steps {bound.max_steps}"
    if bound.outside:
        basis += f"; agent CLIs' own spend not counted: {', '.join(bound.outside)}"
    return f"cost bound: at most {bound.calls} LLM calls, ${bound.usd:.4f} per run ({basis})"
