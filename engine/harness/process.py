"""How `ll-harness` runs one subject process: `engine.processes.group`, with a longer grace.

Between SIGTERM and SIGKILL of a sample's group the harness waits longer than an action's own
grace, because a nested `ll-loop run` (the `loop` subject) stops its action first — SIGTERM,
SIGKILL after that grace — and an action lives in a group of its own, which our SIGKILL would
not reach.
"""

from __future__ import annotations

import functools

from engine.processes import group as process
from engine.runtime.actions import GRACE_SECONDS as ACTION_GRACE_SECONDS

GRACE_SECONDS = ACTION_GRACE_SECONDS + 3.0

# One subject process to completion or timeout (`engine.processes.group.run_process`).
run_process = functools.partial(process.run_process, grace=GRACE_SECONDS)
