"""Run a suite's subject once for one case, in the case's workspace (IO).

- `command`: bash, each `${inputs.KEY}` / `${annotations.KEY}` quoted for its position by the
  shell safety model (`engine.shell`), never pasted in raw;
- `prompt`: the rendered text through the prompt runner (`anthropic`, or `cmd:` which is an
  agent);
- `agent`: an agent CLI through the `cmd:` runner, started in the workspace, the prompt on
  stdin; a stream-json agent's trace (conversation, tool calls, cost) joins the record;
- `loop`: `ll-loop run LOOP --json` as a child process in the workspace, the case's inputs
  bound to its parameters (`with:`, or every input the loop declares a parameter for).

A subject that times out, cannot start, is killed, or (a loop) is refused before its first step
is that case's error: its judges do not run. A subject that exits non-zero ran: judges judge it.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.model import jsontext
from engine.model.errors import InterpolationError, LoopError
from engine.model.ports import ActionResult, ProcessSetting, refused_before_first_step, run_json
from engine.model.suite import Subject
from engine.runtime.actions import ActionRunner, read_back
from engine.shell.interpolate import (
    case_text_as_command,
    env_name,
    evaluate,
    find_expressions,
    render_shell,
    render_text,
    to_text,
)

MAX_EVENTS = 2000  # events of a loop subject kept in the record


@dataclass(frozen=True)
class SubjectRun:
    """What the subject did. `error` set: it could not be judged (see the module docstring)."""

    result: ActionResult
    error: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # record fields (run, loop_outputs)


@dataclass(frozen=True)
class CaseShell:
    """Bash for one case: in its workspace, with the case's variables (`LL_CASE_ID`, ...)
    exported at the head of every script. The runner itself inherits the process's environment
    unchanged: encoding a whole environment for every spawn cost more than a quick subject."""

    runner: ActionRunner
    exports: str  # `export NAME=value ...; ` (values quoted)

    def run(self, script: str, *, label: str, timeout: float | None) -> ActionResult:
        return self.runner.run_shell(self.exports + script, state=label, timeout=timeout)


# Bytes the exported values of one case may take, quoted for the shell: they go into the one
# `bash -c` argument a subject runs with, and Linux limits one argument to 128 KiB
# (MAX_ARG_STRLEN); the rest is left for the script itself.
EXPORTS_LIMIT = 100_000
_WORDS = {"inputs": "input", "annotations": "annotation"}


class ExportError(Exception):
    """A case value that cannot be exported as a variable: the case's error (one sentence)."""


def exports(variables: Mapping[str, str]) -> str:
    """`export A='1' B='2'; `: one line, so the script's own line numbers stay as written."""
    if not variables:
        return ""
    return "export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in variables.items()) + "; "


def case_variables(*roots: tuple[str, Mapping[str, Any]]) -> dict[str, str]:
    """`LL_INPUTS_<key>` (and `LL_ANNOTATIONS_<key>`) for every top-level key: the spelling of
    a case's values for places where text may not be interpolated (`python -c`, `eval`, ...).

    A key that cannot name a variable (`a-b`, `__x`) has none. A value that cannot be
    exported — it holds NUL, or the values pass `EXPORTS_LIMIT` — raises `ExportError`: a
    variable the docs promise must never silently be missing."""
    found: dict[str, str] = {}
    total = 0
    for root, values in roots:
        for key, value in values.items():
            name = env_name(f"{root}.{key}") if isinstance(key, str) else None
            if name is None or not name.isidentifier():
                continue
            text = _text(root, key, value)
            size = len(shlex.quote(text).encode("utf-8", "surrogatepass"))
            if "\x00" in text:
                raise ExportError(f"{_WORDS[root]} {key!r} holds a NUL byte: {name} cannot hold it")
            total += len(name) + 2 + size  # `NAME=value `
            if total > EXPORTS_LIMIT:
                raise ExportError(
                    f"{_WORDS[root]} {key!r} ({size:,} bytes quoted for the shell) cannot be "
                    f"exported as {name}: a case's {root} may take {EXPORTS_LIMIT:,} bytes in "
                    f"all as variables (one shell argument holds 128 KiB); read the case's "
                    "input.yaml from the workspace instead"
                )
            found[name] = text
    return found


