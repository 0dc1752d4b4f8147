"""Render diagnostics for people (text) and machines (json, GitHub annotations, SARIF 2.1.0).

Each renderer is a pure function from `LoopReport`s to the text printed on stdout, registered
by format name so the CLI maps `--format X` without a ladder of ifs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.model.errors import Diagnostic
from lint._registry import RULES

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass(frozen=True)
class LoopReport:
    """The diagnostics of one loop file."""

    path: str
    diagnostics: tuple[Diagnostic, ...]

    @property
    def valid(self) -> bool:
        """No errors (warnings and infos do not make a loop invalid)."""
        return not any(d.severity == "error" for d in self.diagnostics)


Renderer = Callable[[Sequence[LoopReport]], str]
RENDERERS: dict[str, Renderer] = {}


def renderer(name: str) -> Callable[[Renderer], Renderer]:
    def register(function: Renderer) -> Renderer:
        RENDERERS[name] = function
        return function

    return register


@renderer("text")
def render_text(reports: Sequence[LoopReport]) -> str:
    """`file:line:col: severity CODE message` and an indented hint line per diagnostic."""
    return "\n".join(d.render() for r in reports for d in r.diagnostics)


@renderer("json")
def render_json(reports: Sequence[LoopReport]) -> str:
    """DESIGN §5: `{"loops": [{"path", "valid", "diagnostics": [...]}]}`."""
    loops = [
        {"path": r.path, "valid": r.valid, "diagnostics": [d.to_json() for d in r.diagnostics]}
        for r in reports
    ]
    return json.dumps({"loops": loops}, indent=2)


_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _gh_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


@renderer("github")
def render_github(reports: Sequence[LoopReport]) -> str:
    """GitHub Actions workflow commands: `::error file=…,line=…,col=…,title=CODE::message`."""
    lines = []
    for report in reports:
        for d in report.diagnostics:
            props = [f"file={_gh_escape(d.file or report.path, prop=True)}"]
            if d.line:
                props.append(f"line={d.line}")
            if d.column:
                props.append(f"col={d.column}")
            props.append(f"title={_gh_escape(d.code, prop=True)}")
            message = d.message + (f" (hint: {d.hint})" if d.hint else "")
            lines.append(f"::{_GITHUB_LEVEL[d.severity]} {','.join(props)}::{_gh_escape(message)}")
    return "\n".join(lines)


_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


@renderer("sarif")
def render_sarif(reports: Sequence[LoopReport]) -> str:
    """One SARIF 2.1.0 run: every registered rule (plus loader codes seen) and every result."""
    rules: list[dict[str, object]] = [
        {
            "id": item.code,
            "name": item.name,
            "shortDescription": {"text": item.summary},
            "help": {"text": f"{item.summary} See docs/lint-rules.md#{item.code.lower()}."},
            "defaultConfiguration": {"level": _SARIF_LEVEL[item.severity]},
        }
        for item in RULES.values()
    ]
    index = {str(r["id"]): i for i, r in enumerate(rules)}
    results = []
    for report in reports:
        for d in report.diagnostics:
            if d.code not in index:  # a loader diagnostic (schema, YAML)
                index[d.code] = len(rules)
                rules.append(
                    {
                        "id": d.code,
                        "shortDescription": {"text": "The loop file does not load."},
                        "help": {"text": "Load-time check; see docs/format.md."},
                        "defaultConfiguration": {"level": "error"},
                    }
                )
            results.append(_sarif_result(d, report.path, index[d.code]))
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "ll-loop", "rules": rules}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2)


def _sarif_result(d: Diagnostic, path: str, rule_index: int) -> dict[str, object]:
    physical: dict[str, object] = {"artifactLocation": {"uri": _uri(d.file or path)}}
    if d.line:
        region: dict[str, int] = {"startLine": d.line}
        if d.column:
            region["startColumn"] = d.column
        physical["region"] = region
    text = d.message + (f" Hint: {d.hint}" if d.hint else "")
    return {
        "ruleId": d.code,
        "ruleIndex": rule_index,
        "level": _SARIF_LEVEL[d.severity],
        "message": {"text": text},
        "locations": [{"physicalLocation": physical}],
    }


def _uri(path: str) -> str:
    """SARIF wants URIs: relative paths with forward slashes, absolute ones as file:// URIs."""
    from pathlib import Path, PurePath

    if Path(path).is_absolute():
        return Path(path).as_uri()
    return PurePath(path).as_posix()
