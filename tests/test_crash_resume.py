"""Crash safety: SIGKILL a real `ll-loop run` at random moments, then `ll-loop resume` it.

Whatever the moment, the resumed run must end exactly like an uninterrupted one (final state,
steps, captures, retry counters), `events.jsonl` must parse line by line, and every state
boundary of the run must be in the log. A handful of trials run by default; the soak test
(`-m slow`) runs 50 with up to three kills each.
"""

from __future__ import annotations

import json
import random
import re
import resource
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli import BIN
from tests.runs_helpers import (
    end_action_group,
    ll_loop,
    result_of,
    run_dir,
    spawn,
    state_of,
    wait_until,
    write,
    written,
)

# Idempotent actions: every value is computed from restored captures and context, so running
# the interrupted state again gives the same result. Retries are counted on `add`.
LOOP = """
name: crashy
initial: init
max_steps: 40
scope: [work]
context: {goal: 9}
states:
  init:
    action: "echo 0"
    capture: total
    next: add
  add:
    action: "sleep 0.03; echo $(( ${captured.total.output | integer} + 1 ))"
    capture: total
    evaluate: {type: output_numeric, operator: ge, target: "${context.goal}"}
    on_yes: check
    on_no: add
    max_retries: 20
    on_retry_exhausted: failed
  check:
    action: "echo total=${captured.total.output} step=${state.step}"
    capture: summary
    evaluate: {type: output_contains, pattern: "total=9 "}
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""

# The same loop as a sub-loop: a kill inside the child is resumed inside the child.
NESTED = """
name: nest
initial: call
max_steps: 5
scope: [work]
states:
  call:
    loop: crashy
    capture: inner
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""

_STABLE = ("output", "exit_code", "verdict", "details")


def essence(cwd: Path, run_id: str) -> dict[str, Any]:
    """What must not depend on interruptions: where it ended and what it captured."""
    return essence_of(state_of(cwd, run_id))


def essence_of(state: dict[str, Any]) -> dict[str, Any]:
    return {
        "current": state["current"],
        "steps": state["steps"],
        "status": state["status"],
        "retries": state["retries"],
        "captured": {
            name: {k: v for k, v in capture.items() if k in _STABLE}
            for name, capture in state["captured"].items()
        },
        "outcome": state["result"]["outcome"],
    }


def boundaries(cwd: Path, run_id: str) -> dict[int, tuple[str, str]]:
    """step → (state, target) of the last top-level `route` event of each step."""
    routes: dict[int, tuple[str, str]] = {}
    lines = (run_dir(cwd, run_id) / "events.jsonl").read_text().splitlines()
    for line in lines:
        event = json.loads(line)  # every line parses: a torn tail was repaired
        if event["event"] == "route" and event["depth"] == 0:
            routes[event["step"]] = (event["state"], event["target"])
    return routes


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Any, float]:
    """An uninterrupted run: its essence, its boundaries, and how long it took."""
    cwd = tmp_path_factory.mktemp("reference")
    write(cwd / "crashy.yaml", LOOP)
    began = time.monotonic()
    result = result_of(ll_loop(cwd, "run", "crashy.yaml", "--json", "-q"))
    took = time.monotonic() - began
    assert result["final_state"] == "done"
    return essence(cwd, result["run_id"]), boundaries(cwd, result["run_id"]), took


def crash_and_resume(
    cwd: Path, rng: random.Random, kills: int, span: float, entry: str = "crashy.yaml"
) -> tuple[str, int]:
    """Run, SIGKILL at random moments (also during resumes), resume until finished."""
    write(cwd / "crashy.yaml", LOOP)
    write(cwd / "nest.yaml", NESTED)
    proc = spawn(cwd, "run", entry, "--json", "-q")
    interrupted = 0
    for attempt in range(kills + 2):
        if attempt < kills:  # the last attempt runs undisturbed
            time.sleep(rng.uniform(0.0, span))
            proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        runs = sorted((cwd / ".loops" / "runs").glob("*/state.json"))
        if not runs:  # killed before the first boundary: nothing to resume, start again
            proc = spawn(cwd, "run", entry, "--json", "-q")
            continue
        run_id = runs[0].parent.name
        if state_of(cwd, run_id)["status"] == "finished":  # it got there before the kill
            assert proc.returncode in (0, -signal.SIGKILL), err
            return run_id, interrupted
        assert proc.returncode == -signal.SIGKILL, (out, err)
        interrupted += 1
        proc = spawn(cwd, "resume", run_id, "--json", "-q")
    raise AssertionError("the run did not finish")


def check_trial(cwd: Path, run_id: str, interrupted: int, reference: Any) -> None:
    expected, expected_routes, _ = reference
    assert essence(cwd, run_id) == expected
    assert boundaries(cwd, run_id) == expected_routes  # no boundary lost, none changed
    resumes = [
        line
        for line in (run_dir(cwd, run_id) / "events.jsonl").read_text().splitlines()
        if '"event":"loop_resume"' in line
    ]
    # each interruption is followed by a resume; one killed while starting up may not get far
    # enough to log its `loop_resume`, but the one that finished did
    assert (interrupted == 0) == (not resumes)
    assert len(resumes) <= interrupted
    done = ll_loop(cwd, "resume", run_id)
    assert done.returncode == 2
    assert "already finished" in done.stderr


