"""`ll-harness loop`: a whole `ll-loop run` is the subject; baselines resolved from git HEAD."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from engine.harness.subjects import loop_subject
from tests.harness_helpers import harness, harness_json
from tests.loopback_server import LoopbackServer, text_reply, verdict_reply

PASSING = """\
name: gate
initial: check
scope: ["."]
states:
  check:
    action: "test -f ok && echo checked ${context.input | default('none')}"
    on_yes: done
    on_no: failed
  done:
    terminal: true
  failed:
    terminal: true
    failure: true
"""

WITH_PROMPT = """\
name: asks
initial: ask
scope: ["."]
states:
  ask:
    action: "Say hi"
    action_type: prompt
    next: done
  done:
    terminal: true
"""


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "gate.yaml").write_text(PASSING)
    (tmp_path / "ok").write_text("")
    return tmp_path


def test_a_passing_loop_run_passes(project: Path) -> None:
    code, data = harness_json(project, "loop", "gate.yaml", "--exit-code", "0")
    assert code == 0, data
    assert data["runner"] == "loop" and data["target"] == "gate"
    assert data["samples_requested"] == 1  # no LLM states: deterministic
    result = json.loads(data["stdout"])
    assert result["final_state"] == "done" and result["outcome"] == "success"


def test_a_failure_terminal_fails_the_exit_gate(project: Path) -> None:
    (project / "ok").unlink()
    code, data = harness_json(project, "loop", "gate.yaml", "--exit-code", "0")
    assert code == 1
    assert data["samples"][0]["exit_code"] == 1
    assert data["samples"][0]["reason"] == "exit code 1, expected 0"


def test_input_and_context_reach_the_run_and_key_the_input_hash(project: Path) -> None:
    _, first = harness_json(project, "loop", "gate.yaml", "hello", "--exit-code", "0")
    _, second = harness_json(project, "loop", "gate.yaml", "other", "--exit-code", "0")
    assert first["input_hash"] != second["input_hash"]
    assert first["content_hash"] == second["content_hash"]


def test_a_loop_with_llm_states_is_stochastic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")  # else refused: its states could not run
    path = tmp_path / "asks.yaml"
    path.write_text(WITH_PROMPT)
    subject = loop_subject(path, input_text=None, context={}, cwd=tmp_path)
    assert subject.stochastic
    assert subject.subject_model is not None  # ambient models are conditions of the measurement
    gate = tmp_path / "gate.yaml"
    gate.write_text(PASSING)
    assert not loop_subject(gate, input_text=None, context={}, cwd=tmp_path).stochastic


def test_an_invalid_loop_is_refused_before_any_sample(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("name: bad\ninitial: nowhere\nstates: {}\n")
    done = harness(tmp_path, "loop", "bad.yaml", "--exit-code", "0")
    assert done.returncode == 2
    assert "bad.yaml" in done.stderr
    assert not (tmp_path / ".loops" / "history.db").exists()


def test_a_run_over_the_timeout_is_an_error(project: Path) -> None:
    (project / "gate.yaml").write_text(PASSING.replace("test -f ok", "sleep 30; test -f ok"))
    code, data = harness_json(project, "loop", "gate.yaml", "--exit-code", "0", "--timeout", "1")
    assert code == 2 and data["result"] == "ERROR"
    assert data["samples"][0]["timed_out"] is True


def test_baseline_from_head_then_compare_after_an_edit(project: Path) -> None:
    git(project, "init", "-q")
    git(project, "add", "gate.yaml")
    git(project, "commit", "-q", "-m", "incumbent")
    code, measured = harness_json(
        project, "loop", "gate.yaml", "--exit-code", "0", "--samples", "2", "--measure-baseline"
    )
    assert code == 0
    assert measured["git_head"] is not None

    unchanged = harness(
        project, "loop", "gate.yaml", "--exit-code", "0", "--samples", "2", "--compare-baseline"
    )
    assert unchanged.returncode == 2 and "unchanged" in unchanged.stderr

    (project / "gate.yaml").write_text(PASSING.replace("test -f ok", "test -f missing"))
    code, compared = harness_json(
        project, "loop", "gate.yaml", "--exit-code", "0", "--samples", "2", "--compare-baseline"
    )
    assert code == 1  # the candidate's own banding
    delta = compared["baseline"]
    assert delta["baseline"]["k"] == 2 and delta["candidate"]["k"] == 0
    assert delta["delta"] == -1.0
    assert compared["git_dirty"] is True

    other = harness(
        project, "loop", "gate.yaml", "--exit-code", "1", "--samples", "2", "--compare-baseline"
    )
    assert other.returncode == 2 and "other conditions" in other.stderr


def test_measuring_an_edited_loop_warns(project: Path) -> None:
    git(project, "init", "-q")
    git(project, "add", "gate.yaml")
    git(project, "commit", "-q", "-m", "incumbent")
    clean = harness(project, "loop", "gate.yaml", "--exit-code", "0", "--measure-baseline")
    assert clean.returncode == 0 and "warning" not in clean.stderr
    (project / "gate.yaml").write_text(PASSING + "description: edited\n")
    edited = harness(project, "loop", "gate.yaml", "--exit-code", "0", "--measure-baseline")
    assert edited.returncode == 0
    assert "differs from HEAD: this baseline measures the working copy" in edited.stderr


def test_baseline_of_names_the_incumbent_and_must_share_the_input(project: Path) -> None:
    _, measured = harness_json(
        project, "loop", "gate.yaml", "first", "--exit-code", "0", "--measure-baseline"
    )
    (project / "gate.yaml").write_text(PASSING + "description: edited\n")
    compare = ("--exit-code", "0", "--compare-baseline", "--baseline-of", measured["invocation_id"])
    other = harness(project, "loop", "gate.yaml", "second", *compare)
    assert other.returncode == 2 and "another input" in other.stderr
    code, compared = harness_json(project, "loop", "gate.yaml", "first", *compare)
    assert code == 0 and compared["baseline"]["delta"] == 0.0


def test_compare_outside_git_needs_baseline_of(project: Path) -> None:
    done = harness(project, "loop", "gate.yaml", "--exit-code", "0", "--compare-baseline")
    assert done.returncode == 2
    assert "at git HEAD" in done.stderr and "--baseline-of" in done.stderr


RETURNS = """\
name: returns
initial: work
scope: ["."]
outputs:
  verdict: "${captured.work.output}"
