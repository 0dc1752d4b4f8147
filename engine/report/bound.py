"""The static cost bound with the project's prices and its sub-loops resolved as the runtime
resolves them (IO: the price file, the child loop files)."""

from __future__ import annotations

from pathlib import Path

from engine.graph.cost import CostBound
from engine.model.loop import Loop


def static_bound(loop: Loop, root: Path, max_steps: int | None = None) -> CostBound:
    """The worst case of one run of `loop` in project `root`; a bad price file raises its
    PreflightError."""
    from engine.llm.costs import loop_cost
    from engine.llm.prices import load_prices
    from engine.model.errors import LoopError
    from engine.run.subloop import load_child, resolve_child

    def resolve(ref: str, parent: Loop) -> Loop | None:
        try:
            return load_child(resolve_child(ref, parent.source, root))
        except LoopError:
            return None

    return loop_cost(loop, prices=load_prices(root), resolve_child=resolve, max_steps=max_steps)
