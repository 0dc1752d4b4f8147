"""`ll-loop status`, `stop`, `resume` and `history` against real runs in a temp project."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.runtime.locks import process_start_time
from tests.runs_helpers import (
    end_action_group,
    events_of,
    ll_loop,
    result_of,
    run_dir,
    running,
    spawn,
    state_of,
    wait_until,
    write,
    written,
)

# `wait` sleeps until the file `go` exists (so a test can hold a run in its action), and
# records its own pid so the test can check that a stop kills the action's process group.
LOOP = """
name: waiter
initial: prepare
max_steps: 10
scope: [work]
states:
  prepare:
    action: "echo ready"
    capture: first
    next: wait
  wait:
    action: |
      echo $$ > action.pid
      while [ ! -f go ]; do sleep 0.05; done
      echo went
    capture: waited
    next: done
  done: {terminal: true}
"""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    write(tmp_path / "waiter.yaml", LOOP)
    yield tmp_path
    end_action_group(tmp_path / "action.pid")


def started_run(project: Path) -> tuple[subprocess.Popen[str], str]:
    """A run held in its `wait` action; (process, run id)."""
    proc = spawn(project, "run", "waiter.yaml", "--json", "-q")
    wait_until(lambda: written(project / "action.pid"))
    run_id = next((project / ".loops" / "runs").iterdir()).name
    return proc, run_id


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_status_shows_a_live_run_with_its_state_steps_and_process(project: Path) -> None:
    proc, run_id = started_run(project)
    try:
        listing = json.loads(ll_loop(project, "status", "--json").stdout)["runs"]
        assert [r["run_id"] for r in listing] == [run_id]
        live = listing[0]
        assert live["status"] == "running"
        assert live["state"] == "wait"
        assert live["steps"] == 1
        assert live["alive"] is True
        assert live["pid"] == proc.pid
        text = ll_loop(project, "status").stdout
        assert run_id in text and "running" in text and "wait" in text
    finally:
        proc.kill()
        proc.wait()


def test_stop_ends_an_agent_cli_at_once(project: Path) -> None:
    # A prompt state's `cmd:` agent is the run's action too: a stop used to wait for it to end
    # by itself (up to the state's timeout).
    agent = "cat > /dev/null; echo $$ > action.pid; while [ ! -f go ]; do sleep 0.05; done"
    (project / "agent.sh").write_text(agent + "\n")
    write(
        project / "agent.yaml",
        """
        name: agent
        initial: work
        scope: [work]
        states:
          work:
            action_type: prompt
            action: "Do the work."
            runner: "cmd:bash agent.sh"
            timeout: 600
            next: done
          done: {terminal: true}
        """,
    )
    proc = spawn(project, "run", "agent.yaml", "--json", "-q")
    wait_until(lambda: written(project / "action.pid"))
    agent_pid = int((project / "action.pid").read_text())
    run_id = next((project / ".loops" / "runs").iterdir()).name
    stopped = ll_loop(project, "stop", run_id)
    assert stopped.returncode == 0, stopped.stderr
    out, _ = proc.communicate(timeout=15)  # the agent would wait for `go` for 600 s
    assert proc.returncode == 3
    assert json.loads(out)["terminated_by"] == "stopped"
    assert not alive(agent_pid)


def test_stop_terminates_the_action_and_leaves_a_resumable_run(project: Path) -> None:
    proc, run_id = started_run(project)
    action_pid = int((project / "action.pid").read_text())
    stopped = ll_loop(project, "stop", run_id[:10])
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped run {run_id} in state 'wait'" in stopped.stdout
    out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 3
    assert json.loads(out)["terminated_by"] == "stopped"
    assert not alive(action_pid)  # the action's process group was terminated
    status = json.loads(ll_loop(project, "status", run_id, "--json").stdout)
    assert status["status"] == "stopped"
    (project / "go").touch()
    resumed = result_of(ll_loop(project, "resume", run_id, "--json", "-q"))
    assert resumed["final_state"] == "done"
    assert resumed["steps"] == 2  # the interrupted `wait` ran again, counted once
    captured = state_of(project, run_id)["captured"]
    assert captured["first"]["output"] == "ready"
    assert captured["waited"]["output"] == "went"
    kinds = [e["event"] for e in events_of(project, run_id)]
    assert kinds.count("loop_resume") == 1
    assert kinds.index("loop_resume") < len(kinds) - kinds[::-1].index("loop_complete")


def test_a_killed_run_shows_as_interrupted_and_resumes(project: Path) -> None:
    proc, run_id = started_run(project)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert state_of(project, run_id)["status"] == "running"  # what the file says...
    status = json.loads(ll_loop(project, "status", "--json").stdout)["runs"][0]
    assert status["status"] == "interrupted"  # ...and what is true
    assert status["alive"] is False
    assert "interrupted" in ll_loop(project, "status").stdout
    orphan = int((project / "action.pid").read_text())
    detail = json.loads(ll_loop(project, "status", run_id, "--json").stdout)
    assert detail["orphaned_actions"] == [orphan]
    assert (
        f"action process group(s) {orphan} still running"
        in ll_loop(project, "status", run_id).stdout
    )
    first = ll_loop(project, "stop", run_id, "--json")  # ends what the dead run left running
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["ended_actions"] == [orphan]
    wait_until(lambda: not running(orphan))
    assert json.loads(ll_loop(project, "status", run_id, "--json").stdout)["orphaned_actions"] == []
    stop = ll_loop(project, "stop", run_id)
    assert stop.returncode == 2
    assert "is not running" in stop.stderr and f"ll-loop resume {run_id}" in stop.stderr
    (project / "go").touch()
    assert result_of(ll_loop(project, "resume", run_id, "--json"))["outcome"] == "success"


def test_resume_ends_the_action_a_killed_run_left_running(project: Path) -> None:
    """SIGKILL cannot take the action with it; resume must not run the state beside it."""
    proc, run_id = started_run(project)
    orphan = int((project / "action.pid").read_text())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert running(orphan)  # the killed run's action is still waiting
    (project / "action.pid").unlink()
    resumed = spawn(project, "resume", run_id, "--json")
    try:
        wait_until(lambda: written(project / "action.pid"))  # the state runs again...
        assert not running(orphan)  # ...and the old action was ended before it
        [event] = [e for e in events_of(project, run_id) if e["event"] == "loop_resume"]
        assert event["ended_actions"] == [orphan]
        (project / "go").touch()
        out, err = resumed.communicate(timeout=15)
    finally:
        if resumed.poll() is None:
            resumed.kill()
    assert json.loads(out)["outcome"] == "success"
    assert f"ended 1 action(s) the interrupted run left running: [{orphan}]" in err


def test_a_resumed_run_is_live_before_its_first_boundary(project: Path) -> None:
    """status and stop must see the resuming process at once, not the dead one state.json
    named until the next boundary (stop would otherwise end the live action as an orphan)."""
    proc, run_id = started_run(project)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (project / "action.pid").unlink()
    resumed = spawn(project, "resume", run_id, "--json", "-q")
    try:
        wait_until(lambda: written(project / "action.pid"))  # `wait` runs again, no boundary
        status = json.loads(ll_loop(project, "status", run_id, "--json").stdout)
        assert (status["status"], status["alive"], status["pid"]) == ("running", True, resumed.pid)
        assert status["orphaned_actions"] == []
        stopped = ll_loop(project, "stop", run_id)
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped run {run_id} in state 'wait'" in stopped.stdout
        out, _ = resumed.communicate(timeout=15)
    finally:
        if resumed.poll() is None:
            resumed.kill()
    assert resumed.returncode == 3
    assert json.loads(out)["terminated_by"] == "stopped"


def test_a_torn_state_json_resumes_from_the_boundary_before(project: Path) -> None:
    """A power cut in the middle of rewriting state.json: the temp copy holds the boundary
    before it, and resume goes on from there (one state runs again)."""
    proc, run_id = started_run(project)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    end_action_group(project / "action.pid")
    state = run_dir(project, run_id) / "state.json"
    assert (run_dir(project, run_id) / "state.json.tmp").exists()
    state.write_bytes(state.read_bytes()[: len(state.read_bytes()) // 2])  # torn
    listed = json.loads(ll_loop(project, "status", run_id, "--json").stdout)
    assert (listed["status"], listed["state"], listed["steps"]) == ("interrupted", "prepare", 0)
    (project / "go").touch()
    resumed = ll_loop(project, "resume", run_id, "--json")
    assert "resuming from the boundary before it" in resumed.stderr
    assert result_of(resumed)["final_state"] == "done"
    assert state_of(project, run_id)["steps"] == 2


def test_a_damaged_run_without_events_is_not_sent_to_its_events(project: Path) -> None:
    """A run whose state.json does not parse and whose events.jsonl is gone: every refusal's
    hint said "its events are still in .../events.jsonl: `ll-loop history RUN` shows them",
    and that command then failed the same way. They say that nothing of it can be read."""
    (project / "go").touch()
    run_id = result_of(ll_loop(project, "run", "waiter.yaml", "--json", "-q"))["run_id"]
    (run_dir(project, run_id) / "state.json").write_text('{"torn')
    (run_dir(project, run_id) / "events.jsonl").unlink()
    for command in ("status", "resume", "explain", "history"):
        refused = ll_loop(project, command, run_id)
        assert refused.returncode == 2, (command, refused.stderr)
        assert "state.json is damaged" in refused.stderr
        assert "events are still in" not in refused.stderr
        assert "nothing of the run can be read" in refused.stderr
    listed = ll_loop(project, "status", "--all", "--json").json["runs"]
    [damaged] = [r for r in listed if r["run_id"] == run_id]
    assert "history" not in damaged["error"] and "no events.jsonl" in damaged["error"]


def test_a_file_where_loops_or_runs_goes_is_said_by_status_and_history(tmp_path: Path) -> None:
    """`run` refused a plain file at `.loops` or `.loops/runs` ("... is not a directory"), but
    `status` answered "no live runs" and `history` "no runs recorded", exit 0: nothing said
    why the runs were not there. They say it too, exit 2."""
    (tmp_path / ".loops").write_text("")
    for args in (("status",), ("status", "--all", "--json"), ("history",)):
        shown = ll_loop(tmp_path, *args)
        assert shown.returncode == 2, (args, shown.stdout)
        assert f"{tmp_path / '.loops'} is not a directory" in shown.stderr
    (tmp_path / ".loops").unlink()
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "runs").write_text("")
    shown = ll_loop(tmp_path, "status")
    assert shown.returncode == 2
    assert f"error: {tmp_path / '.loops' / 'runs'} is not a directory" in shown.stderr


def test_a_file_where_loops_or_runs_goes_is_said_by_the_commands_naming_a_run(
    tmp_path: Path,
) -> None:
    """`status` and `history` (0fcb76f) said a plain file at `.loops` or `.loops/runs` is not a
    directory, as docs/runs.md now says every command reading runs does; `resume RUN`, `stop RUN`,
    `status RUN` and `history RUN` still said "no run 'RUN' in .loops/runs", a folder that is
    not there."""
    (tmp_path / ".loops").write_text("")
    for places in (".loops", ".loops/runs"):
        if places == ".loops/runs":
            (tmp_path / ".loops").unlink()
            (tmp_path / ".loops").mkdir()
            (tmp_path / ".loops" / "runs").write_text("")
        for command in ("resume", "stop", "status", "history"):
            shown = ll_loop(tmp_path, command, "20261206-000000-abcdef")
            assert shown.returncode == 2, (command, shown.stdout, shown.stderr)
            assert f"error: {tmp_path / places} is not a directory" in shown.stderr, (
                command,
                shown.stderr,
            )


def test_finished_runs_are_not_resumed_or_stopped(project: Path) -> None:
    (project / "go").touch()
    run_id = result_of(ll_loop(project, "run", "waiter.yaml", "--json", "-q"))["run_id"]
    again = ll_loop(project, "resume", run_id, "--json")
    assert again.returncode == 2
    assert "already finished (success, terminal in state 'done')" in again.stderr
    refusal = json.loads(again.stdout)
    assert refusal["run_id"] == run_id and refusal["outcome"] == "error"
    stop = ll_loop(project, "stop", run_id)
    assert stop.returncode == 2 and "already finished" in stop.stderr
    # the refusal had no hint (`"hint": ""` in --json): it says where the ending is told
    assert f"hint: `ll-loop explain {run_id}` says how it ended" in stop.stderr
    assert ll_loop(project, "stop", run_id, "--json").json["hint"]
    assert ll_loop(project, "status").stdout.startswith("no live runs")
    assert run_id in ll_loop(project, "status", "--all").stdout


def test_unknown_run_ids_are_usage_errors(project: Path) -> None:
    for command in ("status", "stop", "resume"):
        done = ll_loop(project, command, "20990101-nope")
        assert done.returncode == 2
        assert "no run '20990101-nope'" in done.stderr


def test_history_lists_runs_per_loop_and_shows_one_runs_events(project: Path) -> None:
    (project / "go").touch()
    first = result_of(ll_loop(project, "run", "waiter.yaml", "--json", "-q"))["run_id"]
    write(project / "other.yaml", LOOP.replace("name: waiter", "name: other"))
    other = result_of(ll_loop(project, "run", "other.yaml", "--json", "-q"))["run_id"]
    rows = json.loads(ll_loop(project, "history", "--json").stdout)["runs"]
    assert [r["run_id"] for r in rows] == [other, first]
    assert rows[1]["outcome"] == "success" and rows[1]["steps"] == 2
    assert rows[1]["final_state"] == "done" and rows[1]["ended_at"] is not None
    only = json.loads(ll_loop(project, "history", "waiter", "--json").stdout)["runs"]
    assert [r["run_id"] for r in only] == [first]
    text = ll_loop(project, "history").stdout
    assert first in text and "success (terminal)" in text
    events = ll_loop(project, "history", first)
    assert events.returncode == 0
    assert "state_enter state=wait" in events.stdout
    assert "loop_complete" in events.stdout
    data = json.loads(ll_loop(project, "history", first, "--json").stdout)
    assert data["events"][0]["event"] == "loop_start"
    assert data["events"][-1]["event"] == "loop_complete"


def test_history_of_a_run_shows_events_whose_depth_is_not_a_count(project: Path) -> None:
    """`ll-loop history RUN` of an events.jsonl with a line whose `depth` was not a whole number
    (a hand-edited or foreign log) was `internal error: ValueError` on that line. The line is
    shown without indentation, as one whose `step` is not a number is shown without a step; a
    depth too large to indent by (a billion) is not indented either."""
    (project / "go").touch()
    run_id = result_of(ll_loop(project, "run", "waiter.yaml", "--json", "-q"))["run_id"]
    log = run_dir(project, run_id) / "events.jsonl"
    odd = [
        {"ts": "2026-12-06T13:04:49.789Z", "event": "note", "run_id": run_id, "depth": "a"},
        {"ts": "2026-12-06T13:04:49.790Z", "event": "deep", "run_id": run_id, "depth": 10**9},
        {"ts": "2026-12-06T13:04:49.791Z", "event": "half", "run_id": run_id, "depth": 1.5},
    ]
    with log.open("a") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in odd)
    shown = ll_loop(project, "history", run_id)
    assert shown.returncode == 0, shown.stderr
    assert "internal error" not in shown.stderr
    tail = shown.stdout.splitlines()[-3:]
    assert [line.split()[-1] for line in tail] == ["note", "deep", "half"]
    assert all(len(line) < 80 for line in tail)


def test_history_limit_beyond_what_sqlite_counts_lists_every_run(project: Path) -> None:
    """`--limit` has no upper bound on the command line; one past SQLite's 64-bit integers was an
    internal error (OverflowError binding the LIMIT)."""
    (project / "go").touch()
    first = result_of(ll_loop(project, "run", "waiter.yaml", "--json", "-q"))["run_id"]
    for limit in (str(2**63), "9" * 30):
        listed = ll_loop(project, "history", "--limit", limit, "--json")
        assert listed.returncode == 0, listed.stderr
        assert [r["run_id"] for r in listed.json["runs"]] == [first]


def test_history_shows_an_unfinished_run_as_interrupted(project: Path) -> None:
    proc, run_id = started_run(project)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    rows = json.loads(ll_loop(project, "history", "--json").stdout)["runs"]
    assert rows[0]["run_id"] == run_id
    assert rows[0]["ended_at"] is None and rows[0]["status"] == "interrupted"
    assert run_dir(project, run_id).is_dir()


SINGLE_COMMAND = """
name: sleeper
initial: nap
max_steps: 3
scope: [work]
states:
  nap:
    action: sleep 60
    next: done
  done: {terminal: true}
