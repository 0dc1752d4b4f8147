"""scaffold-eval: generated harnesses load, lint clean, and carry the issue's own words."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.load.issuefile import Issue, load_issue, parse_issue
from engine.load.loader import check_loop_text
from engine.model.errors import UsageError
from engine.scaffold import (
    NO_SIGNALS,
    criteria_prompt,
    execute_prompt,
    scaffold_eval,
    yaml_quoted,
    yaml_scalar,
)
from engine.shell.interpolate import render_shell, render_text
from tests.properties import examples
from tests.scaffold_helpers import ISSUES, issue_of, lint_findings, placeholder_warnings

FIXTURES = sorted(ISSUES.rglob("*.md"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_every_fixture_scaffolds_to_a_lint_clean_variant_a(path: Path) -> None:
    scaffold = scaffold_eval([load_issue(path)])
    assert scaffold.variant == "A"
    assert lint_findings(scaffold.text) == []
    data = yaml.safe_load(scaffold.text)
    assert data["max_steps"] == 5
    assert data["category"] == "harness"
    assert data["scope"] == [f".loops/{scaffold.name}"]
    check = data["states"]["check_skill"]
    assert check["evaluate"]["type"] == "llm_structured"
    assert (check["on_yes"], check["on_no"], check["on_partial"]) == ("done", "execute", "execute")
    execute = data["states"]["execute"]
    assert execute["action_type"] == "prompt"
    assert (execute["max_retries"], execute["on_retry_exhausted"]) == (1, "failed")
    assert data["states"]["failed"] == {
        "description": data["states"]["failed"]["description"],
        "terminal": True,
        "failure": True,
    }


def rendered(scaffold_text: str, *keys: str) -> str:
    """A field of the generated YAML after ll-loop interpolation (what the LLM receives)."""
    node: Any = yaml.safe_load(scaffold_text)
    for key in keys:
        node = node[key]
    return render_text(node, {"captured": {}, "context": {}})


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_criteria_prompt_has_every_criterion_numbered_and_the_evidence_demand(path: Path) -> None:
    issue = load_issue(path)
    text = scaffold_eval([issue]).text
    prompt = rendered(text, "states", "check_skill", "evaluate", "prompt")
    for number, criterion in enumerate(issue.acceptance_criteria, 1):
        assert f"({number}) {criterion}\n" in prompt + "\n"
    assert "quote verbatim" in prompt
    assert "without a verbatim quote is not acceptable" in prompt
    assert NO_SIGNALS in prompt
    assert "Answer NO" in prompt
    # Exactly what the pure prompt builder wrote, so `${`, `{{` and quotes survived emission.
    assert prompt == criteria_prompt(issue)[0]


def test_no_clause_draws_on_should_not_lines() -> None:
    issue = issue_of("P2-FEAT-919-sprint-dashboard.md")
    prompt, _ = criteria_prompt(issue)
    no_clause = prompt.split("Answer NO", 1)[1]
    assert "anything condition (4) rules out" in no_clause
    assert "The page should never show issues from a closed sprint." in no_clause


def test_bug_no_clause_names_the_reported_problem() -> None:
    prompt, _ = criteria_prompt(issue_of("P1-BUG-204-export-crash.md"))
    assert "the reported problem still happening: The command prints `Traceback" in prompt


def test_execute_prompt_is_an_instruction_not_the_grade() -> None:
    issue = issue_of("P2-FEAT-919-sprint-dashboard.md")
    text = scaffold_eval([issue]).text
    action = rendered(text, "states", "execute", "action")
    assert action == execute_prompt(issue)[0]
    assert issue.use_case in action
    assert issue.expected_behavior in action
    assert "do not grade it" in action
    for criterion in issue.acceptance_criteria:  # the executor never sees the criteria
        assert criterion not in action


def test_bug_execute_prompt_follows_the_reproduction_steps() -> None:
    issue = issue_of("P1-BUG-204-export-crash.md")
    action, missing = execute_prompt(issue)
    assert missing == ()
    assert "Follow these steps exactly" in action
    assert issue.steps_to_reproduce in action


def test_issue_text_with_interpolation_syntax_reaches_the_llm_verbatim() -> None:
    issue = issue_of("P3-ENH-77-config-reload.md")
    text = scaffold_eval([issue]).text
    assert "$${context.secret}" in text  # escaped in the file...
    action = rendered(text, "states", "execute", "action")
    assert "${HOME} and {{ jinja }} and ${context.secret}" in action  # ...literal when run
    prompt = rendered(text, "states", "check_skill", "evaluate", "prompt")
    assert "`{{ user }}`, `${ENV_VAR}` and `$${literal}`" in prompt


STEPS_ONLY = """\
# BUG-301: Login times out

## Steps to Reproduce

1. Open the login page.
2. Sign in as `ada`.

## Actual Behavior

