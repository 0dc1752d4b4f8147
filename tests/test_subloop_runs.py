"""Sub-loops end to end: the real `ll-loop run` with a parent that calls a child loop.

One child, driven by its `mode` parameter, can succeed, fail, exhaust its budget, time out, end
in a failure terminal named `blocked`, or error; the parent routes each to its own terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engine.model.loop import SUBLOOP_CAPTURE_FIELDS
from tests.harness_helpers import REPO
from tests.runs_helpers import events_of, ll_loop, result_of, run_dir, state_of, write

CHILD = """
name: child
initial: work
max_steps: 4
parameters:
  mode: {type: string, required: true, enum: [ok, fail, spin, slow, blocked, crash]}
  times: {type: integer, default: 2}
outputs:
  said: "${captured.w.output}"
  doubled: "${context.times * 2}"
states:
  work:
    action: |
      echo "$LL_RUN_DIR ${run.dir}" > "$LL_RUN_DIR/../where"
      case "${context.mode}" in
        ok) echo fine;; fail) echo bad;; spin) echo again;;
        blocked) echo stuck;; slow) sleep 20; echo fine;; crash) exit 7;;
      esac
    capture: w
    evaluate: {type: classify, verdicts: [fine, bad, again, stuck]}
    route:
      fine: done
      bad: failed
      again: work
      stuck: blocked
      _error: crashed
  crashed:
    action: "exit 9"
    next: done
  failed: {terminal: true, failure: true}
  blocked: {terminal: true, failure: true}
  done: {terminal: true}
"""

PARENT = """
name: parent
initial: call
max_steps: 5
timeout: 3
parameters:
  mode: {type: string, required: true}
  times: {type: any}  # passed on to the child as given (the child checks it)
states:
  call:
    loop: child
    with:
      mode: "${context.mode}"
      times: "${context.times | default(2)}"
    capture: sub
    on_terminal:
      blocked: escalate
    on_yes: ok
    on_no: notok
    on_error: broken
  ok: {terminal: true}
  notok: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
  escalate: {terminal: true, failure: true}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / ".loops" / "child.yaml", CHILD)
    write(tmp_path / "parent.yaml", PARENT)
    return tmp_path


@pytest.mark.parametrize(
    ("mode", "final", "terminal", "terminated_by"),
    [
        ("ok", "ok", "done", "terminal"),
        ("fail", "notok", "failed", "terminal"),
        ("spin", "notok", None, "max_steps"),
        ("slow", "notok", None, "timeout"),
        ("blocked", "escalate", "blocked", "terminal"),
        ("crash", "broken", None, "error"),
    ],
)
def test_parent_routes_on_how_the_child_ended(
    project: Path, mode: str, final: str, terminal: str | None, terminated_by: str
) -> None:
    done = ll_loop(project, "run", "parent.yaml", "-c", f"mode={mode}", "--json", "-q")
    result = result_of(done)
    assert result["final_state"] == final, done.stderr
    assert result["steps"] == 1  # the parent pays one step for the whole child run
    sub = state_of(project, result["run_id"])["captured"]["sub"]
    assert sub["terminal"] == terminal
    assert sub["terminated_by"] == terminated_by
    if terminated_by == "max_steps":
        assert sub["steps"] == 4  # the child keeps its own budget
    if terminal is not None:
        assert sub["outputs"] == {
            "said": {"done": "fine", "failed": "bad", "blocked": "stuck"}[terminal],
            "doubled": 4,
        }


def test_child_timeout_is_clamped_to_the_parents_remaining_time(project: Path) -> None:
    done = ll_loop(project, "run", "parent.yaml", "-c", "mode=slow", "--json", "-q")
    result = result_of(done)
    assert result["final_state"] == "notok"
    assert result["duration_ms"] < 8000  # the child's sleep 20 was cut at the parent's 3 s


def test_the_states_own_timeout_bounds_its_child(project: Path) -> None:
    """`timeout:` on a `loop:` state was accepted and ignored: the child ran its `sleep 20` to
    the parent's own limit. It bounds the child's run as it bounds an action."""
    bounded = PARENT.replace("timeout: 3", "timeout: 30").replace(
        "    loop: child\n", "    loop: child\n    timeout: 1\n"
    )
    write(project / "bounded.yaml", bounded)
    done = ll_loop(project, "run", "bounded.yaml", "-c", "mode=slow", "--json", "-q")
    result = result_of(done)
    assert result["final_state"] == "notok", done.stderr
    assert result["duration_ms"] < 8000  # cut at the state's 1 s, not the parent's 30 s
    sub = state_of(project, result["run_id"])["captured"]["sub"]
    assert sub["terminated_by"] == "timeout"


