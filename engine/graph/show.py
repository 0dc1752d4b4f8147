"""Render a loop's compiled graph for people: a text table, Mermaid, Graphviz dot, or JSON.

Pure functions from (loop, graph) to text. Retry edges (back edges of the depth-first walk
from `initial`, see `engine.graph.loop_graph.retry_edges`) are marked `↺ retry`; terminals
show their outcome; the `on_max_steps` state, which no route names, is entered from
`max_steps N spent` (the budget can run out in any state).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from engine.graph.loop_graph import Edge, LoopGraph, compile_graph, retry_edges
from engine.model.loop import Loop, State

RETRY_MARK = "↺ retry"
OUTCOME_MARK = {"success": "✓ success", "failure": "✗ failure"}

Renderer = Callable[[Loop, LoopGraph], str]
RENDERERS: dict[str, Renderer] = {}


def renderer(name: str) -> Callable[[Renderer], Renderer]:
    def register(function: Renderer) -> Renderer:
        RENDERERS[name] = function
        return function

    return register


def render(loop: Loop, fmt: str) -> str:
    """`loop` in format `fmt` (one of `RENDERERS`)."""
    return RENDERERS[fmt](loop, compile_graph(loop))


def _outcome(state: State) -> str:
    return "failure" if state.failure else "success"


def _kind(state: State) -> str:
    if state.terminal:
        return f"terminal {OUTCOME_MARK[_outcome(state)]}"
    kind = f"loop {state.loop}" if state.is_subloop else state.action_type
    if state.evaluate is not None:
        kind += f" [{state.evaluate.type}{', default' if state.evaluate.implicit else ''}"
        judges = state.evaluate.judges
        kind += f": {', '.join(j.name for j in judges)}]" if judges else "]"
    return kind


def _first_line(text: str, width: int = 60) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


@renderer("text")
def render_text(loop: Loop, graph: LoopGraph) -> str:
    """A readable table: each state, what it runs, and its transitions."""
    retries = retry_edges(graph)
    head = f"{loop.name}: initial {loop.initial}, max_steps {loop.max_steps}"
    if loop.on_max_steps:
        head += f", on_max_steps → {loop.on_max_steps}"
    scope = ", ".join(loop.scope) if loop.scope is not None else "(none: whole repository)"
    lines = [head, f"scope: {scope}"]
    if loop.description:
        lines.append(loop.description.strip().splitlines()[0])
    width = max(len(name) for name in loop.states)
    dangling: dict[str, list[Edge]] = {}
    for edge in graph.dangling:
        dangling.setdefault(edge.source, []).append(edge)
    for state in loop.states.values():
        marker = "→" if state.name == loop.initial else " "
        lines.append("")
        lines.append(f"{marker} {state.name.ljust(width)}  {_kind(state)}")
        if state.description.strip():  # what the state is for, in its author's words
            lines.append(f"    {' ' * width}  # {_first_line(state.description)}")
        if state.action:
            lines.append(f"    {' ' * width}  $ {_first_line(state.action)}")
        if state.max_retries is not None:
            lines.append(f"    {' ' * width}  max_retries {state.max_retries}")
        if state.name == loop.on_max_steps:
            lines.append(f"    ← {_spent(loop)} (in any state): {_then(state)}")
        for edge in (*graph.out_edges[state.name], *dangling.get(state.name, ())):
            lines.append(f"    {edge.label} → {_target_text(loop, edge, retries)}")
    return "\n".join(lines)


def _spent(loop: Loop) -> str:
    return f"max_steps {loop.max_steps} spent"


def _then(state: State) -> str:
    """What entering the `on_max_steps` state does: no route of it is ever followed."""
    if state.terminal:
        return "the run ends here, inconclusive"
    return "runs once, then the run ends"


def _target_text(loop: Loop, edge: Edge, retries: frozenset[tuple[str, str]]) -> str:
    target = loop.states.get(edge.target)
    if target is None:
        return f"{edge.target!r} (unknown state)"  # quoted: any text, a newline included
    text = edge.target
    if target.terminal:
        text += f" ({_outcome(target)})"
    if (edge.source, edge.target) in retries:
        text += f"  {RETRY_MARK}"
    return text


@renderer("mermaid")
def render_mermaid(loop: Loop, graph: LoopGraph) -> str:
    """A Mermaid `stateDiagram-v2`; terminals coloured by outcome, retry edges labelled."""
    retries = retry_edges(graph)
    ids = {name: f"s{i}" for i, name in enumerate(graph.nodes)}
    lines = ["stateDiagram-v2"]
    for name in graph.nodes:
        lines.append(f'    state "{_mermaid_text(name)}" as {ids[name]}')
    if loop.initial in ids:
        lines.append(f"    [*] --> {ids[loop.initial]}")
    for edge in graph.edges:
        label = edge.label + (f" {RETRY_MARK}" if (edge.source, edge.target) in retries else "")
        lines.append(f"    {ids[edge.source]} --> {ids[edge.target]}: {_mermaid_text(label)}")
    for state in loop.terminals():
        lines.append(f"    {ids[state.name]} --> [*]")
    budget = loop.states.get(loop.on_max_steps or "")
    if budget is not None:  # no route leads there: the budget's end, in any state, does
        lines.append(f'    state "{_mermaid_text(_spent(loop))}" as budget')
        lines.append(f"    budget --> {ids[budget.name]}: {_mermaid_text(_then(budget))}")
        lines.append("    classDef spent stroke-dasharray:2 3,fill:#fff")
        lines.append("    class budget spent")
    lines.append("    classDef success fill:#d4f7d4,stroke:#2e7d32")
    lines.append("    classDef failure fill:#f9d0d0,stroke:#c62828")
    for state in loop.terminals():
        lines.append(f"    class {ids[state.name]} {_outcome(state)}")
    return "\n".join(lines)


def _mermaid_text(text: str) -> str:
    return text.replace('"', "'").replace(":", "#58;")


@renderer("dot")
def render_dot(loop: Loop, graph: LoopGraph) -> str:
    """Graphviz dot: boxes for states, double circles for terminals, dashed retry edges."""
    retries = retry_edges(graph)
    lines = [f"digraph {_dot_id(loop.name)} {{", "  rankdir=LR;", "  node [shape=box];"]
    # the start point's id has a space, which no state name has: `__start__` is a state name
    lines.append('  "start point" [shape=point, label=""];')
    if loop.initial in loop.states:
        lines.append(f'  "start point" -> {_dot_id(loop.initial)};')
    for state in loop.states.values():
        if state.terminal:
            colour = "red" if state.failure else "darkgreen"
            label = f"{state.name}\\n({_outcome(state)})"
            lines.append(
                f"  {_dot_id(state.name)} [shape=doublecircle, color={colour}, "
                f"label={_dot_id(label, escaped=True)}];"
            )
        else:
            lines.append(f"  {_dot_id(state.name)};")
    for edge in graph.edges:
        attrs = f"label={_dot_id(edge.label)}"
        if (edge.source, edge.target) in retries:
            attrs = f"label={_dot_id(edge.label + ' ' + RETRY_MARK)}, style=dashed"
        lines.append(f"  {_dot_id(edge.source)} -> {_dot_id(edge.target)} [{attrs}];")
    budget = loop.states.get(loop.on_max_steps or "")
    if budget is not None:  # a node id no state can have (state names have no spaces)
        lines.append(f'  "max_steps spent" [shape=plaintext, label={_dot_id(_spent(loop))}];')
        lines.append(
            f'  "max_steps spent" -> {_dot_id(budget.name)} '
            f"[label={_dot_id(_then(budget))}, style=dotted];"
        )
    lines.append("}")
    return "\n".join(lines)


def _dot_id(text: str, *, escaped: bool = False) -> str:
    if not escaped:
        text = text.replace("\\", "\\\\")
    return '"' + text.replace('"', '\\"') + '"'


@renderer("json")
def render_json(loop: Loop, graph: LoopGraph) -> str:
    """Loop metadata plus the graph as networkx node-link data (networkx imported only here)."""
    from networkx.readwrite import json_graph

    data: dict[str, Any] = {
        "name": loop.name,
        "description": loop.description,
        "initial": loop.initial,
        "max_steps": loop.max_steps,
        "on_max_steps": loop.on_max_steps,
        "scope": list(loop.scope) if loop.scope is not None else None,
        "source": loop.source,
        "retry_edges": [list(edge) for edge in sorted(retry_edges(graph))],
        "unknown_targets": [edge._asdict() for edge in graph.dangling],
        "graph": json_graph.node_link_data(graph.to_networkx(), edges="edges"),
    }
    for node in data["graph"]["nodes"]:  # each state's description, as the text shows it
        state = loop.states.get(node["id"])
        node["description"] = state.description if state is not None else ""
    return json.dumps(data, indent=2, default=str)
