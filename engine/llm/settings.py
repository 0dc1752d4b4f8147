"""Where each LLM setting comes from: the loop, the state, or the environment (pure, no IO).

Precedence is fixed by docs/llm.md ("Models") and written down once here:
- judge model: state `model` → evaluate `model` → loop `llm.model` → `LL_JUDGE_MODEL` →
  `LL_MODEL` → `DEFAULT_MODEL`;
- prompt model: state `model` → loop `llm.model` → `LL_MODEL` → `DEFAULT_MODEL`;
- runner: state `runner` → loop `llm.runner` → `LL_PROMPT_RUNNER` → `anthropic`.
Retry waits and the request timeout come from `LL_LLM_*` variables so tests can shrink them;
the judged-text limit from `LL_JUDGE_MAX_CHARS`. "The environment" is the process's, or a run's
own when the caller gave it one (`engine.run(env=...)`): each reader takes it as `environ`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from engine.model.loop import Evaluate, Loop, State

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_RUNNER = "anthropic"
DEFAULT_MAX_TOKENS = 1024
DEFAULT_PROMPT_MAX_TOKENS = 4096
DEFAULT_TIMEOUT = 120.0
DEFAULT_JUDGE_MAX_CHARS = 100_000


Environ = Mapping[str, str] | None
"""A run's environment, or None for the process's (`os.environ`)."""


def _env(name: str, environ: Environ = None) -> str | None:
    value = (os.environ if environ is None else environ).get(name, "").strip()
    return value or None


def _env_float(name: str, default: float, environ: Environ = None) -> float:
    value = _env(name, environ)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        return default


def _env_positive_int(name: str, default: int, environ: Environ = None) -> int:
    """A whole number >= 1 from the environment; unset, unparsable or < 1 gives `default`."""
    value = _env(name, environ)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        return default
    return number if number >= 1 else default


def _first_set(*candidates: str | None, default: str) -> str:
    """The first non-empty candidate (the precedence order), else `default`."""
    return next((c for c in candidates if c), default)


def judge_model(
    spec: Evaluate | None,
    state: State | None,
    loop: Loop | None,
    explicit: str | None = None,
    environ: Environ = None,
) -> str:
    """The model a judge uses (first non-empty wins)."""
    return _first_set(
        explicit,
        state.model if state else None,
        spec.model if spec else None,
        loop.llm.model if loop else None,
        _env("LL_JUDGE_MODEL", environ),
        _env("LL_MODEL", environ),
        default=DEFAULT_MODEL,
    )


def prompt_model(
    state: State | None, loop: Loop | None, explicit: str | None = None, environ: Environ = None
) -> str:
    """The model a prompt action uses with the `anthropic` runner."""
    return _first_set(
        explicit,
        state.model if state else None,
        loop.llm.model if loop else None,
        _env("LL_MODEL", environ),
        default=DEFAULT_MODEL,
    )


def prompt_runner(
    state: State | None, loop: Loop | None, explicit: str | None = None, environ: Environ = None
) -> str:
    """The runner name of a prompt action (`anthropic` or `cmd:<command>`)."""
    return _first_set(
        explicit,
        state.runner if state else None,
        loop.llm.runner if loop else None,
        _env("LL_PROMPT_RUNNER", environ),
        default=DEFAULT_RUNNER,
    )


def request_timeout(loop: Loop | None, environ: Environ = None) -> float:
    """Seconds one HTTP attempt may take: loop `llm.timeout` → `LL_LLM_TIMEOUT` → 120."""
    if loop is not None and loop.llm.timeout:
        return float(loop.llm.timeout)
    return _env_float("LL_LLM_TIMEOUT", DEFAULT_TIMEOUT, environ)


def judge_max_chars() -> int:
    """Characters of judged text one judge request carries: `LL_JUDGE_MAX_CHARS` → 100,000.

    A longer text is shortened to its head and tail (`engine.llm.judge.shorten_judged_text`), so
    a huge action output neither overflows the model's context nor costs a fortune.
    """
    return _env_positive_int("LL_JUDGE_MAX_CHARS", DEFAULT_JUDGE_MAX_CHARS)


# Extended-thinking budgets (tokens) of the named judge reasoning levels.
REASONING_LEVELS = {"low": 1024, "medium": 4096, "high": 16384}


def judge_reasoning(*candidates: str | int | None, environ: Environ = None) -> int | None:
    """The thinking budget of a judge: the first set of `candidates` (judge, then its
    assessment), else `LL_JUDGE_REASONING`; None when off. A value that is not off, low,
    medium, high or a whole number >= 1024 raises ValueError naming it."""
    chosen: str | int | None = next((c for c in candidates if c not in (None, "")), None)
    source = "reasoning"
    if chosen is None:
        chosen, source = _env("LL_JUDGE_REASONING", environ), "LL_JUDGE_REASONING"
    if chosen is None or chosen == "off":
        return None
    if isinstance(chosen, str) and chosen.strip().lower() in REASONING_LEVELS:
        return REASONING_LEVELS[chosen.strip().lower()]
    try:
        budget = int(chosen)
    except (TypeError, ValueError):
        budget = 0
    if budget < 1024:
        raise ValueError(
            f"{source}={chosen!r} is not off, low, medium, high or a thinking budget >= 1024"
        )
    return budget


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, bounded by attempts and by total time spent waiting.

    Attempt n (1-based) that fails retryably waits `min(cap, base * 2**(n-1))` scaled by a random
    factor in [0.5, 1.0] — or exactly the server's `retry-after` when it sent one. A wait that
    would push the total past `max_wait` is not taken: the call fails at once instead.
    """

    base: float = 1.0
    cap: float = 30.0
    max_wait: float = 60.0
    max_attempts: int = 5

    @classmethod
    def from_env(cls, environ: Environ = None) -> RetryPolicy:
        """`LL_LLM_RETRY_BASE`, `LL_LLM_RETRY_CAP`, `LL_LLM_MAX_WAIT`, `LL_LLM_MAX_ATTEMPTS`."""
        attempts = _env("LL_LLM_MAX_ATTEMPTS", environ)
        return cls(
            base=_env_float("LL_LLM_RETRY_BASE", cls.base, environ),
            cap=_env_float("LL_LLM_RETRY_CAP", cls.cap, environ),
            max_wait=_env_float("LL_LLM_MAX_WAIT", cls.max_wait, environ),
            max_attempts=int(attempts) if attempts and attempts.isdigit() else cls.max_attempts,
        )

    def backoff(self, attempt: int, jitter: float) -> float:
        """The wait after failed attempt `attempt`, `jitter` drawn from [0, 1)."""
        exponential: float = self.base * 2.0 ** (attempt - 1)
        return min(self.cap, exponential) * (0.5 + jitter / 2)


