"""A parent without LLM states whose sub-loop judges with an LLM: preflight and services.

The run's credentials preflight covers the sub-loops it names literally, so a missing key stops
the run before its first step; the child's calls go through the run's own LLM services, so
`--replay` and the run's cost cover them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.loopback_server import LoopbackServer, error_reply, verdict_reply
from tests.run_helpers import ll_loop, write_loop

PARENT = """
name: parent
initial: prepare
scope: ["."]
states:
  prepare:
    action: "touch prepared && echo ready"
    next: judge
  judge:
    loop: judged-child
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""

CHILD = """
name: judged-child
initial: check
scope: ["."]
states:
  check:
    action: "echo 'All 3 checks passed'"
    evaluate:
      type: llm_structured
      prompt: "Did every check pass? Quote the line that shows it."
    on_yes: ok
    on_no: bad
    on_error: bad
  ok: {terminal: true}
  bad: {terminal: true, failure: true}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_loop(tmp_path, PARENT, "parent.yaml")
    write_loop(tmp_path, CHILD, "judged-child.yaml")
    return tmp_path


def test_a_childs_missing_credentials_stop_the_run_before_its_first_step(
    loopback: LoopbackServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    ran = ll_loop(project, "run", "parent.yaml", "--json")
    assert ran.code == 2, ran.stderr
    error = ran.json["error"]
    assert "child loop 'judged-child'" in error and "ANTHROPIC_API_KEY" in error
    assert not (project / "prepared").exists()  # the parent's first action never ran
    assert loopback.requests == []


def test_a_childs_judge_uses_the_runs_services_and_replays(
    loopback: LoopbackServer, project: Path
) -> None:
    loopback.push(verdict_reply("yes", evidence="All 3 checks passed", input_tokens=1_000_000))
    first = ll_loop(project, "run", "parent.yaml", "--json")
    assert first.code == 0, first.stderr
    assert first.json["final_state"] == "done"
    assert first.json["cost_usd"] > 0  # the child's judge is in the run's cost
    assert (first.run_dir / "llm.jsonl").is_file()  # logged where --replay looks for it
    [call] = [e for e in first.events() if e["event"] == "llm_call"]
    assert call["depth"] == 1 and call["status"] == "ok"

    served = len(loopback.requests)
    loopback.default = error_reply(500)
    again = ll_loop(project, "run", "parent.yaml", "--json", "--replay", first.run_dir.name)
    assert again.code == 0, again.stderr
    assert again.json["final_state"] == "done"
    assert len(loopback.requests) == served  # answered from the log, no HTTP


def test_an_interpolated_child_is_left_to_the_run(
    loopback: LoopbackServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`loop: ${...}` is only known at run time: no preflight error, the judge fails then."""
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    dynamic = PARENT.replace("loop: judged-child", 'loop: "${context.child}"')
    write_loop(project, dynamic, "dynamic.yaml")
    ran = ll_loop(project, "run", "dynamic.yaml", "--json", "--context", "child=judged-child")
    assert (project / "prepared").exists()
    assert ran.json["final_state"] == "failed"
    assert ran.code == 1


def test_a_childs_cost_counts_against_the_parents_max_cost(
    loopback: LoopbackServer, project: Path
) -> None:
    """The parent has no LLM state of its own; its budget still stops it after the child."""
    looping = (
        PARENT.replace("on_yes: done", "on_yes: judge")
        .replace("on_no: failed", "on_no: done")
        .replace('scope: ["."]\n', 'scope: ["."]\nmax_cost_usd: 0.01\n', 1)
    )
    write_loop(project, looping, "budget.yaml")
    loopback.default = verdict_reply("yes", evidence="All 3 checks passed", input_tokens=1_000_000)
    ran = ll_loop(project, "run", "budget.yaml", "--json")
    assert ran.json["terminated_by"] == "max_cost", ran.stdout
    assert ran.code == 3
    assert len([e for e in ran.events() if e["event"] == "llm_call"]) == 1


def test_the_parents_budget_ends_a_child_that_keeps_spending(
    loopback: LoopbackServer, project: Path
) -> None:
    """A child that judges again after every NO spent its whole `max_steps` ($3 a call, ten
    calls) under a parent whose `max_cost_usd` was $1: the budget was checked only at the
    parent's boundaries, after the child's last step."""
    parent = PARENT.replace("loop: judged-child", "loop: stubborn-child\n    capture: inner")
    parent = parent.replace('scope: ["."]\n', 'scope: ["."]\nmax_cost_usd: 1.0\n', 1)
    child = (
        CHILD.replace("name: judged-child", "name: stubborn-child\nmax_steps: 10")
        .replace("on_no: bad", "on_no: check")
        .replace("on_error: bad", "on_error: check")
    )
    write_loop(project, parent, "budget.yaml")
    write_loop(project, child, "stubborn-child.yaml")
    loopback.default = verdict_reply("no", input_tokens=1_000_000)
    ran = ll_loop(project, "run", "budget.yaml", "--json")
    assert len([e for e in ran.events() if e["event"] == "llm_call"]) == 1, ran.stdout
    inner = ran.state()["captured"]["inner"]
    assert inner["terminated_by"] == "max_cost" and inner["steps"] == 1
    [child_end] = [e for e in ran.events() if e["event"] == "loop_complete" and e["depth"] == 1]
    assert child_end["error"] == "the max_cost_usd of a loop it runs under"  # not its own
    explained = ll_loop(project, "explain", ran.json["run_id"])
    assert "reaching the max_cost_usd of a loop it runs under" in explained.stdout
    assert ran.json["final_state"] == "failed"  # the child's `no`, routed as a timeout would be


