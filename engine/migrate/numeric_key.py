"""little-loops' `output_numeric` with `key:`, converted into a state of its own.

There, `key: score` compared the number of the last `score=<number>` in the output (spaces
allowed around `=`) instead of the whole output; no such field was verdict `error`. ll-loop's
`output_numeric` reads the whole output (or a `source:`), so the converted state captures its
output and goes to a state that prints that number (nothing when there is none, which
`output_numeric` judges `error`) and judges it with the state's operator and target, routed as
the state was. A failed action is still `error` before anything is judged, in both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.migrate.routes import output_capture, take_routes

if TYPE_CHECKING:
    from engine.migrate.convert import LoopJob

# little-loops' number after `key\s*=\s*`, written for grep -E (one line at a time)
NUMBER = r"[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?"
_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


def output_numeric_key(
    name: str,
    body: Mapping[str, Any],
    out: dict[str, Any],
    where: str,
    job: LoopJob,
    *,
    partial: bool,
) -> None:
    """Move the judging of `key`'s number into `NAME_key` (see the module's docstring)."""
    evaluate = body.get("evaluate")
    if not isinstance(evaluate, Mapping) or evaluate.get("type") != "output_numeric":
        return
    if "key" not in evaluate:
        return
    key, at = evaluate["key"], f"{where}.evaluate.key"
    if partial or "next" in body or "source" in evaluate or out.get("evaluate") is None:
        job.note(
            "blocker", at,
            "output_numeric reads the whole output as a number: print only the number "
            "(key: is converted only on a state's own output, routed by its verdict)",
        )  # fmt: skip
        return
    if not isinstance(key, str) or not _KEY.match(key):
        job.note("blocker", at, "a key of letters, digits, _ . - only: print only the number")
        return
    capture = output_capture(out, name)
    check = f"{name}_key"
    pattern = re.escape(key).replace("\\-", "-") + "[[:space:]]*=[[:space:]]*" + NUMBER
    routes = take_routes(out)
    error = routes.get("on_error") or mapping_get(routes.get("route"), "error", "_error", "_")
    job.extra_states[check] = {
        "description": f"little-loops' output_numeric key {key!r} of {name}: the number of "
        f"the last {key}=<number> in its output",
        "action": f'printf "%s\\n" "${{captured.{capture}.output}}" | grep -oE \'{pattern}\' '
        "| tail -n 1 | sed -E 's/^[^=]*=[[:space:]]*//'\n",
        "evaluate": out.pop("evaluate"),
        **routes,
    }
    out["next"] = check
    if isinstance(error, str):
        out["on_error"] = error  # the action failed: error, before any number is read
    job.note(
        "changed", at,
        f"the number after the last {key}= in the output is judged by state {check} (one "
        "more step); a key= split across lines is not found there",
    )  # fmt: skip


def mapping_get(table: Any, *keys: str) -> Any:
    """The first of `keys` a route table has."""
    if not isinstance(table, Mapping):
        return None
    return next((table[k] for k in keys if k in table), None)
