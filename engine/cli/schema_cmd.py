"""`ll-loop schema`: print a shipped JSON Schema, so editors and CI can validate loop files."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import typer

from engine.cli.common import err, examples
from engine.load.resources import schema_path
from engine.model.errors import UsageError

SCHEMAS = {
    "loop": "loop.schema.json",
    "events": "events.schema.json",
    "harness-task": "harness-task.schema.json",
    "suite": "suite.schema.json",
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

    @app.command(
        "schema",
        epilog=examples(
            "ll-loop schema --out .loops/loop.schema.json",
            "ll-loop schema --name events",
            "ll-loop schema --name suite --out evals/suite.schema.json",
        ),
    )
    def schema(
        name: str = typer.Option(
            "loop",
            "--name",
            help="loop, events, harness-task or suite (which refers to loop.schema.json for "
            "judges: write both side by side)",
        ),
        out: Path | None = typer.Option(  # noqa: B008  (typer's way of declaring an option)
            None, "--out", "-o", help="Write the schema to this file instead of stdout."
        ),
    ) -> None:
        """Print a JSON Schema (default: the loop file format), or write it with --out."""
        text = schema_text(name)
        text = text if text.endswith("\n") else text + "\n"
        if out is None:
            sys.stdout.write(text)
            return
        write_text(out, text)
        err(f"wrote the {name} schema to {out}")


def write_text(path: Path, text: str) -> None:
    """Replace `path` with `text` in one step (a reader never sees half a schema)."""
    if path.is_dir():
        raise UsageError(
            f"{path} is a directory", hint="name the file to write, e.g. loop.schema.json"
        )
    from engine.load.project import write_new_file

    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write_new_file(temp, text.encode("utf-8"), replace=True)  # never through a link
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):  # never made (`--out afile/x.json`), or gone
            temp.unlink()
        raise UsageError(
            f"cannot write {path}: {exc.strerror or exc}", hint="choose another path with --out"
        ) from None


def ensure_project_schema(folder: Path) -> Path:
    """`folder/loop.schema.json`, written (or brought up to date) for the modeline of the loops
    in `folder` (`.loops/`), so an editor checks them against this version of the format."""
    from engine.load.modeline import PROJECT_SCHEMA

    target = folder / PROJECT_SCHEMA
    text = schema_text("loop")
    text = text if text.endswith("\n") else text + "\n"
    try:
        current = target.read_text(encoding="utf-8")
    except OSError:
        current = None
    if current != text:
        write_text(target, text)
    return target
