"""`ll-harness skill NAME`: a skill run through the host agent CLI, one process per sample (IO).

A skill is a markdown file an agent CLI knows by name: `.claude/skills/NAME/SKILL.md`, or the
older `.claude/commands/NAME.md` (or `skills/NAME/SKILL.md` for skills kept in the project's
own tree). The host CLI (`--host`, else `LL_HOST_CLI`, else `claude -p`) gets `/NAME ARGS` on
stdin, as a person would type it, and its stdout is the sample's output (a host streaming JSON
events is read as a trace: its answer, its cost). An LLM drives the
host, so the subject is stochastic (three samples by default). The content hash is the skill
file's bytes, so an edited skill is a different subject and `--compare-baseline` resolves the
incumbent from the file as committed at HEAD, as for a loop.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

from engine.harness.keys import input_hash, sha256_bytes
from engine.harness.process import run_process
from engine.harness.refusal import Refusal
from engine.harness.subjects import Subject, SubjectRun
from engine.llm.agent_trace import read_agent_result

DEFAULT_HOST = "claude -p"
HOST_ENV = "LL_HOST_CLI"

# Where an agent CLI looks a skill up, in order (relative to the project directory).
SKILL_PLACES = (
    ".claude/skills/{name}/SKILL.md",
    ".claude/commands/{name}.md",
    "skills/{name}/SKILL.md",
)


def host_command(host: str | None) -> str:
    """The host agent CLI: `--host`, else `LL_HOST_CLI`, else `claude -p`."""
    return host or os.environ.get(HOST_ENV) or DEFAULT_HOST


def find_skill(name: str, cwd: Path) -> Path:
    """The skill's definition file; a refusal naming every place looked at when there is none."""
    as_path = cwd / name
    if name.endswith(".md") and as_path.is_file():
        return as_path
    if not name or "/" in name or name.startswith("."):
        raise Refusal(
            f"{name!r} is not a skill name",
            hint="pass the skill's name (as typed after `/`), or the path of its .md file",
        )
    places = [place.format(name=name) for place in SKILL_PLACES]
    for place in places:
        if (cwd / place).is_file():
            return cwd / place
    from engine.load.spelling import did_you_mean_hint

    raise Refusal(
        f"no skill {name!r}{did_you_mean_hint(name, _skills(cwd))}: looked for {', '.join(places)}",
        hint="run from the project that defines the skill, or pass the path of its .md file",
    )


def _skills(cwd: Path) -> list[str]:
    """The names of the skills defined in the project (in any of SKILL_PLACES)."""
    found = [p.parent.name for p in (cwd / ".claude" / "skills").glob("*/SKILL.md")]
    found += [p.stem for p in (cwd / ".claude" / "commands").glob("*.md")]
    found += [p.parent.name for p in (cwd / "skills").glob("*/SKILL.md")]
    return sorted(set(found))


def _executable(program: str, cwd: Path) -> bool:
    """Can `program` be started, as the host is (argv, no shell): a path, or a name on PATH?"""
    if "/" in program:
        path = cwd / program
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(program) is not None


def skill_subject(name: str, args: str | None, *, host: str | None, cwd: Path) -> Subject:
    """The subject for one skill invocation `/NAME ARGS` through the host agent CLI."""
    path = find_skill(name, cwd)
    skill = path.parent.name if path.name == "SKILL.md" else path.stem
    command = host_command(host)
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise Refusal(
            f"the host command {command!r} cannot be parsed: {exc}",
            hint="quote it as a shell would, e.g. --host 'claude -p'",
        ) from None
    if not argv:
        raise Refusal("the host command is empty", hint="pass --host 'claude -p'")
    if not _executable(argv[0], cwd):
        # else every sample was recorded as an error: `action could not start: ... 'claude'`
        raise Refusal(
            f"the host agent CLI {argv[0]!r} is not "
            + ("an executable file" if "/" in argv[0] else "an executable on PATH"),
            hint=f"install it, or name another with --host '<agent CLI>' (or {HOST_ENV})",
        )
    invocation = f"/{skill} {args}".rstrip() if args else f"/{skill}"

    def run(timeout: float | None) -> SubjectRun:
        result = run_process(argv, timeout=timeout, cwd=cwd, stdin=invocation + "\n")
        # A host streaming JSON events (`claude -p --output-format stream-json --verbose`) is
        # read as a `cmd:` runner's is: its answer is judged, not the raw stream, and what it
        # reported spending is the sample's cost.
        return SubjectRun.from_action(read_agent_result(result), timeout)

    return Subject(
        runner="skill",
        target=skill,
        content_hash=sha256_bytes(path.read_bytes()),
        input_hash=input_hash(args),
        stochastic=True,
        run=run,
        # The host's model is whatever the host is configured with: not pinned by us.
        subject_model=None,
        prompt_runner=f"host:{command}",
        source_path=path,
    )
