"""little-loops' `retryable_exit_codes`, converted into a state of its own.

There, a state that failed (a `next:` state's non-zero exit, or verdict `error`) with an exit
code not in the list skipped its retries: it went to `on_retry_exhausted` at once (to
`on_error` when it had none, where every failure goes anyway). A timed-out action exited 124.
ll-loop routes on verdicts, not exit codes, so the converted state sends `error` to a state
that reads the failed action's exit code from its capture and goes where `error` went (the
retry) for a listed code, else to `on_retry_exhausted`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.migrate.routes import our_target, output_capture

if TYPE_CHECKING:
    from engine.migrate.convert import LoopJob

TIMED_OUT = 124  # the exit code little-loops gave an action its timeout ended


def retryable_exit_codes(
    name: str,
    body: Mapping[str, Any],
    out: dict[str, Any],
    where: str,
    job: LoopJob,
    *,
    partial: bool,
) -> None:
    """Keep the skipped retries of a non-retryable exit code (see the module's docstring)."""
    if "retryable_exit_codes" not in body:
        return
    key = f"{where}.retryable_exit_codes"
    if partial:
        job.note("dropped", key, "in a fragment: write it in each state that uses the fragment")
        return
    codes = body["retryable_exit_codes"]
    if not isinstance(codes, list) or not all(_code(c) for c in codes):
        job.note("blocker", key, "retryable_exit_codes must be a list of exit codes (1-255)")
        return
    table = out.get("route") if isinstance(out.get("route"), dict) else None
    shorthand = {k[3:]: v for k, v in out.items() if k.startswith("on_") and isinstance(v, str)}
    retry = our_target("error", shorthand, table)
    exhausted = out.get("on_retry_exhausted", body.get("on_retry_exhausted"))
    if retry is None:
        job.note("dropped", key, "without on_error little-loops ignored it")
        return
    if not isinstance(exhausted, str) or exhausted == retry:
        job.note(
            "dropped", key,
            "without on_retry_exhausted a non-retryable failure went to on_error, where every "
            "failure goes here: nothing changes",
        )  # fmt: skip
        return
    capture = output_capture(out, name)
    check = f"{name}_exit_code"
    result = f"captured.{capture}"
    listed = " | ".join(str(c) for c in sorted(set(codes)))
    job.extra_states[check] = {
        "description": f"little-loops' retryable_exit_codes of {name}: a failure with another "
        "exit code skipped its retries",
        "action": f'case "${{{result}.exit_code if not {result}.timed_out else {TIMED_OUT}}}" in\n'
        f"  {listed}) exit 0 ;;\n  *) exit 1 ;;\nesac\n",
        "on_yes": retry,
        "on_no": exhausted,
        "on_error": exhausted,
    }
    if table is not None:
        table["error"] = check
    else:
        out["on_error"] = check
    job.note(
        "changed", key,
        f"a failure whose exit code is not listed ({listed}; a timeout counts as {TIMED_OUT}) "
        f"goes to {exhausted} at once, as in little-loops, through state {check} (one more "
        "step)",
    )  # fmt: skip


def _code(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 256
