"""Fragments: partial states shared across loop files, merged into states at load.

A loop names fragment libraries in `import:` (paths relative to the loop file) and may define
its own in `fragments:`; a state that says `fragment: NAME` gets that fragment deep-merged under
its own keys (the state wins at every level; lists and scalars are replaced, mappings merged).
A fragment may declare `parameters:`; the state binds them with `with:`, and every
`${param.NAME}` in the merged state is replaced by the bound text (or the declared default)
before anything else looks at the loop — a binding is written in as if typed there, so bind
`${context.x}` to pass a value that the run quotes for its position.

Everything downstream (schema check, model, lint, run) sees ordinary states. Nodes that came
from a fragment keep a note of where they were written (`Positions.origins`), so a diagnostic
about them names both the state that uses the fragment and the fragment's own line.

Library files are YAML with `fragments:` (and an optional `description:`), looked up next to
the loop file first, then among the built-in loops. See docs/format.md, "Fragments".
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.load.project import regular_file_bytes
from engine.load.resources import builtin_loops_dir
from engine.load.yaml_positions import (
    MAX_YAML_BYTES,
    PathKey,
    Position,
    Positions,
    YamlProblems,
    decode,
    parse_yaml,
    unreadable_hint,
)
from engine.model.errors import Diagnostic

__all__ = [
    "Fragment",
    "bind_parameters",
    "check_library_file",
    "expand_fragments",
    "looks_like_library",
    "merge",
    "uses_fragments",
]

_LIBRARY_KEYS = ("fragments", "description")
_META_KEYS = ("description", "parameters")
_PARAM = re.compile(r"(?<!\$)\$\{\s*param\s*\.\s*([A-Za-z_]\w*)\s*([^}]*)\}")
_PURE = re.compile(r"\$\{\s*([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\}")


@dataclass(frozen=True)
class Fragment:
    """One named fragment and where it was written."""

    name: str
    body: Mapping[str, Any]
    file: str
    positions: Positions
    at: PathKey  # its path inside `file`: ("fragments", name)

    def line_of(self, sub: PathKey) -> Position:
        return self.positions.of((*self.at, *sub))

    def where(self, sub: PathKey = ()) -> str:
        line, _ = self.line_of(sub)
        return f"fragment {self.name!r} at {self.file}:{line}"

    @property
    def parameters(self) -> Mapping[str, Any]:
        declared = self.body.get("parameters")
        return declared if isinstance(declared, dict) else {}


@dataclass
class _Expansion:
    """The working state of one loop's expansion."""

    file: str
    positions: Positions
    problems: list[Diagnostic] = field(default_factory=list)
    keys: dict[PathKey, Position] = field(default_factory=dict)
    origins: dict[PathKey, str] = field(default_factory=dict)

    def problem(self, code: str, message: str, path: PathKey, hint: str, *, value: bool) -> None:
        line, column = self.positions.value_of(path) if value else self.positions.of(path)
        where = ".".join(str(p) for p in path)
        self.problems.append(
            Diagnostic(code, "error", message, self.file, where, line, column, hint)
        )


def uses_fragments(data: Mapping[str, Any]) -> bool:
    """True when the loop imports or defines fragments, or a state names one."""
    if "import" in data or "fragments" in data:
        return True
    states = data.get("states")
    return isinstance(states, dict) and any(
        isinstance(body, dict) and "fragment" in body for body in states.values()
    )


