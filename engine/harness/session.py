"""One `ll-harness cmd|prompt|loop` invocation: check, run every sample, grade, record, band.

Every refusal (nothing measured, bad retry, missing baseline) happens before the first sample
runs. All N samples always run — no early stop on a pass, so a flaky subject cannot get lucky
on sample 1 and skip the rest. Each sample is one history row.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from engine.harness.banding import EXIT_CODES, Band, Tally, band
from engine.harness.baseline import (
    FILE_RUNNERS,
    Delta,
    baseline_rows,
    check_retry,
    measured_baseline,
    resolve_incumbent,
)
from engine.harness.grading import (
    Gates,
    SampleResult,
    attempt_row,
    check_judge,
    grade_sample,
    llm_judge,
)
from engine.harness.history_report import (
    MIN_PRIOR_ROWS,
    HistorySummary,
    recent_since,
    summarize_counts,
)
from engine.harness.keys import Conditions
from engine.harness.refusal import Refusal
from engine.harness.subjects import Subject
from engine.judges.deadline import SignalInterrupt, raise_on_stop_signals, restore_handlers
from engine.model.errors import LoopError
from engine.runtime.history import Attempt, AttemptKind, History, NewAttempt
from engine.runtime.provenance import Provenance, git_provenance, head_content_hash

DEFAULT_STOCHASTIC_SAMPLES = 3
DEFAULT_TIMEOUT = 300.0
MAX_SAMPLES = 10_000  # per invocation; refused above, before anything runs


class Stopped(LoopError):
    """Ctrl-C or SIGTERM in the middle of the samples (exit 3: stopped, as `ll-loop run`).

    The samples that finished are recorded; the interrupted one is not (it was ended by us and
    says nothing about the subject), and its process group is ended with it."""

    code = "HARNESS_STOPPED"
    exit_code = 3


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
    # A retry's result is its measurement's: every sample of the invocation it joined, each
    # one's surviving attempt (this retry in place of the attempt it superseded).
    measurement: tuple[Attempt, ...] = ()
    measured_invocation: str | None = None  # the invocation a retry joined

    @property
    def tally(self) -> Tally:
        if self.reused_baseline:
            return Tally.of(a.outcome for a in self.reused_baseline)
        if self.measurement:
            return Tally.of(a.outcome for a in self.measurement)
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
    if options.samples is not None and options.samples > MAX_SAMPLES:
        raise Refusal(
            f"--samples {options.samples} is more than one invocation runs (at most "
            f"{MAX_SAMPLES}: the 95% interval is then within ±0.01 already)",
            hint=f"pass --samples {MAX_SAMPLES} or fewer",
        )
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
    code = options.gates.exit_code
    if code is not None and not 0 <= code <= 255:
        raise Refusal(
            f"--exit-code {code} can never match: exit codes are 0 to 255",
            hint="pass the exit code the subject should end with, e.g. --exit-code 0",
        )
    if options.timeout is not None and not 0 < options.timeout < math.inf:
        raise Refusal(
            f"--timeout {options.timeout} is not a number of seconds",
            hint="pass a positive number of seconds, or 0 for no limit",
        )
    check_judge(options.gates.semantic)


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
    """Run one invocation end to end: admit (refusals), run every sample, record, band."""
    check_options(options)
    samples = effective_samples(subject, options)
    conditions = conditions_of(subject, options, samples)
    retried: Attempt | None = None
    provenance = git_provenance(cwd, fingerprint=True)
    if options.retry_of is not None:
        at_n = conditions  # the fingerprint of the invocation being retried, at its own N
        retried = check_retry(
            history,
            options.retry_of,
            subject,
            lambda n: at_n.with_samples(n).fingerprint(),
            provenance.head,
        )
        conditions = conditions.with_samples(retried.samples_requested)
    baseline: list[Attempt] = []
    if options.compare_baseline:
        incumbent = resolve_incumbent(history, subject, options.baseline_of)
        baseline = baseline_rows(
            history, incumbent, subject, conditions.fingerprint(), samples, provenance
        )
    report = Report(
        invocation_id=uuid.uuid4().hex[:16],
        subject=subject,
        conditions=conditions,
        samples=(),
        attempts=(),
        provenance=provenance,
        history=_prior_history(history, subject),
        retry_of=retried.id if retried is not None else None,
        notes=tuple(_working_copy_note(subject)) if options.measure_baseline else (),
    )
    if options.measure_baseline:
        reuse = measured_baseline(
            history, subject, conditions.fingerprint(), samples, report.provenance
        )
        if reuse:
            return replace(report, reused_baseline=tuple(reuse))
    kind: AttemptKind = "repetition"
    if retried is not None:
        kind = "retry"
    elif options.measure_baseline:
        kind = "baseline"
    results, recorded = _run_samples(report, options, history, samples, kind, retried)
    delta = None
    if options.compare_baseline:
        delta = Delta.of(baseline, Tally.of(r.outcome for r in results), report.provenance.head)
    report = replace(report, samples=results, attempts=recorded, delta=delta)
    if retried is not None and recorded and recorded[-1].id:  # 0: it waits in the spool, and
        invocation, measurement = _measurement(history, retried)  # replaces nothing yet
        report = replace(report, measurement=measurement, measured_invocation=invocation)
    return report


def _measurement(history: History, retried: Attempt) -> tuple[str, tuple[Attempt, ...]]:
    """Every sample of the measurement a retry joined, as its surviving attempt: one passing
    retry is not a PASS of an invocation whose other samples failed."""
    root = _follow(history, retried, lambda a: a.retry_of)
    latest = [
        _follow(history, s, lambda a: a.superseded_by)
        for s in history.invocation(root.invocation_id)
    ]
    return root.invocation_id, tuple(latest)


def _follow(history: History, start: Attempt, link: Callable[[Attempt], int | None]) -> Attempt:
    """The last attempt of the chain `link` makes from `start` (a retry's original, a sample's
    latest retry); a row that is missing or seen before ends it."""
    row, seen = start, {start.id}
    while (next_id := link(row)) is not None:
        found = history.attempt(next_id)
        if found is None or found.id in seen:
            break
        row = found
        seen.add(row.id)
    return row


def _prior_history(history: History, subject: Subject) -> HistorySummary | None:
    """The target's recent rates from earlier invocations, once there are enough rows."""
    since = recent_since()
    counts = history.attempt_counts(subject.target, since=since, runner=subject.runner)
    prior = summarize_counts(subject.target, counts, (), since)
    return prior if prior.tally.total >= MIN_PRIOR_ROWS else None


