"""Normalise the three judge spellings into `Judge` (agent_eval `judges:`, Polpo `expectations:`
and `metrics:`), and find what the schema cannot say about them.

The JSON Schema checks each entry's keys and types. What it cannot express with a useful message
lives here, each problem one diagnostic at the entry's line with a "use ..." hint: a judge with
two kinds (`builtin` beside `check`, `check` beside `prompt`, ...), a judge with none, two judges
with one name, a field that belongs to another kind, and an inline `check` that does not compile.

A suite file reuses `judge_list_problems` and `build_judge_list` for its own `judges:`.
"""

from __future__ import annotations

import ast
import keyword
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from engine.load.yaml_positions import PathKey, Positions
from engine.model.errors import Diagnostic
from engine.model.judges import DEFAULT_DIMENSIONS, Judge
from engine.model.loop import EMPTY, Dimension

SPELLINGS = ("judges", "expectations", "metrics")
LLM_FIELDS = ("llm_rubric", "prompt", "prompt_file")  # priority order when several are set
# kind -> the fields that select it (agent_eval's priority order: builtin, check, LLM, module)
KIND_FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "builtin": ("builtin",),
        "check": ("check",),
        "llm": LLM_FIELDS,
        "callable": ("module", "function"),
    }
)
# Fields only one kind reads: set on another kind they would be silently ignored.
_LLM_ONLY = ("feedback_type", "samples", "min_confidence", "model", "reasoning", "max_tokens")
_ONLY: dict[str, tuple[str, ...]] = {
    **{key: ("llm",) for key in (*_LLM_ONLY, "temperature")},
    "timeout": ("builtin", "check", "callable"),
}
_KIND_WORDS = {
    "builtin": "builtin (with arguments)",
    "check": "an inline check snippet",
    "llm": "an LLM prompt (prompt, prompt_file or llm_rubric)",
    "callable": "module + function",
}
_SNIPPET_PARAMS = ("outputs", "arguments", "annotations", "inputs")


def _render(path: PathKey) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else ("." if text else "") + part
    return text


def entry_kinds(entry: Mapping[str, Any]) -> list[str]:
    """The kinds an agent_eval judge entry selects, in priority order (one is right)."""
    return [kind for kind, fields in KIND_FIELDS.items() if any(f in entry for f in fields)]


def judge_names(block: Mapping[str, Any]) -> list[str]:
    """The names of the judges of an assessment block, generated for unnamed Polpo entries
    (`test`, `test_2`, `metric`, ...) in file order: judges, expectations, metrics."""
    names: list[str] = []
    given = {  # a generated name never takes one written later in the file
        e["name"]
        for spelling in SPELLINGS
        for e in _listed(block, spelling)
        if isinstance(e, Mapping) and isinstance(e.get("name"), str)
    }
    for spelling in SPELLINGS:
        for entry in _listed(block, spelling):
            if not isinstance(entry, Mapping):
                names.append("")
                continue
            name = entry.get("name")
            if not isinstance(name, str) or not name:
                base = "metric" if spelling == "metrics" else str(entry.get("type", "judge"))
                name, n = base, 1
                while name in names or name in given:
                    n += 1
                    name = f"{base}_{n}"
            names.append(name)
    return names


def _listed(block: Mapping[str, Any], spelling: str) -> list[Any]:
    """The entries of a judge list; nothing when it is not a list (the schema says so)."""
    entries = block.get(spelling)
    return entries if isinstance(entries, list) else []


def _entries(block: Mapping[str, Any], path: PathKey) -> Iterator[tuple[str, int, Any, PathKey]]:
    for spelling in SPELLINGS:
        for index, entry in enumerate(_listed(block, spelling)):
            yield spelling, index, entry, (*path, spelling, index)


def judge_list_problems(
    block: Mapping[str, Any], path: PathKey, positions: Positions, file: str
) -> list[Diagnostic]:
    """What is wrong with the judges of `block` (the mapping holding `judges:` /
    `expectations:` / `metrics:`, at `path`) beyond its schema."""
    found: list[Diagnostic] = []
    seen: dict[str, PathKey] = {}
    names = judge_names(block)
    for (spelling, _, entry, at), name in zip(_entries(block, path), names, strict=True):
        if not isinstance(entry, Mapping):
            continue
        if name in seen:
            line = positions.of(seen[name])[0]
            found.append(
                _diag(
                    "F042",
                    f"{_render(at)}: a judge named {name!r} is already defined at line {line}",
                    "give every judge of a state its own name",
                    at,
                    positions,
                    file,
                )
            )
        seen.setdefault(name, at)
        if spelling == "judges":
            found += _kind_problems(entry, name, at, positions, file)
            found += _range_problems(entry, name, at, positions, file)
            found += _shadowing_arguments(entry, name, at, positions, file)
        elif spelling == "expectations":
            found += repeated_dimensions(entry, at, positions, file)
    return found


