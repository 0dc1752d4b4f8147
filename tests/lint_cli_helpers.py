"""Run the real `ll-loop` console script in a subprocess, against this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def ll_loop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`ll-loop ARGS` in `cwd`; stdout, stderr and the exit code are in the result."""
    script = Path(sys.executable).with_name("ll-loop")
    command = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from engine.cli import main; main()"]
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
