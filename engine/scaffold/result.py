"""What a scaffolder returns: the loop text and the placeholders a person still has to fill."""

from __future__ import annotations

import re
from dataclasses import dataclass

# One line, up to the first `>`, never across another `<`: the marker text is stripped by its
# reader. `<FILL:\s*(.*?)>` scanned to the line's end from every unclosed `<FILL:`, so an
# issue repeating that text made lint take minutes.
PLACEHOLDER_RE = re.compile(r"<FILL:([^<>\n]*)>")


@dataclass(frozen=True)
class Placeholder:
    """Something the issue lacks, left as `<FILL: what>` at `path` for a person to write."""

    issue_id: str
    path: str
    what: str


@dataclass(frozen=True)
class Scaffold:
    """A generated loop: its name, YAML text, and the placeholders left in it."""

    name: str
    text: str
    variant: str
    issue_ids: tuple[str, ...]
    placeholders: tuple[Placeholder, ...] = ()
