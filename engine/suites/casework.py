"""One case, start to end: workspace, hooks, subject, outputs record, judges (the worker's job).

`run_case(spec)` is a plain function of a picklable `CaseSpec` returning a picklable
`CaseOutcome`, so any executor can run it (a thread, a process, a Ray task). It never raises:
whatever goes wrong in a case (a broken case folder, a hook that fails, a subject that crashes
or times out, a judge that errors) is that case's recorded error, and the suite goes on.
"""

from __future__ import annotations

import json
import os
import threading
import time
import traceback
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.judges import (
    CompiledJudge,
    JudgeEnv,
    JudgeResult,
    build_record,
    compile_judges,
    run_judges,
)
from engine.judges.result import JudgeError
from engine.load.dataset import read_case
from engine.model import jsontext
from engine.model.errors import InterpolationError, LoopError
from engine.model.expressions import lone_expression
from engine.model.ports import ActionResult
from engine.model.suite import Case, Hook, Subject, Suite
from engine.runtime.actions import ActionRunner, judge_output
from engine.runtime.workspace import Baseline, baseline, modified_files, read_files
from engine.shell.interpolate import evaluate, render_shell, render_text
from engine.suites import workspace as workspaces
from engine.suites.pairwise import judge_pair
from engine.suites.spec import (
    ArmOutcome,
    CaseOutcome,
    CaseSpec,
    JudgeOutcome,
    RunSettings,
    SampleAnswer,
)
from engine.suites.subject import (
    CaseShell,
    ExportError,
    Place,
    SubjectRun,
    case_variables,
    exports,
    run_subject,
)

MAX_RECORD_BYTES = 2 * 1024 * 1024  # a compressed record kept in history.db at most
HOOK_OUTPUT_CHARS = 100_000


@dataclass
class _RunEnv:
    """What a worker prepares once per run: compiled judges, the LLM port, the isolation, and
    one shell runner per worker thread (making one costs ~0.4 ms: a PATH search, a tty probe)."""

    compiled: tuple[CompiledJudge, ...]
    messages: Any  # TaggedMessages, built lazily (its gateway too)
    mode: str
    git_root: Path | None
    suite_env: dict[str, str] = field(default_factory=dict)  # LL_SUITE, LL_SUITE_RUN, ...
    root: Path = Path()  # the settings' paths, made once
    project: Path = Path()
    cwd: Path = Path()
    runners: dict[int, ActionRunner] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)

    def runner(self, cwd: Path, outputs_dir: Path) -> ActionRunner:
        """This thread's runner (it inherits the process's environment), pointed at a case's
        workspace."""
        key = threading.get_ident()
        found = self.runners.get(key)
        if found is None:
            found = self.runners[key] = ActionRunner(cwd=cwd)
        found.cwd, found.outputs_dir = str(cwd), outputs_dir
        return found


_RUNS: dict[str, _RunEnv] = {}
_RUNS_LOCK = threading.Lock()


def _prepared(settings: RunSettings) -> _RunEnv:
    with _RUNS_LOCK:
        found = _RUNS.get(settings.run_id)
        if found is None:
            mode, git_root = workspaces.isolation_of(settings.suite, Path(settings.project_root))
            suite_env = {
                "LL_SUITE": settings.suite.name,
                "LL_SUITE_RUN": settings.run_id,
                "LL_SUITE_DIR": _suite_dir(settings.suite),
            }
            found = _RunEnv(
                compile_judges(settings.suite.judges),
                _messages(settings),
                mode,
                git_root,
                suite_env,
                Path(settings.scratch_root),
                Path(settings.project_root),
                Path(settings.cwd or settings.project_root),
            )
            _RUNS[settings.run_id] = found
        return found


def _messages(settings: RunSettings) -> Any:
    """The LLM port of a run that calls a model (the LLM layer is not even imported by a
    suite of shell subjects and checks)."""
    if not settings.suite.uses_llm:
        return None
    from engine.llm.services import messages_port

    return messages_port(
        run_dir=Path(settings.run_dir) if settings.run_dir else None, gate=settings.llm_gate
    )


def _suite_dir(suite: Suite) -> str:
    """The suite file's directory: where its own scripts live (`$LL_SUITE_DIR`)."""
    return str(Path(suite.source).resolve().parent) if suite.source else os.getcwd()


