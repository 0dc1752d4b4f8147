"""One judge model, three spellings: the seeds' own examples load unchanged into `Judge`, and
mistakes are load errors at their line with a "use ..." hint, never dropped silently."""

from __future__ import annotations

import textwrap

import pytest

from engine.load.loader import load_loop_text
from engine.model.judges import DEFAULT_DIMENSIONS
from lint import lint_loop
from tests.judges_helpers import judges_of, loop_text
from tests.load_helpers import one, problems

# The agent_eval seed's judges, exactly as its documentation writes them.
AGENT_EVAL_SEED = """
type: assessment
judges:
  - name: budget_check
    builtin: cost_budget          # or "category/name", e.g. docs/consulted_docs
    arguments:
      max_cost_usd: 5.0
  - name: has_content
    check: |
      content = outputs["main_content"]
      if len(content.strip()) < 100:
          return False, f"Output too short ({len(content.strip())} chars)"
      return True, f"Output has {len(content.strip())} chars"
  - name: output_quality
    prompt: |
      Compare the generated output against the reference. Consider
      completeness, clarity, accuracy. Score 1-5 where 5 is excellent.
  - name: schema_valid
    module: eval.judges.schema_checks
    function: check_schema
  - name: output_quality_if
    if: "not annotations.get('skip_quality', False)"
    prompt: "Score the output 1-5 for completeness, clarity, and accuracy."
"""

# The Polpo seed's two JSON examples, pasted as they are (JSON is YAML).
POLPO_SEED = """
type: assessment
expectations: [
    {"type": "test", "command": "pnpm test"},
    {"type": "file_exists", "paths": ["dist/index.js", "dist/index.d.ts"]},
    {"type": "script", "command": "pnpm lint\\npnpm typecheck"},
    {
      "type": "llm_review",
      "criteria": "The implementation handles the specified failure cases.",
      "threshold": 4
    },
    {
      "type": "llm_review",
      "criteria": "Evaluate the public API design.",
      "threshold": 3.5,
      "dimensions": [
        {
          "name": "compatibility",
          "description": "Existing clients continue to work.",
          "weight": 0.6
        },
        {
          "name": "error_handling",
          "description": "Failures have stable status codes and response bodies.",
          "weight": 0.4
        }
      ]
    }
  ]
metrics:
  - name: coverage
    command: "npx c8 report --reporter=text-summary | awk '/Lines/ {print $3+0}'"
    threshold: 80
"""


def test_agent_eval_seed_loads_with_kinds_inferred_from_fields() -> None:
    judges = judges_of(AGENT_EVAL_SEED)
    assert [(j.name, j.kind) for j in judges] == [
        ("budget_check", "builtin"),
        ("has_content", "check"),
        ("output_quality", "llm"),
        ("schema_valid", "callable"),
        ("output_quality_if", "llm"),
    ]
    budget, check, quality, module, conditional = judges
    assert (budget.builtin, dict(budget.arguments)) == ("cost_budget", {"max_cost_usd": 5.0})
    assert check.check is not None and check.check.startswith('content = outputs["main_content"]')
    assert check.check_line == check.line + 2  # the snippet starts below `check: |`
    assert quality.feedback == "score" and quality.value_range() == (1.0, 5.0)
    assert (module.module, module.function) == ("eval.judges.schema_checks", "check_schema")
    assert conditional.condition == "not annotations.get('skip_quality', False)"
    assert all(j.spelling == "judges" and j.file == "judges.yaml" for j in judges)


