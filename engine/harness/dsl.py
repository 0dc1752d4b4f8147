"""`ll-harness dsl`: run a batch of task files as prompts and report a pass rate with its
Wilson interval.

Tasks with `expected` are graded key by key; tasks without it are judged by `--semantic` when
given, else they are ungraded: not run, excluded from the rate, listed, and the run exits
non-zero — never a silent perfect score. Exit codes (docs/harness.md): 0 every graded task
passed; 1 a graded task failed or a task was ungraded; 2 every task ungraded or an infra error;
3 a task abstained and nothing failed or went ungraded.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from engine.harness.baseline import check_retry
from engine.harness.grading import (
    SemanticResult,
    attempt_row,
    check_judge,
    llm_judge,
    semantic_outcome,
)
from engine.harness.keys import Conditions, input_hash
from engine.harness.provenance import Provenance, git_provenance
from engine.harness.refusal import Refusal
from engine.harness.stats import Rate
from engine.harness.subjects import Subject, SubjectRun, run_prompt
from engine.harness.tasks import Task, extract_answer, grade_answer, load_tasks
from engine.run.history import Attempt, History, NewAttempt

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


def grade_task(task: Task, subject: Subject, options: DslOptions) -> TaskResult:
    """Run one task's prompt and grade the response (the worker of `--jobs`)."""
    if task.expected is None and options.semantic is None:
        return TaskResult(task, "ungraded", "no `expected:` and no --semantic")
    run = subject.run(options.timeout)
    if run.infra_error is not None:
        return TaskResult(task, "error", run.infra_error, run)
    if run.exit_code != 0:  # the model answered, but not normally (a refusal): a failed task
        why = run.stderr.strip() or f"the prompt runner exited with code {run.exit_code}"
        return TaskResult(task, "fail", why, run)
    if task.expected is not None:
        answer = extract_answer(run.stdout)
        if answer is None:
            return TaskResult(task, "fail", "unparseable answer — no JSON object in response", run)
        problems = grade_answer(task.expected, answer)
        return TaskResult(task, "fail" if problems else "pass", "; ".join(problems), run)
    assert options.semantic is not None
    verdict = llm_judge(options.judge_model)(options.semantic, run.stdout)
    semantic = SemanticResult.from_verdict(options.semantic, verdict, options.judge_model)
    outcome = semantic_outcome(semantic.verdict)
    reason = "" if outcome == "pass" else f"judge said {semantic.verdict}: {semantic.reason or ''}"
    return TaskResult(task, outcome, reason.rstrip(": "), run, semantic)


def run_dsl(path: Path, options: DslOptions, history: History, cwd: Path) -> DslReport:
    """Load every task (refusing on the first invalid one), run them, record, report."""
    tasks = load_tasks(path, cwd)
    if any(task.expected is None for task in tasks):
        check_judge(options.semantic)  # only tasks without `expected:` are judged
    subjects = [task_subject(task, options) for task in tasks]
    retried: Attempt | None = None
    if options.retry_of is not None:
        if len(tasks) != 1 or not path.is_file():
            raise Refusal(
                "--retry-of on dsl needs the path of the single task file it retries",
                hint="pass the task file, not its directory",
            )
        conditions = task_conditions(tasks[0], subjects[0], options)
        retried = check_retry(
            history,
            options.retry_of,
            subjects[0],
            lambda n: conditions.with_samples(n).fingerprint(),
        )
    provenance = git_provenance(cwd)
    invocation_id = uuid.uuid4().hex[:16]
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        graded = list(
            pool.map(lambda task, subject: grade_task(task, subject, options), tasks, subjects)
        )
    results = []
    for index, (result, subject) in enumerate(zip(graded, subjects, strict=True)):
        if result.outcome == "ungraded" or result.run is None:
            results.append(result)
            continue
        row = _row(result, subject, options, invocation_id, index, provenance, retried)
        results.append(
            TaskResult(
                result.task,
                result.outcome,
                result.reason,
                result.run,
                result.semantic,
                history.record_attempt(row),
            )
        )
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
