"""The YAML layer of the loader: every broken document becomes a positioned diagnostic."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from engine.load.loader import (
    check_loop_file,
    load_loop_file,
    load_loop_text,
    load_loop_with_positions,
)
from engine.load.yaml_positions import parse_yaml
from engine.model.errors import LoadError
from tests.load_helpers import MINIMAL, one, problems
from tests.properties import examples
from tests.test_load_validator import mutated_loops


def test_syntax_error_names_line_and_column_from_the_yaml_mark() -> None:
    d = one(
        """\
        name: broken
        initial: a
        states:
          a: {action: "x", next: b
          b: {terminal: true}
        """,
        "F001",
    )
    assert d.file == "loop.yaml"
    assert d.line == 5
    assert "YAML syntax error" in d.message


def test_tab_indentation_gets_a_hint_about_spaces() -> None:
    d = one("name: x\nstates:\n\ta: 1\n", "F001")
    assert (d.line, d.column) == (3, 1)
    assert "spaces" in d.hint


def test_a_key_without_its_colon_is_named_on_its_own_line() -> None:
    """YAML reports `action "true"` one line below, at the next key's colon."""
    text = MINIMAL.replace('action: "true"', 'action "true"\n    # a comment\n')
    d = one(text, "F001")
    assert (d.line, d.column) == (8, 5)
    assert d.hint == 'line 5 has no colon after its key: write action: "true"'
    d = one(MINIMAL.replace('action: "true"', 'action "true"'), "F001")
    assert (d.line, d.column, d.hint) == (
        6,
        9,
        'line 5 has no colon after its key: write action: "true"',
    )
    d = one(MINIMAL.replace('action: "true"', "action: echo a: b"), "F001")
    assert d.hint == 'quote a value that contains ": ", e.g. action: "echo a: b"'


def test_two_documents_are_refused() -> None:
    d = one(MINIMAL + "---\nname: other\n", "F001")
    assert "---" in d.hint


@pytest.mark.parametrize("text", ["", "   \n", "# only a comment\n", "---\n", "~\n"])
def test_empty_file(text: str) -> None:
    d = one(text, "F003")
    assert "empty" in d.message
    assert d.line in (1, 2) and d.column == 1


@pytest.mark.parametrize(
    ("text", "found"),
    [("- a\n- b\n", "a list"), ("just words\n", "string 'just words'"), ("42\n", "number 42")],
)
def test_top_level_must_be_a_mapping(text: str, found: str) -> None:
    d = one(text, "F004")
    assert found in d.message
    assert "name:" in d.hint


def test_duplicate_keys_are_an_error_not_last_one_wins() -> None:
    d = one(
        """\
        name: dup
        initial: a
        states:
          a:
            action: "true"
            next: b
            next: c
          b: {terminal: true}
        """,
        "F005",
    )
    assert (d.line, d.column) == (7, 5)
    assert "'next'" in d.message and "line 6" in d.message


def test_every_duplicate_is_reported() -> None:
    found = problems("name: a\nname: b\ninitial: x\ninitial: y\nstates: {}\n")
    assert [(d.code, d.line) for d in found] == [("F005", 2), ("F005", 4)]


def test_complex_keys_are_refused() -> None:
    d = one("? [a, b]\n: c\n", "F006")
    assert (d.line, d.column) == (1, 3)


def test_empty_key_is_refused() -> None:
    d = one("name: x\n~: value\n", "F006")
    assert d.line == 2


def test_python_tags_are_refused_never_executed() -> None:
    d = one('name: !!python/object/apply:os.system ["echo pwned"]\n', "F007")
    assert "!!python/object/apply:os.system" in d.message


def test_custom_tags_are_refused() -> None:
    d = one("name: !include other.yaml\n", "F007")
    assert "!include" in d.message


def test_binary_values_are_refused() -> None:
    one("name: !!binary aGVsbG8=\n", "F007")


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        prev, name = chr(96 + level), chr(97 + level)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    d = one("\n".join(lines) + "\n", "F007")
    assert "aliases" in d.message


def test_deep_nesting_is_refused() -> None:
    d = one("name: " + "[" * 200 + "]" * 200 + "\n", "F007")
    assert "nests deeper" in d.message


def test_nesting_beyond_libyaml_limit_is_refused() -> None:
    one("name: " + "[" * 5000 + "]" * 5000 + "\n", "F007")


def test_binary_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "junk.yaml"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00binary")
    loop, _, found = check_loop_file(path)
    assert loop is None
    assert [d.code for d in found] == ["F002"]
    assert found[0].file == str(path)
    assert "binary" in found[0].message


def test_invalid_utf8_names_the_byte_and_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: x\ndescription: caf" + b"\xe9\n")
    with pytest.raises(LoadError) as caught:
        load_loop_file(path)
    d = caught.value.diagnostics[0]
    assert (d.code, d.line, d.column) == ("F002", 2, 17)
    assert "0xe9" in d.message


def test_control_characters_are_refused() -> None:
    one("name: a\x07b\n", "F002")


def test_missing_file_is_a_diagnostic(tmp_path: Path) -> None:
    with pytest.raises(LoadError) as caught:
        load_loop_file(tmp_path / "nope.yaml")
    assert caught.value.diagnostics[0].code == "F000"


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + MINIMAL.encode())
    assert load_loop_file(path).name == "minimal"


