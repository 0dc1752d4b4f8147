"""Model building: a valid loop file becomes frozen, typed dataclasses with positions."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from engine.graph.routing import route_for
from engine.load.loader import (
    DEFAULT_JUDGE_PROMPT,
    load_loop_file,
    load_loop_text,
    load_loop_with_positions,
)
from engine.model.loop import Dimension, LlmConfig, Parameter, Suppression
from tests.load_helpers import EVERY_EVALUATOR, FIX_UNTIL_GREEN, MINIMAL


def test_minimal_loop_gets_the_documented_defaults() -> None:
    loop = load_loop_text(MINIMAL)
    assert (loop.name, loop.initial, loop.max_steps) == ("minimal", "start", 50)
    assert list(loop.states) == ["start", "done"]
    assert loop.scope is None and loop.timeout is None and loop.llm == LlmConfig()
    assert loop.source == ""
    start = loop.states["start"]
    assert (start.action, start.action_type, start.next, start.evaluate) == (
        "true",
        "shell",
        "done",
        None,
    )
    assert loop.states["done"].terminal and not loop.states["done"].failure


def test_every_top_level_key_reaches_the_model() -> None:
    loop = load_loop_text(FIX_UNTIL_GREEN, "fix.yaml")
    assert loop.source == "fix.yaml"
    assert loop.description.startswith("Run the tests")
    assert (loop.max_steps, loop.on_max_steps, loop.timeout, loop.default_timeout) == (
        20,
        "report",
        600.0,
        120.0,
    )
    assert loop.scope == ("src/", "tests/")
    assert dict(loop.context) == {"test_cmd": "make test", "attempts": 3}
    assert loop.parameters["target"] == Parameter(
        "target", "string", required=True, description="what to fix"
    )
    level = loop.parameters["level"]
    assert (level.enum, level.default, level.has_default) == (("low", "high"), "low", True)
    assert dict(loop.outputs) == {"verdict": "${captured.test.verdict}"}
    assert loop.llm == LlmConfig("claude-sonnet-4-5", 2048, 0.0, 60.0, "cmd:claude -p", True)
    assert (loop.max_cost_usd, loop.category, loop.labels) == (2.5, "automation", ("demo", "tests"))
    assert loop.lint == (Suppression("scope", "the demo writes only to its temp dir", 35),)


def test_state_fields_routes_and_positions() -> None:
    loop = load_loop_text(FIX_UNTIL_GREEN)
    test = loop.states["test"]
    assert (test.line, test.column) == (38, 3)
    assert dict(test.routes) == {"yes": "done", "no": "fix", "error": "failed"}
    assert (test.capture, test.timeout, test.max_retries, test.on_retry_exhausted) == (
        "test",
        300.0,
        3,
        "failed",
    )
    assert test.description == "run the suite"
    fix = loop.states["fix"]
    assert (fix.action_type, fix.model, fix.runner, fix.next) == (
        "prompt",
        "claude-opus-4",
        "anthropic",
        "test",
    )
    assert fix.evaluate is None  # a `next:` step keeps step semantics: success advances
    assert loop.states["failed"].failure


def test_shell_state_with_routes_gets_an_implicit_exit_code_evaluator() -> None:
    test = load_loop_text(FIX_UNTIL_GREEN).states["test"]
    assert test.evaluate is not None
    assert (test.evaluate.type, test.evaluate.implicit) == ("exit_code", True)
    assert route_for(test, "no") == "fix"


def test_prompt_state_with_routes_gets_a_judge_that_demands_evidence() -> None:
    loop = load_loop_text(
        """\
name: p
initial: ask
states:
  ask:
    action: Write a haiku about loops.
    action_type: prompt
    on_yes: done
    on_no: ask
  done: {terminal: true}
