"""`run_suite`: load, admit (refusals), plan, run the cases through an executor, record, report.

The driver is the only writer: each case's outcome is turned into rows and recorded in one
transaction as it arrives, so a run killed at any moment (even with SIGKILL) has every finished
case and no half of one; `--resume RUN` plans the cases that have no row yet and runs only those.
The report is built from the run's rows, so a resumed run reports what an uninterrupted one would.
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import hashlib
import json
import os
import queue
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, wait
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from engine.judges.deadline import SignalInterrupt, raise_on_stop_signals, restore_handlers
from engine.load.bounded import MAX_YAML_BYTES, FileRefused, read_capped
from engine.load.dataset import list_cases, read_case
from engine.load.project import project_root, workspace_path_problem
from engine.load.spelling import did_you_mean_hint
from engine.load.suite import load_suite_file
from engine.model.errors import LoopError, UsageError
from engine.model.judges import Judge
from engine.model.suite import Case, Suite
from engine.model.timefmt import counted
from engine.runtime.history import (
    History,
    SuiteCaseRow,
    SuiteJudgementRow,
    SuiteRunRow,
    utc_now,
)
from engine.runtime.provenance import git_provenance
from engine.runtime.runstore import new_run_id
from engine.runtime.workspace import git_toplevel
from engine.suites import workspace as workspaces
from engine.suites.aggregate import (
    JudgeSummary,
    Verdict,
    judgement_scores,
    suite_verdict,
    summarise,
)
from engine.suites.casework import broken_case, forget_run, interrupt_run
from engine.suites.executor import EXECUTORS, Executor, local_executor
from engine.suites.progress import SuiteProgress
from engine.suites.result import BaselineDelta, SuiteResult, describe_subject
from engine.suites.spec import CaseOutcome, CaseSpec, JudgeOutcome, RunSettings, SampleAnswer

LLM_JOBS = 8
MAX_JUDGE_SAMPLES = 100  # --samples, as the schemas bound a judge's samples and reviewers
# While cases run, a thread waiting for the GIL (a subject that just exited, a pipe to read)
# gets it after 0.5 ms instead of Python's 5 ms: with several workers busy, the default made a
# 3 ms spawn take 15 ms.
SWITCH_INTERVAL = 0.0005
# After a stop, how long the running cases get to end before the suite ends without them.
STOP_GRACE = 5.0


class SuiteRefusal(UsageError):
    """The suite will not run: one sentence why, a hint what to do (exit 2, nothing ran)."""

    code = "SUITE"


class SuiteInterrupted(LoopError):
    """The suite was interrupted (Ctrl-C); what finished is recorded and `--resume` continues
    (exit 3: stopped)."""

    code = "SUITE_STOPPED"
    exit_code = 3


@dataclass(frozen=True)
class SuiteOptions:
    """The command line's choices for one suite run (`ll-harness suite`)."""

    samples: int | None = None
    jobs: int | None = None  # None: the CPU count for shell subjects, 8 with LLM work
    cases: str | None = None  # a glob over case ids
    measure_baseline: bool = False
    compare_baseline: bool = False
    baseline_of: str | None = None  # a suite run id
    resume: str | None = None
    keep_workspaces: bool = False
    executor: str = "threads"  # threads | processes | ray
    address: str | None = None  # --executor ray: the cluster (None: RAY_ADDRESS, else local)
    record: bool = True  # False: nothing is written to history.db (ll-harness dsl)


_RESUMED_OPTIONS = ("samples", "cases", "measure_baseline", "compare_baseline", "baseline_of")

# How a refusal names the caller's options: as flags for `ll-harness suite` (which sets this
# around its call), as keyword arguments for a Python caller of `engine.suite(...)`, who has
# no `--jobs` to pass.
_COMMAND_LINE: ContextVar[bool] = ContextVar("suite_command_line", default=False)


@contextmanager
def command_line_spelling() -> Iterator[None]:
    """Within it, suite refusals name options as `ll-harness suite` flags (`--jobs`)."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def _option(name: str) -> str:
    """An option as its caller spells it: `--compare-baseline` / `--jobs` on the command line,
    `compare_baseline=True` / `jobs` in Python."""
    if _COMMAND_LINE.get():
        return "--" + name.replace("_", "-")
    return f"{name}=True" if isinstance(getattr(SuiteOptions(), name, None), bool) else name


def _given(name: str, value: Any, shown: str | None = None) -> str:
    """An option with its value: `--cases 'a*'` on the command line (`shown`, else the value
    as it is), `cases='a*'` in Python."""
    if _COMMAND_LINE.get():
        return f"--{name.replace('_', '-')} {value if shown is None else shown}"
    return f"{name}={value!r}"


def _resume_call(source: str, run_id: str) -> str:
    """How to continue run `run_id` of the suite at `source`, in the caller's terms."""
    if _COMMAND_LINE.get():
        return f"`ll-harness suite {_shell_word(source)} --resume {run_id}`"
    return f"engine.suite({source!r}, resume={run_id!r})"


