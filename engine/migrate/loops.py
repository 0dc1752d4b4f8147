"""One little-loops loop (after `from:` and `flow:`) → one ll-loop loop, and fragment libraries.

States that use a fragment keep using it when the converted fragment, merged under what the
state still says, gives exactly the converted state (ll-loop's `fragment:` merge); otherwise the
state is written out whole. Top-level keys follow `engine.migrate.keys`; `input_key` and
`required_inputs` become parameters; prompts get the agent CLI as `llm.runner`; little-loops'
`*_ok` lint opt-outs become suppressions where an ll-loop rule checks the same thing.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.load.fragments import bind_parameters, merge
from engine.migrate.convert import AGENT_CLI, UNROUTED_TARGET, LoopJob, convert_state
from engine.migrate.expressions import Rewriter
from engine.migrate.keys import LINT_FLAGS, fate
from engine.migrate.report import FileReport
from engine.migrate.source import deep_merge, listing, locate, mapping

_ORDER = (
    "name", "description", "category", "labels", "initial", "max_steps", "on_max_steps",
    "timeout", "default_timeout", "scope", "input_key", "parameters", "outputs", "context", "llm",
    "lint",
    "import", "fragments", "states",
)  # fmt: skip
FALLBACK_TIMEOUT_S = 3600  # little-loops' timeout of an action that sets none
_PARAM_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "enum": "string",
    "path": "string",
}
_HANDLED = frozenset(
    {
        "name", "description", "initial", "states", "context", "parameters", "scope",
        "max_steps", "max_iterations", "on_max_steps", "timeout", "default_timeout", "llm",
        "input_key", "required_inputs", "category", "labels", "import", "fragments",
    }
)  # fmt: skip


@dataclass
class Library:
    """A fragment library: little-loops' fragments and their converted form."""

    path: Path
    raw: dict[str, dict[str, Any]]
    converted: dict[str, dict[str, Any]] = field(default_factory=dict)
    reference: str = ""  # the `import:` entry for it, from the loop being converted


@dataclass
class LoopPlan:
    """Facts about one loop that come from the whole set of files being converted."""

    run_dir: str = "${run.dir}"  # what ${context.run_dir} becomes
    add_parameters: dict[str, dict[str, Any]] = field(default_factory=dict)
    bindings: dict[str, dict[str, str]] = field(default_factory=dict)  # state -> extra with:
    loop_refs: dict[str, str] = field(default_factory=dict)  # state -> rewritten `loop:`
    libraries: list[Library] = field(default_factory=list)
    sources: list[Path] = field(default_factory=list)  # the file, its from: parents, libraries
    # a caller reads a child capture: (state, capture, field) -> `CAPTURE.outputs.NAME`
    child_values: dict[tuple[str, str, str], str] = field(default_factory=dict)
    child_captures: dict[str, str] = field(default_factory=dict)  # sub-loop state -> capture
    add_outputs: dict[str, str] = field(default_factory=dict)  # name -> expression (a child)


