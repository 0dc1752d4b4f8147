"""`ll-loop explain` on runs in every condition: live, stopped, killed (interrupted, with a torn
event log), resumed to the end, out of budget, ended by an action that failed — and the pure
folding of a long path."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.report.explain import MAX_FOLD, Hop, PathItem, fold_path, folded_paths
from engine.report.runlog import Step, read_trace
from engine.runtime.resume import read_events
from tests.runs_helpers import (
    end_action_group,
    ll_loop,
    result_of,
    run_dir,
    spawn,
    state_of,
    wait_until,
    write,
)

LL_LOOP = Path(sys.executable).with_name("ll-loop")

SLOW = """
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
      echo $$ > "${run.dir}/../wait.pid"
      test -f "${run.dir}/../go" || sleep 30
      echo waited
    next: done
  done:
    terminal: true
"""


def explain(cwd: Path, run_id: str) -> tuple[str, dict[str, object]]:
    text = ll_loop(cwd, "explain", run_id)
    assert text.returncode == 0, text.stderr
    data = json.loads(ll_loop(cwd, "explain", run_id, "--format", "json").stdout)
    return text.stdout, data


def test_live_then_stopped_then_resumed_run(tmp_path: Path) -> None:
    write(tmp_path / "slow.yaml", SLOW)
    proc = spawn(tmp_path, "run", "slow.yaml", "--quiet")
    try:
        runs = tmp_path / ".loops" / "runs"
        wait_until(lambda: runs.is_dir() and any(runs.glob("*/wait.pid")))
        run_id = next(runs.iterdir()).name
        text, data = explain(tmp_path, run_id)
        assert data["status"] == "running"
        assert text.splitlines()[1] == "why: still running: step 2 of 10, in state 'wait'"
        assert "wait ? → (running)" in text  # not "(interrupted)": its process is alive
        assert ll_loop(tmp_path, "report", run_id, "--html", "--out", "live.html").returncode == 0
        assert "(running)" in (tmp_path / "live.html").read_text()
        assert ll_loop(tmp_path, "stop", run_id).returncode == 0
        proc.wait(timeout=20)
        text, data = explain(tmp_path, run_id)
        assert data["status"] == "stopped"
        assert f"`ll-loop resume {run_id}` continues it" in str(data["reason"])
        # the stopped attempt of `wait` is on the path, but no step: the counts add up
        assert data["steps_by_state"] == {"prepare": 1} and data["steps"] == 1
        assert "steps by state: prepare 1\n" in text
        (runs / run_id / "go").touch()
        assert ll_loop(tmp_path, "resume", run_id, "--quiet").returncode == 0
        text, data = explain(tmp_path, run_id)
        assert str(data["reason"]).startswith("reached the success terminal 'done'")
        assert "wait ok → done" in text or "wait yes → done" in text
        # the stopped attempt of `wait` is on the path but is not a second step
        assert data["steps_by_state"] == {"prepare": 1, "wait": 1} and data["steps"] == 2
        assert ll_loop(tmp_path, "report", run_id, "--html", "--out", "r.html").returncode == 0
        page = (tmp_path / "r.html").read_text()
        assert "wait: executed 1 time" in page or "wait: executed 1 times" in page
        bar = re.search(r"step 2 wait: interrupted \(([0-9.]+) s\)", page)
        assert bar is not None and float(bar.group(1)) < 2  # not the time until the resume
    finally:
        proc.kill()
        proc.wait(timeout=10)
        end_action_group(next((tmp_path / ".loops" / "runs").glob("*/wait.pid"), Path("/none")))


def test_killed_run_with_a_torn_log_is_interrupted(tmp_path: Path) -> None:
    write(tmp_path / "slow.yaml", SLOW)
    proc = spawn(tmp_path, "run", "slow.yaml", "--quiet")
    runs = tmp_path / ".loops" / "runs"
    try:
        wait_until(lambda: runs.is_dir() and any(runs.glob("*/wait.pid")))
        run_id = next(runs.iterdir()).name
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        with (runs / run_id / "events.jsonl").open("a") as log:
            log.write('{"ts": "2026-01-01T00:00:00Z", "event": "act')  # a write cut short
        text, data = explain(tmp_path, run_id)
        assert data["status"] == "interrupted"
        assert text.splitlines()[1].startswith("why: interrupted: its process is gone")
        assert "in state 'wait' after 1 of 10 steps" in text
        assert "wait ? → (interrupted)" in text
        # its time is known up to its last event only, as `status` says with its `≥`
        assert re.search(r" · ≥[0-9.]+s · \$", text.splitlines()[0]), text
        assert ll_loop(tmp_path, "report", run_id, "--html", "--out", "k.html").returncode == 0
        assert re.search(r"<span>time <b>≥[0-9.]+ s</b>", (tmp_path / "k.html").read_text())
        listed = json.loads(ll_loop(tmp_path, "history", "--json").stdout)["runs"][0]
        assert (listed["status"], listed["steps"]) == ("interrupted", 1)  # from state.json
    finally:
        end_action_group(next(runs.glob("*/wait.pid"), Path("/none")))


def test_budget_exhausted_run_names_the_cycle(tmp_path: Path) -> None:
    write(
        tmp_path / "spin.yaml",
        """
        name: spin
        initial: poll
        scope: ["."]
        max_steps: 9
        states:
          poll:
            action: "false"
            on_yes: done
            on_no: nap
          nap:
            action: "true"
            next: poll
          done:
            terminal: true
        """,
    )
    ran = result_of(ll_loop(tmp_path, "run", "spin.yaml", "--json", "--quiet"))
    text, data = explain(tmp_path, ran["run_id"])
    assert data["terminated_by"] == "max_steps"
    assert (
        "used all 9 steps without reaching a terminal; the last 9 steps went round poll → nap"
        in text
    )
    assert "(poll no → nap · nap yes → poll) ×4" in text
    assert len(text.splitlines()) <= 24


def test_failed_action_shows_its_stderr_tail(tmp_path: Path) -> None:
    write(
        tmp_path / "build.yaml",
        """
        name: build
        initial: compile
        scope: ["."]
        states:
          compile:
            action: |
              echo "compiling 3 files"
              for i in 1 2 3 4 5 6 7; do echo "note $i" >&2; done
              echo "x.c:3: error: expected ';'" >&2
              exit 2
            next: done
          done:
            terminal: true
        """,
    )
    ran = result_of(ll_loop(tmp_path, "run", "build.yaml", "--json", "--quiet"))
    text, data = explain(tmp_path, ran["run_id"])
    assert data["reason"] == (
        "ended with an error: state 'compile' failed (action exited with code 2) and has no "
        "on_error route"
    )
    assert data["stderr_tail"] == [
        "note 4",
        "note 5",
        "note 6",
        "note 7",
        "x.c:3: error: expected ';'",
    ]
    assert "  | x.c:3: error: expected ';'" in text
    assert state_of(tmp_path, ran["run_id"])["status"] == "finished"
    assert run_dir(tmp_path, ran["run_id"]).is_dir()


def test_a_failure_reached_through_an_on_error_route_shows_the_failed_actions_stderr(
    tmp_path: Path,
) -> None:
    """harness-optimize's `compare` errors, `abandon` reverts the file and the run ends in the
    failure terminal `broken`: explain said only `reached the failure terminal 'broken' from
    state 'abandon' (verdict yes)`, and why `compare` failed was in events.jsonl alone. The
    stderr of the last action that failed on the way to a failure is shown, naming its step."""
    write(
        tmp_path / "opt.yaml",
        """
        name: opt
        initial: compare
        scope: ["."]
        states:
          compare:
            action: |
              echo "comparing"
              echo "target.yaml:1:1: error F004 the top level must be a mapping" >&2
              exit 2
            evaluate: {type: exit_code}
            on_yes: done
            on_no: done
            on_error: abandon
          abandon:
            action: echo reverted
            next: broken
          done: {terminal: true}
          broken: {terminal: true, failure: true}
        """,
    )
    ran = result_of(ll_loop(tmp_path, "run", "opt.yaml", "--json", "--quiet"))
    assert ran["final_state"] == "broken"
    text, data = explain(tmp_path, ran["run_id"])
    assert data["stderr_tail"] == ["target.yaml:1:1: error F004 the top level must be a mapping"]
    assert data["stderr_from"] == "state 'compare' (step 1)"
    assert "stderr of the failing action (state 'compare' (step 1)) ends:" in text
    assert "  | target.yaml:1:1: error F004 the top level must be a mapping" in text
    write(
        tmp_path / "opt.yaml",
        (tmp_path / "opt.yaml")
        .read_text()
        .replace("broken: {terminal: true, failure: true}", "broken: {terminal: true}"),
    )
    recovered = result_of(ll_loop(tmp_path, "run", "opt.yaml", "--json", "--quiet"))
    assert recovered["outcome"] == "success"
    _, data = explain(tmp_path, recovered["run_id"])
    assert data["stderr_tail"] == []  # an error the loop recovered from ended in no failure
    judged = (
        (tmp_path / "opt.yaml")
        .read_text()
        .replace(
            "    action: echo reverted\n    next: broken",
            "    action: echo reverted\n    evaluate: {type: output_contains, pattern: nope}\n"
            "    on_yes: done\n    on_no: broken",
        )
        .replace("broken: {terminal: true}", "broken: {terminal: true, failure: true}")
    )
    write(tmp_path / "opt.yaml", judged)
    failed = result_of(ll_loop(tmp_path, "run", "opt.yaml", "--json", "--quiet"))
    assert failed["final_state"] == "broken"
    _, data = explain(tmp_path, failed["run_id"])
    assert data["stderr_tail"] == []  # the run failed on a later no, not on that error


def test_unknown_run_is_one_sentence(tmp_path: Path) -> None:
    done = ll_loop(tmp_path, "explain", "nope")
    assert done.returncode == 2
    assert "no run 'nope'" in done.stderr and "Traceback" not in done.stderr


def test_fold_path_folds_the_longest_repeat() -> None:
    def step(n: int, state: str, verdict: str, target: str) -> Step:
        return Step(step=n, state=state, depth=0, verdict=verdict, target=target, routed=True)

    cycle = [("check", "no", "fix"), ("fix", "yes", "check")] * 50
    steps = [step(1, "setup", "yes", "check")]
    steps += [step(i + 2, *hop) for i, hop in enumerate(cycle)]
    steps.append(step(102, "check", "yes", "done"))
    folded = fold_path(steps)
    assert [(p.first_step, p.times, len(p.steps)) for p in folded] == [
        (1, 1, 1),
        (2, 50, 2),
        (102, 1, 1),
    ]


def test_events_from_other_parts_and_odd_fields_are_ignored() -> None:
    events = [
        {"event": "loop_start", "depth": 0, "loop": "x", "initial": "a", "max_steps": 3},
        {"event": "something_new", "depth": 0, "state": "a"},
        {"event": "state_enter", "depth": 0, "step": 1, "state": "a"},
        {"event": "evaluate", "depth": 0, "step": 1, "state": "a", "verdict": 7, "details": []},
        {"event": "llm_call", "depth": 0, "step": 1, "state": "a", "cost_usd": "free"},
        {"event": "route", "depth": 0, "step": 1, "state": "a", "verdict": "yes", "target": "b"},
        {"event": "state_enter", "depth": 3, "step": 1, "state": "orphan"},
    ]
    trace = read_trace(events)
    assert trace is not None and [s.state for s in trace.steps] == ["a"]
    step = trace.steps[0]
    assert (step.verdict, step.target, step.llm_calls, step.cost_usd) == ("yes", "b", 1, 0.0)


def test_a_long_winding_run_still_fits_one_screen() -> None:
    from engine.report.explain import RunFacts, explain, render_text
    from engine.report.runlog import Trace

    states = [f"s{i}" for i in range(40)]
    steps = [
        Step(step=i + 1, state=name, depth=0, verdict="yes", target=f"s{i + 1}", routed=True,
             evaluator="llm_structured",
             details={"verdict": "yes", "reason": "fine " * 30, "evidence": "quote " * 30,
                      "samples": [{"verdict": "yes"}, {"verdict": "no"}, {"verdict": "yes"}]})
        for i, name in enumerate(states)
    ]  # fmt: skip
    trace = Trace(loop="long", depth=0, initial="s0", max_steps=50, steps=steps)
    facts = RunFacts("r", "long", "running", "s40", 40, 1000, 0.5)
    text = render_text(explain(facts, trace))
    lines = text.splitlines()
    assert len(lines) <= 24, text
    assert lines[1] == "why: still running: 40 of 50 steps done, now in state 's40'"
    assert "more stretches of the path" in text
    assert "step 40 s39: yes [yes, no, yes]" in text  # the latest judgement is kept


CYCLE = """
name: cycle
initial: check
max_steps: 9
scope: ["q"]
states:
  check:
    action: echo 1
    evaluate: {type: output_numeric, operator: ge, target: 5}
    on_yes: done
    on_no: fix
  fix: {action: echo fixing, next: check}
  done: {terminal: true}
