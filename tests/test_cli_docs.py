"""docs/cli.md is generated from the real command tree, so it cannot drift from the code.

Regenerate after changing a command: `.venv/bin/python -m tests.test_cli_docs`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import typer
import typer.main

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"

INTRO = """# Command-line reference

Generated from the commands themselves (`python -m tests.test_cli_docs` rewrites it; a test fails
when it is stale). For a walkthrough see [guide.md](guide.md).

Conventions shared by every command: results go to stdout, progress and diagnostics to stderr;
errors are one sentence with a hint (add `--debug` for a traceback). Exit codes of `run`, `resume`,
`simulate` and `ll-harness`: **0** success/pass, **1** failure/fail, **2** error (invalid loop,
unrouted verdict, crash, lock conflict, usage), **3** inconclusive (budget or time exhausted,
stopped, cost limit, abstained). `validate`: 0 clean or warnings only, 1 errors (warnings too with
`--strict`), 2 usage error. A reader that leaves (`ll-loop run LOOP | head -3`) ends nothing:
the command runs to its end with its own exit code, and what nobody reads is dropped; so is
what a stderr that cannot take more (a full disk) refuses. A result stdout cannot take is said
on stderr, with exit 2.
One spelling for JSON: every command that can print JSON takes `--json`; a command with several
formats (`validate`, `show`, `explain`, `migrate`) also takes `--format`/`-f`, and `ll-harness`
its seed's `--output` (`--format` there too), `--json` being the same as `--format json`.
A command asked for JSON (`--json`, `--format json`, `--output json`) prints JSON on stdout for
an error too: `run`/`resume` their result object, `validate` its report, `ll-harness` its
refusal object, and every other `ll-loop` command `{"error", "hint", "code", "exit_code"}`.
`--version` prints the version; `NO_COLOR=1` turns colour off.

Shell completion (bash, zsh, fish, PowerShell): `ll-loop --install-completion` adds it to your
shell's start-up file (restart the shell afterwards), `ll-loop --show-completion` prints the script
instead, to install it by hand. The same works for `ll-harness`. Completion covers commands and
options.
"""


def _param_row(param: Any) -> str:
    if type(param).__name__.endswith("Argument"):
        name = f"`{param.name.upper()}`" + ("" if param.required else " (optional)")
        if getattr(param, "nargs", 1) == -1:
            name += " …"
    else:
        name = ", ".join(f"`{opt}`" for opt in param.opts)
        if not getattr(param, "is_flag", False):
            name += " VALUE"
        if getattr(param, "multiple", False):
            name += " (repeatable)"
    help_text = (getattr(param, "help", None) or "").replace("|", "\\|").replace("\n", " ")
    default = param.default
    if default not in (None, False, (), []) and not getattr(param, "is_flag", False):
        help_text += f" Default: `{default}`."
    return f"| {name} | {help_text.strip()} |"


def _command_doc(program: str, name: str, command: Any) -> list[str]:
    lines = [f"### `{program} {name}`", ""]
    if command.help:
        lines += [" ".join(command.help.split()), ""]
    params = [p for p in command.params if p.name != "help"]
    if params:
        lines += ["| argument / option | meaning |", "|---|---|"]
        lines += [_param_row(p) for p in params]
        lines.append("")
    if command.epilog:  # the examples `--help` shows
        examples = [line.strip() for line in command.epilog.splitlines()[1:] if line.strip()]
        lines += ["```console", *(f"$ {example}" for example in examples), "```", ""]
    return lines


def _program_doc(program: str, app: typer.Typer) -> list[str]:
    group: Any = typer.main.get_command(app)
    ctx = group.context_class(group)
    lines = [f"## `{program}`", ""]
    if group.help:
        lines += [" ".join(group.help.split()), ""]
    lines += _global_options(program, app)
    for name in group.list_commands(ctx):
        lines += _command_doc(program, name, group.get_command(ctx, name))
    return lines


def _global_options(program: str, app: typer.Typer) -> list[str]:
    group: Any = typer.main.get_command(app)
    params = [p for p in group.params if p.name != "help"]
    lines = [f"Options of `{program}` itself:", "", "| option | meaning |", "|---|---|"]
    return [*lines, *(_param_row(p) for p in params), ""]


def render() -> str:
    from engine.cli import app as loop_app
    from engine.cli.harness_cmd import app as harness_app

    lines = [INTRO]
    lines += _program_doc("ll-loop", loop_app)
    lines += _program_doc("ll-harness", harness_app)
    return "\n".join(lines).rstrip() + "\n"


def test_cli_reference_is_current() -> None:
    assert DOC.is_file(), "docs/cli.md is missing: run `python -m tests.test_cli_docs`"
    assert DOC.read_text() == render(), "docs/cli.md is stale: run `python -m tests.test_cli_docs`"


def test_every_command_has_an_example_in_its_help() -> None:
    for program, module in (("ll-loop", "engine.cli"), ("ll-harness", "engine.cli.harness_cmd")):
        app = importlib.import_module(module).app
        group: Any = typer.main.get_command(app)
        ctx = group.context_class(group)
        for name in group.list_commands(ctx):
            epilog = group.get_command(ctx, name).epilog or ""
            assert epilog.startswith("Example"), (program, name)
            assert f"{program} {name}" in epilog, (program, name)


def test_every_command_is_documented_with_a_sentence() -> None:
    text = render()
    for program, module in (("ll-loop", "engine.cli"), ("ll-harness", "engine.cli.harness_cmd")):
        app = importlib.import_module(module).app
        group: Any = typer.main.get_command(app)
        for name in group.list_commands(group.context_class(group)):
            assert f"### `{program} {name}`" in text
            assert group.get_command(group.context_class(group), name).help, (program, name)


if __name__ == "__main__":
    DOC.write_text(render())
    print(f"wrote {DOC}")