def convert_loop(data: dict[str, Any], plan: LoopPlan, report: FileReport) -> dict[str, Any]:
    """The ll-loop loop for little-loops `data`."""
    data = _valid_state_names(data, report)
    context = dict(mapping(data.get("context")))
    job = LoopJob(
        report,
        Rewriter(
            run_dir=plan.run_dir,
            defaults=context,
            child_values=plan.child_values,
            captures=_renamed_captures(data),
            subloop_captures=_subloop_captures(data),
        ),
        context=context,
        bindings=plan.bindings,
        on_max_steps=data.get("on_max_steps")
        if isinstance(data.get("on_max_steps"), str)
        else None,
    )
    out: dict[str, Any] = {"name": str(data.get("name", "unnamed"))}
    for key in ("description", "category"):
        if isinstance(data.get(key), str) and data[key].strip():
            out[key] = data[key]
    if isinstance(data.get("labels"), list) and data["labels"]:
        out["labels"] = list(dict.fromkeys(str(label) for label in data["labels"]))
    out["initial"] = data.get("initial")
    _budget(data, out, report)
    for key in ("timeout", "default_timeout"):
        value = data.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            out[key] = value
    if isinstance(data.get("scope"), list) and data["scope"]:
        out["scope"] = [job.rewriter.text(str(entry)) for entry in data["scope"]]
    parameters, context = _parameters(data, context, plan, report)
    _seeded(data, plan, parameters, context, report)
    context = {k: _pasted(v, f"context.{k}", report) for k, v in context.items()}
    if isinstance(data.get("input_key"), str) and data["input_key"] != "input":
        out["input_key"] = data["input_key"]
    if parameters:
        out["parameters"] = parameters
    if context:
        out["context"] = context
    if plan.add_outputs:
        out["outputs"] = {k: job.rewriter.text(v) for k, v in sorted(plan.add_outputs.items())}
    states = _states(data, plan, job)
    llm = _llm(data, job, report)
    if llm:
        out["llm"] = llm
    suppressions = _suppressions(data, report)
    if suppressions:
        out["lint"] = {"suppress": suppressions}
    used = {state.get("fragment") for state in states.values()}
    imports = [lib.reference for lib in plan.libraries if set(lib.converted) & used]
    if imports:
        out["import"] = imports
    local = data.get("fragments")
    if isinstance(local, dict):
        kept = {n: f for n, f in _convert_fragments(local, job).items() if n in used}
        if kept:
            out["fragments"] = kept
    _unrouted_terminal(states, report)
    _fallback_timeout(out, states, report)
    out["states"] = states
    _enough_steps(out, report)
    if job.rewriter.uses_run_dir and plan.run_dir != "${run.dir}":
        report.note("changed", "the loop", f"${{context.run_dir}} is {plan.run_dir}")
    _report_problems(job.rewriter, plan.sources, report)
    _drop_the_rest(data, report)
    return {key: out[key] for key in _ORDER if key in out}


_STATE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_ROUTE_KEYS = re.compile(r"on_\w+|next")


def _valid_state_names(data: dict[str, Any], report: FileReport) -> dict[str, Any]:
    """State names ll-loop cannot take (`step two`, `1st`) renamed (`step_two`, `s_1st`), with
    every route to them: little-loops took any name."""
    states = mapping(data.get("states"))
    taken = {str(n) for n in states}
    renames: dict[str, str] = {}
    for name in map(str, states):
        if _STATE_NAME.fullmatch(name):
            continue
        new = re.sub(r"[^A-Za-z0-9_-]", "_", name)
        new = new if _STATE_NAME.fullmatch(new) else f"s_{new}"
        while new in taken:
            new += "_"
        taken.add(new)
        renames[name] = new
        report.note(
            "changed", f"states.{new}",
            f"renamed from {name!r} (a state name is letters, digits, _ and -, starting with a "
            "letter or _), and every route to it",
        )  # fmt: skip
    if not renames:
        return data

    def target(value: Any) -> Any:
        return renames.get(value, value) if isinstance(value, str) else value

    new_states: dict[str, Any] = {}
    for name, body in states.items():
        if isinstance(body, dict):
            body = {k: target(v) if _ROUTE_KEYS.fullmatch(str(k)) else v for k, v in body.items()}
            if isinstance(body.get("route"), dict):
                body["route"] = {k: target(v) for k, v in body["route"].items()}
        new_states[renames.get(str(name), str(name))] = body
    out = {**data, "states": new_states}
    for key in ("initial", "on_max_steps"):
        if key in out:
            out[key] = target(out[key])
    return out


def _renamed_captures(data: Mapping[str, Any]) -> dict[str, str]:
    """Capture names that are no identifiers (`my-cap`), and what they are written as (`my_cap`),
    so `${captured.my-cap.output}` reads the renamed capture."""
    bodies = [*mapping(data.get("states")).values(), *mapping(data.get("fragments")).values()]
    names = {
        b["capture"] for b in bodies if isinstance(b, dict) and isinstance(b.get("capture"), str)
    }
    return {n: re.sub(r"\W", "_", n) for n in names if re.search(r"\W", n)}


