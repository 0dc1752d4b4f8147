"""`${...}` interpolation: find our expressions, evaluate them in a Jinja sandbox, render text.

Only an expression whose root is one of `ROOTS` is ours; bash's `${HOME}`, `${x:-d}` or
`${#a[@]}` stay byte for byte. `$${` is a literal `${`. Expressions are Jinja2 *expressions*
(not templates) evaluated in an immutable sandbox with strict undefined values; the reference
system's suffixes `:default=x`, `?` and `:shell` are translated. Non-strings render as JSON.

`render_shell` additionally quotes each value for the exact bash context it sits in (see
`engine.shell.quoting`), so a value can never change the structure of a shell action.

Jinja2 costs ~50 ms to import, so it is imported only when an expression beyond a dotted path
is parsed or compiled; a template without `${` is returned as is without any parsing. Checking
an expression (`check_expression`, run by lint on every `${...}`) only parses it.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from engine.load.spelling import did_you_mean_hint
from engine.model.errors import InterpolationError
from engine.shell.quoting import (
    PLACEHOLDER,
    Raw,
    Scan,
    ShellQuoted,
    UnsafeValue,
    check_heredoc,
    quote,
    scan,
    shell_quote,
)

ROOTS: frozenset[str] = frozenset(
    {"context", "captured", "prev", "state", "loop", "run", "env", "param"}
)

_ROOT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)")
_RAW_TAIL = re.compile(r"\|\s*raw\s*$")
_PATH = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*\s*")


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
    if _PATH.fullmatch(spec.base):
        return None  # a dotted path is always valid: no need to load Jinja
    return _syntax_problem(spec.base)


def evaluate(expr: str, ns: Mapping[str, Any]) -> Any:
    """The value of one expression in the namespaces `ns` (root name -> value)."""
    spec = _spec(expr)
    if isinstance(spec, str):
        raise InterpolationError(expr, spec)
    missing = _lookup_path(spec.base, ns) if _PATH.fullmatch(spec.base) else _NOT_A_PATH
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


def render_shell(template: str, ns: Mapping[str, Any]) -> str:
    """Render a bash action so that every value reaches the command as exactly itself.

    Each value is quoted for its position (unquoted, "...", '...', heredoc, ...); where no
    quoting is provably safe an `InterpolationError` explains why instead.
    """
    if "${" not in template:
        return template
    parsed = _parse(template)
    _refuse_unclosed(parsed)
    expressions = [p for p in parsed.pieces if isinstance(p, Expression)]
    if not expressions:
        return "".join(p for p in parsed.pieces if isinstance(p, str))
    try:
        segments, scanned = _shell_plan(template)
    except RecursionError:
        raise InterpolationError(
            expressions[0].text, "the shell action nests too deeply to be checked"
        ) from None
    if len(segments) != len(expressions) + 1:
        raise InterpolationError(
            expressions[0].text, "the shell action itself contains a NUL character"
        )
    quoted: list[str] = []
    for expression, context, in_heredoc in zip(
        expressions, scanned.contexts, scanned.in_heredoc, strict=True
    ):
        value = _text(expression.text, evaluate(expression.text, ns))
        try:
            quoted.append(quote(value, context, in_heredoc))
        except UnsafeValue as problem:
            raise InterpolationError(
                expression.text, f"{problem.reason} (position: {context.value})"
            ) from None
    _check_heredocs(scanned, segments, quoted, expressions)
    out = [segments[0]]
    for value, segment in zip(quoted, segments[1:], strict=True):
        out.append(value)
        out.append(segment)
    return "".join(out)


def to_text(value: Any) -> str:
    """A value as text: a str as is, anything else as JSON (never a Python repr)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=_json_default)


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


@lru_cache(maxsize=512)
def _shell_plan(template: str) -> tuple[tuple[str, ...], Scan]:
    """The shell text around the placeholders, and where each placeholder sits (cached)."""
    shadow = "".join(
        PLACEHOLDER if isinstance(p, Expression) else p for p in _parse(template).pieces
    )
    return tuple(shadow.split(PLACEHOLDER)), scan(shadow)


