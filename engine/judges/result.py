"""What a judge gives back: a value (bool or number), why, and how it was reached.

A judge's own code produces a `Judgement` (or a `(value, rationale)` tuple, or a bare value);
`coerce` checks it against the judge (a bool or a finite number, inside a declared range) and the
engine turns it into a `JudgeResult` with `passed` decided. A judge that could not run raises
`JudgeError`; its result then has `status: error`, never a value, never a pass.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.model.judges import Judge
from engine.model.loop import EMPTY

Status = Literal["ok", "skipped", "error"]
Value = bool | float


def _empty() -> Mapping[str, Any]:
    return EMPTY


class JudgeError(Exception):
    """A judge could not run (bad input, a failed command, a model that never answered)."""

    def __init__(
        self, message: str, *, cost_usd: float = 0.0, where: str | None = None, **details: Any
    ) -> None:
        super().__init__(message)
        self.message = message
        self.cost_usd = cost_usd
        self.where = where  # file:line when the judge's own code says where it failed
        self.details = details


@dataclass(frozen=True, slots=True)
class Judgement:
    """A judge's answer before pass/fail: `passed` overrides the judge's own pass mark."""

    value: Value
    rationale: str = ""
    evidence: str = ""
    cost_usd: float = 0.0
    passed: bool | None = None
    samples: tuple[Mapping[str, Any], ...] = ()
    details: Mapping[str, Any] = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """One judge on one outputs record. `value` is None unless `status` is ok."""

    name: str
    status: Status
    value: Value | None = None
    passed: bool | None = None
    rationale: str = ""
    evidence: str = ""
    score_range: tuple[float, float] | None = None
    duration_ms: int = 0
    cost_usd: float = 0.0
    error: str | None = None
    samples: tuple[Mapping[str, Any], ...] = ()
    details: Mapping[str, Any] = field(default_factory=_empty)

    @property
    def skipped(self) -> bool:
        return self.status == "skipped"

    @property
    def errored(self) -> bool:
        return self.status == "error"

    @property
    def is_bool(self) -> bool:
        return isinstance(self.value, bool)

    def normalised(self) -> float | None:
        """The value on 0..1 (a bool is 0 or 1), to rank judges against each other; a number
        without a range (a metric: any number, passing at its threshold) is 1 or 0 as it passed."""
        if self.value is None:
            return None
        if isinstance(self.value, bool):
            return 1.0 if self.value else 0.0
        if self.score_range is None:
            return 1.0 if self.passed else 0.0
        low, high = self.score_range
        if high <= low:
            return 1.0 if self.passed else 0.0
        return max(0.0, min(1.0, (self.value - low) / (high - low)))

    def to_json(self) -> dict[str, Any]:
        """The capture of one judge: `captured.<state>.judges.<name>` in a loop."""
        data: dict[str, Any] = {
            "value": self.value,
            "passed": self.passed,
            "skipped": self.skipped,
            "status": self.status,
            "rationale": self.rationale,
            "evidence": self.evidence,
            "duration_ms": self.duration_ms,
            "cost_usd": round(self.cost_usd, 6),
        }
        if self.score_range is not None and not self.is_bool:
            data["score_range"] = list(self.score_range)
        if self.error is not None:
            data["error"] = self.error
        if self.samples:
            data["samples"] = [dict(s) for s in self.samples]
        if self.details:
            data["details"] = dict(self.details)
        return data


def coerce(raw: Any, judge: Judge) -> Judgement:
    """A judge function's return value as a `Judgement`; `JudgeError` when it is not one.

    Accepted: a `Judgement`, `(value, rationale)`, `(value,)`, or a bare value, where a value is
    a bool or a finite number (inside `score_range` when the judge declares one)."""
    if isinstance(raw, Judgement):
        judgement = raw
    elif isinstance(raw, tuple):
        if not 1 <= len(raw) <= 2:
            raise JudgeError(f"returned a tuple of {len(raw)} items, not (value, rationale)")
        rationale = raw[1] if len(raw) == 2 else ""
        judgement = Judgement(
            _value(raw[0]), rationale if isinstance(rationale, str) else str(rationale)
        )
    else:
        judgement = Judgement(_value(raw))
    value = _value(judgement.value)
    if not isinstance(value, bool) and judge.score_range is not None:
        low, high = judge.score_range
        if not low <= value <= high:
            raise JudgeError(f"returned {value:g}, outside its score_range [{low:g}, {high:g}]")
    return judgement if value is judgement.value else _replace_value(judgement, value)


def _value(raw: Any) -> Value:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int | float):
        try:
            number = float(raw)
        except OverflowError:  # an int past float's range: the judge's answer, not its crash
            digits = int(abs(int(raw)).bit_length() * math.log10(2)) + 1
            raise JudgeError(
                f"returned an integer of about {digits} digits, too large for a score "
                f"(a score is a float, at most about {sys.float_info.max:.1e})"
            ) from None
        if not math.isfinite(number):
            raise JudgeError(f"returned {raw!r}, not a finite number")
        return number
    shown = repr(raw)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise JudgeError(f"returned {shown} ({type(raw).__name__}), not a bool or a number")


def _replace_value(judgement: Judgement, value: Value) -> Judgement:
    return Judgement(
        value,
        judgement.rationale,
        judgement.evidence,
        judgement.cost_usd,
        judgement.passed,
        judgement.samples,
        judgement.details,
    )
