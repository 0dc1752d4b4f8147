"""Wilson intervals against an independent high-precision reference, and their properties."""

from __future__ import annotations

from decimal import Decimal, getcontext

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.harness.stats import Z95, Rate, wilson_interval

getcontext().prec = 60


def reference(k: int, n: int) -> tuple[Decimal, Decimal]:
    """The bounds as the two roots of the score equation (p̂ − p)² = z² p (1 − p) / n.

    Solved as a quadratic in p with 60-digit decimals, so it shares no code or float rounding
    with the implementation: (1 + z²/n) p² − (2p̂ + z²/n) p + p̂² = 0.
    """
    z = Decimal(repr(Z95))
    kk, nn = Decimal(k), Decimal(n)
    phat = kk / nn
    a = 1 + z * z / nn
    b = -(2 * phat + z * z / nn)
    c = phat * phat
    root = (b * b - 4 * a * c).sqrt()
    return ((-b - root) / (2 * a), (-b + root) / (2 * a))


TABLE = [
    (0, 1), (1, 1), (0, 2), (1, 2), (2, 2), (0, 3), (1, 3), (2, 3), (3, 3),
    (0, 10), (1, 10), (5, 10), (9, 10), (10, 10), (12, 14), (17, 20), (170, 200),
    (0, 1000), (1, 1000), (999, 1000), (1000, 1000), (333, 1000), (7, 31),
]  # fmt: skip


@pytest.mark.parametrize(("k", "n"), TABLE)
def test_matches_the_reference_to_1e_9(k: int, n: int) -> None:
    low, high = wilson_interval(k, n)
    ref_low, ref_high = reference(k, n)
    assert abs(Decimal(low) - ref_low) < Decimal("1e-9")
    assert abs(Decimal(high) - ref_high) < Decimal("1e-9")


def test_zero_trials_is_the_whole_unit_interval() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert Rate(0, 0).value is None
    assert Rate(0, 0).render() == "0/0 [0.00, 1.00] (95% CI)"


def test_edges_are_exact() -> None:
    assert wilson_interval(0, 7)[0] == 0.0
    assert wilson_interval(7, 7)[1] == 1.0


def test_known_published_values() -> None:
    # Widely tabulated Wilson 95% intervals (e.g. Newcombe 1998, table I, rounded to 4 places).
    assert [round(x, 4) for x in wilson_interval(0, 10)] == [0.0, 0.2775]
    assert [round(x, 4) for x in wilson_interval(81, 263)] == [0.2553, 0.3662]
    assert [round(x, 4) for x in wilson_interval(15, 148)] == [0.0624, 0.1605]


def test_rate_renders_ratio_and_interval() -> None:
    assert Rate(12, 14).render() == "12/14 [0.60, 0.96] (95% CI)"


def test_more_trials_narrow_the_interval_at_the_same_ratio() -> None:
    small_low, small_high = wilson_interval(17, 20)
    big_low, big_high = wilson_interval(170, 200)
    assert big_high - big_low < (small_high - small_low) / 2


@pytest.mark.parametrize(("k", "n"), [(-1, 3), (4, 3), (0, -1)])
def test_impossible_counts_are_rejected(k: int, n: int) -> None:
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson_interval(k, n)


@given(
    st.integers(min_value=1, max_value=5000).flatmap(
        lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
    )
)
def test_interval_contains_the_ratio_and_is_symmetric(kn: tuple[int, int]) -> None:
    k, n = kn
    low, high = wilson_interval(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0
    mirror_low, mirror_high = wilson_interval(n - k, n)
    assert abs(low - (1 - mirror_high)) < 1e-12
    assert abs(high - (1 - mirror_low)) < 1e-12


def test_equal_values_in_a_range_are_as_uncertain_as_as_many_passing_bools() -> None:
    from engine.model.stats import Mean

    for n in (2, 5, 20, 300):
        low, high = Mean((1.0,) * n, (0.0, 1.0)).interval or (None, None)
        assert (low, high) == pytest.approx(wilson_interval(n, n))
    low, high = Mean((3.0,) * 5, (1.0, 5.0)).interval or (0.0, 0.0)
    assert 1.0 < low < 3.0 < high < 5.0
    assert Mean((38.0,) * 4, (0.0, 1.0)).interval == (38.0, 38.0)  # values outside: no range
    assert Mean((4.0, 4.0)).interval == (4.0, 4.0)  # no range known: the bootstrap's point


def test_values_at_the_ends_of_their_range_are_a_proportion() -> None:
    """9 scores of 1 and one of 0 in [0, 1] bootstrapped to [0.70, 1]: min_mean 0.65 PASSed on
    what is, as a bool judge, 9/10 [0.60, 0.98]."""
    from engine.model.stats import Mean

    values = (1.0,) * 9 + (0.0,)
    assert Mean(values, (0.0, 1.0)).interval == pytest.approx(wilson_interval(9, 10))
    low, high = wilson_interval(1, 3)
    assert Mean((1.0, 1.0, 5.0), (1.0, 5.0)).interval == pytest.approx((1 + 4 * low, 1 + 4 * high))
    assert Mean((0.5, 1.0, 1.0), (0.0, 1.0)).interval == pytest.approx((0.5, 1.0))  # bootstrap


def test_a_numeric_gate_holds_whatever_its_errored_cases_would_score() -> None:
    from engine.model.suite import Threshold
    from engine.suites.aggregate import JudgeSummary, Scored, Verdict

    def summary(values: list[float], errored: int, bounds: object) -> JudgeSummary:
        scores = [
            Scored(f"c{i}", "ok", v, False, v >= 3, bounds)  # type: ignore[arg-type]
            for i, v in enumerate(values)
        ] + [Scored(f"e{i}", "error") for i in range(errored)]
        return JudgeSummary("q", "check", tuple(scores), Threshold("q", "min_mean", 3.0))

    values = [4.0, 4.5, 5.0, 4.0, 4.5, 5.0, 4.0, 4.5, 5.0, 4.5]
    assert summary(values, 0, (1.0, 5.0)).verdict is Verdict.PASS
    assert summary(values, 1, (1.0, 5.0)).verdict is Verdict.PASS  # one 1 beside ten: still
    assert summary(values, 6, (1.0, 5.0)).verdict is Verdict.INCONCLUSIVE  # six 1s could sink it
    assert summary(values, 1, None).verdict is Verdict.INCONCLUSIVE  # no range: no bound
