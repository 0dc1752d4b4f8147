"""Helpers for the run-management tests: the real `ll-loop` CLI in a temp project directory."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.runtime.locks import process_alive
from tests import cli
from tests.cli import Ran

LL_LOOP = str(Path(sys.executable).with_name("ll-loop"))


def ll_loop(
    cwd: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    process: bool = False,
) -> Ran:
    """Run `ll-loop ARGS` in `cwd` and wait for it (in this process unless `process`)."""
    return cli.ll_loop(cwd, *args, env=env, timeout=timeout, process=process)


def spawn(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start `ll-loop ARGS` in `cwd` without waiting."""
    return subprocess.Popen(
        [LL_LOOP, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def result_of(done: Ran | subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The `--json` result object a run printed (fails loudly with stderr when there is none)."""
    try:
        data: dict[str, Any] = json.loads(done.stdout)
    except ValueError as exc:
        raise AssertionError(f"no JSON on stdout: {done.stdout!r}\nstderr: {done.stderr}") from exc
    return data


def run_dir(cwd: Path, run_id: str) -> Path:
    return cwd / ".loops" / "runs" / run_id


def state_of(cwd: Path, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir(cwd, run_id) / "state.json").read_text())
    return data


def events_of(cwd: Path, run_id: str) -> list[dict[str, Any]]:
    lines = (run_dir(cwd, run_id) / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def wait_until(predicate: Callable[[], bool], timeout: float = 15.0, every: float = 0.05) -> None:
    """Poll `predicate` until it holds; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every)
    raise AssertionError("condition not reached in time")


def end_action_group(pid_file: Path) -> None:
    """SIGKILL the process group whose leader wrote `pid_file` (`echo $$ > FILE` in an action):
    a test that SIGKILLs `ll-loop` leaves its action running, and no waiter may outlive it."""
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)


def written(pid_file: Path) -> bool:
    """The action has written its whole pid line (`echo $$ > FILE` creates the file a moment
    before it holds the pid)."""
    try:
        return pid_file.read_text().endswith("\n")
    except FileNotFoundError:
        return False


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan is reaped by init, whenever init gets to it)."""
    return process_alive(pid, None)
