"""`lint_loop`: run every registered rule, place findings, drop suppressed ones."""

from __future__ import annotations

from typing import Protocol

from engine.errors import Diagnostic
from engine.graph import compile_graph
from engine.model import Loop, Suppression
from lint._context import LintContext, LoopResolver
from lint._registry import RULES, Finding, PathKey, Rule, find_rule


class PositionLookup(Protocol):
    """What lint needs from the loader's positions: (line, column) of a YAML path."""

    def of(self, path: PathKey) -> tuple[int, int]: ...


def lint_loop(
    loop: Loop, positions: PositionLookup | None = None, *, resolve_loop: LoopResolver | None = None
) -> list[Diagnostic]:
    """Every diagnostic of every rule for `loop`, suppressions applied, in file order."""
    ctx = LintContext(loop, compile_graph(loop), resolve_loop)
    found: list[Diagnostic] = []
    for item in RULES.values():
        for finding in item.check(ctx):
            if not _suppressed(loop, item, finding):
                found.append(_diagnostic(loop, item, finding, positions))
    return sorted(found, key=lambda d: (d.line, d.column, d.code))


def _suppressed(loop: Loop, item: Rule, finding: Finding) -> bool:
    scoped: tuple[Suppression, ...] = loop.lint
    state = loop.states.get(finding.state) if finding.state else None
    if state is not None:
        scoped += state.lint
    return any(find_rule(s.code) is item for s in scoped)


def _diagnostic(
    loop: Loop, item: Rule, finding: Finding, positions: PositionLookup | None
) -> Diagnostic:
    line, column = _locate(loop, finding.path, positions)
    return Diagnostic(
        code=item.code,
        severity=item.severity,
        message=finding.message,
        file=loop.source,
        path=".".join(str(p) for p in finding.path),
        line=line,
        column=column,
        hint=finding.hint,
    )


def _locate(loop: Loop, path: PathKey, positions: PositionLookup | None) -> tuple[int, int]:
    """The loader's position of `path`; without positions, the state's own line if known."""
    if positions is not None:
        return positions.of(path)
    if len(path) >= 2 and path[0] == "states":
        state = loop.states.get(str(path[1]))
        if state is not None:
            return state.line, state.column
    return 0, 0
