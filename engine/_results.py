"""The typed results of `engine.api` that describe runs: where one stands (`RunStatus`), what a
stop did (`StopResult`), a row of history (`HistoryEntry`).

Kept apart from `engine.api` so that `ll-loop validate`, which needs none of them, does not pay
for building these classes at start-up; `engine.api` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal


@dataclass(frozen=True)
class RunStatus:
    """Where one run stands, from its directory (or the lock queue, for a run still waiting)."""

    run_id: str
    # "damaged": a run directory whose state.json is missing or does not parse (`error` says
    # which); only its id and directory are known (`status --all` lists it).
    status: Literal["running", "interrupted", "stopped", "finished", "queued", "damaged"]
    loop: str | None = None
    loop_file: str = ""
    state: str | None = None
    steps: int = 0
    elapsed_s: float = 0.0
    started_at: str | None = None
    pid: int | None = None
    alive: bool = False
    outcome: str | None = None
    terminated_by: str | None = None
    error: str | None = None
    run_dir: Path | None = None
    resumable: bool = False
    orphaned_actions: tuple[int, ...] = ()  # action process groups a dead run left running
    waiting_for: tuple[str, ...] = ()  # a queued run: the scope paths it waits for
    cost_usd: float = 0.0  # LLM spend so far
    # States whose agent CLI reported no cost: their spend is not in `cost_usd` (a lower bound).
    cost_unknown_in: tuple[str, ...] = ()

    # sessions killed and then resumed: `elapsed_s` is then a lower bound, as when `interrupted`
    killed_attempts: int = 0

    @property
    def elapsed_is_lower_bound(self) -> bool:
        """The run ran on after its last record (killed now, or before a resume)."""
        return self.status == "interrupted" or self.killed_attempts > 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "loop": self.loop,
            "status": self.status,
            "state": self.state,
            "steps": self.steps,
            "elapsed_ms": int(self.elapsed_s * 1000),
            "started_at": self.started_at,
            "pid": self.pid,
            "alive": self.alive,
            "outcome": self.outcome,
            "terminated_by": self.terminated_by,
            "cost_usd": self.cost_usd,
            "run_dir": None if self.run_dir is None else str(self.run_dir),
            "killed_attempts": self.killed_attempts,
            "elapsed_is_lower_bound": self.elapsed_is_lower_bound,
        }
        if self.status == "queued":
            data["waiting_for"] = list(self.waiting_for)
        if self.cost_unknown_in:
            data["cost_unknown_in"] = list(self.cost_unknown_in)
        if self.status == "damaged":
            data["error"] = self.error
        return data


@dataclass(frozen=True)
class StopResult:
    """What `stop` did: `stopped` is False when the run was still alive when `wait` ran out."""

    run_id: str
    stopped: bool
    was: Literal["running", "interrupted", "stopped", "queued"]
    status: RunStatus | None = None  # the run after the stop (None for a queued new run)
    ended_actions: tuple[int, ...] = ()  # a dead run's action groups that were ended


@dataclass(frozen=True)
class HistoryEntry:
    """One run as `.loops/history.db` recorded it; `status` is live for a run that has not
    ended (running, interrupted or stopped), else `finished`."""

    run_id: str
    loop: str
    started_at: str
    ended_at: str | None
    terminated_by: str | None
    final_state: str | None
    outcome: str | None
    steps: int
    cost_usd: float
    error: str | None
    parent_run_id: str | None
    depth: int
    status: str = "finished"
    # States whose agent CLI reported no cost: their spend is not in `cost_usd` (a lower bound).
    cost_unknown_in: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["cost_usd"] = round(self.cost_usd, 6)  # a sum of float costs: 0.018, not ...002
        if self.ended_at is not None:
            del data["status"]
        if self.cost_unknown_in:
            data["cost_unknown_in"] = list(self.cost_unknown_in)
        else:
            del data["cost_unknown_in"]
        return data
