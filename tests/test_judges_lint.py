"""Lint over assessments: judges' prompts and interpolations are checked, an assessment's own
capture counts as set, and rubric judges need no route for verdicts they never give."""

from __future__ import annotations

from pathlib import Path

import engine
from engine.load.loader import load_loop_text
from lint import lint_loop
from tests.judges_helpers import loop_text


def codes(evaluate: str, **replace: str) -> list[tuple[str, str]]:
    text = loop_text(evaluate)
    for old, new in replace.items():
        text = text.replace(old, new)
    return [(d.code, d.path) for d in lint_loop(load_loop_text(text, "l.yaml"))]


def test_mr8_warns_about_llm_judge_prompts_only() -> None:
    found = codes(
        """
        type: assessment
        judges:
          - {name: vague, prompt: Is the output good?}
          - {name: rubric, llm_rubric: The answer is polite}
          - {name: quoted, prompt: Is it good? Quote the evidence.}
          - {name: snippet, check: "return True"}
        expectations:
          - {type: llm_review, criteria: Is it good?}
        """
    )
    assert [p for c, p in found if c == "MR-8"] == [
        "states.work.evaluate.judges.0.prompt",
        "states.work.evaluate.judges.1.llm_rubric",
    ]


def test_interpolations_in_judge_fields_are_checked() -> None:
    found = codes(
        """
        type: assessment
        expectations:
          - {type: test, command: "make ${contxt.target}"}
          - {type: llm_review, criteria: "Does it fix ${captured.triage.output}?"}
        judges:
          - {name: r, builtin: regex, arguments: {pattern: "${context.word"}}
          - {name: q, prompt_file: "${contxt.prompts}/quality.md"}
        """
    )
    assert ("LL030", "states.work.evaluate.expectations.0.command") in found
    # prompt_file is rendered before it is read; a typo there was never reported
    assert ("LL030", "states.work.evaluate.judges.1.prompt_file") in found
    assert ("LL031", "states.work.evaluate.expectations.1.criteria") in found
    assert ("LL033", "states.work.evaluate.judges.0.arguments.pattern") in found


def test_an_assessment_is_captured_under_its_state_name() -> None:
    evaluate = "type: assessment\njudges:\n  - {name: a, check: 'return True'}\n"
    found = codes(
        evaluate,
        **{
            "    on_no: failed\n": "    on_no: fix\n",
            "  done: {terminal: true}\n": (
                '  fix:\n    action: echo "${captured.work.feedback}"\n    next: done\n'
                "  done: {terminal: true}\n"
            ),
        },
    )
    assert [c for c, _ in found if c == "LL031"] == []


def test_builtin_arguments_of_the_wrong_kind_are_errors() -> None:
    """`negate: "false"` is text, and any text is true: the regex judge silently passed on no
    match; `paths: out/x.json` errored every run ("must be a non-empty list"), `pattern: 5` and
    `max_cost_usd: five` raised inside the builtin. Numbers written as text, and `${...}`, are
    fine (they are converted, or rendered first)."""
    found = codes(
        """
        type: assessment
        judges:
          - {name: a, builtin: regex, arguments: {pattern: hi, negate: "false"}}
          - {name: b, builtin: file_exists, arguments: {paths: out/x.json}}
          - {name: c, builtin: regex, arguments: {pattern: 5}}
          - {name: d, builtin: cost_budget, arguments: {max_cost_usd: five}}
          - {name: e, builtin: cost_budget, arguments: {max_cost_usd: "0.5"}}
          - {name: f, builtin: output_numeric, arguments: {operator: ge, target: "${context.t}"}}
          - {name: g, builtin: json_schema, arguments: {schema: [1]}}
        """,
        **{"scope:": "context: {t: 3}\nscope:"},
    )
    assert [p for c, p in found if c == "LL073"] == [
        f"states.work.evaluate.judges.{i}.arguments" for i in (0, 1, 2, 3, 6)
    ]


