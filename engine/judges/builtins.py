"""The builtin judges that ship with ll-loop (see `ll-loop judges` and docs/judges.md).

Every deterministic evaluator is also a builtin (`exit_code`, `output_contains`, ...), judged on
a field of the outputs record (`stdout` unless `field` says otherwise). The others: Polpo's
`file_exists`, `test`, `script` and `metric`; agent_eval's `cost_budget`, `max_turns` and
`tool_called`; `regex` and `json_schema` on any field; `llm_structured` (a yes/no model judge).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from typing import Any

from engine.judges.env import JudgeContext
from engine.judges.evaluators import Judged, judge, parse_number
from engine.judges.registry import Argument, builtin
from engine.judges.result import JudgeError, Judgement
from engine.load.bounded import MAX_YAML_BYTES, read_capped
from engine.model import jsontext
from engine.model.loop import Evaluate
from engine.model.patterns import PatternSyntaxError, PatternTooCostly, compile_pattern, search
from engine.model.ports import ActionResult

FIELD = Argument("field", "string", default="stdout", description="the record field judged")
PATTERN = Argument(
    "pattern", "string", required=True, description="a Python regular expression", regex=True
)
NEGATE = Argument("negate", "boolean", default=False, description="pass when it does not match")
TAIL_CHARS = 600


def _text(ctx: JudgeContext, field: str) -> str:
    """The record field `field` as text (JSON for a structured value)."""
    if field not in ctx.outputs:
        known = ", ".join(sorted(k for k in ctx.outputs if not k.startswith("_")))
        raise JudgeError(f"the outputs record has no field {field!r} (it has: {known})")
    value = ctx.outputs[field]
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= TAIL_CHARS else "..." + text[-TAIL_CHARS:]


# ---------------------------------------------------------------------------------------------
# The evaluators of a state, as judges: yes -> True, no -> False, error -> the judge's error.


def _verdict_value(spec: Evaluate, ctx: JudgeContext, field: str, **extra: Any) -> Judgement:
    result = ActionResult(output=_text(ctx, field), exit_code=0)
    verdict = judge(spec, Judged(result.output, result, **extra))
    details = dict(verdict.details)
    if verdict.name == "error":
        raise JudgeError(str(details.get("reason", "the evaluator failed")), **details)
    rationale = f"{spec.type}: {verdict.name}"
    if "match" in details:
        rationale += f" (matched {details['match']!r})"
    elif "value" in details:
        rationale += f" (value {details['value']!r})"
    return Judgement(verdict.name in ("yes", "target"), rationale, details=details)


@builtin(
    "exit_code",
    category="output",
    description="The work's exit code is 0 (1 fails; any other code is an error).",
)
def exit_code(ctx: JudgeContext) -> Judgement:
    code = _measured(ctx, "exit_code")
    if code == 0:
        return Judgement(True, "exit code 0")
    if code == 1:
        return Judgement(False, "exit code 1")
    raise JudgeError(f"the work exited with code {code} (only 0 and 1 are judged)")


@builtin(
    "output_contains",
    category="output",
    description="A regular expression matches the field (negate: it must not).",
    arguments=(
        PATTERN,
        NEGATE,
        FIELD,
    ),
)
def output_contains(
    ctx: JudgeContext, *, pattern: str, negate: bool = False, field: str = "stdout"
) -> Judgement:
    spec = Evaluate("output_contains", pattern=_pattern(ctx, pattern), negate=negate)
    return _verdict_value(spec, ctx, field)


@builtin(
    "output_numeric",
    category="output",
    description="The whole trimmed field is a number that compares with target.",
    arguments=(
        Argument("operator", "string", required=True, description="eq, ne, lt, le, gt or ge"),
        Argument("target", "number", required=True, description="the number to compare with"),
        FIELD,
    ),
)
def output_numeric(
    ctx: JudgeContext, *, operator: str, target: Any, field: str = "stdout"
) -> Judgement:
    spec = Evaluate("output_numeric", operator=operator)
    return _verdict_value(spec, ctx, field, target=_rendered(ctx, target))


@builtin(
    "output_json",
    category="output",
    description="The value at a dotted path of the JSON field compares with target.",
    arguments=(
        Argument("path", "string", required=True, description="a dotted path such as .a.b.0"),
        Argument("operator", "string", default="eq", description="eq, ne, lt, le, gt or ge"),
        Argument("target", "any", required=True, description="the value to compare with"),
        FIELD,
    ),
)
def output_json(
    ctx: JudgeContext, *, path: str, target: Any, operator: str = "eq", field: str = "stdout"
) -> Judgement:
    spec = Evaluate("output_json", path=path, operator=operator)
    return _verdict_value(spec, ctx, field, target=_rendered(ctx, target))


@builtin(
    "convergence",
    category="output",
    description="The field's number is within tolerance of target (previous: progress only).",
    arguments=(
        Argument("target", "number", required=True, description="the number to reach"),
        Argument("tolerance", "number", default=0.0, description="distance that counts as there"),
        Argument("direction", "string", default="minimize", description="minimize or maximize"),
        Argument("previous", "number", default=None, description="the last value, if any"),
        FIELD,
    ),
)
def convergence(
    ctx: JudgeContext,
    *,
    target: Any,
    tolerance: float = 0.0,
    direction: str = "minimize",
    previous: Any = None,
    field: str = "stdout",
) -> Judgement:
    if direction not in ("minimize", "maximize"):
        raise JudgeError(f"direction must be minimize or maximize, not {direction!r}")
    spec = Evaluate("convergence", tolerance=float(tolerance), direction=direction)  # type: ignore[arg-type]
    return _verdict_value(
        spec, ctx, field, target=_rendered(ctx, target), previous=_rendered(ctx, previous)
    )


@builtin(
    "classify",
    category="output",
    description="The last (or first) line of the field is one of verdicts; passing ones pass.",
    arguments=(
        Argument("verdicts", "list", required=True, description="the declared verdict words"),
        Argument("passing", "list", default=None, description="the passing ones (default: first)"),
        Argument("line", "string", default="last", description="last or first non-empty line"),
        FIELD,
    ),
)
def classify(
    ctx: JudgeContext,
    *,
    verdicts: Sequence[str],
    passing: Sequence[str] | None = None,
    line: str = "last",
    field: str = "stdout",
) -> Judgement:
    if line not in ("first", "last"):
        raise JudgeError(f"line must be first or last, not {line!r}")
    declared = tuple(str(v) for v in verdicts)
    if not declared:
        raise JudgeError("verdicts is empty")
    spec = Evaluate("classify", verdicts=declared, line=line)  # type: ignore[arg-type]
    result = ActionResult(output=_text(ctx, field), exit_code=0)
    verdict = judge(spec, Judged(result.output, result))
    if verdict.name == "error":
        raise JudgeError(str(verdict.details.get("reason")), **dict(verdict.details))
    good = set(passing) if passing is not None else {declared[0]}
    return Judgement(
        verdict.name in good, f"classified as {verdict.name!r}", details={"line": verdict.name}
    )


def _measured(ctx: JudgeContext, field: str) -> Any:
    """A measured field of the record; a JudgeError when it was not recorded (a suite with
    `traces: {metrics: false}` or `{events: false}`): an unknown cost is not $0, unknown tool
    calls are not 'none called', an unknown exit code is not a crash."""
    if field in ctx.outputs and ctx.outputs[field] is None:
        # The exit code is null only where the suite's traces.metrics is off, and `events`
        # only where its traces.events is: else an agent CLI reported none (plain output).
        watched = "events" if field == "tool_calls" else "exit_code"
        agent_said_none = ctx.outputs.get(watched) is not None
        if field == "cost_usd" and agent_said_none:
            raise JudgeError(
                "the work's cost is not known: the agent CLI reported none (its output was no "
                "stream-json trace with a result's total_cost_usd), and an unknown cost is not $0"
            )
        if field == "num_turns" and agent_said_none:
            raise JudgeError(
                "the agent's turns are not known: the agent CLI reported none (its output was no "
                "stream-json trace with assistant events or a result's num_turns), and unknown "
                "turns are not 0"
            )
        if field == "tool_calls" and agent_said_none:
            raise JudgeError(
                "the agent's tool calls are not known: the agent CLI's output was no stream-json "
                "trace of its tool_use events, and calls nobody recorded are not 'none called'"
            )
        trace = "events" if field == "tool_calls" else "metrics"
        raise JudgeError(f"the record has no {field} (the suite's traces.{trace} is off)")
    return ctx.outputs.get(field)


def _pattern(ctx: JudgeContext, pattern: str) -> str:
    """The rendered pattern; an empty one (a `${...}` that rendered to nothing) matches any
    text, so a judge on it would pass whatever the work printed."""
    rendered = ctx.render(pattern)
    if not rendered:
        raise JudgeError(f"the pattern {pattern!r} is empty: it would match any text")
    return rendered


def _rendered(ctx: JudgeContext, value: Any) -> Any:
    return ctx.typed(value) if isinstance(value, str) else value


# ---------------------------------------------------------------------------------------------
# Polpo's checks and metrics.


@builtin(
    "file_exists",
    category="files",
    description="Every listed path exists (relative to the workspace).",
    arguments=(Argument("paths", "list", required=True, description="the paths that must exist"),),
)
def file_exists(ctx: JudgeContext, *, paths: Sequence[str]) -> Judgement:
    if isinstance(paths, str) or not paths:
        raise JudgeError("paths must be a non-empty list of paths")
    missing = [str(p) for p in paths if not ctx.path(str(p)).exists()]
    if missing:
        return Judgement(False, f"missing: {', '.join(missing)}", details={"missing": missing})
    return Judgement(True, f"all {len(paths)} path(s) exist")


def _command(ctx: JudgeContext, command: str) -> tuple[ActionResult, str]:
    result = ctx.run_command(command)
    if result.crashed:
        raise JudgeError(f"the command did not finish: {result.failure_reason()}")
    output = (result.output + ("\n" + result.stderr if result.stderr.strip() else "")).strip()
    return result, output


@builtin(
    "test",
    category="commands",
    description="The command (bash, in the workspace) exits 0.",
    arguments=(Argument("command", "string", required=True, description="a shell command"),),
)
def test(ctx: JudgeContext, *, command: str) -> Judgement:
    result, output = _command(ctx, command)
    passed = result.exit_code == 0
    summary = f"exit code {result.exit_code}"
    if output:
        summary += f"; output ends: {_tail(output)}"
    return Judgement(passed, summary, details={"exit_code": result.exit_code})


@builtin(
    "script",
    category="commands",
    description="The script (bash -e, one line or many, in the workspace) exits 0.",
    arguments=(Argument("command", "string", required=True, description="a bash script"),),
)
def script(ctx: JudgeContext, *, command: str) -> Judgement:
    """Run with `set -e`, as CI runs a multi-line step: `pnpm lint\\npnpm typecheck` is two
    checks, and plain bash would pass a failing lint whose typecheck passes."""
    return test(ctx, command=f"set -e\n{command}")


@builtin(
    "metric",
    category="commands",
    description="The command prints a number; it passes when the number >= threshold.",
    arguments=(
        Argument("command", "string", required=True, description="a command printing a number"),
        Argument("threshold", "number", required=True, description="the passing minimum"),
    ),
)
def metric(ctx: JudgeContext, *, command: str, threshold: float) -> Judgement:
    result, _ = _command(ctx, command)
    if result.exit_code != 0:
        said = (
            f"; its stderr ends: {_tail(result.stderr)}"
            if result.stderr.strip()
            else f"; its output ends: {_tail(result.output)}"
            if result.output.strip()
            else " and printed nothing"
        )
        raise JudgeError(f"the metric command exited with code {result.exit_code}{said}")
    text = result.output.strip()
    number = parse_number(text)
    if number is None and text:
        number = parse_number(text.splitlines()[-1])
    if number is None:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise JudgeError(f"the metric command printed {shown!r}, not a number")
    passed = number >= float(threshold)
    relation = ">=" if passed else "<"
    return Judgement(number, f"{number:g} {relation} threshold {float(threshold):g}", passed=passed)


# ---------------------------------------------------------------------------------------------
# agent_eval's trace judges, and two checks on any field.


@builtin(
    "cost_budget",
    category="agent",
    description=(
        "The agent's cost (cost_usd of the record) is at most max_cost_usd; an error when the "
        "agent reported none."
    ),
    arguments=(Argument("max_cost_usd", "number", required=True, description="the budget"),),
)
def cost_budget(ctx: JudgeContext, *, max_cost_usd: float) -> Judgement:
    cost = float(_measured(ctx, "cost_usd") or 0.0)  # an unknown cost is an error, not $0
    passed = cost <= float(max_cost_usd)
    return Judgement(passed, f"cost ${cost:.4f} of a ${float(max_cost_usd):.4f} budget")


@builtin(
    "max_turns",
    category="agent",
    description="The agent took at most max_turns turns (num_turns of the record).",
    arguments=(Argument("max_turns", "integer", required=True, description="the most turns"),),
)
def max_turns(ctx: JudgeContext, *, max_turns: int) -> Judgement:
    turns = int(_measured(ctx, "num_turns") or 0)  # unknown turns are an error, not 0
    return Judgement(turns <= int(max_turns), f"{turns} turn(s), at most {max_turns} allowed")


@builtin(
    "tool_called",
    category="agent",
    description="A tool whose name matches (exactly, or as a glob like mcp__*) was called.",
    arguments=(
        Argument("name", "string", required=True, description="a tool name or glob pattern"),
        Argument(
            "input_pattern", "string", default=None, description="a regex on its input", regex=True
        ),
        Argument("min_count", "integer", default=1, description="calls needed"),
        Argument("negate", "boolean", default=False, description="pass when it was not called"),
    ),
)
def tool_called(
    ctx: JudgeContext,
    *,
    name: str,
    input_pattern: str | None = None,
    min_count: int = 1,
    negate: bool = False,
) -> Judgement:
    if int(min_count) < 1:  # 'at least 0 calls' passed with none: use negate for 'not called'
        raise JudgeError(
            f"min_count must be at least 1, not {min_count} (at least 0 calls always holds); "
            "to require that the tool was not called, use negate: true"
        )
    try:
        wanted = compile_pattern(input_pattern, multiline=False) if input_pattern else None
    except PatternSyntaxError as exc:
        raise JudgeError(f"input_pattern is not a valid regular expression: {exc}") from None

    def input_matches(call: Mapping[str, Any]) -> bool:
        if wanted is None:
            return True
        try:
            return search(wanted, json.dumps(call.get("input"), default=str)) is not None
        except PatternTooCostly as exc:
            raise JudgeError(f"input_pattern: {exc}") from None

    calls = [c for c in _measured(ctx, "tool_calls") or [] if isinstance(c, Mapping)]
    matching = [
        c for c in calls if fnmatch.fnmatchcase(str(c.get("name", "")), name) and input_matches(c)
    ]
    found = len(matching) >= int(min_count)
    names = sorted({str(c.get("name")) for c in calls})
    rationale = f"{len(matching)} matching call(s) of {name!r} among {len(calls)}"
    if not matching:
        rationale += f" (tools called: {', '.join(names) or 'none'})"
    return Judgement(found != negate, rationale, details={"matching": len(matching)})


@builtin(
    "regex",
    category="output",
    description="A regular expression matches the field (negate: it must not).",
    arguments=(
        PATTERN,
        NEGATE,
        Argument("ignore_case", "boolean", default=False, description="case-insensitive"),
        FIELD,
    ),
)
def regex(
    ctx: JudgeContext,
    *,
    pattern: str,
    negate: bool = False,
    ignore_case: bool = False,
    field: str = "stdout",
) -> Judgement:
    try:
        compiled = compile_pattern(_pattern(ctx, pattern), ignore_case=ignore_case)
    except PatternSyntaxError as exc:
        raise JudgeError(f"pattern is not a valid regular expression: {exc}") from None
    try:
        match = search(compiled, _text(ctx, field))
    except PatternTooCostly as exc:
        raise JudgeError(str(exc)) from None
    if match is None:
        return Judgement(negate, f"{pattern!r} does not match {field}")
    return Judgement(not negate, f"{pattern!r} matches {field}: {match.group(0)[:200]!r}")


@builtin(
    "json_schema",
    category="output",
    description="The field is JSON that validates against a JSON Schema (inline or a file).",
    arguments=(
        Argument("schema", "mapping", default=None, description="the JSON Schema"),
        Argument("schema_file", "string", default=None, description="or a file holding it"),
        FIELD,
    ),
)
def json_schema(
    ctx: JudgeContext,
    *,
    schema: Mapping[str, Any] | None = None,
    schema_file: str | None = None,
    field: str = "stdout",
) -> Judgement:
    import jsonschema

    if (schema is None) == (schema_file is None):
        raise JudgeError("give exactly one of schema and schema_file")
    if schema_file is not None:
        try:
            schema = jsontext.loads(read_capped(ctx.path(schema_file), MAX_YAML_BYTES))
        except (OSError, ValueError) as exc:
            raise JudgeError(f"cannot read the schema file {schema_file!r}: {exc}") from None
    if not isinstance(schema, Mapping):
        raise JudgeError("the schema must be a JSON object")
    schema = dict(schema)
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise JudgeError(f"the schema is not a valid JSON Schema: {exc.message}") from None
    value = ctx.outputs.get(field)
    if isinstance(value, str):
        try:
            value = jsontext.loads(value)
        except ValueError as exc:
            return Judgement(False, f"{field} is not JSON: {exc}")
    errors = sorted(validator_class(schema).iter_errors(value), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.path) or "(root)"
        return Judgement(False, f"{len(errors)} schema error(s); at {where}: {first.message}")
    return Judgement(True, f"{field} validates against the schema")


@builtin(
    "llm_structured",
    category="llm",
    description="A model answers yes/no on the field with a verbatim quote (the state evaluator).",
    arguments=(
        Argument("prompt", "string", required=True, description="the criterion"),
        Argument(
            "samples",
            "integer",
            description="independent answers, majority (default: the suite's samples, else 1)",
        ),
        Argument("min_confidence", "number", default=0.5, description="below: abstain"),
        FIELD,
    ),
)
def llm_structured(
    ctx: JudgeContext,
    *,
    prompt: str,
    samples: int | None = None,
    min_confidence: float = 0.5,
    field: str = "stdout",
) -> Judgement:
    from engine.judges.llm_judges import structured_verdict

    own = int(samples) if samples is not None else None
    return structured_verdict(
        ctx, ctx.render(prompt), _text(ctx, field), own, float(min_confidence)
    )
