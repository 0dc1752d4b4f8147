"""Shell actions for real: bash, process groups, timeouts, signals, big outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from engine.runtime.actions import ActionRunner
from tests.runs_helpers import running, wait_until


def runner(tmp_path: Path, **kwargs: object) -> ActionRunner:
    return ActionRunner(
        cwd=tmp_path,
        env=dict(os.environ, LL_RUN_ID="r1"),
        outputs_dir=tmp_path / "outputs",
        **kwargs,  # type: ignore[arg-type]
    )


def test_output_exit_code_cwd_and_environment(tmp_path: Path) -> None:
    result = runner(tmp_path).run_shell(
        'echo "out $LL_RUN_ID $LL_STATE $(pwd)"; echo err >&2; exit 3', state="s1", timeout=5
    )
    assert result.output == f"out r1 s1 {tmp_path}\n"
    assert result.stderr == "err\n"
    assert (result.exit_code, result.crashed) == (3, False)


def test_each_action_sees_the_environment_as_it_is_then(tmp_path: Path) -> None:
    """The environment is encoded once per state and reused: a change to the runner's
    variables, another state, or an action's own variables must still be what bash sees."""
    actions = runner(tmp_path)
    show = 'echo "$LL_STATE ${X-unset} ${Y-unset}"'
    assert actions.run_shell(show, state="a", timeout=5).output == "a unset unset\n"
    actions.env["X"] = "1"
    assert actions.run_shell(show, state="a", timeout=5).output == "a 1 unset\n"
    assert actions.run_shell(show, state="b", timeout=5).output == "b 1 unset\n"
    extra = {"Y": "é ü", "X": "2"}
    assert actions.run_shell(show, state="a", timeout=5, env=extra).output == "a 2 é ü\n"
    del actions.env["X"]
    assert actions.run_shell(show, state="a", timeout=5).output == "a unset unset\n"
    assert actions.run_shell(show, state="b", timeout=5).output == "b unset unset\n"


def test_script_runs_in_bash(tmp_path: Path) -> None:
    result = runner(tmp_path).run_shell(
        "a=(x y z); echo ${#a[@]} $BASH_VERSION", state="s", timeout=5
    )
    assert result.output.startswith("3 ")


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    start = time.monotonic()
    result = runner(tmp_path).run_shell(
        "echo before; sleep 300 & echo $! > pid; wait", state="s", timeout=0.4
    )
    assert result.timed_out and result.crashed and result.exit_code is None
    assert result.output == "before\n"
    assert time.monotonic() - start < 3
    pid = int((tmp_path / "pid").read_text())
    # SIGKILL is sent at once; a loaded machine may take a moment to schedule the death
    wait_until(lambda: not running(pid), timeout=5)


def test_sigterm_ignoring_action_gets_sigkill_after_the_grace(tmp_path: Path) -> None:
    start = time.monotonic()
    result = runner(tmp_path, grace=0.3).run_shell(
        "trap '' TERM; sleep 300", state="s", timeout=0.2
    )
    assert result.timed_out
    assert time.monotonic() - start < 2


def test_killed_by_signal_and_unspawnable(tmp_path: Path) -> None:
    killed = runner(tmp_path).run_shell("kill -KILL $$", state="s", timeout=5)
    assert (killed.signal, killed.exit_code, killed.crashed) == (9, None, True)
    missing = ActionRunner(cwd=tmp_path / "does-not-exist", env={}).run_shell(
        "true", state="s", timeout=5
    )
    assert missing.spawn_error and missing.crashed


def test_large_output_spills_to_a_file(tmp_path: Path) -> None:
    result = runner(tmp_path, memory_limit=1000).run_shell(
        "head -c 50000 /dev/zero | tr '\\0' a", state="big", timeout=5
    )
    assert len(result.output) == 1000
    assert result.output_path is not None
    assert Path(result.output_path).read_text() == "a" * 50000


def test_background_child_holding_the_pipe_does_not_block(tmp_path: Path) -> None:
    start = time.monotonic()
    result = runner(tmp_path).run_shell("sleep 5 & echo done", state="s", timeout=10)
    assert result.output == "done\n" and result.exit_code == 0
    assert time.monotonic() - start < 2


def test_terminate_stops_the_running_action(tmp_path: Path) -> None:
    actions = runner(tmp_path)
    threading.Timer(0.3, actions.terminate).start()
    start = time.monotonic()
    result = actions.run_shell("sleep 300", state="s", timeout=None)
    assert time.monotonic() - start < 3
    assert result.signal == 15


def test_terminate_kills_a_silent_action_that_ignores_sigterm_after_the_grace(
    tmp_path: Path,
) -> None:
    """No timeout, no output: only terminate() itself can wake the wait for the SIGKILL."""
    actions = runner(tmp_path, grace=0.3)
    threading.Timer(0.3, actions.terminate).start()
    start = time.monotonic()
    result = actions.run_shell("trap '' TERM; sleep 300", state="s", timeout=None)
    assert time.monotonic() - start < 3
    assert result.signal == 9
    after = actions.run_shell("echo next", state="s", timeout=5)  # the wake-up was used up
    assert (after.output, after.signal) == ("next\n", None)


def test_a_nul_byte_in_the_script_is_a_spawn_error_and_leaks_no_fd(tmp_path: Path) -> None:
    runner = ActionRunner(cwd=tmp_path, env={"PATH": os.environ["PATH"]})
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        result = runner.run_shell("echo a\0b", state="s", timeout=5)
        assert result.exit_code is None and result.spawn_error
    runner.close()
    assert len(os.listdir("/proc/self/fd")) == before


