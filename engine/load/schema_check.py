"""A small JSON Schema validator for exactly the keywords `schemas/loop.schema.json` uses.

Why our own validator: `ll-loop validate` must finish a 20-state loop in under 0.2 s, and merely
importing `jsonschema` costs 60-100 ms of that. Our schema uses a small, fixed set of 2020-12
keywords (`SUPPORTED_KEYWORDS`); interpreting them takes ~200 lines, runs in a few milliseconds,
and lets each failure carry what a good message needs (the offending key, the allowed values, the
reason a rule exists). Tests keep it honest: the schema is checked against the 2020-12
metaschema, may only use supported keywords, and this validator must agree with
`jsonschema.Draft202012Validator` on a corpus of loops and on generated mutations of them.

`violations(data)` returns every failure; `engine.load.suggest.explain` turns them into diagnostics.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from engine.load.resources import schema_path

PathKey = tuple[str | int, ...]
Schema = Mapping[str, Any] | bool

# Keywords that change validation, and annotations we may meet and ignore.
VALIDATION_KEYWORDS = frozenset(
    {
        "type", "enum", "const",
        "properties", "patternProperties", "additionalProperties", "propertyNames",
        "required", "dependentRequired", "minProperties",
        "items", "minItems", "maxItems", "uniqueItems",
        "minLength", "pattern",
        "minimum", "maximum", "exclusiveMinimum",
        "$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    }
)  # fmt: skip
ANNOTATION_KEYWORDS = frozenset(
    {"$schema", "$id", "$defs", "$comment", "title", "description", "default"}
)
SUPPORTED_KEYWORDS = VALIDATION_KEYWORDS | ANNOTATION_KEYWORDS
_COMBINATORS = frozenset({"allOf", "anyOf", "oneOf", "not", "if"})
_IF_THEN = frozenset({"if", "then", "description"})


@dataclass(frozen=True)
class Violation:
    """One failed keyword: where in the data, which keyword, and what a message needs.

    `detail` depends on the keyword: the missing or unknown key, the expected types, the
    allowed values, the limit, or (for anyOf/oneOf/propertyNames) the nested violations.
    `reason` is the `description` of the nearest enclosing `allOf` rule: why the rule exists.
    """

    keyword: str
    path: PathKey
    value: Any
    detail: Any = None
    schema: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    reason: str = ""


@cache
def load_schema(name: str = "loop.schema.json") -> Mapping[str, Any]:
    """The schema JSON, read once per process."""
    with open(schema_path(name), encoding="utf-8") as handle:
        loaded: Mapping[str, Any] = json.load(handle)
    return loaded


def violations(instance: Any, schema: Mapping[str, Any] | None = None) -> list[Violation]:
    """Every way `instance` fails `schema` (the loop schema by default)."""
    root = load_schema() if schema is None else schema
    found: list[Violation] = []
    _Validator(root).check(instance, root, (), found, "")
    return found


def is_valid(instance: Any, schema: Mapping[str, Any] | None = None) -> bool:
    root = load_schema() if schema is None else schema
    return _Validator(root).check(instance, root, (), None, "")


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def has_type(value: Any, name: str) -> bool:
    """JSON Schema's type test (an integral float such as 3.0 is an integer, a bool is not)."""
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if name == "number":
        return _is_number(value)
    if name == "integer":
        return _is_number(value) and (isinstance(value, int) or float(value).is_integer())
    return False


