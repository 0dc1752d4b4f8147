"""Every loop shipped with ll-loop passes the loader (the schema is the gate for ours too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.load.loader import check_loop_file
from engine.load.resources import builtin_loops_dir

BUILTINS = sorted(builtin_loops_dir().glob("*.yaml"))


def test_there_are_builtin_loops() -> None:
    assert BUILTINS


@pytest.mark.parametrize("path", BUILTINS, ids=lambda p: p.stem)
def test_builtin_loop_loads(path: Path) -> None:
    loop, positions, problems = check_loop_file(path)
    assert problems == [], [d.render() for d in problems]
    assert loop is not None and positions is not None
    assert loop.source == str(path)
    assert loop.initial in loop.states
