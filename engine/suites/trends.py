"""A suite's judges over its runs: per run and judge, the pass rate with its Wilson interval,
read back from `history.db` and aggregated as a run's own report aggregates (subject arm, first
sample). Oldest first, so a chart reads left to right."""

from __future__ import annotations

from dataclasses import dataclass

from engine.model.stats import Rate
from engine.runtime.history import History
from engine.suites.aggregate import judgement_scores, summarise

LAST_RUNS = 20


@dataclass(frozen=True)
class RunRate:
    """One judge in one run: passes of the cases it judged, and how many it could not."""

    run_id: str
    at: str  # the run's start (UTC, ISO 8601)
    rate: Rate
    errored: int


def judge_trends(
    history: History, suite: str, upto_run_id: str, last: int = LAST_RUNS
) -> dict[str, list[RunRate]]:
    """judge -> its rate in each of the `last` runs of `suite` up to `upto_run_id` (included;
    baselines measured with --measure-baseline are not runs of the subject)."""
    mine = history.suite_run(upto_run_id)
    upto = upto_run_id if mine is not None and (mine.suite, mine.kind) == (suite, "run") else None
    runs = history.suite_runs(suite, kind="run", upto=upto, limit=last)  # newest first
    trends: dict[str, list[RunRate]] = {}
    for run in reversed(runs):
        rows = history.suite_judgements(run.run_id)
        judges = list(dict.fromkeys((r.judge, r.judge_kind) for r in rows if r.arm == "subject"))
        for summary in summarise(judges, judgement_scores(rows, "subject"), ()):
            point = RunRate(run.run_id, run.started_at, summary.pass_rate, summary.errored)
            trends.setdefault(summary.name, []).append(point)
    return trends
