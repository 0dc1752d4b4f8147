"""What a suite run found: every case x judge x sample, the per-judge aggregates, the verdict.

Built from the run's rows (`history.db`, or the rows of this invocation when nothing is
recorded), so a run resumed after a crash reports exactly what an uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.model.stats import Rate
from engine.model.suite import Subject
from engine.runtime.history import SuiteCaseRow, SuiteJudgementRow
from engine.suites.aggregate import EXIT_CODES, JudgeSummary, Verdict


@dataclass(frozen=True)
class BaselineDelta:
    """One judge, this run against a measured baseline, over the cases both have."""

    judge: str
    baseline: JudgeSummary
    candidate: JudgeSummary

    @property
    def difference(self) -> float | None:
        base, cand = self._values()
        return None if base is None or cand is None else cand - base

    def _values(self) -> tuple[float | None, float | None]:
        if self.candidate.numeric or self.baseline.numeric:
            return self.baseline.mean.value, self.candidate.mean.value
        return self.baseline.pass_rate.value, self.candidate.pass_rate.value

    @property
    def overlapping(self) -> bool:
        gate = "min_mean" if self.candidate.numeric or self.baseline.numeric else "min_pass_rate"
        one, two = self.baseline.interval_for(gate), self.candidate.interval_for(gate)
        if one is None or two is None:
            return True
        return one[0] <= two[1] and two[0] <= one[1]

    def to_json(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "baseline": self.baseline.to_json(),
            "candidate": self.candidate.to_json(),
            "delta": self.difference,
            "intervals_overlap": self.overlapping,
        }


@dataclass(frozen=True)
class SuiteResult:
    """One suite run, ready to render (`engine.suites.render`) or to use from Python."""

    run_id: str
    suite: str
    path: str
    verdict: Verdict
    summaries: tuple[JudgeSummary, ...]  # the subject's judges, then the pairwise judge
    cases: tuple[SuiteCaseRow, ...]
    judgements: tuple[SuiteJudgementRow, ...]
    planned: int
    baseline_summaries: tuple[JudgeSummary, ...] = ()  # baseline_subject's judges
    deltas: tuple[BaselineDelta, ...] = ()
    baseline_run: str | None = None
    resumed: int = 0  # cases recorded by an earlier invocation of this run
    duration_ms: int = 0
    cost_usd: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    subject: str = ""  # what ran once per case, for people (`describe_subject`)
    baseline_subject: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def case_errors(self) -> list[SuiteCaseRow]:
        return [c for c in self.cases if c.status == "error"]

    def failing(self) -> list[SuiteJudgementRow]:
        """Judgements of the subject that failed or errored (first sample), case by case. A
        pairwise tie is neither: the win rate leaves it out, and so does this list."""
        return [
            j
            for j in self.judgements
            if j.sample_index == 0
            and j.arm in ("subject", "pairwise")
            and (j.status in ("error", "abstain") or j.passed is False)
            and not (j.judge_kind == "pairwise" and j.status == "ok" and j.value == 0.5)
        ]

    def summary(self, judge: str) -> JudgeSummary | None:
        return next((s for s in self.summaries if s.name == judge), None)

    def pass_rate(self, judge: str) -> Rate | None:
        found = self.summary(judge)
        return found.pass_rate if found is not None else None


def describe_subject(subject: Subject | None) -> str:
    """`command: pytest -q`, `prompt: Name three primes (model m)`: the subject in one line."""
    if subject is None:
        return ""
    text = {
        "command": subject.command,
        "prompt": subject.prompt,
        "agent": subject.agent,
        "loop": subject.loop,
    }.get(subject.kind)
    described = f"{subject.kind}: {text}" if text else subject.kind
    if subject.kind == "agent" and subject.prompt:
        described += f" (prompt: {subject.prompt})"
    if subject.model:
        described += f" (model {subject.model})"
    return described


def rows_json(rows: Sequence[SuiteJudgementRow]) -> list[dict[str, Any]]:
    """Every case x judge x sample, as JSON objects."""
    return [
        {
            "case": r.case_id,
            "arm": r.arm,
            "judge": r.judge,
            "kind": r.judge_kind,
            "sample": r.sample_index,
            "samples": r.samples,
            "status": r.status,
            "value": _value(r.value, r.is_bool),
            "passed": r.passed,
            "sample_status": r.sample_status,
            "sample_value": r.sample_value,
            "rationale": r.rationale,
            "evidence": r.evidence or None,
            "error": r.error,
            "cost_usd": round(r.cost_usd, 6),
            "duration_ms": r.duration_ms,
        }
        for r in rows
    ]


def _value(value: float | None, is_bool: bool | None) -> Any:
    if value is None:
        return None
    return bool(value) if is_bool else value
