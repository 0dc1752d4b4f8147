"""How graded samples become one result, and each result's exit code (pure).

The rules (docs/harness.md, "Banding"):
- no sample graded (pass/fail): all abstained → ABSTAIN, all errored → ERROR, a mix → INCONCLUSIVE;
- PASS only when every requested sample was graded and passed — a pass next to an abstention or
  an infra error is INCONCLUSIVE, never a softened pass;
- FAIL when every graded sample failed (abstained or errored samples beside them are reported in
  the tally; they could at best have made the result INCONCLUSIVE, never PASS);
- anything else (some passed, some failed or went ungraded) → INCONCLUSIVE.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Literal

from engine.model.stats import Rate

SampleOutcome = Literal["pass", "fail", "abstain", "error"]


class Band(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    ABSTAIN = "ABSTAIN"
    ERROR = "ERROR"


EXIT_CODES: Mapping[Band, int] = MappingProxyType(
    {Band.PASS: 0, Band.FAIL: 1, Band.ERROR: 2, Band.ABSTAIN: 3, Band.INCONCLUSIVE: 3}
)


@dataclass(frozen=True)
class Tally:
    """How many samples ended each way."""

    passed: int = 0
    failed: int = 0
    abstained: int = 0
    errored: int = 0

    @classmethod
    def of(cls, outcomes: Iterable[SampleOutcome]) -> Tally:
        counts = Counter(outcomes)
        return cls(counts["pass"], counts["fail"], counts["abstain"], counts["error"])

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.abstained + self.errored

    @property
    def graded(self) -> int:
        return self.passed + self.failed

    @property
    def pass_rate(self) -> Rate:
        """Passes among graded samples (abstentions and errors are not graded)."""
        return Rate(self.passed, self.graded)

    def to_json(self) -> dict[str, int]:
        return {
            "pass": self.passed,
            "fail": self.failed,
            "abstain": self.abstained,
            "error": self.errored,
        }

    def render(self) -> str:
        parts = [f"{self.passed}/{self.total} passed"]
        for count, word in (
            (self.failed, "failed"),
            (self.abstained, "abstained"),
            (self.errored, "errored"),
        ):
            if count:
                parts.append(f"{count} {word}")
        return ", ".join(parts)


def band(tally: Tally) -> Band:
    """The one result of a set of samples (see the module docstring)."""
    if tally.total == 0:
        return Band.ERROR
    if tally.graded == 0:
        if tally.abstained == tally.total:
            return Band.ABSTAIN
        if tally.errored == tally.total:
            return Band.ERROR
        return Band.INCONCLUSIVE
    if tally.passed == tally.total:
        return Band.PASS
    if tally.passed == 0:
        return Band.FAIL
    return Band.INCONCLUSIVE


def combine_gates(outcomes: Iterable[SampleOutcome]) -> SampleOutcome:
    """One sample's outcome from its gates: a failed check decides, then error, then abstain."""
    seen = set(outcomes)
    for outcome in _PRECEDENCE:
        if outcome in seen:
            return outcome
    return "pass"


_PRECEDENCE: tuple[SampleOutcome, ...] = ("fail", "error", "abstain")
