"""LLM judges through the real SDK and the loopback server: templates, bool with the evidence
contract, numeric scores with samples, `llm_review` with reviewers and exploring tool-use turns."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from engine.judges import run_judge
from tests.judges_helpers import by_tool, judge_of, judges_of, llm_env
from tests.loopback_server import (
    LoopbackServer,
    Reply,
    error_reply,
    forced_tool_name,
    text_reply,
    tool_reply,
    tool_results,
    tool_use_reply,
    verdict_reply,
)

RECORD: dict[str, Any] = {
    "stdout": "build finished: all 40 tests passed\n",
    "stderr": "",
    "exit_code": 0,
    "files": {},
    "modified_files": [],
    "conversation": "",
    "tool_calls": [],
}


def score(value: Any, reason: str = "fine", evidence: str = "all 40 tests passed") -> Any:
    return tool_reply({"score": value, "reason": reason, "evidence": evidence})


def test_numeric_judge_scores_through_submit_score_and_renders_its_template(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    judge = judge_of(
        """
        name: quality
        prompt: "Rate {{ arguments.what }}. Output:\\n{{ outputs.stdout }}"
        arguments: {what: the build log}
        """
    )
    loopback.push(score(4))
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert (result.status, result.value, result.passed) == ("ok", 4.0, True)
    assert result.score_range == (1.0, 5.0)
    request = loopback.requests[0].body
    assert request["tool_choice"] == {"type": "tool", "name": "submit_score"}
    schema = request["tools"][0]["input_schema"]["properties"]["score"]
    assert (schema["minimum"], schema["maximum"]) == (1, 5)
    content = request["messages"][0]["content"]
    assert content.startswith("Rate the build log. Output:\nbuild finished: all 40 tests passed")


def test_a_score_below_the_midpoint_fails_and_threshold_moves_the_mark(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(score(2), score(2))
    plain = judge_of("name: q\nprompt: Rate it.")
    assert run_judge(plain, RECORD, llm_env(tmp_path)).passed is False
    lenient = judge_of("name: q\nprompt: Rate it.\nthreshold: 2")
    assert run_judge(lenient, RECORD, llm_env(tmp_path)).passed is True


def test_samples_take_the_median_and_keep_every_sample(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(score(5), score(2), score(4))
    judge = judge_of("name: q\nprompt: Rate it.\nsamples: 3")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.value == 4.0
    assert sorted(s["score"] for s in result.samples) == [2.0, 4.0, 5.0]
    assert len(loopback.requests) == 3


def test_a_score_outside_the_range_is_asked_again_then_is_the_judges_error(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(score(9), score(7))
    judge = judge_of("name: q\nprompt: Rate it.")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.status == "error" and result.passed is None
    assert "outside the range 1-5" in str(result.error)
    assert "judge 'q' at judges.yaml:" in str(result.error)


def test_an_answer_without_a_score_says_so_not_score_none(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The reason once read `score None is not a number` (Python's word) in the report."""
    loopback.push(verdict_reply("yes"), verdict_reply("yes"))
    judge = judge_of("name: q\nprompt: Rate it.")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.status == "error"
    assert "the answer has no score" in str(result.error) and "None" not in str(result.error)


def test_an_unknown_template_variable_is_the_judges_error_naming_it(tmp_path: Path) -> None:
    judge = judge_of("name: q\nprompt: 'Judge {{ output }}'")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.status == "error"
    assert "'output', which does not exist" in str(result.error)
    assert "judges.yaml:10" in str(result.error)  # the line of the judge entry
    assert "(did you mean 'outputs'?)" in str(result.error)


def test_an_unknown_template_filter_is_the_judges_error_naming_the_one_meant(
    tmp_path: Path,
) -> None:
    """Jinja's compiler refuses it (not its parser): one sentence, not TemplateAssertionError
    with a `File "<introspection>"` tail."""
    judge = judge_of("name: q\nprompt: 'Judge {{ outputs | uppper }}'")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.status == "error"
    assert str(result.error).endswith(
        "its template does not compile: No filter named 'uppper'. (did you mean 'upper'?)"
    )


