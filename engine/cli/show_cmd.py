"""`ll-loop show LOOP [--format text|mermaid|dot|json]`: the loop's graph, to read or to draw."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from engine.cli.common import err, resolve_loop
from engine.errors import LoadError


class Format(StrEnum):
    text = "text"
    mermaid = "mermaid"
    dot = "dot"
    json = "json"


def register(app: typer.Typer) -> None:
    """Add `show` to `app`."""
    app.command("show")(show)


def show(
    loop: Annotated[str, typer.Argument(metavar="LOOP", help="Loop file or name.")],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
) -> int:
    """Print the loop's states and transitions; retry edges and terminal outcomes are marked."""
    from engine.load import load_loop_file
    from engine.show import render

    path = resolve_loop(loop)
    try:
        loaded = load_loop_file(path)
    except LoadError as exc:
        for diagnostic in exc.diagnostics:
            err(diagnostic.render())
        return 2
    print(render(loaded, format.value))
    return 0
