"""Turn schema violations into diagnostics a person can act on.

Each violation becomes one sentence with a stable code, placed at file:line:column, and a hint.
A typo such as `timout` gets the closest valid key *at that place*. A key that the reference
system (little-loops) accepts but we deliberately do not — `max_iterations`, `flow`,
`on_success`… — gets a "not supported: use …" hint, so a ported loop fails loudly instead of
losing behaviour silently (docs/format.md, "Keys of the reference system we do not support").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from engine.load.schema_check import Violation
from engine.load.spelling import did_you_mean
from engine.load.yaml_positions import PathKey, Positions
from engine.model.errors import Diagnostic


class Unsupported(NamedTuple):
    """Why a reference-system key is refused, and what to write instead."""

    message: str
    hint: str


def place_of(path: PathKey) -> str:
    """The kind of mapping that `path` names: loop, state, evaluate, llm, parameter, ..."""
    if not path:
        return "loop"
    if len(path) == 2 and path[0] == "states":
        return "state"
    if len(path) == 3 and path[0] == "states" and path[2] == "evaluate":
        return "evaluate"
    if len(path) == 5 and path[0] == "states" and path[3] == "dimensions":
        return "dimension"
    if len(path) >= 2 and isinstance(path[-1], int) and path[-2] in _JUDGE_LISTS:
        return _JUDGE_LISTS[str(path[-2])]
    if path == ("llm",):
        return "llm"
    if len(path) == 2 and path[0] == "parameters":
        return "parameter"
    if path[-1] == "lint":
        return "lint"
    if len(path) >= 3 and path[-3] == "lint" and path[-2] == "suppress":
        return "suppression"
    if path[-1] == "route":
        return "route"
    if path[-1] == "rubric":
        return "rubric"
    return "mapping"


# A judge list's entries (in a loop's assessment, or a suite): their place names.
_JUDGE_LISTS = {"judges": "judge", "expectations": "expectation", "metrics": "metric"}
_JUDGE_KINDS = "use builtin:, check:, prompt: (or prompt_file:, llm_rubric:) or module: + function:"

_SUBLOOP = "run the other loop as a sub-loop state instead (`loop: NAME` with `with:`)"
_STEPS = (
    "max_steps counts executions of non-terminal states (every state run is one step), "
    "not trips around the loop: a 3-state cycle repeated 10 times needs max_steps: 30"
)
_CONTEXT = "context: holds default variables, read as ${context.NAME}"
_INITIAL = "initial: NAME_OF_FIRST_STATE"
_RETRIES = (
    "max_retries: N counts entries along a cycle; on_retry_exhausted: STATE names "
    "where to go when they run out"
)
_IMPORT = "import: [lib/common.yaml] loads fragment libraries; a state uses one with fragment: NAME"
_INHERIT = (
    "`ll-loop migrate` writes the merged loop; share states with import: and fragment:, "
    "or " + _SUBLOOP
)
_SLASH = (
    "write the command as a prompt for an agent CLI: action_type: prompt with "
    'runner: "cmd:claude -p" (ll-loop migrate converts it)'
)

UNSUPPORTED: dict[tuple[str, str], Unsupported] = {
    ("loop", "max_iterations"): Unsupported(
        "max_iterations is not supported: use max_steps", _STEPS
    ),
    ("loop", "iterations"): Unsupported("iterations is not supported: use max_steps", _STEPS),
    ("loop", "flow"): Unsupported(
        "flow is not supported: the graph is the states themselves",
        "give each state its successors with next:, on_<verdict>: or a route: table",
    ),
    ("loop", "imports"): Unsupported("imports is not supported: use import", _IMPORT),
    ("loop", "include"): Unsupported("include is not supported: use import", _IMPORT),
    ("loop", "extends"): Unsupported(
        "extends is not supported: loops do not inherit from each other", _INHERIT
    ),
    ("loop", "from"): Unsupported(
        "from is not supported: loops do not inherit from each other", _INHERIT
    ),
    ("loop", "on_handoff"): Unsupported(
        "on_handoff is not supported: a run never hands its work to another session",
        "a run ends at a terminal, its max_steps or its timeout; `ll-loop resume RUN` "
        "continues an interrupted one (ll-loop migrate drops this key)",
    ),
    ("loop", "visibility"): Unsupported(
        "visibility is not supported: every loop is listed",
        "group loops with category: or labels: [internal]",
    ),
    ("loop", "required_inputs"): Unsupported(
        "required_inputs is not supported: use parameters",
        "parameters: NAME: {type: string, required: true}; input_key: NAME binds the "
        "positional INPUT to it",
    ),
    ("loop", "on_max_iterations"): Unsupported(
        "on_max_iterations is not supported: use on_max_steps", _STEPS
    ),
    ("loop", "circuit"): Unsupported(
        "circuit is not supported: a repeated failure is a cycle, bounded by max_retries",
        _RETRIES,
    ),
    ("loop", "backoff"): Unsupported(
        "backoff is not supported: states run back to back",
        "put a pause in the action (sleep 30 && ...) if the loop must wait",
    ),
    ("loop", "maintain"): Unsupported(
        "maintain is not supported: a run ends at its terminal",
        "schedule repeated runs outside the loop (cron, CI), or route the terminal's "
        "predecessor back to initial with a max_steps budget",
    ),
    ("state", "input_key"): Unsupported(
        "input_key belongs to the loop, not to a state",
        "move input_key: NAME to the top level of the file",
    ),
    ("state", "context_passthrough"): Unsupported(
        "context_passthrough is not supported: a sub-loop sees only what with: passes",
        "declare the child's parameters and bind them: with: {NAME: ${context.NAME}}; "
        "read its results from its outputs:",
    ),
    ("state", "slash_command"): Unsupported(
        "slash_command is not supported: a slash command runs in an agent",
        _SLASH,
    ),
    ("state", "idle_timeout"): Unsupported(
        "idle_timeout is not supported: use timeout", "timeout: SECONDS bounds the action"
    ),
    ("loop", "variables"): Unsupported("variables is not supported: use context", _CONTEXT),
    ("loop", "vars"): Unsupported("vars is not supported: use context", _CONTEXT),
    ("loop", "inputs"): Unsupported(
        "inputs is not supported: use parameters",
        "parameters: NAME: {type, required, default, description}",
    ),
    ("loop", "initial_state"): Unsupported("initial_state is not supported: use initial", _INITIAL),
    ("loop", "start"): Unsupported("start is not supported: use initial", _INITIAL),
    ("state", "on_success"): Unsupported(
        "on_success is not supported: use on_yes",
        "evaluators answer yes/no; for a classify verdict literally named `success` "
        "use a route table: route: {success: STATE}",
    ),
    ("state", "on_failure"): Unsupported(
        "on_failure is not supported: use on_no (a failed check) or on_error (a failed action)",
        "for a classify verdict literally named `failure` use a route table: "
        "route: {failure: STATE}",
    ),
    ("state", "on_max_steps"): Unsupported(
        "on_max_steps belongs to the loop, not to a state",
        "move on_max_steps: STATE to the top level of the file",
    ),
    ("state", "evaluator"): Unsupported(
        "evaluator is not supported: use evaluate", "evaluate: {type: exit_code} (or another type)"
    ),
    ("state", "type"): Unsupported(
        "type is not supported on a state",
        "use action_type: shell|prompt for the action, terminal: true for a final state, "
        "or loop: NAME for a sub-loop",
    ),
    ("state", "condition"): Unsupported(
        "condition is not supported: routing follows the verdict of an evaluator",
        "add evaluate: (e.g. type: output_contains, pattern: ...) and route with on_yes / on_no",
    ),
    ("state", "retry"): Unsupported(
        "retry is not supported: use max_retries with on_retry_exhausted",
        _RETRIES,
    ),
    ("state", "retries"): Unsupported(
        "retries is not supported: use max_retries with on_retry_exhausted",
        _RETRIES,
    ),
    ("state", "shell"): Unsupported(
        "shell is not supported: put the command in action",
        "action: <command> runs in bash (action_type: shell is the default)",
    ),
    ("state", "command"): Unsupported(
        "command is not supported: use action", "action: <command> runs in bash"
    ),
    ("state", "prompt"): Unsupported(
        "prompt is not supported on a state: use action with action_type: prompt",
        "action: <prompt text> and action_type: prompt; a judge's prompt goes in evaluate:",
    ),
    ("state", "artifact_versioning_ok"): Unsupported(
        "artifact_versioning_ok is not supported: suppress lint rules explicitly",
        'lint: {suppress: [{code: RULE, reason: "why it does not apply"}]}',
    ),
    ("state", "params"): Unsupported(
        "params is not supported: use with", "with: passes values to the sub-loop's parameters"
    ),
    ("expectation", "path"): Unsupported(
        "path is not supported in an expectation: use paths",
        "file_exists takes a list: paths: [dist/index.js]",
    ),
    ("expectation", "prompt"): Unsupported(
        "prompt is not supported in an expectation: use criteria",
        "an llm_review asks its question in criteria:; a templated LLM judge goes under judges: "
        "with prompt:",
    ),
    ("expectation", "expectExitCode"): Unsupported(
        "expectExitCode is not supported: test and script checks pass on exit code 0",
        "make the command exit 0 on success, e.g. `! grep -q ERROR build.log`",
    ),
    ("judge", "type"): Unsupported(
        "type is not a key of a judge: its kind follows from its fields",
        f"{_JUDGE_KINDS}; Polpo-style typed checks (test, script, ...) go under expectations:",
    ),
    ("judge", "criteria"): Unsupported(
        "criteria is not supported in judges: (it belongs to an llm_review expectation)",
        "write the criterion as prompt: (a template) or llm_rubric: (one line), or move the "
        "entry under expectations: with type: llm_review",
    ),
    ("evaluate", "criteria"): Unsupported(
        "criteria is not supported: use prompt",
        "prompt: holds the judging criteria of an llm_structured evaluator",
    ),
}


# Values the reference system accepts that we do not: (key, value) -> what to write instead.
VALUE_HINTS: dict[tuple[str, str], str] = {
    ("action_type", "slash_command"): "a slash command is not supported: " + _SLASH,
    ("action_type", "mcp_tool"): (
        "mcp_tool is not supported: call the tool from a shell action (an MCP client CLI), "
        "or ask an agent with action_type: prompt"
    ),
    ("type", "score_stall"): "use convergence with max_stall on the score",
    ("type", "action_stall"): "use diff_stall, or max_retries on the state that repeats",
}


def unsupported(place: str, key: str) -> Unsupported | None:
    """The refusal for a reference-system key at `place`, if it is one."""
    return UNSUPPORTED.get((place, key))


# ---------------------------------------------------------------------------------------------
# Violations → diagnostics: one readable sentence each, placed at file:line:column.

_TYPE_WORDS = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "empty",
}


def render_path(path: PathKey) -> str:
    """`states.check.timeout`, `lint.suppress[0].reason`; the root is "the loop"."""
    if not path:
        return "the loop"
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + part
    return text


def describe(value: Any) -> str:
    """A short, typed rendering of a value for messages: string 'abc', number 5, a list."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"number {value}"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


