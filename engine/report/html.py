"""The HTML report of a run (IO: it reads the loop file, the history and the run directories).

`run_report_html` gathers what the sections of `engine.report.sections` show and assembles them
with `engine.report.page.render_page`. Everything degrades instead of failing: a loop file that
no longer loads is drawn from the states the events name, a missing history shows no chart.
"""

from __future__ import annotations

from pathlib import Path

from engine.graph.cost import CostBound
from engine.graph.loop_graph import Edge, LoopGraph, compile_graph
from engine.model.errors import LoopError
from engine.model.loop import Loop
from engine.model.timefmt import epoch_seconds
from engine.report.bound import static_bound
from engine.report.explain import explain, unfinished_label
from engine.report.page import Section, render_page
from engine.report.run import RunView
from engine.report.runlog import Trace
from engine.report.sections import (
    cost_section,
    graph_section,
    harness_section,
    judges_section,
    path_counts,
    stability_section,
    summary_section,
    timeline_section,
)


def run_report_html(view: RunView, root: Path) -> str:
    """The self-contained page for one run (or one child run) of the project in `root`."""
    explanation = explain(view.facts, view.trace, child=view.child)
    loop, why_not = _load(view.loop_file, view.started_at)
    graph = compile_graph(loop) if loop is not None else graph_from_trace(view.trace)
    counts = path_counts(view.trace, view.facts.current)
    sections = [
        summary_section(explanation),
        graph_section(graph, counts, note=why_not),
        timeline_section(
            view.trace, explanation.path, unfinished=unfinished_label(view.facts.status)
        ),
        judges_section(explanation),
        cost_section(explanation, _bound(loop, root) if loop is not None else None),
        *history_sections(root, view.facts.loop),
    ]
    return render_page(
        f"{view.facts.loop} · run {view.facts.named}",
        explanation.reason,
        sections,
    )


def history_sections(root: Path, loop: str) -> list[Section]:
    """Judge stability over the loop's runs, and its ll-harness pass rate over time."""
    from engine.harness.stability import stability_report
    from engine.harness.trends import RatePoint, recent_rate_series
    from engine.runtime.history import history_path, open_history

    judges = [r for r in stability_report(root, loop, None) if r.judge.startswith(f"{loop}/")]
    points: list[RatePoint] = []
    total = 0
    if history_path(root).exists():
        with open_history(root) as history:
            points, total = recent_rate_series(history, loop)
    return [stability_section(judges), harness_section(points, loop, total)]


def graph_from_trace(trace: Trace | None) -> LoopGraph:
    """A graph of the states and transitions the events name (the loop file is gone)."""
    from types import MappingProxyType

    steps = trace.steps if trace else []
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str], Edge] = {}
    for step in steps:
        nodes[step.state] = None
        if step.target:
            nodes[step.target] = None
            edges[(step.state, step.target)] = Edge(step.state, step.target, step.verdict or "")
    names = tuple(nodes) or ((trace.initial,) if trace and trace.initial else ("?",))
    out = {n: tuple(e for e in edges.values() if e.source == n) for n in names}
    inc = {n: tuple(e for e in edges.values() if e.target == n) for n in names}
    end = (trace.end or {}) if trace else {}
    final = end.get("final_state") if end.get("terminated_by") == "terminal" else None
    return LoopGraph(
        name=trace.loop if trace else "?",
        initial=names[0],
        nodes=names,
        order=MappingProxyType({n: i for i, n in enumerate(names)}),
        out_edges=MappingProxyType(out),
        in_edges=MappingProxyType(inc),
        terminals=frozenset({final} if isinstance(final, str) else set()),
        failures=frozenset(
            {final} if isinstance(final, str) and end.get("outcome") == "failure" else set()
        ),
        dangling=(),
    )


def _load(loop_file: str, started_at: str) -> tuple[Loop | None, str]:
    """The run's loop, or None and why the graph is the one its events name instead: a file
    changed after the run started is not the loop the run ran (states renamed, edges moved)."""
    if not loop_file:
        return None, "the run names no loop file"
    from engine.load.loader import load_loop_file

    path = Path(loop_file)
    try:
        changed = path.stat().st_mtime
    except OSError:
        return None, f"{loop_file} is gone"
    started = epoch_seconds(started_at)
    if started is None or changed > started:
        return None, f"{loop_file} changed after the run started"
    try:
        return load_loop_file(path), ""
    except (LoopError, OSError):
        return None, f"{loop_file} no longer loads"


def _bound(loop: Loop, root: Path) -> CostBound | None:
    try:
        return static_bound(loop, root)
    except LoopError:  # a bad price file: the report still shows the spend
        return None
