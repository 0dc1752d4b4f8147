"""YAML paths of the things rules talk about, so each diagnostic points at the right key."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from engine.load.spelling import did_you_mean_hint
from engine.model.loop import State
from lint._registry import PathKey


def state_path(state: State, *rest: str | int) -> PathKey:
    return ("states", state.name, *rest)


def route_path(state: State, label: str) -> PathKey:
    """The key that declares the edge `label` of `state` (see `State.targets`)."""
    if label == "next":
        return state_path(state, "next")
    if label == "retry_exhausted":
        return state_path(state, "on_retry_exhausted")
    if label.startswith("terminal:"):
        return state_path(state, "on_terminal", label.removeprefix("terminal:"))
    if state.route is not None:
        return state_path(state, "route", label)
    return state_path(state, f"on_{label}")


# ` (did you mean 'x'?)` or "": the rules append it to their messages (engine.load.spelling).
did_you_mean = did_you_mean_hint


def names(items: Iterable[str]) -> str:
    """`a, b and c` — for messages."""
    listed = [f"{i!r}" for i in items]
    if len(listed) <= 1:
        return "".join(listed)
    return ", ".join(listed[:-1]) + " and " + listed[-1]


def strings_in(value: Any, path: PathKey) -> Iterator[tuple[PathKey, str]]:
    """The strings in a YAML value (nested mappings and lists included), with their paths."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from strings_in(item, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from strings_in(item, (*path, index))