def explain(found: list[Violation], positions: Positions, file: str) -> list[Diagnostic]:
    """Diagnostics for schema violations, sorted by line."""
    out: list[Diagnostic] = []
    unknown = {v.path for v in found if v.keyword == "additionalProperties"}
    for violation in found:
        if violation.keyword == "propertyNames" and violation.path in unknown:
            continue  # already reported as an unknown key
        if violation.keyword == "required" and _misspelt(violation, unknown):
            continue  # `patern:` says "did you mean 'pattern'?"; "missing pattern" only echoes it

        for code, message, hint, at, of_value in _explain(violation):
            line, column = positions.value_of(at) if of_value else positions.of(at)
            out.append(
                Diagnostic(code, "error", message, file, render_path(at), line, column, hint)
            )
    unique = {(d.line, d.column, d.code, d.message): d for d in out}
    return sorted(unique.values(), key=lambda d: (d.line, d.column, d.code))


_Explained = tuple[str, str, str, PathKey, bool]


def _misspelt(missing: Violation, unknown: set[PathKey]) -> bool:
    """The required key is what an unknown key beside it was meant to be."""
    beside = [str(path[-1]) for path in unknown if path[:-1] == missing.path]
    return did_you_mean(str(missing.detail), beside) is not None


def _explain(v: Violation) -> list[_Explained]:
    where = render_path(v.path)
    kind = v.keyword
    if kind == "type":
        expected = " or ".join(_TYPE_WORDS.get(t, t) for t in v.detail)
        return [
            (
                "F011",
                f"{where} must be {expected}, got {describe(v.value)}",
                _type_hint(v.detail, v.value, v.path, v.schema),
                v.path,
                True,
            )
        ]
    if kind == "required":
        owner = "the loop" if not v.path else where
        hint = _required_hint(v.path, v.detail) or v.reason
        return [("F010", f"{owner} is missing the required key '{v.detail}'", hint, v.path, False)]
    if kind == "additionalProperties":
        parent, key = v.path[:-1], str(v.path[-1])
        place = place_of(parent)
        refused = unsupported(place, key)
        if refused is not None:
            return [("F013", refused.message, refused.hint, v.path, False)]
        allowed = sorted(v.schema.get("properties", {}))
        owner = "the top level of the loop" if not parent else render_path(parent)
        return [
            (
                "F012",
                f"unknown key '{key}' in {owner}",
                _unknown_hint(key, allowed, place, did_you_mean(key, allowed)),
                v.path,
                False,
            )
        ]
    if kind == "propertyNames":
        return [_explain_name(v, place_of(v.path[:-1]))]
    if kind == "enum":
        allowed = [str(a) for a in v.detail]
        guess = did_you_mean(v.value, allowed) if isinstance(v.value, str) else None
        hint = f"did you mean '{guess}'?" if guess else ""
        if v.path and isinstance(v.value, str):
            hint = VALUE_HINTS.get((str(v.path[-1]), v.value), hint)
        return [
            (
                "F014",
                f"{where} must be one of {', '.join(allowed)}; got {describe(v.value)}",
                hint,
                v.path,
                True,
            )
        ]
    if kind == "const":
        message = f"{where} must be {json.dumps(v.detail)}, got {describe(v.value)}"
        return [("F017" if v.reason else "F014", message, v.reason, v.path, True)]
    if kind in ("minimum", "maximum", "exclusiveMinimum"):
        relation = {
            "minimum": "at least",
            "maximum": "at most",
            "exclusiveMinimum": "greater than",
        }[kind]
        hint = "timeouts are seconds, greater than 0 and at most 31536000 (365 days)"
        hint = hint if "timeout" in where else ""
        return [
            ("F015", f"{where} must be {relation} {v.detail}, got {v.value}", hint, v.path, True)
        ]
    if kind == "maxItems":
        return [("F015", f"{where} must have at most {v.detail} entries", "", v.path, True)]
    if kind in ("minLength", "minItems", "minProperties"):
        return [("F015", f"{where} must not be empty", _empty_hint(v.path), v.path, True)]
    if kind == "pattern":
        hint = str(v.schema.get("description", ""))
        return [("F016", f"{where} has an invalid value: {describe(v.value)}", hint, v.path, True)]
    if kind == "uniqueItems":
        return [
            (
                "F018",
                f"{render_path(v.path[:-1])} lists {describe(v.value)} more than once",
                "remove the repeated entry",
                v.path,
                True,
            )
        ]
    if kind == "dependentRequired":
        key, need = v.detail
        return [
            (
                "F017",
                f"{where}.{key} needs {need} in the same state",
                _DEPENDENT_HINTS.get((key, need), f"add {need}, or remove {key}"),
                (*v.path, key),
                False,
            )
        ]
    if kind == "not":
        return [
            (
                "F017",
                f"{where}: {_sentence(v.reason or 'this combination is not allowed')}",
                "",
                v.path,
                False,
            )
        ]
    if kind == "false":
        return [
            (
                "F017",
                f"{where} is not allowed here: {_sentence(v.reason)}",
                _false_hint(v.path),
                v.path,
                False,
            )
        ]
    if kind in ("anyOf", "oneOf"):
        return _explain_alternatives(v)
    return [("F019", f"{where} does not match the loop schema ({kind})", "", v.path, True)]


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:] if text else "not allowed"


