"""Load a suite file: YAML text → positions → `schemas/suite.schema.json` → checks → `Suite`.

Like the loop loader, whatever the input the result is every diagnostic (code, file, line,
column, one sentence, a hint), never another exception. The judges go through the same checks
and normalisation as an assessment's (`engine.load.judges`). What the schema cannot say lives
here: a subject with no kind or two, `dataset` beside `cases`, a threshold on a judge that does
not exist (or a gate that does not fit it), repeated case ids, a suite with no judges.

Cases of a `dataset` directory are not read here (`engine.load.dataset` reads them when the
suite runs), so validating a suite stays cheap whatever the size of its dataset.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from engine.load.bounded import read_limited
from engine.load.gcpause import collector_paused
from engine.load.judges import build_judge_list, judge_list_problems, judge_names
from engine.load.loader import nul_problems
from engine.load.schema_check import load_schema, violations
from engine.load.spelling import did_you_mean
from engine.load.suggest import describe, explain
from engine.load.yaml_positions import PathKey, Positions, YamlProblems, parse_yaml
from engine.model.errors import Diagnostic, LoadError
from engine.model.loop import EMPTY, Suppression
from engine.model.suite import (
    DEFAULT_HOOK_TIMEOUT,
    DEFAULT_SUBJECT_TIMEOUT,
    PAIRWISE_NAME,
    Hook,
    InlineCase,
    Pairwise,
    Resources,
    Subject,
    Suite,
    Threshold,
    Traces,
)

SUITE_SCHEMA = "suite.schema.json"
_KINDS = ("loop", "agent", "command", "prompt")  # which field decides, in priority order
_GATES = ("min_pass_rate", "min_mean", "min_win_rate")


def load_suite_file(path: str | Path) -> Suite:
    """Load and check the suite at `path`; raise `LoadError` with every problem found."""
    suite, _, problems = check_suite_file(path)
    if suite is None:
        raise LoadError(problems)
    return suite


def load_suite_text(text: str, file: str = "<string>") -> Suite:
    suite, _, problems = check_suite_text(text, file)
    if suite is None:
        raise LoadError(problems)
    return suite


def check_suite_file(path: str | Path) -> tuple[Suite | None, Positions | None, list[Diagnostic]]:
    """Like `check_suite_text`, reading `path` (bounded; unreadable files are diagnostics)."""
    file = str(path)
    try:
        text = read_limited(Path(path), file)
    except YamlProblems as failed:  # binary, UTF-16...: said of a suite file, not a loop file
        return None, None, [_worded(d) for d in failed.diagnostics]
    return check_suite_text(text, file)


def check_suite_text(
    text: str, file: str = "<string>"
) -> tuple[Suite | None, Positions | None, list[Diagnostic]]:
    """Every load-time diagnostic of a suite, sorted by line; the suite when there are none."""
    with collector_paused():
        try:
            data, positions = parse_yaml(text, file)
        except YamlProblems as failed:
            return None, None, [_worded(d) for d in failed.diagnostics]
        if not isinstance(data, dict):
            return None, positions, [_not_a_mapping(data, positions, file)]
        problems = [
            _worded(d)
            for d in explain(violations(data, load_schema(SUITE_SCHEMA)), positions, file)
        ]
        problems += judge_list_problems(data, (), positions, file)
        problems += nul_problems(data, positions, file)
        problems = _without_echoes(problems + _suite_problems(data, positions, file))
        if problems:
            return None, positions, sorted(problems, key=lambda d: (d.line, d.column, d.code))
        return _build(data, positions, "" if file == "<string>" else file), positions, []


def _without_echoes(problems: list[Diagnostic]) -> list[Diagnostic]:
    """`subject has no kind` beside an unknown key in that subject (`cmd:`): the key is the
    mistake and its "did you mean" the fix, and a refusal shows only its first problem."""
    unknown = {d.path.rsplit(".", 1)[0] for d in problems if d.code == "F012"}
    return [d for d in problems if not (d.code == "F050" and d.path in unknown)]


def _worded(d: Diagnostic) -> Diagnostic:
    """The loop schema's wording, said of a suite (the shared explainer talks of loops)."""
    message = d.message.replace("the top level of the loop", "the top level of the suite")
    message = message.replace("the loop is missing", "the suite is missing")
    hint = d.hint.replace("a loop file", "a suite file").replace("the loop file", "the suite file")
    if d.code == "F003" and message.startswith("the file is empty"):
        message = "the file is empty: a suite needs name, subject, judges, and cases or a dataset"
        hint = "see docs/suites.md for a complete suite"
    if d.code == "F013" and "." not in d.path and "[" not in d.path:
        # A loop-level "not supported" refusal does not apply to a suite's top level.
        key = d.path
        message = f"unknown key '{key}' in the top level of the suite"
        return Diagnostic("F012", "error", message, d.file, d.path, d.line, d.column, _TOP_HINT)
    return Diagnostic(d.code, d.severity, message, d.file, d.path, d.line, d.column, hint)