def interrupt_run(run_id: str) -> None:
    """Stop the subjects this process is running for a run (their process groups get
    SIGTERM, then SIGKILL): an interrupted suite does not wait for them to end."""
    with _RUNS_LOCK:
        found = _RUNS.get(run_id)
        runners = list(found.runners.values()) if found is not None else []
    if found is not None:
        found.stopping.set()
    for runner in runners:
        runner.terminate()


def forget_run(run_id: str) -> None:
    """Drop a finished run's prepared state from this process."""
    with _RUNS_LOCK:
        found = _RUNS.pop(run_id, None)
    for runner in found.runners.values() if found is not None else ():
        runner.close()


def run_case(spec: CaseSpec) -> CaseOutcome:
    """Run every arm of one case and its judges; never raises."""
    started = time.monotonic()
    try:
        outcome = _run_case(spec)
    except Exception as exc:  # a bug must cost one case, not the suite
        where = traceback.extract_tb(exc.__traceback__)[-1]
        reason = f"internal error: {type(exc).__name__}: {exc} ({where.filename}:{where.lineno})"
        outcome = broken_case(spec, reason)
    return CaseOutcome(
        outcome.case_id,
        outcome.case_key,
        outcome.index,
        outcome.arms,
        outcome.pairwise,
        int((time.monotonic() - started) * 1000),
    )


def broken_case(spec: CaseSpec, reason: str) -> CaseOutcome:
    """A case that could not run: every judge of every arm errored with `reason` (and the
    pairwise judge, when there is something to compare the case with)."""
    suite = spec.settings.suite
    arms = tuple(
        ArmOutcome(arm, "error", _errored(suite, reason), error=reason) for arm in arms_of(suite)
    )
    pair = None
    compared = suite.baseline_subject is not None or spec.baseline_gap is not None
    if suite.pairwise is not None and (compared or spec.baseline_record is not None):
        pair = JudgeOutcome(
            suite.pairwise.name, "pairwise", "error", rationale=reason, error=reason
        )
    return CaseOutcome(spec.case.id, spec.case.key, spec.index, arms, pair)


def arms_of(suite: Suite) -> tuple[str, ...]:
    return ("subject", "baseline") if suite.baseline_subject is not None else ("subject",)


def _run_case(spec: CaseSpec) -> CaseOutcome:
    if not spec.case.loaded:  # listed by the driver, read here (in parallel with other cases)
        spec = replace(spec, case=read_case(str(spec.case.folder)))
    if spec.case.problem is not None:
        return broken_case(spec, spec.case.problem)
    suite = spec.settings.suite
    prepared = _prepared(spec.settings)
    arms: list[ArmOutcome] = []
    records: dict[str, dict[str, Any]] = {}
    for arm in arms_of(suite):
        subject = suite.subject if arm == "subject" else suite.baseline_subject
        assert subject is not None
        outcome, record = _run_arm(spec, arm, subject, prepared)
        arms.append(outcome)
        if record is not None:
            records[arm] = record
    pair = None
    if suite.pairwise is not None:
        pair = _pairwise(spec, records, prepared)
    return CaseOutcome(spec.case.id, spec.case.key, spec.index, tuple(arms), pair)


def _pairwise(
    spec: CaseSpec, records: dict[str, dict[str, Any]], prepared: _RunEnv
) -> JudgeOutcome | None:
    suite = spec.settings.suite
    assert suite.pairwise is not None
    other = records.get("baseline")
    if other is None and spec.baseline_record is not None:
        other = decompress(spec.baseline_record)
    name = suite.pairwise.name
    if other is None:
        if suite.baseline_subject is None and spec.baseline_gap is None:
            return None  # no baseline to compare with in this run
        why = spec.baseline_gap or "the baseline subject could not run on this case"
        return JudgeOutcome(name, "pairwise", "error", rationale=why, error=why)
    mine = records.get("subject")
    if mine is None:
        why = "the subject could not run on this case"
        return JudgeOutcome(name, "pairwise", "error", rationale=why, error=why)
    return judge_pair(
        suite.pairwise,
        mine,
        other,
        inputs=spec.case.inputs,
        messages=prepared.messages,
        model=suite.judge_model,
        samples=spec.settings.samples,  # --samples; else its own, else the suite's
        default_samples=suite.samples,
    )


# ---------------------------------------------------------------------------------------------
# One arm: a workspace, the hooks, the subject, the record, the judges


