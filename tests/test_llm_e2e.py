"""End to end: the installed `ll-loop run` with LLM states, the real SDK, the loopback server.

The `ll-loop` process inherits `ANTHROPIC_BASE_URL` from the `loopback` fixture, so every model
call of the run goes over HTTP to the scripted server of the test.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engine.llm.calllog import mark_abandoned
from engine.load.resources import schema_path
from engine.runtime.resume import abandoned_calls
from tests.loopback_server import (
    LoopbackServer,
    Reply,
    error_reply,
    text_reply,
    verdict_reply,
)
from tests.run_helpers import run_yaml, write_loop
from tests.runs_helpers import end_action_group, ll_loop, result_of, spawn, wait_until

JUDGED = """
name: judged
initial: build
scope: [src]
context:
  suite: smoke
states:
  build:
    action: "echo 'suite ran: All 5 checks passed'"
    evaluate:
      type: llm_structured
      prompt: "Did every check of the ${context.suite} suite pass? Quote the line that shows it."
    on_yes: done
    on_no: failed
    on_error: broken
  done: {terminal: true}
  failed: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
"""


CHILD_SPENDS = """
name: spends
initial: judge
scope: [src]
states:
  judge:
    action: "echo 'All 5 checks passed'"
    evaluate: {type: llm_structured, prompt: "Did every check pass? Quote it."}
    on_yes: wait
    on_no: failed
    on_error: failed
  wait:
    action: |
      echo $$ > action.pid
      while [ ! -f go ]; do sleep 0.05; done
    next: done
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


ASKED = """
name: asked
initial: ask
scope: [src]
states:
  ask:
    action: "Say that all checks passed."
    action_type: prompt
    timeout: 60
    evaluate: {type: llm_structured, prompt: "Did every check pass? Quote it."}
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


def killed_while_held(cwd: Path, *extra: str) -> str:
    """Start `loop.yaml`, SIGKILL it once its held action runs (it writes action.pid), and give
    the run's id; the held action goes on until `go` exists (the caller ends its group)."""
    proc = spawn(cwd, "run", "loop.yaml", "--json", "-q", *extra)
    try:
        # a fresh process imports the SDK before its first LLM call: seconds on a busy machine
        wait_until(lambda: (cwd / "action.pid").exists(), timeout=90)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=15)
    return next(runs(cwd))


