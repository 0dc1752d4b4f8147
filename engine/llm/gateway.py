"""Every LLM call goes through here: replay or cache or live, then log, account and emit.

The gateway is the one place that knows about `llm.jsonl`, the cache, prices and the `llm_call`
event, so the judge and the runners only build requests and read answers. It is thread-safe:
the samples of one judge call it concurrently.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from engine.llm.calllog import CallLog, ReplayLog, ResponseCache, request_hash
from engine.llm.client import LlmCallError, LlmResponse
from engine.llm.prices import PriceTable
from engine.model.ports import Recorder

Status = Literal["ok", "invalid", "error"]
Source = Literal["live", "cache", "replay"]
Validator = Callable[[Mapping[str, Any]], str | None]


STOP_POLL_S = 0.1  # how soon a stopping run abandons a live call
STOPPED = "the run was stopped while this call was waiting for its answer"


class _Stopped(Exception):
    """A live call abandoned because the run is stopping."""


class Transport(Protocol):
    """Sends one Messages API request (with retries); `AnthropicClient` is the real one."""

    def create(
        self,
        request: Mapping[str, Any],
        *,
        deadline: float | None = None,
        stopped: Callable[[], bool] | None = None,
    ) -> LlmResponse: ...


class NullRecorder:
    """A recorder for standalone use that keeps nothing."""

    def emit(self, event: str, **fields: Any) -> None:
        return None

    def flush(self) -> None:
        return None


@dataclass(frozen=True)
class CallTag:
    """Where a call comes from, for events and per-state costs: the state, and the run's depth
    (0 = top-level loop) and step when the interpreter bound them."""

    state: str | None = None
    depth: int = 0
    step: int | None = None

    def fields(self) -> dict[str, Any]:
        found: dict[str, Any] = {"state": self.state, "depth": self.depth}
        if self.step is not None:
            found["step"] = self.step
        return found


@dataclass(frozen=True)
class CallResult:
    """The outcome of one logical call. `body` is the answer when one was received."""

    status: Status
    body: Mapping[str, Any] | None
    error: str | None
    request_hash: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: int = 0
    attempts: int = 1
    source: Source = "live"
    timed_out: bool = False
    replay_miss: bool = False  # a replay with no recorded answer for this call


def _usage(body: Mapping[str, Any] | None) -> tuple[int, int]:
    """The answer's token counts; one that is not a whole number ≥ 0 counts as 0. An endpoint
    (a proxy behind `ANTHROPIC_BASE_URL`, a replayed log) that said `input_tokens: -10000000`
    made the run's cost -$30 and lifted `max_cost_usd`."""
    usage = body.get("usage") if body else None
    if not isinstance(usage, Mapping):
        return 0, 0
    return _tokens(usage.get("input_tokens")), _tokens(usage.get("output_tokens"))


