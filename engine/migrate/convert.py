"""One little-loops state (or fragment) → one ll-loop state.

Keys are renamed or dropped per `engine.migrate.keys`; actions, prompts and evaluator texts go
through the expression rewriter; evaluators are converted (`classify` declares its verdicts,
`diff_stall` routes progress/stall); routes are planned by `engine.migrate.routes` so each
verdict goes where little-loops sent it. A fragment is converted the same way but only key by
key (`partial=True`): its routes are planned in the states that use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.load.loader import DEFAULT_JUDGE_PROMPT
from engine.migrate.custom_judge import custom_judge, custom_verdicts
from engine.migrate.exit_codes import retryable_exit_codes
from engine.migrate.expressions import Rewriter
from engine.migrate.harbor import harbor_scorer
from engine.migrate.keys import fate
from engine.migrate.numeric_key import output_numeric_key
from engine.migrate.report import FileReport
from engine.migrate.routes import (
    UNROUTED,
    Routing,
    our_target,
    output_capture,
    plan_routes,
    set_route,
    their_target,
)
from engine.migrate.source import mapping
from engine.model.loop import VERDICTS

AGENT_CLI = "claude --dangerously-skip-permissions -p"
FAILURE_NAMES = frozenset({"failed", "error", "aborted", "finalize_aborted"})

_VERDICT = re.compile(r"^[a-z][a-z0-9_]*$")
_JSON_PATH = re.compile(r"^\.([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)?$")
_HANDLED = frozenset(
    {
        "description", "action", "action_type", "timeout", "capture", "evaluate", "loop",
        "with", "next", "route", "terminal", "failure", "max_retries", "on_retry_exhausted",
        "model", "agent", "tools", "params", "context_passthrough", "fragment",
        "retryable_exit_codes",
    }
)  # fmt: skip
_NOT_ROUTES = frozenset({"on_retry_exhausted", "on_terminal"})
_SUMMARY_KEYS = ("description", "action", "action_type", "runner", "model", "timeout", "capture")
_ON_ROUTE = re.compile(r"^on_[A-Za-z0-9_]+$")


@dataclass
class LoopJob:
    """What converting one file's states reads and adds to."""

    report: FileReport
    rewriter: Rewriter
    context: Mapping[str, Any] = field(default_factory=dict)
    agent: bool = False  # some state runs a prompt: the loop needs the agent CLI runner
    bindings: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # state -> with:
    on_max_steps: str | None = None  # little-loops ran this state's action even if terminal
    extra_states: dict[str, dict[str, Any]] = field(default_factory=dict)  # states to add

    def note(self, kind: Any, where: str, message: str) -> None:
        self.report.note(kind, where, message)


