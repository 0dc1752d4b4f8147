"""Rules about suite files: what would make cases error, or a gate that can never pass."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.model.judges import Judge
from engine.model.loop import Loop
from engine.shell.interpolate import case_text_as_command
from lint._judges import strings_of_judge
from lint._paths import did_you_mean, names
from lint._registry import Finding, PathKey, rule
from lint._suite import SuiteContext

if TYPE_CHECKING:  # a suite's lint imports it; a loop's need not pay for it
    from engine.model.suite import Case, Subject, Suite

_CASE_KEY = re.compile(r"\s*(inputs|annotations)\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_GUARDED = re.compile(r"\|\s*default\b|:default=|\?\s*$")
# `$LL_INPUTS_text` / `${LL_INPUTS_text}`, not `${LL_INPUTS_text:-x}` (a default of its own).
_CASE_VARIABLE = re.compile(
    r"\$\{?LL_(INPUTS|ANNOTATIONS)_([A-Za-z0-9_]+)(?![A-Za-z0-9_]|:?[-=?+])"
)


def _templates(suite: Suite) -> Iterator[tuple[PathKey, str, bool]]:
    """Every interpolated text of the subjects and hooks: (path, text, is it bash?)."""
    for key, subject in (("subject", suite.subject), ("baseline_subject", suite.baseline_subject)):
        if subject is None:
            continue
        if subject.command is not None:
            yield (key, "command"), subject.command, True
        if subject.prompt is not None:
            yield (key, "prompt"), subject.prompt, False
        for name, value in (subject.with_ or {}).items():
            if isinstance(value, str):
                yield (key, "with", name), value, False
    for index, hook in enumerate(suite.before_each):
        yield ("before_each", index), hook.command, True


def _case_reads(text: str) -> Iterator[tuple[str, str, bool, bool]]:
    """(root, key, guarded, raw) of each `${inputs.KEY}` / `${annotations.KEY}` in `text`."""
    from engine.shell.interpolate import find_expressions

    for expression in find_expressions(text):
        found = _CASE_KEY.match(expression.text)
        if found is not None:
            guarded = _GUARDED.search(expression.text) is not None
            yield found.group(1), found.group(2), guarded, expression.raw


@rule("LL090", "warning", "suite-missing-input", targets=("suite",))
def suite_missing_input(ctx: SuiteContext) -> Iterator[Finding]:
    """The subject or a hook reads a case key that some cases do not have (they will error).

    `${inputs.KEY}` or `${annotations.KEY}` without a default, in the subject, the baseline
    subject, a hook or a judge without `if:`; or a required parameter of a loop subject without
    `with:`, which takes the case's input of that name."""
    cases = ctx.cases
    if not cases:
        return
    yield from _unbound_parameters(ctx)
    judged = [
        (path, text)
        for judge, at in ctx.judges()
        if judge.condition is None  # an `if:` may skip the cases without the key
        for path, text in strings_of_judge(judge, at)
    ]
    yield from _case_variables(ctx, cases)
    for path, text in [(p, t) for p, t, _ in _templates(ctx.suite)] + judged:
        for root, key, guarded, _ in _case_reads(text):
            if guarded:
                continue
            lacking, shown = _lacking(cases, key, root)
            if lacking:
                yield Finding(
                    f"${{{root}.{key}}} is missing from {len(lacking)} of {len(cases)} cases "
                    f"({shown}): they will error",
                    path,
                    f"add {key} to those cases' {'input' if root == 'inputs' else root}.yaml, "
                    f"or write ${{{root}.{key} | default('')}}",
                )


