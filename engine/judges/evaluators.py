"""Deterministic evaluators: turn an action's result into a verdict (pure, no IO); each is also a
builtin judge (`engine.judges.builtins`).

Each evaluator is a small function registered by name with `@evaluator("type")`, so a YAML
`type:` maps to code without an if/elif ladder. `judge()` applies the rules every evaluator shares
(docs/format.md, "Evaluators"): a crashed action (timed out, unspawnable, killed by a signal) is
`error` before any evaluator runs, and a non-zero exit is `error` for content evaluators unless
`ignore_exit_code`.
`llm_structured` is not here: it is IO and lives behind `LlmServices.judge`.
"""

from __future__ import annotations

import json
import math
import operator as op
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.model import jsontext
from engine.model.loop import Evaluate
from engine.model.patterns import PatternSyntaxError, PatternTooCostly, compile_pattern, search
from engine.model.ports import ActionResult, Verdict

Evaluator = Callable[[Evaluate, "Judged"], Verdict]

_REGISTRY: dict[str, Evaluator] = {}

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "eq": op.eq,
    "ne": op.ne,
    "lt": op.lt,
    "le": op.le,
    "gt": op.gt,
    "ge": op.ge,
}


@dataclass(frozen=True)
class Judged:
    """What an evaluator looks at: the judged text (output or rendered `source`), the action's
    result, the rendered `target`, and for `convergence` the previous value (None: none yet)."""

    text: str
    result: ActionResult
    target: Any = None
    previous: Any = None
    stalled: int = 0  # convergence: consecutive checks without progress before this one


def evaluator(name: str) -> Callable[[Evaluator], Evaluator]:
    """Register an evaluator function under its YAML `type` name."""

    def register(func: Evaluator) -> Evaluator:
        _REGISTRY[name] = func
        return func

    return register


def registered() -> frozenset[str]:
    """The evaluator types this module implements."""
    return frozenset(_REGISTRY)


def error(reason: str, **details: Any) -> Verdict:
    return Verdict("error", {"reason": reason, **details})


def judge(spec: Evaluate, judged: Judged) -> Verdict:
    """The verdict of a deterministic evaluator, with the shared crash / exit-code rules."""
    result = judged.result
    if result.crashed:
        return crash_verdict(result)
    func = _REGISTRY.get(spec.type)
    if func is None:
        return error(f"evaluator {spec.type!r} cannot run here")
    if spec.type != "exit_code" and result.exit_code != 0 and not spec.ignore_exit_code:
        return error(
            f"action exited with code {result.exit_code}; content was not judged "
            "(set ignore_exit_code: true to judge it anyway)",
            exit_code=result.exit_code,
        )
    return func(spec, judged)


def crash_verdict(result: ActionResult) -> Verdict:
    """A timed-out, unspawnable or signal-killed action: `error`, never judged."""
    details: dict[str, Any] = {"reason": result.failure_reason()}
    if result.timed_out:
        details["timed_out"] = True
    if result.signal is not None:
        details["signal"] = result.signal
    if result.output_capped is not None:
        details["output_capped"] = result.output_capped
    return Verdict("error", details)


def step_verdict(result: ActionResult) -> Verdict:
    """A state without an evaluator (a `next:` step): it worked (yes) or it failed (error)."""
    if result.crashed:
        return crash_verdict(result)
    if result.exit_code != 0:
        return error(result.failure_reason(), exit_code=result.exit_code)
    return Verdict("yes", {"exit_code": 0})


@evaluator("exit_code")
def exit_code(spec: Evaluate, judged: Judged) -> Verdict:
    """0 → yes, 1 → no, anything else → error."""
    code = judged.result.exit_code
    if code == 0:
        return Verdict("yes", {"exit_code": 0})
    if code == 1:
        return Verdict("no", {"exit_code": 1})
    return error(f"action exited with code {code} (only 0 and 1 are verdicts)", exit_code=code)


