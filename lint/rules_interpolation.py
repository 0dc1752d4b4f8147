"""Rules over `${...}` expressions: they must parse, use a known root, and read captures only
where every path has set them (dominance on the graph), never raw into a shell.

`engine.shell.interpolate` (and through it jinja2) is imported only when a loop has `${`."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.model.loop import SUBLOOP_CAPTURE_FIELDS, Loop, State
from lint._context import LintContext
from lint._judges import judge_strings, judges_with_paths
from lint._paths import did_you_mean, state_path, strings_in
from lint._registry import Finding, PathKey, rule
from lint._suite import SuiteContext

if TYPE_CHECKING:  # the interpolator (and jinja2) load only for a loop with `${`
    from engine.shell.interpolate import ValueTypes

# `${name.` or `${name |` — shaped like one of our expressions rather than bash's `${HOME}`.
_OURS = re.compile(r"(?<!\$)\$\{\s*([A-Za-z_]\w*)\s*(?=[.|])")
# The same, unless the `$` is escaped (`\${x.y}` matches that text literally in a regex).
_OURS_IN_REGEX = re.compile(r"(?<![\\$])\$\{\s*([A-Za-z_]\w*)\s*(?=[.|])")
_FIXED_KEY = re.compile(r"(?<!\$)\$\{\s*(state|loop|run)\s*\.\s*([A-Za-z_]\w*)")
_PARAM_KEY = re.compile(r"^\s*param\s*(?:\.\s*([A-Za-z_]\w*)|\[\s*[\"']([^\"']+)[\"']\s*\])")
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
    needle: str = ""  # the whole `${...}` as written in the field, and which occurrence of it
    nth: int = 0  # there this one is: a finding about it points at its own line and column

    @property
    def capture(self) -> str | None:
        return captured_name(self.text)


def captured_name(text: str) -> str | None:
    """The capture an expression's inner text reads (`captured.x...`, `captured['x']...`)."""
    match = _CAPTURE.match(text)
    return (match.group(1) or match.group(2)) if match else None


def _fields(state: State) -> Iterator[tuple[PathKey, str]]:
    """Every interpolated string of a state, with its YAML path."""
    if state.action is not None:
        yield state_path(state, "action"), state.action
    if state.loop is not None:  # the child's name is rendered before the child is looked up
        yield state_path(state, "loop"), state.loop
    if state.evaluate is not None:
        for key in ("source", "prompt", "previous", "target"):  # not pattern, path: _literal
            value = getattr(state.evaluate, key)
            if isinstance(value, str):
                yield state_path(state, "evaluate", key), value
        for index, entry in enumerate(state.evaluate.scope):  # diff_stall's watched paths
            yield state_path(state, "evaluate", "scope", index), entry
    yield from strings_in(state.with_, state_path(state, "with"))
    if state.runner is not None:
        yield state_path(state, "runner"), state.runner
    yield from judge_strings(state)


def _uses(ctx: LintContext) -> list[Use]:
    """Every expression use in the loop, found once per lint run and shared by the rules."""
    return ctx.memo("interpolation.uses", lambda: list(_find_uses(ctx.loop)))


def _find_uses(loop: Loop) -> Iterator[Use]:
    for state in loop.states.values():
        for path, template in _fields(state):
            yield from _in_template(state, path, template)
    for path, template in _loop_fields(loop):
        yield from _in_template(None, path, template)


def _scope_uses(loop: Loop) -> list[Use]:
    """The expressions of the `scope` entries (rendered before the first step; see LL083)."""
    return [
        use
        for index, entry in enumerate(loop.scope or ())
        for use in _in_template(None, ("scope", index), entry)
    ]


def _loop_fields(loop: Loop) -> Iterator[tuple[PathKey, str]]:
    """The interpolated strings outside the states that a `Use` covers: `outputs:` (rendered at
    the terminal) and the loop's `llm.runner`. `scope` is left to LL083: it is rendered before
    the first step, where captures and `${prev}` do not exist."""
    yield from strings_in(loop.outputs, ("outputs",))
    if loop.llm.runner is not None:
        yield ("llm", "runner"), loop.llm.runner