def test_judge_yes_routes_to_success_and_reports_cost(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(
        verdict_reply(
            "yes", evidence="All 5 checks passed", input_tokens=1_000_000, output_tokens=0
        )
    )
    ran = run_yaml(tmp_path, JUDGED)
    assert ran.code == 0, ran.stderr
    assert ran.json["final_state"] == "done"
    assert ran.json["cost_usd"] > 0
    [call] = [e for e in ran.events() if e["event"] == "llm_call"]
    assert call["status"] == "ok" and call["state"] == "build" and call["depth"] == 0
    assert (ran.run_dir / "llm.jsonl").is_file()
    validator = jsonschema.Draft202012Validator(
        json.loads(schema_path("events.schema.json").read_text())
    )
    for event in ran.events():
        validator.validate(event)


def test_judge_prompt_is_rendered_by_the_interpreter(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(verdict_reply("no"))
    run_yaml(tmp_path, JUDGED)
    content = loopback.requests[0].body["messages"][0]["content"]
    assert "of the smoke suite" in content


def test_invented_evidence_routes_to_no(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(verdict_reply("yes", evidence="All 6 checks passed"))
    ran = run_yaml(tmp_path, JUDGED)
    assert ran.code == 1
    assert ran.json["final_state"] == "failed"
    [evaluate] = [e for e in ran.events() if e["event"] == "evaluate"]
    assert evaluate["verdict"] == "no"


def test_a_rejected_yes_says_why_in_the_captured_reason_and_the_outputs(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A yes whose quote the output does not hold routes `no`; its `details.reason` (what
    `captured.<x>.details.reason`, a scaffolded harness's `outputs.reason`, the bug
    `eval-driven-development` files and its `refine` prompt read) used to be the model's reason
    for the yes alone: `verdict: no, reason: every check passed`. It leads with the rejection."""
    judged = JUDGED.replace("    on_yes: done\n", "    capture: judgement\n    on_yes: done\n", 1)
    judged += """outputs:
  verdict: "${captured.judgement.verdict}"
  reason: "${captured.judgement.details.reason}"
"""
    loopback.push(verdict_reply("yes", reason="every check passed", evidence="All 6 checks passed"))
    ran = run_yaml(tmp_path, judged)
    assert ran.code == 1, ran.stderr
    rejected = "yes rejected: the evidence 'All 6 checks passed' does not occur in the judged text"
    assert ran.json["outputs"] == {
        "verdict": "no",
        "reason": f"{rejected}; the model's reason: every check passed",
    }
    [evaluate] = [e for e in ran.events() if e["event"] == "evaluate"]
    assert evaluate["details"]["samples"][0]["reason"] == "every check passed"  # as answered
    explained = ll_loop(tmp_path, "explain", ran.json["run_id"])
    assert explained.stdout.count("yes rejected:") == 1, explained.stdout


def test_api_failure_is_an_error_verdict_routed_by_the_loop(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = error_reply(529)
    ran = run_yaml(tmp_path, JUDGED)
    assert ran.json["final_state"] == "broken"
    assert ran.code == 1
    assert ran.verdicts() == [("build", "error")]


def test_replay_reruns_the_judgement_without_http(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(verdict_reply("yes", evidence="All 5 checks passed"))
    first = run_yaml(tmp_path, JUDGED)
    served = len(loopback.requests)
    loopback.default = error_reply(500)
    again = run_yaml(tmp_path, JUDGED, "--replay", first.run_dir.name)
    assert again.code == 0, again.stderr
    assert again.json["final_state"] == "done"
    assert len(loopback.requests) == served


def test_replay_takes_a_unique_prefix_of_the_run_id_like_every_run_argument(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(verdict_reply("yes", evidence="All 5 checks passed"))
    first = run_yaml(tmp_path, JUDGED)
    loopback.default = error_reply(500)
    again = run_yaml(tmp_path, JUDGED, "--replay", first.run_dir.name[:17])
    assert again.code == 0, again.stderr
    assert again.json["final_state"] == "done"
    a, b = first.run_dir.name, again.run_dir.name
    both = a[: next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)]
    ambiguous = run_yaml(tmp_path, JUDGED, "--replay", both)
    assert ambiguous.code == 2
    assert ambiguous.json["error"].startswith(f"cannot replay: run id '{both}' is ambiguous")
    empty = run_yaml(tmp_path, JUDGED, "--replay", "")
    assert empty.code == 2 and empty.json["error"] == "cannot replay: no run id given"


def test_missing_credentials_stop_before_the_first_step(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    ran = run_yaml(tmp_path, JUDGED)
    assert ran.code == 2
    assert "ANTHROPIC_API_KEY" in ran.json["error"]
    assert loopback.requests == []


PROMPTED = """
name: prompted
initial: ask
scope: [src]
max_cost_usd: 0.5
states:
  ask:
    action_type: prompt
    action: "Write a haiku about loops."
    capture: poem
    next: check
  check:
    action: "echo '${captured.poem.output}' | wc -l"
    evaluate: {type: output_numeric, operator: ge, target: 100}
    on_yes: done
    on_no: ask
  done: {terminal: true}
"""


def test_prompt_costs_end_the_run_at_max_cost(loopback: LoopbackServer, tmp_path: Path) -> None:
    # each prompt costs $0.30 (claude-sonnet-4-6: $15 per million output tokens); the second
    # one crosses max_cost_usd
    loopback.default = text_reply("a poem", input_tokens=0, output_tokens=20_000)
    ran = run_yaml(tmp_path, PROMPTED)
    assert ran.code == 3, ran.stderr
    assert ran.json["terminated_by"] == "max_cost"
    assert len(loopback.requests) == 2
    logged = [json.loads(x) for x in (ran.run_dir / "llm.jsonl").read_text().splitlines()]
    assert [e["purpose"] for e in logged] == ["prompt", "prompt"]


def test_a_negative_token_count_does_not_lift_the_budget(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """An endpoint answering `input_tokens: -10000000` made the run's cost -$30, and the
    prompts went on past `max_cost_usd` until max_steps."""
    loopback.push(text_reply("a poem", input_tokens=-10_000_000, output_tokens=0))
    loopback.default = text_reply("a poem", input_tokens=0, output_tokens=20_000)
    ran = run_yaml(tmp_path, PROMPTED)
    assert (ran.code, ran.json["terminated_by"]) == (3, "max_cost"), ran.stderr
    assert len(loopback.requests) == 3
    assert ran.json["cost_usd"] == pytest.approx(0.6)
    logged = [json.loads(x) for x in (ran.run_dir / "llm.jsonl").read_text().splitlines()]
    assert logged[0]["usage"]["input_tokens"] == 0


def test_a_step_that_reaches_success_is_a_success_whatever_it_cost(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    # the only prompt costs $0.30 against a $0.10 limit, and routes straight to the terminal:
    # the terminal is checked first, so the run is a success, not `max_cost`
    loopback.default = text_reply("a poem", input_tokens=0, output_tokens=20_000)
    loop = PROMPTED.replace("max_cost_usd: 0.5", "max_cost_usd: 0.1").replace(
        "next: check", "next: done"
    )
    ran = run_yaml(tmp_path, loop)
    assert ran.code == 0, ran.stderr
    assert (ran.json["terminated_by"], ran.json["final_state"]) == ("terminal", "done")
    assert ran.json["cost_usd"] >= 0.1


TIMED_OUT = """
name: slow
initial: build
scope: [src]
states:
  build:
    action: "sleep 5; echo 'All 5 checks passed'"
    timeout: 0.5
    evaluate:
      type: llm_structured
      prompt: "Did every check pass? Quote the line that shows it."
    on_yes: done
    on_no: failed
    on_error: broken
  done: {terminal: true}
  failed: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
"""


def test_a_timed_out_action_is_never_judged(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.default = verdict_reply("yes", evidence="All 5 checks passed")
    ran = run_yaml(tmp_path, TIMED_OUT)
    assert ran.json["final_state"] == "broken"
    assert ran.verdicts() == [("build", "error")]
    assert loopback.requests == []


SAMPLED = """
name: sampled
initial: build
scope: [src]
states:
  build:
    action: "echo 'All 5 checks passed'"
    capture: build
    evaluate:
      type: llm_structured
      prompt: "Did every check pass? Quote the line that shows it."
      samples: 3
    on_yes: report
    on_no: report
    on_error: report
  report:
    action: "echo '${captured.build.details.votes | tojson}'"
    capture: report
    next: done
  done: {terminal: true}
"""


def test_every_sample_is_in_the_event_and_the_capture(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(
        verdict_reply("yes", evidence="All 5 checks passed"),
        verdict_reply("no"),
        verdict_reply("yes", evidence="checks passed"),
    )
    ran = run_yaml(tmp_path, SAMPLED)
    assert ran.code == 0, ran.stderr
    [evaluate] = [e for e in ran.events() if e["event"] == "evaluate" and e["state"] == "build"]
    assert evaluate["verdict"] == "yes"
    assert sorted(s["verdict"] for s in evaluate["details"]["samples"]) == ["no", "yes", "yes"]
    [report] = [
        e for e in ran.events() if e["event"] == "action_complete" and e["state"] == "report"
    ]
    assert json.loads(report["output"]) == {"yes": 2, "no": 1}


def test_the_cost_of_a_run_survives_its_resume(loopback: LoopbackServer, tmp_path: Path) -> None:
    """A resumed run's LLM services start from zero; the run's cost must not."""
    write_loop(tmp_path, CHILD_SPENDS)
    loopback.push(verdict_reply("yes", evidence="All 5 checks passed", input_tokens=1_000_000))
    try:
        run_id = killed_while_held(tmp_path)
        (tmp_path / "go").touch()
        resumed = result_of(ll_loop(tmp_path, "resume", run_id, "--json", "-q"))
    finally:
        end_action_group(tmp_path / "action.pid")
    assert resumed["final_state"] == "done"
    # the judge's $3, spent before the kill, once
    assert resumed["cost_usd"] == pytest.approx(3.0, abs=0.01)


def test_a_resume_counts_a_call_before_the_boundary_once_whatever_the_files_mtime(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The spend a resume adds is that of the calls logged after the state was saved; a state
    file whose mtime reads earlier than that (a kernel's coarse file clock, a copied run) must
    not count the judge before the boundary twice."""
    write_loop(tmp_path, CHILD_SPENDS)
    loopback.push(verdict_reply("yes", evidence="All 5 checks passed", input_tokens=1_000_000))
    try:
        run_id = killed_while_held(tmp_path)
        state = tmp_path / ".loops" / "runs" / next(runs(tmp_path)) / "state.json"
        os.utime(state, (state.stat().st_atime - 10, state.stat().st_mtime - 10))
        (tmp_path / "go").touch()
        resumed = ll_loop(tmp_path, "resume", run_id, "--json", "-q")
    finally:
        end_action_group(tmp_path / "action.pid")
    assert resumed.json["final_state"] == "done", resumed.stdout + resumed.stderr
    assert resumed.json["cost_usd"] == pytest.approx(3.0, abs=0.01)


def test_history_shows_what_each_run_spent(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(
        verdict_reply(
            "yes", evidence="All 5 checks passed", input_tokens=1_000_000, output_tokens=0
        )
    )
    ran = run_yaml(tmp_path, JUDGED)
    assert ran.code == 0, ran.stderr
    header, row = ll_loop(tmp_path, "history").stdout.splitlines()[:2]
    assert "COST" in header.split() and "$3.0000" in row.split()


def test_status_shows_what_a_live_run_has_spent(loopback: LoopbackServer, tmp_path: Path) -> None:
    loop = """
name: spending
initial: judge
scope: [src]
states:
  judge:
    action: "echo 'All 5 checks passed'"
    evaluate: {type: llm_structured, prompt: "Did every check pass? Quote it."}
    on_yes: wait
    on_no: wait
    on_error: wait
  wait:
    action: "while [ ! -f go ]; do sleep 0.05; done"
    next: done
  done: {terminal: true}
"""
    write_loop(tmp_path, loop)
    loopback.push(verdict_reply("yes", evidence="All 5 checks passed", input_tokens=1_000_000))
    proc = spawn(tmp_path, "run", "loop.yaml", "--json", "-q")
    try:

        def live() -> dict[str, Any]:
            listed = json.loads(ll_loop(tmp_path, "status", "--json").stdout)["runs"]
            return listed[0] if listed else {}

        wait_until(lambda: live().get("state") == "wait", timeout=90)
        assert live()["cost_usd"] >= 3.0  # the judge's $3 so far
        assert "$3.0003" in ll_loop(tmp_path, "status").stdout  # + 20 output tokens
    finally:
        (tmp_path / "go").touch()
        proc.communicate(timeout=30)


def runs(cwd: Path) -> Iterator[str]:
    return (d.name for d in (cwd / ".loops" / "runs").iterdir())


ASKING = """
name: asking
initial: ask
scope: [src]
states:
  ask:
    action: "Say hello."
    action_type: prompt
    next: done
  done: {terminal: true}
"""


@pytest.mark.parametrize("loop", [ASKING, JUDGED], ids=["prompt", "judge"])
def test_a_stop_abandons_a_model_call_in_flight(
    loopback: LoopbackServer, tmp_path: Path, loop: str
) -> None:
    """SIGTERM while the model takes 30 s to answer: the run stops at once (it used to wait
    for the answer, or the request's timeout), and the call is logged as abandoned."""
    loopback.default = verdict_reply("yes", evidence="All 5 checks passed", delay=30.0)
    if loop is ASKING:
        loopback.default = text_reply("hello", delay=30.0)
    (tmp_path / "loop.yaml").write_text(loop)
    proc = spawn(tmp_path, "run", "loop.yaml", "--json", "-q")
    try:
        wait_until(lambda: bool(loopback.requests))
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        assert time.monotonic() - signalled < 5, err
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    result = json.loads(out)
    assert result["terminated_by"] == "stopped"
    run_dir = tmp_path / ".loops" / "runs" / result["run_id"]
    calls = [json.loads(line) for line in (run_dir / "llm.jsonl").read_text().splitlines()]
    assert [(c["status"], c["response"]) for c in calls] == [("error", None)]
    assert "stopped while this call was waiting" in calls[0]["error"]


HELD = """
name: held
initial: judge
scope: [src]
states:
  judge:
    action: "echo 'All 5 checks passed'"
    evaluate: {type: llm_structured, prompt: "Did every check pass? Quote it."}
    on_yes: wait
    on_no: failed
    on_error: failed
  wait:
    action: |
      echo $$ > action.pid
      while [ ! -f go ]; do sleep 0.05; done
    next: again
  again:
    action: "echo 'All 5 checks passed, again'"
    evaluate: {type: llm_structured, prompt: "Did every check pass? Quote it."}
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


def test_a_resumed_replay_is_still_a_replay(loopback: LoopbackServer, tmp_path: Path) -> None:
    """A run started with --replay and stopped halfway answers from the log after its resume
    too (it used to resume live: a paid call, and answers the replayed run never had)."""
    write_loop(tmp_path, HELD)
    (tmp_path / "go").touch()
    loopback.push(
        verdict_reply("yes", evidence="All 5 checks passed"),
        verdict_reply("yes", evidence="All 5 checks passed, again"),
    )
    first = ll_loop(tmp_path, "run", "loop.yaml", "--json", "-q")
    assert first.json["final_state"] == "done", first.stderr
    (tmp_path / "go").unlink()
    (tmp_path / "action.pid").unlink()
    served = len(loopback.requests)
    loopback.default = error_reply(500)
    replay = spawn(tmp_path, "run", "loop.yaml", "--json", "-q", "--replay", first.json["run_id"])
    try:
        wait_until(lambda: (tmp_path / "action.pid").exists(), timeout=90)
        [run_id] = set(runs(tmp_path)) - {first.json["run_id"]}
        assert ll_loop(tmp_path, "stop", run_id).code == 0
        replay.communicate(timeout=15)
    finally:
        end_action_group(tmp_path / "action.pid")
    (tmp_path / "go").touch()
    resumed = ll_loop(tmp_path, "resume", run_id, "--json", "-q")
    assert resumed.json["final_state"] == "done", resumed.stdout + resumed.stderr
    assert len(loopback.requests) == served
    calls = [e for e in resumed.events() if e["event"] == "llm_call"]
    assert [(c["state"], c["source"]) for c in calls] == [("judge", "replay"), ("again", "replay")]


CALLS_CHILD = """
name: caller
initial: call
scope: [src]
states:
  call:
    loop: spends
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


def test_a_childs_spend_before_a_kill_stays_in_the_parents_cost(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Killed inside its child, after the child's $3 judge: the child goes on from its own
    boundary, and the parent, from the boundary before the child began, used to lose the $3
    (the child said $3, its parent $0)."""
    write_loop(tmp_path, CHILD_SPENDS, "spends.yaml")
    write_loop(tmp_path, CALLS_CHILD)
    loopback.push(verdict_reply("yes", evidence="All 5 checks passed", input_tokens=1_000_000))
    try:
        run_id = killed_while_held(tmp_path)
        (tmp_path / "go").touch()
        resumed = ll_loop(tmp_path, "resume", run_id, "--json", "-q")
    finally:
        end_action_group(tmp_path / "action.pid")
    assert resumed.json["final_state"] == "done", resumed.stdout + resumed.stderr
    assert resumed.json["cost_usd"] == pytest.approx(3.0, abs=0.01)
    history = json.loads(ll_loop(tmp_path, "history", "--json").stdout)["runs"]
    assert history[0]["cost_usd"] == pytest.approx(3.0, abs=0.01)


def test_calls_made_after_the_last_boundary_count_after_a_resume(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Killed while the judge of a prompt state waits: the prompt's $3 answer was billed, and
    the state runs again on resume, billing another. The run's cost counts both (it used to
    count the second only: each kill hid a step's spend from max_cost_usd)."""
    write_loop(tmp_path, ASKED)
    loopback.push(
        text_reply("All checks passed", input_tokens=1_000_000, output_tokens=0),
        Reply(hang=60.0),  # the judge never answers
    )
    proc = spawn(tmp_path, "run", "loop.yaml", "--json", "-q")
    try:
        wait_until(lambda: len(loopback.requests) == 2, timeout=90)  # the judge is waiting
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    loopback.reset()
    loopback.push(
        text_reply("All checks passed", input_tokens=1_000_000, output_tokens=0),
        verdict_reply("yes", evidence="All checks passed", input_tokens=0, output_tokens=0),
    )
    resumed = ll_loop(tmp_path, "resume", next(runs(tmp_path)), "--json", "-q")
    assert resumed.json["final_state"] == "done", resumed.stdout + resumed.stderr
    assert resumed.json["cost_usd"] == pytest.approx(6.0)


def test_a_resumed_run_with_a_torn_call_log_still_replays(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The crash cut llm.jsonl's last line short; resume used to append the next call to it,
    leaving a line in the middle of the log that is no JSON, so `--replay` of the run failed."""
    write_loop(tmp_path, HELD)
    loopback.push(
        verdict_reply("yes", evidence="All 5 checks passed"),
        verdict_reply("yes", evidence="All 5 checks passed, again"),
    )
    try:
        run_id = killed_while_held(tmp_path)
    finally:
        end_action_group(tmp_path / "action.pid")
    run_id = next(runs(tmp_path))
    log = tmp_path / ".loops" / "runs" / run_id / "llm.jsonl"
    with log.open("a") as handle:
        handle.write('{"attempts":1,"cost_usd":0.0,"error":null,"hash":"7a')  # died mid-write
    (tmp_path / "go").touch()
    resumed = ll_loop(tmp_path, "resume", run_id, "--json", "-q")
    assert resumed.json["final_state"] == "done", resumed.stdout + resumed.stderr
    served = len(loopback.requests)
    loopback.default = error_reply(500)
    again = ll_loop(tmp_path, "run", "loop.yaml", "--json", "-q", "--replay", run_id)
    assert again.json["final_state"] == "done", again.stdout + again.stderr
    assert len(loopback.requests) == served


def test_a_replay_of_a_resumed_run_skips_the_calls_of_the_killed_attempt(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Killed while the judge waits: the prompt's first answer is in llm.jsonl, but the run
    went on with the answer of the state's second attempt. Its replay must take that one (it
    took the first, then missed the judge's request, which judged the second)."""
    write_loop(tmp_path, ASKED)
    loopback.push(
        text_reply("All checks passed (first attempt)"),
        Reply(hang=60.0),  # the judge never answers
    )
    proc = spawn(tmp_path, "run", "loop.yaml", "--json", "-q")
    try:
        wait_until(lambda: len(loopback.requests) == 2, timeout=90)  # the judge is waiting
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    loopback.reset()
    loopback.push(
        text_reply("All checks passed (second attempt)"),
        verdict_reply("yes", evidence="All checks passed (second attempt)"),
    )
    run_id = next(runs(tmp_path))
    run_dir = tmp_path / ".loops" / "runs" / run_id
    # a resume that died after marking the killed attempt's calls: the next marks them again
    mark_abandoned(run_dir, abandoned_calls(run_dir / "events.jsonl").start)
    resumed = ll_loop(tmp_path, "resume", run_id, "--json", "-q")
    assert resumed.json["final_state"] == "done", resumed.stdout + resumed.stderr
    loopback.default = error_reply(500)
    again = ll_loop(tmp_path, "run", "loop.yaml", "--json", "-q", "--replay", run_id)
    assert again.json["final_state"] == "done", again.stdout + again.stderr
    assert len(loopback.requests) == 2
    [answer] = [e for e in again.events() if e["event"] == "action_complete"]
    assert answer["output"] == "All checks passed (second attempt)"


TWICE = """
name: twice
initial: check
max_steps: 10
scope: [src]
states:
  check:
    action: "echo 'All 5 checks passed'"
    evaluate: {type: llm_structured, prompt: "Did every check pass? Quote it."}
    on_yes: done
    on_no: hold
    on_error: failed
  hold:
    action: |
      echo $$ > action.pid
      while [ ! -f go ]; do sleep 0.05; done
    next: check
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


def test_a_resumed_replay_goes_on_from_the_answers_it_had_replayed(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The same judge request twice, answered `no` then `yes`; the replay is stopped between
    them. After its resume the second request gets the second answer (the replay log used to
    start again from the first: `no` once more, and a path the recorded run never took)."""
    write_loop(tmp_path, TWICE)
    (tmp_path / "go").touch()
    loopback.push(
        verdict_reply("no", evidence="All 5 checks passed"),
        verdict_reply("yes", evidence="All 5 checks passed"),
    )
    first = ll_loop(tmp_path, "run", "loop.yaml", "--json", "-q")
    assert (first.json["final_state"], first.json["steps"]) == ("done", 3), first.stderr
    (tmp_path / "go").unlink()
    (tmp_path / "action.pid").unlink()
    loopback.default = error_reply(500)
    replay = spawn(tmp_path, "run", "loop.yaml", "--json", "-q", "--replay", first.json["run_id"])
    try:
        wait_until(lambda: (tmp_path / "action.pid").exists(), timeout=90)
        [run_id] = set(runs(tmp_path)) - {first.json["run_id"]}
        assert ll_loop(tmp_path, "stop", run_id).code == 0
        replay.communicate(timeout=15)
    finally:
        end_action_group(tmp_path / "action.pid")
    (tmp_path / "go").touch()
    resumed = ll_loop(tmp_path, "resume", run_id, "--json", "-q")
    assert (resumed.json["final_state"], resumed.json["steps"]) == ("done", 3), resumed.stdout
    assert [v for s, v in resumed.verdicts() if s == "check"] == ["no", "yes"]
    assert len(loopback.requests) == 2


def test_a_budget_spent_to_the_cent_ends_the_run(loopback: LoopbackServer, tmp_path: Path) -> None:
    """Ten calls of $0.10 against `max_cost_usd: 1.0`: the spend has reached the limit, so no
    eleventh step (in floating point the ten add up to 0.9999999999999999, which let it run)."""
    loop = """
name: tenth
initial: check
max_steps: 20
max_cost_usd: 1.0
scope: [src]
llm: {model: claude-haiku-4-5}
states:
  check:
    action: "echo 'All 5 checks passed'"
    evaluate: {type: llm_structured, prompt: "Did every check pass? Quote it."}
    on_yes: check
    on_no: done
    on_error: done
  done: {terminal: true}
"""
    loopback.default = verdict_reply(
        "yes", evidence="All 5 checks passed", input_tokens=100_000, output_tokens=0
    )
    ran = run_yaml(tmp_path, loop)
    assert (ran.json["terminated_by"], ran.json["steps"]) == ("max_cost", 10), ran.stdout
    assert len(loopback.requests) == 10


def test_every_level_of_a_run_killed_two_sub_loops_deep_keeps_its_spend(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """top → caller → spends, killed in `spends` after its $3 judge. Each level is continued
    from its own boundary; each must still count the $3 (the middle one, whose last boundary
    came before it, used to say $0)."""
    write_loop(tmp_path, CHILD_SPENDS, "spends.yaml")
    write_loop(tmp_path, CALLS_CHILD, "caller.yaml")
    write_loop(tmp_path, CALLS_CHILD.replace("name: caller", "name: top").replace(
        "loop: spends", "loop: caller"))  # fmt: skip
    loopback.push(verdict_reply("yes", evidence="All 5 checks passed", input_tokens=1_000_000))
    try:
        run_id = killed_while_held(tmp_path)
        (tmp_path / "go").touch()
        resumed = ll_loop(tmp_path, "resume", run_id, "--json", "-q")
    finally:
        end_action_group(tmp_path / "action.pid")
    assert resumed.json["final_state"] == "done", resumed.stdout + resumed.stderr
    middle = resumed.run_dir / "children" / "call-1"
    inner = middle / "children" / "call-1"
    costs = [json.loads((d / "state.json").read_text())["cost_usd"] for d in (middle, inner)]
    assert [resumed.json["cost_usd"], *costs] == pytest.approx([3.0, 3.0, 3.0], abs=0.01)
