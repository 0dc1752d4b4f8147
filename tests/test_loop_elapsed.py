"""`${loop.elapsed_ms}`: the milliseconds a loop has run, a whole number (so arithmetic may use
it), counting the earlier sessions of a resumed run and not the time it lay stopped."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from tests.runs_helpers import (
    end_action_group,
    ll_loop,
    result_of,
    spawn,
    state_of,
    wait_until,
    write,
    written,
)

TIMED = """
name: timed
initial: nap
scope: [work]
states:
  nap:
    action: "sleep 0.3"
    next: tell
  tell:
    action: "echo $(( ${loop.elapsed_ms} / 100 ))"
    capture: tenths
    next: done
  done: {terminal: true}
"""


def test_elapsed_ms_is_the_runs_time_and_may_sit_in_arithmetic(tmp_path: Path) -> None:
    write(tmp_path / "timed.yaml", TIMED)
    checked = ll_loop(tmp_path, "validate", "timed.yaml", "--format", "json")
    assert checked.returncode == 0
    found = json.loads(checked.stdout)["loops"][0]["diagnostics"]
    assert [d for d in found if d["severity"] != "info"] == []
    ran = result_of(ll_loop(tmp_path, "run", "timed.yaml", "--json", "-q"))
    assert ran["outcome"] == "success", ran
    tenths = int(state_of(tmp_path, ran["run_id"])["captured"]["tenths"]["output"])
    assert 3 <= tenths <= ran["duration_ms"] // 100


RESUMED = """
name: resumed
initial: nap
scope: [work]
states:
  nap:
    action: "sleep 0.6"
    next: hold
  hold:
    action: |
      echo $$ > action.pid
      while [ ! -f go ]; do sleep 0.05; done
      echo ${loop.elapsed_ms}
    capture: elapsed
    next: done
  done: {terminal: true}
"""


def test_a_resumed_run_counts_its_earlier_session_not_the_time_it_lay_stopped(
    tmp_path: Path,
) -> None:
    write(tmp_path / "resumed.yaml", RESUMED)
    try:
        proc = spawn(tmp_path, "run", "resumed.yaml", "--json", "-q")
        wait_until(lambda: written(tmp_path / "action.pid"))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        end_action_group(tmp_path / "action.pid")
        run_id = next((tmp_path / ".loops" / "runs").iterdir()).name
        before = state_of(tmp_path, run_id)["elapsed_ms"]  # written when `nap` ended
        assert before >= 600
        time.sleep(1.5)  # stopped: not the run's time
        (tmp_path / "go").touch()
        resumed = result_of(ll_loop(tmp_path, "resume", run_id, "--json", "-q"))
        assert resumed["outcome"] == "success", resumed
        elapsed = int(state_of(tmp_path, run_id)["captured"]["elapsed"]["output"])
        assert before <= elapsed < before + 1000
    finally:
        end_action_group(tmp_path / "action.pid")
