"""The LLM layer as the interpreter and the harness see it (`engine.model.ports.LlmServices`).

The interpreter renders everything before calling: `judge(spec, text)` gets the evaluator with
its `prompt` already interpolated and `text` already chosen (the rendered `source`, else the
action output). `run_prompt(prompt)` gets the rendered prompt. This module only resolves models,
runners and limits, and wires the gateway (log, replay, cache, prices, events).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.llm import settings
from engine.llm.calllog import CallLog, ReplayLog, ResponseCache, cache_dir, spent_since
from engine.llm.client import AnthropicClient, RateGate
from engine.llm.gateway import CallResult, CallTag, LlmGateway
from engine.llm.judge import JudgeSettings, judge_structured
from engine.llm.prices import load_prices
from engine.llm.rubric import judge_rubric
from engine.llm.runners import CommandRunner, PromptCall, resolve_runner
from engine.model.errors import LoopError
from engine.model.loop import Evaluate, Loop, State
from engine.model.ports import (
    ActionResult,
    MessagesReply,
    ProcessSetting,
    Recorder,
    Validator,
    Verdict,
)


def project_root(run_dir: Path | None) -> Path | None:
    """The directory holding `.loops/`, when `run_dir` is `.loops/runs/<id>`."""
    if run_dir is not None and run_dir.parent.name == "runs" and run_dir.parent.parent.name:
        return run_dir.parent.parent.parent
    return None


def build_gateway(
    *,
    loop: Loop | None,
    run_dir: Path | None,
    recorder: Recorder | None,
    replay_from: Path | None = None,
    cache: bool = False,
    gate: RateGate | None = None,
    stoppable: bool = False,
    environ: settings.Environ = None,
) -> LlmGateway:
    """A gateway with the run's log, optional replay source, optional cache and optional shared
    rate gate (see `RateGate`); `stoppable` for a run's, whose `stop` abandons a live call;
    `environ` the run's own environment (None: the process's)."""
    replay = ReplayLog.load(replay_from) if replay_from is not None else None
    if replay is not None and run_dir is not None:
        replay.skip_replayed(run_dir)  # a resumed replay goes on from the answers it had
    return LlmGateway(
        transport=AnthropicClient(
            timeout=settings.request_timeout(loop, environ), gate=gate, environ=environ
        ),
        prices=load_prices(project_root(run_dir)),
        recorder=recorder,
        log=CallLog(run_dir) if run_dir is not None else None,
        replay=replay,
        cache=ResponseCache(cache_dir(run_dir)) if cache else None,
        stoppable=stoppable,
    )


class RunGateway:
    """The gateway of one run, built on first use, so a run that never calls a model (or only
    uses `cmd:` runners) never touches prices, caches or the SDK."""

    def __init__(
        self,
        loop: Loop,
        run_dir: Path,
        recorder: Recorder,
        replay_from: Path | None,
        cache: bool,
        environ: settings.Environ = None,
    ) -> None:
        self.loop, self.run_dir, self.recorder = loop, run_dir, recorder
        self.replay_from, self.cache = replay_from, cache
        self.environ = environ  # the run's own environment (None: the process's)
        self.built: LlmGateway | None = None
        self.agent_cost = 0.0  # what agent CLIs (cmd: runners) reported spending
        self.stopping = False
        self._lock = threading.Lock()

    def stop(self) -> None:
        """From a signal handler: flags only (no lock: the handler may interrupt a holder)."""
        self.stopping = True
        built = self.built
        if built is not None:
            built.stop()

    def close(self) -> None:
        """The run is over: the gateway's connections go with it."""
        with self._lock:
            built = self.built
        if built is not None:
            built.close()

    def add_agent_cost(self, cost: float) -> None:
        with self._lock:
            self.agent_cost += cost

    def __call__(self) -> LlmGateway:
        with self._lock:
            if self.built is None:
                built = build_gateway(
                    loop=self.loop,
                    run_dir=self.run_dir,
                    recorder=self.recorder,
                    replay_from=self.replay_from,
                    cache=self.cache,
                    stoppable=True,
                    environ=self.environ,
                )
                if self.stopping:
                    built.stop()
                self.built = built
            return self.built


