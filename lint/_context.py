"""What every rule may look at: the loop, its compiled graph, and analyses computed once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar, cast

from engine.graph.loop_graph import (
    LoopGraph,
    can_reach,
    immediate_dominators,
    reachable_from,
    retry_edges,
)
from engine.model.errors import LoopError
from engine.model.loop import Loop, State
from lint._registry import PositionLookup

# Resolves a literal `loop:` reference of a sub-loop state to the child loop, or None when it
# does not resolve. Supplied by the caller (the CLI knows about files; lint does not).
LoopResolver = Callable[[str], Loop | None]
T = TypeVar("T")


@dataclass(frozen=True)
class LintContext:
    """The loop under lint plus lazily computed, shared graph facts."""

    loop: Loop
    graph: LoopGraph
    resolve_loop: LoopResolver | None = None
    # Where each node sits in the loop's file, for the few rules that look at how a value was
    # written (LL087); None when the loop was built in Python.
    positions: PositionLookup | None = None

    @cached_property
    def reachable(self) -> frozenset[str]:
        """States a run can enter along routes from `initial` (budget exits not included)."""
        return reachable_from(self.graph, self.loop.initial)

    @cached_property
    def entered(self) -> frozenset[str]:
        """States that can run at all: reachable, or the `on_max_steps` state."""
        extra = (self.loop.on_max_steps,) if self.loop.on_max_steps else ()
        return reachable_from(self.graph, self.loop.initial, *extra)

    @cached_property
    def finishing(self) -> frozenset[str]:
        """States with a path to some terminal."""
        return can_reach(self.graph, self.graph.terminals)

    @cached_property
    def idom(self) -> dict[str, str]:
        return immediate_dominators(self.graph, self.loop.initial)

    @cached_property
    def retries(self) -> frozenset[tuple[str, str]]:
        return retry_edges(self.graph)

    @cached_property
    def _memo(self) -> dict[str, Any]:
        return {}

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """A value computed once per lint run and shared by the rules that need it."""
        if key not in self._memo:
            self._memo[key] = compute()
        return cast(T, self._memo[key])

    @cached_property
    def _children(self) -> dict[str, tuple[Loop | None, str, str]]:
        return {}

    def child_loop(self, ref: str) -> tuple[Loop | None, str, str]:
        """The child loop `ref` names and, when it cannot be loaded, why and the loader's hint
        (resolved once)."""
        if ref not in self._children:
            self._children[ref] = _resolve(self.resolve_loop, ref)
        return self._children[ref]

    @property
    def initial_known(self) -> bool:
        return self.loop.initial in self.loop.states

    def reachable_states(self) -> list[State]:
        """Reachable states in file order."""
        return [s for s in self.loop.states.values() if s.name in self.reachable]


def _resolve(resolver: LoopResolver | None, ref: str) -> tuple[Loop | None, str, str]:
    if resolver is None:
        return None, "no resolver", ""
    try:
        return resolver(ref), "", ""
    except LoopError as exc:
        return None, exc.message, exc.hint
