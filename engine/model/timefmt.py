"""How a duration is written for people, the same in the live progress line, `status` and the
run summary: `4.2s`, `3m07s`, `2h05m`."""

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
