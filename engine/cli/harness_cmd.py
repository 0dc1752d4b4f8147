"""Placeholder for the `ll-harness` command (its own typer app)."""

from __future__ import annotations

import sys

import typer

from engine.cli.common import run_guarded

app = typer.Typer(name="ll-harness", no_args_is_help=True, add_completion=False)


def main() -> None:
    """Console entry point for `ll-harness`."""
    sys.exit(run_guarded(app))