def dynamic(project: Path, which: str) -> dict[str, Any]:
    """Run a parent whose `loop:` is interpolated, so only the run can find out it is bad."""
    dyn = PARENT.replace("loop: child", 'loop: "${context.which}"')
    dyn = dyn.replace("  times:", "  which: {type: string}\n  times:", 1)
    write(project / "dyn.yaml", dyn)
    done = ll_loop(project, "run", "dyn.yaml", "-c", "mode=ok", "-c", f"which={which}", "--json")
    return result_of(done)


def test_a_literal_child_that_cannot_load_refuses_the_run_before_step_one(project: Path) -> None:
    write(project / "missing.yaml", PARENT.replace("loop: child", "loop: nosuchloop"))
    done = ll_loop(project, "run", "missing.yaml", "-c", "mode=ok", "--json")
    assert done.returncode == 2
    assert result_of(done)["steps"] == 0
    assert "no loop named 'nosuchloop'" in done.stderr
    write(project / "typo.yaml", PARENT.replace("loop: child", "loop: chlid"))
    done = ll_loop(project, "run", "typo.yaml", "-c", "mode=ok", "--json")
    assert "(did you mean 'child'?)" in done.stderr


def test_a_child_path_without_its_suffix_names_the_file_it_meant(project: Path) -> None:
    """`loop: .loops/child` (a path, so no suffix is tried) said "no loop file at .../child"
    while .loops/child.yaml was right there."""
    write(project / "nosuffix.yaml", PARENT.replace("loop: child", "loop: .loops/child"))
    done = ll_loop(project, "run", "nosuffix.yaml", "-c", "mode=ok", "--json")
    assert done.returncode == 2
    assert "(did you mean .loops/child.yaml?)" in done.stderr, done.stderr


def test_a_child_that_cannot_load_is_an_error_verdict_with_the_reason(project: Path) -> None:
    result = dynamic(project, "nosuchloop")
    assert result["final_state"] == "broken"
    events = events_of(project, result["run_id"])
    evaluate = next(e for e in events if e["event"] == "evaluate" and e["state"] == "call")
    assert evaluate["verdict"] == "error"
    assert "no loop named 'nosuchloop'" in evaluate["details"]["error"]


def test_a_child_that_could_not_start_has_every_capture_field(tmp_path: Path) -> None:
    """A sub-loop capture has the fields lint takes it to have (SUBLOOP_CAPTURE_FIELDS) even
    when its child never ran: the `on_error` state naming `${captured.c.events_path}` (where
    the child's log is) failed the run with 'events_path is not set' instead."""
    write(
        tmp_path / "parent.yaml",
        """
        name: parent
        initial: kid
        scope: ["."]
        parameters:
          which: {type: string, default: nosuchloop}
        states:
          kid:
            loop: "${context.which}"
            capture: c
            on_yes: done
            on_no: done
            on_error: tell
          tell:
            action: |
              printf '%s|%s|%s' "${captured.c.terminated_by}" "${captured.c.events}" \\
                "${captured.c.events_path}" > told.txt
            next: done
          done: {terminal: true}
        """,
    )
    done = ll_loop(tmp_path, "run", "parent.yaml", "--json", "-q")
    result = result_of(done)
    assert result["final_state"] == "done", result["error"]
    assert (tmp_path / "told.txt").read_text() == "error||"
    capture = state_of(tmp_path, result["run_id"])["captured"]["c"]
    assert set(capture) == SUBLOOP_CAPTURE_FIELDS


def test_bad_parameter_values_are_caught_at_run_time(project: Path) -> None:
    result = result_of(ll_loop(project, "run", "parent.yaml", "-c", "mode=bogus", "--json", "-q"))
    assert result["final_state"] == "broken"
    events = events_of(project, result["run_id"])
    evaluate = next(e for e in events if e["event"] == "evaluate" and e["state"] == "call")
    assert "must be one of" in evaluate["details"]["error"]
    done = ll_loop(project, "run", "parent.yaml", "-c", "mode=ok", "-c", "times=x", "--json")
    evaluate = next(
        e
        for e in events_of(project, result_of(done)["run_id"])
        if e["event"] == "evaluate" and e["state"] == "call"
    )
    assert "parameter 'times' of loop 'child' must be an integer" in evaluate["details"]["error"]