def _recorded_cost(value: Any) -> float | None:
    """The cost a replayed answer had when it was made: it counts in the replay (nothing is
    spent), so the replay of a run that ended `max_cost` ends there too. None when it is not a
    finite number ≥ 0 (a negative one would lift `max_cost_usd`)."""
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _tokens(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


class LlmGateway:
    """Replay → cache → live, then `llm.jsonl`, cost accounting and an `llm_call` event."""

    def __init__(
        self,
        *,
        transport: Transport,
        prices: PriceTable,
        recorder: Recorder | None = None,
        log: CallLog | None = None,
        replay: ReplayLog | None = None,
        cache: ResponseCache | None = None,
        stoppable: bool = False,
    ) -> None:
        """`stoppable`: live calls can be abandoned by `stop` (a run's gateway). Each then waits
        in a thread of its own while the caller looks at the flag every `STOP_POLL_S`: a call
        blocked in the SDK's socket read cannot be interrupted any other way, and a run would
        wait out the request timeout."""
        self.transport = transport
        self.prices = prices
        self.recorder: Recorder = recorder or NullRecorder()
        self.log = log
        self.replay = replay
        self.cache = cache
        self._lock = threading.Lock()
        self._cost = 0.0
        self._by_state: dict[str, float] = {}
        self._stoppable = stoppable
        self._stopping = False  # set by `stop` (from a signal handler: a plain flag)

    def stop(self) -> None:
        """The run is stopping (`ll-loop stop`, Ctrl-C): a live call in flight is abandoned
        within `STOP_POLL_S` (its answer, if one ever comes, is dropped: the API may still bill
        it; the call is logged as an error saying so), and no call is made after it. Safe in a
        signal handler: it only sets a flag."""
        self._stopping = True

    def _is_stopping(self) -> bool:
        return self._stopping

    def close(self) -> None:
        """The run is over: the transport's connections are closed (when it has any)."""
        close = getattr(self.transport, "close", None)
        if callable(close):
            close()

    @property
    def cost_usd(self) -> float:
        with self._lock:
            return self._cost

    def cost_by_state(self) -> dict[str, float]:
        with self._lock:
            return dict(self._by_state)

    def call(
        self,
        request: Mapping[str, Any],
        *,
        sample: int = 0,
        tag: CallTag | None = None,
        purpose: str = "judge",
        validate: Validator | None = None,
        deadline: float | None = None,
    ) -> CallResult:
        """Answer `request`; never raises for API trouble (that is a `status="error"` result)."""
        key = request_hash(request, sample)
        model = str(request.get("model", ""))
        tag = tag or CallTag()
        if self._stopping:  # not made: the run is on its way out
            return CallResult("error", None, STOPPED, key, model, attempts=0)
        if self.replay is not None:
            result = self._from_replay(key, model, tag.state)
        else:
            result = self._from_cache(key, model, request) or self._live(
                key, model, request, deadline
            )
        if result.status == "ok" and validate is not None and result.body is not None:
            problem = validate(result.body)
            if problem is not None:
                result = _with(result, status="invalid", error=problem)
        if result.status == "ok" and result.source == "live" and self.cache is not None:
            assert result.body is not None
            self.cache.put(key, request, result.body)
        self._record(request, sample, tag, purpose, result)
        return result

    def _from_replay(self, key: str, model: str, state: str | None) -> CallResult:
        assert self.replay is not None
        entry = self.replay.take(key)
        if entry is None:
            where = f" for state {state!r}" if state else ""
            miss = (
                f"replay miss: {self.replay.source} has no recorded answer{where} for this "
                f"request (model {model}, hash {key[:12]}); the prompt, text or settings changed"
            )
            return CallResult(
                "error", None, miss, key, model, source="replay", attempts=0, replay_miss=True
            )
        body = entry.get("response")
        body = body if isinstance(body, dict) else None
        tokens_in, tokens_out = _usage(body)
        # a recorded failure replays as that failure; a recorded answer is validated again
        status: Status = "ok" if body is not None else "error"
        error = None if body is not None else str(entry.get("error") or "recorded call failed")
        cost = _recorded_cost(entry.get("cost_usd"))
        if cost is None:  # a log without the field (or edited): its tokens at today's prices
            cost = self.prices.cost(model, tokens_in, tokens_out) if body is not None else 0.0
        return CallResult(
            status,
            body,
            error,
            key,
            model,
            tokens_in,
            tokens_out,
            cost_usd=cost,
            source="replay",
            attempts=0,
        )

    def _from_cache(self, key: str, model: str, request: Mapping[str, Any]) -> CallResult | None:
        if self.cache is None:
            return None
        body = self.cache.get(key, request)
        if body is None:
            return None
        tokens_in, tokens_out = _usage(body)
        return CallResult(
            "ok", body, None, key, model, tokens_in, tokens_out, source="cache", attempts=0
        )

    def _live(
        self, key: str, model: str, request: Mapping[str, Any], deadline: float | None
    ) -> CallResult:
        started = time.monotonic()
        try:
            response = self._create(request, deadline)
        except _Stopped:
            return CallResult("error", None, STOPPED, key, model, attempts=0)
        except LlmCallError as exc:
            latency = int((time.monotonic() - started) * 1000)
            return CallResult(
                "error",
                None,
                exc.message,
                key,
                model,
                latency_ms=latency,
                attempts=len(exc.attempts),
                timed_out=exc.timed_out,
            )
        tokens_in, tokens_out = _usage(response.body)
        return CallResult(
            "ok",
            response.body,
            None,
            key,
            model,
            tokens_in,
            tokens_out,
            cost_usd=self.prices.cost(model, tokens_in, tokens_out),
            latency_ms=response.latency_ms,
            attempts=len(response.attempts) + 1,
        )

    def _create(self, request: Mapping[str, Any], deadline: float | None) -> LlmResponse:
        if not self._stoppable:
            return self.transport.create(request, deadline=deadline)
        box: list[LlmResponse | BaseException] = []
        done = threading.Event()

        def call() -> None:
            try:
                box.append(
                    self.transport.create(request, deadline=deadline, stopped=self._is_stopping)
                )
            except BaseException as exc:  # handed to the waiting caller
                box.append(exc)
            finally:
                done.set()

        threading.Thread(target=call, name="llm-call", daemon=True).start()
        while not done.wait(STOP_POLL_S):
            if self._stopping:
                raise _Stopped
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def _record(
        self,
        request: Mapping[str, Any],
        sample: int,
        tag: CallTag,
        purpose: str,
        result: CallResult,
    ) -> None:
        state = tag.state
        with self._lock:
            self._cost += result.cost_usd
            if state is not None:
                self._by_state[state] = self._by_state.get(state, 0.0) + result.cost_usd
            if self.log is not None:
                self.log.append(
                    {
                        "ts": time.time(),
                        "hash": result.request_hash,
                        "sample": sample,
                        "state": state,
                        "purpose": purpose,
                        "source": result.source,
                        "status": result.status,
                        "request": request,
                        "response": result.body,
                        "error": result.error,
                        "attempts": result.attempts,
                        "latency_ms": result.latency_ms,
                        "model": result.model,
                        "usage": {
                            "input_tokens": result.input_tokens,
                            "output_tokens": result.output_tokens,
                        },
                        "cost_usd": result.cost_usd,
                    }
                )
            self.recorder.emit(
                "llm_call",
                **tag.fields(),
                purpose=purpose,
                model=result.model,
                input_tokens=result.input_tokens,
                output_tokens=result.output_tokens,
                cost_usd=result.cost_usd,
                latency_ms=result.latency_ms,
                request_hash=result.request_hash,
                sample=sample,
                attempt=result.attempts,
                status=result.status,
                source=result.source,
                error=result.error,
                state_cost_usd=self._by_state.get(state, 0.0) if state is not None else None,
                run_cost_usd=self._cost,
            )


def _with(result: CallResult, **changes: Any) -> CallResult:
    return replace(result, **changes)
