"""Pass rate over time: one point per ll-harness invocation, with its Wilson interval (pure).

An invocation's authoritative rows (infra retries replace what they retried) make one rate:
passes over graded rows. Points come oldest first, so a chart reads left to right.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.harness.stats import Rate
from engine.runtime.history import Attempt, History

CHART_POINTS = 200  # invocations a chart shows at most: the last ones


@dataclass(frozen=True)
class RatePoint:
    invocation_id: str
    at: str  # the invocation's first row's time
    runner: str
    rate: Rate
    abstained: int
    errored: int


def pass_rate_series(attempts: Iterable[Attempt]) -> list[RatePoint]:
    """Per invocation, in time order."""
    groups: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        if attempt.authoritative:
            groups.setdefault(attempt.invocation_id, []).append(attempt)
    points = []
    for invocation, rows in groups.items():
        outcomes = [r.outcome for r in rows]
        graded = sum(1 for o in outcomes if o in ("pass", "fail"))
        points.append(
            RatePoint(
                invocation_id=invocation,
                at=min(r.created_at for r in rows),
                runner=rows[0].runner,
                rate=Rate(outcomes.count("pass"), graded),
                abstained=outcomes.count("abstain"),
                errored=outcomes.count("error"),
            )
        )
    return sorted(points, key=lambda p: p.at)


def recent_rate_series(
    history: History, target: str, last: int = CHART_POINTS
) -> tuple[list[RatePoint], int]:
    """`pass_rate_series` of the last `last` invocations on `target`, counted in SQL; and how
    many invocations there are in all (the chart says when it shows only the last ones)."""
    rows, total = history.invocation_rates(target, limit=last)
    points = [
        RatePoint(invocation, at, runner, Rate(passed, graded), abstained, errored)
        for invocation, at, runner, passed, graded, abstained, errored in rows
    ]
    return points, total
