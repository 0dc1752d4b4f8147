"""Regular expressions an author wrote — `output_contains`'s `pattern`, the `regex` judge,
`tool_called`'s `input_pattern` — compiled and searched with a time limit.

Python's `re` backtracks without bound: `(a|aa)+$` over a line of sixty a's and a `b` runs for
days, inside C and holding the GIL, so neither the run's `timeout:`, nor its stop, nor a
SIGTERM (whose Python handler waits for the GIL) could end it. The `regex` library matches the
same syntax (its default VERSION0 is `re`'s behaviour), already cuts much of the backtracking
that `re` does, takes a `timeout=` that it checks while it backtracks, and with
`concurrent=True` releases the GIL while it matches, so the rest of the process goes on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a pattern is compiled to search: ~12 ms a `validate` skips
    import regex

PATTERN_SECONDS = 5.0  # the longest one search may take; a sane pattern takes milliseconds
SIMPLIFY_HINT = "simplify it: nested repetition such as (a+)+ or (a|aa)+ backtracks without end"

MAX_EXPANDED = 50_000  # characters a pattern's counted repeats spell out, at their minimum


class PatternSyntaxError(ValueError):
    """A pattern that is not a regular expression (as `re` reads one), or one too large to
    compile; its `str` says what and where."""


class PatternTooCostly(Exception):
    """A search that ran past `PATTERN_SECONDS`, or whose backtracking outgrew the memory the
    `regex` library allows it (~600 MB, a `MemoryError`): one sentence with a hint."""


def check_pattern(pattern: str, *, multiline: bool = True, ignore_case: bool = False) -> None:
    """`PatternSyntaxError` (whose `str` says what and where) when `pattern` is not a regular
    expression as `re` reads one, or is too large to compile; what loading a file checks."""
    _checked_flags(pattern, multiline=multiline, ignore_case=ignore_case)


@lru_cache(maxsize=256)
def compile_pattern(
    pattern: str, *, multiline: bool = True, ignore_case: bool = False
) -> regex.Pattern[str]:
    """`pattern` compiled, by default with `^`/`$` matching at each line; `PatternSyntaxError`
    (whose `str` says what and where) when it is not a regular expression."""
    import regex

    flags = _checked_flags(pattern, multiline=multiline, ignore_case=ignore_case)
    try:
        return regex.compile(pattern, flags)
    except regex.error as exc:
        raise PatternSyntaxError(str(exc)) from None


def _checked_flags(pattern: str, *, multiline: bool, ignore_case: bool) -> int:
    """The flags to compile `pattern` with (`re`'s values, which `regex` shares), once `re` has
    read it: what `re` refused stays refused, with `re`'s own words."""
    flags = (re.MULTILINE if multiline else 0) | (re.IGNORECASE if ignore_case else 0)
    try:
        parsed = re._parser.parse(pattern, flags)  # type: ignore[attr-defined]
    except (re.error, OverflowError) as exc:
        raise PatternSyntaxError(str(exc)) from None
    except RecursionError:
        raise PatternSyntaxError("it nests too deeply") from None
    if _expanded(parsed) > MAX_EXPANDED:
        raise PatternSyntaxError(
            f"its counted repeats spell out more than {MAX_EXPANDED:,} characters (such as "
            "(?:a{1000}){1000}), which the matcher would build in memory; use + or * instead"
        )
    return flags


def _expanded(items: Any) -> int:
    """How many characters the parsed pattern's repeats spell out at their minimum counts: the
    `regex` library builds `(?:a{3000}){3000}` as nine million steps (2.4 GB) while `re`
    keeps the counts, so a twenty-character pattern could exhaust memory at load."""
    repeats = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
    total = 0
    for op, argument in items:
        if str(op) in repeats:
            low, _, body = argument
            total += max(low, 1) * _expanded(body)
        else:
            total += max(1, sum(_expanded(inner) for inner in _inner(argument)))
    return total


def _inner(argument: Any) -> Iterator[Any]:
    """The sub-patterns inside one parsed item's argument (groups, branches, lookarounds)."""
    parts = argument if isinstance(argument, tuple | list) else (argument,)
    for part in parts:
        if isinstance(part, re._parser.SubPattern):  # type: ignore[attr-defined]
            yield part
        elif isinstance(part, list):
            yield from _inner(part)


def search(
    compiled: regex.Pattern[str], text: str, seconds: float | None = None
) -> regex.Match[str] | None:
    """The first match of `compiled` in `text`, or None; `PatternTooCostly` past `seconds`
    (default `PATTERN_SECONDS`)."""
    seconds = PATTERN_SECONDS if seconds is None else seconds
    try:
        return compiled.search(text, timeout=seconds, concurrent=True)
    except MemoryError:  # (a|aa)+$ over ten million a's: within a second
        raise PatternTooCostly(
            f"the pattern {compiled.pattern!r} backtracks too much to match this text "
            f"({SIMPLIFY_HINT})"
        ) from None
    except TimeoutError:
        raise PatternTooCostly(
            f"the pattern {compiled.pattern!r} did not finish matching within {seconds:g} s "
            f"({SIMPLIFY_HINT})"
        ) from None
