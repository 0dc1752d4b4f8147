"""Lint over assessments: judges' prompts and interpolations are checked, an assessment's own
capture counts as set, and rubric judges need no route for verdicts they never give."""

from __future__ import annotations

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
