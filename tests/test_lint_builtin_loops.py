"""Every built-in loop is valid and lint-clean: `ll-loop validate --strict` over all of them
exits 0 (built-in loops are each valid and lint-clean)."""

from __future__ import annotations

from pathlib import Path

from engine.load.resources import builtin_loops_dir
from tests.lint_cli_helpers import ll_loop


def test_builtin_loops_validate_strict(tmp_path: Path) -> None:
    loops = sorted(str(p) for p in builtin_loops_dir().glob("*.yaml"))
    assert loops, "no built-in loops found"
    result = ll_loop("validate", "--strict", *loops, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
