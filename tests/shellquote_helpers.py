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


def run_bash(script: str, timeout: float = 20) -> Ran:
    """Run `bash -c script` in a fresh empty directory and report what it left behind (a run
    that outlives `timeout` is killed and reported with return code -1)."""
    with tempfile.TemporaryDirectory(prefix="ll-quote-") as cwd:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": cwd, "LC_ALL": "C.UTF-8"}
        try:
            done = subprocess.run(
                ["bash", "-c", script],
                cwd=cwd,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
                env=env,
            )
            stdout, stderr, code = done.stdout, done.stderr, done.returncode
        except subprocess.TimeoutExpired as expired:
            stdout, stderr, code = expired.stdout or b"", expired.stderr or b"", -1
        created = sorted(os.listdir(cwd))
    return Ran(
        stdout.decode("utf-8", "surrogateescape"),
        stderr.decode("utf-8", "replace"),
        code,
        created,
    )


def run_rendered(template: str, value: str) -> Ran:
    """Render `template` with `context.v = value` and run it for real."""
    return run_bash(render_shell(template, {"context": {"v": value}}))