NUMERIC_ENV = {
    "LL_LLM_TIMEOUT": "a number of seconds > 0",
    "LL_LLM_RETRY_BASE": "a number of seconds >= 0",
    "LL_LLM_RETRY_CAP": "a number of seconds >= 0",
    "LL_LLM_MAX_WAIT": "a number of seconds >= 0",
    "LL_LLM_MAX_ATTEMPTS": "a whole number >= 1",
    "LL_JUDGE_MAX_CHARS": "a whole number >= 1",
    "LL_LLM_RPM": "a number of requests per minute > 0",
}
_WHOLE_NUMBERS = ("LL_LLM_MAX_ATTEMPTS", "LL_JUDGE_MAX_CHARS")
# The seconds settings take a loop file's bound on its timeouts (loop.schema.json: 365 days);
# a longer one overflows the HTTP client's deadline and fails every call.
MAX_SECONDS = 31_536_000


def env_problem(name: str, environ: Environ = None) -> str | None:
    """The sentence refusing the setting `name` of `NUMERIC_ENV`, or None when it is unset or
    fits (the preflight and the cluster's rate limiter both say it this way)."""
    value = _env(name, environ)
    if value is None:
        return None
    wanted = NUMERIC_ENV[name]
    try:
        number = int(value) if name in _WHOLE_NUMBERS else float(value)
    except ValueError:
        number = -1
    if not math.isfinite(number):
        number = -1  # nan and inf are no setting
    positive = name in {"LL_LLM_TIMEOUT", "LL_LLM_RPM"} or name in _WHOLE_NUMBERS
    low_ok = number > 0 if positive else number >= 0
    if not low_ok:
        return f"{name}={value!r} is not {wanted}: fix or unset it"
    if "seconds" in wanted and number > MAX_SECONDS:
        return (
            f"{name}={value!r} is not {wanted} and at most {MAX_SECONDS} (365 days, the "
            "bound of a loop file's timeouts): fix or unset it"
        )
    return None


def env_problems(environ: Environ = None) -> list[str]:
    """`LL_LLM_*` / `LL_JUDGE_MAX_CHARS` values that would silently fall back to defaults; one
    sentence each (the run's preflight stops on them)."""
    problems = [p for p in (env_problem(name, environ) for name in NUMERIC_ENV) if p]
    try:
        judge_reasoning(environ=environ)
    except ValueError as exc:
        problems.append(f"{exc}: fix or unset it")
    return problems
