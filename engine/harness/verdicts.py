"""What each judge said in an `evaluate` event, read defensively from its details (pure).

One reader for every evaluator that judges: an `llm_structured` judge (its samples, evidence,
reason), a rubric (its score), and an assessment's judges (`details.judges`, by name). The run
report and the stability statistics both read verdicts through it, so a new field or an
assessment shape shows up in both or in neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JudgeNote:
    """One judge's word on a step: an LLM judge, a rubric, a judge of an assessment."""

    name: str
    verdict: str | None
    passed: bool | None = None
    reason: str = ""
    evidence: str = ""
    evidence_check: str | None = None
    confidence: float | None = None
    samples: tuple[str, ...] = ()
    score: float | None = None
    cost_usd: float = 0.0
    input_hash: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict,
            "passed": self.passed,
            "reason": self.reason,
            "evidence": self.evidence,
            "evidence_check": self.evidence_check,
            "confidence": self.confidence,
            "samples": list(self.samples),
            "score": self.score,
            "cost_usd": self.cost_usd,
        }


def judge_notes(evaluator: str | None, details: Mapping[str, Any]) -> list[JudgeNote]:
    """What each judge of a step said, from an `evaluate` event's details: an assessment's
    judges (`details.judges`), a rubric, or an `llm_structured` judge; [] for other evaluators."""
    judges = details.get("judges")
    if isinstance(judges, Mapping):
        return [
            _assessment_note(str(name), j) for name, j in judges.items() if isinstance(j, Mapping)
        ]
    if isinstance(judges, list):
        return [
            _assessment_note(str(j.get("name", f"judge {i + 1}")), j)
            for i, j in enumerate(judges)
            if isinstance(j, Mapping)
        ]
    if details.get("mode") == "rubric":
        return [
            JudgeNote(
                name="rubric",
                verdict=_str(details.get("verdict")) or ("error" if details.get("error") else None),
                reason=str(details.get("reason") or details.get("error") or ""),
                score=_float(details.get("score")),
                cost_usd=_float(details.get("cost_usd")) or 0.0,
                input_hash=_str(details.get("input_hash")),
            )
        ]
    if evaluator == "llm_structured" or "samples" in details or "votes" in details:
        samples = details.get("samples")
        verdicts = (
            tuple(
                str(s.get("verdict"))
                for s in samples
                if isinstance(s, Mapping) and s.get("verdict")
            )
            if isinstance(samples, list)
            else ()
        )
        return [
            JudgeNote(
                name="judge",
                verdict=_str(details.get("verdict")),
                reason=str(details.get("reason") or details.get("error") or ""),
                evidence=str(details.get("evidence") or ""),
                evidence_check=_str(details.get("evidence_check")),
                confidence=_float(details.get("confidence")),
                samples=verdicts,
                cost_usd=_float(details.get("cost_usd")) or 0.0,
                input_hash=_str(details.get("input_hash")),
            )
        ]
    return []


def _assessment_note(name: str, judge: Mapping[str, Any]) -> JudgeNote:
    passed = judge.get("passed")
    value = judge.get("value")
    verdict: str | None
    if judge.get("skipped"):
        verdict = "skipped"
    elif judge.get("error"):
        verdict = "error"
    elif isinstance(passed, bool):
        verdict = "pass" if passed else "fail"
    else:
        verdict = _str(judge.get("verdict"))
    return JudgeNote(
        name=name,
        verdict=verdict,
        passed=passed if isinstance(passed, bool) else None,
        reason=str(judge.get("rationale") or judge.get("reason") or judge.get("error") or ""),
        evidence=str(judge.get("evidence") or ""),
        score=_float(value) if not isinstance(value, bool) else None,
        cost_usd=_float(judge.get("cost_usd")) or 0.0,
        input_hash=_str(judge.get("input_hash")),
    )


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
