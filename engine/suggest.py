"""Help for a key that is wrong: "did you mean", and the reference system's keys we refuse.

A typo such as `timout` gets the closest valid key *at that place*. A key that the reference
system (little-loops) accepts but we deliberately do not — `max_iterations`, `flow`,
`on_success`… — gets a "not supported: use …" hint, so a ported loop fails loudly instead of
losing behaviour silently (DESIGN §9: "unknown keys silently dropped").
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import NamedTuple

PathKey = tuple[str | int, ...]


class Unsupported(NamedTuple):
    """Why a reference-system key is refused, and what to write instead."""

    message: str
    hint: str


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to `word`, or None when nothing is close enough."""
    options = sorted(set(candidates))
    alias = ALIASES.get(word.strip().lower())
    if alias in options:
        return alias
    lowered = {c.lower(): c for c in options}
    if word.lower() in lowered:
        return lowered[word.lower()]
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return close[0] if close else None


# Common spellings from other tools that difflib cannot guess (gte is closer to gt than to ge).
ALIASES = {
    "gte": "ge", ">=": "ge", "lte": "le", "<=": "le", ">": "gt", "<": "lt",
    "==": "eq", "=": "eq", "equals": "eq", "!=": "ne", "neq": "ne",
    "min": "minimize", "max": "maximize", "llm": "llm_structured", "judge": "llm_structured",
    "contains": "output_contains", "regex": "output_contains", "json": "output_json",
    "numeric": "output_numeric", "exit": "exit_code",
}  # fmt: skip


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
    return "mapping"


_SUBLOOP = "run the other loop as a sub-loop state instead (`loop: NAME` with `with:`)"
_STEPS = (
    "max_steps counts executions of non-terminal states (every state run is one step), "
    "not trips around the loop: a 3-state cycle repeated 10 times needs max_steps: 30"
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
    ("loop", "fragments"): Unsupported(
        "fragments are not supported: a loop file is self-contained", _SUBLOOP
    ),
    ("loop", "import"): Unsupported("import is not supported", _SUBLOOP),
    ("loop", "imports"): Unsupported("imports is not supported", _SUBLOOP),
    ("loop", "include"): Unsupported("include is not supported", _SUBLOOP),
    ("loop", "extends"): Unsupported(
        "extends is not supported: loops do not inherit from each other",
        "copy the states you need, or " + _SUBLOOP,
    ),
    ("loop", "variables"): Unsupported(
        "variables is not supported: use context",
        "context: holds default variables, read as ${context.NAME}",
    ),
    ("loop", "vars"): Unsupported(
        "vars is not supported: use context",
        "context: holds default variables, read as ${context.NAME}",
    ),
    ("loop", "inputs"): Unsupported(
        "inputs is not supported: use parameters",
        "parameters: NAME: {type, required, default, description}",
    ),
    ("loop", "initial_state"): Unsupported(
        "initial_state is not supported: use initial", "initial: NAME_OF_FIRST_STATE"
    ),
    ("loop", "start"): Unsupported(
        "start is not supported: use initial", "initial: NAME_OF_FIRST_STATE"
    ),
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
        "a state has no type",
        "use action_type: shell|prompt for the action, terminal: true for a final state, "
        "or loop: NAME for a sub-loop",
    ),
    ("state", "condition"): Unsupported(
        "condition is not supported: routing follows the verdict of an evaluator",
        "add evaluate: (e.g. type: output_contains, pattern: ...) and route with on_yes / on_no",
    ),
    ("state", "retry"): Unsupported(
        "retry is not supported: use max_retries with on_retry_exhausted",
        "max_retries: N counts entries along a cycle; on_retry_exhausted: STATE names "
        "where to go when they run out",
    ),
    ("state", "retries"): Unsupported(
        "retries is not supported: use max_retries with on_retry_exhausted",
        "max_retries: N counts entries along a cycle; on_retry_exhausted: STATE names "
        "where to go when they run out",
    ),
    ("state", "shell"): Unsupported(
        "shell is not supported: put the command in action",
        "action: <command> runs in bash (action_type: shell is the default)",
    ),
    ("state", "command"): Unsupported(
        "command is not supported: use action", "action: <command> runs in bash"
    ),
    ("state", "prompt"): Unsupported(
        "a state has no prompt: use action with action_type: prompt",
        "action: <prompt text> and action_type: prompt; a judge's prompt goes in evaluate:",
    ),
    ("state", "fragment"): Unsupported(
        "fragment is not supported: a loop file is self-contained", _SUBLOOP
    ),
    ("state", "artifact_versioning_ok"): Unsupported(
        "artifact_versioning_ok is not supported: suppress lint rules explicitly",
        'lint: {suppress: [{code: RULE, reason: "why it does not apply"}]}',
    ),
    ("state", "params"): Unsupported(
        "params is not supported: use with", "with: passes values to the sub-loop's parameters"
    ),
    ("evaluate", "criteria"): Unsupported(
        "criteria is not supported: use prompt",
        "prompt: holds the judging criteria of an llm_structured evaluator",
    ),
}


def unsupported(place: str, key: str) -> Unsupported | None:
    """The refusal for a reference-system key at `place`, if it is one."""
    return UNSUPPORTED.get((place, key))
