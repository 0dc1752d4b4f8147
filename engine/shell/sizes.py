"""Size checks made *before* an operation builds a value: refused when its result would hold
more than `MAX_CHARS` items, an integer of more than `MAX_INT_BITS` bits, or more than
`MAX_COUNT` pieces. Python and Jinja build such values inside C, holding the GIL, where no time
limit reaches them, so the only defence is not to start.

Shared by the Jinja sandboxes (`engine.shell.sandbox`, which reports a refusal as Jinja's
`SecurityError`) and the `if:` conditions of judges (`engine.judges.python_judges`); this module
imports nothing of Jinja, so a condition costs no Jinja import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MAX_CHARS = 64 * 1024 * 1024  # items of one string or list built by one operation
MAX_INT_BITS = 1_000_000  # bits of one integer (about 300,000 digits)
MAX_COUNT = 100_000  # pieces one filter may make (Jinja's own limit of range())
HINT = "values in ll-loop files are kept far smaller; build large data in an action instead"

_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_BRACE_FIELD = re.compile(r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")
_DIGITS = re.compile(r"\d+")


class TooLarge(Exception):
    """An operation refused before it ran: its result would be too large."""


def too_large(what: str) -> TooLarge:
    return TooLarge(f"{what} would be too large ({HINT})")


def length(value: Any) -> int | None:
    return len(value) if isinstance(value, str | bytes | list | tuple) else None


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def big(number: Any, limit: int = MAX_CHARS) -> bool:
    return is_int(number) and number > limit


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse `left <operator> right` when its result would be too large."""
    if operator == "**" and is_int(left) and is_int(right) and abs(left) > 1 and right > 0:
        if left.bit_length() * right > MAX_INT_BITS:
            raise too_large(f"{left.bit_length()}-bit number ** {right}")
    elif operator == "*":
        bits = left.bit_length() + right.bit_length() if is_int(left) and is_int(right) else 0
        if bits > MAX_INT_BITS:
            raise too_large("the product of these numbers")
        for sized, times in ((left, right), (right, left)):
            size = length(sized)
            if size is not None and is_int(times) and size * times > MAX_CHARS:
                raise too_large(f"a {type(sized).__name__} repeated {times} times")
    elif operator == "+":
        first, second = length(left), length(right)
        if first is not None and second is not None and first + second > MAX_CHARS:
            raise too_large(f"the {type(left).__name__} joined here")
    elif operator == "%" and isinstance(left, str):
        check_percent_format(left, right)
    elif (
        operator == "<<"
        and is_int(left)
        and is_int(right)
        and left
        and right > 0
        and left.bit_length() + right > MAX_INT_BITS
    ):
        raise too_large(f"a number shifted left {right} bits")


def _numbers(args: Any) -> list[Any]:
    if isinstance(args, Mapping):
        return list(args.values())
    return list(args) if isinstance(args, tuple | list) else [args]


def check_percent_format(template: str, args: Any) -> None:
    """`template % args` with a field width or precision beyond `MAX_CHARS` (written, or
    taken from `args` by `*`)."""
    for spec in _PERCENT_SPEC.finditer(template):
        for given in spec.groups():
            if given == "*" and any(big(n) for n in _numbers(args)):
                raise too_large("a %-format with a field that wide")
            if given and given != "*" and (len(given) > 9 or int(given) > MAX_CHARS):
                raise too_large(f"a %-format field {given} wide")


def check_brace_format(template: str, args: Any, kwargs: Mapping[str, Any]) -> None:
    """`template.format(...)` with a field width or precision beyond `MAX_CHARS`."""
    for field in _BRACE_FIELD.finditer(template):
        text = field.group(0)
        spec = text.split(":", 1)[1] if ":" in text else ""
        for given in _DIGITS.findall(spec):
            if len(given) > 9 or int(given) > MAX_CHARS:
                raise too_large(f"a format field {given} wide")
        if "{" in text[1:] and any(big(n) for n in [*args, *kwargs.values()]):
            raise too_large("a format field that wide")


def replaced_size(text: str, old: str, new: str, count: Any = -1) -> int:
    found = text.count(old) if old else len(text) + 1
    if is_int(count) and count >= 0:
        found = min(found, count)
    return len(text) + found * (len(new) - len(old))


def joined_size(items: list[Any], separator: Any) -> int:
    return sum(len(str(item)) for item in items) + len(str(separator)) * max(len(items) - 1, 0)


def check_str_method(
    text: str, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> None:
    """Refuse a call of `text.<name>(...)` whose result would be too large."""
    if name in ("ljust", "rjust", "center", "zfill") and args and big(args[0]):
        raise too_large(f"str.{name}({args[0]})")
    elif name == "expandtabs":
        size = args[0] if args else kwargs.get("tabsize", 8)
        if is_int(size) and len(text) + text.count("\t") * size > MAX_CHARS:
            raise too_large(f"str.expandtabs({size})")
    elif (
        name == "replace"
        and len(args) >= 2
        and isinstance(args[0], str)
        and isinstance(args[1], str)
    ):
        if replaced_size(text, args[0], args[1], args[2] if len(args) > 2 else -1) > MAX_CHARS:
            raise too_large("the text str.replace makes")
    elif name == "join" and args and isinstance(args[0], list | tuple):
        if joined_size(list(args[0]), text) > MAX_CHARS:
            raise too_large("the text str.join makes")
    elif name in ("format", "format_map"):
        check_brace_format(text, args if name == "format" else (), {**kwargs, **_first(args)})


def _first(args: tuple[Any, ...]) -> Mapping[str, Any]:
    return args[0] if args and isinstance(args[0], Mapping) else {}
