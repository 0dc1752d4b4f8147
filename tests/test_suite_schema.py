"""schemas/suite.schema.json is a valid 2020-12 schema reusing the loop schema's judge
definitions, and our validator agrees with the reference one (jsonschema) on suite files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from engine.load.resources import schema_path
from engine.load.schema_check import is_valid, load_schema
from tests.harness_helpers import REPO
from tests.test_suite_load import GOOD

SUITE = load_schema("suite.schema.json")


def reference() -> jsonschema.Draft202012Validator:
    loop = json.loads(schema_path("loop.schema.json").read_text())
    registry: Registry[Any] = Registry().with_resource(loop["$id"], Resource.from_contents(loop))
    return jsonschema.Draft202012Validator(SUITE, registry=registry)


def test_the_suite_schema_is_valid_and_uses_supported_keywords() -> None:
    jsonschema.Draft202012Validator.check_schema(SUITE)
    assert SUITE["properties"]["judges"]["$ref"] == "loop.schema.json#/$defs/judgeList"


def suites() -> list[Any]:
    shipped = [yaml.safe_load(GOOD)]
    for path in sorted((REPO / "examples").rglob("*.suite.yaml")):
        shipped.append(yaml.safe_load(path.read_text()))
    good = shipped[0]
    broken: list[Any] = [
        {**good, "subject": {"command": 3}},
        {**good, "thresholds": {"upper": {"min_pass_rate": 2}}},
        {**good, "judges": [{"name": "x", "nonsense": 1}]},
        {**good, "isolation": "vm"},
        {**good, "cases": [{"id": "has space"}]},
        {**good, "subject": {"agent": "claude -p"}},
        {**good, "subject": {"command": "x", "with": {"a": 1}}},
        {k: v for k, v in good.items() if k != "subject"},
        {**good, "before_each": [{"name": "h"}]},
        {**good, "outputs": {"traces": {"events": "yes"}}},
    ]
    return shipped + broken


@pytest.mark.parametrize("data", suites())
def test_our_validator_agrees_with_jsonschema(data: Any) -> None:
    assert is_valid(data, SUITE) == reference().is_valid(data), data


def test_the_example_suites_are_schema_valid() -> None:
    examples = sorted((REPO / "examples").rglob("*.suite.yaml"))
    assert examples
    for path in examples:
        assert reference().is_valid(yaml.safe_load(Path(path).read_text())), path
