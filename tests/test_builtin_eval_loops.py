"""The built-in evaluation loops, each driven through the real CLI, real shell states and the
loopback Messages-API server; every test asserts the path the run took and its outcome."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine.load.issuefile import load_issue
from engine.load.resources import builtin_loops_dir
from tests.loopback_server import LoopbackServer, loopback  # noqa: F401  (fixture)
from tests.scaffold_helpers import (
    Judge,
    ScriptedLlm,
    counter_script,
    ll_loop,
    make_project,
    put_cli_on_path,
    request_text,
    run_loop,
    write,
)

EVAL_LOOPS = (
    "eval-driven-development",
    "agent-eval-improve",
    "benchmark",
    "evaluation-quality",
    "outer-loop-eval",
    "fix-until-clean",
    "refine-issues",
)


@pytest.mark.parametrize("name", EVAL_LOOPS)
def test_builtin_is_valid_and_lint_clean(name: str, tmp_path: Path) -> None:
    path = builtin_loops_dir() / f"{name}.yaml"
    done = ll_loop("validate", str(path), "--strict", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no problems" in done.stdout + done.stderr


# --- fix-until-clean -----------------------------------------------------------------------------


def test_fix_until_clean_fixes_then_passes(tmp_path: Path, loopback: LoopbackServer) -> None:  # noqa: F811
    counter_script(
        tmp_path / "check.sh", [(1, "a.py:1: E1 unused import"), (1, "a.py:9: E2"), (0, "ok")]
    )
    llm = ScriptedLlm(loopback).say("removed the import", "fixed E2")
    run = run_loop("fix-until-clean", cwd=tmp_path, args=["--context", "check_cmd=bash check.sh"])
    assert run.path == ("check", "fix", "recheck", "fix", "recheck", "clean")
    assert run.exit_code == 0
    assert "a.py:1: E1 unused import" in request_text(llm.prompted[0])
    assert "a.py:9: E2" in request_text(llm.prompted[1])


def test_fix_until_clean_gives_up_after_three_fixes(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    counter_script(tmp_path / "check.sh", [(1, "still broken")])
    llm = ScriptedLlm(loopback).say("try 1", "try 2", "try 3", "try 4")
    run = run_loop("fix-until-clean", cwd=tmp_path, args=["--context", "check_cmd=bash check.sh"])
    assert run.path == (
        "check", "fix", "recheck", "fix", "recheck", "fix", "recheck", "gave_up",
    )  # fmt: skip
    assert run.exit_code == 1
    assert len(llm.prompted) == 3  # every fix was checked; none was wasted


def test_fix_until_clean_broken_check_command(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    run = run_loop("fix-until-clean", cwd=tmp_path, args=["--context", "check_cmd=exit 2"])
    assert run.path == ("check", "broken")
    assert run.exit_code == 1


def test_fix_until_clean_requires_check_cmd(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    done = ll_loop("run", "fix-until-clean", cwd=tmp_path)
    assert done.returncode == 2
    assert "requires parameter 'check_cmd'" in done.stderr
    assert not (tmp_path / ".loops" / "runs").exists()  # refused before the first step


# --- agent-eval-improve --------------------------------------------------------------------------


def agent_eval(tmp_path: Path, scores: list[str], *extra: str) -> tuple[list[str], ...]:
    counter_script(tmp_path / "score.sh", [(0, f"task log\n{s}") for s in scores])
    write(tmp_path / "agent.yaml", "temperature: 1.0\n")
    return (["--context", "score_cmd=bash score.sh", "--context", "quality_target=0.85", *extra],)


def test_agent_eval_improve_reaches_the_target(tmp_path: Path, loopback: LoopbackServer) -> None:  # noqa: F811
    (args,) = agent_eval(tmp_path, ["0.50", "0.84"])
    llm = ScriptedLlm(loopback).say("```yaml\ntemperature: 0.2\n```")
    run = run_loop("agent-eval-improve", cwd=tmp_path, args=args)
    assert run.path == (
        "measure", "score_command", "score", "failures", "refine", "apply", "score_command",
        "score", "done",
    )  # fmt: skip
    assert run.exit_code == 0
    assert (tmp_path / "agent.yaml").read_text() == "temperature: 0.2\n"  # fences stripped
    artifacts = run.run_dir / "artifacts"
    assert (artifacts / "config.before-round-1").read_text() == "temperature: 1.0\n"
    assert (artifacts / "scores.txt").read_text().split() == ["0.50", "0.84"]
    prompt = request_text(llm.prompted[0])
    assert "scored 0.50" in prompt
    assert "temperature: 1.0" in prompt  # the current config is shown to the refiner


def test_agent_eval_improve_passing_the_target_is_success_not_a_stall(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    (args,) = agent_eval(tmp_path, ["0.50", "0.95", "0.95"])
    ScriptedLlm(loopback).say("temperature: 0.2", "temperature: 0.1")
    run = run_loop("agent-eval-improve", cwd=tmp_path, args=args)
    assert run.path[-2:] == ("score", "done")
    assert run.path.count("refine") == 1  # 0.95 against 0.85 ends the run at once
    assert (run.exit_code, run.result["outputs"]["score"]) == (0, "0.95")


def test_agent_eval_improve_reports_a_stall_as_its_own_terminal(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    (args,) = agent_eval(tmp_path, ["0.50", "0.60", "0.60"])
    ScriptedLlm(loopback).say("temperature: 0.5", "temperature: 0.4")
    run = run_loop("agent-eval-improve", cwd=tmp_path, args=args)
    assert run.path[-2:] == ("score", "stalled")
    assert run.path.count("refine") == 2
    assert run.result["final_state"] == "stalled"
    assert run.exit_code == 1


def test_agent_eval_improve_out_of_budget_is_inconclusive(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    (args,) = agent_eval(tmp_path, ["0.1", "0.2", "0.3"], "--max-steps", "7")
    ScriptedLlm(loopback).say("a", "b")
    run = run_loop("agent-eval-improve", cwd=tmp_path, args=args)
    assert run.result["terminated_by"] == "max_steps"
    assert run.exit_code == 3


def test_agent_eval_improve_non_numeric_score_is_broken(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    (args,) = agent_eval(tmp_path, ["all good, no number"])
    run = run_loop("agent-eval-improve", cwd=tmp_path, args=args)
    assert run.path == ("measure", "score_command", "score", "broken")
    assert run.exit_code == 1
    # the line as the scorer printed it: its spaces were taken out ("allgood,nonumber")
    assert (
        "output is not a number: 'all good, no number'"
        in (run.run_dir / "events.jsonl").read_text()
    )


def test_agent_eval_improve_llm_graded_path_is_the_default(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    write(tmp_path / "agent.yaml", "style: terse\n")
    write(tmp_path / "evals" / "t1.md", "Add 2 and 3. Expected: 5")
    write(tmp_path / "evals" / "t2.md", "Name the capital of France. Expected: Paris")
    llm = ScriptedLlm(loopback).say(
        "### t1.md\n5\n### t2.md\nLyon",
        "t1.md: PASS\nt2.md: FAIL - answered 'Lyon'\n0.5",
        "style: terse\ncheck facts before answering\n",
        "### t1.md\n5\n### t2.md\nParis",
        "t1.md: PASS\nt2.md: PASS\n1.0",
    )
    run = run_loop("agent-eval-improve", cwd=tmp_path)
    assert run.path == (
        "measure", "read_suite", "run_tasks", "score_results", "take_grade", "score",
        "failures", "refine", "apply", "read_suite", "run_tasks", "score_results",
        "take_grade", "score", "done",
    )  # fmt: skip
    assert run.exit_code == 0
    agent_prompt = request_text(llm.prompted[0])
    assert "style: terse" in agent_prompt and "Name the capital of France" in agent_prompt
    grading_prompt = request_text(llm.prompted[1])
    assert "Lyon" in grading_prompt and "Expected: Paris" in grading_prompt
    assert "t2.md: FAIL - answered 'Lyon'" in request_text(llm.prompted[2])  # refiner sees why
    assert "check facts before answering" in request_text(llm.prompted[3])  # new config used
    assert (run.run_dir / "artifacts" / "scores.txt").read_text().split() == ["0.5", "1.0"]


def test_agent_eval_improve_use_benchmark_scores_through_the_benchmark_subloop(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    counter_script(tmp_path / "bench.sh", [(0, "3 passed, 3 failed\n0.5"), (0, "ok\n0.9")])
    write(tmp_path / "agent.yaml", "temperature: 1.0\n")
    ScriptedLlm(loopback).say("temperature: 0.3")
    run = run_loop(
        "agent-eval-improve",
        cwd=tmp_path,
        args=["--context", "use_benchmark=true", "--context", "benchmark_scorer=bash bench.sh"],
    )
    assert run.path == (
        "measure", "benchmark", "take_benchmark", "score", "failures", "refine", "apply",
        "benchmark", "take_benchmark", "score", "done",
    )  # fmt: skip
    assert run.exit_code == 0
    assert (run.run_dir / "artifacts" / "scores.txt").read_text().split() == ["0.5", "0.9"]
    log = (run.run_dir / "artifacts" / "score.log").read_text()
    assert "ok" in log  # the benchmark's own log reaches the refiner


def test_agent_eval_improve_use_benchmark_needs_a_scorer(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    run = run_loop("agent-eval-improve", cwd=tmp_path, args=["--context", "use_benchmark=true"])
    assert run.path == ("measure", "broken")
    assert "benchmark_scorer is empty" in (run.run_dir / "events.jsonl").read_text()


def test_benchmark_returns_the_mean_of_its_repeats(tmp_path: Path) -> None:
    counter_script(tmp_path / "s.sh", [(0, "0.25"), (0, "0.75")])
    run = run_loop(
        "benchmark",
        cwd=tmp_path,
        args=["--context", "scorer=bash s.sh", "--context", "repeats=2"],
    )
    assert (run.path, run.exit_code) == (("run", "scored"), 0)
    assert run.result["outputs"]["score"] == "0.5"
    broken = run_loop("benchmark", cwd=tmp_path, args=["--context", "scorer=echo no score here"])
    assert (broken.path, broken.exit_code) == (("run", "not_a_number"), 1)
    said = (broken.run_dir / "events.jsonl").read_text()
    assert "the scorer's last line is not a number: no score here" in said
    failing = run_loop("benchmark", cwd=tmp_path, args=["--context", "scorer=exit 4"])
    assert (failing.path, failing.exit_code) == (("run", "scorer_failed"), 1)


# --- evaluation-quality --------------------------------------------------------------------------

HEALTH_STEPS = ("measure_tests", "measure_lint", "measure_issues", "measure_backlog", "score")


def quality_report(project: Path) -> str:
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    return (project / ".loops" / f"quality-report-{today}.md").read_text()


def test_evaluation_quality_scores_three_dimensions_with_a_trend(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    project = make_project(tmp_path)
    write(project / ".loops" / "quality-report-2026-01-01.md", "# old\n\nOverall: 50 (x)\n")
    run = run_loop(
        "evaluation-quality",
        cwd=project,
        args=[
            "--context", "test_cmd=echo '3 passed, 1 failed in 0.1s'; exit 1",
            "--context", "lint_cmd=printf 'a.py:1: E1\\nb.py:2: E2\\n'; exit 1",
        ],
    )  # fmt: skip
    assert run.path == (*HEALTH_STEPS, "report", "done")
    assert run.exit_code == 0
    report = quality_report(project)
    # 7 fixture issues: BUG-555 has neither section, FEAT-1001 lacks criteria -> 550/7.
    assert "| issue quality | 78 | 70 | 40 |" in report
    assert "| code health | 86 | 80 | 40 |" in report  # mean of tests 75 and lint 96
    # BUG-555 and FEAT-88 have no priority; every file is fresh -> 600/7.
    assert "| backlog health | 85 | 75 | 20 |" in report
    assert "Overall: 83" in report  # (40*78 + 40*86 + 20*85) / 100, rounded
    assert "Trend: +33 since quality-report-2026-01-01.md (was 50)" in report
    assert "Worst dimension: none" in report and "Remediation: none" in report
    assert "BUG-555-bare.md: no acceptance criteria, expected behaviour" in report
    assert "FEAT-88-api-keys.md: no priority" in report
    assert run.result["outputs"]["route"] == "none"


def test_evaluation_quality_sends_weak_code_health_to_fix_until_clean(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    project = make_project(tmp_path)
    counter_script(project / "check.sh", [(1, "0 passed, 2 failed"), (1, "1 failed"), (0, "ok")])
    llm = ScriptedLlm(loopback).say("fixed the failing test")
    run = run_loop("evaluation-quality", cwd=project, args=["--context", "test_cmd=bash check.sh"])
    assert run.path == (*HEALTH_STEPS, "remediate_code_health", "report", "below_threshold")
    assert run.exit_code == 1
    assert "1 failed" in request_text(llm.prompted[0])  # fix-until-clean ran the test command
    report = quality_report(project)
    assert "| code health | 0 | 80 | 40 |" in report
    assert "Worst dimension: code health" in report
    assert "Remediation: clean" in report


def test_evaluation_quality_sends_weak_issue_quality_to_refine_issues(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    bare = write(tmp_path / ".issues" / "P2-BUG-7-crash.md", "# BUG-7: crash\n\nIt crashes.\n")
    write(tmp_path / ".issues" / "P2-FEAT-8-tags.md", "# FEAT-8: Tags\n\n## Use Case\n\nTag.\n")
    rewritten = "# BUG-7: crash\n\n## Steps to Reproduce\n\n1. Run it.\n\n## Acceptance Criteria\n"
    measured_only = run_loop(
        "evaluation-quality", cwd=tmp_path, args=["--context", "remediate=false"]
    )
    assert measured_only.path == (*HEALTH_STEPS, "report", "below_threshold")
    assert bare.read_text() == "# BUG-7: crash\n\nIt crashes.\n"  # only measured
    llm = ScriptedLlm(loopback).say(rewritten, "# FEAT-8: Tags\n\n## Acceptance Criteria\n")
    run = run_loop("evaluation-quality", cwd=tmp_path)
    assert run.path == (*HEALTH_STEPS, "remediate_issue_quality", "report", "below_threshold")
    assert bare.read_text() == rewritten  # the remediation loop rewrote the file
    assert "It crashes." in request_text(llm.prompted[0])
    assert "Acceptance Criteria" in request_text(llm.prompted[0])  # the instruction
    assert "| issue quality | 25 | 70 | 40 |" in quality_report(tmp_path)
    # The next check-up measures the remediated issues: 100 and 50 -> 75, above 70.
    after = run_loop("evaluation-quality", cwd=tmp_path)
    assert after.path == (*HEALTH_STEPS, "report", "done")
    assert "| issue quality | 75 | 70 | 40 |" in quality_report(tmp_path)


def test_evaluation_quality_backlog_health_counts_stale_and_unprioritised_issues(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    body = "\n## Expected Behavior\n\nx\n\n## Acceptance Criteria\n\n- y\n"
    old = write(tmp_path / ".issues" / "P1-BUG-1-old.md", "# BUG-1: old\n" + body)
    write(tmp_path / ".issues" / "BUG-2-unranked.md", "# BUG-2: unranked\n" + body)
    write(tmp_path / ".issues" / "BUG-3-ranked.md", "---\npriority: P2\n---\n# BUG-3\n" + body)
    year_ago = datetime.now(UTC).timestamp() - 365 * 86400
    os.utime(old, (year_ago, year_ago))
    run = run_loop("evaluation-quality", cwd=tmp_path, args=["--context", "remediate=false"])
    assert run.path == (*HEALTH_STEPS, "report", "below_threshold")
    report = quality_report(tmp_path)
    assert "| backlog health | 66 | 75 | 20 |" in report  # (50 + 50 + 100) / 3
    assert "P1-BUG-1-old.md: unchanged for 90 days" in report
    assert "BUG-2-unranked.md: no priority" in report
    assert "Worst dimension: backlog health" in report


def test_evaluation_quality_with_nothing_to_measure(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    run = run_loop("evaluation-quality", cwd=tmp_path)
    assert run.path == (*HEALTH_STEPS, "report", "nothing_measured")
    assert run.exit_code == 1
    report = quality_report(tmp_path)
    assert "Overall: n/a" in report
    assert "Trend: first report" in report


# --- loops that run other loops ------------------------------------------------------------------

TINY = """\
name: tiny
initial: work
scope: [".loops/tiny"]
states:
  work:
    action: echo working
    next: finished
  finished:
    terminal: true
