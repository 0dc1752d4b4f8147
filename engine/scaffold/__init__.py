"""Write eval loops from issues: deterministic prompts, commented YAML, no LLM involved.

`scaffold_eval` builds an evaluation harness (is this a good experience?), `scaffold_verify` a
verification loop (does it meet each criterion?) or an adversarial one (can it be broken?).
Every prompt is assembled from the issue's own words; what the issue lacks becomes a visible
`<FILL: ...>` placeholder that `placeholder_diagnostics` reports with the exact thing to write.

The package: `prompts` (the prompt text), `text` (YAML emission), `eval_loops` and
`verify_loops` (the loop builders), `result` (what they return).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from engine.load.issuefile import Issue
from engine.load.modeline import PROJECT_SCHEMA, with_modeline
from engine.model.errors import UsageError
from engine.scaffold.eval_loops import ISSUE_RETRIES, eval_name, variant_a, variant_b
from engine.scaffold.prompts import (
    NO_SIGNALS,
    criteria_conditions,
    criteria_prompt,
    evidence_demand,
    execute_prompt,
)
from engine.scaffold.proofs import LearningTests, load_learning_tests, proof_targets
from engine.scaffold.result import PLACEHOLDER_RE, Placeholder, Scaffold
from engine.scaffold.text import yaml_quoted, yaml_scalar
from engine.scaffold.verify_loops import adversarial_loop, criteria_loop, verify_file_stem

__all__ = [
    "ISSUE_RETRIES",
    "NO_SIGNALS",
    "PLACEHOLDER_RE",
    "LearningTests",
    "Placeholder",
    "Scaffold",
    "criteria_conditions",
    "criteria_prompt",
    "eval_name",
    "evidence_demand",
    "execute_prompt",
    "load_learning_tests",
    "proof_targets",
    "scaffold_eval",
    "scaffold_verify",
    "verify_file_stem",
    "yaml_quoted",
    "yaml_scalar",
]


def scaffold_eval(issues: Sequence[Issue], learning: LearningTests | None = None) -> Scaffold:
    """Variant A for one issue, Variant B (a work list) for several; with learning tests
    enabled, an issue's `learning_tests_required:` targets become proof-first gates."""
    unique = list(_one_per_id(issues).values())
    if not unique:
        raise UsageError("no issues to scaffold", hint="pass --issues ID[,ID...]")
    if len(unique) == 1:
        return _for_editors(variant_a(unique[0], learning))
    return _for_editors(variant_b(unique, learning))


def scaffold_verify(issue: Issue, *, adversarial: bool = False) -> Scaffold:
    """A criteria-by-criteria verification loop, or an adversarial probing loop."""
    if adversarial:
        return _for_editors(adversarial_loop(issue))
    if not issue.acceptance_criteria:
        where = f" ({issue.path})" if issue.path else ""
        raise UsageError(
            f"{issue.id}{where} has no acceptance criteria, so there is nothing to verify",
            hint="add an `## Acceptance Criteria` list to the issue, or use `ll-loop scaffold-eval`"
            " (which leaves a placeholder to fill) or `scaffold-verify --adversarial`",
        )
    return _for_editors(criteria_loop(issue))


def _one_per_id(issues: Sequence[Issue]) -> dict[str, Issue]:
    """The issues by ID (case-insensitive), the same issue given twice once. Two files with one
    ID are refused: the work list would keep one of them and silently drop the other."""
    by_id: dict[str, Issue] = {}
    for issue in issues:
        first = by_id.setdefault(issue.id.upper(), issue)
        if first.path != issue.path:
            raise UsageError(
                f"{first.path} and {issue.path} are both issue {issue.id}",
                hint="pass one of them, or give one another `id:` in its front matter",
            )
    return by_id


def _for_editors(scaffold: Scaffold) -> Scaffold:
    """The loop with the modeline that points editors at `.loops/loop.schema.json`."""
    return replace(scaffold, text=with_modeline(scaffold.text, PROJECT_SCHEMA))
