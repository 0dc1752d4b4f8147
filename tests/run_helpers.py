"""Helpers for the runtime tests: run `ll-loop` in a directory and read its run (tests/cli.py)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from tests import cli
from tests.cli import Ran

__all__ = ["LL_LOOP", "Ran", "ll_loop", "run_yaml", "write_loop"]

LL_LOOP = Path(sys.executable).with_name("ll-loop")


def write_loop(cwd: Path, text: str, name: str = "loop.yaml") -> Path:
    path = cwd / name
    path.write_text(textwrap.dedent(text))
    return path


def ll_loop(cwd: Path, *args: str, timeout: float = 60, process: bool = False) -> Ran:
    """`ll-loop ARGS` in `cwd` (in this process unless `process`: see tests/cli.py)."""
    return cli.ll_loop(cwd, *args, timeout=timeout, process=process)


def run_yaml(cwd: Path, text: str, *args: str, timeout: float = 60) -> Ran:
    """Write `text` as loop.yaml in `cwd` and `ll-loop run loop.yaml --json ARGS`."""
    write_loop(cwd, text)
    return ll_loop(cwd, "run", "loop.yaml", "--json", *args, timeout=timeout)
