"""Text and JSON renderings of harness reports (pure: strings and dicts in, nothing printed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.harness.grading import SampleResult
from engine.harness.history_report import HistorySummary, attempt_json
from engine.harness.session import Report
from engine.runtime.history import Attempt

# Characters of a sample's stream in the JSON report: what a run's capture keeps of an output
# (`engine.runtime.interpreter.CAPTURE_LIMIT`, not imported: that module costs ~15 ms here).
STREAM_CHARS = 64 * 1024


def _exit_cell(sample: SampleResult) -> str:
    run = sample.run
    if run.infra_error is not None:
        return f"[{run.infra_error}]"
    text = str(run.exit_code)
    if sample.expected_exit_code is not None:
        mark = "ok" if sample.exit_passed else "MISMATCH"
        text += f" (expected {sample.expected_exit_code}: {mark})"
    return text


def _semantic_cell(sample: SampleResult, asked: bool) -> str:
    if not asked:
        return "[not checked]"
    if sample.semantic is None:
        return "[not judged: the sample did not complete]"
    sem = sample.semantic
    text = sem.verdict
    if sem.confidence is not None:
        text += f" (confidence {sem.confidence:.2f})"
    if sem.reason:
        text += f" — {sem.reason}"
    return text


def report_text(report: Report) -> str:
    """The human report: Exit, Semantic and Result rows, one block per sample when several."""
    asked = report.conditions.semantic is not None
    lines = [f"ll-harness {report.subject.runner}: {_short(report.subject.target)}"]
    if report.reused_baseline:
        edits = " with these uncommitted changes" if report.provenance.dirty else ""
        lines.append(
            f"Baseline  reused {len(report.reused_baseline)} measured rows for this content and "
            f"these conditions at this git HEAD{edits} (nothing was run): invocation "
            f"{_measured(report)}"
        )
    many = len(report.samples) > 1
    for sample in report.samples:
        indent = "  " if many else ""
        if many:
            lines.append(f"Sample {sample.index + 1}/{len(report.samples)}: {sample.outcome}")
        lines.append(f"{indent}Exit      {_exit_cell(sample)}")
        lines.append(f"{indent}Semantic  {_semantic_cell(sample, asked)}")
        if sample.semantic is not None and sample.semantic.evidence:
            lines.append(f"{indent}Evidence  {_short(sample.semantic.evidence, 200)}")
    if not report.samples and not report.reused_baseline:
        lines.append("Exit      [no sample ran]")
    tally = report.tally
    lines.append(
        f"Result    {report.band.value}  {tally.render()}; pass rate {tally.pass_rate.render()}"
    )
    if report.delta is not None:
        lines.append(report.delta.render())
    if report.history is not None:
        lines.append(_history_line(report.history))
    recorded = _recorded(report.invocation_id, report.attempts)
    if recorded:
        lines.append(f"Recorded  {recorded}")
    baseline = _measured(report)
    if baseline is not None:
        lines.append(_baseline_next(report.subject.runner, baseline))
    if report.retry_of is not None:
        line = f"Retry     supersedes attempt {report.retry_of}"
        if report.measured_invocation is not None:
            counted = len(report.measurement)
            line += (
                f"; the result counts the {counted} sample{'s' if counted != 1 else ''} of "
                f"invocation {report.measured_invocation} with this one in its place"
            )
        lines.append(line)
    timed_out = [a.id for a in report.attempts if a.timed_out and a.id]
    if timed_out:
        ids = ", ".join(str(i) for i in timed_out)
        plural = "s" if len(timed_out) > 1 else ""
        lines.append(f"Timeouts  attempt{plural} {ids}: rerun with --retry-of ID to replace one")
    return "\n".join(lines)


def _measured(report: Report) -> str | None:
    """The invocation whose rows are the baseline this run measured or reused, else None. A
    reused baseline's rows keep the invocation that measured them (this one recorded nothing)."""
    if report.reused_baseline:  # any of their invocations names the same content and conditions
        return report.reused_baseline[0].invocation_id
    rows = report.attempts
    if rows and all(a.attempt_kind == "baseline" for a in rows):
        return rows[0].invocation_id
    return None


def _baseline_next(runner: str, invocation: str) -> str:
    """How a measured baseline is compared with later: a loop or skill is found again by its
    committed content, a cmd, prompt or mcp subject only by `--baseline-of`."""
    if runner in ("loop", "skill"):
        return "Next      edit the subject, then run again with --compare-baseline"
    return f"Next      run the changed subject with --compare-baseline --baseline-of {invocation}"


def _recorded(invocation: str, attempts: Sequence[Attempt]) -> str:
    """Where the attempts went: their ids, and how many wait in the history spool (id 0: the
    database was busy or could not take them; the warning said why and where)."""
    ids = ", ".join(str(a.id) for a in attempts if a.id)
    waiting = sum(1 for a in attempts if not a.id)
    parts = [f"invocation {invocation}"]
    parts += [f"attempts {ids}"] if ids else []
    parts += (
        [f"{waiting} waiting in .loops/history-spool/ (history.db could not take it)"]
        if waiting
        else []
    )
    return ", ".join(parts) if attempts else ""


def _start(text: str) -> str:
    """A sample's stdout in the JSON report: its first `STREAM_CHARS` characters, as a capture
    keeps them, and a line saying how many more there were. Copied whole, a 100 MB output made
    a 100 MB report (twice over for the first sample), built in memory."""
    if len(text) <= STREAM_CHARS:
        return text
    more = len(text) - STREAM_CHARS
    return f"{text[:STREAM_CHARS]}\n[... {more:,} more characters not shown ...]"


