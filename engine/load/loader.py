"""Load a loop file: YAML text → positions → schema check → frozen `Loop`.

This is the gate every loop passes through. Whatever the input — a syntax error, an empty file,
binary junk, a list at the top, unknown keys — the result is a `LoadError` carrying every
diagnostic (code, file, line, column, one sentence, a hint), never another exception.

Semantic graph checks (unknown targets, unreachable states, unrouted verdicts) belong to lint,
which works on the `Loop` and `Positions` this module returns.

The import chain stays light on purpose (yaml + stdlib): `ll-loop validate` has 0.2 s in total.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from engine.load.fragments import expand_fragments
from engine.load.gcpause import collector_paused
from engine.load.judges import (
    build_dimensions,
    build_judge_list,
    judge_list_problems,
    repeated_dimensions,
)
from engine.load.schema_check import violations
from engine.load.suggest import describe, explain
from engine.load.yaml_positions import PathKey, Positions, YamlProblems, parse_yaml, read_text
from engine.model.errors import Diagnostic, LoadError
from engine.model.judges import DEFAULT_DIMENSIONS
from engine.model.loop import (
    EMPTY,
    Evaluate,
    LlmConfig,
    Loop,
    Parameter,
    State,
    Suppression,
)
from engine.model.patterns import PatternSyntaxError, check_pattern

__all__ = [
    "DEFAULT_JUDGE_PROMPT",
    "Positions",
    "check_loop_file",
    "check_loop_text",
    "load_loop_file",
    "load_loop_text",
    "load_loop_with_positions",
]

# The judge prompt of a prompt state that routes on verdicts without an explicit `evaluate:`.
DEFAULT_JUDGE_PROMPT = (
    "You are judging whether the task described in the instructions above was accomplished, "
    "using only the output shown. Answer yes only if the output clearly shows the task was "
    "completed as asked; answer no if it was not, or was only partly done (partial), and "
    "cannot_judge if the output does not let you decide. Provide a VERBATIM quote from the "
    "output as evidence that supports your verdict; do not assert a verdict without evidence."
)

_ROUTE_KEY = re.compile(r"^on_[a-z][a-z0-9_]*$")
_NOT_ROUTES = frozenset({"on_terminal", "on_retry_exhausted"})


def load_loop_file(path: str | Path) -> Loop:
    """Load and validate the loop at `path`; raise `LoadError` with every problem found."""
    loop, _ = load_loop_with_positions(Path(path))
    return loop


def load_loop_text(text: str, file: str = "<string>") -> Loop:
    """Load and validate loop YAML given as text; `file` names it in diagnostics."""
    loop, _ = load_loop_with_positions(text=text, file=file)
    return loop


def load_loop_with_positions(
    path: Path | None = None, *, text: str | None = None, file: str = "<string>"
) -> tuple[Loop, Positions]:
    """The loop and where each of its nodes sits in the file (for lint and editors)."""
    if path is not None:
        loop, positions, problems = check_loop_file(path)
    elif text is not None:
        loop, positions, problems = check_loop_text(text, file)
    else:
        raise TypeError("load_loop_with_positions needs a path or text=")
    if loop is None or positions is None:
        raise LoadError(problems)
    return loop, positions


def check_loop_file(path: str | Path) -> tuple[Loop | None, Positions | None, list[Diagnostic]]:
    """Like `check_loop_text`, reading `path` (unreadable or non-UTF-8 files are diagnostics)."""
    file = str(path)
    try:
        text = read_text(Path(path), file)
    except YamlProblems as failed:
        return None, None, failed.diagnostics
    return check_loop_text(text, file)


def check_loop_text(
    text: str, file: str = "<string>"
) -> tuple[Loop | None, Positions | None, list[Diagnostic]]:
    """Every load-time diagnostic of a loop, sorted by line; the loop when there are none."""
    with collector_paused():
        return _check(text, file)


def _check(text: str, file: str) -> tuple[Loop | None, Positions | None, list[Diagnostic]]:
    try:
        data, positions = parse_yaml(text, file)
    except YamlProblems as failed:
        return None, None, failed.diagnostics
    if not isinstance(data, dict):
        return None, positions, [_not_a_mapping(data, positions, file)]
    data, positions, problems = expand_fragments(data, positions, file)
    if not problems:  # a state missing its fragment would only add confusing schema errors
        problems = _with_origins(explain(violations(data), positions, file), positions)
        problems += _pattern_problems(data, positions, file)
        problems += _judge_problems(data, positions, file)
        problems += _default_problems(data, positions, file)
        problems += _dimension_problems(data, positions, file)
        problems += _with_origins(nul_problems(data, positions, file), positions)
        problems = _reserved_verdict_routes(data, positions, file, problems)
    if problems:
        return None, positions, sorted(problems, key=lambda d: (d.line, d.column, d.code))
    return _build_loop(data, positions, "" if file == "<string>" else file), positions, []


def _with_origins(found: list[Diagnostic], positions: Positions) -> list[Diagnostic]:
    """A diagnostic about a node a fragment contributed also names the fragment's line."""
    if not positions.origins:
        return found
    out = []
    for diagnostic in found:
        origin = positions.origin_of(tuple(_path_parts(diagnostic.path)))
        if origin:
            diagnostic = replace(diagnostic, message=f"{diagnostic.message} (from {origin})")
        out.append(diagnostic)
    return out


