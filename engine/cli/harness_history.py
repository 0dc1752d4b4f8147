"""`ll-harness history --stability` and `--html`: judges and history over the recorded runs."""

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


def write_history_html(target: str | None, out: Path) -> None:
    """`ll-harness history TARGET --html FILE`: the target's history as one HTML page."""
    from engine.cli.common import err
    from engine.report.harness_page import harness_report_html

    if target is None:
        raise UsageError("--html needs a TARGET", hint="ll-harness history TARGET --html FILE")
    page = harness_report_html(Path.cwd(), target)
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror}") from exc
    err(f"wrote {out}")