def test_a_builtin_argument_of_the_wrong_kind_is_the_judge_error_at_run_time() -> None:
    from engine.judges.registry import find_builtin

    regex = find_builtin("regex")
    assert regex is not None
    assert regex.argument_problem({"pattern": "x", "negate": "false"}) == (
        "the argument 'negate' of builtin 'regex' is 'false', not a boolean (any text is true: "
        "write true or false, unquoted)"
    )
    assert regex.argument_problem({"pattern": "x", "negate": True}) is None


def test_a_builtin_regex_that_does_not_compile_is_an_error() -> None:
    """`pattern: "hi("` made the regex judge an error on every run ("not a valid regular
    expression"); a pattern with `${...}` is rendered first and compiled then."""
    found = codes(
        """
        type: assessment
        judges:
          - {name: a, builtin: regex, arguments: {pattern: "hi("}}
          - {name: b, builtin: tool_called, arguments: {name: x, input_pattern: "[a-"}}
          - {name: c, builtin: output_contains, arguments: {pattern: "ok(\\\\d+)"}}
          - {name: d, builtin: regex, arguments: {pattern: "${context.word}("}}
        """,
        **{"scope:": "context: {word: w}\nscope:"},
    )
    assert [p for c, p in found if c == "LL073"] == [
        "states.work.evaluate.judges.0.arguments",
        "states.work.evaluate.judges.1.arguments",
    ]


def test_a_threshold_above_what_the_judge_gives_is_an_error() -> None:
    """`threshold: 7` on a 1-5 LLM judge, or 2 on a check scored in [0, 1]: the judge failed on
    every run, so the assessment could never say yes."""
    found = codes(
        """
        type: assessment
        judges:
          - {name: a, prompt: "Score 1-5. Quote the evidence.", threshold: 7}
          - {name: b, check: "return 0.5, 'half'", score_range: [0, 1], threshold: 2}
          - {name: c, prompt: "Score 0-10. Quote the evidence.", score_range: [0, 10], threshold: 7}
          - {name: d, check: "return 12, 'n'", threshold: 10}
          - {name: e, feedback_type: bool, prompt: "Fine? Quote the evidence.", threshold: 7}
        """
    )
    assert [p for c, p in found if c == "LL075"] == [
        "states.work.evaluate.judges.0.threshold",
        "states.work.evaluate.judges.1.threshold",
    ]


def test_a_dir_field_read_without_its_directory_in_outputs_is_a_warning(tmp_path: Path) -> None:
    """agent_eval's `outputs["main_content"]` exists here only for a directory the assessment's
    `outputs:` (a suite's `outputs.paths`) lists; without it the judge errors on every run, which
    was found only by running it."""
    found = codes(
        """
        type: assessment
        outputs: [out/reports, my-dir]
        judges:
          - name: main
            check: |
              content = outputs["main_content"]
              return len(content) > 9, "long"
          - {name: listed, check: "return outputs['reports_file'].endswith('.md'), 'md'"}
          - {name: dashed, check: "return bool(outputs['my_dir_content']), 'x'"}
          - {name: guarded, check: "return 'main_file' in outputs and outputs['main_file'], 'x'"}
          - {name: got, check: "return bool(outputs.get('main_content')), 'x'"}
          - {name: cond, if: "outputs['docs_content'] != ''", check: "return True, 'x'"}
        """
    )
    assert [p for c, p in found if c == "LL076"] == [
        "states.work.evaluate.judges.0.check",
        "states.work.evaluate.judges.5.if",
    ]
    (tmp_path / "cases" / "a").mkdir(parents=True)
    (tmp_path / "cases" / "a" / "input.yaml").write_text("q: 1\n")
    suite = tmp_path / "s.suite.yaml"
    suite.write_text(
        "name: s\ndataset: cases\nsubject: {command: echo hi}\noutputs: {paths: [answers]}\n"
        "judges:\n"
        "  - {name: a, check: \"return bool(outputs['answers_content']), 'x'\"}\n"
        "  - {name: b, check: \"return bool(outputs['artifacts_content']), 'x'\"}\n"
    )
    [diagnostic] = [d for d in engine.validate(suite, cwd=tmp_path) if d.code == "LL076"]
    assert diagnostic.path == "judges.1.check" and diagnostic.line == 7
    assert "'artifacts_content'" in diagnostic.message and "artifacts" in diagnostic.hint
