"""The things ll-harness measures: a shell command, a prompt, a whole loop run (IO at the edges).

A `Subject` knows how it is keyed in history (runner, target, content hash, input hash), whether
it is stochastic (decides the default sample count), and how to run one sample.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from engine.harness.keys import input_hash, sha256_bytes, sha256_text
from engine.harness.process import run_process
from engine.harness.refusal import Refusal
from engine.model.ports import ActionResult, refused_before_first_step, run_json

Runner = Literal["cmd", "prompt", "loop", "dsl", "skill", "mcp"]


@dataclass(frozen=True)
class SubjectRun:
    """What one sample of a subject produced. `infra_error` set → the sample cannot be graded."""

    stdout: str
    stderr: str = ""
    exit_code: int | None = 0
    duration_ms: int = 0
    timed_out: bool = False
    infra_error: str | None = None
    cost_usd: float = 0.0
    judged: str | None = None  # what `--semantic` judges when it is not the stdout
    # False: an agent CLI (or a loop's agent) reported no cost, so `cost_usd` leaves it out.
    cost_known: bool = True

    @property
    def judged_text(self) -> str:
        return self.stdout if self.judged is None else self.judged

    def ungradable(self, reason: str) -> SubjectRun:
        """This sample with `reason` as its infra error; what it printed and cost is kept."""
        return replace(self, infra_error=reason)

    @classmethod
    def from_action(cls, result: ActionResult, timeout: float | None) -> SubjectRun:
        infra: str | None = None
        if result.timed_out:
            infra = f"timed out after {timeout:g}s" if timeout else "timed out"
        elif result.crashed:
            infra = result.failure_reason()
        return cls(
            stdout=result.output,
            stderr=result.stderr,
            exit_code=result.exit_code,
            duration_ms=result.duration_ms,
            timed_out=result.timed_out,
            infra_error=infra,
            cost_usd=result.cost_usd,
            cost_known=result.cost_known,
        )


@dataclass(frozen=True)
class Subject:
    """One measurable thing and how to run a sample of it."""

    runner: Runner
    target: str
    content_hash: str
    input_hash: str
    stochastic: bool
    run: Callable[[float | None], SubjectRun]
    subject_model: str | None = None
    prompt_runner: str | None = None
    source_path: Path | None = None  # the file whose bytes are the content (loop, skill, dsl)


def refuse_empty(what: str, text: str) -> None:
    """An empty (or blank) command or prompt measures nothing: `cmd ""` ran `bash -c ""`,
    passed, and was recorded under an empty target, pooled with `prompt ""`."""
    if not text.strip():
        raise Refusal(
            f"the {what} is empty: there is nothing to measure",
            hint=f"pass the {what} to measure as the argument",
        )


def cmd_subject(command: str, *, cwd: Path) -> Subject:
    """`ll-harness cmd`: the command text is both the target and its content."""
    refuse_empty("command", command)

    def run(timeout: float | None) -> SubjectRun:
        result = run_process(["bash", "-c", command], timeout=timeout, cwd=cwd)
        return SubjectRun.from_action(result, timeout)

    return Subject(
        runner="cmd",
        target=command,
        content_hash=sha256_text(command),
        input_hash=input_hash(),
        stochastic=False,
        run=run,
    )


def prompt_subject(prompt: str, *, model: str | None, prompt_runner: str | None) -> Subject:
    """`ll-harness prompt`: one completion per sample through the LLM layer's prompt runner."""
    refuse_empty("prompt", prompt)
    from engine.harness.grading import check_prompt_runner
    from engine.llm.settings import prompt_model
    from engine.llm.settings import prompt_runner as resolve_runner

    runner_name = resolve_runner(None, None, prompt_runner)
    check_prompt_runner(runner_name)
    model_name = prompt_model(None, None, model) if runner_name == "anthropic" else model

    def run(timeout: float | None) -> SubjectRun:
        return SubjectRun.from_action(run_prompt(prompt, model, runner_name, timeout), timeout)

    return Subject(
        runner="prompt",
        target=prompt,
        content_hash=sha256_text(prompt),
        input_hash=input_hash(),
        stochastic=True,
        run=run,
        subject_model=model_name,
        prompt_runner=runner_name,
    )


def run_prompt(prompt: str, model: str | None, runner: str, timeout: float | None) -> ActionResult:
    """One prompt through `engine.llm.run_prompt_text`; a runner with no text is an infra error."""
    from engine.llm import run_prompt_text

    result = run_prompt_text(prompt, model=model, runner=runner, timeout=timeout)
    if result.exit_code is None and not result.crashed:
        return ActionResult(
            output=result.output,
            stderr=result.stderr,
            exit_code=None,
            duration_ms=result.duration_ms,
            spawn_error=result.stderr.strip() or "the prompt runner returned no exit status",
            cost_usd=result.cost_usd,
            cost_known=result.cost_known,
        )
    return result


