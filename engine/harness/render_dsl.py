"""Text and JSON renderings of a `ll-harness dsl` batch (pure)."""

from __future__ import annotations

from typing import Any

from engine.harness.dsl import DslReport, TaskResult
from engine.model.timefmt import counted


def dsl_text(report: DslReport) -> str:
    """`DSL pass-rate: 12/14 [0.57, 0.94] (95% CI)` and the lines that explain it."""
    total = len(report.results)
    ungraded = report.of("ungraded")
    graded = report.pass_rate.n
    lines = [f"DSL pass-rate: {report.pass_rate.render()}"]
    summary = f"  graded {graded} of {counted(total, 'task')}"
    others = []
    if ungraded:
        others.append(f"{len(ungraded)} ungraded (no `expected:` and no --semantic)")
    if report.of("abstain"):
        others.append(f"{len(report.of('abstain'))} abstained")
    if report.of("error"):
        others.append(counted(len(report.of("error")), "infra error"))
    lines.append(summary + (" — " + ", ".join(others) if others else ""))
    for label, outcome in (
        ("failed", "fail"),
        ("errors", "error"),
        ("abstained", "abstain"),
        ("ungraded", "ungraded"),
    ):
        rows = report.of(outcome)  # type: ignore[arg-type]
        for i, result in enumerate(rows):
            head = f"  {label}:" if i == 0 else " " * (len(label) + 3)
            lines.append(f"{head} {_task_line(result)}")
    if report.admissions:
        detail = ", ".join(f"{k}×{v}" for k, v in sorted(report.admissions.items()))
        lines.append(f"  admissions: {sum(report.admissions.values())} ({detail})")
    if report.model:
        lines.append(f"  model: {report.model}")
    return "\n".join(lines)


def _task_line(result: TaskResult) -> str:
    return f"{result.task.name} ({result.reason})" if result.reason else result.task.name


def dsl_json(report: DslReport) -> dict[str, Any]:
    return {
        "invocation_id": report.invocation_id,
        "pass_rate": report.pass_rate.to_json(),
        "tasks": len(report.results),
        "graded": report.pass_rate.n,
        "counts": {
            o: len(report.of(o))  # type: ignore[arg-type]
            for o in ("pass", "fail", "abstain", "error", "ungraded")
        },
        "exit_code": report.exit_code,
        "model": report.model,
        "admissions": report.admissions,
        "retry_of": report.retry_of,
        "git_head": report.provenance.head,
        "git_dirty": report.provenance.dirty,
        "git_branch": report.provenance.branch,
        "results": [
            {
                "task": r.task.name,
                "task_type": r.task.task_type,
                "outcome": r.outcome,
                "reason": r.reason or None,
                "attempt_id": r.attempt.id if r.attempt and r.attempt.id else None,
                "timed_out": r.run.timed_out if r.run else False,
                "semantic": r.semantic.to_json() if r.semantic else None,
                "stdout": r.run.stdout if r.run else None,
            }
            for r in report.results
        ],
    }
