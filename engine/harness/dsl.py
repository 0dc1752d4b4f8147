"""`ll-harness dsl`: run a batch of task files as prompts and report a pass rate with its
Wilson interval — a thin spelling of a suite (`engine.suites`): each graded task is a case, the
prompt runner the subject, and the `expected_answer` judge (or `--semantic`) grades it.

Tasks with `expected` are graded key by key; tasks without it are judged by `--semantic` when
given, else they are ungraded: not run, excluded from the rate, listed, and the run exits
non-zero — never a silent perfect score. Exit codes (docs/harness.md): 0 every graded task
passed; 1 a graded task failed or a task was ungraded; 2 every task ungraded or an infra error;
3 a task abstained and nothing failed or went ungraded.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from engine.harness.baseline import check_retry
from engine.harness.grading import (
    SemanticResult,
    attempt_row,
    check_judge,
    check_prompt_runner,
    semantic_outcome,
)
from engine.harness.keys import Conditions, input_hash
from engine.harness.refusal import Refusal
from engine.harness.session import Stopped
from engine.harness.subjects import Subject, SubjectRun, run_prompt
from engine.harness.tasks import Task, load_tasks
from engine.model.judges import Judge
from engine.model.stats import Rate
from engine.model.suite import InlineCase, Suite
from engine.model.suite import Subject as SuiteSubject
from engine.runtime.history import Attempt, History, NewAttempt
from engine.runtime.provenance import Provenance, git_provenance
from engine.suites.driver import SuiteInterrupted, SuiteOptions, run_suite
from engine.suites.spec import CaseOutcome, JudgeOutcome

TaskOutcome = Literal["pass", "fail", "abstain", "error", "ungraded"]


@dataclass(frozen=True)
class DslOptions:
    model: str | None = None
    runner: str | None = None
    semantic: str | None = None
    judge_model: str | None = None
    jobs: int = 1
    timeout: float | None = 300.0
    retry_of: int | None = None


@dataclass(frozen=True)
class TaskResult:
    task: Task
    outcome: TaskOutcome
    reason: str
    run: SubjectRun | None = None
    semantic: SemanticResult | None = None
    attempt: Attempt | None = None


@dataclass(frozen=True)
class DslReport:
    invocation_id: str
    results: tuple[TaskResult, ...]
    provenance: Provenance
    model: str | None
    retry_of: int | None = None

    def of(self, outcome: TaskOutcome) -> list[TaskResult]:
        return [r for r in self.results if r.outcome == outcome]

    @property
    def pass_rate(self) -> Rate:
        passed, failed = len(self.of("pass")), len(self.of("fail"))
        return Rate(passed, passed + failed)

    @property
    def admissions(self) -> dict[str, int]:
        """Admitted infra retries by reason (only timeouts are retriable)."""
        return dict(Counter("timeout" for r in self.results if r.attempt and r.attempt.retry_of))

    @property
    def exit_code(self) -> int:
        return dsl_exit_code([r.outcome for r in self.results])


def dsl_exit_code(outcomes: Sequence[TaskOutcome]) -> int:
    """The batch exit code (see the module docstring); an empty batch is an error."""
    if not outcomes or all(o == "ungraded" for o in outcomes):
        return 2
    if "error" in outcomes:
        return 2
    if "fail" in outcomes or "ungraded" in outcomes:
        return 1
    if "abstain" in outcomes:
        return 3
    return 0


def task_subject(task: Task, options: DslOptions) -> Subject:
    """A task as a history subject: target its path, content its file bytes."""
    from engine.llm.settings import prompt_model, prompt_runner

    runner = prompt_runner(None, None, options.runner)
    model = prompt_model(None, None, options.model) if runner == "anthropic" else options.model

    def run(timeout: float | None) -> SubjectRun:
        result = run_prompt(task.full_prompt(), options.model, runner, timeout)
        sample = SubjectRun.from_action(result, timeout)
        if runner != "anthropic" and sample.infra_error is None and sample.exit_code != 0:
            # An agent CLI that exits non-zero crashed; it did not answer the task.
            return sample.ungradable(f"the prompt runner exited with code {sample.exit_code}")
        return sample

    return Subject(
        runner="dsl",
        target=task.name,
        content_hash=task.content_hash,
        input_hash=input_hash(),
        stochastic=True,
        run=run,
        subject_model=model,
        prompt_runner=runner,
        source_path=task.path,
    )


def task_conditions(task: Task, subject: Subject, options: DslOptions) -> Conditions:
    judged = task.expected is None and options.semantic is not None
    return Conditions(
        runner="dsl",
        samples=1,
        timeout=options.timeout,
        expected_exit_code=None,
        semantic=options.semantic if judged else None,
        judge_model=options.judge_model if judged else None,
        subject_model=subject.subject_model,
        prompt_runner=subject.prompt_runner,
    )


def dsl_suite(tasks: Sequence[Task], options: DslOptions) -> Suite:
    """The batch as a suite: a case per graded task (its full prompt, its `expected`), the prompt
    runner as the subject, run where `ll-harness dsl` runs, and exact-match grading (or the
    `--semantic` judge for tasks without `expected`)."""
    from engine.llm.settings import prompt_runner

    judges = [
        Judge(
            "expected",
            "builtin",
            builtin="expected_answer",
            condition="annotations.get('expected') is not None",
        )
    ]
    if options.semantic is not None:
        judges.append(
            Judge(
                "semantic",
                "builtin",
                builtin="llm_structured",
                arguments=MappingProxyType({"prompt": options.semantic}),
                condition="annotations.get('expected') is None",
                model=options.judge_model,
            )
        )
    return Suite(
        name="dsl",
        subject=SuiteSubject(
            kind="prompt",
            prompt="${inputs.prompt}",
            model=options.model,
            runner=prompt_runner(None, None, options.runner),
            timeout=options.timeout,
        ),
        judges=tuple(judges),
        cases=tuple(
            InlineCase(
                task.name,
                MappingProxyType({"prompt": task.full_prompt()}),
                MappingProxyType({"expected": dict(task.expected)} if task.expected else {}),
            )
            for task in tasks
        ),
        isolation="none",
        judge_model=options.judge_model,
    )


def grade_tasks(
    tasks: Sequence[Task],
    options: DslOptions,
    cwd: Path,
    on_result: Callable[[TaskResult], None] | None = None,
) -> dict[str, TaskResult]:
    """Run the graded tasks as a suite (nothing recorded: each task is one `dsl` attempt row,
    written by `run_dsl` through `on_result`, which hears each graded task as its case ends)
    and grade each task from its case's outcome."""
    graded = {t.name: t for t in tasks if t.expected is not None or options.semantic is not None}
    runner = _runner_name(options)
    results: dict[str, TaskResult] = {}

    def grade(outcome: CaseOutcome) -> None:
        result = task_result(graded[outcome.case_id], outcome, options, runner)
        results[outcome.case_id] = result
        if on_result is not None:
            on_result(result)

    if graded:
        run_suite(
            dsl_suite(list(graded.values()), options),
            SuiteOptions(jobs=options.jobs, record=False),
            history=None,
            cwd=cwd,
            on_case=grade,
        )
    for task in tasks:
        if task.name not in graded:
            results[task.name] = TaskResult(task, "ungraded", "no `expected:` and no --semantic")
    return results


