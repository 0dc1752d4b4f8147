"""Rules for prompt states and LLM judges, including the seed's scaffold warnings (`scope`,
`MR-8`) and `MR-4`, whose codes are kept literally so users of the reference system find them."""

from __future__ import annotations

import re
from collections.abc import Iterator

from engine.model.loop import State
from lint._context import LintContext
from lint._judges import judges_with_paths
from lint._paths import state_path
from lint._registry import Finding, rule

_EVIDENCE = re.compile(r"verbatim|quot|evidence|\bcit(e|ing|ation)", re.IGNORECASE)


def _judged_by_llm(state: State) -> bool:
    return state.evaluate is not None and state.evaluate.type == "llm_structured"


@rule("LL020", "warning", "implicit-judge")
def implicit_judge(ctx: LintContext) -> Iterator[Finding]:
    """A prompt state with verdict routes but no `evaluate`: an LLM judge with a default prompt."""
    for state in ctx.loop.states.values():
        if _judged_by_llm(state) and state.evaluate is not None and state.evaluate.implicit:
            yield Finding(
                f"state {state.name!r} is judged by an implicit llm_structured evaluator with a "
                "generic prompt",
                state_path(state),
                "add an explicit `evaluate: {type: llm_structured, prompt: ...}` that says what "
                "yes and no mean here",
            )


@rule("LL021", "warning", "prompt-without-timeout")
def prompt_without_timeout(ctx: LintContext) -> Iterator[Finding]:
    """A prompt state with neither its own `timeout` nor the loop's `default_timeout`."""
    if ctx.loop.default_timeout is not None:
        return
    for state in ctx.loop.states.values():
        if state.action_type == "prompt" and state.timeout is None and not state.terminal:
            yield Finding(
                f"prompt state {state.name!r} has no timeout, so a hung agent or API call can "
                "stall the run until the loop timeout",
                state_path(state, "action_type"),
                "add `timeout: <seconds>` to the state, or `default_timeout` to the loop",
            )


@rule("scope", "warning", "scope-missing")
def scope_missing(ctx: LintContext) -> Iterator[Finding]:
    """Loop declares no `scope:`, so a run locks the whole repository."""
    if ctx.loop.scope is None:
        yield Finding(
            "Loop declares no 'scope:', so a run takes a repo-root lock that conflicts with every "
            "other concurrent loop",
            ("name",),
            'add `scope: ["path/"]` naming what the loop writes, or `scope: ["."]` as an '
            "explicit repo-wide opt-in",
        )


@rule("MR-8", "warning", "evidence-contract")
def evidence_contract(ctx: LintContext) -> Iterator[Finding]:
    """An `llm_structured` prompt does not include evidence-contract keywords."""
    for state in ctx.loop.states.values():
        if not _judged_by_llm(state) or state.evaluate is None:
            continue
        if state.evaluate.dimensions:  # rubric mode: scores 1-5, no evidence asked or checked
            continue
        prompt = state.evaluate.prompt
        if prompt is not None and not _EVIDENCE.search(prompt):
            yield Finding(
                f"the judge prompt of state {state.name!r} does not include evidence-contract "
                "keywords: only ll-loop's generic demand for a quote, appended to it, stands "
                "between its verdicts and optimism",
                state_path(state, "evaluate", "prompt"),
                "end the prompt with: Provide a VERBATIM quote from the output that supports "
                "your verdict.",
            )
    for state in ctx.loop.states.values():  # LLM judges of an assessment: their prompts only
        for judge, path in judges_with_paths(state):
            key = next((k for k in ("llm_rubric", "prompt") if getattr(judge, k)), None)
            if judge.kind != "llm" or key is None:
                continue
            if not _EVIDENCE.search(getattr(judge, key)):
                yield Finding(
                    f"the prompt of LLM judge {judge.name!r} (state {state.name!r}) does not "
                    "include evidence-contract keywords: only ll-loop's generic demand for a "
                    "quote, appended to it, stands between its judgements and optimism",
                    (*path, key),
                    "end the prompt with: Quote VERBATIM from the outputs the evidence for your "
                    "answer.",
                )


@rule("MR-4", "warning", "judge-without-no")
def judge_without_no(ctx: LintContext) -> Iterator[Finding]:
    """An LLM-judged state routes `yes` but neither `no` nor `partial`."""
    for state in ctx.loop.states.values():
        if not _judged_by_llm(state):
            continue
        table = state.route if state.route is not None else state.routes
        has_default = state.route is not None and "_" in table
        if "yes" in table and not ({"no", "partial"} & table.keys()) and not has_default:
            if state.route is None:
                routes = "on_yes but neither on_no nor on_partial"
                hint = "add `on_no:` (partial and blocked fall back to it)"
            else:  # a route table has no fallbacks, and rejects on_* keys (F017)
                routes = "yes but neither no nor partial"
                hint = "add a `no:` entry (and `partial:`, `blocked:`) to the route table, or `_:`"
            yield Finding(
                f"LLM-judged state {state.name!r} routes {routes}, so a negative judgement has "
                "no deliberate destination",
                state_path(state, "on_yes" if state.route is None else "route"),
                hint,
            )
