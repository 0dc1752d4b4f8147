"""A suite of the agent_eval seed's shape, end to end from the CLI: a dataset with annotations,
an agent CLI subject streaming JSON events in its own workspace, a before_each hook, outputs and
traces, judges of every kind (builtin, check, prompt score and bool, llm_rubric, prompt_file,
module + function, llm_review, test, file_exists, metric, llm_structured), samples, the judge
model, a pairwise comparison with a baseline subject, thresholds of all three gates — the model
calls answered by the loopback Messages server through the real SDK."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.harness_helpers import REPO
from tests.loopback_server import (
    LoopbackServer,
    Reply,
    forced_tool_name,
    text_reply,
    tool_reply,
)
from tests.suite_helpers import by_judge, db_rows, suite, suite_json, write

EXAMPLE = "examples/suites/agent_eval"
SUITE_FILE = f"{EXAMPLE}/agent_eval.suite.yaml"

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
    """A copy of the shipped example, at its place in the repository layout (its module judge
    is imported from the project root as `examples.suites.agent_eval.judges`)."""
    shutil.copytree(REPO / EXAMPLE, tmp_path / EXAMPLE)
    return tmp_path


def test_an_agent_eval_suite_runs_end_to_end_with_every_judge_kind(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = answers
    root = project(tmp_path)
    code, data, err = suite_json(root, SUITE_FILE, "--jobs", "3")
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
    assert models == {"claude-sonnet-4-5"}
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
    path = root / SUITE_FILE
    write(path, path.read_text().replace("min_mean: 2.5", "min_mean: 4.9"))
    code, out, err = suite(root, SUITE_FILE, "--cases", "c*", "--samples", "1")
    # two scores of 4 in [1, 5] are no certain mean of 4 (the cases not seen could score 5),
    # but their interval stays below 4.9: FAIL
    assert code == 1, out + err
    assert out.startswith("Suite agent-eval: FAIL")
    assert re.search(r"quality\s+llm\s+numeric\s+mean 4\.00 \[2\.03, 4\.66\] \(n=2\)", out)
    assert re.search(r"preference\s+pairwise\s+win/loss\s+win rate 2/2", out)
    assert re.search(r"min_mean 4\.9\s+FAIL", out)
    assert "baseline_subject:" in out


def test_compare_baseline_judges_pairwise_against_the_stored_baseline(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = answers
    root = project(tmp_path)
    path = root / SUITE_FILE
    text = path.read_text()
    start = text.index("baseline_subject:")
    end = text.index("before_each:")
    # the incumbent: a plain command; measured first, then replaced by the agent
    incumbent = (
        text[:start].replace(
            text[text.index("subject:") : start],
            text[start:end].replace("baseline_subject:", "subject:"),
        )
        + text[end:]
    )
    write(path, incumbent)
    code, measured, err = suite_json(root, SUITE_FILE, "--measure-baseline")
    assert measured["baseline_subject"] is None, err
    assert "preference" not in by_judge(measured)  # nothing to compare with yet
    write(path, text[:start] + text[end:])
    code, compared, err = suite_json(root, SUITE_FILE, "--compare-baseline")
    assert compared["baseline_run"] == measured["run_id"], err
    preference = by_judge(compared)["preference"]
    assert (preference["wins"], preference["losses"]) == (3, 0)
    deltas = {d["judge"]: d for d in compared["deltas"]}
    assert deltas["module_judge"]["delta"] == 1.0  # 0/3 -> 3/3
    assert deltas["quality"]["delta"] == 0.0
    code, _out, _ = suite(root, SUITE_FILE, "--compare-baseline", "--samples", "1")
    assert code == 2 and "judged under other conditions" in _


STRUCTURED = """\
name: structured
cases: [{id: a, input: {}}]
subject: {command: "echo 'Done: the answer is written.'"}
judges:
  - name: done
    builtin: llm_structured
    arguments: {prompt: "Is the work done? Quote the line that says so.", samples: 3}
"""


def test_suite_samples_override_the_llm_structured_builtins_own(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """`--samples 1` is one answer per case for every LLM judge; the builtin took the larger of
    its own `samples: 3` and the suite's."""
    loopback.default = answers
    write(tmp_path / "s.suite.yaml", STRUCTURED)
    code, _, err = suite_json(tmp_path, "s.suite.yaml", "--samples", "1")
    assert code == 0, err
    assert len(loopback.requests) == 1
    loopback.requests.clear()
    code, _, err = suite_json(tmp_path, "s.suite.yaml")
    assert code == 0, err
    assert len(loopback.requests) == 3  # without --samples: its own


