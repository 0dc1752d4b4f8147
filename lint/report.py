"""Render diagnostics for people (text) and machines (json, GitHub annotations, SARIF 2.1.0).

Each renderer is a pure function from `LoopReport`s to the text printed on stdout, registered
by format name so the CLI maps `--format X` without a ladder of ifs.
"""

from __future__ import annotations

import json
import os
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
    """The JSON docs/cli.md documents: `{"loops": [{"path", "valid", "diagnostics": [...]}]}`.

    Each diagnostic names the `file` its line and column are in: a loop's diagnostics can be
    about an imported fragment library, whose lines are not the loop's."""
    loops = [
        {
            "path": r.path,
            "valid": r.valid,
            "diagnostics": [{"file": d.file or r.path, **d.to_json()} for d in r.diagnostics],
        }
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
            props = [f"file={_gh_escape(_from_checkout(d.file or report.path), prop=True)}"]
            if d.line:
                props.append(f"line={d.line}")
            if d.column:
                props.append(f"col={d.column}")
            props.append(f"title={_gh_escape(d.code, prop=True)}")
            message = d.message + (f" (hint: {d.hint})" if d.hint else "")
            lines.append(f"::{_GITHUB_LEVEL[d.severity]} {','.join(props)}::{_gh_escape(message)}")
    return "\n".join(lines)


def _from_checkout(path: str) -> str:
    """The path relative to the working directory (the checkout, in a workflow step) when it is
    inside it: GitHub attaches an annotation only to a path relative to the repository, and a
    loop given by name (`.loops/NAME.yaml`, a built-in) is reported with its absolute path."""
    if not os.path.isabs(path):
        return path
    relative = os.path.relpath(path, os.getcwd())
    return path if relative == ".." or relative.startswith("../") else relative


_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


@renderer("sarif")
def render_sarif(reports: Sequence[LoopReport]) -> str:
    """One SARIF 2.1.0 run. The driver lists every rule — lint's, then the loader's, then
    `USAGE` — in the same order in every report, so a rule id always has the same index."""
    rules = sarif_rules()
    index = {str(r["id"]): i for i, r in enumerate(rules)}
    results = []
    for report in reports:
        for d in report.diagnostics:
            if d.code not in index:  # a code nobody registered: still a valid log
                index[d.code] = len(rules)
                rules.append(_sarif_rule(d.code, d.code.lower(), d.message, "error", "docs/"))
            results.append(_sarif_result(d, report.path, index[d.code]))
    driver = {"name": "ll-loop", "version": _version(), "semanticVersion": _version()}
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {**driver, "rules": rules}}, "results": results}],
    }
    return json.dumps(log, indent=2)


def sarif_rules() -> list[dict[str, object]]:
    """Every rule a report can name, each with its stable id, a name and where it is documented."""
    from engine.load.codes import LOAD_CODES

    rules: list[dict[str, object]] = [
        _sarif_rule(item.code, item.name, item.summary, item.severity, "docs/lint-rules.md")
        for item in RULES.values()
    ]
    rules += [
        _sarif_rule(c.code, c.name, c.summary, "error", "docs/format.md#diagnostics")
        for c in LOAD_CODES
    ]
    rules.append(
        _sarif_rule("USAGE", "no-such-loop", "The path names no loop file.", "error", "docs/cli.md")
    )
    return rules


def _sarif_rule(code: str, name: str, summary: str, severity: str, doc: str) -> dict[str, object]:
    where = f"{doc}#{code.lower()}" if doc.endswith("lint-rules.md") else doc
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": summary},
        "help": {"text": f"{summary} See {where}."},
        "defaultConfiguration": {"level": _SARIF_LEVEL[severity]},
    }


def _version() -> str:
    """The installed ll-loop's version (SARIF `driver.version`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ll-loop")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


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
    """SARIF wants URIs: relative paths with forward slashes, absolute ones as file:// URIs.

    A relative path is percent-encoded as `as_uri` encodes an absolute one: a space, `%`, `#`,
    `?` or a `:` in its first segment would otherwise make an invalid URI reference, or one that
    names another file (`a#b.yaml` is `a` with a fragment)."""
    from pathlib import Path, PurePath
    from urllib.parse import quote

    if Path(path).is_absolute():
        return Path(path).as_uri()
    # bytes: a name that is not UTF-8 holds lone surrogates (surrogateescape), which quote()
    # cannot encode; its URI percent-encodes the name's own bytes
    return quote(os.fsencode(PurePath(path).as_posix()), safe="/")