def _subloop_captures(data: Mapping[str, Any]) -> frozenset[str]:
    """The `capture:` names of sub-loop states (little-loops stored the child's events there)."""
    bodies = mapping(data.get("states")).values()
    return frozenset(
        b["capture"] for b in bodies
        if isinstance(b, dict) and "loop" in b and isinstance(b.get("capture"), str)
    )  # fmt: skip


def convert_library(
    raw: Mapping[str, Any], report: FileReport, sources: Sequence[Path] = ()
) -> dict[str, Any]:
    """A converted fragment library (fragments ll-loop keeps nothing of are left out)."""
    context: dict[str, Any] = {}
    job = LoopJob(report, Rewriter(), context=context)
    out: dict[str, Any] = {}
    if isinstance(raw.get("description"), str):
        out["description"] = raw["description"]
    fragments = mapping(raw.get("fragments"))
    out["fragments"] = _convert_fragments(fragments, job)
    for name in fragments:
        if name not in out["fragments"]:
            report.note("dropped", f"fragments.{name}", "nothing in it has an equivalent")
    _report_problems(job.rewriter, sources, report)
    return out


def _report_problems(rewriter: Rewriter, sources: Sequence[Path], report: FileReport) -> None:
    """The rewriter's problems as notes, each pointing at the lines it comes from."""
    for problem in rewriter.problems:
        message = problem.message
        if problem.expression:
            state = problem.where.partition(".")[2]
            places = locate(problem.expression, state, sources)
            if places:
                message = f"{problem.expression} at {', '.join(places)}: {message}"
        report.note(problem.kind, problem.where, message)  # type: ignore[arg-type]


def _convert_fragments(fragments: Mapping[str, Any], job: LoopJob) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, body in fragments.items():
        if not isinstance(body, dict):
            continue
        core = {k: v for k, v in body.items() if k not in ("description", "parameters")}
        converted = convert_state(str(name), core, job, partial=True)
        if not converted:
            continue
        entry: dict[str, Any] = {}
        if isinstance(body.get("description"), str):
            entry["description"] = body["description"]
        if isinstance(body.get("parameters"), dict):
            entry["parameters"] = {
                str(k): _parameter(v, job.report, f"fragments.{name}.parameters.{k}")
                for k, v in body["parameters"].items()
            }
        entry.update(converted)
        out[str(name)] = entry
    return out


# --- states -------------------------------------------------------------------------------------


def _states(data: Mapping[str, Any], plan: LoopPlan, job: LoopJob) -> dict[str, Any]:
    states = mapping(data.get("states"))
    local = mapping(data.get("fragments"))
    theirs: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
    for lib in plan.libraries:
        for name, body in lib.raw.items():
            theirs[name] = (body, lib.converted.get(name))
    local_converted = _convert_fragments(local, LoopJob(FileReport(""), job.rewriter))
    for name, body in local.items():
        if isinstance(body, dict):
            theirs[str(name)] = (body, local_converted.get(str(name)))
    out: dict[str, Any] = {}
    for name, body in states.items():
        name = str(name)
        if not isinstance(body, dict):
            job.note("blocker", f"states.{name}", "a state must be a mapping")
            continue
        wanted = body.get("fragment")
        if isinstance(wanted, str) and wanted in theirs:
            out[name] = _with_fragment(name, body, wanted, theirs[wanted], job)
        else:
            if wanted is not None:
                job.note("blocker", f"states.{name}.fragment", f"fragment {wanted!r} not found")
            out[name] = convert_state(name, {k: v for k, v in body.items() if k != "fragment"}, job)
        if name in plan.loop_refs and "loop" in out[name]:
            out[name]["loop"] = plan.loop_refs[name]
        if name in plan.child_captures and "loop" in out[name]:
            out[name].setdefault("capture", plan.child_captures[name])
    for name, extra in job.extra_states.items():
        if name in out:
            job.note("blocker", f"states.{name}", "a state of this name exists already")
            continue
        out[name] = extra
    return out