The page spins for a minute and shows `504 Gateway Timeout`.
"""


def test_missing_criteria_become_one_placeholder_with_a_positioned_warning() -> None:
    scaffold = scaffold_eval([parse_issue(STEPS_ONLY, issue_id="BUG-301")])
    assert [p.path for p in scaffold.placeholders] == ["states.check_skill.evaluate.prompt"]
    diagnostics = placeholder_warnings(scaffold.text, "eval.yaml")
    assert len(diagnostics) == 1
    found = diagnostics[0]
    assert (found.code, found.severity, found.path) == (
        "LL060",
        "warning",
        "states.check_skill.evaluate.prompt",
    )
    assert "no Acceptance Criteria, Expected Behavior or Use Case section" in found.message
    assert "<FILL:" in scaffold.text.splitlines()[found.line - 1]
    assert scaffold.text.splitlines()[found.line - 1].index("<FILL:") == found.column - 1
    # The judge is told it cannot pass an unfilled condition.
    assert "answer CANNOT_JUDGE" in rendered(
        scaffold.text, "states", "check_skill", "evaluate", "prompt"
    )
    # Steps to Reproduce exist, so the execute prompt needed no placeholder.
    assert "<FILL" not in rendered(scaffold.text, "states", "execute", "action")


EXPECTED_ONLY_BUG = """\
# BUG-302: Search ignores accents

## Steps to Reproduce

1. Search for `cafe`.

## Actual Behavior

Issues titled `café` are not found.

## Expected Behavior

