"""What one execution of a state can cost in LLM calls and dollars, for the static cost bound.

The graph walk is `engine.graph.cost`; this module knows the calls: a prompt action with the
`anthropic` runner is one call; an `llm_structured` judge is `samples` calls and a rubric judge
`reviewers` calls, each of which may be asked once more after a malformed answer (so twice
that, at most); a `cmd:` runner is a process, not an API call; a sub-loop costs its child's
whole bound. Failed HTTP attempts are not billed and are not counted.

Dollars per call = input tokens x input price + `max_tokens` x output price. The API caps the
output at `max_tokens`; the input is bounded by building the request the judge or runner would
send, with every `${...}` replaced by a placeholder of the largest value it can hold and the
judged text at the judge's character limit, and counting one token per character (a token is
at least one character of ASCII text; text in other scripts can take more tokens than
characters, which this bound does not cover), plus `OVERHEAD_TOKENS` for the API's own framing.
Values an action interpolates have no engine-enforced size except captures (64 KiB); every
`${...}` is counted as `VALUE_CHARS` characters — a larger `--context` value makes the dollar
figure an under-estimate, never the call count. The cheapest path to success is an estimate:
the fixed text of each request at `CHARS_PER_TOKEN` characters per token.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from engine.graph.cost import FREE, CostBound, StepCost, cost_bound
from engine.graph.loop_graph import compile_graph
from engine.llm import settings
from engine.llm.prices import PriceTable
from engine.model.errors import LoopError
from engine.model.loop import Evaluate, Loop, State
from engine.model.timefmt import counted

OVERHEAD_TOKENS = 1_000  # per call: message framing and the tool-use system prompt (~350 today)
VALUE_CHARS = 64 * 1024  # characters one `${...}` is assumed to hold (a capture's limit)
CHARS_PER_TOKEN = 4  # the usual ratio for English text; only the cheapest-path estimate uses it
MIN_OUTPUT_TOKENS = {"prompt": 1, "judge": 20, "rubric": 20}
MAX_DEPTH = 8  # sub-loops nest at most this deep (a ninth level is an error, no calls)
MALFORMED_RETRIES = 1  # a judge sample or reviewer is asked once more after a malformed answer

# (reference, the loop that names it) -> the child loop, or None when it does not resolve
ChildResolver = Callable[[str, Loop], Loop | None]
# (the parent's file, the `loop:` reference, the parent's depth) -> what one execution costs
SubloopCosts = dict[tuple[str, str, int], StepCost]


def request_chars(request: Mapping[str, Any]) -> int:
    """Characters of a Messages request that are billed as input: system prompt, message text,
    tool definitions (as compact JSON)."""
    total = 0
    system = request.get("system")
    if isinstance(system, str):
        total += len(system)
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(str(b.get("text", ""))) for b in content if isinstance(b, Mapping))
    tools = request.get("tools")
    if tools:
        total += len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False))
    return total


def template_chars(template: str | None) -> tuple[int, int]:
    """(fixed characters, characters at most) of an interpolated text."""
    if not template:
        return 0, 0
    from engine.shell.interpolate import find_expressions

    expressions = find_expressions(template)
    fixed = len(template) - sum(e.end - e.start for e in expressions)
    return fixed, fixed + VALUE_CHARS * len(expressions)


def loop_cost(
    loop: Loop,
    *,
    prices: PriceTable | None = None,
    resolve_child: ChildResolver | None = None,
    max_steps: int | None = None,
    depth: int = 0,
    subloops: SubloopCosts | None = None,
) -> CostBound:
    """The cost bound of `loop` (built-in prices unless `prices`); sub-loops through
    `resolve_child` (an unresolvable child makes the bound unknown). `subloops` keeps each
    sub-loop's bound once worked out, for the whole walk."""
    table = prices if prices is not None else PriceTable()
    subloops = {} if subloops is None else subloops
    steps = {
        name: state_cost(loop, state, table, resolve_child, depth, subloops=subloops)
        for name, state in loop.states.items()
        if not state.terminal
    }
    return cost_bound(
        compile_graph(loop),
        steps,
        max_steps=max_steps or loop.max_steps,
        max_cost_usd=loop.max_cost_usd,
    )


def state_cost(
    loop: Loop,
    state: State,
    prices: PriceTable,
    resolve_child: ChildResolver | None,
    depth: int,
    *,
    subloops: SubloopCosts | None = None,
) -> StepCost:
    """What one execution of `state` can cost."""
    if state.is_subloop:
        assert state.loop is not None
        # Loops that call each other (or one that calls itself) nest down to MAX_DEPTH: without
        # keeping each (caller, reference, depth) once, six such states took 6^8 walks (hours).
        key = (loop.source or loop.name, state.loop, depth)
        known = None if subloops is None else subloops.get(key)
        if known is None:
            known = _subloop_cost(loop, state, prices, resolve_child, depth, subloops)
            if subloops is not None:
                subloops[key] = known
        return known
    parts: list[StepCost] = []
    if state.action_type == "prompt" and state.action is not None:
        parts.append(_prompt_cost(loop, state, prices))
    spec = state.evaluate
    if spec is not None and spec.type == "llm_structured":
        parts.append(_judge_cost(loop, state, spec, prices))
    elif spec is not None and spec.type not in _DETERMINISTIC:
        return StepCost(unknown=f"evaluate type {spec.type!r} is not known to the cost bound")
    return _sum(parts)