def _explain_name(v: Violation, place: str) -> _Explained:
    key = str(v.path[-1])
    inner: list[Violation] = v.detail[0]
    owner_value = v.detail[1]
    allowed_keys = next((i.detail for i in inner if i.keyword == "enum"), None)
    if allowed_keys is not None:
        owner = render_path(v.path[:-1])
        container = owner
        if place == "evaluate" and isinstance(owner_value.get("type"), str):
            container = f"an evaluate of type {owner_value['type']} ({owner})"
        guess = did_you_mean(key, allowed_keys)
        hint = f"did you mean '{guess}'? " if guess and guess != key else ""
        hint += "keys allowed here: " + ", ".join(allowed_keys)
        return ("F012", f"'{key}' does not belong in {container}", hint, v.path, False)
    described = {
        "loop": "a state name: letters, digits, _ and -, starting with a letter or _",
        "route": "a route key: a verdict name (lowercase), _ (default) or _error",
        "rubric": 'a score from 1 to 5, e.g. "5": what a 5 means',
    }
    owner = render_path(v.path[:-1])
    rule = described.get(
        "loop" if v.path[:-1] == ("states",) else place,
        "a name: letters, digits and _, not starting with a digit",
    )
    return ("F016", f"'{key}' is not a valid key in {owner}", f"expected {rule}", v.path, False)