def _run_arm(
    spec: CaseSpec, arm: str, subject: Subject, prepared: _RunEnv
) -> tuple[ArmOutcome, dict[str, Any] | None]:
    settings, case, suite = spec.settings, spec.case, spec.settings.suite
    label = f"{spec.index:06d}-{arm}"
    try:
        ws = workspaces.create(
            suite,
            case,
            root=prepared.root,
            label=label,
            project_root=prepared.project,
            cwd=prepared.cwd,
            mode=prepared.mode,
            git_root=prepared.git_root,
        )
    except (workspaces.WorkspaceError, OSError) as exc:
        reason = f"no workspace for the case: {exc}"
        return ArmOutcome(arm, "error", _errored(suite, reason), error=reason), None
    kept = str(ws.path) if settings.keep_workspaces else None
    try:
        case_env = {
            **prepared.suite_env,
            "LL_CASE_ID": case.id,
            "LL_CASE_ARM": arm,
            "LL_WORKSPACE": str(ws.path),
        }
        ns = {"inputs": case.inputs, "annotations": case.annotations}
        if prepared.stopping.is_set():
            reason = "the suite was interrupted before this case ran"
            return ArmOutcome(arm, "error", _errored(suite, reason), error=reason), None
        try:
            inputs = case_variables(("inputs", case.inputs))  # not the annotations: the answers
        except ExportError as exc:
            reason = str(exc)
            return ArmOutcome(
                arm, "error", _errored(suite, reason), error=reason, workspace=kept
            ), None
        shell = CaseShell(prepared.runner(ws.path, ws.scratch), exports({**case_env, **inputs}))
        hooks, problem = _run_hooks(suite.before_each, shell, ns)
        if problem is not None:
            return ArmOutcome(
                arm, "error", _errored(suite, problem), error=problem, workspace=kept
            ), None
        before: Baseline | None = None  # none: the project's own changes are not the case's
        if ws.known_files is not None:
            before = Baseline(ws.path, (".",), False, dict(ws.known_files))
        elif ws.mode != "none":
            before = baseline(ws.path, None, git=ws.mode == "worktree")
        place = Place(
            ws.path,
            shell,
            ns,
            suite.source,
            prepared.messages.gateway if prepared.messages is not None else _no_gateway,
            suite.subject_model,
            prepared.stopping.is_set,
            settings.project_root,
        )
        run = run_subject(subject, place)
        if run.error is not None:
            return _failed_arm(arm, suite, run, kept), None
        record = _record(suite, case, ws, before, run, hooks)
        judge_env = JudgeEnv(
            workspace=ws.path,
            commands=_Commands(ws.path, ws.scratch, case_env, inputs, case.annotations),
            messages=prepared.messages,
            render=_renderer(ns),
            typed=_typed(ns),
            model=suite.judge_model,
            annotations=case.annotations,
            inputs=case.inputs,
            project_root=Path(settings.project_root),
            samples=settings.samples,  # --samples: every LLM judge
            default_samples=suite.samples,  # the suite's: those that set none
        )
        results = _judge_all(prepared.compiled, record, judge_env)
        result = run.result
        judged = tuple(
            outcome_of(r, j.judge.kind) for r, j in zip(results, prepared.compiled, strict=True)
        )
        # Kept when a comparison may need it, and for a case that failed (what its judges saw);
        # compressing every passing record cost more than a quick case.
        keep = settings.keep_records or any(
            j.passed is False or j.status in ("error", "abstain") for j in judged
        )
        return (
            ArmOutcome(
                arm,
                "ok",
                judged,
                exit_code=result.exit_code,
                duration_ms=result.duration_ms,
                cost_usd=_subject_cost(run),
                cost_known=_subject_cost_known(run),
                stdout=result.output,
                stderr=result.stderr,
                workspace=kept,
                record=compress(record) if keep else None,
            ),
            record,
        )
    finally:
        if not settings.keep_workspaces:
            workspaces.remove(ws)


_SLOW_BUILTINS = frozenset({"test", "script", "metric", "llm_structured"})


def _slow(compiled: CompiledJudge) -> bool:
    """A judge that waits (a model, a command): worth running beside the others."""
    judge = compiled.judge
    return judge.uses_llm or judge.kind == "callable" or judge.builtin in _SLOW_BUILTINS


