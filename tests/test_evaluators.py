"""The deterministic evaluators as pure functions: result in, verdict (with why) out."""

from __future__ import annotations

from typing import Any

import pytest

from engine.judges.evaluators import (
    Judged,
    json_path,
    judge,
    parse_number,
    registered,
    step_verdict,
)
from engine.model.loop import Evaluate
from engine.model.ports import ActionResult

OK = ActionResult(output="", exit_code=0)


def verdict(spec: Evaluate, text: str = "", *, result: ActionResult = OK, **extra: Any) -> str:
    return judge(spec, Judged(text, result, **extra)).name


def test_every_deterministic_type_is_registered() -> None:
    assert registered() == {
        "exit_code",
        "output_contains",
        "output_numeric",
        "output_json",
        "convergence",
        "classify",
    }


@pytest.mark.parametrize(
    "result",
    [
        ActionResult(exit_code=None, timed_out=True, output="PASS"),
        ActionResult(exit_code=None, spawn_error="no bash", output="PASS"),
        ActionResult(exit_code=None, signal=9, output="PASS"),
    ],
)
@pytest.mark.parametrize("kind", ["exit_code", "output_contains", "classify"])
def test_a_crashed_action_is_an_error_before_any_evaluator(result: ActionResult, kind: str) -> None:
    spec = Evaluate(type=kind, pattern="PASS", verdicts=("PASS",), ignore_exit_code=True)
    outcome = judge(spec, Judged("PASS", result))
    assert outcome.name == "error"
    assert outcome.details["reason"] == result.failure_reason()


def test_exit_code_mapping() -> None:
    spec = Evaluate(type="exit_code")
    codes = {c: verdict(spec, result=ActionResult(exit_code=c)) for c in (0, 1, 2, 127)}
    assert codes == {0: "yes", 1: "no", 2: "error", 127: "error"}
    assert judge(spec, Judged("", ActionResult(exit_code=3))).details["exit_code"] == 3


def test_nonzero_exit_is_an_error_for_content_evaluators_unless_ignored() -> None:
    failed = ActionResult(exit_code=1, output="PASS")
    assert verdict(Evaluate(type="output_contains", pattern="PASS"), "PASS", result=failed) == (
        "error"
    )
    spec = Evaluate(type="output_contains", pattern="PASS", ignore_exit_code=True)
    assert verdict(spec, "PASS", result=failed) == "yes"


def test_output_contains_is_a_regex_with_negate() -> None:
    assert verdict(Evaluate(type="output_contains", pattern=r"^ok \d+$"), "x\nok 12\n") == "yes"
    assert verdict(Evaluate(type="output_contains", pattern="ERROR", negate=True), "fine") == "yes"
    assert verdict(Evaluate(type="output_contains", pattern="(unclosed"), "x") == "error"


@pytest.mark.parametrize(
    ("op", "text", "target", "expected"),
    [
        ("eq", "5", 5, "yes"),
        ("ne", "5", 5, "no"),
        ("lt", " 4.9\n", 5, "yes"),
        ("le", "5", "5", "yes"),
        ("gt", "-1e3", 0, "no"),
        ("ge", "0", 0, "yes"),
        ("eq", "five", 5, "error"),
        ("eq", "5 apples", 5, "error"),
        ("eq", "nan", 5, "error"),
        ("eq", "5", "x", "error"),
    ],
)
def test_output_numeric(op: str, text: str, target: Any, expected: str) -> None:
    spec = Evaluate(type="output_numeric", operator=op, target=target)
    assert verdict(spec, text, target=target) == expected


def test_output_json_paths_and_comparisons() -> None:
    doc = '{"a": {"b": [1, {"c": "x"}]}, "n": 3, "ok": true}'

    def check(path: str, op: str, target: Any) -> str:
        spec = Evaluate(type="output_json", path=path, operator=op, target=target)
        return verdict(spec, doc, target=target)

    assert check(".a.b.1.c", "eq", "x") == "yes"
    assert check(".ok", "eq", True) == "yes"
    assert check(".n", "gt", 2) == "yes"
    assert check(".a.b", "eq", [1, {"c": "x"}]) == "yes"
    assert check(".a.b.5", "eq", 1) == "error"
    assert check(".a.missing", "eq", 1) == "error"
    assert check(".a", "lt", 1) == "error"
    missing = judge(
        Evaluate(type="output_json", path=".a.zz", operator="eq", target=1),
        Judged(doc, OK, target=1),
    )
    assert "no key 'zz' at .a" in missing.details["reason"]


def test_output_json_equality_is_json_equality() -> None:
    """JSON's `true` is not the number 1 (Python's `True == 1` made `.ok eq 1` pass), in a
    list or an object too; 2 and 2.0 are one number."""
    doc = '{"ok": true, "off": false, "n": 2, "flags": [true, 0], "o": {"k": 1}}'

    def check(path: str, op: str, target: Any) -> str:
        spec = Evaluate(type="output_json", path=path, operator=op, target=target)
        return verdict(spec, doc, target=target)

    assert check(".ok", "eq", 1) == "no"
    assert check(".ok", "ne", 1) == "yes"
    assert check(".off", "eq", 0) == "no"
    assert check(".n", "eq", True) == "no"
    assert check(".flags", "eq", [1, False]) == "no"
    assert check(".o", "eq", {"k": True}) == "no"
    assert check(".flags", "eq", [True, 0.0]) == "yes"
    assert check(".n", "eq", 2.0) == "yes"
    assert check(".o", "eq", {"k": 1}) == "yes"


