"""Builtin judges by name: ours, registered with `@builtin`, and third parties' through the
`ll_loop.judges` entry point group (read only when a name is not ours, or for a listing).

A builtin is called as `run(ctx, **arguments)` and returns a `Judgement`, `(value, rationale)`
or a bare value. A third party's entry point may name a `Builtin`, or a plain function
`f(outputs, **arguments)` as agent_eval's judges are written; its keyword parameters become its
listed arguments.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

ENTRY_POINT_GROUP = "ll_loop.judges"
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Argument:
    """One keyword argument of a builtin, for `ll-loop judges` and argument checks."""

    name: str
    type: str = "any"  # string, number, integer, boolean, list, mapping, any
    required: bool = False
    default: Any = None
    description: str = ""
    regex: bool = False  # a Python regular expression: one without `${...}` must compile

    def describe(self) -> str:
        if self.required:
            need = "required"
        else:
            need = "optional" if self.default is None else f"default {self.default!r}"
        return f"{self.name} ({self.type}, {need})"

    def value_problem(self, value: Any) -> str | None:
        """Why `value`, as written in YAML, cannot be this argument, or None when it can (or
        might: a number may be written as text, and any text with `${...}` is rendered first)."""
        if value is None:
            return "is empty" if self.required else None
        if self.type in ("number", "integer"):
            if isinstance(value, bool | list | dict):
                return f"is {_shown(value)}, not a number"
            if isinstance(value, str) and "${" not in value and not _numeric(value):
                return f"is {_shown(value)}, not a number"
            return None
        wanted = {"string": str, "boolean": bool, "list": list | tuple, "mapping": Mapping}
        kind = wanted.get(self.type)
        if kind is not None and not isinstance(value, kind):
            return f"is {_shown(value)}, not a {self.type}" + _HOW.get(self.type, "")
        if self.regex and value == "":
            return "is empty: it would match any text, the empty one included"
        if self.regex and isinstance(value, str) and "${" not in value:
            return _regex_problem(value)
        return None


@dataclass(frozen=True)
class Builtin:
    """A registered judge: its name, category, code, arguments and a one-line description."""

    name: str
    run: Callable[..., Any]
    arguments: tuple[Argument, ...] = ()
    description: str = ""
    category: str = ""
    origin: str = "ll-loop"
    open_arguments: bool = False  # takes **kwargs: any argument is accepted

    @property
    def qualified(self) -> str:
        return f"{self.category}/{self.name}" if self.category else self.name

    def argument_problem(self, given: Mapping[str, Any]) -> str | None:
        """Why `given` does not fit this builtin's arguments, or None."""
        known = {a.name for a in self.arguments}
        missing = [a.name for a in self.arguments if a.required and a.name not in given]
        if missing:
            return f"builtin {self.name!r} needs the argument {missing[0]!r}"
        unknown = sorted(k for k in given if k not in known)
        if unknown and not self.open_arguments:
            listed = ", ".join(sorted(known)) or "none"
            return f"builtin {self.name!r} has no argument {unknown[0]!r} (its arguments: {listed})"
        for argument in self.arguments:
            problem = (
                argument.value_problem(given[argument.name]) if argument.name in given else None
            )
            if problem is not None:
                return f"the argument {argument.name!r} of builtin {self.name!r} {problem}"
        return None


# What a value of the wrong kind does in the builtin, said in the message: the mistake is silent.
_HOW = {
    "boolean": " (any text is true: write true or false, unquoted)",
    "list": " (text would be read one character at a time: write [a, b])",
}


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return repr(value)


def _regex_problem(pattern: str) -> str | None:
    import re

    try:
        re.compile(pattern)
    except re.error as exc:
        return f"is not a valid regular expression: {exc}"
    return None


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_OURS: dict[str, Builtin] = {}
_THIRD_PARTY: dict[str, Builtin] | None = None
_LOCK = threading.Lock()


