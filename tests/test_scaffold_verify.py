"""scaffold-verify: criteria mode runs every criterion, adversarial mode demands three probes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from engine.load.issuefile import load_issue
from engine.model.errors import UsageError
from engine.scaffold import scaffold_verify
from engine.shell.interpolate import render_shell, render_text
from tests.scaffold_helpers import ISSUES, issue_of, lint_findings

WITH_CRITERIA = [p for p in sorted(ISSUES.rglob("*.md")) if load_issue(p).acceptance_criteria]


@pytest.mark.parametrize("path", WITH_CRITERIA, ids=lambda p: p.name)
def test_criteria_mode_one_state_per_criterion_none_short_circuits(path: Path) -> None:
    issue = load_issue(path)
    scaffold = scaffold_verify(issue)
    assert lint_findings(scaffold.text) == []
    data = yaml.safe_load(scaffold.text)
    states = data["states"]
    count = len(issue.acceptance_criteria)
    assert data["max_steps"] == count + 1
    for n, criterion in enumerate(issue.acceptance_criteria, 1):
        state = states[f"criterion_{n}"]
        following = f"criterion_{n + 1}" if n < count else "aggregate"
        # Every verdict, error included, moves on to the next criterion.
        assert state["route"] == {"_": following}
        assert state["capture"] == f"c{n}"
        prompt = render_text(state["evaluate"]["prompt"], {})
        assert f"({n}) {criterion}\n" in prompt
        assert "quote verbatim" in prompt
        assert criterion in render_text(state["action"], {})
    assert states["aggregate"]["capture"] == "aggregate"
    assert data["outputs"] == {"verdicts": "${captured.aggregate.output | default('')}"}
    assert states["aggregate"]["on_yes"] == "done"
    assert states["aggregate"]["on_no"] == "failed"
    assert states["failed"] == {
        "description": states["failed"]["description"],
        "terminal": True,
        "failure": True,
    }


def aggregate(verdicts: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run the generated aggregate action in bash with these captured verdicts."""
    issue = issue_of("P2-FEAT-919-sprint-dashboard.md")
    data = yaml.safe_load(scaffold_verify(issue).text)
    ns = {"captured": {f"c{n}": {"verdict": v} for n, v in enumerate(verdicts, 1)}}
    script = render_shell(data["states"]["aggregate"]["action"], ns)
    return subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=10
    )


def test_aggregate_passes_only_when_every_verdict_is_yes(tmp_path: Path) -> None:
    ok = aggregate(["yes", "yes", "yes", "yes"], tmp_path)
    assert ok.returncode == 0
    assert ok.stdout.splitlines()[-1] == "all 4 criteria met"
    bad = aggregate(["yes", "no", "partial", "error"], tmp_path)
    assert bad.returncode == 1
    assert bad.stdout.splitlines() == [
        "(1) yes",
        "(2) no",
        "(3) partial",
        "(4) error",
        "3 of 4 criteria not met",
    ]


def test_verify_needs_criteria() -> None:
    issue = issue_of("P2-FEAT-1001-saved-searches.md")
    with pytest.raises(UsageError) as caught:
        scaffold_verify(issue)
    assert "has no acceptance criteria" in caught.value.message
    assert "scaffold-eval" in caught.value.hint


@pytest.mark.parametrize("path", sorted(ISSUES.rglob("*.md")), ids=lambda p: p.name)
def test_adversarial_mode_three_probes_then_coverage_then_findings(path: Path) -> None:
    issue = load_issue(path)
    scaffold = scaffold_verify(issue, adversarial=True)
    assert scaffold.name.startswith(f"adversarial-{issue.id}-")
    assert lint_findings(scaffold.text) == []
    data = yaml.safe_load(scaffold.text)
    states = data["states"]
    assert data["initial"] == "probe_boundary"
    assert [states[p]["next"] for p in ("probe_boundary", "probe_hostile", "probe_failure")] == [
        "probe_hostile",
        "probe_failure",
        "judge_coverage",
    ]
    coverage = states["judge_coverage"]
    assert coverage["on_yes"] == "judge_findings"
    for verdict in ("no", "partial", "blocked", "cannot_judge"):
        assert coverage[f"on_{verdict}"] == "under_probed"
    assert states["under_probed"]["failure"] is True
    assert states["broken"]["failure"] is True
    assert "even if every attempt that was made passed" in coverage["evaluate"]["prompt"]
    assert "quote verbatim" in coverage["evaluate"]["prompt"]
    source = render_text(
        coverage["evaluate"]["source"],
        {"captured": {k: {"output": k.upper()} for k in ("boundary", "hostile", "failure")}},
    )
    assert source.split("\n\n") == [
        "## boundary values\nBOUNDARY",
        "## malformed or hostile input\nHOSTILE",
        "## failure modes\nFAILURE",
    ]


def test_bug_criteria_are_tried_with_the_reproduction_steps() -> None:
    issue = issue_of("P1-BUG-204-export-crash.md")
    state = yaml.safe_load(scaffold_verify(issue).text)["states"]["criterion_2"]
    action = render_text(state["action"], {})
    assert f"How the problem was reproduced:\n{issue.steps_to_reproduce}" in action
    prompt = render_text(state["evaluate"]["prompt"], {})
    assert "the reported problem still happening: The command prints `Traceback" in prompt


def test_an_error_the_criterion_asks_for_is_not_a_reason_for_no() -> None:
    # ENH-77 (3): "A broken settings.yaml is rejected with a message naming the line".
    issue = issue_of("P3-ENH-77-config-reload.md")
    state = yaml.safe_load(scaffold_verify(issue).text)["states"]["criterion_3"]
    prompt = render_text(state["evaluate"]["prompt"], {})
    assert "a stack trace, an error message or a silent no-op" in prompt
    assert "unless the criterion asks for that error" in prompt
    assert "anything criterion (3) rules out" in prompt
