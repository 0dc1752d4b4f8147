"""The loop's graph as inline SVG, with the path a run took drawn over it.

Every state is a `<g class="node" data-state=... data-visits=...>`; every pair of states joined
by routes is one `<g class="edge" data-source=... data-target=... data-count=...>` whose label
lists the route labels and, when the run went that way, how often (`×3`). Edges the run took
get the class `taken` and a stroke that grows with the count. Hand-written SVG (no drawing
library): the markup is small and the browser test reads these attributes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape

from engine.graph.loop_graph import LoopGraph, retry_edges
from engine.report.layout import NODE_H, NODE_W, Layout

CURVE = 46.0  # how far a back edge bows out of the straight line


@dataclass(frozen=True)
class PathCounts:
    """How often a run executed each state and took each (source, target) transition."""

    visits: Mapping[str, int]
    transitions: Mapping[tuple[str, str], int]
    current: str | None = None  # where the run stands (or ended)
    budget: tuple[str, str] | None = None  # (the state it was in, on_max_steps) at budget's end
    max_steps: int | None = None  # the run's step budget


# the width of one character of an edge label (11px, bold when taken), a little generous
LABEL_CHAR_W = 7.0
LABEL_GAP = 6.0  # how far a label stands off its edge


def graph_svg(graph: LoopGraph, placed: Layout, counts: PathCounts) -> str:
    """The whole `<svg>` element."""
    labels: dict[tuple[str, str], list[str]] = {}
    for edge in graph.edges:
        labels.setdefault((edge.source, edge.target), []).append(edge.label)
    retries = retry_edges(graph)
    parts: list[str] = []
    reach = placed.width  # widened for a label that runs past the states (a self-loop's)
    for (source, target), names in labels.items():
        paired = (target, source) in labels and source != target
        drawn, right = _edge(
            source,
            target,
            names,
            placed,
            counts.transitions.get((source, target), 0),
            retry=(source, target) in retries,
            paired=paired,
        )
        parts.append(drawn)
        reach = max(reach, right + 8)
    parts.append(_budget(graph, placed, counts))
    for node in graph.nodes:
        parts.append(_node(graph, node, placed, counts))
    head = (
        f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="{reach:.0f}" '
        f'height="{placed.height:.0f}" viewBox="0 0 {reach:.0f} {placed.height:.0f}" '
        f'role="img" aria-label="{escape(graph.name)} state graph">'
    )
    return "\n".join([head, _DEFS, *parts, "</svg>"])


_DEFS = """<defs>
<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" markerHeight="9"
 markerUnits="userSpaceOnUse" orient="auto-start-reverse">
<path d="M0,0 L10,5 L0,10 z" fill="#8a94a6"/></marker>
<marker id="arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="13"
 markerHeight="13" markerUnits="userSpaceOnUse" orient="auto-start-reverse">
<path d="M0,0 L10,5 L0,10 z" fill="#d9480f"/></marker>
</defs>"""


def _node(graph: LoopGraph, node: str, placed: Layout, counts: PathCounts) -> str:
    x, y = placed.centres[node]
    visits = counts.visits.get(node, 0)
    classes = ["node"]
    if node in graph.terminals:
        classes.append("terminal " + ("failure" if node in graph.failures else "success"))
    if node == graph.initial:
        classes.append("initial")
    if visits:
        classes.append("visited")
    if node == counts.current:
        classes.append("current")
    left, top = x - NODE_W / 2, y - NODE_H / 2
    shape = (
        f'<rect class="shape" x="{left:.1f}" y="{top:.1f}" width="{NODE_W}" height="{NODE_H}" rx="'
        f'{NODE_H / 2 if node in graph.terminals else 8}"/>'
    )
    badge = ""
    if visits:
        # a pill as wide as the count: a circle fits two digits, a long run's 50000 is five
        width = max(22, 7 * len(str(visits)) + 10)
        badge = (
            f'<rect class="badge" x="{left + NODE_W - 4 - width / 2:.1f}" y="{top - 7:.1f}" '
            f'width="{width}" height="22" rx="11"/>'
            f'<text class="badge-text" x="{left + NODE_W - 4:.1f}" y="{top + 8:.1f}">'
            f"{visits}</text>"
        )
    start = ""
    if node == graph.initial:
        start = (
            f'<line class="start" x1="{x:.1f}" y1="{top - 26:.1f}" x2="{x:.1f}" '
            f'y2="{top - 2:.1f}" marker-end="url(#arrow)"/>'
        )
    title = f"{node}: executed {visits} time{'s' if visits != 1 else ''}"
    return (
        f'<g class="{" ".join(classes)}" data-state="{escape(node)}" data-visits="{visits}">'
        f"<title>{escape(title)}</title>{start}{shape}"
        f'<text class="label" x="{x:.1f}" y="{y + 5:.1f}">{escape(_short(node))}</text>'
        f"{badge}</g>"
    )


def _budget(graph: LoopGraph, placed: Layout, counts: PathCounts) -> str:
    """How a run reaches the `on_max_steps` state, which no route names: the hop this run
    took when its budget ran out (dotted, from the state it was in), or else an entry arrow
    like the initial state's (the budget can run out in any state)."""
    spent = f"max_steps {counts.max_steps} spent" if counts.max_steps else "max_steps spent"
    if counts.budget is not None and all(n in placed.centres for n in counts.budget):
        was_in, state = counts.budget
        hop, _ = _edge(was_in, state, [spent], placed, 1, retry=False, paired=False, budget=True)
        return hop
    target = graph.on_max_steps
    if target is None or target not in placed.centres:
        return ""
    x, y = placed.centres[target]
    at, top = x + NODE_W / 4, y - NODE_H / 2
    return (
        f'<g class="budget-entry" data-target="{escape(target)}"><title>{escape(spent)}: '
        f"on_max_steps runs this state once, then the run ends</title>"
        f'<line x1="{at:.1f}" y1="{top - 26:.1f}" x2="{at:.1f}" y2="{top - 2:.1f}" '
        'marker-end="url(#arrow)"/>'
        f'<text class="edge-label" x="{at - 4:.1f}" y="{top - 12:.1f}" text-anchor="end">'
        f"{escape(spent)}</text></g>"
    )


