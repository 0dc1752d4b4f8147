"""Quote a value for exactly one quoting context of a bash script.

`engine.shell.grammar` finds where each interpolation sits (with the bash grammar); `quote()`
then turns a value into text that bash reads back as exactly that value in that context, or
raises `UnsafeValue` when no such text exists. Inside backticks, where bash re-scans the text
with rules of its own, only values made of plainly safe characters are allowed: refusing is
always better than guessing. Pure functions, no IO.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

NUL = "\x00"
"""Bash cannot carry a NUL character: a value holding one is refused everywhere."""

_SAFE = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")


class Context(Enum):
    """Where an interpolation sits, as bash will parse it."""

    UNQUOTED = "unquoted"
    DOUBLE = "double-quoted"
    SINGLE = "single-quoted"
    ANSI_C = "$'...'"
    HEREDOC = "here-document"
    HEREDOC_LITERAL = "quoted here-document"
    BACKTICK = "backticks"
    REGEX = "the regular expression of [[ =~ ]]"
    DELIMITER = "here-document delimiter"
    ESCAPED = "after a backslash"


class UnsafeValue(ValueError):
    """No quoting makes bash see exactly this value at this position; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ShellQuoted(str):
    """A string already quoted as one shell word (the `shell` filter); unquoted it goes in as is."""

    __slots__ = ()


class Raw(str):
    """A string the author asked to paste into the shell unquoted (`| raw`)."""

    __slots__ = ()


@dataclass(frozen=True)
class Heredoc:
    """A here-document body of a script: `[start, end)` (bytes) excludes the delimiter line."""

    start: int
    end: int
    delimiter: str
    strip_tabs: bool
    expands: bool
    in_substitution: bool = False
    """Opened inside `$(...)`, `<(...)` or `>(...)`, where bash 5 also ends the body at a line
    `DELIM )` (the delimiter, blanks, then the closing parenthesis) and runs the rest."""


def is_safe(value: str) -> bool:
    """True when the value means the same bare in every bash context (no quoting needed)."""
    return _SAFE.fullmatch(value) is not None


