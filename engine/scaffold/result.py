"""What a scaffolder returns: the loop text and the placeholders a person still has to fill."""

from __future__ import annotations

import re
from dataclasses import dataclass

PLACEHOLDER_RE = re.compile(r"<FILL:\s*(.*?)>")


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
