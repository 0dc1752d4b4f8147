"""Seeing what happened in a run: `ll-loop explain` (text, JSON) and the HTML report.

- `open_run(ref)` → `RunView` (facts from state.json, the trace from events.jsonl);
- `explain(facts, trace)` → `Explanation`, `render_text(explanation)`;
- `engine.report.html` builds the self-contained page of a run from sections;
  `engine.report.suite_page.suite_html(result)` the page of a suite run.
"""

from __future__ import annotations

from engine.report.explain import Explanation, RunFacts, explain, render_text
from engine.report.run import RunView, open_run

__all__ = ["Explanation", "RunFacts", "RunView", "explain", "open_run", "render_text"]
