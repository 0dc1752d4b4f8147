"""The LLM layer: `llm_structured` judges and prompt actions over the official `anthropic` SDK.

This module is the public API other parts wire against. It stays import-light on purpose: it
never imports `anthropic` (≈1.5 s) at import time; only a run that actually calls a model pays
for it. Everything here delegates to the private modules, imported when a function is called.

- `create_llm_services(loop, run_dir=..., recorder=...)` → an
  `engine.model.ports.LlmServices` for the interpreter (`judge`, `run_prompt`, `cost_usd`).
- `llm_preflight(loop)` → a list of problems (one sentence each, naming what to set); `[]` is OK.
- `judge_text(criterion, text)` / `run_prompt_text(prompt)` → standalone use (`ll-harness`).
- `implicit_judge_prompt(task)` → the criterion of a prompt state's default judge.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.model.loop import Loop
    from engine.model.ports import ActionResult, LlmServices, Recorder, Verdict

__all__ = [
    "create_llm_services",
    "implicit_judge_prompt",
    "judge_text",
    "llm_preflight",
    "run_prompt_text",
]


def create_llm_services(
    loop: Loop,
    *,
    run_dir: Path,
    recorder: Recorder,
    replay_from: Path | None = None,
    cache: bool = False,
    environ: Mapping[str, str] | None = None,
) -> LlmServices:
    """The LLM services of one run: calls logged to `<run_dir>/llm.jsonl`, events to `recorder`.

    `replay_from` (the run directory of an earlier run) answers every call from that run's
    `llm.jsonl` and never talks HTTP; `cache` (or `loop.llm.cache`) reuses successful answers
    from `.loops/llm-cache/`. `environ` is the run's own environment: credentials, base URL,
    models, runners and retry settings are read there instead of `os.environ`.
    """
    from engine.llm.services import RunLlmServices

    return RunLlmServices.create(
        loop,
        run_dir=run_dir,
        recorder=recorder,
        replay_from=replay_from,
        cache=cache,
        environ=environ,
    )


def llm_preflight(
    loop: Loop,
    *,
    replay: bool = False,
    replay_from: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[str]:
    """Problems that would stop this loop's LLM states; each is one sentence naming what to set."""
    from engine.llm.preflight import preflight

    return preflight(loop, replay=replay, replay_from=replay_from, environ=environ)


def judge_text(
    criterion: str,
    text: str,
    *,
    model: str | None = None,
    samples: int = 1,
    run_dir: Path | None = None,
    recorder: Recorder | None = None,
) -> Verdict:
    """Judge `text` against `criterion` outside a loop (`ll-harness --semantic`)."""
    from engine.llm.services import standalone_judge

    return standalone_judge(
        criterion, text, model=model, samples=samples, run_dir=run_dir, recorder=recorder
    )


def run_prompt_text(
    prompt: str,
    *,
    model: str | None = None,
    runner: str | None = None,
    timeout: float | None = None,
    run_dir: Path | None = None,
) -> ActionResult:
    """Run one prompt through a runner outside a loop (`ll-harness prompt`)."""
    from engine.llm.services import standalone_prompt

    return standalone_prompt(prompt, model=model, runner=runner, timeout=timeout, run_dir=run_dir)


def implicit_judge_prompt(task: str) -> str:
    """The criterion for a prompt state's default judge (no `evaluate:`), given its rendered
    prompt: the interpreter passes it as `spec.prompt` so the judge knows what was asked."""
    from engine.llm.judge import implicit_prompt

    return implicit_prompt(task)