def run_suite(
    suite: str | Path | Suite,
    options: SuiteOptions | None = None,
    *,
    cwd: str | Path | None = None,
    history: History | None = None,
    progress: Callable[..., SuiteProgress] | None = None,
    executor: Executor | None = None,
    on_case: Callable[[CaseOutcome], None] | None = None,
    cases: Sequence[Case] | None = None,
) -> SuiteResult:
    """Run a suite end to end and return what it found (see the module docstring).

    `suite` is a suite file's path or a loaded `Suite`; `cwd` where it runs (default: the
    working directory; the project root and its `.loops/history.db` are found from there);
    `history` an open history database to record into (default: the project's, opened and
    closed here). `progress` makes the display (default: none); `executor` runs the cases
    (default: `options.executor` with `options.jobs` workers); `on_case` hears each case's
    outcome as it arrives; `cases` are the suite's cases already read (by `load_cases`, for
    lint), so that no case file is read twice. A load problem raises `LoadError`, a refusal
    `SuiteRefusal`, an interruption `SuiteInterrupted` (the run stays resumable); nothing else
    is raised for what goes wrong inside a case.
    """
    chosen = options or SuiteOptions()
    where = Path(cwd) if cwd is not None else Path.cwd()
    if chosen.executor == "ray" and executor is None:
        from engine.suites.ray_executor import require_ray

        require_ray()  # refused before anything is read or recorded
    loaded = suite if isinstance(suite, Suite) else load_suite_file(Path(suite))
    if history is not None or not chosen.record:
        return _run(loaded, chosen, history, where, progress, executor, on_case, cases)
    from engine.runtime.history import open_history

    with open_history(project_root(where)) as opened:
        return _run(loaded, chosen, opened, where, progress, executor, on_case, cases)


def _run(
    loaded: Suite,
    options: SuiteOptions,
    history: History | None,
    cwd: Path,
    progress: Callable[..., SuiteProgress] | None,
    executor: Executor | None,
    on_case: Callable[[CaseOutcome], None] | None,
    read: Sequence[Case] | None,
) -> SuiteResult:
    started = time.monotonic()
    recording = history if options.record else None
    plan = _admit(loaded, options, recording, cwd, read)
    settings, options = plan.settings, plan.options
    # The run is held first: a `--resume` of a run another process is running is refused
    # before its executor is made (a Ray instance started, or a cluster joined, for nothing).
    lock = _lock_run(Path(settings.run_dir), settings.run_id) if recording else None
    try:
        # A refusal here (no Ray, an --address nothing answers at) is one before the run:
        # made before its history row, it leaves no unfinished run (nor an empty directory).
        pool = executor or _executor(options, loaded)
    except BaseException:
        if lock is not None:
            os.close(lock)
        if plan.new_row is not None:
            with contextlib.suppress(OSError):
                (Path(settings.run_dir) / "lock").unlink()
                Path(settings.run_dir).rmdir()
        raise
    if recording is not None and plan.new_row is not None:
        recording.record_suite_run(plan.new_row)
    try:
        done_rows = _previous(recording, settings.run_id)
        todo = [c for c in plan.cases if c.id not in done_rows.finished]
        git_root = git_toplevel(Path(settings.project_root))
        kept = {
            f"{index:06d}-{arm}"
            for index, case in enumerate(plan.cases)
            if case.id in done_rows.finished and options.keep_workspaces
            for arm in ("subject", "baseline")
        }
        workspaces.clean_run(
            workspaces.scratch_roots(settings.run_id), git_root, keep=frozenset(kept)
        )
        Path(settings.scratch_root).mkdir(parents=True, exist_ok=True)
        display = (progress or _silent)(
            suite=loaded.name,
            run_id=settings.run_id,
            total=len(plan.cases),
            done_before=len(plan.cases) - len(todo),
        )
        display.start(resumed=len(plan.cases) - len(todo))
        rows = _Rows(done_rows.cases, done_rows.judgements)
        recorded = set(done_rows.finished)
        batch = _Batch(recording)
        _quick_switching(True)
        flow = _Flow(pool, _specs(settings, plan, todo, recording))
        handlers = raise_on_stop_signals()  # SIGTERM, SIGHUP: as Ctrl-C
        try:
            for outcome in flow.outcomes(tick=_Batch.SECONDS):
                if outcome is None:  # no case finished for a while: commit what is waiting
                    batch.flush_if_due()
                    continue
                if outcome.case_id in recorded:
                    continue  # a case is recorded once, whoever delivered it again
                recorded.add(outcome.case_id)
                cases, judgements = to_rows(outcome, settings)
                batch.add(cases, judgements)
                rows.add(cases, judgements)
                display.update(outcome)
                if on_case is not None:
                    on_case(outcome)
            pool.shutdown()
        except KeyboardInterrupt as exc:
            abandoned = flow.stop(settings.run_id)  # the running subjects are stopped
            how = f"stopped by {exc}" if isinstance(exc, SignalInterrupt) else "interrupted"
            left = f" ({counted(abandoned, 'stuck case')} left unrecorded)" if abandoned else ""
            raise SuiteInterrupted(
                f"{how} after {display.done} of {counted(len(plan.cases), 'case')}{left}",
                hint=f"{_resume_call(loaded.source, settings.run_id)} runs the rest",
            ) from None
        except BaseException:
            flow.stop(settings.run_id)
            raise
        finally:
            restore_handlers(handlers)
            _quick_switching(False)
            batch.flush()
            display.close()
            forget_run(settings.run_id)
            if not options.keep_workspaces:  # finished or stopped, the scratch goes
                workspaces.clean_run(workspaces.scratch_roots(settings.run_id), git_root)
        result = _result(loaded, settings, plan, rows, recording, started)
        if recording is not None:
            recording.finish_suite_run(
                settings.run_id, result=result.verdict.value, cost_usd=result.cost_usd
            )
        return result
    finally:
        if lock is not None:
            os.close(lock)


_switching_lock = threading.Lock()
_switching: list[float] = []  # the process's own interval, while suites run: one per suite


def _quick_switching(start: bool) -> None:
    """The short GIL switch interval while any suite of this process runs; the process's own
    back when the last one ends. Each suite saving and restoring its own left two suites run in
    threads (a program's) with 0.5 ms for good when the first to start ended first."""
    with _switching_lock:
        if start:
            _switching.append(_switching[0] if _switching else sys.getswitchinterval())
            sys.setswitchinterval(SWITCH_INTERVAL)
        elif _switching:
            own = _switching.pop()
            if not _switching:
                sys.setswitchinterval(own)