def _templates(loop: Loop) -> Iterator[tuple[PathKey, str]]:
    """Every string of the loop a run interpolates, with its YAML path (scope entries too)."""
    for state in loop.states.values():
        yield from _fields(state)
    yield from _loop_fields(loop)
    for index, entry in enumerate(loop.scope or ()):
        yield ("scope", index), entry


def _in_template(state: State | None, path: PathKey, template: str) -> Iterator[Use]:
    if "${" not in template:
        return
    from engine.shell.interpolate import find_expressions  # only loops with ${...} pay its import

    for expr in find_expressions(template):
        whole = template[expr.start : expr.end]
        guarded = "default" in whole or whole.rstrip("}").rstrip().endswith("?")
        closed = expr.end < len(template) or template.endswith("}")
        needle, nth = _needle(template, expr.start, expr.end)
        yield Use(state, path, expr.text, expr.root or "", expr.raw, guarded, closed, needle, nth)


@rule("LL030", "error", "bad-expression", targets=("loop", "suite"))
def bad_expression(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """An `${...}` expression that does not parse, or whose root is not a known namespace."""
    if isinstance(ctx, SuiteContext):
        yield from _suite_bad_expressions(ctx)
        return
    yield from _not_interpolated(ctx.loop)
    templates = [(path, text) for path, text in _templates(ctx.loop) if "${" in text]
    if not templates:
        return
    uses = _uses(ctx)
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
                needle=use.needle,
                occurrence=use.nth,
            )
    from engine.shell.interpolate import WHOLE_ENVIRONMENT, reads_whole_env

    for use in uses:
        if use.closed and reads_whole_env(use.text):
            why, _, instead = WHOLE_ENVIRONMENT.partition("; ")
            yield Finding(
                f"${{{use.text}}}: {why}", use.path, instead, needle=use.needle, occurrence=use.nth
            )
    for path, template in templates:
        for match in _OURS.finditer(template):
            root = match.group(1)
            if root not in ROOTS:
                needle, nth = _needle(template, match.start(), match.end())
                yield Finding(
                    f"expression root {root!r} is not a namespace{did_you_mean(root, roots)}",
                    path,
                    f"start the expression with one of {', '.join(roots)}; write $${{ for "
                    "a literal ${",
                    needle=needle,
                    occurrence=nth,
                )
        yield from _unknown_keys(path, template)
    yield from _undeclared_params(ctx.loop, uses)
    yield from _suite_roots_in_loop(uses)


def _suite_roots_in_loop(uses: list[Use]) -> Iterator[Finding]:
    """`${inputs.x}` in a loop: `inputs` and `annotations` are a suite case's, and a loop run
    has neither, so the expression fails wherever it is rendered (unless guarded)."""
    for use in uses:
        if use.root in _SUITE_ROOTS and use.closed and not use.guarded:
            yield Finding(
                f"${{{use.text}}} reads {use.root!r}, which only a suite's case has: in a loop "
                "it has no value, and the state errors",
                use.path,
                "a loop reads its inputs as ${context.NAME} (declare NAME under parameters:)",
                needle=use.needle,
                occurrence=use.nth,
            )


# What a suite's `${...}` can read: the case (engine.suites.casework builds no other namespace).
_SUITE_ROOTS = ("inputs", "annotations")


def _suite_bad_expressions(ctx: SuiteContext) -> Iterator[Finding]:
    """LL030 for a suite: a case has only `inputs` and `annotations`. Another root of ours
    (`${context.x}`) has no value, so every case errors; a root that is not ours (`${input.x}`)
    is not interpolated at all: bash gets it as written ("bad substitution"), a model reads it
    as text."""
    yield from _suite_not_interpolated(ctx)
    templates = [(path, text) for path, text in ctx.templates() if "${" in text]
    if not templates:
        return
    from engine.shell.interpolate import ROOTS, check_expression

    for path, template in templates:
        for use in _in_template(None, path, template):
            if not use.closed:
                continue  # LL033
            problem = check_expression(use.text)
            if problem:
                yield Finding(
                    f"expression ${{{use.text}}} does not parse: {problem}",
                    path,
                    "use Jinja2 expression syntax, e.g. ${inputs.text | default('')}",
                    needle=f"${{{use.text}}}",
                )
            elif use.root not in _SUITE_ROOTS and not use.guarded:
                yield Finding(
                    f"${{{use.text}}} reads {use.root!r}, which a suite does not have: a case "
                    "has only inputs and annotations, so every case would error",
                    path,
                    "read the case: ${inputs.KEY} (input.yaml) or ${annotations.KEY}"
                    + ("; in a command, the environment is $NAME" if use.root == "env" else ""),
                    needle=f"${{{use.text}}}",
                )
        for match in _OURS.finditer(template):
            root = match.group(1)
            if root not in ROOTS:
                yield Finding(
                    f"expression root {root!r} is not a namespace"
                    f"{did_you_mean(root, list(_SUITE_ROOTS))}: ${{{root}...}} is left as "
                    "written, not replaced by the case's value",
                    path,
                    "a suite reads the case as ${inputs.KEY} or ${annotations.KEY}; write "
                    "$${ for a literal ${",
                    needle=match.group(0),
                )