@pytest.mark.parametrize("seed", range(4))
def test_kill_minus_nine_then_resume_ends_like_an_uninterrupted_run(
    tmp_path: Path, seed: int, reference: Any
) -> None:
    rng = random.Random(seed)
    run_id, interrupted = crash_and_resume(tmp_path, rng, kills=1 + seed % 2, span=reference[2])
    check_trial(tmp_path, run_id, interrupted, reference)


@pytest.mark.parametrize("seed", range(3))
def test_kill_inside_a_sub_loop_then_resume_continues_the_child(
    tmp_path: Path, seed: int, reference: Any
) -> None:
    rng = random.Random(100 + seed)
    run_id, interrupted = crash_and_resume(
        tmp_path, rng, kills=2, span=reference[2], entry="nest.yaml"
    )
    check_nested(tmp_path, run_id, interrupted, reference)


def check_nested(tmp_path: Path, run_id: str, interrupted: int, reference: Any) -> None:
    parent = state_of(tmp_path, run_id)
    assert parent["current"] == "done" and parent["steps"] == 1
    children = sorted(
        (run_dir(tmp_path, run_id) / "children").iterdir(), key=lambda d: int(d.name.split("-")[1])
    )
    last = json.loads((children[-1] / "state.json").read_text())
    assert essence_of(last) == reference[0]  # the child ended exactly like an uninterrupted run
    assert parent["captured"]["inner"]["steps"] == reference[0]["steps"]
    # A kill inside the child continued it: only a kill after the child finished (before the
    # parent's boundary) or before its first step starts another one.
    assert len(children) <= interrupted + 1
    lines = (run_dir(tmp_path, run_id) / "events.jsonl").read_text().splitlines()
    assert all(json.loads(line) for line in lines)


@pytest.mark.slow
def test_crash_soak_fifty_trials(tmp_path: Path, reference: Any) -> None:
    rng = random.Random(20261130)
    for trial in range(50):
        cwd = tmp_path / f"trial{trial}"
        cwd.mkdir()
        run_id, interrupted = crash_and_resume(cwd, rng, kills=rng.randint(1, 3), span=reference[2])
        check_trial(cwd, run_id, interrupted, reference)


@pytest.mark.slow
def test_crash_soak_inside_sub_loops_thirty_trials(tmp_path: Path, reference: Any) -> None:
    rng = random.Random(20261201)
    for trial in range(30):
        cwd = tmp_path / f"trial{trial}"
        cwd.mkdir()
        kills = rng.randint(1, 3)
        run_id, interrupted = crash_and_resume(
            cwd, rng, kills=kills, span=reference[2], entry="nest.yaml"
        )
        check_nested(cwd, run_id, interrupted, reference)


def test_a_torn_last_line_is_repaired_on_resume(tmp_path: Path) -> None:
    write(tmp_path / "crashy.yaml", LOOP)
    proc = spawn(tmp_path, "run", "crashy.yaml", "--json", "-q")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # kill it somewhere in the middle
        states = list((tmp_path / ".loops" / "runs").glob("*/state.json"))
        if states and state_of(tmp_path, states[0].parent.name)["steps"] >= 3:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    run_id = next((tmp_path / ".loops" / "runs").iterdir()).name
    log = run_dir(tmp_path, run_id) / "events.jsonl"
    with log.open("a") as handle:
        handle.write('{"ts":"2026-11-30T00:00:00Z","event":"action_sta')  # died mid-write
    status = json.loads(ll_loop(tmp_path, "status", run_id, "--json").stdout)
    assert status["status"] == "interrupted"
    done = ll_loop(tmp_path, "resume", run_id, "--json", "-q")
    assert result_of(done)["final_state"] == "done"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    resume = next(e for e in events if e["event"] == "loop_resume")
    assert resume["repaired_bytes"] == len('{"ts":"2026-11-30T00:00:00Z","event":"action_sta')


def test_resume_keeps_the_budget_the_run_started_with(tmp_path: Path) -> None:
    write(tmp_path / "crashy.yaml", LOOP)
    proc = spawn(tmp_path, "run", "crashy.yaml", "--max-steps", "6", "--json", "-q")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        states = list((tmp_path / ".loops" / "runs").glob("*/state.json"))
        if states and state_of(tmp_path, states[0].parent.name)["steps"] >= 2:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    run_id = next((tmp_path / ".loops" / "runs").iterdir()).name
    result = result_of(ll_loop(tmp_path, "resume", run_id, "--json", "-q"))
    assert result["terminated_by"] == "max_steps"
    assert result["steps"] == 6  # not the file's 40


HELD = """
name: held
initial: hold
scope: [work]
states:
  hold:
    action: |
      echo $$ >> action.pid
      while [ ! -f go ]; do sleep 0.05; done
    next: done
  done: {terminal: true}
"""