"""


def test_a_killed_runs_action_is_found_when_bash_became_its_command(tmp_path: Path) -> None:
    """bash runs a one-command script by replacing itself with the command: the orphan is
    `sleep 60`, not `bash -c`, and `status` and `stop` still find and end it."""
    write(tmp_path / "sleeper.yaml", SINGLE_COMMAND)
    proc = spawn(tmp_path, "run", "sleeper.yaml", "--json", "-q")
    runs = tmp_path / ".loops" / "runs"
    wait_until(lambda: runs.is_dir() and any(runs.iterdir()))
    run_id = next(runs.iterdir()).name
    log = runs / run_id / "events.jsonl"
    wait_until(lambda: log.exists() and "action_start" in log.read_text())
    wait_until(lambda: len(_children_named(proc.pid, b"sleep")) == 1)
    (orphan,) = _children_named(proc.pid, b"sleep")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    try:
        detail = json.loads(ll_loop(tmp_path, "status", run_id, "--json").stdout)
        assert detail["orphaned_actions"] == [orphan]
        stopped = ll_loop(tmp_path, "stop", run_id, "--json")
        assert json.loads(stopped.stdout)["ended_actions"] == [orphan]
        wait_until(lambda: not running(orphan))
    finally:
        if running(orphan):
            os.killpg(orphan, signal.SIGKILL)


def _children_named(parent: int, name: bytes) -> list[int]:
    """Pids of `parent`'s children whose command is `name` (after bash exec'd it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and argv[0] == name:
            found.append(int(entry.name))
    return found


