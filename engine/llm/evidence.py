"""Checking a judge's evidence quote against the judged text (pure).

A `yes`/`partial` is only believed when its `evidence` is a verbatim quote of the judged text.
Matching is case-sensitive and whitespace-normalised (every run of whitespace is one space), and an
ellipsis (`...` or `…`) splits the quote into fragments that must each occur, in order. One layer
of quotation marks around the whole quote is forgiven, since models like to add them. When the
judge was shown a shortened text, the quote is checked against what it was shown, part by part.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SPACE = re.compile(r"\s+")
_ELLIPSIS = re.compile(r"\.\.\.+|…")
_WRAPPERS = (('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("`", "`"))
_CONTRACT = re.compile(r"verbatim|quot(e|es|ed|ation|ing)\b|evidence", re.IGNORECASE)


def normalise(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def has_evidence_contract(prompt: str) -> bool:
    """Does the prompt already demand verbatim evidence (a quote) for the verdict?"""
    return _CONTRACT.search(prompt) is not None


def _missing(fragment: str, haystacks: Sequence[str], shortened: bool) -> str:
    """Why a fragment was not found after the previous one."""
    if any(fragment in haystack for haystack in haystacks):
        return f"the evidence fragment {fragment!r} occurs in the text, but out of order"
    if not shortened:
        return f"the evidence {fragment!r} does not occur in the judged text"
    if fragment in normalise(" ".join(haystacks)):
        return (
            f"the evidence {fragment!r} runs across the omission marker: it does not occur in "
            "the judged text as shortened for the judge"
        )
    return f"the evidence {fragment!r} does not occur in the judged text as shortened for the judge"


def _fragments_in_order(quote: str, haystacks: Sequence[str], shortened: bool) -> str | None:
    fragments = [normalise(f) for f in _ELLIPSIS.split(quote)]
    fragments = [f for f in fragments if f]
    if not fragments:
        return "the evidence is empty"
    part, position = 0, 0
    for fragment in fragments:
        while part < len(haystacks):
            found = haystacks[part].find(fragment, position)
            if found >= 0:
                position = found + len(fragment)
                break
            part, position = part + 1, 0
        else:
            return _missing(fragment, haystacks, shortened)
    return None


def evidence_problem(
    quote: str, text: str | Sequence[str], *, shortened: bool = False
) -> str | None:
    """Why `quote` is not verbatim evidence from `text`, or None when it is.

    `text` is the judged text, or its parts: the pieces of an LLM judge's material (stdout, each
    file, the conversation), or, `shortened`, the parts of a text a judge was shown when it was
    shortened (head, tail). Each fragment must lie within one part, since nothing across two
    parts (or the omission) was one text, while `...` may skip from one part to a later one as
    it skips any text. Only a shortened text's problem speaks of shortening.
    """
    parts = [text] if isinstance(text, str) else list(text)
    haystacks = [normalise(part) for part in parts] or [""]
    problem = _fragments_in_order(quote, haystacks, shortened)
    stripped = quote.strip()
    if problem is not None:
        for left, right in _WRAPPERS:
            wrapped = len(stripped) > 2 and stripped[0] == left and stripped[-1] == right
            if wrapped and _fragments_in_order(stripped[1:-1], haystacks, shortened) is None:
                return None
    return problem


def reason_after_check(reason: str, evidence_check: object) -> str:
    """The model's reason, led by the evidence check when that turned its pass (a `yes`) into a
    fail: the reason argues for a pass, and a report, a fix prompt or a harness result would read
    it as the cause of the failure."""
    if (
        isinstance(evidence_check, str)
        and " rejected: " in evidence_check
        and not reason.startswith(evidence_check)  # said so already (an `llm_structured` reason)
    ):
        return f"{evidence_check}; the model's reason: {reason}"
    return reason
