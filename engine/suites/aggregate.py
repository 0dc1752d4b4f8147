"""Per-judge aggregates over a suite's cases, the thresholds' verdicts, and the suite's (pure).

For each judge, only the cases it scored count: skipped cases (its `if:` was false) and errored
ones (the case, the subject or the judge could not run; an abstention too) are counted apart and
excluded. A bool judge gets a pass rate with its 95% Wilson interval; a numeric one a mean with
its 95% bootstrap interval (and the share of cases at or above its pass mark). The pairwise judge
gets a win rate: wins among decided cases (ties apart).

A threshold is judged by its interval, as `ll-harness cmd` bands samples: PASS when the whole
interval is at or above the gate, FAIL when the whole interval is below it, INCONCLUSIVE when it
straddles it (more cases would decide), ERROR when every case errored. A PASS or FAIL must hold
with the errored cases counted against it (failing for a PASS, passing for a FAIL): they are
unknowns, not absent. The suite: FAIL if a gate
failed, else ERROR if one errored, else INCONCLUSIVE if one is undecided, else PASS; UNGATED
when the suite has no thresholds (the exit code then gates nothing) — but ERROR when no
judgement of the run scored and one errored (a suite whose every case timed out measured
nothing, gated or not; skipped judgements beside the errors do not change that).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from engine.model.stats import Mean, Rate, wilson_interval
from engine.model.suite import Threshold

if TYPE_CHECKING:
    from collections.abc import Iterator

    from engine.runtime.history import SuiteJudgementRow


class Verdict(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    ERROR = "ERROR"
    UNGATED = "UNGATED"


EXIT_CODES: Mapping[Verdict, int] = MappingProxyType(
    {
        Verdict.PASS: 0,
        Verdict.FAIL: 1,
        Verdict.ERROR: 2,
        Verdict.INCONCLUSIVE: 3,
        Verdict.UNGATED: 0,
    }
)


@dataclass(frozen=True)
class Scored:
    """One judge's judgement of one case, as aggregation needs it."""

    case_id: str
    status: str  # ok | skipped | error | abstain
    value: float | None = None
    is_bool: bool | None = None
    passed: bool | None = None
    bounds: tuple[float, float] | None = None  # the judge's score range, when it has one


@dataclass(frozen=True)
class JudgeSummary:
    """A judge over every case: counts, its aggregate with interval, and its gate."""

    name: str
    kind: str
    scores: tuple[Scored, ...]
    threshold: Threshold | None = None

    @property
    def scored(self) -> list[Scored]:
        return [s for s in self.scores if s.status == "ok"]

    @property
    def skipped(self) -> int:
        return sum(1 for s in self.scores if s.status == "skipped")

    @property
    def errored(self) -> int:
        return sum(1 for s in self.scores if s.status in ("error", "abstain"))

    @property
    def abstained(self) -> int:
        return sum(1 for s in self.scores if s.status == "abstain")

    @property
    def pairwise(self) -> bool:
        return self.kind == "pairwise"

    @property
    def numeric(self) -> bool:
        """Numbers seen (a judge's type is what it returned, as agent_eval infers it)."""
        return not self.pairwise and any(s.is_bool is False for s in self.scored)

    @property
    def value_kind(self) -> str:
        if self.pairwise:
            return "win/loss"
        if not self.scored:
            return "-"
        return "numeric" if self.numeric else "bool"

    @property
    def pass_rate(self) -> Rate:
        scored = self.scored
        return Rate(sum(1 for s in scored if s.passed), len(scored))

    @property
    def mean(self) -> Mean:
        scored = [s for s in self.scored if s.value is not None]
        ranges = {s.bounds for s in scored}
        bounds = ranges.pop() if len(ranges) == 1 else None  # one range, or none is assumed
        return Mean(tuple(float(s.value) for s in scored if s.value is not None), bounds)

    @property
    def wins(self) -> int:
        return sum(1 for s in self.scored if s.value == 1.0)

    @property
    def losses(self) -> int:
        return sum(1 for s in self.scored if s.value == 0.0)

    @property
    def ties(self) -> int:
        return len(self.scored) - self.wins - self.losses

    @property
    def win_rate(self) -> Rate:
        return Rate(self.wins, self.wins + self.losses)

    def interval_for(self, gate: str) -> tuple[float, float] | None:
        if gate == "min_win_rate":
            rate = self.win_rate
            return rate.interval if rate.n else None
        if gate == "min_pass_rate" or not self.numeric:  # a bool's mean is its pass rate
            rate = self.pass_rate
            return rate.interval if rate.n else None
        return self.mean.interval

    @property
    def verdict(self) -> Verdict | None:
        """The threshold's verdict; None when the judge is not gated."""
        return self._verdict(count_unknown=True)

    @property
    def undecided_by_unknown(self) -> bool:
        """The scored cases alone would decide the gate; its errored cases keep it open."""
        return self.verdict is Verdict.INCONCLUSIVE and self._verdict(count_unknown=False) in (
            Verdict.PASS,
            Verdict.FAIL,
        )

    def _verdict(self, *, count_unknown: bool) -> Verdict | None:
        gate = self.threshold
        if gate is None:
            return None
        interval = self.interval_for(gate.gate)
        if interval is None:
            if self.scores and self.errored == len(self.scores):
                return Verdict.ERROR
            return Verdict.INCONCLUSIVE
        low, high = interval
        unknown = self.errored  # errored or abstained: cases the gate knows nothing of
        if unknown and count_unknown:
            # A verdict must hold whatever the unknown cases would have scored: a PASS with
            # each of them failing, a FAIL with each of them passing (9 timed-out cases of 10
            # beside one pass are no evidence of a 20% pass rate).
            worst, best = self._bounds_with_unknown(gate.gate, unknown)
            low = min(low, worst) if worst is not None else -math.inf
            high = max(high, best) if best is not None else math.inf
        if low >= gate.value:
            return Verdict.PASS
        if high < gate.value:
            return Verdict.FAIL
        return Verdict.INCONCLUSIVE

    def _bounds_with_unknown(self, gate: str, unknown: int) -> tuple[float | None, float | None]:
        """The interval's low end with every unknown case failing (lowest score), and its
        high end with every unknown case passing (highest); None where no bound is known."""
        if gate == "min_win_rate":
            k, n = self.wins, self.wins + self.losses
        elif gate == "min_pass_rate" or not self.numeric:
            rate = self.pass_rate
            k, n = rate.k, rate.n
        else:
            mean = self.mean
            if mean.bounds is None:
                return None, None
            bottom, top = mean.bounds
            worst = Mean(mean.values + (bottom,) * unknown, mean.bounds).interval
            best = Mean(mean.values + (top,) * unknown, mean.bounds).interval
            return (
                worst[0] if worst is not None else None,
                best[1] if best is not None else None,
            )
        return wilson_interval(k, n + unknown)[0], wilson_interval(k + unknown, n + unknown)[1]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "judge": self.name,
            "kind": self.kind,
            "value_kind": self.value_kind,
            "cases": len(self.scores),
            "scored": len(self.scored),
            "skipped": self.skipped,
            "errored": self.errored,
            "abstained": self.abstained,
        }
        if self.pairwise:
            data.update(wins=self.wins, losses=self.losses, ties=self.ties)
            data["win_rate"] = self.win_rate.to_json()
        else:
            data["pass_rate"] = self.pass_rate.to_json()
            if self.numeric:
                data["mean"] = self.mean.to_json()
        if self.threshold is not None:
            data["threshold"] = {self.threshold.gate: self.threshold.value}
        verdict = self.verdict
        data["verdict"] = verdict.value if verdict is not None else None
        return data


