"""How `ll-harness` runs one subject process: `engine.processes.group`, with a longer grace.

Between SIGTERM and SIGKILL of a sample's group the harness waits longer than an action's own
grace, because a nested `ll-loop run` (the `loop` subject) stops its action first — SIGTERM,
SIGKILL after that grace — and an action lives in a group of its own, which our SIGKILL would
not reach.
"""

from __future__ import annotations

import functools

from engine.processes import group as process

GRACE_SECONDS = process.GRACE_SECONDS + 3.0  # an action's own grace, and time to end it

# One subject process to completion or timeout (`engine.processes.group.run_process`).
run_process = functools.partial(process.run_process, grace=GRACE_SECONDS)
