"""little-loops' `llm_structured` with its own answer `schema` (a verdict enum), converted.

There, the judge model answered one of the schema's verdicts, routed by `on_<verdict>` (or a
route table), with no evidence check, judging the action's output whatever its exit code.
ll-loop's judge answers a fixed set of verdicts, so the converted loop asks an agent for the
verdict instead: a prompt state with the judge's prompt and the output, told to print the
verdict alone on its last line, judged by `classify` with the schema's verdicts. A state with an
action captures its output and goes on (whatever its exit) to `NAME_judge`; a state without
one (which judged an empty output) becomes the prompt itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.migrate.routes import UNROUTED, is_verdict_route, output_capture

if TYPE_CHECKING:
    from engine.migrate.convert import LoopJob

_VERDICT = re.compile(r"^[a-z][a-z0-9_]*$")
_DEFAULT_PROMPT = "Evaluate whether this action succeeded based on its output."


def custom_verdicts(evaluate: Any) -> list[str]:
    """The verdicts of a custom llm_structured schema (empty: the judge's own are used)."""
    if not isinstance(evaluate, Mapping) or evaluate.get("type") != "llm_structured":
        return []
    try:
        allowed = evaluate["schema"]["properties"]["verdict"]["enum"]
    except (KeyError, TypeError):
        return []
    if not isinstance(allowed, list):
        return []
    return list(dict.fromkeys(str(v) for v in allowed))


def custom_judge(
    name: str,
    body: Mapping[str, Any],
    out: dict[str, Any],
    where: str,
    job: LoopJob,
    *,
    partial: bool,
) -> None:
    """Turn the classify placeholder for a custom schema into an agent's verdict (see above)."""
    evaluate = body.get("evaluate")
    verdicts = custom_verdicts(evaluate)
    if not verdicts or partial or "next" in body or out.get("evaluate") is None:
        return
    assert isinstance(evaluate, Mapping)
    names = [v.lower() for v in verdicts if v.lower() != "error"]
    odd = [v for v in names if not _VERDICT.match(v)]
    if odd:
        job.note(
            "blocker", f"{where}.evaluate.schema",
            f"verdicts {', '.join(map(repr, odd))} cannot be verdict names (lower-case letters, "
            "digits and _)",
        )  # fmt: skip
        return
    kept = {*names, "error"}
    routes = {k: out.pop(k) for k in list(out) if is_verdict_route(k) and k[3:] in kept}
    for key in [k for k in out if is_verdict_route(k)]:
        del out[key]  # a verdict the schema never allowed: its route never applied
    if "route" in out:
        table = {k: v for k, v in out.pop("route").items() if k in kept or k.startswith("_")}
        for verdict in names:
            table.setdefault(verdict, UNROUTED)
        routes["route"] = table
    else:
        for verdict in names:
            routes.setdefault(f"on_{verdict}", UNROUTED)  # little-loops ended the run there
    judged = out.pop("evaluate")
    judged["verdicts"] = names
    prompt = job.rewriter.text(str(evaluate.get("prompt") or _DEFAULT_PROMPT)).rstrip()
    answer = (
        f"Answer with exactly one of these verdicts: {', '.join(verdicts)}. "
        "End with a last line that holds only that verdict."
    )
    job.agent = True
    if "action" in out:
        capture = output_capture(out, name)
        check = f"{name}_judge"
        output = f"${{captured.{capture}.output}}"
        job.extra_states[check] = {
            "description": f"little-loops' judge of {name}, with its own verdicts",
            "action": f"{prompt}\n\n<action_output>\n{output}\n</action_output>\n\n{answer}\n",
            "action_type": "prompt",
            "evaluate": judged,
            **routes,
        }
        out["next"] = check
        out["on_error"] = check  # little-loops judged a failed action's output too
        where_judged = f"state {check} (one more step)"
    else:
        out["action"] = f"{prompt}\n\n<action_output>\n</action_output>\n\n{answer}\n"
        out["action_type"] = "prompt"
        out["evaluate"] = judged
        out.update(routes)
        where_judged = "this state, now a prompt"
    job.note(
        "changed", f"{where}.evaluate.schema",
        f"the judge's own verdicts ({', '.join(verdicts)}) are asked of an agent in "
        f"{where_judged}, which prints one on its last line, read by classify",
    )  # fmt: skip
