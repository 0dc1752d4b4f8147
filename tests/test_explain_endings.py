"""`ll-loop explain` and the report on the ways a run ends that the sentence must name exactly:
retries used up, the budget with `on_max_steps`, the loop's time limit, a long cycle, an error
two sub-loops deep, a run killed inside a sub-loop; and text from actions that must be shown,
never obeyed."""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

from engine.report.runlog import read_trace
from tests.loopback_server import (
    LoopbackServer,
    Reply,
    error_reply,
    text_reply,
    verdict_reply,
)
from tests.runs_helpers import (
    end_action_group,
    ll_loop,
    result_of,
    spawn,
    wait_until,
    write,
    written,
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
    assert data["steps_by_state"] == {"poll": 4, "nap": 3}  # 7 steps: cleanup is not one
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
    loop = tmp_path / "slow.yaml"  # edited since: its timeout is not the run's, whose
    loop.write_text(loop.read_text().replace("timeout: 1", "timeout: 9"))  # events keep it
    _, data = explained(tmp_path, run_id)
    assert str(data["reason"]).startswith("its time limit (1s) ran out during step 1 of 50")


def test_a_limit_too_large_for_a_float_in_the_log_is_no_crash(tmp_path: Path) -> None:
    """loop_start records max_cost_usd and timeout (6aa2439), action_start its timeout; a log
    whose number is a whole number too large for a float (a hand edit, a log from elsewhere:
    JSON has no limit) made explain and the report an internal error (OverflowError: int too
    large to convert to float). Such a number is no limit the run could have had: ignored."""
    run_id = run(
        tmp_path,
        "quick",
        """
        name: quick
        initial: a
        scope: ["."]
        timeout: 60
        max_cost_usd: 1
        states:
          a:
            action: "true"
            timeout: 5
            next: done
          done:
            terminal: true
        """,
    )
    log = tmp_path / ".loops" / "runs" / run_id / "events.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    for event in events:
        for key in ("max_cost_usd", "timeout"):
            if key in event and event["event"] in ("loop_start", "action_start"):
                event[key] = 10**400
    log.write_text("".join(json.dumps(event) + "\n" for event in events))
    _, data = explained(tmp_path, run_id)
    assert data["outcome"] == "success", data
    assert "success" in report(tmp_path, run_id)


def test_a_time_limit_passed_while_judging_names_the_step_not_the_next_state(
    tmp_path: Path,
) -> None:
    """The judge of `work` ran past the loop's 1 s: the run ended at the boundary after it,
    and explain said the limit `ran out in state 'after'`, a state that never ran."""
    run_id = run(
        tmp_path,
        "judged",
        """
        name: judged
        initial: work
        scope: ["."]
        timeout: 1
        states:
          work:
            action: "true"
            evaluate:
              type: assessment
              expectations:
                - {type: test, command: sleep 2}
            on_yes: after
            on_no: after
            on_error: after
          after:
            action: "true"
            next: done
          done:
            terminal: true
        """,
    )
    _, data = explained(tmp_path, run_id)
    reason = str(data["reason"])
    assert data["terminated_by"] == "timeout"
    assert reason.startswith("its time limit (1s) had run out when step 1 of 50 (state 'work')")
    assert reason.endswith("into the run; it ended before state 'after'")


def test_an_error_two_sub_loops_deep_is_said_once_with_where_it_was(tmp_path: Path) -> None:
    write(
        tmp_path / "inner.yaml",
        """
        name: inner
        initial: go
        scope: ["."]
        states:
          go:
            action: echo deep fail >&2; exit 3
            next: done
          done:
            terminal: true
        """,
    )
    write(
        tmp_path / "middle.yaml",
        """
        name: middle
        initial: call
        scope: ["."]
        states:
          call:
            loop: inner.yaml
            on_yes: done
            on_no: done
          done:
            terminal: true
        """,
    )
    run_id = run(
        tmp_path,
        "outer",
        """
        name: outer
        initial: top
        scope: ["."]
        states:
          top:
            loop: middle.yaml
            on_yes: done
            on_no: done
          done:
            terminal: true
        """,
    )
    text, data = explained(tmp_path, run_id)
    reason = str(data["reason"])
    assert reason.count("state 'go' failed (action exited with code 3)") == 1, reason
    assert reason.endswith(
        " — inside sub-loop 'middle', state 'call' → sub-loop 'inner', state 'go'"
    )
    assert data["stderr_tail"] == ["deep fail"]
    assert data["stderr_from"] == "sub-loop 'middle' → sub-loop 'inner' → state 'go'"
    assert "  | deep fail" in text
    assert "deep fail" in report(tmp_path, run_id)


def test_a_sub_loop_that_timed_out_two_deep_is_named_under_its_parent(tmp_path: Path) -> None:
    """The outer run ends at `bad` because `middle` did, because `inner` ran out of time: the
    explanation once named only `middle`'s ending, which reads the same as a plain failure."""
    write(
        tmp_path / "inner.yaml",
        """
        name: inner
        initial: go
        scope: ["."]
        states:
          go:
            action: sleep 30
            next: done
          done:
            terminal: true
        """,
    )
    write(
        tmp_path / "middle.yaml",
        """
        name: middle
        initial: call
        scope: ["."]
        states:
          call:
            loop: inner.yaml
            timeout: 1
            on_yes: done
            on_no: bad
          done:
            terminal: true
          bad:
            terminal: true
            failure: true
        """,
    )
    run_id = run(
        tmp_path,
        "outer",
        """
        name: outer
        initial: top
        scope: ["."]
        states:
          top:
            loop: middle.yaml
            on_yes: done
            on_no: bad
          done:
            terminal: true
          bad:
            terminal: true
            failure: true
        """,
    )
    text, _ = explained(tmp_path, run_id)
    inner = "  sub-loop at step 1 (call): inner, its time limit ran out during step 1"
    assert "sub-loop at step 1 (top): middle, reached the failure terminal 'bad'" in text
    assert inner in text, text
    page = report(tmp_path, run_id)
    assert "inner</b> — its time limit ran out during step 1" in page
    # the sub-loop step's row is as long as its child's run, not its own (absent) action's 0
    row = re.search(r'<tr data-state="top">(?:<td>[^<]*</td>){3}<td><span[^>]*>no</span></td>'
                    r"<td>bad</td><td>([0-9.]+) s</td>", page)  # fmt: skip
    assert row is not None and float(row.group(1)) >= 1.0


def test_a_run_killed_inside_a_sub_loop_counts_the_childs_steps_once(tmp_path: Path) -> None:
    write(
        tmp_path / "child.yaml",
        """
        name: child
        initial: pre
        scope: ["."]
        states:
          pre:
            action: echo pre
            next: wait
          wait:
            action: echo $$ > "${run.dir}/../../../wait.pid"; sleep 30
            next: done
          done:
            terminal: true
        """,
    )
    write(
        tmp_path / "parent.yaml",
        """
        name: parent
        initial: call
        scope: ["."]
        states:
          call:
            loop: child.yaml
            on_yes: done
            on_no: done
          done:
            terminal: true
        """,
    )
    proc = spawn(tmp_path, "run", "parent.yaml", "--quiet")
    runs = tmp_path / ".loops" / "runs"
    try:
        wait_until(lambda: runs.is_dir() and any(written(p) for p in runs.glob("*/wait.pid")))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        run_id = next(runs.iterdir()).name
        _, data = explained(tmp_path, run_id)
        child = data["children"][0]
        _, own = explained(tmp_path, str(runs / run_id / "children" / "call-1"))
        # one step (pre) ended; the second (wait) was cut: it is not counted in either view
        assert child["steps"] == own["steps"] == 1
        # the child's own explanation says whose child it is (its state.json has the top id)
        assert own["run_id"] == run_id and own["child_dir"] == child["child_dir"]
        assert "in state 'wait' after 1 of 50 steps" in str(child["reason"])
    finally:
        proc.kill()
        proc.wait(timeout=10)
        end_action_group(next(runs.glob("*/wait.pid"), Path("/none")))


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


def test_a_step_killed_twice_keeps_its_number_on_the_path(tmp_path: Path) -> None:
    write(
        tmp_path / "slow.yaml",
        """
        name: slow
        initial: prepare
        scope: ["."]
        max_steps: 10
        states:
          prepare:
            action: echo prepared
            next: wait
          wait:
            action: |
              echo $$ >> "${run.dir}/../wait.pids"
              test -f "${run.dir}/../go" || sleep 30
            next: done
          done:
            terminal: true
        """,
    )
    runs = tmp_path / ".loops" / "runs"

    def pids() -> list[int]:
        logs = list(runs.glob("*/wait.pids")) if runs.is_dir() else []
        return [int(p) for p in logs[0].read_text().split()] if logs else []

    try:
        proc = spawn(tmp_path, "run", "slow.yaml", "--quiet")
        wait_until(lambda: len(pids()) == 1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        run_id = next(runs.iterdir()).name
        proc = spawn(tmp_path, "resume", run_id, "--quiet")
        wait_until(lambda: len(pids()) == 2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        (runs / run_id / "go").touch()
        assert ll_loop(tmp_path, "resume", run_id, "--quiet").returncode == 0
        text, data = explained(tmp_path, run_id)
        # the two cut attempts were both step 2, as was the one that ended: not steps 2-3
        assert "        2  (wait ? → (interrupted)) ×2\n        2  wait yes → done\n" in text
        assert [(p["first_step"], p["last_step"]) for p in data["path"]] == [(1, 1), (2, 2), (2, 2)]
        assert "Repeated stretches: 2: (wait) ×2<" in report(tmp_path, run_id)
    finally:
        for pid in pids():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


JUDGED = """
name: judged
initial: check
scope: ["."]
states:
  check:
    action: echo "lint 0 problems"
    evaluate:
      type: llm_structured
      prompt: "Is the lint output clean? Quote the summary line."
    on_yes: done
    on_no: done
    on_error: done
  done: {terminal: true}
"""


def test_a_replayed_run_says_its_answers_were_replayed(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = verdict_reply("yes", evidence="lint 0 problems", input_tokens=10_000)
    live = run(tmp_path, "judged", JUDGED)
    again = ll_loop(tmp_path, "run", "judged.yaml", "--replay", live, "--json", "--quiet")
    replay_id = str(result_of(again)["run_id"])
    assert len(loopback.requests) == 1  # the replay called nothing
    text, data = explained(tmp_path, replay_id)
    said = (
        f"the model's answers came from run {live}'s llm.jsonl (--replay): no call was made "
        "(its costs are those recorded then), and its judges said what they said then"
    )
    assert f"replay: {said}" in text.splitlines()
    assert str(data["replay_from"]).endswith(live)
    assert f"Replayed: {said}." in report(tmp_path, replay_id).replace("&#x27;", "'")
    _, original = explained(tmp_path, live)
    assert original["replay_from"] is None


def test_a_replay_that_missed_does_not_say_its_judges_said_what_they_said(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A replay whose judged text changed, so the log had no answer for it (a miss, an error
    verdict, here routed to a success terminal): explain and the report said the run's judges
    `said what they said then`; they now say how many requests had no recorded answer."""
    loopback.default = verdict_reply("yes", evidence="lint 0 problems", input_tokens=10_000)
    live = run(tmp_path, "judged", JUDGED)
    write(tmp_path / "judged.yaml", JUDGED.replace("lint 0 problems", "lint 1 problem"))
    again = ll_loop(tmp_path, "run", "judged.yaml", "--replay", live, "--json", "--quiet")
    replay_id = str(result_of(again)["run_id"])
    text, data = explained(tmp_path, replay_id)
    said = (
        f"the model's answers came from run {live}'s llm.jsonl (--replay): no call was made; "
        "1 of 1 requests had no answer recorded there (a replay miss is an error)"
    )
    assert f"replay: {said}" in text.splitlines()
    assert data["replay_misses"] == 1
    assert f"Replayed: {said}." in html.unescape(report(tmp_path, replay_id))


def test_a_replayed_failure_is_no_replay_miss(loopback: LoopbackServer, tmp_path: Path) -> None:
    """A replay of a run whose judge's calls failed (HTTP 500, recorded so) replays those
    failures: the log had answers for them, so no request is called a miss."""
    loopback.default = error_reply(500)
    live = run(tmp_path, "judged", JUDGED)
    again = ll_loop(tmp_path, "run", "judged.yaml", "--replay", live, "--json", "--quiet")
    _, data = explained(tmp_path, str(result_of(again)["run_id"]))
    assert data["replay_misses"] == 0


def test_a_run_answered_from_the_cache_says_so(loopback: LoopbackServer, tmp_path: Path) -> None:
    """A `--cache` run's judges looked live, their answers as if the model had just given
    them, at $0; a replayed run already said where its answers came from."""
    loopback.default = verdict_reply("yes", evidence="lint 0 problems", input_tokens=10_000)
    run(tmp_path, "judged", JUDGED)  # writes judged.yaml: a live run, no cache
    live = ll_loop(tmp_path, "run", "judged.yaml", "--cache", "--json", "--quiet")
    cached = ll_loop(tmp_path, "run", "judged.yaml", "--cache", "--json", "--quiet")
    assert len(loopback.requests) == 2  # the first --cache run called, the second did not
    text, data = explained(tmp_path, str(result_of(cached)["run_id"]))
    said = "1 of 1 model answers came from the cache (--cache): no call was made for them"
    assert any(line.startswith(f"cache: {said}") for line in text.splitlines())
    assert data["cached_calls"] == 1
    assert f"Cache: {said}" in report(tmp_path, str(result_of(cached)["run_id"]))
    _, paid = explained(tmp_path, str(result_of(live)["run_id"]))
    assert paid["cached_calls"] == 0


def test_a_state_json_without_its_result_is_explained_from_the_log(tmp_path: Path) -> None:
    """A run directory written by another version (or edited): its state.json says finished
    but keeps no result. The log's loop_complete tells how it ended; without that too, the
    sentence says it is not recorded (it said `ended: None (None)`)."""
    run_id = run(tmp_path, "spin", SPIN.format(steps=4, extra=""))
    folder = tmp_path / ".loops" / "runs" / run_id
    saved = json.loads((folder / "state.json").read_text())
    del saved["result"]
    (folder / "state.json").write_text(json.dumps(saved))
    text, data = explained(tmp_path, run_id)
    assert data["reason"] == (
        "used all 4 steps without reaching a terminal; the last 4 steps went round poll → nap"
    )
    assert " · inconclusive (max_steps) · 4/4 steps · " in text.splitlines()[0]
    log = folder / "events.jsonl"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))  # no loop_complete
    text, data = explained(tmp_path, run_id)
    assert data["reason"] == (
        "finished in state 'poll' after 4 steps; neither state.json nor the event log records "
        "how it ended"
    )
    assert "None" not in text
    assert (
        "before the run&#x27;s end (state.json records 4 steps); the path below is incomplete"
        in (report(tmp_path, run_id))
    )


def test_a_run_without_a_readable_state_json_is_told_from_its_log(tmp_path: Path) -> None:
    run_id = run(tmp_path, "spin", SPIN.format(steps=4, extra=""))
    folder = tmp_path / ".loops" / "runs" / run_id
    (folder / "state.json").write_text('{"run_id": ')  # damaged, and no state.json.tmp
    text, data = explained(tmp_path, run_id)
    assert data["reason"] == (
        "used all 4 steps without reaching a terminal; the last 4 steps went round poll → nap"
    )
    assert "note: its state.json is damaged (it does not parse); this is the event log's " in text
    assert data["state_unreadable"] and data["steps"] == 4
    assert "the event log&#x27;s account alone" in report(tmp_path, run_id)
    (folder / "state.json").unlink()
    log = folder / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[: len(lines) // 2]))  # and a log that stops in the middle
    text, data = explained(tmp_path, run_id)
    assert data["status"] == "unknown"
    assert str(data["reason"]).startswith("the event log stops in step 2 of 4, state 'nap', ")
    assert "note: its state.json is missing; this is the event log's account alone" in text
    log.write_text("")  # nothing left to tell: the refusal it always was
    done = ll_loop(tmp_path, "explain", run_id)
    assert done.returncode == 2 and "has no state.json" in done.stderr


def test_an_on_max_steps_terminal_is_named(tmp_path: Path) -> None:
    """`on_max_steps: done` where done is a terminal: nothing runs, the run ends in 'done'
    (still inconclusive); explain said only 'used all 7 steps without reaching a terminal'."""
    run_id = run(tmp_path, "spin", SPIN.format(steps=7, extra="on_max_steps: done"))
    _, data = explained(tmp_path, run_id)
    assert (data["final_state"], data["terminated_by"]) == ("done", "max_steps")
    assert data["reason"] == (
        "used all 7 steps without reaching a terminal; the last 7 steps went round poll → nap; "
        "on_max_steps then sent it to the terminal 'done' (still inconclusive)"
    )


SLEEPY = """
name: sleepy
initial: build
scope: ["."]
states:
  build:
    action: sleep 5
    timeout: 1
    next: done
{on_error}
  done:
    terminal: true
  broken:
    terminal: true
    failure: true
"""


def test_an_actions_own_timeout_is_named_with_its_limit(tmp_path: Path) -> None:
    run_id = run(tmp_path, "sleepy", SLEEPY.format(on_error=""))
    _, data = explained(tmp_path, run_id)
    assert data["reason"] == (
        "ended with an error: state 'build' failed (action timed out) and has no on_error "
        "route; its action ran past its 1s timeout"
    )
    run_id = run(tmp_path, "sleepy", SLEEPY.format(on_error="    on_error: broken"))
    _, data = explained(tmp_path, run_id)
    assert data["reason"] == (
        "reached the failure terminal 'broken' from state 'build' (verdict error: its action "
        "ran past its 1s timeout) at step 1 of 50"
    )


def test_an_event_log_that_cannot_be_read_is_a_note_not_a_crash(tmp_path: Path) -> None:
    """events.jsonl replaced by a directory: explain and report said `internal error:
    IsADirectoryError`; the run is told from state.json, as with a lost log."""
    run_id = run(tmp_path, "spin", SPIN.format(steps=1, extra=""))
    log = tmp_path / ".loops" / "runs" / run_id / "events.jsonl"
    log.unlink()
    log.mkdir()
    text, data = explained(tmp_path, run_id)
    assert (
        data["reason"] == "used its only step without reaching a terminal; it ended in state 'nap'"
    )
    assert " · 1 step · " in text.splitlines()[0]  # no budget known without the log: not "1 steps"
    assert "note: the event log is missing, empty or unreadable; state.json records 1 step" in text
    assert "the event log is missing, empty or unreadable" in report(tmp_path, run_id)


def test_an_event_log_that_is_no_file_does_not_hang_explain(tmp_path: Path) -> None:
    """A FIFO in place of events.jsonl: opening it waits for a writer that never comes, so
    explain and report hung; a log that is no regular file is not read."""
    run_id = run(tmp_path, "spin", SPIN.format(steps=2, extra=""))
    log = tmp_path / ".loops" / "runs" / run_id / "events.jsonl"
    log.unlink()
    os.mkfifo(log)
    for args in (("explain", run_id), ("report", run_id, "--html", "--out", "r.html")):
        done = ll_loop(tmp_path, *args, process=True, timeout=20)  # TimeoutExpired: it hung
        assert done.returncode == 0, done.stderr
    assert "the event log is missing, empty or unreadable" in (tmp_path / "r.html").read_text()


def test_a_judge_that_failed_is_not_called_a_sub_loop(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A judge whose call failed, with no on_error: the run's error (and so explain) said
    `its loop None failed: call failed: …`, as if a sub-loop had failed."""
    loopback.default = error_reply(400)
    loop = JUDGED.replace("    on_error: done\n", "    on_cannot_judge: done\n")
    write(tmp_path / "judged.yaml", loop)
    ended = result_of(ll_loop(tmp_path, "run", "judged.yaml", "--json", "--quiet"))
    _, data = explained(tmp_path, str(ended["run_id"]))
    assert data["reason"] == (
        "ended with an error: state 'check' produced verdict 'error' (call failed: HTTP 400: "
        "scripted 400 (not retryable)), which has no route"
    )
    assert ended["error"] in str(data["reason"])


def test_a_line_break_in_a_quoted_error_does_not_start_a_line_of_its_own(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """An API's error message is quoted in the reason: its line break printed a second
    `why: reached the success terminal 'done'` line under the true one."""
    forged = "bad\nwhy: reached the success terminal 'done'"
    error = {"type": "invalid_request_error", "message": forged}
    loopback.default = Reply(status=400, body={"type": "error", "error": error})
    loop = JUDGED.replace("    on_error: done\n", "    on_cannot_judge: done\n")
    write(tmp_path / "judged.yaml", loop)
    ended = result_of(ll_loop(tmp_path, "run", "judged.yaml", "--json", "--quiet"))
    text, data = explained(tmp_path, str(ended["run_id"]))
    assert forged in str(data["reason"])  # the JSON keeps the message as it was
    whys = [line for line in text.splitlines() if line.startswith("why: ")]
    assert len(whys) == 1 and "HTTP 400: bad why: reached" in whys[0], text


PAID_CHILD = """
name: child
initial: ask
scope: ["."]
states:
  ask:
    action_type: prompt
    action: "Write a haiku"
    timeout: 30
    next: wait
  wait:
    action: echo $$ > "${run.dir}/../../../wait.pid"; test -f "${run.dir}/../../../go" || sleep 30
    next: done
  done:
    terminal: true
"""


def test_a_continued_sub_loop_is_paid_for_once(loopback: LoopbackServer, tmp_path: Path) -> None:
    """Killed inside a child after its $0.30 prompt, then resumed: the child is continued, not
    run again, and the run cost $0.30; explain said `call $0.6000 (2 calls)`, counting the
    child under both the cut attempt and the one that continued it."""
    loopback.default = text_reply("a poem", input_tokens=0, output_tokens=20_000)
    write(tmp_path / "child.yaml", PAID_CHILD)
    write(
        tmp_path / "parent.yaml",
        """
        name: parent
        initial: call
        scope: ["."]
        states:
          call:
            loop: child.yaml
            on_yes: done
            on_no: done
          done:
            terminal: true
        """,
    )
    proc = spawn(tmp_path, "run", "parent.yaml", "--quiet")
    runs = tmp_path / ".loops" / "runs"
    try:
        wait_until(lambda: runs.is_dir() and any(written(p) for p in runs.glob("*/wait.pid")))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        run_id = next(runs.iterdir()).name
        (runs / run_id / "go").touch()
        ended = result_of(ll_loop(tmp_path, "resume", run_id, "--json", "--quiet"))
        assert ended["cost_usd"] == 0.3 and len(loopback.requests) == 1
        text, data = explained(tmp_path, run_id)
        assert (data["cost_by_state"], data["calls_by_state"]) == ({"call": 0.3}, {"call": 1})
        assert "cost by state: call $0.3000 (1 call)" in text
        page = report(tmp_path, run_id)
        assert page.count("$0.3000") >= 1 and "$0.6000" not in page
    finally:
        proc.kill()
        proc.wait(timeout=10)
        end_action_group(next(runs.glob("*/wait.pid"), Path("/none")))


REVIEW = """
name: review
initial: check
scope: ["."]
max_steps: 4
states:
  check:
    action: echo "lint 2 problems"
    evaluate:
      type: llm_structured
      prompt: "Is the lint output clean? Quote the summary line."
    on_yes: done
    on_no: fix
    on_error: done
  fix:
    action: echo fixed
    next: check
  done: {terminal: true}
"""


def test_a_long_judged_runs_report_stays_small(loopback: LoopbackServer, tmp_path: Path) -> None:
    """20000 steps, 10000 of them judged: the step table and timeline were capped, the judges
    table listed every verdict (megabytes); it keeps the first and last ones, as the steps."""
    loopback.default = verdict_reply("no", evidence="lint 2 problems", reason="two left " * 20)
    run_id = run(tmp_path, "review", REVIEW)
    log = tmp_path / ".loops" / "runs" / run_id / "events.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    start, body, end = events[0], events[1:-1], events[-1]  # two rounds: 4 steps, 2 judged
    with log.open("w") as out:
        out.write(json.dumps(start) + "\n")
        for round_ in range(5000):
            for event in body:
                out.write(json.dumps({**event, "step": event["step"] + 4 * round_}) + "\n")
        out.write(json.dumps(end) + "\n")
    _, data = explained(tmp_path, run_id)
    assert len(data["judgements"]) == 10000  # JSON keeps them all
    page = report(tmp_path, run_id)
    assert len(page) < 1_500_000, len(page)
    assert "9600 judged steps in the middle are not listed" in page


def test_an_error_routed_to_a_terminal_says_what_the_error_was(tmp_path: Path) -> None:
    run_id = run(
        tmp_path,
        "build",
        """
        name: build
        initial: compile
        scope: ["."]
        states:
          compile:
            action: exit 3
            on_yes: done
            on_no: done
            on_error: broken
          done:
            terminal: true
          broken:
            terminal: true
            failure: true
        """,
    )
    _, data = explained(tmp_path, run_id)
    assert data["reason"] == (
        "reached the failure terminal 'broken' from state 'compile' (verdict error: action "
        "exited with code 3 (only 0 and 1 are verdicts)) at step 1 of 50"
    )


def test_an_output_left_null_says_why(tmp_path: Path) -> None:
    """A loop whose `outputs:` value could not be computed returns it as null (to a parent,
    too); the event log says why, and explain and the report said nothing."""
    run_id = run(
        tmp_path,
        "outs",
        """
        name: outs
        initial: a
        scope: ["."]
        outputs:
          answer: ${captured.nothing.output}
        states:
          a:
            action: echo hi
            next: done
          done:
            terminal: true
        """,
    )
    text, data = explained(tmp_path, run_id)
    why = (
        "answer: cannot interpolate ${captured.nothing.output}: missing value: 'nothing' is not set"
    )
    assert data["output_errors"] == [f"{why} (nothing is set)"]
    assert f"output not computed (null): {why}" in text
    assert "Output not computed (null): answer: cannot interpolate" in report(tmp_path, run_id)


def test_a_stopped_step_reads_stopped_not_interrupted(tmp_path: Path) -> None:
    """`ll-loop stop` ends a run gracefully; its cut step read `(interrupted)`, the word for a
    run whose process was killed."""
    write(
        tmp_path / "slow.yaml",
        """
        name: slow
        initial: wait
        scope: ["."]
        states:
          wait:
            action: echo $$ > "${run.dir}/../wait.pid"; sleep 30
            next: done
          done:
            terminal: true
        """,
    )
    proc = spawn(tmp_path, "run", "slow.yaml", "--quiet")
    runs = tmp_path / ".loops" / "runs"
    try:
        wait_until(lambda: runs.is_dir() and any(written(p) for p in runs.glob("*/wait.pid")))
        run_id = next(runs.iterdir()).name
        assert ll_loop(tmp_path, "stop", run_id).returncode == 0
        proc.wait(timeout=20)
        text, data = explained(tmp_path, run_id)
        assert data["status"] == "stopped"
        assert "        1  wait ? → (stopped)" in text
        assert "(stopped)" in report(tmp_path, run_id)
        # resumed and finished, the attempt the stop cut still reads stopped, not killed
        end_action_group(next(runs.glob("*/wait.pid"), Path("/none")))
        loop = tmp_path / "slow.yaml"
        loop.write_text(loop.read_text().replace("sleep 30", "true"))
        assert ll_loop(tmp_path, "resume", run_id, "--quiet").returncode == 0
        text, data = explained(tmp_path, run_id)
        assert data["status"] == "finished"
        assert "        1  wait ? → (stopped)" in text and "(interrupted)" not in text
        page = report(tmp_path, run_id)
        assert "(stopped)" in page and "(interrupted)" not in page
    finally:
        proc.kill()
        proc.wait(timeout=10)
        end_action_group(next(runs.glob("*/wait.pid"), Path("/none")))


def test_the_cycle_of_an_on_max_steps_ending_is_the_paths_last_stretch(tmp_path: Path) -> None:
    """The reason's cycle and the path come from one fold: the stretch the reason names is the
    path's last repeated one, counted to its last budgeted step, and the on_max_steps step
    stands alone after it (an odd budget leaves one more poll after the whole rounds)."""
    run_id = run(tmp_path, "spin", SPIN.format(steps=9, extra="on_max_steps: cleanup"))
    _, data = explained(tmp_path, run_id)
    *_, cycle, extra, cleanup = data["path"]
    assert [s["state"] for s in cleanup["steps"]] == ["cleanup"] and cleanup["times"] == 1
    assert (cycle["first_step"], cycle["last_step"], cycle["times"]) == (1, 8, 4)
    assert [s["state"] for s in extra["steps"]] == ["poll"] and extra["last_step"] == 9
    rounds = " → ".join(s["state"] for s in cycle["steps"])
    count = extra["last_step"] - cycle["first_step"] + 1
    assert data["reason"] == (
        f"used all 9 steps without reaching a terminal; the last {count} steps went round "
        f"{rounds}; then on_max_steps ran 'cleanup' (yes)"
    )


def test_a_steps_bar_and_row_last_until_its_judges_are_done(tmp_path: Path) -> None:
    """The timeline drew the last step only as long as its action ran: a run whose one step
    was judged for a second read `step 1 work: yes (0.00 s)` on an axis of 0.00 s."""
    run_id = run(
        tmp_path,
        "judged",
        """
        name: judged
        initial: work
        scope: ["."]
        states:
          work:
            action: "true"
            evaluate:
              type: assessment
              expectations:
                - {type: test, command: sleep 1}
            on_yes: done
            on_no: done
            on_error: done
          done:
            terminal: true
        """,
    )
    page = report(tmp_path, run_id)
    bar = re.search(r"step 1 work: yes \(([0-9.]+) s\)", page)
    assert bar is not None and float(bar.group(1)) >= 1.0
    # so does its row in the step table (it showed the action's own 0.00 s)
    row = re.search(r'<tr data-state="work">(?:<td>[^<]*</td>){3}<td><span[^>]*>yes</span></td>'
                    r"<td>done</td><td>([0-9.]+) s</td>", page)  # fmt: skip
    assert row is not None and float(row.group(1)) >= 1.0, page


def test_a_long_state_name_is_cut_visibly_in_the_timeline(tmp_path: Path) -> None:
    """Lane labels were cut at 22 characters with no mark: `remediate_issue_quality` read
    `remediate_issue_qualit`, a name no state has."""
    run_id = run(
        tmp_path,
        "long",
        """
        name: long
        initial: remediate_issue_quality
        scope: ["."]
        states:
          remediate_issue_quality:
            action: "true"
            next: done
          done:
            terminal: true
        """,
    )
    page = report(tmp_path, run_id)
    lane = re.search(r'<svg class="timeline".*?<text x="4" y="18">(.*?)</text>', page)
    assert lane is not None
    assert lane.group(1) == "<title>remediate_issue_quality</title>remediate_issue_quali…"


JUDGED_CHILD = """
name: kid
initial: check
scope: ["."]
states:
  check:
    action: echo "lint 2 problems"
    evaluate:
      type: llm_structured
      prompt: "Is the lint output clean? Quote the summary line."
    on_yes: clean
    on_no: dirty
    on_error: dirty
  clean: {terminal: true}
  dirty: {terminal: true, failure: true}
"""


def test_a_sub_loops_judges_are_the_runs_judges(loopback: LoopbackServer, tmp_path: Path) -> None:
    """A parent whose only judge ran in its sub-loop: the report said `No LLM judge or
    assessment ran in this run.` beside the $ it spent on that judge, and explain listed no
    judge; both now list the child's verdict under the parent's step."""
    loopback.default = verdict_reply("no", reason="two problems remain", evidence="2 problems")
    write(tmp_path / "kid.yaml", JUDGED_CHILD)
    run_id = run(
        tmp_path,
        "parent",
        """
        name: parent
        initial: call
        scope: ["."]
        states:
          call:
            loop: kid.yaml
            on_yes: done
            on_no: bad
            on_error: bad
          done: {terminal: true}
          bad: {terminal: true, failure: true}
        """,
    )
    text, _ = explained(tmp_path, run_id)
    assert "  step 1 call > check: no — two problems remain" in text
    page = report(tmp_path, run_id)
    assert "No LLM judge" not in page
    assert "call &gt; check" in page and "two problems remain" in page


def test_a_stopped_run_says_what_stopped_it(tmp_path: Path) -> None:
    """The run's result records `stopped by SIGINT` or `stopped by SIGTERM`, but explain and
    the report said `stopped (ll-loop stop or Ctrl-C)` of both; they now name the one it was."""
    write(
        tmp_path / "slow.yaml",
        """
        name: slow
        initial: wait
        scope: ["."]
        states:
          wait:
            action: echo $$ > "${run.dir}/../wait.pid"; sleep 30
            next: done
          done:
            terminal: true
        """,
    )
    runs = tmp_path / ".loops" / "runs"
    said = {}
    for how in ("ctrl-c", "stop"):
        proc = spawn(tmp_path, "run", "slow.yaml", "--quiet")
        try:
            wait_until(lambda: any(written(p) for p in runs.glob("*/wait.pid")))
            run_id = next(runs.glob("*/wait.pid")).parent.name
            if how == "ctrl-c":
                proc.send_signal(signal.SIGINT)
            else:
                assert ll_loop(tmp_path, "stop", run_id).returncode == 0
            assert proc.wait(timeout=20) == 3
            text, data = explained(tmp_path, run_id)
            said[how] = str(data["reason"])
            assert said[how] in " ".join(text.split())
            assert said[how] in " ".join(html.unescape(report(tmp_path, run_id)).split())
        finally:
            proc.kill()
            proc.wait(timeout=10)
            pid = next(runs.glob("*/wait.pid"), Path("/none"))
            end_action_group(pid)
            pid.unlink(missing_ok=True)
    assert said["ctrl-c"].startswith("stopped by Ctrl-C (SIGINT) in state 'wait' after 0 of 50")
    assert said["stop"].startswith("stopped by SIGTERM (ll-loop stop or a kill) in state 'wait'")


def test_a_signal_killed_action_is_named_in_the_step_table(tmp_path: Path) -> None:
    """The report's step table showed `exit 3`, `timed out` or a spawn error in its action
    column, and nothing for an action killed by a signal; it now shows the signal."""
    run_id = run(
        tmp_path,
        "segv",
        """
        name: segv
        initial: crash
        scope: ["."]
        states:
          crash:
            action: echo about to crash; kill -SEGV $$
            next: done
            on_error: broken
          done: {terminal: true}
          broken: {terminal: true, failure: true}
        """,
    )
    page = report(tmp_path, run_id)
    row = re.search(r'<tr data-state="crash">(.*?)</tr>', page, re.S)
    assert row is not None and "<td>killed by signal 11</td>" in row.group(1)


NESTED = """
name: nested
initial: a
scope: ["."]
max_steps: 304
states:
  a:
    action: 'n=$(cat n 2>/dev/null || echo 0); echo $((n + 1)) > n; [ $(((n + 1) % 5)) -ne 0 ]'
    on_yes: b
    on_no: c
  b: {action: "true", next: a}
  c:
    action: "[ -e give-up ]"
    on_yes: done
    on_no: a
  done: {terminal: true}
"""


def test_a_cycle_with_a_cycle_inside_is_named_whole(tmp_path: Path) -> None:
    """304 steps round a 10-step cycle (a → b four times, then a → c), ending 4 steps into
    round 31: explain said `the last 4 steps went round a → b` (it looked for repeats of up to
    8 steps) and listed 61 stretches of the path; it now names the whole cycle, and the path
    is two lines."""
    run_id = run(tmp_path, "nested", NESTED)
    text, data = explained(tmp_path, run_id)
    assert data["reason"] == (
        "used all 304 steps without reaching a terminal; "
        "the last 304 steps went round (a → b) ×4 → a → c"
    )
    assert "    1-300  ((a yes → b · b yes → a) ×4 · a no → c · c no → a) ×30" in text
    assert "  301-304  (a yes → b · b yes → a) ×2" in text
    assert "1-300: ((a → b) ×4 → a → c) ×30" in html.unescape(report(tmp_path, run_id))
    assert "more stretches" not in text


STOPPED_KID = """
name: kid
initial: first
scope: ["."]
states:
  first: {action: echo kid, next: slow}
  slow:
    action: echo $$ > "${run.dir}/../../../wait.pid"; sleep 30
    next: ok
  ok: {terminal: true}
"""


def stopped_in_a_sub_loop(tmp_path: Path) -> str:
    """A parent run stopped (Ctrl-C) while its sub-loop's second state ran for a second."""
    write(tmp_path / "kid.yaml", STOPPED_KID)
    write(
        tmp_path / "parent.yaml",
        """
        name: parent
        initial: call
        scope: ["."]
        states:
          call:
            loop: kid.yaml
            on_yes: done
            on_no: done
          done: {terminal: true}
        """,
    )
    proc = spawn(tmp_path, "run", "parent.yaml", "--quiet")
    runs = tmp_path / ".loops" / "runs"
    try:
        wait_until(lambda: any(written(p) for p in runs.glob("*/wait.pid")))
        time.sleep(1.0)  # the step under way has run a while when the stop comes
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 3
    finally:
        proc.kill()
        proc.wait(timeout=10)
        end_action_group(next(runs.glob("*/wait.pid"), Path("/none")))
    return next(runs.glob("*/wait.pid")).parent.name


def test_a_sub_loop_stopped_with_its_parent_is_told_once(tmp_path: Path) -> None:
    """The child's line repeated the parent's whole ending, resume command included:
    `sub-loop at step 1 (call): kid, stopped by … ; `ll-loop resume RUN` continues it`."""
    run_id = stopped_in_a_sub_loop(tmp_path)
    text, data = explained(tmp_path, run_id)
    child = data["children"][0]["reason"]
    assert child == "stopped by Ctrl-C (SIGINT) in state 'slow' after 1 of 50 steps"
    assert text.count("ll-loop resume") == 1


def test_a_stopped_sub_loop_explained_alone_still_says_how_to_continue_it(tmp_path: Path) -> None:
    """Leaving the resume command to the parent's sentence (a72b251) left it out of
    `ll-loop explain RUN/children/call-1` and that child's report too, where no parent says it:
    a child explained on its own says how its run is continued."""
    run_id = stopped_in_a_sub_loop(tmp_path)
    child = str(tmp_path / ".loops" / "runs" / run_id / "children" / "call-1")
    text, data = explained(tmp_path, child)
    assert data["reason"] == (
        "stopped by Ctrl-C (SIGINT) in state 'slow' after 1 of 50 steps; "
        f"`ll-loop resume {run_id}` continues it"
    )
    assert text.count(f"ll-loop resume {run_id}") == 1
    assert html.escape(f"ll-loop resume {run_id}") in report(tmp_path, child)


def test_a_stopped_sub_loop_steps_time_is_its_childs(tmp_path: Path) -> None:
    """The step a stop cut inside its sub-loop read `0.00 s` in the report's step table, after
    its child had run for a second: a step that never ended had only its action's time."""
    run_id = stopped_in_a_sub_loop(tmp_path)
    page = report(tmp_path, run_id)
    row = re.search(r'<tr data-state="call">(.*?)</tr>', page, re.S)
    assert row is not None, page
    seconds = float(re.findall(r"<td>([0-9.]+) s</td>", row.group(1))[0])
    assert seconds >= 1.0


def test_a_prompt_whose_model_call_failed_did_start(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A prompt action whose every call got HTTP 500 ended `state 'write' failed (action could
    not start: LLM call failed: …)`: the words of an action bash could not spawn, for calls
    made five times; run --json, explain and the report now say the call failed."""
    loopback.default = error_reply(500)
    write(
        tmp_path / "poem.yaml",
        """
        name: poem
        initial: write
        scope: ["."]
        states:
          write:
            action: write a poem
            action_type: prompt
            timeout: 30
            next: done
          done: {terminal: true}
        """,
    )
    ended = result_of(ll_loop(tmp_path, "run", "poem.yaml", "--json", "--quiet"))
    assert ended["error"] == (
        "state 'write' failed (LLM call failed: HTTP 500: scripted 500 (gave up after 5 "
        "attempts)) and has no on_error route"
    )
    text, data = explained(tmp_path, str(ended["run_id"]))
    assert "could not start" not in text + str(data) + report(tmp_path, str(ended["run_id"]))


def test_a_live_runs_report_does_not_say_why_it_ended(tmp_path: Path) -> None:
    """The report of a run still under way headed its first section `Why it ended`."""
    write(
        tmp_path / "slow.yaml",
        """
        name: slow
        initial: wait
        scope: ["."]
        states:
          wait:
            action: echo $$ > "${run.dir}/../wait.pid"; sleep 30
            next: done
          done: {terminal: true}
        """,
    )
    proc = spawn(tmp_path, "run", "slow.yaml", "--quiet")
    runs = tmp_path / ".loops" / "runs"
    try:
        wait_until(lambda: any(written(p) for p in runs.glob("*/wait.pid")))
        page = report(tmp_path, next(runs.glob("*/wait.pid")).parent.name)
        assert "<h2>Where it stands</h2>" in page and "Why it ended" not in page
    finally:
        proc.kill()
        proc.wait(timeout=10)
        end_action_group(next(runs.glob("*/wait.pid"), Path("/none")))


def test_a_run_killed_and_resumed_gives_its_time_as_a_lower_bound(tmp_path: Path) -> None:
    """Killed a second into a step, then resumed to its end: the time the killed attempt ran
    is in no record (state.json keeps the time at its last boundary), yet explain and the
    report gave the run's time as if it were all of it (`0.0s`); it is `≥` as for the killed
    run before the resume."""
    write(
        tmp_path / "slow.yaml",
        """
        name: slow
        initial: wait
        scope: ["."]
        states:
          wait:
            action: |
              [ -e "${run.dir}/../go" ] && exit 0
              echo $$ > "${run.dir}/../wait.pid"; sleep 30
            next: done
          done: {terminal: true}
        """,
    )
    proc = spawn(tmp_path, "run", "slow.yaml", "--quiet")
    runs = tmp_path / ".loops" / "runs"
    try:
        wait_until(lambda: any(written(p) for p in runs.glob("*/wait.pid")))
        time.sleep(1.0)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        run_id = next(runs.glob("*/wait.pid")).parent.name
        (runs / run_id / "go").touch()
        assert ll_loop(tmp_path, "resume", run_id, "--quiet").returncode == 0
        text, _ = explained(tmp_path, run_id)
        assert re.search(r"· success \(terminal\) · 1/50 steps · ≥\d+\.\ds ·", text), text
        assert re.search(r"time <b>≥\d+\.\d s</b>", report(tmp_path, run_id))
        # status said the plain time: it agrees now (state.json records the killed attempt)
        detail = ll_loop(tmp_path, "status", run_id).stdout
        assert re.search(r"elapsed   ≥\d", detail), detail
        listed = ll_loop(tmp_path, "status", "--all").stdout
        assert re.search(rf"{run_id} .* ≥\d", listed), listed
        shown = json.loads(ll_loop(tmp_path, "status", run_id, "--json").stdout)
        assert shown["killed_attempts"] == 1
    finally:
        proc.kill()
        proc.wait(timeout=10)
        end_action_group(next(runs.glob("*/wait.pid"), Path("/none")))


def test_a_step_stopped_while_judging_is_timed_until_the_stop(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Stopped a second into its judge's call, the step read `0.00 s` in the report (its
    action's time alone): a step that never got its route is timed until the stop ended it."""
    loopback.default = verdict_reply("yes", evidence="lint 0 problems", delay=8)
    write(tmp_path / "judged.yaml", JUDGED)
    env = {"LL_LLM_TIMEOUT": "30"}
    proc = spawn(tmp_path, "run", "judged.yaml", "--quiet", env=env)
    runs = tmp_path / ".loops" / "runs"
    try:
        wait_until(lambda: len(loopback.requests) == 1)
        time.sleep(1.0)
        run_id = next(runs.iterdir()).name
        assert ll_loop(tmp_path, "stop", run_id).returncode == 0
        assert proc.wait(timeout=20) == 3
    finally:
        proc.kill()
        proc.wait(timeout=10)
    page = report(tmp_path, run_id)
    row = re.search(r'<tr data-state="check">(.*?)</tr>', page, re.S)
    assert row is not None and "(stopped)" in row.group(1)
    assert float(re.findall(r"<td>([0-9.]+) s</td>", row.group(1))[0]) >= 1.0


def test_a_failure_the_sentence_already_quotes_is_not_quoted_again(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A prompt action whose model call failed: its error is its stderr too, so explain and
    the report said `HTTP 500: scripted 500 (gave up after 5 attempts)` in the sentence and
    again under `stderr of the failing action ends:`; they say it once."""
    loopback.default = error_reply(500)
    write(
        tmp_path / "poem.yaml",
        """
        name: poem
        initial: write
        scope: ["."]
        states:
          write: {action: write a poem, action_type: prompt, timeout: 30, next: done}
          done: {terminal: true}
        """,
    )
    ended = result_of(ll_loop(tmp_path, "run", "poem.yaml", "--json", "--quiet"))
    text, data = explained(tmp_path, str(ended["run_id"]))
    assert text.count("scripted 500") == 1 and data["stderr_tail"] == []
    assert "stderr of the failing action" not in report(tmp_path, str(ended["run_id"]))


def test_a_short_stderr_the_sentence_happens_to_hold_is_still_shown(tmp_path: Path) -> None:
    """`error` on stderr is in `ended with an error: …` by chance, not quoted there."""
    run_id = run(
        tmp_path,
        "terse",
        """
        name: terse
        initial: a
        scope: ["."]
        states:
          a: {action: echo error >&2; exit 1, next: done}
          done: {terminal: true}
        """,
    )
    text, data = explained(tmp_path, run_id)
    assert data["stderr_tail"] == ["error"] and "  | error" in text


def test_a_sub_loop_is_named_by_its_top_run_id_and_its_directory(tmp_path: Path) -> None:
    """A child's `run_id` in explain JSON was `RUN (step 1, state top)`, which no command takes:
    it is now the top run's id (one run, one event log; `resume` takes it) and `child_dir` its
    directory under the run's, which `ll-loop explain` takes."""
    write(
        tmp_path / "inner.yaml",
        "name: inner\ninitial: go\nscope: ['.']\nstates:\n"
        "  go: {action: 'true', next: done}\n  done: {terminal: true}\n",
    )
    write(
        tmp_path / "middle.yaml",
        "name: middle\ninitial: call\nscope: ['.']\nstates:\n"
        "  call: {loop: inner.yaml, on_yes: done, on_no: done}\n  done: {terminal: true}\n",
    )
    run_id = run(
        tmp_path,
        "outer",
        "name: outer\ninitial: top\nscope: ['.']\nstates:\n"
        "  top: {loop: middle.yaml, on_yes: done, on_no: done}\n"
        "  done: {terminal: true}\n",
    )
    _, data = explained(tmp_path, run_id)
    assert data["child_dir"] is None
    middle = data["children"][0]
    inner = middle["children"][0]
    assert (middle["run_id"], middle["child_dir"]) == (run_id, "children/top-1")
    assert (inner["run_id"], inner["child_dir"]) == (run_id, "children/top-1/children/call-1")
    for child in (middle, inner):
        directory = tmp_path / ".loops" / "runs" / child["run_id"] / child["child_dir"]
        text, own = explained(tmp_path, str(directory))
        assert (own["run_id"], own["child_dir"], own["loop"]) == (
            run_id,
            child["child_dir"],
            child["loop"],
        )
        assert f"run {run_id} ({child['child_dir']})" in text


def test_a_childs_end_with_fields_of_the_wrong_kind_is_no_internal_error(tmp_path: Path) -> None:
    """A sub-loop's `loop_complete` whose steps, duration_ms or cost_usd is no number (a hand
    edit, a log written by something else) made explain and the report end in `internal error:
    ValueError` (`int('x')`); the child is told from its steps, as when the field is missing."""
    write(
        tmp_path / "kid.yaml",
        """
        name: kid
        initial: go
        scope: ["."]
        states:
          go: {action: "true", next: done}
          done: {terminal: true}
        """,
    )
    run_id = run(
        tmp_path,
        "mom",
        """
        name: mom
        initial: call
        scope: ["."]
        states:
          call: {loop: kid.yaml, on_yes: done, on_no: done, on_error: done}
          done: {terminal: true}
        """,
    )
    log = tmp_path / ".loops" / "runs" / run_id / "events.jsonl"
    kept = log.read_text()
    for field, bad in (("steps", "x"), ("duration_ms", {"a": 1}), ("cost_usd", "$1")):
        lines = []
        for line in kept.splitlines():
            event = json.loads(line)
            if event["event"] == "loop_complete" and event.get("depth") == 1:
                event[field] = bad
            lines.append(json.dumps(event))
        log.write_text("\n".join(lines) + "\n")
        text, data = explained(tmp_path, run_id)
        assert "sub-loop at step 1 (call): kid, reached the success terminal 'done'" in text
        assert data["children"][0]["steps"] == 1, field
        assert "kid" in report(tmp_path, run_id)


def test_a_run_out_of_steps_names_the_state_its_final_state_names(tmp_path: Path) -> None:
    """Three steps of a → b → a → b: the run stopped in 'b' (`final_state`, `status`, `run`'s
    line), but explain said "it was in state 'a'", the last step's state, not where it was."""
    run_id = run(
        tmp_path,
        "cyc",
        """
        name: cyc
        initial: a
        scope: ["."]
        max_steps: 3
        states:
          a:
            action: "true"
            on_yes: b
            on_no: done
          b:
            action: "true"
            on_yes: a
            on_no: done
          done:
            terminal: true
        """,
    )
    text, data = explained(tmp_path, run_id)
    assert data["final_state"] == "b"
    assert data["reason"] == "used all 3 steps without reaching a terminal; it ended in state 'b'"
    assert "it ended in state 'b'" in text and "'a'" not in text.split("why:")[1].splitlines()[0]
    status = ll_loop(tmp_path, "status", run_id)
    assert re.search(r"^state\s+b$", status.stdout, re.MULTILINE), status.stdout