def test_one_state_json_with_a_wrongly_typed_field_does_not_break_the_listing(
    tmp_path: Path,
) -> None:
    write(tmp_path / "sleeper.yaml", SINGLE_COMMAND.replace("sleep 60", "echo hi"))
    ran = ll_loop(tmp_path, "run", "sleeper.yaml", "--json", "-q")
    run_id = json.loads(ran.stdout)["run_id"]
    path = run_dir(tmp_path, run_id) / "state.json"
    saved = json.loads(path.read_text())
    path.write_text(json.dumps({**saved, "steps": None, "elapsed_ms": "x"}))
    listing = ll_loop(tmp_path, "status", "--all", "--json")
    assert listing.returncode == 0, listing.stderr
    assert [r["run_id"] for r in json.loads(listing.stdout)["runs"]] == [run_id]


def test_a_damaged_state_json_is_named_as_such_and_the_events_still_show(tmp_path: Path) -> None:
    write(tmp_path / "sleeper.yaml", SINGLE_COMMAND.replace("sleep 60", "echo hi"))
    run_id = result_of(ll_loop(tmp_path, "run", "sleeper.yaml", "--json", "-q"))["run_id"]
    (run_dir(tmp_path, run_id) / "state.json").write_text('{"run_id": "x", ')
    explained = ll_loop(tmp_path, "explain", run_id)  # told from its events, and says so
    assert explained.returncode == 0, explained.stderr
    assert (
        "note: its state.json is damaged (it does not parse); this is the event log's account"
        in explained.stdout
    )
    resumed = ll_loop(tmp_path, "resume", run_id)
    assert resumed.returncode == 2
    assert f"run {run_id}'s state.json is damaged (it does not parse)" in resumed.stderr
    assert f"`ll-loop history {run_id}` shows them" in resumed.stderr
    shown = ll_loop(tmp_path, "history", run_id)
    assert shown.returncode == 0, shown.stderr
    assert "state.json is damaged (it does not parse); its events follow" in shown.stdout
    assert "loop_complete" in shown.stdout
    nothing = ll_loop(tmp_path, "explain", "")
    assert (nothing.returncode, nothing.stderr.splitlines()[0]) == (2, "error: no run id given")


