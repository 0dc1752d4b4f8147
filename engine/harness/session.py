"""One `ll-harness cmd|prompt|loop` invocation: check, run every sample, grade, record, band.

Every refusal (nothing measured, bad retry, missing baseline) happens before the first sample
runs. All N samples always run — no early stop on a pass, so a flaky subject cannot get lucky
on sample 1 and skip the rest. Each sample is one history row.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from engine.harness.banding import EXIT_CODES, Band, Tally, band
from engine.harness.baseline import (
    Delta,
    baseline_rows,
    check_retry,
    measured_baseline,
    resolve_incumbent,
)
from engine.harness.grading import Gates, SampleResult, grade_sample, llm_judge
from engine.harness.history_report import (
    MIN_PRIOR_ROWS,
    HistorySummary,
    recent_since,
    summarize,
)
from engine.harness.keys import Conditions
from engine.harness.provenance import Provenance, git_provenance, head_content_hash
from engine.harness.refusal import Refusal
from engine.harness.subjects import Subject
from engine.history import Attempt, AttemptKind, History, NewAttempt

DEFAULT_STOCHASTIC_SAMPLES = 3
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Options:
    """The grading-relevant command-line options of one invocation."""

    gates: Gates
    samples: int | None = None  # None: 3 for a stochastic subject, 1 otherwise
    timeout: float | None = DEFAULT_TIMEOUT
    measure_baseline: bool = False
    compare_baseline: bool = False
    baseline_of: str | None = None
    retry_of: int | None = None


@dataclass(frozen=True)
class Report:
    """Everything one invocation found; rendered as text or JSON by `engine.harness.render`."""

    invocation_id: str
    subject: Subject
    conditions: Conditions
    samples: tuple[SampleResult, ...]
    attempts: tuple[Attempt, ...]
    provenance: Provenance
    history: HistorySummary | None = None
    delta: Delta | None = None
    retry_of: int | None = None
    reused_baseline: tuple[Attempt, ...] = ()
    notes: tuple[str, ...] = ()  # warnings for stderr

    @property
    def tally(self) -> Tally:
        if self.reused_baseline:
            return Tally.of(a.outcome for a in self.reused_baseline)
        return Tally.of(s.outcome for s in self.samples)

    @property
    def band(self) -> Band:
        return band(self.tally)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.band]


def effective_samples(subject: Subject, options: Options) -> int:
    """How many samples run; refuses combinations that would mislead."""
    if options.samples is not None and options.samples < 1:
        raise Refusal("--samples must be at least 1", hint="pass --samples 1 or more")
    if options.retry_of is not None:
        if options.samples is not None and options.samples > 1:
            raise Refusal(
                "--retry-of replaces exactly one timed-out attempt, so --samples must be 1",
                hint="drop --samples; a retry always runs one sample",
            )
        return 1
    if options.samples is not None:
        return options.samples
    return DEFAULT_STOCHASTIC_SAMPLES if subject.stochastic else 1


def check_options(options: Options) -> None:
    """Refusals that need no history: nothing measured, contradictory flags."""
    if not options.gates.any:
        raise Refusal(
            "nothing is measured: no --exit-code and no --semantic gate was given",
            hint='pass --exit-code 0 and/or --semantic "<what a good result shows>"',
        )
    if options.measure_baseline and options.compare_baseline:
        raise Refusal(
            "--measure-baseline and --compare-baseline are two separate arms",
            hint="measure the incumbent first, change it, then compare in a second invocation",
        )
    if options.retry_of is not None and (options.measure_baseline or options.compare_baseline):
        raise Refusal(
            "--retry-of cannot be combined with a baseline flag",
            hint="retry the timed-out attempt on its own; it joins its original measurement",
        )
    if options.baseline_of is not None and not options.compare_baseline:
        raise Refusal(
            "--baseline-of only makes sense with --compare-baseline",
            hint="add --compare-baseline, or drop --baseline-of",
        )


def conditions_of(subject: Subject, options: Options, samples: int) -> Conditions:
    return Conditions(
        runner=subject.runner,
        samples=samples,
        timeout=options.timeout,
        expected_exit_code=options.gates.exit_code,
        semantic=options.gates.semantic,
        judge_model=options.gates.judge_model if options.gates.semantic is not None else None,
        subject_model=subject.subject_model,
        prompt_runner=subject.prompt_runner,
    )


def evaluate(
    subject: Subject,
    options: Options,
    history: History,
    cwd: Path,
) -> Report:
    """Run one invocation end to end (see the module docstring for the order of things)."""
    check_options(options)
    samples = effective_samples(subject, options)
    conditions = conditions_of(subject, options, samples)
    fingerprint = conditions.fingerprint()
    invocation_id = uuid.uuid4().hex[:16]
    provenance = git_provenance(cwd)

    retried: Attempt | None = None
    if options.retry_of is not None:
        retried = check_retry(
            history,
            options.retry_of,
            subject,
            lambda n: conditions.with_samples(n).fingerprint(),
        )
        conditions = conditions.with_samples(retried.samples_requested)
        fingerprint = conditions.fingerprint()
    baseline: list[Attempt] = []
    if options.compare_baseline:
        incumbent = resolve_incumbent(history, subject, options.baseline_of)
        baseline = baseline_rows(history, incumbent, subject, fingerprint, samples)
    prior = summarize(
        subject.target,
        history.attempts(subject.target, since=recent_since(), runner=subject.runner),
        recent_since(),
    )
    notes: list[str] = []
    if options.measure_baseline:
        notes += _working_copy_note(subject)
        reuse = measured_baseline(history, subject, fingerprint, samples)
        if reuse:
            return Report(
                invocation_id,
                subject,
                conditions,
                (),
                (),
                provenance,
                history=prior if prior.tally.total >= MIN_PRIOR_ROWS else None,
                reused_baseline=tuple(reuse),
                notes=tuple(notes),
            )

    kind: AttemptKind = "repetition"
    if retried is not None:
        kind = "retry"
    elif options.measure_baseline:
        kind = "baseline"
    grader = llm_judge(options.gates.judge_model)
    results: list[SampleResult] = []
    recorded: list[Attempt] = []
    for index in range(samples):
        run = subject.run(options.timeout)
        result = grade_sample(index, run, options.gates, grader)
        results.append(result)
        recorded.append(
            history.record_attempt(
                _attempt_row(
                    result,
                    subject=subject,
                    conditions=conditions,
                    invocation_id=invocation_id,
                    fingerprint=fingerprint,
                    provenance=provenance,
                    kind=kind,
                    sample_index=retried.sample_index if retried is not None else index,
                    retry_of=retried.id if retried is not None else None,
                )
            )
        )
    tally = Tally.of(r.outcome for r in results)
    return Report(
        invocation_id,
        subject,
        conditions,
        tuple(results),
        tuple(recorded),
        provenance,
        history=prior if prior.tally.total >= MIN_PRIOR_ROWS else None,
        delta=Delta.of(baseline, tally, provenance.head) if options.compare_baseline else None,
        retry_of=retried.id if retried is not None else None,
        notes=tuple(notes),
    )


def _working_copy_note(subject: Subject) -> list[str]:
    """A baseline of a loop is meant for the committed incumbent; say so when it is not that."""
    if subject.runner != "loop" or subject.source_path is None:
        return []
    committed = head_content_hash(subject.source_path)
    if committed is None or committed == subject.content_hash:
        return []
    return [
        f"{subject.source_path} differs from HEAD: this baseline measures the working copy, "
        "not the committed incumbent --compare-baseline will look for"
    ]


def _attempt_row(
    result: SampleResult,
    *,
    subject: Subject,
    conditions: Conditions,
    invocation_id: str,
    fingerprint: str,
    provenance: Provenance,
    kind: AttemptKind,
    sample_index: int,
    retry_of: int | None,
) -> NewAttempt:
    semantic = result.semantic
    return NewAttempt(
        invocation_id=invocation_id,
        runner=subject.runner,
        target=subject.target,
        input_hash=subject.input_hash,
        target_content_hash=subject.content_hash,
        conditions_fp=fingerprint,
        outcome=result.outcome,
        sample_index=sample_index,
        samples_requested=conditions.samples,
        attempt_kind=kind,
        exit_code=result.run.exit_code,
        expected_exit_code=result.expected_exit_code,
        exit_passed=result.exit_passed,
        semantic_criterion=semantic.criterion if semantic else None,
        semantic_verdict=semantic.verdict if semantic else None,
        confidence=semantic.confidence if semantic else None,
        reason=result.reason or (semantic.reason if semantic else None),
        evidence=semantic.evidence if semantic else None,
        model=subject.subject_model,
        judge_model=semantic.model if semantic else None,
        timed_out=result.run.timed_out,
        errored=result.outcome == "error",
        duration_ms=result.run.duration_ms,
        cost_usd=result.cost_usd,
        git_head=provenance.head,
        git_dirty=provenance.dirty,
        retry_of=retry_of,
    )