@rule("LL091", "error", "suite-unreachable-gate", targets=("suite",))
def suite_unreachable_gate(ctx: SuiteContext) -> Iterator[Finding]:
    """A gate above what its judge can give (a `min_mean`) or prove (a rate of 1): never passes.
    A gate at the lowest value its judge can give (a rate of 0): never fails, so it gates nothing
    and the suite would PASS with every case failed.

    A rate gate of 1 cannot pass because a Wilson interval's lower end is below 1 however many
    cases pass."""
    judges = {j.name: j for j in ctx.suite.judges}
    for threshold in ctx.suite.thresholds:
        judge = judges.get(threshold.judge)
        bool_mean = judge is not None and judge.kind == "llm" and judge.feedback == "bool"
        rated = threshold.gate in ("min_pass_rate", "min_win_rate") or bool_mean
        if rated and threshold.value <= 0:
            yield Finding(
                f"thresholds.{threshold.judge}.{threshold.gate} is {threshold.value:g}: every "
                "rate is at least 0, so this gate passes even when every case fails",
                ("thresholds", threshold.judge, threshold.gate),
                "choose the lowest rate you would accept (0.5, 0.8), or drop the threshold to "
                "report the judge ungated",
            )
            continue
        if rated and threshold.value == 1:  # above 1: a mean past the range, below
            yield Finding(
                f"thresholds.{threshold.judge}.{threshold.gate} is {threshold.value:g}: a rate's "
                "95% interval ends below 1 however many cases pass, so it can never pass",
                ("thresholds", threshold.judge, threshold.gate),
                "choose a rate below 1: 0.95 passes once 73 cases of 73 pass, 0.9 once 35 of 35",
            )
            continue
        known = _known_range(judge) if judge is not None else None
        if threshold.gate != "min_mean" or known is None:
            continue
        low, high = known
        if threshold.value <= low:
            yield Finding(
                f"thresholds.{threshold.judge}.min_mean is {threshold.value:g}, but judge "
                f"{threshold.judge!r} gives values from {low:g} to {high:g}: every mean is at "
                "least that, so this gate passes even when every case scores lowest",
                ("thresholds", threshold.judge, "min_mean"),
                f"choose a mean above {low:g} you would accept, or drop the threshold to report "
                "the judge ungated",
            )
        elif threshold.value > high:
            yield Finding(
                f"thresholds.{threshold.judge}.min_mean is {threshold.value:g}, but judge "
                f"{threshold.judge!r} gives values from {low:g} to {high:g}: it can never pass",
                ("thresholds", threshold.judge, "min_mean"),
                f"choose a mean between {low:g} and {high:g}, or set the judge's score_range",
            )


def _known_range(judge: Judge) -> tuple[float, float] | None:
    """The values a judge can give, when its definition says (else None)."""
    if judge.kind == "llm" and judge.feedback == "bool":
        return (0.0, 1.0)
    if judge.kind in ("llm", "review") or judge.score_range is not None:
        return judge.value_range()
    return None


@rule("LL092", "warning", "suite-raw-input", targets=("suite",))
def suite_raw_input(ctx: SuiteContext) -> Iterator[Finding]:
    """A case's value is pasted raw (`| raw`) into a shell command: a case can run code."""
    for path, text, is_shell in _templates(ctx.suite):
        if not is_shell:
            continue
        for root, key, _, raw in _case_reads(text):
            if raw:
                yield Finding(
                    f"${{{root}.{key} | raw}} pastes a case's text into bash unquoted: a case "
                    "holding `; rm -rf ~` runs it",
                    path,
                    f"drop `| raw`: ${{{root}.{key}}} is quoted for its place in the command",
                )


@rule("LL093", "error", "suite-dataset", targets=("suite",))
def suite_dataset(ctx: SuiteContext) -> Iterator[Finding]:
    """The `dataset:` directory does not exist, is not a directory or holds no case folder.

    The run refuses such a suite before its first case; the path is relative to the suite file."""
    from engine.load.dataset import dataset_dir

    folder = dataset_dir(ctx.suite)
    if folder is None:
        return
    written = ctx.suite.dataset
    hint = (
        "dataset: is a directory relative to the suite file's directory, with one folder per "
        "case (each with input.yaml)"
    )
    if not folder.exists():
        problem = "does not exist"
    elif not folder.is_dir():
        problem = "is not a directory"
    elif not _has_case_folder(folder):
        problem, hint = "holds no case folder", "add a folder per case, each with input.yaml"
    else:
        return
    shown = f"{written!r}" if str(folder) == written else f"{written!r} ({folder})"
    yield Finding(f"the dataset {shown} {problem}", ("dataset",), hint)


