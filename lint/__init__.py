"""Static checks for loops: a registry of small rules over the model and the compiled graph.

`lint_loop(loop, positions)` returns positioned diagnostics; `RULES` maps each stable code to
its rule (documented in docs/lint-rules.md); `lint.report` renders diagnostics for people and CI.
"""

from __future__ import annotations

from lint import (  # noqa: F401  (importing registers the rules)
    rules_cost,
    rules_graph,
    rules_interpolation,
    rules_judges,
    rules_llm,
    rules_placeholder,
    rules_states,
    rules_subloop,
    rules_suite,
    rules_suppress,
    rules_traps,
)
from lint._context import LintContext, LoopResolver
from lint._engine import lint_loop
from lint._registry import RULES, Finding, PositionLookup, Rule, find_rule, rule
from lint.suite import lint_suite

__all__ = [
    "RULES",
    "Finding",
    "LintContext",
    "LoopResolver",
    "PositionLookup",
    "Rule",
    "find_rule",
    "lint_loop",
    "lint_suite",
    "rule",
]