def convert_state(
    name: str, body: Mapping[str, Any], job: LoopJob, *, partial: bool = False
) -> dict[str, Any]:
    """The ll-loop form of one state (or, with `partial`, of one fragment)."""
    where = f"fragments.{name}" if partial else f"states.{name}"
    outer, job.rewriter.where = job.rewriter.where, where
    body = _renamed(dict(body), where, job)
    out: dict[str, Any] = {}
    if isinstance(body.get("description"), str):
        out["description"] = body["description"]
    gate = mcp_gate(body)
    _action(body, out, where, job, partial, gate)
    if _positive(body.get("timeout")):
        out["timeout"] = body["timeout"]
    elif "timeout" in body:
        job.note("dropped", f"{where}.timeout", "a timeout of 0 or none means no limit here")
    if isinstance(body.get("capture"), str):
        out["capture"] = _identifier(body["capture"])
    stall = body.get("evaluate", {}).get("type") if isinstance(body.get("evaluate"), dict) else None
    if stall in _HISTORY_STALLS and not partial:
        out["action"] = _history_stall(
            out.get("action"), body["evaluate"], f"{where}.evaluate", job
        )
        out.setdefault("action_type", "shell")
    elif stall in _HISTORY_STALLS:
        pass  # emulated in each state that uses the fragment
    elif gate:
        out["evaluate"] = {"type": "classify", "verdicts": list(MCP_VERDICTS)}
    elif custom_verdicts(body.get("evaluate")) and not partial:
        out["evaluate"] = {"type": "classify"}  # the schema's verdicts, asked of an agent
    elif custom_verdicts(body.get("evaluate")):
        job.note(
            "changed", f"{where}.evaluate.schema",
            "its own verdicts are asked of an agent in each state that uses this fragment",
        )  # fmt: skip
    elif stall == "harbor_scorer" and not partial:
        out["evaluate"] = {"type": "exit_code"}  # its verdicts, routed; judged by NAME_score
    elif stall == "harbor_scorer":
        job.note(
            "changed", f"{where}.evaluate",
            "harbor_scorer is judged in each state that uses this fragment (NAME_score)",
        )  # fmt: skip
    elif isinstance(body.get("evaluate"), dict):
        evaluate = convert_evaluate(body["evaluate"], body, f"{where}.evaluate", job)
        if evaluate:
            out["evaluate"] = evaluate
    if isinstance(body.get("loop"), str):
        out["loop"] = job.rewriter.text(body["loop"])
        bindings = {
            k: pasted_text(v, f"{where}.with.{k}", job)
            for k, v in job.rewriter.value(mapping(body.get("with"))).items()
        }
        for key, value in job.bindings.get(name, {}).items():
            bindings.setdefault(key, value)
        if bindings:
            out["with"] = bindings
    elif "with" in body and not partial:
        job.note("dropped", f"{where}.with", "with: binds a sub-loop's parameters; no loop:")
    if partial:
        _copy_routes(body, out)
    elif body.get("terminal") and name == job.on_max_steps and "action" in out:
        job.note(
            "changed", where,
            "the on_max_steps state is no longer terminal: its action runs once when the "
            "budget is spent, as in little-loops",
        )  # fmt: skip
        for key in [k for k in out if k not in _SUMMARY_KEYS]:
            del out[key]
    elif body.get("terminal"):
        for key in [k for k in out if k not in ("description",)]:
            del out[key]
        out["terminal"] = True
        failure = body.get("failure", name in FAILURE_NAMES)
        if failure:
            out["failure"] = True
            if "failure" not in body:
                job.note(
                    "changed", f"{where}.failure",
                    "little-loops treats a terminal with this name as a failure; written out",
                )  # fmt: skip
        _dead_on_terminal(body, where, job)
    elif gate:
        _mcp_routes(body, out, where, job)
    else:
        _routes(name, body, out, where, job)
        _name_current(name, out)
        _error_patterns(name, body, out, where, job)
    if isinstance(body.get("max_retries"), int) and isinstance(body.get("on_retry_exhausted"), str):
        if partial or _routes_to_itself(name, out):
            out["max_retries"] = body["max_retries"]
            out["on_retry_exhausted"] = body["on_retry_exhausted"]
        else:
            job.note(
                "dropped", f"{where}.max_retries",
                "little-loops counted only consecutive re-entries of a state, and this one never "
                "routes to itself, so its retries were never used up; ll-loop would count "
                "entries along a cycle instead (add max_retries back if that is what you want)",
            )  # fmt: skip
    elif "max_retries" in body or "on_retry_exhausted" in body:
        job.note(
            "dropped", f"{where}.max_retries",
            "max_retries and on_retry_exhausted only work together",
        )  # fmt: skip
    if not out.get("terminal"):
        output_numeric_key(name, body, out, where, job, partial=partial)
        harbor_scorer(name, body, out, where, job, partial=partial)
        custom_judge(name, body, out, where, job, partial=partial)
        retryable_exit_codes(name, body, out, where, job, partial=partial)
    _drop_the_rest(body, where, job)
    job.rewriter.where = outer
    return out


# --- actions ------------------------------------------------------------------------------------


def _action(
    body: Mapping[str, Any],
    out: dict[str, Any],
    where: str,
    job: LoopJob,
    partial: bool,
    gate: bool = False,
) -> None:
    action = body.get("action")
    kind = body.get("action_type")
    if kind is None and isinstance(action, str) and action.startswith("/"):
        kind = "slash_command"
    if kind == "mcp_tool" and isinstance(action, str):
        action, kind = _mcp_prompt(action, body.get("params"), where, job, gate), "prompt"
    elif kind == "mcp_tool":
        job.note("blocker", where, "mcp_tool needs action: SERVER/TOOL")
    if kind == "slash_command":
        kind = "prompt"
        job.note(
            "changed", f"{where}.action_type",
            "slash_command runs as a prompt through the agent CLI (llm.runner)",
        )  # fmt: skip
    if kind not in (None, "shell", "prompt", "mcp_tool"):
        job.note("blocker", f"{where}.action_type", f"action type {kind!r} has no equivalent")
        kind = None
    if isinstance(action, str) and action.strip():
        out["action"] = (
            job.rewriter.text(action) if kind == "prompt" else job.rewriter.shell(action)
        )
    if kind == "prompt":
        job.agent = True
        out["action_type"] = "prompt"
        flags = _agent_flags(body)
        if flags:
            out["runner"] = f"cmd:{AGENT_CLI} {flags}"
    elif kind == "shell" and ("action" in out or partial):
        out["action_type"] = "shell"
    if isinstance(body.get("model"), str):
        out["model"] = body["model"]


def _agent_flags(body: Mapping[str, Any]) -> str:
    """The flags little-loops gave the agent CLI for this state."""
    flags = []
    if isinstance(body.get("agent"), str):
        flags.append(f"--agent {_word(body['agent'])}")
    if isinstance(body.get("tools"), list) and body["tools"]:
        flags.append(f"--tools {_word(','.join(map(str, body['tools'])))}")
    if isinstance(body.get("model"), str):
        flags.append(f"--model {_word(body['model'])}")
    return " ".join(flags)


