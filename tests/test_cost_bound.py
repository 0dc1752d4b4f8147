"""The static cost bound on hand-checked loops, and its walk against brute force on random ones."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.graph.cost import StepCost, cost_bound, heaviest_walks, render_bound
from engine.graph.loop_graph import LoopGraph, compile_graph
from engine.llm.costs import OVERHEAD_TOKENS, VALUE_CHARS, loop_cost, template_chars
from engine.llm.prices import PriceTable
from engine.model.loop import LlmConfig, Loop
from tests.lint_helpers import make_loop, random_loops
from tests.properties import examples

JUDGE = {"type": "llm_structured", "prompt": "Did it pass? Quote the line.", "samples": 3}


def _review_loop(max_steps: int) -> Loop:
    """build → review (3 samples) → done/failed: no LLM state on a cycle."""
    return make_loop(
        {
            "build": {"action": "make", "on_yes": "review", "on_no": "build", "on_error": "failed"},
            "review": {"action": "cat log", "evaluate": JUDGE, "on_yes": "done", "on_no": "failed"},
            "done": {"terminal": True},
            "failed": {"terminal": True, "failure": True},
        },
        max_steps=max_steps,
        llm=LlmConfig(model="claude-haiku-4-5"),
    )


def test_a_loop_without_llm_cycles_has_a_bound_independent_of_max_steps() -> None:
    small, large = loop_cost(_review_loop(5)), loop_cost(_review_loop(5000))
    assert small.independent_of_max_steps and large.independent_of_max_steps
    assert small.calls == large.calls == 6  # 3 samples, each possibly asked twice
    assert small.usd == large.usd
    assert small.exact and small.worst_walk[-1] in {"done", "failed"}


def test_a_judge_on_a_cycle_is_bounded_by_max_steps() -> None:
    def loop(max_steps: int) -> Loop:
        return make_loop(
            {
                "check": {"action": "x", "evaluate": JUDGE, "on_yes": "done", "on_no": "fix"},
                "fix": {"action": "y", "next": "check"},
                "done": {"terminal": True},
            },
            max_steps=max_steps,
        )

    # check, fix, check, fix, check: three judgements in five steps, six calls each
    assert loop_cost(loop(5)).calls == 18
    assert loop_cost(loop(6)).calls == 18
    assert loop_cost(loop(7)).calls == 24
    bound = loop_cost(loop(7))
    assert not bound.independent_of_max_steps and bound.cyclic_llm_states == ("check",)


def test_on_max_steps_state_is_paid_once_when_the_budget_runs_out() -> None:
    loop = make_loop(
        {
            "spin": {"action": "x", "next": "spin"},
            "summary": {"action": "Summarise", "action_type": "prompt", "next": "done"},
            "done": {"terminal": True},
        },
        max_steps=4,
        on_max_steps="summary",
    )
    bound = loop_cost(loop)
    assert bound.calls == 1
    assert bound.worst_walk[-1] == "summary" and set(bound.worst_walk[:-1]) == {"spin"}


def test_max_cost_usd_caps_dollars_at_the_limit_plus_the_dearest_step() -> None:
    loop = make_loop(
        {
            "ask": {"action": "Go on", "action_type": "prompt", "next": "ask"},
        },
        max_steps=100,
        max_cost_usd=0.01,
        llm=LlmConfig(model="claude-haiku-4-5"),
    )
    bound = loop_cost(loop)
    step = bound.steps["ask"].usd
    assert bound.capped_by_max_cost
    assert bound.usd == 0.01 + step
    assert bound.calls == 100  # calls are not capped by money


def test_prompt_cost_uses_the_model_price_and_max_tokens() -> None:
    loop = make_loop(
        {"ask": {"action": "Say hi to ${context.name}", "action_type": "prompt", "next": "done"},
         "done": {"terminal": True}},
        llm=LlmConfig(model="claude-opus-4-1", max_tokens=100),
    )  # fmt: skip
    fixed, most = template_chars("Say hi to ${context.name}")
    assert (fixed, most) == (len("Say hi to "), len("Say hi to ") + VALUE_CHARS)
    expected = ((most + OVERHEAD_TOKENS) * 15.0 + 100 * 75.0) / 1_000_000
    assert abs(loop_cost(loop).usd - expected) < 1e-12  # type: ignore[operator]


def test_cmd_runners_cost_nothing_and_unknown_children_make_the_bound_unknown() -> None:
    loop = make_loop(
        {
            "agent": {"action": "do it", "action_type": "prompt", "runner": "cmd:cat",
                      "next": "child"},
            "child": {"loop": "${context.which}", "on_yes": "done", "on_no": "done"},
            "done": {"terminal": True},
        }
    )  # fmt: skip
    bound = loop_cost(loop)
    assert bound.steps["agent"].calls == 0
    assert not bound.bounded and "child" in bound.unknown
    assert "chosen at run time" in bound.unknown["child"]


def test_a_subloop_costs_its_childs_whole_bound() -> None:
    child = _review_loop(10)
    parent = make_loop(
        {
            "run": {"loop": "review", "on_yes": "done", "on_no": "run", "on_error": "done"},
            "done": {"terminal": True},
        },
        max_steps=3,
    )
    bound = loop_cost(parent, resolve_child=lambda ref, _: child if ref == "review" else None)
    assert bound.calls == 3 * 6
    assert bound.usd == 3 * loop_cost(child).usd  # type: ignore[operator]


def test_loops_that_call_each_other_are_bounded_at_once() -> None:
    """Six sub-loop states calling the other loop, nesting down to the depth limit: each
    (caller, reference, depth) is bounded once (the bound walked 6^8 children: hours)."""

    def calling(name: str, other: str) -> Loop:
        states: dict[str, object] = {
            f"s{i}": {"loop": other, "next": f"s{i + 1}" if i < 5 else "done"} for i in range(6)
        }
        states["judge"] = {"action": "cat log", "evaluate": JUDGE, "next": "s0"}
        states["done"] = {"terminal": True}
        return make_loop(states, initial="judge", name=name, source=f"/loops/{name}.yaml")

    loops = {"a": calling("a", "b"), "b": calling("b", "a")}
    seen: list[str] = []

    def resolve(ref: str, parent: Loop) -> Loop:
        seen.append(ref)
        assert len(seen) <= 2 * 8, "each reference is resolved once per depth"
        return loops[ref]

    bound = loop_cost(loops["a"], resolve_child=resolve)
    assert bound.bounded and bound.calls == sum(6 * 6**d for d in range(8))  # 6 calls a level


def test_cheapest_success_path_counts_the_least_calls() -> None:
    bound = loop_cost(_review_loop(10), prices=PriceTable())
    assert bound.cheapest_success is not None
    assert bound.cheapest_success.path == ("build", "review", "done")
    assert bound.cheapest_success.calls == 3
    assert 0 < bound.cheapest_success.usd < bound.usd  # type: ignore[operator]


def _brute_force(graph: LoopGraph, weight: dict[str, float], budget: int) -> float:
    """Every walk of at most `budget` steps, enumerated."""
    extra = weight.get(graph.on_max_steps, 0.0) if graph.on_max_steps else 0.0

    def best(node: str, left: int) -> float:
        if node in graph.terminals:
            return 0.0
        if left == 0:
            return extra
        options = [best(t, left - 1) for t in graph.successors(node)]
        return weight.get(node, 0.0) + max(options, default=0.0)

    return best(graph.initial, budget)


@settings(max_examples=examples(150), deadline=None)
@given(random_loops(), st.integers(min_value=0, max_value=7), st.data())
def test_heaviest_walk_matches_brute_force(loop: Loop, budget: int, data: st.DataObject) -> None:
    graph = compile_graph(loop)
    weight = {n: float(data.draw(st.integers(0, 5))) for n in graph.nodes}
    walk = heaviest_walks(graph, weight, budget)
    assert walk.exact
    assert walk.total == _brute_force(graph, weight, budget)
    # the traced walk really spends the total
    executed = [s for s in walk.walk if s not in graph.terminals]
    assert sum(weight[s] for s in executed) == walk.total or graph.on_max_steps


@settings(max_examples=examples(100), deadline=None)
@given(random_loops())
def test_bound_without_llm_cycles_equals_any_larger_budget(loop: Loop) -> None:
    graph = compile_graph(loop)
    steps = {n: StepCost(calls=1, usd=1.0) for n in graph.nodes if n not in graph.terminals}
    small = cost_bound(graph, steps, max_steps=len(graph.nodes))
    if small.independent_of_max_steps:
        assert cost_bound(graph, steps, max_steps=10 * len(graph.nodes) + 3).calls == small.calls


def test_the_step_note_counts_samples_in_words() -> None:
    def note(evaluate: dict[str, object]) -> str:
        loop = make_loop(
            {"review": {"action": "cat log", "evaluate": evaluate, "route": {"_": "done"}},
             "done": {"terminal": True}},
        )  # fmt: skip
        return loop_cost(loop).steps["review"].note

    assert "judge: 1 sample (x2" in note({**JUDGE, "samples": 1})
    assert "judge: 3 samples (x2" in note(JUDGE)


def test_an_agent_clis_spend_is_named_as_outside_the_bound() -> None:
    """A loop of `cmd:` agents, which report dollars that count toward `max_cost_usd`, was
    shown as 'no LLM calls (cost $0)' with nothing saying their spend was left out."""
    child = make_loop(
        {
            "agent": {"action": "do it", "action_type": "prompt", "runner": "cmd:claude -p",
                      "next": "done"},
            "done": {"terminal": True},
        }
    )  # fmt: skip
    parent = make_loop(
        {
            "run": {"loop": "child", "on_yes": "done", "on_no": "done"},
            "done": {"terminal": True},
        }
    )
    bound = loop_cost(parent, resolve_child=lambda ref, _: child if ref == "child" else None)
    assert (bound.calls, bound.usd) == (0, 0.0)
    assert bound.outside == {"run": "sub-loop t's agent CLIs (agent)"}
    assert loop_cost(child).outside == {"agent": "an agent CLI's own spend, as it reports it"}
    assert "not counted: run: sub-loop t's agent CLIs (agent)" in render_bound(bound)
    assert bound.to_json()["outside"] == {"run": "sub-loop t's agent CLIs (agent)"}
