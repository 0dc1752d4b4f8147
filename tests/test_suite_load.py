"""Suite files load like loops: every problem a positioned diagnostic with a code and a hint;
dataset cases read through the one bounded YAML reader, broken ones kept as problems."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest

from engine.load.dataset import load_cases
from engine.load.locate import looks_like_suite
from engine.load.suite import check_suite_text, load_suite_file
from engine.model.errors import UsageError

GOOD = """\
name: demo
cases:
  - id: one
    input: {text: hello}
    annotations: {expected: HELLO}
  - input: {text: world}
subject:
  command: echo "${inputs.text}" | tr a-z A-Z
judges:
  - name: upper
    check: return outputs["stdout"].strip() == inputs["text"].upper(), "compared"
  - name: quality
    prompt: "Score the output. {{ outputs }}"
expectations:
  - type: file_exists
    paths: [out.txt]
pairwise:
  name: preference
  prompt: Which is better?
baseline_subject:
  command: echo "${inputs.text}"
thresholds:
  upper: {min_pass_rate: 0.5}
  quality: {min_mean: 3}
  preference: {min_win_rate: 0.5}
"""


def problems(text: str) -> list[str]:
    suite, _, found = check_suite_text(textwrap.dedent(text), "s.suite.yaml")
    assert suite is None or not found
    return [f"{d.line}:{d.code} {d.message}" for d in found]


def test_a_good_suite_loads_with_every_spelling_of_judges() -> None:
    suite, _, found = check_suite_text(GOOD, "s.suite.yaml")
    assert found == [] and suite is not None
    assert [(j.name, j.kind) for j in suite.judges] == [
        ("upper", "check"),
        ("quality", "llm"),
        ("file_exists", "builtin"),
    ]
    assert suite.subject.kind == "command" and suite.baseline_subject is not None
    assert suite.pairwise is not None and suite.pairwise.name == "preference"
    assert [(t.judge, t.gate, t.value) for t in suite.thresholds] == [
        ("upper", "min_pass_rate", 0.5),
        ("quality", "min_mean", 3.0),
        ("preference", "min_win_rate", 0.5),
    ]
    assert [c.id for c in suite.cases] == ["one", "case-2"]
    assert suite.judges[0].line == 10  # judges keep their file lines for messages


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace("subject:\n  command:", "subject:\n  commnd:"), "F012"),
        (GOOD + "inputs: {a: 1}\n", "F012"),
        (GOOD.replace('  command: echo "${inputs.text}" | tr a-z A-Z\n', "  model: m\n"), "F050"),
        (GOOD.replace("subject:\n", "subject:\n  loop: fix\n", 1), "F050"),
        (GOOD.replace("name: demo\n", "name: demo\ndataset: cases\n"), "F051"),
        (GOOD.replace("upper: {min_pass_rate", "uper: {min_pass_rate"), "F052"),
        (GOOD.replace("quality: {min_mean: 3}", "quality: {min_win_rate: 0.5}"), "F053"),
        (GOOD.replace("preference: {min_win_rate", "preference: {min_mean"), "F053"),
        (GOOD.replace("  - input: {text: world}", "  - id: one"), "F054"),
        (GOOD.replace("name: upper\n    check", "name: quality\n    check"), "F042"),
        (GOOD.replace("    check: return", "    prompt: x\n    check: return"), "F040"),
    ],
)
def test_bad_suites_are_refused_with_a_code(text: str, expected: str) -> None:
    found = problems(text)
    assert any(f":{expected} " in p for p in found), found


def test_messages_name_the_suite_and_suggest() -> None:
    found = problems(GOOD.replace("upper: {min_pass_rate", "uper: {min_pass_rate"))
    assert found == [
        "23:F052 thresholds names 'uper', which is not a judge of this suite "
        "(did you mean 'upper'?)"
    ]
    found = problems(GOOD + "inputs: {a: 1}\n")
    assert found == ["26:F012 unknown key 'inputs' in the top level of the suite"]
    found = problems("name: x\nsubject: {command: a}\ncases: [{input: {}}]\n")
    assert found == ["1:F055 the suite has no judges: nothing would be measured"]
    found = problems("[1, 2]\n")
    assert found == ["1:F004 the top level of a suite file must be a mapping of keys, got a list"]


def test_a_misspelt_subject_kind_is_told_as_the_unknown_key_alone() -> None:
    """`cmd:` is the mistake: "subject has no kind" above it would be the only line a refused
    run shows, without the "did you mean"."""
    found = problems(GOOD.replace("  command: echo", "  cmd: echo", 1))
    assert found == ["8:F012 unknown key 'cmd' in subject"]
    found = problems(GOOD.replace("  command: echo", "  model: m\n  commmand: echo", 2))
    assert found == [
        "9:F012 unknown key 'commmand' in subject",
        "23:F012 unknown key 'commmand' in baseline_subject",
    ]
    found = problems(
        GOOD.replace('  command: echo "${inputs.text}" | tr a-z A-Z\n', "  model: m\n")
    )
    assert found == ["7:F050 subject has no kind: it sets none of command, prompt, agent and loop"]


def test_yaml_syntax_and_alias_bombs_are_diagnostics(tmp_path: Path) -> None:
    assert problems("name: [unclosed\n")[0].split(" ")[0].endswith("F001")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    found = problems(bomb)
    assert any("F007" in p for p in found), found


def test_a_suite_nested_too_deep_is_not_told_about_states() -> None:
    text = "name: x\ncases: " + "[" * 100 + "]" * 100 + "\n"
    _, _, [diagnostic] = check_suite_text(text, "deep.suite.yaml")
    assert diagnostic.code == "F007"
    assert (
        diagnostic.hint
        == "loop and suite files nest only a few levels deep; this looks like generated junk"
    )


def test_suite_files_are_told_from_loops() -> None:
    assert looks_like_suite(GOOD)
    assert not looks_like_suite("name: x\ninitial: a\nstates:\n  a: {terminal: true}\n")


# ---- datasets ------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def dataset_suite(tmp_path: Path) -> Path:
    return write(
        tmp_path / "d.suite.yaml",
        "name: d\ndataset: cases\nsubject: {command: 'true'}\n"
        "judges:\n  - {name: ok, builtin: exit_code}\n",
    )


def test_dataset_cases_are_folders_in_order_and_broken_ones_are_kept(tmp_path: Path) -> None:
    write(tmp_path / "cases" / "b-good" / "input.yaml", "text: hi\n")
    write(tmp_path / "cases" / "b-good" / "annotations.yaml", "expected: HI\n")
    write(tmp_path / "cases" / "a-no-input" / "notes.txt", "x")
    write(tmp_path / "cases" / "c-bad-yaml" / "input.yaml", "text: [unclosed\n")
    write(tmp_path / "cases" / "d-list" / "input.yaml", "- 1\n- 2\n")
    write(tmp_path / "cases" / "e-bad-notes" / "input.yaml", "a: 1\n")
    write(tmp_path / "cases" / "e-bad-notes" / "annotations.yaml", "a: b: c\n")
    (tmp_path / "cases" / ".hidden").mkdir()
    cases = load_cases(load_suite_file(dataset_suite(tmp_path)))
    assert [c.id for c in cases] == ["a-no-input", "b-good", "c-bad-yaml", "d-list", "e-bad-notes"]
    by_id = {c.id: c for c in cases}
    assert by_id["b-good"].problem is None
    assert by_id["b-good"].inputs == {"text": "hi"}
    assert by_id["b-good"].annotations == {"expected": "HI"}
    assert by_id["a-no-input"].problem == "the case folder has no input.yaml"
    assert "c-bad-yaml/input.yaml:2" in str(by_id["c-bad-yaml"].problem)
    assert "must hold a mapping of keys, not a list" in str(by_id["d-list"].problem)
    assert "annotations.yaml:1" in str(by_id["e-bad-notes"].problem)


def test_a_missing_dataset_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read the dataset directory"):
        load_cases(load_suite_file(dataset_suite(tmp_path)))


def test_case_keys_follow_inputs_and_annotations(tmp_path: Path) -> None:
    write(tmp_path / "cases" / "a" / "input.yaml", "text: hi\n")
    write(tmp_path / "cases" / "b" / "input.yaml", "text: hi\n")
    write(tmp_path / "cases" / "c" / "input.yaml", "text: hi\n")
    write(tmp_path / "cases" / "c" / "annotations.yaml", "x: 1\n")
    a, b, c = load_cases(load_suite_file(dataset_suite(tmp_path)))
    assert a.key == b.key != c.key


def test_a_100_mb_input_is_refused_in_one_sentence_without_reading_it(tmp_path: Path) -> None:
    import resource

    big = tmp_path / "cases" / "huge" / "input.yaml"
    big.parent.mkdir(parents=True)
    with big.open("wb") as handle:
        handle.write(b"text: ")
        handle.truncate(100 * 1024 * 1024)  # sparse: 100 MB long, nothing on disk
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    (case,) = load_cases(load_suite_file(dataset_suite(tmp_path)))
    assert time.monotonic() - started < 1.0
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 20, f"reading the huge file grew RSS by {grown_mb:.0f} MB"
    assert case.problem is not None
    assert "the file is too large to read (100.0 MB; the limit is 10.0 MB)" in case.problem
    assert "\n" not in case.problem


def test_an_alias_bomb_input_is_refused(tmp_path: Path) -> None:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    write(tmp_path / "cases" / "bomb" / "input.yaml", "\n".join(lines) + "\n")
    (case,) = load_cases(load_suite_file(dataset_suite(tmp_path)))
    assert case.problem is not None and "alias" in case.problem.lower(), case.problem


def test_inline_cases_are_plain_data(tmp_path: Path) -> None:
    suite = load_suite_file(write(tmp_path / "s.suite.yaml", GOOD))
    one, two = load_cases(suite)
    assert json.dumps(one.inputs) == '{"text": "hello"}'
    assert one.annotations == {"expected": "HELLO"} and two.annotations == {}
    assert one.source.endswith("s.suite.yaml:3")


@pytest.mark.parametrize("outputs", ["[main, answer.md]", "[{path: main}, {tool: 'mcp__*'}]"])
def test_outputs_written_as_a_list_are_told_the_suites_spelling(outputs: str) -> None:
    """A loop's assessment writes `outputs: [main]`, agent_eval `outputs: [{path: main}]`; a
    suite's outputs is a mapping, and "write NAME: value entries" did not say which names."""
    text = "name: x\nsubject: {command: a}\ncases: [{input: {}}]\n"
    text += "judges: [{name: e, builtin: exit_code}]\n"
    _, _, found = check_suite_text(text + f"outputs: {outputs}\n")
    [problem] = found
    assert problem.code == "F011" and problem.hint == (
        "a suite's outputs is a mapping: outputs: {paths: [main, answer.md]} reads those files "
        "or directories into the record (every tool call is in it already)"
    )


@pytest.mark.parametrize("subject", ["agent: '   '\n  prompt: hi", "command: '  '"])
def test_a_blank_agent_or_command_is_refused(subject: str) -> None:
    """`agent: "   "` ran `bash -c` with nothing to run: exit 0, and every case passed an
    `exit_code` judge with no agent ever started."""
    text = GOOD.replace('command: echo "${inputs.text}" | tr a-z A-Z', subject)
    found = problems(text)
    assert found and "has an invalid value" in found[0], found


def test_a_binary_suite_file_is_called_a_suite_file(tmp_path: Path) -> None:
    """The reader's refusal of a binary suite file kept the loop reader's hint, "a loop file
    is UTF-8 YAML text", where every other suite diagnostic speaks of the suite file."""
    from engine.load.suite import check_suite_file

    path = tmp_path / "s.suite.yaml"
    path.write_bytes(b"name: s\x00\n")
    suite, _, [problem] = check_suite_file(path)
    assert suite is None and problem.code == "F002"
    assert problem.hint == "a suite file is UTF-8 YAML text; check the path"
