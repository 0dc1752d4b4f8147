"""One Messages API client over the official `anthropic` SDK, with our own retry policy.

The SDK is imported lazily (first call), built with `max_retries=0` so every retry is ours and
visible: exponential backoff with jitter for 429 / 408 / 5xx / 529, connection errors, timeouts and
unreadable bodies, honouring `retry-after`, bounded by attempts and by total wait. Base URL and
credentials come from the SDK's own environment (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`,
`ANTHROPIC_AUTH_TOKEN`), or from a run's own environment when it has one (`sdk_options`). A call
that cannot succeed raises `LlmCallError`, never anything else.

A `RateGate` (optional) is consulted before every attempt and told every `retry-after`, so many
processes that share one gate (the Ray executor's limiter actor, docs/scale.md) slow down together
when the API says so, instead of each finding out with its own 429.
"""

from __future__ import annotations

import email.utils
import inspect
import json
import os
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from engine.llm.settings import Environ, RetryPolicy

DEFAULT_BASE_URL = "https://api.anthropic.com"


@dataclass(frozen=True)
class Attempt:
    """One failed HTTP attempt: its status (None without a response), why, the wait after."""

    number: int
    status: int | None
    error: str
    wait_s: float

    def to_json(self) -> dict[str, Any]:
        return {"n": self.number, "status": self.status, "error": self.error, "wait_s": self.wait_s}


@dataclass(frozen=True)
class LlmResponse:
    """A successful Messages API answer (the JSON body) and the failed attempts before it."""

    body: Mapping[str, Any]
    attempts: tuple[Attempt, ...]
    latency_ms: int