def test_status_all_lists_the_runs_whose_state_json_is_damaged_or_missing(tmp_path: Path) -> None:
    """The hints of `resume` and `explain` send a user to a run whose state.json is damaged,
    and `status --all` listed every other run but not that one (nor one that died before its
    first boundary, with no state.json): they are now listed, as damaged, saying why."""
    write(tmp_path / "sleeper.yaml", SINGLE_COMMAND.replace("sleep 60", "echo hi"))
    ids = [
        result_of(ll_loop(tmp_path, "run", "sleeper.yaml", "--json", "-q"))["run_id"]
        for _ in range(3)
    ]
    torn, fine, empty = ids
    (run_dir(tmp_path, torn) / "state.json").write_text('{"run_id": "x", ')
    (run_dir(tmp_path, empty) / "state.json").unlink()
    listing = ll_loop(tmp_path, "status", "--all", "--json")
    assert listing.returncode == 0, listing.stderr
    runs = {r["run_id"]: r for r in json.loads(listing.stdout)["runs"]}
    assert list(runs) == sorted(ids, reverse=True)  # newest first, as before
    assert runs[fine]["status"] == "finished" and "error" not in runs[fine]
    assert runs[torn]["status"] == runs[empty]["status"] == "damaged"
    assert runs[torn]["run_dir"] == str(run_dir(tmp_path, torn))
    assert "state.json is damaged (it does not parse)" in runs[torn]["error"]
    assert f"`ll-loop history {torn}` shows its events" in runs[torn]["error"]
    assert "it has no state.json" in runs[empty]["error"]
    table = ll_loop(tmp_path, "status", "--all").stdout
    assert [line.split()[2] for line in table.splitlines()[1:4]].count("damaged") == 2, table
    assert f"run {torn}: its state.json is damaged" in table
    assert f"run {empty}: it has no state.json" in table
    live = ll_loop(tmp_path, "status", "--json")  # not live: only --all lists them
    assert json.loads(live.stdout)["runs"] == []


