"""A small JSON Schema validator for exactly the keywords `schemas/loop.schema.json` uses.

Why our own validator: `ll-loop validate` must finish a 20-state loop in under 0.2 s, and merely
importing `jsonschema` costs 60-100 ms of that. Our schema uses a small, fixed set of 2020-12
keywords (`SUPPORTED_KEYWORDS`); interpreting them takes ~200 lines, runs in a few milliseconds,
and lets each failure carry what a good message needs (the offending key, the allowed values, the
reason a rule exists). Tests keep it honest: the schema is checked against the 2020-12
metaschema, may only use supported keywords, and this validator must agree with
`jsonschema.Draft202012Validator` on a corpus of loops and on generated mutations of them.

`violations(data)` returns every failure; `engine.load` turns them into diagnostics.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from engine.resources import schema_path

PathKey = tuple[str | int, ...]
Schema = Mapping[str, Any] | bool

# Keywords that change validation, and annotations we may meet and ignore.
VALIDATION_KEYWORDS = frozenset(
    {
        "type", "enum", "const",
        "properties", "patternProperties", "additionalProperties", "propertyNames",
        "required", "dependentRequired", "minProperties",
        "items", "minItems", "uniqueItems",
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
            raise ValueError(f"only local $ref is supported, got {ref!r}")
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
            names = [expected] if isinstance(expected, str) else list(expected)
            if not any(has_type(value, name) for name in names):
                return self.fail(out, schema, reason, "type", path, value, names)
        if "enum" in schema and not any(json_equal(value, e) for e in schema["enum"]):
            ok = self.fail(out, schema, reason, "enum", path, value, schema["enum"])
            if out is None:
                return False
        if "const" in schema and not json_equal(value, schema["const"]):
            ok = self.fail(out, schema, reason, "const", path, value, schema["const"])
            if out is None:
                return False
        if "$ref" in schema:
            ok = self.check(value, self.resolve(schema["$ref"]), path, out, reason) and ok
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
            why = sub.get("description", reason) if isinstance(sub, Mapping) else reason
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


# ---------------------------------------------------------------------------------------------
# Violations → diagnostics: one readable sentence each, placed at file:line:column.

_TYPE_WORDS = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "empty",
}


def render_path(path: PathKey) -> str:
    """`states.check.timeout`, `lint.suppress[0].reason`; the root is "the loop"."""
    if not path:
        return "the loop"
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + part
    return text


def describe(value: Any) -> str:
    """A short, typed rendering of a value for messages: string 'abc', number 5, a list."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if _is_number(value):
        return f"number {value}"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


def explain(found: list[Violation], positions: Any, file: str) -> list[Any]:
    """Diagnostics for schema violations, sorted by line (`positions` is a `Positions`)."""
    from engine.errors import Diagnostic

    out: list[Diagnostic] = []
    for violation in found:
        for code, message, hint, at, of_value in _explain(violation):
            line, column = positions.value_of(at) if of_value else positions.of(at)
            out.append(
                Diagnostic(code, "error", message, file, render_path(at), line, column, hint)
            )
    unique = {(d.line, d.column, d.code, d.message): d for d in out}
    return sorted(unique.values(), key=lambda d: (d.line, d.column, d.code))


_Explained = tuple[str, str, str, PathKey, bool]


def _explain(v: Violation) -> list[_Explained]:
    from engine.suggest import did_you_mean, place_of, unsupported

    where = render_path(v.path)
    kind = v.keyword
    if kind == "type":
        expected = " or ".join(_TYPE_WORDS.get(t, t) for t in v.detail)
        return [
            (
                "F011",
                f"{where} must be {expected}, got {describe(v.value)}",
                _type_hint(v.detail, v.value),
                v.path,
                True,
            )
        ]
    if kind == "required":
        owner = "the loop" if not v.path else where
        hint = _required_hint(v.path, v.detail) or v.reason
        return [("F010", f"{owner} is missing the required key '{v.detail}'", hint, v.path, False)]
    if kind == "additionalProperties":
        parent, key = v.path[:-1], str(v.path[-1])
        place = place_of(parent)
        refused = unsupported(place, key)
        if refused is not None:
            return [("F013", refused.message, refused.hint, v.path, False)]
        allowed = sorted(v.schema.get("properties", {}))
        owner = "the top level of the loop" if not parent else render_path(parent)
        return [
            (
                "F012",
                f"unknown key '{key}' in {owner}",
                _unknown_hint(key, allowed, place, did_you_mean(key, allowed)),
                v.path,
                False,
            )
        ]
    if kind == "propertyNames":
        return [_explain_name(v, place_of(v.path[:-1]))]
    if kind == "enum":
        allowed = [str(a) for a in v.detail]
        guess = did_you_mean(v.value, allowed) if isinstance(v.value, str) else None
        hint = f"did you mean '{guess}'?" if guess else ""
        return [
            (
                "F014",
                f"{where} must be one of {', '.join(allowed)}; got {describe(v.value)}",
                hint,
                v.path,
                True,
            )
        ]
    if kind == "const":
        message = f"{where} must be {json.dumps(v.detail)}, got {describe(v.value)}"
        return [("F017" if v.reason else "F014", message, v.reason, v.path, True)]
    if kind in ("minimum", "maximum", "exclusiveMinimum"):
        relation = {
            "minimum": "at least",
            "maximum": "at most",
            "exclusiveMinimum": "greater than",
        }[kind]
        hint = "timeouts are seconds, greater than 0" if "timeout" in where else ""
        return [
            ("F015", f"{where} must be {relation} {v.detail}, got {v.value}", hint, v.path, True)
        ]
    if kind in ("minLength", "minItems", "minProperties"):
        return [("F015", f"{where} must not be empty", _empty_hint(v.path), v.path, True)]
    if kind == "pattern":
        hint = str(v.schema.get("description", ""))
        return [("F016", f"{where} has an invalid value: {describe(v.value)}", hint, v.path, True)]
    if kind == "uniqueItems":
        return [
            (
                "F018",
                f"{render_path(v.path[:-1])} lists {describe(v.value)} more than once",
                "remove the repeated entry",
                v.path,
                True,
            )
        ]
    if kind == "dependentRequired":
        key, need = v.detail
        return [
            (
                "F017",
                f"{where}.{key} needs {need} in the same state",
                _DEPENDENT_HINTS.get((key, need), f"add {need}, or remove {key}"),
                (*v.path, key),
                False,
            )
        ]
    if kind == "not":
        return [
            (
                "F017",
                f"{where}: {_sentence(v.reason or 'this combination is not allowed')}",
                "",
                v.path,
                False,
            )
        ]
    if kind == "false":
        return [
            (
                "F017",
                f"{where} is not allowed here: {_sentence(v.reason)}",
                _false_hint(v.path),
                v.path,
                False,
            )
        ]
    if kind in ("anyOf", "oneOf"):
        return _explain_alternatives(v)
    return [("F019", f"{where} does not match the loop schema ({kind})", "", v.path, True)]


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:] if text else "not allowed"


