"""Prompt actions (`action_type: prompt`) run through a runner chosen by name.

- `anthropic`: one Messages call through the gateway (logged, priced, replayable); the output is
  the answer's text blocks joined.
- `cmd:<command>`: an agent CLI such as `claude -p`, run with bash in its own process group, the
  prompt on stdin and stdout as the output (`engine.processes.group`: on timeout, Ctrl-C or SIGTERM
  the group gets SIGTERM, then SIGKILL; it is done when bash exits, even if a background job
  holds its stdout; past `LL_MAX_OUTPUT_BYTES` of output it is ended). When
  it streams JSON events (`--output-format stream-json`), the output is its answer and the
  result carries the trace and the agent's own cost (`engine.llm.agent_trace`).

Runners are registered by name (`RUNNERS`), so `runner: cmd:...` maps to code without a ladder.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from engine.llm.agent_trace import read_agent_result
from engine.llm.gateway import CallTag, LlmGateway
from engine.model.ports import LLM_CALL_FAILED, ActionResult, ProcessSetting
from engine.processes.group import run_process

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
    process: ProcessSetting | None = None  # a `cmd:` runner's environment and directory


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
                spawn_error=None if result.timed_out else f"{LLM_CALL_FAILED}: {result.error}",
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
        setting = call.process
        result = run_process(
            ["bash", "-c", self.command],
            timeout=call.timeout,
            stdin=prompt,
            env=None if setting is None else setting.env,
            cwd=None if setting is None else Path(setting.cwd),
            stopped=None if setting is None else setting.stopped,
        )
        return read_agent_result(result)  # an agent CLI streaming JSON events: its trace


register("anthropic")(lambda _argument: AnthropicRunner())
register("cmd")(lambda argument: CommandRunner(argument))
