"""`ll-harness history --stability` and `--html`: judges and history over the recorded runs."""

from __future__ import annotations

import json
from pathlib import Path

from engine.model.errors import UsageError


def print_stability(target: str | None, since: str | None, as_json: bool) -> int:
    """Judges of loop runs (`.loops/runs`) and of `--semantic` harness rows, optionally only
    those of TARGET (a loop name or a harness target); `--since` limits both by date."""
    from engine.harness.stability import render_text, stability_report
    from engine.load.project import loops_dir, project_root

    root = project_root()
    if not loops_dir(root).is_dir():
        raise UsageError(
            f"no .loops directory in {root}", hint="run ll-loop or ll-harness in this project first"
        )
    rows = stability_report(root, target, since)
    if as_json:
        print(json.dumps({"judges": [r.to_json() for r in rows]}, indent=2))
    else:
        print(render_text(rows))
    return 0


def write_history_html(target: str | None, out: Path) -> None:
    """`ll-harness history TARGET --html FILE`: the target's history as one HTML page."""
    from engine.cli.common import write_report
    from engine.report.harness_page import harness_report_html

    if target is None:
        raise UsageError("--html needs a TARGET", hint="ll-harness history TARGET --html FILE")
    from engine.load.project import project_root

    write_report(out, harness_report_html(project_root(), target), flag="--html")
