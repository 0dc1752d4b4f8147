"""The fault matrix: every API fault ends in a retried success or an `error` verdict — never a
crash, never `yes`. The real SDK talks HTTP to the loopback server; nothing is patched."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine.llm import create_llm_services
from engine.model.loop import Evaluate, Loop, State
from engine.model.ports import Verdict
from tests.loopback_server import (
    MALFORMED,
    TRUNCATED,
    LoopbackServer,
    MemoryRecorder,
    Reply,
    Script,
    error_reply,
    text_reply,
    tool_reply,
    verdict_reply,
)

TEXT = "deploy finished: 3 services healthy"
QUOTE = "3 services healthy"
SPEC = Evaluate(type="llm_structured", prompt="Is every service healthy?")

TRANSPORT_FAULTS: dict[str, Script] = {
    "429": error_reply(429, retry_after=0.05),
    "500": error_reply(500),
    "503": error_reply(503),
    "529": error_reply(529),
    "hang": Reply(hang=3.0),
    "truncated": TRUNCATED,
    "malformed-json": MALFORMED,
    "wrong-shape": Reply(body={"foo": 1}),
}
ANSWER_FAULTS: dict[str, Script] = {
    "missing-tool-call": text_reply("Yes, all healthy. " + QUOTE),
    "invalid-verdict": verdict_reply("definitely", evidence=QUOTE),
    "confidence-out-of-range": verdict_reply("yes", confidence=7, evidence=QUOTE),
    "confidence-not-number": verdict_reply("yes", confidence="high", evidence=QUOTE),
    "reason-not-string": tool_reply(
        {"verdict": "yes", "confidence": 0.9, "reason": 3, "evidence": QUOTE}
    ),
    "missing-fields": tool_reply({"verdict": "yes"}),
    # every field there, but the answer was cut off at max_tokens: its reason (and evidence)
    # may stop mid-sentence, and a truncated answer is no verdict
    "cut-at-max-tokens": tool_reply(
        {"verdict": "yes", "confidence": 0.9, "reason": "Every service is", "evidence": QUOTE},
        stop_reason="max_tokens",
    ),
}


@pytest.fixture(autouse=True)
def _fast(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """After `loopback` (which sets roomy defaults): short timeouts, few attempts."""
    monkeypatch.setenv("LL_LLM_TIMEOUT", "0.4")
    monkeypatch.setenv("LL_LLM_MAX_ATTEMPTS", "3")


def judge(tmp_path: Path, recorder: MemoryRecorder | None = None) -> Verdict:
    state = State(
        name="check",
        action="deploy",
        evaluate=SPEC,
        routes={"yes": "done", "no": "done", "error": "done"},
    )
    loop = Loop(
        name="t",
        initial="check",
        states={"check": state, "done": State(name="done", terminal=True)},
    )
    services = create_llm_services(loop, run_dir=tmp_path, recorder=recorder or MemoryRecorder())
    return services.judge(SPEC, TEXT, state=state, loop=loop)


@pytest.mark.parametrize("fault", sorted(TRANSPORT_FAULTS))
def test_transport_fault_then_success_is_retried(
    loopback: LoopbackServer, tmp_path: Path, fault: str
) -> None:
    loopback.push(TRANSPORT_FAULTS[fault], verdict_reply("yes", evidence=QUOTE))
    recorder = MemoryRecorder()
    verdict = judge(tmp_path, recorder)
    assert verdict.name == "yes"
    assert len(loopback.requests) == 2
    [call] = recorder.of("llm_call")
    assert call["attempt"] == 2
    assert call["status"] == "ok"


@pytest.mark.parametrize("fault", sorted(TRANSPORT_FAULTS))
def test_persistent_transport_fault_is_error_never_yes(
    loopback: LoopbackServer, tmp_path: Path, fault: str
) -> None:
    loopback.default = TRANSPORT_FAULTS[fault]
    recorder = MemoryRecorder()
    verdict = judge(tmp_path, recorder)
    assert verdict.name == "error"
    assert "call failed" in verdict.details["error"]
    assert len(loopback.requests) == 3  # LL_LLM_MAX_ATTEMPTS
    assert recorder.of("llm_call")[0]["status"] == "error"


@pytest.mark.parametrize("fault", sorted(ANSWER_FAULTS))
def test_malformed_answer_once_is_asked_again(
    loopback: LoopbackServer, tmp_path: Path, fault: str
) -> None:
    loopback.push(ANSWER_FAULTS[fault], verdict_reply("yes", evidence=QUOTE))
    verdict = judge(tmp_path)
    assert verdict.name == "yes"
    assert verdict.details["samples"][0]["calls"] == 2


@pytest.mark.parametrize("fault", sorted(ANSWER_FAULTS))
def test_malformed_answer_twice_is_error_never_yes(
    loopback: LoopbackServer, tmp_path: Path, fault: str
) -> None:
    loopback.push(ANSWER_FAULTS[fault], ANSWER_FAULTS[fault], verdict_reply("yes", evidence=QUOTE))
    recorder = MemoryRecorder()
    verdict = judge(tmp_path, recorder)
    assert verdict.name == "error"
    assert verdict.details["error"].startswith("malformed answer:")
    assert len(loopback.requests) == 2
    assert [c["status"] for c in recorder.of("llm_call")] == ["invalid", "invalid"]


def test_retry_after_is_honoured(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(error_reply(429, retry_after=0.4), verdict_reply("no"))
    judge(tmp_path)
    first, second = loopback.requests
    assert second.started - first.finished >= 0.38


@pytest.mark.parametrize(
    ("fault", "why"),
    [
        pytest.param(error_reply(429, retry_after=30), "retry budget", id="retry-after-too-long"),
        pytest.param(error_reply(400), "HTTP 400", id="client-error"),
    ],
)
def test_fault_not_worth_retrying_gives_up_at_once(
    loopback: LoopbackServer, tmp_path: Path, fault: Script, why: str
) -> None:
    loopback.push(fault, verdict_reply("yes", evidence=QUOTE))
    verdict = judge(tmp_path)
    assert verdict.name == "error"
    assert why in verdict.details["error"]
    assert len(loopback.requests) == 1


def test_hang_is_a_client_timeout(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.default = Reply(hang=3.0)
    verdict = judge(tmp_path)
    assert verdict.name == "error"
    assert "timed out" in verdict.details["error"]
    assert all(r.finished == 0.0 for r in loopback.requests)  # none was answered


def test_our_retries_are_the_only_retries(loopback: LoopbackServer, tmp_path: Path) -> None:
    """The SDK's own retry loop is off: one failing attempt is exactly one request."""
    loopback.push(error_reply(500), verdict_reply("no"))
    judge(tmp_path)
    assert len(loopback.requests) == 2
    assert loopback.requests[0].headers.get("x-stainless-retry-count", "0") == "0"


