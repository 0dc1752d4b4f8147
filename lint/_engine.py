"""`lint_loop`: run every registered rule, place findings, drop suppressed ones."""

from __future__ import annotations

from engine.graph.loop_graph import compile_graph
from engine.load.gcpause import collector_paused
from engine.model.errors import Diagnostic
from engine.model.loop import Loop, Suppression
from lint._context import LintContext, LoopResolver
from lint._registry import RULES, Finding, PathKey, PositionLookup, Rule, find_rule


def lint_loop(
    loop: Loop, positions: PositionLookup | None = None, *, resolve_loop: LoopResolver | None = None
) -> list[Diagnostic]:
    """Every diagnostic of every rule for `loop`, suppressions applied, in file order."""
    with collector_paused():
        ctx = LintContext(loop, compile_graph(loop), resolve_loop, positions)
        placer = _Placer(loop, positions)
        found: list[Diagnostic] = []
        for item in RULES.values():
            if "loop" not in item.targets:
                continue
            for finding in item.check(ctx):
                if not _suppressed(loop, item, finding):
                    found.append(_diagnostic(loop, item, finding, placer))
    return sorted(found, key=lambda d: (d.line, d.column, d.code))


def _suppressed(loop: Loop, item: Rule, finding: Finding) -> bool:
    scoped: tuple[Suppression, ...] = loop.lint
    state = loop.states.get(finding.state) if finding.state else None
    if state is not None:
        scoped += state.lint
    return any(find_rule(s.code) is item for s in scoped)


def _diagnostic(loop: Loop, item: Rule, finding: Finding, placer: _Placer) -> Diagnostic:
    line, column = placer.place(finding)
    origin = placer.origin(finding.path)
    return Diagnostic(
        code=item.code,
        severity=item.severity,
        message=f"{finding.message} (from {origin})" if origin else finding.message,
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


class _Placer:
    """Positions of findings: the loader's position of the path, refined to the finding's
    `needle` inside the value when the source text holds it (the k-th finding with the same
    needle in one value goes to its k-th occurrence)."""

    def __init__(self, loop: Loop, positions: PositionLookup | None) -> None:
        self.loop = loop
        self.positions = positions
        self._seen: dict[tuple[PathKey, str], int] = {}

    def origin(self, path: PathKey) -> str:
        """Where a fragment wrote the node at `path` ("" when the loop file itself did)."""
        origin_of = getattr(self.positions, "origin_of", None)
        return str(origin_of(path)) if origin_of is not None else ""

    def place(self, finding: Finding) -> tuple[int, int]:
        line, column = _locate(self.loop, finding.path, self.positions)
        if not finding.needle or self.positions is None or line < 1 or self.origin(finding.path):
            return line, column
        key = (finding.path, finding.needle)
        nth = self._seen.get(key, 0) if finding.occurrence is None else finding.occurrence
        self._seen[key] = nth + 1
        found = find_in_text(self.positions.text, finding.needle, line, column, nth)
        return found or (line, column)


def find_in_text(
    text: str, needle: str, line: int, column: int, nth: int
) -> tuple[int, int] | None:
    """(line, column) of the `nth` occurrence of `needle` at or after (line, column), if any."""
    offset = 0
    for _ in range(line - 1):
        offset = text.find("\n", offset) + 1
        if offset == 0:
            return None
    at = offset + column - 1
    for _ in range(nth + 1):
        at = text.find(needle, at)
        if at < 0:
            return None
        at += 1
    at -= 1
    start_of_line = text.rfind("\n", 0, at) + 1
    return text.count("\n", 0, at) + 1, at - start_of_line + 1
