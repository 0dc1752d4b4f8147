"""`engine.run(env=...)` is the run's environment for its LLM calls too: credentials, base URL
and models come from it, not from `os.environ`, and two runs in threads each reach their own."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import engine
from engine.api import LlmPreflightError
from engine.model.ports import RunResult
from tests.loopback_server import LoopbackServer, tool_reply, verdict_reply
from tests.run_helpers import write_loop

JUDGED = """
name: judged
initial: build
states:
  build:
    action: "echo 'suite ran: All 5 checks passed'"
    evaluate:
      type: llm_structured
      prompt: "Did every check pass? Quote the line that shows it."
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


@pytest.fixture
def servers() -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    first, second = LoopbackServer().start(), LoopbackServer().start()
    try:
        yield first, second
    finally:
        first.stop()
        second.stop()


def _env_for(server: LoopbackServer, key: str, model: str) -> dict[str, str]:
    """The process's environment with this run's own server, key and judge model."""
    return {
        **os.environ,
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": key,
        "LL_JUDGE_MODEL": model,
    }


def _key(headers: Mapping[str, str]) -> str | None:
    """The credential a request carried (this SDK sends the key as a bearer token)."""
    for name, value in headers.items():
        if name.lower() in {"x-api-key", "authorization"}:
            return value.removeprefix("Bearer ")
    return None


def _run(tmp_path: Path, env: Mapping[str, str]) -> RunResult:
    return engine.run("judged.yaml", cwd=tmp_path, env=env, lock=False, handle_signals=False)


def test_credentials_given_in_env_reach_the_judge(
    loopback: LoopbackServer,
    servers: tuple[LoopbackServer, LoopbackServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The process has no key: the run's env has one, and the run is not refused for it."""
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    own, _ = servers
    own.push(verdict_reply("yes", evidence="All 5 checks passed"))
    write_loop(tmp_path, JUDGED, "judged.yaml")
    result = _run(tmp_path, _env_for(own, "sk-own", "model-own"))
    assert (result.outcome, result.final_state) == ("success", "done")
    assert [_key(r.headers) for r in own.requests] == ["sk-own"]
    assert loopback.requests == []


def test_two_runs_in_threads_each_reach_their_own_server(
    loopback: LoopbackServer,
    servers: tuple[LoopbackServer, LoopbackServer],
    tmp_path: Path,
) -> None:
    """os.environ points at a third server (the `loopback` fixture's), which hears nothing."""
    write_loop(tmp_path, JUDGED, "judged.yaml")
    results: dict[str, RunResult] = {}
    threads = []
    for name, server in zip(("first", "second"), servers, strict=True):
        server.push(verdict_reply("yes", evidence="All 5 checks passed", delay=0.3))
        env = _env_for(server, f"sk-{name}", f"model-{name}")

        def go(name: str = name, env: dict[str, str] = env) -> None:
            results[name] = _run(tmp_path, env)

        threads.append(threading.Thread(target=go))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert {name: r.outcome for name, r in results.items()} == {
        "first": "success",
        "second": "success",
    }
    for name, server in zip(("first", "second"), servers, strict=True):
        assert [(_key(r.headers), r.body["model"]) for r in server.requests] == [
            (f"sk-{name}", f"model-{name}")
        ]
    assert loopback.requests == []
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-loopback-test"


def test_an_env_without_credentials_is_refused_though_the_process_has_them(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The run authenticates as its env says, never as the process: none there, no run."""
    write_loop(tmp_path, JUDGED, "judged.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    with pytest.raises(LlmPreflightError, match="ANTHROPIC_API_KEY"):
        _run(tmp_path, env)
    assert loopback.requests == []


ASSESSED = """
name: assessed
initial: build
states:
  build:
    action: "echo '40 tests passed'"
    evaluate:
      type: assessment
      judges:
        - name: green
          feedback_type: bool
          reasoning: off
          prompt: "Did the tests pass? Quote the evidence."
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


def test_an_assessment_judge_takes_its_model_from_the_run_s_env(
    loopback: LoopbackServer,
    servers: tuple[LoopbackServer, LoopbackServer],
    tmp_path: Path,
) -> None:
    own, _ = servers
    answer = {"passed": True, "confidence": 0.9, "reason": "ok", "evidence": "40 tests passed"}
    own.push(tool_reply(answer))
    write_loop(tmp_path, ASSESSED, "judged.yaml")
    result = _run(tmp_path, _env_for(own, "sk-own", "model-own"))
    assert result.outcome == "success", result.error
    assert [(_key(r.headers), r.body["model"]) for r in own.requests] == [("sk-own", "model-own")]
    assert loopback.requests == []


AGENT = """
name: agent
initial: ask
states:
  ask:
    action_type: prompt
    runner: "cmd:my-agent"
    action: "say hello"
    next: done
  done: {terminal: true}
"""


def test_an_agent_cli_on_the_path_of_the_run_s_env_is_found(tmp_path: Path) -> None:
    """The runner runs with the run's PATH, so the preflight looks for it there."""
    tools = tmp_path / "tools"
    tools.mkdir()
    agent = tools / "my-agent"
    agent.write_text("#!/bin/sh\necho hello from the agent\n")
    agent.chmod(0o755)
    write_loop(tmp_path, AGENT, "agent.yaml")
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}
    result = engine.run("agent.yaml", cwd=tmp_path, env=env, lock=False, handle_signals=False)
    assert (result.outcome, result.final_state) == ("success", "done"), result.error


def test_the_process_s_custom_headers_do_not_reach_the_run_s_server(
    loopback: LoopbackServer,
    servers: tuple[LoopbackServer, LoopbackServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK reads ANTHROPIC_CUSTOM_HEADERS from os.environ whatever it is given, so a
    gateway secret the process sends in a header went to the server the run's env named."""
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Gateway-Key: process-secret\nX-Both: p")
    own, other = servers
    own.push(verdict_reply("yes", evidence="All 5 checks passed"))
    other.push(verdict_reply("yes", evidence="All 5 checks passed"))
    write_loop(tmp_path, JUDGED, "judged.yaml")
    env = {k: v for k, v in _env_for(own, "sk-own", "m").items() if k != "ANTHROPIC_CUSTOM_HEADERS"}
    assert _run(tmp_path, env).outcome == "success"
    env = {**_env_for(other, "sk-other", "m"), "ANTHROPIC_CUSTOM_HEADERS": "X-Both: run"}
    assert _run(tmp_path, env).outcome == "success"
    sent = [{k.lower(): v for k, v in s.requests[0].headers.items()} for s in (own, other)]
    assert [(h.get("x-gateway-key"), h.get("x-both")) for h in sent] == [
        (None, None),
        (None, "run"),
    ]
    assert loopback.requests == []