"""


def test_the_report_does_not_draw_a_loop_file_edited_after_the_run(tmp_path: Path) -> None:
    """States renamed in the file since: the graph is the one the run's events name."""
    write(tmp_path / "cycle.yaml", CYCLE)
    run_id = result_of(ll_loop(tmp_path, "run", "cycle.yaml", "--json", "-q"))["run_id"]
    fresh = ll_loop(tmp_path, "report", run_id, "--html", "--out", "fresh.html")
    assert fresh.returncode == 0, fresh.stderr
    assert "changed after the run started" not in (tmp_path / "fresh.html").read_text()
    later = os.stat(tmp_path / "cycle.yaml").st_mtime + 5
    write(tmp_path / "cycle.yaml", CYCLE.replace("check", "verify"))
    os.utime(tmp_path / "cycle.yaml", (later, later))
    assert ll_loop(tmp_path, "report", run_id, "--html", "--out", "edited.html").returncode == 0
    page = (tmp_path / "edited.html").read_text()
    assert "cycle.yaml changed after the run started" in page
    assert "check: executed 5 times" in page and "verify" not in page


def test_a_cut_event_log_is_said_and_the_reason_comes_from_state_json(tmp_path: Path) -> None:
    write(tmp_path / "cycle.yaml", CYCLE)
    run_id = result_of(ll_loop(tmp_path, "run", "cycle.yaml", "--json", "-q"))["run_id"]
    log = run_dir(tmp_path, run_id) / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:12]))  # the first few steps only
    told = ll_loop(tmp_path, "explain", run_id, "-f", "json")
    data = json.loads(told.stdout)
    assert data["log_incomplete"].startswith("the event log ends at step ")
    assert data["reason"] == "used all 9 steps without reaching a terminal; it ended in state 'fix'"
    text = ll_loop(tmp_path, "explain", run_id).stdout
    assert "note: the event log ends at step" in text and "the path below is incomplete" in text
    whole = ll_loop(tmp_path, "run", "cycle.yaml", "--json", "-q")
    complete = json.loads(
        ll_loop(tmp_path, "explain", result_of(whole)["run_id"], "-f", "json").stdout
    )
    assert complete["log_incomplete"] is None


