"""Before the first step: can this loop's LLM states run at all? (docs/llm.md)

Problems are sentences naming what to set, so `ll-loop run` can stop with exit 2 before doing any
work instead of failing halfway through a run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

from engine.llm import settings
from engine.llm.calllog import LOG_NAME
from engine.llm.prices import load_prices
from engine.llm.runners import RUNNERS, split_runner
from engine.model.errors import LoopError
from engine.model.loop import Loop
from engine.model.suite import Suite

CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE")


def has_credentials(environ: settings.Environ = None) -> bool:
    """Does the environment (a run's own, else the process's) give the SDK a way to
    authenticate?"""
    found = os.environ if environ is None else environ
    return any(found.get(name, "").strip() for name in CREDENTIAL_VARS)


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Bash's builtins and reserved words: no file on PATH, yet a `cmd:` command line may start with
# one (bash runs it). They were refused as "not an executable on PATH".
SHELL_WORDS = frozenset(
    """! [[ { ( . : [ alias builtin case cd command coproc declare eval exec export for
    function if let local printf pushd read set source test time trap type typeset ulimit
    umask unset until while""".split()  # noqa: SIM905 (a list literal takes 40 lines)
)


def runner_problem(spec: str, environ: settings.Environ = None) -> str | None:
    """Why a runner value cannot be used here, or None; a command is looked for on the `PATH`
    it will run with (the run's own environment's, else the process's)."""
    name, argument = split_runner(spec)
    if name not in RUNNERS:
        return f"unknown prompt runner {spec!r}: use 'anthropic' or 'cmd:<command>'"
    if name != "cmd":
        return None
    try:
        words = shlex.split(argument)
    except ValueError as exc:
        return f"runner {spec!r} is not a valid command line ({exc})"
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]  # `cmd:MAX_TOKENS=8000 claude -p`: bash sets it for the command
    if not words:
        return f"runner {spec!r} names no command: write 'cmd:<command>', e.g. 'cmd:claude -p'"
    executable = words[0]
    if executable in SHELL_WORDS or executable[0] in "({!":
        return None  # `cd agent && claude -p`, `exec claude -p`: bash's own, found at run time
    if "/" in executable:
        found = Path(executable).is_file() and os.access(executable, os.X_OK)
    else:
        path = None if environ is None else environ.get("PATH", os.defpath)
        found = shutil.which(executable, path=path) is not None
    if not found:
        return (
            f"runner {spec!r}: {executable!r} is not an executable on PATH; install it, "
            "fix the path, or set another runner"
        )
    return None


def judge_problems() -> list[str]:
    """Why a judge call outside a loop (`ll-harness --semantic`) could not run; `[]` if it can.

    The same checks a loop's preflight makes, so a missing key stops the command before its
    first sample instead of recording every sample as an error.
    """
    problems = settings.env_problems()
    if not has_credentials():
        problems.append(
            "the semantic judge calls the Anthropic API but no credentials are set: set "
            "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"
        )
    try:
        load_prices()
    except LoopError as exc:
        problems.append(exc.message)
    return problems


def prompt_problems(runner: str) -> list[str]:
    """Why a prompt outside a loop (`ll-harness prompt`, `ll-harness dsl`) could not run through
    the `anthropic` runner; `[]` if it can, or for a `cmd:` runner (a failing command is what
    such a sample measures). A name that is no runner, or `cmd:` with no command, is refused:
    `--runner bogus` recorded every sample as an error, and `--runner cmd:` ran `bash -c ''`
    and passed every sample of `--exit-code 0`, measuring nothing."""
    name, argument = split_runner(runner)
    if name not in RUNNERS:
        return [f"unknown prompt runner {runner!r}: use 'anthropic' or 'cmd:<command>'"]
    if name == "cmd" and not argument:
        return [f"runner {runner!r} names no command: write 'cmd:<command>', e.g. 'cmd:claude -p'"]
    if name != "anthropic":
        return []
    problems = settings.env_problems()
    if not has_credentials():
        problems.append(
            "the prompt runner 'anthropic' calls the Anthropic API but no credentials are set: "
            "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"
        )
    try:
        load_prices()
    except LoopError as exc:
        problems.append(exc.message)
    return problems


def suite_problems(suite: Suite) -> list[str]:
    """Why a suite's model calls could not run; `[]` if they can, or it makes none. Without a
    key every case's subject ran (an agent's cost spent) and then every LLM judge errored."""
    callers = []
    if suite.pairwise is not None or any(j.uses_llm for j in suite.judges):
        callers.append("its LLM judges")
    subjects = [suite.subject, *([suite.baseline_subject] if suite.baseline_subject else [])]
    for subject in subjects:
        # The suite file's `runner:` is checked by its schema; `LL_PROMPT_RUNNER=bogus` was not,
        # and the prompt went to the `anthropic` runner instead.
        if subject.kind == "prompt" and not subject.runner:
            runner = settings.prompt_runner(None, None)
            name, argument = split_runner(runner)
            if name not in RUNNERS or (name == "cmd" and not argument):
                return [
                    f"suite {suite.name!r}: LL_PROMPT_RUNNER={runner!r} is no prompt runner: "
                    "use 'anthropic' or 'cmd:<command>'"
                ]
    if any(
        s.kind == "prompt"
        and split_runner(settings.prompt_runner(None, None, s.runner))[0] != "cmd"
        for s in subjects
    ):
        callers.append("its prompt subject")
    if not callers:
        return []
    problems = settings.env_problems()
    if not has_credentials():
        problems.append(
            f"suite {suite.name!r}: {' and '.join(callers)} call the Anthropic API but no "
            "credentials are set: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"
        )
    try:
        load_prices()
    except LoopError as exc:
        problems.append(exc.message)
    return problems


def sdk_states(loop: Loop, environ: settings.Environ = None) -> list[str]:
    """States that call the Messages API: judges, and prompt states whose runner is `anthropic`."""
    names = []
    for state in loop.states.values():
        spec = state.evaluate
        judge = spec is not None and (
            spec.type == "llm_structured" or any(j.uses_llm for j in spec.judges)
        )
        prompt_sdk = (
            state.action_type == "prompt"
            and split_runner(settings.prompt_runner(state, loop, environ=environ))[0] == "anthropic"
        )
        if judge or prompt_sdk:
            names.append(state.name)
    return names


def replay_log_problem(replay_from: Path) -> str | None:
    """Why `replay_from` cannot answer a replay (it has no LLM log), or None."""
    log = replay_from / LOG_NAME
    if log.is_file():
        return None
    what = "is not a file" if log.exists() else "does not exist"
    return f"cannot replay: {log} {what}; pass the run id of a run that made LLM calls"


def preflight(
    loop: Loop,
    *,
    replay: bool = False,
    replay_from: Path | None = None,
    environ: settings.Environ = None,
) -> list[str]:
    """Every reason this loop's LLM states could not run (in `environ`, the run's own
    environment, else the process's); `[]` when they can."""
    if not loop.uses_llm():
        return []
    problems: list[str] = []
    for state in loop.states.values():
        if state.action_type != "prompt":
            continue
        problem = runner_problem(settings.prompt_runner(state, loop, environ=environ), environ)
        if problem is not None:
            problems.append(f"state {state.name!r}: {problem}")
    needs_sdk = sdk_states(loop, environ)
    if needs_sdk:
        problems.extend(settings.env_problems(environ))
    if replay:
        if replay_from is not None and (missing := replay_log_problem(replay_from)):
            problems.append(missing)
    elif needs_sdk and not has_credentials(environ):
        listed = ", ".join(repr(n) for n in needs_sdk)
        subject = f"state {listed} calls" if len(needs_sdk) == 1 else f"states {listed} call"
        problems.append(
            f"{subject} the Anthropic API but no "
            "credentials are set: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), "
            "or replay an earlier run with --replay RUN"
        )
    if needs_sdk:
        try:
            load_prices()
        except LoopError as exc:
            problems.append(exc.message)
    return problems