def _text(root: str, key: str, value: Any) -> str:
    try:
        return to_text(value)
    except Exception as exc:  # the values of a YAML file all have one; a caller's may not
        raise ExportError(
            f"{_WORDS[root]} {key!r} has no text form for its variable: {exc}"
        ) from None


@dataclass(frozen=True)
class Place:
    """Where and with what a subject runs: `shell` runs bash in the workspace, with the case's
    variables, spilling big outputs outside it."""

    workspace: Path
    shell: CaseShell
    namespaces: Mapping[str, Any]  # inputs, annotations
    suite_source: str
    gateway: Callable[[], Any]  # the run's LLM gateway, built on first use
    subject_model: str | None = None
    stopped: Callable[[], bool] | None = None  # True once the suite is stopping
    project_root: str = ""  # the project the suite runs in (its `.loops/`), "" when unknown


def run_subject(subject: Subject, place: Place) -> SubjectRun:
    """Run `subject` once in `place`; never raises."""
    try:
        if subject.kind == "command":
            return _command(subject, place)
        if subject.kind == "loop":
            return _loop(subject, place)
        return _prompt(subject, place)
    except InterpolationError as exc:
        return SubjectRun(ActionResult(exit_code=None), f"subject: {exc.message}")
    except LoopError as exc:
        return SubjectRun(ActionResult(exit_code=None), f"subject: {exc.message}")


def _crash(result: ActionResult, timeout: float | None) -> str | None:
    if result.timed_out:
        return f"the subject timed out after {timeout or 0:g}s"
    if result.crashed:
        return f"the subject {result.failure_reason().removeprefix('action ')}"
    return None


def _shell(script: str, place: Place, timeout: float | None, label: str) -> ActionResult:
    return place.shell.run(script, label=label, timeout=timeout)


def _command(subject: Subject, place: Place) -> SubjectRun:
    script = render_shell(subject.command or "", place.namespaces)
    result = _shell(script, place, subject.timeout, "subject")
    error = _crash(result, subject.timeout)
    if error is None:
        result, error = read_back(result, "the subject")
    return SubjectRun(result, error)


def _prompt(subject: Subject, place: Place) -> SubjectRun:
    from engine.llm import settings
    from engine.llm.runners import AnthropicRunner, CommandRunner, PromptCall

    text = render_text(subject.prompt or "", place.namespaces)
    if subject.kind == "agent":
        command = subject.agent or ""
    else:
        runner = settings.prompt_runner(None, None, subject.runner)
        command = runner.removeprefix("cmd:").strip() if runner.startswith("cmd:") else ""
    call = PromptCall(
        gateway=place.gateway,
        model=settings.prompt_model(None, None, subject.model or place.subject_model),
        max_tokens=settings.DEFAULT_PROMPT_MAX_TOKENS,
        timeout=subject.timeout,
        # A stopping suite ends the agent's group (it has a session of its own: Ctrl-C never
        # reaches it, and the stop would wait for it, then leave it running).
        process=ProcessSetting(env=os.environ, cwd=str(place.workspace), stopped=place.stopped),
    )
    if command:
        # The agent starts in the workspace: `cd` first, in the same shell as its command line.
        located = f"cd -- {shlex.quote(str(place.workspace))} || exit 97\n{place.shell.exports}"
        result = CommandRunner(located + command).run(text, call)
    else:
        result = AnthropicRunner().run(text, call)
    error = _crash(result, subject.timeout)
    if error is None and result.exit_code is None:
        error = f"the subject gave no answer: {result.stderr.strip() or 'no exit status'}"
    return SubjectRun(result, error)


