"""How a duration and a count are written for people, the same in the live progress line,
`status`, `explain` and the run summary: `4.2s`, `3m07s`, `2h05m`; `1 step`, `2 steps`."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """`seconds` in the largest two units that matter (tenths below a minute)."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def counted(n: int, noun: str) -> str:
    """`1 step`, `0 steps`, `2 steps` (nouns with a plain plural: every one we count)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