def _suite_not_interpolated(ctx: SuiteContext) -> Iterator[Finding]:
    """A `${...}` in a subject's `agent:`, `runner:` or `loop:`, which a run takes as written:
    bash refuses `${inputs.x}` as a bad substitution, and no loop file is named so."""
    from engine.shell.interpolate import env_name

    for key, subject in (
        ("subject", ctx.suite.subject),
        ("baseline_subject", ctx.suite.baseline_subject),
    ):
        if subject is None:
            continue
        for field in ("agent", "runner", "loop"):
            value = getattr(subject, field)
            match = _OURS.search(value) if isinstance(value, str) else None
            if match is None:
                continue
            written = value[match.start() :].split("}", 1)[0] + "}"
            variable = env_name(written[2:-1].strip()) if field != "loop" else None
            yield Finding(
                f"{key}.{field} is not interpolated, so {written} reaches "
                + ("the loop lookup" if field == "loop" else "bash")
                + " as written"
                + ("" if field == "loop" else " (a bad substitution)"),
                (key, field),
                f'read the value from the environment instead: "${variable}"'
                if variable
                else "name one loop; pass the case's values to it with `with:`",
                needle=match.group(0),
            )


def _not_interpolated(loop: Loop) -> Iterator[Finding]:
    """An expression in an evaluator's `pattern` or `path`, which the run takes as written: a
    regex `${` (end of line, then `{`) never matches, and no JSON key is spelled like that."""
    for state in loop.states.values():
        for key in ("pattern", "path"):
            value = getattr(state.evaluate, key, None)
            if not isinstance(value, str):
                continue
            match = _OURS_IN_REGEX.search(value)
            if match is None:
                continue
            yield Finding(
                f"the evaluator's `{key}` is not interpolated, so {value[match.start() :]!r} "
                "is taken as written and never matches what it names",
                state_path(state, "evaluate", key),
                "write the text itself; to match a value, judge with an assessment's `regex` "
                "builtin (its pattern is interpolated) or `grep -F` it in the action",
            )


def _undeclared_params(loop: Loop, uses: list[Use]) -> Iterator[Finding]:
    """`${param.X}` holds only the parameters the loop declares, so an undeclared X is never set
    (a `context:` default or `--context` value included): certain to fail when rendered."""
    declared = list(loop.parameters)
    for use in uses:
        match = _PARAM_KEY.match(use.text) if use.root == "param" else None
        if match is None or use.guarded or not use.closed:
            continue
        key = match.group(1) or match.group(2)
        if key in loop.parameters:
            continue
        yield Finding(
            f"'param' has no key {key!r}{did_you_mean(key, declared)}: it holds only the "
            "loop's declared parameters",
            use.path,
            f"declare {key!r} under `parameters:`, or read ${{context.{key}}}"
            + (f" (declared: {', '.join(declared)})" if declared else ""),
            needle=use.needle,
            occurrence=use.nth,
        )


def _unknown_keys(path: PathKey, template: str) -> Iterator[Finding]:
    """`${loop.elapsed_ms}`: `state`, `loop` and `run` have fixed keys, so any other is
    certain to fail when the run renders it."""
    from engine.shell.interpolate import FIXED_KEYS

    for match in _FIXED_KEY.finditer(template):
        root, key = match.group(1), match.group(2)
        known = FIXED_KEYS[root]
        if key not in known:
            needle, nth = _needle(template, match.start(), match.end())
            yield Finding(
                f"{root!r} has no key {key!r}{did_you_mean(key, list(known))}",
                path,
                f"{root} has {', '.join(known)}; pass anything else through context",
                needle=needle,
                occurrence=nth,
            )