@evaluator("output_contains")
def output_contains(spec: Evaluate, judged: Judged) -> Verdict:
    """yes when `pattern` (a regex) matches somewhere in the text; `negate` flips it."""
    try:
        match = search(compile_pattern(spec.pattern or ""), judged.text)
    except PatternSyntaxError as exc:
        return error(f"invalid regular expression {spec.pattern!r}: {exc}")
    except PatternTooCostly as exc:
        return error(str(exc), pattern=spec.pattern)
    found = match is not None
    details: dict[str, Any] = {"pattern": spec.pattern, "matched": found}
    if match is not None:
        details["match"] = match.group(0)[:200]
    if spec.negate:
        details["negate"] = True
    return Verdict("yes" if found != spec.negate else "no", details)


@evaluator("output_numeric")
def output_numeric(spec: Evaluate, judged: Judged) -> Verdict:
    """The whole trimmed text is a number, compared with `target` by `operator`."""
    numbers = _output_and_target(judged)
    if isinstance(numbers, Verdict):
        return numbers
    value, target = numbers
    return _compare(spec.operator or "eq", value, target)


@evaluator("output_json")
def output_json(spec: Evaluate, judged: Judged) -> Verdict:
    """The value at `path` (`.a.b.0`) of the JSON text, compared with `target`."""
    try:
        document = jsontext.loads(judged.text, parse_constant=_not_json)
    except ValueError as exc:
        return error(f"output is not JSON ({exc}): {_preview(judged.text)}")
    found, value, why = json_path(document, spec.path or ".")
    if not found:
        return error(why, path=spec.path)
    if not _finite(value):  # `1e999` reads as infinity, which no event or capture can carry
        return error(f"the value at {spec.path or '.'} is a number too large for JSON")
    operator = spec.operator or "eq"
    target = judged.target
    if operator not in ("eq", "ne"):
        number, limit = parse_number(value), parse_number(target)
        if number is None or limit is None:
            return error(
                f"{operator} needs numbers, got {to_json_text(value)} and {to_json_text(target)}",
                path=spec.path,
            )
        value, target = number, limit
    elif operator in ("eq", "ne"):
        same = json_equal(value, target)
        details = {"value": value, "operator": operator, "target": target, "path": spec.path}
        return Verdict("yes" if same == (operator == "eq") else "no", details)
    return _compare(operator, value, target, path=spec.path)


def _not_json(name: str) -> Any:
    """`NaN` and `Infinity`, which Python's json reads and JSON does not have: the evaluate
    event carried them as they are, and strict readers (jq) refused the event log's line."""
    raise ValueError(f"{name} is not JSON")


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON has it: `true` is not `1` nor `false` `0` (Python's `True == 1`
    made `.ok eq 1` pass on `{"ok": true}`); 2 and 2.0 are the same number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    return bool(a == b)


@evaluator("convergence")
def convergence(spec: Evaluate, judged: Judged) -> Verdict:
    """Within `tolerance` of `target`, or past it in `direction` → target; better than
    `previous` → progress; else stall. A score that overshoots a maximised target has reached
    it: reporting it as mere progress would send a finished run round again into a stall."""
    numbers = _output_and_target(judged)
    if isinstance(numbers, Verdict):
        return numbers
    value, target = numbers
    details: dict[str, Any] = {"value": value, "target": target, "direction": spec.direction}
    gap = target - value if spec.direction == "maximize" else value - target
    if gap <= spec.tolerance:
        return Verdict("target", {**details, "tolerance": spec.tolerance})
    previous = None if judged.previous in (None, "") else parse_number(judged.previous)
    if judged.previous not in (None, "") and previous is None:
        return error(f"previous value is not a number: {to_json_text(judged.previous)}")
    if previous is None:
        return Verdict("progress", {**details, "previous": None})
    better = value < previous if spec.direction == "minimize" else value > previous
    verdict, stalled = stall_window(better, judged.stalled, spec.max_stall)
    details.update(previous=previous, stalled=stalled)
    if spec.max_stall > 1:
        details["max_stall"] = spec.max_stall
    return Verdict(verdict, details)