def _path_parts(path: str) -> list[str | int]:
    """`states.a.evaluate.dimensions[0].name` back into path parts."""
    parts: list[str | int] = []
    for piece in path.split("."):
        name, *indices = piece.split("[")
        if name:
            parts.append(name)
        parts += [int(index.rstrip("]")) for index in indices if index.rstrip("]").isdigit()]
    return parts


def _not_a_mapping(data: Any, positions: Positions, file: str) -> Diagnostic:
    line, column = positions.value_of(())
    hint = "start the file with name:, initial: and states:"
    if data is None:
        message = "the file holds an empty YAML document: a loop needs name, initial and states"
        return Diagnostic("F003", "error", message, file, "", line, column, hint)
    found = "a list" if isinstance(data, list) else describe(data)
    message = f"the top level of a loop file must be a mapping of keys, got {found}"
    return Diagnostic("F004", "error", message, file, "", line, column, hint)


def _pattern_problems(data: dict[str, Any], positions: Positions, file: str) -> list[Diagnostic]:
    """Regexes of output_contains evaluators must compile (the schema cannot check that)."""
    out = []
    states = data.get("states")
    for name, state in states.items() if isinstance(states, dict) else ():
        evaluate = state.get("evaluate") if isinstance(state, dict) else None
        pattern = evaluate.get("pattern") if isinstance(evaluate, dict) else None
        if not isinstance(pattern, str):
            continue
        try:
            check_pattern(pattern)
        except PatternSyntaxError as exc:
            out.append(
                _at_value(
                    ("states", name, "evaluate", "pattern"),
                    "F016",
                    f"states.{name}.evaluate.pattern is not a valid regular expression: {exc}",
                    "patterns are Python regular expressions; escape literal ( [ . * + ? with \\",
                    positions,
                    file,
                )
            )
    return out


# `on_<name>` keys that mean something else than "route the verdict <name>".
_RESERVED_ROUTES = {
    "terminal": "routes on a sub-loop's terminal",
    "retry_exhausted": "is where a state goes when its max_retries run out",
    "max_steps": "belongs to the loop (where a run goes when max_steps is reached)",
}


def _reserved_verdict_routes(
    data: dict[str, Any], positions: Positions, file: str, problems: list[Diagnostic]
) -> list[Diagnostic]:
    """A classify verdict named `terminal`, `retry_exhausted` or `max_steps`, routed with
    `on_<verdict>`: that key is another setting, so the schema's complaints about it ("needs
    loop", "belongs to the loop") miss what was meant. One sentence saying what to write
    instead replaces them."""
    states = data.get("states")
    for name, state in states.items() if isinstance(states, dict) else ():
        evaluate = state.get("evaluate") if isinstance(state, dict) else None
        if not isinstance(evaluate, dict) or evaluate.get("type") != "classify":
            continue
        verdicts = evaluate.get("verdicts")
        for verdict in verdicts if isinstance(verdicts, list) else ():
            if not isinstance(verdict, str) or verdict not in _RESERVED_ROUTES:
                continue  # a verdict that is not text is the schema's (a list: unhashable)
            key = f"on_{verdict}"
            if key not in state:
                continue
            at = f"states.{name}.{key}"
            if not any(d.path == at for d in problems):
                continue  # a legitimate on_retry_exhausted (with max_retries): not refused
            problems = [d for d in problems if d.path != at]
            target = state[key] if isinstance(state[key], str) else "STATE"
            refused = _at_key(
                ("states", name, key),
                "F017",
                f"{at}: {verdict!r} is a verdict of this state's classify evaluator, but "
                f"{key} {_RESERVED_ROUTES[verdict]}, so it cannot route that verdict",
                f"route it in a route table: route: {{{verdict}: {target}}} (with the "
                "state's other verdicts in the same table, in place of on_* keys)",
                positions,
                file,
            )
            problems += _with_origins([refused], positions)
    return problems


