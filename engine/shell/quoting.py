"""Know where each interpolation sits in a bash script, and quote a value for exactly that spot.

The interpolator replaces every `${...}` expression of ours by one placeholder character and
hands the result to `scan()`. The scanner walks the script the way bash's parser would (quotes,
`$'...'`, `$(...)`, backticks, `${...}`, arithmetic, comments, here-documents) and records the
quoting context of every placeholder. `quote()` then turns a value into text that bash reads
back as exactly that value in that context, or raises `UnsafeValue` when no such text exists.

Where bash's rules are too subtle to mirror with certainty (inside backticks, a bash `${...}`,
arithmetic, a heredoc delimiter), only values made of plainly safe characters are allowed:
refusing is always better than guessing. Pure functions, no IO.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

PLACEHOLDER = "\x00"
"""Stands for one interpolation in the scanned script (bash cannot carry NUL, so it is free)."""

_SAFE = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")
_METACHARS = frozenset(" \t\n;&|()<>")
_WORD_END = _METACHARS | frozenset("'\"\\$`") | {PLACEHOLDER}


class Context(Enum):
    """Where an interpolation sits, as bash will parse it."""

    UNQUOTED = "unquoted"
    DOUBLE = "double-quoted"
    SINGLE = "single-quoted"
    ANSI_C = "$'...'"
    HEREDOC = "here-document"
    HEREDOC_LITERAL = "quoted here-document"
    BACKTICK = "backticks"
    COMMENT = "comment"
    ARITHMETIC = "arithmetic"
    PARAMETER = "bash ${...} expansion"
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
    """A here-document body in the scanned script: `[start, end)` excludes the delimiter line."""

    start: int
    end: int
    delimiter: str
    strip_tabs: bool
    expands: bool
    in_substitution: bool = False
    """Opened inside `$(...)`, `<(...)` or `>(...)`, where bash 5 also ends the body at a line
    `DELIM )` (the delimiter, blanks, then the closing parenthesis) and runs the rest."""


@dataclass(frozen=True)
class Scan:
    """Result of scanning a script: context of each placeholder (in order) and heredoc bodies."""

    contexts: tuple[Context, ...]
    positions: tuple[int, ...]
    heredocs: tuple[Heredoc, ...]
    in_heredoc: tuple[bool, ...]
    """Per placeholder: inside an unquoted heredoc body, whose backslash-newlines bash joins
    before it parses any `$(...)` in the body."""


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

    `in_heredoc`: the position is nested (in a `$(...)`) inside an unquoted heredoc body, where
    bash removes every backslash-newline before parsing; backslashes are then written as
    `"\\"` between single-quoted parts, so no backslash can meet a newline.
    """
    if PLACEHOLDER in value:
        raise UnsafeValue("the value contains a NUL character, which bash cannot pass on")
    if isinstance(value, Raw):
        return str(value)
    if context is Context.UNQUOTED and isinstance(value, ShellQuoted):
        return str(value)
    value = str(value)
    if context in (Context.DELIMITER, Context.ESCAPED):
        raise UnsafeValue(_REFUSALS[context])
    if is_safe(value):
        return value
    if context is Context.UNQUOTED:
        return "'" + _single(value, in_heredoc) + "'"
    if context is Context.DOUBLE:
        return re.sub(r'([\\"$`])', r"\\\1", value)
    if context is Context.SINGLE:
        return _single(value, in_heredoc)
    if context is Context.ANSI_C:
        return value.replace("\\", "\\\\").replace("'", "\\'")
    if context is Context.HEREDOC:
        return re.sub(r"([\\$`])", r"\\\1", value)
    if context is Context.HEREDOC_LITERAL:
        return value
    if context is Context.COMMENT:
        return "'" + value.replace("\n", " ").replace("'", "'\\''") + "'"
    if value == "" and context in (Context.ARITHMETIC, Context.PARAMETER, Context.BACKTICK):
        return ""
    raise UnsafeValue(_REFUSALS[context] + f"; the value {_preview(value)} is not plain")


