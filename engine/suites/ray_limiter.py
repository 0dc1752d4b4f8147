"""One LLM rate limiter for every Ray worker of a suite run: a Ray actor, and the gate that asks it.

Each worker's LLM client (`engine.llm.client.AnthropicClient`) asks the gate before every HTTP
attempt and tells it every `retry-after` the API sends. The actor keeps two facts for the whole
cluster: until when everyone must pause (the latest retry-after), and, when a requests-per-minute
budget is set (`LL_LLM_RPM`), the next free send slot. So one 429 slows every worker, not just
the one that received it. See docs/scale.md.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

RPM_ENV = "LL_LLM_RPM"
ASK_TIMEOUT = 30.0  # seconds to wait for the limiter's answer
LONGEST_NAP = 5.0  # a paused worker asks again at least this often (a pause may be extended)


class LlmLimiter:
    """The actor's state and methods (plain Python; Ray runs one instance for the run)."""

    def __init__(self, per_minute: float | None = None) -> None:
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self.paused_until = 0.0
        self.next_slot = 0.0
        self.holds = 0

    def turn(self) -> tuple[float, bool]:
        """(seconds to wait, admitted). Not admitted: a pause is on; wait, then ask again.
        Admitted: a send slot is reserved `seconds` from now."""
        now = time.monotonic()
        if self.paused_until > now:
            return self.paused_until - now, False
        start = max(now, self.next_slot)
        self.next_slot = start + self.interval
        return start - now, True

    def hold(self, seconds: float) -> None:
        """Everyone pauses `seconds` from now (a pause already longer stays)."""
        self.holds += 1
        self.paused_until = max(self.paused_until, time.monotonic() + max(0.0, seconds))

    def stats(self) -> dict[str, float]:
        return {"holds": self.holds, "paused_for": max(0.0, self.paused_until - time.monotonic())}


def rpm_from_env() -> float | None:
    """`LL_LLM_RPM`: the account's requests per minute shared by the cluster (unset: no cap)."""
    from engine.llm.settings import env_problem

    problem = env_problem(RPM_ENV)
    if problem is not None:
        from engine.model.errors import UsageError

        raise UsageError(problem)
    text = os.environ.get(RPM_ENV, "").strip()
    return float(text) if text else None


def start_limiter(ray: Any, per_minute: float | None) -> Any:
    """Start the run's limiter actor (it ends with the driver's job, or `ray.kill`)."""
    actor = ray.remote(num_cpus=0, max_restarts=-1)(LlmLimiter)
    return actor.remote(per_minute)


@dataclass(frozen=True)
class ActorGate:
    """`engine.llm.client.RateGate` over the limiter actor; pickled into each worker. An
    unreachable limiter admits at once: each client still honours its own retry-after."""

    actor: Any  # a Ray ActorHandle

    def wait_turn(self) -> None:
        import ray

        while True:
            try:
                delay, admitted = ray.get(self.actor.turn.remote(), timeout=ASK_TIMEOUT)
            except Exception:
                return
            if admitted:
                if delay > 0:
                    time.sleep(delay)
                return
            time.sleep(min(delay, LONGEST_NAP))

    def hold(self, seconds: float) -> None:
        import ray

        try:
            ray.get(self.actor.hold.remote(seconds), timeout=ASK_TIMEOUT)
        except Exception:
            return
