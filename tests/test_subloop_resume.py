"""A run that dies (or is stopped) inside a sub-loop continues the child where it was.

The child keeps its own state.json in `children/<state>-<n>/`; resume finds the unfinished child
of the interrupted sub-loop state and continues it from its last boundary, so the child's
finished steps do not run again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runs_helpers import (
    end_action_group,
    events_of,
    ll_loop,
    result_of,
    run_dir,
    spawn,
    state_of,
    wait_until,
    write,
    written,
)

CHILD = """
name: three-steps
initial: one
scope: ["."]
states:
  one:
    action: "echo one >> ran.log"
    next: two
  two:
    action: |
      echo two >> ran.log
      echo $$ > action.pid
      while [ ! -f go ]; do sleep 0.05; done
    next: three
  three:
    action: "echo three >> ran.log"
    next: done
  done: {terminal: true}
"""

PARENT = """
name: parent
initial: call
scope: ["."]
states:
  call:
    loop: three-steps
    capture: sub
    on_yes: ok
    on_no: bad
    on_error: bad
  ok: {terminal: true}
  bad: {terminal: true, failure: true}
"""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    write(tmp_path / ".loops" / "three-steps.yaml", CHILD)
    write(tmp_path / "parent.yaml", PARENT)
    yield tmp_path
    end_action_group(tmp_path / "action.pid")


def held_in_child(project: Path) -> tuple[subprocess.Popen[str], str]:
    """Start the parent and wait until its child waits in step `two`; (process, run id)."""
    proc = spawn(project, "run", "parent.yaml", "--json", "-q")
    wait_until(lambda: written(project / "action.pid"))
    return proc, next((project / ".loops" / "runs").iterdir()).name


def finish(project: Path, run_id: str) -> dict[str, object]:
    """Resume in the background, let the child's waiting step go, and return the result."""
    (project / "action.pid").unlink()
    resumed = spawn(project, "resume", run_id, "--json", "-q")
    try:
        wait_until(lambda: written(project / "action.pid"))
        (project / "go").touch()
        out, err = resumed.communicate(timeout=30)
    finally:
        if resumed.poll() is None:
            resumed.kill()
    assert resumed.returncode == 0, err
    result: dict[str, object] = json.loads(out)
    return result


@pytest.mark.parametrize("interrupt", ["kill", "stop"])
def test_an_interrupted_child_continues_from_its_last_boundary(
    project: Path, interrupt: str
) -> None:
    proc, run_id = held_in_child(project)
    if interrupt == "kill":
        proc.send_signal(signal.SIGKILL)
    else:
        stopped = ll_loop(project, "stop", run_id)
        assert stopped.returncode == 0, stopped.stderr
    proc.communicate(timeout=15)
    result = finish(project, run_id)
    assert result["final_state"] == "ok"
    # `one` ran once: the child went on from its boundary after `one`, not from the start.
    assert (project / "ran.log").read_text().split() == ["one", "two", "two", "three"]
    children = sorted(p.name for p in (run_dir(project, run_id) / "children").iterdir())
    assert children == ["call-1"]  # the same child run, not a fresh one
    sub = state_of(project, run_id)["captured"]["sub"]
    assert sub["terminal"] == "done" and sub["steps"] == 3
    events = [
        e for e in _events(project, run_id) if e["event"] == "loop_resume" and e["depth"] == 1
    ]
    assert [(e["state"], e["step"]) for e in events] == [("two", 1)]


def test_a_finished_child_is_not_continued(project: Path) -> None:
    """A parent that routes back into the same sub-loop state starts a new child each time."""
    (project / "go").touch()
    again = PARENT.replace("on_yes: ok", "on_yes: second").replace(
        "  ok: {terminal: true}",
        "  second:\n    loop: three-steps\n    on_yes: ok\n    on_no: bad\n    on_error: bad\n"
        "  ok: {terminal: true}",
    )
    write(project / "parent.yaml", again)
    result = result_of(ll_loop(project, "run", "parent.yaml", "--json", "-q"))
    assert result["final_state"] == "ok"
    assert (project / "ran.log").read_text().split() == ["one", "two", "three"] * 2