def _has_case_folder(folder: Path) -> bool:
    """A folder the run takes as a case: a directory not starting with `.` (dataset.py)."""
    try:
        return any(e.is_dir() and not e.name.startswith(".") for e in folder.iterdir())
    except OSError:
        return True  # unreadable: the run says why; lint does not guess


@rule("LL094", "error", "suite-output-path", targets=("suite",))
def suite_output_path(ctx: SuiteContext) -> Iterator[Finding]:
    """An `outputs.paths` entry outside the case's workspace: the run never reads it.

    The record holds only files inside the workspace (engine.runtime.workspace.read_files), so
    an absolute path or one through `..` is passed over without a word."""
    import posixpath

    for index, given in enumerate(ctx.suite.output_paths):
        normal = posixpath.normpath(given)
        if posixpath.isabs(normal) or normal == ".." or normal.startswith("../"):
            yield Finding(
                f"outputs.paths entry {given!r} is outside the case's workspace: the run reads "
                "only files inside it, so judges would never see this one",
                ("outputs", "paths", index),
                "write a path relative to the workspace (out/result.json); to give every case a "
                "file from the project, list it under workspace:",
            )


@rule("LL095", "error", "suite-subject-loop", targets=("suite",))
def suite_subject_loop(ctx: SuiteContext) -> Iterator[Finding]:
    """A loop subject that cannot be found or loaded, or a `with:` that does not fit it.

    A name the loop does not declare, a required parameter left out, a literal of the wrong
    type: every case would error."""
    if ctx.resolve_loop is None:
        return
    for key, subject in _loop_subjects(ctx.suite):
        child, why = ctx.subject_loop(subject.loop or "")
        if child is None:
            yield Finding(
                f"{key} runs loop {subject.loop!r}, which cannot be found or loaded"
                + (f": {why}" if why else ""),
                (key, "loop"),
                "use a path relative to the suite file, a name in .loops/, or a built-in from "
                "`ll-loop list`",
            )
            continue
        if subject.with_ is not None:  # without it: the cases' inputs, per case (LL090)
            yield from _with_problems(key, child, dict(subject.with_))
        refused = case_text_as_command(subject.with_, child, _all_inputs(ctx.cases))
        if refused is not None:
            yield Finding(
                refused.replace("the subject", key, 1),
                (key, "with") if subject.with_ is not None else (key, "loop"),
                "a case's inputs reach the loop as text: bind them to string parameters, and "
                "write a command line in the suite file",
            )


def _all_inputs(cases: list[Case]) -> dict[str, Any]:
    """Every input name some case gives (for the loop parameters they are bound to)."""
    return {name: None for case in cases for name in case.inputs}


def _with_problems(key: str, child: Loop, given: dict[str, Any]) -> Iterator[Finding]:
    """LL041's checks for a suite's `with:`: required parameters, unknown names, literal types."""
    from lint.rules_subloop import literal_problem

    params = child.parameters
    for name, declared in params.items():
        if declared.required and not declared.has_default and name not in given:
            yield Finding(
                f"{key}.with does not pass required parameter {name!r} of loop {child.name!r}",
                (key, "with"),
                f"add `{name}: ${{inputs.{name}}}` (or a value) under `with:`",
            )
    for name, value in given.items():
        param = params.get(name)
        if param is None and (not params or name in child.context or name == "input"):
            continue  # accepted as `--context` (engine.model.params.check_caller_keys)
        if param is None:
            known = f"; it takes {names(params)}"
            yield Finding(
                f"loop {child.name!r} has no parameter {name!r}{did_you_mean(name, params)}"
                f"{known}: the run refuses it",
                (key, "with", name),
                "pass only the names declared under the loop's `parameters:`",
            )
            continue
        problem = literal_problem(param, value, child.name)
        if problem:
            yield Finding(problem, (key, "with", name), "pass a value of the declared type")


