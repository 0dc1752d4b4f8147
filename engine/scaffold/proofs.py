"""Proof-first gates: an issue's `learning_tests_required:` targets as `check_proof_<slug>` states.

An issue may declare the external assumptions its feature rests on:

    learning_tests_required:
      - stripe-idempotency                          # proven by the configured command, or
      - target: redis-ttl                           #   by a recorded proof file
        command: pytest -q tests/learning/test_redis_ttl.py

When the project enables learning tests in `.loops/config.yaml` (`learning_tests: {enabled:
true}`), `scaffold-eval` splices one gate per target between the execute state and the judge,
chained on `on_yes`: the judge is reached only when every assumption is proven. A gate runs the
target's `command` (else the config's `learning_tests.command` template with `{slug}`, and
`{target}` interpolated from the loop's `context:` so ll-loop quotes the issue's text for its
place) and keeps its output in the issue's pre-patch evidence bundle,
`.loops/evidence/<ID>/proof-<slug>.txt`; with no command it checks that such a proof file was
recorded and starts with `PASS`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.load.issuefile import Issue
from engine.load.project import project_root
from engine.load.yaml_positions import YamlProblems, read_yaml_file
from engine.model.errors import UsageError
from engine.scaffold.text import comment, safe_id, yaml_quoted, yaml_scalar

CONFIG_FILE = Path(".loops") / "config.yaml"
EVIDENCE_DIR = ".loops/evidence"


@dataclass(frozen=True)
class LearningTests:
    """The project's `learning_tests:` settings."""

    enabled: bool = False
    command: str | None = None  # template for targets without their own command


@dataclass(frozen=True)
class ProofTarget:
    """One external assumption an issue must prove before it is judged."""

    name: str
    slug: str
    command: str | None = None


def load_learning_tests(root: Path) -> LearningTests:
    """`learning_tests` from `.loops/config.yaml` of the project `root` is in (absent file or
    key: disabled), read by the engine's one YAML reader."""
    path = project_root(root) / CONFIG_FILE
    if not path.is_file():
        return LearningTests()
    try:
        data = read_yaml_file(path, str(CONFIG_FILE))[0]
    except YamlProblems as exc:
        first = exc.diagnostics[0]
        if first.code == "F003":  # an empty document: its sentence is a loop file's
            raise UsageError(
                f"{CONFIG_FILE}:{first.line}: the project config is empty: it holds a mapping "
                "of project settings such as `learning_tests: {enabled: true}`",
                hint="write a setting, or remove the file to use the defaults",
            ) from None
        raise UsageError(
            f"{CONFIG_FILE}:{first.line}: the project config is not readable YAML "
            f"({first.message})",
            hint="fix the file, or remove it to use the defaults",
        ) from None
    section = data.get("learning_tests") if isinstance(data, dict) else None
    if section is None:
        return LearningTests()
    if not isinstance(section, dict):
        raise UsageError(
            f"{CONFIG_FILE}: `learning_tests` must be a mapping",
            hint="write `learning_tests: {enabled: true}`",
        )
    enabled, command = section.get("enabled", False), section.get("command")
    if not isinstance(enabled, bool):
        raise UsageError(
            f"{CONFIG_FILE}: `learning_tests.enabled` must be true or false, got {enabled!r}",
            hint="write `enabled: true`",
        )
    if command is not None and not (isinstance(command, str) and command.strip()):
        raise UsageError(
            f"{CONFIG_FILE}: `learning_tests.command` must be a command line",
            hint="e.g. `command: pytest -q tests/learning -k {slug}`",
        )
    if command is not None:
        _check_target_places(command)
    return LearningTests(enabled, command)


def _check_target_places(command: str) -> None:
    """Refuse a template that puts `{target}` where bash would run or evaluate it: a target
    is issue text, and only a value bash merely expands can be quoted into exactly itself."""
    from engine.shell.commands import Role
    from engine.shell.grammar import layout

    for place in layout(command.split("{target}")).positions:
        if place.role is not Role.VALUE:
            raise UsageError(
                f"{CONFIG_FILE}: `learning_tests.command` puts {{target}} where bash would not "
                f"take it as plain text: {place.why}",
                hint='put {target} where the command only reads it, e.g. `-k "{target}"`',
            )


def proof_targets(issue: Issue) -> tuple[ProofTarget, ...]:
    """The issue's `learning_tests_required:` entries, each with a distinct state slug."""
    raw = issue.front_matter.get("learning_tests_required")
    if raw is None:
        return ()
    where = f"{issue.path}" if issue.path else issue.id
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raise UsageError(
            f"{where}: `learning_tests_required` must be a list of targets",
            hint="write one target per line: `- stripe-idempotency`",
        )
    targets: list[ProofTarget] = []
    slugs: set[str] = set()
    for entry in raw:
        name, command = _entry(entry, where)
        base = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "target"
        slug, n = base, 2
        while slug in slugs:
            slug, n = f"{base}_{n}", n + 1
        slugs.add(slug)
        targets.append(ProofTarget(name, slug, command))
    return tuple(targets)