# Actions whose directory is the process's own are started with posix_spawn, every other with
# Popen (engine/runtime/actions.py). The tests above run in tmp_path, away from pytest's
# directory, so they take Popen; these run the same checks where posix_spawn is taken: in a
# fresh Python (no inherited descriptors) whose working directory is the action's.
PROBE = r"""
import json, os, sys
from pathlib import Path
from engine.runtime.actions import ActionRunner

if sys.argv[1] == "leak":
    os.set_inheritable(os.open(os.devnull, os.O_RDONLY), True)
if sys.argv[1] == "tty":  # a session of our own with a controlling terminal, as in a shell
    import pty

    os.setsid()
    _, follower = pty.openpty()
    os.open(os.ttyname(follower), os.O_RDWR)  # a session leader's first tty becomes its own
    os.open("/dev/tty", os.O_RDONLY)  # raises unless it did
actions = ActionRunner(cwd=Path("."), env=dict(os.environ, LL_RUN_ID="r1"), grace=0.3)
probes = {
    "basic": 'echo "out $LL_RUN_ID $LL_STATE $(pwd)"; echo err >&2; exit 3',
    "group": "read -r -a f < /proc/$$/stat; echo $(( f[4] == $$ ))",
    "sigpipe": "yes | head -n1 > /dev/null; echo ${PIPESTATUS[0]}",
    "stdin": "readlink /proc/$$/fd/0",
    "fds": "ls /proc/$$/fd; :",  # bash's own descriptors (`; :`: bash forks ls, not execs it)
    "term_ignored": "trap '' TERM; sleep 300",
    "nul": "echo a\0b",
    "terminal": "{ : < /dev/tty; } 2> /dev/null && echo attached || echo detached",
}
results = {}
for name, script in probes.items():
    timeout = 0.2 if name == "term_ignored" else 10
    r = actions.run_shell(script, state=name, timeout=timeout)
    results[name] = [r.output, r.stderr, r.exit_code, r.timed_out, bool(r.spawn_error)]
print(json.dumps({"posix_spawn": actions._fast, "results": results}))
"""


def _probe(tmp_path: Path, mode: str) -> dict[str, object]:
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(root)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_actions_started_with_posix_spawn_behave_as_with_popen(tmp_path: Path) -> None:
    probe = _probe(tmp_path, "clean")
    assert probe["posix_spawn"] is True  # the path under test was taken
    results = probe["results"]
    assert isinstance(results, dict)
    assert results["basic"] == [f"out r1 basic {tmp_path}\n", "err\n", 3, False, False]
    assert results["group"][0] == "1\n"  # its own process group, led by bash
    assert results["sigpipe"][0] == "141\n"  # SIGPIPE back at its default, as Popen does
    assert results["stdin"][0] == "/dev/null\n"
    assert results["fds"][0].split() == ["0", "1", "2"]  # nothing of ours leaks into it
    assert results["term_ignored"][3] is True  # timed out; SIGKILL after the grace reaped it
    assert results["nul"][4] is True  # a spawn error, not a crash
    assert results["terminal"][0] == "detached\n"


def test_with_a_terminal_posix_spawn_detaches_the_action_into_its_own_session(
    tmp_path: Path,
) -> None:
    """From a terminal, an action gets a session of its own (no controlling terminal, so a
    program reading /dev/tty fails rather than stopping the run), still led by bash."""
    probe = _probe(tmp_path, "tty")
    assert probe["posix_spawn"] is True
    results = probe["results"]
    assert isinstance(results, dict)
    assert results["terminal"][0] == "detached\n"
    assert results["group"][0] == "1\n"
    assert results["basic"][2] == 3
    assert results["term_ignored"][3] is True


def test_an_inherited_descriptor_never_reaches_an_action(tmp_path: Path) -> None:
    """posix_spawn cannot close descriptors: with an inheritable one open, Popen is used."""
    probe = _probe(tmp_path, "leak")
    assert probe["posix_spawn"] is False
    results = probe["results"]
    assert isinstance(results, dict)
    assert results["fds"][0].split() == ["0", "1", "2"]
    assert results["basic"][2] == 3


INHERITED_LOOP = """\
name: inherited
initial: look
scope: ["."]
states:
  look:
    action: |
      grep '^flags' /proc/$PPID/fdinfo/{fd} > seen.txt
      ls /proc/self/fd | tr '\\n' ' ' >> seen.txt
    next: done
  done:
    terminal: true
"""


def test_the_cli_marks_an_inherited_descriptor_close_on_exec(tmp_path: Path) -> None:
    """`ll-loop` makes what it inherited close-on-exec (so its actions can take posix_spawn);
    the action still sees only 0-2, as with Popen."""
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    (tmp_path / "inherited.yaml").write_text(INHERITED_LOOP.format(fd=write_end))
    try:
        done = subprocess.run(
            [str(Path(sys.executable).with_name("ll-loop")), "run", "inherited.yaml", "--json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            pass_fds=(write_end,),
            timeout=60,
        )
    finally:
        os.close(read_end)
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    flags_line, fds_line = (tmp_path / "seen.txt").read_text().splitlines()
    assert int(flags_line.split()[1], 8) & os.O_CLOEXEC  # fdinfo prints the flags in octal
    assert fds_line.split()[:3] == ["0", "1", "2"]
    assert str(write_end) not in fds_line.split()[3:-1]  # the last is ls's own directory
