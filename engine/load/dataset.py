"""Read a suite's cases: inline `cases:`, or a dataset directory of case folders (IO, bounded).

A dataset directory holds one folder per case (sorted by name; the folder name is the case id)
with `input.yaml` (a mapping: the case's inputs) and optionally `annotations.yaml` (facts for
judges). Every file goes through the one YAML reader with a size limit (`engine.load.bounded`):
an alias bomb or a 100 MB file is refused with one sentence.

A broken case never stops the suite: its `problem` says what is wrong, and the runner records it
as errored for every judge. Only a dataset that cannot be listed at all is the caller's refusal.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.load.bounded import read_yaml_limited
from engine.load.yaml_positions import YamlProblems
from engine.model.errors import UsageError
from engine.model.suite import Case, Suite

INPUT_NAMES = ("input.yaml", "input.yml")
ANNOTATION_NAMES = ("annotations.yaml", "annotations.yml")


def case_key(inputs: Mapping[str, Any], annotations: Mapping[str, Any]) -> str:
    """sha256 of a case's inputs and annotations (canonical JSON)."""
    text = json.dumps({"inputs": inputs, "annotations": annotations}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dataset_dir(suite: Suite) -> Path | None:
    """The suite's dataset directory, resolved against the suite file's directory."""
    if suite.dataset is None:
        return None
    given = Path(suite.dataset).expanduser()
    if given.is_absolute() or not suite.source:
        return given
    return Path(suite.source).resolve().parent / given


def load_cases(suite: Suite) -> list[Case]:
    """Every case of `suite` in order; `UsageError` when its dataset directory cannot be read."""
    folder = dataset_dir(suite)
    if folder is None:
        return [
            Case(
                c.id,
                _plain(c.inputs),
                _plain(c.annotations),
                case_key(c.inputs, c.annotations),
                f"{suite.source or '<suite>'}:{c.line}",
            )
            for c in suite.cases
        ]
    try:
        entries = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as exc:
        raise UsageError(
            f"cannot read the dataset directory {folder}: {exc.strerror or exc}",
            hint="dataset: is a directory relative to the suite file, one folder per case",
        ) from None
    return [read_case(entry) for entry in entries]


def read_case(folder: Path) -> Case:
    """The case in `folder`; a case with a `problem` when its files cannot be used."""
    inputs_file = next((folder / n for n in INPUT_NAMES if (folder / n).is_file()), None)
    if inputs_file is None:
        return _broken(folder, "the case folder has no input.yaml")
    inputs, problem = _mapping(inputs_file, "input")
    if problem is not None:
        return _broken(folder, problem)
    annotations: dict[str, Any] = {}
    notes = next((folder / n for n in ANNOTATION_NAMES if (folder / n).is_file()), None)
    if notes is not None:
        annotations, problem = _mapping(notes, "annotations")
        if problem is not None:
            return _broken(folder, problem)
    return Case(
        folder.name,
        inputs,
        annotations,
        case_key(inputs, annotations),
        str(folder),
        folder=str(folder),
    )


def _mapping(path: Path, what: str) -> tuple[dict[str, Any], str | None]:
    try:
        data, _ = read_yaml_limited(path)
    except YamlProblems as failed:
        first = failed.diagnostics[0]
        return {}, f"{first.location()}: {first.message}"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else type(data).__name__
        return {}, f"{path}: the {what} file must hold a mapping of keys, not {kind}"
    return data, None


def _broken(folder: Path, problem: str) -> Case:
    return Case(
        folder.name, {}, {}, case_key({"_problem": problem}, {}), str(folder), str(folder), problem
    )


def _plain(value: Mapping[str, Any]) -> dict[str, Any]:
    """A read-only mapping from the loader as a plain dict (picklable, JSON-able)."""
    return json.loads(json.dumps(dict(value), default=str)) if value else {}
