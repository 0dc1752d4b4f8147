"""little-loops' `harbor_scorer` evaluator, converted into a state of its own.

There, a benchmark scorer's exit code and output were the verdict: a non-zero exit was `no`
(124, a timeout, was `error`), and an exit 0 was `yes` when the output (stripped) parsed as a
Python float, else `error`. ll-loop judges a failed action `error` before any evaluator, and
none reads a float the way Python does, so the converted state captures the scorer's output,
goes on whatever its exit (`next:` and `on_error:`), and a state `NAME_score` gives that verdict
as an exit code (0 yes, 1 no, 2 error), routed as the state was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.migrate.exit_codes import TIMED_OUT
from engine.migrate.routes import output_capture, take_routes

if TYPE_CHECKING:
    from engine.migrate.convert import LoopJob


def harbor_scorer(
    name: str,
    body: Mapping[str, Any],
    out: dict[str, Any],
    where: str,
    job: LoopJob,
    *,
    partial: bool,
) -> None:
    """Move the judging of the scorer into `NAME_score` (see the module's docstring)."""
    evaluate = body.get("evaluate")
    if not isinstance(evaluate, Mapping) or evaluate.get("type") != "harbor_scorer":
        return
    if partial or "next" in body or out.get("evaluate") is None:
        return  # a fragment: kept in each state using it; next: never judged
    capture = output_capture(out, name)
    result = f"captured.{capture}"
    source = evaluate.get("source")
    text = job.rewriter.text(source) if isinstance(source, str) else f"${{{result}.output}}"
    check = f"{name}_score"
    routes = take_routes(out)
    out.pop("evaluate")
    job.extra_states[check] = {
        "description": f"little-loops' harbor_scorer of {name}: exit 0 and a number printed is "
        "yes, another exit no, a timeout or no number error",
        "action": f'case "${{{result}.exit_code if not {result}.timed_out else {TIMED_OUT}}}" '
        f"in\n  {TIMED_OUT}) exit 2 ;;\n  0) ;;\n  *) exit 1 ;;\nesac\n"
        "python3 -c 'import sys; float(sys.argv[1].strip())' "
        f'"{text}" 2>/dev/null || exit 2\n',
        "evaluate": {"type": "exit_code"},
        **routes,
    }
    out["next"] = check
    out["on_error"] = check  # a failed scorer is judged there too: no, not error
    job.note(
        "changed", f"{where}.evaluate",
        f"harbor_scorer is judged by state {check} (one more step): exit 0 and a number "
        f"printed is yes, another exit no, a timeout ({TIMED_OUT}) or no number error",
    )  # fmt: skip