def test_a_finished_runs_log_cut_inside_a_step_is_not_an_interrupted_step(
    tmp_path: Path,
) -> None:
    """A finished run whose event log was cut after a step's verdict: its path read
    `1  a yes → (interrupted)`, the word for a killed process, and its steps by state
    vanished; the run was not interrupted, its log ends there."""
    write(
        tmp_path / "two.yaml",
        """
        name: two
        initial: a
        scope: ["."]
        states:
          a: {action: echo one, next: b}
          b: {action: echo two, next: done}
          done: {terminal: true}
        """,
    )
    run_id = result_of(ll_loop(tmp_path, "run", "two.yaml", "--json", "-q"))["run_id"]
    log = run_dir(tmp_path, run_id) / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    first_verdict = next(i for i, line in enumerate(lines) if '"event":"evaluate"' in line)
    log.write_text("".join(lines[: first_verdict + 1]))
    text = ll_loop(tmp_path, "explain", run_id).stdout
    assert "        1  a yes → (the event log ends here)" in text
    assert "steps by state: a 1" in text
    ll_loop(tmp_path, "report", run_id, "--html", "--out", "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "(interrupted)" not in text + page and "(the event log ends here)" in page


def test_report_out_is_a_file_or_stdout_never_a_directory(tmp_path: Path) -> None:
    write(tmp_path / "cycle.yaml", CYCLE)
    run_id = result_of(ll_loop(tmp_path, "run", "cycle.yaml", "--json", "-q"))["run_id"]
    (tmp_path / "reports").mkdir()
    refused = ll_loop(tmp_path, "report", run_id, "--html", "--out", "reports")
    assert refused.returncode == 2
    assert "cannot write reports: it is a directory" in refused.stderr
    assert "--out reports/report.html" in refused.stderr
    piped = ll_loop(tmp_path, "report", run_id, "--html", "--out", "-")
    assert piped.returncode == 0 and piped.stdout.startswith("<!DOCTYPE html>")
    assert piped.stdout.rstrip().endswith("</html>") and not (tmp_path / "-").exists()


def _reference_fold(steps: list[Step]) -> list[tuple[int, int, tuple[Hop, ...], int]]:
    """The fold as its docs say it, slowly: at each place the repeat (period up to MAX_FOLD)
    that covers the most steps, the shorter period among equals."""
    hops = [Hop(s.state, s.verdict, s.went_to, s.hop_note(), s.ended) for s in steps]
    out, i = [], 0
    while i < len(hops):
        best = (1, 1)
        for period in range(1, min(MAX_FOLD, (len(hops) - i) // 2) + 1):
            times = 1
            while hops[i + times * period : i + (times + 1) * period] == hops[i : i + period]:
                times += 1
            if times >= 2 and period * times > best[0] * best[1]:
                best = (period, times)
        period, times = best
        out.append(
            (steps[i].step, times, tuple(hops[i : i + period]), steps[i + period * times - 1].step)
        )
        i += period * times
    return out


def _as_tuples(path: tuple[PathItem, ...]) -> list[tuple[int, int, tuple[Hop, ...], int]]:
    return [(p.first_step, p.times, p.steps, p.last_step) for p in path]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=40),
    st.sampled_from(["none", "last", "last-like-another", "inside"]),
)
def test_one_fold_gives_the_path_and_the_budgeted_path(states: list[str], budget: str) -> None:
    """`folded_paths` folds once, yet gives exactly what folding all steps and folding the
    steps the budget counts (without the on_max_steps state) would give."""
    steps = [
        Step(step=n + 1, state=s, depth=0, verdict="yes", target="a", routed=True)
        for n, s in enumerate(states)
    ]
    if budget != "none" and steps:
        at = len(steps) // 2 if budget == "inside" else len(steps) - 1
        steps[at].routed, steps[at].target, steps[at].budget_end = False, None, True
        if budget == "last-like-another" and len(steps) > 2:  # two equal on_max_steps hops
            steps[0].routed, steps[0].target, steps[0].budget_end = False, None, True
            steps[0].state = steps[at].state
    path, counted = folded_paths(steps)
    assert _as_tuples(path) == _reference_fold(steps)
    assert _as_tuples(counted) == _reference_fold([s for s in steps if not s.budget_end])


_LINES = st.one_of(
    st.builds(
        lambda d: json.dumps(d).encode(), st.dictionaries(st.text(max_size=4), st.integers())
    ),
    st.sampled_from(
        [
            b' {"a": 1}',
            b'{"a": 1} x',
            b'{"a": 1}\r',
            b'\xef\xbb\xbf{"a": 1}',
            b'{"a": "\xed\xa0\x80"}',
            b'{"a": "\xff"}',
            b"[1, 2]",
            b"",
            b"NaN",
            b'{"a": NaN}',
            b'{"a": 1}{"b": 2}',
        ]
    ),
    st.binary(max_size=12).filter(lambda b: b"\n" not in b),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, max_size=8))