def test_a_live_run_holding_its_lock_is_not_called_damaged(project: Path) -> None:
    """A run between its directory and its first state.json is alive, not damaged: its lock
    record says so (here its state.json is taken away while it runs)."""
    proc, run_id = started_run(project)
    try:
        for name in ("state.json", "state.json.tmp"):
            (run_dir(project, run_id) / name).unlink(missing_ok=True)
        listing = json.loads(ll_loop(project, "status", "--all", "--json").stdout)["runs"]
        assert [r for r in listing if r["status"] == "damaged"] == [], listing
    finally:
        proc.kill()
        proc.wait()


FINAL_REPORT = """
name: reported
initial: tick
scope: [work]
max_steps: 1
on_max_steps: report
states:
  tick:
    action: "true"
    on_yes: tick
    on_no: done
  report:
    action: |
      echo $$ > action.pid
      while [ ! -f go ]; do sleep 0.05; done
      echo reported > report.txt
    next: done
  done: {terminal: true}
"""


def test_a_stop_while_on_max_steps_runs_is_a_stop_and_resume_runs_it_again(
    project: Path,
) -> None:
    """Stopped in its on_max_steps state, the run was reported as ended by its budget
    (`max_steps`) and a resume never ran that state again."""
    write(project / "reported.yaml", FINAL_REPORT)
    proc = spawn(project, "run", "reported.yaml", "--json", "-q")
    wait_until(lambda: written(project / "action.pid"))
    run_id = next((project / ".loops" / "runs").iterdir()).name
    assert ll_loop(project, "stop", run_id).returncode == 0
    out, _ = proc.communicate(timeout=15)
    assert (proc.returncode, json.loads(out)["terminated_by"]) == (3, "stopped")
    (project / "go").touch()
    resumed = ll_loop(project, "resume", run_id, "--json", "-q")
    assert (resumed.returncode, resumed.json["terminated_by"]) == (3, "max_steps"), resumed.stderr
    assert resumed.json["final_state"] == "report"
    assert (project / "report.txt").read_text() == "reported\n"


