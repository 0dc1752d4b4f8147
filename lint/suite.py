"""`lint_suite`: the rules that check suite files (`targets` include "suite"), placed and
filtered by the suite's `lint: suppress` like a loop's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.load.gcpause import collector_paused
from engine.model.errors import Diagnostic
from lint._engine import PositionLookup
from lint._registry import RULES, find_rule
from lint._suite import SuiteContext

if TYPE_CHECKING:  # a suite's lint imports it; a loop's need not pay for it
    from collections.abc import Sequence

    from engine.model.suite import Case, Suite


def lint_suite(
    suite: Suite, positions: PositionLookup | None = None, cases: Sequence[Case] | None = None
) -> list[Diagnostic]:
    """Every diagnostic of every suite rule for `suite`, in file order. `cases` are its cases
    when the caller has read them already (`load_cases`); otherwise the rules that need them
    read them."""
    with collector_paused():
        ctx = SuiteContext(suite, cases)
        found: list[Diagnostic] = []
        for item in RULES.values():
            if "suite" not in item.targets:
                continue
            if any(find_rule(s.code) is item for s in suite.lint):
                continue
            for finding in item.check(ctx):
                line, column = positions.of(finding.path) if positions is not None else (0, 0)
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
