"""`diff_stall`: is the work tree still changing? (`git diff --stat`, N checks in a row).

A fix loop that keeps "fixing" without touching a file is stuck; this evaluator notices. Each
check runs `git diff --stat` over the evaluator's `scope` (else the loop's, else the whole work
tree) in the run's working directory and compares a digest of it with the digest the state saw
last time: a change (or the first check) is `progress`; `max_stall` unchanged checks in a row are
`stall`; a failing `git` is `error`. The memory lives in the run state, so resume keeps it.
"""

from __future__ import annotations

import hashlib
import shlex
from typing import TYPE_CHECKING

from engine.judges.evaluators import crash_verdict, error, stall_window
from engine.model.errors import InterpolationError
from engine.model.loop import Evaluate, Loop, State
from engine.model.ports import Verdict

if TYPE_CHECKING:
    from engine.runtime.interpreter import Namespaces, RunState, Runtime

GIT_TIMEOUT_S = 30.0


def diff_stall(
    spec: Evaluate, state: State, loop: Loop, rs: RunState, rt: Runtime, ns: Namespaces
) -> Verdict:
    """The verdict of one `diff_stall` check; remembers the digest and the stall count."""
    try:
        paths = [ns.render_text(p) for p in (spec.scope or loop.scope or ())]
    except InterpolationError as exc:
        return error(exc.message)
    command = "git diff --stat"
    if paths and paths != ["."]:
        command += " -- " + " ".join(shlex.quote(p) for p in paths)
    result = rt.actions.run_shell(command, state=state.name, timeout=GIT_TIMEOUT_S)
    if result.crashed:
        return crash_verdict(result)
    if result.exit_code != 0:
        why = (result.stderr or result.output).strip().splitlines()[:1]
        return error(f"`{command}` failed: {why[0] if why else 'exit ' + str(result.exit_code)}")
    digest = hashlib.sha256(result.output.encode("utf-8", "replace")).hexdigest()[:16]
    previous = rs.diffs.get(state.name)
    rs.diffs[state.name] = digest
    verdict, stalled = stall_window(
        previous != digest, rs.stalls.get(state.name, 0), spec.max_stall
    )
    rs.stalls[state.name] = stalled
    files = sum(1 for line in result.output.splitlines() if "|" in line)
    return Verdict(
        verdict,
        {"changed": previous != digest, "stalled": stalled, "max_stall": spec.max_stall,
         "files": files, "paths": paths or ["."]},
    )  # fmt: skip
