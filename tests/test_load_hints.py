"""Keys people bring from little-loops get "not supported: …" or "use …", never a wrong place."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.load.loader import check_loop_text
from tests import cli
from tests.load_helpers import MINIMAL, one, problems

TOP_LEVEL = ["on_handoff: spawn", "from: base-loop", "visibility: internal"]
IN_STATE = ["context_passthrough: true", "slash_command: /ll:fix", "input_key: issue"]


@pytest.mark.parametrize("line", TOP_LEVEL)
def test_top_level_keys_say_what_to_do(line: str) -> None:
    d = one(MINIMAL + line + "\n", "F013")
    assert "not supported" in d.message
    assert "belongs inside a state" not in d.message + d.hint
    assert d.hint


@pytest.mark.parametrize("line", IN_STATE)
def test_state_keys_say_what_to_do(line: str) -> None:
    d = one(MINIMAL.replace("next: done", f"next: done\n    {line}"), "F013")
    assert "not supported" in d.message or "belongs to the loop" in d.message
    assert d.hint


def test_on_handoff_points_to_resume_and_from_to_fragments() -> None:
    assert "ll-loop resume" in one(MINIMAL + "on_handoff: pause\n", "F013").hint
    hint = one(MINIMAL + "from: base\n", "F013").hint
    assert "import:" in hint and "fragment:" in hint and "ll-loop migrate" in hint


def test_a_slash_command_action_type_names_the_agent_runner() -> None:
    text = MINIMAL.replace('action: "true"', "action: /ll:fix\n    action_type: slash_command")
    d = one(text, "F014")
    assert "cmd:claude -p" in d.hint and "action_type: prompt" in d.hint


def test_required_inputs_points_to_parameters() -> None:
    d = one(MINIMAL + "required_inputs: [issue]\n", "F013")
    assert "parameters" in d.hint and "required: true" in d.hint


def test_input_key_at_the_top_level_is_a_loop_key() -> None:
    text = MINIMAL + "input_key: issue\nparameters: {issue: {type: string}}\n"
    loop, _, found = check_loop_text(text)
    assert found == [] and loop is not None and loop.input_key == "issue"


def test_every_refused_key_still_loads_nothing() -> None:
    assert problems(MINIMAL + "circuit: {}\n")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (MINIMAL.replace("name: minimal", "name: 2024"), "name"),
        (
            MINIMAL.replace(
                "    next: done",
                "    evaluate: {type: output_json, path: .0, operator: eq, target: 1}\n"
                "    on_yes: done\n    on_no: done",
            ),
            "states.start.evaluate.path",
        ),
    ],
)
def test_a_number_where_text_belongs_says_to_quote_it(text: str, where: str) -> None:
    """`path: .0` (the first item of a JSON list) is the number 0.0 to YAML: the diagnostic
    said "must be a string, got number 0.0" and nothing else, about text the user never wrote."""
    d = one(text, "F011")
    assert d.path == where and "got number" in d.message
    assert "quote" in d.hint and "as a number" in d.hint


@pytest.mark.parametrize(
    ("line", "hint"),
    [
        ("llm: claude-sonnet-4-6", "write llm: {model: claude-sonnet-4-6}"),
        ("lint: LL015", "write lint: {suppress: [{code: LL015, reason: "),
        ("lint: {suppress: LL015}", "write suppress: [{code: LL015, reason: "),
        ("lint: {suppress: [LL015]}", "write {code: LL015, reason: "),
        ("context: foo", "write NAME: value entries here"),
        ("labels: fast", "write a list: [fast]"),
    ],
)
def test_a_word_where_a_mapping_or_list_belongs_says_what_to_write(line: str, hint: str) -> None:
    """`llm: claude-sonnet-4-6`, `lint: LL015`, `labels: fast` said "must be a mapping (a list),
    got string ..." with no hint: one sentence without the way out."""
    d = one(MINIMAL + line + "\n", "F011")
    assert hint in d.hint, d.hint