_TOP_HINT = (
    "a suite has name, subject, dataset or cases, judges (expectations, metrics, pairwise), "
    "outputs, before_each, samples, models, thresholds, workspace, isolation, resources and lint"
)


def _not_a_mapping(data: Any, positions: Positions, file: str) -> Diagnostic:
    line, column = positions.value_of(())
    hint = "start the file with name:, subject: and dataset: (or cases:)"
    if data is None:
        message = "the file holds an empty YAML document: a suite needs name, subject and cases"
        return Diagnostic("F003", "error", message, file, "", line, column, hint)
    found = "a list" if isinstance(data, list) else describe(data)
    message = f"the top level of a suite file must be a mapping of keys, got {found}"
    return Diagnostic("F004", "error", message, file, "", line, column, hint)


# ---------------------------------------------------------------------------------------------
# What the schema cannot say


def _diag(
    code: str, message: str, hint: str, path: PathKey, positions: Positions, file: str
) -> Diagnostic:
    line, column = positions.of(path)
    shown = ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")
    return Diagnostic(code, "error", message, file, shown, line, column, hint)


def subject_kinds(body: Mapping[str, Any]) -> list[str]:
    """The kinds a subject mapping selects (`agent` with its `prompt` is one kind)."""
    kinds = [k for k in _KINDS if k in body]
    if "agent" in kinds and "prompt" in kinds:
        kinds.remove("prompt")
    return kinds


def _suite_problems(data: dict[str, Any], positions: Positions, file: str) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for key in ("subject", "baseline_subject"):
        if isinstance(data.get(key), dict):
            found += _subject_problems(data[key], (key,), positions, file)
    if ("dataset" in data) == ("cases" in data):
        found.append(
            _diag(
                "F051",
                "a suite needs exactly one of dataset (a directory of cases) and cases "
                "(inline)" + (", not both" if "dataset" in data else ""),
                "dataset: cases/ (one folder per case with input.yaml), or cases: [{id, input}]",
                ("dataset",) if "dataset" in data else (),
                positions,
                file,
            )
        )
    found += _duplicate_ids(data, positions, file)
    names = [n for n in judge_names(data) if n]
    pairwise = data.get("pairwise")
    pair_name = None
    if isinstance(pairwise, dict):
        pair_name = str(pairwise.get("name", PAIRWISE_NAME))
        if pair_name in names:
            found.append(
                _diag(
                    "F054",
                    f"the pairwise judge is named {pair_name!r}, like another judge",
                    "give the pairwise judge its own name: pairwise: {name: preference, ...}",
                    ("pairwise",),
                    positions,
                    file,
                )
            )
    if not names and pair_name is None:
        found.append(
            _diag(
                "F055",
                "the suite has no judges: nothing would be measured",
                "add judges: (or expectations:, metrics:, pairwise:) to score each case",
                (),
                positions,
                file,
            )
        )
    found += _threshold_problems(data, names, pair_name, positions, file)
    return found


