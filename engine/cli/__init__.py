"""The `ll-loop` command: a thin typer app; each command lives in its own module.

A command parses its arguments, calls the core, and renders. Errors raised on purpose
(`LoopError`) become one sentence and an exit code; anything else is a bug and is reported as such,
with the traceback only under `--debug`.
"""

from __future__ import annotations

import sys

import typer

from engine.cli import (
    list_cmd,
    run_cmd,
    runs_cmd,
    scaffold_cmd,
    schema_cmd,
    show_cmd,
    validate_cmd,
)
from engine.cli.common import run_guarded

app = typer.Typer(
    name="ll-loop",
    help="Declarative FSM loops for LLM-driven automation and evaluation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (run_cmd, runs_cmd, validate_cmd, show_cmd, list_cmd, schema_cmd, scaffold_cmd):
    _module.register(app)


def main() -> None:
    """Console entry point for `ll-loop`."""
    sys.exit(run_guarded(app))
