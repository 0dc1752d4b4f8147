"""Run-time traps that pass the schema: values nobody provides, slash commands handed to bash,
an evaluator reading the capture its own state has not stored yet, a scope that cannot be
resolved before the run. Loops ported from little-loops carry all of them (docs/migrating.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from engine.model.loop import RUN_LEVEL_ROOTS, Loop
from lint._context import LintContext
from lint._paths import did_you_mean, state_path
from lint._registry import Finding, PathKey, PositionLookup, rule
from lint._suite import SuiteContext
from lint.rules_interpolation import (
    _OURS,
    _scope_uses,
    _shell_fields,
    _uses,
    captured_name,
)

_CONTEXT_KEY = re.compile(r"^\s*context\s*(?:\.\s*([A-Za-z_]\w*)|\[\s*[\"']([^\"']+)[\"']\s*\])")
# Of `run`, only these exist when the scope is locked (`run.started_at` is set later).
_SCOPE_RUN_KEYS = frozenset({"dir", "id"})
_RUN_KEY = re.compile(r"^\s*run\s*\.\s*([A-Za-z_]\w*)")
# `/name` or `/plugin:name` as the first word: a slash command, not a path to a program.
_SLASH_COMMAND = re.compile(r"^\s*(/[A-Za-z][\w.-]*(?::[\w.-]+)?)(?=\s|$)")
# `{{ context.name }}` (Jinja, Ansible) or `${{ context.name }}` (GitHub Actions) naming one of
# our roots; Go templates (`{{ .Name }}`) start with a dot and are left alone.
_BRACES = re.compile(r"\$?\{\{\s*([A-Za-z_]\w*)((?:\s*\.\s*[A-Za-z_]\w*)*)\s*(\}\}|[|.\[(])")


def _provided(loop: Loop) -> set[str]:
    """Context keys that have a value when a run starts (INPUT fills `input` by default)."""
    keys = set(loop.context) | set(loop.parameters)
    keys.add(loop.input_key or "input")
    return keys


@rule("LL080", "warning", "undefined-context")
def undefined_context(ctx: LintContext) -> Iterator[Finding]:
    """A `${context.X}` that no `context:` default or parameter provides: missing at run time."""
    provided = _provided(ctx.loop)
    seen: set[tuple[object, str]] = set()
    for use in [*_uses(ctx), *_scope_uses(ctx.loop)]:
        match = _CONTEXT_KEY.match(use.text) if use.root == "context" else None
        if match is None or use.guarded or not use.closed:  # unclosed: LL033
            continue
        key = match.group(1) or match.group(2)
        if key in provided or (use.path, key) in seen:
            continue
        seen.add((use.path, key))
        yield Finding(
            f"${{context.{key}}} has no value unless the caller passes one: no context: "
            f"default or parameter provides {key!r}{did_you_mean(key, provided)}",
            use.path,
            f"declare it (parameters: {{{key}: {{type: string, required: true}}}}) or give it "
            f"a default (context: {{{key}: ...}}), or guard the read: "
            f"${{context.{key} | default('')}}",
            needle=use.needle,  # reported once per field: at its first read
            occurrence=use.nth,
        )


@rule("LL081", "error", "slash-command-in-shell")
def slash_command_in_shell(ctx: LintContext) -> Iterator[Finding]:
    """A shell action that starts with a `/command`: bash looks for a program of that name."""
    for state in ctx.loop.states.values():
        if state.action is None or state.action_type != "shell":
            continue
        match = _SLASH_COMMAND.match(state.action)
        if match is None or match.group(1).count("/") > 1:
            continue
        yield Finding(
            f"state {state.name!r} runs {match.group(1)!r} in bash, which looks for a program "
            "at that path: a slash command only means something to an agent",
            state_path(state, "action"),
            'make it a prompt for an agent CLI: action_type: prompt, runner: "cmd:claude -p"; '
            "suppress this rule if it really is a program at the root of the file system",
        )


@rule("LL082", "error", "source-reads-own-capture")
def source_reads_own_capture(ctx: LintContext) -> Iterator[Finding]:
    """An evaluator `source:` that reads its own state's capture, which is stored after it."""
    for state in ctx.loop.states.values():
        spec = state.evaluate
        if state.capture is None or spec is None or spec.source is None:
            continue
        if "${" not in spec.source:
            continue
        from engine.shell.interpolate import find_expressions

        reads = {captured_name(expr.text) for expr in find_expressions(spec.source)}
        if state.capture not in reads:
            continue
        yield Finding(
            f"state {state.name!r} judges ${{captured.{state.capture}...}}, its own capture, "
            "which is stored only after the verdict: it reads the previous visit's value, or "
            "nothing",
            state_path(state, "evaluate", "source"),
            "drop source: to judge this action's output, or read another state's capture",
        )


