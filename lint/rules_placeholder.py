"""A scaffold `<FILL: ...>` placeholder left in any string of the loop (LL060 `placeholder`).

`ll-loop scaffold-*` writes `<FILL: what>` where an issue lacked something; until a person
replaces it, the judge is told it cannot judge. The message matches `engine.scaffold`'s own
`placeholder_diagnostics` (which works on raw text), but this rule reads the loaded model, so it
sees every string value wherever it sits and names its YAML path. Each finding carries the
marker as its `needle`, so `lint_loop` can place it at the marker's own line and column.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from engine.model import Evaluate, Loop, State
from lint._context import LintContext
from lint._paths import state_path
from lint._registry import Finding, PathKey, rule

# The same marker `engine.scaffold.PLACEHOLDER_RE` writes and finds (one line, lazily closed).
PLACEHOLDER = re.compile(r"<FILL:\s*(.*?)>")


@rule("LL060", "warning", "placeholder")
def placeholder(ctx: LintContext) -> Iterator[Finding]:
    """A string that still holds a scaffold `<FILL: ...>` placeholder."""
    for path, text in _strings_of_loop(ctx.loop):
        if "<FILL:" not in text:
            continue
        for match in PLACEHOLDER.finditer(text):
            what = match.group(1).strip()
            yield Finding(
                f"unfilled placeholder: {what}" if what else "unfilled placeholder <FILL:>",
                path,
                f"replace the whole <FILL: ...> marker with {what}"
                if what
                else "replace the <FILL:> marker with the real text",
                needle=match.group(0),
            )


def _strings_of_loop(loop: Loop) -> Iterator[tuple[PathKey, str]]:
    """Every string value of the loop a person writes, with its YAML path, in file order."""
    yield from _strings(loop.description, ("description",))
    yield from _strings(loop.category, ("category",))
    yield from _strings(loop.labels, ("labels",))
    yield from _strings(loop.context, ("context",))
    for name, parameter in loop.parameters.items():
        path: PathKey = ("parameters", name)
        yield from _strings(parameter.description, (*path, "description"))
        yield from _strings(parameter.default, (*path, "default"))
        yield from _strings(parameter.enum, (*path, "enum"))
    yield from _strings(loop.outputs, ("outputs",))
    for state in loop.states.values():
        yield from _strings_of_state(state)


def _strings_of_state(state: State) -> Iterator[tuple[PathKey, str]]:
    yield from _strings(state.description, state_path(state, "description"))
    yield from _strings(state.action, state_path(state, "action"))
    if state.evaluate is not None and not state.evaluate.implicit:
        yield from _strings_of_evaluate(state.evaluate, state_path(state, "evaluate"))
    yield from _strings(state.with_, state_path(state, "with"))


def _strings_of_evaluate(evaluate: Evaluate, path: PathKey) -> Iterator[tuple[PathKey, str]]:
    for key in ("prompt", "source", "pattern", "path", "previous", "target"):
        yield from _strings(getattr(evaluate, key), (*path, key))
    for index, dimension in enumerate(evaluate.dimensions):
        yield from _strings(dimension.description, (*path, "dimensions", index, "description"))


def _strings(value: Any, path: PathKey) -> Iterator[tuple[PathKey, str]]:
    """The strings in a YAML value (nested mappings and lists included), with their paths."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))
