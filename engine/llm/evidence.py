"""Checking a judge's evidence quote against the judged text (pure).

A `yes`/`partial` is only believed when its `evidence` is a verbatim quote of the judged text.
Matching is case-sensitive and whitespace-normalised (every run of whitespace is one space), and an
ellipsis (`...` or `…`) splits the quote into fragments that must each occur, in order. One layer
of quotation marks around the whole quote is forgiven, since models like to add them.
"""

from __future__ import annotations

import re

_SPACE = re.compile(r"\s+")
_ELLIPSIS = re.compile(r"\.\.\.+|…")
_WRAPPERS = (('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("`", "`"))
_CONTRACT = re.compile(r"verbatim|quot(e|es|ed|ation|ing)\b|evidence", re.IGNORECASE)


def normalise(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def has_evidence_contract(prompt: str) -> bool:
    """Does the prompt already demand verbatim evidence (a quote) for the verdict?"""
    return _CONTRACT.search(prompt) is not None


def _fragments_in_order(quote: str, text: str) -> str | None:
    fragments = [normalise(f) for f in _ELLIPSIS.split(quote)]
    fragments = [f for f in fragments if f]
    if not fragments:
        return "the evidence is empty"
    position = 0
    for fragment in fragments:
        found = text.find(fragment, position)
        if found < 0:
            if text.find(fragment) >= 0:
                return f"the evidence fragment {fragment!r} occurs in the text, but out of order"
            return f"the evidence {fragment!r} does not occur in the judged text"
        position = found + len(fragment)
    return None


def evidence_problem(quote: str, text: str) -> str | None:
    """Why `quote` is not verbatim evidence from `text`, or None when it is."""
    haystack = normalise(text)
    problem = _fragments_in_order(quote, haystack)
    stripped = quote.strip()
    if problem is not None:
        for left, right in _WRAPPERS:
            wrapped = len(stripped) > 2 and stripped[0] == left and stripped[-1] == right
            if wrapped and _fragments_in_order(stripped[1:-1], haystack) is None:
                return None
    return problem
