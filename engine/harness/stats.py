"""Rates with honest uncertainty: the Wilson score interval (pure).

A 17/20 and a 170/200 run have the same ratio and very different meaning; the interval is what
says so. Wilson is used rather than the normal approximation because it stays inside [0, 1] and
behaves at k = 0 and k = n, the cases a small sample count produces all the time.
"""

from __future__ import annotations

import math
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

    def render(self) -> str:
        """`12/14 [0.57, 0.94] (95% CI)`."""
        low, high = self.interval
        return f"{self.k}/{self.n} [{low:.2f}, {high:.2f}] (95% CI)"
