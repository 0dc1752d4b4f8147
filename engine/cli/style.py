"""Colour on a terminal, never elsewhere: `NO_COLOR` (https://no-color.org) turns it off,
`TERM=dumb` too, and a pipe or file never gets escape codes. typer's help (rich) reads
`NO_COLOR` itself."""

from __future__ import annotations

import os
from typing import TextIO

_CODES = {"red": "31", "green": "32", "yellow": "33", "bold": "1", "dim": "2"}


def colour_allowed(stream: TextIO) -> bool:
    """True when `stream` is a terminal that may get colour."""
    if os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, style: str, stream: TextIO) -> str:
    """`text` in `style` (red, green, yellow, bold, dim) when `stream` may get colour."""
    if not colour_allowed(stream):
        return text
    return f"\x1b[{_CODES[style]}m{text}\x1b[0m"
