"""Run the real `ll-loop` console script in a subprocess, against this checkout."""

from __future__ import annotations

from pathlib import Path

from tests import cli
from tests.cli import Ran

REPO = Path(__file__).resolve().parents[1]


def ll_loop(*args: str, cwd: Path, process: bool = False) -> Ran:
    """`ll-loop ARGS` in `cwd`; stdout, stderr and the exit code are in the result."""
    return cli.ll_loop(cwd, *args, process=process)