def test_event_lines_read_as_json_loads_reads_them(
    tmp_path_factory: Any, lines: list[bytes]
) -> None:
    """The event reader decodes lines itself (for speed); what it keeps is exactly the objects
    `json.loads` gives for those lines."""
    log = tmp_path_factory.mktemp("log") / "events.jsonl"
    log.write_bytes(b"".join(line + b"\n" for line in lines))
    expected = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            expected.append(value)
    got = list(read_events(log))
    assert json.dumps(got) == json.dumps(expected)


FAN = """
name: fan
initial: sort
scope: ["."]
states:
  sort:
    action: echo six
    evaluate: {type: classify, verdicts: [one, two, three, four, five, six]}
    route: {one: t1, two: t2, three: t3, four: t4, five: t5, six: t6, _: t1}
  t1: {terminal: true}
  t2: {terminal: true}
  t3: {terminal: true}
  t4: {terminal: true}
  t5: {terminal: true}
  t6: {terminal: true}
"""


def test_the_reports_graph_is_drawn_the_same_at_every_rendering(tmp_path: Path) -> None:
    """networkx grouped each layer into a set, so the states of a layer were placed in the
    order of the process's string hash: every rendering of one run drew another graph."""
    write(tmp_path / "fan.yaml", FAN)
    run_id = str(result_of(ll_loop(tmp_path, "run", "fan.yaml", "--json", "--quiet"))["run_id"])
    lefts = []
    for seed in ("1", "2", "3"):
        page = tmp_path / f"r{seed}.html"
        done = subprocess.run(
            [str(LL_LOOP), "report", run_id, "--html", "--out", str(page)],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        found = re.findall(
            r'data-state="(t\d)".*?<rect class="shape" x="([0-9.]+)"', page.read_text()
        )
        lefts.append([name for name, _ in sorted(found, key=lambda f: float(f[1]))])
    assert lefts == [["t1", "t2", "t3", "t4", "t5", "t6"]] * 3  # file order: nothing to uncross


def test_a_loop_file_that_became_a_device_or_a_fifo_does_not_hang_explain_or_report(
    tmp_path: Path,
) -> None:
    """explain and report load the run's loop file again (for its limits and graph): one
    state.json names /dev/zero, a FIFO stands where the other's loop was, and both commands
    read on forever (the YAML reader took any file). The reader refuses what is not a regular
    file; the commands answer from the event log."""
    write(tmp_path / "one.yaml", "name: one\ninitial: a\nstates:\n  a: {terminal: true}\n")
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for target in ("/dev/zero", str(fifo)):
        run_id = json.loads(ll_loop(tmp_path, "run", "one.yaml", "--json", "-q").stdout)["run_id"]
        state = tmp_path / ".loops" / "runs" / run_id / "state.json"
        state.write_text(state.read_text().replace(str(tmp_path / "one.yaml"), target))
        for args in (("explain", run_id), ("report", run_id, "--html")):
            done = ll_loop(tmp_path, *args, process=True, timeout=30)
            assert done.returncode == 0, done.stderr


def test_reading_a_long_noisy_run_keeps_little_of_each_earlier_step(tmp_path: Path) -> None:
    """`explain` and `report` read the whole log into steps: a run of 100,000 shell steps that
    each print 2 KB held every output, stderr and action text (~1 GB for one screen). An earlier
    step keeps only the start of its output; the last one keeps its stderr for the failure."""
    import tracemalloc

    write(
        tmp_path / "noisy.yaml",
        """
        name: noisy
        initial: talk
        scope: ["."]
        max_steps: 120
        states:
          talk:
            action: |
              # an action text the log keeps too .............................................
              printf 'out %.0s' $(seq 500); printf 'err %.0s' $(seq 500) >&2
            on_yes: talk
            on_no: done
          done:
            terminal: true
        """,
    )
    ran = result_of(ll_loop(tmp_path, "run", "noisy.yaml", "--json", "--quiet"))
    log = run_dir(tmp_path, ran["run_id"]) / "events.jsonl"
    tracemalloc.start()
    try:
        trace = read_trace(read_events(log))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert trace is not None and len(trace.steps) == 120
    # ~0.75 KB of bookkeeping per step; with the outputs, stderr and action kept it was ~7 KB
    assert held / len(trace.steps) < 1500, f"{held / len(trace.steps):.0f} bytes per step"
    # the same evaluator details on every step (exit code 0) are one dict
    assert trace.steps[0].details is trace.steps[1].details == {"exit_code": 0}
    last = trace.steps[-1]
    assert last.stderr.startswith("err err") and len(last.output) > 1000
    assert trace.steps[0].output == "out " * 50  # flattened, as much as the step table shows
    text, _ = explain(tmp_path, ran["run_id"])
    assert "used all 120 steps" in text