def _explain_alternatives(v: Violation) -> list[_Explained]:
    where = render_path(v.path)
    if not isinstance(v.detail, list):
        return [
            ("F019", f"{where} matches more than one alternative of the schema", "", v.path, False)
        ]
    branches: list[list[Violation]] = v.detail
    if all(b and all(i.keyword == "required" for i in b) for b in branches):
        options = " or ".join(str(i.detail) for b in branches for i in b)
        return [("F010", f"{where} needs {options}", "", v.path, False)]
    best = min(branches, key=len)
    return [item for inner in best for item in _explain(inner)]


def _type_hint(
    expected: list[str], value: Any, path: PathKey, schema: Mapping[str, Any] | None = None
) -> str:
    last = str(path[-1]) if path else ""
    if path[-2:] == ("evaluate", "outputs") and isinstance(value, dict) and "paths" in value:
        paths = value["paths"] if isinstance(value["paths"], list) else [value["paths"]]
        return (
            f"an assessment's outputs is a list of paths: outputs: [{', '.join(map(str, paths))}]"
        )
    if path == ("outputs",) and isinstance(value, list) and "paths" in _properties(schema):
        # a loop's assessment writes `outputs: [main]`, agent_eval `outputs: [{path: main}]`
        return (
            "a suite's outputs is a mapping: outputs: {paths: [main, answer.md]} reads those "
            "files or directories into the record (every tool call is in it already)"
        )
    if last == "evaluate" and isinstance(value, str):
        return f"write evaluate: {{type: {value}}}"
    if "boolean" in expected and isinstance(value, str):
        return "write true or false (yes/no/on/off are read as text)"
    if "number" in expected and isinstance(value, str):
        if "timeout" in last:
            return "write a plain number of seconds, e.g. 30 (no unit, no quotes)"
        return "write a plain number without quotes"
    if "integer" in expected and isinstance(value, str | float):
        return "write a whole number without quotes"
    if "object" in expected and value is None:
        return "this key needs indented entries below it"
    if "object" in expected and isinstance(value, list):
        return "write NAME: value entries here, not a list of `- ` items"
    if last == "action" and "string" in expected and isinstance(value, list):
        return "write the commands as one text block: action: |, then one command per line"
    if "string" in expected and isinstance(value, bool):
        return 'quote the word if you meant text, e.g. "yes"'
    if "string" in expected and isinstance(value, int | float):
        return "quote it if you meant text: unquoted, YAML reads 2024, 1.10 or .0 as a number"
    if isinstance(value, str) and ("object" in expected or "array" in expected):
        return _word_hint(expected, value, path)
    return ""