class LlmCallError(Exception):
    """A call that failed for good (retries exhausted, or not retryable): an `error` verdict."""

    def __init__(
        self, message: str, *, attempts: tuple[Attempt, ...] = (), timed_out: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.attempts = attempts
        self.timed_out = timed_out


@dataclass(frozen=True)
class _Failure:
    """How one attempt failed, classified for the retry decision."""

    status: int | None
    error: str
    retryable: bool
    retry_after: float | None = None
    timed_out: bool = False


def check_message_shape(body: Mapping[str, Any]) -> str | None:
    """Why `body` is not a Messages API answer we can use, or None when it is."""
    if body.get("type") not in (None, "message"):
        return f"response type is {body.get('type')!r}, not 'message'"
    content = body.get("content")
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        return "response has no list of content blocks"
    usage = body.get("usage")
    if not isinstance(usage, dict) or not isinstance(usage.get("input_tokens"), int):
        return "response has no usage token counts"
    return None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


class RateGate(Protocol):
    """Admission shared by every client of a run (possibly across processes and machines)."""

    def wait_turn(self) -> None:
        """Block until this client may send one request."""
        ...

    def hold(self, seconds: float) -> None:
        """The API asked for a pause (`retry-after`): nobody sends for `seconds`."""
        ...


class _DeadlineReached(Exception):
    """The action's time ran out before another attempt could start."""


def _classify(exc: Exception) -> _Failure:
    """Turn an SDK (or decoding) exception into a retry decision."""
    import anthropic

    if isinstance(exc, _DeadlineReached):
        return _Failure(None, "time ran out before the next attempt", False, timed_out=True)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        retryable = status in (408, 409, 429) or status >= 500
        detail = exc.api_message or str(exc)
        return _Failure(
            status, f"HTTP {status}: {detail}", retryable, _retry_after(exc.response.headers)
        )
    if isinstance(exc, anthropic.APITimeoutError):
        return _Failure(None, "request timed out", True, timed_out=True)
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f"{exc.message} ({type(cause).__name__}: {cause})" if cause else exc.message
        return _Failure(None, f"connection failed: {why}", True)
    if isinstance(exc, anthropic.APIResponseValidationError):
        return _Failure(exc.status_code, f"invalid response: {exc.message}", True)
    if isinstance(exc, json.JSONDecodeError):  # a malformed body
        return _Failure(None, f"malformed response body: {exc}", True)
    if isinstance(exc, anthropic.AnthropicError):
        return _Failure(None, f"{type(exc).__name__}: {exc}", False)
    return _Failure(None, f"unexpected {type(exc).__name__}: {exc}", False)


def sdk_options(environ: Environ) -> dict[str, Any]:
    """The SDK client's credentials, base URL and extra headers taken from `environ` (a run's
    own environment), so the SDK does not read them from `os.environ`; `{}` for the process's.

    The SDK reads a credential from `os.environ` only when none is passed, and the preflight
    refuses a run whose environment has none, so a run never authenticates as the process.
    """
    if environ is None:
        return {}
    options: dict[str, Any] = {}

    def get(name: str) -> str | None:
        return environ.get(name, "").strip() or None

    for name, argument in (
        ("ANTHROPIC_API_KEY", "api_key"),
        ("ANTHROPIC_AUTH_TOKEN", "auth_token"),
        ("ANTHROPIC_PROFILE", "profile"),
    ):
        if (value := get(name)) is not None:
            options[argument] = value
            break
    base_url = get("ANTHROPIC_BASE_URL")
    if base_url is not None or "profile" not in options:  # a profile may name its own URL
        options["base_url"] = base_url or DEFAULT_BASE_URL
    options["default_headers"] = _headers(environ.get("ANTHROPIC_CUSTOM_HEADERS"))
    return options


def _headers(text: str | None) -> dict[str, str]:
    """`ANTHROPIC_CUSTOM_HEADERS` (`Name: value` lines) as the SDK reads it."""
    pairs = (line.partition(":") for line in (text or "").split("\n"))
    return {k.strip(): v.strip() for k, sep, v in pairs if sep}


def _only_the_run_s(ours: dict[str, str], omit: Any) -> dict[str, Any]:
    """The run's headers, and `omit` for each header the process's `ANTHROPIC_CUSTOM_HEADERS`
    names: the SDK merges that variable from `os.environ` under whatever it is given, so a
    gateway secret of the process went to the server the run's env named."""
    by_name = {name.lower(): value for name, value in ours.items()}
    process = _headers(os.environ.get("ANTHROPIC_CUSTOM_HEADERS"))
    headers: dict[str, Any] = {name: by_name.pop(name.lower(), omit) for name in process}
    return {**headers, **{n: v for n, v in ours.items() if n.lower() in by_name}}


class AnthropicClient:
    """Sends Messages API requests through the SDK; thread-safe, one SDK client per instance.

    `environ` is a run's own environment (credentials, base URL, retry settings); None: the
    process's."""

    def __init__(
        self,
        *,
        timeout: float,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        gate: RateGate | None = None,
        environ: Environ = None,
    ) -> None:
        self.timeout = timeout
        self.gate = gate
        self.policy = policy or RetryPolicy.from_env(environ)
        self._options = sdk_options(environ)
        self._sleep = sleep
        self._jitter = jitter
        self._sdk: Any = None
        self._params: frozenset[str] | None = None
        self._lock = threading.Lock()

    def _client(self) -> Any:
        with self._lock:
            if self._sdk is None:
                import anthropic

                options = dict(self._options)
                if "default_headers" in options:  # a run's own environment
                    options["default_headers"] = _only_the_run_s(
                        options["default_headers"], anthropic.omit
                    )
                self._sdk = anthropic.Anthropic(max_retries=0, timeout=self.timeout, **options)
            return self._sdk

    def close(self) -> None:
        """Close the SDK client's connections (the run is over): left to the garbage
        collector, each run's pool kept its sockets open until a collection found the cycle."""
        with self._lock:
            sdk, self._sdk = self._sdk, None
        if sdk is not None:
            sdk.close()

    def create(
        self,
        request: Mapping[str, Any],
        *,
        deadline: float | None = None,
        stopped: Callable[[], bool] | None = None,
    ) -> LlmResponse:
        """POST /v1/messages with retries; `deadline` (monotonic) bounds the whole call, and
        once `stopped()` is true no attempt is made after the one in flight (a stopped run's
        abandoned call went on retrying in its thread: requests, maybe billed, after the stop)."""
        started = time.monotonic()
        attempts: list[Attempt] = []
        waited = 0.0
        number = 0
        while True:
            number += 1
            try:
                failure, body = None, self._once(request, deadline)
            except Exception as exc:
                failure, body = _classify(exc), None
            if body is not None:
                problem = check_message_shape(body)
                if problem is None:
                    latency = int((time.monotonic() - started) * 1000)
                    return LlmResponse(body, tuple(attempts), latency)
                failure = _Failure(200, f"invalid response: {problem}", True)
            assert failure is not None
            if self.gate is not None and failure.retry_after is not None:
                self.gate.hold(failure.retry_after)
            wait, give_up = self._next_wait(failure, number, waited, deadline)
            if give_up is None and stopped is not None and stopped():
                wait, give_up = 0.0, "the run stopped"
            attempts.append(Attempt(number, failure.status, failure.error, round(wait, 3)))
            if give_up is not None:
                raise LlmCallError(
                    f"{failure.error} ({give_up})",
                    attempts=tuple(attempts),
                    timed_out=failure.timed_out or give_up == "deadline reached",
                )
            self._sleep(wait)
            waited += wait
            if stopped is not None and stopped():  # while it waited
                raise LlmCallError(
                    f"{failure.error} (the run stopped)", attempts=tuple(attempts), timed_out=False
                )

    def _once(self, request: Mapping[str, Any], deadline: float | None) -> dict[str, Any]:
        client = self._client()
        if self.gate is not None:  # as late as possible: a pause that starts now still counts
            self.gate.wait_turn()
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _DeadlineReached
            client = client.with_options(timeout=min(self.timeout, remaining))
        known, extra = self._split(client, request)
        if extra:
            known["extra_body"] = extra
        message = client.messages.create(**known)
        body: dict[str, Any] = message.to_dict(mode="json")
        return body

    def _split(
        self, client: Any, request: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Request fields the SDK's `create` takes as arguments, and the rest (sent in the body).

        The installed SDK has no `temperature` argument; a loop that sets one still sends it,
        as an extra body field, so the API (not us) decides whether it is accepted.
        """
        if self._params is None:
            self._params = frozenset(inspect.signature(client.messages.create).parameters)
        known = {k: v for k, v in request.items() if k in self._params}
        extra = {k: v for k, v in request.items() if k not in self._params}
        return known, extra

    def _next_wait(
        self, failure: _Failure, number: int, waited: float, deadline: float | None
    ) -> tuple[float, str | None]:
        """How long to wait before the next attempt, or why there is none."""
        policy = self.policy
        if not failure.retryable:
            return 0.0, "not retryable"
        if number >= policy.max_attempts:
            return 0.0, f"gave up after {number} attempts"
        if failure.retry_after is not None:
            wait = failure.retry_after
        else:
            wait = policy.backoff(number, self._jitter())
        if waited + wait > policy.max_wait:
            return 0.0, (
                f"gave up after {number} attempts: waiting {wait:.2f}s more would exceed the "
                f"retry budget of {policy.max_wait:g}s"
            )
        if deadline is not None and time.monotonic() + wait >= deadline:
            return 0.0, "deadline reached"
        return wait, None
