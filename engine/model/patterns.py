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

from functools import lru_cache

import regex

PATTERN_SECONDS = 5.0  # the longest one search may take; a sane pattern takes milliseconds
SIMPLIFY_HINT = "simplify it: nested repetition such as (a+)+ or (a|aa)+ backtracks without end"

Pattern = regex.Pattern[str]
Match = regex.Match[str]
PatternSyntaxError = regex.error


class PatternTimeout(Exception):
    """A search that ran past `PATTERN_SECONDS`: its message is one sentence with a hint."""


@lru_cache(maxsize=256)
def compile_pattern(pattern: str, *, multiline: bool = True, ignore_case: bool = False) -> Pattern:
    """`pattern` compiled, by default with `^`/`$` matching at each line; `PatternSyntaxError`
    (whose `str` says what and where) when it is not a regular expression."""
    flags = (regex.MULTILINE if multiline else 0) | (regex.IGNORECASE if ignore_case else 0)
    return regex.compile(pattern, flags)


def search(compiled: Pattern, text: str, seconds: float | None = None) -> Match | None:
    """The first match of `compiled` in `text`, or None; `PatternTimeout` past `seconds`
    (default `PATTERN_SECONDS`)."""
    seconds = PATTERN_SECONDS if seconds is None else seconds
    try:
        return compiled.search(text, timeout=seconds, concurrent=True)
    except TimeoutError:
        raise PatternTimeout(
            f"the pattern {compiled.pattern!r} did not finish matching within {seconds:g} s "
            f"({SIMPLIFY_HINT})"
        ) from None