def test_json_path_walks_dicts_and_lists() -> None:
    assert json_path({"a": [10, 20]}, ".a.1") == (True, 20, "")
    assert json_path([1], ".") == (True, [1], "")
    found, _, why = json_path({"a": 1}, ".a.b")
    assert not found and "not an object or list" in why


@pytest.mark.parametrize(
    ("text", "previous", "direction", "expected"),
    [
        ("1.02", None, "minimize", "target"),
        ("5", None, "minimize", "progress"),
        ("5", "6", "minimize", "progress"),
        ("5", "5", "minimize", "stall"),
        ("7", "6", "minimize", "stall"),
        ("0.7", "0.6", "maximize", "progress"),
        ("7", "6", "maximize", "target"),  # past the target in its direction: reached
        ("0.96", None, "maximize", "target"),  # within tolerance below it
        ("0.5", None, "minimize", "target"),  # below a minimised target: reached
        ("0.5", "7", "maximize", "stall"),
        ("5", "", "minimize", "progress"),
        ("5", "six", "minimize", "error"),
        ("x", None, "minimize", "error"),
    ],
)
def test_convergence(text: str, previous: Any, direction: str, expected: str) -> None:
    spec = Evaluate(type="convergence", target=1, tolerance=0.05, direction=direction)  # type: ignore[arg-type]
    assert verdict(spec, text, target=1, previous=previous) == expected


def test_classify_takes_the_last_or_first_non_empty_line() -> None:
    spec = Evaluate(type="classify", verdicts=("approve", "reject"))
    assert verdict(spec, "thinking...\napprove\n\n") == "approve"
    assert verdict(spec, "reject\nlater words") == "error"
    first = Evaluate(type="classify", verdicts=("approve", "reject"), line="first")
    assert verdict(first, "\nreject\nlater words") == "reject"
    assert verdict(spec, "   \n") == "error"


def test_step_verdict_never_advances_a_failure() -> None:
    assert step_verdict(ActionResult(exit_code=0)).name == "yes"
    assert step_verdict(ActionResult(exit_code=1)).name == "error"
    assert step_verdict(ActionResult(exit_code=None, timed_out=True)).name == "error"


def test_a_target_that_is_no_number_is_named_as_json() -> None:
    """A target interpolated as one `${...}` keeps its type; a null or a boolean there was
    named in Python's words (`None`, `True`)."""
    for target, shown in ((None, "null"), (True, "true"), ("abc", '"abc"')):
        spec = Evaluate(type="output_numeric", operator="eq", target=target)
        outcome = judge(spec, Judged("5", OK, target=target))
        assert outcome.details["reason"] == f"target is not a number: {shown}"


def test_parse_number() -> None:
    assert parse_number(" 3.5\n") == 3.5
    assert parse_number(True) is None
    assert parse_number("inf") is None
    assert parse_number(None) is None
    assert [parse_number(t) for t in ("+5", "5.", ".5", "-1e3", "2E-2")] == [5, 5, 0.5, -1e3, 0.02]


def test_an_integer_no_float_holds_is_an_error_verdict_not_a_crash() -> None:
    """`{"n": 1000…0}` (400 digits) with `.n gt 5`: float() raised OverflowError and the run
    ended in an internal error."""
    huge = '{"n": 1' + "0" * 400 + "}"
    spec = Evaluate(type="output_json", path=".n", operator="gt", target=5)
    assert judge(spec, Judged(huge, OK, target=5)).name == "error"
    assert parse_number(10**400) is None


@pytest.mark.parametrize("text", ["1_000", "\u0661\u0662", "0x10", "1 000", "5 apples", "1e", "."])
def test_parse_number_reads_only_what_a_program_prints_as_a_number(text: str) -> None:
    """Python's float() took `1_000` and Arabic-Indic digits: `output_numeric` read an ID like
    `2024_11` as 202411, while the loop file reads `1_000` as text."""
    assert parse_number(text) is None


def test_json_nested_past_the_recursion_limit_is_an_error_verdict() -> None:
    """json raises RecursionError, not ValueError, on `[` repeated 200,000 times: the run ended
    as an internal error instead of the evaluator's error verdict."""
    deep = "[" * 200_000 + "]" * 200_000
    outcome = judge(Evaluate(type="output_json", path=".0", target=1), Judged(deep, OK))
    assert outcome.name == "error"
    assert "the JSON nests too deeply" in outcome.details["reason"]


def test_a_pattern_whose_backtracking_outgrows_its_memory_is_an_error_verdict() -> None:
    """Over ten million a's, (a|aa)+$ fills the regex library's backtracking stack within a
    second and it raises MemoryError, which ended a loop as an internal error."""
    text = "a" * 10_000_000 + "b"
    outcome = judge(Evaluate(type="output_contains", pattern="(a|aa)+$"), Judged(text, OK))
    assert outcome.name == "error"
    assert "backtracks too much to match this text (simplify it" in outcome.details["reason"]