def test_a_judges_own_samples_win_over_the_suites(loopback: LoopbackServer, tmp_path: Path) -> None:
    """The suite's `samples: 3` replaced a judge's own `samples: 2` (and the builtin's own):
    the more specific setting loses nowhere else (a judge's `model` wins over `models.judge`).
    Now the judge's own wins, the suite's is the default of the others, and `--samples` (this
    invocation's request) still sets every judge."""
    loopback.default = answers
    text = STRUCTURED.replace("judges:", "samples: 4\njudges:") + (
        "  - {name: own, prompt: 'Rate it. Quote the line.', samples: 2}\n"
        "  - {name: plain, prompt: 'Rate it again. Quote the line.'}\n"
    )
    write(tmp_path / "s.suite.yaml", text)
    code, data, err = suite_json(tmp_path, "s.suite.yaml")
    assert code == 0, err
    assert rows_per_judge(data) == {"done": 3, "own": 2, "plain": 4}
    code, data, err = suite_json(tmp_path, "s.suite.yaml", "--samples", "1")
    assert code == 0, err
    assert rows_per_judge(data) == {"done": 1, "own": 1, "plain": 1}


def rows_per_judge(data: dict[str, Any]) -> dict[str, int]:
    """How many sample rows each judge of a suite's JSON result has (one case)."""
    return {j["judge"]: len([r for r in data["results"] if r["judge"] == j["judge"]])
            for j in data["judges"]}  # fmt: skip


def test_a_suite_whose_model_calls_have_no_credentials_is_refused_before_any_case(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Without a key, every case's subject ran (an agent's cost spent) and then every LLM judge
    errored; as `ll-loop run`, the suite stops first with the variable to set. A suite without
    model calls needs no key."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    ran = tmp_path / "ran"
    for kind, judge in [
        ("judge", "{name: quality, prompt: 'Rate it. Quote evidence.'}"),
        ("review", "{type: llm_review, criteria: Is it good?}"),
        ("prompt", "{name: echoed, builtin: exit_code}"),
    ]:
        key = "expectations" if kind == "review" else "judges"
        subject = "{prompt: 'Say hi'}" if kind == "prompt" else f"{{command: 'touch {ran}'}}"
        write(
            tmp_path / "s.suite.yaml",
            f"name: s\ncases: [{{input: {{n: 1}}}}]\nsubject: {subject}\n{key}: [{judge}]\n",
        )
        code, _, err = suite(tmp_path, "s.suite.yaml")
        assert code == 2 and "no credentials are set: set ANTHROPIC_API_KEY" in err, (kind, err)
        assert "Traceback" not in err and not ran.exists()
    write(
        tmp_path / "s.suite.yaml",
        f"name: s\ncases: [{{input: {{n: 1}}}}]\nsubject: {{command: 'touch {ran}'}}\n"
        "judges: [{name: echoed, builtin: exit_code}]\n",
    )
    code, _, err = suite(tmp_path, "s.suite.yaml")
    assert code == 0 and ran.exists(), err


@pytest.mark.parametrize("runner", ["bogus", "cmd:"])
def test_a_prompt_runner_from_the_environment_that_is_none_is_refused(
    tmp_path: Path, monkeypatch: Any, runner: str
) -> None:
    """`LL_PROMPT_RUNNER=bogus` (or `cmd:` with no command) sent a suite's prompt subject to the
    `anthropic` runner without a word, where `ll-loop run` refuses it."""
    monkeypatch.setenv("LL_PROMPT_RUNNER", runner)
    write(
        tmp_path / "s.suite.yaml",
        "name: s\ncases: [{input: {n: 1}}]\nsubject: {prompt: 'Say hi'}\n"
        "judges: [{name: echoed, builtin: exit_code}]\n",
    )
    code, _, err = suite(tmp_path, "s.suite.yaml")
    assert code == 2 and f"runner {runner!r}" in err, err
    assert "(the runner LL_PROMPT_RUNNER names)" in err, err


