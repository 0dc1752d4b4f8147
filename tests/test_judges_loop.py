"""Assessments in loops, end to end through `ll-loop run`: every judge kind in one state against
the loopback server, captures other states read, preflight, replay, and bad judges as errors."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engine.load.resources import schema_path
from tests.judges_helpers import by_tool
from tests.loopback_server import LoopbackServer, text_reply, tool_reply, tool_use_reply
from tests.run_helpers import LL_LOOP, ll_loop, run_yaml, write_loop

EVERY_KIND = """\
name: every-kind
initial: build
scope: ["."]
states:
  build:
    action: "mkdir -p dist && echo 'built dist/app.js, 40 tests passed' && echo ok > dist/app.js"
    evaluate:
      type: assessment
      outputs: [dist]
      judges:
        - {name: exit_ok, builtin: exit_code}
        - {name: mentions_tests, builtin: regex, arguments: {pattern: '\\d+ tests passed'}}
        - name: dist_written
          check: |
            return outputs["dist_content"].strip() == "ok", outputs["dist_file"]
        - name: quality
          prompt: "Rate the build log 1-5. Quote the line you rely on.\\n{{ outputs.stdout }}"
        - name: green
          feedback_type: bool
          prompt: "Did the tests pass? Quote the evidence."
      expectations:
        - {type: test, command: "test -s dist/app.js"}
        - {type: file_exists, paths: [dist/app.js]}
        - {type: llm_review, criteria: "Is the build sound?", reviewers: 3}
      metrics:
        - {name: tests_count, command: "echo 40", threshold: 30}
    on_yes: report
    on_no: failed
    on_error: broken
  report:
    action: >-
      echo "quality ${captured.build.judges.quality.value}
      tests ${captured.build.judges.tests_count.value}"
    next: done
  done: {terminal: true}
  failed: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
"""

ANSWERS: dict[str, dict[str, Any]] = {
    "submit_score": {"score": 4, "reason": "clean", "evidence": "40 tests passed"},
    "submit_evaluation": {
        "passed": True,
        "confidence": 0.9,
        "reason": "all passed",
        "evidence": "40 tests passed",
    },
    "submit_scores": {
        "correctness": 4,
        "completeness": 4,
        "code_quality": 4,
        "edge_cases": 3,
        "reason": "sound",
    },
}


def test_every_judge_kind_runs_in_one_state_and_is_captured(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = by_tool(ANSWERS)
    ran = run_yaml(tmp_path, EVERY_KIND)
    assert ran.code == 0, ran.stderr
    assert ran.json["final_state"] == "done"
    judges = ran.state()["captured"]["build"]["judges"]
    assert set(judges) == {
        "exit_ok", "mentions_tests", "dist_written", "quality", "green", "test", "file_exists",
        "llm_review", "tests_count",
    }  # fmt: skip
    assert all(j["passed"] for j in judges.values()), judges
    assert judges["quality"]["value"] == 4.0 and judges["quality"]["score_range"] == [1.0, 5.0]
    assert judges["green"]["evidence"] == "40 tests passed"
    assert judges["tests_count"]["value"] == 40.0
    assert judges["dist_written"]["rationale"] == "dist/app.js"
    assert judges["llm_review"]["value"] == pytest.approx(3.85)
    assert judges["quality"]["cost_usd"] > 0
    report = next(
        e for e in ran.events() if e["event"] == "action_complete" and e["state"] == "report"
    )
    assert report["output"] == "quality 4.0 tests 40.0\n"
    # score + evaluation + three reviewers, each exploring the changed dist/ for one turn first
    assert len(loopback.requests) == 8
    assert ran.json["cost_usd"] > 0
    validator = jsonschema.Draft202012Validator(
        json.loads(schema_path("events.schema.json").read_text())
    )
    for event in ran.events():
        validator.validate(event)
    assert len([e for e in ran.events() if e["event"] == "judge"]) == 9


def test_a_failing_judge_routes_no_and_an_erroring_one_error(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = by_tool({**ANSWERS, "submit_score": {**ANSWERS["submit_score"], "score": 2}})
    ran = run_yaml(tmp_path, EVERY_KIND)
    assert ran.json["final_state"] == "failed"
    broken = EVERY_KIND.replace("echo 40", "echo forty")
    loopback.default = by_tool(ANSWERS)
    ran = run_yaml(tmp_path, broken)
    assert ran.json["final_state"] == "broken"
    [evaluate] = [e for e in ran.events() if e["event"] == "evaluate"]
    assert evaluate["details"]["failing"] == ["tests_count"]
    assert "printed 'forty', not a number" in evaluate["details"]["feedback"]


def test_llm_judges_need_credentials_before_the_first_step(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    ran = run_yaml(tmp_path, EVERY_KIND)
    assert ran.code == 2 and "ANTHROPIC_API_KEY" in ran.json["error"]
    assert "'build'" in ran.json["error"]


def test_replay_answers_every_judge_from_the_log(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.default = by_tool(ANSWERS)
    first = run_yaml(tmp_path, EVERY_KIND)
    served = len(loopback.requests)
    loopback.default = by_tool({})  # any live call would now fail
    again = run_yaml(tmp_path, EVERY_KIND, "--replay", first.run_dir.name)
    assert again.code == 0, again.stderr
    assert len(loopback.requests) == served


def test_a_crashed_action_is_not_judged(loopback: LoopbackServer, tmp_path: Path) -> None:
    text = EVERY_KIND.replace('action: "mkdir -p dist', 'action: "exit 7; mkdir -p dist')
    ran = run_yaml(tmp_path, text)
    assert ran.json["final_state"] == "broken"
    assert not [e for e in ran.events() if e["event"] == "judge"]
    assert loopback.requests == []


def test_a_bad_judge_reasoning_setting_stops_the_run_in_preflight(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_JUDGE_REASONING", "lots")
    ran = run_yaml(tmp_path, EVERY_KIND)
    assert ran.code == 2
    assert "LL_JUDGE_REASONING='lots' is not off, low, medium, high" in ran.json["error"]
    assert loopback.requests == []


def test_show_names_a_states_judges(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").write_text(EVERY_KIND)
    shown = ll_loop(tmp_path, "show", "loop.yaml")
    assert "shell [assessment: exit_ok, mentions_tests, dist_written, quality," in shown.stdout


TEMPLATE_TEXT_IN_A_VALUE = """\
name: note
initial: note
scope: ["."]
states:
  note:
    action: "echo 'Go templates write {{ .Name }}, Jinja {% if x %}, and $${HOME}'"
    capture: note
    next: work
  work:
    action: "echo 'explained {{ .Name }}'"
    evaluate:
      type: assessment
      judges:
        - name: explains
          prompt: "Does the answer explain: ${captured.note.output}? Quote evidence. $${literal}"
    on_yes: done
    on_no: failed
    on_error: broken
  done: {terminal: true}
  failed: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
