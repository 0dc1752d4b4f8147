"""The shared rate gate (docs/scale.md): the LLM client asks it before every HTTP attempt and
tells it every retry-after; the limiter behind the Ray executor pauses everyone and spaces
requests. Real SDK over HTTP to the loopback server; the gate here is an in-process one."""

from __future__ import annotations

import threading
import time

import pytest

from engine.llm.client import AnthropicClient, LlmCallError
from engine.llm.settings import env_problems
from engine.model.errors import UsageError
from engine.suites.ray_limiter import LlmLimiter, rpm_from_env
from tests.loopback_server import LoopbackServer, error_reply, text_reply

REQUEST = {
    "model": "claude-test",
    "max_tokens": 16,
    "messages": [{"role": "user", "content": "hi"}],
}


class LocalGate:
    """The limiter actor's logic behind a lock, as one process would share it."""

    def __init__(self, per_minute: float | None = None) -> None:
        self.limiter = LlmLimiter(per_minute)
        self.lock = threading.Lock()
        self.turns = 0
        self.holds: list[float] = []

    def wait_turn(self) -> None:
        while True:
            with self.lock:
                self.turns += 1
                delay, admitted = self.limiter.turn()
            time.sleep(delay)
            if admitted:
                return

    def hold(self, seconds: float) -> None:
        with self.lock:
            self.holds.append(seconds)
            self.limiter.hold(seconds)


def test_the_client_asks_the_gate_before_each_attempt_and_reports_retry_after(
    loopback: LoopbackServer,
) -> None:
    loopback.push(error_reply(429, retry_after=0.3), text_reply("hello"))
    gate = LocalGate()
    response = AnthropicClient(timeout=5, gate=gate).create(REQUEST)
    assert response.body["content"][0]["text"] == "hello"
    assert gate.holds == [0.3]
    assert gate.turns >= 2  # one turn per attempt (more while the pause is on)
    first, second = loopback.requests
    assert second.started - first.finished >= 0.29


def test_a_pause_from_one_client_delays_another_clients_request(
    loopback: LoopbackServer,
) -> None:
    gate = LocalGate()
    gate.hold(0.6)  # as if another worker had just been told retry-after: 0.6
    loopback.push(text_reply("later"))
    started = time.monotonic()
    AnthropicClient(timeout=5, gate=gate).create(REQUEST)
    assert loopback.requests[0].started - started >= 0.55


def test_without_a_gate_nothing_waits(loopback: LoopbackServer) -> None:
    """Timed from the second request on: the first imports the SDK and connects (about a
    second), which the clock counted when this test was the first of its process to call a
    model, so it failed or passed by the order the tests ran in."""
    loopback.push(text_reply("first"), text_reply("now"))
    client = AnthropicClient(timeout=5)
    client.create(REQUEST)
    started = time.monotonic()
    client.create(REQUEST)
    assert loopback.requests[1].started - started < 0.5


def test_the_limiter_spaces_requests_to_the_rate() -> None:
    limiter = LlmLimiter(per_minute=600)  # one every 0.1 s
    waits = [limiter.turn() for _ in range(4)]
    assert all(admitted for _, admitted in waits)
    assert [round(w, 2) for w, _ in waits] == [0.0, 0.1, 0.2, 0.3]


def test_a_hold_refuses_turns_until_it_ends_and_never_shortens() -> None:
    limiter = LlmLimiter()
    limiter.hold(5.0)
    limiter.hold(1.0)  # a shorter pause does not cut the longer one
    delay, admitted = limiter.turn()
    assert not admitted and 4.9 < delay <= 5.0
    limiter.paused_until = time.monotonic() - 0.01
    assert limiter.turn() == (0.0, True)


@pytest.mark.parametrize("text", ["zero", "0", "-5", "inf", "nan"])
def test_a_bad_requests_per_minute_is_one_sentence(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster's limiter refuses it in the preflight's words (it said 'is not a positive
    number of requests per minute' while the preflight said 'is not a number of requests per
    minute > 0')."""
    monkeypatch.setenv("LL_LLM_RPM", text)
    with pytest.raises(UsageError) as refused:
        rpm_from_env()
    assert str(refused.value) == env_problems({"LL_LLM_RPM": text})[0]


def test_an_unset_rate_means_no_spacing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LL_LLM_RPM", raising=False)
    assert rpm_from_env() is None
    monkeypatch.setenv("LL_LLM_RPM", "120")
    assert rpm_from_env() == 120.0


def test_a_failed_call_still_raises_our_error_with_a_gate(loopback: LoopbackServer) -> None:
    loopback.default = error_reply(400)
    with pytest.raises(LlmCallError, match="400"):
        AnthropicClient(timeout=5, gate=LocalGate()).create(REQUEST)