def _edge(
    source: str,
    target: str,
    names: list[str],
    placed: Layout,
    count: int,
    *,
    retry: bool,
    paired: bool,
    budget: bool = False,
) -> tuple[str, float]:
    """The edge's `<g>`, and how far right its label reaches (estimated)."""
    sx, sy = placed.centres[source]
    tx, ty = placed.centres[target]
    side = -1 if budget else 1  # the budget's hop keeps clear of a route between the same two
    if source == target:
        edge_x = sx + side * NODE_W / 2
        out = edge_x + side * 48
        d = (
            f"M{edge_x:.1f},{sy - 10:.1f} C{out:.1f},{sy - 34:.1f} "
            f"{out:.1f},{sy + 34:.1f} {edge_x:.1f},{sy + 10:.1f}"
        )
        lx, ly = (edge_x + 40, sy + 4) if not budget else (out - 60, sy + 4)
        anchor = "start"
    else:
        # two-way pairs bow apart; an edge back up (or sideways) bows clear of the forward ones
        bow = CURVE / 2 if paired else (CURVE if ty <= sy else 0.0)
        d, lx, ly, anchor = _curve((sx, sy), (tx, ty), -CURVE if budget else bow)
    classes = ["edge"] + (["taken"] if count else []) + (["retry"] if retry else [])
    classes += ["budget"] if budget else []
    width = 1.3 if not count else min(7.0, 2.2 + 1.2 * math.log2(count + 1))
    label = "/".join(names) + (f" ×{count}" if count else "")
    reach = len(label) * LABEL_CHAR_W * (1.0 if anchor == "end" else 0.5)
    if anchor != "start" and lx < reach:  # it would leave the canvas on the left
        anchor, lx = "start", lx + 10
    marker = "arrow-taken" if count else "arrow"
    text_w = len(label) * LABEL_CHAR_W
    right = lx + {"start": text_w, "middle": text_w / 2}.get(anchor, 0.0)
    return (
        f'<g class="{" ".join(classes)}" data-source="{escape(source)}" '
        f'data-target="{escape(target)}" data-count="{count}" '
        f'data-labels="{escape(" ".join(names))}">'
        f'<path d="{d}" stroke-width="{width:.1f}" marker-end="url(#{marker})"/>'
        f'<text class="edge-label" x="{lx:.1f}" y="{ly:.1f}"'
        + (f' text-anchor="{anchor}"' if anchor != "start" else "")
        + f">{escape(label)}</text></g>"
    ), right


def _curve(
    start: tuple[float, float], end: tuple[float, float], bow: float
) -> tuple[str, float, float, str]:
    """A path from border to border of the two state boxes, bowed `bow` to the right of its
    direction (a quadratic curve), where its label goes, and its text-anchor: the label lies on
    the outer side (a curve bowed left, an edge heading left: it ends there), so the labels of a
    two-way pair (`no ×3`, `next ×2`), or of two edges fanning out of one state, do not lie on
    top of each other."""
    (sx, sy), (tx, ty) = start, end
    dx, dy = tx - sx, ty - sy
    length = math.hypot(dx, dy) or 1.0
    nx, ny = -dy / length, dx / length  # the normal, to the left of the direction
    cx, cy = (sx + tx) / 2 - nx * bow, (sy + ty) / 2 - ny * bow
    ax, ay = _border(sx, sy, cx, cy)
    bx, by = _border(tx, ty, cx, cy)
    if bow:
        path = f"M{ax:.1f},{ay:.1f} Q{cx:.1f},{cy:.1f} {bx:.1f},{by:.1f}"
        lx, ly = (ax + 2 * cx + bx) / 4, (ay + 2 * cy + by) / 4
    else:
        path = f"M{ax:.1f},{ay:.1f} L{bx:.1f},{by:.1f}"
        lx, ly = (ax + bx) / 2, (ay + by) / 2
    # the label's side: the bow's for a curve; for a straight edge the side it heads to (right
    # of a vertical one). It stands off the line along that side's normal, anchored away from
    # the line, so it neither covers its own edge nor the edge bowed the other way
    if bow:
        ox, oy = (-nx, -ny) if bow > 0 else (nx, ny)
    else:
        ox, oy = (nx, ny) if (nx > 0) == (dx >= 0 if abs(dx) > 1 else True) else (-nx, -ny)
    px, py = lx + ox * LABEL_GAP, ly + oy * LABEL_GAP
    anchor = "start" if ox > 0.3 else ("end" if ox < -0.3 else "middle")
    baseline = py if oy < -0.3 else (py + 9 if oy > 0.3 else py + 4)
    return path, px, baseline, anchor


def _border(cx: float, cy: float, towards_x: float, towards_y: float) -> tuple[float, float]:
    """Where the line from a box's centre towards a point leaves the box."""
    dx, dy = towards_x - cx, towards_y - cy
    if dx == 0 and dy == 0:
        return cx, cy
    scale = min(
        (NODE_W / 2) / abs(dx) if dx else math.inf,
        (NODE_H / 2) / abs(dy) if dy else math.inf,
    )
    return cx + dx * scale, cy + dy * scale


def _short(name: str, width: int = 20) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"