def _silent(**kwargs: Any) -> SuiteProgress:
    return SuiteProgress(mode="quiet", **kwargs)


def _executor(options: SuiteOptions, suite: Suite) -> Executor:
    """The executor `--executor` names; a Ray cluster sizes `--jobs` itself when not given."""
    if options.executor == "ray":
        from engine.suites.ray_executor import RayExecutor

        return RayExecutor(suite, options.jobs, address=options.address)
    return local_executor(options.executor, options.jobs or default_jobs(suite))


def default_jobs(suite: Suite) -> int:
    """The CPU count for shell subjects; 8 when cases wait on models or agents."""
    subjects = [suite.subject, *([suite.baseline_subject] if suite.baseline_subject else [])]
    if suite.uses_llm or any(s.kind in ("prompt", "agent") for s in subjects):
        return LLM_JOBS
    return os.cpu_count() or 1


# ---------------------------------------------------------------------------------------------
# Admission: every refusal before the first case runs


_Row = TypeVar("_Row", SuiteCaseRow, SuiteJudgementRow)


@dataclass(frozen=True)
class _Plan:
    settings: RunSettings
    options: SuiteOptions
    cases: list[Case]
    baseline_run: SuiteRunRow | None
    # The history row of a new run, written once the run can start (its executor made): a
    # refusal before that leaves no unfinished run behind.
    new_row: SuiteRunRow | None = None


def _admit(
    suite: Suite,
    options: SuiteOptions,
    history: History | None,
    cwd: Path,
    read: Sequence[Case] | None,
) -> _Plan:
    root = project_root(cwd)
    fingerprint = conditions_fingerprint(suite, options.samples)
    run_row: SuiteRunRow | None = None
    if options.resume is not None:
        run_row, options = _resumed(suite, options, history, fingerprint)
    _check_options(suite, options)
    _check_llm(suite, options)
    cases = _selected(list(read) if read is not None else list_cases(suite), options.cases)
    if options.compare_baseline:
        cases = [c if c.loaded else read_case(str(c.folder)) for c in cases]  # their keys
    _check_workspace(suite, root)
    baseline_run = _baseline_run(suite, options, history, fingerprint)
    if baseline_run is not None and history is not None:
        _check_shared_cases(cases, baseline_run, history)
        # pinned: a --resume compares with this baseline, even once a newer one is measured
        options = replace(options, baseline_of=baseline_run.run_id)
    run_id = run_row.run_id if run_row is not None else new_run_id()
    run_dir = root / ".loops" / "suites" / run_id
    if history is not None:  # a run that records nothing leaves nothing behind either
        run_dir.mkdir(parents=True, exist_ok=True)
    scratch = workspaces.scratch_root(run_id, in_memory=_small_copies(suite, root))
    settings = RunSettings(
        run_id=run_id,
        suite=suite,
        project_root=str(root),
        scratch_root=str(scratch),
        run_dir=str(run_dir) if history is not None else "",
        cwd=str(cwd),
        conditions_fp=fingerprint,
        samples=options.samples,
        keep_workspaces=options.keep_workspaces,
        subject_hashes=subject_hashes(suite),
        keep_records=options.measure_baseline or suite.pairwise is not None,
    )
    new_row = None
    if history is not None and run_row is None:
        new_row = _run_row(suite, settings, options, len(cases), cwd)
    return _Plan(settings, options, cases, baseline_run, new_row)


def _small_copies(suite: Suite, root: Path) -> bool:
    """Copy workspaces small enough to live in memory (see `workspaces.scratch_root`)."""
    try:
        mode, _ = workspaces.isolation_of(suite, root)
    except workspaces.WorkspaceError:
        return False
    size = workspaces.copy_size(suite.workspace, root)
    return mode == "copy" and size <= workspaces.SMALL_COPY_BYTES


def _check_options(suite: Suite, options: SuiteOptions) -> None:
    if options.samples is not None and not 1 <= options.samples <= MAX_JUDGE_SAMPLES:
        raise SuiteRefusal(
            f"{_option('samples')} must be from 1 to {MAX_JUDGE_SAMPLES}, got {options.samples}",
            hint="a few samples settle a judge; more only cost model calls",
        )
    if options.jobs is not None and options.jobs < 1:
        raise SuiteRefusal(
            f"{_option('jobs')} must be at least 1", hint=f"pass {_given('jobs', 1)} or more"
        )
    if options.executor not in (*EXECUTORS, "ray"):
        # before the run is recorded: a bare ValueError from the executor left a run row behind
        named = (*EXECUTORS, "ray")
        raise SuiteRefusal(
            f"unknown executor {options.executor!r}{did_you_mean_hint(options.executor, named)}",
            hint=f"use one of {', '.join(named)}",
        )
    if options.address is not None and options.executor != "ray":
        raise SuiteRefusal(
            f"{_option('address')} names a Ray cluster, which only {_given('executor', 'ray')} "
            "uses",
            hint=f"add {_given('executor', 'ray')}, or drop {_option('address')}",
        )
    if options.measure_baseline and options.compare_baseline:
        raise SuiteRefusal(
            f"{_option('measure_baseline')} and {_option('compare_baseline')} are two separate "
            "arms",
            hint="measure the incumbent first, change it, then compare in a second run",
        )
    if options.baseline_of is not None and not options.compare_baseline:
        raise SuiteRefusal(
            f"{_option('baseline_of')} only makes sense with {_option('compare_baseline')}",
            hint=f"add {_option('compare_baseline')}, or drop {_option('baseline_of')}",
        )
    if (options.measure_baseline or options.compare_baseline) and not options.record:
        raise SuiteRefusal("baselines live in history.db, which this run does not write")