def _judge_all(
    compiled: tuple[CompiledJudge, ...], record: dict[str, Any], env: JudgeEnv
) -> list[JudgeResult]:
    """Every judge on the record, in order: the quick ones here, one after the other; the
    waiting ones at once when there are several (a thread per judge costs more than a check)."""
    slow = [c for c in compiled if _slow(c)]
    if len(slow) <= 1:
        return run_judges(compiled, record, env, concurrency=1)
    waited = iter(run_judges(slow, record, env))
    quick = iter(run_judges([c for c in compiled if not _slow(c)], record, env, concurrency=1))
    return [next(waited) if _slow(c) else next(quick) for c in compiled]


def _no_gateway() -> Any:
    raise LoopError("this suite calls no model, yet a model was asked for")


def _failed_arm(arm: str, suite: Suite, run: SubjectRun, kept: str | None) -> ArmOutcome:
    reason = str(run.error)
    result = run.result
    return ArmOutcome(
        arm,
        "error",
        _errored(suite, reason),
        error=reason,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration_ms=result.duration_ms,
        cost_usd=_subject_cost(run),
        cost_known=_subject_cost_known(run),
        stdout=result.output,
        stderr=result.stderr,
        workspace=kept,
    )


def _subject_cost(run: SubjectRun) -> float:
    return float(run.extra.get("cost_usd") or run.result.cost_usd or 0.0)


def _subject_cost_known(run: SubjectRun) -> bool:
    """False when the subject's agent (or a loop subject's, `cost_unknown_in`) reported no cost."""
    nested = run.extra.get("run")
    unknown = isinstance(nested, Mapping) and bool(nested.get("cost_unknown_in"))
    return run.result.cost_known and not unknown


def _errored(suite: Suite, reason: str) -> tuple[JudgeOutcome, ...]:
    return tuple(
        JudgeOutcome(j.name, j.kind, "error", rationale=reason, error=reason) for j in suite.judges
    )


