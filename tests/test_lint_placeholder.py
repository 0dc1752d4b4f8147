"""LL060 `placeholder`: a scaffold `<FILL: ...>` left in any string, placed on the marker itself."""

from __future__ import annotations

import time
from pathlib import Path

from engine.cli.validate_cmd import check_file
from engine.load.issuefile import load_issue
from engine.scaffold import scaffold_eval
from lint import find_rule, lint_loop
from tests.lint_helpers import make_loop

ISSUES = Path(__file__).parent / "data" / "issues"

LOOP = """\
name: judge-it
description: "Checks <FILL: what the loop is for>"
initial: try
scope: ["."]
context:
  url: "<FILL: the URL of the staging server>"
  nested: {list: [ok, "<FILL: a nested item>"]}
states:
  try:
    action: |
      curl -s ${context.url}
      echo "<FILL: the probe>" && echo "<FILL: the probe>"
    next: judge
    on_error: failed
  judge:
    action_type: prompt
    action: Summarise what you saw.
    timeout: 60
    evaluate:
      type: llm_structured
      prompt: >-
        Quote the report verbatim as evidence. Conditions:
        (1) <FILL: numbered observable conditions>
    on_yes: done
    on_no: failed
    on_cannot_judge: failed
    on_error: failed
  done:
    terminal: true
  failed:
    terminal: true
    failure: true
"""


def placeholders(path: Path) -> list[tuple[int, int, str, str]]:
    return [(d.line, d.column, d.path, d.message) for d in check_file(path) if d.code == "LL060"]


def test_every_marker_is_reported_at_its_own_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "judge.yaml"
    path.write_text(LOOP)
    lines = LOOP.splitlines()
    found = placeholders(path)
    assert [(p, m) for _, _, p, m in found] == [
        ("description", "unfilled placeholder: what the loop is for"),
        ("context.url", "unfilled placeholder: the URL of the staging server"),
        ("context.nested.list.1", "unfilled placeholder: a nested item"),
        ("states.try.action", "unfilled placeholder: the probe"),
        ("states.try.action", "unfilled placeholder: the probe"),  # the second one, not again
        ("states.judge.evaluate.prompt", "unfilled placeholder: numbered observable conditions"),
    ]
    for line, column, _, message in found:
        marker = "<FILL: " + message.removeprefix("unfilled placeholder: ") + ">"
        assert lines[line - 1][column - 1 :].startswith(marker), (line, column, message)
    assert found[3][:2] == (12, 13) and found[4][:2] == (12, 41)


def test_hint_says_exactly_what_to_write_and_the_rule_is_a_warning() -> None:
    loop = make_loop(
        {
            "s": {"action": "deploy --to '<FILL: the target host>'", "next": "done"},
            "done": {"terminal": True},
        },
        scope=["."],
    )
    [diag] = [d for d in lint_loop(loop) if d.code == "LL060"]
    assert diag.severity == "warning"
    assert diag.hint == "replace the whole <FILL: ...> marker with the target host"
    item = find_rule("placeholder")
    assert item is not None and item.code == "LL060"


def test_strings_in_every_kind_of_field_are_checked() -> None:
    loop = make_loop(
        {
            "s": {
                "description": "<FILL: why>",
                "action": "x",
                "evaluate": {"type": "output_contains", "pattern": "<FILL: a regex>"},
                "on_yes": "kid",
                "on_no": "done",
                "on_error": "done",
            },
            "kid": {
                "loop": "child",
                "with": {"items": ["a", "<FILL: an item>"]},
                "on_yes": "done",
                "on_no": "done",
                "on_error": "done",
            },
            "done": {"terminal": True},
        },
        scope=["."],
        parameters={"who": {"description": "<FILL: who>", "default": "<FILL: a name>"}},
        outputs={"report": "<FILL: an expression>"},
        labels=("<FILL: a label>",),
    )
    paths = sorted(d.path for d in lint_loop(loop) if d.code == "LL060")
    assert paths == [
        "labels.0",
        "outputs.report",
        "parameters.who.default",
        "parameters.who.description",
        "states.kid.with.items.1",
        "states.s.description",
        "states.s.evaluate.pattern",
    ]


def test_a_filled_loop_and_a_suppressed_rule_are_silent() -> None:
    states = {
        "s": {"action": "echo '<FILL: x>'", "next": "done"},
        "done": {"terminal": True},
    }
    suppressed = make_loop(
        states, scope=["."], lint=[{"code": "placeholder", "reason": "a template on purpose"}]
    )
    assert "LL060" not in [d.code for d in lint_loop(suppressed)]
    filled = make_loop({**states, "s": {"action": "echo 'FILL: <x>'", "next": "done"}})
    assert "LL060" not in [d.code for d in lint_loop(filled)]


def test_agrees_with_the_scaffold_commands_own_placeholder_report(tmp_path: Path) -> None:
    """Where, and in what words, validate reports a scaffolded loop's markers: as scaffold does."""
    bare = load_issue(next(ISSUES.rglob("BUG-555-bare.md")))
    scaffold = scaffold_eval([bare])
    assert scaffold.placeholders, "the fixture is meant to lack sections"
    path = tmp_path / "eval.yaml"
    path.write_text(scaffold.text)
    lines = scaffold.text.splitlines()
    for line, column, _, message in placeholders(path):
        assert lines[line - 1][column - 1 :].startswith("<FILL:")
        assert message.startswith("unfilled placeholder: ")
    assert [d.path for d in check_file(path) if d.code == "LL060"] == [
        p.path for p in scaffold.placeholders
    ]


def test_many_unclosed_markers_are_read_in_linear_time() -> None:
    """`<FILL:\\s*(.*?)>` scanned to the end of the line from every unclosed `<FILL:`: an issue
    repeating that text 40,000 times made scaffold-eval (which lints what it writes) run for
    minutes. A real marker before them is still found."""
    text = "<FILL: the real one> " + "<FILL:" * 20000
    loop = make_loop(
        {"s": {"action": f"echo '{text}'", "next": "done"}, "done": {"terminal": True}}
    )
    started = time.monotonic()
    found = [d.message for d in lint_loop(loop) if d.code == "LL060"]
    assert time.monotonic() - started < 3  # about 30 s before
    assert found == ["unfilled placeholder: the real one"]