def _subject_problems(
    body: dict[str, Any], at: PathKey, positions: Positions, file: str
) -> list[Diagnostic]:
    kinds = subject_kinds(body)
    where = at[0]
    if not kinds:
        return [
            _diag(
                "F050",
                f"{where} has no kind: it sets none of command, prompt, agent and loop",
                "use command: <bash>, prompt: <text>, agent: <cli> with prompt:, or loop: NAME",
                at,
                positions,
                file,
            )
        ]
    if len(kinds) > 1:
        return [
            _diag(
                "F050",
                f"{where} sets both {kinds[0]} and {kinds[1]}: a subject has exactly one kind",
                "keep one; to compare two subjects use subject: and baseline_subject:",
                (*at, kinds[1]),
                positions,
                file,
            )
        ]
    kind = kinds[0]
    found = []
    for key, owner in (("runner", "prompt"), ("model", "prompt")):
        if key in body and kind != owner:
            found.append(
                _diag(
                    "F050",
                    f"{where}.{key} applies to a prompt subject, not to a {kind} subject",
                    f"remove {key}"
                    + ("; an agent's command line is agent:" if kind == "agent" else ""),
                    (*at, key),
                    positions,
                    file,
                )
            )
    return found


def _duplicate_ids(data: dict[str, Any], positions: Positions, file: str) -> list[Diagnostic]:
    found = []
    for key, label in (("cases", "case id"), ("before_each", "hook name")):
        seen: dict[str, int] = {}
        entries = data.get(key)
        for index, entry in enumerate(entries if isinstance(entries, list) else ()):
            name = _entry_name(key, entry, index)
            if name in seen:
                found.append(
                    _diag(
                        "F054",
                        f"{key}[{index}]: the {label} {name!r} is already used by "
                        f"{key}[{seen[name]}]",
                        f"give every {label.split()[0]} its own {label.split()[1]}",
                        (key, index),
                        positions,
                        file,
                    )
                )
            seen.setdefault(name, index)
    return found


def _entry_name(key: str, entry: Any, index: int) -> str:
    if key == "cases":
        given = entry.get("id") if isinstance(entry, dict) else None
        return str(given) if given else f"case-{index + 1}"
    given = entry.get("name") if isinstance(entry, dict) else None
    return str(given) if given else f"hook_{index + 1}"


def _threshold_problems(
    data: dict[str, Any],
    names: list[str],
    pair_name: str | None,
    positions: Positions,
    file: str,
) -> list[Diagnostic]:
    found = []
    known = [*names, *([pair_name] if pair_name else [])]
    thresholds = data.get("thresholds")
    for judge, gates in thresholds.items() if isinstance(thresholds, dict) else ():
        at: PathKey = ("thresholds", judge)
        if not isinstance(gates, dict):
            continue  # the schema says what is wrong
        if judge not in known:
            guess = did_you_mean(judge, known)
            found.append(
                _diag(
                    "F052",
                    f"thresholds names {judge!r}, which is not a judge of this suite"
                    + (f" (did you mean {guess!r}?)" if guess else ""),
                    f"judges: {', '.join(known) or 'none'}",
                    at,
                    positions,
                    file,
                )
            )
            continue
        given = [g for g in _GATES if g in gates]
        if len(given) > 1:
            found.append(
                _diag(
                    "F053",
                    f"thresholds.{judge} sets both {given[0]} and {given[1]}: one gate per judge",
                    "keep the one that fits the judge: min_pass_rate (bool), min_mean (numbers)",
                    (*at, given[1]),
                    positions,
                    file,
                )
            )
            continue
        if not given:
            continue
        gate = given[0]
        is_pair = judge == pair_name
        if is_pair != (gate == "min_win_rate"):
            hint = (
                "gate the pairwise judge with min_win_rate"
                if is_pair
                else "min_win_rate gates the pairwise judge; use min_pass_rate or min_mean"
            )
            found.append(
                _diag(
                    "F053",
                    f"thresholds.{judge}.{gate} does not fit "
                    + ("the pairwise judge" if is_pair else f"judge {judge!r}"),
                    hint,
                    (*at, gate),
                    positions,
                    file,
                )
            )
    return found


# ---------------------------------------------------------------------------------------------
# Model building: data already passed the schema and the checks above.


