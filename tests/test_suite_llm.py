"""A suite of the agent_eval seed's shape, end to end from the CLI: a dataset with annotations,
an agent CLI subject streaming JSON events in its own workspace, a before_each hook, outputs and
traces, judges of every kind (builtin, check, prompt score and bool, llm_rubric, prompt_file,
module + function, llm_review, test, file_exists, metric, llm_structured), samples, the judge
model, a pairwise comparison with a baseline subject, thresholds of all three gates — the model
calls answered by the loopback Messages server through the real SDK."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from tests.loopback_server import (
    LoopbackServer,
    Reply,
    forced_tool_name,
    text_reply,
    tool_reply,
)
from tests.suite_helpers import by_judge, dataset, db_rows, suite, suite_json, write

AGENT = """\
import json, pathlib, sys
prompt = sys.stdin.read()
task = pathlib.Path("input.yaml").read_text()
pathlib.Path("answer.md").write_text("subject-answer: " + prompt.strip() + "\\n")
events = [
    {"type": "system", "subtype": "init", "session_id": "s", "tools": ["Write"]},
    {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Writing the answer."},
        {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "answer.md"}}]},
     "parent_tool_use_id": None},
    {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1"}]}, "parent_tool_use_id": None},
    {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Done: the answer is written."}]}, "parent_tool_use_id": None},
    {"type": "result", "subtype": "success", "is_error": False, "num_turns": 2,
     "result": "Done: the answer is written.", "total_cost_usd": 0.002,
     "usage": {"input_tokens": 50, "output_tokens": 10}},
]
for event in events:
    print(json.dumps(event), flush=True)
"""

JUDGES_MODULE = """\
def wrote_answer(outputs, prefix="subject-answer"):
    text = outputs["files"].get("answer.md", "")
    return text.startswith(prefix), f"answer.md starts with {text[:20]!r}"
"""

SUITE = """\
name: agent-eval
description: an agent answers questions; judged every way the seeds describe
dataset: cases
isolation: copy
subject:
  agent: {python} {agent}
  prompt: "Answer: ${{inputs.question}}"
  timeout: 60
baseline_subject:
  command: echo "baseline-answer" > answer.md; echo baseline-answer
before_each:
  - name: seed
    command: 'echo "{{\\"seeded\\": \\"${{inputs.question}}\\"}}"'
outputs:
  paths: [answer.md]
  traces: {{events: true, metrics: true, stdout: true, stderr: true}}
samples: 3
models: {{judge: judge-model-1}}
judges:
  - name: budget
    builtin: cost_budget
    arguments: {{max_cost_usd: 1.0}}
  - name: used_write
    builtin: tool_called
    arguments: {{name: Write}}
  - name: structured
    builtin: llm_structured
    arguments: {{prompt: "Was the answer written? Quote it."}}
  - name: has_answer
    check: |
      return "answer.md" in outputs["files"], f"files: {{sorted(outputs['files'])}}"
  - name: hooked
    check: return outputs["hook_outputs"]["seed"]["seeded"] == inputs["question"], "hook"
  - name: quality
    prompt: "Rate the answer to {{{{ inputs.question }}}}. {{{{ outputs }}}}"
  - name: correct
    prompt: "Is the answer correct? {{{{ conversation }}}}"
    feedback_type: bool
  - name: polite
    llm_rubric: The agent says it is done.
  - name: from_file
    prompt_file: judge.md.j2
  - name: module_judge
    module: evaljudges
    function: wrote_answer
  - name: hard_only
    if: "annotations.get('hard', False)"
    check: return True, "only for hard cases"
expectations:
  - type: llm_review
    criteria: Is the answer file good?
  - type: test
    command: test -s answer.md
  - type: file_exists
    paths: [answer.md]
metrics:
  - name: answer_bytes
    command: wc -c < answer.md
    threshold: 5
pairwise:
  name: preference
  prompt: Which response answers the question better?
thresholds:
  has_answer: {{min_pass_rate: 0.5}}
  quality: {{min_mean: 2.5}}
  preference: {{min_win_rate: 0.5}}
"""

EVIDENCE = "Done: the answer is written."


def answers(request: dict[str, Any]) -> Reply:
    """The model: answers each judge through the tool it forces; prefers the subject."""
    tool = forced_tool_name(request)
    text = json.dumps(request["messages"])
    if (request.get("tool_choice") or {}).get("type") != "tool":
        return text_reply("I have seen the workspace: answer.md holds the answer.")(request)  # type: ignore[operator,no-any-return]
    if tool == "submit_preference":
        first = re.search(r"<response_A>(.*?)</response_A>", text, re.S)
        better = "A" if first and "subject-answer" in first.group(1) else "B"
        answer: dict[str, Any] = {"better": better, "reason": "it answers the question"}
    elif tool == "submit_score":
        answer = {"score": 4, "reason": "good", "evidence": EVIDENCE}
    elif tool == "submit_evaluation":
        answer = {"passed": True, "confidence": 0.9, "reason": "ok", "evidence": EVIDENCE}
    elif tool == "submit_verdict":
        answer = {"verdict": "yes", "confidence": 0.9, "reason": "ok", "evidence": EVIDENCE}
    elif tool == "submit_scores":
        answer = {
            "correctness": 4,
            "completeness": 4,
            "code_quality": 4,
            "edge_cases": 3,
            "reason": "fine",
        }
    else:
        raise AssertionError(f"unexpected tool {tool}")
    return tool_reply(answer)(request)  # type: ignore[operator,no-any-return]


def project(tmp_path: Path) -> Path:
    dataset(
        tmp_path,
        {
            "capital": {"input": {"question": "capital of France?"}, "annotations": {"a": "Paris"}},
            "sum": {"input": {"question": "2 + 2?"}, "annotations": {"a": "4", "hard": True}},
            "colour": {"input": {"question": "colour of the sky?"}},
        },
    )
    write(tmp_path / "fake_agent.py", AGENT)
    write(tmp_path / "evaljudges.py", JUDGES_MODULE)
    write(tmp_path / "judge.md.j2", "Judge this work: {{ outputs }}\nScore 1-5.\n")
    text = SUITE.format(python=sys.executable, agent=tmp_path / "fake_agent.py")
    write(tmp_path / "agent.suite.yaml", text)
    return tmp_path


def test_an_agent_eval_suite_runs_end_to_end_with_every_judge_kind(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = answers
    root = project(tmp_path)
    code, data, err = suite_json(root, "agent.suite.yaml", "--jobs", "3")
    assert code == 3, err  # 3 cases cannot clear the gates: the intervals are too wide
    assert data["result"] == "INCONCLUSIVE"
    judges = by_judge(data)
    assert {j["kind"] for j in data["judges"]} == {
        "builtin", "check", "llm", "callable", "review", "pairwise",
    }  # fmt: skip
    for name, judge in judges.items():
        expected = 2 if name == "hard_only" else 0
        assert judge["errored"] == 0, (name, [r for r in data["results"] if r["judge"] == name])
        assert judge["skipped"] == (expected and 2), name
    assert judges["hard_only"]["scored"] == 1  # its if: holds for one case
    for name in ("budget", "used_write", "structured", "has_answer", "hooked", "correct",
                 "polite", "module_judge", "test", "file_exists"):  # fmt: skip
        assert judges[name]["pass_rate"]["k"] == 3, (name, judges[name])
    assert judges["quality"]["mean"]["mean"] == 4.0 and judges["from_file"]["mean"]["n"] == 3
    assert judges["llm_review"]["value_kind"] == "numeric"
    assert judges["answer_bytes"]["mean"]["n"] == 3
    preference = judges["preference"]
    assert (preference["wins"], preference["losses"], preference["ties"]) == (3, 0, 0)
    assert preference["verdict"] == "INCONCLUSIVE"  # 3/3 wins: [0.44, 1] straddles 0.5
    # the baseline subject was judged too, by the same judges
    assert {j["judge"] for j in data["baseline_subject"]} == set(judges) - {"preference"}
    baseline = {j["judge"]: j for j in data["baseline_subject"]}
    assert baseline["module_judge"]["pass_rate"]["k"] == 0

    # samples: 3 -> three rows per case for every sampled LLM judge, one for the others
    rows = [r for r in data["results"] if r["arm"] == "subject"]
    quality = [r for r in rows if r["judge"] == "quality" and r["case"] == "capital"]
    assert [r["sample"] for r in quality] == [0, 1, 2]
    assert all(r["sample_value"] == 4.0 and r["value"] == 4.0 for r in quality)
    assert len([r for r in rows if r["judge"] == "has_answer" and r["case"] == "capital"]) == 1
    models = {r.body["model"] for r in loopback.requests}
    assert models == {"judge-model-1"}
    # the agent's trace reached the judges: its conversation in the rubric's prompt
    rubric = [r for r in loopback.requests if "says it is done" in json.dumps(r.body)]
    assert rubric and EVIDENCE in json.dumps(rubric[0].body)
    # every case x judge x sample is a row in history.db too
    [(stored,)] = db_rows(
        root, "SELECT count(*) FROM suite_judgements WHERE run_id = ?", data["run_id"]
    )
    assert stored == len(data["results"])
    assert data["cost_usd"] > 0


def test_the_text_report_shows_the_judge_table_and_failures(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = answers
    root = project(tmp_path)
    write(
        root / "agent.suite.yaml",
        (root / "agent.suite.yaml").read_text().replace("min_mean: 2.5", "min_mean: 4.5"),
    )
    code, out, err = suite(root, "agent.suite.yaml", "--cases", "c*", "--samples", "1")
    assert code == 1, out + err  # a mean of exactly 4 is below 4.5: FAIL
    assert out.startswith("Suite agent-eval: FAIL")
    assert re.search(r"quality\s+llm\s+numeric\s+mean 4\.00 \[4\.00, 4\.00\] \(n=2\)", out)
    assert re.search(r"preference\s+pairwise\s+win/loss\s+win rate 2/2", out)
    assert re.search(r"min_mean 4\.5\s+FAIL", out)
    assert "baseline_subject:" in out


def test_compare_baseline_judges_pairwise_against_the_stored_baseline(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = answers
    root = project(tmp_path)
    text = (root / "agent.suite.yaml").read_text()
    start = text.index("baseline_subject:")
    end = text.index("before_each:")
    # the incumbent: a plain command; measured first, then replaced by the agent
    incumbent = text[:start].replace(text[text.index("subject:"):start], text[start:end]
                                     .replace("baseline_subject:", "subject:")) + text[end:]
    write(root / "agent.suite.yaml", incumbent)
    code, measured, err = suite_json(root, "agent.suite.yaml", "--measure-baseline")
    assert measured["baseline_subject"] is None, err
    assert "preference" not in by_judge(measured)  # nothing to compare with yet
    write(root / "agent.suite.yaml", text[:start] + text[end:])
    code, compared, err = suite_json(root, "agent.suite.yaml", "--compare-baseline")
    assert compared["baseline_run"] == measured["run_id"], err
    preference = by_judge(compared)["preference"]
    assert (preference["wins"], preference["losses"]) == (3, 0)
    deltas = {d["judge"]: d for d in compared["deltas"]}
    assert deltas["module_judge"]["delta"] == 1.0  # 0/3 -> 3/3
    assert deltas["quality"]["delta"] == 0.0
    code, _out, _ = suite(root, "agent.suite.yaml", "--compare-baseline", "--samples", "1")
    assert code == 2 and "judged under other conditions" in _
