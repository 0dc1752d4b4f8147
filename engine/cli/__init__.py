"""The `ll-loop` command: a thin typer app; each command lives in its own module.

A command parses its arguments, calls the core, and renders. Errors raised on purpose
(`LoopError`) become one sentence and an exit code; anything else is a bug and is reported as such,
with the traceback only under `--debug`.

`main` registers only the module of the command being run: click builds the parameters of every
registered command on each call, and importing and building all of them cost ~25 ms of every
`ll-loop run`. Help, completion and unknown commands get the whole tree (`build_app()`).

Shell completion is typer's: `ll-loop --install-completion` (or `--show-completion` to see the
script); a completing shell calls `ll-loop` with no command word, so it gets the whole tree.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any, NoReturn


def interrupted_while_starting() -> NoReturn:
    """Ctrl-C while Python loads the command line (the first ~0.1 s), before `run_guarded`
    can catch it: said as a later Ctrl-C is (`interrupted`, exit 130), not a traceback."""
    sys.stderr.write("interrupted\n")
    raise SystemExit(130)


try:
    import typer

    from engine.cli.common import run_console, version_option
except KeyboardInterrupt:
    interrupted_while_starting()

# Registration order is the order `ll-loop --help` lists the commands in.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "run_cmd": ("run",),
    "runs_cmd": ("status", "stop", "history", "resume"),
    "validate_cmd": ("validate",),
    "show_cmd": ("show", "simulate"),
    "list_cmd": ("list", "install"),
    "schema_cmd": ("schema",),
    "scaffold_cmd": ("scaffold-eval", "scaffold-verify"),
    "judges_cmd": ("judges",),
    "migrate_cmd": ("migrate",),
    "explain_cmd": ("explain",),
    "report_cmd": ("report",),
}


def build_app(command: str | None = None) -> typer.Typer:
    """The app with every command, or only the module that defines `command` when known."""
    app = typer.Typer(
        name="ll-loop",
        help="Declarative FSM loops for LLM-driven automation and evaluation.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
    )
    modules = [m for m, names in COMMAND_MODULES.items() if command in names] or COMMAND_MODULES
    for module in modules:
        importlib.import_module(f"engine.cli.{module}").register(app)
    # A group even with one command registered: `ll-loop run LOOP`, never `ll-loop LOOP`.
    app.callback()(_group)
    return app


def _group(
    version: Annotated[bool, version_option("ll-loop")] = False,
) -> None:
    """Declarative FSM loops for LLM-driven automation and evaluation."""


def main() -> None:
    """Console entry point for `ll-loop`; it ends the process (`run_console`; in-process
    callers use `run_guarded(build_app())`)."""
    try:
        app = build_app(command_of(sys.argv[1:]))  # imports the command's module
    except KeyboardInterrupt:
        interrupted_while_starting()
    run_console(app, "ll-loop")


def command_of(args: list[str]) -> str | None:
    """The command word of a command line (None for `ll-loop --help run`: every command)."""
    command = next((arg for arg in args if not arg.startswith("-")), None)
    if command is not None and {"--help", "-h"} & set(args[: args.index(command)]):
        return None
    return command


def __getattr__(name: str) -> Any:
    """`engine.cli.app`: the whole command tree (docs generation and tests use it)."""
    if name == "app":
        return build_app()
    raise AttributeError(name)
