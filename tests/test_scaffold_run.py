"""Scaffolded loops run end to end: the real CLI, real shell states, the real anthropic SDK
talking to the loopback Messages-API server. Each test asserts the path the run took."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.loopback_server import LoopbackServer, loopback  # noqa: F401  (fixture)
from tests.scaffold_helpers import (
    ISSUES,
    Judge,
    ScriptedLlm,
    ll_loop,
    make_project,
    request_text,
    run_loop,
)

SAW = "TRANSCRIPT: I opened the dashboard, filtered to P1 and reassigned FEAT-1 to bob."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def scaffold(project: Path, *args: str) -> dict[str, object]:
    done = ll_loop(*args, "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_variant_a_passes_on_a_yes_backed_by_a_real_quote(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    llm = ScriptedLlm(loopback).say(SAW).judge("yes")
    made = scaffold(project, "scaffold-eval", "--issues", "FEAT-919")
    run = run_loop(str(made["path"]), cwd=project)
    assert run.exit_code == 0, run.stderr
    assert run.path == ("execute", "check_skill", "done")
    assert run.result["outcome"] == "success"
    judge_request = request_text(llm.judged[0])
    assert SAW in judge_request  # the judge saw the transcript...
    assert "(3) Reassignment persists after a page refresh." in judge_request  # ...and criteria
    assert "quote verbatim" in judge_request
    # The executor got a user instruction, not the criteria.
    assert "Reassignment persists" not in request_text(llm.prompted[0])


def test_variant_a_yes_with_invented_evidence_is_not_a_pass(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    ScriptedLlm(loopback).say(SAW, SAW).judge(
        Judge("yes", evidence="the dashboard worked perfectly"), "yes"
    )
    made = scaffold(project, "scaffold-eval", "--issues", "FEAT-919")
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path == ("execute", "check_skill", "execute", "check_skill", "done")
    assert run.exit_code == 0


def test_variant_a_second_no_is_a_failure_with_the_reason_in_its_outputs(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    ScriptedLlm(loopback).say(SAW, SAW, SAW).judge(
        "no", Judge("partial", evidence="filtered to P1")
    )
    made = scaffold(project, "scaffold-eval", "--issues", "FEAT-919")
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path == ("execute", "check_skill", "execute", "check_skill", "failed")
    assert run.result["terminated_by"] == "terminal"
    assert run.exit_code == 1


def test_variant_a_budget_is_a_backstop_not_a_pass(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    ScriptedLlm(loopback).say(SAW, SAW).judge("no")
    made = scaffold(project, "scaffold-eval", "--issues", "FEAT-919")
    run = run_loop(str(made["path"]), cwd=project, args=["--max-steps", "3"])
    assert run.path[:3] == ("execute", "check_skill", "execute")
    assert run.result["terminated_by"] == "max_steps"
    assert run.exit_code == 3


def test_variant_a_with_placeholders_runs_but_cannot_pass(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    """docs/evaluation.md: an unfilled condition cannot be judged, "so such a run cannot pass".
    Only the prompt said so: a judge that answered YES anyway passed the harness (exit 0). The
    judge now answers cannot_judge itself, without a model call, while a marker is left."""
    llm = ScriptedLlm(loopback).say(SAW, SAW).judge("yes", "yes")
    made = scaffold(project, "scaffold-eval", "--issues", "BUG-555")
    assert len(made["placeholders"]) == 2  # type: ignore[arg-type]
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path == ("execute", "check_skill", "execute", "check_skill", "failed")
    assert run.exit_code == 1
    assert llm.judged == []  # the model was never asked
    assert run.result["outputs"]["verdict"] == "cannot_judge"
    assert "<FILL: " in run.result["outputs"]["reason"]
    assert "<FILL:" in request_text(llm.prompted[0])  # the execute prompt still runs as written


def test_variant_b_walks_the_work_list_and_reports_each_issue(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    llm = ScriptedLlm(loopback).say(*[SAW] * 5).judge("yes", "no", "no", "no", "yes")
    made = scaffold(project, "scaffold-eval", "--issues", "FEAT-919,BUG-204,ENH-77")
    assert made["variant"] == "B"
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path == (
        "discover", "execute_feat_919", "check_skill_feat_919", "advance",
        "discover", "execute_bug_204", "check_skill_bug_204", "execute_bug_204",
        "check_skill_bug_204", "execute_bug_204", "check_skill_bug_204", "record_failure",
        "discover", "execute_enh_77", "check_skill_enh_77", "advance",
        "discover", "report", "failed",
    )  # fmt: skip
    assert run.exit_code == 1
    artifacts = run.run_dir / "artifacts"
    assert (artifacts / "results.txt").read_text().splitlines() == [
        "FEAT-919 pass",
        "BUG-204 fail",
        "ENH-77 pass",
    ]
    # Each execute prompt belonged to the issue being processed.
    prompts = [request_text(r) for r in llm.prompted]
    assert "(FEAT-919)" in prompts[0]
    assert all("Follow these steps exactly" in p for p in prompts[1:4])
    assert "(ENH-77)" in prompts[4]
    assert "${context.secret}" in prompts[4]  # issue text arrives verbatim, never interpolated
    assert "(3) The command never prints a Python traceback." in request_text(llm.judged[1])


def test_variant_b_all_pass_is_done(project: Path, loopback: LoopbackServer) -> None:  # noqa: F811
    ScriptedLlm(loopback).say(SAW, SAW).judge("yes", "yes")
    made = scaffold(project, "scaffold-eval", "--issues", "FEAT-31,FEAT-88")
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path[-2:] == ("report", "done")
    assert run.exit_code == 0


def test_variant_b_judges_issues_whose_ids_read_alike(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    """`FEAT 7` and `FEAT-7` shared the work-list token FEAT-7: the second issue was marked
    processed with the first, never judged, and the report said 1 of 1 passed (exit 0)."""
    for name, issue_id in (("space.md", "FEAT 7"), ("dash.md", "FEAT-7")):
        text = f"---\nid: {issue_id}\n---\n# {name}\n\n## Use Case\n\nuse it\n"
        (project / ".issues" / name).write_text(text)
    llm = ScriptedLlm(loopback).say(SAW, SAW).judge("yes", "yes")
    made = scaffold(project, "scaffold-eval", "--issues", ".issues/space.md,.issues/dash.md")
    run = run_loop(str(made["path"]), cwd=project)
    assert run.exit_code == 0, run.stderr
    assert len(llm.judged) == 2  # both issues were judged
    results = (run.run_dir / "artifacts" / "results.txt").read_text().splitlines()
    assert results == ["FEAT-7 pass", "FEAT-7-2 pass"]


def test_verify_runs_every_criterion_then_fails_on_one_no(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    llm = ScriptedLlm(loopback).say(*[SAW] * 4).judge("yes", "no", "yes", "yes")
    made = scaffold(project, "scaffold-verify", "FEAT-919")
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path == (
        "criterion_1", "criterion_2", "criterion_3", "criterion_4", "aggregate", "failed",
    )  # fmt: skip
    assert run.exit_code == 1
    assert len(llm.judged) == 4  # no short-circuit after the NO on criterion 2
    assert "(2) Filtering to P1 shows only P1 issues" in request_text(llm.judged[1])


def test_verify_all_yes_is_done(project: Path, loopback: LoopbackServer) -> None:  # noqa: F811
    ScriptedLlm(loopback).say(*[SAW] * 3).judge("yes", "yes", "yes")
    made = scaffold(project, "scaffold-verify", "BUG-204")
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path[-2:] == ("aggregate", "done")
    assert run.exit_code == 0


def test_adversarial_fails_when_probing_was_not_genuine_even_if_nothing_broke(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    llm = (
        ScriptedLlm(loopback)
        .say(
            "REPORT: tried '' and 10000 chars; output: error: empty name",
            "NOT ATTEMPTED: no idea how",
            "REPORT: deleted settings.yaml; output: error: settings.yaml not found",
        )
        .judge("no", "yes")
    )
    made = scaffold(project, "scaffold-verify", "ENH-77", "--adversarial")
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path == (
        "probe_boundary", "probe_hostile", "probe_failure", "judge_coverage", "under_probed",
    )  # fmt: skip
    assert run.exit_code == 1
    assert len(llm.judged) == 1  # findings were never judged
    assert "NOT ATTEMPTED: no idea how" in request_text(llm.judged[0])


def test_adversarial_done_when_all_three_classes_attempted_and_survived(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    ScriptedLlm(loopback).say("REPORT: a", "REPORT: b", "REPORT: c").judge("yes", "yes")
    made = scaffold(project, "scaffold-verify", "ENH-77", "--adversarial")
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path[-3:] == ("judge_coverage", "judge_findings", "done")
    assert run.exit_code == 0


@pytest.mark.parametrize("path", sorted(ISSUES.rglob("*.md")), ids=lambda p: p.name)
def test_every_fixture_validates_and_runs_to_a_verdict(
    path: Path,
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    ScriptedLlm(loopback).say(SAW, SAW).judge("yes")
    issue_path = str(path.relative_to(ISSUES.parent).as_posix()).replace("issues/", ".issues/", 1)
    made = scaffold(project, "scaffold-eval", "--issues", issue_path)
    checked = ll_loop("validate", str(made["path"]), "--format", "json", cwd=project)
    report = json.loads(checked.stdout)
    assert checked.returncode == 0, checked.stdout
    assert report["loops"][0]["valid"] is True
    assert [d for d in report["loops"][0]["diagnostics"] if d["severity"] == "error"] == []
    run = run_loop(str(made["path"]), cwd=project)
    assert run.result["terminated_by"] == "terminal", run.stderr
    if made["placeholders"]:  # a condition left to fill cannot be judged: no pass
        assert run.path == ("execute", "check_skill", "execute", "check_skill", "failed")
    else:
        assert run.path == ("execute", "check_skill", "done")
