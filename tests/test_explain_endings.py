"""`ll-loop explain` and the report on the ways a run ends that the sentence must name exactly:
retries used up, the budget with `on_max_steps`, the loop's time limit, a long cycle, an error
two sub-loops deep, a run killed inside a sub-loop; and text from actions that must be shown,
never obeyed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.report.runlog import read_trace
from tests.runs_helpers import (
    ll_loop,
    result_of,
    write,
)


def explained(cwd: Path, run_id: str) -> tuple[str, dict[str, Any]]:
    text = ll_loop(cwd, "explain", run_id)
    assert text.returncode == 0, text.stderr
    data = json.loads(ll_loop(cwd, "explain", run_id, "--format", "json").stdout)
    return text.stdout, data


def run(cwd: Path, name: str, text: str) -> str:
    write(cwd / f"{name}.yaml", text)
    return str(result_of(ll_loop(cwd, "run", f"{name}.yaml", "--json", "--quiet"))["run_id"])


def report(cwd: Path, run_id: str) -> str:
    done = ll_loop(cwd, "report", run_id, "--html", "--out", "r.html")
    assert done.returncode == 0, done.stderr
    return (cwd / "r.html").read_text()


SPIN = """
name: spin
initial: poll
scope: ["."]
max_steps: {steps}
{extra}
states:
  poll:
    action: "false"
    on_yes: done
    on_no: nap
  nap:
    action: "true"
    next: poll
  cleanup:
    action: echo cleaning
    next: done
  done:
    terminal: true
"""


def test_retries_used_up_name_the_state_whose_retries_ran_out(tmp_path: Path) -> None:
    run_id = run(
        tmp_path,
        "retries",
        """
        name: retries
        initial: check
        scope: ["."]
        states:
          check:
            action: "false"
            on_yes: done
            on_no: fix
            max_retries: 2
            on_retry_exhausted: give_up
          fix:
            action: "true"
            next: check
          done:
            terminal: true
          give_up:
            terminal: true
            failure: true
        """,
    )
    text, data = explained(tmp_path, run_id)
    # it was check's retries that ran out, not fix's; the last hop went to give_up, not check
    assert data["reason"] == (
        "reached the failure terminal 'give_up' from state 'fix' (verdict yes, routed to "
        "'check', which had used its 2 retries: on_retry_exhausted) at step 6 of 50"
    )
    assert "      6  fix yes → give_up ('check' had used its 2 retries)" in text
    last = data["path"][-1]["steps"][-1]
    assert (last["target"], last["note"]) == ("give_up", "'check' had used its 2 retries")
    assert "give_up (&#x27;check&#x27; had used its 2 retries)" in report(tmp_path, run_id)


def test_on_max_steps_is_named_and_the_cycle_before_it_kept(tmp_path: Path) -> None:
    run_id = run(tmp_path, "spin", SPIN.format(steps=7, extra="on_max_steps: cleanup"))
    text, data = explained(tmp_path, run_id)
    assert data["reason"] == (
        "used all 7 steps without reaching a terminal; the last 7 steps went round poll → nap; "
        "then on_max_steps ran 'cleanup' (yes)"
    )
    assert "cleanup yes → (on_max_steps; the run ended)" in text
    page = report(tmp_path, run_id)
    row = page[page.index('<tr data-state="cleanup">') :]
    row = row[: row.index("</tr>")]
    assert "(on_max_steps; the run ended)" in row and "interrupted" not in row


def test_a_long_cycle_is_counted_from_where_it_began(tmp_path: Path) -> None:
    run_id = run(tmp_path, "spin", SPIN.format(steps=60, extra=""))
    _, data = explained(tmp_path, run_id)
    assert data["reason"] == (
        "used all 60 steps without reaching a terminal; the last 60 steps went round poll → nap"
    )


def test_the_loops_time_limit_is_named_with_the_step_it_cut(tmp_path: Path) -> None:
    run_id = run(
        tmp_path,
        "slow",
        """
        name: slow
        initial: a
        scope: ["."]
        timeout: 1
        states:
          a:
            action: sleep 5
            next: done
          done:
            terminal: true
        """,
    )
    text, data = explained(tmp_path, run_id)
    assert data["reason"] == (
        "its time limit (1s) ran out during step 1 of 50, in state 'a'; its action was ended"
    )
    assert "a error → (the loop's time limit ran out)" in text


ANSI = """
name: ansi
initial: a
scope: ["."]
states:
  a:
    action: |
      printf '\\033[31mRED\\033[0m <b>bold</b> \\007bell\\n' >&2
      exit 3
    next: done
  done:
    terminal: true
"""


def test_control_characters_from_an_action_are_shown_not_sent(tmp_path: Path) -> None:
    run_id = run(tmp_path, "ansi", ANSI)
    text, data = explained(tmp_path, run_id)
    assert data["stderr_tail"] == ["\x1b[31mRED\x1b[0m <b>bold</b> \x07bell"]  # JSON: as is
    assert "\x1b" not in text and "\x07" not in text
    assert "  | \\x1b[31mRED\\x1b[0m <b>bold</b> \\x07bell" in text
    page = report(tmp_path, run_id)
    assert "\x1b" not in page and "\x07" not in page
    assert "\\x1b[31mRED\\x1b[0m &lt;b&gt;bold&lt;/b&gt; \\x07bell" in page


def test_a_damaged_event_does_not_stand_in_for_the_step() -> None:
    events: list[dict[str, Any]] = [
        {"event": "loop_start", "depth": 0, "loop": "x", "initial": "a", "max_steps": 5},
        {"event": "state_enter", "depth": 0, "step": 1, "state": "a"},
        {"event": "state_enter", "depth": "x", "step": "y", "state": 5},  # no event of ours
        {"event": "evaluate", "depth": 0, "step": 1, "state": "a", "verdict": "yes"},
        {"event": "route", "depth": 0, "step": 1, "state": "a", "verdict": "yes", "target": "b"},
    ]
    trace = read_trace(events)
    assert trace is not None
    assert [(s.state, s.verdict, s.target) for s in trace.steps] == [("a", "yes", "b")]