def test_an_invalid_child_is_an_error_verdict_naming_the_problem(project: Path) -> None:
    write(project / ".loops" / "bad.yaml", CHILD.replace("next: done", "nxet: done"))
    result = dynamic(project, "bad")
    assert result["final_state"] == "broken"
    evaluate = next(
        e
        for e in events_of(project, result["run_id"])
        if e["event"] == "evaluate" and e["state"] == "call"
    )
    assert "child loop is invalid" in evaluate["details"]["error"]
    assert "bad.yaml:28:5" in evaluate["details"]["error"]
    assert "nxet" in evaluate["details"]["error"]


def test_child_events_share_the_log_with_depth_and_artifacts_nest(project: Path) -> None:
    result = result_of(ll_loop(project, "run", "parent.yaml", "-c", "mode=ok", "--json", "-q"))
    events = events_of(project, result["run_id"])
    starts = [e for e in events if e["event"] == "loop_start"]
    assert [e["depth"] for e in starts] == [0, 1]
    child_events = [e for e in events if e.get("depth") == 1]
    assert {e["event"] for e in child_events} >= {"state_enter", "action_start", "loop_complete"}
    assert all(e.get("state") != "call" for e in child_events)
    schema = json.loads((Path(__file__).parents[1] / "schemas" / "events.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for event in events:
        validator.validate(event)  # child events are valid events of the same run
    assert {e["run_id"] for e in events} == {result["run_id"]}
    child_dir = run_dir(project, result["run_id"]) / "children" / "call-1"
    artifacts = str(child_dir / "artifacts")
    assert (child_dir / "where").read_text().split() == [artifacts, artifacts]


def test_recursion_is_bounded_with_a_clear_error(tmp_path: Path) -> None:
    write(
        tmp_path / "self.yaml",
        """
        name: self
        initial: again
        max_steps: 3
        states:
          again:
            loop: self.yaml
            on_yes: done
            on_no: too_deep
            on_error: too_deep
          done: {terminal: true}
          too_deep: {terminal: true, failure: true}
        """,
    )
    result = result_of(ll_loop(tmp_path, "run", "self.yaml", "--json", "-q"))
    assert result["final_state"] == "too_deep"  # the failure bubbles up level by level
    events = events_of(tmp_path, result["run_id"])
    assert max(e.get("depth", 0) for e in events) == 8
    deepest = [e for e in events if e["event"] == "evaluate" and e.get("depth") == 8]
    assert "sub-loops nest deeper than 8 levels" in deepest[0]["details"]["error"]


def test_an_unrouted_child_error_names_its_cause(tmp_path: Path) -> None:
    """Without on_error, the run's error says why the child failed (a failed action, a loop
    that calls itself), once, not "verdict 'error'" alone nor wrapped once per level."""
    write(
        tmp_path / "child.yaml",
        """
        name: child
        initial: go
        states:
          go: {action: "exit 3", next: done}
          done: {terminal: true}
        """,
    )
    write(
        tmp_path / "self.yaml",
        """
        name: self
        initial: again
        states:
          again: {loop: self.yaml, on_yes: done, on_no: done}
          done: {terminal: true}
        """,
    )
    write(tmp_path / "parent.yaml", (tmp_path / "self.yaml").read_text().replace("self", "child"))
    result = result_of(ll_loop(tmp_path, "run", "parent.yaml", "--json", "-q"))
    assert result["error"] == (
        "state 'again' produced verdict 'error', which has no route: its loop 'child' failed: "
        "state 'go' failed (action exited with code 3) and has no on_error route"
    )
    result = result_of(ll_loop(tmp_path, "run", "self.yaml", "--json", "-q"))
    assert result["error"] == (
        "state 'again' produced verdict 'error', which has no route: its loop 'self' failed "
        "(inside 'self' → … 6 more → 'self.yaml'): sub-loops nest deeper than 8 levels: loop "
        "'self' calls 'self.yaml' at depth 9 (a loop that calls itself without end?)"
    )
    # two levels deep, the failing state is named with the loop it is in ('go' is the
    # grandchild's): the message said "its loop 'middle' failed: state 'go' ..."
    write(
        tmp_path / "middle.yaml",
        (tmp_path / "self.yaml")
        .read_text()
        .replace("self.yaml", "child.yaml")
        .replace("name: self", "name: middle"),
    )
    write(
        tmp_path / "top.yaml",
        (tmp_path / "self.yaml")
        .read_text()
        .replace("self.yaml", "middle.yaml")
        .replace("name: self", "name: top"),
    )
    result = result_of(ll_loop(tmp_path, "run", "top.yaml", "--json", "-q"))
    assert result["error"] == (
        "state 'again' produced verdict 'error', which has no route: its loop 'middle' failed "
        "(inside 'child'): state 'go' failed (action exited with code 3) and has no on_error "
        "route"
    )


COUNT_CHILD_LISTINGS = """
import sys
import engine
listed = []
def audit(event, args):
    if event == "os.scandir" and str(args[0]).endswith("children"):
        listed.append(str(args[0]))
sys.addaudithook(audit)  # the API, as `ll-loop run` runs it, in this process
ran = engine.run("parent.yaml", handle_signals=False)
print(ran.steps, ran.run_id, len(listed))
"""


def test_a_sub_loop_state_run_many_times_lists_its_children_once(tmp_path: Path) -> None:
    """Each child run's directory number (`children/<state>-<n>`) came from listing every
    earlier child: a run of 3,000 sub-loop steps took 43 s (1,000 took 5 s). The directory is
    listed once and the count followed; the numbers are the same, 1 to N."""
    write(
        tmp_path / "child.yaml",
        """
        name: child
        initial: look
        scope: ["."]
        states:
          look:
            evaluate: {type: output_contains, pattern: "x", source: "x"}
            on_yes: done
            on_no: done
          done: {terminal: true}
        """,
    )
    write(
        tmp_path / "parent.yaml",
        """
        name: parent
        initial: work
        scope: ["."]
        max_steps: 60
        on_max_steps: end
        states:
          work: {loop: child.yaml, on_yes: work, on_no: end}
          end: {terminal: true}
        """,
    )
    # in a process of its own: an audit hook cannot be removed, and one left in the test
    # process runs for every later event there (thread starts included, under coverage)
    done = subprocess.run(
        [sys.executable, "-c", COUNT_CHILD_LISTINGS],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    steps, run_id, listed = done.stdout.split()
    assert int(steps) == 60, done.stdout
    children = run_dir(tmp_path, run_id) / "children"
    assert sorted(p.name for p in children.iterdir()) == sorted(f"work-{n}" for n in range(1, 61))
    assert int(listed) <= 1, f"the children listed {listed} times"


EVENTS_CHILD = """
name: talker
initial: say
max_steps: 500
parameters:
  times: {type: integer, default: 1}
states:
  say:
    action: |
      n=$(cat n 2>/dev/null || echo 0); n=$((n + 1)); echo $n > n
      echo "said-$n"; [ $n -lt ${context.times} ] && echo again || echo enough
    evaluate: {type: output_contains, pattern: enough}
    on_yes: done
    on_no: say
  done: {terminal: true}
"""

EVENTS_PARENT = """
name: reader
initial: kid
scope: ["."]
parameters:
  times: {type: integer, default: 1}
states:
  kid:
    loop: talker
    with: {times: "${context.times}"}
    capture: child
    on_yes: read
    on_no: read
    on_error: read
  read:
    action: |
      printf '%s' "${captured.child.events}" > events.txt
    next: done
  done: {terminal: true}
"""


def events_project(tmp_path: Path) -> Path:
    write(tmp_path / ".loops" / "talker.yaml", EVENTS_CHILD)
    write(tmp_path / "reader.yaml", EVENTS_PARENT)
    return tmp_path


def test_a_sub_loop_capture_holds_the_childs_event_stream(tmp_path: Path) -> None:
    """`${captured.C.events}` is the child's event log, JSONL: a little-loops parent fed it to a
    prompt or parsed it line by line (`ll-loop migrate` turns its `.output` into `.events`)."""
    project = events_project(tmp_path)
    result = result_of(ll_loop(project, "run", "reader.yaml", "--json", "-q"))
    assert result["final_state"] == "done"
    read = [json.loads(line) for line in (project / "events.txt").read_text().splitlines()]
    logged = [e for e in events_of(project, result["run_id"]) if e.get("depth") == 1]
    # every event of the child, as the run's log has them (the time may be a millisecond on)
    assert [{**e, "ts": None} for e in read] == [{**e, "ts": None} for e in logged]
    assert read[0]["event"] == "loop_start" and read[0]["loop"] == "talker"
    assert read[-1]["event"] == "loop_complete" and read[-1]["final_state"] == "done"
    said = [e["output"] for e in read if e["event"] == "action_complete"]
    assert said == ["said-1\nenough\n"]
    child_dir = run_dir(project, result["run_id"]) / "children" / "kid-1"
    capture = state_of(project, result["run_id"])["captured"]["child"]
    assert capture["events_path"] == str(child_dir / "events.jsonl")
    assert capture["events"] == (child_dir / "events.jsonl").read_text().rstrip("\n")
    assert set(capture) == SUBLOOP_CAPTURE_FIELDS  # what lint takes a sub-loop capture to hold


def test_a_long_child_event_log_keeps_its_end_in_the_capture_and_whole_when_read(
    tmp_path: Path,
) -> None:
    """A child's log longer than a capture keeps (as an action's stderr does) its last 64 Ki
    characters in state.json, where its end is; `${captured.C.events}` reads it whole."""
    project = events_project(tmp_path)
    done = ll_loop(project, "run", "reader.yaml", "-c", "times=80", "--json", "-q")
    result = result_of(done)
    assert result["final_state"] == "done", done.stderr
    whole = (run_dir(project, result["run_id"]) / "children" / "kid-1" / "events.jsonl").read_text()
    assert len(whole) > 64 * 1024
    capture = state_of(project, result["run_id"])["captured"]["child"]
    assert len(capture["events"]) == 64 * 1024
    assert whole.rstrip("\n").endswith(capture["events"])
    assert json.loads(capture["events"].splitlines()[-1])["event"] == "loop_complete"
    assert (project / "events.txt").read_text() == whole.rstrip("\n")
    read = [json.loads(line) for line in whole.splitlines()]
    assert sum(e["event"] == "action_complete" for e in read) == 80


def test_a_child_log_too_long_for_a_command_line_is_read_from_its_file(tmp_path: Path) -> None:
    """`${captured.C.events}` is read back whole, and a child log of 300 KB inlined in a shell
    action makes a script bash cannot be given (128 KiB): the error's hint named only
    `${captured.name.output_path}`, a field no sub-loop capture has (LL089). It names the
    capture's own file, `events_path`, which does the job."""
    project = events_project(tmp_path)
    done = ll_loop(project, "run", "reader.yaml", "-c", "times=300", "--json", "-q")
    error = result_of(done)["error"]
    assert "Argument list too long" in error, error
    assert "${captured.name.events_path}" in error, error
    write(
        project / "file.yaml",
        EVENTS_PARENT.replace(
            "printf '%s' \"${captured.child.events}\" > events.txt",
            'cat "${captured.child.events_path}" > events.txt',
        ),
    )
    assert (project / "n").read_text().strip() == "300"
    (project / "n").unlink()
    done = ll_loop(project, "run", "file.yaml", "-c", "times=300", "--json", "-q")
    assert result_of(done)["final_state"] == "done", done.stderr
    assert len((project / "events.txt").read_text()) > 128 * 1024


def test_a_childs_events_include_those_of_its_own_sub_loops(tmp_path: Path) -> None:
    """The child's log holds what ran inside it, its own children's events (deeper `depth`)
    included, as the run's log holds all of them (docs/decisions.md)."""
    project = events_project(tmp_path)
    write(
        project / ".loops" / "middle.yaml",
        """
        name: middle
        initial: inner
        parameters:
          times: {type: integer, default: 1}
        states:
          inner: {loop: talker, on_yes: done, on_no: done, on_error: done}
          done: {terminal: true}
        """,
    )
    write(project / "reader.yaml", EVENTS_PARENT.replace("loop: talker", "loop: middle"))
    done = ll_loop(project, "run", "reader.yaml", "--json", "-q")
    result = result_of(done)
    assert result["final_state"] == "done", done.stderr
    read = [json.loads(line) for line in (project / "events.txt").read_text().splitlines()]
    starts = [(e["loop"], e["depth"]) for e in read if e["event"] == "loop_start"]
    assert starts == [("middle", 1), ("talker", 2)]
    assert read[-1]["event"] == "loop_complete" and read[-1]["depth"] == 1
    logged = [e for e in events_of(project, result["run_id"]) if e.get("depth", 0) >= 1]
    assert [e["event"] for e in read] == [e["event"] for e in logged]