def expand_fragments(
    data: dict[str, Any], positions: Positions, file: str
) -> tuple[dict[str, Any], Positions, list[Diagnostic]]:
    """The loop with every `fragment:` merged in, positions that know each node's origin, and
    the problems found (unreadable library, unknown fragment, bad bindings)."""
    if not uses_fragments(data):
        return data, positions, []
    job = _Expansion(file, positions)
    known = _imported(data, job)
    for name, body in _local(data):
        known[name] = Fragment(name, body, file or "<string>", positions, ("fragments", name))
    states = data.get("states")
    if not isinstance(states, dict):
        return data, positions, job.problems
    expanded = dict(data)
    expanded["states"] = {
        name: _expand_state(name, body, known, job) if _names_fragment(body) else body
        for name, body in states.items()
    }
    merged_positions = Positions(
        {**job.keys, **positions.keys}, positions.values, positions.text, job.origins
    )
    return expanded, merged_positions, job.problems


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` deep-merged over `base`: mappings merge key by key, anything else is replaced."""
    result = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(result.get(key), dict) and isinstance(value, dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def bind_parameters(value: Any, bindings: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """`value` with each `${param.NAME}` of a bound NAME written in; the uses that cannot be
    (a literal binding under a filter or a suffix) are returned as problems."""
    problems: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name, tail = match.group(1), match.group(2).strip()
        if name not in bindings:
            return match.group(0)
        bound = bindings[name]
        if not tail:
            return _as_text(bound)
        pure = _PURE.fullmatch(bound.strip()) if isinstance(bound, str) else None
        if pure is None:
            problems.append(
                f"${{param.{name} {tail}}} applies {tail!r} to a binding that is not one "
                "${...} path"
            )
            return match.group(0)
        joiner = " " if tail.startswith("|") else ""
        return "${" + re.sub(r"\s+", "", pure.group(1)) + joiner + tail + "}"

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return _PARAM.sub(replace, node) if "${" in node else node
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(value), problems


# --- libraries ---------------------------------------------------------------------------------


def _imported(data: Mapping[str, Any], job: _Expansion) -> dict[str, Fragment]:
    found: dict[str, Fragment] = {}
    imports = data.get("import")
    if not isinstance(imports, list):
        return found  # the schema reports a wrong shape
    for index, entry in enumerate(imports):
        if isinstance(entry, str) and entry.strip():
            found.update(_library(entry, ("import", index), job))
    return found


def looks_like_library(text: str) -> bool:
    """A YAML text that is a fragment library rather than a loop: a top-level `fragments:` key
    and none of `name:`, `initial:`, `states:` (so `ll-loop validate DIR` can tell them apart)."""
    lines = text.splitlines()
    return any(line.startswith("fragments:") for line in lines) and not any(
        line.startswith(("name:", "initial:", "states:")) for line in lines
    )


def check_library_file(path: Path) -> list[Diagnostic]:
    """The problems of a fragment library file on its own: YAML, keys, fragment shapes."""
    shown = str(path)
    job = _Expansion(shown, Positions({}, {}, ""))
    try:
        data, positions = parse_yaml(decode(regular_file_bytes(path, MAX_YAML_BYTES), shown), shown)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        job.problem(
            "F030",
            f"cannot read fragment library {shown!r}: {reason}",
            (),
            unreadable_hint(exc),
            value=True,
        )
        return job.problems
    except YamlProblems as failed:
        return failed.diagnostics
    job.positions = positions
    _fragments_of(data, positions, shown, shown, (), job)
    return sorted(job.problems, key=lambda d: (d.line, d.column))


def _library(entry: str, at: PathKey, job: _Expansion) -> dict[str, Fragment]:
    path = _resolve(entry, job.file)
    if path is None:
        job.problem(
            "F030",
            f"fragment library {entry!r} not found next to the loop or among the built-ins",
            at,
            "import: paths are relative to the loop file, e.g. lib/common.yaml",
            value=True,
        )
        return {}
    shown = _display(path)
    try:
        text = decode(regular_file_bytes(path, MAX_YAML_BYTES), shown)
        data, positions = parse_yaml(text, shown)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        job.problem(
            "F030",
            f"cannot read fragment library {entry!r}: {reason}",
            at,
            unreadable_hint(exc),
            value=True,
        )
        return {}
    except YamlProblems as failed:
        job.problems.extend(failed.diagnostics)
        job.problem("F030", f"fragment library {entry!r} is not valid YAML", at, "", value=True)
        return {}
    return _fragments_of(data, positions, shown, entry, at, job)


def _fragments_of(
    data: Any, positions: Positions, shown: str, entry: str, at: PathKey, job: _Expansion
) -> dict[str, Fragment]:
    body = data.get("fragments") if isinstance(data, dict) else None
    if not isinstance(body, dict):
        job.problem(
            "F030",
            f"fragment library {entry!r} has no `fragments:` mapping",
            at,
            "a library is a YAML file with fragments: NAME: {partial state}",
            value=True,
        )
        return {}
    for key in data:
        if key not in _LIBRARY_KEYS:
            line, column = positions.of((key,))
            job.problems.append(
                Diagnostic(
                    "F030",
                    "error",
                    f"unknown key {key!r} in fragment library {entry!r}",
                    shown,
                    str(key),
                    line,
                    column,
                    "a library holds fragments: (and an optional description:)",
                )
            )
    found: dict[str, Fragment] = {}
    for name, fragment in body.items():
        if not isinstance(fragment, dict):
            line, column = positions.of(("fragments", name))
            job.problems.append(
                Diagnostic(
                    "F030",
                    "error",
                    f"fragment {name!r} in {entry!r} must be a mapping of state keys",
                    shown,
                    f"fragments.{name}",
                    line,
                    column,
                    "write the keys the fragment contributes, e.g. evaluate: {type: exit_code}",
                )
            )
            continue
        found[str(name)] = Fragment(str(name), fragment, shown, positions, ("fragments", name))
    return found


def _resolve(entry: str, loop_file: str) -> Path | None:
    """The library file: relative to the loop's directory, then the built-in loops (None for
    anything that is not a readable path: too long, an unknown `~user`, ...)."""
    try:
        given = Path(entry).expanduser()
        if given.is_absolute():
            return given if given.is_file() else None
        here = Path(loop_file).resolve().parent if loop_file and loop_file != "<string>" else Path()
        for folder in (here, builtin_loops_dir()):
            candidate = folder / given
            if candidate.is_file():
                return candidate
    except (OSError, RuntimeError, ValueError):
        return None
    return None


def _display(path: Path) -> str:
    """The library's path as a person would type it: relative to here when it is below."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _local(data: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    local = data.get("fragments")
    if isinstance(local, dict):
        for name, body in local.items():
            if isinstance(body, dict):
                yield str(name), body


# --- states ------------------------------------------------------------------------------------


def _names_fragment(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("fragment"), str)


def _expand_state(
    name: str, body: dict[str, Any], known: Mapping[str, Fragment], job: _Expansion
) -> dict[str, Any]:
    use: PathKey = ("states", name, "fragment")
    wanted = body["fragment"]
    fragment = known.get(wanted)
    own = {k: v for k, v in body.items() if k != "fragment"}
    if fragment is None:
        available = ", ".join(sorted(known)) or "none (add import: or fragments:)"
        job.problem(
            "F031",
            f"state {name!r} uses fragment {wanted!r}, which no imported library defines",
            use,
            f"fragments available: {available}",
            value=True,
        )
        return own
    if "fragment" in fragment.body:
        job.problem(
            "F031",
            f"{fragment.where(('fragment',))} itself names a fragment; fragments do not nest",
            use,
            "merge the two fragments into one",
            value=True,
        )
    base = {k: v for k, v in fragment.body.items() if k not in _META_KEYS and k != "fragment"}
    bindings = _bindings(name, own, fragment, base, job)
    merged = merge(base, own)
    if bindings is not None:
        merged.pop("with", None)
        merged, problems = bind_parameters(merged, bindings)
        for problem in problems:
            job.problem(
                "F032",
                f"state {name!r}: {problem} ({fragment.where()})",
                ("states", name, "with"),
                "bind the parameter to one ${...} path, or drop the filter in the fragment",
                value=False,
            )
    _note_origins(("states", name), base, own, fragment, (), job)
    return merged


def _bindings(
    name: str,
    own: Mapping[str, Any],
    fragment: Fragment,
    base: Mapping[str, Any],
    job: _Expansion,
) -> dict[str, Any] | None:
    """The values for `${param.*}`: the state's `with:` over the declared defaults.

    None when `with:` belongs to a sub-loop instead: the fragment declares no parameters and
    the merged state runs a `loop:`.
    """
    declared = fragment.parameters
    given = own.get("with")
    if not declared and ("loop" in own or "loop" in base):
        return None
    given = given if isinstance(given, dict) else {}
    at: PathKey = ("states", name, "with")
    if declared:
        for key in given:
            if key not in declared:
                names = ", ".join(sorted(declared))
                job.problem(
                    "F032",
                    f"state {name!r} binds {key!r}, which {fragment.where(('parameters',))} "
                    "does not declare",
                    (*at, key),
                    f"its parameters: {names}",
                    value=False,
                )
    bindings: dict[str, Any] = {}
    for key, spec in declared.items():
        spec = spec if isinstance(spec, dict) else {}
        if key in given:
            bindings[key] = given[key]
            allowed = spec.get("enum")
            if isinstance(allowed, list) and given[key] not in allowed and not _dynamic(given[key]):
                job.problem(
                    "F032",
                    f"state {name!r} binds {key}={json.dumps(given[key])}, not one of "
                    f"{json.dumps(allowed)} ({fragment.where(('parameters', key))})",
                    (*at, key),
                    "bind one of the declared values",
                    value=True,
                )
        elif "default" in spec:
            bindings[key] = spec["default"]
        elif spec.get("required"):
            job.problem(
                "F032",
                f"state {name!r} does not bind {key!r}, which "
                f"{fragment.where(('parameters', key))} requires",
                ("states", name, "fragment"),
                f"add with: {{{key}: ...}} to the state",
                value=False,
            )
    for key, value in given.items():
        bindings.setdefault(key, value)
    return bindings


def _note_origins(
    at: PathKey,
    base: Mapping[str, Any],
    own: Mapping[str, Any],
    fragment: Fragment,
    sub: PathKey,
    job: _Expansion,
) -> None:
    """Remember, for every node the fragment contributed, the fragment line it came from; a
    node the state does not write itself is placed at the state's `fragment:` key."""
    use = job.positions.of((*at[:2], "fragment"))
    for key, value in base.items():
        path = (*at, key)
        job.origins[path] = fragment.where((*sub, key))
        if key not in own:
            job.keys[path] = use
            for nested in _paths(value, path):
                job.keys[nested] = use
                job.origins[nested] = fragment.where((*sub, *nested[len(at) :]))
        elif isinstance(value, dict) and isinstance(own[key], dict):
            _note_origins(path, value, own[key], fragment, (*sub, key), job)


def _paths(value: Any, at: PathKey) -> Iterator[PathKey]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*at, key)
            yield from _paths(inner, (*at, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield (*at, index)
            yield from _paths(inner, (*at, index))


def _dynamic(value: Any) -> bool:
    return isinstance(value, str) and "${" in value


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)