def repeated_dimensions(
    entry: Mapping[str, Any], at: PathKey, positions: Positions, file: str
) -> list[Diagnostic]:
    """Two review dimensions with one name: they would be one field of the scoring tool, the
    second's description never shown and its weight given the first's score."""
    dimensions = entry.get("dimensions")
    seen: dict[str, int] = {}
    found = []
    for index, dimension in enumerate(dimensions if isinstance(dimensions, list) else ()):
        name = dimension.get("name") if isinstance(dimension, Mapping) else None
        if not isinstance(name, str):
            continue
        if name in seen:
            first = positions.of((*at, "dimensions", seen[name]))[0]
            found.append(
                _diag(
                    "F018",
                    f"{_render((*at, 'dimensions', index))}: a dimension named {name!r} is "
                    f"already defined at line {first}",
                    "give every dimension of a review its own name",
                    (*at, "dimensions", index, "name"),
                    positions,
                    file,
                )
            )
        seen.setdefault(name, index)
    return found


def _shadowing_arguments(
    entry: Mapping[str, Any], name: str, at: PathKey, positions: Positions, file: str
) -> list[Diagnostic]:
    """An argument named like what the judge is given: a module function got `outputs` twice (a
    TypeError on every case), and in a snippet `inputs` (say) silently stayed the case's."""
    if "check" in entry:
        taken: tuple[str, ...] = _SNIPPET_PARAMS
        why = "in the snippet that name is what the judge is given, not this argument"
    elif "module" in entry:
        taken, why = ("outputs",), "the function is called with the record as outputs="
    else:
        return []
    return [
        _diag(
            "F044",
            f"{_render(at)} (judge {name!r}): an argument is named {key!r}: {why}",
            f"rename the argument (e.g. expected_{key})",
            (*at, "arguments", key),
            positions,
            file,
        )
        for key in _arguments(entry)
        if key in taken
    ]


def _range_problems(
    entry: Mapping[str, Any], name: str, at: PathKey, positions: Positions, file: str
) -> list[Diagnostic]:
    """A `score_range` whose minimum is not below its maximum: no value (and no model's score)
    could ever be inside it, so the judge would be an error on every run."""
    bounds = entry.get("score_range")
    if not isinstance(bounds, list) or len(bounds) != 2:
        return []
    low, high = bounds
    numbers = all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
    if not numbers or low < high:
        return []
    return [
        _diag(
            "F015",
            f"{_render(at)} (judge {name!r}): score_range [{low}, {high}] holds no value "
            "between its ends; its minimum must be below its maximum",
            f"write [min, max], e.g. [{min(low, high)}, {max(low, high)}]"
            if low != high
            else "write [min, max] with min < max, e.g. [1, 5]",
            (*at, "score_range"),
            positions,
            file,
        )
    ]


def _kind_problems(
    entry: Mapping[str, Any], name: str, at: PathKey, positions: Positions, file: str
) -> list[Diagnostic]:
    kinds = entry_kinds(entry)
    who = f"{_render(at)} (judge {name!r})"
    if not kinds:
        return [
            _diag(
                "F041",
                f"{who} has no kind: it sets none of builtin, check, prompt, prompt_file, "
                "llm_rubric, module",
                "use builtin: NAME (see `ll-loop judges`), check: <python>, prompt: <template>, "
                "or module: + function:",
                at,
                positions,
                file,
            )
        ]
    if len(kinds) > 1:
        first, second = kinds[0], kinds[1]
        field = next(f for f in KIND_FIELDS[second] if f in entry)
        mixed = next(f for f in KIND_FIELDS[first] if f in entry)
        return [
            _diag(
                "F040",
                f"{who} sets both {mixed} and {field}: a judge has exactly one kind",
                f"use {_KIND_WORDS[first]} or {_KIND_WORDS[second]}; split it into two judges "
                "to have both",
                (*at, field),
                positions,
                file,
            )
        ]
    kind = kinds[0]
    found = []
    for key, owners in _ONLY.items():
        if key in entry and kind not in owners:
            owner = " or ".join(_KIND_WORDS[o] for o in owners)
            found.append(
                _diag(
                    "F040",
                    f"{who}: {key} applies to {owner} judges, not to {_KIND_WORDS[kind]}",
                    f"remove {key}, or use {owner}",
                    (*at, key),
                    positions,
                    file,
                )
            )
    if kind == "check" and isinstance(entry.get("check"), str):
        start = snippet_line(positions, (*at, "check"))
        problem = snippet_problem(entry["check"], _arguments(entry), start, file)
        dropped = (
            None if problem else unreturned_expression(entry["check"], _arguments(entry), start)
        )
        if dropped is not None:
            expression, line = dropped
            found.append(
                Diagnostic(
                    "F043",
                    "error",
                    f"{who}: the check snippet computes {expression} and returns nothing, so "
                    "the judge could only error",
                    file,
                    _render((*at, "check")),
                    line,
                    1,
                    f'a check is a function body: write return {expression}, "why"',
                )
            )
        elif problem is not None:
            message, line = problem
            found.append(
                Diagnostic(
                    "F043",
                    "error",
                    f"{who}: the check snippet does not compile: {message}",
                    file,
                    _render((*at, "check")),
                    line,
                    1,
                    "a check is the body of a Python function of outputs and arguments that "
                    "returns (value, rationale)",
                )
            )
    return found


