"""Banding: every rule that turns sample outcomes into PASS/FAIL/INCONCLUSIVE/ABSTAIN/ERROR."""

from __future__ import annotations

import pytest

from engine.harness.banding import EXIT_CODES, Band, SampleOutcome, Tally, band, combine_gates
from engine.harness.grading import semantic_outcome

CASES: list[tuple[list[SampleOutcome], Band, int]] = [
    # PASS only when every requested sample was graded and passed
    (["pass"], Band.PASS, 0),
    (["pass", "pass", "pass"], Band.PASS, 0),
    # a pass next to an abstention or an error is not a softened pass
    (["pass", "pass", "abstain"], Band.INCONCLUSIVE, 3),
    (["pass", "pass", "error"], Band.INCONCLUSIVE, 3),
    # flaky: passes 2 of 3
    (["pass", "fail", "pass"], Band.INCONCLUSIVE, 3),
    (["fail", "pass", "pass"], Band.INCONCLUSIVE, 3),
    # FAIL when every graded sample failed
    (["fail"], Band.FAIL, 1),
    (["fail", "fail", "fail"], Band.FAIL, 1),
    (["fail", "fail", "abstain"], Band.FAIL, 1),
    (["fail", "error", "error"], Band.FAIL, 1),
    # nothing graded
    (["abstain"], Band.ABSTAIN, 3),
    (["abstain", "abstain", "abstain"], Band.ABSTAIN, 3),
    (["error"], Band.ERROR, 2),
    (["error", "error", "error"], Band.ERROR, 2),
    (["abstain", "error", "abstain"], Band.INCONCLUSIVE, 3),
    # a mix of everything
    (["pass", "fail", "abstain", "error"], Band.INCONCLUSIVE, 3),
]


@pytest.mark.parametrize(("outcomes", "expected", "exit_code"), CASES)
def test_band_and_exit_code(outcomes: list[SampleOutcome], expected: Band, exit_code: int) -> None:
    result = band(Tally.of(outcomes))
    assert result is expected
    assert EXIT_CODES[result] == exit_code


def test_no_samples_is_an_error_not_a_pass() -> None:
    assert band(Tally()) is Band.ERROR


def test_every_band_has_an_exit_code() -> None:
    assert {b: EXIT_CODES[b] for b in Band} == {
        Band.PASS: 0,
        Band.FAIL: 1,
        Band.ERROR: 2,
        Band.ABSTAIN: 3,
        Band.INCONCLUSIVE: 3,
    }


def test_tally_counts_and_pass_rate() -> None:
    tally = Tally.of(["pass", "fail", "pass", "abstain", "error"])
    assert (tally.passed, tally.failed, tally.abstained, tally.errored) == (2, 1, 1, 1)
    assert tally.total == 5 and tally.graded == 3
    assert (tally.pass_rate.k, tally.pass_rate.n) == (2, 3)
    assert tally.render() == "2/5 passed, 1 failed, 1 abstained, 1 errored"


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        (["pass"], "pass"),
        (["pass", "pass"], "pass"),
        (["pass", "fail"], "fail"),
        (["fail", "error"], "fail"),  # a definite failed check decides
        (["pass", "error"], "error"),
        (["pass", "abstain"], "abstain"),
        (["abstain", "error"], "error"),
    ],
)
def test_gates_combine_into_one_sample_outcome(
    gates: list[SampleOutcome], expected: SampleOutcome
) -> None:
    assert combine_gates(gates) == expected


@pytest.mark.parametrize(
    ("verdict", "outcome"),
    [
        ("yes", "pass"),
        ("no", "fail"),
        ("partial", "fail"),
        ("blocked", "fail"),
        ("cannot_judge", "abstain"),
        ("error", "error"),
        ("maybe", "error"),  # anything unexpected is never a pass
    ],
)
def test_semantic_verdicts_map_to_outcomes(verdict: str, outcome: SampleOutcome) -> None:
    assert semantic_outcome(verdict) == outcome