def test_a_rubric_dimension_named_twice_is_refused() -> None:
    """Two dimensions named `accuracy` loaded: the reviewers' scoring tool has one field per
    name, so the second (its description, its weight) silently scored as the first, and the
    tool's `required` list repeated the name (a schema the API may refuse)."""
    text = MINIMAL.replace(
        "    next: done",
        "    evaluate:\n"
        "      type: llm_structured\n"
        "      prompt: Review the report.\n"
        "      dimensions:\n"
        "        - {name: accuracy, description: claims match the data, weight: 0.7}\n"
        "        - {name: accuracy, description: a reader can act on it, weight: 0.3}\n"
        "    on_yes: done\n    on_no: done",
    )
    d = one(text, "F018")
    # the sentence an assessment's repeated dimension gets (one rule, one wording)
    assert d.message == (
        "states.start.evaluate.dimensions[1]: a dimension named 'accuracy' is already defined "
        "at line 10"
    )
    assert (d.line, d.path) == (11, "states.start.evaluate.dimensions[1].name")
    assert d.hint == "give every dimension of a review its own name"


@pytest.mark.parametrize(
    ("rubric", "key"),
    [
        ("      dimensions: [{name: accuracy, description: claims match, weight: 1}]\n", "samples"),
        ("      threshold: 3.5\n", "samples"),
        ("      reviewers: 2\n", "min_confidence"),
    ],
)
def test_a_verdict_judge_setting_on_a_rubric_judge_is_refused(rubric: str, key: str) -> None:
    """`samples: 3` or `min_confidence: 0.8` beside `dimensions` (or `threshold`/`reviewers`,
    which review with the default dimensions) loaded and did nothing: a rubric judge runs
    `reviewers` reviewers and compares a weighted score with `threshold`."""
    value = "3" if key == "samples" else "0.8"
    text = MINIMAL.replace(
        "    next: done",
        "    evaluate:\n"
        "      type: llm_structured\n"
        "      prompt: Review the report.\n"
        f"{rubric}"
        f"      {key}: {value}\n"
        "    on_yes: done\n    on_no: done",
    )
    d = one(text, "F017")
    assert d.path == f"states.start.evaluate.{key}"
    assert "rubric" in d.message and ("reviewers" in d.hint or "threshold" in d.hint)


@pytest.mark.parametrize(
    ("parameter", "entry", "example"),
    [
        ('{type: integer, enum: ["1", "2"]}', "parameters.x.enum.0", '1, not "1"'),
        ("{type: integer, enum: [1, two]}", "parameters.x.enum.1", '1, not "1"'),
        ("{type: boolean, enum: [yes, no]}", "parameters.x.enum.0", 'true, not "true"'),
        ('{type: number, enum: [0.5, "1.5"]}', "parameters.x.enum.1", '1.5, not "1.5"'),
    ],
)
def test_an_enum_value_the_type_refuses_is_a_load_error(
    parameter: str, entry: str, example: str
) -> None:
    """`type: integer, enum: ["1", "2"]` loaded clean, and then no caller could pass anything:
    `--context x=1` is the integer 1, never in the list ("must be one of "1", "2", got 1").
    The hint's example is one of the parameter's type (a boolean's was `1, not "1"`)."""
    d = next(d for d in problems(MINIMAL + f"parameters:\n  x: {parameter}\n") if d.code == "F014")
    assert d.path == entry
    assert "no caller can pass it" in d.message and d.hint
    assert f"(e.g. {example})" in d.hint


NUL_LOOP = """\
name: nul
initial: a
scope: ["."]
states:
  a:
    action: "printf 'a\\x00b'"
    next: done
  done:
    terminal: true
"""

NUL_SUITE = """\
name: nul
cases:
  - id: one
    inputs: {text: "a"}
subject:
  command: "printf 'a\\0b'"
judges:
  - name: ok
    builtin: exit_code
"""


