"""The numbers a run or a suite reads from `LL_*` environment variables, checked before it starts.

Each variable is read where it is used, often late (the history's busy timeout only when the
database is held, the check memory limit when the first check process starts), so a bad value
would be found halfway, or never. `check_numbers` reads each one at once and raises its
`UsageError` (one sentence naming the variable, its value and what it takes): exit 2 before the
first step. The LLM settings (`LL_LLM_*`, `LL_JUDGE_*`) are checked by the LLM preflight, for a
run or suite that calls a model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from engine.judges.check_process import DEFAULT_MEMORY, MEMORY_ENV
from engine.processes.group import output_cap, size_setting
from engine.runtime.history import busy_timeout


def check_numbers(env: Mapping[str, str] | None = None) -> None:
    """Raise the `UsageError` of the first bad `LL_MAX_OUTPUT_BYTES` (in `env`, the run's
    environment), `LL_CHECK_MEMORY_BYTES` or `LL_HISTORY_BUSY_TIMEOUT` (the process's: check
    processes and the history are the process's)."""
    output_cap(env)
    size_setting(MEMORY_ENV, DEFAULT_MEMORY, os.environ)
    busy_timeout()
