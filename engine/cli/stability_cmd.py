"""`ll-harness history --stability`: how stable each judge is over the recorded history."""

from __future__ import annotations

import json
from pathlib import Path

from engine.model.errors import UsageError


def print_stability(target: str | None, since: str | None, as_json: bool) -> int:
    """Judges of loop runs (`.loops/runs`) and of `--semantic` harness rows, optionally only
    those of TARGET (a loop name or a harness target); `--since` limits both by date."""
    from engine.harness.stability import render_text, stability_report

    cwd = Path.cwd()
    if not (cwd / ".loops").is_dir():
        raise UsageError(
            f"no .loops directory in {cwd}", hint="run ll-loop or ll-harness from this directory"
        )
    rows = stability_report(cwd, target, since)
    if as_json:
        print(json.dumps({"judges": [r.to_json() for r in rows]}, indent=2))
    else:
        print(render_text(rows))
    return 0
