"""Property: whatever the input, the loader returns a Loop or raises LoadError — nothing else.

The loader promises this for arbitrary YAML; we feed arbitrary text, YAML-shaped token soup,
arbitrary bytes, and mutations of valid loops dumped back to YAML.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.load.loader import check_loop_file, check_loop_text, load_loop_text
from engine.load.schema_check import load_schema
from engine.model.errors import LoadError
from tests.properties import examples
from tests.test_load_validator import mutated_loops

REFERENCE = jsonschema.Draft202012Validator(load_schema())
FAST = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _assert_loads_or_diagnoses(text: str) -> None:
    loop, _, found = check_loop_text(text, "fuzz.yaml")
    assert (loop is None) == bool(found)
    for d in found:
        assert d.code and d.message and d.file == "fuzz.yaml"
        assert d.line >= 1 and d.column >= 1
    try:
        load_loop_text(text, "fuzz.yaml")
    except LoadError as exc:
        assert exc.diagnostics == found


_TOKENS = st.sampled_from(
    [
        "name: x\n", "initial: a\n", "states:\n", "  a:\n", "    action: t\n", "    on_yes: a\n",
        "    evaluate: {type: exit_code}\n", "- ", "  ", "\t", ":", ": ", "{", "}", "[", "]", ",",
        "&a ", "*a", "<<: *a\n", "!!python/name:os.system ", "!tag ", "? ", "---\n", "...\n",
        "'", '"', "|\n", ">\n", "#", "%YAML 1.1\n", "yes", "~", "1e9", "0x1F", "1:30", "\n",
        "\x00", "\ufeff", "é", "🙂", "\\", "@", "`", "!!binary aGk=", "!!set {a}", "!!omap [a: 1]",
    ]
)  # fmt: skip


@FAST
@given(st.text(max_size=300))
def test_arbitrary_text(text: str) -> None:
    _assert_loads_or_diagnoses(text)


@FAST
@given(st.lists(_TOKENS, max_size=40).map("".join))
def test_yaml_shaped_token_soup(text: str) -> None:
    _assert_loads_or_diagnoses(text)


_YAMLISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers() | st.booleans(), inner, max_size=4)
    ),
    max_leaves=15,
)


@FAST
@given(_YAMLISH)
def test_arbitrary_yaml_structures(data: Any) -> None:
    _assert_loads_or_diagnoses(yaml.safe_dump(data, allow_unicode=True))


@FAST
@given(mutated_loops())
def test_mutated_loops_load_exactly_when_the_schema_accepts_them(data: Any) -> None:
    text = yaml.safe_dump(data, sort_keys=False)
    loop, _, found = check_loop_text(text, "fuzz.yaml")
    assert (loop is None) == bool(found)
    # Checks beyond the schema: a regex that does not compile (F016), a judge with two kinds or
    # none, two judges with one name, a check snippet that does not compile (F040-F043), a
    # parameter's default its own type or enum refuses (F014).
    beyond = {"F014", "F016", "F040", "F041", "F042", "F043"}
    if REFERENCE.is_valid(yaml.safe_load(text)) and not any(d.code in beyond for d in found):
        assert loop is not None, [d.render() for d in found]


@settings(max_examples=examples(100), deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_in_a_file(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "junk.yaml"
        path.write_bytes(raw)
        loop, _, found = check_loop_file(path)
        assert (loop is None) == bool(found)
        assert all(d.line >= 1 and d.column >= 1 for d in found)