def _check_heredocs(
    scanned: Scan, segments: tuple[str, ...], quoted: list[str], expressions: list[Expression]
) -> None:
    """Refuse values that would end a here-document early or lose a tab to `<<-`."""
    offsets = [0]
    for segment in segments[:-1]:
        offsets.append(offsets[-1] + len(segment) + 1)  # shadow offset after each placeholder
    for doc in scanned.heredocs:
        inside = [k for k, pos in enumerate(scanned.positions) if doc.start <= pos < doc.end]
        if not inside:
            continue
        body: list[tuple[str, bool]] = []
        cursor = doc.start
        for k in inside:
            pos = scanned.positions[k]
            body.append((_shadow_slice(segments, offsets, cursor, pos), False))
            body.append((quoted[k], True))
            cursor = pos + 1
        body.append((_shadow_slice(segments, offsets, cursor, doc.end), False))
        problem = check_heredoc(body, doc)
        if problem is not None:
            culprit = next((k for k in inside if "\n" in quoted[k]), inside[0])
            raise InterpolationError(expressions[culprit].text, problem)


def _shadow_slice(segments: tuple[str, ...], offsets: list[int], start: int, end: int) -> str:
    """Literal text of the shadow script between two offsets that hold no placeholder."""
    for index, base in enumerate(offsets):
        if base <= start <= base + len(segments[index]):
            return segments[index][start - base : end - base]
    return ""


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
    except UndefinedError as problem:
        return _Missing(problem.message or "undefined value")
    except SecurityError as problem:
        raise InterpolationError(expr, f"not allowed in the sandbox: {problem}") from None
    except Exception as problem:
        raise InterpolationError(expr, f"{type(problem).__name__}: {problem}") from None
    if isinstance(value, Undefined):
        return _Missing(value._undefined_message)
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
    from jinja2 import ChainableUndefined, StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _Undefined(ChainableUndefined, StrictUndefined):
        """Missing values chain (`a.b.c | default(x)` works) but fail when used."""

        __slots__ = ()

    class _Environment(ImmutableSandboxedEnvironment):
        """On a mapping, `.name` is only ever the key: `context.items` is the value named
        `items`, and a missing `context.keys` is a missing value, not a dict method."""

        def getattr(self, obj: Any, attribute: str) -> Any:
            if isinstance(obj, Mapping):
                if attribute in obj:
                    return obj[attribute]
                return self.undefined(_unknown_key(obj, attribute), obj=obj, name=attribute)
            return super().getattr(obj, attribute)

        def getitem(self, obj: Any, argument: Any) -> Any:
            if isinstance(obj, Mapping):
                try:
                    return obj[argument]
                except (KeyError, TypeError):
                    return self.undefined(_unknown_key(obj, argument), obj=obj, name=argument)
            return super().getitem(obj, argument)

    env = _Environment(undefined=_Undefined)
    env.filters["tojson"] = _tojson
    env.filters["raw"] = lambda value: Raw(to_text(value))
    env.filters["shell"] = lambda value: ShellQuoted(shell_quote(to_text(value)))
    return env


def _unknown_key(obj: Mapping[Any, Any], key: Any) -> str:
    known = sorted(str(k) for k in obj)
    listed = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
    return f"{str(key)!r} is not set" + (f" (set: {listed})" if known else " (nothing is set)")


def _tojson(value: Any, indent: int | None = None) -> str:
    """Plain `json.dumps` (Jinja's own tojson HTML-escapes, which is wrong for shells)."""
    return json.dumps(value, ensure_ascii=False, indent=indent, default=_json_default)


def _json_default(value: Any) -> Any:
    """JSON for the non-JSON types a namespace may hold; a missing value raises here."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, enum.Enum):
        return value.value
    return str(value)
