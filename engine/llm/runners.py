"""Prompt actions (`action_type: prompt`) run through a runner chosen by name.

- `anthropic`: one Messages call through the gateway (logged, priced, replayable); the output is
  the answer's text blocks joined.
- `cmd:<command>`: an agent CLI such as `claude -p`, run with bash in its own process group, the
  prompt on stdin and stdout as the output; on timeout the group gets SIGTERM, then SIGKILL. When
  it streams JSON events (`--output-format stream-json`), the output is its answer and the
  result carries the trace and the agent's own cost (`engine.llm.agent_trace`).

Runners are registered by name (`RUNNERS`), so `runner: cmd:...` maps to code without a ladder.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.llm.agent_trace import parse_agent_stream
from engine.llm.gateway import CallTag, LlmGateway
from engine.model.ports import ActionResult

KILL_GRACE_S = 2.0
FOREVER_S = 1e9  # a timeout past this is waited for as no timeout

# Answers that are not a normal end: said on stderr; a refusal is a failed action (exit 1).
STOP_NOTES = {
    "max_tokens": "the answer was cut off at max_tokens (raise llm.max_tokens)",
    "refusal": "the model refused to answer",
}


@dataclass(frozen=True)
class PromptCall:
    """Everything a runner needs besides the prompt."""

    gateway: Callable[[], LlmGateway]  # built lazily: a cmd: runner never needs it
    model: str
    max_tokens: int
    temperature: float | None = None
    timeout: float | None = None
    tag: CallTag = field(default_factory=CallTag)


class PromptRunner(Protocol):
    def run(self, prompt: str, call: PromptCall) -> ActionResult: ...


RUNNERS: dict[str, Callable[[str], PromptRunner]] = {}


def register(name: str) -> Callable[[Callable[[str], PromptRunner]], Callable[[str], PromptRunner]]:
    """Register a runner factory under `name`; it receives the text after `name:`."""

    def add(factory: Callable[[str], PromptRunner]) -> Callable[[str], PromptRunner]:
        RUNNERS[name] = factory
        return factory

    return add


def split_runner(spec: str) -> tuple[str, str]:
    """`cmd:claude -p` → ("cmd", "claude -p"); `anthropic` → ("anthropic", "")."""
    name, _, argument = spec.partition(":")
    return name.strip(), argument.strip()


def resolve_runner(spec: str) -> PromptRunner:
    """The runner for a `runner:` value; an unknown name is a `ValueError` saying what exists."""
    name, argument = split_runner(spec)
    factory = RUNNERS.get(name)
    if factory is None:
        known = ", ".join(f"{n}:<command>" if n == "cmd" else n for n in sorted(RUNNERS))
        raise ValueError(f"unknown prompt runner {spec!r}; use one of: {known}")
    return factory(argument)


def answer_text(body: Mapping[str, Any]) -> str:
    """The text blocks of a Messages answer, joined."""
    return "".join(
        str(block.get("text", ""))
        for block in body.get("content") or ()
        if isinstance(block, Mapping) and block.get("type") == "text"
    )


@dataclass(frozen=True)
class AnthropicRunner:
    """A plain text completion through the SDK."""

    def run(self, prompt: str, call: PromptCall) -> ActionResult:
        request: dict[str, Any] = {
            "model": call.model,
            "max_tokens": call.max_tokens,
            "messages": [{"role": "user", "content": prompt}],
        }
        if call.temperature is not None:
            request["temperature"] = call.temperature
        started = time.monotonic()
        deadline = started + call.timeout if call.timeout else None
        result = call.gateway().call(request, tag=call.tag, purpose="prompt", deadline=deadline)
        duration = int((time.monotonic() - started) * 1000)
        if result.status != "ok" or result.body is None:
            return ActionResult(
                output="",
                stderr=str(result.error),
                exit_code=None,
                duration_ms=duration,
                timed_out=result.timed_out,
                spawn_error=None if result.timed_out else f"LLM call failed: {result.error}",
                cost_usd=result.cost_usd,
            )
        stop = result.body.get("stop_reason")
        return ActionResult(
            output=answer_text(result.body),
            stderr=STOP_NOTES.get(str(stop), ""),
            exit_code=1 if stop == "refusal" else 0,
            duration_ms=duration,
            cost_usd=result.cost_usd,
        )


@dataclass(frozen=True)
class CommandRunner:
    """An agent CLI: `bash -c <command>` in its own process group, prompt on stdin."""

    command: str

    def run(self, prompt: str, call: PromptCall) -> ActionResult:
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                ["bash", "-c", self.command],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return ActionResult(exit_code=None, spawn_error=str(exc))
        timed_out = False
        try:
            out, err = process.communicate(prompt.encode("utf-8"), timeout=_bounded(call.timeout))
        except subprocess.TimeoutExpired:
            timed_out = True
            out, err = _stop_group(process)
        except BaseException:
            # Ctrl-C or SIGTERM (`ll-harness prompt --runner cmd:...`): the agent has a session
            # of its own, so the terminal's signal never reached it; it must not outlive us.
            _end_group(process)
            raise
        duration = int((time.monotonic() - started) * 1000)
        code = process.returncode
        output = out.decode("utf-8", "replace")
        agent = parse_agent_stream(output)  # an agent CLI streaming JSON events
        return ActionResult(
            output=agent.text if agent is not None else output,
            stderr=err.decode("utf-8", "replace"),
            exit_code=None if timed_out or code < 0 else code,
            duration_ms=duration,
            timed_out=timed_out,
            signal=-code if code < 0 and not timed_out else None,
            cost_usd=agent.cost_usd if agent is not None else 0.0,
            trace=agent.trace if agent is not None else None,
        )


def _bounded(timeout: float | None) -> float | None:
    """A timeout `communicate` can wait for: past `FOREVER_S` (31 years) it is no limit in
    practice, and Python's clock overflows near 292 years (`timeout: 1e300` is valid)."""
    return None if timeout is None or timeout > FOREVER_S else timeout


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL it after a grace period (at once on a second
    interrupt); nothing is collected: the caller is on its way out."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def _stop_group(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """SIGTERM the process group, SIGKILL it after a grace period; collect what it printed."""
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            return process.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
    return b"", b""


register("anthropic")(lambda _argument: AnthropicRunner())
register("cmd")(lambda argument: CommandRunner(argument))
