"""Rules about an assessment's judges: what would only fail at run time, found before it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from engine.load.bounded import MAX_YAML_BYTES, read_capped
from engine.model.judges import Judge
from lint._context import LintContext
from lint._judges import judges_with_paths
from lint._paths import did_you_mean
from lint._registry import Finding, rule
from lint._suite import SuiteContext


def _judges(ctx: LintContext | SuiteContext) -> Iterator[tuple[Judge, tuple[str | int, ...]]]:
    """The judges of a loop's assessments, or of a suite, with their YAML paths."""
    if isinstance(ctx, SuiteContext):
        yield from ctx.judges()
        return
    for state in ctx.loop.states.values():
        yield from judges_with_paths(state)


_BOTH = ("loop", "suite")


@rule("LL070", "error", "judge-condition", targets=_BOTH)
def judge_condition(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """A judge's `if:` is not a Python expression, so the judge could only ever error."""
    for judge, path in _judges(ctx):
        if judge.condition is None:
            continue
        from engine.judges.python_judges import (  # only loops with judges pay
            ConditionRefused,
            compile_condition,
        )

        try:
            compile_condition(judge.condition)
        except ConditionRefused as exc:
            yield Finding(
                f"the if: of judge {judge.name!r} uses what a condition may not ({exc.msg})",
                (*path, "if"),
                "compare values and call their reading methods (text.lower(), "
                "inputs.get('k')); write a check: for anything more",
            )
        except SyntaxError as exc:
            yield Finding(
                f"the if: of judge {judge.name!r} is not a Python expression ({exc.msg})",
                (*path, "if"),
                "write one expression over outputs, annotations and inputs, e.g. "
                "\"not annotations.get('skip', False)\" (no statements, no builtins)",
            )


@rule("LL071", "warning", "judge-module", targets=_BOTH)
def judge_module(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """A `module` + `function` judge whose module or function cannot be found."""
    for judge, path in _judges(ctx):
        if judge.kind != "callable":
            continue
        from engine.judges.python_judges import static_import_problem

        problem = static_import_problem(str(judge.module), str(judge.function), _import_root(ctx))
        if problem is not None:
            yield Finding(
                f"judge {judge.name!r}: {problem}, so it will be an error at run time",
                (*path, "module"),
                "run from the project root (modules resolve against it), fix the dotted name, "
                "or install the package that provides it",
            )


def _import_root(ctx: LintContext | SuiteContext) -> Path:
    """Where the run imports `module` judges from: a loop's run directory (the working
    directory), a suite's project root (found from it)."""
    if isinstance(ctx, SuiteContext) and ctx.project_root is not None:
        return ctx.project_root
    return Path.cwd()


@rule("LL072", "error", "judge-prompt-file", targets=_BOTH)
def judge_prompt_file(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """An LLM judge's `prompt_file` does not exist."""
    for judge, path in _judges(ctx):
        where = judge.known_prompt_file()
        if where is not None and not where.is_file():
            yield Finding(
                f"the prompt_file of judge {judge.name!r} does not exist: {where}",
                (*path, "prompt_file"),
                "prompt_file is relative to the loop file's directory",
            )


@rule("LL073", "error", "judge-builtin", targets=_BOTH)
def judge_builtin(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """A `builtin` judge names no registered builtin, or gives it arguments it does not take."""
    for judge, path in _judges(ctx):
        if judge.kind != "builtin" or judge.spelling != "judges":
            continue
        from engine.judges.registry import all_builtins, find_builtin

        found = find_builtin(judge.builtin or "")
        if found is None:
            names = sorted({b.name for b in all_builtins()})
            yield Finding(
                f"judge {judge.name!r} names builtin {judge.builtin!r}, which does not exist"
                + did_you_mean(judge.builtin or "", names),
                (*path, "builtin"),
                f"use one of {', '.join(names)} (`ll-loop judges` lists them with arguments)",
            )
            continue
        problem = found.argument_problem(judge.arguments)
        if problem is not None:
            yield Finding(
                f"judge {judge.name!r}: {problem}",
                (*path, "arguments"),
                f"`ll-loop judges` lists the arguments of {found.name}",
            )


@rule("LL074", "error", "judge-template", targets=_BOTH)
def judge_template(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """An LLM judge's prompt is not a usable Jinja template, so the judge errors on every run.

    A syntax error, an unknown filter or test, or a variable the judge does not have."""
    for judge, path in _judges(ctx):
        if judge.kind != "llm":
            continue
        from engine.judges.llm_judges import template_problem  # only loops with LLM judges pay

        for key in ("prompt", "llm_rubric"):
            text = getattr(judge, key)
            problem = template_problem(text) if isinstance(text, str) else None
            if problem is not None:
                yield Finding(
                    f"judge {judge.name!r}: {problem.message}",
                    (*path, key),
                    _template_hint(problem.message),
                    needle=_template_line(text or "", problem.line),
                )
        yield from _prompt_file_template(judge, path)


def _template_hint(message: str) -> str:
    if "is one text" in message:
        return "write the shared text into the template itself (a prompt_file may hold it all)"
    if "uses the variable" in message:
        return (
            "a judge's template reads outputs, conversation, tool_trace, evidence, inputs, "
            "annotations and arguments (docs/judges.md); ${...} interpolates a case's value"
        )
    return (
        "close every {{ }} and {% %} tag and use Jinja's own filters; "
        "write {{ '{{' }} for literal braces"
    )


def _template_line(text: str, line: int) -> str:
    """The text of the template's line `line`, to place the diagnostic on it ("" if unknown)."""
    lines = text.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _prompt_file_template(judge: Judge, path: tuple[str | int, ...]) -> Iterator[Finding]:
    """LL074 for a `prompt_file` that exists (a missing one is LL072): read, never rendered."""
    where = judge.known_prompt_file()
    if where is None:
        return
    try:  # bounded as the run reads it: `validate` of a prompt_file at /dev/zero must end
        text = read_capped(where, MAX_YAML_BYTES).decode("utf-8")
    except (OSError, ValueError):  # FileRefused, UnicodeDecodeError
        return  # LL072 (missing); a file the run cannot read either says so there
    from engine.judges.llm_judges import template_problem

    problem = template_problem(text)
    if problem is not None:
        yield Finding(
            f"judge {judge.name!r}: {problem.message} (in {where}"
            + (f", line {problem.line})" if problem.line else ")"),
            (*path, "prompt_file"),
            _template_hint(problem.message),
        )


@rule("LL075", "error", "judge-threshold", targets=_BOTH)
def judge_threshold(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """A judge's `threshold` is above the highest value it can give, so it never passes.

    An LLM judge scores inside its `score_range` (1-5 by default); any judge with a declared
    `score_range` stays inside it (a value outside is its error)."""
    for judge, path in _judges(ctx):
        if judge.threshold is None:
            continue
        numeric_llm = judge.kind == "llm" and judge.feedback != "bool"
        if not numeric_llm and judge.score_range is None:
            continue  # a range only the run knows (a check, a metric's number, a review)
        low, high = judge.value_range()
        if judge.threshold > high:
            yield Finding(
                f"judge {judge.name!r} passes at {judge.threshold:g} or more, but gives values "
                f"from {low:g} to {high:g}: it can never pass",
                (*path, "threshold"),
                f"choose a threshold between {low:g} and {high:g}, or set the judge's score_range",
            )


_DIR_FIELD = re.compile(r"(?P<dir>\w+?)_(?:content|file)")


@rule("LL076", "warning", "judge-output-field", targets=_BOTH)
def judge_output_field(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """A check or `if:` reads the `<dir>_content` field of a directory `outputs:` does not list.

    agent_eval's `outputs["main_content"]` (or `_file`) is in the record only for a directory
    the assessment's `outputs:` (a suite's `outputs.paths`) lists: without it the judge errors
    on every run."""
    for judge, path, dirs in _judges_and_dirs(ctx):
        from engine.judges.record import dir_field_key  # only loops with judges pay

        keys = {dir_field_key(d) for d in dirs}
        for key, text in (("check", judge.check), ("if", judge.condition)):
            for field in _missing_dir_fields(text, keys):
                directory = str(_DIR_FIELD.fullmatch(field).group("dir"))  # type: ignore[union-attr]
                where = (
                    "`outputs: {paths: [...]}`"
                    if isinstance(ctx, SuiteContext)
                    else ("the assessment's `outputs:`")
                )
                yield Finding(
                    f"the {key} of judge {judge.name!r} reads outputs[{field!r}], which the "
                    f"record has only for a directory `{directory}` listed in {where}; none is",
                    (*path, key),
                    f"list `{directory}` in {where} ({field} is then its first file's "
                    f"{'text' if field.endswith('_content') else 'path'}), or read "
                    "outputs['files']",
                )


def _judges_and_dirs(
    ctx: LintContext | SuiteContext,
) -> Iterator[tuple[Judge, tuple[str | int, ...], tuple[str, ...]]]:
    """Each judge with its YAML path and the output directories its record is read from."""
    if isinstance(ctx, SuiteContext):
        for judge, path in ctx.judges():
            yield judge, path, ctx.suite.output_paths
        return
    for state in ctx.loop.states.values():
        dirs = state.evaluate.outputs if state.evaluate is not None else ()
        for judge, path in judges_with_paths(state):
            yield judge, path, dirs


def _missing_dir_fields(text: str | None, keys: set[str]) -> list[str]:
    """The `<dir>_content` / `<dir>_file` fields `text` reads as `outputs["..."]` for a
    directory not among `keys`; none when it asks whether the field is there (`in outputs`)."""
    if not text:
        return []
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []  # LL070, or a load error, says so
    asked: set[str] = set()
    read: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.In | ast.NotIn) for op in node.ops
        ):
            asked |= {t for n in ast.walk(node) if (t := _text(n)) is not None}
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            key = _text(node.slice)
            if node.value.id == "outputs" and key is not None:
                read.append(key)
    missing: list[str] = []
    for field in read:
        found = _DIR_FIELD.fullmatch(field)
        if found and found.group("dir") not in keys and field not in asked | set(missing):
            missing.append(field)
    return missing


def _text(node: ast.AST) -> str | None:
    """The string a node is, when it is a string constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None