def test_bool_judge_passes_with_a_verbatim_quote(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(
        tool_reply(
            {"passed": True, "confidence": 0.9, "reason": "ok", "evidence": "all 40 tests passed"}
        )
    )
    judge = judge_of("name: green\nprompt: Did every test pass?\nfeedback_type: bool")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert (result.value, result.passed, result.evidence) == (True, True, "all 40 tests passed")
    request = loopback.requests[0].body
    assert request["tool_choice"]["name"] == "submit_evaluation"
    assert "verbatim quote" in request["messages"][0]["content"]
    assert "all 40 tests passed" in request["messages"][0]["content"]  # the appended record


def test_bool_pass_with_an_invented_quote_fails(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(
        tool_reply(
            {"passed": True, "confidence": 0.9, "reason": "ok", "evidence": "all 41 tests passed"}
        )
    )
    judge = judge_of("name: green\nprompt: Did every test pass?\nfeedback_type: bool")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert (result.value, result.passed) == (False, False)
    assert "pass rejected" in result.details["evidence_check"]


def test_a_pass_rejected_for_its_quote_says_so_in_its_rationale(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The rationale is what the report and a fix prompt show of a failed judge: the model's
    reason for a pass alone ("every test passed") would say the opposite of the verdict."""
    invented = "all 41 tests passed"
    loopback.push(
        tool_reply(
            {"passed": True, "confidence": 0.9, "reason": "they pass", "evidence": invented}
        ),
        verdict_reply("yes", reason="they pass", evidence=invented),
    )
    judges = judges_of(
        """
        type: assessment
        judges:
          - {name: green, prompt: Did every test pass?, feedback_type: bool}
          - {name: st, builtin: llm_structured, arguments: {prompt: Did every test pass?}}
        """
    )
    for judge, rejected in zip(judges, ("pass rejected: ", "no: yes rejected: "), strict=True):
        result = run_judge(judge, RECORD, llm_env(tmp_path))
        assert result.passed is False
        assert result.rationale.startswith(rejected + f"the evidence {invented!r} does not occur")
        assert result.rationale.endswith("the model's reason: they pass"), result.rationale


def test_a_quote_missing_from_several_pieces_of_material_is_not_said_to_be_shortened(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The material of an LLM judge is several pieces (stdout, each file, the conversation),
    none of them shortened; a quote found in none of them was said to be missing from "the
    judged text as shortened for the judge", which sent a reader looking for a limit that was
    never reached (a suite case whose whole answer was `4`)."""
    loopback.push(
        tool_reply({"passed": True, "confidence": 0.9, "reason": "ok", "evidence": "Paris"})
    )
    judge = judge_of("name: right\nprompt: Is the answer right?\nfeedback_type: bool")
    record = {**RECORD, "files": {"main/answer.md": "4\n"}}
    result = run_judge(judge, record, llm_env(tmp_path))
    assert result.passed is False
    check = result.details["evidence_check"]
    assert check == "pass rejected: the evidence 'Paris' does not occur in the judged text", check


@pytest.mark.parametrize(
    ("stdout", "prompt", "quote"),
    [
        ("", "Was the report printed?", "no output"),
        ("error: disk full\n", "Did it succeed?", "--- stdout"),
        ("error: disk full\n", "Did it succeed? {{ outputs }}", "stdout"),
        ("ran\n", "Did the agent run the tests? {{ tool_trace }}", "no tool calls"),
    ],
)
def test_a_quote_of_our_own_labels_is_not_evidence(
    loopback: LoopbackServer, tmp_path: Path, stdout: str, prompt: str, quote: str
) -> None:
    # The judged material is shown with labels and placeholders of ours ("--- stdout",
    # "(no output)", "(no tool calls)"): quoting them proves nothing about the work.
    loopback.push(
        tool_reply({"passed": True, "confidence": 0.9, "reason": "ok", "evidence": quote})
    )
    judge = judge_of(f"name: b\nfeedback_type: bool\nprompt: {prompt!r}")
    result = run_judge(judge, {**RECORD, "stdout": stdout}, llm_env(tmp_path))
    assert (result.value, result.passed) == (False, False)
    assert result.details["evidence_check"].startswith("pass rejected")


def test_bool_judge_with_low_confidence_abstains_as_an_error(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(
        tool_reply(
            {"passed": True, "confidence": 0.2, "reason": "?", "evidence": "all 40 tests passed"}
        )
    )
    judge = judge_of("name: green\nprompt: Did it pass?\nfeedback_type: bool")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.status == "error" and result.passed is None
    assert "abstained" in str(result.error)


def test_api_failure_is_an_error_never_a_pass(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.default = error_reply(500)
    judge = judge_of("name: green\nprompt: Did it pass?\nfeedback_type: bool")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.status == "error" and result.passed is None


def test_llm_rubric_appends_the_conversation(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(score(5))
    judge = judge_of("name: polite\nllm_rubric: The agent is polite.")
    record = {**RECORD, "conversation": "Happy to help! Here is the fix."}
    run_judge(judge, record, llm_env(tmp_path))
    content = loopback.requests[0].body["messages"][0]["content"]
    assert content.startswith("The agent is polite.")
    assert "Happy to help! Here is the fix." in content


def test_the_evidence_contract_follows_the_prompt_never_the_work_it_shows(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Work that says "evidence" or "quote" (a conversation, a file) does not switch the
    contract off, nor does the `{{ evidence }}` variable; a prompt asking for a quote does."""
    loopback.default = score(4)
    chatty = {**RECORD, "conversation": "I quoted the log verbatim as evidence."}
    judges = [
        ("name: a\nllm_rubric: The agent is polite.", chatty, True),
        ("name: b\nprompt: 'Rate it. {{ outputs }}'", {**RECORD, "stdout": "evidence: ok"}, True),
        ("name: c\nprompt: 'Rate it. Facts: {{ evidence }}'", RECORD, True),
        ("name: d\nprompt: Rate it and quote the line you rely on.", chatty, False),
    ]
    for entry, record, appended in judges:
        run_judge(judge_of(entry), record, llm_env(tmp_path))
        content = loopback.requests[-1].body["messages"][0]["content"]
        assert ("Evidence contract" in content) is appended, entry


def test_reasoning_sets_extended_thinking(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_JUDGE_REASONING", "medium")
    loopback.push(score(4))
    judge = judge_of("name: q\nprompt: Rate it.")
    assert run_judge(judge, RECORD, llm_env(tmp_path)).value == 4.0
    request = loopback.requests[0].body
    assert request["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert request["tool_choice"] == {"type": "auto"}
    assert request["max_tokens"] > 4096
    loopback.push(score(4))
    explicit = judge_of("name: q\nprompt: Rate it.\nreasoning: 2048")
    run_judge(explicit, RECORD, llm_env(tmp_path))
    assert loopback.requests[1].body["thinking"]["budget_tokens"] == 2048


# ---------------------------------------------------------------------------------------------
# llm_review

REVIEW = """
type: assessment
expectations:
  - type: llm_review
    criteria: The change handles the failure cases.
"""


def scores(**values: int) -> dict[str, Any]:
    return {**values, "reason": "looked at it"}


def test_llm_review_defaults_three_reviewers_median_and_threshold(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    good = scores(correctness=4, completeness=4, code_quality=3, edge_cases=3)
    outlier = scores(correctness=1, completeness=4, code_quality=3, edge_cases=3)
    loopback.push(tool_reply(good), tool_reply(good), tool_reply(outlier))
    [judge] = judges_of(REVIEW)
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.status == "ok"
    # correctness: median 4, the 1 is dropped (more than 1.5 away)
    assert result.details["dimensions"]["correctness"] == 4.0
    assert result.value == pytest.approx(0.35 * 4 + 0.30 * 4 + 0.20 * 3 + 0.15 * 3)
    assert result.passed is True
    assert len(loopback.requests) == 3
    tool = loopback.requests[0].body["tools"][0]
    assert set(tool["input_schema"]["required"]) == {
        "correctness",
        "completeness",
        "code_quality",
        "edge_cases",
        "reason",
    }


def test_llm_review_threshold_is_not_ignored(loopback: LoopbackServer, tmp_path: Path) -> None:
    mid = scores(correctness=3, completeness=3, code_quality=3, edge_cases=3)
    loopback.push(*(tool_reply(mid) for _ in range(3)))
    [judge] = judges_of(REVIEW + "    threshold: 4\n")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert (result.value, result.passed) == (3.0, False)


def test_one_reviewer_is_a_fallback_and_none_fails_the_judge(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_LLM_MAX_ATTEMPTS", "1")
    good = scores(correctness=5, completeness=5, code_quality=5, edge_cases=5)
    loopback.push(tool_reply(good), error_reply(400), error_reply(400))
    [judge] = judges_of(REVIEW)
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.value == 5.0 and "fallback" in result.details
    loopback.default = error_reply(400)
    failed = run_judge(judge, RECORD, llm_env(tmp_path))
    assert failed.status == "error" and "no reviewer returned usable scores" in str(failed.error)


def test_generated_dimensions_and_their_fallback(loopback: LoopbackServer, tmp_path: Path) -> None:
    made = {
        "dimensions": [
            {"name": "api_stability", "description": "clients keep working", "weight": 0.7},
            {"name": "docs", "description": "documented", "weight": 0.3},
        ]
    }
    loopback.default = by_tool(
        {"submit_dimensions": made, "submit_scores": scores(api_stability=4, docs=2)}
    )
    [judge] = judges_of(REVIEW + "    generate_dimensions: true\n")
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.details["dimensions"] == {"api_stability": 4.0, "docs": 2.0}
    assert result.value == pytest.approx(0.7 * 4 + 0.3 * 2)
    loopback.default = by_tool(
        {
            "submit_dimensions": {"dimensions": "none"},
            "submit_scores": scores(correctness=4, completeness=4, code_quality=4, edge_cases=4),
        }
    )
    fallback = run_judge(judge, RECORD, llm_env(tmp_path))
    assert fallback.value == 4.0
    assert fallback.details["dimensions_source"] == "defaults"


def test_a_generated_dimension_without_a_description_falls_back_to_the_defaults(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A file's dimension needs a description that is not empty (F010/F015: it is all the
    reviewers are told of what they score), but a generated one with `description: ""` (or
    blanks) was taken, so the reviewers scored a bare name."""
    made = {"dimensions": [{"name": "safety", "description": "  ", "weight": 1}]}
    defaults = {"correctness": 4, "completeness": 4, "code_quality": 4, "edge_cases": 4}
    loopback.default = by_tool(
        {"submit_dimensions": made, "submit_scores": {**defaults, "reason": "ok"}}
    )
    [judge] = judges_of(
        "type: assessment\nexpectations:\n"
        "  - {type: llm_review, criteria: c, reviewers: 1, generate_dimensions: true}\n"
    )
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.status == "ok", result.error
    assert result.details["dimensions_source"] == "defaults"
    assert "has no description" in result.details["dimensions_note"]


API_FIELD = re.compile(r"[a-zA-Z0-9_.-]{1,64}")  # what the Messages API takes as a field name


@pytest.mark.parametrize("name", ["Error handling", "reason", "x" * 65])
def test_a_generated_dimension_the_scoring_tool_cannot_carry_falls_back_to_the_defaults(
    loopback: LoopbackServer, tmp_path: Path, name: str
) -> None:
    made = {"dimensions": [{"name": name, "description": "failures are handled", "weight": 1}]}
    defaults = {"correctness": 4, "completeness": 4, "code_quality": 4, "edge_cases": 4}
    loopback.default = by_tool(
        {"submit_dimensions": made, "submit_scores": {**defaults, "reason": "ok"}}
    )
    [judge] = judges_of(
        "type: assessment\nexpectations:\n"
        "  - {type: llm_review, criteria: c, reviewers: 1, generate_dimensions: true}\n"
    )
    result = run_judge(judge, RECORD, llm_env(tmp_path))
    assert result.status == "ok", result.error
    assert result.details["dimensions_source"] == "defaults"
    assert "is not letters, digits" in result.details["dimensions_note"]
    scoring = loopback.requests[-1].body["tools"][0]["input_schema"]
    assert all(API_FIELD.fullmatch(key) for key in scoring["properties"])
    assert sorted(scoring["required"]) == sorted({*defaults, "reason"})


def test_dimension_rubric_text_reaches_the_reviewer(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = by_tool({"submit_scores": scores(compat=5)})
    block = """
    type: assessment
    expectations:
      - type: llm_review
        criteria: Review the API.
        dimensions:
          - name: compat
            description: Existing clients keep working.
            weight: 1
            rubric: {"1": "breaks every client", "5": "no client notices"}
    """
    [judge] = judges_of(block)
    assert run_judge(judge, RECORD, llm_env(tmp_path)).value == 5.0
    content = loopback.requests[0].body["messages"][0]["content"]
    assert "5: no client notices" in content and "1: breaks every client" in content


# ---------------------------------------------------------------------------------------------
# Exploring reviewers: real tool-use turns, confined to the workspace


def explorer(*turns: tuple[str, dict[str, Any]]) -> Any:
    """A reviewer that makes one tool call per turn (in order), then summarises, then scores.
    Stateless in the request, so three concurrent reviewers each get the same conversation."""
    final = scores(correctness=4, completeness=4, code_quality=4, edge_cases=4)

    def answer(request: dict[str, Any]) -> Reply:
        if request.get("tool_choice", {}).get("type") == "tool":
            return tool_reply(final)(request)  # type: ignore[operator, no-any-return]
        done = sum(1 for m in request["messages"] if m["role"] == "assistant" for _ in [m])
        if done < len(turns):
            return tool_use_reply(turns[done])(request)  # type: ignore[operator, no-any-return]
        return text_reply("I read the change; it looks right.")(request)  # type: ignore[operator, no-any-return]

    return answer


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def handler():\n    raise ValueError('bad input')\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    return root


def test_reviewer_of_changed_files_explores_with_tool_use_turns_before_scoring(
    loopback: LoopbackServer, workspace: Path
) -> None:
    loopback.default = explorer(
        ("glob", {"pattern": "src/**/*.py"}),
        ("read_file", {"path": "src/app.py"}),
        ("grep", {"pattern": "raise", "path": "src"}),
    )
    block = REVIEW + "    reviewers: 1\n"
    [judge] = judges_of(block)
    record = {**RECORD, "modified_files": ["src/app.py"]}
    result = run_judge(judge, record, llm_env(workspace))
    assert result.status == "ok", result.error
    assert result.samples[0]["tool_steps"] == 3
    bodies = [r.body for r in loopback.requests]
    assert [b.get("tool_choice", {}).get("type") for b in bodies] == ["auto"] * 4 + ["tool"]
    answers = [tool_results(b)[0]["content"] for b in bodies[1:4]]
    assert answers[0] == "src/app.py"
    assert "raise ValueError('bad input')" in answers[1]
    assert answers[2] == "src/app.py:2:     raise ValueError('bad input')"
    scoring = bodies[-1]
    assert scoring["tool_choice"] == {"type": "tool", "name": "submit_scores"}
    assert scoring["messages"][-1]["content"][-1]["text"].startswith("Exploration is over")


@pytest.mark.parametrize("path", ["../secret.txt", "link.txt", "/etc/passwd"])
def test_exploring_outside_the_workspace_is_refused(
    loopback: LoopbackServer, workspace: Path, path: str
) -> None:
    loopback.default = explorer(("read_file", {"path": path}))
    [judge] = judges_of(REVIEW + "    reviewers: 1\n    explore: true\n")
    result = run_judge(judge, RECORD, llm_env(workspace))
    assert result.status == "ok"
    [answer] = tool_results(loopback.requests[1].body)
    assert answer["is_error"] is True
    assert "outside the workspace" in answer["content"]
    assert all("TOP SECRET" not in str(r.body) for r in loopback.requests)


def test_glob_and_grep_skip_symlinks_that_leave_the_workspace(
    loopback: LoopbackServer, workspace: Path
) -> None:
    loopback.default = explorer(("glob", {"pattern": "**"}), ("grep", {"pattern": "SECRET"}))
    [judge] = judges_of(REVIEW + "    reviewers: 1\n    explore: true\n")
    run_judge(judge, RECORD, llm_env(workspace))
    assert tool_results(loopback.requests[1].body)[0]["content"] == "src/app.py"
    assert "no line matches" in tool_results(loopback.requests[2].body)[0]["content"]


def test_exploration_stops_after_twenty_tool_steps(
    loopback: LoopbackServer, workspace: Path
) -> None:
    def greedy(request: dict[str, Any]) -> Reply:
        if request.get("tool_choice", {}).get("type") == "tool":
            final = scores(correctness=3, completeness=3, code_quality=3, edge_cases=3)
            return tool_reply(final)(request)  # type: ignore[operator, no-any-return]
        return tool_use_reply(("glob", {"pattern": "*"}))(request)  # type: ignore[operator, no-any-return]

    loopback.default = greedy
    [judge] = judges_of(REVIEW + "    reviewers: 1\n    explore: true\n")
    result = run_judge(judge, RECORD, llm_env(workspace))
    assert result.status == "ok" and result.samples[0]["tool_steps"] == 20
    assert len(loopback.requests) == 21  # 20 tool-use turns, then the scoring call
    assert forced_tool_name(loopback.requests[-1].body) == "submit_scores"


def test_output_only_work_is_scored_without_exploring(
    loopback: LoopbackServer, workspace: Path
) -> None:
    loopback.default = explorer(("glob", {"pattern": "*"}))
    [judge] = judges_of(REVIEW + "    reviewers: 1\n")
    run_judge(judge, RECORD, llm_env(workspace))
    assert len(loopback.requests) == 1
    assert forced_tool_name(loopback.requests[0].body) == "submit_scores"


_HOSTILE_TEMPLATES = textwrap.dedent(
    """
    import json, resource
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    import engine.judges.llm_judges as llm_judges
    from engine.judges import JudgeEnv, run_judge
    from tests.judges_helpers import judge_of

    llm_judges.TEMPLATE_SECONDS = 0.5
    templates = {
        "power": "{{ 10 ** (10 ** 9) }}",
        "repeat": "{{ 'ab' * 10 ** 12 }}",
        "long": "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
        "slow": "{% for i in range(100000) %}{% for j in range(100000) %}"
                "{% endfor %}{% endfor %}",
        "doubling": "{% set ns = namespace(s='x') %}{% for i in range(64) %}"
                    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
        "block": "{% set ns = namespace(s='x') %}{% for i in range(64) %}"
                 "{% set s %}{{ ns.s }}{{ ns.s }}{% endset %}{% set ns.s = s %}{% endfor %}",
        "macro": "{% set ns = namespace(s='x') %}{% macro twice() %}{{ ns.s }}{{ ns.s }}"
                 "{% endmacro %}{% for i in range(64) %}{% set ns.s = twice() %}{% endfor %}",
    }
    found = {}
    for name, template in templates.items():
        judge = judge_of(f"name: {name}\\nprompt: {json.dumps(template)}")
        found[name] = run_judge(judge, {"stdout": "ok"}, JudgeEnv()).error
    print(json.dumps(found))
    """
)


def test_a_template_that_builds_too_much_or_never_ends_is_the_judges_error() -> None:
    """Before any model call. A power Jinja folded while compiling hung the judge (inside C,
    holding the GIL); a nested loop ran for hours; a repeated text asked for gigabytes. The
    child has 2 GiB of address space and a deadline, so an unbounded template fails the test
    instead of the machine."""
    ran = subprocess.run(
        [sys.executable, "-c", _HOSTILE_TEMPLATES],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    assert "4-bit number ** 1000000000 would be too large" in found["power"]
    assert "repeated 1000000000000 times would be too large" in found["repeat"]
    assert "it makes more than 16,777,216 characters" in found["long"]
    assert "its template did not finish rendering within 0.5 s" in found["slow"]
    assert "the text joined with ~ would be too large" in found["doubling"]
    for doubled in ("block", "macro"):
        assert "the text a block or macro renders would be too large" in found[doubled]
    assert all("cannot be rendered" in found[name] for name in ("power", "repeat", "long"))
