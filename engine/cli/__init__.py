"""The `ll-loop` command: a thin typer app; each command lives in its own module.

A command parses its arguments, calls the core, and renders. Errors raised on purpose
(`LoopError`) become one sentence and an exit code; anything else is a bug and is reported as such,
with the traceback only under `--debug`.

`main` registers only the module of the command being run: click builds the parameters of every
registered command on each call, and importing and building all of them cost ~25 ms of every
`ll-loop run`. Help, completion and unknown commands get the whole tree (`build_app()`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from typing import Any

import typer

from engine.cli.common import run_guarded

# Registration order is the order `ll-loop --help` lists the commands in.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "run_cmd": ("run",),
    "runs_cmd": ("status", "stop", "history", "resume"),
    "validate_cmd": ("validate",),
    "show_cmd": ("show", "simulate"),
    "list_cmd": ("list", "install"),
    "schema_cmd": ("schema",),
    "scaffold_cmd": ("scaffold-eval", "scaffold-verify"),
    "explain_cmd": ("explain",),
    "report_cmd": ("report",),
}


def build_app(command: str | None = None) -> typer.Typer:
    """The app with every command, or only the module that defines `command` when known."""
    app = typer.Typer(
        name="ll-loop",
        help="Declarative FSM loops for LLM-driven automation and evaluation.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    modules = [m for m, names in COMMAND_MODULES.items() if command in names] or COMMAND_MODULES
    for module in modules:
        importlib.import_module(f"engine.cli.{module}").register(app)
    if len(app.registered_commands) == 1:
        # One command would become the whole program (`ll-loop LOOP`); keep `ll-loop run LOOP`.
        app.callback()(_group)
    return app


def _group() -> None:
    """Declarative FSM loops for LLM-driven automation and evaluation."""


def main() -> None:
    """Console entry point for `ll-loop`; it ends the process (in-process callers use
    `run_guarded(build_app())`).

    It leaves with `os._exit` once stdout and stderr are flushed: every file a command writes
    is closed by the time it returns, and the interpreter's teardown of the modules it imported
    cost ~15 ms of every command, a tenth of a short run's start-up.
    """
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    if command is not None and {"--help", "-h"} & set(sys.argv[1 : sys.argv.index(command)]):
        command = None  # `ll-loop --help run` is the top-level help: every command
    code = run_guarded(build_app(command))
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


def __getattr__(name: str) -> Any:
    """`engine.cli.app`: the whole command tree (docs generation and tests use it)."""
    if name == "app":
        return build_app()
    raise AttributeError(name)