@rule("LL033", "error", "unclosed-expression", targets=("loop", "suite"))
def unclosed_expression(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """An `${root...` that is never closed with `}`: at run time it is an error, not text."""
    uses = (
        [u for path, text in ctx.templates() for u in _in_template(None, path, text)]
        if isinstance(ctx, SuiteContext)
        else _uses(ctx)
    )
    for use in uses:
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
    """A `${captured.X...}` read where some path from `initial` has not run `capture: X` yet.

    `${prev...}` in the initial state is reported too: the first step has no previous one. An
    evaluator's `previous:` is exempt: the run takes a missing value there as "none yet"."""
    capturers: dict[str, list[str]] = {}
    for state in ctx.loop.states.values():
        if (name := state.capture_name) is not None:
            capturers.setdefault(name, []).append(state.name)
    of_subloops = _subloop_captures(ctx)
    tree = _DominatorTree(ctx.idom)

    def set_before(name: str, reader: str) -> bool:
        """A state capturing `name` (not `reader`) runs on every path to `reader`: one of them
        dominates it, or several alternatives together cut every path to it."""
        blockers = {d for d in capturers.get(name, ()) if d != reader}
        if any(tree.dominates(d, reader) for d in blockers):
            return True
        return bool(blockers) and reader not in _reach_avoiding(ctx, blockers)

    for use in _uses(ctx):
        if use.guarded or use.path[-2:] == ("evaluate", "previous"):
            continue  # a missing `previous:` value means "no previous value yet": progress
        if use.root == "prev" and use.state is not None and use.state.name == ctx.loop.initial:
            yield Finding(
                f"initial state {ctx.loop.initial!r} reads ${{{use.text}}}, but on the first "
                "step no state has run yet, so there is no previous output",
                use.path,
                "guard the read: ${prev.output | default('')}, or read it in a later state",
                needle=use.needle,
                occurrence=use.nth,
            )
            continue
        name = use.capture
        if name is None:
            continue
        if use.state is None:  # an `outputs:` entry, evaluated at whichever terminal is reached
            ends = sorted(ctx.reachable & ctx.graph.terminals, key=ctx.graph.order.__getitem__)
            unsafe = [t for t in ends if not set_before(name, t)]
            if unsafe:
                yield Finding(
                    f"output reads ${{{use.text}}}, but terminal {unsafe[0]!r} can be reached "
                    f"before any state with `capture: {name}` ran",
                    use.path,
                    f"guard the read: {_guarded(name, use.text, name in of_subloops)}",
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
        dashed = _dashed_capture(use.text, name, capturers)
        if dashed is not None:
            yield Finding(
                f"state {reader!r} reads ${{{use.text}}}, which is `captured.{name}` minus "
                f"what follows the `-`: the value of state {dashed!r} is "
                f"${{captured['{dashed}']...}}",
                use.path,
                f"write ${{captured['{dashed}']...}} (a name with `-` needs brackets), or give "
                f"the state `capture: {dashed.replace('-', '_')}`",
            )
            continue
        where = (
            f"on some path from {ctx.loop.initial!r} no state with `capture: {name}` runs before it"
            if name in capturers
            else f"no state has `capture: {name}`{did_you_mean(name, capturers)}"
        )
        yield Finding(
            f"state {reader!r} reads ${{{use.text}}}, but {where}",
            use.path,
            f"capture {name!r} on every path before this state, or guard the read: "
            f"{_guarded(name, use.text, name in of_subloops)}",
            needle=use.needle,
            occurrence=use.nth,
        )


def _subloop_captures(ctx: LintContext) -> set[str]:
    """The captures only sub-loop states store: `terminal`, `events`, ... and no `output`."""
    kinds: dict[str, set[bool]] = {}
    for state in ctx.loop.states.values():
        if (name := state.capture_name) is not None:
            kinds.setdefault(name, set()).add(state.is_subloop)
    return {name for name, subloop in kinds.items() if subloop == {True}}


_FIELD_READ = re.compile(
    r"\s*captured\s*(?:\.\s*[A-Za-z_]\w*|\[\s*[\"'][^\"']+[\"']\s*\])\s*\.\s*([A-Za-z_]\w*)\s*(\(?)"
)


def _field_read(text: str) -> str | None:
    """The field of a capture an expression reads (`output` of `captured.x.output | ...`); None
    for the whole capture or a method called on it."""
    match = _FIELD_READ.match(text)
    if match is None or match.group(2):
        return None
    return match.group(1)


def _guarded(name: str, text: str, subloop: bool) -> str:
    """A guarded read of capture `name` for a hint: of the field `text` reads, when a capture of
    its kind has it (a sub-loop state's has no `output`)."""
    field = _field_read(text)
    if subloop and field not in SUBLOOP_CAPTURE_FIELDS:
        field = "terminal"
    return f"${{captured.{name}.{field if subloop else 'output'} | default('')}}"


@rule("LL089", "error", "subloop-capture-field")
def subloop_capture_field(ctx: LintContext) -> Iterator[Finding]:
    """A read of a field a sub-loop state's capture does not have (`output`, `exit_code`).

    Only when every state storing `C` is a sub-loop state: the read fails wherever it runs."""
    kept = ", ".join(sorted(SUBLOOP_CAPTURE_FIELDS))
    for use, name, field in _subloop_missing_fields(ctx):
        if use.guarded:
            continue
        reader = f"state {use.state.name!r}" if use.state is not None else "output"
        instead = (
            f"read the child's event log, ${{captured.{name}.events}}, or a value the child "
            f"declares under `outputs:`, ${{captured.{name}.outputs.NAME}}"
            if field == "output"
            else f"read one of its fields, or a value the child declares under `outputs:`, "
            f"${{captured.{name}.outputs.NAME}}"
        )
        yield Finding(
            f"{reader} reads ${{{use.text}}}, but {name!r} is a sub-loop state's capture, which "
            f"has no {field!r} (it has {kept}): the read is an error wherever it runs",
            use.path,
            instead,
            needle=use.needle,
            occurrence=use.nth,
        )


@rule("LL097", "warning", "subloop-capture-field-guarded")
def subloop_capture_field_guarded(ctx: LintContext) -> Iterator[Finding]:
    """A guarded read of a field a sub-loop state's capture never has: always its default.

    LL089's case, read through `| default(...)` or `?`: it renders, but never the value."""
    kept = ", ".join(sorted(SUBLOOP_CAPTURE_FIELDS))
    for use, name, field in _subloop_missing_fields(ctx):
        if not use.guarded:
            continue
        reader = f"state {use.state.name!r}" if use.state is not None else "output"
        yield Finding(
            f"{reader} reads ${{{use.text}}}, but {name!r} is a sub-loop state's capture, which "
            f"has no {field!r} (it has {kept}): the guarded read is always its default",
            use.path,
            f"read a field it has, e.g. ${{captured.{name}.events}}, or a value the child "
            f"declares under `outputs:`, ${{captured.{name}.outputs.NAME}}",
            needle=use.needle,
            occurrence=use.nth,
        )


def _subloop_missing_fields(ctx: LintContext) -> Iterator[tuple[Use, str, str]]:
    """Each read `(use, capture, field)` of a field no sub-loop capture has, of a capture
    every state storing it is a sub-loop state (LL089 unguarded, LL097 guarded)."""
    of_subloops = _subloop_captures(ctx)
    if not of_subloops:
        return
    for use in _uses(ctx):
        name = use.capture
        if name is None or name not in of_subloops:
            continue
        field = _field_read(use.text)
        if field is None or field in SUBLOOP_CAPTURE_FIELDS:
            continue
        yield use, name, field


def _dashed_capture(text: str, name: str, capturers: Mapping[str, list[str]]) -> str | None:
    """The capture `captured.run-child...` meant (`run-child`), when `name` (`run`) is no
    capture but a dashed one starts with it: Jinja reads the `-` as a minus."""
    if name in capturers:
        return None
    match = re.match(rf"\s*captured\s*\.\s*({re.escape(name)}(?:-[A-Za-z0-9_]+)+)", text)
    if match is None:
        return None
    words = match.group(1).split("-")
    for end in range(len(words), 1, -1):  # the longest dashed name that is a capture
        if "-".join(words[:end]) in capturers:
            return "-".join(words[:end])
    return None


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


_ENGINE_ROOTS = frozenset({"loop", "state", "param"})
"""Roots LL032 lets go `| raw`: set by the engine or declared by the loop's author; any other
a caller or a program can set (`--context`, captures, the environment, a suite's case)."""
_ENGINE_SET = frozenset({"loop", "state", "run"})
"""Roots LL037 passes over: the engine sets them to names, numbers and absolute paths, which
never start with `-`."""


@rule("LL032", "warning", "raw-capture-in-shell")
def raw_capture_in_shell(ctx: LintContext) -> Iterator[Finding]:
    """A value a caller or a program sets goes `| raw` into a shell action: it runs as code."""
    for use in _uses(ctx):
        state = use.state
        if state is None or use.path[-1] != "action" or state.action_type != "shell":
            continue
        if use.raw and use.root not in _ENGINE_ROOTS:
            yield Finding(
                f"state {state.name!r} pastes ${{{use.text}}} raw into a shell command, so "
                "a value containing quotes, `;` or `$(...)` runs as code",
                use.path,
                "drop `| raw`: the engine quotes values for their position in the command",
                needle=use.needle,
                occurrence=use.nth,
            )


# --- shell positions (the bash grammar) -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ShellField:
    """A field that runs as a bash script: an action, or the command line of a `cmd:` runner."""

    state: State | None
    path: PathKey
    template: str
    what: str


def _shell_fields(loop: Loop) -> Iterator[_ShellField]:
    for state in loop.states.values():
        if state.action is not None and state.action_type == "shell" and not state.is_subloop:
            yield _ShellField(state, state_path(state, "action"), state.action, "action")
        if state.runner is not None and state.runner.startswith("cmd:"):
            command = state.runner.removeprefix("cmd:")
            yield _ShellField(state, state_path(state, "runner"), command, "runner command")
        for judge, path in judges_with_paths(state):  # test, script and metric run bash
            script = judge.arguments.get("command")
            if judge.builtin in ("test", "script", "metric") and isinstance(script, str):
                key = (*path, "command") if judge.spelling != "judges" else (*path, "arguments")
                yield _ShellField(state, key, script, "judge command")
    if loop.llm.runner is not None and loop.llm.runner.startswith("cmd:"):
        command = loop.llm.runner.removeprefix("cmd:")
        yield _ShellField(None, ("llm", "runner"), command, "runner command")


def _needle(template: str, start: int, end: int) -> tuple[str, int]:
    """The `${...}` text and which occurrence of it in the template this one is."""
    needle = template[start:end]
    return needle, template.count(needle, 0, start) if needle else 0


@rule("LL034", "error", "unsafe-shell-position", targets=("loop", "suite"))
def unsafe_shell_position(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """A `${...}` sits where bash runs or evaluates text, and its type does not make it safe.

    Code, arithmetic, a variable name, a comment, or a place the bash grammar cannot classify.
    A suite's case values are text.
    """
    fields, types = _templated(ctx)
    if not fields:
        return
    from engine.shell.commands import Role
    from engine.shell.interpolate import refusal, shell_holes, value_type
    from engine.shell.quoting import Context

    for field in fields:
        holes, plan = shell_holes(field.template)
        if plan.problem is not None:
            yield Finding(
                f"no ${{...}} can be placed safely in this {field.what}: {plan.problem}",
                field.path,
                "fix the shell syntax, or pass the values as environment variables "
                '("$LL_CONTEXT_name") and drop the ${...}',
            )
            continue
        for hole in holes:
            expression, position = hole.expression, hole.position
            if expression.raw or expression.end > len(field.template):
                continue  # `| raw` is LL032's; an unclosed one is LL033's
            kind = value_type(expression.text, types)
            hint = ""
            if position.context in (Context.DELIMITER, Context.ESCAPED):
                reason = (
                    f"${{{expression.text}}} is {position.context.value} (line {hole.line}, "
                    f"column {hole.column} of the {field.what}), where no value can go"
                )
            elif (
                position.role is Role.VALUE and position.context is not Context.BACKTICK
            ) or kind == "integer":
                continue
            elif position.role is Role.VALUE:
                reason = (
                    f"${{{expression.text}}} is inside backticks (line {hole.line}, column "
                    f"{hole.column} of the {field.what}), where only plain values can be quoted"
                )
            elif position.role is Role.CODE and kind == "command":
                continue
            else:
                # the run-time message says what to write instead; here that is the hint
                why, _, instead = refusal(hole, kind, field.what).rpartition("; ")
                reason, hint = f"${{{expression.text}}}: {why}", instead
            needle, nth = _needle(field.template, expression.start, expression.end)
            yield Finding(
                reason,
                field.path,
                hint or _position_hint(position.context),
                needle=needle,
                occurrence=nth,
            )


@rule("LL037", "warning", "value-as-option", targets=("loop", "suite"))
def value_as_option(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """A `${...}` starts an argument word with no `--` before it, where a `-` value is an option.

    The run refuses a value starting with `-` there (but a number); `--` or fixed text before
    the value makes it data.
    """
    fields, types = _templated(ctx)
    if not fields:
        return
    from engine.shell.commands import Role
    from engine.shell.interpolate import shell_holes, value_type

    for field in fields:
        holes, plan = shell_holes(field.template)
        for hole in holes if plan.problem is None else ():
            program, expression = hole.position.option_of, hole.expression
            if program is None or program in ("echo", "printf") or expression.raw:
                continue
            if expression.root in _ENGINE_SET:
                continue  # an absolute path, a name, a number: never starts with `-`
            if hole.position.role is not Role.VALUE or value_type(expression.text, types) == (
                "integer"
            ):
                continue
            needle, nth = _needle(field.template, expression.start, expression.end)
            yield Finding(
                f"${{{expression.text}}} starts an argument of `{program}` (line {hole.line}, "
                f"column {hole.column} of the {field.what}) with no `--` before it: a value "
                "starting with `-` would be an option, so the run refuses one",
                field.path,
                f"write `--` before the operands (`{program} ... -- ${{{expression.text}}}`), "
                "or put fixed text before the value (`./${...}` for a path)",
                needle=needle,
                occurrence=nth,
            )


def _templated(ctx: LintContext | SuiteContext) -> tuple[list[_ShellField], ValueTypes]:
    """The shell templates holding a `${...}` (a loop's actions, a suite's commands) and the
    types of the values they take (a suite's case values are text)."""
    from engine.shell.interpolate import NO_TYPES, ValueTypes

    if isinstance(ctx, SuiteContext):
        scripts = [_ShellField(None, p, text, what) for p, text, what in ctx.shell_templates()]
        return [f for f in scripts if "${" in f.template], NO_TYPES
    fields = [f for f in _shell_fields(ctx.loop) if "${" in f.template]
    return fields, ValueTypes.of(ctx.loop.parameters)


def _position_hint(context: object) -> str:
    """The hint for a `${...}` refused by where it is written, not by what bash does there."""
    from engine.shell.quoting import Context

    if context is Context.BACKTICK:
        return "use $(...) instead of backticks"
    return "remove the backslash, or write $${ for a literal ${"


@rule("LL035", "warning", "value-evaluated-through-variable")
def value_evaluated_through_variable(ctx: LintContext) -> Iterator[Finding]:
    """A value goes through a shell variable to a place where bash evaluates it.

    Arithmetic, a name, `eval`: the engine cannot quote it there (docs/format.md, the boundary).
    """
    fields = [f for f in _shell_fields(ctx.loop) if "${" in f.template or "LL_" in f.template]
    if not fields:
        return
    from engine.shell.commands import Role
    from engine.shell.interpolate import ValueTypes, shell_flows, shell_holes, value_type

    types = ValueTypes.of(ctx.loop.parameters)
    for field in fields:
        yield from _named_value_flows(field, types)
        if "${" not in field.template:
            continue
        holes, _ = shell_holes(field.template)
        for flow in shell_flows(field.template):
            expression = holes[flow.hole].expression
            kind = value_type(expression.text, types)
            if kind == "integer" or (flow.role is Role.CODE and kind == "command"):
                continue
            if holes[flow.hole].position.role is not Role.VALUE and kind != "command":
                continue  # refused where it is written (LL034): the same finding once
            needle, nth = _needle(field.template, expression.start, expression.end)
            where = f"(line {flow.line}, column {flow.column})"
            if flow.role is Role.UNKNOWN:
                message = (
                    f"${{{expression.text}}} is assigned to `{flow.variable}`, which the "
                    f"{field.what} then passes as {flow.why} {where}: ll-loop does not follow "
                    "values into functions, whose body could run or evaluate it"
                )
            else:
                after_all = _RUNS if flow.role is Role.CODE else _EVALUATES
                message = (
                    f"${{{expression.text}}} is assigned to `{flow.variable}`, which the "
                    f"{field.what} then uses in {flow.why} {where}: {after_all}"
                )
            yield Finding(
                message,
                field.path,
                _CODE_HINT
                if flow.role is Role.CODE
                else "assign only integers to variables used in arithmetic (`type: integer`, "
                "`| integer`), and never hand a variable holding a value to eval or as a name",
                needle=needle,
                occurrence=nth,
            )


_CODE_HINT = (
    "a value that may run as code (eval, a program variable such as PATH or GIT_SSH_COMMAND) "
    'must be a parameter declared `type: command`; any other value stays data (`"$VAR"` as '
    "an argument)"
)


_RUNS = "the value runs as code there after all"
_EVALUATES = "bash evaluates the value there after all"


def _named_value_flows(field: _ShellField, types: ValueTypes) -> Iterator[Finding]:
    """LL035 for a value the script reads by its exported name (`eval "$LL_CONTEXT_x"`): the
    engine sets the variable, and the script evaluates it — the same boundary."""
    from engine.shell.commands import Role
    from engine.shell.interpolate import named_value_flows, value_type

    lines = field.template.split("\n")
    for variable, path, flow in named_value_flows(field.template):
        kind = value_type(path, types)
        if kind == "integer" or (flow.role is Role.CODE and kind == "command"):
            continue
        line_start = sum(len(line) + 1 for line in lines[: flow.line - 1])
        at = field.template.find(variable, line_start)
        where = f"(line {flow.line}, column {flow.column})"
        use = (
            f"passes it as {flow.why} {where}: ll-loop does not follow values into functions"
            if flow.role is Role.UNKNOWN
            else f"uses it in {flow.why} {where}: {_RUNS if flow.role is Role.CODE else _EVALUATES}"
        )
        yield Finding(
            f"`${variable}` holds the value of ${{{path}}}, and the {field.what} {use}",
            field.path,
            _CODE_HINT
            if flow.role is Role.CODE
            else 'read the variable only as data (`"$VAR"` in a word, or inside `bash -c '
            "'...'`); never hand it to eval, arithmetic or as a name, unless it is `type: integer`",
            needle=variable,
            occurrence=field.template.count(variable, 0, max(at, 0)),
        )


@rule("LL036", "error", "output-as-command")
def output_as_command(ctx: LintContext) -> Iterator[Finding]:
    """Text is bound to a child loop's `type: command` parameter, which the child runs as code.

    A capture, the previous output, or any value that is not a `type: command` (or integer)
    parameter of this loop: the same rule as `bash -c "${...}"` in one loop (LL034).
    """
    if ctx.resolve_loop is None:
        return
    from engine.shell.interpolate import ValueTypes, undeclared_code

    types = ValueTypes.of(ctx.loop.parameters)
    for state in ctx.loop.states.values():
        if state.loop is None or "${" in state.loop or not state.with_:
            continue
        child, _, _ = ctx.child_loop(state.loop)
        if child is None:
            continue
        for key, value in state.with_.items():
            param = child.parameters.get(key)
            if param is None or param.type != "command":
                continue
            for path, template in strings_in(value, state_path(state, "with", key)):
                found = undeclared_code(template, types)
                if found is not None:
                    yield Finding(
                        f"state {state.name!r} binds ${{{found}}} to {key!r}, a "
                        f"`type: command` parameter of loop {child.name!r}: the child runs "
                        "it as code, and it is not a command this loop's caller declared",
                        path,
                        "declare a `type: command` parameter in this loop and pass it on, or "
                        "hand the output to the child as a plain string parameter",
                    )