def test_one_failing_sample_does_not_sink_the_others(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = verdict_reply("yes", evidence=QUOTE)
    loopback.push(error_reply(400))
    spec = Evaluate(type="llm_structured", prompt="Is every service healthy?", samples=3)
    state = State(name="check", action="deploy", evaluate=spec, routes={"yes": "done"})
    loop = Loop(
        name="t",
        initial="check",
        states={"check": state, "done": State(name="done", terminal=True)},
    )
    verdict = create_llm_services(loop, run_dir=tmp_path, recorder=MemoryRecorder()).judge(
        spec, TEXT, state=state, loop=loop
    )
    assert verdict.name == "yes"
    assert verdict.details["votes"] == {"yes": 2, "error": 1}


def test_a_stopped_runs_abandoned_call_is_not_tried_again(loopback: LoopbackServer) -> None:
    """A stop abandons the call in flight (its thread is left to finish); that thread went on
    retrying the failure that came after the stop: new requests, maybe billed, for a run that
    had ended (and, in one process, landing in the next run's or test's server script)."""
    from engine.llm.client import AnthropicClient
    from engine.llm.gateway import LlmGateway
    from engine.llm.prices import PriceTable

    released = threading.Event()

    def overloaded_once_released(body: dict[str, Any]) -> Reply:
        released.wait(30)
        return error_reply(529)

    loopback.push(overloaded_once_released, text_reply("a request made after the stop"))
    gateway = LlmGateway(transport=AnthropicClient(timeout=60), prices=PriceTable(), stoppable=True)
    request = {
        "model": "claude-test",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}],
    }
    results: list[Any] = []
    caller = threading.Thread(target=lambda: results.append(gateway.call(request)))
    caller.start()
    waited_until = time.monotonic() + 30
    while not loopback.requests and time.monotonic() < waited_until:
        time.sleep(0.01)
    gateway.stop()
    caller.join(30)
    assert results[0].status == "error" and "stopped" in results[0].error
    released.set()  # the API answers the abandoned attempt: overloaded, worth a retry
    for thread in threading.enumerate():
        if thread.name == "llm-call":
            thread.join(30)
    assert len(loopback.requests) == 1
