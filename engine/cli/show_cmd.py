"""Static views of a loop, nothing executed: `ll-loop show` draws its graph, `ll-loop simulate`
walks it with scripted verdicts."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from engine.cli.common import err, examples, resolve_loop
from engine.model.loop import Loop
from engine.model.terminal import printable


class Format(StrEnum):
    text = "text"
    mermaid = "mermaid"
    dot = "dot"
    json = "json"


def register(app: typer.Typer) -> None:
    """Add `show` and `simulate` to `app`."""
    app.command(
        "show",
        epilog=examples(
            "ll-loop show fix-until-green-demo", "ll-loop show my-loop --format mermaid"
        ),
    )(show)
    app.command(
        "simulate",
        epilog=examples(
            "ll-loop simulate fix-until-green-demo", "ll-loop simulate my-loop -s first-no"
        ),
    )(simulate)


def show(
    loop: Annotated[str, typer.Argument(metavar="LOOP", help="Loop file or name.")],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
    cost: Annotated[
        bool,
        typer.Option("--cost", help="Print the worst-case LLM calls and dollars of one run."),
    ] = False,
) -> int:
    """Print the loop's states and transitions; retry edges and terminal outcomes are marked. The
    `on_max_steps` state, which no route names, is shown entered from `max_steps N spent` (the
    budget can run out in any state): a `← max_steps N spent` line under it in text, a dashed
    `max_steps N spent` pseudo-state in Mermaid, a dotted edge from a label in dot."""
    from engine.graph.show import render

    format = Format.json if as_json else format
    loaded = _load(loop)
    if cost:
        return _show_cost(loaded, format)
    text = render(loaded, format.value)
    print(text if format is Format.json else printable(text))
    return 0


def _show_cost(loaded: Loop, format: Format) -> int:
    """`show --cost`: text, or the bound as JSON with `--format json`."""
    import json

    from engine.cli.costs import loop_bound
    from engine.graph.cost import render_bound

    bound = loop_bound(loaded)
    print(json.dumps(bound.to_json(), indent=2) if format is Format.json else render_bound(bound))
    return 0


def simulate(
    loop: Annotated[str, typer.Argument(metavar="LOOP", help="Loop file or name.")],
    scenario: Annotated[
        str,
        typer.Option(
            "--scenario",
            "-s",
            help="all-yes, all-no, all-error or first-no (fail once, then pass).",
        ),
    ] = "all-yes",
    verdict: Annotated[
        list[str] | None,
        typer.Option(
            "--verdict",
            "-v",
            help="STATE=VERDICT, or STATE=v1,v2,... one per visit (repeatable); wins over "
            "the scenario.",
        ),
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", min=1, help="Override the loop's max_steps.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> int:
    """Walk the loop without running actions; exit codes like `run` (0/1/2/3).

    A loop `run` would refuse (a schema or lint error) is refused here too, with the same
    diagnostics and exit 2.
    """
    import json

    from engine.api import validate_budgeted
    from engine.graph import simulate as sim

    loaded = _load(loop)
    checked = validate_budgeted(resolve_loop(loop), max_steps)  # lint checks the budget walked
    errors = [d for d in checked if d.severity == "error"]
    if errors:  # `run` refuses such a loop before its first step: no walk says otherwise
        for diagnostic in errors:
            err(diagnostic.render())
        return 2
    overrides = sim.parse_overrides(loaded, verdict or [])
    result = sim.simulate(loaded, scenario, overrides, max_steps)
    print(json.dumps(result.to_json(), indent=2) if as_json else printable(sim.render_text(result)))
    return result.exit_code


def _load(ref: str) -> Loop:
    """The loaded loop; a `LoadError` goes to the CLI's guard, which prints every diagnostic
    on stderr and, for `--format json` / `--json`, the error object on stdout (a script got
    nothing there)."""
    from engine.load.loader import load_loop_file
    from engine.load.locate import refuse_other_kind

    return load_loop_file(refuse_other_kind(resolve_loop(ref), ref))
