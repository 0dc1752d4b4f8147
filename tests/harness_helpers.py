"""Helpers for the ll-harness tests: run the real CLI in a directory, make flaky commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import engine

REPO = Path(engine.__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "harness"


def harness(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `ll-harness ARGS` as a real process in `cwd` (the current code, not an install)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", "from engine.cli.harness_cmd import main; main()", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


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