_WHY = "reason: why it does not apply here}"


def _word_hint(expected: list[str], value: str, path: PathKey) -> str:
    """A word where a mapping or a list belongs (`llm: claude-sonnet-4-6`, `labels: fast`)."""
    last = str(path[-1]) if path else ""
    in_suppress = "suppress" in path
    if "object" in expected:
        if path == ("llm",):
            return f"write llm: {{model: {value}}}"
        if last == "lint":
            return f"write lint: {{suppress: [{{code: {value}, {_WHY}]}}"
        if in_suppress and isinstance(path[-1], int):
            return f"write {{code: {value}, {_WHY}"
        if "${" in value:
            return "a ${...} cannot stand for a whole mapping: write its entries, e.g. {name: ...}"
        return "write NAME: value entries here, indented below the key or as {name: value}"
    if last == "suppress":
        return f"write suppress: [{{code: {value}, {_WHY}]"
    return f"write a list: [{value}] (or one `- item` per line below the key)"


def _properties(schema: Mapping[str, Any] | None) -> Mapping[str, Any]:
    found = (schema or {}).get("properties")
    return found if isinstance(found, Mapping) else {}


def _required_hint(path: PathKey, key: str) -> str:
    if not path:
        return {
            "name": "add name: my-loop",
            "initial": "add initial: NAME_OF_FIRST_STATE",
            "states": "add states: with at least one state",
        }.get(key, "")
    if path[-1] == "evaluate" and key == "type":
        from engine.load.schema_check import load_schema

        types = load_schema()["$defs"]["evaluate"]["properties"]["type"]["enum"]
        return "add type: one of " + ", ".join(types)
    return ""


