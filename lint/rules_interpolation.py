"""Rules over `${...}` expressions: they must parse, use a known root, and read captures only
where every path has set them (dominance on the graph), never raw into a shell.

`engine.shell.interpolate` (and through it jinja2) is imported only when a loop has `${`."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from engine.model.loop import Loop, State
from lint._context import LintContext
from lint._paths import did_you_mean, state_path, strings_in
from lint._registry import Finding, PathKey, rule

# `${name.` or `${name |` — shaped like one of our expressions rather than bash's `${HOME}`.
_OURS = re.compile(r"(?<!\$)\$\{\s*([A-Za-z_]\w*)\s*(?=[.|])")
_CAPTURE = re.compile(r"^\s*captured\s*(?:\.\s*([A-Za-z_]\w*)|\[\s*[\"']([^\"']+)[\"']\s*\])")


@dataclass(frozen=True, slots=True)
class Use:
    """One `${...}` in one field: where it is, its inner text, whether it is safe when unset."""

    state: State | None
    path: PathKey
    text: str
    root: str
    raw: bool
    guarded: bool
    closed: bool = True

    @property
    def capture(self) -> str | None:
        match = _CAPTURE.match(self.text)
        return (match.group(1) or match.group(2)) if match else None


def _fields(state: State) -> Iterator[tuple[PathKey, str]]:
    """Every interpolated string of a state, with its YAML path."""
    if state.action is not None:
        yield state_path(state, "action"), state.action
    if state.evaluate is not None:
        for key in ("source", "prompt", "previous", "pattern", "path", "target"):
            value = getattr(state.evaluate, key)
            if isinstance(value, str):
                yield state_path(state, "evaluate", key), value
    yield from strings_in(state.with_, state_path(state, "with"))


def _uses(ctx: LintContext) -> list[Use]:
    """Every expression use in the loop, found once per lint run and shared by the rules."""
    return ctx.memo("interpolation.uses", lambda: list(_find_uses(ctx.loop)))


def _find_uses(loop: Loop) -> Iterator[Use]:
    for state in loop.states.values():
        for path, template in _fields(state):
            yield from _in_template(state, path, template)
    for path, template in strings_in(loop.outputs, ("outputs",)):
        yield from _in_template(None, path, template)


def _in_template(state: State | None, path: PathKey, template: str) -> Iterator[Use]:
    if "${" not in template:
        return
    from engine.shell.interpolate import find_expressions  # only loops with ${...} pay its import

    for expr in find_expressions(template):
        whole = template[expr.start : expr.end]
        guarded = "default" in whole or whole.rstrip("}").rstrip().endswith("?")
        closed = expr.end < len(template) or template.endswith("}")
        yield Use(state, path, expr.text, expr.root or "", expr.raw, guarded, closed)


@rule("LL030", "error", "bad-expression")
def bad_expression(ctx: LintContext) -> Iterator[Finding]:
    """An `${...}` expression that does not parse, or whose root is not a known namespace."""
    uses = _uses(ctx)
    if not uses and not any("${" in t for s in ctx.loop.states.values() for _, t in _fields(s)):
        return
    from engine.shell.interpolate import ROOTS, check_expression

    roots = sorted(ROOTS)
    checked: dict[str, str | None] = {}
    for use in uses:
        if not use.closed:
            continue  # LL033
        if use.text not in checked:
            checked[use.text] = check_expression(use.text)
        problem = checked[use.text]
        if problem:
            yield Finding(
                f"expression ${{{use.text}}} does not parse: {problem}",
                use.path,
                "use Jinja2 expression syntax, e.g. ${captured.tests.output | default('')}",
            )
    for state in ctx.loop.states.values():
        for path, template in _fields(state):
            for match in _OURS.finditer(template):
                root = match.group(1)
                if root not in ROOTS:
                    yield Finding(
                        f"expression root {root!r} is not a namespace{did_you_mean(root, roots)}",
                        path,
                        f"start the expression with one of {', '.join(roots)}; write $${{ for "
                        "a literal ${",
                    )


@rule("LL033", "error", "unclosed-expression")
def unclosed_expression(ctx: LintContext) -> Iterator[Finding]:
    """An `${root...` that is never closed with `}`: at run time it is an error, not text."""
    for use in _uses(ctx):
        if use.closed:
            continue
        start = " ".join(use.text.split())
        start = start if len(start) <= 60 else start[:57].rstrip() + "..."
        yield Finding(
            f"expression ${{{start} is never closed with `}}`: it runs to the end of the text",
            use.path,
            "close it with }, or write $${ for a literal ${",
        )


@rule("LL031", "warning", "capture-maybe-unset")
def capture_maybe_unset(ctx: LintContext) -> Iterator[Finding]:
    """A `${captured.X...}` read where some path from `initial` has not run `capture: X` yet."""
    capturers: dict[str, list[str]] = {}
    for state in ctx.loop.states.values():
        name = state.capture or (state.name if state.is_subloop else None)
        if name:
            capturers.setdefault(name, []).append(state.name)
    tree = _DominatorTree(ctx.idom)

    def set_before(name: str, reader: str) -> bool:
        """A state capturing `name` (not `reader`) runs on every path to `reader`: one of them
        dominates it, or several alternatives together cut every path to it."""
        blockers = {d for d in capturers.get(name, ()) if d != reader}
        if any(tree.dominates(d, reader) for d in blockers):
            return True
        return bool(blockers) and reader not in _reach_avoiding(ctx, blockers)

    for use in _uses(ctx):
        name = use.capture
        if name is None or use.guarded:
            continue
        if use.state is None:  # an `outputs:` entry, evaluated at whichever terminal is reached
            ends = sorted(ctx.reachable & ctx.graph.terminals, key=ctx.graph.order.__getitem__)
            unsafe = [t for t in ends if not set_before(name, t)]
            if unsafe:
                yield Finding(
                    f"output reads ${{{use.text}}}, but terminal {unsafe[0]!r} can be reached "
                    f"before any state with `capture: {name}` ran",
                    use.path,
                    f"guard the read: ${{captured.{name}.output | default('')}}",
                )
            continue
        reader = use.state.name
        if reader in ctx.reachable:
            safe = set_before(name, reader)
        elif reader == ctx.loop.on_max_steps:  # entered after any step: only `initial` surely ran
            safe = ctx.loop.initial in capturers.get(name, ()) and reader != ctx.loop.initial
        else:
            continue  # unreachable: reported by LL002
        if safe:
            continue
        where = (
            f"on some path from {ctx.loop.initial!r} no state with `capture: {name}` runs before it"
            if name in capturers
            else f"no state has `capture: {name}`"
        )
        yield Finding(
            f"state {reader!r} reads ${{{use.text}}}, but {where}",
            use.path,
            f"capture {name!r} on every path before this state, or guard the read: "
            f"${{captured.{name}.output | default('')}}",
        )


def _reach_avoiding(ctx: LintContext, blockers: set[str]) -> set[str]:
    """The states reachable from `initial` on paths that pass through none of `blockers`."""
    seen = {ctx.loop.initial}
    todo = [ctx.loop.initial]
    while todo:
        node = todo.pop()
        if node in blockers:
            continue
        for nxt in ctx.graph.successors(node):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


class _DominatorTree:
    """Pre/post numbering of the dominator tree: `a` dominates `b` iff b's interval nests in a's."""

    def __init__(self, idom: Mapping[str, str]) -> None:
        children: dict[str, list[str]] = {}
        roots = []
        for node, parent in idom.items():
            if node == parent:
                roots.append(node)
            else:
                children.setdefault(parent, []).append(node)
        self.pre: dict[str, int] = {}
        self.post: dict[str, int] = {}
        clock = 0
        for root in roots:
            stack: list[tuple[str, bool]] = [(root, False)]
            while stack:
                node, done = stack.pop()
                clock += 1
                if done:
                    self.post[node] = clock
                    continue
                self.pre[node] = clock
                stack.append((node, True))
                stack.extend((child, False) for child in children.get(node, ()))

    def dominates(self, a: str, b: str) -> bool:
        if a not in self.pre or b not in self.pre:
            return False
        return self.pre[a] <= self.pre[b] and self.post[b] <= self.post[a]


@rule("LL032", "warning", "raw-capture-in-shell")
def raw_capture_in_shell(ctx: LintContext) -> Iterator[Finding]:
    """A capture interpolated `| raw` into a shell action: its text runs as shell code."""
    for use in _uses(ctx):
        state = use.state
        if state is None or use.path[-1] != "action" or state.action_type != "shell":
            continue
        if use.raw and use.root == "captured":
            yield Finding(
                f"state {state.name!r} pastes ${{{use.text}}} raw into a shell command, so "
                "output containing quotes, `;` or `$(...)` runs as code",
                use.path,
                "drop `| raw`: the engine quotes values for their position in the command",
            )