def _word(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _mcp_prompt(action: str, params: Any, where: str, job: LoopJob, gate: bool) -> str:
    server, _, tool = action.partition("/")
    if not server.strip() or not tool.strip():
        job.note(
            "blocker", f"{where}.action",
            f"mcp_tool needs action: SERVER/TOOL, got {action!r} (little-loops would have "
            "asked mcp-call for it and failed)",
        )  # fmt: skip
    arguments = json.dumps(params or {}, ensure_ascii=False, sort_keys=True)
    job.note(
        "changed", f"{where}.action_type",
        "mcp_tool: ll-loop has no deterministic MCP tool action, so an agent is asked to call "
        f"{action!r} (its MCP server must be configured for the agent CLI)",
    )  # fmt: skip
    prompt = (
        f"Call the MCP tool `{tool or server}` of the MCP server `{server}` with exactly these "
        f"arguments (JSON): {job.rewriter.text(arguments)}\n"
        "Print only the tool's result, verbatim."
    )
    if gate:
        prompt += "\n" + _MCP_VERDICT_LINE
    return prompt


MCP_VERDICTS = ("success", "tool_error", "not_found", "timeout")
_MCP_VERDICT_LINE = (
    "Then, on a last line of its own, print exactly one word: SUCCESS if the tool ran and its "
    "result is not an error, TOOL_ERROR if the tool reported an error, NOT_FOUND if the server "
    "or the tool is not available to you, TIMEOUT if the call timed out."
)


def mcp_gate(body: Mapping[str, Any]) -> bool:
    """An mcp_tool state judged by little-loops' mcp_result (its default there): its verdicts
    are kept by asking the agent to name one on its last line and classifying that line."""
    if body.get("action_type") != "mcp_tool" or "next" in body:
        return False
    evaluate = body.get("evaluate")
    return evaluate is None or (isinstance(evaluate, dict) and evaluate.get("type") == "mcp_result")


# --- evaluators ---------------------------------------------------------------------------------


def convert_evaluate(
    body: Mapping[str, Any], state: Mapping[str, Any], where: str, job: LoopJob
) -> dict[str, Any]:
    """The ll-loop evaluate block (empty when the evaluator cannot be kept)."""
    kind = body.get("type")
    text = job.rewriter.text
    out: dict[str, Any] = {"type": kind} if kind is not None else {}
    if kind in ("action_stall", "mcp_result", "comparator", "contract"):
        job.note("blocker", f"{where}.type", f"evaluator {kind} has no equivalent in ll-loop")
        return {}
    if kind is not None and kind not in VERDICTS and kind != "classify":
        job.note("blocker", f"{where}.type", f"unknown evaluator type {kind!r}")
        return {}
    source = body.get("source")
    if isinstance(source, str):
        own = state.get("capture")
        if own and _reads_capture(source, str(own)):
            if re.fullmatch(r"\s*\$\{\s*captured\.[\w-]+\.output\s*\}\s*", source):
                job.note(
                    "changed", f"{where}.source",
                    "read the state's own capture (little-loops stores it before judging): "
                    "the action's output is judged directly",
                )  # fmt: skip
            else:
                job.note("blocker", f"{where}.source", "reads the state's own capture")
                out["source"] = text(source)
        else:
            out["source"] = text(source)
    own = state.get("capture")
    previous = body.get("previous")
    if own and isinstance(previous, str) and _reads_capture(previous, str(own)):
        job.note(
            "changed", f"{where}.previous",
            "reads this state's own capture, where little-loops had already stored this "
            "check's value: it compared the value with itself (stall, unless at the target); "
            "ll-loop reads the value of the previous check",
        )  # fmt: skip
    for key in ("pattern", "operator", "previous", "direction", "prompt"):
        if isinstance(body.get(key), str):
            out[key] = text(body[key]) if key in ("previous", "prompt") else body[key]
    if isinstance(out.get("pattern"), str) and not _compiles(out["pattern"]):
        out["pattern"] = re.escape(out["pattern"])
        job.note(
            "changed", f"{where}.pattern",
            "not a regular expression, so little-loops matched it as plain text: it is written "
            "escaped, to match the same text",
        )  # fmt: skip
    if "negate" in body:
        out["negate"] = bool(body["negate"])
    if "target" in body and body["target"] is not None:
        target = body["target"]
        out["target"] = text(target) if isinstance(target, str) else target
    if "path" in body:
        _json_path(body["path"], out, where, job)
    if "tolerance" in body:
        _tolerance(body["tolerance"], out, where, job)
    if kind in ("diff_stall", None) and isinstance(body.get("max_stall"), int):
        out["max_stall"] = body["max_stall"]
    if kind in ("diff_stall", None) and isinstance(body.get("scope"), list):
        out["scope"] = [text(str(p)) for p in body["scope"]]
    if kind == "llm_structured" and not body.get("uncertain_suffix"):
        out["min_confidence"] = 0  # little-loops' verdict never depended on its confidence
        if "min_confidence" in body:
            job.note(
                "changed", f"{where}.min_confidence",
                "little-loops read it only with uncertain_suffix, so a confident-or-not verdict "
                "stood; min_confidence: 0 keeps it (ll-loop would make it cannot_judge)",
            )  # fmt: skip
    elif "min_confidence" in body and isinstance(body["min_confidence"], int | float):
        out["min_confidence"] = body["min_confidence"]
    if "line" in body:
        if body["line"] in ("first", "last"):
            out["line"] = body["line"]
        else:
            job.note("dropped", f"{where}.line", "only line: first or last; the last is read")
    if kind == "llm_structured" and "prompt" not in out:
        out["prompt"] = DEFAULT_JUDGE_PROMPT
        job.note("changed", f"{where}.prompt", "the default judge prompt is written out")
    if kind in ("llm_structured", "diff_stall"):
        out["ignore_exit_code"] = True  # little-loops judged after a failed action too
    _prune(kind, out, where, job)
    for key in body:
        if key not in out and key not in ("type", "source", "key", "line", "max_stall", "scope"):
            if key == "error_patterns" and _error_pattern_list(body, state):
                continue  # kept as a state of its own (_error_patterns)
            _dropped_key("evaluate", key, f"{where}.{key}", job)
    return out


def _reads_capture(text: str, capture: str) -> bool:
    return re.search(r"\$\{\s*captured\s*\.\s*" + re.escape(capture) + r"\b", text) is not None


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


_ALLOWED = {
    "exit_code": {"type"},
    "output_contains": {"type", "pattern", "negate", "source"},
    "output_numeric": {"type", "operator", "target", "source"},
    "output_json": {"type", "path", "operator", "target", "source"},
    "convergence": {"type", "target", "tolerance", "direction", "previous", "source"},
    "classify": {"type", "line", "source"},
    "llm_structured": {"type", "prompt", "source", "min_confidence", "ignore_exit_code"},
    "diff_stall": {"type", "max_stall", "scope", "ignore_exit_code"},
}


def _prune(kind: Any, out: dict[str, Any], where: str, job: LoopJob) -> None:
    """Keys little-loops accepted on an evaluator that never read them."""
    allowed = _ALLOWED.get(kind) if isinstance(kind, str) else None
    if allowed is None:
        return
    for key in [k for k in out if k not in allowed]:
        del out[key]
        job.note("dropped", f"{where}.{key}", f"{kind} never reads {key}")


def _json_path(path: Any, out: dict[str, Any], where: str, job: LoopJob) -> None:
    text = str(path)
    text = re.sub(r"\[(\d+)\]", r".\1", text)
    if not text.startswith("."):
        text = "." + text
    if _JSON_PATH.match(text):
        out["path"] = text
    else:
        job.note("blocker", f"{where}.path", f"JSON path {path!r} is not a dotted path")


def _tolerance(value: Any, out: dict[str, Any], where: str, job: LoopJob) -> None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        out["tolerance"] = value
        return
    match = re.fullmatch(r"\s*\$\{\s*context\.(\w+)[^}]*\}\s*", str(value))
    default = job.context.get(match.group(1)) if match else None
    if isinstance(default, int | float) and not isinstance(default, bool):
        out["tolerance"] = default
        job.note("changed", f"{where}.tolerance", f"{value} inlined as its default {default}")
    else:
        job.note("dropped", f"{where}.tolerance", "tolerance must be a number here")


# little-loops' score_stall / open_question_stall: a plateau in a history file (one number a
# line): `max_stall` rounds in a row without beating the best by more than `epsilon` → no.
_HISTORY_STALLS = {
    "score_stall": ("${context.run_dir}/.score_history", ">"),
    "open_question_stall": ("${context.run_dir}/.open_questions_history", "<"),
}
_PLATEAU = (
    "awk -v eps={eps} -v max={max} '$1 ~ /^[-+]?[0-9]*[.]?[0-9]+([eE][-+]?[0-9]+)?$/ "
    "{{ v[n++] = $1 + 0 }} END {{ if (n < 2) exit 0; best = v[0]; stall = 0; "
    "for (i = 1; i < n; i++) {{ if (v[i] {op} best {sign} eps) {{ best = v[i]; stall = 0 }} "
    "else {{ if (v[i] {op} best) best = v[i]; stall++ }} }} exit (stall >= max) ? 1 : 0 }}'"
)


def _history_stall(action: Any, spec: Mapping[str, Any], where: str, job: LoopJob) -> str:
    """The evaluator as a shell check whose exit code is its verdict (0 yes, 1 no)."""
    kind = str(spec["type"])
    default_file, op = _HISTORY_STALLS[kind]
    history = job.rewriter.text(str(spec.get("history_file") or default_file))
    eps = spec.get("epsilon", 0.5)
    eps = eps if isinstance(eps, int | float) and not isinstance(eps, bool) else 0.5
    limit = spec.get("max_stall", 1)
    limit = limit if isinstance(limit, int) and limit >= 1 else 1
    script = _PLATEAU.format(eps=eps, max=limit, op=op, sign="+" if op == ">" else "-")
    check = f'history="{history}"\n[ -f "$history" ] || exit 0\n{script} "$history"'
    job.note(
        "changed", where,
        f"{kind} is a shell check of {history} (exit 0: still improving, 1: plateau), "
        "which is what little-loops computed",
    )  # fmt: skip
    if isinstance(action, str) and action.strip() and not re.fullmatch(r"\s*echo\b[^;&|]*", action):
        return f"{action.rstrip()}\n{check}"
    return check


# --- routes -------------------------------------------------------------------------------------


def _renamed(body: dict[str, Any], where: str, job: LoopJob) -> dict[str, Any]:
    for old, new in (("on_success", "on_yes"), ("on_failure", "on_no")):
        if old in body:
            value = body.pop(old)
            body.setdefault(new, value)  # little-loops: on_yes wins over on_success
    return body


def _route_keys(body: Mapping[str, Any]) -> dict[str, str]:
    return {
        key[3:]: value
        for key, value in body.items()
        if _ON_ROUTE.match(key) and key not in _NOT_ROUTES and isinstance(value, str)
        and (fate("state", key) is None or fate("state", key).fate != "dropped")  # type: ignore[union-attr]
    }  # fmt: skip


def _copy_routes(body: Mapping[str, Any], out: dict[str, Any]) -> None:
    """A fragment's routing keys, converted key by key (planned where it is used)."""
    for verdict, target in _route_keys(body).items():
        out[f"on_{verdict}"] = target
    for key in ("next", "terminal", "failure"):
        if key in body:
            out[key] = body[key]
    if isinstance(body.get("route"), dict):
        out["route"] = {str(k): v for k, v in body["route"].items()}


def _routes(
    name: str, body: Mapping[str, Any], out: dict[str, Any], where: str, job: LoopJob
) -> None:
    shorthand = _route_keys(body)
    table = body.get("route") if isinstance(body.get("route"), dict) else None
    if table is not None:
        table = {str(k): v for k, v in table.items() if isinstance(v, str)}
    if isinstance(body.get("next"), str):
        out["next"] = body["next"]
        if "error" in shorthand:
            out["on_error"] = shorthand["error"]
        dead = [f"on_{v}" for v in shorthand if v != "error"] + (["route"] if table else [])
        if "evaluate" in out:
            out.pop("evaluate")
            dead.append("evaluate")
        if dead:
            job.note(
                "dropped", where,
                f"{', '.join(dead)} never applied: little-loops follows next: directly",
            )  # fmt: skip
        return
    if "loop" in out:
        _subloop_routes(name, shorthand, table, out, where, job)
        return
    kind = out.get("evaluate", {}).get("type")
    if kind is None:
        kind = "llm_structured" if out.get("action_type") == "prompt" else "exit_code"
        if kind == "llm_structured" and (shorthand or table):
            out["evaluate"] = {
                "type": "llm_structured",
                "prompt": DEFAULT_JUDGE_PROMPT,
                "min_confidence": 0,
                "ignore_exit_code": True,
            }
    names = _verdict_names(kind, shorthand, table, out, where, job)
    plan = plan_routes(names, shorthand, table, lambda v: names[v])
    if kind == "llm_structured":
        _abstention_hold(name, shorthand, table, plan, where, job)
    _rewritten(plan, where, job)
    _route_notes(plan, where, table is None, kind, job)
    if kind == "convergence" and "previous" not in mapping(body.get("evaluate")):
        _never_stalled(plan, where, job)
    if plan.table is not None:
        out["route"] = plan.table
    else:
        for verdict, target in plan.shorthand.items():
            out[f"on_{verdict}"] = target


# little-loops re-ran a state whose judge said cannot_judge with no route of its own, twice
# in a row at most (its "hold"), then took on_error (`_error`), else ended the run. The hold
# state counts consecutive holds: one two steps before this one (state, hold, state, hold)
# continues the count, anything else starts it again.
_HOLD = """\
hold=${{run.dir}}/.cannot_judge_{name}
set -- $(cat "$hold" 2>/dev/null) 0 0
step=${{state.step | integer}}
if [ "$1" = "$((step - 2))" ]; then held=$(($2 + 1)); else held=1; fi
echo "$step $held" > "$hold"
[ "$held" -le 2 ]
"""


def _abstention_hold(
    name: str,
    shorthand: Mapping[str, str],
    table: Mapping[str, str] | None,
    plan: Routing,
    where: str,
    job: LoopJob,
) -> None:
    """Send an undeclared cannot_judge through a state that re-runs `name` as little-loops
    did (twice in a row at most), then goes to its on_error-like fallback."""
    if "cannot_judge" in (table if table is not None else shorthand):
        return
    fallback = table.get("_error") if table is not None else shorthand.get("error")
    fallback = name if fallback == "$current" else fallback
    hold = f"{name}_cannot_judge"
    plan.added.pop("cannot_judge", None)
    if "cannot_judge" in plan.unrouted:
        plan.unrouted.remove("cannot_judge")
    set_route(plan, "cannot_judge", hold)
    after = fallback or UNROUTED
    job.extra_states[hold] = {
        "description": f"little-loops re-ran {name} when its judge could not judge (twice in "
        f"a row at most), then went to {fallback or 'no state (the run ended)'}",
        "action": _HOLD.format(name=name),
        "evaluate": {"type": "exit_code"},
        "on_yes": name,
        "on_no": after,
        "on_error": after,
    }
    job.note(
        "changed", f"{where}.evaluate",
        f"cannot_judge (no route of its own) goes to state {hold}, which re-runs {name} twice "
        f"in a row at most before going to {fallback or 'the failure terminal `unrouted`'}, "
        "as little-loops held it (one more step per hold)",
    )  # fmt: skip


def _name_current(name: str, out: dict[str, Any]) -> None:
    """`$current` written as the state's name: a route moved to a state the converter adds
    (NAME_key, NAME_score, ...) must still mean this state, not the added one."""
    for key, target in list(out.items()):
        if target == "$current" and (key == "next" or _ON_ROUTE.match(key)):
            out[key] = name
    if isinstance(out.get("route"), dict):
        out["route"] = {k: name if v == "$current" else v for k, v in out["route"].items()}


def _error_pattern_list(evaluate: Mapping[str, Any], state: Mapping[str, Any]) -> list[str]:
    """The `error_patterns` little-loops applied: output_contains, not negated, judged (not a
    `next:` state)."""
    patterns = evaluate.get("error_patterns")
    if evaluate.get("type") != "output_contains" or evaluate.get("negate") or "next" in state:
        return []
    if not isinstance(patterns, list):
        return []
    return [str(p) for p in patterns if isinstance(p, str | int | float) and str(p)]


def _error_patterns(
    name: str, body: Mapping[str, Any], out: dict[str, Any], where: str, job: LoopJob
) -> None:
    """little-loops' output_contains said `error` (not `no`) when its pattern was missing and
    one of `error_patterns` was in the output. ll-loop's cannot: the converted state sends `no`
    to a state of its own that looks for those texts in the output (captured for it) and goes
    where little-loops' `error` went when one is there, else where `no` went."""
    evaluate = mapping(body.get("evaluate"))
    patterns = _error_pattern_list(evaluate, body)
    if not patterns or out.get("evaluate", {}).get("type") != "output_contains":
        return
    table = out.get("route") if isinstance(out.get("route"), dict) else None
    shorthand = {k[3:]: v for k, v in out.items() if k.startswith("on_") and isinstance(v, str)}
    on_no = our_target("no", shorthand, table)
    on_error = our_target("error", shorthand, table)
    if on_no == on_error:
        job.note(
            "dropped", f"{where}.evaluate.error_patterns",
            "error and no go to the same state here, so the patterns change nothing",
        )  # fmt: skip
        return
    capture = output_capture(out, name)
    check = f"{name}_error_patterns"
    extra: dict[str, Any] = {
        "description": f"little-loops' error_patterns of {name}: one of them in its output "
        "(and not the pattern) was verdict error",
        "evaluate": {
            "type": "output_contains",
            "source": f"${{captured.{capture}.output}}",
            "pattern": "|".join(re.escape(p) for p in patterns),
        },
    }
    for verdict, target in (("yes", on_error), ("no", on_no), ("error", on_error)):
        if target is not None:
            extra[f"on_{verdict}"] = target
    if table is not None:
        table["no"] = check
    else:
        out["on_no"] = check
    job.extra_states[check] = extra
    job.note(
        "changed", f"{where}.evaluate.error_patterns",
        f"little-loops' error verdict for {', '.join(map(repr, patterns))} in the output is "
        f"kept by state {check} (its no goes there; one more step)",
    )  # fmt: skip


def _never_stalled(plan: Routing, where: str, job: LoopJob) -> None:
    """little-loops' convergence without `previous:` had no value to compare with, so every
    value short of the target was `progress`; ll-loop compares with the state's last value and
    can say `stall`: it goes where `progress` went."""
    routes = plan.table if plan.table is not None else plan.shorthand
    progress = our_target("progress", plan.shorthand, plan.table)
    if our_target("stall", plan.shorthand, plan.table) == progress:
        return
    if progress is None:
        routes.pop("stall", None)
    else:
        routes["stall"] = progress
    job.note(
        "changed", f"{where}.evaluate",
        "without previous:, little-loops had no value to compare with, so every value short "
        f"of the target was progress (never stall); stall goes where progress went ({progress})",
    )  # fmt: skip


def _route_notes(plan: Routing, where: str, shorthand: bool, producer: str, job: LoopJob) -> None:
    """Say which routes never applied (`producer` never gives their verdict) and which
    verdicts had none (little-loops ended the run there)."""
    for verdict in plan.dropped:
        job.note(
            "dropped", f"{where}.on_{verdict}" if shorthand else f"{where}.route.{verdict}",
            f"{producer} never produces {verdict!r}, so this route never applied",
        )  # fmt: skip
    for verdict in plan.unrouted:
        job.note(
            "changed", where,
            f"verdict {verdict!r} had no route (little-loops ended the run there); it now "
            "goes to the failure terminal `unrouted`",
        )  # fmt: skip


def _mcp_routes(body: Mapping[str, Any], out: dict[str, Any], where: str, job: LoopJob) -> None:
    """Route the MCP gate's verdicts where little-loops' mcp_result sent them. ll-loop adds
    `error` (the agent failed, timed out or printed no verdict line): little-loops called such
    a broken call tool_error, so it goes where tool_error went unless `error` was routed."""
    shorthand = _route_keys(body)
    table = body.get("route") if isinstance(body.get("route"), dict) else None
    if table is not None:
        table = {str(k): v for k, v in table.items() if isinstance(v, str)}
    plan = plan_routes([*MCP_VERDICTS, "error"], shorthand, table, lambda v: v)
    _rewritten(plan, where, job)
    routes = dict(plan.table if plan.table is not None else plan.shorthand)
    if their_target("error", shorthand, table) is None:
        routes["error"] = routes.get("tool_error", UNROUTED)
        job.note(
            "changed", f"{where}.route.error",
            "an agent that fails, times out or prints no verdict line is verdict error; "
            "it goes where tool_error went",
        )  # fmt: skip
    _route_notes(plan, where, table is None, "little-loops' mcp_result", job)
    job.note(
        "changed", f"{where}.evaluate",
        "little-loops judged the call with mcp_result; the agent names the verdict (success, "
        "tool_error, not_found, timeout) on its last line and classify reads it",
    )  # fmt: skip
    out["route"] = routes


def _rewritten(plan: Routing, where: str, job: LoopJob) -> None:
    """Say what the route plan changed: a shadowed `_error`, routes written out."""
    if plan.shadowed is not None:
        job.note(
            "dropped", f"{where}.route._error",
            f"_error: {plan.shadowed} never applied: little-loops took `_` first",
        )  # fmt: skip
    for verdict, (target, ours) in plan.added.items():
        if target == UNROUTED:
            continue
        instead = f"ll-loop alone would send it to {ours}" if ours else "ll-loop has no route"
        job.note(
            "changed", f"{where}.{'route.' if plan.table is not None else 'on_'}{verdict}",
            f"{verdict!r} → {target} written out, where little-loops sent it ({instead})",
        )  # fmt: skip


def _verdict_names(
    kind: str,
    shorthand: Mapping[str, str],
    table: Mapping[str, str] | None,
    out: dict[str, Any],
    where: str,
    job: LoopJob,
) -> dict[str, str]:
    """Our verdicts → little-loops' name for each (a classify declares its tokens here)."""
    if kind == "diff_stall":
        return {"progress": "yes", "stall": "no", "error": "error"}
    if kind != "classify":
        return {v: v for v in sorted(VERDICTS.get(kind, VERDICTS["exit_code"]))}
    tokens = [k for k in (table or {}) if not k.startswith("_")] or list(shorthand)
    names: dict[str, str] = {}
    for token in tokens:
        if token == "error":
            continue
        ours = token.lower().replace("-", "_")
        if not _VERDICT.match(ours):
            job.note("blocker", where, f"classify token {token!r} cannot be a verdict name")
            continue
        if "-" in token:
            job.note(
                "blocker", where,
                f"classify token {token!r} is verdict {ours} here, but the line is matched "
                f"ignoring case only, so a line {token!r} would be error: make the action print "
                f"{token.replace('-', '_')!r}",
            )  # fmt: skip
        if ours in names:
            job.note(
                "blocker", where,
                f"classify tokens {names[ours]!r} and {token!r} are one verdict here ({ours}): "
                "the line is matched ignoring case; give them names that differ otherwise",
            )  # fmt: skip
            continue
        names[ours] = token
    if names:
        out["evaluate"]["verdicts"] = list(names)
        if any(k != v for k, v in names.items()):
            job.note(
                "changed", f"{where}.evaluate",
                "classify tokens are verdict names in lower case (the line is matched "
                "ignoring case)",
            )  # fmt: skip
    else:
        job.note("blocker", f"{where}.evaluate", "classify needs at least one routed token")
    names["error"] = "error"
    return names


def _subloop_routes(
    name: str,
    shorthand: Mapping[str, str],
    table: Mapping[str, str] | None,
    out: dict[str, Any],
    where: str,
    job: LoopJob,
) -> None:
    """little-loops routes a child's end on on_yes / on_no / on_error (else on_no) only."""
    if table:
        job.note("dropped", f"{where}.route", "little-loops never read route: on a sub-loop")
    for verdict in ("yes", "no", "error"):
        target = shorthand.get(verdict)
        if verdict == "error" and target is None:
            target = shorthand.get("no")
        if target is None and verdict == "error":
            continue  # an unrouted error ends the run with an error, as little-loops' did
        if target is None:
            target = UNROUTED
            job.note(
                "changed", where,
                f"verdict {verdict!r} had no route (little-loops ended the run there); it now "
                "goes to the failure terminal `unrouted`",
            )  # fmt: skip
        out[f"on_{verdict}"] = target
    if "timeout" in shorthand and shorthand["timeout"] != out["on_no"]:
        _subloop_budget(name, shorthand["timeout"], out, where, job)
    for verdict in shorthand:
        if verdict not in ("yes", "no", "error", "timeout"):
            job.note(
                "dropped", f"{where}.on_{verdict}",
                "a sub-loop's verdict is yes, no or error (budget or timeout is no)",
            )  # fmt: skip


_BUDGET_ENDS = ("max_steps", "timeout", "max_cost")


def _subloop_budget(
    name: str, on_timeout: str, out: dict[str, Any], where: str, job: LoopJob
) -> None:
    """little-loops sent a child cut off by its budget or timeout to `on_timeout` (else
    `on_no`); ll-loop calls that `no`, so `no` goes to a state of its own that reads how the
    child ended (`terminated_by`) and goes to `on_timeout` for a budget or a timeout."""
    capture = out.setdefault("capture", _identifier(name))
    check = f"{name}_budget"
    job.extra_states[check] = {
        "description": f"little-loops' on_timeout of {name}: a child cut off by its budget or "
        "timeout went there",
        "evaluate": {
            "type": "output_contains",
            "source": f"${{captured.{capture}.terminated_by}}",
            "pattern": f"^({'|'.join(_BUDGET_ENDS)})$",
        },
        "on_yes": on_timeout,
        "on_no": out["on_no"],
        "on_error": out["on_no"],
    }
    out["on_no"] = check
    job.note(
        "changed", f"{where}.on_timeout",
        f"a child cut off by its budget or timeout still goes to {on_timeout}: the state's no "
        f"goes to {check}, which reads how the child ended (one more step)",
    )  # fmt: skip


def _routes_to_itself(name: str, out: Mapping[str, Any]) -> bool:
    """Whether the converted state can enter itself directly (what little-loops counted)."""
    targets = [v for k, v in out.items() if k == "next" or k.startswith("on_")]
    targets += list(mapping(out.get("route")).values())
    return any(target in (name, "$current") for target in targets)


def _dead_on_terminal(body: Mapping[str, Any], where: str, job: LoopJob) -> None:
    dead = [k for k in ("action", "evaluate", "next", "route", "loop") if k in body]
    dead += [f"on_{v}" for v in _route_keys(body)]
    if dead:
        job.note("dropped", where, f"{', '.join(dead)} on a terminal never ran")


# --- the rest -----------------------------------------------------------------------------------


def _drop_the_rest(body: Mapping[str, Any], where: str, job: LoopJob) -> None:
    for key in body:
        if key in _HANDLED or (_ON_ROUTE.match(key) and fate("state", key) is None):
            continue
        _dropped_key("state", key, f"{where}.{key}", job)


def _dropped_key(place: str, key: str, where: str, job: LoopJob) -> None:
    known = fate(place, key)
    if known is not None and known.fate != "dropped":
        return
    why = known.why if known is not None else "little-loops ignores this key too"
    job.note("dropped", where, why)


def pasted_text(value: Any, where: str, job: LoopJob) -> Any:
    """A boolean as the text little-loops pasted for it (True / False; ll-loop: true / false)."""
    if isinstance(value, bool):
        job.note(
            "changed", where,
            f"{value!r} is written as {str(value)!r}, the text little-loops pasted for it",
        )  # fmt: skip
        return str(value)
    return value


def _identifier(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


UNROUTED_TARGET = UNROUTED