@rule("LL083", "error", "scope-not-run-level")
def scope_not_run_level(ctx: LintContext) -> Iterator[Finding]:
    """A `scope` entry interpolating a value that does not exist before the first step."""
    if not ctx.loop.scope or not any("${" in entry for entry in ctx.loop.scope):
        return
    from engine.shell.interpolate import find_expressions

    for index, entry in enumerate(ctx.loop.scope):
        for expr in find_expressions(entry):
            key = _RUN_KEY.match(expr.text) if expr.root == "run" else None
            if expr.root in RUN_LEVEL_ROOTS and (key is None or key.group(1) in _SCOPE_RUN_KEYS):
                continue
            yield Finding(
                f"scope entry {entry!r} reads ${{{expr.text.strip()}}}, which has no value when "
                "the scope is locked, before the first step",
                ("scope", index),
                "scope may use only values fixed for the run: ${run.dir}, ${run.id}, "
                "${context.X}, ${param.X}, ${env.X}",
            )


@rule("LL085", "warning", "scope-glob")
def scope_glob(ctx: LintContext) -> Iterator[Finding]:
    """A `scope` entry with glob characters: scope paths are not globs (`src/*` is a name)."""
    for index, entry in enumerate(ctx.loop.scope or ()):
        if "${" in entry or not any(c in entry for c in "*?["):
            continue
        folder = entry.split("*")[0].split("?")[0].split("[")[0].rstrip("/") or "."
        yield Finding(
            f"scope entry {entry!r} has glob characters, but scope paths are not globs: the "
            "lock covers a path literally named so, and nothing the loop writes",
            ("scope", index),
            f"name the directory instead: {folder + '/' if folder != '.' else '.'} (a directory "
            "covers everything below it)",
        )


@rule("LL084", "error", "input-key-unknown")
def input_key_unknown(ctx: LintContext) -> Iterator[Finding]:
    """`input_key` naming neither a parameter nor a `context:` key: INPUT binds to nothing."""
    key = ctx.loop.input_key
    if key is None or key in ctx.loop.parameters or key in ctx.loop.context:
        return
    declared = set(ctx.loop.parameters) | set(ctx.loop.context)
    yield Finding(
        f"input_key {key!r} names no parameter{did_you_mean(key, declared)}",
        ("input_key",),
        f"declare it: parameters: {{{key}: {{type: string, required: true}}}}",
    )


