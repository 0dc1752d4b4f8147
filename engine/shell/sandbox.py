"""Jinja sandboxes that refuse to build values no loop needs: `${...}` expressions and LLM judge
templates are code an author wrote, and Jinja's own sandbox stops only unsafe attributes.

Without these limits `${ 10 ** (10 ** 9) }` hung the run before its first step (Jinja folds a
constant expression while it compiles, inside C, holding the GIL: no timeout or stop could end
it), and `'a' * 10 ** 11`, `'' | center(10 ** 11)` or `'{:>99999999999}'.format(1)` asked the
allocator for a hundred gigabytes. Every operator, filter, method and global that can make
its result much larger than its operands is checked *before* it runs: a string or list of more
than `MAX_CHARS` items, an integer of more than `MAX_INT_BITS` bits, or more than `MAX_COUNT`
pieces is refused with a `SecurityError`, which callers report as one sentence naming the
expression. An intercepted operator is never folded at compile time (Jinja's rule), and a
filter whose check refuses is not folded either, so the refusal happens, and is reported,
when the value is used.

Imported only where a Jinja environment is built (jinja2 costs ~15-50 ms to import); the size
checks themselves live in `engine.shell.sizes`, which the `if:` conditions of judges share.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.exceptions import SecurityError
from jinja2.nodes import Concat
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

from engine.shell.sizes import (
    HINT,
    MAX_CHARS,
    MAX_COUNT,
    TooLarge,
    big,
    check_binop,
    check_percent_format,
    check_str_method,
    is_int,
    joined_size,
    length,
    replaced_size,
)


def refuse(what: str) -> SecurityError:
    return SecurityError(f"{what} would be too large ({HINT})")


def _sized(check: Callable[..., None], *args: Any, **kwargs: Any) -> None:
    """A check of `engine.shell.sizes`, its refusal as the sandbox's own (Jinja reports it)."""
    try:
        check(*args, **kwargs)
    except TooLarge as exc:
        raise SecurityError(str(exc)) from None


# Filters whose result can be much larger than their input: a check of the arguments each
# filter function receives (after Jinja's context, environment or eval context, if it takes one).
def _center(value: Any, width: Any = 80, *_: Any, **__: Any) -> None:
    if big(width):
        raise refuse(f"center({width})")


def _indent(text: Any, width: Any = 4, *_: Any, **__: Any) -> None:
    each = len(width) if isinstance(width, str) else width
    lines = text.count("\n") + 1 if isinstance(text, str) else 0
    if is_int(each) and lines and len(text) + lines * each > MAX_CHARS:
        raise refuse(f"indent({each if is_int(width) else repr(width)})")


def _format(value: Any, *args: Any, **kwargs: Any) -> None:
    if isinstance(value, str):
        _sized(check_percent_format, value, kwargs or args)


def _replace(text: Any, old: Any, new: Any, count: Any = None) -> None:
    texts = isinstance(text, str) and isinstance(old, str) and isinstance(new, str)
    if texts and replaced_size(text, old, new, -1 if count is None else count) > MAX_CHARS:
        raise refuse("the text replace makes")


