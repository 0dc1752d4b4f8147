"""`ll-loop migrate PATH...`: convert little-loops loops; report per file what was not kept."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from engine.cli.common import examples
from engine.model.errors import UsageError


class Format(StrEnum):
    text = "text"
    json = "json"


def register(app: typer.Typer) -> None:
    """Add `migrate` to `app`."""

    @app.command(
        "migrate",
        epilog=examples(
            "ll-loop migrate .loops/ --out converted/",
            "ll-loop migrate fix.yaml --search ~/little-loops/scripts/little_loops/loops",
        ),
    )
    def migrate_command(
        paths: Annotated[
            list[Path],
            typer.Argument(
                metavar="PATH...",
                help="little-loops loop files or directories (their *.yaml files).",
            ),
        ],
        out: Annotated[
            Path | None,
            typer.Option(
                "--out",
                help="Write the converted files under DIR, keeping their layout "
                "(default: NAME.ll.yaml next to each input).",
            ),
        ] = None,
        search: Annotated[
            list[Path] | None,
            typer.Option(
                "--search",
                help="Also look up sub-loops and fragment libraries in DIR (e.g. little-loops' "
                "built-in loops directory); repeatable.",
            ),
        ] = None,
        force: Annotated[
            bool, typer.Option("--force", help="Replace files that already exist.")
        ] = False,
        output: Annotated[
            Format, typer.Option("--format", "-f", help="text or json (one object for scripts).")
        ] = Format.text,
        as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
        verbose: Annotated[
            bool, typer.Option("--verbose", help="Also list what was changed on purpose.")
        ] = False,
    ) -> None:
        """Convert little-loops loops (and the libraries and sub-loops they use) into ll-loop
        loops, validate them, and say per file what could not be kept. Exit 0 when every file
        converted cleanly, was unchanged or was left alone on purpose; 1 when one is blocked,
        failed, or skipped because its output exists with other content; 2 on a usage
        error."""
        from engine.cli.validate_cmd import check_file
        from engine.migrate import migrate

        _check_usage(paths, out, search or [])
        report = migrate(paths, out=out, force=force, validate=check_file, search=search or ())
        if output == Format.json or as_json:
            sys.stdout.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(report.render(verbose=verbose) + "\n")
        raise typer.Exit(0 if report.ok else 1)


def _check_usage(paths: list[Path], out: Path | None, search: list[Path]) -> None:
    """Refuse, before anything is written, what cannot be meant."""
    missing = [p for p in paths if not p.exists()]
    if missing and missing[0].is_symlink():
        raise UsageError(
            f"{missing[0]} is a symbolic link that leads nowhere (its target does not exist, "
            "or links lead in a circle)",
            hint="give the file it should point at",
        )
    if missing:
        raise UsageError(f"no such file or directory: {missing[0]}", hint="check the path")
    empty = [str(p) for p in paths if p.is_dir() and not _has_yaml(p)]
    if empty:
        raise UsageError(f"{empty[0]} has no *.yaml or *.yml files to migrate.")
    if out is not None and out.exists() and not out.is_dir():
        raise UsageError(f"--out must be a directory: {out} is a file.")
    absent = [str(p) for p in search if not p.is_dir()]
    if absent:
        raise UsageError(f"--search must name a directory: {absent[0]} is not one.")


def _has_yaml(folder: Path) -> bool:
    return any(p.suffix in (".yaml", ".yml") for p in folder.rglob("*"))