def test_two_resumes_of_one_run_at_once_run_it_once(tmp_path: Path) -> None:
    """Both used to read the run as interrupted and run it: each ended the other's action as
    an orphan (the run then failed) and both wrote its files."""
    write(tmp_path / "held.yaml", HELD)
    pids = tmp_path / "action.pid"
    proc = spawn(tmp_path, "run", "held.yaml", "--json", "-q")
    try:
        wait_until(lambda: written(pids), timeout=60)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        run_id = next((tmp_path / ".loops" / "runs").iterdir()).name
        both = [spawn(tmp_path, "resume", run_id, "--json", "-q") for _ in range(2)]
        wait_until(lambda: any(p.poll() is not None for p in both), timeout=60)
        (tmp_path / "go").touch()
        ended = [p.communicate(timeout=60) for p in both]
    finally:
        for line in pids.read_text().split():
            end_action_group(_pid_file(tmp_path, line))
    codes = sorted(p.returncode for p in both)
    assert codes == [0, 2], ended
    [refusal] = [json.loads(out) for p, (out, _) in zip(both, ended, strict=True) if p.returncode]
    assert re.search(r"is being resumed by another process|is still running", refusal["error"])
    kinds = [e["event"] for e in _events(tmp_path, run_id)]
    assert kinds.count("loop_resume") == 1
    # killed in its first step, the run is still started once: the resumed session logged a
    # second `loop_start` after its `loop_resume` (a reader counting starts saw two runs)
    assert kinds.count("loop_start") == 1 and kinds[0] == "loop_start"
    assert state_of(tmp_path, run_id)["result"]["final_state"] == "done"


def _pid_file(tmp_path: Path, pid: str) -> Path:
    path = tmp_path / f"pid-{pid}"
    path.write_text(pid + "\n")
    return path


def _events(cwd: Path, run_id: str) -> list[dict[str, Any]]:
    lines = (run_dir(cwd, run_id) / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _event(kind: str, depth: int = 0, **fields: Any) -> dict[str, Any]:
    return {
        "ts": "2026-12-02T00:00:00.000Z",
        "event": kind,
        "run_id": "r",
        "depth": depth,
        **fields,
    }


@pytest.mark.parametrize(
    ("story", "abandoned"),
    [
        ("start call route call call", 2),  # killed in the top-level run's second step
        ("start route start1 call1 route1 call1", 1),  # in a child that is continued
        ("start route start1 call1 route1 call1 done1", 2),  # the child ended: it runs anew
        ("start route start1 call1 stopped1 stopped resume resume1 call1", 1),  # stopped, resumed
        ("start call route", 0),
    ],
)
def test_the_calls_a_resume_makes_anew_are_those_after_the_boundary_it_continues_from(
    tmp_path: Path, story: str, abandoned: int
) -> None:
    from engine.runtime.resume import abandoned_calls

    kinds = {
        "start": ("loop_start", {}),
        "call": ("llm_call", {}),
        "route": ("route", {}),
        "done": ("loop_complete", {"terminated_by": "terminal"}),
        "stopped": ("loop_complete", {"terminated_by": "stopped"}),
        "resume": ("loop_resume", {}),
    }
    events = []
    for word in story.split():
        depth = int(word[-1]) if word[-1].isdigit() else 0
        kind, fields = kinds[word.rstrip("0123456789")]
        events.append(json.dumps(_event(kind, depth, **fields)))
    log = tmp_path / "events.jsonl"
    log.write_text("\n".join(events) + "\n")
    assert len(abandoned_calls(log)) == abandoned
    assert abandoned_calls(log).stop == story.count("call")  # the last ones of the log


FILLING = """
name: fill
initial: tick
scope: ["."]
max_steps: 60
states:
  tick:
    action: head -c 2000 /dev/zero | tr '\\\\0' x
    capture: out
    on_yes: $current
    on_no: done
  done: {terminal: true}
"""


def test_a_full_disk_is_said_in_one_sentence_and_the_run_resumes(tmp_path: Path) -> None:
    """A write the file system refuses (here a file-size limit: EFBIG, as ENOSPC on a full
    disk) was reported as an internal error of ll-loop. It is an error of the machine, exit 2,
    and the run resumes once there is room, its torn last event line repaired."""
    write(tmp_path / "fill.yaml", FILLING)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))

    ran = subprocess.run(
        [str(BIN / "ll-loop"), "run", "fill.yaml"],
        cwd=tmp_path,
        preexec_fn=small_files,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2, ran.stderr
    assert "internal error" not in ran.stderr
    assert "error: cannot write: File too large\n  hint: free space" in ran.stderr
    [run] = (tmp_path / ".loops" / "runs").iterdir()
    assert state_of(tmp_path, run.name)["steps"] < 60
    resumed = ll_loop(tmp_path, "resume", run.name, "--json")
    assert resumed.code == 3, resumed.stderr  # max_steps, as an uninterrupted run ends
    assert result_of(resumed)["steps"] == 60
    for line in (run / "events.jsonl").read_text().splitlines():
        json.loads(line)