def nul_problems(data: Any, positions: Positions, file: str) -> list[Diagnostic]:
    """Strings holding a NUL character (YAML's `"\\x00"` or `"\\0"`): no command line, argument
    or environment variable can carry one, so the action would fail to start at run time."""
    out: list[Diagnostic] = []
    stack: list[tuple[PathKey, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and "\x00" in key:
                    message = f"the key {key!r} holds a NUL character"
                    out.append(_at_key((*path, key), "F016", message, _NUL_HINT, positions, file))
                else:
                    stack.append(((*path, key), item))
        elif isinstance(value, list):
            stack.extend(((*path, index), item) for index, item in enumerate(value))
        elif isinstance(value, str) and "\x00" in value:
            where = ".".join(map(str, path)) or "the value"
            message = (
                f"{where} holds a NUL character (written \\x00 or \\0 in a double-quoted YAML "
                "string): no command, argument or environment variable can carry one"
            )
            out.append(_at_value(path, "F016", message, _NUL_HINT, positions, file))
    return out


_NUL_HINT = "remove it; a command that needs a NUL byte can write one itself (printf '\\0')"


# An entry of each type beside the text that only looks like one (F014's hint).
_ENUM_EXAMPLE = {
    "integer": '1, not "1"',
    "number": '1.5, not "1.5"',
    "boolean": 'true, not "true"',
    "array": '[a, b], not "[a, b]"',
    "object": '{k: v}, not "{k: v}"',
    "string": '"1", not 1',
    "command": '"make test", not 1',
    "any": "",  # takes any value: never reported
}


def _default_problems(data: dict[str, Any], positions: Positions, file: str) -> list[Diagnostic]:
    """A parameter's `default` must be a value a caller could pass for it (its type, its enum):
    `default: "two"` for an integer would otherwise reach `${param.m}` as it is, while a caller's
    `--context m=two` is refused."""
    from engine.model.params import (
        PARAMETER_TYPES,
        ParameterError,
        coerce,
        is_of_type,
        type_words,
    )

    out = []
    parameters = data.get("parameters")
    for name, body in parameters.items() if isinstance(parameters, dict) else ():
        if not isinstance(body, dict):
            continue
        kind, enum = body.get("type", "any"), body.get("enum", [])
        if not (isinstance(kind, str) and kind in PARAMETER_TYPES and isinstance(enum, list)):
            continue  # the schema reports a type or enum it does not know: nothing to check
        for index, entry in enumerate(enum):  # a caller's value is converted, then looked up
            if not is_of_type(kind, entry):
                out.append(
                    _at_value(
                        ("parameters", name, "enum", index),
                        "F014",
                        f"parameters.{name}.enum lists {describe(entry)}, which is not "
                        f"{type_words(kind)}, so no caller can pass it",
                        f"write the allowed values as {kind} values (e.g. "
                        f"{_ENUM_EXAMPLE[kind]}), or change the "
                        "parameter's type",
                        positions,
                        file,
                    )
                )
        if body.get("default") is None:
            continue
        try:
            coerce(_build_parameter(name, body), body["default"], str(data.get("name", "")))
        except ParameterError as exc:
            out.append(
                _at_value(
                    ("parameters", name, "default"),
                    "F014",
                    f"the default of {exc.message}",
                    "write a default the parameter accepts, or change its type or enum",
                    positions,
                    file,
                )
            )
    return out


# What a verdict judge takes that a rubric judge would ignore, and what to write instead.
_NOT_FOR_RUBRICS = {
    "samples": "its reviewers are the independent samples: set reviewers: N",
    "min_confidence": "it answers yes when the weighted score reaches threshold: set threshold",
}


def _dimension_problems(data: dict[str, Any], positions: Positions, file: str) -> list[Diagnostic]:
    """A rubric's dimension names must differ: each is one field of the reviewers' scoring tool,
    so a second `accuracy` would silently be scored as the first. A rubric judge (dimensions,
    or threshold/reviewers, which review with the default ones) takes no `samples` or
    `min_confidence`, which it would ignore."""
    out = []
    states = data.get("states")
    for name, state in states.items() if isinstance(states, dict) else ():
        evaluate = state.get("evaluate") if isinstance(state, dict) else None
        given = evaluate if isinstance(evaluate, dict) else {}
        rubric = given.get("type") == "llm_structured" and any(
            k in given for k in ("dimensions", "threshold", "reviewers")
        )
        for key, hint in _NOT_FOR_RUBRICS.items() if rubric else ():
            if key in given:
                out.append(
                    _at_key(
                        ("states", name, "evaluate", key),
                        "F017",
                        f"states.{name}.evaluate.{key} does not apply to a rubric judge "
                        "(dimensions, threshold or reviewers), which would ignore it",
                        f"{hint}; or drop the rubric keys for a verdict judge",
                        positions,
                        file,
                    )
                )
        if isinstance(evaluate, dict):  # as an assessment's review dimensions are checked
            out += repeated_dimensions(evaluate, ("states", name, "evaluate"), positions, file)
    return out


def _at_key(
    path: PathKey, code: str, message: str, hint: str, positions: Positions, file: str
) -> Diagnostic:
    """An error about the key at `path`, placed where that key is written."""
    line, column = positions.of(path)
    return Diagnostic(code, "error", message, file, ".".join(map(str, path)), line, column, hint)


def _at_value(
    path: PathKey, code: str, message: str, hint: str, positions: Positions, file: str
) -> Diagnostic:
    """An error about the value at `path`, placed where that value is written."""
    line, column = positions.value_of(path)
    return Diagnostic(code, "error", message, file, ".".join(map(str, path)), line, column, hint)


def _judge_problems(data: dict[str, Any], positions: Positions, file: str) -> list[Diagnostic]:
    """What the schema cannot say about an assessment's judges (two kinds in one judge, ...)."""
    out = []
    states = data.get("states")
    for name, state in states.items() if isinstance(states, dict) else ():
        evaluate = state.get("evaluate") if isinstance(state, dict) else None
        if isinstance(evaluate, dict) and evaluate.get("type") == "assessment":
            out += judge_list_problems(evaluate, ("states", name, "evaluate"), positions, file)
    return out


# ---------------------------------------------------------------------------------------------
# Model building: data already passed the schema, so shapes and types are known.


def _build_loop(data: dict[str, Any], positions: Positions, source: str) -> Loop:
    states = {
        name: _build_state(name, body, positions, source) for name, body in data["states"].items()
    }
    scope = data.get("scope")
    return Loop(
        name=data["name"],
        initial=data["initial"],
        states=MappingProxyType(states),
        description=data.get("description", ""),
        max_steps=int(data.get("max_steps", 50)),
        on_max_steps=data.get("on_max_steps"),
        timeout=_float(data.get("timeout")),
        default_timeout=_float(data.get("default_timeout")),
        scope=tuple(scope) if scope is not None else None,
        context=_frozen(data.get("context")),
        parameters=MappingProxyType(
            {k: _build_parameter(k, v) for k, v in data.get("parameters", {}).items()}
        ),
        outputs=_frozen(data.get("outputs")),
        llm=_build_llm(data.get("llm", {})),
        max_cost_usd=_float(data.get("max_cost_usd")),
        category=data.get("category"),
        labels=tuple(data.get("labels", ())),
        lint=_build_suppressions(data.get("lint"), ("lint",), positions),
        input_key=data.get("input_key"),
        source=source,
    )


def _build_state(name: str, body: dict[str, Any], positions: Positions, source: str = "") -> State:
    line, column = positions.of(("states", name))
    routes = {
        key[3:]: target
        for key, target in body.items()
        if _ROUTE_KEY.match(key) and key not in _NOT_ROUTES
    }
    route = body.get("route")
    action_type = body.get("action_type", "shell")
    evaluate = None
    if "evaluate" in body:
        evaluate = _build_evaluate(body["evaluate"])
        if evaluate.type == "assessment":
            judges = build_judge_list(
                body["evaluate"], ("states", name, "evaluate"), positions, source
            )
            evaluate = replace(evaluate, judges=judges)
    if evaluate is None and _needs_implicit_evaluator(body, routes):
        if action_type == "prompt":
            evaluate = Evaluate(type="llm_structured", prompt=DEFAULT_JUDGE_PROMPT, implicit=True)
        else:
            evaluate = Evaluate(type="exit_code", implicit=True)
    max_retries = body.get("max_retries")
    return State(
        name=name,
        line=line,
        column=column,
        description=body.get("description", ""),
        action=body.get("action"),
        action_type=action_type,
        timeout=_float(body.get("timeout")),
        evaluate=evaluate,
        next=body.get("next"),
        routes=MappingProxyType(routes) if routes else EMPTY,
        route=MappingProxyType(dict(route)) if route is not None else None,
        terminal=bool(body.get("terminal", False)),
        failure=bool(body.get("failure", False)),
        capture=body.get("capture"),
        loop=body.get("loop"),
        with_=_frozen(body.get("with")),
        on_terminal=_frozen(body.get("on_terminal")),
        max_retries=int(max_retries) if max_retries is not None else None,
        on_retry_exhausted=body.get("on_retry_exhausted"),
        model=body.get("model"),
        runner=body.get("runner"),
        lint=_build_suppressions(body.get("lint"), ("states", name, "lint"), positions),
    )


def _needs_implicit_evaluator(body: dict[str, Any], routes: dict[str, str]) -> bool:
    """A state that routes on verdicts but names no evaluator gets the default one.

    Only action states without `next:` qualify: a `next:` state with `on_error` keeps its
    step semantics (success advances, failure goes to on_error), and sub-loops and terminals
    have their own verdicts.
    """
    if body.get("terminal") or "loop" in body or "next" in body:
        return False
    return bool(routes) or "route" in body


def _build_evaluate(body: dict[str, Any]) -> Evaluate:
    fields: dict[str, Any] = {"type": body["type"]}
    text_keys = ("source", "pattern", "operator", "path", "previous", "prompt", "model")
    for key in (*text_keys, "reasoning"):
        if key in body:
            fields[key] = body[key]
    for key in ("ignore_exit_code", "negate"):
        if key in body:
            fields[key] = bool(body[key])
    for key in ("direction", "line"):
        if key in body:
            fields[key] = body[key]
    for key in ("samples", "reviewers", "max_tokens", "concurrency", "max_stall"):
        if key in body:
            fields[key] = int(body[key])
    for key in ("tolerance", "min_confidence", "threshold", "temperature"):
        if key in body:
            fields[key] = float(body[key])
    if "target" in body:
        fields["target"] = body["target"]
    if "verdicts" in body:
        fields["verdicts"] = tuple(body["verdicts"])
    if "scope" in body:
        fields["scope"] = tuple(body["scope"])
    if "dimensions" in body:
        fields["dimensions"] = build_dimensions(body["dimensions"])
    elif body["type"] == "llm_structured" and ("threshold" in body or "reviewers" in body):
        # A threshold (or reviewers) asks for a score: review with the default dimensions
        # instead of ignoring it (see docs/judges.md).
        fields["dimensions"] = DEFAULT_DIMENSIONS
    if "annotations" in body:
        fields["annotations"] = _frozen(body["annotations"])
    if "outputs" in body:
        fields["outputs"] = tuple(body["outputs"])
    return Evaluate(**fields)


def _build_parameter(name: str, body: dict[str, Any]) -> Parameter:
    enum = body.get("enum")
    return Parameter(
        name=name,
        type=body.get("type", "any"),
        required=bool(body.get("required", False)),
        default=body.get("default"),
        has_default="default" in body,
        description=body.get("description", ""),
        enum=tuple(enum) if enum is not None else None,
    )


def _build_llm(body: dict[str, Any]) -> LlmConfig:
    return LlmConfig(
        model=body.get("model"),
        max_tokens=int(body["max_tokens"]) if "max_tokens" in body else None,
        temperature=_float(body.get("temperature")),
        timeout=_float(body.get("timeout")),
        runner=body.get("runner"),
        cache=bool(body.get("cache", False)),
    )


def _build_suppressions(
    body: dict[str, Any] | None, path: PathKey, positions: Positions
) -> tuple[Suppression, ...]:
    if not body:
        return ()
    return tuple(
        Suppression(item["code"], item["reason"], positions.of((*path, "suppress", index))[0])
        for index, item in enumerate(body.get("suppress", ()))
    )


def _float(value: Any) -> float | None:
    return float(value) if value is not None else None


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value)) if value else EMPTY
