"""Our small schema validator must agree with `jsonschema` (which we keep out of the CLI path).

The schema is checked against the 2020-12 metaschema, must use only keywords our validator
implements, and both validators must give the same valid/invalid answer on a corpus of loops
and on generated mutations of them.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import jsonschema
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.load.schema_check import SUPPORTED_KEYWORDS, is_valid, load_schema, violations
from tests.load_helpers import CORPUS
from tests.properties import examples

SCHEMA = load_schema()
REFERENCE = jsonschema.Draft202012Validator(SCHEMA)
VALID = [yaml.safe_load(text) for text in CORPUS.values()]

# Keywords whose value is a map of names → subschemas, or a list of subschemas.
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "dependentSchemas"}
_SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
_SCHEMA_VALUES = {"additionalProperties", "propertyNames", "items", "not", "if", "then", "else"}


def _keywords(schema: Any) -> Iterator[str]:
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        yield key
        if key in _SCHEMA_MAPS:
            for sub in value.values():
                yield from _keywords(sub)
        elif key in _SCHEMA_LISTS:
            for sub in value:
                yield from _keywords(sub)
        elif key in _SCHEMA_VALUES:
            yield from _keywords(value)


def test_schema_is_valid_2020_12() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_schema_uses_only_keywords_our_validator_supports() -> None:
    used = set(_keywords(SCHEMA))
    assert used <= SUPPORTED_KEYWORDS, used - SUPPORTED_KEYWORDS


def test_every_object_schema_closes_its_keys() -> None:
    """`additionalProperties: false` everywhere a set of keys is declared."""

    def walk(schema: Any, where: str) -> Iterator[str]:
        if not isinstance(schema, dict):
            return
        closes = "additionalProperties" in schema or where.endswith(("/if", "/then"))
        if "properties" in schema and not closes:
            yield where
        for key, value in schema.items():
            if key in _SCHEMA_MAPS:
                for name, sub in value.items():
                    yield from walk(sub, f"{where}/{key}/{name}")
            elif key in _SCHEMA_LISTS:
                for index, sub in enumerate(value):
                    yield from walk(sub, f"{where}/{key}/{index}")
            elif key in _SCHEMA_VALUES:
                yield from walk(value, f"{where}/{key}")

    assert list(walk(SCHEMA, "#")) == []


def test_corpus_is_valid_for_both_validators() -> None:
    for data in VALID:
        assert REFERENCE.is_valid(data)
        assert is_valid(data)
        assert violations(data) == []


INVALID = [
    {},
    [],
    "loop",
    {"name": "x", "initial": "a", "states": {}},
    {"name": "x", "initial": "a", "states": {"a": {"terminal": "yes"}}},
    {"name": "x", "initial": "a", "states": {"a": {"action": "t", "route": {"y es": "a"}}}},
    {"name": "x", "initial": "a", "states": {"a": {"action": "t", "on_success": "a"}}},
    {"name": "x", "initial": "a", "states": {"a": {"action": "t", "loop": "b"}}},
    {"name": "x", "initial": "a", "states": {"a": {"failure": True}}},
    {"name": "x", "initial": "a", "states": {"a": {"evaluate": {"type": "exit_code", "x": 1}}}},
    {"name": "x", "initial": "a", "states": {"a": {"evaluate": {"type": "llm_structured"}}}},
    {"name": "x", "initial": "a", "states": {"a": {}}, "max_steps": True},
    {"name": "x", "initial": "a", "states": {"a": {}}, "max_steps": 2.5},
    {"name": "x", "initial": "a", "states": {"a": {}}, "labels": ["a", "a"]},
]


def test_invalid_examples_are_invalid_for_both_validators() -> None:
    for data in INVALID:
        assert not REFERENCE.is_valid(data), data
        assert not is_valid(data), data
        assert violations(data), data


_KEYS = sorted(
    {
        *SCHEMA["properties"],
        *SCHEMA["$defs"]["state"]["properties"],
        *SCHEMA["$defs"]["evaluate"]["properties"],
        "on_yes",
        "on_no",
        "on_success",
        "on_terminal",
        "_",
        "_error",
        "bad key",
    }
)
_WORDS = st.sampled_from(
    [
        "exit_code", "output_contains", "output_numeric", "output_json", "convergence",
        "classify", "llm_structured", "shell", "prompt", "eq", "ge", "minimize", "first",
        "anthropic", "cmd:claude -p", "cmd:", "yes", "no", "$current", "", " ", ".a.0", "a",
        "1abc", "done", "check",
    ]
)  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=5),
    st.floats(min_value=-2, max_value=6, allow_nan=False),
    _WORDS,
    st.text(max_size=5),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=4), inner, max_size=3),
    ),
    max_leaves=6,
)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _paths(value, (*prefix, index))


@st.composite
def mutated_loops(draw: st.DrawFn) -> Any:
    data = copy.deepcopy(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = list(_paths(data))
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if not path:
            if action == "add" and isinstance(data, dict):
                data[draw(st.sampled_from(_KEYS))] = draw(_JSON)
            continue
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        if action == "replace":
            parent[last] = draw(_JSON)
        elif action == "delete":
            del parent[last]
        elif isinstance(parent[last], dict):
            parent[last][draw(st.sampled_from(_KEYS))] = draw(_JSON)
        elif isinstance(parent[last], list):
            parent[last].append(draw(_JSON))
    return data


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_loops())
def test_our_validator_agrees_with_jsonschema_on_mutations(data: Any) -> None:
    expected = REFERENCE.is_valid(data)
    assert is_valid(data) == expected
    assert (violations(data) == []) == expected


def test_loading_does_not_import_jsonschema() -> None:
    code = (
        "import sys; from engine.load.loader import load_loop_text; "
        "from tests.load_helpers import MINIMAL; load_loop_text(MINIMAL); "
        "print('jsonschema' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
