"""`ll-loop explain RUN`: why a run ended where it did, on one screen (or as JSON)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from engine.cli.common import RunArgument, examples, which_run


class Format(StrEnum):
    text = "text"
    json = "json"


def register(app: typer.Typer) -> None:
    """Add `explain` to `app`."""
    app.command(
        "explain",
        epilog=examples("ll-loop explain 20261130-131423-63f3c0", "ll-loop explain RUN --json"),
    )(explain_command)


def explain_command(
    run: RunArgument = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="text or json.")] = Format.text,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
) -> None:
    """Why a run ended (or where it stands): path, verdicts with evidence, steps and cost."""
    import json

    from engine.report import explain, open_run, render_text

    if run is None:
        raise which_run("explain")
    view = open_run(run)
    explanation = explain(view.facts, view.trace, child=view.child)
    if format is Format.json or as_json:
        print(json.dumps(explanation.to_json(), indent=2))
    else:
        print(render_text(explanation))