"""


def test_an_interpolated_value_in_a_judge_prompt_is_text_not_template_code(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    answer = {"score": 4, "reason": "ok", "evidence": "explained {{ .Name }}"}
    loopback.default = by_tool({"submit_score": answer})
    ran = run_yaml(tmp_path, TEMPLATE_TEXT_IN_A_VALUE)
    judged = ran.state()["captured"]["work"]["judges"]["explains"]
    assert ran.json["final_state"] == "done", judged.get("error")
    content = loopback.requests[0].body["messages"][0]["content"]
    assert content.startswith(
        "Does the answer explain: Go templates write {{ .Name }}, Jinja {% if x %}, and ${HOME}? "
        "Quote evidence. ${literal}"
    )


LAZY_IMPORT = """\
name: lazy
initial: work
scope: ["."]
states:
  work:
    action: "echo hello"
    evaluate:
      type: assessment
      judges:
        - {name: greets, module: evals.checks, function: greets}
    on_yes: done
    on_no: failed
    on_error: broken
  done: {terminal: true}
  failed: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
"""


def test_a_module_judge_may_import_its_projects_modules_when_it_runs(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "checks.py").write_text(
        "def greets(outputs):\n"
        "    import wording  # a module of the project, imported when the judge runs\n"
        "    return wording.GREETING in outputs['stdout'], 'greets'\n"
    )
    (tmp_path / "wording.py").write_text("GREETING = 'hello'\n")
    ran = run_yaml(tmp_path, LAZY_IMPORT)
    judged = ran.state()["captured"]["work"]["judges"]["greets"]
    assert ran.json["final_state"] == "done", judged.get("error")


STRUCTURED_WITH_REASONING = """\
name: thinks
initial: work
scope: ["."]
states:
  work:
    action: "echo 'all 40 tests passed'"
    evaluate:
      type: assessment
      reasoning: medium
      judges:
        - {name: green, builtin: llm_structured, arguments: {prompt: "Did the tests pass?"}}
    on_yes: done
    on_no: failed
    on_error: broken
  done: {terminal: true}
  failed: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
"""


def test_the_llm_structured_builtin_thinks_as_the_assessment_says(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    verdict = {"verdict": "yes", "confidence": 0.9, "reason": "ok", "evidence": "40 tests passed"}
    loopback.default = tool_reply(verdict)  # through the one tool the request offers
    ran = run_yaml(tmp_path, STRUCTURED_WITH_REASONING)
    assert ran.json["final_state"] == "done"
    [request] = [r.body for r in loopback.requests]
    assert request["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert request["tool_choice"] == {"type": "auto"} and "temperature" not in request


METRIC_AND_SCORE = """\
name: gates
initial: work
scope: ["."]
states:
  work:
    action: "echo done"
    evaluate:
      type: assessment
      judges:
        - {name: weak, check: "return 0.4, 'thin'"}
      metrics:
        - {name: coverage, command: "echo 10", threshold: 90}
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


