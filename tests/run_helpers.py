"""Helpers for the runtime tests: run the installed `ll-loop` in a directory and read its run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LL_LOOP = Path(sys.executable).with_name("ll-loop")


@dataclass(frozen=True)
class Ran:
    """One finished `ll-loop` process and the directory it ran in."""

    code: int
    stdout: str
    stderr: str
    cwd: Path

    @property
    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.stdout)
        return data

    @property
    def run_dir(self) -> Path:
        runs = sorted((self.cwd / ".loops" / "runs").iterdir())
        return runs[-1]

    def events(self) -> list[dict[str, Any]]:
        lines = (self.run_dir / "events.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    def state(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.run_dir / "state.json").read_text())
        return data

    def verdicts(self) -> list[tuple[str, str]]:
        """(state, verdict) of every evaluated step, in order."""
        return [(e["state"], e["verdict"]) for e in self.events() if e["event"] == "evaluate"]


def write_loop(cwd: Path, text: str, name: str = "loop.yaml") -> Path:
    path = cwd / name
    path.write_text(textwrap.dedent(text))
    return path


def ll_loop(cwd: Path, *args: str, timeout: float = 60) -> Ran:
    proc = subprocess.run(
        [str(LL_LOOP), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Ran(proc.returncode, proc.stdout, proc.stderr, cwd)


def run_yaml(cwd: Path, text: str, *args: str, timeout: float = 60) -> Ran:
    """Write `text` as loop.yaml in `cwd` and `ll-loop run loop.yaml --json ARGS`."""
    write_loop(cwd, text)
    return ll_loop(cwd, "run", "loop.yaml", "--json", *args, timeout=timeout)
