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
    from engine.load.loader import load_loop_file
    from engine.model.errors import LoopError
    from engine.runtime.subloop import resolve_child

    def resolve(ref: str, parent: Loop) -> Loop | None:
        # Loaded, not linted: a child lint would refuse makes no calls at all, so bounding
        # what its file describes stays an upper bound.
        try:
            return load_loop_file(resolve_child(ref, parent.source, root))
        except (LoopError, OSError):
            return None

    return loop_cost(loop, prices=load_prices(root), resolve_child=resolve, max_steps=max_steps)
