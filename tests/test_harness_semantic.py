"""The --semantic gate and the prompt subject, through the real SDK against the loopback server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.harness.banding import Band
from engine.harness.grading import Gates
from engine.harness.refusal import Refusal
from engine.harness.session import Options, Report, evaluate
from engine.harness.subjects import cmd_subject, prompt_subject
from engine.runtime.history import History, open_history
from tests.harness_helpers import harness
from tests.loopback_server import LoopbackServer, Reply, error_reply, text_reply, verdict_reply

CRITERION = "Does the output report that every test passed? Quote it verbatim."
OUTPUT = "ran 12 tests: all 12 passed"


@pytest.fixture
def history(tmp_path: Path) -> Iterator[History]:
    with open_history(tmp_path) as opened:
        yield opened


def judged_cmd(
    history: History, cwd: Path, *, exit_code: int | None = None, samples: int | None = None
) -> Report:
    gates = Gates(exit_code=exit_code, semantic=CRITERION, judge_model="judge-model")
    subject = cmd_subject(f"echo '{OUTPUT}'", cwd=cwd)
    return evaluate(subject, Options(gates=gates, samples=samples), history, cwd)


def test_yes_passes_and_every_judge_field_is_recorded(
    loopback: LoopbackServer, history: History, tmp_path: Path
) -> None:
    loopback.push(
        verdict_reply("yes", confidence=0.875, reason="all passed", evidence="all 12 passed")
    )
    report = judged_cmd(history, tmp_path)
    assert report.band is Band.PASS
    request = loopback.requests[0].body
    assert request["model"] == "judge-model"
    assert OUTPUT in json.dumps(request["messages"])  # the judged text is the subject's stdout
    [row] = history.attempts(report.subject.target)
    assert (row.semantic_criterion, row.semantic_verdict, row.confidence) == (
        CRITERION,
        "yes",
        0.875,
    )
    assert (row.reason, row.evidence, row.judge_model) == (
        "all passed",
        "all 12 passed",
        "judge-model",
    )
    assert row.exit_passed is None  # no exit gate was asked for


@pytest.mark.parametrize("verdict", ["no", "partial", "blocked"])
def test_no_partial_blocked_fail(
    verdict: str, loopback: LoopbackServer, history: History, tmp_path: Path
) -> None:
    loopback.push(verdict_reply(verdict, evidence="all 12 passed"))
    report = judged_cmd(history, tmp_path)
    assert report.band is Band.FAIL and report.exit_code == 1
    assert report.samples[0].reason.startswith(f"judge said {verdict}")


def test_invented_evidence_turns_yes_into_fail(
    loopback: LoopbackServer, history: History, tmp_path: Path
) -> None:
    loopback.push(verdict_reply("yes", evidence="all 13 passed"))
    assert judged_cmd(history, tmp_path).band is Band.FAIL


def test_cannot_judge_abstains(loopback: LoopbackServer, history: History, tmp_path: Path) -> None:
    loopback.push(verdict_reply("cannot_judge"))
    report = judged_cmd(history, tmp_path)
    assert report.band is Band.ABSTAIN and report.exit_code == 3


def test_low_confidence_abstains(
    loopback: LoopbackServer, history: History, tmp_path: Path
) -> None:
    loopback.push(verdict_reply("yes", confidence=0.2, evidence="all 12 passed"))
    assert judged_cmd(history, tmp_path).band is Band.ABSTAIN


def test_judge_api_failure_is_an_error_not_a_pass(
    loopback: LoopbackServer, history: History, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_LLM_MAX_ATTEMPTS", "2")
    loopback.default = error_reply(500)
    report = judged_cmd(history, tmp_path)
    assert report.band is Band.ERROR and report.exit_code == 2
    assert report.samples[0].outcome == "error"


def test_failed_exit_gate_fails_even_when_the_judge_says_yes(
    loopback: LoopbackServer, history: History, tmp_path: Path
) -> None:
    loopback.push(verdict_reply("yes", evidence="all 12 passed"))
    report = judged_cmd(history, tmp_path, exit_code=1)
    assert report.band is Band.FAIL
    assert report.samples[0].exit_passed is False
    assert report.samples[0].semantic is not None
    assert report.samples[0].semantic.verdict == "yes"


def _prompt_report(history: History, cwd: Path, samples: int | None = None) -> Report:
    gates = Gates(semantic=CRITERION, judge_model="judge-model")
    subject = prompt_subject("Run the tests and report.", model="subject-model", prompt_runner=None)
    return evaluate(subject, Options(gates=gates, samples=samples), history, cwd)


def test_prompt_runs_three_samples_by_default(
    loopback: LoopbackServer, history: History, tmp_path: Path
) -> None:
    for _ in range(3):
        loopback.push(text_reply(OUTPUT), verdict_reply("yes", evidence="all 12 passed"))
    report = _prompt_report(history, tmp_path)
    assert report.band is Band.PASS and len(report.samples) == 3
    models = [r.body["model"] for r in loopback.requests]
    assert models == ["subject-model", "judge-model"] * 3
    rows = history.attempts("Run the tests and report.")
    assert {r.model for r in rows} == {"subject-model"}
    assert sorted(r.sample_index for r in rows) == [0, 1, 2]


def test_prompt_pass_beside_abstention_is_inconclusive(
    loopback: LoopbackServer, history: History, tmp_path: Path
) -> None:
    loopback.push(
        text_reply(OUTPUT),
        verdict_reply("yes", evidence="all 12 passed"),
        text_reply(OUTPUT),
        verdict_reply("cannot_judge"),
        text_reply(OUTPUT),
        verdict_reply("yes", evidence="all 12 passed"),
    )
    report = _prompt_report(history, tmp_path)
    assert [s.outcome for s in report.samples] == ["pass", "abstain", "pass"]
    assert report.band is Band.INCONCLUSIVE and report.exit_code == 3


def test_prompt_all_abstained_is_abstain(
    loopback: LoopbackServer, history: History, tmp_path: Path
) -> None:
    for _ in range(3):
        loopback.push(text_reply(OUTPUT), verdict_reply("cannot_judge"))
    assert _prompt_report(history, tmp_path).band is Band.ABSTAIN


def test_prompt_timeout_is_a_persisted_infra_error(
    loopback: LoopbackServer, history: History, tmp_path: Path
) -> None:
    loopback.push(Reply(hang=5))
    gates = Gates(semantic=CRITERION, judge_model="judge-model")
    subject = prompt_subject("slow prompt", model=None, prompt_runner=None)
    report = evaluate(subject, Options(gates=gates, samples=1, timeout=1.0), history, tmp_path)
    assert report.band is Band.ERROR
    [row] = history.attempts("slow prompt")
    assert row.timed_out is True and row.semantic_verdict is None  # never judged


@pytest.mark.parametrize(
    ("samples", "old_model", "new_model", "refusal"),
    [
        # A prompt is stochastic: one sample of it cannot serve a delta.
        pytest.param(1, "m", "m", "one sample of a stochastic subject", id="one-sample"),
        # The prompt model is a condition of the baseline.
        pytest.param(2, "model-a", "model-b", "other conditions", id="other-model"),
    ],
)
def test_prompt_baseline_refuses_a_candidate_it_cannot_compare(
    loopback: LoopbackServer,
    history: History,
    tmp_path: Path,
    samples: int,
    old_model: str,
    new_model: str,
    refusal: str,
) -> None:
    for _ in range(samples):
        loopback.push(text_reply(OUTPUT), verdict_reply("yes", evidence="all 12 passed"))
    gates = Gates(semantic=CRITERION, judge_model="j")
    old = evaluate(
        prompt_subject("old prompt", model=old_model, prompt_runner=None),
        Options(gates=gates, samples=samples, measure_baseline=True),
        history,
        tmp_path,
    )
    with pytest.raises(Refusal, match=refusal):
        evaluate(
            prompt_subject("new prompt", model=new_model, prompt_runner=None),
            Options(
                gates=gates, samples=samples, compare_baseline=True, baseline_of=old.invocation_id
            ),
            history,
            tmp_path,
        )
    assert len(loopback.requests) == 2 * samples  # nothing ran for the refused candidate


def test_cli_prompt_json_has_every_sample_and_the_judge(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    for _ in range(2):
        loopback.push(text_reply(OUTPUT), verdict_reply("yes", evidence="all 12 passed"))
    done = harness(
        tmp_path,
        "prompt",
        "Run the tests.",
        "--semantic",
        CRITERION,
        "--samples",
        "2",
        "--output",
        "json",
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["result"] == "PASS" and data["semantic_checked"] is True
    assert [s["semantic"]["verdict"] for s in data["samples"]] == ["yes", "yes"]
    assert data["samples"][0]["stdout"] == OUTPUT
    assert data["stdout"] == OUTPUT


def test_cli_text_shows_the_semantic_row(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(verdict_reply("no", reason="one failed", evidence="all 12 passed"))
    done = harness(tmp_path, "cmd", f"echo '{OUTPUT}'", "--exit-code", "0", "--semantic", CRITERION)
    assert done.returncode == 1
    assert "Exit      0 (expected 0: ok)" in done.stdout
    assert "Semantic  no (confidence 0.90) — one failed" in done.stdout
    assert "Result    FAIL" in done.stdout


def test_cli_says_a_yes_was_rejected_for_its_invented_quote(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The judge said yes with a quote the output does not hold: the sample fails, and the text,
    the JSON and the history say why. They used to show `no — all passed` (the model's reason
    for a yes), as if the judge had said no and argued for a pass."""
    loopback.push(verdict_reply("yes", reason="all passed", evidence="all 13 passed"))
    done = harness(tmp_path, "cmd", f"echo '{OUTPUT}'", "--semantic", CRITERION)
    assert done.returncode == 1
    rejected = "yes rejected: the evidence 'all 13 passed' does not occur in the judged text"
    assert f"Semantic  no (confidence 0.90) — {rejected}; the model's reason: all passed" in (
        done.stdout
    )
    loopback.push(verdict_reply("yes", reason="all passed", evidence="all 13 passed"))
    done = harness(tmp_path, "cmd", f"echo '{OUTPUT}'", "--semantic", CRITERION, "--output", "json")
    [sample] = json.loads(done.stdout)["samples"]
    assert sample["semantic"]["reason"].startswith(rejected)
    assert sample["reason"].startswith(f"judge said no: {rejected}")
    with open_history(tmp_path) as history:
        rows = history.attempts(f"echo '{OUTPUT}'")
    assert rows and all(row.reason and rejected in row.reason for row in rows)