def _with_fragment(
    name: str,
    body: Mapping[str, Any],
    wanted: str,
    fragment: tuple[dict[str, Any], dict[str, Any] | None],
    job: LoopJob,
) -> dict[str, Any]:
    """The state, using the converted fragment when that reproduces it exactly."""
    raw, converted = fragment
    core = {k: v for k, v in raw.items() if k not in ("description", "parameters")}
    merged = deep_merge(core, {k: v for k, v in body.items() if k != "fragment"})
    bindings = mapping(merged.pop("with", None))
    full = convert_state(name, merged, job)
    declared = mapping(raw.get("parameters"))
    values = {
        str(k): spec["default"]
        for k, spec in declared.items()
        if isinstance(spec, dict) and spec.get("default") is not None
    }
    values.update({str(k): job.rewriter.value(v) for k, v in bindings.items()})
    base = {k: v for k, v in (converted or {}).items() if k not in ("description", "parameters")}
    if base:
        delta = _delta(full, base)
        if delta is not None and merge(base, delta) == full:
            delta["fragment"] = wanted
            given = {str(k): job.rewriter.value(v) for k, v in bindings.items()}
            if given:
                delta["with"] = given
            return _ordered(delta, full)
        job.note(
            "changed", f"states.{name}.fragment",
            f"written out whole: fragment {wanted!r} merged under this state no longer gives it",
        )  # fmt: skip
    elif converted is None or not base:
        job.note(
            "changed", f"states.{name}.fragment",
            f"fragment {wanted!r} keeps nothing in ll-loop; its keys were dropped",
        )  # fmt: skip
    expanded, problems = bind_parameters(full, values)
    for problem in problems:
        job.note("blocker", f"states.{name}", problem)
    result: dict[str, Any] = expanded
    return result