def _unknown_hint(key: str, allowed: list[str], place: str, guess: str | None) -> str:
    extra = ", on_<verdict>" if place == "state" else ""
    elsewhere = _belongs_elsewhere(key, place)
    if elsewhere:
        return elsewhere
    route = _route_spelling(key) if place == "state" else None
    if route is not None:
        return f"did you mean '{route}'? routes are written on_<verdict>, in lowercase with _"
    if guess:
        return f"did you mean '{guess}'?"
    return "keys allowed here: " + ", ".join(allowed) + extra


_ROUTE_KEY = re.compile(r"^on_[a-z][a-z0-9_]*$")


def _route_spelling(key: str) -> str | None:
    """`on-yes`, `onYes`, `On_Yes`: an on_<verdict> route in another tool's spelling, which
    difflib does not guess because the allowed keys list no verdict routes."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key.strip())
    snake = re.sub(r"[-\s]+", "_", snake).lower()
    return snake if snake != key and _ROUTE_KEY.match(snake) else None


def _belongs_elsewhere(key: str, place: str) -> str:
    """A key written one level off: routes inside evaluate:, a pattern beside it, and so on."""
    from engine.load.schema_check import load_schema

    defs = load_schema()["$defs"]
    is_route = key.startswith("on_") and key not in ("on_max_steps",)
    if place == "evaluate" and (is_route or key in defs["state"]["properties"]):
        return f"'{key}' belongs to the state: move it out of evaluate: one level up"
    if place == "state" and key in defs["evaluate"]["properties"]:
        return f"'{key}' belongs in the state's evaluate: block"
    if place == "loop" and (is_route or key in defs["state"]["properties"]):
        return f"'{key}' belongs inside a state: indent it under states: NAME:"
    return ""


def _empty_hint(path: PathKey) -> str:
    if path == ("states",):
        return "a loop needs at least one state"
    return ""


def _false_hint(path: PathKey) -> str:
    key = str(path[-1]) if path else ""
    if key.startswith("on_"):
        return f"with a route table, write the verdict inside it: route: {{{key[3:]}: STATE}}"
    return ""


_DEPENDENT_HINTS = {
    ("with", "loop"): "with: passes parameters to a sub-loop; add loop: NAME or remove with:",
    ("on_terminal", "loop"): "on_terminal routes on a sub-loop's terminal; add loop: NAME",
    ("on_retry_exhausted", "max_retries"): "add max_retries: N (entries along a cycle allowed)",
    ("max_retries", "on_retry_exhausted"): (
        "add on_retry_exhausted: STATE — where to go when the retries run out"
    ),
    ("action_type", "action"): "action_type describes action:, which is missing",
}
