"""The HTML page of an `ll-harness` target's history: pass rate over time with its intervals,
its judges' stability, and the latest attempts (IO: reads history.db and the run directories).

A suite run has its own page, built from its result alone: `engine.report.suite_page`."""

from __future__ import annotations

from html import escape
from pathlib import Path

from engine.report.page import Section, render_page, table
from engine.report.sections import harness_section, stability_section

LAST = 30


def harness_report_html(root: Path, target: str) -> str:
    from engine.harness.history_report import summarize_counts
    from engine.harness.stability import stability_report
    from engine.harness.trends import RatePoint, recent_rate_series
    from engine.runtime.history import Attempt, AttemptGroup, history_path, open_history

    # Counted in SQL, and only the rows and invocations shown read: a target measured in CI
    # for months made a 20 MB page (a chart point per invocation) from 300 MB of rows.
    groups: list[AttemptGroup] = []
    attempts: list[Attempt] = []
    points: list[RatePoint] = []
    total = 0
    if history_path(root).exists():
        with open_history(root) as history:
            groups = history.attempt_counts(target)
            attempts = history.attempts(target, limit=LAST)
            points, total = recent_rate_series(history, target)
    summary = summarize_counts(target, groups, attempts, None)
    rows = [
        (
            str(a.id),
            escape(a.created_at[:19].replace("T", " ")),
            escape(a.runner),
            f'<span class="verdict-{escape(a.outcome)}">{escape(a.outcome)}</span>',
            "" if a.exit_code is None else str(a.exit_code),
            escape(a.semantic_verdict or ""),
            escape(a.reason or ""),
            "superseded" if not a.authoritative else "",
        )
        for a in attempts[:LAST]
    ]
    sections = [
        harness_section(points, target, total),
        stability_section(stability_report(root, target, None)),
        Section(
            "attempts",
            "Latest attempts",
            table(["id", "when", "runner", "outcome", "exit", "verdict", "reason", ""], rows)
            if rows
            else "<p>No attempts recorded.</p>",
        ),
    ]
    subtitle = (
        f"pass rate {summary.pass_rate.render()} over {summary.tally.total} authoritative "
        f"attempts; abstention {summary.abstention_rate.render()}"
    )
    return render_page(f"ll-harness history · {target}", subtitle, sections)
