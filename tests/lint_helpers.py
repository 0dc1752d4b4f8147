"""Build `Loop` objects from plain dicts shaped like the YAML, for graph and lint unit tests.

This is deliberately tiny (no validation): tests that need the real loader use `engine.load`.
"""

from __future__ import annotations

from typing import Any

from engine.model import Evaluate, Loop, Parameter, State, Suppression


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
        # the loader's defaults (DESIGN §3): exit_code for shell, an implicit judge for prompts
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
