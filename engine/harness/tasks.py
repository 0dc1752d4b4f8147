"""DSL task files: load and validate them, and build the prompt with its answer contract (pure
apart from reading the files).

A task that declares `expected` is graded deterministically against the last fenced ```json
object of the response — no extra LLM call — by the `expected_answer` judge
(`engine.judges.match`). The answer contract appended to the prompt asks for exactly that object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from engine.harness.keys import sha256_bytes
from engine.judges.match import extract_answer as extract_answer  # graded by the judges now
from engine.judges.match import grade_answer as grade_answer
from engine.judges.match import same_value as same_value
from engine.load.locate import not_a_file
from engine.load.resources import schema_path
from engine.load.yaml_positions import Positions, YamlProblems, read_yaml_file
from engine.model.errors import UsageError

TASK_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Task:
    """One loaded, schema-valid task file."""

    path: Path
    name: str
    prompt: str
    blanks: tuple[tuple[str, str], ...]  # (name, description) in file order
    expected: Mapping[str, Any] | None
    task_type: str | None
    source: str | None
    content_hash: str

    @property
    def answer_keys(self) -> tuple[str, ...]:
        keys = [name for name, _ in self.blanks]
        keys += [k for k in (self.expected or {}) if k not in keys]
        return tuple(keys)

    def full_prompt(self) -> str:
        """The prompt plus the answer contract (when the task names answer keys)."""
        keys = self.answer_keys
        if not keys:
            return self.prompt
        described = dict(self.blanks)
        lines = [
            self.prompt.rstrip(),
            "",
            "Answer contract: end your reply with one fenced ```json block holding a single "
            "JSON object with exactly these keys:",
        ]
        for key in keys:
            note = described.get(key, "")
            lines.append(f"- {json.dumps(key)}" + (f": {note}" if note else ""))
        lines.append('For example:\n```json\n{"' + keys[0] + '": "..."}\n```')
        return "\n".join(lines)


def task_files(path: Path) -> list[Path]:
    """`path` itself, or the *.yaml / *.yml files directly in the directory, sorted."""
    if path.is_file():
        return [path]
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in TASK_SUFFIXES and p.is_file())
    there = not_a_file(path)  # never read: a pipe or a device could block forever
    raise UsageError(
        f"{path} is {there}, not a task file" if there else f"no task file or directory at {path}",
        hint="pass a task .yaml file or a directory",
    )


def load_tasks(path: Path, cwd: Path) -> list[Task]:
    """Load and validate every task under `path`; the first invalid one stops the run."""
    files = task_files(path)
    if not files:
        raise UsageError(
            f"no *.yaml task files in {path}",
            hint="see docs/harness.md for the task file format",
        )
    return [load_task(file, cwd) for file in files]


def load_task(file: Path, cwd: Path) -> Task:
    """Read a task through the engine's one YAML reader (alias bombs, tags and non-finite
    numbers are refused as in loop files), then check it against its schema."""
    name = _display_name(file, cwd)
    try:
        data, positions = read_yaml_file(file, name)
    except YamlProblems as failed:
        first = failed.diagnostics[0]
        if first.code == "F003":  # the loop reader's words for an empty file name a loop
            raise UsageError(
                f"{name}:{first.line}: the task file is empty: a task needs a prompt",
                hint="see docs/harness.md for the task file format",
            ) from None
        hint = first.hint.replace("a loop file", "a task file").replace("loop file", "task file")
        raise UsageError(
            f"{name}:{first.line}: not valid YAML ({first.message})",
            hint=hint or "fix the YAML syntax of the task file",
        ) from None
    _validate(data, positions, name)
    assert isinstance(data, dict)
    blanks_raw = data.get("blanks") or []
    blanks = (
        tuple((str(k), str(v)) for k, v in blanks_raw.items())
        if isinstance(blanks_raw, dict)
        else tuple((str(k), "") for k in blanks_raw)
    )
    expected = data.get("expected")
    if expected is not None and blanks:
        extra = [k for k in expected if k not in dict(blanks)]
        if extra:
            line = positions.of(("expected", extra[0]))[0]
            raise UsageError(
                f"{name}:{line}: expected key {extra[0]!r} is not one of the task's blanks",
                hint="add it to `blanks`, or remove it from `expected`",
            )
    return Task(
        path=file,
        name=name,
        prompt=data["prompt"],
        blanks=blanks,
        expected=expected,
        task_type=data.get("task_type"),
        source=data.get("source"),
        content_hash=sha256_bytes(file.read_bytes()),
    )


@cache
def _validator() -> Any:
    import jsonschema  # not on the validate/run hot path: only dsl loads task files

    schema = json.loads(schema_path("harness-task.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def _validate(data: object, positions: Positions, name: str) -> None:
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    error = errors[0]
    path = tuple(error.absolute_path)
    line = positions.of(path)[0] if path else 1
    where = "/".join(str(p) for p in path) or "the top level"
    message = _short(error.message)
    hint = "see docs/harness.md for the task file format"
    if error.validator == "additionalProperties" and isinstance(data, dict):
        unknown = sorted(set(data) - set(error.schema.get("properties", {})))
        if unknown:
            from engine.load.spelling import did_you_mean_hint

            keys = error.schema.get("properties", {})
            message = f"unknown key {unknown[0]!r}{did_you_mean_hint(unknown[0], keys)}"
            line = positions.of((unknown[0],))[0]
            if unknown[0] == "source_dsl":
                hint = "not supported: use `source`"
            else:
                hint = "allowed keys: prompt, blanks, expected, task_type, source, description"
    raise UsageError(f"{name}:{line}: {where}: {message}", hint=hint)


def _short(message: str) -> str:
    """A schema message quotes the offending value whole; a huge value is cut for the terminal."""
    return message if len(message) <= 300 else message[:297] + "..."


def _display_name(file: Path, cwd: Path) -> str:
    try:
        return file.resolve().relative_to(cwd.resolve()).as_posix()
    except ValueError:
        return file.as_posix()