@rule("LL086", "warning", "jinja-in-shell", targets=("loop", "suite"))
def jinja_in_shell(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """`{{ context.x }}` in a shell command: not interpolated, bash gets the braces as text.

    Jinja, Ansible and GitHub Actions (`${{ }}`) write values so; ll-loop writes `${...}`."""
    for path, text, what in _commands(ctx):
        if "{{" not in text:
            continue
        from engine.shell.interpolate import ROOTS  # only a command with `{{` pays its import

        for match in _BRACES.finditer(text):
            root = match.group(1)
            if root not in ROOTS:
                continue
            dotted = root + "".join(match.group(2).split())
            closed = match.group(3) == "}}"
            shown = match.group(0) if closed else match.group(0)[:-1].rstrip() + " ...}}"
            yield Finding(
                f"{shown} in this {what} is not interpolated: bash gets it as text",
                path,
                f"write ${{{dotted}{'' if closed else ' ...'}}}: ll-loop replaces ${{...}} with "
                "the value, quoted for its place in the command",
                needle=match.group(0),
            )


def _commands(ctx: LintContext | SuiteContext) -> list[tuple[PathKey, str, str]]:
    """Every text that runs as a bash script: (YAML path, script, what it is)."""
    if isinstance(ctx, SuiteContext):
        return list(ctx.shell_templates())
    return [(f.path, f.template, f.what) for f in _shell_fields(ctx.loop)]


# A YAML comment: whitespace, then `#`, after a plain scalar on its line.
_COMMENT = re.compile(r"[ \t]+#")


@rule("LL087", "error", "comment-cuts-command", targets=("loop", "suite"))
def comment_cuts_command(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """A ` #` inside a bash quote of an unquoted YAML command: YAML cut the rest off as a comment.

    `action: grep "TODO #42" notes.txt` gives bash `grep "TODO`, which does not parse."""
    positions = ctx.positions
    if positions is None or not positions.text:
        return
    lines = positions.text.splitlines()
    for path, text, what in _commands(ctx):
        cut = _comment_after(positions, lines, path, text)
        if cut is None:
            continue
        from engine.shell.grammar import script_problem

        problem = script_problem(text)
        if problem is None:
            continue  # bash too reads an unquoted ` #` as a comment: nothing changed
        yield Finding(
            f"YAML read {cut!r} as a comment, so the {what} bash gets ends at {text[-30:]!r} "
            f"and does not parse ({problem})",
            path,
            "quote the whole value in YAML ('...' doubling inner ', or a block: `|` and the "
            "command on the next line): an unquoted value ends where ` #` starts",
            needle=cut,
        )


# A script of plain simple commands, which bash certainly parses, so no grammar is loaded for it
# (validate's start-up): words of ordinary characters, '...' and "..." without expansions,
# `$NAME`, redirections to such words, joined by `&&`, `||`, `|`, `;` and newlines. Anything
# else (a keyword, a bracket, a substitution, a here-document, ...) is parsed with the grammar.
_PLAIN_PIECE = r"""(?:[\w./:=,+@%~^-]++|'[^']*+'|"[^"$`\\!]*+"|\$[A-Za-z_]\w*+)"""
_PLAIN_WORD = rf"(?:{_PLAIN_PIECE}++|[0-9]?(?:>>?|<|&>)(?:&[0-9]|[ \t]*+{_PLAIN_PIECE}++))"
_PLAIN_COMMAND = rf"[ \t]*+{_PLAIN_WORD}(?:[ \t]++{_PLAIN_WORD})*+[ \t]*+"
_PLAIN_SCRIPT = rf"\s*+(?:{_PLAIN_COMMAND}(?:(?:&&|\|\||\||;|\n)\s*+{_PLAIN_COMMAND})*+;?)?\s*+"
# The commonest plain scripts (`pytest -q`, `make build && make test`) in regular expressions
# that compile in a tenth of the time: compiling the whole one costs ~0.7 ms of every start-up.
_SIMPLE_WORDS = re.compile(r"[ \t]*[\w./:=,+@%~^-]+(?:[ \t]+[\w./:=,+@%~^-]+)*[ \t]*")
_SIMPLE_JOIN = re.compile(r"&&|\|\||\||;")


def _plain(script: str) -> bool:
    """Whether `script` is plain (see above): the simple form first, the whole pattern after."""
    text = script.strip()
    if all(_SIMPLE_WORDS.fullmatch(p) for p in _SIMPLE_JOIN.split(text.removesuffix(";"))):
        return True
    return _plain_script().fullmatch(script) is not None


@functools.cache
def _plain_script() -> re.Pattern[str]:
    return re.compile(_PLAIN_SCRIPT)


_KEYWORD = re.compile(
    r"(?<![\w./:=,+@%~^-])(?:if|then|else|elif|fi|case|esac|for|select|while|until|do|done|in|"
    r"function|time|coproc)(?![\w./:=,+@%~^-])"
)


@rule("LL088", "warning", "shell-syntax", targets=("loop", "suite"))
def shell_syntax(ctx: LintContext | SuiteContext) -> Iterator[Finding]:
    """A shell command the bash grammar cannot parse: bash would refuse it (exit 2) unrun.

    A command with `${...}` is LL034's (no value can be placed in it). The grammar refuses a
    few scripts bash runs, so this is a warning."""
    from engine.shell.interpolate import shell_text

    positions = ctx.positions
    lines = positions.text.splitlines() if positions is not None and positions.text else []
    for path, text, what in _commands(ctx):
        script = shell_text(text)
        if script is None or (_plain(script) and not _KEYWORD.search(script)):
            continue
        if _OURS.search(text):
            continue  # `${input.text}`: a root that is not ours (LL030), bash's bad substitution
        from engine.shell.grammar import syntax_problem  # only a script that is not plain

        found = syntax_problem(script)
        if found is None:
            continue
        if lines and positions is not None and _comment_after(positions, lines, path, text):
            continue  # YAML cut the command at ` #`: LL087's, whose fix is quoting the value
        problem, line = found
        script_lines = script.split("\n")  # lines as the grammar counts them
        needle = script_lines[line - 1].strip() if line <= len(script_lines) else ""
        earlier = "\n".join(script_lines[: line - 1]).count(needle) if needle else 0
        yield Finding(
            f"bash cannot parse this {what} ({problem}): a run would fail with exit 2 before "
            "any of it runs",
            path,
            "fix the shell syntax (`bash -n -c '...'` checks it); if bash runs it as it is, the "
            "grammar ll-loop reads it with disagrees: suppress LL088 here with that reason",
            needle=needle,
            occurrence=earlier,  # the same text on an earlier line is not this one
        )


def _comment_after(
    positions: PositionLookup, lines: list[str], path: PathKey, text: str
) -> str | None:
    """The comment YAML dropped after `text`, when `text` is a one-line plain scalar written at
    `path` and a comment follows it on its line (None otherwise, or when unsure)."""
    if "\n" in text or getattr(positions, "origin_of", lambda _: "")(path):
        return None  # several lines, or written in a fragment library (another file)
    line, column = positions.value_of(path)
    if not 0 < line <= len(lines):
        return None
    rest = lines[line - 1][column - 1 :]
    if not rest or rest[0] in "\"'|>&*!{[" or not rest.startswith(text):
        return None  # quoted, a block, an anchor, an alias, a tag, flow: not a plain scalar
    tail = rest[len(text) :]
    return tail.strip() if _COMMENT.match(tail) else None