def test_a_killed_run_counts_its_time_up_to_its_last_event(tmp_path: Path) -> None:
    """A run's elapsed time is saved at its state boundaries only: a run killed inside a
    sub-loop (whose steps are the parent's one step) showed `0.0s` however long it had run.
    It now counts up to its last event, marked `≥` (it ran on, for how long nobody knows)."""
    write(
        tmp_path / "child.yaml",
        """
        name: child
        initial: nap
        scope: [work]
        states:
          nap: {action: "sleep 1.2", next: wait}
          wait:
            action: "echo $$ > action.pid; while [ ! -f go ]; do sleep 0.05; done"
            next: done
          done: {terminal: true}
        """,
    )
    write(
        tmp_path / "parent.yaml",
        """
        name: parent
        initial: work
        scope: [work]
        states:
          work: {loop: child.yaml, on_yes: done, on_no: done}
          done: {terminal: true}
        """,
    )
    proc = spawn(tmp_path, "run", "parent.yaml", "-q")
    try:
        wait_until(lambda: written(tmp_path / "action.pid"))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        run_id = next((tmp_path / ".loops" / "runs").iterdir()).name
        assert state_of(tmp_path, run_id)["elapsed_ms"] < 1000  # saved before the child ran
        [shown] = json.loads(ll_loop(tmp_path, "status", "--json").stdout)["runs"]
        assert shown["status"] == "interrupted" and shown["elapsed_ms"] >= 1200
        table = ll_loop(tmp_path, "status").stdout
        assert "≥1." in table.splitlines()[1], table
    finally:
        end_action_group(tmp_path / "action.pid")


def test_a_resumed_runs_elapsed_time_leaves_out_the_time_it_was_stopped(project: Path) -> None:
    """`status` of a live run counted from its first start: a run stopped for a day and
    resumed showed a day, and dropped back to its real time once stopped again."""
    proc, run_id = started_run(project)
    assert ll_loop(project, "stop", run_id).returncode == 0
    proc.communicate(timeout=15)
    before = json.loads(ll_loop(project, "status", run_id, "--json").stdout)["elapsed_ms"]
    (project / "action.pid").unlink()
    time.sleep(3.0)  # stopped: no part of its time
    resumed = spawn(project, "resume", run_id, "-q")
    try:
        wait_until(lambda: written(project / "action.pid"))
        live = json.loads(ll_loop(project, "status", run_id, "--json").stdout)
        assert live["status"] == "running"
        assert before <= live["elapsed_ms"] < before + 2500, (before, live["elapsed_ms"])
    finally:
        resumed.kill()
        resumed.wait()


def test_history_shows_a_resumed_run_as_running_again(project: Path) -> None:
    proc, run_id = started_run(project)
    assert ll_loop(project, "stop", run_id).returncode == 0
    proc.communicate(timeout=15)
    (project / "action.pid").unlink()
    resumed = spawn(project, "resume", run_id, "--json", "-q")
    try:
        wait_until(lambda: written(project / "action.pid"))
        [row] = json.loads(ll_loop(project, "history", "waiter", "--json").stdout)["runs"]
        assert (row["status"], row["ended_at"], row["outcome"]) == ("running", None, None)
        (project / "go").touch()
        resumed.communicate(timeout=15)
        [row] = json.loads(ll_loop(project, "history", "waiter", "--json").stdout)["runs"]
        assert (row["outcome"], row["terminated_by"]) == ("success", "terminal")
    finally:
        if resumed.poll() is None:
            resumed.kill()
            resumed.wait()


def test_history_of_a_loop_file_lists_the_runs_of_its_loop(project: Path) -> None:
    """`history waiter.yaml` after `run waiter.yaml` said "no runs recorded", and
    `history ./waiter.yaml` that it "is not a run directory": runs are recorded under the
    loop's `name:`, which the file gives."""
    (project / "go").touch()
    write(project / "other.yaml", LOOP.replace("name: waiter", "name: renamed"))
    ran = result_of(ll_loop(project, "run", "other.yaml", "--json", "-q"))["run_id"]
    for typed in ("other.yaml", "./other.yaml", str(project / "other.yaml")):
        rows = json.loads(ll_loop(project, "history", typed, "--json").stdout)["runs"]
        assert [r["run_id"] for r in rows] == [ran], typed
    (project / "broken.yaml").write_text("junk: [\n")
    refused = ll_loop(project, "history", "broken.yaml")
    assert refused.returncode == 2 and "broken.yaml does not load" in refused.stderr


