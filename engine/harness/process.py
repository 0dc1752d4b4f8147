"""How `ll-harness` runs one subject process: `engine.shell.process`, with a longer grace.

Between SIGTERM and SIGKILL of a sample's group the harness waits longer than an action's own
grace, because a nested `ll-loop run` (the `loop` subject) stops its action first — SIGTERM,
SIGKILL after that grace — and an action lives in a group of its own, which our SIGKILL would
not reach.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from engine.model.ports import ActionResult
from engine.runtime.actions import GRACE_SECONDS as ACTION_GRACE_SECONDS
from engine.shell import process

GRACE_SECONDS = ACTION_GRACE_SECONDS + 3.0


def run_process(
    argv: Sequence[str],
    *,
    timeout: float | None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    max_output: int | None = None,
) -> ActionResult:
    """One subject process to completion or timeout (`engine.shell.process.run_process`)."""
    return process.run_process(
        argv,
        timeout=timeout,
        cwd=cwd,
        env=env,
        stdin=stdin,
        max_output=max_output,
        grace=GRACE_SECONDS,
    )