def _single(value: str, in_heredoc: bool) -> str:
    """The inside of a single-quoted string: `'` becomes `'\\''`, or, in a heredoc body, `'"'"'`
    and each backslash `'"\\\\"'`, so that no backslash is left to meet a newline."""
    if not in_heredoc:
        return value.replace("'", "'\\''")
    return value.replace("'", "'\"'\"'").replace("\\", "'\"\\\\\"'")


_REFUSALS = {
    Context.BACKTICK: "inside backticks only plain values can be quoted safely; "
    "use $(...) instead of backticks",
    Context.ARITHMETIC: "bash evaluates this position as arithmetic, where a value like "
    "a[$(cmd)] would run cmd, so only plain numbers and names can go here",
    Context.PARAMETER: "inside a bash ${...} expansion only plain values can be quoted safely; "
    "assign the value to a variable first",
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


def scan(script: str) -> Scan:
    """Scan a bash script whose interpolations are `PLACEHOLDER` characters."""
    scanner = _Scanner(script)
    scanner.command(closer=None)
    positions = tuple(i for i, c in enumerate(script) if c == PLACEHOLDER)
    # A placeholder the walk never classified is treated as the most restrictive context.
    contexts = tuple(scanner.found.get(p, Context.BACKTICK) for p in positions)
    in_heredoc = tuple(p in scanner.continued for p in positions)
    return Scan(contexts, positions, tuple(scanner.heredocs), in_heredoc)


_REPARSED = frozenset(
    {Context.UNQUOTED, Context.DOUBLE, Context.SINGLE, Context.ANSI_C, Context.BACKTICK}
)
_TEST_ARITHMETIC = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"})
_DECLARE = frozenset({"declare", "typeset", "local", "readonly", "export"})
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"})
_SUBSCRIPT = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*)?\[[^\]]*")


@dataclass
class _ArithmeticWords:
    """Words whose text bash evaluates as arithmetic, where `a[$(cmd)]` would run `cmd` even
    from a quoted string: `let ...`, `declare -i ...`, `[[ x -gt y ]]`, `name[subscript]=`."""

    command_start: bool = True
    let_from: int | None = None
    declare_from: int | None = None
    test_from: int | None = None
    test_arithmetic: bool = False
    subscript_from: int | None = None

    def plain(
        self, scanner: _Scanner, start: int, word: str, word_start: bool, whole: bool
    ) -> None:
        """A run of plain characters (`whole` when it is a complete word)."""
        if word_start and _SUBSCRIPT.fullmatch(word):
            self.subscript_from = start
        elif self.subscript_from is not None and "]" in word:
            scanner.restrict(self.subscript_from, start + word.index("]"))
            self.subscript_from = None
        if not whole:
            self.command_start = False
            return
        if word == "[[" and self.test_from is None:
            self.test_from, self.test_arithmetic = start, False
        elif word == "]]" and self.test_from is not None:
            if self.test_arithmetic:
                scanner.restrict(self.test_from, start)
            self.test_from = None
        elif self.test_from is not None and word in _TEST_ARITHMETIC:
            self.test_arithmetic = True
        if self.command_start and word == "let":
            self.let_from = start
        elif self.command_start and word in _DECLARE:
            self.declare_from = start
        elif self.declare_from is not None and re.fullmatch(r"-[A-Za-z]*i[A-Za-z]*", word):
            self.let_from = self.declare_from
        self.command_start = word in _KEYWORDS

    def word_end(self, scanner: _Scanner, pos: int) -> None:
        """A word ended: an unclosed subscript is restricted up to here, to be safe."""
        if self.subscript_from is not None:
            scanner.restrict(self.subscript_from, pos)
            self.subscript_from = None

    def separator(self, scanner: _Scanner, pos: int) -> None:
        """`;`, `&`, `|`, newline or a parenthesis: a simple command ended."""
        self.word_end(scanner, pos)
        if self.let_from is not None:
            scanner.restrict(self.let_from, pos)
        self.let_from = self.declare_from = None
        self.command_start = True


@dataclass
class _Pending:
    delimiter: str
    strip_tabs: bool
    quoted: bool
    in_substitution: bool