def judgement_scores(rows: Iterable[SuiteJudgementRow], arm: str) -> Iterator[tuple[str, Scored]]:
    """`(judge, Scored)` of one arm's recorded rows, first sample only: what a report
    aggregates (a judgement's value is already its samples' aggregate)."""
    for r in rows:
        if r.arm == arm and r.sample_index == 0:
            bounds = (
                (r.score_low, r.score_high)
                if r.score_low is not None and r.score_high is not None
                else None
            )
            yield r.judge, Scored(r.case_id, r.status, r.value, r.is_bool, r.passed, bounds)


def summarise(
    judges: Sequence[tuple[str, str]],
    scores: Iterable[tuple[str, Scored]],
    thresholds: Sequence[Threshold],
) -> list[JudgeSummary]:
    """A summary per judge (`(name, kind)`, in order) from `(judge, Scored)` pairs."""
    by_judge: dict[str, list[Scored]] = {name: [] for name, _ in judges}
    for name, scored in scores:
        if name in by_judge:
            by_judge[name].append(scored)
    gates = {t.judge: t for t in thresholds}
    return [
        JudgeSummary(name, kind, tuple(by_judge[name]), gates.get(name)) for name, kind in judges
    ]


def suite_verdict(summaries: Sequence[JudgeSummary]) -> Verdict:
    """The suite's result from its gated judges (see the module docstring)."""
    verdicts = [s.verdict for s in summaries if s.verdict is not None]
    if not verdicts:
        if nothing_measured(summaries):
            return Verdict.ERROR  # exit 0 must not stand for a run that measured nothing
        return Verdict.UNGATED
    for worst in (Verdict.FAIL, Verdict.ERROR, Verdict.INCONCLUSIVE):
        if worst in verdicts:
            return worst
    return Verdict.PASS


def nothing_measured(summaries: Sequence[JudgeSummary]) -> bool:
    """No judgement of the run scored a case, and one errored or abstained: the others were
    skipped (a judge whose `if:` was false beside one that could not run measured nothing
    either, and the skips must not turn the errors into exit 0)."""
    scores = [s for summary in summaries for s in summary.scores]
    return (
        bool(scores)
        and all(s.status in ("error", "abstain", "skipped") for s in scores)
        and any(s.status in ("error", "abstain") for s in scores)
    )
