"""Exact-match grading of a JSON answer: the answer object of a reply, compared key by key with
the expected values (the `expected_answer` builtin; `ll-harness dsl` grades tasks with it).

The answer is the last fenced ```json block of the reply that parses as an object, else the last
`{...}` object anywhere in it. Strings match after trimming surrounding whitespace, numbers by
value (10 equals 10.0), booleans only as booleans, lists and objects element by element.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from engine.judges.env import JudgeContext
from engine.judges.registry import Argument, builtin
from engine.judges.result import JudgeError, Judgement
from engine.model import jsontext

_FENCED_JSON = re.compile(r"```[ \t]*json[^\n]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
UNPARSEABLE = "unparseable answer — no JSON object in response"


def extract_answer(text: str) -> dict[str, Any] | None:
    """The answer object: the last fenced ```json block that is an object, else the last {...}."""
    for block in reversed(_FENCED_JSON.findall(text)):
        try:
            value = jsontext.loads(block)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except ValueError:
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict):
            found = value
        index = text.find("{", end)
    return found


def grade_answer(expected: Mapping[str, Any], answer: Mapping[str, Any]) -> list[str]:
    """Every key whose answer differs from the expected value, as `key: expected X got Y`."""
    problems = []
    for key, want in expected.items():
        if key not in answer:
            problems.append(f"{key}: missing from the answer")
        elif not same_value(want, answer[key]):
            problems.append(f"{key}: expected {_show(want)} got {_show(answer[key])}")
    return problems


def same_value(want: Any, got: Any) -> bool:
    """Equal as JSON values; strings compare with surrounding whitespace ignored."""
    if isinstance(want, str) and isinstance(got, str):
        return want.strip() == got.strip()
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is type(got) and want == got
    if isinstance(want, int | float) and isinstance(got, int | float):
        return float(want) == float(got)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(map(same_value, want, got))
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(same_value(want[k], got[k]) for k in want)
    return bool(want == got)


def _show(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else json.dumps(value)


@builtin(
    "expected_answer",
    category="output",
    description="The field's JSON answer object matches the expected values key by key.",
    arguments=(
        Argument(
            "expected",
            "mapping",
            default=None,
            description="key -> value (default: the case's annotations' `expected`)",
        ),
        Argument("field", "string", default="stdout", description="the record field judged"),
    ),
)
def expected_answer(
    ctx: JudgeContext, *, expected: Mapping[str, Any] | None = None, field: str = "stdout"
) -> Judgement:
    wanted = expected if expected is not None else ctx.env.annotations.get("expected")
    if not isinstance(wanted, Mapping):
        raise JudgeError("there is no expected mapping (give `expected`, or annotate cases)")
    if not wanted:  # 'all 0 expected key(s) match' would pass any answer object
        raise JudgeError("the expected mapping is empty: nothing to compare the answer with")
    value = ctx.outputs.get(field)
    answer = extract_answer(value if isinstance(value, str) else json.dumps(value, default=str))
    if answer is None:
        return Judgement(False, UNPARSEABLE)
    problems = grade_answer(wanted, answer)
    if problems:
        return Judgement(False, "; ".join(problems), details={"answer": answer})
    return Judgement(True, f"all {len(wanted)} expected key(s) match", details={"answer": answer})
