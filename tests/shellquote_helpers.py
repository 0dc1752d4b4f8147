"""Run rendered shell actions in real bash, in an empty directory that doubles as a canary trap."""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass

from engine.shell.interpolate import render_shell

CANARY_VALUES = [
    "$(touch CANARY)",
    "`touch CANARY`",
    "; touch CANARY",
    "'; touch CANARY; '",
    '"; touch CANARY; "',
    "$(touch CANARY)'\"`touch CANARY2`",
    "\\'$(touch CANARY)",
    '\\"; touch CANARY #',
    "\nEOF\ntouch CANARY\n",
    "${IFS}$(touch${IFS}CANARY)",
    "*",
    "a b  c\t d",
    "",
    "-n",
    "$HOME ~ !! $$ $0",
    "ünïcødé ✓ 日本",
    "line1\nline2\n",
    "\\",
    "'",
    '"',
    "`",
    "$",
    "$'\\x41'",
    "\r\n",
]


@dataclass(frozen=True)
class Ran:
    """What a real `bash -c` did: its stdout, exit code, and any files it created."""

    stdout: str
    stderr: str
    returncode: int
    created: list[str]


def run_bash(script: str) -> Ran:
    """Run `bash -c script` in a fresh empty directory and report what it left behind."""
    with tempfile.TemporaryDirectory(prefix="ll-quote-") as cwd:
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=cwd,
            capture_output=True,
            timeout=20,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": cwd, "LC_ALL": "C.UTF-8"},
        )
        created = sorted(os.listdir(cwd))
    return Ran(
        done.stdout.decode("utf-8", "surrogateescape"),
        done.stderr.decode("utf-8", "replace"),
        done.returncode,
        created,
    )


def run_rendered(template: str, value: str) -> Ran:
    """Render `template` with `context.v = value` and run it for real."""
    return run_bash(render_shell(template, {"context": {"v": value}}))
