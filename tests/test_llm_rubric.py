"""Rubric mode (Polpo): concurrent reviewers, 1–5 scores, median, outlier drop, weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.llm import create_llm_services
from engine.llm.rubric import aggregate
from engine.model.loop import Dimension, Evaluate, Loop, State
from engine.model.ports import Verdict
from tests.loopback_server import (
    LoopbackServer,
    MemoryRecorder,
    error_reply,
    text_reply,
    tool_reply,
)

DIMS = (
    Dimension("correctness", "Does it do the right thing?", 0.75),
    Dimension("style", "Is it readable?", 0.25),
)


def spec(**kwargs: Any) -> Evaluate:
    return Evaluate(type="llm_structured", prompt="Review the patch.", dimensions=DIMS, **kwargs)


def scores(correctness: Any, style: Any, *, delay: float = 0.0) -> Any:
    return tool_reply({"correctness": correctness, "style": style, "reason": "r"}, delay=delay)


def review(evaluate: Evaluate, tmp_path: Path) -> Verdict:
    state = State(name="review", action="diff", evaluate=evaluate, routes={"yes": "d", "no": "d"})
    loop = Loop(
        name="t", initial="review", states={"review": state, "d": State("d", terminal=True)}
    )
    services = create_llm_services(loop, run_dir=tmp_path, recorder=MemoryRecorder())
    return services.judge(evaluate, "the patch text", state=state, loop=loop)


def test_forced_tool_has_one_score_per_dimension(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(scores(4, 4), scores(4, 4), scores(4, 4))
    verdict = review(spec(), tmp_path)
    assert verdict.name == "yes"
    body = loopback.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": "submit_scores"}
    schema = body["tools"][0]["input_schema"]
    assert schema["properties"]["correctness"]["maximum"] == 5
    assert set(schema["required"]) == {"correctness", "style", "reason"}


def test_median_outlier_drop_and_weights(loopback: LoopbackServer, tmp_path: Path) -> None:
    # correctness 4, 4, 1 → median 4, the 1 is dropped → 4; style 2, 3, 3 → all kept → 8/3
    loopback.push(scores(4, 2), scores(4, 3), scores(1, 3))
    verdict = review(spec(threshold=3.5), tmp_path)
    details = verdict.details
    assert details["dimensions"]["correctness"] == 4.0
    assert abs(details["dimensions"]["style"] - 8 / 3) < 1e-9
    assert abs(details["score"] - (0.75 * 4 + 0.25 * 8 / 3)) < 1e-3
    assert len(details["outliers_dropped"]["correctness"]) == 1
    assert verdict.name == "yes"


def test_below_threshold_is_no(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(scores(2, 5), scores(3, 5), scores(2, 4))
    verdict = review(spec(), tmp_path)
    assert verdict.name == "no"
    assert verdict.details["score"] < 3.0


def test_a_score_outside_1_to_5_is_malformed_not_clamped(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A reviewer answering 9 where the tool allows 1-5 had it clamped to 5, a top score from
    an answer that broke its own schema (a rubric passed on it). It is malformed, as a score
    judge's out-of-range score is: asked once more, then that reviewer's error."""
    loopback.default = scores(9, -3)
    verdict = review(spec(), tmp_path)
    assert verdict.name == "error", verdict.details
    assert "outside 1..5" in verdict.details["error"]
    loopback.reset()
    loopback.push(scores(9, 4), scores(4, 4))  # the second ask answers within the range
    verdict = review(spec(reviewers=1), tmp_path)
    assert verdict.details["dimensions"] == {"correctness": 4.0, "style": 4.0}
    assert verdict.details["reviewers"][0]["calls"] == 2


def test_one_surviving_reviewer_is_a_noted_fallback(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    bad = text_reply("I refuse to use tools")
    loopback.push(scores(5, 5), bad, bad)
    loopback.default = bad
    verdict = review(spec(), tmp_path)
    assert verdict.name == "yes"
    assert "only one reviewer" in verdict.details["fallback"]


def test_no_surviving_reviewer_is_error(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.default = error_reply(400)
    verdict = review(spec(), tmp_path)
    assert verdict.name == "error"
    assert "no reviewer" in verdict.details["error"]


def test_non_numeric_score_is_malformed(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.default = scores("great", 4)
    assert review(spec(reviewers=2), tmp_path).name == "error"


def test_reviewers_run_concurrently(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(*[scores(4, 4, delay=0.3) for _ in range(3)])
    review(spec(), tmp_path)
    assert len(loopback.requests) == 3
    assert max(r.started for r in loopback.requests) < min(r.finished for r in loopback.requests)


def test_aggregate_even_split_falls_back_to_the_median() -> None:
    per_dim, dropped, total = aggregate([{"a": 1.0}, {"a": 5.0}], (Dimension("a", "", 1.0),))
    assert per_dim == {"a": 3.0}
    assert dropped == {"a": [0, 1]}
    assert total == 3.0


def test_aggregate_zero_weights_count_equally() -> None:
    dims = (Dimension("a", "", 0.0), Dimension("b", "", 0.0))
    _, _, total = aggregate([{"a": 2.0, "b": 4.0}], dims)
    assert total == 3.0


def test_a_dimensions_score_anchors_reach_the_reviewers(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A dimension's `rubric:` (what 1 and 5 mean) loaded and was never sent: the reviewers saw
    the name, weight and description only, so the anchors the author wrote changed nothing."""
    from engine.load.loader import load_loop_text

    loop = load_loop_text(
        """\
name: t
initial: review
scope: ["."]
states:
  review:
    action: cat report.md
    evaluate:
      type: llm_structured
      prompt: Review the report.
      dimensions:
        - name: accuracy
          description: claims match the data
          weight: 1
          rubric: {"1": "a claim contradicts the data", "5": "every claim is sourced"}
    on_yes: done
    on_no: done
  done: {terminal: true}
"""
    )
    state = loop.states["review"]
    assert state.evaluate is not None
    loopback.default = tool_reply({"accuracy": 4, "reason": "r"})
    services = create_llm_services(loop, run_dir=tmp_path, recorder=MemoryRecorder())
    assert services.judge(state.evaluate, "the report", state=state, loop=loop).name == "yes"
    prompt = loopback.requests[0].body["messages"][0]["content"]
    assert "- accuracy (weight 1): claims match the data" in prompt
    assert "    1: a claim contradicts the data\n    5: every claim is sourced" in prompt