states:
  work:
    action: echo the report is ready
    capture: work
    next: summary
  summary:
    action: echo "summary line from the last state"
    next: done
  done:
    terminal: true
"""


def test_semantic_judges_the_loops_outputs_and_its_last_states_output(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    (tmp_path / "returns.yaml").write_text(RETURNS)
    loopback.push(verdict_reply("yes", evidence="the report is ready"))
    code, data = harness_json(
        tmp_path, "loop", "returns.yaml", "--semantic", "Is the report ready? Quote it."
    )
    assert code == 0, data
    judged = json.dumps(loopback.requests[0].body["messages"])
    assert "verdict: the report is ready" in judged  # the loop's outputs
    assert "summary line from the last state" in judged  # the final state's output
    assert json.loads(data["stdout"])["outputs"] == {"verdict": "the report is ready"}


def test_a_samples_cost_is_what_its_run_spent(tmp_path: Path, loopback: LoopbackServer) -> None:
    """A loop sample is an `ll-loop run` process: its model calls were recorded at $0."""
    (tmp_path / "asks.yaml").write_text(
        WITH_PROMPT.replace('scope: ["."]', 'scope: ["."]\ndefault_timeout: 30')
    )
    loopback.default = text_reply("hi", input_tokens=1_000_000, output_tokens=0)
    code, data = harness_json(tmp_path, "loop", "asks.yaml", "--samples", "2", "--exit-code", "0")
    assert code == 0, data
    assert [s["cost_usd"] for s in data["samples"]] == [3.0, 3.0]  # claude-sonnet-4-6: $3/M in