def _runner_name(options: DslOptions) -> str:
    from engine.llm.settings import prompt_runner

    return prompt_runner(None, None, options.runner)


def task_result(task: Task, outcome: CaseOutcome, options: DslOptions, runner: str) -> TaskResult:
    """A task's grade from its case: infra errors, a runner that failed, then its judge."""
    arm = outcome.arms[0]
    infra = None
    if arm.status == "error":
        timed_out = arm.timed_out and options.timeout
        infra = f"timed out after {options.timeout:g}s" if timed_out else str(arm.error)
    run = SubjectRun(
        stdout=arm.stdout,
        stderr=arm.stderr,
        exit_code=arm.exit_code,
        duration_ms=arm.duration_ms,
        timed_out=arm.timed_out,
        infra_error=infra,
        cost_usd=arm.cost_usd,
    )
    if infra is not None:
        return TaskResult(task, "error", infra, run)
    if arm.exit_code != 0:
        if runner != "anthropic":  # an agent CLI that exits non-zero crashed: no answer
            reason = f"the prompt runner exited with code {arm.exit_code}"
            return TaskResult(task, "error", reason, run.ungradable(reason))
        # the model answered, but not normally (a refusal): a failed task
        why = arm.stderr.strip() or f"the prompt runner exited with code {arm.exit_code}"
        return TaskResult(task, "fail", why, run)
    judged = {j.name: j for j in arm.judges}
    if task.expected is not None:
        verdict = judged["expected"]
        if verdict.status != "ok":
            return TaskResult(task, "error", verdict.error or verdict.rationale, run)
        reason = "" if verdict.passed else verdict.rationale
        return TaskResult(task, "pass" if verdict.passed else "fail", reason, run)
    assert options.semantic is not None
    semantic = _semantic(options.semantic, judged["semantic"], options.judge_model)
    outcome_name = semantic_outcome(semantic.verdict)
    reason = (
        "" if outcome_name == "pass" else f"judge said {semantic.verdict}: {semantic.reason or ''}"
    )
    return TaskResult(task, outcome_name, reason.rstrip(": "), run, semantic)