def _delta(full: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a state must say over `base` to merge into `full` (None: a key must go, which a
    merge cannot express)."""
    out: dict[str, Any] = {}
    for key in base:
        if key not in full:
            return None
    for key, value in full.items():
        if key not in base:
            out[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(base[key], dict):
            inner = _delta(value, base[key])
            if inner is None:
                return None
            if inner:
                out[key] = inner
        elif value != base[key]:
            out[key] = copy.deepcopy(value)
    return out


def _ordered(delta: dict[str, Any], full: Mapping[str, Any]) -> dict[str, Any]:
    """`fragment:` first, then the state's keys in the order of the whole state."""
    out = {"fragment": delta.pop("fragment")}
    if "with" in delta:
        out["with"] = delta.pop("with")
    for key in full:
        if key in delta:
            out[key] = delta[key]
    return out


def _unrouted_terminal(states: dict[str, Any], report: FileReport) -> None:
    """Add the failure terminal that verdicts little-loops left unrouted now go to."""
    targets = [
        (state, key)
        for state in states.values()
        for key, value in _route_items(state)
        if value == UNROUTED_TARGET
    ]
    if not targets:
        return
    name = "unrouted"
    while name in states:
        name += "_"
    for state, key in targets:
        if key.startswith("route."):
            state["route"][key[6:]] = name
        else:
            state[key] = name
    states[name] = {
        "description": "A verdict little-loops left without a route ended its run here.",
        "terminal": True,
        "failure": True,
    }


def _route_items(state: Mapping[str, Any]) -> list[tuple[str, Any]]:
    items = [(k, v) for k, v in state.items() if k.startswith("on_")]
    if isinstance(state.get("route"), dict):
        items += [(f"route.{k}", v) for k, v in state["route"].items()]
    return items


def _fallback_timeout(out: dict[str, Any], states: Mapping[str, Any], report: FileReport) -> None:
    """little-loops stopped any action after an hour unless told otherwise; say so."""
    if "default_timeout" in out:
        return
    if any("action" in s and "timeout" not in s for s in states.values() if isinstance(s, dict)):
        out["default_timeout"] = FALLBACK_TIMEOUT_S
        report.note(
            "changed", "default_timeout",
            f"{FALLBACK_TIMEOUT_S} s, little-loops' limit for an action without a timeout",
        )  # fmt: skip


def _enough_steps(out: dict[str, Any], report: FileReport) -> None:
    """Raise a budget too short to reach any success terminal (little-loops could not either;
    ll-loop's lint refuses such a loop): the shortest path is what the loop plainly needs."""
    states: dict[str, Any] = out["states"]
    budget = out.get("max_steps", 50)
    needed = _shortest_success(states, str(out.get("initial")))
    if needed is not None and needed > budget:
        out["max_steps"] = needed
        report.note(
            "changed", "max_steps",
            f"raised from {budget} to {needed}, the fewest steps to a success terminal",
        )  # fmt: skip


def _shortest_success(states: Mapping[str, Any], initial: str) -> int | None:
    """Steps (non-terminal states run) on the shortest path to a success terminal."""
    from collections import deque

    seen = {initial: 0}
    queue = deque([initial])
    while queue:
        name = queue.popleft()
        state = states.get(name)
        if not isinstance(state, dict):
            continue
        if state.get("terminal"):
            if not state.get("failure"):
                return seen[name]
            continue
        targets = [v for k, v in state.items() if k == "next" or k.startswith("on_")]
        if isinstance(state.get("route"), dict):
            targets += list(state["route"].values())
        for target in targets:
            if isinstance(target, str) and target in states and target not in seen:
                seen[target] = seen[name] + 1
                queue.append(target)
    return None


# --- top level ----------------------------------------------------------------------------------


def _budget(data: Mapping[str, Any], out: dict[str, Any], report: FileReport) -> None:
    steps, iterations = data.get("max_steps"), data.get("max_iterations")
    if isinstance(steps, int) and steps >= 1:
        out["max_steps"] = steps
        if iterations is not None:
            report.note(
                "dropped",
                "max_iterations",
                fate("loop", "max_iterations").why,  # type: ignore[union-attr]
            )
    elif isinstance(iterations, int) and iterations >= 1:
        states = mapping(data.get("states"))
        working = sum(1 for b in states.values() if isinstance(b, dict) and not b.get("terminal"))
        out["max_steps"] = iterations * max(working, 1)
        report.note(
            "changed", "max_iterations",
            f"{iterations} passes through the loop: max_steps {out['max_steps']} "
            f"({working} working states; little-loops read it as {iterations} step"
            f"{'s' if iterations != 1 else ''})",
        )  # fmt: skip
    if isinstance(data.get("on_max_steps"), str):
        out["on_max_steps"] = data["on_max_steps"]


def _parameters(
    data: Mapping[str, Any], context: dict[str, Any], plan: LoopPlan, report: FileReport
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Declared parameters, plus input_key and required_inputs as parameters; a context key
    that becomes a parameter moves there as its default."""
    declared = mapping(data.get("parameters"))
    params = {str(k): _parameter(v, report, f"parameters.{k}") for k, v in declared.items()}
    required = [str(k) for k in listing(data.get("required_inputs")) if isinstance(k, str)]
    key = data.get("input_key")
    wanted = list(dict.fromkeys([*required, *([str(key)] if key else [])]))
    for name in wanted:
        spec = params.setdefault(name, {"type": "string"})
        if name in required and "default" not in spec and name not in context:
            spec["required"] = True
        if name in context and "default" not in spec and context[name] not in (None, ""):
            spec["default"] = context.pop(name)
        elif name in context and context[name] in (None, ""):
            context.pop(name)
            if name in required:
                spec["required"] = True
        if name == key:
            spec.setdefault("description", "the positional INPUT of `ll-loop run LOOP INPUT`")
    for name, spec in plan.add_parameters.items():
        params.setdefault(name, spec)
    return params, context


# Values little-loops' runner put in every loop's context (a sub-loop's too) unless already
# set: commands.confidence_gate of ll-config.json, these defaults without one.
_SEEDED = {"readiness_threshold": 85, "outcome_threshold": 65}
_READ = re.compile(r"(?<!\$)\$\{\s*context\s*\.\s*([A-Za-z_]\w*)")


def _seeded(
    data: Mapping[str, Any],
    plan: LoopPlan,
    parameters: dict[str, Any],
    context: Mapping[str, Any],
    report: FileReport,
) -> None:
    """Declare the runner-seeded values the loop (or a fragment it imports) reads and does
    not set, with little-loops' defaults, so they keep a value."""
    text = json.dumps([data, *(lib.raw for lib in plan.libraries)], default=str)
    for key in sorted(set(_READ.findall(text)) & set(_SEEDED)):
        if key in parameters or key in context:
            continue
        parameters[key] = {
            "type": "integer",
            "default": _SEEDED[key],
            "description": "commands.confidence_gate of little-loops' ll-config.json",
        }
        report.note(
            "changed", f"parameters.{key}",
            f"little-loops' runner set it from ll-config.json (commands.confidence_gate), "
            f"{_SEEDED[key]} without one: declared with that default",
        )  # fmt: skip


def _parameter(spec: Any, report: FileReport, where: str) -> dict[str, Any]:
    if not isinstance(spec, dict):
        return {}
    out: dict[str, Any] = {}
    kind = spec.get("type")
    if kind == "boolean":
        out["type"] = "string"
        report.note(
            "changed", f"{where}.type",
            "a string parameter: little-loops pasted a boolean as True or False, so the "
            "default is that text",
        )  # fmt: skip
    elif kind in _PARAM_TYPES:
        out["type"] = _PARAM_TYPES[kind]
        if kind == "path":
            report.note("changed", f"{where}.type", "path is a string parameter")
    elif kind is not None:
        report.note("dropped", f"{where}.type", f"parameter type {kind!r} has no equivalent")
    if spec.get("required"):
        out["required"] = True
    if "default" in spec and spec["default"] is not None:
        out["default"] = _pasted(spec["default"], f"{where}.default", report)
    if isinstance(spec.get("description"), str):
        out["description"] = spec["description"]
    values = spec.get("values") if spec.get("values") is not None else spec.get("enum")
    if isinstance(values, list) and values:
        out["enum"] = values
    return out


def _pasted(value: Any, where: str, report: FileReport) -> Any:
    """`value` as the text little-loops pasted for it (`str()`: True, False; None is empty),
    where ll-loop would render it otherwise (true, false, null)."""
    if isinstance(value, bool) or value is None:
        text = "" if value is None else str(value)
        report.note(
            "changed", where,
            f"{value!r} is written as {text!r}, the text little-loops pasted for it "
            "(ll-loop would paste " + ("null" if value is None else str(value).lower()) + ")",
        )  # fmt: skip
        return text
    return value


def _llm(data: Mapping[str, Any], job: LoopJob, report: FileReport) -> dict[str, Any]:
    out: dict[str, Any] = {}
    llm = mapping(data.get("llm"))
    for key in ("model", "max_tokens", "timeout"):
        value = llm.get(key)
        if value is not None and not isinstance(value, bool):
            out[key] = value
    for key in llm:
        if key not in ("model", "max_tokens", "timeout"):
            known = fate("llm", key)
            report.note("dropped", f"llm.{key}", known.why if known else "unknown to ll-loop")
    if job.agent:
        out["runner"] = f"cmd:{AGENT_CLI}"
        report.note(
            "changed", "llm.runner",
            "prompts run through the agent CLI as in little-loops (`claude -p`, with the "
            "same --dangerously-skip-permissions it used)",
        )  # fmt: skip
    return out


def _suppressions(data: Mapping[str, Any], report: FileReport) -> list[dict[str, str]]:
    out = []
    for flag, code in LINT_FLAGS.items():
        if data.get(flag) is True:
            out.append({"code": code, "reason": f"little-loops {flag}: true (migrated)"})
            report.note("changed", flag, f"is a suppression of {code}")
    return out


def _drop_the_rest(data: Mapping[str, Any], report: FileReport) -> None:
    for key in data:
        if key in _HANDLED or key in LINT_FLAGS:
            continue
        known = fate("loop", key)
        if known is not None and known.fate != "dropped":
            continue
        why = known.why if known is not None else "little-loops ignores this key too"
        report.note("dropped", str(key), why)