def test_yes_and_no_stay_words_as_in_yaml_1_2() -> None:
    loop = load_loop_text(
        """\
name: words
initial: sort
states:
  sort:
    action: echo yes
    evaluate: {type: classify, verdicts: [yes, no, maybe]}
    route: {yes: done, no: done, maybe: done}
  done:
    terminal: true
"""
    )
    sort = loop.states["sort"]
    assert sort.evaluate is not None and sort.evaluate.verdicts == ("yes", "no", "maybe")
    assert dict(sort.route or {}) == {"yes": "done", "no": "done", "maybe": "done"}


def test_base_60_numbers_stay_text() -> None:
    d = one(MINIMAL + "timeout: 1:30\n", "F011")
    assert "string '1:30'" in d.message


def test_merge_keys_share_a_block_and_explicit_keys_win() -> None:
    loop, positions = load_loop_with_positions(
        text="""\
name: merged
initial: a
states:
  a: &base
    action: "true"
    timeout: 5
    next: b
  b:
    <<: *base
    timeout: 9
    next: c
  c:
    terminal: true
"""
    )
    assert loop.states["b"].timeout == 9.0
    assert loop.states["b"].action == "true"
    assert positions.of(("states", "b", "timeout")) == (10, 5)
    assert positions.of(("states", "b", "action")) == (5, 5)


def test_load_error_message_starts_with_file_line_column() -> None:
    with pytest.raises(LoadError) as caught:
        load_loop_text("name: [\n", "bad.yaml")
    assert caught.value.message.startswith("bad.yaml:2:1: ")


def test_lone_surrogates_in_text_are_a_diagnostic() -> None:
    one("name: \ud800\n", "F002")


def test_unquoted_colon_in_a_value_gets_a_quoting_hint() -> None:
    d = one(MINIMAL.replace('action: "true"', "action: echo a: b"), "F001")
    assert (d.line, d.column) == (5, 19)
    assert "quote" in d.hint


def test_backtick_at_start_of_a_value_gets_a_quoting_hint() -> None:
    d = one(MINIMAL.replace('action: "true"', "action: `date`"), "F001")
    assert d.hint == "quote a value that starts with `"


def test_a_placeholder_inside_braces_gets_the_quote_it_needs() -> None:
    """`{action: echo ${x}}` is the commonest YAML slip in a loop: the placeholder's `}` closes
    the `{...}` mapping early. The hint names that cause, not indentation."""
    for flow in ("{action: echo ${context.x}, next: done}", "[echo ${context.x}]"):
        d = one(MINIMAL.replace('action: "true"', f"action: {flow}"), "F001")
        assert "${...}" in d.hint and "quote" in d.hint, d.hint


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_loops())
def test_every_key_position_points_at_that_key_in_the_text(data: Any) -> None:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000)
    parsed, positions = parse_yaml(text, "p.yaml")
    lines = text.splitlines()

    def walk(node: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                line, column = positions.of((*path, key))
                written = lines[line - 1][column - 1 :]
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                    assert written.startswith((f"{key}:", f"'{key}':")), (key, written)
                else:  # other keys may be quoted or escaped by the dumper
                    assert written.startswith((key, "'", '"', "? ")), (key, written)
                walk(value, (*path, key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, (*path, index))

    walk(parsed, ())


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "a: &a {b: *a}\n"])
def test_recursive_aliases_are_refused(text: str) -> None:
    d = one(text, "F007")
    assert "cycle" in d.message


def test_every_yaml_the_engine_reads_goes_through_one_reader() -> None:
    """Only `engine.load.yaml_positions` parses YAML, so loop, task, issue, config and suite files
    all get its protection (alias bombs, nesting, tags, non-finite numbers). Writing YAML
    (`yaml.safe_dump`) is fine anywhere."""
    import ast

    import engine

    readers = {"load", "safe_load", "full_load", "unsafe_load", "load_all", "safe_load_all",
               "compose", "compose_all", "parse", "scan"}  # fmt: skip
    packages = Path(engine.__file__).resolve().parents[1]
    offenders = []
    for path in sorted([*(packages / "engine").rglob("*.py"), *(packages / "lint").rglob("*.py")]):
        if path.name == "yaml_positions.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "yaml":
                offenders.append(f"{path.name}: from {node.module} import ...")
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "yaml"
                and node.attr in readers
            ):
                offenders.append(f"{path.name}:{node.lineno}: yaml.{node.attr}")
    assert offenders == []


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_a_utf16_file_is_named_as_such_not_as_binary(tmp_path: Path, encoding: str) -> None:
    """Windows PowerShell's `>` and Notepad's "Unicode" save text as UTF-16: the loop was
    refused as "binary, not YAML text (it contains NUL bytes)" at 1:4, which sent the user
    looking for a wrong path rather than at the file's encoding."""
    path = tmp_path / "loop.yaml"
    path.write_bytes(MINIMAL.encode(encoding))
    with pytest.raises(LoadError) as caught:
        load_loop_file(path)
    [d] = caught.value.diagnostics
    assert (d.code, d.line, d.column) == ("F002", 1, 1)
    assert d.message == "the file is UTF-16 text, not UTF-8"
    assert d.hint.startswith("save it as UTF-8")


def test_a_file_of_nul_bytes_is_binary_not_utf16(tmp_path: Path) -> None:
    path = tmp_path / "zeros.yaml"
    path.write_bytes(b"\x00" * 64)
    with pytest.raises(LoadError) as caught:
        load_loop_file(path)
    assert "binary" in caught.value.diagnostics[0].message