# ---------------------------------------------------------------------------------------------
# A loop as the subject


def _loop(subject: Subject, place: Place) -> SubjectRun:
    from engine.load.loader import load_loop_file
    from engine.model.errors import LoadError

    path = _loop_file(subject.loop or "", place)
    try:
        child = load_loop_file(path)  # for its parameters; `ll-loop run` lints it before running
    except LoadError as exc:
        return SubjectRun(ActionResult(exit_code=None), f"the loop does not load: {exc.message}")
    refusal = case_text_as_command(subject.with_, child, place.namespaces.get("inputs") or {})
    if refusal is not None:
        return SubjectRun(ActionResult(exit_code=None), refusal)
    values = bind_with(subject.with_, child.parameters, place.namespaces)
    argv = [sys.executable, "-c", "from engine.cli import main; main()", "run", str(path)]
    for key, value in values.items():
        argv += ["--context", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    argv.append("--json")
    (place.workspace / ".loops").mkdir(exist_ok=True)  # pins the child's project root here
    result = _shell(" ".join(shlex.quote(a) for a in argv), place, subject.timeout, "subject")
    error = _crash(result, subject.timeout)
    if error is not None:
        return SubjectRun(result, error)
    run = run_json(result.output)
    if run is None:
        return SubjectRun(result, "the loop run printed no JSON result")
    refusal = refused_before_first_step(run)
    if refusal is not None:
        return SubjectRun(result, refusal)
    return SubjectRun(result, None, _run_extra(run, place.workspace))


def _loop_file(ref: str, place: Place) -> Path:
    """The subject loop's file: next to the suite file, in the workspace's `.loops/` (a
    worktree's, as committed), then in the project's own `.loops/` (a `copy` workspace has
    none: `loop: greet` missed the project's `.loops/greet.yaml` that `ll-loop run greet`
    runs), then among the built-ins."""
    from engine.runtime.subloop import SubloopError, resolve_child

    try:
        return resolve_child(ref, place.suite_source, place.workspace)
    except SubloopError:
        if not place.project_root:
            raise
    try:
        return resolve_child(ref, place.suite_source, Path(place.project_root))
    except SubloopError as exc:
        raise SubloopError(
            exc.message.replace("next to the parent loop", "next to the suite file"),
            hint="check the name with `ll-loop list`, or give a path relative to the suite file",
        ) from None


def bind_with(
    given: Mapping[str, Any] | None, parameters: Mapping[str, Any], ns: Mapping[str, Any]
) -> dict[str, Any]:
    """The child's parameter values: `with:` rendered (a lone `${...}` keeps its type), or
    every input the child declares a parameter for."""
    if given is None:
        inputs = ns.get("inputs") or {}
        return {k: v for k, v in inputs.items() if k in parameters}
    return {key: _value(value, ns) for key, value in given.items()}


def _value(value: Any, ns: Mapping[str, Any]) -> Any:
    if not isinstance(value, str) or "${" not in value:
        return value
    found = find_expressions(value)
    if len(found) == 1 and found[0].start == 0 and found[0].end == len(value):
        return evaluate(found[0].text, ns)
    return render_text(value, ns)


def _run_extra(run: dict[str, Any], workspace: Path) -> dict[str, Any]:
    """The child run's result, its loop outputs and its events (from its run directory)."""
    extra: dict[str, Any] = {"run": run, "cost_usd": float(run.get("cost_usd") or 0.0)}
    events: list[dict[str, Any]] = []
    log = workspace / ".loops" / "runs" / str(run.get("run_id", "")) / "events.jsonl"
    try:
        with log.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    event = jsontext.loads(line)
                except ValueError:
                    continue
                if len(events) < MAX_EVENTS:
                    events.append(event)
                if event.get("event") == "loop_complete" and not event.get("depth"):
                    extra["loop_outputs"] = event.get("outputs") or {}
    except OSError:
        pass
    extra["events"] = events
    return extra