def stall_window(progressed: bool, stalled: int, max_stall: int) -> tuple[str, int]:
    """progress or stall, and the new count of consecutive checks without progress: `stall`
    only once `max_stall` checks in a row made none (a check with progress resets it)."""
    if progressed:
        return "progress", 0
    stalled += 1
    return ("stall" if stalled >= max_stall else "progress"), stalled


@evaluator("classify")
def classify(spec: Evaluate, judged: Judged) -> Verdict:
    """The last (or first) non-empty line is the verdict; it must be a declared one.

    Verdict names are lower case, so the line is matched ignoring case: an action printing
    `GATE_PASS` (a habit from other tools) yields verdict `gate_pass`."""
    lines = [line.strip() for line in judged.text.splitlines() if line.strip()]
    if not lines:
        return error("output is empty: nothing to classify", verdicts=list(spec.verdicts))
    line = lines[0] if spec.line == "first" else lines[-1]
    if line.lower() in spec.verdicts:
        return Verdict(line.lower(), {"line": line})
    return error(
        f"{_preview(line)} is not one of the declared verdicts",
        line=line[:200],
        verdicts=list(spec.verdicts),
    )


def json_path(document: Any, path: str) -> tuple[bool, Any, str]:
    """Follow a dotted path with a leading dot (`.a.b.0`); (found, value, why-not)."""
    value = document
    walked = ""
    for part in [p for p in path.split(".")[1:] if p]:
        if isinstance(value, dict):
            if part not in value:
                keys = ", ".join(sorted(map(str, value))[:10]) or "none"
                return False, None, f"no key {part!r} at {walked or '.'} (keys: {keys})"
            value = value[part]
        elif isinstance(value, list):
            if not part.isdigit():
                return False, None, f"{walked or '.'} is a list; {part!r} is not an index"
            index = int(part)
            if index >= len(value):
                return False, None, f"index {index} out of range at {walked or '.'} "
                f"(length {len(value)})"
            value = value[index]
        else:
            return False, None, f"{walked or '.'} is {to_json_text(value)}, not an object or list"
        walked += f".{part}"
    return True, value, ""


# A number as a program prints one: ASCII digits, a sign, a point, an exponent. Python's float()
# also took `1_000` and other scripts' digits (`١٢`), which the loop file itself reads as text.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def parse_number(value: Any) -> float | None:
    """A finite number from a number or a trimmed string; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # a JSON integer of 400 digits: no float holds it
            return None
    elif isinstance(value, str):
        text = value.strip()
        if _DECIMAL.fullmatch(text) is None:
            return None
        number = float(text)
    else:
        return None
    return number if math.isfinite(number) else None


def to_json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:200]


def _compare(operator: str, value: Any, target: Any, **extra: Any) -> Verdict:
    details: dict[str, Any] = {"value": value, "operator": operator, "target": target, **extra}
    compare = _COMPARE.get(operator)
    if compare is None:
        return error(f"unknown operator {operator!r}", **details)
    try:
        passed = compare(value, target)
    except TypeError:
        return error(f"cannot compare {to_json_text(value)} with {to_json_text(target)}")
    return Verdict("yes" if passed else "no", details)


def _output_and_target(judged: Judged) -> tuple[float, float] | Verdict:
    """The output and the target as numbers, or the error verdict naming the one that is not."""
    value = parse_number(judged.text)
    if value is None:
        return error(f"output is not a number: {_preview(judged.text)}")
    target = parse_number(judged.target)
    if target is None:
        return error(f"target is not a number: {to_json_text(judged.target)}")
    return value, target


def _preview(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= 80 else text[:77] + "...")