def shell_quote(value: str) -> str:
    """One single-quoted shell word, like `shlex.quote` but always predictable."""
    if is_safe(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def quote(value: str, context: Context, in_heredoc: bool = False) -> str:
    """Text that bash, at `context`, reads back as exactly `value` and nothing else.

    Unquoted, every value (also a plain one, also a `| shell` word) becomes one single-quoted
    word: next to the script's own text almost any character can mean something to bash (`~`
    and a name, a digit before `>`, `,` or `..` inside braces), and a quoted word cannot.

    `in_heredoc`: the position is nested (in a `$(...)`) inside an unquoted heredoc body, where
    bash removes every backslash-newline before parsing; backslashes are then written as
    `"\\"` between single-quoted parts, so no backslash can meet a newline.
    """
    if NUL in value:
        raise UnsafeValue("the value contains a NUL character, which bash cannot pass on")
    if isinstance(value, Raw):
        return str(value)
    if context in (Context.UNQUOTED, Context.REGEX) and isinstance(value, ShellQuoted):
        value = unshell(value)
    value = str(value)
    if context in (Context.DELIMITER, Context.ESCAPED):
        raise UnsafeValue(_REFUSALS[context])
    if context in (Context.UNQUOTED, Context.REGEX):  # quoted, `.` and `+` match themselves
        return "'" + _single(value, in_heredoc) + "'"
    if is_safe(value):
        return value
    if context is Context.DOUBLE:
        return _parted(re.sub(r'([\\"$`])', r"\\\1", value), context)
    if context is Context.SINGLE:
        return _single(value, in_heredoc)
    if context is Context.ANSI_C:
        return _parted(value.replace("\\", "\\\\").replace("'", "\\'"), context)
    if context is Context.HEREDOC:
        return _parted(re.sub(r"([\\$`])", r"\\\1", value), context)
    if context is Context.HEREDOC_LITERAL:
        return value
    if value == "" and context is Context.BACKTICK:
        return ""
    raise UnsafeValue(_REFUSALS[context] + f"; the value {_preview(value)} is not plain")


# Bash reads its script in the locale's encoding. In GBK, GB18030, Big5 or Shift_JIS a byte
# 0x80-0xFE starts a two-byte character whose second byte may be `\` (0x5C) or a backtick
# (0x60), and bash's lexer and expansion skip a character as a whole: after `中` (E4 B8 AD in
# UTF-8), AD + `\` is one character, so the backslash escaping a `"` or `$` is gone and the
# `"` ends the string (`$(cmd)` runs). No such encoding has `'`, `"` or `$` as a second byte
# (`}` can be one, but the separator's `}` follows `+`), so an escape is kept apart from a byte
# over 0x7F by a piece that starts with `$` and expands to nothing:
# `${-:+}` (empty whether `$-` is set or not) inside "..." or a here-document body, and closing
# then reopening the string (`'$'`) inside $'...'. Single quotes need nothing: no backslash
# means anything there, and the closing `'` can never be a second byte.
MULTIBYTE_SEPARATOR = {Context.DOUBLE: "${-:+}", Context.HEREDOC: "${-:+}", Context.ANSI_C: "'$'"}
_ESCAPE_AFTER_HIGH = re.compile(r"(?<=[^\x00-\x7f])(?=[\\`])")


def _parted(escaped: str, context: Context) -> str:
    """`escaped` with a separator between each character over U+007F (bytes over 0x7F in
    UTF-8, or a byte kept by surrogateescape) and a backslash or backtick after it."""
    return _ESCAPE_AFTER_HIGH.sub(lambda _: MULTIBYTE_SEPARATOR[context], escaped)


def part_multibyte(before: str, placed: str, after: str, context: Context) -> str:
    """`placed` (a quoted value) kept apart from the script's text around it, as `_parted`
    keeps its own characters: a separator before it when the text before ends with a character
    over U+007F and it starts with an escape, after it when it ends with such a character and
    the text after starts with a backslash or backtick (`"${...}\\" ..."`)."""
    separator = MULTIBYTE_SEPARATOR.get(context)
    if separator is None:
        return placed
    if before[-1:] > "\x7f" and placed[:1] in ("\\", "`"):
        placed = separator + placed
    if placed[-1:] > "\x7f" and after[:1] in ("\\", "`"):
        placed += separator
    return placed


def unshell(word: str) -> str:
    """The value a `shell_quote` word stands for (its exact inverse)."""
    if not word.startswith("'"):
        return word
    return word[1:-1].replace("'\\''", "'")


_AFTER_NAME = re.compile(r"(?<!\\)(?:\\\\)*\$[A-Za-z_][A-Za-z0-9_]*\Z")
_AFTER_DOLLAR = re.compile(r"(?<!\\)(?:\\\\)*\$\Z")
_JOINS_NAME = re.compile(r"[A-Za-z0-9_]")
_EXPANDING = (Context.UNQUOTED, Context.DOUBLE, Context.HEREDOC, Context.BACKTICK)


def keep_apart(before: str, placed: str, context: Context) -> str:
    """`placed` (a value's text) made to stay a piece of its own after the text `before`.

    Right after `$NAME` a value starting with a letter, digit or `_` would lengthen the name
    (`$HOME` + `_dir` is `$HOME_dir`); an empty `""` ends the name (unquoted, inside "..." and in
    arithmetic alike). Right after a
    lone `$` any value would start an expansion (`$(`, `${`, `$'`): refused.
    """
    if context not in _EXPANDING:
        return placed
    if _AFTER_DOLLAR.search(before):
        raise UnsafeValue(
            "the value would follow a lone `$`, and bash would read the two together as one "
            "expansion; end the text before it differently (`$$` is the process id)"
        )
    if not _JOINS_NAME.match(placed) or not _AFTER_NAME.search(before):
        return placed
    if context in (Context.UNQUOTED, Context.DOUBLE):
        return '""' + placed
    name = _AFTER_NAME.search(before)
    shown = name.group().lstrip("\\") if name else "$NAME"
    raise UnsafeValue(
        f"the value {_preview(placed)} would join the variable name of `{shown}` right before "
        f"it, and no quoting can part them in this position; write `${{{shown[1:]}}}` "
        "(with braces) before it"
    )


def _single(value: str, in_heredoc: bool) -> str:
    """The inside of a single-quoted string: `'` becomes `'"'"'` (bash 5.2 misparses `'\\''`
    inside `a=(...)` within `$(...)`), and, in a heredoc body, each backslash `'"\\\\"'`, so
    that no backslash is left to meet a newline."""
    single = value.replace("'", "'\"'\"'")
    return single.replace("\\", "'\"\\\\\"'") if in_heredoc else single


_REFUSALS = {
    Context.BACKTICK: "inside backticks only plain values can be quoted safely; "
    "use $(...) instead of backticks",
    Context.DELIMITER: "a here-document delimiter cannot be interpolated",
    Context.ESCAPED: "a backslash right before ${...} would change the value; "
    "remove it, or write $${ for a literal ${",
}


def _preview(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:37] + "...")


def check_heredoc(body: list[tuple[str, bool]], doc: Heredoc) -> str | None:
    """Why the rendered body (chunks, True = from a value) would not reach bash intact, or None.

    A value must not produce a line equal to the delimiter (the heredoc would end early and the
    rest would run as commands) or, inside a substitution, starting with it; nor a leading tab
    that `<<-` would strip.
    """
    text = "".join(chunk for chunk, _ in body)
    from_value = [flag for chunk, flag in body for _ in chunk]
    start = 0
    for end in _logical_line_ends(text, doc.expands):
        pos = start
        if doc.strip_tabs:
            while pos < end and text[pos] == "\t":
                if from_value[pos]:
                    return "the value starts a line with a tab, which <<- would strip; use <<"
                pos += 1
        line = _unfold(text[pos:end], doc.expands)
        if line == doc.delimiter:
            return (
                f"the value would put the line {doc.delimiter!r} into the here-document, "
                "which would end it early"
            )
        if doc.in_substitution and line.startswith(doc.delimiter):
            return (
                f"the value would start a line with {doc.delimiter!r} in a here-document inside "
                "$(...), where bash may end it early"
            )
        start = end + 1
    return None


def _logical_line_ends(text: str, expands: bool) -> list[int]:
    """Offsets of the newlines that end logical lines (backslash-newline continues a line)."""
    ends: list[int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and expands:
            i += 2
            continue
        if c == "\n":
            ends.append(i)
        i += 1
    if not ends or ends[-1] != n - 1:
        ends.append(n)
    return ends


def _unfold(line: str, expands: bool) -> str:
    if not expands:
        return line
    out: list[str] = []
    i = 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            if line[i + 1] != "\n":
                out.append(line[i : i + 2])
            i += 2
            continue
        out.append(line[i])
        i += 1
    return "".join(out)
