"""Small value types and interfaces shared by the pure core and the IO edges.

The interpreter talks to processes, LLMs and the run store only through these, so the core can be
tested without IO and each IO part can be tested for real on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from engine.model import jsontext
from engine.model.loop import Evaluate, Loop, State

Outcome = Literal["success", "failure", "inconclusive", "error"]
TerminatedBy = Literal["terminal", "max_steps", "timeout", "error", "max_cost", "stopped"]

EXIT_CODES: Mapping[str, int] = {"success": 0, "failure": 1, "error": 2, "inconclusive": 3}


LLM_CALL_FAILED = "LLM call failed"
"""How a prompt action's `spawn_error` begins when its model call was made and failed (an API
error after the retries): no action bash could not start."""


@dataclass(frozen=True)
class ActionResult:
    """What one action produced. `output` may be bounded; `output_path` then holds it whole."""

    output: str = ""
    stderr: str = ""
    exit_code: int | None = 0
    duration_ms: int = 0
    timed_out: bool = False
    signal: int | None = None
    spawn_error: str | None = None
    output_path: str | None = None
    stderr_path: str | None = None  # stderr whole, when it spilled (`stderr` is then its end)
    cost_usd: float = 0.0
    # False for an agent CLI that reported no cost (plain output, no valid `total_cost_usd`):
    # `cost_usd` is then 0 for the run's accounting, but a judge of the cost cannot know it.
    cost_known: bool = True
    # An agent CLI's streamed events, parsed (conversation, tool_calls, events, token_usage,
    # cost_usd, num_turns): set when a prompt action's runner printed such a stream.
    trace: Mapping[str, Any] | None = None
    output_capped: int | None = None  # the byte cap its output passed (the action was ended)

    @property
    def agent_untraced(self) -> bool:
        """An agent CLI's plain output: what it spent and how many turns it took are unknown."""
        return not self.cost_known and self.trace is None

    @property
    def crashed(self) -> bool:
        """Timed out, could not start, killed by a signal, or ended for printing more than the
        output cap: never judged (docs/format.md, "Evaluators"; docs/runs.md, the output cap)."""
        return (
            self.timed_out
            or self.spawn_error is not None
            or self.signal is not None
            or self.output_capped is not None
        )

    def failure_reason(self) -> str:
        if self.output_capped is not None:
            return (
                f"action output passed the cap of {self.output_capped} bytes "
                "(LL_MAX_OUTPUT_BYTES); the action was ended"
            )
        if self.timed_out:
            return "action timed out"
        if self.spawn_error is not None:
            if self.spawn_error.startswith(LLM_CALL_FAILED):  # the call was made, and failed
                return self.spawn_error
            return f"action could not start: {self.spawn_error}"
        if self.signal is not None:
            return f"action was killed by signal {self.signal}"
        return f"action exited with code {self.exit_code}"


@dataclass(frozen=True)
class Verdict:
    """An evaluator's answer: the verdict name and why (shown in events and captures)."""

    name: str
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunResult:
    """How a run ended; `run --json` prints exactly these fields (plus nothing).

    `outputs` are the loop's `outputs:` values (empty unless it ended on a terminal), so a
    script or `ll-harness loop` sees what the loop returns, not only how it ended."""

    run_id: str
    loop: str
    final_state: str | None
    outcome: Outcome
    terminated_by: TerminatedBy
    steps: int
    duration_ms: int
    cost_usd: float = 0.0
    error: str | None = None
    outputs: Mapping[str, Any] = field(default_factory=dict)
    terminal: str | None = None
    # States whose agent CLI reported no cost (a child's as "state > inner"): `cost_usd` leaves
    # their spend out, so it is a lower bound. In the JSON only when there are any.
    cost_unknown_in: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "loop": self.loop,
            "final_state": self.final_state,
            "outcome": self.outcome,
            "terminated_by": self.terminated_by,
            "steps": self.steps,
            "duration_ms": self.duration_ms,
            "cost_usd": round(self.cost_usd, 6),
            "error": self.error,
            "outputs": dict(self.outputs),
        }
        if self.cost_unknown_in:
            data["cost_unknown_in"] = list(self.cost_unknown_in)
        return data


def run_json(stdout: str) -> dict[str, Any] | None:
    """The result `ll-loop run --json` printed (`RunResult.to_json`, or the refusal object):
    the whole output as one JSON object, else its last line that is one; None without one."""
    try:
        whole = jsontext.loads(stdout)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return whole
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = jsontext.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def refused_before_first_step(result: Mapping[str, Any]) -> str | None:
    """Why a child `ll-loop run` never ran, from its JSON result; None when it ran a step."""
    if result.get("outcome") == "error" and not result.get("steps"):
        return f"the loop run was refused before its first step: {result.get('error')}"
    return None