def test_polpo_seed_loads_and_is_normalised_into_builtins_and_reviews() -> None:
    judges = judges_of(POLPO_SEED)
    assert [(j.name, j.kind, j.builtin) for j in judges] == [
        ("test", "builtin", "test"),
        ("file_exists", "builtin", "file_exists"),
        ("script", "builtin", "script"),
        ("llm_review", "review", None),
        ("llm_review_2", "review", None),
        ("coverage", "builtin", "metric"),
    ]
    test, exists, script, review, api, coverage = judges
    assert dict(test.arguments) == {"command": "pnpm test"}
    assert dict(exists.arguments) == {"paths": ["dist/index.js", "dist/index.d.ts"]}
    assert script.arguments["command"] == "pnpm lint\npnpm typecheck"
    assert (review.threshold, review.reviewers, review.dimensions) == (4.0, 3, ())
    assert [d.name for d in api.dimensions] == ["compatibility", "error_handling"]
    assert api.threshold == 3.5 and api.pass_mark() == 3.5
    assert (coverage.spelling, coverage.threshold) == ("metrics", 80.0)
    assert [j.spelling for j in judges] == ["expectations"] * 5 + ["metrics"]


def test_seed_loops_lint_without_errors() -> None:
    for block in (AGENT_EVAL_SEED, POLPO_SEED):
        loop = load_loop_text(loop_text(block), "judges.yaml")
        errors = [d for d in lint_loop(loop) if d.severity == "error"]
        assert errors == [], [d.render() for d in errors]


def test_builtin_beside_another_kind_is_an_error_at_its_line() -> None:
    d = one(
        loop_text("type: assessment\njudges:\n  - name: b\n    builtin: regex\n    check: x\n"),
        "F040",
    )
    assert d.message == (
        "states.work.evaluate.judges[0] (judge 'b') sets both builtin and check: "
        "a judge has exactly one kind"
    )
    assert d.line == 12 and "use builtin (with arguments) or an inline check snippet" in d.hint


def test_two_kinds_and_no_kind_are_errors() -> None:
    block = """
    type: assessment
    judges:
      - {name: a, check: "return True", module: m, function: f}
      - {name: b, arguments: {x: 1}}
    """
    found = problems(loop_text(block))
    assert [d.code for d in found] == ["F040", "F041"]
    assert "sets both check and module" in found[0].message
    assert "has no kind" in found[1].message and found[1].line == 11


def test_llm_settings_on_a_non_llm_judge_are_refused() -> None:
    d = one(loop_text("type: assessment\njudges:\n  - {name: a, check: x, samples: 3}\n"), "F040")
    assert "samples applies to an LLM prompt" in d.message


def test_duplicate_names_are_refused_and_generated_names_avoid_taken_ones() -> None:
    block = """
    type: assessment
    judges:
      - {name: test, check: "return True"}
    expectations:
      - {type: test, command: "true"}
    """
    assert [j.name for j in judges_of(block)] == ["test", "test_2"]
    d = one(loop_text(block.replace("{type: test,", "{type: test, name: test,")), "F042")
    assert "a judge named 'test' is already defined at line 10" in d.message
    # A name written later is not taken by an earlier unnamed entry: no F042 over a name the
    # author never wrote.
    later = block.replace(
        '- {type: test, command: "true"}',
        '- {type: test, command: "true"}\n      - {type: test, command: "false"}'
        '\n      - {type: test, name: test_2, command: "true"}',
    )
    assert [j.name for j in judges_of(later)] == ["test", "test_3", "test_4", "test_2"]


def test_a_check_that_does_not_compile_names_its_file_line() -> None:
    block = """
    type: assessment
    judges:
      - name: broken
        check: |
          value = 1
          return (value
    """
    d = one(loop_text(block), "F043")
    assert d.line == 13 and "does not compile" in d.message  # the line of `return (value`


def test_a_check_written_as_an_expression_is_told_to_return_it() -> None:
    """Written like an `if:`, the check returns None, which no judge accepts: every run errors."""
    block = """
    type: assessment
    judges:
      - name: said_hi
        check: |
          text = outputs["stdout"]
          "hi" in text
    """
    d = one(loop_text(block), "F043")
    assert d.line == 13  # the line of the dropped expression
    assert d.message.endswith(
        "the check snippet computes 'hi' in text and returns nothing, so the judge could only error"
    )
    assert d.hint == "a check is a function body: write return 'hi' in text, \"why\""
    for fine in ('return "hi" in text', "raise SystemExit(1)", "print(text)"):
        assert load_loop_text(loop_text(block.replace('"hi" in text', fine)))