def _run_hooks(
    hooks: tuple[Hook, ...], shell: CaseShell, ns: Mapping[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """Run `before_each` in order; the first failing one is the arm's error."""
    outputs: dict[str, Any] = {}
    for hook in hooks:
        try:
            script = render_shell(hook.command, ns)
        except InterpolationError as exc:
            return outputs, f"before_each hook {hook.name!r}: {exc.message}"
        result = shell.run(script, label=f"hook-{hook.name}", timeout=hook.timeout)
        if result.crashed or result.exit_code != 0:
            tail = result.stderr.strip()[-300:]
            why = result.failure_reason().removeprefix("action ")
            return outputs, f"before_each hook {hook.name!r} {why}" + (f": {tail}" if tail else "")
        outputs[hook.name] = _hook_value(result.output)
    return outputs, None


def _hook_value(text: str) -> Any:
    text = text.strip()[:HOOK_OUTPUT_CHARS]
    try:
        return jsontext.loads(text)
    except ValueError:
        return text


def _record(
    suite: Suite,
    case: Case,
    ws: workspaces.Workspace,
    before: Baseline | None,
    run: SubjectRun,
    hooks: dict[str, Any],
) -> dict[str, Any]:
    """The outputs record judges read (docs/suites.md lists its fields)."""
    placed = ws.case_files
    changed = [
        p
        for p in (modified_files(before) if before is not None else ())
        if p.split("/", 1)[0] not in placed and not p.startswith(".loops/")
    ]
    wanted = [*suite.output_paths, *changed]
    files, per_dir = read_files(ws.path, wanted) if wanted else ({}, {})
    result, traces = run.result, suite.traces
    trace = result.trace if traces.events else None
    record = build_record(
        stdout=result.output if traces.stdout else "",
        stderr=result.stderr if traces.stderr else "",
        exit_code=result.exit_code if traces.metrics else None,
        duration_s=result.duration_ms / 1000 if traces.metrics else 0.0,
        trace=trace,
        files=files,
        modified_files=changed,
        output_dirs={d: per_dir.get(d, []) for d in suite.output_paths if d in per_dir},
        # no agent trace said: a loop's run, a prompt's SDK call; None: an agent reported none
        cost_usd=_subject_cost(run) if result.cost_known else None,
        untraced_agent=result.agent_untraced,
    )
    if not traces.metrics:
        record.update(token_usage={}, cost_usd=None, num_turns=None)  # unknown, not 0
    if traces.events and run.extra.get("events"):
        record["events"] = list(run.extra["events"])
    if not traces.events:  # unknown, not "no tool was called"
        record.update(tool_calls=None, events=None)
    for key in ("run", "loop_outputs"):
        if key in run.extra:
            record[key] = run.extra[key]
    record["inputs"] = case.inputs
    record["annotations"] = case.annotations
    record["hook_outputs"] = hooks
    return record


class _Commands:
    """`CommandPort` for judges: bash in the case's workspace, a runner per command, with the
    case's inputs and annotations as variables (annotations that cannot all be exported are
    the error of the judges that run a command, not of the others)."""

    def __init__(
        self,
        workspace: Path,
        scratch: Path,
        case_env: Mapping[str, str],
        inputs: Mapping[str, str],
        annotations: Mapping[str, Any],
    ) -> None:
        self.workspace, self.scratch = workspace, scratch
        self.case_env: dict[str, str] = {**case_env, **inputs}
        self.problem: str | None = None
        try:
            self.case_env.update(case_variables(("annotations", annotations)))
        except ExportError as exc:
            self.problem = str(exc)

    def run_command(self, command: str, *, timeout: float | None, label: str) -> ActionResult:
        if self.problem is not None:
            raise JudgeError(self.problem)
        env = {**os.environ, **self.case_env}
        runner = ActionRunner(cwd=self.workspace, env=env, outputs_dir=self.scratch)
        try:
            result = runner.run_shell(command, state=f"judge-{label}", timeout=timeout or 300.0)
        finally:
            runner.close()
        return judge_output(result)


def _typed(ns: Mapping[str, Any]) -> Callable[[str], Any]:
    """A judge's template as a value: a lone `${...}` keeps its type, as in a loop."""

    def typed(template: str) -> Any:
        expression = lone_expression(template)
        return render_text(template, ns) if expression is None else evaluate(expression, ns)

    return typed


def _renderer(ns: Mapping[str, Any]) -> Any:
    def render(template: str, mode: str) -> str:
        return render_shell(template, ns) if mode == "shell" else render_text(template, ns)

    return render


# ---------------------------------------------------------------------------------------------
# Plain data


def outcome_of(result: JudgeResult, kind: str) -> JudgeOutcome:
    """A judge's result as plain data (an abstention is its own status)."""
    status: str = result.status
    if status == "error" and result.details.get("abstained"):
        status = "abstain"
    value = result.value
    return JudgeOutcome(
        result.name,
        kind,
        status,
        None if value is None else float(value),
        None if value is None else isinstance(value, bool),
        result.passed,
        result.rationale,
        result.evidence,
        result.error,
        result.score_range,
        result.duration_ms,
        result.cost_usd,
        tuple(_sample(s) for s in result.samples),
        _plain(result.details) if result.details else {},
    )


def _plain(details: Mapping[str, Any]) -> dict[str, Any]:
    """Details as JSON values (they cross process boundaries and land in reports)."""
    loaded = json.loads(json.dumps(dict(details), default=str))
    return loaded if isinstance(loaded, dict) else {}


def _sample(sample: Mapping[str, Any]) -> SampleAnswer:
    reason = str(sample.get("reason") or sample.get("error") or "")
    confidence = sample.get("confidence")
    sure = float(confidence) if isinstance(confidence, int | float) else None
    if "score" in sample:
        return SampleAnswer("score", float(sample["score"]), reason, sure)
    outcome = sample.get("outcome") or sample.get("verdict")
    if outcome in ("pass", "fail"):
        return SampleAnswer(str(outcome), 1.0 if outcome == "pass" else 0.0, reason, sure)
    if "error" in sample:
        return SampleAnswer("error", None, reason, sure)
    return SampleAnswer(str(outcome or "ok"), None, reason, sure)


def compress(record: Mapping[str, Any]) -> bytes:
    """The record as zlib-compressed JSON; a huge one keeps everything but its files' texts."""
    data = zlib.compress(json.dumps(record, ensure_ascii=False, default=str).encode(), 1)
    if len(data) <= MAX_RECORD_BYTES:
        return data
    slim = {
        **record,
        "files": {
            path: "(not kept: the record was too large)" for path in record.get("files") or {}
        },
    }
    return zlib.compress(json.dumps(slim, ensure_ascii=False, default=str).encode(), 1)


def decompress(data: bytes) -> dict[str, Any]:
    loaded = json.loads(zlib.decompress(data))
    return loaded if isinstance(loaded, dict) else {}