def _wordwrap(text: Any, width: Any = 79, *rest: Any, **kwargs: Any) -> None:
    between = kwargs.get("wrapstring", rest[1] if len(rest) > 1 else None)
    if not isinstance(between, str):
        return
    if (
        isinstance(text, str)
        and is_int(width)
        and len(text) + (len(text) // max(width, 1) + 1) * len(between) > MAX_CHARS
    ):
        raise refuse("the text wordwrap makes")


def _pieces(value: Any, count: Any = 1, *_: Any, **__: Any) -> None:
    if big(count, MAX_COUNT):
        raise refuse(f"{count} pieces")


def _tojson(value: Any, indent: Any = None, *_: Any, **__: Any) -> None:
    if big(indent, 64):
        raise refuse(f"JSON indented by {indent}")


FILTER_CHECKS: dict[str, Callable[..., None]] = {
    "center": _center,
    "indent": _indent,
    "format": _format,
    "replace": _replace,
    "wordwrap": _wordwrap,
    "batch": _pieces,
    "slice": _pieces,
    "tojson": _tojson,
}
_PASSED_FIRST = frozenset({"context", "eval_context", "environment"})


def _checked(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (a filter) with its arguments checked first; `join` sees its items as a list."""
    check = FILTER_CHECKS.get(name)
    skip = (
        1 if getattr(getattr(function, "jinja_pass_arg", None), "name", "") in _PASSED_FIRST else 0
    )

    @functools.wraps(function)
    def filtered(*args: Any, **kwargs: Any) -> Any:
        own = args[skip:]
        if name == "join" and own and not isinstance(own[0], str | Mapping):
            items = list(own[0])
            separator = own[1] if len(own) > 1 else kwargs.get("d", "")
            plain = kwargs.get("attribute") is None and len(own) < 3
            if plain and joined_size(items, separator) > MAX_CHARS:
                raise refuse("the text join makes")
            args = (*args[:skip], items, *own[1:])
        elif check is not None:
            check(*own, **kwargs)
        return function(*args, **kwargs)

    return filtered


def _lipsum(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def bounded(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> Any:
        if big(n, 1000) or big(max, 10_000) or big(min, 10_000):
            raise refuse("lorem ipsum that long")
        return function(n, html, min, max)

    return bounded


class _Generator(CodeGenerator):
    """Jinja's code generator, with `a ~ b` joined by `environment.checked_join`: `~` is no
    operator the sandbox can intercept, and `{% set ns.s = ns.s ~ ns.s %}` in a loop doubles."""

    @optimizeconst
    def visit_Concat(self, node: Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:
            CodeGenerator.visit_Concat(self, node, frame)
            return
        self.write("environment.checked_join((")
        for part in node.nodes:
            self.visit(part, frame)
            self.write(", ")
        self.write("))")


class _Limits(SandboxedEnvironment):
    """The checks, over either of Jinja's sandboxes."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _Generator

    def concat(self, parts: Iterable[Any]) -> str:  # type: ignore[override]
        """What a `{% set %}` block, a macro or a `{% filter %}` renders (Jinja's `"".join`),
        refused past `MAX_CHARS`: `{% set s %}{{ s }}{{ s }}{% endset %}` in a loop doubles."""
        texts = list(parts)
        if sum(len(text) for text in texts) > MAX_CHARS:
            raise refuse("the text a block or macro renders")
        return "".join(texts)

    def checked_join(self, parts: tuple[Any, ...]) -> str:
        """`a ~ b ~ ...` (Jinja's `str_join`), refused past `MAX_CHARS`."""
        texts = [str(part) for part in parts]
        if sum(len(text) for text in texts) > MAX_CHARS:
            raise refuse("the text joined with ~")
        return "".join(texts)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        lipsum = self.globals.get("lipsum")
        if callable(lipsum):
            self.globals["lipsum"] = _lipsum(lipsum)
        self.limit_filters()

    def limit_filters(self) -> None:
        """Wrap the filters that grow their input (again after a caller adds its own)."""
        for name in (*FILTER_CHECKS, "join"):
            function = self.filters.get(name)
            if function is not None and not getattr(function, "_ll_checked", False):
                wrapped = _checked(name, function)
                wrapped._ll_checked = True  # type: ignore[attr-defined]
                self.filters[name] = wrapped

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _sized(check_binop, operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        method = getattr(__obj, "__wrapped__", __obj)  # the sandbox wraps str.format
        owner = getattr(method, "__self__", None)
        name = getattr(method, "__name__", "")
        if isinstance(owner, str):
            _sized(check_str_method, owner, name, args, kwargs)
        elif isinstance(owner, list) and name in ("append", "extend", "insert"):
            grown = len(args[0]) if name == "extend" and args and length(args[0]) else 1
            if len(owner) + grown > MAX_CHARS:
                raise refuse(f"a list grown by {name}")
        return super().call(__context, __obj, *args, **kwargs)


class BoundedSandbox(_Limits, SandboxedEnvironment):
    """Jinja's sandbox, with the limits above."""


class BoundedImmutableSandbox(_Limits, ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, with the limits above."""
