"""The prompts of generated loops, assembled from the issue's own words (pure text).

Escaping for interpolation happens at emission (`engine.scaffold.text`), not here.
"""

from __future__ import annotations

from engine.load.issuefile import Issue, list_items
from engine.scaffold.text import flat

NO_SIGNALS = "a stack trace, an error message or a silent no-op"


def execute_prompt(issue: Issue) -> tuple[str, tuple[str, ...]]:
    """What a user does to exercise the issue, and what the issue lacked for it (if anything)."""
    subject = f'"{issue.title}" ({issue.id})'
    parts: list[str] = []
    missing: list[str] = []
    if issue.is_bug and issue.steps_to_reproduce:
        parts.append(
            f"You are the person who reported {subject}. Check, on the real project and not a "
            "mock-up, whether the problem still happens."
        )
        if issue.summary:
            parts.append(f"The report:\n{issue.summary}")
        parts.append(f"Follow these steps exactly, as written:\n{issue.steps_to_reproduce}")
        if issue.expected_behavior:
            parts.append(
                "The report says this should happen instead; do whatever a user would do to "
                f"see whether it now does:\n{issue.expected_behavior}"
            )
    elif issue.use_case or issue.expected_behavior:
        parts.append(
            f"You are trying out {subject} as a real user of this project would, on the real "
            "project and not a mock-up."
        )
        if issue.summary:
            parts.append(f"What it is for:\n{issue.summary}")
        if issue.use_case:
            parts.append(f"Do what this scenario describes, step by step:\n{issue.use_case}")
        if issue.expected_behavior:
            lead = "Then use" if issue.use_case else "Use"
            parts.append(
                f"{lead} each part of what the feature is meant to do, trying it yourself "
                f"instead of assuming it works:\n{issue.expected_behavior}"
            )
    else:
        what = (
            f"the steps a user takes to exercise {issue.id}: the issue has no Use Case, "
            "Expected Behavior or Steps to Reproduce section"
        )
        missing.append(what)
        parts.append(f"You are trying out {subject} as a real user of this project would.")
        if issue.summary:
            parts.append(f"What the issue says:\n{issue.summary}")
        parts.append(f"<FILL: {what}>")
    parts.append(
        "As you go, write down exactly what you did and what you saw: every command or action, "
        "and its output or result copied as-is, including errors, warnings, delays and anything "
        "surprising. If something could not be done, say what stopped you. Report what "
        "happened; do not grade it."
    )
    return "\n\n".join(parts), tuple(missing)


def judged_conditions(issue: Issue) -> tuple[tuple[str, ...], str]:
    """The conditions a judge checks and the section they come from: Acceptance Criteria, else
    the items of Expected Behavior, else those of Use Case (whichever the issue has)."""
    if issue.acceptance_criteria:
        return issue.acceptance_criteria, "Acceptance Criteria"
    for text, section in (
        (issue.expected_behavior, "Expected Behavior"),
        (issue.use_case, "Use Case"),
    ):
        items = list_items(text) if text else ()
        if items:
            return items, section
    return (), ""


def criteria_conditions(issue: Issue) -> tuple[str, tuple[str, ...]]:
    """The numbered conditions and NO clause for one issue, and what it lacked (if anything)."""
    missing: list[str] = []
    conditions, section = judged_conditions(issue)
    if conditions:
        numbered = "\n".join(f"({n}) {condition}" for n, condition in enumerate(conditions, 1))
        heading = f"Conditions (from the issue's {section}), every one of which must hold"
    else:
        what = (
            f"numbered observable conditions for {issue.id} (1), (2), ...: the issue has no "
            "Acceptance Criteria, Expected Behavior or Use Case section"
        )
        missing.append(what)
        numbered = f"(1) <FILL: {what}>"
        heading = "Conditions, every one of which must hold"
    no_lines = [f"- {line}" for line in _no_conditions(issue, conditions)]
    text = (
        f'Judge whether "{issue.title}" ({issue.id}) worked for the user whose report you are '
        "given. Judge only from that report: an action it does not show did not happen.\n\n"
        f"{heading}:\n{numbered}\n\n"
        "Answer YES only if the report clearly shows every condition met.\n"
        "Answer NO, naming each unmet condition and what the report shows instead, if any "
        "condition is unmet or was not tried, or if the report shows any of:\n"
        + "\n".join(no_lines)
        + "\nAnswer PARTIAL if some conditions were met and the rest could not be tried, and "
        "BLOCKED if the user could not get far enough to try any of them."
    )
    if missing:
        text += (
            "\nIf a condition above is still an unfilled FILL marker, it cannot be judged: "
            "answer CANNOT_JUDGE."
        )
    return text, tuple(missing)


def evidence_demand(subject: str = "the report") -> str:
    """The verbatim-evidence clause every judge prompt ends with (lint rule MR-8)."""
    return (
        f"Evidence: quote verbatim, from {subject}, the line or lines that support your "
        "verdict. A verdict without a verbatim quote is not acceptable."
    )


def criteria_prompt(issue: Issue) -> tuple[str, tuple[str, ...]]:
    """The complete judge prompt for one issue: conditions, NO clause, evidence demand."""
    text, missing = criteria_conditions(issue)
    return f"{text}\n\n{evidence_demand()}", missing


def _no_conditions(issue: Issue, conditions: tuple[str, ...]) -> list[str]:
    """The NO clause of an eval judge: what rules the issue out, and the silent failures."""
    lines: list[str] = []
    numbers = {c: n for n, c in enumerate(conditions, 1)}
    for rule in issue.should_not:
        if rule in numbers:
            lines.append(f"anything condition ({numbers[rule]}) rules out")
        else:
            lines.append(f"a case the issue rules out: {rule}")
    if issue.is_bug and issue.actual_behavior:
        lines.append(f"the reported problem still happening: {flat(issue.actual_behavior)}")
    lines.append(
        f"{NO_SIGNALS} (an action that seemed to work but changed nothing) in any step, "
        "unless a condition above asks for that error"
    )
    return lines


def criterion_no_conditions(issue: Issue, number: int, criterion: str) -> list[str]:
    """The NO clause of one criterion's judge in a verification loop."""
    lines = [f"anything criterion ({number}) rules out"] if criterion in issue.should_not else []
    if issue.is_bug and issue.actual_behavior:
        lines.append(f"the reported problem still happening: {flat(issue.actual_behavior)}")
    lines.append(
        f"{NO_SIGNALS} (an action that seemed to work but changed nothing), unless the "
        "criterion asks for that error"
    )
    return lines


def context_lines(issue: Issue, *, with_criteria: bool = False) -> str:
    """What the issue says about the feature, as background for a verification prompt."""
    parts: list[str] = []
    if issue.summary:
        parts.append(f"What it is:\n{issue.summary}")
    if issue.use_case:
        parts.append(f"How people use it:\n{issue.use_case}")
    if issue.expected_behavior:
        parts.append(f"What it should do:\n{issue.expected_behavior}")
    if issue.steps_to_reproduce:
        parts.append(f"How the problem was reproduced:\n{issue.steps_to_reproduce}")
    if with_criteria and issue.acceptance_criteria:
        listed = "\n".join(f"- {c}" for c in issue.acceptance_criteria)
        parts.append(f"What it promises:\n{listed}")
    return "\n\n".join(parts)
