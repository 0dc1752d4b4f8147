"""`ll-loop schema`: print a shipped JSON Schema, so editors and CI can validate loop files."""

from __future__ import annotations

import sys

import typer

from engine.load.resources import schema_path
from engine.model.errors import UsageError

SCHEMAS = {
    "loop": "loop.schema.json",
    "events": "events.schema.json",
    "harness-task": "harness-task.schema.json",
}


def schema_text(name: str) -> str:
    """The text of the schema called `name`; a UsageError when it is unknown or not shipped."""
    if name not in SCHEMAS:
        raise UsageError(
            f"no schema named {name!r}", hint="choose one of: " + ", ".join(sorted(SCHEMAS))
        )
    path = schema_path(SCHEMAS[name])
    if not path.is_file():
        raise UsageError(
            f"the {name} schema is not available in this installation ({path.name} is missing)",
            hint="`ll-loop schema --name loop` prints the loop file schema",
        )
    return path.read_text(encoding="utf-8")


def register(app: typer.Typer) -> None:
    """Add `schema` to `app`."""

    @app.command("schema")
    def schema(
        name: str = typer.Option("loop", "--name", help="loop, events or harness-task"),
    ) -> None:
        """Print a JSON Schema (default: the loop file format) to stdout."""
        text = schema_text(name)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
