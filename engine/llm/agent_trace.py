"""An agent CLI's streamed JSON events, read into a trace (pure, no IO).

`claude -p --output-format stream-json --verbose` prints one JSON object per line: `system`
(init), `assistant` (a message with text and tool_use blocks), `user` (tool results), and a final
`result` (the answer, `total_cost_usd`, `num_turns`, `usage`). Other agent CLIs print the same
shape. When a prompt action's stdout starts and ends with JSON objects that have a `type` (the
last may be torn; a stray line between two is skipped) and one is `assistant` or `result`, the
action's output becomes the agent's answer and the trace keeps `conversation` (the top-level
assistant text), `tool_calls` ({name, input}), `events`, `token_usage`, `cost_usd` and `num_turns`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from engine.model import jsontext
from engine.model.ports import ActionResult

_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


@dataclass(frozen=True)
class AgentRun:
    """What the stream said: the answer text and the trace for the outputs record."""

    text: str
    trace: dict[str, Any]
    is_error: bool = False  # the `result` event says the run failed (`is_error: true`)
    error: str = ""  # what it says about the failure: its subtype, errors or result
    skipped: int = 0  # lines between events that were not events (skipped, not fatal)

    @property
    def cost_usd(self) -> float:
        """The cost for the run's accounting: 0 when the agent reported none."""
        return float(self.trace.get("cost_usd") or 0.0)

    @property
    def cost_known(self) -> bool:
        return self.trace.get("cost_usd") is not None


def read_agent_result(result: ActionResult) -> ActionResult:
    """An agent CLI's process result, its stdout read as a trace when it is an event stream:
    the output becomes the answer, with the trace and the agent's cost; plain output is kept.
    A run the `result` event calls failed (`is_error`) is exit 1 even if the CLI exited 0:
    `claude -p` exits 1 after such a result, and a wrapper that lost the status made a failed
    agent run (out of turns, an API error) a success."""
    if _never_ran(result):  # the agent CLI never started: it spent nothing, and that is known
        return result
    agent = parse_agent_stream(result.output)
    if agent is None:  # plain output: what the agent spent is not known (not $0)
        return replace(result, cost_known=False)
    result = replace(
        result,
        output=agent.text,
        cost_usd=agent.cost_usd,
        cost_known=agent.cost_known,
        trace=agent.trace,
    )
    if agent.skipped:
        note = (
            f"ll-loop: {agent.skipped} line(s) of the agent's event stream were not JSON "
            "events and were skipped"
        )
        result = replace(result, stderr=_noted(result.stderr, note))
    if agent.is_error and result.exit_code == 0:
        note = f"the agent reported a failed run: {agent.error}"
        return replace(result, exit_code=1, stderr=_noted(result.stderr, note))
    return result


# bash's own words for a command it could not find (exit 127): `bash: line 1: claude: command
# not found`, `bash: line 1: ./agent.sh: No such file or directory`
_NOT_FOUND = re.compile(r"bash: (?:line \d+: )?.+: (?:command not found|No such file or directory)")


def _never_ran(result: ActionResult) -> bool:
    """The agent CLI never started: its process could not be spawned, or bash exited 127 with
    nothing on stdout and only its own "not found" lines on stderr (the CLI deleted mid-run)."""
    if result.spawn_error is not None and result.exit_code is None and not result.timed_out:
        return True
    said = result.stderr.strip().splitlines()
    return (
        result.exit_code == 127
        and not result.output.strip()
        and bool(said)
        and all(_NOT_FOUND.fullmatch(line.strip()) for line in said)
    )


def _noted(stderr: str, note: str) -> str:
    return f"{stderr.rstrip()}\n{note}".lstrip()


