"""The `# yaml-language-server: $schema=...` modeline: editors with the YAML language server
(VS Code's YAML extension, Neovim, Helix, JetBrains) read it and complete and check loop files
against `schemas/loop.schema.json` as you type (docs/format.md, "Editor set-up").

Built-in loops point at the schema shipped next to them (`../schemas/loop.schema.json`, true in
the source tree and inside the wheel). Loops in a project's `.loops/` point at
`.loops/loop.schema.json`, which `ll-loop install` and the scaffolders write there.
"""

from __future__ import annotations

PREFIX = "# yaml-language-server: $schema="
BUILTIN_SCHEMA = "../schemas/loop.schema.json"  # from loops/ (engine/_data/loops/ in a wheel)
PROJECT_SCHEMA = "loop.schema.json"  # next to the loop, in .loops/


def modeline(schema: str) -> str:
    return f"{PREFIX}{schema}\n"


def schema_of(text: str) -> str | None:
    """The schema a loop's modeline names (it must be the first line), or None."""
    first = text.split("\n", 1)[0]
    return first[len(PREFIX) :].strip() if first.startswith(PREFIX) else None


def with_modeline(text: str, schema: str) -> str:
    """`text` whose first line is the modeline for `schema` (an existing one is replaced)."""
    if schema_of(text) is not None:
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return modeline(schema) + text