def test_a_childs_budget_counts_only_its_own_spend(loopback: LoopbackServer, project: Path) -> None:
    """The parent spent $3 before calling the child; the child's $1 budget is its own."""
    parent = """
name: spender
initial: expensive
scope: ["."]
states:
  expensive:
    action: "echo 'All 3 checks passed'"
    evaluate: {type: llm_structured, prompt: "Did every check pass? Quote it."}
    on_yes: judge
    on_no: failed
    on_error: failed
  judge:
    loop: budgeted-child
    capture: inner
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""
    child = CHILD.replace("name: judged-child", "name: budgeted-child\nmax_cost_usd: 1.0")
    write_loop(project, parent, "spender.yaml")
    write_loop(project, child, "budgeted-child.yaml")
    loopback.push(
        verdict_reply("yes", evidence="All 3 checks passed", input_tokens=1_000_000),  # $3
        verdict_reply("yes", evidence="All 3 checks passed", input_tokens=100),
    )
    ran = ll_loop(project, "run", "spender.yaml", "--json")
    assert ran.code == 0, ran.stdout + ran.stderr
    inner = ran.state()["captured"]["inner"]
    assert inner["terminated_by"] == "terminal" and inner["terminal"] == "ok"
    assert ran.json["cost_usd"] > 3.0  # the run's total still counts both


def test_a_child_chosen_at_run_time_replays_too(loopback: LoopbackServer, project: Path) -> None:
    """`loop: ${...}` with a parent that calls no model: the child's judge is replayed with the
    run, never called (it used to get LLM services of its own, without the replay log)."""
    dynamic = PARENT.replace("loop: judged-child", 'loop: "${context.child}"')
    write_loop(project, dynamic, "dynamic.yaml")
    loopback.push(verdict_reply("yes", evidence="All 3 checks passed", input_tokens=1_000_000))
    first = ll_loop(project, "run", "dynamic.yaml", "--json", "--context", "child=judged-child")
    assert first.json["final_state"] == "done", first.stderr

    served = len(loopback.requests)
    loopback.default = error_reply(500)
    again = ll_loop(
        project, "run", "dynamic.yaml", "--json", "--context", "child=judged-child",
        "--replay", first.run_dir.name,
    )  # fmt: skip
    assert again.json["final_state"] == "done", again.stdout + again.stderr
    assert again.json["cost_usd"] == first.json["cost_usd"]  # the recorded cost, not spent
    assert len(loopback.requests) == served
    assert (first.run_dir / "llm.jsonl").is_file()  # the child's call is in the run's log

    (first.run_dir / "llm.jsonl").unlink()  # nothing to replay: refused before the first step
    refused = ll_loop(
        project, "run", "dynamic.yaml", "--json", "--context", "child=judged-child",
        "--replay", first.run_dir.name,
    )  # fmt: skip
    assert refused.code == 2
    assert refused.json["error"].startswith("cannot replay:")
    assert len(loopback.requests) == served


def test_a_child_stopped_by_its_own_budget_is_explained_with_the_amount(
    loopback: LoopbackServer, project: Path
) -> None:
    """explain said "reaching its max_cost_usd" for a child without the amount (it read limits
    from the top loop's file only); the amount now comes from the run's own events, so a loop
    file edited afterwards changes nothing."""
    parent = PARENT.replace("loop: judged-child", "loop: stubborn-child")
    child = (
        CHILD.replace("name: judged-child", "name: stubborn-child\nmax_steps: 10")
        .replace('scope: ["."]\n', 'scope: ["."]\nmax_cost_usd: 1.5\n', 1)
        .replace("on_no: bad", "on_no: check")
        .replace("on_error: bad", "on_error: check")
    )
    write_loop(project, parent, "budget.yaml")
    write_loop(project, child, "stubborn-child.yaml")
    loopback.default = verdict_reply("no", input_tokens=1_000_000)  # $3 a call
    ran = ll_loop(project, "run", "budget.yaml", "--json")
    [child_end] = [e for e in ran.events() if e["event"] == "loop_complete" and e["depth"] == 1]
    assert child_end["terminated_by"] == "max_cost", child_end
    write_loop(
        project, child.replace("max_cost_usd: 1.5", "max_cost_usd: 9"), "stubborn-child.yaml"
    )
    text = ll_loop(project, "explain", ran.json["run_id"]).stdout
    assert "reaching its max_cost_usd of $1.5," in text, text
    data = ll_loop(project, "explain", ran.json["run_id"], "--json").json
    assert "reaching its max_cost_usd of $1.5," in data["children"][0]["reason"]