def _end(text: str) -> str:
    """A sample's stderr in the JSON report: its last `STREAM_CHARS` characters (where a
    failure says why), after a line saying how many came before."""
    if len(text) <= STREAM_CHARS:
        return text
    cut = len(text) - STREAM_CHARS
    return f"[... {cut:,} earlier characters not shown ...]\n{text[cut:]}"


def report_json(report: Report) -> dict[str, Any]:
    subject = report.subject
    samples = [
        {
            "index": s.index,
            "attempt_id": a.id if a and a.id else None,  # 0: waiting in the spool
            "outcome": s.outcome,
            "reason": s.reason or None,
            "exit_code": s.run.exit_code,
            "expected_exit_code": s.expected_exit_code,
            "exit_passed": s.exit_passed,
            "semantic": s.semantic.to_json() if s.semantic else None,
            "timed_out": s.run.timed_out,
            "infra_error": s.run.infra_error,
            "duration_ms": s.run.duration_ms,
            "cost_usd": round(s.cost_usd, 6),
            **({} if s.run.cost_known else {"cost_known": False}),  # not in cost_usd
            "stdout": _start(s.run.stdout),
            "stderr": _end(s.run.stderr),
        }
        for s, a in zip(report.samples, _pad(report), strict=True)
    ]
    data: dict[str, Any] = {
        "invocation_id": report.invocation_id,
        "runner": subject.runner,
        "target": subject.target,
        "content_hash": subject.content_hash,
        "input_hash": subject.input_hash,
        "conditions_fp": report.conditions.fingerprint(),
        "samples_requested": report.conditions.samples,
        "samples_run": len(report.samples),
        "result": report.band.value,
        "exit_code": report.exit_code,
        "tally": report.tally.to_json(),
        "sample_pass_rate": report.tally.pass_rate.to_json(),
        "semantic_checked": report.conditions.semantic is not None,
        "stdout": _start(report.samples[0].run.stdout) if report.samples else None,
        "stderr": _end(report.samples[0].run.stderr) if report.samples else None,
        "samples": samples,
        "git_head": report.provenance.head,
        "git_dirty": report.provenance.dirty,
        "git_branch": report.provenance.branch,
        "git_worktree": report.provenance.worktree,
        "retry_of": report.retry_of,
        "measurement_invocation": report.measured_invocation,
        "history_pass_rate": None,
        "history_abstention_rate": None,
    }
    if report.history is not None:
        data["history_pass_rate"] = report.history.pass_rate.to_json()
        data["history_abstention_rate"] = report.history.abstention_rate.to_json()
        if report.history.admissions:
            data["history_admissions"] = report.history.admissions
    if report.reused_baseline:
        data["baseline_reused"] = [attempt_json(a) for a in report.reused_baseline]
    if _measured(report) is not None:
        data["baseline_invocation"] = _measured(report)
    if report.delta is not None:
        data["baseline"] = report.delta.to_json()
    return data


def history_text(summary: HistorySummary, last: int = 10, guess: str = "") -> str:
    """The text of `ll-harness history`; `guess`: ` (did you mean 'x'?)` for an unknown target."""
    since = f" since {summary.since}" if summary.since else ""
    lines = [f"History of {summary.target!r}{since}"]
    if not summary.rows:
        lines.append(f"  no attempts recorded{guess}")
        return "\n".join(lines)
    t = summary.tally
    lines += [
        f"  attempts      {summary.rows} rows, {t.total} authoritative, "
        f"{summary.superseded} superseded by a retry",
        f"  outcomes      {t.passed} pass, {t.failed} fail, {t.abstained} abstain, "
        f"{t.errored} error",
        f"  pass rate     {summary.pass_rate.render()}",
        f"  abstention    {summary.abstention_rate.render()}",
    ]
    if len(summary.runners) > 1:
        pooled = ", ".join(f"{runner} {rows}" for runner, rows in summary.runners.items())
        lines.append(f"  runners       {pooled} rows: pooled; --runner R keeps one")
    if summary.admissions:
        admitted = ", ".join(f"{k}×{v}" for k, v in sorted(summary.admissions.items()))
        lines.append(f"  admissions    {sum(summary.admissions.values())} ({admitted})")
    lines.append(f"  last {min(last, summary.rows)}:")
    for a in summary.latest[:last]:
        verdict = f" semantic={a.semantic_verdict}" if a.semantic_verdict else ""
        exit_ = f" exit={a.exit_code}" if a.exit_code is not None else ""
        flags = " timed-out" if a.timed_out else ""
        flags += f" superseded-by={a.superseded_by}" if a.superseded_by else ""
        flags += f" retry-of={a.retry_of}" if a.retry_of else ""
        lines.append(
            f"    #{a.id} {a.created_at[:19]} {a.runner} {a.outcome}{exit_}{verdict}{flags}"
        )
    return "\n".join(lines)


def _history_line(summary: HistorySummary) -> str:
    return (
        f"History   last 30 days: pass rate {summary.pass_rate.render()}, abstention "
        f"{summary.abstention_rate.render()} over {summary.tally.total} prior attempts"
    )


def _pad(report: Report) -> list[Any]:
    attempts: list[Any] = list(report.attempts)
    return attempts + [None] * (len(report.samples) - len(attempts))


def _short(text: str, limit: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
