"""`ll-loop judges`: the builtin judges (ours and plugins'), each with its arguments."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from engine.cli.common import examples

OTHER_KINDS = (
    "Other judge kinds (docs/judges.md): check (an inline Python snippet), prompt / prompt_file / "
    "llm_rubric (an LLM judge), module + function (your own Python); Polpo expectations "
    "(test, script, file_exists, llm_review) and metrics."
)


def register(app: typer.Typer) -> None:
    """Add `judges` to `app`."""

    @app.command("judges", epilog=examples("ll-loop judges", "ll-loop judges --json"))
    def judges_command(
        json_output: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
    ) -> None:
        """List the builtin judges and their arguments (plugins included)."""
        from engine.judges import all_builtins

        found = all_builtins()
        if json_output:
            print(json.dumps([_as_json(b) for b in found], indent=2))
            return
        for item in found:
            where = "" if item.origin == "ll-loop" else f"  [from {item.origin}]"
            print(f"{item.qualified}{where}\n    {item.description}")
            for argument in item.arguments:
                text = f"      {argument.describe()}"
                if argument.description:
                    text += f": {argument.description}"
                print(text)
            if item.open_arguments:
                print("      (takes any other arguments too)")
        print(f"\n{OTHER_KINDS}")


def _as_json(item: Any) -> dict[str, Any]:
    return {
        "name": item.name,
        "category": item.category,
        "origin": item.origin,
        "description": item.description,
        "arguments": [
            {
                "name": a.name,
                "type": a.type,
                "required": a.required,
                "default": a.default,
                "description": a.description,
            }
            for a in item.arguments
        ],
        "open_arguments": item.open_arguments,
    }
