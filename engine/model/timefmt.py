"""How a duration and a count are written for people, the same in the live progress line,
`status`, `explain` and the run summary: `4.2s`, `3m07s`, `2h05m`; `1 step`, `2 steps`; and
the one way our timestamps (`2026-11-30T14:43:52.123Z`) are read back."""

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


def epoch_seconds(stamp: str) -> float | None:
    """A timestamp of a run's files (ISO 8601, `Z` or an offset) as seconds since the epoch;
    None when it is not one."""
    from datetime import datetime  # only where a time is read back

    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