def _entry(entry: Any, where: str) -> tuple[str, str | None]:
    if isinstance(entry, str) and entry.strip():
        return entry.strip(), None
    if isinstance(entry, dict):
        name, command = entry.get("target"), entry.get("command")
        if isinstance(name, str) and name.strip() and (command is None or isinstance(command, str)):
            return name.strip(), (command.strip() or None) if command else None
    raise UsageError(
        f"{where}: a learning_tests_required entry must be a target name or "
        f"{{target: NAME, command: CMD}}, got {entry!r}",
        hint="write `- my-assumption` or `- {target: my-assumption, command: ./prove.sh}`",
    )


def gate_state_names(targets: Sequence[ProofTarget], prefix: str = "") -> list[str]:
    return [f"check_proof_{prefix}{t.slug}" for t in targets]


def target_variables(
    targets: Sequence[ProofTarget], config: LearningTests, prefix: str = ""
) -> dict[str, str]:
    """The `context:` entries the gates read a target's name from: one per target that the
    config's command template names as `{target}`."""
    if config.command is None or "{target}" not in config.command:
        return {}
    return {_variable(t, prefix): t.name for t in targets if t.command is None}


def context_block(variables: dict[str, str]) -> str:
    """A loop's `context:` section holding `variables` (nothing when there are none)."""
    if not variables:
        return ""
    lines = "".join(f"  {name}: {yaml_quoted(value)}\n" for name, value in variables.items())
    return (
        "# The learning-test targets, as the issue names them: the gates interpolate them, so\n"
        "# ll-loop quotes each for where `{target}` sits in the command (never run as code).\n"
        f"context:\n{lines}"
    )


def _variable(target: ProofTarget, prefix: str) -> str:
    return f"proof_target_{prefix}{target.slug}"


def proof_states(
    issue: Issue,
    targets: Sequence[ProofTarget],
    config: LearningTests,
    *,
    after: str,
    unproven: str,
    prefix: str = "",
) -> str:
    """The gate states as YAML text (indented for `states:`), chained on `on_yes` to `after`."""
    names = gate_state_names(targets, prefix)
    blocks: list[str] = []
    for index, target in enumerate(targets):
        nxt = names[index + 1] if index + 1 < len(names) else after
        script = _gate_script(issue, target, config, _variable(target, prefix))
        blocks.append(
            f"""\
  # Proof-first gate {index + 1}/{len(targets)}: {comment(target.name)}
  {names[index]}:
    description: {yaml_quoted(f"Prove the assumption '{target.name}' before judging.")}
    action: {yaml_scalar(script, 6, escape=False)}
    timeout: 600
    evaluate:
      type: exit_code
    on_yes: {nxt}
    on_no: {unproven}
    on_error: {unproven}"""
        )
    return "\n".join(blocks)


def _escaped(text: str) -> str:
    """Shell text with every `${` written so that ll-loop leaves it to bash."""
    return text.replace("${", "$${")


def evidence_path(issue: Issue) -> str:
    return f"{EVIDENCE_DIR}/{safe_id(issue.id)}"


def _gate_script(issue: Issue, target: ProofTarget, config: LearningTests, variable: str) -> str:
    """The gate's shell script, its `${` already escaped for ll-loop but the target's hole.

    A target named in the config's template is interpolated by ll-loop (`${context.NAME}`),
    which quotes it for exactly where it sits; `shlex.quote` text pasted in its place ran
    as code inside the template's double quotes (`"{target}"` with a target `$(cmd)`)."""
    proof = f"{evidence_path(issue)}/proof-{target.slug}.txt"
    command = _escaped(target.command) if target.command is not None else None
    if command is None and config.command:
        hole = f"${{context.{variable}}}"
        pieces = [
            _escaped(p).replace("{slug}", target.slug) for p in config.command.split("{target}")
        ]
        command = hole.join(pieces)
    if command is None:
        return "\n".join(
            [
                f"proof={shlex.quote(proof)}",
                'if [ ! -s "$proof" ]; then echo "no proof recorded at $proof"; exit 1; fi',
                'head -n 20 "$proof"',
                'head -n 1 "$proof" | grep -q "^PASS"',
            ]
        )
    return "\n".join(
        [
            f"proof={shlex.quote(proof)}",
            'mkdir -p "$(dirname "$proof")"',
            # a subshell: a `cd` or an `exit` in the command leaves the tail below to run
            f'(\n{command}\n) > "$proof" 2>&1',
            "status=$?",
            'tail -n 20 "$proof"',
            'exit "$status"',
        ]
    )
