"""Ctrl-C and SIGTERM in the middle of an `ll-harness cmd` batch: the running sample's process
group ends with the harness, the finished samples stay recorded, and the exit code is 3
(stopped), as for `ll-loop run` and suites."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli import BIN
from tests.harness_helpers import counter_command


def _alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting for its reaper is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _default_sigint() -> None:
    """Ctrl-C and a closed terminal (SIGHUP) at their defaults, as in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _start_until_sleeping(
    cwd: Path, argv: list[str], sleeper: Path
) -> tuple[subprocess.Popen[str], int]:
    """`ll-harness ARGV` (Ctrl-C at its default), once its subject has written the pid of the
    sleep it waits on to `sleeper`: the process and that pid."""
    process = subprocess.Popen(
        [str(BIN / "ll-harness"), *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 60
    while not sleeper.exists() or not sleeper.read_text().strip():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    return process, int(sleeper.read_text())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stopped_batch_ends_its_sample_keeps_what_finished_and_exits_3(
    tmp_path: Path, signum: int
) -> None:
    (tmp_path / ".loops").mkdir()
    sleeper = tmp_path / "sleeper"
    # The first sample passes at once; the second starts a sleep and waits for it.
    script = f"if [ $n -ge 2 ]; then sleep 60 & echo $! > {sleeper}; wait; fi"
    command = counter_command(tmp_path / "calls", script)
    argv = ["cmd", command, "--exit-code", "0", "--samples", "5", "--output", "json"]
    process, pid = _start_until_sleeping(tmp_path, argv, sleeper)
    try:
        process.send_signal(signum)
        out, err = process.communicate(timeout=30)
        assert process.returncode == 3, err
        how = (
            "interrupted"
            if signum == signal.SIGINT
            else f"stopped by {signal.Signals(signum).name}"
        )
        assert f"{how} after 1 of 5 samples" in err
        assert "Traceback" not in err and "internal error" not in err
        data = json.loads(out)
        assert (data["result"], data["exit_code"], data["refused"]) == ("INCONCLUSIVE", 3, False)
        deadline = time.monotonic() + 5
        while _alive(pid):  # the sample's process group went with the harness
            assert time.monotonic() < deadline, "the interrupted sample's sleep outlived it"
            time.sleep(0.05)
    finally:
        with contextlib.suppress(OSError):  # a failing test leaves nothing running
            os.killpg(os.getpgid(pid), signal.SIGKILL)
    db = sqlite3.connect(tmp_path / ".loops" / "history.db")
    rows = db.execute("SELECT outcome, sample_index, samples_requested FROM harness_attempts")
    assert rows.fetchall() == [("pass", 0, 5)]  # the finished sample; never the interrupted one


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_prompt_ends_its_agent_cli(tmp_path: Path, signum: int) -> None:
    """`prompt --runner cmd:AGENT`: the agent CLI runs in a session of its own, so it never sees
    the terminal's Ctrl-C; the harness ends it on the way out."""
    (tmp_path / ".loops").mkdir()
    sleeper = tmp_path / "sleeper"
    agent = f"cat > /dev/null; sleep 60 & echo $! > {sleeper}; wait"
    argv = ["prompt", "hi", "--runner", f"cmd:{agent}", "--exit-code", "0"]
    process, pid = _start_until_sleeping(tmp_path, argv, sleeper)
    try:
        process.send_signal(signum)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 3, err
        assert "after 0 of 3 samples: nothing was recorded" in err
        deadline = time.monotonic() + 5
        while _alive(pid):
            assert time.monotonic() < deadline, "the agent CLI outlived ll-harness"
            time.sleep(0.05)
    finally:
        with contextlib.suppress(OSError):  # a failing test leaves nothing running
            os.killpg(os.getpgid(pid), signal.SIGKILL)


def test_a_stopped_dsl_batch_keeps_the_tasks_that_finished(tmp_path: Path) -> None:
    """Each graded task is one history row, written as the task ends: Ctrl-C after the first
    of two tasks keeps it (the batch used to record only once every task had ended), and the
    message does not point at a `--resume` that a dsl batch does not have."""
    (tmp_path / ".loops").mkdir()
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "a.yaml").write_text("prompt: quick\nblanks: [a]\nexpected: {a: 1}\n")
    (tasks / "b.yaml").write_text("prompt: slow\nblanks: [a]\nexpected: {a: 1}\n")
    sleeper = tmp_path / "sleeper"
    agent = tmp_path / "agent.sh"
    agent.write_text(
        f'p=$(cat); case "$p" in slow*) sleep 60 & echo $! > {sleeper}; wait;; esac\n'
        "printf '```json\\n{\"a\": 1}\\n```\\n'\n"
    )
    argv = ["dsl", "tasks", "--runner", f"cmd:bash {agent}"]
    process, pid = _start_until_sleeping(tmp_path, argv, sleeper)
    try:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(OSError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
    assert process.returncode == 3, err
    assert "interrupted after 1 of 2 tasks: the finished ones are recorded" in err
    assert "--resume" not in err
    db = sqlite3.connect(tmp_path / ".loops" / "history.db")
    rows = db.execute("SELECT runner, target, outcome FROM harness_attempts").fetchall()
    assert rows == [("dsl", "tasks/a.yaml", "pass")]


def test_a_stopped_loop_sample_leaves_no_action_of_the_nested_run(tmp_path: Path) -> None:
    """The nested `ll-loop run` ends its action on SIGTERM (SIGKILL after its own grace, the
    action ignoring SIGTERM here) before it exits; the harness must wait longer than that grace
    before its own SIGKILL, which would not reach the action's separate process group."""
    (tmp_path / ".loops").mkdir()
    sleeper = tmp_path / "sleeper"
    (tmp_path / "stubborn.yaml").write_text(
        "name: stubborn\ninitial: work\nscope: [x]\nstates:\n"
        "  work:\n"
        f"    action: \"trap '' TERM; sleep 60 & echo $! > {sleeper}; wait; wait\"\n"
        "    next: done\n"
        "  done:\n    terminal: true\n"
    )
    argv = ["loop", "./stubborn.yaml", "--exit-code", "0", "--samples", "1"]
    process, pid = _start_until_sleeping(tmp_path, argv, sleeper)
    try:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 3, err
        deadline = time.monotonic() + 5
        while _alive(pid):
            assert time.monotonic() < deadline, "the nested run's action outlived ll-harness"
            time.sleep(0.05)
    finally:
        with contextlib.suppress(OSError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
