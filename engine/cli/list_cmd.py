"""`ll-loop list` (project and built-in loops) and `ll-loop install NAME` (copy a built-in).

A loop that does not load is still listed, with its first problem, so a broken file is visible
instead of silently missing (or crashing the listing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import typer

from engine.cli.common import err, examples, out, project_loops_dir
from engine.load.resources import builtin_loops_dir
from engine.model.errors import LoadError, UsageError

Source = Literal["project", "builtin"]


@dataclass(frozen=True)
class LoopEntry:
    """One loop file as `list` shows it."""

    name: str
    source: Source
    path: str
    description: str = ""
    category: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "source": self.source,
            "path": self.path,
            "description": self.description,
            "category": self.category,
            "error": self.error,
        }


def register(app: typer.Typer) -> None:
    """Add `list` and `install` to `app`."""

    @app.command("list", epilog=examples("ll-loop list", "ll-loop list --json"))
    def list_command(
        json_output: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
    ) -> None:
        """List the loops here (.loops/*.yaml) and the built-in ones."""
        entries = list_loops(project_loops_dir())
        if json_output:
            print(json.dumps([e.to_json() for e in entries], indent=2))
            return
        if not entries:
            print("no loops found (add one to .loops/, or see `ll-loop install`)")
            return
        width = max(len(e.name) for e in entries)
        for entry in entries:
            about = f"error: {entry.error}" if entry.error else entry.description
            out(f"{entry.name:<{width}}  {entry.source:<8}  {_one_line(about)}")

    @app.command("install", epilog=examples("ll-loop install fix-until-clean"))
    def install_command(
        name: Annotated[str, typer.Argument(help="Name of a built-in loop (see `ll-loop list`).")],
        force: Annotated[
            bool, typer.Option("--force", help="Overwrite an existing .loops/NAME.yaml.")
        ] = False,
    ) -> None:
        """Copy a built-in loop into .loops/NAME.yaml so you can change it."""
        target = install_builtin(name, project_loops_dir(), force=force)
        err(f"installed {name} → {target}")


def list_loops(project_dir: Path) -> list[LoopEntry]:
    """Project loops first, then built-ins; each sorted by name."""
    entries = [_entry(p, "project") for p in _loop_files(project_dir)]
    entries += [_entry(p, "builtin") for p in _loop_files(builtin_loops_dir())]
    return entries


def install_builtin(name: str, project_dir: Path, *, force: bool = False) -> Path:
    """Copy built-in `name` to `project_dir/NAME.yaml`; refuse to overwrite unless `force`."""
    source = next(
        (p for p in _loop_files(builtin_loops_dir()) if p.stem == name),
        None,
    )
    if source is None:
        from engine.load.spelling import did_you_mean_hint

        names = [p.stem for p in _loop_files(builtin_loops_dir())]
        raise UsageError(
            f"no built-in loop named {name!r}{did_you_mean_hint(name, names)}",
            hint=f"built-ins: {', '.join(names) or 'none'}",
        )
    from engine.cli.schema_cmd import ensure_project_schema
    from engine.load.modeline import PROJECT_SCHEMA, with_modeline
    from engine.load.project import ensure_dir, write_new_file

    target = ensure_dir(project_dir) / f"{name}.yaml"
    text = with_modeline(source.read_text(encoding="utf-8"), PROJECT_SCHEMA)
    try:
        write_new_file(target, text.encode("utf-8"), replace=force)
    except FileExistsError:
        raise UsageError(f"{target} already exists", hint="pass --force to overwrite it") from None
    except OSError as exc:  # a directory of that name, a read-only disk, ...
        raise UsageError(
            f"cannot write {target}: {exc.strerror or exc}",
            hint="move what is there aside, or install into another project",
        ) from None
    ensure_project_schema(project_dir)
    return target


def _loop_files(folder: Path) -> list[Path]:
    """The loop files of `folder`: the fragment libraries and suites kept beside them are not
    loops (listing them would show each as a loop missing its name)."""
    from engine.load.locate import file_kind

    if not folder.is_dir():
        return []
    return sorted(
        (
            p
            for p in folder.iterdir()
            if p.suffix in {".yaml", ".yml"} and p.is_file() and file_kind(p) == "loop"
        ),
        key=lambda p: p.stem,
    )


def _entry(path: Path, source: Source) -> LoopEntry:
    from engine.load.loader import load_loop_file

    try:
        loop = load_loop_file(path)
    except LoadError as exc:
        first = exc.diagnostics[0] if exc.diagnostics else None
        problem = f"{first.location()}: {first.message}" if first else exc.message
        return LoopEntry(path.stem, source, str(path), error=problem)
    # The name is what `ll-loop run NAME` resolves: the file name, not the `name:` inside.
    return LoopEntry(path.stem, source, str(path), loop.description, loop.category)


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 100 else text[:97] + "..."
