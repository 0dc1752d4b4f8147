"""Values for a loop's `parameters`: the one conversion every caller shares.

A sub-loop's `with:`, `ll-loop run --context`, the Python API's `context=` and `inputs=`, and
lint's check of literal `with:` values all convert through `coerce`, so a value that lint accepts
is exactly a value the run accepts. Pure: no IO, no runtime.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from engine.model import jsontext
from engine.model.errors import LoopError, UsageError
from engine.model.loop import Loop, Parameter


class ParameterError(LoopError):
    """A value does not fit the parameter it is given for (type or enum)."""

    code = "PARAM"


def coerce(param: Parameter, value: Any, loop_name: str) -> Any:
    """`value` as `param.type` (strings parsed when they read as that type), checked for enum.

    Strings are parsed where the type asks for it (`"3"` for an integer), because values often
    come from text: command-line flags, or action output interpolated into `with:`.
    """
    converted = _convert(param.type, value)
    if converted is _MISMATCH:
        raise ParameterError(
            f"parameter {param.name!r} of loop {loop_name!r} must be {_ARTICLE[param.type]}, "
            f"got {_shown(value)}",
            hint="fix the value in the state's `with:`",
        )
    if param.enum is not None and converted not in param.enum:
        allowed = ", ".join(json.dumps(v) for v in param.enum)
        raise ParameterError(
            f"parameter {param.name!r} of loop {loop_name!r} must be one of {allowed}, "
            f"got {_shown(converted)}",
            hint="fix the value in the state's `with:`",
        )
    return converted


_MISMATCH = object()


def is_of_type(kind: str, value: Any) -> bool:
    """`value` is already a value of parameter type `kind`, as written (text that would only
    parse as one, `"1"` for an integer, is not): what an `enum` entry must be, since a caller's
    value is compared with the entries after it is converted."""
    converted = _convert(kind, value)
    if converted is _MISMATCH:
        return False
    return not isinstance(value, str) or kind in ("string", "command", "any")


SHOWN_CHARS = 200  # of a refused value in the sentence: a with: from an action's output can be MBs


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= SHOWN_CHARS else f"{text[: SHOWN_CHARS - 3]}..."


_ARTICLE = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "any": "any value",
    "command": "a command line (a string)",
}
PARAMETER_TYPES = frozenset(_ARTICLE)


def type_words(kind: str) -> str:
    """`an integer`, `a string`: a parameter type as the sentences of refusals name it."""
    return _ARTICLE.get(kind, kind)


def _convert(kind: str, value: Any) -> Any:
    if kind == "any":
        return value
    if kind in ("string", "command"):
        return value if isinstance(value, str) else _MISMATCH
    if isinstance(value, str):
        value = _parse_text(kind, value.strip())
    if kind == "boolean":
        return value if isinstance(value, bool) else _MISMATCH
    if isinstance(value, bool):
        return _MISMATCH  # True is an int in Python, never an integer or number here
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value if isinstance(value, int) else _MISMATCH
    if kind == "number":
        if isinstance(value, float) and not math.isfinite(value):
            return _MISMATCH  # NaN and infinity are no number a loop can use
        return value if isinstance(value, int | float) else _MISMATCH
    if kind == "array":
        return list(value) if isinstance(value, list | tuple) else _MISMATCH
    if kind == "object":
        return dict(value) if isinstance(value, Mapping) else _MISMATCH
    return _MISMATCH


def _parse_text(kind: str, text: str) -> Any:
    if kind == "boolean":
        return {"true": True, "false": False}.get(text.lower(), text)
    try:  # NaN and Infinity are not numbers a loop can use (JSON has neither either)
        if kind in {"integer", "number", "array", "object"}:
            return jsontext.loads(text, parse_constant=_no_constant)
        return text
    except ValueError:
        return text


def _context_hint(param: Parameter, key: str) -> str:
    """How to write a value of `param`'s type on the command line (a list is JSON there)."""
    if param.enum is None and param.type == "array":
        return f"""write it as JSON: --context {key}='["a", "b"]'"""
    if param.enum is None and param.type == "object":
        return f"""write it as JSON: --context {key}='{{"name": "value"}}'"""
    if param.enum is None and param.type == "boolean":
        return f"write --context {key}=true or --context {key}=false"
    return f"pass a value of the declared type (--context {key}=...)"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def check_caller_keys(loop: Loop, keys: Iterable[str], flag: str = "--context") -> None:
    """Refuse a value for a name `loop` does not know, when it declares `parameters`.

    Declared parameters are the loop's contract with its callers, so an undeclared key is a
    typo until proven otherwise (`--context tagret=x` would otherwise run with the default).
    Names under `context:` and the positional `input` stay accepted. A loop without
    `parameters` takes any key, as before.
    """
    if not loop.parameters:
        return
    known = {*loop.parameters, *loop.context, "input"}
    for key in keys:
        if key in known:
            continue
        close = difflib.get_close_matches(key, sorted(known - {"input"}), n=1, cutoff=0.6)
        declared = ", ".join(sorted(loop.parameters))
        raise UsageError(
            f"loop {loop.name!r} declares no parameter {key!r}"
            + (f" (did you mean {close[0]!r}?)" if close else ""),
            hint=f"its parameters are {declared}; pass {flag} NAME=VALUE for one of them",
        )


def bind_context(
    loop: Loop,
    context: Mapping[str, Any],
    inputs: Mapping[str, Any],
    input: str | None = None,
    *,
    strict: bool = False,
) -> dict[str, Any]:
    """The run's starting context: `context` defaults ← parameter defaults ← `context` ←
    `input` (as `context.input`) ← `inputs`. Values for declared parameters are converted to
    their types; `inputs` may name declared parameters only; a required one must be given.
    With `strict` (the CLI's `--context`), a loop that declares `parameters` takes in `context`
    only those, its `context:` names and `input`: another key is a typo until proven otherwise."""
    values = dict(loop.context)
    for name, param in loop.parameters.items():
        if param.has_default and name not in values:
            values[name] = param.default
    unknown = sorted(set(inputs) - set(loop.parameters))
    if unknown:
        names = ", ".join(sorted(loop.parameters)) or "none"
        raise UsageError(
            f"loop {loop.name!r} has no parameter {unknown[0]!r} (declared: {names})",
            hint="pass only declared parameters as inputs, or put other values in context",
        )
    if strict:
        check_caller_keys(loop, context)
    given = {**context, **({} if input is None else {"input": input}), **inputs}
    if loop.input_key not in (None, "input") and "input" in given and loop.input_key not in given:
        given[str(loop.input_key)] = given.pop("input")  # INPUT is the parameter input_key names
    for key, value in given.items():
        declared = loop.parameters.get(key)
        if declared is None:
            values[key] = value
            continue
        try:
            values[key] = coerce(declared, value, loop.name)
        except ParameterError as exc:
            raise UsageError(exc.message, hint=_context_hint(declared, key)) from None
    missing = [n for n, p in loop.parameters.items() if p.required and n not in values]
    if missing:
        raise UsageError(
            f"loop {loop.name!r} requires parameter {missing[0]!r}",
            hint=f"pass --context {missing[0]}=VALUE"
            + (" or give it as INPUT" if missing[0] == loop.input_key else ""),
        )
    return values