def test_a_stop_while_a_resume_ends_the_runs_old_action_is_said(tmp_path: Path) -> None:
    """A SIGTERM (`ll-loop stop`, a closed terminal) while a resume ended the action a killed
    run left behind (up to 2 s, when it ignores SIGTERM) killed the resume without a word:
    exit 143, nothing on stdout with --json. Now it is a stop: exit 3, one sentence, and the
    run stays interrupted."""
    write(
        tmp_path / "stubborn.yaml",
        """
        name: stubborn
        initial: wait
        scope: [work]
        states:
          wait:
            action: |
              exec 2>/dev/null  # a killed run's pipe: bash's "Terminated" would be a SIGPIPE
              trap 'touch termed' TERM
              echo $$ > action.pid
              while [ ! -f go ]; do sleep 0.05; done
            next: done
          done: {terminal: true}
        """,
    )
    proc = spawn(tmp_path, "run", "stubborn.yaml", "-q")
    try:
        wait_until(lambda: written(tmp_path / "action.pid"))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        run_id = next((tmp_path / ".loops" / "runs").iterdir()).name
        resumed = spawn(tmp_path, "resume", run_id, "--json", "-q")
        wait_until(lambda: (tmp_path / "termed").exists())  # the resume is ending it
        resumed.send_signal(signal.SIGTERM)
        out, err = resumed.communicate(timeout=15)
        assert resumed.returncode == 3, err
        expected = f"the resume never started, and run {run_id} stays interrupted"
        assert json.loads(out)["error"].endswith(expected)
        assert "Traceback" not in err
        shown = json.loads(ll_loop(tmp_path, "status", run_id, "--json").stdout)
        assert shown["status"] == "interrupted"
    finally:
        end_action_group(tmp_path / "action.pid")


def test_resume_of_a_run_whose_loop_file_is_gone_says_so(project: Path) -> None:
    """It said "no loop file at PATH" with the hint to "pass an existing .yaml path, or a loop
    name" — which `resume RUN` has no way to do."""
    proc, run_id = started_run(project)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (project / "waiter.yaml").rename(project / "moved.yaml")
    refused = ll_loop(project, "resume", run_id)
    assert refused.returncode == 2
    assert f"its loop file {project.resolve() / 'waiter.yaml'} is gone" in refused.stderr
    assert "put the loop file back at that path" in refused.stderr
    assert "a loop name" not in refused.stderr


def test_closing_the_terminal_of_a_run_stops_it_as_stop_does(tmp_path: Path) -> None:
    """A real terminal's hangup: SIGHUP, then every write to it fails with EIO. The progress
    line's write ended the run the SIGHUP was stopping (exit 1): it read as killed, its stop
    never saved nor recorded in the history. Now it stops as `ll-loop stop` does (exit 3)."""
    import pty
    import select

    from tests.cli import BIN

    write(
        tmp_path / "hup.yaml",
        """
        name: hup
        initial: wait
        scope: [work]
        states:
          wait:
            action: "echo $$ > action.pid; while [ ! -f go ]; do sleep 0.05; done"
            next: done
          done: {terminal: true}
        """,
    )
    pid, terminal = pty.fork()
    if pid == 0:  # the child: a terminal of its own, as in a shell
        try:
            os.chdir(tmp_path)
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
            os.execv(str(BIN / "ll-loop"), ["ll-loop", "run", "hup.yaml"])
        finally:
            os._exit(127)
    try:
        wait_until(lambda: written(tmp_path / "action.pid"))
        drawn = time.monotonic() + 0.5  # the progress line is redrawn while the action runs
        while time.monotonic() < drawn:
            if select.select([terminal], [], [], 0.1)[0]:
                os.read(terminal, 65536)
    finally:
        os.close(terminal)  # the terminal is closed: SIGHUP, and EIO for every write after
    _, code = os.waitpid(pid, 0)
    try:
        assert os.waitstatus_to_exitcode(code) == 3
        run_id = next((tmp_path / ".loops" / "runs").iterdir()).name
        shown = json.loads(ll_loop(tmp_path, "status", run_id, "--json").stdout)
        assert shown["status"] == "stopped" and shown["terminated_by"] == "stopped"
        [row] = json.loads(ll_loop(tmp_path, "history", "--json").stdout)["runs"]
        assert (row["terminated_by"], row["error"]) == ("stopped", "stopped by SIGHUP")
    finally:
        end_action_group(tmp_path / "action.pid")


def test_history_of_a_run_whose_directory_is_gone_says_so(project: Path) -> None:
    """`history RUN` of a run whose directory was removed (the history still lists it) said
    "no runs recorded for loop 'RUN'", exit 0, taking the id for a loop's name."""
    (project / "go").touch()
    run_id = result_of(ll_loop(project, "run", "waiter.yaml", "--json", "-q"))["run_id"]
    shutil.rmtree(run_dir(project, run_id))
    refused = ll_loop(project, "history", run_id)
    assert refused.returncode == 2
    assert f"run {run_id}'s directory is gone" in refused.stderr
    assert "(the history keeps its row: success, 2 steps)" in refused.stderr
    unknown = ll_loop(project, "history", "20991231-000000-abcdef", "--json")
    assert unknown.returncode == 2 and json.loads(unknown.stdout)["code"] == "USAGE"
    assert ll_loop(project, "history", "nosuch").returncode == 0  # a loop without runs


