"""Before the first step: can this loop's LLM states run at all? (docs/llm.md)

Problems are sentences naming what to set, so `ll-loop run` can stop with exit 2 before doing any
work instead of failing halfway through a run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from engine.llm import settings
from engine.llm.calllog import LOG_NAME
from engine.llm.prices import load_prices
from engine.llm.runners import RUNNERS, split_runner
from engine.model.errors import LoopError
from engine.model.loop import Loop

CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE")


def has_credentials(environ: settings.Environ = None) -> bool:
    """Does the environment (a run's own, else the process's) give the SDK a way to
    authenticate?"""
    found = os.environ if environ is None else environ
    return any(found.get(name, "").strip() for name in CREDENTIAL_VARS)


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _bash_knows(word: str) -> bool:
    """Is `word` a bash builtin or keyword (`exit 1`, `cd dir && agent`, `{ agent; }`), which
    the `cmd:` runner's `bash -c` runs though no file of that name is on PATH? Asked only of a
    word that is no file on PATH."""
    bash = shutil.which("bash")
    if bash is None:
        return False
    try:
        done = subprocess.run(
            [bash, "-c", 'type -t -- "$1"', "bash", word],
            capture_output=True,
            text=True,
            timeout=10,
            env={"PATH": ""},  # files are shutil.which's answer; here only bash's own words
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.stdout.strip() in ("builtin", "keyword")


def _bash_parses(command: str) -> bool:
    """Does bash read `command` as a complete command line (`bash -n`: parsed, not run)?"""
    bash = shutil.which("bash")
    if bash is None:
        return False
    try:
        done = subprocess.run(
            [bash, "-n", "-c", command], capture_output=True, timeout=10, env={"PATH": ""}
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _split(line: str) -> tuple[list[str], str | None]:
    """The words of `line` as Python's shlex reads them, and why it stopped early (bash's own
    quoting, `$'it\\'s'`, or an unclosed quote); the words before that point are whole."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = ""
    words: list[str] = []
    try:
        words.extend(lexer)
    except ValueError as exc:
        return words, str(exc)
    return words, None


def runner_problem(spec: str, environ: settings.Environ = None) -> str | None:
    """Why a runner value cannot be used here, or None; a command is looked for on the `PATH`
    it will run with (the run's own environment's, else the process's)."""
    name, argument = split_runner(spec)
    if name not in RUNNERS:
        return f"unknown prompt runner {spec!r}: use 'anthropic' or 'cmd:<command>'"
    if name != "cmd":
        return None
    words, problem = _split(argument)
    if problem is not None and not _bash_parses(argument):
        return f"runner {spec!r} is not a valid command line ({problem})"
    # bash runs the command line: leading assignments (`FOO=1 claude -p`) are not the program
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words and problem is not None:
        return None  # the program is in bash's own quoting: bash's to say, at run time
    if not words:
        return f"runner {spec!r} names no command: write 'cmd:<command>', e.g. 'cmd:claude -p'"
    executable = words[0]
    if any(c in executable for c in "$`(<>|;&"):
        return None  # an expansion or a subshell: what it runs is bash's to say, at run time
    if "/" in executable:
        found = Path(executable).is_file() and os.access(executable, os.X_OK)
    else:
        path = None if environ is None else environ.get("PATH", os.defpath)
        found = shutil.which(executable, path=path) is not None or _bash_knows(executable)
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
    its runner; `[]` if it can. A `cmd:` runner is only looked for on PATH, as `ll-loop run`
    does (a command that is not there was recorded as a FAIL, bash's exit 127); a command that
    runs and fails is what such a sample measures."""
    if split_runner(runner)[0] != "anthropic":
        problem = runner_problem(runner)
        return [problem] if problem else []
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
    can_replay: bool = True,
) -> list[str]:
    """Every reason this loop's LLM states could not run (in `environ`, the run's own
    environment, else the process's); `[]` when they can. `can_replay`: the command has
    `--replay` to suggest (`ll-harness loop` has not)."""
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
            "credentials are set: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"
            + (", or replay an earlier run with --replay RUN" if can_replay else "")
        )
    if needs_sdk:
        try:
            load_prices()
        except LoopError as exc:
            problems.append(exc.message)
    return problems