def _semantic(criterion: str, judged: JudgeOutcome, model: str | None) -> SemanticResult:
    """The `llm_structured` judge's answer as the harness records a semantic verdict."""
    if judged.status == "abstain":
        verdict = "cannot_judge"
    elif judged.status != "ok":
        verdict = "error"
    else:
        verdict = str(judged.details.get("verdict") or ("yes" if judged.passed else "no"))
    reason = judged.error if judged.status != "ok" else judged.rationale
    if reason and reason.startswith(f"{verdict}: "):
        reason = reason[len(verdict) + 2 :]
    first = judged.samples[0] if judged.samples else None
    return SemanticResult(
        criterion=criterion,
        verdict=verdict,
        confidence=first.confidence if first is not None else None,
        reason=reason or None,
        evidence=judged.evidence or None,
        model=str(judged.details.get("model") or model or "") or None,
        cost_usd=judged.cost_usd,
    )


def run_dsl(path: Path, options: DslOptions, history: History, cwd: Path) -> DslReport:
    """Load every task (refusing on the first invalid one), run them, record, report."""
    tasks = load_tasks(path, cwd)
    if any(task.expected is None for task in tasks):
        check_judge(options.semantic)  # only tasks without `expected:` are judged
    if tasks:
        from engine.llm.settings import prompt_runner

        check_prompt_runner(prompt_runner(None, None, options.runner))
    subjects = [task_subject(task, options) for task in tasks]
    retried: Attempt | None = None
    if options.retry_of is not None and (len(tasks) != 1 or not path.is_file()):
        raise Refusal(
            "--retry-of on dsl needs the path of the single task file it retries",
            hint="pass the task file, not its directory",
        )
    provenance = git_provenance(cwd)
    if options.retry_of is not None:
        conditions = task_conditions(tasks[0], subjects[0], options)
        retried = check_retry(
            history,
            options.retry_of,
            subjects[0],
            lambda n: conditions.with_samples(n).fingerprint(),
            provenance.head,
        )
    invocation_id = uuid.uuid4().hex[:16]
    index_of = {task.name: index for index, task in enumerate(tasks)}
    recorded: dict[str, TaskResult] = {}

    def record(result: TaskResult) -> None:
        """Each graded task is recorded as soon as it ends, so a stopped batch keeps it."""
        index = index_of[result.task.name]
        row = _row(result, subjects[index], options, invocation_id, index, provenance, retried)
        recorded[result.task.name] = replace(result, attempt=history.record_attempt(row))

    try:
        graded = grade_tasks(tasks, options, cwd, on_result=record)
    except SuiteInterrupted as exc:
        kept = (
            f"the finished ones are recorded (invocation {invocation_id})"
            if recorded
            else "nothing was recorded"
        )
        how = exc.message.split(" after ", 1)[0]  # "interrupted" or "stopped by SIGTERM"
        raise Stopped(
            f"{how} after {len(recorded)} of {len(tasks)} tasks: {kept}",
            hint="run the batch again for a result; `ll-harness history TASK` counts every "
            "recorded task",
        ) from None
    results = [recorded.get(task.name, graded[task.name]) for task in tasks]
    return DslReport(
        invocation_id,
        tuple(results),
        provenance,
        subjects[0].subject_model if subjects else options.model,
        retry_of=retried.id if retried else None,
    )


def _row(
    result: TaskResult,
    subject: Subject,
    options: DslOptions,
    invocation_id: str,
    index: int,
    provenance: Provenance,
    retried: Attempt | None,
) -> NewAttempt:
    assert result.run is not None and result.outcome != "ungraded"
    row = attempt_row(
        invocation_id=invocation_id,
        runner="dsl",
        subject=subject,
        conditions_fp=task_conditions(result.task, subject, options).fingerprint(),
        outcome=result.outcome,
        reason=result.reason,
        run=result.run,
        semantic=result.semantic,
        provenance=provenance,
    )
    return replace(
        row,
        sample_index=retried.sample_index if retried else index,
        attempt_kind="retry" if retried else "repetition",
        retry_of=retried.id if retried else None,
    )