def test_a_nul_character_in_a_loop_or_suite_is_refused_at_its_line(tmp_path: Path) -> None:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "nul.yaml").write_text(NUL_LOOP)
    (tmp_path / "nul.suite.yaml").write_text(NUL_SUITE)
    checked = cli.ll_loop(tmp_path, "validate", "nul")
    assert checked.code != 0
    assert "nul.yaml:6:13: error F016 states.a.action holds a NUL character" in checked.stdout
    ran = cli.ll_loop(tmp_path, "run", "nul")
    assert "embedded null byte" not in ran.stdout + ran.stderr
    assert "holds a NUL character" in ran.stdout + ran.stderr
    suite = cli.ll_loop(tmp_path, "validate", "nul.suite.yaml")
    assert "nul.suite.yaml:6:12: error F016 subject.command holds a NUL" in suite.stdout


@pytest.mark.parametrize("verdict", ["[a]", "{a: 1}"])
def test_a_classify_verdict_that_is_not_text_is_a_schema_error_not_a_crash(
    tmp_path: Path, verdict: str
) -> None:
    # The on_<verdict> hint for `terminal`/`retry_exhausted`/`max_steps` looked each verdict
    # up in a dict: a list or mapping verdict was "internal error: TypeError: unhashable".
    (tmp_path / "v.yaml").write_text(
        "name: v\ninitial: t\nstates:\n  t:\n    action: echo hi\n    evaluate:\n"
        f"      type: classify\n      verdicts: [{verdict}, terminal]\n    on_terminal: done\n"
        "  done:\n    terminal: true\n"
    )
    checked = cli.ll_loop(tmp_path, "validate", "v.yaml")
    assert checked.code == 1, checked.stdout + checked.stderr
    assert "internal error" not in checked.stdout + checked.stderr
    assert "v.yaml:8:" in checked.stdout
    assert "'terminal' is a verdict of this state's classify evaluator" in checked.stdout


def test_a_nul_character_from_a_fragment_names_the_fragments_line(tmp_path: Path) -> None:
    # Every other load error about a value a fragment gave names the library's line; the NUL
    # refusal (0fda75e) pointed only at the state's `fragment:` key, with no word of the library.
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "frags.yaml").write_text(
        'fragments:\n  say:\n    description: "ok"\n    action: "echo a\\x00b"\n    next: done\n'
    )
    (tmp_path / ".loops" / "f.yaml").write_text(
        "name: f\ninitial: t\nimport: [frags.yaml]\nstates:\n  t:\n    fragment: say\n"
        "  done:\n    terminal: true\n"
    )
    checked = cli.ll_loop(tmp_path, "validate", "f")
    assert "error F016 states.t.action holds a NUL character" in checked.stdout
    assert "(from fragment 'say' at .loops/frags.yaml:4)" in checked.stdout, checked.stdout


def test_a_reserved_verdict_route_from_a_fragment_names_the_fragments_line(
    tmp_path: Path,
) -> None:
    # The F017 that replaces the schema's errors for on_terminal (7d458fe) dropped the
    # "(from fragment ...)" the schema's own errors had, so the library's line was not named.
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "frags.yaml").write_text(
        "fragments:\n  sort:\n    action: echo terminal\n    evaluate:\n      type: classify\n"
        "      verdicts: [terminal, other]\n    on_terminal: done\n    on_other: done\n"
    )
    (tmp_path / ".loops" / "f.yaml").write_text(
        "name: f\ninitial: t\nimport: [frags.yaml]\nstates:\n  t:\n    fragment: sort\n"
        "  done:\n    terminal: true\n"
    )
    checked = cli.ll_loop(tmp_path, "validate", "f")
    assert "F017 states.t.on_terminal: 'terminal' is a verdict" in checked.stdout, checked.stdout
    assert "(from fragment 'sort' at .loops/frags.yaml:7)" in checked.stdout, checked.stdout