def test_a_metric_has_no_zero_to_one_range_and_a_failed_one_ranks_as_a_fail(
    tmp_path: Path,
) -> None:
    ran = run_yaml(tmp_path, METRIC_AND_SCORE)
    captured = ran.state()["captured"]["work"]
    coverage = captured["judges"]["coverage"]
    assert (coverage["value"], coverage["passed"]) == (10.0, False)
    assert "score_range" not in coverage  # 10 on a [0, 1] range was what the capture said
    assert captured["judges"]["weak"]["score_range"] == [0.0, 1.0]
    assert captured["failing"] == ["coverage", "weak"]  # 10 of 90 had ranked as 1.0 of 1


STOPPED_WHILE_JUDGED = """\
name: judged-slowly
initial: work
scope: ["."]
states:
  work:
    action: "echo built"
    evaluate:
      type: assessment
      expectations:
        - {type: test, command: "touch judging; sleep 60"}
    on_yes: done
    on_no: failed
    on_error: broken
  done: {terminal: true}
  failed: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
"""


def test_a_stop_while_judging_stops_the_run_instead_of_routing_the_killed_judge(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, STOPPED_WHILE_JUDGED)
    proc = subprocess.Popen(
        [str(LL_LOOP), "run", "loop.yaml", "--json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / "judging").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    result = json.loads(out)
    # The killed test had been the judge's error, routed on_error to the failure terminal.
    assert (proc.returncode, result["terminated_by"], result["final_state"]) == (
        3,
        "stopped",
        "work",
    )
    state = next((tmp_path / ".loops" / "runs").iterdir()) / "state.json"
    assert json.loads(state.read_text())["status"] == "stopped"  # resumable: work runs again


EXPLORED_REVIEW = """\
name: reviewed
initial: work
scope: ["."]
states:
  work:
    action: "echo changed > app.py"
    evaluate:
      type: assessment
      expectations:
        - {type: llm_review, criteria: "Is the change right?", reviewers: 1, explore: true}
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


def test_a_stopped_run_makes_no_more_judge_calls(loopback: LoopbackServer, tmp_path: Path) -> None:
    # An exploring reviewer that always wants one more look, each turn taking a while.
    loopback.default = tool_use_reply(("glob", {"pattern": "*"}), delay=0.5)
    write_loop(tmp_path, EXPLORED_REVIEW)
    proc = subprocess.Popen(
        [str(LL_LOOP), "run", "loop.yaml", "--json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not loopback.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert json.loads(out)["terminated_by"] == "stopped"
    # The call in flight ends; none follows (the reviewer had gone on for its 20 turns).
    assert len(loopback.requests) <= 2, len(loopback.requests)


def test_cost_budget_judges_the_cost_of_a_prompt_through_the_sdk(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Only an agent CLI's stream set the record's cost_usd: a prompt answered through the
    `anthropic` runner cost money the run counted, and `cost_budget` saw $0 and passed."""
    loopback.default = text_reply("Paris.", input_tokens=100_000, output_tokens=1_000)
    ran = run_yaml(
        tmp_path,
        """\
        name: priced
        initial: ask
        scope: ["."]
        states:
          ask:
            action: What is the capital of France?
            action_type: prompt
            timeout: 60
            evaluate:
              type: assessment
              judges:
                - {name: budget, builtin: cost_budget, arguments: {max_cost_usd: 0.01}}
            on_yes: done
            on_no: over
          done: {terminal: true}
          over: {terminal: true}
        """,
    )
    assert ran.json["cost_usd"] > 0.01, ran.stderr
    budget = ran.state()["captured"]["ask"]["judges"]["budget"]
    assert budget["passed"] is False
    assert budget["rationale"] == f"cost ${ran.json['cost_usd']:.4f} of a $0.0100 budget"
    assert ran.json["final_state"] == "over"


def test_an_output_json_judges_interpolated_target_keeps_its_type(tmp_path: Path) -> None:
    """`target: ${context.want}` in an assessment's output_json judge was rendered to the text
    "2", which never equals the document's number 2: the judge failed a matching value."""
    (tmp_path / "doc.json").write_text('{"n": 2, "ok": true}')
    ran = run_yaml(
        tmp_path,
        """
        name: typed-judge
        initial: check
        scope: ["."]
        context: {want: 2, on: true}
        states:
          check:
            action: cat doc.json
            evaluate:
              type: assessment
              judges:
                - {name: n, builtin: output_json, arguments: {path: .n, target: "${context.want}"}}
                - {name: ok, builtin: output_json, arguments: {path: .ok, target: "${context.on}"}}
            on_yes: done
            on_no: failed
            on_error: failed
          done: {terminal: true}
          failed: {terminal: true, failure: true}
        """,
    )
    assert (ran.code, ran.json["final_state"]) == (0, "done"), ran.stderr
