"""The harness's refusals: asked to measure something it cannot measure honestly (exit 2).

A refusal happens before any sample runs, so a loop routing on the exit code can tell "nothing
was measured" (2) from "the subject failed" (1).
"""

from __future__ import annotations

from engine.model.errors import UsageError


class Refusal(UsageError):
    """ll-harness will not run: one sentence saying why, and a hint saying what to do."""

    code = "HARNESS"
