"""One sample's grade from the gates the user asked for: exit code and/or a semantic judge.

The semantic gate uses the same judge as a loop's `llm_structured` state. Only `yes` passes;
`no`, `partial` and `blocked` fail; `cannot_judge` abstains; `error` (API trouble, malformed
answers after retries) is an infra error. A sample whose subject timed out or could not run is
an error and is never judged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.harness.banding import SampleOutcome, combine_gates
from engine.harness.refusal import Refusal
from engine.harness.subjects import Subject, SubjectRun
from engine.model.ports import Verdict
from engine.runtime.history import AttemptOutcome, NewAttempt
from engine.runtime.provenance import Provenance

Judge = Callable[[str, str], Verdict]

_SEMANTIC_OUTCOMES: Mapping[str, SampleOutcome] = {
    "yes": "pass",
    "no": "fail",
    "partial": "fail",
    "blocked": "fail",
    "cannot_judge": "abstain",
    "error": "error",
}


def semantic_outcome(verdict: str) -> SampleOutcome:
    """A judge verdict as a sample outcome; an unknown verdict is an error, never a pass."""
    return _SEMANTIC_OUTCOMES.get(verdict, "error")


@dataclass(frozen=True)
class Gates:
    """What is measured. With neither gate nothing is, and the harness refuses to run."""

    exit_code: int | None = None
    semantic: str | None = None
    judge_model: str | None = None

    @property
    def any(self) -> bool:
        return self.exit_code is not None or self.semantic is not None


@dataclass(frozen=True)
class SemanticResult:
    criterion: str
    verdict: str
    confidence: float | None
    reason: str | None
    evidence: str | None
    model: str | None
    cost_usd: float

    @property
    def outcome(self) -> SampleOutcome:
        return semantic_outcome(self.verdict)

    @classmethod
    def from_verdict(cls, criterion: str, verdict: Verdict, model: str | None) -> SemanticResult:
        details = verdict.details
        return cls(
            criterion=criterion,
            verdict=verdict.name,
            confidence=_float(details.get("confidence")),
            reason=_text(details.get("reason") or details.get("error")),
            evidence=_text(details.get("evidence")),
            model=_text(details.get("model")) or model,
            cost_usd=_float(details.get("cost_usd")) or 0.0,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "verdict": self.verdict,
            "confidence": self.confidence,
            "reason": self.reason,
            "evidence": self.evidence,
            "model": self.model,
        }


@dataclass(frozen=True)
class SampleResult:
    """One graded sample: what ran, each gate's answer, and the combined outcome."""

    index: int
    run: SubjectRun
    expected_exit_code: int | None
    exit_passed: bool | None
    semantic: SemanticResult | None
    outcome: SampleOutcome
    reason: str

    @property
    def cost_usd(self) -> float:
        return self.run.cost_usd + (self.semantic.cost_usd if self.semantic else 0.0)


def attempt_row(
    *,
    invocation_id: str,
    runner: str,
    subject: Subject,
    conditions_fp: str,
    outcome: AttemptOutcome,
    reason: str | None,
    run: SubjectRun,
    semantic: SemanticResult | None,
    provenance: Provenance,
) -> NewAttempt:
    """The history row of one graded sample, as every runner records it; a runner adds what
    only it knows (sample index, kind, expected exit code, retry link) with `replace`."""
    return NewAttempt(
        invocation_id=invocation_id,
        runner=runner,
        target=subject.target,
        input_hash=subject.input_hash,
        target_content_hash=subject.content_hash,
        conditions_fp=conditions_fp,
        outcome=outcome,
        exit_code=run.exit_code,
        semantic_criterion=semantic.criterion if semantic else None,
        semantic_verdict=semantic.verdict if semantic else None,
        confidence=semantic.confidence if semantic else None,
        reason=reason or (semantic.reason if semantic else None),
        evidence=semantic.evidence if semantic else None,
        model=subject.subject_model,
        judge_model=semantic.model if semantic else None,
        timed_out=run.timed_out,
        errored=outcome == "error",
        duration_ms=run.duration_ms,
        cost_usd=run.cost_usd + (semantic.cost_usd if semantic else 0.0),
        git_head=provenance.head,
        git_dirty=provenance.dirty,
        git_branch=provenance.branch,
        git_worktree=provenance.worktree,
    )


def grade_sample(index: int, run: SubjectRun, gates: Gates, judge: Judge) -> SampleResult:
    """Apply every requested gate to one sample (the judge is called only when asked for)."""
    if run.infra_error is not None:
        return SampleResult(
            index, run, gates.exit_code, None, None, "error", f"infra error: {run.infra_error}"
        )
    outcomes: list[SampleOutcome] = []
    reasons: list[str] = []
    exit_passed: bool | None = None
    if gates.exit_code is not None:
        exit_passed = run.exit_code == gates.exit_code
        outcomes.append("pass" if exit_passed else "fail")
        if not exit_passed:
            reasons.append(f"exit code {run.exit_code}, expected {gates.exit_code}")
    semantic: SemanticResult | None = None
    if gates.semantic is not None:
        verdict = judge(gates.semantic, run.judged_text)
        semantic = SemanticResult.from_verdict(gates.semantic, verdict, gates.judge_model)
        outcomes.append(semantic.outcome)
        if semantic.outcome != "pass":
            why = f": {semantic.reason}" if semantic.reason else ""
            reasons.append(f"judge said {semantic.verdict}{why}")
    outcome = combine_gates(outcomes)
    return SampleResult(
        index, run, gates.exit_code, exit_passed, semantic, outcome, "; ".join(reasons)
    )


def check_judge(semantic: str | None) -> None:
    """Refuse before the first sample when a `--semantic` judge could not run (no credentials,
    bad settings), as `ll-loop run` does for a loop's judges."""
    if semantic is None:
        return
    if not semantic.strip():
        raise Refusal(
            "--semantic is empty: a judge asked about nothing measures nothing",
            hint='pass the criterion: --semantic "<what a good result shows>"',
        )
    from engine.llm.preflight import judge_problems

    problems = judge_problems()
    if problems:
        raise Refusal(problems[0], hint="fix the LLM settings, or drop --semantic")


def check_prompt_runner(runner: str) -> None:
    """Refuse before the first sample when the `anthropic` prompt runner could not run (no
    credentials): every sample was recorded as an infra error instead, `unexpected TypeError:
    "Could not resolve authentication method..."` once per sample."""
    from engine.llm.preflight import prompt_problems

    problems = prompt_problems(runner)
    if problems:
        kind = runner.split(":", 1)[0]
        if kind == "anthropic":
            hint = "fix the LLM settings, or pass --runner 'cmd:<agent command>'"
        elif kind == "cmd":
            hint = "install the agent CLI, or pass another --runner"
        else:
            hint = "pass --runner anthropic or --runner 'cmd:<agent command>'"
        raise Refusal(problems[0], hint=hint)


def llm_judge(model: str | None) -> Judge:
    """The real judge: `engine.llm.judge_text` (imported only when a criterion is judged)."""

    def judge(criterion: str, text: str) -> Verdict:
        from engine.llm import judge_text

        return judge_text(criterion, text, model=model)

    return judge


def _float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    return float(value) if isinstance(value, int | float) else None


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)
