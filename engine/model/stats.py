"""Rates and means with honest uncertainty: Wilson and bootstrap intervals (pure).

A 17/20 and a 170/200 run have the same ratio and very different meaning; the interval is what
says so. Wilson is used rather than the normal approximation because it stays inside [0, 1] and
behaves at k = 0 and k = n, the cases a small sample count produces all the time. A mean of
judge scores gets a percentile bootstrap interval: scores are bounded and often skewed (most
cases 4 or 5), where a normal interval would spill past the scale.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the two-sided 95% standard-normal quantile


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of `k` successes in `n` trials; (0, 1) when `n` is 0."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return (low, high)


@dataclass(frozen=True)
class Rate:
    """`k` of `n` with its 95% Wilson interval; `value` is None when nothing was counted."""

    k: int
    n: int

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.k, self.n)

    def to_json(self) -> dict[str, object]:
        low, high = self.interval
        return {"k": self.k, "n": self.n, "rate": self.value, "low": low, "high": high}

    def render(self, digits: int = 2) -> str:
        """`12/14 [0.57, 0.94] (95% CI)`."""
        low, high = self.interval
        return f"{self.k}/{self.n} [{low:.{digits}f}, {high:.{digits}f}] (95% CI)"


BOOTSTRAP_RESAMPLES = 2000
# Above this many values the bootstrap distribution of the mean is its normal limit to within
# the resampling noise, and resampling would cost seconds: the limit is used instead.
BOOTSTRAP_MAX_N = 200


def bootstrap_interval(
    values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """The 95% percentile bootstrap interval of the mean of `values`.

    Seeded, so the same values always give the same interval (a report must not change between
    two renderings). All values equal give a point; no values give (nan, nan).
    """
    n = len(values)
    if n == 0:
        return (math.nan, math.nan)
    data = sorted(float(v) for v in values)  # the order values arrived in must not matter
    if min(data) == max(data):
        return (data[0], data[0])
    if n > BOOTSTRAP_MAX_N:
        mean = math.fsum(data) / n
        spread = math.sqrt(math.fsum((v - mean) ** 2 for v in data) / n)
        half = Z95 * spread / math.sqrt(n)
        return (max(min(data), mean - half), min(max(data), mean + half))
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(data, k=n)) / n for _ in range(resamples))
    low = means[int(0.025 * (resamples - 1))]
    high = means[math.ceil(0.975 * (resamples - 1))]
    return (low, high)


def unseen_mass_interval(value: float, n: int, bounds: tuple[float, float]) -> tuple[float, float]:
    """The 95% interval of the mean of `n` values in `bounds` that all came out `value`.

    Resampling them gives the point `value` whatever `n` is: two cases would be as certain as a
    thousand. What they do show is that the share of values other than `value` is small — at
    most `1 - low` of the Wilson interval of n/n (0.66 at n = 2, 0.04 at n = 100) — and the
    rest can lie anywhere in `bounds`. So two scores of 1 in [0, 1] give [0.34, 1], as two
    passing bool cases do.
    """
    low, high = bounds
    unseen = 1.0 - wilson_interval(n, n)[0]
    return (value - (value - low) * unseen, value + (high - value) * unseen)


@dataclass(frozen=True)
class Mean:
    """The mean of `values` with its 95% bootstrap interval; `value` is None when empty.

    One value has no interval: resampling it gives a point, which would make a single case as
    certain as a thousand (a gate judged by it would PASS or FAIL on one case, where one bool
    case's Wilson interval is [0.21, 1]). Within the values' `bounds` (a judge's score range),
    values that are all equal (which resample to a point) get `unseen_mass_interval`, and values
    all at the range's ends (a proportion, where the bootstrap claims more than Wilson: 9 of 10
    gave [0.70, 1] against [0.60, 0.98]) get the Wilson interval scaled to the range."""

    values: tuple[float, ...]
    bounds: tuple[float, float] | None = None

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def value(self) -> float | None:
        return math.fsum(self.values) / len(self.values) if self.values else None

    @property
    def interval(self) -> tuple[float, float] | None:
        if self.n < 2:
            return None
        if self.bounds is not None:
            low, high = self.bounds
            values = self.values
            if low < high and all(low <= v <= high for v in values):  # a range they keep to
                if all(v in (low, high) for v in values):
                    # only the range's ends: a proportion, as certain as that many bool cases
                    k = sum(1 for v in values if v == high)
                    w_low, w_high = wilson_interval(k, self.n)
                    return (low + (high - low) * w_low, low + (high - low) * w_high)
                if min(values) == max(values):
                    return unseen_mass_interval(values[0], self.n, self.bounds)
        return bootstrap_interval(self.values)

    def to_json(self) -> dict[str, object]:
        low, high = self.interval or (None, None)
        return {"n": self.n, "mean": self.value, "low": low, "high": high}

    def render(self, digits: int = 2) -> str:
        """`3.85 [3.52, 4.14] (n=20)`."""
        if self.value is None:
            return "n/a (n=0)"
        if self.interval is None:
            return f"{self.value:.2f} (n={self.n}: no interval)"
        low, high = self.interval
        return f"{self.value:.2f} [{low:.{digits}f}, {high:.{digits}f}] (n={self.n})"
