"""One self-contained HTML page made of sections: inline CSS and a few lines of inline script,
nothing fetched, so the file can be mailed, attached to CI, or opened offline.

A report is a title plus a list of `Section`s; each part of ll-loop that has something to show
contributes a function returning a `Section` (the run report's sections are in
`engine.report.sections`; a suite result adds its own the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from engine.model.terminal import printable


@dataclass(frozen=True)
class Section:
    """A titled part of the page; `body` is HTML already escaped by whoever built it."""

    id: str
    title: str
    body: str


def render_page(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    """The whole document."""
    nav = " · ".join(f'<a href="#{escape(s.id)}">{escape(s.title)}</a>' for s in sections)
    body = "\n".join(
        f'<section id="{escape(s.id)}"><h2>{escape(s.title)}</h2>\n{s.body}\n</section>'
        for s in sections
    )
    # text from actions and models may hold escape sequences and other control characters:
    # they are invalid in HTML, and a page viewed as text (cat, a CI log) would obey them
    return printable(f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{CSS}</style>
</head>
<body>
<header><h1>{escape(title)}</h1><p class="subtitle">{escape(subtitle)}</p><nav>{nav}</nav></header>
<main>
{body}
</main>
<script>{SCRIPT}</script>
</body>
</html>
""")


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    cls: str = "",
    row_attrs: Sequence[str] | None = None,
) -> str:
    """An HTML table; cells are HTML (escape text before passing it); `row_attrs` are extra
    attributes of each `<tr>` (escaped by the caller)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    attrs = row_attrs or [""] * len(rows)
    lines = "".join(
        f"<tr{(' ' + a) if a else ''}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
        for row, a in zip(rows, attrs, strict=True)
    )
    klass = f' class="{cls}"' if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{lines}</tbody></table>"


CSS = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #cbd2d9; --taken: #d9480f;
  --ok: #2b8a3e; --bad: #c92a2a; --bg: #f8f9fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
  margin: 0; background: #fff; }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); background: var(--bg); }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 26px 0 10px; border-bottom: 1px solid var(--line);
  padding-bottom: 4px; }
.subtitle { margin: 0 0 8px; color: var(--muted); }
nav a { color: #1864ab; text-decoration: none; }
main { padding: 0 28px 40px; }
.why { font-size: 15px; padding: 10px 14px; border-left: 4px solid var(--taken);
  background: #fff4e6; }
.why.success { border-color: var(--ok); background: #ebfbee; }
.why.failure, .why.error { border-color: var(--bad); background: #fff5f5; }
.facts span { display: inline-block; margin-right: 18px; color: var(--muted); }
.facts b { color: var(--ink); }
pre { background: var(--bg); padding: 8px 10px; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left;
  vertical-align: top; }
th { background: var(--bg); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict-yes, .verdict-pass, .verdict-target { color: var(--ok); font-weight: 600; }
.verdict-no, .verdict-fail, .verdict-error { color: var(--bad); font-weight: 600; }
.flag { color: var(--bad); font-weight: 600; }
.graph-wrap { overflow-x: auto; border: 1px solid var(--line); background: #fff; }
svg.graph .node rect.shape { fill: #fff; stroke: #8a94a6; stroke-width: 1.3; }
svg.graph .node.visited rect.shape { fill: #fff4e6; stroke: var(--taken); stroke-width: 2.2; }
svg.graph .node.terminal.success rect.shape { stroke: var(--ok); }
svg.graph .node.terminal.failure rect.shape { stroke: var(--bad); }
svg.graph .node.current rect.shape { stroke-dasharray: 5 3; stroke-width: 3; }
svg.graph .node .label { font-size: 13px; text-anchor: middle; fill: var(--ink); }
svg.graph .badge { fill: var(--taken); }
svg.graph .badge-text { font-size: 11px; fill: #fff; text-anchor: middle; font-weight: 700; }
svg.graph .start { stroke: #8a94a6; stroke-width: 1.3; }
svg.graph .edge path { fill: none; stroke: #b0b8c4; }
svg.graph .edge.retry path { stroke-dasharray: 6 3; }
svg.graph .edge.budget path, svg.graph .budget-entry line { stroke-dasharray: 2 3; }
svg.graph .budget-entry line { stroke: #8a94a6; stroke-width: 1.3; }
svg.graph .edge.taken path { stroke: var(--taken); }
svg.graph .edge-label { font-size: 11px; fill: var(--muted); paint-order: stroke;
  stroke: #fff; stroke-width: 3px; }
svg.graph .edge.taken .edge-label { fill: var(--taken); font-weight: 700; }
svg.graph .node.selected rect.shape { stroke: #1864ab; stroke-width: 3; }
svg.timeline rect.bar { fill: #ffd8a8; stroke: var(--taken); }
svg.timeline rect.bar.error, svg.timeline rect.bar.no { fill: #ffc9c9; stroke: var(--bad); }
svg.timeline rect.bar.yes { fill: #d3f9d8; stroke: var(--ok); }
svg.timeline text, svg.chart text { font-size: 11px; fill: var(--muted); }
svg.chart .grid { stroke: #e9ecef; }
svg.chart .interval { stroke: #1864ab; stroke-width: 2; }
svg.chart circle { fill: #1864ab; }
figure.trend { display: inline-block; margin: 0 24px 16px 0; vertical-align: top; }
figure.trend figcaption { font-size: 13px; margin-bottom: 4px; }
tr.dim { opacity: 0.35; }
.verdict-inconclusive, .verdict-ungated { color: var(--taken); font-weight: 600; }
svg.bar .axis { stroke: var(--line); }
svg.bar .range { fill: #d0ebff; stroke: #1864ab; }
svg.bar circle { fill: #1864ab; }
svg.bar .threshold { stroke: var(--bad); stroke-width: 2; stroke-dasharray: 3 2; }
svg.bar text { font-size: 10px; fill: var(--muted); }
h3 { font-size: 14px; margin: 14px 0 4px; }
.reason { white-space: pre-wrap; max-width: 900px; overflow-wrap: anywhere; }
.text { max-width: 60ch; overflow-wrap: anywhere; }
main p { overflow-wrap: anywhere; }
.legend { color: var(--muted); font-size: 12px; }
"""

# Clicking a state in the graph shows only its rows in the step table (click again: all).
SCRIPT = """
(function () {
  var selected = null;
  document.querySelectorAll('svg.graph .node').forEach(function (node) {
    node.style.cursor = 'pointer';
    node.addEventListener('click', function () {
      var state = node.getAttribute('data-state');
      selected = selected === state ? null : state;
      document.querySelectorAll('svg.graph .node').forEach(function (other) {
        other.classList.toggle('selected', other.getAttribute('data-state') === selected);
      });
      document.querySelectorAll('tr[data-state]').forEach(function (row) {
        row.classList.toggle('dim', selected !== null &&
          row.getAttribute('data-state') !== selected);
      });
    });
  });
  document.body.setAttribute('data-ready', 'yes');
})();
"""
