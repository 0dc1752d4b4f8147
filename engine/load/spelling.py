""" "Did you mean": the one way ll-loop guesses what a misspelt name was meant to be.

The loader (unknown keys, enum values), lint (state names, verdicts, parameters, rule codes),
interpolation (filters) and `simulate` (state names) all ask here, so the same typo gets the
same suggestion wherever it is made.
"""

from __future__ import annotations

from collections.abc import Iterable

CUTOFF = 0.6  # difflib's similarity ratio below which nothing is suggested

# Common spellings from other tools that difflib cannot guess (gte is closer to gt than to ge).
ALIASES = {
    "gte": "ge", ">=": "ge", "lte": "le", "<=": "le", ">": "gt", "<": "lt",
    "==": "eq", "=": "eq", "equals": "eq", "!=": "ne", "neq": "ne",
    "min": "minimize", "max": "maximize", "llm": "llm_structured", "judge": "llm_structured",
    "contains": "output_contains", "regex": "output_contains", "json": "output_json",
    "numeric": "output_numeric", "exit": "exit_code",
}  # fmt: skip


def close_matches(word: str, candidates: Iterable[str], n: int = 1) -> list[str]:
    """Up to `n` candidates close to `word`, best first: a known alias, then the same name in
    another case, then difflib's closest."""
    options = sorted(set(candidates))
    found: list[str] = []
    alias = ALIASES.get(word.strip().lower())
    if alias in options:
        found.append(alias)
    lowered = {c.lower(): c for c in options}
    if word.lower() in lowered and lowered[word.lower()] != word:
        found.append(lowered[word.lower()])
    import difflib  # only when a word is misspelt (~1.5 ms of every start-up otherwise)

    found += difflib.get_close_matches(word, options, n=n, cutoff=CUTOFF)
    return list(dict.fromkeys(found))[:n]


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to `word`, or None when nothing is close enough."""
    found = close_matches(word, candidates)
    return found[0] if found else None


def did_you_mean_hint(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean 'x'?)` to append to a message, or `""`."""
    guess = did_you_mean(word, candidates)
    return f" (did you mean {guess!r}?)" if guess else ""