class _Scanner:
    """A small recursive walk that mirrors how bash splits a script into quoting contexts."""

    def __init__(self, script: str) -> None:
        self.s = script
        self.i = 0
        self.n = len(script)
        self.found: dict[int, Context] = {}
        self.heredocs: list[Heredoc] = []
        self.pending: list[_Pending] = []
        self.continued: set[int] = set()
        self.heredoc_depth = 0
        self.substitution_depth = 0

    def mark(self, pos: int, context: Context) -> None:
        self.found.setdefault(pos, context)
        if self.heredoc_depth:
            self.continued.add(pos)

    # --- unquoted command text -------------------------------------------------------------
    def command(self, closer: str | None) -> None:
        """Unquoted shell text, until `closer` (`)` of a `$(`) or the end.

        Heredocs opened before a `$(` are read after the newline that ends the outer line,
        not at a newline inside the `$(...)`: each level keeps its own pending list.
        """
        outer_pending, self.pending = self.pending, []
        try:
            self.command_body(closer)
        finally:
            self.pending = outer_pending + self.pending

    def command_body(self, closer: str | None) -> None:
        s = self.s
        word_start = True
        parens = 0
        cases = 0
        arith = _ArithmeticWords()
        while self.i < self.n:
            c = s[self.i]
            if c in _METACHARS or (c == "#" and word_start):
                arith.word_end(self, self.i)
            if c == PLACEHOLDER:
                self.mark(self.i, Context.UNQUOTED)
                self.i += 1
                word_start = False
            elif c == "\\":
                self.escape(Context.UNQUOTED)
                word_start = False
            elif c == "'":
                self.single()
                word_start = False
            elif c == '"':
                self.i += 1
                self.double(end='"')
                word_start = False
            elif c == "`":
                self.backtick()
                word_start = False
            elif c == "$":
                self.dollar(in_double=False)
                word_start = False
            elif c == "#" and word_start:
                self.comment()
            elif c == "\n":
                arith.separator(self, self.i)
                self.i += 1
                self.read_heredocs()
                word_start = True
            elif c == "<" and s.startswith("<<<", self.i):
                self.i += 3  # a here-string: the next word is an ordinary word
                word_start = True
            elif c == "<" and s.startswith("<<", self.i):
                self.heredoc_operator()
                word_start = True
            elif c == "(":
                if word_start and s.startswith("((", self.i):
                    self.i += 2
                    self.opaque("(", ")", depth=2, context=Context.ARITHMETIC)
                elif self.i and s[self.i - 1] in "<>":
                    self.i += 1  # process substitution <(...) or >(...)
                    self.substitution(")")
                else:
                    arith.separator(self, self.i)
                    parens += 1
                    self.i += 1
                word_start = True
            elif c == ")":
                arith.separator(self, self.i)
                self.i += 1
                if parens:
                    parens -= 1
                elif cases:
                    pass  # a `case` pattern's closing parenthesis
                elif closer == ")":
                    return
                word_start = True
            elif c in _METACHARS:
                if c in ";&|":
                    arith.separator(self, self.i)
                self.i += 1
                word_start = True
            else:
                start = self.i
                while self.i < self.n and s[self.i] not in _WORD_END:
                    self.i += 1
                word = s[start : self.i]
                whole = word_start and (self.i >= self.n or s[self.i] in _METACHARS)
                # Reserved words only count where a command starts (`echo esac` is an argument).
                if whole and arith.command_start and word == "case":
                    cases += 1
                elif whole and arith.command_start and word == "esac" and cases:
                    cases -= 1
                arith.plain(self, start, word, word_start, whole)
                word_start = False
        arith.separator(self, self.i)

    def restrict(self, start: int, end: int) -> None:
        """Placeholders in `[start, end)` reach bash arithmetic, which expands `a[$(...)]`."""
        for pos in range(start, min(end, self.n)):
            if self.s[pos] == PLACEHOLDER and self.found.get(pos) in _REPARSED:
                self.found[pos] = Context.ARITHMETIC

    def substitution(self, closer: str) -> None:
        """The commands of a `$(...)`, `<(...)` or `>(...)`, up to and including `closer`."""
        self.substitution_depth += 1
        try:
            self.command(closer)
        finally:
            self.substitution_depth -= 1

    def escape(self, context: Context) -> None:
        """A backslash outside quotes: it escapes the next character (newline = continuation)."""
        if self.i + 1 < self.n and self.s[self.i + 1] == PLACEHOLDER:
            self.mark(self.i + 1, Context.ESCAPED)
        self.i += 2

    def single(self) -> None:
        self.i += 1
        while self.i < self.n and self.s[self.i] != "'":
            if self.s[self.i] == PLACEHOLDER:
                self.mark(self.i, Context.SINGLE)
            self.i += 1
        self.i += 1

    def ansi_c(self) -> None:
        """`$'...'`: backslash escapes are live, `'` ends unless escaped."""
        self.i += 2
        while self.i < self.n and self.s[self.i] != "'":
            c = self.s[self.i]
            if c == "\\":
                self.escape(Context.ANSI_C)
                continue
            if c == PLACEHOLDER:
                self.mark(self.i, Context.ANSI_C)
            self.i += 1
        self.i += 1

    def double(self, end: str | None) -> None:
        """Double-quoted text after the opening quote, or a heredoc body when `end` is None."""
        s = self.s
        context = Context.DOUBLE if end else Context.HEREDOC
        specials = '$`"\\\n' if end else "$`\\\n"
        while self.i < self.n:
            c = s[self.i]
            if end is not None and c == end:
                self.i += 1
                return
            if c == PLACEHOLDER:
                self.mark(self.i, context)
                self.i += 1
            elif c == "\\":
                # Bash keeps the backslash before a non-special character, but the value that
                # replaces a placeholder may start with a special one: never allow that.
                if self.i + 1 < self.n and s[self.i + 1] == PLACEHOLDER:
                    self.mark(self.i + 1, Context.ESCAPED)
                self.i += 2 if self.i + 1 < self.n and s[self.i + 1] in specials else 1
            elif c == "`":
                self.backtick()
            elif c == "$":
                self.dollar(in_double=True)
            else:
                self.i += 1

    def dollar(self, in_double: bool) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < self.n else ""
        if nxt == "'" and not in_double:
            self.ansi_c()
        elif nxt == '"' and not in_double:
            self.i += 2
            self.double(end='"')
        elif s.startswith("$((", i):
            self.i += 3
            self.opaque("(", ")", depth=2, context=Context.ARITHMETIC)
        elif nxt == "(":
            self.i += 2
            self.substitution(")")
        elif nxt == "[":
            self.i += 2
            self.opaque("[", "]", depth=1, context=Context.ARITHMETIC)
        elif nxt == "{":
            self.i += 2
            self.opaque("{", "}", depth=1, context=Context.PARAMETER)
        else:
            self.i += 1

    def opaque(self, open_: str, close: str, depth: int, context: Context) -> None:
        """A nested construct we do not model: find its end, classify every placeholder inside
        as `context` (where only plain values are allowed)."""
        s = self.s
        while self.i < self.n and depth:
            c = s[self.i]
            if c == PLACEHOLDER:
                self.mark(self.i, context)
            elif c == "\\":
                if self.i + 1 < self.n and s[self.i + 1] == PLACEHOLDER:
                    self.mark(self.i + 1, Context.ESCAPED)
                self.i += 2
                continue
            elif c in "'\"`":
                quote_end = s.find(c, self.i + 1) if c == "'" else self.skip_quoted(c)
                for p in range(self.i, quote_end if quote_end >= 0 else self.n):
                    if s[p] == PLACEHOLDER:
                        self.mark(p, context)
                self.i = quote_end + 1 if quote_end >= 0 else self.n
                continue
            elif c == open_:
                depth += 1
            elif c == close:
                depth -= 1
            self.i += 1

    def skip_quoted(self, q: str) -> int:
        """Offset of the closing `"` or backtick (backslash escapes respected), or -1."""
        j = self.i + 1
        while j < self.n:
            if self.s[j] == "\\":
                j += 2
                continue
            if self.s[j] == q:
                return j
            j += 1
        return -1

    def backtick(self) -> None:
        """Backticks end at the next unescaped backtick, whatever quotes lie between."""
        end = self.skip_quoted("`")
        stop = end if end >= 0 else self.n
        for p in range(self.i, stop):
            if self.s[p] == PLACEHOLDER:
                self.mark(p, Context.BACKTICK)
        self.i = stop + 1

    def comment(self) -> None:
        while self.i < self.n and self.s[self.i] != "\n":
            if self.s[self.i] == PLACEHOLDER:
                self.mark(self.i, Context.COMMENT)
            self.i += 1

    # --- here-documents ----------------------------------------------------------------------
    def heredoc_operator(self) -> None:
        """`<<WORD`, `<<-WORD`, `<<'WORD'`, `<<"WORD"`, `<<\\WORD`: note it for the next line."""
        s = self.s
        self.i += 2
        strip_tabs = self.i < self.n and s[self.i] == "-"
        if strip_tabs:
            self.i += 1
        while self.i < self.n and s[self.i] in " \t":
            self.i += 1
        word: list[str] = []
        quoted = False
        while self.i < self.n and s[self.i] not in _METACHARS:
            c = s[self.i]
            if c == PLACEHOLDER:
                self.mark(self.i, Context.DELIMITER)
                word.append(c)
                self.i += 1
            elif c in "'\"":
                quoted = True
                end = s.find(c, self.i + 1)
                end = self.n if end < 0 else end
                for p in range(self.i, end):
                    if s[p] == PLACEHOLDER:
                        self.mark(p, Context.DELIMITER)
                word.append(s[self.i + 1 : end])
                self.i = end + 1
            elif c == "\\":
                quoted = True
                word.append(s[self.i + 1 : self.i + 2])
                self.i += 2
            else:
                word.append(c)
                self.i += 1
        if word:
            nested = self.substitution_depth > 0
            self.pending.append(_Pending("".join(word), strip_tabs, quoted, nested))

    def read_heredocs(self) -> None:
        """After a newline: consume the bodies of the heredocs opened on the previous line."""
        pending, self.pending = self.pending, []
        for doc in pending:
            start = self.i
            body_end, after = self.find_delimiter(doc)
            self.heredocs.append(
                Heredoc(
                    start,
                    body_end,
                    doc.delimiter,
                    doc.strip_tabs,
                    not doc.quoted,
                    doc.in_substitution,
                )
            )
            if doc.quoted:
                for p in range(start, body_end):
                    if self.s[p] == PLACEHOLDER:
                        self.mark(p, Context.HEREDOC_LITERAL)
            else:
                saved_n, saved_pending = self.n, self.pending
                self.n, self.pending = body_end, []
                self.heredoc_depth += 1
                self.double(end=None)
                self.heredoc_depth -= 1
                self.n, self.pending = saved_n, saved_pending
            self.i = after

    def find_delimiter(self, doc: _Pending) -> tuple[int, int]:
        """(end of body, offset after the delimiter line) for a heredoc starting at `self.i`."""
        s = self.s
        line_start = self.i
        while line_start < self.n:
            end = line_start
            while end < self.n and s[end] != "\n":
                if s[end] == "\\" and not doc.quoted:
                    end += 1  # a backslash-newline continues the logical line
                end += 1
            end = min(end, self.n)
            line = s[line_start:end]
            if doc.strip_tabs:
                line = line.lstrip("\t")
            if _unfold(line, not doc.quoted) == doc.delimiter:
                return line_start, min(end + 1, self.n)
            if doc.in_substitution and line.startswith(doc.delimiter):
                rest = line[len(doc.delimiter) :]
                blanks = len(rest) - len(rest.lstrip(" \t"))
                if rest[blanks : blanks + 1] == ")":
                    # `$(cat <<EOF ... EOF)`: the body ends and the `)` closes the substitution.
                    return line_start, end - len(rest) + blanks
            line_start = end + 1
        return self.n, self.n
