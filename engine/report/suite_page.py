"""The HTML page of a suite run (`ll-harness suite --output html`), pure: a `SuiteResult` in,
one self-contained page out, built from the report's page, table and chart pieces.

Sections: the result (verdict and what its exit code means, the subject, totals), the judges
(aggregates with their 95% intervals drawn against their gates), the baseline subject and the
deltas when there are, the judges that failed or errored case by case with their reasons, the
totals, and — when the caller read them from history.db — each judge's pass rate over the
suite's runs. Every text that comes from the suite, its cases or its judges is escaped here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

from engine.harness.trends import RatePoint
from engine.report.charts import interval_bar, rate_chart
from engine.report.page import Section, render_page, table
from engine.runtime.history import SuiteJudgementRow
from engine.suites.aggregate import JudgeSummary, Verdict
from engine.suites.render import aggregate_text
from engine.suites.result import SuiteResult
from engine.suites.trends import RunRate

REASON_CHARS = 4000  # a judge's rationale or error beyond this is clipped (the JSON has it all)

MEANINGS = {
    Verdict.PASS: "every gated judge's 95% interval is at or above its threshold",
    Verdict.FAIL: "a gated judge's 95% interval lies wholly below its threshold",
    Verdict.INCONCLUSIVE: "a gated judge's 95% interval straddles its threshold, or its errored "
    "cases could still turn it: more cases would decide",
    Verdict.ERROR: "every case of a gated judge errored (or, in a suite without gates, every "
    "judgement): nothing was measured",
    Verdict.UNGATED: "no threshold was judged (the suite has none, or only a pairwise judge's "
    "with nothing to compare), so the exit code gates nothing",
}
_WHY_CLASS = {Verdict.PASS: "success", Verdict.FAIL: "failure", Verdict.ERROR: "error"}


def suite_html(result: SuiteResult, trends: Mapping[str, Sequence[RunRate]] | None = None) -> str:
    """The whole page for one suite run (with `trends`, from `judge_trends`, its judges over
    time)."""
    sections = [result_section(result), judges_section(result.summaries, "judges", "Judges")]
    if result.baseline_summaries:
        sections.append(
            judges_section(result.baseline_summaries, "baseline", "Baseline subject's judges")
        )
    if result.deltas:
        sections.append(deltas_section(result))
    sections += [failures_section(result.failing()), totals_section(result)]
    if trends is not None:
        sections.append(trends_section(result, trends))
    subtitle = f"{result.verdict.value} (exit {result.exit_code}): {MEANINGS[result.verdict]}"
    return render_page(f"Suite {result.suite} · run {result.run_id}", subtitle, sections)


def result_section(result: SuiteResult) -> Section:
    verdict = result.verdict
    facts = [
        ("suite", result.suite),
        ("file", result.path or "(inline)"),
        ("run", result.run_id),
        ("cases", str(result.planned)),
        ("time", f"{result.duration_ms / 1000:.1f} s"),
        ("cost", f"${result.cost_usd:.4f}"),
    ]
    facts_html = "".join(f"<span>{escape(k)} <b>{escape(v)}</b></span>" for k, v in facts)
    body = [
        f'<p class="facts">{facts_html}</p>',
        f'<p class="why {_WHY_CLASS.get(verdict, "")}" id="verdict" '
        f'data-verdict="{verdict.value}" data-exit="{result.exit_code}"><b>{verdict.value}</b> '
        f"— exit {result.exit_code}: {escape(MEANINGS[verdict])}.</p>",
        f'<p>Subject: <code id="subject">{escape(result.subject or "?")}</code></p>',
    ]
    if result.baseline_subject:
        body.append(f"<p>Baseline subject: <code>{escape(result.baseline_subject)}</code></p>")
    body += [f'<p class="note">note: {escape(note)}</p>' for note in result.notes]
    return Section("result", "Result", "\n".join(body))


_JUDGE_HEADERS = (
    "judge", "kind", "type", "result (95% CI)", "interval", "skipped", "errored", "threshold",
    "verdict",
)  # fmt: skip


def judges_section(summaries: Sequence[JudgeSummary], id: str, title: str) -> Section:
    rows = [
        (
            escape(s.name),
            escape(s.kind),
            escape(s.value_kind),
            escape(aggregate_text(s)),
            _bar(s),
            str(s.skipped),
            str(s.errored),
            escape(f"{s.threshold.gate} {s.threshold.value:g}") if s.threshold else "-",
            _verdict(s.verdict),
        )
        for s in summaries
    ]
    legend = (
        '<p class="legend">Bool judges: pass rate with its Wilson 95% interval; numeric judges: '
        "mean with its bootstrap 95% interval; the pairwise judge: win rate over decided cases "
        "(ties apart). The band is the interval, the dot the estimate, the dashed line the "
        "threshold. Skipped and errored cases are counted apart and left out.</p>"
    )
    attrs = [f'data-judge="{escape(s.name)}"' for s in summaries]
    return Section(id, title, legend + table(_JUDGE_HEADERS, rows, "judges", attrs))


def _gate(summary: JudgeSummary) -> str:
    if summary.threshold is not None:
        return summary.threshold.gate
    if summary.pairwise:
        return "min_win_rate"
    return "min_mean" if summary.numeric else "min_pass_rate"


def _bar(summary: JudgeSummary) -> str:
    """The interval the judge's gate reads (its default aggregate when it has none)."""
    gate = _gate(summary)
    interval = summary.interval_for(gate)
    threshold = summary.threshold.value if summary.threshold is not None else None
    if gate == "min_win_rate":
        value, domain = summary.win_rate.value, (0.0, 1.0)
    elif gate == "min_pass_rate" or not summary.numeric:
        value, domain = summary.pass_rate.value, (0.0, 1.0)
    else:
        value, domain = summary.mean.value, _domain(summary.mean.values, threshold)
    if interval is not None and not all(math.isfinite(v) for v in interval):
        interval = None
    return interval_bar(interval, value, threshold, domain, f"{summary.name}: {gate}")