def _diag(
    code: str, message: str, hint: str, path: PathKey, positions: Positions, file: str
) -> Diagnostic:
    line, column = positions.of(path)
    return Diagnostic(code, "error", message, file, _render(path), line, column, hint)


def _arguments(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    arguments = entry.get("arguments")
    return arguments if isinstance(arguments, Mapping) else EMPTY


# ---------------------------------------------------------------------------------------------
# Inline check snippets: the body of a function, compiled once with file lines kept.


def snippet_line(positions: Positions, path: PathKey) -> int:
    """The file line of a snippet's first line: the value's own line, or the next one for a
    block scalar (`check: |`)."""
    line, column = positions.value_of(path)
    lines = positions.text.splitlines()
    if 0 < line <= len(lines) and lines[line - 1][column - 1 : column] in ("|", ">"):
        return line + 1
    return line


def keyword_names(arguments: Mapping[str, Any]) -> list[str]:
    """The argument names a snippet sees as local variables (identifiers, not our own four)."""
    return [
        key
        for key in arguments
        if isinstance(key, str)
        and key.isidentifier()
        and not keyword.iskeyword(key)
        and key not in _SNIPPET_PARAMS
    ]


def snippet_tree(check: str, arguments: Mapping[str, Any], first_line: int) -> ast.Module:
    """`def __check__(outputs, arguments, annotations, inputs, *, <argument names>):` around
    the snippet, its line numbers moved so that the snippet's lines are the file's lines."""
    params = ", ".join(_SNIPPET_PARAMS)
    names = keyword_names(arguments)
    if names:
        params += ", *, " + ", ".join(f"{n}=None" for n in names)
    body = textwrap.indent(textwrap.dedent(check), "    ", lambda _line: True)
    tree = ast.parse(f"def __check__({params}):\n{body}\n")
    return ast.increment_lineno(tree, max(0, first_line - 2))


def unreturned_expression(
    check: str, arguments: Mapping[str, Any], first_line: int
) -> tuple[str, int] | None:
    """The last line of a snippet (one that compiles) that computes a value and drops it, when
    the snippet has no `return` of its own: written like an `if:` expression, the check returns
    None, which no judge accepts; with its file line. None when it returns, or ends otherwise
    (a call, a raise)."""
    function = snippet_tree(check, arguments, first_line).body[0]
    if not isinstance(function, ast.FunctionDef):
        return None
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            return None
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))
    last = function.body[-1]
    if isinstance(last, ast.Expr) and not isinstance(last.value, ast.Call | ast.Await):
        return ast.unparse(last.value), last.lineno
    return None


def snippet_problem(
    check: str, arguments: Mapping[str, Any], first_line: int, file: str
) -> tuple[str, int] | None:
    """Why the snippet does not compile, and at which file line; None when it does."""
    try:
        tree = snippet_tree(check, arguments, first_line)
    except SyntaxError as exc:  # raised by the parse, before the lines were moved
        line = (exc.lineno or 2) + max(0, first_line - 2)
        return f"{exc.msg} (line {line})", line
    try:
        compile(tree, file or "<check>", "exec")
    except SyntaxError as exc:
        line = exc.lineno or first_line
        return f"{exc.msg} (line {line})", line
    return None


# ---------------------------------------------------------------------------------------------
# Building the model: the block already passed the schema and `judge_list_problems`.