@dataclass(frozen=True)
class RunLlmServices:
    """`LlmServices` for one run. `bind(depth=, step=)` gives a view whose `llm_call` events
    carry the interpreter's depth and step; every view shares the run's gateway and costs."""

    gateway: RunGateway
    depth: int = 0
    step: int | None = None

    @classmethod
    def create(
        cls,
        loop: Loop,
        *,
        run_dir: Path,
        recorder: Recorder,
        replay_from: Path | None = None,
        cache: bool = False,
        environ: settings.Environ = None,
    ) -> RunLlmServices:
        cached = cache or loop.llm.cache
        services = cls(RunGateway(loop, run_dir, recorder, replay_from, cached, environ))
        if replay_from is not None:
            services.gateway()  # a missing replay log fails now, before the first step
        return services

    def stop(self) -> None:
        self.gateway.stop()

    def close(self) -> None:
        """The run has ended: close the SDK client's connections (see `AnthropicClient`)."""
        self.gateway.close()

    def bind(self, *, depth: int = 0, step: int | None = None) -> RunLlmServices:
        return replace(self, depth=depth, step=step)

    def _tag(self, state: State) -> CallTag:
        return CallTag(state.name, self.depth, self.step)

    @property
    def cost_usd(self) -> float:
        """The run's LLM spend: the Messages calls plus what agent CLIs reported."""
        built = self.gateway.built
        return (built.cost_usd if built is not None else 0.0) + self.gateway.agent_cost

    def spent_since(self, since: float) -> float:
        return spent_since(self.gateway.run_dir, since)

    def cost_by_state(self) -> dict[str, float]:
        built = self.gateway.built
        return built.cost_by_state() if built is not None else {}

    def messages(self, state: State) -> TaggedMessages:
        return TaggedMessages(self.gateway, self._tag(state))

    def judge(self, spec: Evaluate, text: str, *, state: State, loop: Loop) -> Verdict:
        try:
            gateway = self.gateway()
        except LoopError as exc:
            return Verdict("error", {"error": exc.message})
        return judge_with(
            gateway,
            spec,
            text,
            state=state,
            loop=loop,
            tag=self._tag(state),
            environ=self.gateway.environ,
        )

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
        environ = self.gateway.environ
        runner_spec = settings.prompt_runner(state, loop, runner, environ)
        try:
            chosen = resolve_runner(runner_spec)
        except ValueError as exc:
            return ActionResult(exit_code=None, spawn_error=str(exc))
        call = PromptCall(
            gateway=self.gateway,
            model=settings.prompt_model(state, loop, environ=environ),
            max_tokens=loop.llm.max_tokens or settings.DEFAULT_PROMPT_MAX_TOKENS,
            temperature=loop.llm.temperature,
            timeout=timeout,
            tag=self._tag(state),
            process=process,
        )
        try:
            result = chosen.run(prompt, call)
        except LoopError as exc:  # the gateway could not be built (price table, replay log)
            return ActionResult(exit_code=None, spawn_error=exc.message)
        if isinstance(chosen, CommandRunner) and result.cost_usd:
            self.gateway.add_agent_cost(result.cost_usd)  # counts toward max_cost_usd
        return result


@dataclass(frozen=True)
class TaggedMessages:
    """`MessagesPort` over a (lazily built) gateway: every call carries one tag (state, depth,
    step), so the judges of a state are logged, priced and evented as that state's."""

    gateway: Callable[[], LlmGateway]
    tag: CallTag = field(default_factory=CallTag)

    def call(
        self,
        request: Mapping[str, Any],
        *,
        sample: int = 0,
        purpose: str = "judge",
        validate: Validator | None = None,
    ) -> MessagesReply:
        try:
            gateway = self.gateway()
        except LoopError as exc:  # a bad price table or replay log: an answer, never a raise
            return CallResult("error", None, exc.message, "", str(request.get("model", "")))
        return gateway.call(
            request, sample=sample, tag=self.tag, purpose=purpose, validate=validate
        )