def _domain(values: Sequence[float], threshold: float | None) -> tuple[float, float]:
    """A numeric judge's scale: zero to its largest value or gate, [0, 1] for scores within."""
    seen = [*values, *([threshold] if threshold is not None else [])]
    low, high = min([0.0, *seen]), max([0.0, *seen])
    if low >= 0 and high <= 1:
        high = 1.0
    return (low, high if high > low else low + 1.0)


def _verdict(verdict: Verdict | None) -> str:
    if verdict is None:
        return "-"
    return f'<span class="verdict-{verdict.value.lower()}">{verdict.value}</span>'


def deltas_section(result: SuiteResult) -> Section:
    rows = [
        (
            escape(d.judge),
            escape(aggregate_text(d.baseline)),
            escape(aggregate_text(d.candidate)),
            "n/a" if d.difference is None else f"{d.difference:+.2f}",
            "the intervals overlap: this may be noise" if d.overlapping else "",
        )
        for d in result.deltas
    ]
    intro = (
        f"<p>Against baseline run <b>{escape(result.baseline_run or '?')}</b>, over the cases "
        "both runs have. The delta never decides the exit code; the thresholds do.</p>"
    )
    body = intro + table(("judge", "baseline", "now", "delta", ""), rows, "deltas")
    return Section("deltas", "Against the baseline", body)


def failures_section(failing: Sequence[SuiteJudgementRow]) -> Section:
    if not failing:
        return Section("failures", "Failures by case", "<p>No judge failed or errored.</p>")
    by_case: dict[str, list[SuiteJudgementRow]] = {}
    for row in failing:
        by_case.setdefault(row.case_id, []).append(row)
    parts = []
    for case_id, rows in sorted(by_case.items()):
        cells = [(escape(r.judge), escape(_head(r)), _reason(r)) for r in rows]
        attrs = [f'data-judge="{escape(r.judge)}" data-status="{escape(r.status)}"' for r in rows]
        parts.append(
            f'<div class="case" data-case="{escape(case_id)}"><h3>{escape(case_id)}</h3>'
            + table(("judge", "outcome", "rationale or reason"), cells, "failures", attrs)
            + "</div>"
        )
    legend = (
        f'<p class="legend">{len(by_case)} case{"s" if len(by_case) != 1 else ""}: each judge '
        "that failed, abstained or errored on it (the first sample of an LLM judge).</p>"
    )
    return Section("failures", "Failures by case", legend + "\n".join(parts))


def _head(row: SuiteJudgementRow) -> str:
    if row.status == "abstain":
        return "abstained"
    if row.status == "error":
        return "error"
    if row.is_bool or row.value is None:
        return "failed"
    return f"scored {row.value:g}"


def _reason(row: SuiteJudgementRow) -> str:
    text = (row.error or row.rationale or "").strip()
    if len(text) > REASON_CHARS:
        text = text[: REASON_CHARS - 1] + "…"
    return f'<div class="reason">{escape(text)}</div>' if text else ""


def totals_section(result: SuiteResult) -> Section:
    subject_cost = sum(c.cost_usd for c in result.cases)
    judged_cost = sum(j.cost_usd for j in result.judgements)
    errored = len({c.case_id for c in result.case_errors})
    rows = [
        ("cases", str(result.planned)),
        ("cases whose subject errored", str(errored)),
        ("cases recorded before a resume", str(result.resumed)),
        ("judgements (case × judge × sample)", str(len(result.judgements))),
        ("cost of the subjects", f"${subject_cost:.4f}"),
        ("cost of the judges", f"${judged_cost:.4f}"),
        ("cost", f"${result.cost_usd:.4f}"),
        ("wall time", f"{result.duration_ms / 1000:.1f} s"),
    ]
    cells = [(escape(name), value) for name, value in rows]
    attrs = [f'data-total="{escape(name)}"' for name, _ in rows]
    return Section("totals", "Totals", table(("total", "value"), cells, "totals", attrs))


def trends_section(result: SuiteResult, trends: Mapping[str, Sequence[RunRate]]) -> Section:
    """Each judge's pass rate per run of this suite (oldest left), with its 95% interval."""
    charts = []
    for summary in result.summaries:
        points = trends.get(summary.name, ())
        if summary.pairwise or not points:
            continue
        series = [RatePoint(p.run_id, p.at, "suite", p.rate, 0, p.errored) for p in points]
        title = f"{summary.name}: pass rate over {len(series)} run(s)"
        charts.append(
            f'<figure class="trend" data-judge="{escape(summary.name)}">'
            f"<figcaption>{escape(title)}</figcaption>{rate_chart(series, title)}</figure>"
        )
    runs = max((len(p) for p in trends.values()), default=0)
    lead = (
        f"<p>The last {runs} run(s) of suite <b>{escape(result.suite)}</b> recorded in "
        "history.db, oldest on the left; a bar is the 95% interval of the pass rate.</p>"
    )
    return Section("trends", "Over time", lead + "".join(charts))
