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
from engine.runtime.history import Attempt

RECENT_DAYS = 30
MIN_PRIOR_ROWS = 3


@dataclass(frozen=True)
class HistorySummary:
    target: str
    since: str | None
    attempts: tuple[Attempt, ...]  # every row, newest first
    tally: Tally  # authoritative rows only
    superseded: int
    admissions: dict[str, int] = field(default_factory=dict)

    @property
    def pass_rate(self) -> Rate:
        return self.tally.pass_rate

    @property
    def runners(self) -> dict[str, int]:
        """Rows per runner: more than one means different subjects that share a target text
        are pooled (a shell command and a prompt both spelled `make test`)."""
        return dict(sorted(Counter(a.runner for a in self.attempts).items()))

    @property
    def abstention_rate(self) -> Rate:
        return Rate(self.tally.abstained, self.tally.graded + self.tally.abstained)

    def to_json(self, last: int = 10) -> dict[str, Any]:
        return {
            "target": self.target,
            "since": self.since,
            "rows": len(self.attempts),
            "authoritative": self.tally.total,
            "superseded": self.superseded,
            "runners": self.runners,
            "tally": self.tally.to_json(),
            "pass_rate": self.pass_rate.to_json(),
            "abstention_rate": self.abstention_rate.to_json(),
            "admissions": self.admissions,
            "last": [attempt_json(a) for a in self.attempts[:last]],
        }


def summarize(target: str, attempts: Sequence[Attempt], since: str | None) -> HistorySummary:
    counted = [a for a in attempts if a.authoritative]
    admissions = Counter("timeout" for a in counted if a.retry_of is not None)
    return HistorySummary(
        target=target,
        since=since,
        attempts=tuple(attempts),
        tally=Tally.of(a.outcome for a in counted),
        superseded=len(attempts) - len(counted),
        admissions=dict(admissions),
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
