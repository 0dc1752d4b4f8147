"""Rules for sub-loop states: the child must resolve and `with:` must fit its `parameters`."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from engine.model.loop import Loop, Parameter, State
from engine.model.params import ParameterError, coerce
from lint._context import LintContext
from lint._paths import did_you_mean, names, state_path
from lint._registry import Finding, rule


def _children(ctx: LintContext) -> Iterator[tuple[State, Loop | None, str, str]]:
    """Sub-loop states with a literal `loop:` reference, their child (or None), why not and
    the loader's hint."""
    if ctx.resolve_loop is None:
        return
    for state in ctx.loop.states.values():
        if state.loop is not None and "${" not in state.loop and not state.terminal:
            child, why, hint = ctx.child_loop(state.loop)
            yield state, child, why, hint


@rule("LL040", "error", "unresolved-loop")
def unresolved_loop(ctx: LintContext) -> Iterator[Finding]:
    """A sub-loop state's `loop:` names no loop file or built-in, or the child does not load."""
    for state, child, why, hint in _children(ctx):
        if child is None:
            reason = f": {why}" if why else ""
            # the loader's hint fits the failure: an invalid child is found, so "use a path
            # relative to this file" sent its author looking for a file that was there
            yield Finding(
                f"state {state.name!r} runs loop {state.loop!r}, which cannot be "
                f"found or loaded{reason}",
                state_path(state, "loop"),
                hint
                or "use a path relative to this file, a name in .loops/, or a built-in from "
                "`ll-loop list`",
            )


@rule("LL041", "error", "loop-arguments")
def loop_arguments(ctx: LintContext) -> Iterator[Finding]:
    """`with:` does not match the child loop's `parameters` (missing, unknown or mistyped)."""
    for state, child, _, _ in _children(ctx):
        if child is None:
            continue
        params = child.parameters
        given = dict(state.with_)
        if child.input_key and "input" in given:  # the child's INPUT is its input_key
            given.setdefault(child.input_key, given.pop("input"))
        for name, declared in params.items():
            if declared.required and not declared.has_default and name not in given:
                yield Finding(
                    f"state {state.name!r} does not pass required parameter {name!r} of "
                    f"loop {child.name!r}",
                    state_path(state, "with"),
                    f"add `{name}: <value>` under `with:`",
                )
        for name, value in given.items():
            param = params.get(name)
            if param is None and name == "input":
                continue  # the child's INPUT (context.input), as on the command line
            if param is None:
                known = f"; it takes {names(params)}" if params else "; it takes no parameters"
                yield Finding(
                    f"loop {child.name!r} has no parameter {name!r}"
                    f"{did_you_mean(name, params)}{known}",
                    state_path(state, "with", name),
                    "pass only the names declared under the child's `parameters:`",
                )
                continue
            problem = literal_problem(param, value, child.name)
            if problem:
                yield Finding(
                    problem,
                    state_path(state, "with", name),
                    "pass a value of the declared type (or an ${...} expression)",
                )


def literal_problem(param: Parameter, value: Any, loop_name: str) -> str:
    """Why a literal `with:` value fails the binding a run applies (`engine.model.params.coerce`),
    or empty when it fits or is an `${...}` expression known only at run time."""
    if isinstance(value, str) and "${" in value:
        return ""
    try:
        coerce(param, value, loop_name)
    except ParameterError as exc:
        return exc.message
    return ""


@rule("LL042", "error", "unknown-child-terminal")
def unknown_child_terminal(ctx: LintContext) -> Iterator[Finding]:
    """`on_terminal` names a terminal state the child loop does not have."""
    for state, child, _, _ in _children(ctx):
        if child is None:
            continue
        terminals = [s.name for s in child.terminals()]
        for name in state.on_terminal:
            if name not in terminals:
                yield Finding(
                    f"state {state.name!r} routes on child terminal {name!r}, but loop "
                    f"{child.name!r} has no such terminal{did_you_mean(name, terminals)}",
                    state_path(state, "on_terminal", name),
                    f"use one of {names(terminals)}",
                )


_NAMED_VALUE = re.compile(r"^\$\{\s*(?:context|param)\.([A-Za-z_][A-Za-z0-9_]*)\s*\}$")


@rule("LL043", "warning", "dynamic-loop-reference")
def dynamic_loop_reference(ctx: LintContext) -> Iterator[Finding]:
    """`loop:` interpolates a value, so whoever sets it picks the loop file that runs."""
    for state in ctx.loop.states.values():
        if state.loop is None or "${" not in state.loop or state.terminal:
            continue
        named = _NAMED_VALUE.match(state.loop.strip())
        param = ctx.loop.parameters.get(named.group(1)) if named else None
        if param is not None and param.enum is not None:
            continue  # the run refuses any value outside the declared list
        yield Finding(
            f"state {state.name!r} runs the loop named by {state.loop.strip()}: whoever sets "
            "that value chooses which loop file runs, any absolute path included",
            state_path(state, "loop"),
            "declare the value as a parameter with an `enum:` of the loops it may name, or "
            "suppress LL043 with the reason any loop is acceptable here",
        )


@rule("LL044", "warning", "self-recursive-loop")
def self_recursive_loop(ctx: LintContext) -> Iterator[Finding]:
    """A sub-loop state runs the loop it is in, and every run passes through it.

    Each child then runs that state again: the run nests until the depth limit (8), where the
    state errs; nothing the loop does stops the recursion."""
    source = ctx.loop.source
    if not source or not ctx.initial_known:
        return
    terminals = [t for t in ctx.graph.terminals if t in ctx.idom]
    for state, child, _, _ in _children(ctx):
        if child is None or not child.source or not _same_file(child.source, source):
            continue
        if state.name not in ctx.idom:
            continue  # unreachable: LL002 says so
        if terminals and not all(_dominates(ctx.idom, state.name, t) for t in terminals):
            continue  # some run finishes without it: the recursion can end
        yield Finding(
            f"state {state.name!r} runs this loop itself, and every run of it passes "
            f"through {state.name!r}: each child starts another until sub-loops nest 8 "
            "deep and the deepest fails",
            state_path(state, "loop"),
            "give the loop a way to finish before it recurses (a state that checks whether "
            "there is work left), or run another loop here",
        )


def _same_file(one: str, other: str) -> bool:
    return os.path.realpath(one) == os.path.realpath(other)


def _dominates(idom: dict[str, str], node: str, target: str) -> bool:
    """True when every path from `initial` to `target` passes through `node`."""
    while True:
        if target == node:
            return True
        parent = idom.get(target)
        if parent is None or parent == target:
            return False
        target = parent