"""
    )
    evaluate = loop.states["ask"].evaluate
    assert evaluate is not None
    assert (evaluate.type, evaluate.implicit, evaluate.prompt) == (
        "llm_structured",
        True,
        DEFAULT_JUDGE_PROMPT,
    )
    assert "VERBATIM quote" in DEFAULT_JUDGE_PROMPT


def test_every_evaluator_type_is_built() -> None:
    states = load_loop_text(EVERY_EVALUATOR).states
    contains = states["contains"].evaluate
    assert contains is not None
    assert (contains.pattern, contains.negate, contains.ignore_exit_code) == ("^PASS$", False, True)
    assert contains.source == "${captured.x.output}"
    assert dict(states["contains"].route or {}) == {
        "yes": "numeric",
        "_": "numeric",
        "_error": "numeric",
    }
    assert states["contains"].routes == {}
    numeric = states["numeric"].evaluate
    assert numeric is not None and (numeric.operator, numeric.target) == ("ge", 2)
    json_eval = states["json"].evaluate
    assert json_eval is not None and (json_eval.path, json_eval.target) == (".a.0", 1)
    converge = states["converge"].evaluate
    assert converge is not None
    assert (converge.target, converge.tolerance, converge.direction) == (
        "${context.goal}",
        0.03,
        "maximize",
    )
    assert dict(states["converge"].routes) == {
        "target": "classify",
        "progress": "converge",
        "stall": "classify",
    }
    classify = states["classify"].evaluate
    assert classify is not None and classify.verdicts == ("green", "red", "flaky")
    assert classify.line == "first"
    assert classify.verdict_set() == {"green", "red", "flaky", "error"}
    judge = states["judge"].evaluate
    assert judge is not None
    assert (judge.samples, judge.min_confidence, judge.model, judge.max_tokens) == (
        3,
        0.7,
        "claude-haiku",
        512,
    )
    assert judge.temperature == 0.2 and not judge.implicit
    rubric = states["rubric"].evaluate
    assert rubric is not None
    assert rubric.dimensions == (
        Dimension("accuracy", "facts are right", 0.5),
        Dimension("clarity", "easy to follow", 0.5),
    )
    assert (rubric.reviewers, rubric.threshold) == (3, 3.5)


def test_subloop_state() -> None:
    loop, positions = load_loop_with_positions(text=EVERY_EVALUATOR)
    child = loop.states["child"]
    assert child.is_subloop and child.loop == "fix-until-green"
    assert dict(child.with_) == {"target": "src/app.py"}
    assert dict(child.on_terminal) == {"blocked": "done"}
    assert child.capture == "child_result"
    assert child.evaluate is None  # a sub-loop yields its own verdicts
    assert child.lint == (
        Suppression(
            "MR-8",
            "rubric dimensions carry the criteria",
            positions.of(("states", "child", "lint", "suppress", 0))[0],
        ),
    )


def test_ints_are_accepted_where_floats_are_expected() -> None:
    loop = load_loop_text(MINIMAL + "timeout: 30\nmax_cost_usd: 1\n")
    assert isinstance(loop.timeout, float) and loop.timeout == 30.0
    assert isinstance(loop.max_cost_usd, float)


def test_integral_float_is_an_integer() -> None:
    assert load_loop_text(MINIMAL + "max_steps: 10.0\n").max_steps == 10


def test_the_model_is_immutable() -> None:
    loop = load_loop_text(FIX_UNTIL_GREEN)
    with pytest.raises(FrozenInstanceError):
        loop.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        loop.states["x"] = loop.states["test"]  # type: ignore[index]
    with pytest.raises(TypeError):
        loop.states["test"].routes["yes"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        loop.context["n"] = 1  # type: ignore[index]


def test_positions_of_any_node_and_nearest_ancestor() -> None:
    _, positions = load_loop_with_positions(text=FIX_UNTIL_GREEN)
    assert positions.of(("states", "test", "on_yes")) == (43, 5)
    assert positions.value_of(("states", "test", "on_yes")) == (43, 13)
    assert positions.of(("labels", 1)) == (32, 16)
    assert positions.of(("states", "test", "no_such_key")) == (38, 3)
    assert positions.of(("nothing", "here")) == (1, 1)


def test_loading_from_a_file_records_the_source(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MINIMAL, encoding="utf-8")
    assert load_loop_file(path).source == str(path)
    assert load_loop_file(str(path)).name == "minimal"


def test_graph_mistakes_still_load_lint_reports_them() -> None:
    loop = load_loop_text(
        """\
name: odd
initial: nowhere
states:
  a: {action: "true", on_yes: ghost, on_maybe: $current}
"""
    )
    assert loop.states["a"].routes == {"yes": "ghost", "maybe": "$current"}
    assert route_for(loop.states["a"], "maybe") == "a"
