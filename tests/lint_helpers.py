"""Build `Loop` objects from plain dicts shaped like the YAML, for graph and lint unit tests.

This is deliberately tiny (no validation): tests that need the real loader use `engine.load.loader`.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from engine.model.loop import Evaluate, Loop, Parameter, State, Suppression


def make_state(name: str, spec: dict[str, Any]) -> State:
    """A `State` from YAML-like keys: `on_<verdict>` become routes, `with` becomes `with_`."""
    spec = dict(spec)
    routes = {
        k[3:]: spec.pop(k)
        for k in list(spec)
        if k.startswith("on_") and k not in ("on_terminal", "on_retry_exhausted")
    }
    evaluate = spec.pop("evaluate", None)
    if isinstance(evaluate, dict):
        evaluate = Evaluate(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in evaluate.items()}
        )
    routed = routes or "route" in spec
    if evaluate is None and routed and "next" not in spec and "loop" not in spec:
        # the loader's defaults (docs/format.md, "Default evaluators"): exit_code for shell, an
        # implicit judge for prompts
        if spec.get("action_type") == "prompt":
            evaluate = Evaluate(type="llm_structured", implicit=True)
        elif not spec.get("terminal"):
            evaluate = Evaluate(type="exit_code")
    lint = tuple(Suppression(**s) for s in spec.pop("lint", ()))
    if "with" in spec:
        spec["with_"] = spec.pop("with")
    return State(name=name, routes=routes, evaluate=evaluate, lint=lint, **spec)


def make_loop(states: dict[str, dict[str, Any]], initial: str | None = None, **top: Any) -> Loop:
    """A `Loop` whose states come from `make_state`; `initial` defaults to the first state."""
    params = {n: Parameter(name=n, **p) for n, p in top.pop("parameters", {}).items()}
    lint = tuple(Suppression(**s) for s in top.pop("lint", ()))
    if "scope" in top and top["scope"] is not None:
        top["scope"] = tuple(top["scope"])
    top.setdefault("name", "t")
    return Loop(
        initial=initial or next(iter(states)),
        states={n: make_state(n, s) for n, s in states.items()},
        parameters=params,
        lint=lint,
        **top,
    )


@st.composite
def random_loops(draw: st.DrawFn) -> Loop:
    """Random loops: exit_code checks, LLM judges and `next:` steps routed anywhere."""
    n = draw(st.integers(min_value=1, max_value=14))
    names = [f"s{i}" for i in range(n)]
    terminal = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    states: dict[str, dict[str, object]] = {}
    for i, name in enumerate(names):
        if terminal[i] and i > 0:
            states[name] = {"terminal": True, "failure": draw(st.booleans())}
            continue
        kind = draw(st.sampled_from(["exit_code", "llm", "next"]))
        target = st.sampled_from(names)
        if kind == "next":
            states[name] = {"action": "x", "next": draw(target)}
            if draw(st.booleans()):
                states[name]["on_error"] = draw(target)
            continue
        pool = ["yes", "no", "error"] + (
            ["partial", "blocked", "cannot_judge"] if kind == "llm" else []
        )
        labels = draw(st.lists(st.sampled_from(pool), unique=True, max_size=len(pool)))
        states[name] = {"action": "x", **{f"on_{v}": draw(target) for v in labels}}
        if kind == "llm":
            states[name]["evaluate"] = {"type": "llm_structured", "prompt": "Quote evidence."}
    return make_loop(states, max_steps=draw(st.integers(min_value=0, max_value=30)))
