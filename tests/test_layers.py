"""Imports go one way: the layer table in docs/architecture.md is the rule, checked here.

Every `import` in `engine/` and `lint/` — at the top of a file, inside a function, or under
`TYPE_CHECKING` — may name a module of a lower rank or of its own package; an arrow that points
up, or sideways between two packages of one rank, fails with its `file:line`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "architecture.md"
_ROW = re.compile(r"^\|\s*(\d+)\s*\|(.+?)\|")


def ranks() -> dict[str, int]:
    """Package → rank, read from the table under "## Layers" in docs/architecture.md."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    table: dict[str, int] = {}
    for line in section.splitlines():
        match = _ROW.match(line)
        if match:
            for name in re.findall(r"`([\w.]+)`", match.group(2)):
                table[name] = int(match.group(1))
    return table


RANKS = ranks()


def package_of(module: str) -> str | None:
    """The layer package of a dotted module name (None: not ours). A subpackage of `engine` is a
    layer; the modules directly in `engine/` are the public API, `engine.api`."""
    parts = module.split(".")
    if parts[0] == "lint":
        return "lint"
    if parts[0] != "engine":
        return None
    if len(parts) == 1 or not (REPO / "engine" / parts[1]).is_dir():
        # `engine` itself, a module directly in engine/ (api.py, _results.py), or a name
        # `engine/__init__.py` defines (`engine.__version__`): the public API
        return "engine.api"
    return f"engine.{parts[1]}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every import in `tree`, relative ones resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            yield node.lineno, name
            for alias in node.names:  # `from engine import api` imports engine.api
                yield node.lineno, f"{name}.{alias.name}"


def arrow(source: str, name: str) -> str | None:
    """What is wrong with package `source` importing module `name` (None: nothing)."""
    target = package_of(name)
    if target is None or target == source or _is_attribute(name, target):
        return None
    if target not in RANKS:
        return f"imports {name}, whose package {target} is not in the layer table"
    if RANKS[target] < RANKS[source]:
        return None
    way = "up" if RANKS[target] > RANKS[source] else "sideways"
    return (
        f"{source} (rank {RANKS[source]}) imports {name} ({target}, rank {RANKS[target]}): "
        f"an arrow {way}"
    )


def _is_attribute(name: str, target: str) -> bool:
    """`from engine.x import y` also yields `engine.x.y`; when `y` is a name in the package
    (not a module) it is not a new arrow: the package was already checked."""
    if name.count(".") <= target.count(".") + 1:
        return False
    path = REPO / Path(*name.split("."))
    return not (path.with_suffix(".py").exists() or path.is_dir())


def back_arrows() -> list[str]:
    found: list[str] = []
    for root in ("engine", "lint"):
        for path in sorted((REPO / root).rglob("*.py")):
            module = module_name(path)
            source = package_of(module)
            assert source is not None
            where = path.relative_to(REPO)
            if source not in RANKS:
                found.append(f"{where}: package {source} is not in the layer table")
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for line, name in imported(tree, module, path.name == "__init__.py"):
                problem = arrow(source, name)
                if problem:
                    found.append(f"{where}:{line}: {problem}")
    return found


def test_the_layer_table_is_read_from_the_docs() -> None:
    assert RANKS["engine.model"] == 0
    assert RANKS["lint"] == RANKS["engine.runtime"]
    assert RANKS["engine.cli"] == max(RANKS.values())


def test_imports_only_go_down() -> None:
    arrows = back_arrows()
    assert not arrows, "imports against the layers (docs/architecture.md):\n" + "\n".join(arrows)


@pytest.mark.parametrize(
    ("source", "code", "expected"),
    [
        ("engine/runtime/x.py", "from lint import lint_loop", "an arrow sideways"),
        ("engine/model/x.py", "def f():\n    from engine.runtime import actions", "an arrow up"),
        ("engine/load/x.py", "from . import loader", None),
        ("engine/graph/x.py", "from ..shell import quoting", "an arrow sideways"),
        ("engine/cli/x.py", "if TYPE_CHECKING:\n    from engine.api import run", None),
        ("lint/x.py", "import engine.runtime.subloop", "an arrow sideways"),
        ("engine/runtime/x.py", "from engine import api", "an arrow up"),
    ],
)
def test_the_walk_sees_every_kind_of_import(source: str, code: str, expected: str | None) -> None:
    """The checker itself: function-level, conditional and relative imports are all judged."""
    module = module_name(REPO / source)
    origin = package_of(module)
    assert origin is not None
    problems = [arrow(origin, name) for _line, name in imported(ast.parse(code), module, False)]
    found = [p for p in problems if p]
    if expected is None:
        assert found == []
    else:
        assert found and expected in found[0]