def build_judge_list(
    block: Mapping[str, Any], path: PathKey, positions: Positions, file: str
) -> tuple[Judge, ...]:
    """Every judge of `block`, normalised, in file order (judges, expectations, metrics)."""
    base_dir = str(Path(file).resolve().parent) if file and file != "<string>" else ""
    judges = []
    for (spelling, _, entry, at), name in zip(
        _entries(block, path), judge_names(block), strict=True
    ):
        line = positions.of(at)[0]
        common: dict[str, Any] = {
            "name": name,
            "file": "" if file == "<string>" else file,
            "line": line,
            "description": entry.get("description", ""),
            "condition": entry.get("if"),
            "base_dir": base_dir,
        }
        if spelling == "judges":
            judges.append(_agent_eval(entry, common, positions, at))
        elif spelling == "expectations":
            judges.append(_expectation(entry, common))
        else:
            judges.append(_metric(entry, common))
    return tuple(judges)


def _agent_eval(
    entry: Mapping[str, Any], common: dict[str, Any], positions: Positions, at: PathKey
) -> Judge:
    kind = entry_kinds(entry)[0]
    score_range = entry.get("score_range")
    fields: dict[str, Any] = {
        **common,
        "kind": kind,
        "arguments": _frozen(entry.get("arguments")),
        "feedback": entry.get("feedback_type", "score"),
        "score_range": (float(score_range[0]), float(score_range[1])) if score_range else None,
        "threshold": _float(entry.get("threshold")),
        "samples": int(entry["samples"]) if entry.get("samples") is not None else None,
        "min_confidence": float(entry.get("min_confidence", 0.5)),
        "model": entry.get("model"),
        "reasoning": entry.get("reasoning"),
        "max_tokens": entry.get("max_tokens"),
        "temperature": _float(entry.get("temperature")),
        "timeout": _float(entry.get("timeout")),
    }
    if kind == "builtin":
        fields["builtin"] = entry["builtin"]
    elif kind == "check":
        fields["check"] = entry["check"]
        fields["check_line"] = snippet_line(positions, (*at, "check"))
    elif kind == "llm":
        chosen = next(f for f in LLM_FIELDS if f in entry)
        fields[chosen] = entry[chosen]
    else:
        fields["module"], fields["function"] = entry["module"], entry["function"]
    return Judge(**fields)


def _expectation(entry: Mapping[str, Any], common: dict[str, Any]) -> Judge:
    kind = entry["type"]
    if kind in ("test", "script"):
        arguments = {"command": entry["command"]}
        return Judge(
            **common,
            kind="builtin",
            spelling="expectations",
            builtin=kind,
            arguments=MappingProxyType(arguments),
            timeout=_float(entry.get("timeout")),
        )
    if kind == "file_exists":
        return Judge(
            **common,
            kind="builtin",
            spelling="expectations",
            builtin="file_exists",
            arguments=MappingProxyType({"paths": list(entry["paths"])}),
        )
    return Judge(
        **common,
        kind="review",
        spelling="expectations",
        criteria=entry.get("criteria"),
        dimensions=build_dimensions(entry.get("dimensions")),
        generate_dimensions=bool(entry.get("generate_dimensions", False)),
        threshold=float(entry.get("threshold", 3.0)),
        reviewers=int(entry.get("reviewers", 3)),
        explore=entry.get("explore"),
        model=entry.get("model"),
        reasoning=entry.get("reasoning"),
        max_tokens=entry.get("max_tokens"),
        temperature=_float(entry.get("temperature")),
    )


def _metric(entry: Mapping[str, Any], common: dict[str, Any]) -> Judge:
    return Judge(
        **common,
        kind="builtin",
        spelling="metrics",
        builtin="metric",
        arguments=MappingProxyType(
            {"command": entry["command"], "threshold": float(entry["threshold"])}
        ),
        threshold=float(entry["threshold"]),
        score_range=None,
        timeout=_float(entry.get("timeout")),
    )


def build_dimensions(body: Sequence[Mapping[str, Any]] | None) -> tuple[Dimension, ...]:
    """Dimensions as written (an empty tuple when none are given)."""
    return tuple(
        Dimension(
            d["name"],
            d.get("description", ""),
            float(d["weight"]),
            _frozen({str(k): str(v) for k, v in (d.get("rubric") or {}).items()}),
        )
        for d in body or ()
    )


def default_dimensions() -> tuple[Dimension, ...]:
    return DEFAULT_DIMENSIONS


def _float(value: Any) -> float | None:
    return float(value) if value is not None else None


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value)) if value else EMPTY
