"""Every built-in loop, run to the end (the LLM ones against the loopback server): `explain`
says why it ended on one screen, its JSON agrees, and the HTML report passes the browser checks
(no console errors, one node per state, the highlighted path equal to the events). Loops that
run sub-loops are explained from their child run's directory too."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.load.resources import builtin_loops_dir
from tests.loopback_server import LoopbackServer
from tests.report_helpers import ARTIFACTS, check_report, open_browser
from tests.scaffold_helpers import Judge, ScriptedLlm, counter_script, ll_loop, run_loop, write
from tests.test_assess_and_fix import run_cycle
from tests.test_builtin_eval_loops import agent_eval, subloops  # noqa: F401  (fixture)
from tests.test_optimization_loops import (  # noqa: F401  (fixtures)
    GATE,
    REPAIRED,
    SCORER,
    apo_args,
    on_path,
    repo,
)

SCREEN_LINES = 24


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    yield from open_browser()


def fix_until_green(tmp_path: Path, llm: ScriptedLlm) -> tuple[str, list[str], str]:
    return "fix-until-green-demo", [], "reached the success terminal 'green'"


def fix_until_clean(tmp_path: Path, llm: ScriptedLlm) -> tuple[str, list[str], str]:
    counter_script(tmp_path / "check.sh", [(1, "a.py:1: E1 unused import"), (0, "ok")])
    llm.say("removed the import")
    return "fix-until-clean", ["--context", "check_cmd=bash check.sh"], "terminal 'clean'"


def agent_eval_improve(tmp_path: Path, llm: ScriptedLlm) -> tuple[str, list[str], str]:
    (args,) = agent_eval(tmp_path, ["0.1", "0.2", "0.3"], "--max-steps", "5")
    llm.say("a", "b")
    return "agent-eval-improve", args, "used all 5 steps without reaching a terminal"


def evaluation_quality(tmp_path: Path, llm: ScriptedLlm) -> tuple[str, list[str], str]:
    """A weak issue goes to the refine-issues sub-loop, and the run still ends below threshold."""
    write(tmp_path / ".issues" / "P2-BUG-7-crash.md", "# BUG-7: crash\n\nIt crashes.\n")
    write(tmp_path / ".issues" / "P2-FEAT-8-tags.md", "# FEAT-8: Tags\n\n## Use Case\n\nTag.\n")
    llm.say(
        "# BUG-7: crash\n\n## Steps to Reproduce\n\n1. Run it.\n\n## Acceptance Criteria\n",
        "# FEAT-8: Tags\n\n## Acceptance Criteria\n",
    )
    return "evaluation-quality", [], "reached the failure terminal 'below_threshold'"


def refine_issues(tmp_path: Path, llm: ScriptedLlm) -> tuple[str, list[str], str]:
    write(tmp_path / "BUG-1.md", "# BUG-1: crash\n")
    write(tmp_path / "todo.txt", "BUG-1.md\n")
    llm.say("# BUG-1: crash\n\n## Acceptance Criteria\n\n- it does not crash\n")
    args = ["--context", "worklist=todo.txt", "--context", "instructions=Add criteria."]
    return "refine-issues", args, "reached the success terminal"


def benchmark(tmp_path: Path, llm: ScriptedLlm) -> tuple[str, list[str], str]:
    counter_script(tmp_path / "s.sh", [(0, "0.25"), (0, "0.75")])
    args = ["--context", "scorer=bash s.sh", "--context", "repeats=2"]
    return "benchmark", args, "reached the success terminal 'scored'"


def apo_textgrad(tmp_path: Path, llm: ScriptedLlm) -> tuple[str, list[str], str]:
    write(tmp_path / "score.sh", SCORER)
    write(tmp_path / "prompt.txt", "Answer briefly.\n")
    llm.say("g1", "Be vague.", "g2", "Be terse.")
    return "apo-textgrad", apo_args("--context", "rounds=2"), "failure terminal 'no_improvement'"


SCENARIOS: dict[str, Callable[[Path, ScriptedLlm], tuple[str, list[str], str]]] = {
    "fix-until-green-demo": fix_until_green,
    "fix-until-clean": fix_until_clean,
    "agent-eval-improve": agent_eval_improve,
    "evaluation-quality": evaluation_quality,
    "refine-issues": refine_issues,
    "benchmark": benchmark,
    "apo-textgrad": apo_textgrad,
}
# Loops that need a project of their own are driven by the tests at the end of this file.
OWN_TESTS = (
    "assess-and-fix",
    "outer-loop-eval",
    "eval-driven-development",
    "harness-optimize",
    "loop-specialist-eval",
)


def test_every_builtin_loop_is_covered_here() -> None:
    covered = {*SCENARIOS, *OWN_TESTS}
    assert {p.stem for p in builtin_loops_dir().glob("*.yaml")} == covered


def explain_and_report(cwd: Path, run_id: str, loop: str, page: Any) -> str:
    """`explain` (text and JSON) and `report --html` of one run, checked; the text."""
    text = ll_loop("explain", run_id, cwd=cwd)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.rstrip("\n").splitlines()
    assert len(lines) <= SCREEN_LINES, text.stdout
    as_json = ll_loop("explain", run_id, "--format", "json", cwd=cwd)
    data = json.loads(as_json.stdout)
    assert lines[1] == f"why: {data['reason']}"
    out = ARTIFACTS / f"report-{loop}.html"
    ARTIFACTS.mkdir(exist_ok=True)
    made = ll_loop("report", run_id, "--html", "--out", str(out), cwd=cwd)
    assert made.returncode == 0, made.stderr
    check_report(page, out, builtin_loops_dir() / f"{loop}.yaml", cwd / ".loops/runs" / run_id)
    return text.stdout


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_builtin_loop_is_explained_and_reported(
    name: str, tmp_path: Path, loopback: LoopbackServer, page: Any
) -> None:
    loop, args, reason = SCENARIOS[name](tmp_path, ScriptedLlm(loopback))
    run = run_loop(loop, cwd=tmp_path, args=args)
    assert run.result.get("run_id"), run.stderr
    text = explain_and_report(tmp_path, run.result["run_id"], loop, page)
    assert reason in text.splitlines()[1]


def test_assess_and_fix_is_explained_with_what_still_fails(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: Any
) -> None:
    ran = run_cycle(loopback, tmp_path, monkeypatch, fixes_needed=99)
    assert ran.code == 1, ran.stderr
    text = explain_and_report(tmp_path, ran.json["run_id"], "assess-and-fix", page)
    assert "reached the failure terminal 'still_failing'" in text.splitlines()[1]


def test_outer_loop_eval_and_its_child_run_are_explained(
    subloops: Path,  # noqa: F811
    loopback: LoopbackServer,
    page: Any,
) -> None:
    report = "Structure: state 'work' has no evaluate block, so a failure ends the run."
    ScriptedLlm(loopback).say(report).judge(Judge("yes", evidence="state 'work' has no"))
    run = run_loop("outer-loop-eval", cwd=subloops, args=["--context", "target=tiny"])
    assert run.exit_code == 0, run.stderr
    text = explain_and_report(subloops, run.result["run_id"], "outer-loop-eval", page)
    assert "reached the success terminal 'done'" in text
    assert "judges:" in text and "state 'work' has no" in text


def test_eval_driven_development_and_its_child_run_are_explained(
    subloops: Path,  # noqa: F811
    loopback: LoopbackServer,
    page: Any,
) -> None:
    made = ll_loop("scaffold-eval", "--issues", "FEAT-919", cwd=subloops)
    assert made.returncode == 0, made.stderr
    said = "TRANSCRIPT: the P1 filter showed P2 issues too."
    wrong = Judge("no", evidence="the P1 filter showed P2 issues too.")
    (
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
    assert run.exit_code == 0, run.stderr
    run_id = run.result["run_id"]
    text = explain_and_report(subloops, run_id, "eval-driven-development", page)
    assert "reached the success terminal 'done'" in text
    assert re.search(
        r"sub-loop at step \d+ \(run_harness\): eval-harness-feat-919, reached the failure ", text
    )
    costs = json.loads(ll_loop("explain", run_id, "-f", "json", cwd=subloops).stdout)
    assert costs["calls_by_state"]["run_harness"] == 6  # 3 prompts and 3 judges in children
    assert abs(sum(costs["cost_by_state"].values()) - costs["cost_usd"]) < 1e-9
    child = ll_loop("explain", str(run.run_dir / "children" / "run_harness-1"), cwd=subloops)
    assert child.returncode == 0, child.stderr
    assert "eval-harness-feat-919" in child.stdout.splitlines()[0]
    assert child.stdout.splitlines()[1].startswith("why: reached the failure terminal 'failed'")
    assert "the P1 filter showed P2 issues too." in child.stdout  # the child's judge evidence


def test_harness_optimize_refusal_is_explained(
    repo: Path,  # noqa: F811
    loopback: LoopbackServer,
    page: Any,
) -> None:
    write(repo / ".loops" / "gate.yaml", GATE.format(action="exit 2"))
    run = run_loop("harness-optimize", cwd=repo, args=["--context", "target_file=.loops/gate.yaml"])
    text = explain_and_report(repo, run.result["run_id"], "harness-optimize", page)
    assert "reached the failure terminal 'broken'" in text.splitlines()[1]


def test_loop_specialist_eval_is_explained(
    on_path: Path,  # noqa: F811
    loopback: LoopbackServer,
    page: Any,
) -> None:
    ScriptedLlm(loopback).say(REPAIRED).judge(Judge("yes", evidence='"valid": true'))
    run = run_loop("loop-specialist-eval", cwd=on_path)
    assert run.exit_code == 0, run.stderr
    text = explain_and_report(on_path, run.result["run_id"], "loop-specialist-eval", page)
    assert "reached the success terminal 'done'" in text.splitlines()[1]
    assert '"valid": true' in text  # the judge's evidence