def _unbound_parameters(ctx: SuiteContext) -> Iterator[Finding]:
    """Without `with:`, a run passes a loop subject the inputs it declares parameters for: a
    required parameter some case has no input for is refused in that case."""
    cases = ctx.cases
    for key, subject in _loop_subjects(ctx.suite):
        if subject.with_ is not None or ctx.resolve_loop is None:
            continue
        child, _ = ctx.subject_loop(subject.loop or "")
        if child is not None:
            yield from _lacking_parameters(cases, key, child)


def _loop_subjects(suite: Suite) -> Iterator[tuple[str, Subject]]:
    """The loop subjects with a literal `loop:`, by YAML key."""
    for key, subject in (("subject", suite.subject), ("baseline_subject", suite.baseline_subject)):
        if subject is not None and subject.kind == "loop" and "${" not in (subject.loop or ""):
            yield key, subject


def _lacking(cases: list[Case], key: str, root: str = "inputs") -> tuple[list[str], str]:
    """The ids of the cases whose `root` (inputs or annotations) has no `key`, and the first
    three of them as a message shows them."""
    ids = [c.id for c in cases if key not in getattr(c, root)]
    return ids, ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")


def _lacking_parameters(cases: list[Case], key: str, child: Loop) -> Iterator[Finding]:
    for name, declared in child.parameters.items():
        if not declared.required or declared.has_default:
            continue
        lacking, shown = _lacking(cases, name)
        if lacking:
            yield Finding(
                f"loop {child.name!r} requires parameter {name!r}, and {len(lacking)} of "
                f"{len(cases)} cases have no input {name!r} ({shown}): they will error",
                (key, "loop"),
                f"add {name} to those cases' input.yaml, or bind it under `with:`",
            )


@rule("LL096", "error", "suite-workspace-path", targets=("suite",))
def suite_workspace_path(ctx: SuiteContext) -> Iterator[Finding]:
    """A `workspace:` path of an `isolation: copy` suite is outside the project or missing.

    The run refuses the suite before its first case. Checked for `isolation: copy` only: with
    `auto` the run picks a git worktree in a repository, where the paths are not copied."""
    if ctx.project_root is None or ctx.suite.isolation != "copy":
        return
    from engine.load.project import workspace_path_problem

    for index, given in enumerate(ctx.suite.workspace):
        problem = workspace_path_problem(given, ctx.project_root)
        if problem is not None:
            yield Finding(
                problem,
                ("workspace", index),
                "workspace: lists paths inside the project root (the nearest .loops/ or .git "
                "above where the suite runs), copied into each case",
            )


def _case_variables(ctx: SuiteContext, cases: list[Case]) -> Iterator[Finding]:
    """`$LL_INPUTS_KEY` / `$LL_ANNOTATIONS_KEY` in the subject's or a hook's bash: the inputs
    are exported (a key a case lacks is simply unset: an empty value), the annotations never
    (they hold the answers the subject must not see)."""
    keys = sorted({key for case in cases for key in case.inputs})
    for path, text, is_shell in _templates(ctx.suite):
        if not is_shell or "LL_" not in text:
            continue
        for match in _CASE_VARIABLE.finditer(text):
            variable, name = match.group(0).lstrip("${"), match.group(2).split("__")[0]
            if match.group(1) == "ANNOTATIONS":
                yield Finding(
                    f"${variable} is always empty here: a case's annotations are not exported "
                    "to the subject or its hooks (they hold the answers)",
                    path,
                    "judges read annotations; if the subject needs the value, put it in the "
                    "case's input.yaml",
                    needle=match.group(0),
                )
                continue
            lacking, shown = _lacking(cases, name)
            if lacking:
                yield Finding(
                    f"${variable} is empty in {len(lacking)} of {len(cases)} cases ({shown}): "
                    f"they have no input {name!r}{did_you_mean(name, keys)}",
                    path,
                    f"add {name} to those cases' input.yaml, or give the variable a default: "
                    f'"${{{variable}:-}}"',
                    needle=match.group(0),
                )
