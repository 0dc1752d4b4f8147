"""`${...}` interpolation: find our expressions, evaluate them in a Jinja sandbox, render text.

Only an expression whose root is one of `ROOTS` is ours; bash's `${HOME}`, `${x:-d}` or
`${#a[@]}` stay byte for byte. `$${` is a literal `${`. Expressions are Jinja2 *expressions*
(not templates) evaluated in an immutable sandbox with strict undefined values; the reference
system's suffixes `:default=x`, `?` and `:shell` are translated. Non-strings render as JSON.

`render_shell` additionally quotes each value for the exact bash position it sits in, found with
the bash grammar (`engine.shell.grammar`), and refuses text where bash would run or evaluate it
(arithmetic, names, `eval`, `bash -c`, ...) unless its type makes that safe (an integer, a
`type: command` parameter): a value can never change the structure of a shell action.
`shell_env` gives the same values as environment variables (`LL_CONTEXT_name`, ...).

Jinja2 costs ~50 ms to import, so it is imported only when an expression beyond a dotted path
is parsed or compiled; a template without `${` is returned as is without any parsing. Checking
an expression (`check_expression`, run by lint on every `${...}`) only parses it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from engine.load.spelling import did_you_mean_hint
from engine.model.errors import InterpolationError
from engine.model.loop import Loop, Parameter
from engine.shell.commands import Role
from engine.shell.grammar import (
    RUN_AS_IS,
    SECOND_EXPANSION,
    Flow,
    Layout,
    Position,
    layout,
    xargs_options,
)
from engine.shell.quoting import (
    Context,
    Raw,
    ShellQuoted,
    UnsafeValue,
    check_heredoc,
    keep_apart,
    part_multibyte,
    quote,
    shell_quote,
    unshell,
)

ROOTS: frozenset[str] = frozenset(
    {"context", "captured", "prev", "state", "loop", "run", "env", "param"}
    | {"inputs", "annotations"}  # a suite's case (docs/suites.md)
)

FIXED_KEYS: dict[str, tuple[str, ...]] = {
    "state": ("name", "step", "retries"),
    "loop": ("name", "max_steps", "steps", "elapsed_ms"),
    "run": ("id", "dir", "started_at"),
}
"""The roots whose keys are always the same (the run fills them in); any other key is a typo
that lint can name before the run fails on it."""

_ROOT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)")
_RAW_TAIL = re.compile(r"\|\s*raw\s*$")
_PATH = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*\s*")
_INTEGER_TAIL = re.compile(r"\|\s*integer\s*$")
_INTEGER_TEXT = re.compile(r"\s*-?[0-9]+\s*")
_LEADING_PATH = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*")
_INTEGER_PATHS = frozenset(
    {("loop", "steps"), ("loop", "max_steps"), ("loop", "elapsed_ms")}
    | {("state", "step"), ("state", "retries")}
)
ENV_VALUE_LIMIT = 100_000
"""Bytes of one exported value at most: Linux refuses to start a program with a longer
environment string (128 KiB), so a longer value is only in the script, not in the environment."""


WHOLE_ENVIRONMENT = (
    "the whole environment cannot be interpolated: it holds every variable the actions get, "
    "API keys and tokens included; name the one you need, ${env.NAME}"
)


class EnvVars(Mapping[str, str]):
    """The actions' environment as `${env...}` reads it: one named variable at a time.

    `${env.HOME}` and `${env['HOME']}` give that variable; anything that would take the whole
    mapping — `${env}`, `| tojson`, `| list`, `| dictsort`, `| length` — is refused (fail
    closed), so no expression can paste every API key into a command, a prompt or a log.
    """

    __slots__ = ("_variables",)

    def __init__(self, variables: Mapping[str, str]) -> None:
        self._variables = dict(variables)

    def __getitem__(self, name: str) -> str:
        return self._variables[name]

    def __contains__(self, name: object) -> bool:
        return name in self._variables

    def __iter__(self) -> Iterator[str]:
        raise InterpolationError("env", WHOLE_ENVIRONMENT)

    def __len__(self) -> int:
        raise InterpolationError("env", WHOLE_ENVIRONMENT)

    def __repr__(self) -> str:  # never the values, should one reach a traceback
        return "EnvVars(...)"


@dataclass(frozen=True)
class Expression:
    """One `${...}` of ours: `text` is what is inside, `start`/`end` span the whole `${...}`."""

    text: str
    start: int
    end: int
    root: str | None
    raw: bool


@dataclass(frozen=True)
class _Parsed:
    """A template cut into literal text and expressions; `unclosed` is a `${` never closed."""

    pieces: tuple[str | Expression, ...]
    unclosed: Expression | None


def find_expressions(template: str) -> list[Expression]:
    """Our `${...}` expressions in the template, in order (bash's own `${...}` are skipped).

    An unclosed `${root...` is included with `end == len(template)`; rendering it fails.
    """
    if "${" not in template:
        return []
    return [p for p in _parse(template).pieces if isinstance(p, Expression)]


def check_expression(text: str) -> str | None:
    """Why the expression (the text inside `${...}`) cannot be parsed, or None when it can.

    Parse-only (lint calls this for every `${...}`): compiling would cost ~2 ms each.
    """
    spec = _spec(text)
    if isinstance(spec, str):
        return spec
    if _PATH.fullmatch(spec.base) or _integer_path(spec.base) is not None:
        return None  # a dotted path (| integer) is always valid: no need to load Jinja
    return _syntax_problem(spec.base)


_ENV_WORD = re.compile(r"\benv\b")


def reads_whole_env(text: str) -> bool:
    """Whether the expression takes `env` as a whole (`${env}`, `${env | tojson}`) rather than
    one variable of it (`${env.HOME}`, `${env['HOME']}`): a run refuses it (`EnvVars`)."""
    spec = _spec(text)
    if isinstance(spec, str) or not _ENV_WORD.search(spec.base):
        return False
    if _PATH.fullmatch(spec.base):
        return spec.base.strip() == "env"
    from jinja2 import TemplateSyntaxError, nodes
    from jinja2.parser import Parser

    try:
        tree = Parser(_environment(), spec.base, state="variable").parse_expression()
    except (TemplateSyntaxError, RecursionError):
        return False  # LL030 reports it
    every = [tree, *tree.find_all(nodes.Node)]  # find_all skips the root
    looked_into = {id(n.node) for n in every if isinstance(n, nodes.Getattr | nodes.Getitem)}
    return any(
        isinstance(n, nodes.Name) and n.name == "env" and id(n) not in looked_into for n in every
    )


def evaluate(expr: str, ns: Mapping[str, Any]) -> Any:
    """The value of one expression in the namespaces `ns` (root name -> value)."""
    spec = _spec(expr)
    if isinstance(spec, str):
        raise InterpolationError(expr, spec)
    missing = _lookup_path(spec.base, ns) if _PATH.fullmatch(spec.base) else _NOT_A_PATH
    integer_path = _integer_path(spec.base) if missing is _NOT_A_PATH else None
    if integer_path is not None:  # `path | integer` without loading Jinja
        missing = _lookup_path(integer_path, ns)
        if missing is not _NOT_A_PATH and not isinstance(missing, _Missing):
            missing = _integer(expr, missing)
    if missing is _NOT_A_PATH:
        function, error = _compile(spec.base)
        if function is None:
            raise InterpolationError(expr, error or "syntax error")
        missing = _run(expr, function, ns)
    if isinstance(missing, _Missing):
        if spec.default is not None:
            value: Any = spec.default
        elif spec.optional:
            value = ""
        else:
            raise InterpolationError(expr, f"missing value: {missing.reason}")
    else:
        value = missing
    if isinstance(value, EnvVars):
        raise InterpolationError(expr, WHOLE_ENVIRONMENT)
    if spec.shell:
        value = ShellQuoted(shell_quote(_text(expr, value)))
    return value


def render_text(template: str, ns: Mapping[str, Any]) -> str:
    """Render a prompt, path or message: each expression's value as text (JSON if not a str)."""
    if "${" not in template:
        return template
    parsed = _parse(template)
    _refuse_unclosed(parsed)
    return "".join(
        piece if isinstance(piece, str) else _text(piece.text, evaluate(piece.text, ns))
        for piece in parsed.pieces
    )


@dataclass(frozen=True)
class ValueTypes:
    """What is known of values before a run: the loop's parameters declared `integer` (safe in
    arithmetic) and `command` (code by contract, safe where bash runs code)."""

    integers: frozenset[str] = frozenset()
    commands: frozenset[str] = frozenset()

    @classmethod
    def of(cls, parameters: Mapping[str, Parameter]) -> ValueTypes:
        return cls(
            frozenset(n for n, p in parameters.items() if p.type == "integer"),
            frozenset(n for n, p in parameters.items() if p.type == "command"),
        )


NO_TYPES = ValueTypes()


def undeclared_code(value: Any, types: ValueTypes) -> str | None:
    """The first expression of a `with:` value bound to a child's `type: command` parameter that
    is neither a command this loop's caller declared nor an integer, or None.

    The child runs that parameter as code, so anything else there (a capture, the previous
    output, a plain string parameter) is text becoming code, as `bash -c "${...}"` would be.
    """
    if isinstance(value, str):
        for expression in find_expressions(value):
            if not _declared_code(expression.text, types):
                return expression.text
        return None
    if isinstance(value, Mapping):
        items = list(value.values())
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return None
    return next((f for f in (undeclared_code(i, types) for i in items) if f is not None), None)


def case_text_as_command(
    given: Mapping[str, Any] | None, child: Loop, inputs: Mapping[str, Any]
) -> str | None:
    """Why a case's text would be bound to a parameter the loop declares `type: command`
    (which it runs as code), or None. A case's inputs are text whatever they hold: by name (no
    `with:`) or through a `${...}` of `with:`, they never become a command line; a command
    written in the suite's `with:` itself may."""
    for name, param in child.parameters.items():
        if param.type != "command":
            continue
        if given is None:
            found = "inputs." + name if name in inputs else None
        elif name in given:
            found = undeclared_code(given[name], NO_TYPES)
        else:
            continue
        if found is not None:
            return (
                f"the subject binds ${{{found}}} to {name!r}, a `type: command` parameter of loop "
                f"{child.name!r}, which runs it as code; a case's text is never a command: write "
                f"the command in the subject's `with: {{{name}: ...}}`"
            )
    return None


def value_type(text: str, types: ValueTypes = NO_TYPES) -> str:
    """`integer`, `command` or `text`: the static type of the expression `text` (inside ${})."""
    spec = _spec(text)
    if isinstance(spec, str):
        return "text"
    if _INTEGER_TAIL.search(spec.base):
        return "integer"
    if spec.default is not None or spec.shell or not _PATH.fullmatch(spec.base):
        return "text"
    names = tuple(name.strip() for name in spec.base.split("."))
    if names in _INTEGER_PATHS:
        return "integer"
    if len(names) == 2 and names[0] in ("context", "param"):
        if names[1] in types.integers:
            return "integer"
        if names[1] in types.commands:
            return "command"
    return "text"


@dataclass(frozen=True)
class ShellHole:
    """One expression of a shell template and where it sits (line and column in the template)."""

    expression: Expression
    position: Position
    line: int
    column: int


def shell_holes(template: str) -> tuple[tuple[ShellHole, ...], Layout]:
    """Every expression of a shell template with its grammar position (for lint and render)."""
    if "${" not in template:
        return (), Layout(())
    return _shell_holes(template)


def shell_text(template: str) -> str | None:
    """The script bash gets from a template with no expressions (`$${` is `${`); None when the
    template has any (its text is laid out, and judged, with the holes: `shell_holes`)."""
    if "${" not in template:
        return template
    pieces = _parse(template).pieces
    if any(isinstance(piece, Expression) for piece in pieces):
        return None
    return "".join(piece for piece in pieces if isinstance(piece, str))


def shell_flows(template: str) -> tuple[Flow, ...]:
    """Values of the template that reach a shell variable the script then evaluates (lint)."""
    if "${" not in template:
        return ()
    return _shell_flows(template)


@lru_cache(maxsize=256)
def _shell_flows(template: str) -> tuple[Flow, ...]:
    try:
        return layout(_literals(template), with_flows=True).flows
    except RecursionError:
        return ()


def render_shell(template: str, ns: Mapping[str, Any], types: ValueTypes = NO_TYPES) -> str:
    """Render a bash action so that every value reaches the command as exactly itself.

    Each value is quoted for its position (unquoted, "...", '...', heredoc, ...); where bash
    would run or evaluate the text, or no quoting is provably safe, an `InterpolationError`
    explains why (naming the position) instead.
    """
    if "${" not in template:
        return template
    parsed = _parse(template)
    _refuse_unclosed(parsed)
    expressions = [p for p in parsed.pieces if isinstance(p, Expression)]
    if not expressions:
        return "".join(p for p in parsed.pieces if isinstance(p, str))
    if any("\x00" in piece for piece in parsed.pieces if isinstance(piece, str)):
        raise InterpolationError(
            expressions[0].text, "the shell action itself contains a NUL character"
        )
    holes, plan = _shell_holes(template)
    if plan.problem is not None:
        raise InterpolationError(
            expressions[0].text, f"no value can be placed safely in this action ({plan.problem})"
        )
    quoted: list[str] = []
    out: list[str] = []
    for at, piece in enumerate(parsed.pieces):
        if isinstance(piece, Expression):
            hole = holes[len(quoted)]
            value = evaluate(hole.expression.text, ns)
            before = "".join(out)
            placed = _place(hole, value, types, before)
            if not isinstance(value, Raw):
                after = _text_after(parsed.pieces, at)
                placed = part_multibyte(before, placed, after, hole.position.context)
            quoted.append(placed)
            out.append(placed)
        else:
            out.append(piece)
    _check_heredocs(plan, quoted, expressions)
    return "".join(out)


def shell_env(template: str, ns: Mapping[str, Any]) -> dict[str, str]:
    """The environment variables that carry the values a template interpolates or names.

    `${root.a.b ...}` exports the text of `root.a.b` (JSON when not a string) as
    `LL_ROOT_a__b` (see `env_name`); so does a script that only reads the variable
    (`"$LL_ROOT_a__b"`, the spelling a refusal recommends), since the name maps back to exactly
    one path. Values that are missing, hold NUL, or are longer than `ENV_VALUE_LIMIT` bytes are
    not exported.
    """
    if "${" not in template and "LL_" not in template:
        return {}
    exported: dict[str, str] = {}
    for expression in find_expressions(template) if "${" in template else []:
        spec = _spec(expression.text)
        if isinstance(spec, str):
            continue
        match = _LEADING_PATH.match(spec.base)
        if match is not None:
            _export(exported, match.group(1), ns)
    for path in _named_paths(template).values():
        _export(exported, path, ns)
    return exported


# `$LL_CONTEXT_name`, `${LL_CAPTURED_t__output}`: a script reading an exported value by name.
_ENV_REFERENCE = re.compile(
    r"\bLL_(" + "|".join(sorted(root.upper() for root in ROOTS)) + r")_([A-Za-z0-9_]+)"
)


_ENGINE_VARIABLES = frozenset({"LL_RUN_ID", "LL_RUN_DIR"})  # the run's own, not values


def _named_paths(template: str) -> dict[str, str]:
    """The exported variables `template` names (`$LL_CONTEXT_x`), each with the one path whose
    variable it is (`context.x`; see `env_name`), in the order they first appear."""
    names: dict[str, str] = {}
    for reference in _ENV_REFERENCE.finditer(template):
        path = reference.group(1).lower() + "." + reference.group(2).replace("__", ".")
        if env_name(path) == reference.group(0):
            names.setdefault(reference.group(0), path)
    return names


def named_value_flows(template: str) -> tuple[tuple[str, str, Flow], ...]:
    """The exported values (`$LL_CONTEXT_x`, see `shell_env`) a script uses where bash evaluates
    them — `eval "$LL_CONTEXT_x"`, `$((LL_CONTEXT_n + 1))` — as (variable, path, flow), the flow's
    line counted in `template` (lint: the same boundary as a value assigned to a variable)."""
    if "LL_" not in template:
        return ()
    names = {n: p for n, p in _named_paths(template).items() if n not in _ENGINE_VARIABLES}
    if not names:
        return ()
    # each variable as if the script assigned it its value first: the flows of `_flows` then
    # follow it exactly as they follow `x=${...}`
    prefix = "".join(f"{name}=${{{path}}}\n" for name, path in names.items())
    ordered = list(names.items())
    return tuple(
        (ordered[flow.hole][0], ordered[flow.hole][1], replace(flow, line=flow.line - len(names)))
        for flow in _shell_flows(prefix + template)
        if flow.hole < len(ordered)
    )


def _export(exported: dict[str, str], path: str, ns: Mapping[str, Any]) -> None:
    """Add the variable of `path` to `exported`, unless it has none, is there, or cannot be
    given (missing, not text, NUL, too long)."""
    name = env_name(path)
    if name is None or name in exported:
        return
    value = _lookup_path(path, ns)
    if value is _NOT_A_PATH or isinstance(value, _Missing):
        return
    try:
        text = to_text(value)
    except Exception:
        return
    if "\x00" not in text and len(text.encode("utf-8", "surrogatepass")) <= ENV_VALUE_LIMIT:
        exported[name] = text


def env_name(path: str) -> str | None:
    """`context.score_cmd` → `LL_CONTEXT_score_cmd`; `captured.t.output` →
    `LL_CAPTURED_t__output`: the root upper-cased, names as written, joined by `__`.

    Collision-free by construction: a path with a name that contains `__` or starts or ends
    with `_` has no variable (two such paths could give the same name).
    """
    names = [name.strip() for name in path.split(".")]
    if len(names) < 2 or names[0] not in ROOTS:
        return None
    if any("__" in n or n.startswith("_") or n.endswith("_") for n in names[1:]):
        return None
    return f"LL_{names[0].upper()}_" + "__".join(names[1:])


def refusal(hole: ShellHole, kind: str, what: str = "action") -> str:
    """Why text of type `kind` cannot go at this hole (of the `what`), and what to write
    instead."""
    position = hole.position
    where = f"{position.why} (line {hole.line}, column {hole.column} of the {what})"
    path = _LEADING_PATH.match(_spec_base(hole.expression.text))
    variable = env_name(path.group(1)) if path else None
    use_env = f'use "${variable}" in the script instead' if variable else "pass it another way"
    if position.role is Role.CODE:
        if kind == "command":
            return where  # not refused: only used in messages
        if any(phrase in position.why for phrase in RUN_AS_IS):
            return (
                f"text cannot go here: it is {where}; only a parameter declared `type: command` "
                'may be code — the variable of a value ("$LL_...") would be run the same way'
            )
        return (
            f"text cannot go here: it is {where}; only a parameter declared `type: command` "
            f"may be code — to hand this value to the code, {use_env}"
        )
    if position.role is Role.COMMENT:
        return f"text cannot go here: it is {where}; move it out of the comment"
    by_variable = position.role is not Role.ARITHMETIC and SECOND_EXPANSION not in position.why
    return (
        f"text cannot go here: it is {where}; only an integer can — declare the parameter "
        "`type: integer`, or convert with `| integer`" + (f", or {use_env}" if by_variable else "")
    )


def _place(hole: ShellHole, value: Any, types: ValueTypes, before: str = "") -> str:
    """The quoted text of one value at its position after the rendered text `before`, or an
    `InterpolationError`."""
    expr = hole.expression.text
    position = hole.position
    text = _text(expr, value)
    if isinstance(value, Raw | ShellQuoted):
        text = type(value)(text)
    kind = value_type(expr, types)
    try:
        placed = _placed(hole, value, text, kind, before)
        if placed is not None and not isinstance(value, Raw):
            return keep_apart(before, placed, position.context)
        if placed is not None:
            return placed
    except UnsafeValue as problem:
        raise InterpolationError(
            expr, f"{problem.reason} (position: {position.context.value})"
        ) from None
    if kind == "integer":
        raise InterpolationError(
            expr,
            f"the value {_preview(text)} is not an integer, and "
            + refusal(hole, "text").removeprefix("text cannot go here: "),
        )
    raise InterpolationError(expr, refusal(hole, "text"))


def _placed(hole: ShellHole, value: Any, text: str, kind: str, before: str) -> str | None:
    """The value's text quoted for its position; None when its type may not go there."""
    position = hole.position
    if isinstance(value, Raw):
        return quote(text, position.context, position.in_heredoc)
    if position.role is Role.VALUE:
        _refuse_option(hole, unshell(text) if isinstance(value, ShellQuoted) else text)
        _refuse_open_mode(hole, text)
        _refuse_compound(hole, text)
        _refuse_split_option(hole, text)
        return quote(text, position.context, position.in_heredoc)
    if _is_integer(value, text, kind):
        return _integer_text(text.strip(), position, before)
    if position.role is Role.CODE and kind == "command":
        return quote(str(text), position.context, position.in_heredoc)
    return None


def _integer_text(number: str, position: Position, before: str) -> str:
    """An integer where bash evaluates text: bare (a quote would be part of the expression);
    a negative one in parentheses unless a blank precedes it, so that `i-` and `-3` do not
    make `i--3`."""
    if position.context in (Context.REGEX, Context.DELIMITER, Context.ESCAPED):
        return quote(number, position.context, position.in_heredoc)
    if number.startswith("-") and position.role is Role.ARITHMETIC:
        return number if before[-1:] in ("", " ", "\t", "\n") else f"({number})"
    return number


_NUMBER = re.compile(r"-[0-9]+(?:\.[0-9]+)?")


def _refuse_option(hole: ShellHole, text: str) -> None:
    """A value that starts an argument word with `-` is an option to the program: refused,
    unless it is a number (`-3`) or a `--` before it ends the options."""
    program = hole.position.option_of
    if program is None or not text.startswith("-") or _NUMBER.fullmatch(text):
        return
    expr = hole.expression.text
    where = f"line {hole.line}, column {hole.column} of the action"
    if program in ("echo", "?"):
        who = "`echo` would read it as an option" if program == "echo" else "it could be an option"
        hint = f"echo has no `--`: write printf '%s\\n' ${{{expr}}} instead"
    else:
        who = f"`{program}` would read it as an option"
        hint = (
            f"write `--` before the operands (`{program} ... -- ${{{expr}}}`), or prefix a "
            "path with `./`"
        )
    raise InterpolationError(
        expr,
        f"the value {_preview(text)} starts with `-`, so {who} ({where}); {hint}",
    )


_OPEN_MODE = re.compile(r"[|<>]")


def _refuse_open_mode(hole: ShellHole, text: str) -> None:
    """A value holding `|`, `<` or `>` in a word perl may open with its two-argument `open`
    (`<>`, `-n`, `-p`): `cmd|` would run cmd, `>f` truncate f."""
    program = hole.position.opened_by
    if not program or _OPEN_MODE.search(text) is None:
        return
    raise InterpolationError(
        hole.expression.text,
        f"the value {_preview(text)} holds `|`, `<` or `>`, and `{program}` may open this "
        f"argument with a mode read from its text (`cmd|` runs cmd) (line {hole.line}, column "
        f'{hole.column} of the action); pass it another way, as "$LL_..." read with a '
        "three-argument open",
    )


def _refuse_compound(hole: ShellHole, text: str) -> None:
    """A value in parentheses at the start of a `declare` assignment's value: bash could parse
    it as an array assignment (`($(cmd))` runs cmd)."""
    keyword = hole.position.compound_of
    if not keyword or not text.startswith("("):
        return
    if hole.position.compound_tail and not text.endswith(")"):
        return
    raise InterpolationError(
        hole.expression.text,
        f"the value {_preview(text)} is in parentheses, which `{keyword}` could parse as an array "
        f"assignment and expand again (line {hole.line}, column {hole.column} of the action); "
        f"assign it without `{keyword}` (`name=${{...}}`), or put text before it",
    )


_SPLIT_OPTION = re.compile(r"(?:^|[\s\"'\\])-(?!\s|$)")
"""A piece xargs splits off at blanks that starts with `-` (also after a quote or a backslash,
which xargs removes); a lone `-` is no option."""


def _refuse_split_option(hole: ShellHole, text: str) -> None:
    """A value fed to `xargs CMD` with a piece starting with `-`: xargs would pass it to CMD as
    an option (`--checkpoint-action=exec=...` to tar). With `-0` or `-d X` the pieces are what
    lies between the delimiters, where xargs reads the value as it is (`split_exact`); with a
    delimiter not written out, or text another program may have changed, any `-` may start
    one."""
    line = hole.position.split_by
    if not line or "-" not in text:
        return
    delimiter = xargs_options(line.split(" "))[1]
    if delimiter is not None and not hole.position.split_exact:
        delimiter = ""
    if delimiter is None:
        found = _SPLIT_OPTION.search(text) is not None
    elif delimiter == "":
        found = True
    else:
        found = any(piece.startswith("-") and piece != "-" for piece in text.split(delimiter))
    if not found:
        return
    raise InterpolationError(
        hole.expression.text,
        f"the value {_preview(text)} reaches `{line}` on its input, which passes its pieces to "
        f"the command as arguments, and a piece starting with `-` would be an option (line "
        f"{hole.line}, column {hole.column} of the action); write `--` after the command's own "
        "arguments (`xargs rm -f --`)",
    )


def _is_integer(value: Any, text: str, kind: str) -> bool:
    """An int (never a bool), or an integer-typed expression whose text is an integer."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return kind == "integer" and _INTEGER_TEXT.fullmatch(text) is not None


def _preview(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:37] + "...")


def _spec_base(text: str) -> str:
    spec = _spec(text)
    return text if isinstance(spec, str) else spec.base


def _integer_path(base: str) -> str | None:
    """`a.b | integer` → `a.b` (evaluated without Jinja), else None."""
    head, bar, tail = base.rpartition("|")
    if bar and tail.strip() == "integer" and _PATH.fullmatch(head):
        return head.strip()
    return None


def _integer(expr: str, value: Any) -> int:
    """The `| integer` filter: an integer, or an error naming the value (never a silent 0)."""
    if isinstance(value, bool):
        raise InterpolationError(expr, f"| integer: {value!r} is a boolean, not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
        try:
            return int(value)
        except ValueError:  # more digits than Python converts (4,300 by default)
            digits = len(value.strip().lstrip("-"))
            raise InterpolationError(
                expr,
                f"| integer: {_preview(value)} has {digits} digits, more than any integer "
                "arithmetic takes (bash's is 64-bit)",
            ) from None
    shown = _preview(value) if isinstance(value, str) else to_text(value)[:40]
    raise InterpolationError(expr, f"| integer: {shown} is not an integer")


def to_text(value: Any) -> str:
    """A value as text: a str as is, anything else as JSON (never a Python repr)."""
    if isinstance(value, str):
        return value
    return _dumps(value)


def _dumps(value: Any, indent: int | None = None) -> str:
    """JSON of `value`; an integer too long for Python to write is a ValueError in our words
    (Python's own advises `sys.set_int_max_str_digits()`, which is no advice to a loop's
    author)."""
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent, default=_json_default)
    except ValueError as problem:
        if "integer string conversion" not in str(problem):
            raise
        raise ValueError(
            "it holds an integer of more than 4,300 digits, more than any integer arithmetic "
            "takes (bash's is 64-bit)"
        ) from None


def _declared_code(text: str, types: ValueTypes) -> bool:
    """The expression is a declared command or an integer; a conditional counts when each of
    its branches is (`a if cond else b` picks one of them, whatever the condition reads)."""
    if value_type(text, types) in ("command", "integer"):
        return True
    spec = _spec(text)
    if isinstance(spec, str) or spec.default is not None or spec.shell:
        return False
    from jinja2.parser import Parser

    try:
        tree = Parser(_environment(), spec.base, state="variable").parse_expression()
    except Exception:
        return False
    return _declared_node(tree, types)


def _declared_node(node: Any, types: ValueTypes) -> bool:
    from jinja2 import nodes

    if isinstance(node, nodes.CondExpr):
        return _declared_node(node.expr1, types) and (
            node.expr2 is not None and _declared_node(node.expr2, types)
        )
    if isinstance(node, nodes.Const):
        return isinstance(node.value, str | int)  # the author's own text
    names: list[str] = []
    while isinstance(node, nodes.Getattr):
        names.insert(0, node.attr)
        node = node.node
    if not isinstance(node, nodes.Name) or not names:
        return False
    return value_type(".".join([node.name, *names]), types) in ("command", "integer")


# --- template structure ----------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _parse(template: str) -> _Parsed:
    """Cut a template into literal text and our expressions (`$${` becomes a literal `${`)."""
    pieces: list[str | Expression] = []
    literal: list[str] = []
    i, n = 0, len(template)
    while i < n:
        dollar = template.find("$", i)
        if dollar < 0:
            literal.append(template[i:])
            break
        literal.append(template[i:dollar])
        if template.startswith("$${", dollar):
            literal.append("${")
            i = dollar + 3
            continue
        if not template.startswith("${", dollar):
            literal.append("$")
            i = dollar + 1
            continue
        root = _root_of(template, dollar + 2)
        if root is None:
            literal.append("${")
            i = dollar + 2
            continue
        close = _closing_brace(template, dollar + 2)
        if close < 0:
            text = template[dollar + 2 :]
            unclosed = Expression(text, dollar, n, root, _is_raw(text))
            pieces.extend(["".join(literal), unclosed])
            return _Parsed(tuple(p for p in pieces if p != ""), unclosed)
        text = template[dollar + 2 : close]
        pieces.append("".join(literal))
        literal = []
        pieces.append(Expression(text, dollar, close + 1, root, _is_raw(text)))
        i = close + 1
    pieces.append("".join(literal))
    return _Parsed(tuple(p for p in pieces if p != ""), None)


def _root_of(template: str, start: int) -> str | None:
    """The root identifier right after `${` when it is one of ours, else None."""
    match = _ROOT.match(template, start)
    if match is None or match.group(1) not in ROOTS:
        return None
    return match.group(1)


def _closing_brace(template: str, start: int) -> int:
    """Offset of the `}` closing an expression, skipping nested braces and quoted strings."""
    depth = 0
    i, n = start, len(template)
    while i < n:
        c = template[i]
        if c in "'\"":
            i += 1
            while i < n and template[i] != c:
                i += 2 if template[i] == "\\" else 1
        elif c == "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return -1


def _refuse_unclosed(parsed: _Parsed) -> None:
    if parsed.unclosed is not None:
        raise InterpolationError(parsed.unclosed.text.rstrip(), "the expression has no closing '}'")


@lru_cache(maxsize=1024)
def _shell_holes(template: str) -> tuple[tuple[ShellHole, ...], Layout]:
    """Parse a shell template once: its expressions with their positions (cached by text)."""
    expressions = [p for p in _parse(template).pieces if isinstance(p, Expression)]
    try:
        plan = layout(_literals(template))
    except RecursionError:
        plan = Layout((), problem="it nests too deeply to be checked")
    if plan.problem is not None and not plan.positions:
        return (), plan
    holes = tuple(
        ShellHole(e, p, *_line_column(template, e.start))
        for e, p in zip(expressions, plan.positions, strict=True)
    )
    return holes, plan


def _literals(template: str) -> list[str]:
    """The shell text between the expressions of a template (one more than expressions)."""
    literals = [""]
    for piece in _parse(template).pieces:
        if isinstance(piece, Expression):
            literals.append("")
        else:
            literals[-1] += piece
    return literals


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def _check_heredocs(plan: Layout, quoted: list[str], expressions: list[Expression]) -> None:
    """Refuse values that would end a here-document early or lose a tab to `<<-`."""
    for doc in plan.heredocs:
        body = [(piece, False) if isinstance(piece, str) else (quoted[piece], True)
                for piece in doc.body]  # fmt: skip
        problem = check_heredoc(body, doc.doc)
        if problem is not None:
            inside = [piece for piece in doc.body if isinstance(piece, int)]
            culprit = next((k for k in inside if "\n" in quoted[k]), inside[0])
            raise InterpolationError(expressions[culprit].text, problem)


# --- expressions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Spec:
    """An expression split into its Jinja part and the reference system's suffixes."""

    base: str
    default: str | None = None
    optional: bool = False
    shell: bool = False


@dataclass(frozen=True)
class _Missing:
    reason: str


def _text_after(pieces: Sequence[str | Expression], at: int) -> str:
    """The template's literal text right after piece `at`, up to the next expression."""
    text: list[str] = []
    for piece in pieces[at + 1 :]:
        if not isinstance(piece, str):
            break
        text.append(piece)
    return "".join(text)


def _is_raw(text: str) -> bool:
    spec = _spec(text)
    return not isinstance(spec, str) and _RAW_TAIL.search(spec.base) is not None


# Lint asks for every expression's spec twice (finding it, checking it); a cache smaller than a
# big loop's expression count would miss on every second ask, a cliff in validate's scaling.
@lru_cache(maxsize=16384)
def _spec(text: str) -> _Spec | str:
    """Translate `x:default=v`, `x?`, `x:shell` (and combinations); a str is a parse error."""
    colon = _top_level_colon(text)
    base, suffixes = (text, "") if colon < 0 else (text[:colon], text[colon + 1 :])
    base = base.strip()
    optional = base.endswith("?")
    if optional:
        base = base[:-1].rstrip()
    default: str | None = None
    shell = False
    while colon >= 0:
        if suffixes.startswith("default="):
            default = suffixes[len("default=") :]
            break
        name, separator, suffixes = suffixes.partition(":")
        if name.strip() != "shell":
            known = "(known: ':default=VALUE', ':shell', '?')"
            return (
                f"unknown suffix ':{name}' {known}" if name else f"empty suffix after ':' {known}"
            )
        shell = True
        if not separator:
            break
    if not base:
        return "the expression is empty"
    return _Spec(base, default, optional, shell)


def _top_level_colon(text: str) -> int:
    """Offset of the first `:` outside strings and brackets (Jinja has no other use for it)."""
    depth = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            i += 1
            while i < n and text[i] != c:
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ":" and depth == 0:
            return i
        i += 1
    return -1


_NOT_A_PATH = object()


def _lookup_path(path: str, ns: Mapping[str, Any]) -> Any:
    """`root.a.b` through plain mappings without Jinja (the common case, and ~30x faster).

    Gives exactly what the sandbox would; anything but a mapping along the way (an object, a
    list, ...) returns `_NOT_A_PATH` so that Jinja decides.
    """
    names = [name.strip() for name in path.split(".")]
    if names[0] not in ns:
        return _Missing(f"{names[0]!r} is undefined")
    value = ns[names[0]]
    for name in names[1:]:
        if not isinstance(value, Mapping):
            return _NOT_A_PATH
        if name not in value:
            return _Missing(_unknown_key(value, name))
        value = value[name]
    return value


def _run(expr: str, function: Callable[..., Any], ns: Mapping[str, Any]) -> Any:
    """Call a compiled expression; a missing value comes back as `_Missing`, not an exception."""
    from jinja2 import Undefined
    from jinja2.exceptions import SecurityError, UndefinedError

    try:
        value = function(dict(ns))
        if isinstance(value, Iterator):  # `| map`, `| select`, `| unique`, `| reverse`...
            value = list(value)  # are their items (JSON has no generators; str() was a repr)
    except UndefinedError as problem:
        return _Missing(problem.message or "undefined value")
    except SecurityError as problem:
        raise InterpolationError(expr, f"not allowed in the sandbox: {problem}") from None
    except InterpolationError as problem:  # `| integer` refusing a value
        raise InterpolationError(expr, problem.reason) from None
    except Exception as problem:
        raise InterpolationError(expr, f"{type(problem).__name__}: {problem}") from None
    if isinstance(value, Undefined):
        return _Missing(value._undefined_message)
    if callable(value):  # `context.name.upper` without (): its repr is no value to paste
        name = getattr(value, "__name__", type(value).__name__)
        raise InterpolationError(
            expr, f"{name!r} is a function, not a value: call it with () or leave it out"
        )
    return value


def _text(expr: str, value: Any) -> str:
    """`to_text`, with a missing value or an unserialisable one reported against `expr`."""
    try:
        return to_text(value)
    except Exception as problem:
        reason = getattr(problem, "message", None) or str(problem)
        raise InterpolationError(expr, f"cannot render the value: {reason}") from None


@lru_cache(maxsize=4096)
def _syntax_problem(source: str) -> str | None:
    """Why a Jinja expression would not compile, found by parsing alone (no code generation).

    Besides the grammar this checks what Jinja's compiler would refuse: unknown filters and
    tests (everywhere, also in an `if` branch the compiler would let through), and a keyword
    argument given twice (Python itself refuses that compiled code).
    """
    from jinja2 import TemplateSyntaxError, nodes
    from jinja2.parser import Parser

    env = _environment()
    try:
        parser = Parser(env, source, state="variable")
        tree = parser.parse_expression()
        if parser.stream.current.type != "eof":
            return "syntax error: chunk after expression"
        calls = (nodes.Filter, nodes.Test, nodes.Call)
        for node in itertools.chain((tree,), tree.find_all(calls)):  # find_all skips the root
            problem = _node_problem(env, node) if isinstance(node, calls) else None
            if problem is not None:
                return problem
    except TemplateSyntaxError as problem:
        return f"syntax error: {problem.message or problem}"
    except RecursionError:
        return "the expression nests too deeply"
    return None


def _node_problem(env: Any, node: Any) -> str | None:
    """An unknown filter or test, or a repeated keyword argument, in one call-like node."""
    from jinja2 import nodes

    if isinstance(node, nodes.Filter | nodes.Test):
        known = env.filters if isinstance(node, nodes.Filter) else env.tests
        if node.name not in known:
            kind = "filter" if isinstance(node, nodes.Filter) else "test"
            hint = did_you_mean_hint(node.name, known)
            return f"syntax error: No {kind} named {node.name!r}.{hint}"
    seen: set[str] = set()
    for keyword in node.kwargs:
        if keyword.key in seen:
            return f"syntax error: keyword argument repeated: {keyword.key}"
        seen.add(keyword.key)
    return None


@lru_cache(maxsize=4096)
def _compile(source: str) -> tuple[Callable[..., Any] | None, str | None]:
    """Compile a Jinja expression once: (callable, None) or (None, error message).

    The parse check runs first so that evaluation refuses exactly what `check_expression` does.
    """
    from jinja2 import TemplateSyntaxError

    problem = _syntax_problem(source)
    if problem is not None:
        return None, problem
    try:
        return _environment().compile_expression(source, undefined_to_none=False), None
    except TemplateSyntaxError as error:
        return None, f"syntax error: {error.message or error}"
    except SyntaxError as error:  # Python refusing the generated code: never a traceback
        return None, f"syntax error: {error.msg}"
    except RecursionError:
        return None, "the expression nests too deeply"


@lru_cache(maxsize=1)
def _environment() -> Any:
    """The immutable sandbox with strict, chainable undefined values and our filters."""
    from jinja2 import ChainableUndefined, StrictUndefined, Undefined
    from jinja2.exceptions import SecurityError

    from engine.shell.sandbox import BoundedImmutableSandbox

    class _Undefined(ChainableUndefined, StrictUndefined):
        """Missing values chain (`a.b.c | default(x)` works) but fail when used."""

        __slots__ = ()

    class _Environment(BoundedImmutableSandbox):
        """On a mapping, `.name` is only ever the key: `context.items` is the value named
        `items`, and a missing `context.keys` is a missing value, not a dict method."""

        def getattr(self, obj: Any, attribute: str) -> Any:
            if isinstance(obj, Mapping):
                if attribute in obj:
                    return obj[attribute]
                return self.undefined(_unknown_key(obj, attribute), obj=obj, name=attribute)
            return self._in_json(obj, attribute, super().getattr(obj, attribute))

        def getitem(self, obj: Any, argument: Any) -> Any:
            if isinstance(obj, Mapping):
                try:
                    return obj[argument]
                except (KeyError, TypeError):
                    return self.undefined(_unknown_key(obj, argument), obj=obj, name=argument)
            return self._in_json(obj, argument, super().getitem(obj, argument))

        def _in_json(self, obj: Any, name: Any, found: Any) -> Any:
            """A key missing from a JSON value is named in JSON's words: Jinja's own message
            for `${context.n.x}` with n null was "'None' has no attribute 'x'"."""
            if (
                isinstance(found, Undefined)
                and _is_plain(obj)
                and found._undefined_exception is not SecurityError  # the sandbox's refusal
            ):
                return self.undefined(_no_key(obj, name), obj=obj, name=name)
            return found

        def checked_join(self, parts: tuple[Any, ...]) -> str:
            """`a ~ b`: each value as it renders alone (JSON unless a str), not Python's str()."""
            return super().checked_join(tuple(to_text(part) for part in parts))

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            """`text % values`: the values as they render alone, as for `~`."""
            if operator == "%" and isinstance(left, str):
                right = _format_args(left, right)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            """`text.format(values)`: the values as they render alone, as for `~`."""
            method = getattr(__obj, "__wrapped__", __obj)
            if isinstance(getattr(method, "__self__", None), str) and getattr(
                method, "__name__", ""
            ) in ("format", "format_map"):
                args = tuple(_as_format_arg(a) for a in args)
                kwargs = {k: _as_format_arg(v) for k, v in kwargs.items()}
                if getattr(method, "__name__", "") == "format_map" and args:
                    args = (_format_args("%(", args[0]),)
            return super().call(__context, __obj, *args, **kwargs)

    env = _Environment(undefined=_Undefined)
    join = env.filters["join"]

    @functools.wraps(join)  # keeps Jinja's pass-the-eval-context mark
    def join_as_json(eval_ctx: Any, value: Any, d: str = "", attribute: Any = None) -> str:
        if attribute is not None:  # `join(',', attribute='ok')`: each item's value, as JSON
            from jinja2.filters import make_attrgetter

            value = map(make_attrgetter(eval_ctx.environment, attribute), value)
        if not isinstance(value, str | Mapping):
            value = [to_text(item) for item in value]
        return str(join(eval_ctx, value, d))

    env.filters["join"] = join_as_json
    format_filter = env.filters["format"]

    @functools.wraps(format_filter)
    def format_as_json(value: Any, *args: Any, **kwargs: Any) -> str:
        """`| format(values)`: the values as they render alone, as for `~`."""
        args = tuple(_as_format_arg(a) for a in args)
        return str(format_filter(value, *args, **{k: _as_format_arg(v) for k, v in kwargs.items()}))

    env.filters["format"] = format_as_json
    env.filters["string"] = to_text
    env.filters["tojson"] = _tojson
    env.filters["raw"] = lambda value: Raw(to_text(value))
    env.filters["shell"] = lambda value: ShellQuoted(shell_quote(to_text(value)))
    env.filters["integer"] = lambda value: _integer("| integer", value)
    env.limit_filters()
    return env


def _as_format_arg(value: Any) -> Any:
    """A value for `%`, `| format` or `.format()`: numbers and text as they are (a `%d` or a
    `{:.2f}` formats them), anything else as it renders alone (JSON), not its Python str()."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return value
    return to_text(value)


def _format_args(template: str, values: Any) -> Any:
    """The right side of `template % values`: a tuple's items, a mapping's values (for
    `%(name)s`) or the one value, each as `_as_format_arg` gives it."""
    if isinstance(values, tuple):
        return tuple(_as_format_arg(v) for v in values)
    if isinstance(values, Mapping) and "%(" in template:
        return {k: _as_format_arg(v) for k, v in values.items()}
    return _as_format_arg(values)


def _is_plain(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | list | tuple)


def _no_key(obj: Any, key: Any) -> str:
    """Why `key` is missing from a JSON value that is not an object."""
    shown = _tojson(obj)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    kind = "a list" if isinstance(obj, list | tuple) else "not an object"
    if isinstance(obj, list | tuple) and isinstance(key, int):
        return f"{key} is past the end of {shown} ({len(obj)} items)"
    return f"{str(key)!r} is not set: {shown} is {kind}"


def _unknown_key(obj: Mapping[Any, Any], key: Any) -> str:
    if isinstance(obj, EnvVars):  # its names are not listed: `env` is read one name at a time
        return f"{str(key)!r} is not set in the actions' environment"
    known = sorted(str(k) for k in obj)
    listed = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
    found = f"{str(key)!r} is not set" + (f" (set: {listed})" if known else " (nothing is set)")
    dashed = [k for k in known if k.startswith(f"{key}-")]
    if dashed:  # `captured.run-child`: Jinja reads `captured.run - child`
        found += f"; a name with `-` needs brackets: write ['{dashed[0]}'] (a `-` subtracts)"
    return found


def _tojson(value: Any, indent: int | None = None) -> str:
    """Plain `json.dumps` (Jinja's own tojson HTML-escapes, which is wrong for shells)."""
    return _dumps(value, indent)


def _json_default(value: Any) -> Any:
    """JSON for the non-JSON types a namespace may hold; a missing value raises here."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset | tuple | Iterator):
        # an iterator: the items of `| map`, `| reverse`... passed on (`| tojson`, `~`)
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, enum.Enum):
        return value.value
    return str(value)
