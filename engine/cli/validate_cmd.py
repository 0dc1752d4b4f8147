"""`ll-loop validate LOOP...`: schema (the loader) then lint, rendered for people or CI.

Exit codes (docs/cli.md): 0 clean or warnings only, 1 errors (warnings too with `--strict`),
2 usage error (e.g. no such loop). Machine formats stay parseable whatever happens: a file that
does not exist or does not parse is a diagnostic in the report, never a bare message.
"""

from __future__ import annotations

import os
import shlex
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from engine.cli.common import err, examples, resolve_loop
from engine.model.errors import Diagnostic, LoopError, UsageError
from engine.model.terminal import printable

if TYPE_CHECKING:  # lint and the loader are imported only when a command runs
    from lint.report import LoopReport


class Format(StrEnum):
    text = "text"
    json = "json"
    github = "github"
    sarif = "sarif"


def register(app: typer.Typer) -> None:
    """Add `validate` to `app`."""
    app.command(
        "validate",
        epilog=examples(
            "ll-loop validate my-loop.yaml",
            "ll-loop validate --strict --format sarif .loops/ > ll-loop.sarif",
        ),
    )(validate)


def validate(
    loops: Annotated[
        list[str], typer.Argument(metavar="LOOP...", help="Loop files, names or directories.")
    ],
    format: Annotated[Format, typer.Option("--format", "-f", help="Report format.")] = Format.text,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail (exit 1) on warnings too.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Text format: show info findings too.")
    ] = False,
) -> int:
    """Check loops (and suite files) against their schema and every lint rule; report where
    and how to fix."""
    from dataclasses import replace

    from lint.report import RENDERERS

    format = Format.json if as_json else format
    reports, usage_error = check_all(loops)
    shown = reports
    if format is Format.text and not verbose:  # infos restate semantics; machines get them all
        shown = [
            replace(r, diagnostics=tuple(d for d in r.diagnostics if d.severity != "info"))
            for r in reports
        ]
    output = RENDERERS[format.value](shown)
    if output:  # quotes the files' own text: control characters shown, not sent
        print(output if format in {Format.json, Format.sarif} else printable(output))
    if format is Format.text and verbose:
        _print_cost_bounds(reports)
    if format is Format.text:
        err(summary(reports, infos_hidden=not verbose))
    if usage_error:
        return 2
    severities = {d.severity for r in reports for d in r.diagnostics}
    failing = {"error", "warning"} if strict else {"error"}
    return 1 if severities & failing else 0


def _print_cost_bounds(reports: list[LoopReport]) -> None:
    """`validate --verbose`: the static cost bound of each loop that loads and calls an LLM."""
    from engine.cli.costs import bound_line
    from engine.load.loader import load_loop_file
    from engine.load.locate import file_kind

    for report in reports:
        if any(d.severity == "error" for d in report.diagnostics):
            continue
        if file_kind(report.path) != "loop":  # suites and libraries have no cost bound
            continue
        try:
            line = bound_line(load_loop_file(Path(report.path)))
        except LoopError as exc:
            line = f"cost bound: none ({exc.message})"
        if line is not None:
            print(f"{report.path}: {line}")


def check_all(refs: list[str]) -> tuple[list[LoopReport], bool]:
    """A report per reference; True when some reference named no loop at all (usage error)."""
    from lint.report import LoopReport

    reports = []
    usage_error = False
    for ref in _expand(refs):
        if os.path.isdir(
            ref
        ):  # False for a name too long: not a crash  # a directory with no YAML file of its own
            usage_error = True
            empty = UsageError(
                f"{ref} holds no .yaml file (sub-directories are not searched)",
                hint="name the files, e.g. "
                f"`ll-loop validate {shlex.quote(ref.rstrip('/'))}/*/*.yaml`",
            )
            reports.append(LoopReport(ref, (_usage_diagnostic(ref, empty),)))
            continue
        try:
            path = resolve_loop(ref)
        except LoopError as exc:
            usage_error = True
            reports.append(LoopReport(ref, (_usage_diagnostic(ref, exc),)))
            continue
        reports.append(LoopReport(str(path), tuple(check_file(path))))
    return reports, usage_error


def _expand(refs: list[str]) -> list[str]:
    """A directory stands for the loop files in it (so CI can run `validate --strict loops/`):
    its regular files, not a dangling link such as an editor's lock (`.#loop.yaml`)."""
    expanded: list[str] = []
    for ref in refs:
        folder = Path(ref)
        if ref.strip() and os.path.isdir(folder):  # Path("") is `.`: refused, not scanned
            files = sorted(
                p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()
            )
            expanded += [str(p) for p in files] or [ref]
        else:
            expanded.append(ref)
    return expanded


def check_file(path: Path) -> list[Diagnostic]:
    """Load-time diagnostics, or (when the loop loads) every lint diagnostic."""
    from engine.api import validate

    return validate(path)


def _usage_diagnostic(ref: str, exc: LoopError) -> Diagnostic:
    return Diagnostic("USAGE", "error", exc.message, file=ref, hint=exc.hint)


def summary(reports: list[LoopReport], *, infos_hidden: bool = False) -> str:
    """`2 loops: 1 error, 3 warnings` — the line people read last."""
    counts = {"error": 0, "warning": 0, "info": 0}
    for report in reports:
        for d in report.diagnostics:
            counts[d.severity] += 1
    parts = [f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in counts.items() if n]
    from engine.load.locate import FileKind, file_kind

    kinds = [file_kind(report.path) for report in reports]
    nouns: dict[FileKind, tuple[str, str]] = {
        "loop": ("loop", "loops"),
        "suite": ("suite", "suites"),
        "library": ("library", "libraries"),
        "config": ("config file", "config files"),
    }
    named = [(kinds.count(kind), one, many) for kind, (one, many) in nouns.items()]
    loops = ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in named if n) or "0 loops"
    if not parts:
        return f"{loops}: no problems"
    hidden = " (--verbose shows the infos)" if infos_hidden and counts["info"] else ""
    return f"{loops}: {', '.join(parts)}{hidden}"
