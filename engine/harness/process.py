"""Run one subject process with a wall-clock timeout that kills its whole process group (IO).

The harness runs argv lists (a `bash -c` command, or a nested `ll-loop run`), so it has its own
small runner instead of the interpreter's script-oriented one. A sample that overruns `--timeout`
must not leave a `sleep` behind, so the child gets its own session and the group is signalled.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from engine.model.ports import ActionResult
from engine.runtime.actions import signal_group

GRACE_SECONDS = 2.0


def run_process(
    argv: Sequence[str],
    *,
    timeout: float | None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> ActionResult:
    """Run `argv` to completion or timeout; never raises for a failing or unspawnable command."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return ActionResult(output="", exit_code=None, spawn_error=str(exc))
    timed_out = False
    try:
        out, err = proc.communicate(stdin.encode() if stdin is not None else None, timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        out, err = _kill_group(proc)
    except BaseException:
        # Ctrl-C or SIGTERM: the subject has a session of its own, so the terminal's signal
        # never reached it; without this it would outlive the harness, still running.
        _kill_group(proc)
        raise
    code = proc.returncode
    killed = code is not None and code < 0
    return ActionResult(
        output=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        exit_code=None if killed or timed_out else code,
        duration_ms=int((time.monotonic() - start) * 1000),
        timed_out=timed_out,
        signal=-code if killed and not timed_out else None,
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """SIGTERM the group, SIGKILL it after a grace period, and collect what was written."""
    signal_group(proc.pid, signal.SIGTERM)
    try:
        return proc.communicate(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        signal_group(proc.pid, signal.SIGKILL)
        return proc.communicate()
    except BaseException:  # a second Ctrl-C during the grace: no more waiting
        signal_group(proc.pid, signal.SIGKILL)
        raise