def _shell_word(path: str) -> str:
    """A suite file's path as a command to paste needs it: quoted when it has a space."""
    return shlex.quote(path) if path else "..."


def _check_llm(suite: Suite, options: SuiteOptions) -> None:
    """Refuse before anything runs when the suite's model calls could not be made (no
    credentials, an `LL_LLM_*` value that is no number, a bad price file) or its agent CLI or
    `cmd:` prompt runner is not installed, as `ll-loop run` and the other runners of
    `ll-harness` do. Without it every subject ran (agents included) and then every LLM judgement
    errored: `unexpected TypeError: "Could not resolve authentication method..."`."""
    subjects = [s for s in (suite.subject, suite.baseline_subject) if s is not None]
    uses_llm = any(j.uses_llm for j in suite.judges) or suite.pairwise is not None
    if not uses_llm and all(s.kind not in ("agent", "prompt") for s in subjects):
        return  # nothing to check, nor the model client to import (~15 ms of start-up)
    from engine.llm import settings
    from engine.llm.preflight import has_credentials, runner_problem
    from engine.llm.prices import load_prices

    where = suite.source or suite.name
    problems: list[tuple[int, str]] = []
    sdk: list[tuple[int, str]] = []  # (line, what) of everything that calls the Messages API
    for subject in subjects:
        runner = None
        if subject.kind == "agent" and subject.agent:
            runner = f"cmd:{subject.agent}"
        elif subject.kind == "prompt":
            runner = settings.prompt_runner(None, None, subject.runner)
            if runner == "anthropic":
                sdk.append((subject.line, "its prompt subject"))
                runner = None
        # a Ray worker has its own PATH: only the cluster can say whether the agent is there
        problem = runner_problem(runner) if runner and options.executor != "ray" else None
        if problem and subject.kind == "agent":
            problem = problem.replace(f"runner {runner!r}", f"agent {subject.agent!r}", 1)
        elif problem and not subject.runner:  # not written in the suite: say where it came from
            problem += " (the runner LL_PROMPT_RUNNER names)"
        if problem:
            problems.append((subject.line, problem))
    sdk += [(j.line, f"judge {j.name!r}") for j in suite.judges if j.uses_llm]
    if suite.pairwise is not None:
        sdk.append((suite.pairwise.line, f"pairwise judge {suite.pairwise.name!r}"))
    if sdk:
        line, what = sdk[0]
        problems += [(line, p) for p in settings.env_problems()]
        if not has_credentials():
            problems.append(
                (
                    line,
                    f"{what} calls the Anthropic API but no credentials are set: set "
                    "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)",
                )
            )
        try:
            load_prices()
        except LoopError as exc:
            problems.append((line, exc.message))
    if problems:
        line, problem = problems[0]
        more = f" (and {counted(len(problems) - 1, 'more problem')})" if len(problems) > 1 else ""
        raise SuiteRefusal(
            f"{where}:{line}: {problem}{more}" if line else f"{where}: {problem}{more}",
            hint="nothing has run: fix that (the environment, or the suite file) and run again",
        )


def _selected(cases: list[Case], pattern: str | None) -> list[Case]:
    if not cases:
        raise SuiteRefusal(
            "the dataset is empty: there is no case to run",
            hint="add case folders (each with input.yaml) to the dataset, or cases: to the suite",
        )
    if pattern is None:
        return cases
    chosen = [c for c in cases if fnmatch.fnmatchcase(c.id, pattern)]
    if not chosen:
        shown = ", ".join(c.id for c in cases[:5]) + (", ..." if len(cases) > 5 else "")
        raise SuiteRefusal(
            f"{_given('cases', pattern, repr(pattern))} matches none of the {len(cases)} cases",
            hint=f"case ids are folder names (or cases[].id): {shown}",
        )
    return chosen


def _check_workspace(suite: Suite, root: Path) -> None:
    """`workspace:` paths must exist when they will be copied (every case would error)."""
    try:
        mode, _ = workspaces.isolation_of(suite, root)
    except workspaces.WorkspaceError as exc:
        raise SuiteRefusal(str(exc), hint="use isolation: copy with workspace: paths") from None
    if mode != "copy":
        return
    for index, given in enumerate(suite.workspace):
        problem = workspace_path_problem(given, root)
        if problem is not None:
            line = suite.workspace_lines[index] if index < len(suite.workspace_lines) else 0
            where = f"{suite.source}:{line}: " if suite.source and line else ""
            raise SuiteRefusal(
                f"{where}{problem}",
                hint="workspace: lists paths inside the project root, copied into each case",
            )


def _named_run(history: History, option: str, given: str) -> SuiteRunRow | None:
    """The suite run `given` names (its id, or a unique prefix of it); None when none does,
    and a refusal naming them when a prefix names several."""
    found = history.suite_runs_named(given)
    if len(found) > 1:
        names = ", ".join(row.run_id for row in found[:2]) + (", ..." if len(found) > 2 else "")
        raise SuiteRefusal(
            f"{_given(option, given)}: names {'2 or more' if len(found) > 2 else 2} suite runs "
            f"({names})",
            hint="give more of the run id",
        )
    return found[0] if found else None


