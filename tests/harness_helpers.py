"""Helpers for the ll-harness tests: run the real CLI in a directory, make flaky commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import engine
from tests import cli

REPO = Path(engine.__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "harness"


def harness(cwd: Path, *args: str, timeout: float = 120, process: bool = False) -> cli.Ran:
    """Run `ll-harness ARGS` in `cwd` (in this process unless `process`: tests/cli.py)."""
    return cli.ll_harness(cwd, *args, timeout=timeout, process=process)


def harness_json(cwd: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = harness(cwd, *args, "--output", "json")
    return done.returncode, json.loads(done.stdout)


def counter_command(counter: Path, script: str) -> str:
    """A bash command that bumps a counter file, then runs `script` with $n = this call's number."""
    return f"n=$(( $(cat {counter} 2>/dev/null || echo 0) + 1 )); echo $n > {counter}; {script}"


def flaky_command(counter: Path, failing_call: int) -> str:
    """Exits 0 on every call except call number `failing_call` (exit 1)."""
    return counter_command(counter, f"[ $n -ne {failing_call} ]")


def calls(counter: Path) -> int:
    return int(counter.read_text()) if counter.exists() else 0
