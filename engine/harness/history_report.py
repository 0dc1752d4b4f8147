"""Rates over a target's recorded attempts: what `ll-harness history` prints (pure).

Only authoritative rows count: an attempt superseded by an infra retry is replaced by the retry,
so a retry chain counts once, as its surviving attempt. The pass rate is passes over graded rows
(pass or fail, whichever gate graded them — exit-code-only runs count too); the abstention rate
is abstentions over the rows a judge was asked about (graded + abstained). Errors count in
neither and are reported on their own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.harness.banding import Tally
from engine.model.stats import Rate
from engine.runtime.history import Attempt, AttemptGroup

RECENT_DAYS = 30
MIN_PRIOR_ROWS = 3


@dataclass(frozen=True)
class HistorySummary:
    target: str
    since: str | None
    rows: int  # every row selected, superseded ones too
    latest: tuple[Attempt, ...]  # the newest rows, newest first (as many as will be listed)
    tally: Tally  # authoritative rows only
    superseded: int
    admissions: dict[str, int] = field(default_factory=dict)
    # rows per runner: more than one means different subjects that share a target text are
    # pooled (a shell command and a prompt both spelled `make test`)
    runners: dict[str, int] = field(default_factory=dict)

    @property
    def pass_rate(self) -> Rate:
        return self.tally.pass_rate

    @property
    def abstention_rate(self) -> Rate:
        return Rate(self.tally.abstained, self.tally.graded + self.tally.abstained)

    def to_json(self, last: int = 10) -> dict[str, Any]:
        return {
            "target": self.target,
            "since": self.since,
            "rows": self.rows,
            "authoritative": self.tally.total,
            "superseded": self.superseded,
            "runners": self.runners,
            "tally": self.tally.to_json(),
            "pass_rate": self.pass_rate.to_json(),
            "abstention_rate": self.abstention_rate.to_json(),
            "admissions": self.admissions,
            "last": [attempt_json(a) for a in self.latest[:last]],
        }


def summarize(target: str, attempts: Sequence[Attempt], since: str | None) -> HistorySummary:
    """The summary of `attempts` (every row selected, newest first)."""
    groups = Counter(
        (a.runner, a.outcome, a.authoritative, a.retry_of is not None) for a in attempts
    )
    counts = [AttemptGroup(*key, count) for key, count in groups.items()]
    return summarize_counts(target, counts, tuple(attempts), since)


def summarize_counts(
    target: str, groups: Sequence[AttemptGroup], latest: Sequence[Attempt], since: str | None
) -> HistorySummary:
    """The summary of the rows `groups` counts (`History.attempt_counts`), listing `latest`."""
    counted = [g for g in groups if g.authoritative]
    outcomes: Counter[str] = Counter()
    runners: Counter[str] = Counter()
    for g in groups:
        runners[g.runner] += g.count
    for g in counted:
        outcomes[g.outcome] += g.count
    retries = sum(g.count for g in counted if g.retry)
    rows = sum(runners.values())
    return HistorySummary(
        target=target,
        since=since,
        rows=rows,
        latest=tuple(latest),
        tally=Tally(outcomes["pass"], outcomes["fail"], outcomes["abstain"], outcomes["error"]),
        superseded=rows - sum(g.count for g in counted),
        admissions={"timeout": retries} if retries else {},
        runners=dict(sorted(runners.items())),
    )


def recent_since(now: datetime | None = None) -> str:
    """The start of the window `--output json` reports history rates over."""
    return ((now or datetime.now(UTC)) - timedelta(days=RECENT_DAYS)).isoformat()


def attempt_json(attempt: Attempt) -> dict[str, Any]:
    return {
        "id": attempt.id,
        "invocation_id": attempt.invocation_id,
        "created_at": attempt.created_at,
        "runner": attempt.runner,
        "kind": attempt.attempt_kind,
        "sample": attempt.sample_index,
        "outcome": attempt.outcome,
        "exit_code": attempt.exit_code,
        "expected_exit_code": attempt.expected_exit_code,
        "semantic_criterion": attempt.semantic_criterion,
        "semantic_verdict": attempt.semantic_verdict,
        "confidence": attempt.confidence,
        "reason": attempt.reason,
        "timed_out": attempt.timed_out,
        "superseded_by": attempt.superseded_by,
        "retry_of": attempt.retry_of,
        "content_hash": attempt.target_content_hash,
        "git_head": attempt.git_head,
        "git_dirty": attempt.git_dirty,
        "git_branch": attempt.git_branch,
    }