def json_equal(one: Any, two: Any) -> bool:
    """JSON equality: 1 == 1.0, but true != 1; lists and objects compared deeply."""
    if type(one) is str and type(two) is str:
        return one == two
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(json_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(json_equal(one[k], two[k]) for k in one)
    if isinstance(one, list | dict) or isinstance(two, list | dict):
        return False
    if isinstance(one, str) != isinstance(two, str):
        return False
    return bool(one == two)


class _Validator:
    """Interprets a schema; with `out=None` it only answers valid/invalid (fast, stops early)."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Schema] = {}

    @staticmethod
    def fail(
        out: list[Violation] | None,
        schema: Mapping[str, Any],
        reason: str,
        keyword: str,
        path: PathKey,
        value: Any,
        detail: Any = None,
    ) -> bool:
        if out is not None:
            out.append(Violation(keyword, path, value, detail, schema, reason))
        return False

    def resolve(self, ref: str) -> Schema:
        cached = self.refs.get(ref)
        if cached is not None:
            return cached
        self.refs[ref] = self._resolve(ref)
        return self.refs[ref]

    def _resolve(self, ref: str) -> Schema:
        if not ref.startswith("#"):
            raise ValueError(f"only local $ref is supported here, got {ref!r}")
        node: Any = self.root
        for part in ref[1:].split("/")[1:]:
            node = node[part.replace("~1", "/").replace("~0", "~")]
        resolved: Schema = node
        return resolved

    def check(
        self,
        value: Any,
        schema: Schema,
        path: PathKey,
        out: list[Violation] | None,
        reason: str,
    ) -> bool:
        if schema is True:
            return True
        if schema is False:
            if out is not None:
                out.append(Violation("false", path, value, reason=reason))
            return False
        ok = True
        expected = schema.get("type")
        if expected is not None:
            if isinstance(expected, str):
                if not has_type(value, expected):
                    return self.fail(out, schema, reason, "type", path, value, [expected])
            elif not any(has_type(value, name) for name in expected):
                return self.fail(out, schema, reason, "type", path, value, list(expected))
        if "enum" in schema and not any(json_equal(value, e) for e in schema["enum"]):
            ok = self.fail(out, schema, reason, "enum", path, value, schema["enum"])
            if out is None:
                return False
        if "const" in schema and not json_equal(value, schema["const"]):
            ok = self.fail(out, schema, reason, "const", path, value, schema["const"])
            if out is None:
                return False
        if "$ref" in schema:
            ok = self.check_ref(value, schema["$ref"], path, out, reason) and ok
            if not ok and out is None:
                return False
        if isinstance(value, dict):
            ok = self.check_object(value, schema, path, out, reason) and ok
        elif isinstance(value, list):
            ok = self.check_array(value, schema, path, out, reason) and ok
        elif isinstance(value, str):
            if "minLength" in schema and len(value) < schema["minLength"]:
                ok = self.fail(out, schema, reason, "minLength", path, value, schema["minLength"])
            if "pattern" in schema and not _regex(schema["pattern"]).search(value):
                ok = self.fail(out, schema, reason, "pattern", path, value, schema["pattern"])
        elif _is_number(value):
            if "minimum" in schema and value < schema["minimum"]:
                ok = self.fail(out, schema, reason, "minimum", path, value, schema["minimum"])
            if "maximum" in schema and value > schema["maximum"]:
                ok = self.fail(out, schema, reason, "maximum", path, value, schema["maximum"])
            if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
                ok = self.fail(
                    out, schema, reason, "exclusiveMinimum", path, value, schema["exclusiveMinimum"]
                )
        if not ok and out is None:
            return False
        if _COMBINATORS.isdisjoint(schema):
            return ok
        return self.check_combinators(value, schema, path, out, reason) and ok

    def check_ref(
        self, value: Any, ref: str, path: PathKey, out: list[Violation] | None, reason: str
    ) -> bool:
        """Follow a `$ref`: `#/$defs/x` in this schema, or `other.schema.json#/$defs/x` in a
        sibling shipped schema (its own local refs then resolve inside it), so a suite schema can
        reuse the loop schema's judge definitions."""
        if ref.startswith("#"):
            return self.check(value, self.resolve(ref), path, out, reason)
        name, _, pointer = ref.partition("#")
        other = _validator_for(name)
        return other.check(value, other.resolve("#" + pointer), path, out, reason)

    def check_object(
        self,
        value: dict[str, Any],
        schema: Mapping[str, Any],
        path: PathKey,
        out: list[Violation] | None,
        reason: str,
    ) -> bool:
        ok = True
        for key in schema.get("required", ()):
            if key not in value:
                ok = self.fail(out, schema, reason, "required", path, value, key)
                if out is None:
                    return False
        for key, needs in schema.get("dependentRequired", {}).items():
            if key in value:
                for need in needs:
                    if need not in value:
                        ok = self.fail(
                            out, schema, reason, "dependentRequired", path, value, (key, need)
                        )
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            ok = self.fail(
                out, schema, reason, "minProperties", path, value, schema["minProperties"]
            )
        if not ok and out is None:
            return False
        names = schema.get("propertyNames")
        if names is not None:
            for key in value:
                if out is None:
                    if not self.check(key, names, (*path, key), None, reason):
                        return False
                    continue
                inner: list[Violation] = []
                if not self.check(key, names, (*path, key), inner, reason):
                    ok = self.fail(
                        out, schema, reason, "propertyNames", (*path, key), key, (inner, value)
                    )
        properties = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        additional = schema.get("additionalProperties")
        if not properties and not patterns and additional is None:
            return ok
        for key, item in value.items():
            matched = False
            if key in properties:
                matched = True
                if not self.check(item, properties[key], (*path, key), out, reason):
                    ok = False
                    if out is None:
                        return False
            for pattern, sub in patterns.items():
                if _regex(pattern).search(key):
                    matched = True
                    if not self.check(item, sub, (*path, key), out, reason):
                        ok = False
                        if out is None:
                            return False
            if not matched and additional is not None:
                if additional is False:
                    ok = self.fail(
                        out, schema, reason, "additionalProperties", (*path, key), item, key
                    )
                    if out is None:
                        return False
                elif not self.check(item, additional, (*path, key), out, reason):
                    ok = False
                    if out is None:
                        return False
        return ok

    def check_array(
        self,
        value: list[Any],
        schema: Mapping[str, Any],
        path: PathKey,
        out: list[Violation] | None,
        reason: str,
    ) -> bool:
        ok = True
        if "minItems" in schema and len(value) < schema["minItems"]:
            ok = self.fail(out, schema, reason, "minItems", path, value, schema["minItems"])
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            ok = self.fail(out, schema, reason, "maxItems", path, value, schema["maxItems"])
        if schema.get("uniqueItems"):
            for index, item in enumerate(value):
                if any(json_equal(item, earlier) for earlier in value[:index]):
                    ok = self.fail(out, schema, reason, "uniqueItems", (*path, index), item, item)
                    break
        if not ok and out is None:
            return False
        items = schema.get("items")
        if items is not None:
            for index, item in enumerate(value):
                if not self.check(item, items, (*path, index), out, reason):
                    ok = False
                    if out is None:
                        return False
        return ok

    def check_combinators(
        self,
        value: Any,
        schema: Mapping[str, Any],
        path: PathKey,
        out: list[Violation] | None,
        reason: str,
    ) -> bool:
        ok = True
        for sub in schema.get("allOf", ()):
            if isinstance(sub, dict) and "if" in sub and sub.keys() <= _IF_THEN:
                quick = _quick_condition(sub["if"])
                if quick is not None and not quick(value):
                    continue  # a rule whose condition does not hold (no `else` here)
            why = sub.get("description", reason) if isinstance(sub, dict) else reason
            if not self.check(value, sub, path, out, why):
                ok = False
                if out is None:
                    return False
        for keyword in ("anyOf", "oneOf"):
            if keyword not in schema:
                continue
            branches = schema[keyword]
            passing = sum(1 for sub in branches if self.check(value, sub, path, None, reason))
            if (keyword == "anyOf" and passing == 0) or (keyword == "oneOf" and passing != 1):
                if out is None:
                    return False
                per_branch: list[list[Violation]] = []
                for sub in branches:
                    inner: list[Violation] = []
                    self.check(value, sub, path, inner, reason)
                    per_branch.append(inner)
                detail = per_branch if passing == 0 else passing
                ok = self.fail(out, schema, reason, keyword, path, value, detail)
        if "not" in schema and self.check(value, schema["not"], path, None, reason):
            ok = self.fail(out, schema, reason, "not", path, value, schema["not"])
            if out is None:
                return False
        if "if" in schema:
            condition = schema["if"]
            quick = _quick_condition(condition)
            holds = quick(value) if quick else self.check(value, condition, path, None, reason)
            branch = "then" if holds else "else"
            if branch in schema and not self.check(value, schema[branch], path, out, reason):
                ok = False
        return ok


@cache
def _validator_for(name: str) -> _Validator:
    """The validator of the shipped schema file `name` (for references across files)."""
    return _Validator(load_schema(name))


_QUICK: dict[int, Any] = {}


def _quick_condition(schema: Schema) -> Any:
    """A direct test for the two `if` shapes our schema uses, else None.

    `{"required": [k...]}` and `{"properties": {k: {"const": c}}, "required": [k]}` are asked
    once per state and seven times per evaluate block; testing them directly keeps validation
    cheap. Any other shape goes through the general interpreter.
    """
    key = id(schema)
    known = _QUICK.get(key)
    if known is not None and known[0] is schema:
        return known[1]
    quick: Any = None
    if isinstance(schema, Mapping) and set(schema) == {"required"}:
        needed = tuple(schema["required"])

        def quick(value: Any) -> bool:
            return not isinstance(value, dict) or all(k in value for k in needed)

    elif isinstance(schema, Mapping) and set(schema) == {"properties", "required"}:
        properties = schema["properties"]
        if len(properties) == 1 and list(properties) == list(schema["required"]):
            ((name, sub),) = properties.items()
            if isinstance(sub, Mapping) and set(sub) == {"const"}:
                constant = sub["const"]

                def quick(value: Any) -> bool:
                    if not isinstance(value, dict):
                        return True
                    return name in value and json_equal(value[name], constant)

    _QUICK[key] = (schema, quick)  # the schema is kept alive, so its id stays unique
    return quick
