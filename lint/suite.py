"""`lint_suite`: the rules that check suite files (`targets` include "suite"), placed and
filtered by the suite's `lint: suppress` like a loop's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from engine.load.gcpause import collector_paused
from engine.model.errors import Diagnostic
from lint._context import LoopResolver
from lint._engine import find_in_text
from lint._registry import RULES, Finding, PositionLookup, find_rule
from lint._suite import SuiteContext

if TYPE_CHECKING:  # a suite's lint imports it; a loop's need not pay for it
    from collections.abc import Sequence

    from engine.model.suite import Case, Suite


def lint_suite(
    suite: Suite,
    positions: PositionLookup | None = None,
    *,
    resolve_loop: LoopResolver | None = None,
    project_root: Path | None = None,
    cases: Sequence[Case] | None = None,
) -> list[Diagnostic]:
    """Every diagnostic of every suite rule for `suite`, in file order. The caller knows about
    files: `resolve_loop` finds a loop subject, `project_root` holds the `workspace:` paths
    (without them, those are not checked), `cases` are the suite's cases when it has read them
    already (`load_cases`; otherwise the rules that need them read them)."""
    with collector_paused():
        ctx = SuiteContext(suite, positions, resolve_loop, project_root, cases)
        found: list[Diagnostic] = []
        for item in RULES.values():
            if "suite" not in item.targets:
                continue
            if any(find_rule(s.code) is item for s in suite.lint):
                continue
            for finding in item.check(ctx):
                line, column = _place(finding, positions)
                found.append(
                    Diagnostic(
                        item.code,
                        item.severity,
                        finding.message,
                        suite.source,
                        ".".join(str(p) for p in finding.path),
                        line,
                        column,
                        finding.hint,
                    )
                )
    return sorted(found, key=lambda d: (d.line, d.column, d.code))


def _place(finding: Finding, positions: PositionLookup | None) -> tuple[int, int]:
    """The key at the finding's path, refined to its `needle` when the text holds it there."""
    if positions is None:
        return 0, 0
    line, column = positions.of(finding.path)
    if finding.needle:
        nth = finding.occurrence or 0
        return find_in_text(positions.text, finding.needle, line, column, nth) or (line, column)
    return line, column
