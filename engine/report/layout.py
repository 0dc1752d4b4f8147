"""Where each state sits in the report's drawing: a layered layout computed with networkx.

Layers are the breadth-first distance from `initial` (states no route reaches go in a last
layer), so a run reads top to bottom and retry edges point back up. Inside a layer, states are
ordered by the mean position of the states that lead to them (the barycenter heuristic, one
downward sweep), which removes most crossings of an ordinary loop. networkx's
`multipartite_layout` then places the layers; it needs numpy, which the `report` extra installs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.graph.loop_graph import LoopGraph
from engine.model.errors import UsageError

NODE_W = 150
NODE_H = 40
GAP_X = 60
GAP_Y = 80
MARGIN = 40


@dataclass(frozen=True)
class Layout:
    """Centre of each state in SVG user units, and the canvas size."""

    centres: Mapping[str, tuple[float, float]]
    width: float
    height: float


def layers(graph: LoopGraph) -> dict[str, int]:
    """Breadth-first distance from `initial`; unreachable states one layer below the rest."""
    depth = {graph.initial: 0} if graph.initial in graph.order else {}
    frontier = list(depth)
    while frontier:
        following: list[str] = []
        for node in frontier:
            for nxt in graph.successors(node):
                if nxt not in depth:
                    depth[nxt] = depth[node] + 1
                    following.append(nxt)
        frontier = following
    last = max(depth.values(), default=-1) + 1
    return {node: depth.get(node, last) for node in graph.nodes}


def ordered_layers(graph: LoopGraph, layer_of: Mapping[str, int]) -> list[list[str]]:
    """States per layer, each layer sorted by the barycenter of its predecessors above."""
    count = max(layer_of.values(), default=-1) + 1
    rows: list[list[str]] = [[] for _ in range(count)]
    for node in graph.nodes:
        rows[layer_of[node]].append(node)
    position: dict[str, float] = {n: float(i) for i, n in enumerate(rows[0])} if rows else {}
    for index in range(1, count):

        def key(node: str, index: int = index) -> tuple[float, int]:
            above = [
                position[p]
                for p in graph.predecessors(node)
                if p in position and layer_of[p] < index
            ]
            centre = sum(above) / len(above) if above else float(len(graph.nodes))
            return centre, graph.order[node]

        rows[index].sort(key=key)
        position.update({n: float(i) for i, n in enumerate(rows[index])})
    return rows


def layout(graph: LoopGraph) -> Layout:
    """The layered layout of `graph`, scaled to SVG units (networkx computes the placement)."""
    try:
        import networkx
        import numpy  # noqa: F401  (networkx's layouts need it; say so plainly if missing)
    except ImportError as exc:
        raise UsageError(
            f"the HTML report needs numpy for networkx's graph layout ({exc})",
            hint="pip install 'll-loop[report]'",
        ) from exc
    layer_of = layers(graph)
    rows = ordered_layers(graph, layer_of)
    drawing: networkx.DiGraph[str] = networkx.DiGraph()
    for row in rows:
        drawing.add_nodes_from(row)
    for edge in graph.edges:
        drawing.add_edge(edge.source, edge.target)
    # the layers as lists: given as a node attribute, networkx groups them into sets, and the
    # order inside a layer (the barycenter's) came out by the process's string hash, so the same
    # run's graph was drawn differently at each rendering
    placed = networkx.multipartite_layout(
        drawing, subset_key=dict(enumerate(rows)), align="horizontal"
    )
    widest = max((len(r) for r in rows), default=1)
    width = widest * (NODE_W + GAP_X) + 2 * MARGIN
    height = len(rows) * (NODE_H + GAP_Y) + 2 * MARGIN
    xs = [float(p[0]) for p in placed.values()]
    ys = [float(p[1]) for p in placed.values()]
    centres: dict[str, tuple[float, float]] = {}
    for node, (x, y) in placed.items():
        cx = _scale(float(x), min(xs), max(xs), MARGIN + NODE_W / 2, width - MARGIN - NODE_W / 2)
        cy = _scale(float(y), min(ys), max(ys), MARGIN + NODE_H / 2, height - MARGIN - NODE_H / 2)
        centres[node] = (round(cx, 1), round(cy, 1))
    return Layout(centres, width, height)


def _scale(value: float, low: float, high: float, start: float, end: float) -> float:
    if high == low:
        return (start + end) / 2
    return start + (value - low) / (high - low) * (end - start)