def _events(project: Path, run_id: str) -> list[dict[str, object]]:
    lines = (run_dir(project, run_id) / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_child_runs_directory_resumes_its_top_level_run(project: Path) -> None:
    """`resume RUN` takes a run's directory, a child's too: that names the run to continue
    (resuming it used to end the run's action, then fail with an internal error)."""
    proc, run_id = held_in_child(project)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=15)
    (project / "action.pid").unlink()
    child = run_dir(project, run_id) / "children" / "call-1"
    resumed = spawn(project, "resume", str(child), "--json", "-q")
    try:
        wait_until(lambda: written(project / "action.pid"))
        (project / "go").touch()
        out, err = resumed.communicate(timeout=30)
    finally:
        if resumed.poll() is None:
            resumed.kill()
    assert resumed.returncode == 0, err
    assert json.loads(out)["final_state"] == "ok"
    assert (project / "ran.log").read_text().split() == ["one", "two", "two", "three"]


def test_a_kill_two_sub_loops_deep_continues_both(project: Path) -> None:
    """The middle run had not finished its first step (its sub-loop) when the run died: it is
    continued too, and with it the grandchild (the middle one used to start afresh, running the
    grandchild's finished steps again)."""
    write(project / ".loops" / "parent.yaml", PARENT)
    write(project / "top.yaml", PARENT.replace("name: parent", "name: top").replace(
        "loop: three-steps", "loop: parent"))  # fmt: skip
    proc = spawn(project, "run", "top.yaml", "--json", "-q")
    wait_until(lambda: written(project / "action.pid"))
    run_id = next((project / ".loops" / "runs").iterdir()).name
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=15)
    result = finish(project, run_id)
    assert result["final_state"] == "ok"
    assert (project / "ran.log").read_text().split() == ["one", "two", "two", "three"]
    children = run_dir(project, run_id) / "children"
    assert sorted(p.name for p in children.iterdir()) == ["call-1"]
    assert sorted(p.name for p in (children / "call-1" / "children").iterdir()) == ["call-1"]


def test_a_resumed_childs_events_in_its_capture_are_its_whole_log(project: Path) -> None:
    """`${captured.sub.events}` of a child continued on resume: what it did before the kill,
    then after, in one log (its own `events.jsonl`, appended to)."""
    proc, run_id = held_in_child(project)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=15)
    assert finish(project, run_id)["final_state"] == "ok"
    sub = state_of(project, run_id)["captured"]["sub"]
    events = [json.loads(line) for line in sub["events"].splitlines()]
    names = [(e["event"], e.get("state")) for e in events if e["event"] != "route"]
    assert names[0] == ("loop_start", None)
    assert ("action_complete", "one") in names  # before the kill
    assert names.index(("action_complete", "one")) < names.index(("loop_resume", "two"))
    assert names.index(("loop_resume", "two")) < names.index(("action_complete", "three"))
    assert events[-1]["event"] == "loop_complete" and events[-1]["final_state"] == "done"
    assert {e["depth"] for e in events} == {1}


@pytest.mark.parametrize(("key", "bad"), [("steps", "x"), ("elapsed_ms", "soon")])
def test_a_damaged_childs_state_is_an_error_verdict_not_an_internal_error(
    project: Path, key: str, bad: str
) -> None:
    """The run's own state.json is checked before a resume (saved_state_problem), its child's
    was not: a child state.json whose `steps` or `elapsed_ms` was no number (a hand edit, a
    disk error) ended the resume in 'internal error: TypeError'. The sub-loop state now fails
    with the reason (the parent routes its error), and the run ends as the loop says."""
    proc, run_id = held_in_child(project)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=15)
    saved_at = run_dir(project, run_id) / "children" / "call-1" / "state.json"
    saved = json.loads(saved_at.read_text())
    saved[key] = bad
    saved_at.write_text(json.dumps(saved))
    end_action_group(project / "action.pid")
    (project / "action.pid").unlink()
    done = ll_loop(project, "resume", run_id, "--json", "-q")
    assert "internal error" not in done.stderr, done.stderr
    result = result_of(done)
    assert result["final_state"] == "bad", result
    events = [e for e in events_of(project, run_id) if e["event"] == "evaluate"]
    error = events[-1]["details"]["error"]
    assert f"its state.json is damaged (its {key!r} is" in error and "call-1" in error, error


