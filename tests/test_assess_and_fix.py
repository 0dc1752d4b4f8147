"""The built-in `assess-and-fix` loop end to end: a fake agent CLI (a real process streaming
JSON events) does and fixes the work, a real test command and a three-reviewer `llm_review`
(exploring the workspace over tool-use turns against the loopback server) assess it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.load.resources import builtin_loops_dir
from tests.loopback_server import LoopbackServer, Reply, text_reply, tool_reply, tool_use_reply
from tests.run_helpers import ll_loop

AGENT = """\
import json, pathlib, sys
prompt = sys.stdin.read()
calls = pathlib.Path("agent-calls")
n = int(calls.read_text()) + 1 if calls.exists() else 1
calls.write_text(str(n))
fixed = "problems" in prompt and n > int(sys.argv[1])
pathlib.Path("app.txt").write_text("fixed\\n" if fixed else "broken\\n")
pathlib.Path("prompts.log").open("a").write(prompt + "\\n=====\\n")
events = [
    {"type": "assistant", "parent_tool_use_id": None, "message": {"content": [
        {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "app.txt"}}]}},
    {"type": "result", "result": "changed app.txt", "num_turns": 1, "total_cost_usd": 0.001},
]
print("\\n".join(json.dumps(e) for e in events))
"""


def reviewer(workspace: Path) -> Any:
    """Each reviewer reads app.txt (one tool-use turn), summarises, then scores what it saw."""

    def answer(request: dict[str, Any]) -> Reply:
        if request.get("tool_choice", {}).get("type") == "tool":
            good = (workspace / "app.txt").read_text().strip() == "fixed"
            value = 5 if good else 2
            scores = dict.fromkeys(
                ("correctness", "completeness", "code_quality", "edge_cases"), value
            )
            return tool_reply({**scores, "reason": f"app.txt is {'fixed' if good else 'broken'}"})(
                request
            )  # type: ignore[operator, no-any-return]
        turns = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if turns == 0:
            return tool_use_reply(("read_file", {"path": "app.txt"}))(request)  # type: ignore[operator, no-any-return]
        return text_reply("I read app.txt.")(request)  # type: ignore[operator, no-any-return]

    return answer


def run_cycle(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixes_needed: int
) -> Any:
    (tmp_path / "agent.py").write_text(AGENT)
    monkeypatch.setenv("LL_PROMPT_RUNNER", f"cmd:python3 agent.py {fixes_needed}")
    loopback.default = reviewer(tmp_path)
    return ll_loop(
        tmp_path,
        "run",
        "assess-and-fix",
        "--json",
        "--context",
        "task=Make app.txt say fixed",
        "--context",
        "test_cmd=grep -q fixed app.txt",
        timeout=120,
    )


def test_builtin_is_valid_and_lint_clean(tmp_path: Path) -> None:
    done = ll_loop(
        tmp_path, "validate", str(builtin_loops_dir() / "assess-and-fix.yaml"), "--strict"
    )
    assert done.code == 0, done.stdout + done.stderr


def test_a_failed_assessment_is_fixed_and_reassessed_to_a_pass(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = run_cycle(loopback, tmp_path, monkeypatch, fixes_needed=1)
    assert ran.code == 0, ran.stderr
    assert ran.json["final_state"] == "passed"
    assert [s for s, _ in ran.verdicts()] == ["work", "assess", "budget", "fix", "assess"]
    assert [v for s, v in ran.verdicts() if s == "assess"] == ["no", "yes"]
    prompts = (tmp_path / "prompts.log").read_text().split("=====")
    # the fix prompt names what failed, lowest-scoring first: the test (a bool) before the review
    fix = prompts[1]
    assert fix.index("- tests: failed") < fix.index("- review: scored 2")
    judged = [e for e in ran.events() if e["event"] == "judge"]
    assert {(e["judge"], e["passed"]) for e in judged[-2:]} == {("tests", True), ("review", True)}
    explored = [
        r.body for r in loopback.requests if r.body.get("tool_choice", {}).get("type") == "auto"
    ]
    assert len(explored) == 2 * 3 * 2  # two assessments x three reviewers x two turns
    assert ran.json["cost_usd"] > 0.002  # the agent's own cost counts


def test_fixes_that_never_work_end_in_a_report_naming_what_fails(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = run_cycle(loopback, tmp_path, monkeypatch, fixes_needed=99)
    assert ran.code == 1
    assert ran.json["final_state"] == "still_failing"
    states = [s for s, _ in ran.verdicts()]
    assert states.count("fix") == 2 and states[-2:] == ["budget", "report"]
    report = next(
        e for e in ran.events() if e["event"] == "action_complete" and e["state"] == "report"
    )
    assert report["output"].startswith("still failing after 2 fix attempt(s): tests, review")
    final = [e for e in ran.events() if e["event"] == "loop_complete"][-1]
    assert final["outputs"]["still_failing"] == ["tests", "review"]