def test_an_argument_named_like_what_the_judge_is_given_is_a_load_error() -> None:
    """A module function was called with `outputs` twice (a TypeError on every case); a snippet
    kept seeing the record as `outputs`, never the argument."""
    block = """
    type: assessment
    judges:
      - {name: mod, module: evals.j, function: ok, arguments: {outputs: 3, inputs: 4}}
      - {name: chk, check: "return inputs == 3, 'x'", arguments: {inputs: 3, n: 1}}
    """
    found = [d for d in problems(loop_text(block)) if d.code == "F044"]
    assert [(d.line, d.message.split(": ", 1)[1]) for d in found] == [
        (10, "an argument is named 'outputs': the function is called with the record as outputs="),
        (
            11,
            "an argument is named 'inputs': in the snippet that name is what the judge is "
            "given, not this argument",
        ),
    ]


def test_polpo_misspellings_get_a_use_hint() -> None:
    path = one(
        loop_text("type: assessment\nexpectations:\n  - {type: file_exists, path: a.txt}\n"),
        "F013",
    )
    assert path.message == "path is not supported in an expectation: use paths"
    assert path.line == 10
    prompt = one(
        loop_text("type: assessment\nexpectations:\n  - {type: llm_review, prompt: ok?}\n"),
        "F013",
    )
    assert prompt.message == "prompt is not supported in an expectation: use criteria"
    exit_code = one(
        loop_text(
            "type: assessment\nexpectations:\n  - {type: script, command: x, expectExitCode: 1}\n"
        ),
        "F013",
    )
    assert "pass on exit code 0" in exit_code.message


def test_a_type_key_in_judges_points_to_expectations() -> None:
    d = one(loop_text("type: assessment\njudges:\n  - {name: t, type: test, check: x}\n"), "F013")
    assert "expectations:" in d.hint


def test_an_expectation_key_of_another_type_is_refused() -> None:
    d = one(
        loop_text("type: assessment\nexpectations:\n  - {type: test, command: x, paths: [a]}\n"),
        "F012",
    )
    assert "'paths' does not belong" in d.message


def test_threshold_on_a_criteria_only_llm_structured_review_uses_the_default_dimensions() -> None:
    loop = load_loop_text(
        loop_text("type: llm_structured\nprompt: Is it good? Quote it.\nthreshold: 4\n")
    )
    spec = loop.states["work"].evaluate
    assert spec is not None and spec.dimensions == DEFAULT_DIMENSIONS and spec.threshold == 4.0


def test_rubric_judges_need_no_cannot_judge_route_ll007() -> None:
    text = textwrap.dedent(
        """\
        name: rubric
        initial: work
        scope: ["."]
        states:
          work:
            action: cat notes.md
            evaluate:
              type: llm_structured
              prompt: Review the notes. Quote the evidence.
              dimensions: [{name: clarity, description: Clear?, weight: 1}]
            on_yes: done
            on_no: done
          done: {terminal: true}
        """
    )
    codes = [d.code for d in lint_loop(load_loop_text(text))]
    assert "LL007" not in codes
    dimensions = "      dimensions: [{name: clarity, description: Clear?, weight: 1}]\n"
    without = text.replace(dimensions, "")
    assert "LL007" in [d.code for d in lint_loop(load_loop_text(without))]


def test_assessment_verdicts_are_closed_yes_no_error() -> None:
    text = loop_text("type: assessment\njudges:\n  - {name: a, check: return x}\n").replace(
        "    on_no: failed\n", "    on_no: failed\n    on_partial: failed\n"
    )
    codes = [d.code for d in lint_loop(load_loop_text(text))]
    assert "LL014" in codes  # partial is impossible for an assessment