def _resumed(
    suite: Suite, options: SuiteOptions, history: History | None, fingerprint: str
) -> tuple[SuiteRunRow, SuiteOptions]:
    if history is None:
        raise SuiteRefusal(f"{_option('resume')} needs the history database")
    row = _named_run(history, "resume", str(options.resume))
    if row is None:
        raise SuiteRefusal(
            f"{_given('resume', options.resume)}: there is no such suite run in the history",
            hint="the run id is printed when a suite starts (and in its report)",
        )
    if row.suite != suite.name or row.suite_hash != suite_hash(suite):
        raise SuiteRefusal(
            f"run {row.run_id} is of another suite, or the suite file changed since it started",
            hint="resume with the unchanged suite file, or start a new run",
        )
    if row.ended_at is not None:
        raise SuiteRefusal(
            f"run {row.run_id} already finished ({row.result})",
            hint=f"start a new run; {_option('resume')} continues an interrupted one",
        )
    saved = json.loads(row.options or "{}")
    given = {name: getattr(options, name) for name in _RESUMED_OPTIONS}
    for name, value in given.items():
        default = getattr(SuiteOptions(), name)
        if value != default and value != saved.get(name):
            what = "flag" if _COMMAND_LINE.get() else "argument"
            raise SuiteRefusal(
                f"{_option(name)} differs from the run being resumed",
                hint=f"{_option('resume')} continues with the run's own options; drop the {what}",
            )
    restored = replace(options, **{k: saved.get(k, getattr(options, k)) for k in _RESUMED_OPTIONS})
    if conditions_fingerprint(suite, restored.samples) != row.conditions_fp:
        raise SuiteRefusal(f"run {row.run_id} was judged under other conditions")
    return row, restored


def _baseline_run(
    suite: Suite, options: SuiteOptions, history: History | None, fingerprint: str
) -> SuiteRunRow | None:
    if not options.compare_baseline or history is None:
        return None
    if options.baseline_of is not None:
        found = _named_run(history, "baseline_of", options.baseline_of)
        if found is None or found.suite != suite.name:
            raise SuiteRefusal(
                f"{_given('baseline_of', options.baseline_of)}: no run of suite {suite.name!r} "
                "has that id",
                hint="see the run ids printed by earlier runs of this suite",
            )
        if found.ended_at is None:
            raise SuiteRefusal(
                f"{_given('baseline_of', found.run_id)}: that run has not finished (it is "
                "running, or was interrupted): its cases are only part of a baseline",
                hint=f"finish it with {_resume_call(suite.source, found.run_id)}, or name a "
                "finished run",
            )
    else:
        measured = history.suite_runs(suite.name, kind="baseline", finished=True, limit=1)
        if not measured:
            raise SuiteRefusal(
                f"no baseline is measured for suite {suite.name!r}",
                hint=f"run the incumbent with {_option('measure_baseline')} first (same suite "
                "file)",
            )
        found = measured[0]
    if found.conditions_fp != fingerprint:
        raise SuiteRefusal(
            f"the baseline run {found.run_id} was judged under other conditions (judges, "
            "samples or judge model differ)",
            hint=f"re-measure the baseline with {_option('measure_baseline')} and the same suite "
            "and options",
        )
    return found


def _check_shared_cases(cases: Sequence[Case], baseline: SuiteRunRow, history: History) -> None:
    """A comparison needs cases the baseline has (the same key: inputs and annotations)."""
    theirs = {c.case_key for c in history.suite_cases(baseline.run_id) if c.arm == "subject"}
    if not any(c.key in theirs for c in cases if c.problem is None):
        raise SuiteRefusal(
            f"the baseline run {baseline.run_id} has none of these {counted(len(cases), 'case')} "
            "(cases match by their inputs and annotations): there is nothing to compare",
            hint=f"re-measure the baseline on this dataset with {_option('measure_baseline')}",
        )


def _run_row(
    suite: Suite, settings: RunSettings, options: SuiteOptions, planned: int, cwd: Path
) -> SuiteRunRow:
    where = git_provenance(cwd, timeout=workspaces.GIT_TIMEOUT)
    saved = {name: getattr(options, name) for name in _RESUMED_OPTIONS}
    return SuiteRunRow(
        run_id=settings.run_id,
        suite=suite.name,
        path=suite.source,
        suite_hash=suite_hash(suite),
        conditions_fp=settings.conditions_fp,
        started_at=utc_now(),
        kind="baseline" if options.measure_baseline else "run",
        options=json.dumps(saved),
        cases_planned=planned,
        git_head=where.head,
        git_dirty=where.dirty,
        git_branch=where.branch,
    )


