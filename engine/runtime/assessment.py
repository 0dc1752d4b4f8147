"""`evaluate: {type: assessment}` in a loop: the state's outputs record, the judges' IO wired to
the run (commands in the workspace, the run's LLM services, `${...}` interpolation, events), and
the verdict. The judging itself is `engine.judges`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.judges import Assessment, JudgeEnv, JudgeResult, assess, build_record
from engine.llm import settings as llm_settings
from engine.model.loop import Evaluate, Loop, State
from engine.model.ports import ActionResult, Verdict
from engine.runtime.actions import ActionRunner, judge_output, read_back
from engine.runtime.workspace import Baseline, baseline, modified_files, read_files

if TYPE_CHECKING:
    from engine.runtime.interpreter import Namespaces, RunState, Runtime


def is_assessment(state: State) -> bool:
    return state.evaluate is not None and state.evaluate.type == "assessment"


class ShellCommands:
    """`CommandPort` for judges: bash in the workspace, one action runner per command (judges
    run at once), each killed with the run when it is stopped."""

    def __init__(self, rt: Runtime, default_timeout: float | None) -> None:
        self.rt = rt
        self.default_timeout = default_timeout

    def run_command(self, command: str, *, timeout: float | None, label: str) -> ActionResult:
        actions = self.rt.actions  # the run's environment (LL_RUN_ID, ...) and directory
        runner = ActionRunner(
            cwd=Path(actions.cwd), env=dict(actions.env), outputs_dir=self.rt.outputs_dir
        )
        listeners = self.rt.stop.listeners
        listeners.append(runner.terminate)
        try:
            result = runner.run_shell(
                command,
                state=f"judge-{label}",
                timeout=timeout if timeout is not None else self.default_timeout,
            )
        finally:
            listeners.remove(runner.terminate)
            runner.close()
        return judge_output(result)


def before_action(loop: Loop, state: State, rt: Runtime) -> Baseline | None:
    """What `modified_files` will be measured against (taken before an assessed action)."""
    if not is_assessment(state):
        return None
    return baseline(Path(rt.actions.cwd), loop.scope)


def assess_state(
    loop: Loop,
    state: State,
    spec: Evaluate,
    result: ActionResult,
    text: str,
    rs: RunState,
    rt: Runtime,
    ns: Namespaces,
    before: Baseline | None,
) -> Verdict:
    """Run the state's judges on its outputs record; the verdict carries every result."""
    workspace = Path(rt.actions.cwd)
    # `text` is the whole stdout already; stderr kept only its last MiB in memory
    whole, problem = read_back(replace(result, output_path=None), "the action")
    if problem is not None:
        return Verdict("error", {"reason": problem})
    changed = modified_files(before) if before is not None else []
    files, per_dir = read_files(workspace, [*spec.outputs, *changed])
    record = build_record(
        stdout=text,
        stderr=whole.stderr,
        exit_code=result.exit_code,
        duration_s=result.duration_ms / 1000,
        trace=result.trace,
        files=files,
        modified_files=changed,
        output_dirs={d: per_dir.get(d, []) for d in spec.outputs if d in per_dir},
        cost_usd=result.cost_usd if result.cost_known else None,
        untraced_agent=result.agent_untraced,
    )
    messages = None
    if rt.llm is not None and any(j.uses_llm for j in spec.judges):
        messages = rt.llm.bind(depth=rt.depth, step=rs.steps).messages(state)
    env = JudgeEnv(
        workspace=workspace,
        commands=ShellCommands(rt, state.timeout or loop.default_timeout),
        messages=messages,
        render=_renderer(ns),
        typed=ns.typed,
        # Resolved here, with the run's environment (LL_JUDGE_MODEL, LL_MODEL): the judge
        # engine would read the process's. A judge's own model still comes first.
        model=llm_settings.judge_model(spec, state, loop, environ=rt.actions.env),
        reasoning=spec.reasoning or rt.actions.env.get("LL_JUDGE_REASONING", "").strip() or None,
        max_tokens=spec.max_tokens or loop.llm.max_tokens,
        temperature=spec.temperature if spec.temperature is not None else loop.llm.temperature,
        annotations=spec.annotations,
        inputs=rs.context,
        project_root=workspace,
        on_result=_announce(state, rs, rt),
        stopped=lambda: rt.stop.requested,
    )
    assessment: Assessment = assess(spec.judges, record, env, concurrency=spec.concurrency)
    rt.sync_cost(rs)
    return Verdict(assessment.verdict, assessment.details())


def _renderer(ns: Namespaces) -> Callable[[str, str], str]:
    def render(template: str, mode: str) -> str:
        return ns.render_shell(template) if mode == "shell" else ns.render_text(template)

    return render


def _announce(state: State, rs: RunState, rt: Runtime) -> Callable[[JudgeResult], None]:
    def emit(result: JudgeResult) -> None:
        fields: dict[str, Any] = {
            "state": state.name,
            "judge": result.name,
            "status": result.status,
            "value": result.value,
            "passed": result.passed,
            "duration_ms": result.duration_ms,
            "cost_usd": round(result.cost_usd, 6),
        }
        if result.error is not None:
            fields["error"] = result.error
        rt.recorder.emit("judge", depth=rt.depth, step=rs.steps, **fields)

    return emit