def test_a_score_range_whose_minimum_is_not_below_its_maximum_is_refused() -> None:
    reversed_range = (
        "type: assessment\njudges:\n  - {name: a, check: return x, score_range: [5, 1]}\n"
    )
    d = one(loop_text(reversed_range), "F015")
    assert d.message == (
        "states.work.evaluate.judges[0] (judge 'a'): score_range [5, 1] holds no value between "
        "its ends; its minimum must be below its maximum"
    )
    assert (d.line, d.hint) == (10, "write [min, max], e.g. [1, 5]")
    one(loop_text(reversed_range.replace("[5, 1]", "[2, 2]")), "F015")
    [judge] = judges_of(reversed_range.replace("[5, 1]", "[1, 5]"))
    assert judge.score_range == (1.0, 5.0)


def test_a_dimension_name_the_scoring_tool_cannot_carry_is_refused() -> None:
    # Each dimension is a field of the reviewers' scoring tool: the Messages API refuses a field
    # named otherwise (every call a 400), and `reason` is the tool's own field.
    for name in ("reason", "error handling", "x" * 65):
        block = (
            "type: assessment\nexpectations:\n  - type: llm_review\n    criteria: c\n"
            f"    dimensions: [{{name: '{name}', description: d, weight: 1}}]\n"
        )
        d = one(loop_text(block), "F016")
        assert f"dimensions[0].name has an invalid value: string '{name[:20]}" in d.message
        assert d.hint.startswith("a dimension name: letters, digits, _, . and - (at most 64)")
    block = (
        "type: assessment\nexpectations:\n"
        "  - {type: llm_review, dimensions: [{name: api.v2-compat, description: d, weight: 1}]}\n"
    )
    [judge] = judges_of(block)
    assert judge.dimensions[0].name == "api.v2-compat"


@pytest.mark.parametrize(
    "where",
    [
        "type: assessment\nexpectations:\n  - type: llm_review\n    criteria: c\n    dimensions:",
        "type: llm_structured\nprompt: Review it. Quote the evidence.\ndimensions:",
    ],
)
def test_a_dimension_without_a_description_is_refused(where: str) -> None:
    """A dimension with no `description` was accepted: its reviewers were asked to score
    `clarity` with nothing saying what it means (the Polpo seed and the contract require it)."""
    block = f"{where} [{{name: clarity, weight: 1}}]\n"
    d = one(loop_text(block), "F010")
    assert d.message.endswith("dimensions[0] is missing the required key 'description'")
    assert d.line == (12 if "expectations" in where else 10)
    d = one(loop_text(block.replace("weight: 1", "description: '', weight: 1")), "F015")
    assert d.message.endswith("dimensions[0].description must not be empty")


def test_a_rubric_key_that_is_not_a_score_gets_a_score_hint() -> None:
    block = (
        "type: assessment\nexpectations:\n  - type: llm_review\n    criteria: c\n"
        "    dimensions: [{name: api, description: d, weight: 1, rubric: {'7': perfect}}]\n"
    )
    d = one(loop_text(block), "F016")
    assert d.message == "'7' is not a valid key in states.work.evaluate.expectations[0]" + (
        ".dimensions[0].rubric"
    )
    assert d.hint == 'expected a score from 1 to 5, e.g. "5": what a 5 means'


def test_two_review_dimensions_with_one_name_are_refused() -> None:
    block = """
    type: assessment
    expectations:
      - type: llm_review
        criteria: c
        dimensions:
          - {name: api, description: clients keep working, weight: 0.5}
          - {name: api, description: errors are stable, weight: 0.5}
    """
    d = one(loop_text(block), "F018")
    assert d.message == (
        "states.work.evaluate.expectations[0].dimensions[1]: a dimension named 'api' is already "
        "defined at line 13"
    )
    assert (d.line, d.hint) == (14, "give every dimension of a review its own name")


def test_an_assessments_outputs_written_as_a_suites_are_told_the_list() -> None:
    """A suite writes `outputs: {paths: [...]}`; an assessment lists its paths."""
    block = "type: assessment\noutputs: {paths: [main]}\njudges: [{name: e, builtin: exit_code}]"
    found = one(loop_text(block), "F011")
    assert found.hint == "an assessment's outputs is a list of paths: outputs: [main]"