def _run_samples(
    report: Report,
    options: Options,
    history: History,
    samples: int,
    kind: AttemptKind,
    retried: Attempt | None,
) -> tuple[tuple[SampleResult, ...], tuple[Attempt, ...]]:
    """Run all `samples` (never stopping early), grading and recording each one as it ends."""
    grader = llm_judge(options.gates.judge_model)
    results: list[SampleResult] = []
    recorded: list[Attempt] = []
    try:
        with _sigterm_stops():
            for index in range(samples):
                run = report.subject.run(options.timeout)
                result = grade_sample(index, run, options.gates, grader)
                results.append(result)
                row = _attempt_row(
                    result,
                    report=report,
                    kind=kind,
                    sample_index=retried.sample_index if retried is not None else index,
                    retry_of=retried.id if retried is not None else None,
                )
                recorded.append(history.record_attempt(row))
    except KeyboardInterrupt as exc:
        how = f"stopped by {exc}" if isinstance(exc, SignalInterrupt) else "interrupted"
        kept = (
            f"the finished ones are recorded (invocation {report.invocation_id}, attempts "
            f"{', '.join(str(a.id) if a.id else 'waiting in the spool' for a in recorded)})"
            if recorded
            else "nothing was recorded"
        )
        raise Stopped(
            f"{how} after {len(recorded)} of {samples} samples: {kept}",
            hint="run the measurement again for a result; `ll-harness history` counts every "
            "recorded sample",
        ) from None
    return tuple(results), tuple(recorded)


@contextlib.contextmanager
def _sigterm_stops() -> Iterator[None]:
    """SIGTERM and SIGHUP stop the samples as Ctrl-C does (main thread only)."""
    previous = raise_on_stop_signals()
    try:
        yield
    finally:
        restore_handlers(previous)


def _working_copy_note(subject: Subject) -> list[str]:
    """A baseline of a loop or skill is meant for the committed incumbent; say so when it is
    not that."""
    if subject.runner not in FILE_RUNNERS or subject.source_path is None:
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
    report: Report,
    kind: AttemptKind,
    sample_index: int,
    retry_of: int | None,
) -> NewAttempt:
    row = attempt_row(
        invocation_id=report.invocation_id,
        runner=report.subject.runner,
        subject=report.subject,
        conditions_fp=report.conditions.fingerprint(),
        outcome=result.outcome,
        reason=result.reason,
        run=result.run,
        semantic=result.semantic,
        provenance=report.provenance,
    )
    return replace(
        row,
        sample_index=sample_index,
        samples_requested=report.conditions.samples,
        attempt_kind=kind,
        expected_exit_code=result.expected_exit_code,
        exit_passed=result.exit_passed,
        retry_of=retry_of,
    )
