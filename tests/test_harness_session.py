"""One invocation end to end with real shell commands and a real history database."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.harness.banding import Band
from engine.harness.grading import Gates
from engine.harness.refusal import Refusal
from engine.harness.session import Options, Report, evaluate
from engine.harness.subjects import cmd_subject
from engine.runtime.history import History, open_history
from tests.harness_helpers import calls, counter_command, flaky_command


@pytest.fixture
def history(tmp_path: Path) -> Iterator[History]:
    with open_history(tmp_path) as opened:
        yield opened


def run_cmd(
    command: str,
    history: History,
    cwd: Path,
    *,
    exit_code: int | None = 0,
    samples: int | None = None,
    timeout: float | None = 30.0,
    measure: bool = False,
    compare: bool = False,
    baseline_of: str | None = None,
    retry_of: int | None = None,
) -> Report:
    options = Options(
        gates=Gates(exit_code=exit_code),
        samples=samples,
        timeout=timeout,
        measure_baseline=measure,
        compare_baseline=compare,
        baseline_of=baseline_of,
        retry_of=retry_of,
    )
    return evaluate(cmd_subject(command, cwd=cwd), options, history, cwd)


# ---- gates, samples and banding with real commands ----------------------------------------


def test_no_gate_refuses_and_runs_nothing(history: History, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(Refusal, match="nothing is measured"):
        run_cmd(f"touch {marker}", history, tmp_path, exit_code=None)
    assert not marker.exists()
    assert history.attempts(f"touch {marker}") == []


def test_cmd_is_one_sample_by_default_and_passes(history: History, tmp_path: Path) -> None:
    report = run_cmd("echo hello", history, tmp_path)
    assert report.band is Band.PASS and report.exit_code == 0
    assert len(report.samples) == 1
    assert report.samples[0].run.stdout == "hello\n"
    [row] = history.attempts("echo hello")
    assert (row.outcome, row.exit_code, row.expected_exit_code, row.exit_passed) == (
        "pass",
        0,
        0,
        True,
    )
    assert row.attempt_kind == "repetition" and row.samples_requested == 1


def test_wrong_exit_code_fails(history: History, tmp_path: Path) -> None:
    report = run_cmd("exit 4", history, tmp_path, exit_code=0, samples=2)
    assert report.band is Band.FAIL and report.exit_code == 1
    assert [s.reason for s in report.samples] == ["exit code 4, expected 0"] * 2


def test_expected_nonzero_exit_code_passes(history: History, tmp_path: Path) -> None:
    assert run_cmd("exit 3", history, tmp_path, exit_code=3).band is Band.PASS


def test_flaky_subject_is_inconclusive_never_pass(history: History, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    report = run_cmd(flaky_command(counter, failing_call=2), history, tmp_path, samples=3)
    assert [s.outcome for s in report.samples] == ["pass", "fail", "pass"]
    assert report.band is Band.INCONCLUSIVE and report.exit_code == 3
    assert (report.tally.pass_rate.k, report.tally.pass_rate.n) == (2, 3)


def test_all_samples_run_even_after_a_first_pass(history: History, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    report = run_cmd(flaky_command(counter, failing_call=3), history, tmp_path, samples=3)
    assert calls(counter) == 3  # no early stop on the first pass
    assert report.band is Band.INCONCLUSIVE
    assert len(history.attempts(report.subject.target)) == 3


def test_timeout_is_an_infra_error_and_kills_the_group(history: History, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    command = f"sleep 30 & echo $! > {pid_file}; wait"
    started = time.monotonic()
    report = run_cmd(command, history, tmp_path, timeout=0.5)
    assert time.monotonic() - started < 10
    assert report.band is Band.ERROR and report.exit_code == 2
    sample = report.samples[0]
    assert sample.run.timed_out and sample.outcome == "error"
    [row] = history.attempts(command)
    assert row.timed_out is True and row.errored is True and row.outcome == "error"
    child = int(pid_file.read_text())
    time.sleep(0.2)
    assert not _alive(child), "the background child outlived the timed-out sample"


def _alive(pid: int) -> bool:
    """Running and not a zombie (an orphan may wait for a non-reaping init to collect it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_pass_beside_a_timeout_is_inconclusive(history: History, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    command = counter_command(counter, "if [ $n -eq 2 ]; then sleep 30; fi")
    report = run_cmd(command, history, tmp_path, samples=3, timeout=0.5)
    assert [s.outcome for s in report.samples] == ["pass", "error", "pass"]
    assert report.band is Band.INCONCLUSIVE and report.exit_code == 3


def test_unspawnable_command_is_an_error_not_a_fail(history: History, tmp_path: Path) -> None:
    report = evaluate(
        cmd_subject("true", cwd=tmp_path / "missing-dir"),
        Options(gates=Gates(exit_code=0)),
        history,
        tmp_path,
    )
    assert report.band is Band.ERROR
    assert "could not start" in report.samples[0].reason


def test_zero_samples_refused(history: History, tmp_path: Path) -> None:
    with pytest.raises(Refusal, match="at least 1"):
        run_cmd("true", history, tmp_path, samples=0)


def test_history_rates_appear_after_three_prior_rows(history: History, tmp_path: Path) -> None:
    reports = [run_cmd("true", history, tmp_path) for _ in range(4)]
    assert [r.history is None for r in reports] == [True, True, True, False]
    last = reports[-1].history
    assert last is not None and (last.pass_rate.k, last.pass_rate.n) == (3, 3)


# ---- --retry-of ----------------------------------------------------------------------------


def _timed_out_attempt(history: History, tmp_path: Path) -> tuple[str, int]:
    """A command that times out on its first call and answers at once afterwards."""
    counter = tmp_path / "count"
    command = counter_command(counter, "if [ $n -eq 1 ]; then sleep 30; fi")
    report = run_cmd(command, history, tmp_path, timeout=0.5)
    assert report.samples[0].run.timed_out
    return command, report.attempts[0].id


def test_retry_of_a_timeout_supersedes_it(history: History, tmp_path: Path) -> None:
    command, timed_out = _timed_out_attempt(history, tmp_path)
    retry = run_cmd(command, history, tmp_path, timeout=0.5, retry_of=timed_out)
    assert retry.band is Band.PASS and retry.retry_of == timed_out
    [new] = retry.attempts
    assert new.retry_of == timed_out and new.attempt_kind == "retry"
    old = history.attempt(timed_out)
    assert old is not None and old.superseded_by == new.id
    authoritative = history.attempts(command, authoritative_only=True)
    assert [a.id for a in authoritative] == [new.id]  # the chain counts once


def test_retry_keeps_the_original_invocations_sample_count(
    history: History, tmp_path: Path
) -> None:
    counter = tmp_path / "count"
    command = counter_command(counter, "if [ $n -eq 2 ]; then sleep 30; fi")
    first = run_cmd(command, history, tmp_path, samples=3, timeout=0.5)
    timed_out = first.attempts[1]
    assert timed_out.timed_out and timed_out.samples_requested == 3
    retry = run_cmd(command, history, tmp_path, timeout=0.5, retry_of=timed_out.id)
    assert retry.band is Band.PASS
    assert retry.attempts[0].conditions_fp == timed_out.conditions_fp
    assert retry.attempts[0].sample_index == 1


def test_retry_of_a_real_result_is_refused(history: History, tmp_path: Path) -> None:
    report = run_cmd("exit 1", history, tmp_path)
    marker = tmp_path / "ran"
    with pytest.raises(Refusal, match="did not time out"):
        run_cmd("exit 1", history, tmp_path, retry_of=report.attempts[0].id)
    assert not marker.exists()


def test_retry_of_unknown_attempt_is_refused(history: History, tmp_path: Path) -> None:
    with pytest.raises(Refusal, match="no such attempt"):
        run_cmd("true", history, tmp_path, retry_of=999)


def test_retry_of_another_target_is_refused(history: History, tmp_path: Path) -> None:
    _, timed_out = _timed_out_attempt(history, tmp_path)
    marker = tmp_path / "ran"
    with pytest.raises(Refusal, match="another subject"):
        run_cmd(f"touch {marker}", history, tmp_path, timeout=0.5, retry_of=timed_out)
    assert not marker.exists()


def test_retry_under_other_conditions_is_refused(history: History, tmp_path: Path) -> None:
    command, timed_out = _timed_out_attempt(history, tmp_path)
    with pytest.raises(Refusal, match="other conditions"):
        run_cmd(command, history, tmp_path, timeout=0.5, exit_code=1, retry_of=timed_out)
    with pytest.raises(Refusal, match="other conditions"):
        run_cmd(command, history, tmp_path, timeout=5, retry_of=timed_out)


def test_retry_with_several_samples_is_refused(history: History, tmp_path: Path) -> None:
    command, timed_out = _timed_out_attempt(history, tmp_path)
    with pytest.raises(Refusal, match="--samples must be 1"):
        run_cmd(command, history, tmp_path, timeout=0.5, samples=3, retry_of=timed_out)
    assert run_cmd(command, history, tmp_path, timeout=0.5, samples=1, retry_of=timed_out)


def test_retry_of_a_superseded_attempt_is_refused(history: History, tmp_path: Path) -> None:
    command, timed_out = _timed_out_attempt(history, tmp_path)
    run_cmd(command, history, tmp_path, timeout=0.5, retry_of=timed_out)
    with pytest.raises(Refusal, match="already superseded"):
        run_cmd(command, history, tmp_path, timeout=0.5, retry_of=timed_out)


# ---- baselines -------------------------------------------------------------------------------


def test_measure_then_compare_reports_a_delta(history: History, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    incumbent = flaky_command(counter, failing_call=2)  # 2 of 3
    measured = run_cmd(incumbent, history, tmp_path, samples=3, measure=True)
    assert {a.attempt_kind for a in measured.attempts} == {"baseline"}
    candidate = "true # improved"
    report = run_cmd(
        candidate, history, tmp_path, samples=3, compare=True, baseline_of=measured.invocation_id
    )
    delta = report.delta
    assert delta is not None
    assert (delta.baseline.k, delta.baseline.n) == (2, 3)
    assert (delta.candidate.k, delta.candidate.n) == (3, 3)
    assert delta.difference == pytest.approx(1 / 3)
    assert delta.overlapping  # at n=3 the intervals overlap, and the report says so
    assert report.band is Band.PASS  # the exit code is still the candidate's own banding
    by_attempt = run_cmd(
        candidate,
        history,
        tmp_path,
        samples=3,
        compare=True,
        baseline_of=str(measured.attempts[0].id),
    )
    assert by_attempt.delta is not None and by_attempt.delta.baseline.n == 3


def test_measure_baseline_reuses_rows_already_measured(history: History, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    command = counter_command(counter, "true")
    run_cmd(command, history, tmp_path, samples=2, measure=True)
    again = run_cmd(command, history, tmp_path, samples=2, measure=True)
    assert calls(counter) == 2  # nothing ran the second time
    assert len(again.reused_baseline) == 2 and again.band is Band.PASS


def _refused_compare(history: History, tmp_path: Path, **kwargs: object) -> str:
    marker = tmp_path / "candidate-ran"
    with pytest.raises(Refusal) as caught:
        run_cmd(f"touch {marker}", history, tmp_path, compare=True, **kwargs)  # type: ignore[arg-type]
    assert not marker.exists(), "the compare gate must refuse before running the candidate"
    return caught.value.message


def test_compare_needs_baseline_of_for_cmd(history: History, tmp_path: Path) -> None:
    assert "needs --baseline-of" in _refused_compare(history, tmp_path)


def test_compare_with_unknown_baseline_is_refused(history: History, tmp_path: Path) -> None:
    assert "no such attempt" in _refused_compare(history, tmp_path, baseline_of="nope")


def test_compare_against_an_unchanged_subject_is_refused(history: History, tmp_path: Path) -> None:
    marker = tmp_path / "candidate-ran"
    measured = run_cmd(f"touch {marker}", history, tmp_path, measure=True)
    marker.unlink()
    message = _refused_compare(history, tmp_path, baseline_of=measured.invocation_id)
    assert "unchanged" in message


def test_compare_under_other_conditions_is_refused(history: History, tmp_path: Path) -> None:
    measured = run_cmd("true", history, tmp_path, measure=True, timeout=10)
    message = _refused_compare(history, tmp_path, baseline_of=measured.invocation_id, timeout=20)
    assert "other conditions" in message
    message = _refused_compare(
        history, tmp_path, baseline_of=measured.invocation_id, timeout=10, samples=2
    )
    assert "other conditions" in message


def test_partial_baseline_is_refused(history: History, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    incumbent = counter_command(counter, "if [ $n -eq 2 ]; then sleep 30; fi")
    measured = run_cmd(incumbent, history, tmp_path, samples=2, timeout=0.5, measure=True)
    assert [s.outcome for s in measured.samples] == ["pass", "error"]
    message = _refused_compare(
        history, tmp_path, baseline_of=measured.invocation_id, samples=2, timeout=0.5
    )
    assert "partial: 1 graded of the 2" in message
    # after an admitted retry of the timed-out sample the baseline is complete
    run_cmd(incumbent, history, tmp_path, timeout=0.5, retry_of=measured.attempts[1].id)
    report = run_cmd(
        "true",
        history,
        tmp_path,
        samples=2,
        timeout=0.5,
        compare=True,
        baseline_of=measured.invocation_id,
    )
    assert report.delta is not None and report.delta.baseline.n == 2


def test_baseline_of_another_runner_is_refused(history: History, tmp_path: Path) -> None:
    measured = run_cmd("true", history, tmp_path, measure=True)
    row = measured.attempts[0]
    with history._write() as db:  # a prompt measurement, as another invocation would write it
        db.execute("UPDATE harness_attempts SET runner = 'prompt' WHERE id = ?", (row.id,))
    assert "prompt measurement" in _refused_compare(history, tmp_path, baseline_of=str(row.id))


def test_measure_and_compare_together_are_refused(history: History, tmp_path: Path) -> None:
    with pytest.raises(Refusal, match="two separate arms"):
        run_cmd("true", history, tmp_path, measure=True, compare=True)
