"""What a scaffolder returns: the loop text and the placeholders a person still has to fill."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.errors import Diagnostic

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

    def diagnostics(self, file: str = "") -> list[Diagnostic]:
        """One warning per placeholder, positioned in the text, saying what to fill.

        Lint's `placeholder` rule (LL060) is the one implementation; this asks it.
        """
        from engine.load import check_loop_text
        from lint import lint_loop

        loop, positions, problems = check_loop_text(self.text, file)
        if loop is None:
            return problems
        return [d for d in lint_loop(loop, positions) if d.code == "LL060"]