class LineFields(Mapping[str, Any]):
    """The fields of one `events.jsonl` line (all but `event` and `run_id`), parsed when first
    read: a listener that looks at a few events (the CLI's progress with `--quiet` looks only at
    model calls) does not pay a JSON parse for each of a run's thousands."""

    __slots__ = ("_fields", "_line")

    def __init__(self, line: str) -> None:
        self._line = line
        self._fields: dict[str, Any] | None = None

    def _parsed(self) -> dict[str, Any]:
        if self._fields is None:
            record = jsontext.loads(self._line)
            self._fields = {k: v for k, v in record.items() if k not in ("event", "run_id")}
        return self._fields

    def __getitem__(self, key: str) -> Any:
        return self._parsed()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._parsed())

    def __len__(self) -> int:
        return len(self._parsed())

    def __repr__(self) -> str:
        return repr(self._parsed())


@dataclass(frozen=True)
class Event:
    """One event of a run, as an `on_event` callback receives it and `engine.events` reads it:
    the name and fields of its line in `events.jsonl` (the time, `ts`, included)."""

    event: str
    run_id: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    @property
    def depth(self) -> int:
        """0 for the top-level loop, 1 for its sub-loops, and so on."""
        return int(self.fields.get("depth") or 0)

    @property
    def step(self) -> int | None:
        step = self.fields.get("step")
        return step if isinstance(step, int) else None

    @property
    def state(self) -> str | None:
        state = self.fields.get("state")
        return state if isinstance(state, str) else None

    def to_json(self) -> dict[str, Any]:
        return {"event": self.event, "run_id": self.run_id, **self.fields}


class Recorder(Protocol):
    """Where run events go (events.jsonl in a run directory, or memory in tests)."""

    def emit(self, event: str, **fields: Any) -> None: ...

    def flush(self) -> None:
        """Make every event emitted so far readable: the run may wait on something now."""
        ...


class CommandPort(Protocol):
    """Runs a judge's command (test, script, metric) in the workspace; never raises."""

    def run_command(self, command: str, *, timeout: float | None, label: str) -> ActionResult: ...


class MessagesReply(Protocol):
    """One Messages API call as a judge sees it: `status` ok / invalid / error."""

    @property
    def status(self) -> str: ...

    @property
    def body(self) -> Mapping[str, Any] | None: ...

    @property
    def error(self) -> str | None: ...

    @property
    def cost_usd(self) -> float: ...

    @property
    def timed_out(self) -> bool: ...

    @property
    def replay_miss(self) -> bool:
        """A replayed run's log had no recorded answer for this call."""
        ...


Validator = Callable[[Mapping[str, Any]], "str | None"]


class MessagesPort(Protocol):
    """Sends one Messages API request for a judge (logged, priced, replayable); never raises."""

    def call(
        self,
        request: Mapping[str, Any],
        *,
        sample: int = 0,
        purpose: str = "judge",
        validate: Validator | None = None,
    ) -> MessagesReply: ...


@dataclass(frozen=True)
class ProcessSetting:
    """Where an agent CLI (a `cmd:` runner) runs: the environment and directory of the run's
    actions, so it gets what a shell action gets (`LL_RUN_ID`, `LL_RUN_DIR`, the scope lease
    a nested `ll-loop run` inherits)."""

    env: Mapping[str, str]
    cwd: str
    stopped: Callable[[], bool] | None = None  # True once the run is stopping: end the agent


class LlmServices(Protocol):
    """The LLM layer as the interpreter sees it: judge a text, or run a prompt action."""

    def judge(self, spec: Evaluate, text: str, *, state: State, loop: Loop) -> Verdict: ...

    def run_prompt(
        self,
        prompt: str,
        *,
        state: State,
        loop: Loop,
        timeout: float | None,
        runner: str | None = None,
        process: ProcessSetting | None = None,
    ) -> ActionResult:
        """Run a prompt action; `runner` is the state's runner with `${...}` already rendered,
        `process` where a `cmd:` runner runs (None: this process's environment and directory)."""
        ...

    @property
    def cost_usd(self) -> float: ...

    def spent_since(self, since: float) -> float:
        """What the run's calls logged after `since` (a `time.time()`) cost, those of earlier
        sessions of a resumed run included."""
        ...

    def bind(self, *, depth: int = 0, step: int | None = None) -> LlmServices:
        """A view whose `llm_call` events carry this depth and step."""
        ...

    def messages(self, state: State) -> MessagesPort:
        """Raw Messages calls for the judges of `state` (its events and costs carry it)."""
        ...

    def stop(self) -> None:
        """The run is stopping: abandon a model call in flight and make no more (called from a
        signal handler)."""
        ...
