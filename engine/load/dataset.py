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
import os
from collections.abc import Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from engine.load.bounded import read_limited
from engine.load.yaml_positions import YamlProblems, parse_yaml
from engine.model.errors import UsageError
from engine.model.suite import Case, Suite

INPUT_NAMES = ("input.yaml", "input.yml")
EMPTY_FILE = "F003"
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


def load_cases(
    suite: Suite, skip: frozenset[str] = frozenset(), only: str | None = None
) -> list[Case]:
    """Every case of `suite` in order, read but for the ids in `skip` and, with `only` (a
    `--cases` glob), those it does not match (left as listed: a resumed run's finished cases,
    the cases not chosen); `UsageError` when its dataset cannot be listed."""
    return [
        c
        if c.loaded or c.id in skip or (only is not None and not fnmatchcase(c.id, only))
        else read_case(str(c.folder))
        for c in list_cases(suite)
    ]


def list_cases(suite: Suite) -> list[Case]:
    """Every case of `suite` in order: inline cases whole, dataset folders only listed (their
    files are read by `read_case`, where the case runs)."""
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
        with os.scandir(folder) as found:
            names = sorted(e.name for e in found if e.is_dir() and not e.name.startswith("."))
    except OSError as exc:
        raise UsageError(
            f"{_where(suite)}cannot read the dataset directory {folder}: {exc.strerror or exc}",
            hint="dataset: is a directory relative to the suite file, one folder per case",
        ) from None
    for name in names:
        if not name.isprintable():  # it would forge lines or escapes in reports and progress
            raise UsageError(
                f"{_where(suite)}the dataset folder {name!r} has control characters in its "
                "name (case ids are printed as they are)",
                hint="rename the folder: its name is the case id",
            )
    base = str(folder)  # joined as text: a Path per case cost more than reading it
    return [
        Case(name, {}, {}, "", path, path, loaded=False)
        for name in names
        for path in (os.path.join(base, name),)
    ]


def _where(suite: Suite) -> str:
    """`suite.yaml:LINE: ` of `dataset:`, when known."""
    if not suite.source:
        return ""
    return f"{suite.source}:{suite.dataset_line}: " if suite.dataset_line else f"{suite.source}: "


def read_case(folder: str | Path) -> Case:
    """The case in `folder`; a case with a `problem` when its files cannot be used."""
    where = str(folder)
    try:
        names = sorted(os.listdir(where))
    except OSError as exc:
        return _broken(where, f"cannot read the case folder: {exc.strerror or exc}")
    inputs_name = next((n for n in INPUT_NAMES if n in names), None)
    if inputs_name is None:
        return _broken(where, "the case folder has no input.yaml")
    inputs, text, problem = _mapping(os.path.join(where, inputs_name), "input")
    if problem is not None:
        return _broken(where, problem)
    annotations: dict[str, Any] = {}
    notes = next((n for n in ANNOTATION_NAMES if n in names), None)
    if notes is not None:
        annotations, _, problem = _mapping(os.path.join(where, notes), "annotations")
        if problem is not None:
            return _broken(where, problem)
    return Case(
        os.path.basename(where),
        inputs,
        annotations,
        case_key(inputs, annotations),
        where,
        folder=where,
        files=tuple(n for n in names if n not in ANNOTATION_NAMES and n != inputs_name),
        input_text=text,
    )


def _mapping(path: str, what: str) -> tuple[dict[str, Any], str, str | None]:
    """(the mapping, the text read, why it cannot be used)."""
    try:
        text = read_limited(path, path)
        data, _ = parse_yaml(text, path)
    except YamlProblems as failed:
        first = failed.diagnostics[0]
        if first.code == EMPTY_FILE:  # no document at all: as a `null` one, no keys
            return {}, "", None
        return {}, "", f"{first.location()}: {first.message}"
    if data is None:
        return {}, text, None
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else type(data).__name__
        return {}, text, f"{path}: the {what} file must hold a mapping of keys, not {kind}"
    return data, text, None


def _broken(folder: str, problem: str) -> Case:
    return Case(
        os.path.basename(folder),
        {},
        {},
        case_key({"_problem": problem}, {}),
        folder,
        folder,
        problem,
    )


def _plain(value: Mapping[str, Any]) -> dict[str, Any]:
    """A read-only mapping from the loader as a plain dict (picklable, JSON-able)."""
    return json.loads(json.dumps(dict(value), default=str)) if value else {}