LONG_LOG_CHILD = """
name: talker
initial: say
max_steps: 500
states:
  say:
    action: |
      n=$(cat n 2>/dev/null || echo 0); n=$((n + 1)); echo $n > n
      echo "said-$n"; [ $n -lt 80 ] && echo again || echo enough
    evaluate: {type: output_contains, pattern: enough}
    on_yes: done
    on_no: say
  done: {terminal: true}
"""

LONG_LOG_PARENT = """
name: reader
initial: kid
scope: ["."]
states:
  kid: {loop: talker, capture: child, on_yes: hold, on_no: hold, on_error: hold}
  hold:
    action: |
      echo $$ > action.pid
      while [ ! -f go ]; do sleep 0.05; done
    next: read
  read:
    action: printf '%s' "${captured.child.events}" > events.txt
    next: done
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


@pytest.mark.parametrize("planted", ["a number", "a fifo", "a link"])
def test_a_saved_events_path_that_is_no_log_file_is_an_error_verdict(
    tmp_path: Path, planted: str
) -> None:
    """A capture's whole `events` (or output, stderr) is read back from the path state.json
    gives: a number there ended the resume in 'internal error: TypeError', a FIFO made it wait
    for a writer forever (SIGTERM too), and a link was followed wherever it led. Each is now an
    error verdict naming the value, as an unreadable file was."""
    write(tmp_path / ".loops" / "talker.yaml", LONG_LOG_CHILD)
    write(tmp_path / "reader.yaml", LONG_LOG_PARENT)
    proc = spawn(tmp_path, "run", "reader.yaml", "--json", "-q")
    try:
        wait_until(lambda: written(tmp_path / "action.pid"))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=15)
    finally:
        end_action_group(tmp_path / "action.pid")
    (tmp_path / "action.pid").unlink()
    run_id = next((tmp_path / ".loops" / "runs").iterdir()).name
    saved_at = run_dir(tmp_path, run_id) / "state.json"
    saved = json.loads(saved_at.read_text())
    assert len(saved["captured"]["child"]["events"]) == 64 * 1024  # cut: read back whole
    if planted == "a number":
        saved["captured"]["child"]["events_path"] = 5
    elif planted == "a fifo":
        os.mkfifo(tmp_path / "fifo")
        saved["captured"]["child"]["events_path"] = str(tmp_path / "fifo")
    else:
        (tmp_path / "secret").write_text("not the log\n" * 10_000)
        (tmp_path / "link").symlink_to(tmp_path / "secret")
        saved["captured"]["child"]["events_path"] = str(tmp_path / "link")
    saved_at.write_text(json.dumps(saved))
    (tmp_path / "go").touch()
    done = ll_loop(tmp_path, "resume", run_id, "--json", "-q", timeout=30, process=True)
    assert "internal error" not in done.stderr, done.stderr
    result = result_of(done)
    assert result["final_state"] == "failed", result
    (evaluate,) = [
        e for e in events_of(tmp_path, run_id) if e["event"] == "evaluate" and e["state"] == "read"
    ]
    reason = evaluate["details"]["reason"]
    assert reason.startswith("cannot interpolate ${captured.child.events}: its whole "), reason
    assert {"a number": "events_path is 5, not a path", "a fifo": "is not a regular file",
            "a link": "is a symbolic link"}[planted] in reason  # fmt: skip
    assert (
        not (tmp_path / "events.txt").exists()
        or "not the log" not in (tmp_path / "events.txt").read_text()
    )
