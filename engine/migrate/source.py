"""Reading little-loops files the way little-loops reads them.

Its files are read with PyYAML's YAML 1.1 rules (`yes` is a boolean there), so they are here
too; names in `loop:`, `from:` and `import:` are looked up next to the file, then in the
directories of the files given on the command line (little-loops' built-in directory plays
that part for its own loops). `from:` inheritance and `flow:` shorthand are resolved exactly as
little-loops resolves them, before anything is converted.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from engine.load.yaml_positions import YamlProblems, parse_yaml, read_text
from engine.model.errors import LoopError

_SUFFIXES = (".yaml", ".yml")


class SourceError(LoopError):
    """An input that cannot be read as a little-loops file."""

    code = "MIGRATE"


def read_yaml(path: Path) -> Any:
    """The YAML document at `path`, read with YAML 1.1 rules as little-loops reads it; a file
    that is not a YAML document is a `SourceError` saying where and what to do, in the words
    `ll-loop validate` uses (the engine's reader decodes and parses both)."""
    try:
        text = read_text(path, str(path))
        return parse_yaml(text, str(path), yaml11=True)[0]
    except YamlProblems as exc:  # alias bombs, tags, nesting refused; binary, not UTF-8, empty
        first = exc.diagnostics[0]
        if first.code == "F003":
            raise SourceError(placed(path, 1, 1, "the file is empty", _LOOP_SHAPE)) from None
        message, hint = first.message, first.hint
        raise SourceError(placed(path, first.line, first.column, message, hint)) from None


_LOOP_SHAPE = "a little-loops loop is a mapping with name:, initial: and states: (or flow:)"


def placed(path: Path, line: int, column: int, message: str, hint: str = "") -> str:
    """`file:line:column: message; hint`, the way the report states a problem with a file."""
    return f"{path}:{line}:{column}: {message}" + (f"; {hint}" if hint else "")


def place_of(path: Path, *candidates: Sequence[str]) -> tuple[int, int]:
    """Line and column of the first of the keys (each a path of keys) written in the file: a
    value merged in from a `from:` parent is not there, so its `from:` is the next best place
    (1, 1 when none is)."""
    try:
        _, positions = parse_yaml(read_text(path, str(path)), str(path), yaml11=True)
    except (OSError, YamlProblems):
        return 1, 1
    for keys in candidates:
        if tuple(keys) in positions.keys:
            line, column = positions.keys[tuple(keys)]
            return line, column
    return 1, 1


_SEARCH_HINT = "give the directory that holds it with --search DIR, or give its file to migrate"


def not_found(path: Path, keys: Sequence[str], what: str) -> str:
    """`file:line:col: <what> not found ...; hint` for a name `path` uses at `keys`."""
    line, column = place_of(path, keys, ["from"])
    return placed(
        path, line, column, f"{what} not found next to the loop or under the directories given",
        _SEARCH_HINT,
    )  # fmt: skip


def not_a_loop(path: Path, data: dict[str, Any]) -> str:
    """Why a mapping is no little-loops loop: the keys it lacks."""
    lacking = [k for k in ("name", "initial") if k not in data]
    if not isinstance(data.get("states"), dict):
        lacking.append("states: (or flow:)" if "states" not in data else "states: as a mapping")
    missing = ", ".join(k if k.startswith("states") else f"{k}:" for k in lacking)
    return placed(path, 1, 1, f"not a little-loops loop: it has no {missing}", _LOOP_SHAPE)


def not_a_mapping(path: Path, data: Any) -> str:
    """Why a document whose top level is a list or a scalar is not a loop."""
    kind = "a list" if isinstance(data, list) else f"a single value ({type(data).__name__})"
    return placed(
        path, 1, 1, f"its top level is {kind}, not a mapping, so it is not a loop", _LOOP_SHAPE
    )


def header_comments(path: Path) -> str:
    """The comment block at the top of a file, kept in the converted file."""
    lines: list[str] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    for line in text.splitlines():
        if line.startswith("#") or (not line.strip() and lines):
            lines.append(line)
            continue
        break
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def find(ref: str, near: Path, roots: Sequence[Path], *, loop: bool) -> Path | None:
    """The file `ref` names: next to `near` (a directory), then under each root.

    A loop reference may leave out the `.yaml` suffix; an import names the file itself.
    """
    candidates = [ref] if not loop or ref.endswith(_SUFFIXES) else [f"{ref}{s}" for s in _SUFFIXES]
    try:
        for folder in _unique([near, *roots]):
            for name in candidates:
                path = folder / name
                if path.is_file():
                    return path.resolve()
        given = Path(ref)
        if given.is_absolute() and given.is_file():
            return given.resolve()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return None
    return None


def mapping(value: Any) -> dict[str, Any]:
    """`value` when it is a mapping, else an empty one (little-loops files are loosely typed)."""
    return value if isinstance(value, dict) else {}


def listing(value: Any) -> list[Any]:
    """`value` when it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """little-loops' merge: mappings merge recursively, anything else is replaced."""
    result = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(result.get(key), dict) and isinstance(value, dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def resolve_inheritance(
    data: dict[str, Any], source: Path, roots: Sequence[Path], seen: tuple[str, ...] = ()
) -> tuple[dict[str, Any], list[Path]]:
    """`from: PARENT` merged in (the child wins); also the parent files that were used.
    `source` is the file `data` was read from."""
    here = source.parent
    parent_ref = data.get("from")
    if parent_ref is None:
        return data, []
    if not isinstance(parent_ref, str):
        raise SourceError(f"from: must name a loop, got {type(parent_ref).__name__}")
    if parent_ref in seen:
        raise SourceError("circular from: chain " + " -> ".join((*seen, parent_ref)))
    path = find(parent_ref, here, roots, loop=True)
    if path is None:
        raise SourceError(not_found(source, ["from"], f"from: {parent_ref!r}"))
    parent = read_yaml(path)
    if not isinstance(parent, dict):
        raise SourceError(f"from: {parent_ref!r} is not a loop (its top level is not a mapping)")
    parent, used = resolve_inheritance(parent, path, roots, (*seen, parent_ref))
    child = {k: v for k, v in data.items() if k != "from"}
    merged = deep_merge(parent, child)
    merged.pop("from", None)
    return merged, [path, *used]


def resolve_flow(data: dict[str, Any]) -> dict[str, Any]:
    """`flow: [a, b?yes:no, c]` (+ `state_defs`) expanded into `states:` as little-loops does:
    a bare entry goes `next:` to the following one, `name?y:n` routes on_yes/on_no, the last
    entry is terminal."""
    flow = data.get("flow")
    if flow is None:
        return data
    if not isinstance(flow, list) or not flow:
        raise SourceError("flow: must be a non-empty list of state names")
    defs = mapping(data.get("state_defs"))
    names = [str(entry).split("?", 1)[0] for entry in flow]
    states: dict[str, Any] = {}
    for index, entry in enumerate(flow):
        if not isinstance(entry, str):
            raise SourceError(f"flow: entry {index} must be a string")
        name = names[index]
        skeleton: dict[str, Any] = {}
        if "?" in entry:
            targets = entry.split("?", 1)[1]
            yes, _, no = targets.partition(":")
            if not yes or not no:
                raise SourceError(f"flow: entry {entry!r} must read name?yes_target:no_target")
            skeleton = {"on_yes": yes, "on_no": no}
        elif index + 1 < len(flow):
            skeleton["next"] = names[index + 1]
        if index == len(flow) - 1:
            skeleton["terminal"] = True
        if isinstance(defs.get(name), dict):
            skeleton = deep_merge(skeleton, defs[name])
        states[name] = skeleton
    result = {k: v for k, v in data.items() if k not in ("flow", "state_defs")}
    result["states"] = states
    return result


def _unique(paths: Iterable[Path]) -> list[Path]:
    seen: set[Path] = set()
    out = []
    for path in paths:
        if path not in seen:
            seen.add(path)
            out.append(path)
    return out


# What only an ll-loop loop says: little-loops has none of these keys, no `run` root and no
# Jinja filters in `${...}`.
_OUR_TOP_KEYS = ("outputs", "lint", "max_cost_usd")
_OUR_STATE_KEYS = ("runner", "on_terminal", "lint")
_OUR_EXPRESSION = re.compile(r"(?<!\$)\$\{\s*(run\s*\.|[^{}]*?[^|{}]\|[^|{}])")


def ll_loop_marker(data: dict[str, Any]) -> str:
    """A key or expression only ll-loop has, named for the report ("" when there is none)."""
    for key in _OUR_TOP_KEYS:
        if key in data:
            return f"{key}:"
    if "runner" in mapping(data.get("llm")):
        return "llm.runner:"
    for body in mapping(data.get("states")).values():
        for key in _OUR_STATE_KEYS:
            if isinstance(body, dict) and key in body:
                return f"{key}:"
        evaluate = mapping(body.get("evaluate")) if isinstance(body, dict) else {}
        if "verdicts" in evaluate:
            return "evaluate.verdicts:"
    if _OUR_EXPRESSION.search(json.dumps(data, default=str)):
        return "${run.*} or ${... | filter}"
    return ""


def locate(expression: str, state: str, sources: Sequence[Path]) -> list[str]:
    """`file:line` of each place `expression` is written: inside `state`'s block of the first
    file when it is there, else anywhere in the files (a from: parent, a library)."""
    hits: list[tuple[Path, int]] = []
    for path in sources:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        hits += [(path, n) for n, line in enumerate(lines, 1) if expression in line]
    if hits and state:
        block = _state_lines(sources[0], state)
        inside = [(p, n) for p, n in hits if p == sources[0] and n in block]
        hits = inside or hits
    return [f"{path}:{line}" for path, line in hits]


def _state_lines(path: Path, state: str) -> range:
    """The lines of `state`'s block in the file (empty when it is not written there)."""
    try:
        _, positions = parse_yaml(path.read_text(encoding="utf-8"), str(path), yaml11=True)
    except (OSError, UnicodeDecodeError, YamlProblems):
        return range(0)
    starts = sorted(line for key, (line, _) in positions.keys.items() if _is_state_key(key))
    start = positions.keys.get(("states", state))
    if start is None:
        return range(0)
    following = [line for line in starts if line > start[0]]
    return range(start[0], following[0] if following else 1 << 30)


def _is_state_key(key: tuple[str | int, ...]) -> bool:
    return len(key) == 2 and key[0] == "states"