def builtin(
    name: str, *, category: str, description: str, arguments: Iterable[Argument] = ()
) -> Callable[[F], F]:
    """Register the decorated `run(ctx, **arguments)` as builtin `name`."""

    def register(run: F) -> F:
        _OURS[name] = Builtin(name, run, tuple(arguments), description, category)
        return run

    return register


def _load_ours() -> None:
    # Not `if not _OURS`: a module of builtins imported on its own (match, by the harness)
    # registers its builtins without the others.
    if "exit_code" not in _OURS or "expected_answer" not in _OURS:
        import engine.judges.builtins
        import engine.judges.match  # noqa: F401  (importing them registers them)


def third_party() -> dict[str, Builtin]:
    """Builtins from installed distributions' `ll_loop.judges` entry points (read once)."""
    global _THIRD_PARTY
    with _LOCK:
        if _THIRD_PARTY is None:
            _THIRD_PARTY = dict(_from_entry_points())
        return _THIRD_PARTY


def _from_entry_points() -> Iterable[tuple[str, Builtin]]:
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        origin = point.dist.name if point.dist is not None else point.value
        category, _, short = point.name.rpartition("/")
        try:
            loaded = point.load()
        except Exception as exc:  # a broken plugin is listed as broken, never a crash
            yield point.name, _broken(point.name, origin, exc)
            continue
        if isinstance(loaded, Builtin):
            yield (
                short,
                Builtin(
                    short,
                    loaded.run,
                    loaded.arguments,
                    loaded.description,
                    category or loaded.category,
                    origin,
                    loaded.open_arguments,
                ),
            )
        elif callable(loaded):
            yield short, wrap_function(loaded, short, category, origin)


def _broken(name: str, origin: str, exc: Exception) -> Builtin:
    reason = f"{type(exc).__name__}: {exc}"

    def fail(ctx: Any, **_: Any) -> Any:
        from engine.judges.result import JudgeError

        raise JudgeError(f"the builtin {name!r} from {origin} cannot be loaded ({reason})")

    return Builtin(
        name, fail, (), f"cannot be loaded: {reason}", origin=origin, open_arguments=True
    )


def wrap_function(
    function: Callable[..., Any], name: str, category: str = "", origin: str = ""
) -> Builtin:
    """A plain `f(outputs, **arguments)` as a builtin; its keyword parameters are its arguments."""
    arguments: list[Argument] = []
    open_arguments = False
    try:
        parameters = list(inspect.signature(function).parameters.values())[1:]
    except (TypeError, ValueError):
        parameters, open_arguments = [], True
    for parameter in parameters:
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            open_arguments = True
        elif parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            has_default = parameter.default is not inspect.Parameter.empty
            arguments.append(
                Argument(
                    parameter.name,
                    required=not has_default,
                    default=parameter.default if has_default else None,
                )
            )
    doc = (inspect.getdoc(function) or "").strip().splitlines()

    def run(ctx: Any, **given: Any) -> Any:
        return function(ctx.outputs, **given)

    return Builtin(
        name,
        run,
        tuple(arguments),
        doc[0] if doc else "",
        category,
        origin or getattr(function, "__module__", ""),
        open_arguments,
    )


def find_builtin(name: str) -> Builtin | None:
    """The builtin called `name` or `category/name`: ours first, then third parties'."""
    if is_ours(name):
        return _OURS[name.rpartition("/")[2]]
    category, _, short = name.rpartition("/")
    found = third_party().get(short)
    if found is not None and (not category or category == found.category):
        return found
    return None


def is_ours(name: str) -> bool:
    """Known without reading entry points (lint checks the rest only when needed)."""
    _load_ours()
    category, _, short = name.rpartition("/")
    found = _OURS.get(short)
    return found is not None and (not category or category == found.category)


def all_builtins() -> list[Builtin]:
    """Every builtin, ours first (by category and name), then third parties'."""
    _load_ours()
    ours = sorted(_OURS.values(), key=lambda b: (b.category, b.name))
    theirs = sorted(third_party().values(), key=lambda b: (b.category, b.name))
    return ours + [b for b in theirs if b.name not in _OURS]
