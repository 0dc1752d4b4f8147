"""The one way tests run the command line: `ll_loop(cwd, *args)` and `ll_harness(cwd, *args)`.

The commands run in this process by default: a command is a function (parse, call the API,
render), and calling it costs milliseconds where a fresh `ll-loop` process costs about two
seconds of interpreter start and imports. A test that is about the process itself — signals,
`os._exit`, a nested `ll-loop` inheriting its parent's environment — passes `process=True`
and gets the installed console script. `LL_TEST_PROCESS=1` runs every call as a process (to
check that both ways agree).

In-process calls change the working directory, `sys.argv` and the environment for the
duration of the call and restore them after; they are serialised by a lock.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Ran:
    """One finished command and the directory it ran in (also reads as a CompletedProcess)."""

    code: int
    stdout: str
    stderr: str
    cwd: Path

    @property
    def returncode(self) -> int:
        return self.code

    @property
    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.stdout)
        return data

    @property
    def run_dir(self) -> Path:
        """This command's run directory: the one its --json names, else the newest (run ids
        started within one second do not sort by time)."""
        runs = self.cwd / ".loops" / "runs"
        try:
            run_id = json.loads(self.stdout).get("run_id")
        except (ValueError, AttributeError):
            run_id = None
        if isinstance(run_id, str) and run_id:
            return runs / run_id
        return max(runs.iterdir(), key=lambda p: p.stat().st_mtime_ns)

    def events(self) -> list[dict[str, Any]]:
        lines = (self.run_dir / "events.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    def state(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.run_dir / "state.json").read_text())
        return data

    def verdicts(self) -> list[tuple[str, str]]:
        """(state, verdict) of every evaluated step, in order."""
        return [(e["state"], e["verdict"]) for e in self.events() if e["event"] == "evaluate"]


def ll_loop(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    process: bool = False,
) -> Ran:
    """`ll-loop ARGS` in `cwd`, with `env` added to the environment."""
    return run_cli("ll-loop", cwd, args, env=env, timeout=timeout, process=process)


def ll_harness(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    process: bool = False,
) -> Ran:
    """`ll-harness ARGS` in `cwd`, with `env` added to the environment."""
    return run_cli("ll-harness", cwd, args, env=env, timeout=timeout, process=process)


def run_cli(
    program: str,
    cwd: Path,
    args: tuple[str, ...] | list[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    process: bool = False,
    merged: bool = False,
) -> Ran:
    """Run a command; with `merged`, stderr goes into `stdout` in the order it was written (what
    a terminal shows), and `stderr` is empty."""
    if process or os.environ.get("LL_TEST_PROCESS") == "1":
        return _as_process(program, cwd, args, env, timeout, merged)
    return _in_process(program, cwd, args, env, merged)


def _as_process(
    program: str, cwd: Path, args: tuple[str, ...] | list[str], env: Mapping[str, str] | None,
    timeout: float, merged: bool,
) -> Ran:  # fmt: skip
    proc = subprocess.run(
        [str(BIN / program), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Ran(proc.returncode, proc.stdout, proc.stderr or "", Path(cwd))


def _in_process(
    program: str,
    cwd: Path,
    args: tuple[str, ...] | list[str],
    env: Mapping[str, str] | None,
    merged: bool = False,
) -> Ran:
    from engine.cli.common import run_guarded

    out = io.StringIO()
    err = out if merged else io.StringIO()
    with (
        _LOCK,
        _session(program, cwd, args, env),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = run_guarded(_app(program, args), program)
    return Ran(code, out.getvalue(), "" if merged else err.getvalue(), Path(cwd))


def _app(program: str, args: tuple[str, ...] | list[str]) -> Any:
    """The typer app `main()` would run for these arguments."""
    if program == "ll-harness":
        from engine.cli.harness_cmd import app

        return app
    from engine.cli import build_app, command_of

    return build_app(command_of(list(args)))


@contextlib.contextmanager
def _session(
    program: str, cwd: Path, args: tuple[str, ...] | list[str], env: Mapping[str, str] | None
) -> Iterator[None]:
    """The process state a command sees: working directory, argv, environment."""
    saved_cwd, saved_argv, saved_env = os.getcwd(), sys.argv[:], dict(os.environ)
    os.chdir(cwd)
    sys.argv = [program, *args]
    os.environ.update(env or {})
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