def parse_agent_stream(stdout: str) -> AgentRun | None:
    """The agent run in `stdout`, or None when it is not an event stream (plain text output).

    Events of other types (`stream_event` with `--include-partial-messages`, newer CLIs' own)
    are kept and otherwise ignored, and a last line that is not JSON is dropped (an agent
    killed or crashed mid-line): either used to make the whole stream plain text, so the
    agent's reported cost counted as 0 against `max_cost_usd`. So is a line between two events
    that is not one (a CLI's stray print, a line cut by a crash of a writer): it is skipped and
    counted in `skipped`, where it used to make the whole stream plain text and lose its cost.
    Text before the first event or after the last is not an agent's stream: plain text."""
    # Split at "\n" only: `str.splitlines` also breaks at U+2028, U+0085 and the like, which a
    # JSON line may hold raw in a string (Node's JSON.stringify writes them so), and a tool
    # result with one made the stream plain text, its cost 0.
    lines = [line for line in stdout.split("\n") if line.strip()]
    events: list[dict[str, Any]] = []
    strays: list[int] = []  # line numbers (of the non-empty lines) that are not events
    for number, line in enumerate(lines, 1):
        event = _event(line)
        if event is None:
            if not events:
                return None  # text first: plain output
            strays.append(number)
            continue
        events.append(event)
    torn = bool(strays) and strays[-1] == len(lines) and lines[-1].lstrip().startswith("{")
    if torn:  # an event torn by the agent's end
        strays.pop()
    if strays and (strays[-1] == len(lines) or len(strays) >= len(events)):
        return None  # text after the last event, or more text than events: plain output
    if not any(e["type"] in ("assistant", "result") for e in events):
        return None
    return replace(_read(events), skipped=len(strays))


def _event(line: str) -> dict[str, Any] | None:
    """The event a line of the stream holds: a JSON object with a `type`, else None."""
    try:
        event = jsontext.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("type"), str) else None


def _blocks(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    message = event.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or () if isinstance(b, Mapping)]


def _read(events: list[dict[str, Any]]) -> AgentRun:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    usage: dict[str, int] = {}
    turns = 0
    for event in events:
        if event["type"] != "assistant":
            continue
        top_level = event.get("parent_tool_use_id") is None
        turns += 1 if top_level else 0
        for block in _blocks(event):
            if block.get("type") == "text" and top_level:
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                calls.append({"name": str(block.get("name", "")), "input": block.get("input")})
        message = event.get("message")
        counted = message.get("usage") if isinstance(message, Mapping) else None
        for key in _USAGE_KEYS:
            value = counted.get(key) if isinstance(counted, Mapping) else None
            if isinstance(value, int):
                usage[key] = usage.get(key, 0) + value
    conversation = "\n".join(t for t in texts if t.strip())
    results = [e for e in events if e["type"] == "result"]
    result = results[-1] if results else None
    cost, answer, is_error, error = _session_cost(results), conversation, False, ""
    known_turns: int | None = turns if turns else None  # no assistant event: nobody counted
    if result is not None:
        reported = _cost(result.get("num_turns"))
        known_turns = int(reported) if reported is not None else known_turns
        if isinstance(result.get("result"), str):
            answer = result["result"]
        if isinstance(result.get("usage"), Mapping):
            usage = {k: v for k, v in result["usage"].items() if isinstance(v, int)}
        is_error = result.get("is_error") is True
        error = _failure(result) if is_error else ""
    trace = {
        "conversation": conversation,
        "tool_calls": calls,
        "events": events,
        "token_usage": usage,
        "cost_usd": cost,
        "num_turns": known_turns,  # None: not known (not 0); `max_turns` is then an error
    }
    return AgentRun(answer, trace, is_error, error)


def _session_cost(results: list[dict[str, Any]]) -> float | None:
    """What the session cost, from its `result` events. A CLI serving several turns in one
    process (`claude -p --input-format stream-json`) prints a result per turn, and claude's
    `total_cost_usd` is the process's running total, not the turn's: summing would count the
    first turns again, and the last alone loses the spend when it carries no (valid) cost. The
    largest total reported is the session's; None when no result reported a cost (not $0)."""
    costs = [_cost(r.get("total_cost_usd", r.get("cost_usd"))) for r in results]
    return max((c for c in costs if c is not None), default=None)


def _failure(result: Mapping[str, Any]) -> str:
    """One line on why a `result` event says the run failed, from what it carries."""
    said = result.get("errors")
    parts = [str(result.get("subtype") or "is_error")]
    if isinstance(said, list) and said:
        parts.append("; ".join(str(e) for e in said[:3]))
    elif isinstance(result.get("result"), str) and result["result"].strip():
        parts.append(result["result"].strip())
    return ": ".join(parts)[:500]


def _cost(value: Any) -> float | None:
    """A cost or count the agent reported; anything but a finite number ≥ 0 is not known.

    An agent's `total_cost_usd: -5` lowered the run's spend under `max_cost_usd`, `NaN` and
    `1e400` (infinity) reached `run --json` as text that is not JSON, and `num_turns: 1e400`
    crashed the run."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None