"""


@pytest.fixture
def subloops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project where `ll-loop` is this checkout; fails (never skips) when `run` cannot run
    sub-loops."""
    monkeypatch.setenv("PATH", put_cli_on_path(tmp_path / "bin"))
    project = make_project(tmp_path / "project")
    write(project / ".loops" / "tiny.yaml", TINY)
    probe = write(
        project / "probe.yaml",
        "name: probe\ninitial: child\nscope: ['.loops/probe']\nstates:\n"
        "  child:\n    loop: tiny\n    on_yes: ok\n    on_no: ok\n  ok:\n    terminal: true\n",
    )
    result = run_loop(str(probe), cwd=project)
    if "sub-loops are not available" in result.stderr + str(result.result.get("error")):
        pytest.fail("ll-loop run did not run the sub-loop (engine.runtime.subloop not wired)")
    return project


def test_outer_loop_eval_validates_runs_and_reviews(
    subloops: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    report = "Structure: state 'work' has no evaluate block, so a failure ends the run."
    llm = ScriptedLlm(loopback).say(report).judge(Judge("yes", evidence="state 'work' has no"))
    run = run_loop("outer-loop-eval", cwd=subloops, args=["--context", "target=tiny"])
    assert run.path == ("validate", "inspect", "run_target", "analyze", "save_report", "done")
    assert run.exit_code == 0
    assert (run.run_dir / "artifacts" / "report.md").read_text().strip() == report
    prompt = request_text(llm.prompted[0])
    assert 'ended in terminal "finished" with outcome\nsuccess' in prompt
    assert '"valid": true' in prompt


ECHOER = """\
name: echoer
initial: check
scope: [".loops/echoer"]
states:
  check:
    action: test "${context.input | default('')}" = hello
    on_yes: heard
    on_no: deaf
  heard:
    terminal: true
  deaf:
    terminal: true
    failure: true
"""


def test_outer_loop_eval_passes_loop_input_to_the_target(
    subloops: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    write(subloops / ".loops" / "echoer.yaml", ECHOER)
    report = "Execution: state 'check' reached terminal heard."
    llm = ScriptedLlm(loopback).say(report).judge(Judge("yes", evidence="state 'check'"))
    run = run_loop(
        "outer-loop-eval",
        cwd=subloops,
        args=["--context", "target=echoer", "--context", "loop_input=hello"],
    )
    assert run.path == (
        "validate", "inspect", "run_target_with_input", "analyze", "save_report", "done",
    )  # fmt: skip
    assert 'ended in terminal "heard"' in request_text(llm.prompted[0])
    plain = run_loop("outer-loop-eval", cwd=subloops, args=["--context", "target=echoer"])
    assert plain.path[:3] == ("validate", "inspect", "run_target")


def test_outer_loop_eval_rejects_a_vacuous_report(
    subloops: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    empty = "Structure: None identified. Execution: None identified."
    ScriptedLlm(loopback).say(empty, empty).judge(
        Judge("no", evidence="None identified"), Judge("no", evidence="None identified")
    )
    run = run_loop("outer-loop-eval", cwd=subloops, args=["--context", "target=tiny"])
    assert run.path[-4:] == ("run_target", "analyze", "analyze", "vacuous_report")
    assert run.exit_code == 1


def test_outer_loop_eval_invalid_and_missing_targets(
    subloops: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    write(subloops / ".loops" / "bad.yaml", "name: bad\ninitial: nowhere\nstates:\n  a:\n"
          "    terminal: true\n")  # fmt: skip
    invalid = run_loop("outer-loop-eval", cwd=subloops, args=["--context", "target=bad"])
    assert invalid.path == ("validate", "invalid_loop")
    missing = run_loop("outer-loop-eval", cwd=subloops, args=["--context", "target=nope"])
    assert missing.path == ("validate", "not_found")
    assert (invalid.exit_code, missing.exit_code) == (1, 1)


def test_eval_driven_development_files_failures_and_refines_until_the_harness_passes(
    subloops: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    made = ll_loop("scaffold-eval", "--issues", "FEAT-919", cwd=subloops)
    assert made.returncode == 0, made.stderr
    said = "TRANSCRIPT: the P1 filter showed P2 issues too."
    wrong = Judge("no", evidence="the P1 filter showed P2 issues too.")
    # The harness itself re-executes once after a NO, so one failing harness run is two
    # executes and two judgements, ending in its `failed` terminal.
    llm = (
        ScriptedLlm(loopback)
        .say("implemented the dashboard", said, said)
        .say("fixed the filter", "TRANSCRIPT: the P1 filter shows only P1 issues")
        .judge(wrong, wrong, "yes")
    )
    run = run_loop(
        "eval-driven-development",
        cwd=subloops,
        args=["--context", "harness_name=eval-harness-feat-919"],
    )
    assert run.path == (
        "gate", "implement", "run_harness", "file_failure", "refine", "run_harness", "done",
    )  # fmt: skip
    assert run.exit_code == 0
    filed = sorted((subloops / ".issues" / "bugs").glob("P2-BUG-*-eval-harness-feat-919.md"))
    assert [p.name for p in filed] == ["P2-BUG-556-eval-harness-feat-919.md"]  # after BUG-555
    issue = load_issue(filed[0])
    assert (issue.id, issue.kind) == ("BUG-556", "bug")
    assert issue.acceptance_criteria == ("`ll-loop run eval-harness-feat-919` exits 0.",)
    assert "Evidence: the P1 filter showed P2 issues too." in issue.actual_behavior
    assert "Verdict: no" in issue.actual_behavior
    refine = request_text(llm.prompted[3])
    assert 'ended in terminal\n"failed"' in refine or 'terminal "failed"' in refine
    assert "P2-BUG-556-eval-harness-feat-919.md" in refine
    assert "Its evidence: the P1 filter showed P2 issues too." in refine


def test_eval_driven_development_files_a_repeated_failure_once(
    subloops: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    made = ll_loop("scaffold-eval", "--issues", "FEAT-919", cwd=subloops)
    assert made.returncode == 0, made.stderr
    said = "TRANSCRIPT: the P1 filter showed P2 issues too."
    wrong = Judge("no", evidence="the P1 filter showed P2 issues too.")
    ScriptedLlm(loopback).say(
        "implemented", said, said, "fix 1", said, said, "fix 2", said, said, "fix 3",
        "TRANSCRIPT: the P1 filter shows only P1 issues",
    ).judge(*[wrong] * 6, "yes")  # fmt: skip
    run = run_loop(
        "eval-driven-development",
        cwd=subloops,
        args=["--context", "harness_name=eval-harness-feat-919"],
    )
    assert run.path.count("file_failure") == 3
    assert run.path[-2:] == ("run_harness", "done")
    filed = sorted((subloops / ".issues" / "bugs").glob("P2-BUG-*-eval-harness-feat-919.md"))
    assert [p.name for p in filed] == ["P2-BUG-556-eval-harness-feat-919.md"]  # one bug, not 3
    text = filed[0].read_text()
    assert "failure: eval-harness-feat-919 ended failed (verdict no)" in text
    assert text.count("## Seen again: run ") == 2
    # Each round of this one run has its own heading (they read as one run seen twice before).
    seen = re.findall(r"^## Seen again: run (.+)$", text, flags=re.MULTILINE)
    assert len(set(seen)) == 2 and all(f"{run.result['run_id']}, step " in s for s in seen), seen
    # A closed bug (moved to completed/) is not reused: the next failure is filed anew.
    completed = subloops / ".issues" / "completed"
    completed.mkdir()
    filed[0].rename(completed / filed[0].name)
    ScriptedLlm(loopback).say("implemented", said, said, "fix", "TRANSCRIPT: fine").judge(
        wrong, wrong, "yes"
    )
    again = run_loop(
        "eval-driven-development",
        cwd=subloops,
        args=["--context", "harness_name=eval-harness-feat-919"],
    )
    assert again.exit_code == 0
    new = sorted((subloops / ".issues" / "bugs").glob("P2-BUG-*.md"))
    assert [p.name for p in new] == ["P2-BUG-557-eval-harness-feat-919.md"]


def test_eval_driven_development_gives_up_after_three_measured_refinements(
    subloops: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    """The retry limit sat on run_harness, so it struck only after a fourth refinement: an agent
    changed the code once more and the run ended gave_up without measuring that change."""
    made = ll_loop("scaffold-eval", "--issues", "FEAT-919", cwd=subloops)
    assert made.returncode == 0, made.stderr
    said = "TRANSCRIPT: the P1 filter showed P2 issues too."
    wrong = Judge("no", evidence="the P1 filter showed P2 issues too.")
    llm = ScriptedLlm(loopback).say(
        "implemented", said, said, "fix 1", said, said, "fix 2", said, said, "fix 3", said, said,
    ).judge(*[wrong] * 8)  # fmt: skip
    run = run_loop(
        "eval-driven-development",
        cwd=subloops,
        args=["--context", "harness_name=eval-harness-feat-919"],
    )
    assert run.path == (
        "gate", "implement",
        "run_harness", "file_failure", "refine",
        "run_harness", "file_failure", "refine",
        "run_harness", "file_failure", "refine",
        "run_harness", "file_failure", "gave_up",
    )  # fmt: skip
    assert run.exit_code == 1
    assert len(llm.prompted) == 12  # implement, 3 refinements, 4 x 2 harness executes: no more
    # the last failure is recorded on the bug all the same
    (filed,) = (subloops / ".issues" / "bugs").glob("P2-BUG-*-eval-harness-feat-919.md")
    assert filed.read_text().count("## Seen again: run ") == 3


@pytest.mark.parametrize(
    ("scores", "after_gate", "code"),
    [
        ("readiness: 60\noutcome: 95", ("not_ready",), 1),
        ("readiness: 90\noutcome: 75", ("implement", "run_harness", "done"), 0),
    ],
)
def test_eval_driven_development_confidence_gate(
    subloops: Path,
    loopback: LoopbackServer,  # noqa: F811
    scores: str,
    after_gate: tuple[str, ...],
    code: int,
) -> None:
    made = ll_loop("scaffold-eval", "--issues", "FEAT-919", cwd=subloops)
    assert made.returncode == 0, made.stderr
    # A bug an earlier run filed mentions the ID; the gate read it as the issue measured.
    filed = subloops / ".issues" / "bugs" / "P2-BUG-302-eval-harness-feat-919.md"
    filed.write_text("# BUG-302: eval harness eval-harness-feat-919 does not pass\n")
    llm = ScriptedLlm(loopback).say(f"Clear criteria.\n{scores}", "implemented", "TRANSCRIPT: ok")
    llm.judge("yes")
    run = run_loop(
        "eval-driven-development",
        cwd=subloops,
        args=[
            "--context", "harness_name=eval-harness-feat-919",
            "--context", "readiness_threshold=80", "--context", "outcome_threshold=70",
        ],
    )  # fmt: skip
    assert run.path == ("gate", "confidence_check", "judge_confidence", *after_gate)
    assert run.exit_code == code
    # The issue the harness was generated from is what the LLM assessed.
    assert "A dashboard page that shows the current sprint" in request_text(llm.prompted[0])


def test_eval_driven_development_requires_a_harness_name(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    done = ll_loop("run", "eval-driven-development", cwd=tmp_path)
    assert done.returncode == 2
    assert "requires parameter 'harness_name'" in done.stderr
    assert not (tmp_path / ".loops" / "runs").exists()  # refused before the first step