def _explain_name(v: Violation, place: str) -> _Explained:
    from engine.suggest import did_you_mean

    key = str(v.path[-1])
    inner: list[Violation] = v.detail[0]
    owner_value = v.detail[1]
    allowed_keys = next((i.detail for i in inner if i.keyword == "enum"), None)
    if allowed_keys is not None:
        owner = render_path(v.path[:-1])
        container = owner
        if place == "evaluate" and isinstance(owner_value.get("type"), str):
            container = f"an evaluate of type {owner_value['type']} ({owner})"
        guess = did_you_mean(key, allowed_keys)
        hint = f"did you mean '{guess}'? " if guess and guess != key else ""
        hint += "keys allowed here: " + ", ".join(allowed_keys)
        return ("F012", f"'{key}' does not belong in {container}", hint, v.path, False)
    described = {
        "loop": "a state name: letters, digits, _ and -, starting with a letter or _",
        "route": "a route key: a verdict name (lowercase), _ (default) or _error",
    }
    owner = render_path(v.path[:-1])
    rule = described.get(
        "loop" if v.path[:-1] == ("states",) else place,
        "a name: letters, digits and _, not starting with a digit",
    )
    return ("F016", f"'{key}' is not a valid key in {owner}", f"expected {rule}", v.path, False)


def _explain_alternatives(v: Violation) -> list[_Explained]:
    where = render_path(v.path)
    if not isinstance(v.detail, list):
        return [
            ("F019", f"{where} matches more than one alternative of the schema", "", v.path, False)
        ]
    branches: list[list[Violation]] = v.detail
    if all(b and all(i.keyword == "required" for i in b) for b in branches):
        options = " or ".join(str(i.detail) for b in branches for i in b)
        return [("F010", f"{where} needs {options}", "", v.path, False)]
    best = min(branches, key=len)
    return [item for inner in best for item in _explain(inner)]


def _type_hint(expected: list[str], value: Any) -> str:
    if "boolean" in expected and isinstance(value, str):
        return "write true or false (yes/no/on/off are read as text)"
    if "number" in expected and isinstance(value, str):
        return "write a plain number of seconds, e.g. 30 (no unit, no quotes)"
    if "integer" in expected and isinstance(value, str | float):
        return "write a whole number without quotes"
    if "object" in expected and value is None:
        return "this key needs indented entries below it"
    if "string" in expected and isinstance(value, bool):
        return 'quote the word if you meant text, e.g. "yes"'
    return ""


def _required_hint(path: PathKey, key: str) -> str:
    if not path:
        return {
            "name": "add name: my-loop",
            "initial": "add initial: NAME_OF_FIRST_STATE",
            "states": "add states: with at least one state",
        }.get(key, "")
    if path[-1] == "evaluate" and key == "type":
        return (
            "add type: one of exit_code, output_contains, output_numeric, output_json, "
            "convergence, classify, llm_structured"
        )
    return ""


def _unknown_hint(key: str, allowed: list[str], place: str, guess: str | None) -> str:
    extra = ", on_<verdict>" if place == "state" else ""
    if guess:
        return f"did you mean '{guess}'?"
    return "keys allowed here: " + ", ".join(allowed) + extra


def _empty_hint(path: PathKey) -> str:
    if path == ("states",):
        return "a loop needs at least one state"
    return ""


def _false_hint(path: PathKey) -> str:
    key = str(path[-1]) if path else ""
    if key.startswith("on_"):
        return f"with a route table, write the verdict inside it: route: {{{key[3:]}: STATE}}"
    return ""


_DEPENDENT_HINTS = {
    ("with", "loop"): "with: passes parameters to a sub-loop; add loop: NAME or remove with:",
    ("on_terminal", "loop"): "on_terminal routes on a sub-loop's terminal; add loop: NAME",
    ("on_retry_exhausted", "max_retries"): "add max_retries: N (entries along a cycle allowed)",
    ("max_retries", "on_retry_exhausted"): (
        "add on_retry_exhausted: STATE — where to go when the retries run out"
    ),
    ("action_type", "action"): "action_type describes action:, which is missing",
}