- Searching `cafe` also finds issues titled `café`.
- Searching `café` still finds them too.
"""


@pytest.mark.parametrize(
    ("text", "section", "first"),
    [
        (EXPECTED_ONLY_BUG, "Expected Behavior", "(1) Searching `cafe` also finds issues"),
        (
            "# FEAT-5: Tags\n\n## Use Case\n\n- Tag an issue `ux` and filter by it.\n",
            "Use Case",
            "(1) Tag an issue `ux` and filter by it.",
        ),
    ],
)
def test_without_acceptance_criteria_the_conditions_come_from_the_section_it_has(
    text: str, section: str, first: str
) -> None:
    scaffold = scaffold_eval([parse_issue(text)])
    assert scaffold.placeholders == ()
    prompt = rendered(scaffold.text, "states", "check_skill", "evaluate", "prompt")
    assert f"Conditions (from the issue's {section}), every one of which must hold" in prompt
    assert first in prompt
    assert "<FILL" not in scaffold.text


def test_feature_with_expected_behavior_paragraph_needs_no_placeholder() -> None:
    scaffold = scaffold_eval([issue_of("P2-FEAT-1001-saved-searches.md")])
    assert scaffold.placeholders == ()
    prompt = rendered(scaffold.text, "states", "check_skill", "evaluate", "prompt")
    assert "(1) `tracker search --save mine" in prompt
    assert "(2)" not in prompt  # one paragraph, one condition


def test_bare_issue_gets_both_placeholders_and_nothing_else_invented() -> None:
    scaffold = scaffold_eval([issue_of("BUG-555-bare.md")])
    assert sorted(p.path for p in scaffold.placeholders) == [
        "states.check_skill.evaluate.prompt",
        "states.execute.action",
    ]
    assert len(placeholder_warnings(scaffold.text)) == 2
    assert "Some users get every notification e-mail twice." in scaffold.text
    assert "TO FILL before this harness means anything" in scaffold.text


def test_complete_issue_has_no_placeholders() -> None:
    scaffold = scaffold_eval([issue_of("P2-FEAT-919-sprint-dashboard.md")])
    assert scaffold.placeholders == ()
    assert placeholder_warnings(scaffold.text) == []
    assert "<FILL" not in scaffold.text


# --- Variant B -----------------------------------------------------------------------------------


def test_several_issues_make_a_work_list_loop_with_a_computed_budget() -> None:
    issues = [load_issue(p) for p in FIXTURES]
    scaffold = scaffold_eval(issues)
    assert scaffold.variant == "B"
    assert lint_findings(scaffold.text) == []
    data = yaml.safe_load(scaffold.text)
    n = len(issues)
    assert data["max_steps"] == 8 * n + 2
    assert f"max_steps = 8 x {n} issues + 2 = {8 * n + 2}" in scaffold.text
    states = data["states"]
    assert data["initial"] == "discover"
    discover = states["discover"]
    assert "${run.dir}/worklist.txt" in discover["action"]
    assert discover["evaluate"]["type"] == "classify"
    assert discover["route"]["none"] == "report"
    for issue in issues:
        key = re.sub(r"[^a-z0-9]+", "_", issue.id.lower())
        assert discover["route"][f"issue_{key}"] == f"execute_{key}"
        execute, check = states[f"execute_{key}"], states[f"check_skill_{key}"]
        assert execute["next"] == f"check_skill_{key}"
        assert (execute["max_retries"], execute["on_retry_exhausted"]) == (2, "record_failure")
        assert (check["on_yes"], check["on_no"]) == ("advance", f"execute_{key}")
        assert check["on_blocked"] == "record_blocked"
        # Each issue's own criteria, numbered, with the evidence demand: no lookup at run time.
        prompt = render_text(check["evaluate"]["prompt"], {})
        assert prompt == criteria_prompt(issue)[0]
        assert render_text(execute["action"], {}) == execute_prompt(issue)[0]
    assert states["advance"]["next"] == "discover"
    assert states["failed"]["failure"] is True


def test_variant_b_placeholders_point_at_the_issue_states() -> None:
    issues = [issue_of("P2-FEAT-919-sprint-dashboard.md"), issue_of("BUG-555-bare.md")]
    scaffold = scaffold_eval(issues)
    assert sorted(p.path for p in scaffold.placeholders) == [
        "states.check_skill_bug_555.evaluate.prompt",
        "states.execute_bug_555.action",
    ]
    assert [d.code for d in placeholder_warnings(scaffold.text)] == ["LL060", "LL060"]


def test_variant_b_discover_walks_the_list_in_bash(tmp_path: Path) -> None:
    issues = [issue_of("P2-FEAT-919-sprint-dashboard.md"), issue_of("P1-BUG-204-export-crash.md")]
    action = yaml.safe_load(scaffold_eval(issues).text)["states"]["discover"]["action"]
    script = render_shell(action, {"run": {"dir": str(tmp_path)}})

    def discover() -> list[str]:
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=10)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert discover() == ["FEAT-919", "issue_feat_919"]
    assert discover() == ["FEAT-919", "issue_feat_919"]  # not processed yet: same item
    (tmp_path / "processed.txt").write_text("FEAT-919\n")
    assert discover() == ["BUG-204", "issue_bug_204"]
    (tmp_path / "processed.txt").write_text("FEAT-919\nBUG-204\n")
    assert discover() == ["none"]


def test_state_keys_stay_distinct() -> None:
    from engine.scaffold.eval_loops import state_keys

    assert state_keys(["FEAT-1", "feat.1", "9-X"]) == ["feat_1", "feat_1_2", "9_x"]


def test_duplicate_issues_collapse_to_variant_a() -> None:
    issue = issue_of("P2-FEAT-919-sprint-dashboard.md")
    assert scaffold_eval([issue, issue]).variant == "A"


# --- emission ------------------------------------------------------------------------------------

weird = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=80) | st.sampled_from(
    [
        "key: value # not a comment",
        "'single' \"double\" `back`",
        "${context.x} ${HOME} $${lit} {{ jinja }} {% block %}",
        "  leading spaces\nsecond line",
        "trailing spaces  \nnext",
        "tab\there\n\tindented",
        "line\u2028separator\u0085nel",
        "- a list?\n- [ ] box\n---\n...",
        "|\n>\n&anchor *alias !tag %",
        "ends with newline\n",
        "",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(weird)
def test_yaml_scalar_reads_back_exactly(text: str) -> None:
    document = f"outer:\n  key: {yaml_scalar(text, 4)}\n  after: 1\n"
    loaded = yaml.safe_load(document)
    assert loaded["outer"]["key"] == text.replace("${", "$${")
    assert loaded["outer"]["after"] == 1
    raw = yaml.safe_load(f"k: {yaml_scalar(text, 2, escape=False)}\n")
    assert raw["k"] == text
    assert yaml.safe_load(f"k: {yaml_quoted(text)}\n")["k"] == text


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(weird.filter(lambda s: s.strip() != ""), min_size=1, max_size=4), weird)
def test_any_issue_text_scaffolds_to_a_loadable_loop(criteria: list[str], use_case: str) -> None:
    body = "# FEAT-7: odd {title} ${x} #1\n\n## Use Case\n\n" + use_case + "\n\n"
    if "\x00" in "".join(criteria) + use_case:  # no loop can hold one: the issue is refused
        with pytest.raises(UsageError, match="contains a NUL character"):
            parse_issue(body, issue_id="FEAT-7")
            Issue("FEAT-7", "t", "feature", None, acceptance_criteria=tuple(criteria))
        return
    issue = parse_issue(body, issue_id="FEAT-7")
    issue = Issue(
        id=issue.id,
        title=issue.title,
        kind=issue.kind,
        path=None,
        use_case=issue.use_case,
        acceptance_criteria=tuple(criteria),
    )
    scaffold = scaffold_eval([issue])
    loop, _, problems = check_loop_text(scaffold.text)
    assert loop is not None, [p.render() for p in problems]
    prompt = rendered(scaffold.text, "states", "check_skill", "evaluate", "prompt")
    assert prompt == criteria_prompt(issue)[0]
    for number, criterion in enumerate(criteria, 1):
        assert f"({number}) {criterion}" in prompt


def test_comments_never_break_out_of_their_line() -> None:
    issue = Issue(id="FEAT-8", title="two\nlines: #x", kind="feature", path=None)
    text = scaffold_eval([issue]).text
    assert re.search(r"^# Eval harness for FEAT-8: two lines: #x$", text, re.MULTILINE)
    assert yaml.safe_load(text)["description"].startswith("Evaluate FEAT-8 (two\nlines: #x)")