def test_a_prompt_subjects_cost_reaches_the_record_and_its_budget_judge(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The case's cost was counted, but the record's cost_usd stayed 0 unless an agent CLI
    streamed it: a `cost_budget` judge on a prompt subject passed whatever it cost."""
    loopback.default = text_reply("Paris.", input_tokens=100_000, output_tokens=1_000)
    write(
        tmp_path / "p.suite.yaml",
        """\
        name: p
        cases: [{input: {country: France}}]
        subject: {prompt: "Capital of ${inputs.country}?"}
        judges:
          - {name: budget, builtin: cost_budget, arguments: {max_cost_usd: 0.01}}
          - {name: cost, check: "return outputs['cost_usd'] > 0.01, str(outputs['cost_usd'])"}
        """,
    )
    code, data, err = suite_json(tmp_path, "p.suite.yaml")
    [run] = data["case_runs"]
    assert code == 0 and run["cost_usd"] > 0.01, err
    values = {r["judge"]: r["value"] for r in data["results"]}
    assert values == {"budget": False, "cost": True}, data["results"]


def test_a_suite_whose_model_calls_cannot_be_made_is_refused_before_any_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without credentials every subject ran (an agent's included) and every LLM judgement then
    errored with `unexpected TypeError: "Could not resolve authentication method..."`; an agent
    CLI that is not installed was each case's exit 127. Both are refused before anything runs,
    as `ll-loop run` and the other runners of `ll-harness` refuse them."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    write(
        tmp_path / "judged.suite.yaml",
        """\
        name: judged
        cases: [{id: a, input: {q: x}}]
        subject:
          command: touch ran; echo answer
        judges:
          - {name: cleanly, builtin: exit_code}
          - name: quality
            prompt: "Rate {{ outputs }}"
        """,
    )
    code, out, err = suite(tmp_path, "judged.suite.yaml")
    assert code == 2 and out == ""
    assert err.startswith(
        "error: judged.suite.yaml:7: judge 'quality' calls the Anthropic API but no credentials "
        "are set: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)\n"
    ), err
    assert not (tmp_path / "ran").exists()
    assert db_rows(tmp_path, "SELECT count(*) FROM suite_runs") == [(0,)]
    write(
        tmp_path / "agent.suite.yaml",
        """\
        name: agent
        cases: [{id: a, input: {q: x}}]
        subject:
          agent: no-such-agent-cli -p
          prompt: hello
        judges:
          - {name: cleanly, builtin: exit_code}
        """,
    )
    code, out, err = suite(tmp_path, "agent.suite.yaml")
    assert code == 2
    assert (
        "error: agent.suite.yaml:3: agent 'no-such-agent-cli -p': 'no-such-agent-cli' is not" in err
    )


PAIRWISE = """\
name: pair
cases: [{id: a, input: {}}]
subject: {command: "echo subject-answer"}
baseline_subject: {command: "echo baseline-answer"}
samples: 3
pairwise: {name: preference, prompt: Which answers better?PAIR_SAMPLES}
"""


def test_the_suites_samples_are_the_pairwise_judges_default_too(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The pairwise judge took one sample under a suite's `samples: 3` (its unset `samples`
    read as 1), though the suite's samples are those of every LLM judge that sets none; its own
    `samples` wins, and `--samples` sets it too. Each sample is one call per order."""
    loopback.default = answers

    def preference_calls(own: str, *args: str) -> int:
        loopback.requests.clear()
        write(tmp_path / "s.suite.yaml", PAIRWISE.replace("PAIR_SAMPLES", own))
        code, _, err = suite_json(tmp_path, "s.suite.yaml", *args)
        assert code == 0, err
        return sum(forced_tool_name(r.body) == "submit_preference" for r in loopback.requests)

    assert preference_calls("") == 6
    assert preference_calls(", samples: 2") == 4
    assert preference_calls(", samples: 2", "--samples", "1") == 2


def test_an_own_samples_that_differs_from_the_suites_is_other_conditions(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Since a judge's own samples win over the suite's, `samples: 1` under the suite's
    `samples: 2` asks once where an unset one asks twice; the conditions fingerprint kept both
    as 1, so --compare-baseline compared a baseline judged with two answers per case with a run
    judged with one, as if they were measured alike. The pairwise judge likewise: an unset one
    now takes the suite's samples, where it took 1 (as `samples: 1` still does)."""
    loopback.default = answers
    base = STRUCTURED.replace("judges:", "samples: 2\njudges:") + (
        "  - {name: plain, prompt: 'Rate it. Quote the line.'}\n"
    )
    write(tmp_path / "s.suite.yaml", base)
    code, _, err = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert code == 0, err
    fewer = base.replace("Quote the line.'}", "Quote the line.', samples: 1}")
    write(tmp_path / "s.suite.yaml", fewer)
    code, _, err = suite(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert code == 2 and "judged under other conditions" in err, err

    def fingerprint(own: str) -> str:
        write(tmp_path / "p.suite.yaml", PAIRWISE.replace("PAIR_SAMPLES", own))
        code, data, err = suite_json(tmp_path, "p.suite.yaml")
        assert code == 0, err
        rows = db_rows(
            tmp_path, "SELECT conditions_fp FROM suite_runs WHERE run_id = ?", data["run_id"]
        )
        return str(rows[0][0])

    assert fingerprint("") != fingerprint(", samples: 1")  # 3 samples, and 1


def test_a_cases_progress_line_tells_the_pairwise_judgement(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A suite judged only by its pairwise judge printed `0/0 judges passed` for every case,
    as if nothing had been judged; the line now says how the comparison went."""
    loopback.default = answers
    write(tmp_path / "s.suite.yaml", PAIRWISE.replace("PAIR_SAMPLES", ", samples: 1"))
    code, _, err = suite(tmp_path, "s.suite.yaml")
    assert code == 0, err
    assert "case 1/1  a  preference: win" in err, (code, _, err)
    assert "0/0 judges passed" not in err, err