def messages_port(
    *,
    run_dir: Path | None = None,
    recorder: Recorder | None = None,
    replay_from: Path | None = None,
    cache: bool = False,
    tag: CallTag | None = None,
    gate: RateGate | None = None,
) -> TaggedMessages:
    """A `MessagesPort` outside a loop (a suite, a script): its own gateway, built on first use;
    `gate` is shared admission across workers (the Ray executor's limiter)."""
    built: list[LlmGateway] = []
    lock = threading.Lock()

    def lazy() -> LlmGateway:
        with lock:
            if not built:
                built.append(
                    build_gateway(
                        loop=None,
                        run_dir=run_dir,
                        recorder=recorder,
                        replay_from=replay_from,
                        cache=cache,
                        gate=gate,
                    )
                )
            return built[0]

    return TaggedMessages(lazy, tag or CallTag())


def judge_with(
    gateway: LlmGateway,
    spec: Evaluate,
    text: str,
    *,
    state: State | None,
    loop: Loop | None,
    model: str | None = None,
    tag: CallTag | None = None,
    environ: settings.Environ = None,
) -> Verdict:
    """Run the judge `spec` describes (structured, or rubric when it has dimensions)."""
    judge_settings = JudgeSettings(
        model=settings.judge_model(spec, state, loop, model, environ),
        max_tokens=spec.max_tokens
        or (loop.llm.max_tokens if loop else None)
        or settings.DEFAULT_MAX_TOKENS,
        temperature=spec.temperature
        if spec.temperature is not None
        else (loop.llm.temperature if loop else None),
        tag=tag or CallTag(state.name if state else None),
    )
    if spec.dimensions:
        return judge_rubric(
            gateway,
            judge_settings,
            criterion=spec.prompt,
            text=text,
            dimensions=spec.dimensions,
            reviewers=spec.reviewers,
            threshold=spec.threshold,
        )
    return judge_structured(
        gateway,
        judge_settings,
        criterion=spec.prompt,
        text=text,
        samples=spec.samples,
        min_confidence=spec.min_confidence,
    )


def standalone_judge(
    criterion: str,
    text: str,
    *,
    model: str | None = None,
    samples: int = 1,
    run_dir: Path | None = None,
    recorder: Recorder | None = None,
) -> Verdict:
    """`judge_text`: one judge outside a loop; API trouble is an `error` verdict."""
    try:
        gateway = build_gateway(loop=None, run_dir=run_dir, recorder=recorder)
    except LoopError as exc:  # a bad price table or replay log: a verdict, never a traceback
        return Verdict("error", {"error": exc.message})
    spec = Evaluate(type="llm_structured", prompt=criterion, samples=samples)
    return judge_with(gateway, spec, text, state=None, loop=None, model=model)


def standalone_prompt(
    prompt: str,
    *,
    model: str | None = None,
    runner: str | None = None,
    timeout: float | None = None,
    run_dir: Path | None = None,
) -> ActionResult:
    """`run_prompt_text`: one prompt outside a loop through the resolved runner."""
    spec = settings.prompt_runner(None, None, runner)
    try:
        chosen = resolve_runner(spec)
    except ValueError as exc:
        return ActionResult(exit_code=None, spawn_error=str(exc))
    gateway: list[LlmGateway] = []

    def lazy_gateway() -> LlmGateway:
        if not gateway:
            gateway.append(build_gateway(loop=None, run_dir=run_dir, recorder=None))
        return gateway[0]

    call = PromptCall(
        gateway=lazy_gateway,
        model=settings.prompt_model(None, None, model),
        max_tokens=settings.DEFAULT_PROMPT_MAX_TOKENS,
        timeout=timeout,
    )
    return chosen.run(prompt, call)