def _lock_run(run_dir: Path, run_id: str) -> int:
    """Hold the run (one driver at a time); a second `--resume` of a live run is refused."""
    fd = os.open(run_dir / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise SuiteRefusal(
            f"run {run_id} is running in another process", hint="wait for it, or stop it first"
        ) from None
    return fd


# ---------------------------------------------------------------------------------------------
# Keys


def _digest(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, default=_plain)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    return repr(value)


_PLACE_FIELDS = frozenset({"file", "line", "check_line", "base_dir"})


def conditions_fingerprint(suite: Suite, samples: int | None) -> str:
    """What decides a case's judgements besides the subject: the judges, the pairwise judge,
    samples and the judge model, wherever it was chosen (not where in the file a judge is
    written)."""
    # A judge's own samples win over the suite's (`--samples` sets every judge): unset was 1
    # when fingerprints were first recorded, and the suite's samples then set every judge, so
    # "samples" below decides the judges that set none; one whose own differs from the suite's
    # is marked, else `samples: 1` under the suite's `samples: 2` (one answer, not two) would
    # be the same conditions as an unset one.
    default = suite.samples if samples is None else None
    judges = [
        {
            **{f.name: getattr(j, f.name) for f in fields(j) if f.name not in _PLACE_FIELDS},
            "samples": j.samples or 1,
            **(
                {"own_samples": j.samples}
                if default is not None and j.samples is not None and j.samples != default
                else {}
            ),
            **({"prompt_file_sha256": _prompt_file_digest(j)} if j.prompt_file else {}),
        }
        for j in suite.judges
    ]
    pairwise = None
    if suite.pairwise is not None:
        pairwise = {k: v for k, v in _plain(suite.pairwise).items() if k != "line"}
        pairwise["samples"] = suite.pairwise.samples or 1  # unset was 1 when first recorded
        if suite.pairwise.samples is None and default not in (None, 1):
            # an unset one took 1 sample when first recorded, the suite's samples now
            pairwise["default_samples"] = default
    conditions = {
        "judges": judges,
        "pairwise": pairwise,
        "samples": samples or suite.samples,
        "judge_model": _judge_model(suite),
    }
    reasoning = _judge_reasoning(suite)
    if reasoning is not None:  # only when set: a fingerprint recorded without it stays equal
        conditions["judge_reasoning"] = reasoning
    return _digest(conditions)


def _prompt_file_digest(judge: Judge) -> str | None:
    """The bytes of a judge's `prompt_file` (an edited prompt is another judge); None without
    one, or when its path depends on the case (`${...}`) or it cannot be read (then every case
    says so)."""
    path = judge.known_prompt_file()
    if path is None:
        return None
    try:
        return hashlib.sha256(read_capped(path, MAX_YAML_BYTES)).hexdigest()
    except (OSError, FileRefused):  # /dev/zero was read without end here, before any case
        return None


def _judge_model(suite: Suite) -> str | None:
    """The model the suite's LLM judges default to: `models.judge`, else `LL_JUDGE_MODEL`,
    `LL_MODEL`, the built-in default (a baseline judged by another model under the same suite
    file is judged under other conditions); `models.judge` as written when no judge asks one."""
    if suite.pairwise is None and not any(j.uses_llm for j in suite.judges):
        return suite.judge_model
    from engine.llm import settings

    return settings.judge_model(None, None, None, suite.judge_model)


def _judge_reasoning(suite: Suite) -> str | None:
    """`LL_JUDGE_REASONING`, which the suite's LLM judges think with when they set no
    `reasoning` of their own (theirs is part of the judge); None when off or unused."""
    if suite.pairwise is None and not any(j.uses_llm for j in suite.judges):
        return None
    from engine.llm import settings

    try:
        budget = settings.judge_reasoning()
    except ValueError:  # each LLM judgement says so; as a condition it is the text given
        return os.environ.get("LL_JUDGE_REASONING", "").strip()
    return None if budget is None else str(budget)


def suite_hash(suite: Suite) -> str:
    """The suite file's bytes (a resumed run must run the same suite)."""
    if suite.source and Path(suite.source).is_file():
        return hashlib.sha256(Path(suite.source).read_bytes()).hexdigest()
    return _digest(suite)


def subject_hashes(suite: Suite) -> dict[str, str]:
    """Each arm's subject definition (and a loop subject's file) as a hash."""
    hashes = {}
    for arm, subject in (("subject", suite.subject), ("baseline", suite.baseline_subject)):
        if subject is None:
            continue
        described = {k: v for k, v in _plain(subject).items() if k != "line"}
        hashes[arm] = _digest(described)
    return hashes


# ---------------------------------------------------------------------------------------------
# Running


@dataclass
class _Previous:
    finished: set[str]
    cases: list[SuiteCaseRow]
    judgements: list[SuiteJudgementRow]


def _previous(history: History | None, run_id: str) -> _Previous:
    """What earlier invocations of this run recorded (nothing for a new run)."""
    if history is None:
        return _Previous(set(), [], [])
    cases = history.suite_cases(run_id)
    judgements = history.suite_judgements(run_id)
    return _Previous({c.case_id for c in cases}, cases, judgements)


def _specs(
    settings: RunSettings, plan: _Plan, todo: Sequence[Case], history: History | None
) -> Iterator[CaseSpec]:
    """Specs in order, made as they are submitted (a baseline record is read only then)."""
    index_of = {c.id: i for i, c in enumerate(plan.cases)}
    suite = settings.suite
    stored = (
        plan.baseline_run is not None
        and suite.pairwise is not None
        and suite.baseline_subject is None
        and history is not None
    )
    keys: dict[str, SuiteCaseRow] = {}
    if stored and plan.baseline_run is not None and history is not None:
        keys = {
            c.case_key: c
            for c in history.suite_cases(plan.baseline_run.run_id)
            if c.arm == "subject"
        }
    for case in todo:
        record, gap = None, None
        if stored and history is not None and plan.baseline_run is not None:
            baseline_id = plan.baseline_run.run_id
            other = keys.get(case.key)
            if other is not None:
                record = history.suite_record(baseline_id, "subject", other.case_id)
            if other is None:
                gap = (
                    f"baseline run {baseline_id} has no case with these inputs and annotations "
                    "(the case is new or was edited since)"
                )
            elif record is None:
                gap = f"the subject could not run on this case in baseline run {baseline_id}"
                if other.status != "error":
                    gap = f"baseline run {baseline_id} kept no outputs record of this case"
        yield CaseSpec(settings, case, index_of[case.id], record, gap)


class _Flow:
    """The cases in flight: about twice the executor's capacity submitted at a time (a worker
    never waits for its next spec, and memory stays bounded whatever the dataset's size).
    Finished futures arrive on a queue from their done-callback: one `get` a case, where
    `concurrent.futures.wait` would lock and unlock every pending future each time."""

    def __init__(self, pool: Executor, specs: Iterator[CaseSpec]) -> None:
        self.pool, self.specs = pool, specs
        self.window = max(2, pool.capacity * 2)
        self.pending: dict[Future[CaseOutcome], CaseSpec] = {}
        self.finished: queue.SimpleQueue[Future[CaseOutcome]] = queue.SimpleQueue()

    def outcomes(self, *, tick: float | None = None) -> Iterator[CaseOutcome | None]:
        """Outcomes as cases finish, and None every `tick` seconds in which none did."""
        exhausted = False
        while True:
            while not exhausted and len(self.pending) < self.window:
                spec = next(self.specs, None)
                if spec is None:
                    exhausted = True
                    break
                future = self.pool.submit(spec)
                self.pending[future] = spec
                future.add_done_callback(self.finished.put)
            if not self.pending:
                return
            try:
                future = self.finished.get(timeout=tick)
            except queue.Empty:
                yield None
                continue
            spec = self.pending.pop(future)
            error = future.exception()
            if error is not None:  # the executor failed to run it (not the case itself)
                yield broken_case(spec, f"the executor could not run the case: {error}")
            else:
                yield future.result()

    def stop(self, run_id: str) -> int:
        """Drop the cases not started; stop the running ones (again and again: one may be just
        about to start its subject) until none is left, or `STOP_GRACE` has passed (a case
        stuck in a judge that cannot be interrupted) or Ctrl-C comes again. Returns how many
        cases were left running: they are not recorded, and `--resume` runs them again."""
        for future in self.pending:
            future.cancel()
        running = [f for f in self.pending if not f.done()]
        give_up = time.monotonic() + STOP_GRACE
        try:
            while running and time.monotonic() < give_up:
                interrupt_run(run_id)
                _, waiting = wait(running, timeout=0.2)
                running = list(waiting)
        except KeyboardInterrupt:  # asked twice: stop waiting
            running = [f for f in running if not f.done()]
        self.pool.shutdown(cancel=True)
        return len(running)


# ---------------------------------------------------------------------------------------------
# Rows


def to_rows(
    outcome: CaseOutcome, settings: RunSettings
) -> tuple[list[SuiteCaseRow], list[SuiteJudgementRow]]:
    """The history rows of one case: one per arm, one per judge x sample."""
    cases: list[SuiteCaseRow] = []
    judgements: list[SuiteJudgementRow] = []
    suite = settings.suite
    for arm in outcome.arms:
        cases.append(
            SuiteCaseRow(
                run_id=settings.run_id,
                arm=arm.arm,
                case_id=outcome.case_id,
                case_key=outcome.case_key,
                subject_hash=settings.subject_hashes.get(arm.arm, ""),
                status=arm.status,
                error=arm.error,
                exit_code=arm.exit_code,
                timed_out=arm.timed_out,
                duration_ms=arm.duration_ms,
                cost_usd=arm.cost_usd,
                workspace=arm.workspace,
                record=arm.record,
                cost_known=arm.cost_known,
            )
        )
        for judge in arm.judges:
            judgements += _judgement_rows(judge, arm.arm, outcome, settings, suite.name)
    if outcome.pairwise is not None:
        judgements += _judgement_rows(outcome.pairwise, "pairwise", outcome, settings, suite.name)
    return cases, judgements


def _judgement_rows(
    judge: JudgeOutcome, arm: str, outcome: CaseOutcome, settings: RunSettings, suite: str
) -> list[SuiteJudgementRow]:
    low, high = judge.score_range if judge.score_range is not None else (None, None)
    samples = judge.samples or (SampleAnswer(judge.status, judge.value),)
    return [
        SuiteJudgementRow(
            run_id=settings.run_id,
            suite=suite,
            arm=arm,
            case_id=outcome.case_id,
            case_key=outcome.case_key,
            judge=judge.name,
            judge_kind=judge.kind,
            status=judge.status,
            conditions_fp=settings.conditions_fp,
            sample_index=index,
            samples=len(samples),
            value=judge.value,
            is_bool=judge.is_bool,
            passed=judge.passed,
            sample_status=sample.status,
            sample_value=sample.value,
            rationale=judge.rationale,
            evidence=judge.evidence,
            error=judge.error,
            score_low=low,
            score_high=high,
            duration_ms=judge.duration_ms,
            cost_usd=judge.cost_usd if index == 0 else 0.0,  # the judgement's cost, once
        )
        for index, sample in enumerate(samples)
    ]


class _Batch:
    """Rows waiting to be written: whole cases, committed together at most `SECONDS` after the
    first of them arrived (one commit per case would cost more than a fast case itself). A run
    killed before a commit loses those cases' rows, and `--resume` runs them again."""

    SECONDS = 0.25
    CASES = 256

    def __init__(self, history: History | None) -> None:
        self.history = history
        self.cases: list[SuiteCaseRow] = []
        self.judgements: list[SuiteJudgementRow] = []
        self.count = 0
        self.since = 0.0

    def add(self, cases: list[SuiteCaseRow], judgements: list[SuiteJudgementRow]) -> None:
        if self.history is None:
            return
        if not self.count:
            self.since = time.monotonic()
        self.cases += cases
        self.judgements += judgements
        self.count += 1
        self.flush_if_due()

    def flush_if_due(self) -> None:
        if self.count >= self.CASES or time.monotonic() - self.since >= self.SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.history is not None and self.count:
            self.history.record_suite_cases(self.cases, self.judgements)
        self.cases, self.judgements, self.count = [], [], 0


class _Rows:
    """The run's rows: those of earlier invocations, then this one's as they arrive."""

    def __init__(self, cases: list[SuiteCaseRow], judgements: list[SuiteJudgementRow]) -> None:
        self.resumed = len({c.case_id for c in cases})
        self.cases = list(cases)
        self.judgements = list(judgements)

    def add(self, cases: list[SuiteCaseRow], judgements: list[SuiteJudgementRow]) -> None:
        # The driver keeps no records in memory (they are in history.db).
        self.cases += [c if c.record is None else replace(c, record=None) for c in cases]
        self.judgements += judgements


# ---------------------------------------------------------------------------------------------
# The result


def _result(
    suite: Suite,
    settings: RunSettings,
    plan: _Plan,
    rows: _Rows,
    history: History | None,
    started: float,
) -> SuiteResult:
    judges = [(j.name, j.kind) for j in suite.judges]
    summaries = summarise(judges, judgement_scores(rows.judgements, "subject"), suite.thresholds)
    if suite.pairwise is not None and (
        suite.baseline_subject is not None or plan.baseline_run is not None
    ):
        summaries += summarise(
            [(suite.pairwise.name, "pairwise")],
            judgement_scores(rows.judgements, "pairwise"),
            suite.thresholds,
        )
    baseline_summaries: list[JudgeSummary] = []
    if suite.baseline_subject is not None:
        baseline_summaries = summarise(judges, judgement_scores(rows.judgements, "baseline"), ())
    deltas = _deltas(suite, plan, rows, history) if plan.baseline_run is not None else []
    notes = []
    if plan.baseline_run is not None and history is not None:
        notes += _unshared_note(plan.baseline_run, rows, history)
    gated = {t.judge for t in suite.thresholds}
    if (
        suite.pairwise is not None
        and suite.pairwise.name in gated
        and not (suite.baseline_subject is not None or plan.baseline_run is not None)
    ):
        notes.append(
            f"the pairwise judge {suite.pairwise.name!r} had nothing to compare with: add "
            f"baseline_subject:, or run with {_option('compare_baseline')}"
        )
    cost = sum(c.cost_usd for c in rows.cases) + sum(j.cost_usd for j in rows.judgements)
    verdict = suite_verdict(summaries)
    for summary in summaries:
        if summary.undecided_by_unknown:
            notes.append(
                f"judge {summary.name!r}: {counted(len(summary.scored), 'scored case')} alone "
                f"would decide its gate, but {counted(summary.errored, 'errored case')} could "
                "still turn it: INCONCLUSIVE until they are judged"
            )
    if verdict is Verdict.ERROR and not any(s.verdict is not None for s in summaries):
        skipped = sum(s.skipped for s in summaries)
        notes.append(
            "every judgement of this run errored"
            + (f" or was skipped ({skipped} skipped)" if skipped else "")
            + ": nothing was measured (see the errors by case)"
        )
    if verdict is Verdict.UNGATED:
        notes.append(
            "no threshold was judged in this run (its only gate is the pairwise judge's): "
            "its exit code gates nothing"
            if suite.thresholds
            else "the suite has no thresholds: its exit code gates nothing"
        )
    return SuiteResult(
        run_id=settings.run_id,
        suite=suite.name,
        path=suite.source,
        verdict=verdict,
        summaries=tuple(summaries),
        cases=tuple(_in_plan_order(rows.cases, plan)),
        judgements=tuple(_in_plan_order(rows.judgements, plan)),
        planned=len(plan.cases),
        baseline_summaries=tuple(baseline_summaries),
        deltas=tuple(deltas),
        baseline_run=plan.baseline_run.run_id if plan.baseline_run is not None else None,
        resumed=rows.resumed,
        duration_ms=int((time.monotonic() - started) * 1000),
        cost_usd=cost,
        notes=tuple(notes),
        subject=describe_subject(suite.subject),
        baseline_subject=describe_subject(suite.baseline_subject),
    )


def _in_plan_order(rows: Sequence[_Row], plan: _Plan) -> list[_Row]:
    """Rows by their case's place in the dataset (folders sorted by name, inline cases as
    written), whatever order the cases finished in: a report never depends on `--jobs` or on
    an interruption. Within a case the rows keep their order (arm, judge, sample)."""
    order = {case.id: index for index, case in enumerate(plan.cases)}
    return sorted(rows, key=lambda row: (order.get(row.case_id, len(order)), row.case_id))


def _unshared_note(baseline: SuiteRunRow, rows: _Rows, history: History) -> list[str]:
    """Say so when the comparison is over fewer cases than the run has."""
    ours = [c.case_key for c in rows.cases if c.arm == "subject"]
    theirs = {c.case_key for c in history.suite_cases(baseline.run_id) if c.arm == "subject"}
    missing = sum(1 for key in ours if key not in theirs)
    if not missing:
        return []
    return [
        f"{counted(missing, 'case')} of this run {'is' if missing == 1 else 'are'} not in the "
        f"baseline run {baseline.run_id} (new, or inputs or annotations edited since): the "
        f"deltas are over the other {len(ours) - missing}"
    ]


def _deltas(suite: Suite, plan: _Plan, rows: _Rows, history: History | None) -> list[BaselineDelta]:
    """Each judge against the measured baseline, over the cases both runs have."""
    if history is None or plan.baseline_run is None:
        return []
    theirs = [r for r in history.suite_judgements(plan.baseline_run.run_id) if r.arm == "subject"]
    ours = [r for r in rows.judgements if r.arm == "subject"]
    shared = {r.case_key for r in theirs} & {r.case_key for r in ours}
    judges = [(j.name, j.kind) for j in suite.judges]
    before = summarise(
        judges, judgement_scores([r for r in theirs if r.case_key in shared], "subject"), ()
    )
    after = summarise(
        judges, judgement_scores([r for r in ours if r.case_key in shared], "subject"), ()
    )
    return [BaselineDelta(b.name, b, a) for b, a in zip(before, after, strict=True)]