def test_stop_never_signals_a_process_it_cannot_tell_is_the_run(project: Path) -> None:
    """A state.json naming a pid without its start time (hand-edited, or shipped in a cloned
    repository's .loops/runs/) made `stop` SIGTERM whatever process had that pid: the start
    time is what tells the run from a process that took its pid since. Without it, stop now
    refuses (fails closed) and the process lives on."""
    (project / "go").touch()
    run_id = result_of(ll_loop(project, "run", "waiter.yaml", "--json", "-q"))["run_id"]
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        state = project / ".loops" / "runs" / run_id / "state.json"
        data = json.loads(state.read_text())
        data.update(status="running", result=None, pid=bystander.pid)
        data.pop("pid_start", None)
        state.write_text(json.dumps(data))
        done = ll_loop(project, "stop", run_id)
        assert done.returncode == 2, done.stdout
        assert f"names process {bystander.pid} without its start time" in done.stderr
        time.sleep(0.3)
        assert bystander.poll() is None  # not signalled
    finally:
        bystander.kill()
        bystander.wait()


def test_stop_never_signals_process_1_whatever_start_time_a_state_json_gives(
    project: Path,
) -> None:
    """pid 1's start time is the same on every boot of a container image, so a state.json
    shipped in a repository could name it with its true start time, and `stop` of that run
    sent SIGTERM to the system's init (as root: the container's end). It is never signalled."""
    (project / "go").touch()
    run_id = result_of(ll_loop(project, "run", "waiter.yaml", "--json", "-q"))["run_id"]
    state = project / ".loops" / "runs" / run_id / "state.json"
    data = json.loads(state.read_text())
    data.update(status="running", result=None, pid=1, pid_start=process_start_time(1))
    state.write_text(json.dumps(data))
    done = ll_loop(project, "stop", run_id)
    assert done.returncode == 2, done.stdout
    assert "names process 1, the first process of its system or container" in done.stderr


def test_a_run_that_is_pid_1_is_told_how_to_stop_not_that_ll_loop_never_wrote_it(
    project: Path,
) -> None:
    """A run is pid 1 when it is its container's main process (`docker run IMAGE ll-loop run
    ...`); its state.json then names pid 1 with that process's true start time, as this one
    does. `stop` (which never signals pid 1) said the file 'was not written by ll-loop: remove
    the run's directory', a live run's, and `resume` sent the user back to `ll-loop stop`."""
    (project / "go").touch()
    run_id = result_of(ll_loop(project, "run", "waiter.yaml", "--json", "-q"))["run_id"]
    state = project / ".loops" / "runs" / run_id / "state.json"
    data = json.loads(state.read_text())
    data.update(status="running", result=None, pid=1, pid_start=process_start_time(1))
    state.write_text(json.dumps(data))
    stopped = ll_loop(project, "stop", run_id)
    assert stopped.returncode == 2, stopped.stdout
    assert "not written by ll-loop" not in stopped.stderr
    assert "stop the container (`docker stop`" in stopped.stderr
    resumed = ll_loop(project, "resume", run_id)
    assert resumed.returncode == 2, resumed.stdout
    assert f"run {run_id} is still running (pid 1)" in resumed.stderr
    assert "ll-loop stop" not in resumed.stderr
    assert "stop the container (`docker stop`" in resumed.stderr


def test_stop_never_signals_a_queued_process_it_cannot_tell_is_the_run(tmp_path: Path) -> None:
    """The same for a run waiting in the lock queue: a record in .loops/locks/ naming a pid
    without its start time made `stop` SIGTERM whatever process had that pid."""
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / ".loops" / "locks").mkdir(parents=True)
        record = {
            "run_id": "20261206-000000-abcdef", "pid": bystander.pid, "start_time": None,
            "paths": ["x"], "ticket": 7, "holding": False, "queued_at": time.time(),
            "acquired_at": None, "loop": "planted", "signals": True,
        }  # fmt: skip
        (tmp_path / ".loops" / "locks" / "000000000007.json").write_text(json.dumps(record))
        done = ll_loop(tmp_path, "stop", "20261206-000000-abcdef", "--wait", "1")
        assert done.returncode == 2, done.stdout
        assert f"lock record names process {bystander.pid} without its start time" in done.stderr
        time.sleep(0.3)
        assert bystander.poll() is None  # not signalled
    finally:
        bystander.kill()
        bystander.wait()


COUNT_STATE_READS = """
import sys
import engine
opened = []
def audit(event, args):
    if event == "open" and str(args[0]).endswith("state.json"):
        opened.append(str(args[0]))
sys.addaudithook(audit)
statuses = engine.status(include_finished=True)
print(len(statuses), len(opened), len(set(opened)))
"""


def test_status_all_reads_each_runs_state_once(tmp_path: Path) -> None:
    """`status --all` read every state.json twice: once to list the runs, then again to find
    those it could not read (a damaged one is still looked at again). Counted in a process of
    its own: an audit hook cannot be removed."""
    import sys

    from tests.harness_helpers import REPO

    write(tmp_path / "sleeper.yaml", SINGLE_COMMAND.replace("sleep 60", "echo hi"))
    for _ in range(4):
        ll_loop(tmp_path, "run", "sleeper.yaml", "--json", "-q")
    done = subprocess.run(
        [sys.executable, "-c", COUNT_STATE_READS],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    listed, opened, distinct = map(int, done.stdout.split())
    assert (listed, distinct) == (4, 4), done.stdout
    assert opened == 4, f"{opened} opens of 4 state.json files"
