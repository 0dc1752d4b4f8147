"""`ll-loop report RUN --html [--out FILE]`: one self-contained HTML page about a run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engine.cli.common import RunArgument, examples, which_run, write_report
from engine.model.errors import UsageError


def register(app: typer.Typer) -> None:
    """Add `report` to `app`."""
    app.command(
        "report",
        epilog=examples("ll-loop report RUN --html", "ll-loop report RUN --html --out run.html"),
    )(report_command)


def report_command(
    run: RunArgument = None,
    html: Annotated[
        bool, typer.Option("--html", help="Write the HTML report (the only format so far).")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Where to write it (default: report.html in the run)."),
    ] = None,
) -> None:
    """The run as one HTML file: graph with the path taken, timeline, judges, cost, history."""
    from engine.report import open_run
    from engine.report.html import run_report_html

    if not html:
        raise UsageError("say which report to write", hint="ll-loop report RUN --html")
    if run is None:
        raise which_run("report")
    view = open_run(run)
    from engine.load.project import project_root

    page = run_report_html(view, project_root())
    target = out if out is not None else view.dir / "report.html"
    write_report(target, page)  # in the run directory (or at --out; `-` is stdout)
    if str(target) != "-":
        print(target)
