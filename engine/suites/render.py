"""Text and JSON reports of a suite run (pure).

Text: the verdict line, a table of judges (kind, bool/numeric, pass rate with its Wilson 95%
interval or mean with its bootstrap 95% interval, skipped, errored, threshold, verdict), the
deltas against a baseline, then per case the judges that failed or errored with their rationale.
JSON: one object with the aggregates and every case x judge x sample.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from engine.runtime.history import SuiteJudgementRow
from engine.suites.aggregate import JudgeSummary
from engine.suites.result import SuiteResult, rows_json

RATIONALE_CHARS = 240


def suite_text(result: SuiteResult) -> str:
    lines = [_headline(result), ""]
    lines += _table(result.summaries)
    if result.baseline_summaries:
        lines += ["", "baseline_subject:"]
        lines += _table(result.baseline_summaries)
    if result.deltas:
        lines += ["", f"Against baseline run {result.baseline_run}:"]
        for delta in result.deltas:
            diff = "n/a" if delta.difference is None else f"{delta.difference:+.2f}"
            base, cand = aggregate_text(delta.baseline), aggregate_text(delta.candidate)
            line = f"  {delta.judge}: {diff}  (now {cand} vs baseline {base})"
            if delta.overlapping:
                line += "  — the intervals overlap: this may be noise"
            lines.append(line)
    failing = _failing_by_case(result.failing())
    if failing:
        lines += ["", "Failed or errored judges by case:"]
        for case_id, rows in failing.items():
            lines.append(f"  {case_id}")
            for row in rows:
                lines.append(f"    {row.judge}: {_why(row)}")
    for note in result.notes:
        lines += ["", f"note: {note}"]
    return "\n".join(lines)


def _headline(result: SuiteResult) -> str:
    errors = len({c.case_id for c in result.case_errors})
    parts = [
        f"run {result.run_id}",
        f"{result.planned} case{'s' if result.planned != 1 else ''}",
    ]
    if errors:
        parts.append(f"{errors} errored")
    if result.resumed:
        parts.append(f"{result.resumed} from before the resume")
    parts.append(f"{result.duration_ms / 1000:.1f}s")
    unknown = any(not c.cost_known for c in result.cases)  # an agent reported no cost
    if result.cost_usd or unknown:
        parts.append(f"${result.cost_usd:.4f}" + (" + unknown" if unknown else ""))
    return f"Suite {result.suite}: {result.verdict.value}  ({', '.join(parts)})"


_HEADER = ("judge", "kind", "type", "result (95% CI)", "skipped", "errored", "threshold", "verdict")


def _table(summaries: Sequence[JudgeSummary]) -> list[str]:
    rows = [_HEADER]
    for s in summaries:
        threshold = f"{s.threshold.gate} {s.threshold.value:g}" if s.threshold else "-"
        verdict = s.verdict.value if s.verdict is not None else "-"
        rows.append(
            (
                s.name,
                s.kind,
                s.value_kind,
                aggregate_text(s),
                str(s.skipped),
                str(s.errored),
                threshold,
                verdict,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]


def aggregate_text(summary: JudgeSummary) -> str:
    """`pass rate 4/4 [0.51, 1.00]`, `mean 0.18 [0.15, 0.21] (n=3)`, `win rate 3/4 [...]`."""
    if summary.pairwise:
        rate = summary.win_rate
        ties = f", {summary.ties} tie{'s' if summary.ties != 1 else ''}" if summary.ties else ""
        shown = rate.render(_digits(summary, rate.interval if rate.n else None))
        return f"win rate {shown.removesuffix(' (95% CI)')}{ties}"
    if summary.numeric:
        return f"mean {summary.mean.render(_digits(summary, summary.mean.interval))}"
    rate = summary.pass_rate
    shown = rate.render(_digits(summary, rate.interval if rate.n else None))
    return f"pass rate {shown.removesuffix(' (95% CI)')}"


def _digits(summary: JudgeSummary, shown: tuple[float, float] | None) -> int:
    """Two decimals, or more when the interval shown is the one gated and two would misstate
    the verdict: a low end of 0.796 under a gate of 0.8 must not print as 0.80."""
    gate = summary.threshold
    if gate is None or shown is None or summary.interval_for(gate.gate) != shown:
        return 2
    digits = 2
    while digits < 6 and any(
        (round(end, digits) >= gate.value) != (end >= gate.value) for end in shown
    ):
        digits += 1
    return digits


def _failing_by_case(rows: Sequence[SuiteJudgementRow]) -> dict[str, list[SuiteJudgementRow]]:
    grouped: dict[str, list[SuiteJudgementRow]] = defaultdict(list)
    for row in rows:
        grouped[row.case_id].append(row)
    return dict(grouped)


def _why(row: SuiteJudgementRow) -> str:
    text = row.error or row.rationale or ""
    if row.status == "abstain":
        head = "abstained"
    elif row.status == "error":
        head = "error"
    elif row.judge_kind == "pairwise":  # a loss (ties are not listed); its rationale says so
        head, text = "lost to the baseline", text.removeprefix("loss: ")
    elif row.is_bool or row.value is None:
        head = "failed"
    else:
        head = f"scored {row.value:g}"
    text = " ".join(text.split())
    if len(text) > RATIONALE_CHARS:
        text = text[: RATIONALE_CHARS - 3] + "..."
    return f"{head}: {text}" if text else head


def suite_json(result: SuiteResult) -> dict[str, Any]:
    return {
        "suite": result.suite,
        "path": result.path,
        "subject": result.subject,
        "run_id": result.run_id,
        "result": result.verdict.value,
        "exit_code": result.exit_code,
        "cases": result.planned,
        "resumed": result.resumed,
        "duration_ms": result.duration_ms,
        "cost_usd": round(result.cost_usd, 6),
        # some case's agent reported no cost: `cost_usd` leaves its spend out
        **({} if all(c.cost_known for c in result.cases) else {"cost_known": False}),
        "judges": [s.to_json() for s in result.summaries],
        "baseline_subject": [s.to_json() for s in result.baseline_summaries] or None,
        "baseline_run": result.baseline_run,
        "deltas": [d.to_json() for d in result.deltas],
        "case_runs": [
            {
                "case": c.case_id,
                "arm": c.arm,
                "status": c.status,
                "error": c.error,
                "exit_code": c.exit_code,
                "timed_out": c.timed_out,
                "duration_ms": c.duration_ms,
                "cost_usd": round(c.cost_usd, 6),
                **({} if c.cost_known else {"cost_known": False}),  # not in cost_usd
                "workspace": c.workspace,
            }
            for c in result.cases
        ],
        "results": rows_json(result.judgements),
        "notes": list(result.notes),
    }