_DETERMINISTIC = frozenset(
    {"exit_code", "output_contains", "output_numeric", "output_json", "convergence", "classify"}
)


def _sum(parts: list[StepCost]) -> StepCost:
    if not parts:
        return FREE
    return StepCost(
        calls=sum(p.calls for p in parts),
        usd=sum(p.usd for p in parts),
        min_calls=sum(p.min_calls for p in parts),
        min_usd=sum(p.min_usd for p in parts),
        note="; ".join(p.note for p in parts if p.note),
        outside="; ".join(p.outside for p in parts if p.outside),
    )


def _call_cost(
    prices: PriceTable, model: str, purpose: str, fixed: int, most: int, max_tokens: int
) -> tuple[float, float]:
    """(most, least) dollars of one call with `fixed`..`most` input characters."""
    price = prices.price_for(model)
    high = ((most + OVERHEAD_TOKENS) * price.input + max_tokens * price.output) / 1_000_000
    low_tokens = fixed // CHARS_PER_TOKEN
    low = (low_tokens * price.input + MIN_OUTPUT_TOKENS[purpose] * price.output) / 1_000_000
    return high, low


def _prompt_cost(loop: Loop, state: State, prices: PriceTable) -> StepCost:
    runner = settings.prompt_runner(state, loop)
    if runner != settings.DEFAULT_RUNNER:
        return StepCost(
            note=f"prompt via {runner}: a process, no API cost",
            outside="an agent CLI's own spend, as it reports it",
        )
    model = settings.prompt_model(state, loop)
    max_tokens = loop.llm.max_tokens or settings.DEFAULT_PROMPT_MAX_TOKENS
    fixed, most = template_chars(state.action)
    high, low = _call_cost(prices, model, "prompt", fixed, most, max_tokens)
    return StepCost(1, high, 1, low, note=f"prompt: 1 call to {model}, ≤ {max_tokens} tokens out")


def _judge_cost(loop: Loop, state: State, spec: Evaluate, prices: PriceTable) -> StepCost:
    from engine.llm.judge import SYSTEM, VERDICT_TOOL, judge_prompt, shorten_judged_text
    from engine.llm.rubric import rubric_prompt, score_tool

    model = settings.judge_model(spec, state, loop)
    max_tokens = spec.max_tokens or loop.llm.max_tokens or settings.DEFAULT_MAX_TOKENS
    fixed_prompt, most_prompt = template_chars(spec.prompt)
    limit = settings.judge_max_chars()
    # The longest judged text shown: the limit, plus the marker and the note of a shortened one
    # (built for a text of ten times the limit, so its digit counts are generous).
    longest = shorten_judged_text("x" * (limit * 10), limit)
    empty = shorten_judged_text("", limit)
    criterion_most = "x" * most_prompt
    criterion_fixed = "x" * fixed_prompt
    if spec.dimensions:
        tool, purpose, count = score_tool(spec.dimensions), "rubric", max(1, spec.reviewers)

        def user(criterion: str, judged: Any) -> str:
            return rubric_prompt(criterion, spec.dimensions, judged)
    else:
        tool, purpose, count = dict(VERDICT_TOOL), "judge", max(1, spec.samples)
        user = judge_prompt
    most = _chars(SYSTEM, user(criterion_most, longest), tool) + 200  # slack: digit widths
    fixed = _chars(SYSTEM, user(criterion_fixed, empty), tool)
    high, low = _call_cost(prices, model, purpose, fixed, most, max_tokens)
    calls = count * (1 + MALFORMED_RETRIES)
    what = counted(count, "reviewer" if spec.dimensions else "sample")
    return StepCost(
        calls,
        high * calls,
        count,
        low * count,
        note=f"judge: {what} (x2 if malformed) to {model}, ≤ {max_tokens} tokens out",
    )


def _chars(system: str, user: str, tool: Mapping[str, Any]) -> int:
    request = {"system": system, "messages": [{"role": "user", "content": user}], "tools": [tool]}
    return request_chars(request)


def _subloop_cost(
    parent: Loop,
    state: State,
    prices: PriceTable,
    resolve_child: ChildResolver | None,
    depth: int,
    subloops: SubloopCosts | None,
) -> StepCost:
    assert state.loop is not None
    if depth + 1 >= MAX_DEPTH:
        return StepCost(note="deeper than sub-loops may nest: an error, no calls")
    if "${" in state.loop:
        return StepCost(unknown=f"sub-loop {state.loop!r} is chosen at run time")
    if resolve_child is None:
        return StepCost(unknown=f"sub-loop {state.loop!r} was not resolved")
    try:
        child = resolve_child(state.loop, parent)
    except LoopError as exc:
        return StepCost(unknown=f"sub-loop {state.loop!r} does not load: {exc.message}")
    if child is None:
        return StepCost(unknown=f"sub-loop {state.loop!r} does not load")
    bound = loop_cost(
        child, prices=prices, resolve_child=resolve_child, depth=depth + 1, subloops=subloops
    )
    if not bound.bounded:
        reasons = "; ".join(f"{k}: {v}" for k, v in bound.unknown.items())
        return StepCost(unknown=f"sub-loop {child.name!r} has no bound ({reasons})")
    assert bound.calls is not None and bound.usd is not None
    inside = ", ".join(bound.outside)
    return StepCost(
        bound.calls,
        bound.usd,
        note=f"sub-loop {child.name}: its whole bound",
        outside=f"sub-loop {child.name}'s agent CLIs ({inside})" if inside else "",
    )
