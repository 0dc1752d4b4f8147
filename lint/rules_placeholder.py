"""A scaffold `<FILL: ...>` placeholder left in any string of the loop (LL060 `placeholder`).

`ll-loop scaffold-*` writes `<FILL: what>` where an issue lacked something; until a person
replaces it, the judge is told it cannot judge. The message matches `engine.scaffold`'s own
`placeholder_diagnostics` (which works on raw text), but this rule reads the loaded model, so it
sees every string value wherever it sits and names its YAML path. Each finding carries the
marker as its `needle`, so `lint_loop` can place it at the marker's own line and column.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from engine.model.loop import Evaluate, Loop, State
from lint._context import LintContext
from lint._paths import state_path, strings_in
from lint._registry import Finding, PathKey, rule

# The same marker `engine.scaffold.PLACEHOLDER_RE` writes and finds: one line, up to the first
# `>` and never across another `<` (so each unclosed `<FILL:` is given up at the next `<`, not
# at the line's end: linear, where `<FILL:\s*(.*?)>` was quadratic in the unclosed markers).
PLACEHOLDER = re.compile(r"<FILL:([^<>\n]*)>")


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
    yield from strings_in(loop.description, ("description",))
    yield from strings_in(loop.category, ("category",))
    yield from strings_in(loop.labels, ("labels",))
    yield from strings_in(loop.context, ("context",))
    for name, parameter in loop.parameters.items():
        path: PathKey = ("parameters", name)
        yield from strings_in(parameter.description, (*path, "description"))
        yield from strings_in(parameter.default, (*path, "default"))
        yield from strings_in(parameter.enum, (*path, "enum"))
    yield from strings_in(loop.outputs, ("outputs",))
    for state in loop.states.values():
        yield from _strings_of_state(state)


def _strings_of_state(state: State) -> Iterator[tuple[PathKey, str]]:
    yield from strings_in(state.description, state_path(state, "description"))
    yield from strings_in(state.action, state_path(state, "action"))
    if state.evaluate is not None and not state.evaluate.implicit:
        yield from _strings_of_evaluate(state.evaluate, state_path(state, "evaluate"))
    yield from strings_in(state.with_, state_path(state, "with"))


def _strings_of_evaluate(evaluate: Evaluate, path: PathKey) -> Iterator[tuple[PathKey, str]]:
    for key in ("prompt", "source", "pattern", "path", "previous", "target"):
        yield from strings_in(getattr(evaluate, key), (*path, key))
    for index, dimension in enumerate(evaluate.dimensions):
        yield from strings_in(dimension.description, (*path, "dimensions", index, "description"))