def loop_subject(
    path: Path,
    *,
    input_text: str | None,
    context: Mapping[str, str],
    cwd: Path,
) -> Subject:
    """`ll-harness loop`: a whole `ll-loop run --json` in a subprocess is one sample.

    The target is the loop's `name`; its content is the loop file's bytes, so an edited loop is
    a different subject. The run's exit code (0 success terminal, 1 failure terminal, 2 error,
    3 inconclusive) is what `--exit-code` checks; `--semantic` judges what the loop returned:
    its `outputs` and the output of the last state it ran (`judged_loop_text`).
    """
    from engine.load.loader import load_loop_file
    from engine.model.params import bind_context

    loop = load_loop_file(path)  # the caller has refused a suite or a library given as a loop
    # What every sample's `ll-loop run` would refuse is refused once, before any sample.
    bind_context(loop, context, {}, input_text, strict=True)
    from engine.llm.preflight import preflight

    problems = preflight(loop, can_replay=False)  # they were one infra error per sample
    if problems:
        raise Refusal(
            problems[0],
            hint="fix the LLM settings: every sample's `ll-loop run` would refuse the same way",
        )
    argv = [*_ll_loop_command(), "run", str(path)]
    if input_text is not None:
        argv.append(input_text)
    for key, value in context.items():
        argv += ["--context", f"{key}={value}"]
    argv.append("--json")

    def run(timeout: float | None) -> SubjectRun:
        sample = SubjectRun.from_action(run_process(argv, timeout=timeout, cwd=cwd), timeout)
        sample = replace(
            sample,
            cost_usd=_run_cost(sample.stdout),
            # the run's agent reported no cost (`run --json`'s `cost_unknown_in`)
            cost_known=not (run_json(sample.stdout) or {}).get("cost_unknown_in"),
        )
        if sample.infra_error is not None:
            return sample
        problem = _run_refusal(sample.stdout)
        if problem is not None:
            return sample.ungradable(problem)
        return replace(sample, judged=judged_loop_text(sample.stdout, cwd))

    subject_model: str | None = None
    runner_name: str | None = None
    if loop.uses_llm():
        # Models a state does not pin come from the environment, which the file's content hash
        # does not cover: they are conditions of the measurement.
        from engine.llm.settings import judge_model, prompt_model, prompt_runner

        subject_model = f"{prompt_model(None, loop)} (judge {judge_model(None, None, loop)})"
        runner_name = prompt_runner(None, loop)
    return Subject(
        runner="loop",
        target=loop.name,
        content_hash=sha256_bytes(path.read_bytes()),
        input_hash=input_hash(input_text, context),
        stochastic=loop.uses_llm(),
        run=run,
        subject_model=subject_model,
        prompt_runner=runner_name,
        source_path=path,
    )


def _ll_loop_command() -> list[str]:
    """`ll-loop` as this very installation: `python -P` keeps the working directory off the
    import path (a project's own `engine/` package must not stand in for ours), and the
    directory holding our `engine` package goes first."""
    home = str(Path(__file__).resolve().parents[2])
    code = f"import sys; sys.path.insert(0, {home!r}); from engine.cli import main; main()"
    return [sys.executable, "-P", "-c", code]


def judged_loop_text(stdout: str, cwd: Path) -> str:
    """A loop run as a judge should see it: how it ended, its `outputs`, and what its last state
    printed (from the run's `state.json`); the bare result line when none of that exists."""
    result = run_json(stdout) or {}
    parts = [
        f"The loop {result.get('loop')} ended in state {result.get('final_state')!r} "
        f"(outcome {result.get('outcome')}, {result.get('steps')} steps)."
    ]
    outputs = result.get("outputs")
    if isinstance(outputs, dict) and outputs:
        lines = [f"{name}: {_as_text(value)}" for name, value in outputs.items()]
        parts.append("Its outputs:\n" + "\n".join(lines))
    last = _last_state_output(cwd, result.get("run_id"))
    if last is not None:
        parts.append(f"The output of its last state ({last[0]}):\n{last[1]}")
    if len(parts) == 1:
        return stdout
    return "\n\n".join(parts)


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _last_state_output(cwd: Path, run_id: object) -> tuple[str, str] | None:
    """(state, output) of the last state the run executed, from its state.json, if readable."""
    if not isinstance(run_id, str) or not run_id:
        return None
    from engine.load.project import project_root
    from engine.runtime.runstore import runs_root

    try:
        state = runs_root(project_root(cwd)) / run_id / "state.json"
        data = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    prev = data.get("prev") if isinstance(data, dict) else None
    if not isinstance(prev, dict) or not str(prev.get("output") or "").strip():
        return None
    return str(prev.get("state")), str(prev["output"])


def _run_cost(stdout: str) -> float:
    """What a nested run says its model calls cost (`cost_usd` of its JSON result): the
    process is ours, its spend is the loop's (a sample of an LLM loop was recorded at $0)."""
    cost = (run_json(stdout) or {}).get("cost_usd")
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return 0.0
    return float(cost) if math.isfinite(cost) and cost >= 0 else 0.0


def _run_refusal(stdout: str) -> str | None:
    """Why a nested run never really ran (no result, or refused before its first step)."""
    result = run_json(stdout)
    if result is None:
        return "ll-loop run printed no JSON result"
    return refused_before_first_step(result)