def _build(data: dict[str, Any], positions: Positions, source: str) -> Suite:
    outputs = data.get("outputs") or {}
    traces = outputs.get("traces") or {}
    models = data.get("models") or {}
    pairwise = data.get("pairwise")
    baseline = data.get("baseline_subject")
    return Suite(
        name=data["name"],
        subject=_subject(data["subject"], ("subject",), positions),
        judges=build_judge_list(data, (), positions, source or "<string>"),
        source=source,
        description=data.get("description", ""),
        dataset=data.get("dataset"),
        cases=tuple(
            _case(entry, index, positions) for index, entry in enumerate(data.get("cases") or ())
        ),
        baseline_subject=_subject(baseline, ("baseline_subject",), positions) if baseline else None,
        workspace=tuple(data.get("workspace") or ()),
        isolation=data.get("isolation", "auto"),
        before_each=tuple(
            _hook(entry, index, positions)
            for index, entry in enumerate(data.get("before_each") or ())
        ),
        output_paths=tuple(outputs.get("paths") or ()),
        traces=Traces(**{k: bool(v) for k, v in traces.items()}),
        pairwise=_pairwise(pairwise, positions) if pairwise else None,
        samples=int(data["samples"]) if "samples" in data else None,
        judge_model=models.get("judge"),
        subject_model=models.get("subject"),
        thresholds=tuple(
            Threshold(
                judge,
                gate,  # type: ignore[arg-type]
                float(gates[gate]),
                positions.of(("thresholds", judge))[0],
            )
            for judge, gates in (data.get("thresholds") or {}).items()
            for gate in _GATES
            if gate in gates
        ),
        lint=_suppressions(data.get("lint"), positions),
        resources=Resources(**(data.get("resources") or {})),
        dataset_line=positions.of(("dataset",))[0] if "dataset" in data else 0,
        workspace_lines=tuple(
            positions.of(("workspace", index))[0]
            for index in range(len(data.get("workspace") or ()))
        ),
    )


def _subject(body: dict[str, Any], at: PathKey, positions: Positions) -> Subject:
    kind = subject_kinds(body)[0]
    with_ = body.get("with")
    return Subject(
        kind=kind,  # type: ignore[arg-type]
        command=body.get("command"),
        prompt=body.get("prompt"),
        agent=body.get("agent"),
        loop=body.get("loop"),
        with_=MappingProxyType(dict(with_)) if with_ is not None else None,
        model=body.get("model"),
        runner=body.get("runner"),
        timeout=float(body.get("timeout", DEFAULT_SUBJECT_TIMEOUT)),
        line=positions.of(at)[0],
    )


def _case(entry: dict[str, Any], index: int, positions: Positions) -> InlineCase:
    return InlineCase(
        id=_entry_name("cases", entry, index),
        inputs=_frozen(entry.get("input")),
        annotations=_frozen(entry.get("annotations")),
        line=positions.of(("cases", index))[0],
    )


def _hook(entry: str | dict[str, Any], index: int, positions: Positions) -> Hook:
    line = positions.of(("before_each", index))[0]
    if isinstance(entry, str):
        return Hook(f"hook_{index + 1}", entry, DEFAULT_HOOK_TIMEOUT, line)
    return Hook(
        _entry_name("before_each", entry, index),
        entry["command"],
        float(entry.get("timeout", DEFAULT_HOOK_TIMEOUT)),
        line,
    )


def _pairwise(body: dict[str, Any], positions: Positions) -> Pairwise:
    return Pairwise(
        name=body.get("name", PAIRWISE_NAME),
        prompt=body["prompt"],
        samples=int(body["samples"]) if "samples" in body else None,
        model=body.get("model"),
        max_tokens=body.get("max_tokens"),
        temperature=float(body["temperature"]) if "temperature" in body else None,
        line=positions.of(("pairwise",))[0],
    )


def _suppressions(body: dict[str, Any] | None, positions: Positions) -> tuple[Suppression, ...]:
    if not body:
        return ()
    return tuple(
        Suppression(item["code"], item["reason"], positions.of(("lint", "suppress", index))[0])
        for index, item in enumerate(body.get("suppress", ()))
    )


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value)) if value else EMPTY
