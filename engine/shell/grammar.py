"""Where each interpolation of a shell action sits, found by parsing it with a real bash grammar.

The interpolator cuts a template into literal text and holes (our `${...}` expressions). Here
each hole becomes a bash expansion `${__ll_hole_N}`, the script is parsed once with
tree-sitter-bash, and every hole gets a `Position`: how bash quotes the text there (`Context`)
and what bash does with it (`Role`: only expands it, runs it as code, evaluates it as
arithmetic, reads it as a variable name, or a comment). Anything the walk does not know — an
ERROR or MISSING node anywhere in the script, a node type not listed below — is `UNKNOWN`, which
the renderer refuses: fail closed (see docs/format.md, "Interpolation in shell actions").
A few rules look at the whole script rather than the path to one hole: a script declaring an
integer variable admits only integers anywhere, and in an unquoted here-document body (which the
grammar reads as text) arithmetic and backticks are found by scanning the body.

tree-sitter costs a few milliseconds to load, so it is loaded only when a template with `${`
is laid out, and each template text is laid out once (`layout` is cached by the interpolator).
Pure functions over the parsed tree; no IO besides loading the grammar.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from engine.shell.commands import (
    COMMAND_STRING,
    LOADS_CODE,
    RUNS_COMMAND,
    SHELLS,
    WRAPPER_ARGUMENTS,
    WRAPPER_OPERANDS,
    Role,
    Verdict,
    argument_role,
    declare_flags,
    program,
    runs_its_input,
    test_role,
)
from engine.shell.quoting import Context, Heredoc

if TYPE_CHECKING:
    from tree_sitter import Node, Parser


@dataclass(frozen=True)
class Position:
    """Where one hole sits: how to quote a value there, and what bash does with it."""

    role: Role
    context: Context
    why: str = ""
    in_heredoc: bool = False
    """Inside `$(...)` within an unquoted here-document body, where bash joins backslash-newlines
    before it parses the substitution."""
    function: str = ""
    """An argument of this function, which the script defines (its body is not followed)."""
    option_of: str | None = None
    """The command (`git`, or `?` when its name is not literal) whose option parser reads the
    argument word this hole starts, with no `--` before it: a value starting with `-` would be
    an option. None when the hole does not start an argument word."""
    opened_by: str = ""
    """A program (`perl`) that may open the argument word this hole is in with a mode read
    from its text (`cmd|` runs cmd): a value holding `|`, `<` or `>` is refused there."""
    compound_of: str = ""
    """The declaration (`declare`, `local`, ...) whose assigned value this hole starts: a value
    starting with `(` could make it an array assignment that bash expands again."""
    compound_tail: bool = False
    """With `compound_of`: the hole also ends the value, so only a value that ends with `)`
    too can (a value `(a) text` cannot)."""
    split_by: str = ""
    """The `xargs` command (`xargs tar -cf x.tar`) whose input this hole's text reaches: xargs
    splits it into arguments of the command, so a piece starting with `-` would be an option.
    Its delimiter option (`xargs -d ,`) is part of it: then any `-` is refused, unless
    `split_exact`."""
    split_exact: bool = False
    """With `split_by`: xargs reads the value's text as it is (a here-string or here-document of
    xargs, or an `echo`/`printf '%s'` argument in the stage just before it), so its pieces are
    exactly those of the value split at xargs's delimiter."""


@dataclass(frozen=True)
class HeredocHoles:
    """A here-document body holding holes: the body as literal text and hole indices."""

    doc: Heredoc
    body: tuple[str | int, ...]


@dataclass(frozen=True)
class Flow:
    """Hole `hole` is assigned to `variable`, which the script uses where bash evaluates it
    (arithmetic, a name, code): the value gets evaluated after all, out of the engine's sight."""

    hole: int
    variable: str
    role: Role
    why: str
    line: int
    column: int


@dataclass(frozen=True)
class Layout:
    """Every hole's position in one script, its here-documents, and the flows lint warns of."""

    positions: tuple[Position, ...]
    heredocs: tuple[HeredocHoles, ...] = ()
    flows: tuple[Flow, ...] = ()
    problem: str | None = None
    """Why the grammar could not parse the script (then every hole is refused)."""


def layout(literals: Sequence[str], *, with_flows: bool = False) -> Layout:
    """Lay out a script made of `literals` with a hole between each two of them.

    `with_flows`: also find the flows of values through shell variables (lint wants them; a
    render does not, and they need a walk over the whole tree).
    """
    holes = len(literals) - 1
    if holes <= 0:
        return Layout(())
    name = _hole_name(literals)
    parts: list[bytes] = []
    spans: list[tuple[int, int]] = []
    offset = 0
    for k, literal in enumerate(literals):
        chunk = literal.encode("utf-8", "surrogatepass")
        parts.append(chunk)
        offset += len(chunk)
        if k < holes:
            hole = f"${{{name}{k}}}".encode()
            parts.append(hole)
            spans.append((offset, offset + len(hole)))
            offset += len(hole)
    source = b"".join(parts)
    root, brackets = _parse(source)
    if root.has_error:
        problem = "the bash grammar cannot parse it: " + _parse_problem(root, source)
        why = f"no value can be placed safely in this script ({problem})"
        return Layout(
            tuple(Position(Role.UNKNOWN, Context.UNQUOTED, why) for _ in spans), (), (), problem
        )
    text = "".join(literals)
    facts = _Facts.of(root, source, text, full=with_flows)
    facts.brackets = brackets
    facts.evaluating_write = _evaluating_write(root, source, text)
    facts.alias_expansion = _alias_expansion(root, source, text)
    facts.history_expansion = _history_expansion(root, source, text)
    facts.keyword_assignments = _keyword_assignments(root, source, text)
    facts.unknown_option = _keyword_assignments(root, source, text, unknown=True)
    facts.exec_into_program = _exec_into_program(
        root, source, text, frozenset(facts.functions)
    ) or _coproc_reader(root, source, text, frozenset(facts.functions))
    _inline_code_facts(root, source, facts)
    misread = _misread(root, source, text, facts)
    if misread is not None:
        problem = "the bash grammar would read it unlike bash: " + misread
        why = f"no value can be placed safely in this script ({problem})"
        return Layout(
            tuple(Position(Role.UNKNOWN, Context.UNQUOTED, why) for _ in spans), (), (), problem
        )
    positions = tuple(_classify(root, span, source, facts) for span in spans)
    positions = _whole_script_rules(positions, spans, source, facts)
    heredocs = tuple(_heredoc_holes(facts, spans, source))
    flows = tuple(_flows(root, facts, spans, source)) if with_flows else ()
    return Layout(positions, heredocs, flows)


# --- loading the grammar ---------------------------------------------------------------------


@lru_cache(maxsize=1)
def _parser() -> Parser:
    """One parser for the process (tree-sitter parsers are reusable between parses)."""
    from tree_sitter import Language, Parser

    return Parser(Language(_bash_language()))


def _bash_language() -> object:
    """The compiled bash grammar.

    `tree_sitter_bash/__init__.py` imports `importlib.resources` (with `tempfile`, `shutil`,
    ...: ~30 ms) only to offer highlight queries we never use, so its compiled `_binding` is
    loaded directly; if the package is laid out differently, the ordinary import is used.
    """
    import importlib.machinery
    import importlib.util
    import os

    spec = importlib.util.find_spec("tree_sitter_bash")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_binding" + suffix)
            binding = importlib.util.spec_from_file_location("tree_sitter_bash._binding", path)
            if not os.path.exists(path) or binding is None or binding.loader is None:
                continue
            module = importlib.util.module_from_spec(binding)
            binding.loader.exec_module(module)
            return module.language()
    import tree_sitter_bash

    return tree_sitter_bash.language()


def _parse(source: bytes) -> tuple[Node, frozenset[int]]:
    """The parse tree, and where a `[` command was read as a plain command word.

    tree-sitter-bash parses `[ ... ]` as an expression and fails on word sequences `test` takes
    (`[ $a $b ]`); bash runs `[` as a command with words. Such a `[` is replaced by a one-byte
    word and the script parsed again, so that its words are classified like `test`'s.
    """
    root = _parser().parse(source).root_node
    brackets: set[int] = set()
    for _ in range(8):
        if not root.has_error:
            break
        found = [
            node.start_byte
            for node in _walk(root)
            if node.type == "[" and node.parent is not None and node.parent.type == "ERROR"
        ]
        if not found:
            break
        brackets.update(found)
        patched = bytearray(source)
        for byte in brackets:
            patched[byte : byte + 1] = b"_"
        root = _parser().parse(bytes(patched)).root_node
    if root.has_error:
        return _parser().parse(source).root_node, frozenset()
    return root, frozenset(brackets)


def _hole_name(literals: Sequence[str]) -> str:
    name = "__ll_hole_"
    while any(name in literal for literal in literals):
        name = "_" + name
    return name


def script_problem(script: str) -> str | None:
    """Why bash cannot run `script` as a whole (a quote or a bracket left open at its end), in
    words, or None when it parses."""
    source = script.encode("utf-8", "surrogatepass")
    if _quote_left_open(source):
        return "a quote is still open at its end"
    root, _ = _parse(source)
    return _parse_problem(root, source) if root.has_error else None


def syntax_problem(script: str) -> tuple[str, int] | None:
    """Why the bash grammar cannot parse `script` (a whole action with no `${...}`), in words,
    and the line of the script where; None when it parses.

    The grammar decides; the quote scan (which does not know comments or here-documents) only
    names the cause when the grammar has already failed, and not for a quote character the
    grammar read inside a comment or a here-document (`# don't`). tree-sitter-bash refuses a
    few scripts bash runs (`for x in; do ...`), so a caller reports this as likely, not certain.
    """
    source = script.encode("utf-8", "surrogatepass")
    root, _ = _parse(source)
    if not root.has_error:
        return None
    opened = _open_quote(source)
    if (
        opened is not None
        and source[opened : opened + 1] != b"\\"
        and not _in_comment_or_here_document(root, opened)
    ):
        line, column = _point(source, opened)
        return f"the quote opened at line {line}, column {column} is never closed", line
    for node in _walk(root):
        opener = _opener(node, source)
        if opener is not None:  # a construct missing its end: name where it starts
            word, start = opener
            line, column = _point(source, start)
            return f"the `{word}` at line {line}, column {column} has no `{node.type}`", line
        if node.is_error or node.is_missing:
            return _parse_problem(root, source), _point(source, node.start_byte)[0]
    return "a syntax error", 1


def _opener(node: Node, source: bytes) -> tuple[str, int] | None:
    """The first word of the construct a MISSING `node` ends (`if`, `do`, `$(date`) and where
    it starts; None when the node is not missing, or its parent has no text: the command
    missing after `||` in `make test ||` is a MISSING word inside an empty command."""
    parent = node.parent
    if not node.is_missing or parent is None or parent.end_byte <= parent.start_byte:
        return None
    words = source[parent.start_byte : parent.end_byte].split(None, 1)
    return (words[0].decode("utf-8", "replace"), parent.start_byte) if words else None


def _in_comment_or_here_document(root: Node, byte: int) -> bool:
    """Whether the grammar read `byte` as part of a comment or a here-document's body, where a
    quote character is text (`# don't`), not the unclosed quote the scan took it for."""
    node: Node | None = root.descendant_for_byte_range(byte, byte + 1)
    while node is not None:
        if node.type in ("comment", "heredoc_body", "heredoc_content"):
            return True
        node = node.parent
    return False


def _parse_problem(root: Node, source: bytes) -> str:
    """Where the first ERROR or MISSING node is, in words."""
    for node in _walk(root):
        if node.is_error or node.is_missing:
            line, column = _point(source, node.start_byte)
            what = f"missing `{node.type}`" if node.is_missing else "unexpected text"
            return f"{what} at line {line}, column {column}"
    return "a syntax error"


_RESERVED_CLOSERS = {
    "esac": "case_statement",
    "fi": "if_statement",
    "then": "if_statement",
    "else": "else_clause",
    "elif": "elif_clause",
    "done": "do_group",
    "}": "compound_statement",
}


_WIDE_BEFORE_ESCAPE = re.compile(rb"[\x80-\xff][\\`|}\]]")


_QUOTED_TEXT = ("raw_string", "comment", "string", "string_content", "heredoc_body",
                "heredoc_content", "ansi_c_string", "translated_string")  # fmt: skip
"""Where a `|` is a character like any other (an escape still counts in most of them)."""


def _wide_before_escape(root: Node, source: bytes, facts: _Facts) -> int | None:
    """Where the script writes a backslash, backtick or `|` right after a byte over 0x7F
    (outside '...', comments and quoted here-document bodies), or a `}` or `]` that closes
    something (not one in text or ending a plain word), which a locale such as GBK reads as the
    second byte of one character (`中` is E4 B8 AD in UTF-8, and AD 5C is a character): there
    bash's quoting, pipeline or expansion is not the grammar's (`eval 中| cat ${...}` hands the
    value to eval; `"${X:-中}" ${...} "}"` puts the value inside the `${X:-...}`, in double
    quotes, where `$(...)` runs). None if nowhere."""
    for match in _WIDE_BEFORE_ESCAPE.finditer(source):
        at = match.start() + 1
        node = root.descendant_for_byte_range(at, at + 1)
        literal = any(doc.start <= at < doc.end and not doc.expands for _, doc in facts.heredocs)
        char = source[at : at + 1]
        quiet: tuple[str, ...]
        if char == b"|":
            quiet = _QUOTED_TEXT
        elif char in (b"}", b"]"):  # a closer only of `${...}`, `$[...]`, a subscript
            quiet = (*_QUOTED_TEXT, "word")
        else:
            quiet = ("raw_string", "comment")
        if not literal and (node is None or node.type not in quiet):
            return at
    return None


def _misread(root: Node, source: bytes, text: str, facts: _Facts) -> str | None:
    """Where tree-sitter-bash is known to read a script differently from bash, in words.

    - A reserved word closes a construct only where a command could start (after `;`, `&`,
      a newline or another reserved word): in `a) echo esac;;` bash's `esac` is an argument.
    - In an unquoted here-document, a line ending in a backslash continues onto the next, so
      `a` + backslash + newline + `EOF` is the line `aEOF`, not the end of the body.
    - A `$'...'` string ends at the first `'` no backslash escapes: in `$'\\'x'` bash's string
      is `$'\\'`, the grammar's runs on to the next quote.
    - The grammar reads a pattern after `==` or `=~` (also after `==` in a plain command, where
      bash has a word) and an extglob pattern (`@(a|b)`) as one token, quotes and all: in
      `echo == a ' ] x` its pattern is `a ' `, while bash's `'` opens a string that runs on
      past it.
    - In a GBK, Big5 or Shift_JIS locale a byte over 0x7F takes the next byte with it, a
      backslash, a backtick, a `|`, `}` or `]` too, so `"中\\"` does not end where the grammar
      ends it, nor `${X:-中}`.
    - After a plain command's `==` the grammar reads on past the newline (`echo ==` + newline +
      `eval x` is one command to it, two to bash); between a command's words bash allows only
      blanks and escaped newlines.
    """
    closers = _captures(root, "closer") if _CLOSER_WORDS.search(text) else []
    for node in closers:
        parent = node.parent
        if node.is_named or parent is None or _RESERVED_CLOSERS.get(node.type) != parent.type:
            continue
        before = source[: node.start_byte].rstrip(b" \t")
        if (
            before
            and before[-1:] not in (b";", b"&", b"\n")
            and not before.endswith((b" in", b"\tin", b"then", b"else", b"do", b"{"))
        ):
            line, column = _point(source, node.start_byte)
            return (
                f"`{node.type}` at line {line}, column {column} is a word to bash, the end of a "
                "construct to the grammar; put `;` before it if it ends the construct"
            )
    for node in _captures(root, "ansi") if b"$'" in source else []:
        if _ansi_c_end(source, node.start_byte) != node.end_byte:
            line, column = _point(source, node.start_byte)
            return (
                f"the $'...' string at line {line}, column {column} ends elsewhere for bash "
                "(a backslash before a quote)"
            )
    for node in _captures(root, "pattern") if _PATTERN_MARKS.search(source) else []:
        token = source[node.start_byte : node.end_byte]
        where = _pattern_place(node)
        line, column = _point(source, node.start_byte)
        if where is None:
            return (
                f"the grammar reads a pattern at line {line}, column {column} where bash has "
                "plain words and operators (`==` is a pattern only inside [[ ]])"
            )
        if _quote_left_open(token):
            return (
                f"the pattern at line {line}, column {column} leaves a quote open, which bash "
                "reads on past where the grammar ends it"
            )
        if where == "[" and _WORD_BREAK.search(token):
            return (
                f"the pattern at line {line}, column {column} is one token to the grammar, "
                "several words or operators to bash (inside [ ], as in any command)"
            )
    wide = _wide_before_escape(root, source, facts)
    if wide is not None:
        line, column = _point(source, wide)
        return (
            "a backslash, backtick, `}`, `]` or `|` right after a non-ASCII character at line "
            f"{line}, column {column}, which bash in a GBK, Big5 or Shift_JIS locale reads as "
            "part of that character (put a space or a quote between them, or write $'\\uXXXX')"
        )
    for node in _captures(root, "command"):
        joined = _joined_line(node, source)
        if joined is not None:
            line, column = _point(source, joined)
            return (
                f"the grammar reads on past the end of the command at line {line}, column "
                f"{column} (a newline, `;`, `|` or `&` after it), as if it were one command"
            )
    bodies = {
        (body.parent.start_byte, body.parent.end_byte): (body, doc)
        for body, doc in facts.heredocs
        if body.parent is not None
    }
    for redirect in _captures(root, "heredoc") if b"<<" in source else []:
        _, doc = bodies.get((redirect.start_byte, redirect.end_byte), (None, None))
        if doc is None:  # no body to the grammar: bash must find none either
            span = _bash_heredoc_body(redirect, source, _empty_heredoc(redirect))
            if span is None or span[0] == span[1]:
                continue
            line, _ = _point(source, redirect.start_byte)
            return f"the here-document at line {line} has a body for bash, none for the grammar"
        span = _bash_heredoc_body(redirect, source, doc)
        if span is None or not _same_body(source, span, (doc.start, doc.end)):
            line, _ = _point(source, doc.start if span is None else span[0])
            return (
                f"the here-document body at line {line} starts or ends elsewhere for bash "
                "(a backslash at the end of a line reads differently there)"
            )
    for _body, doc in facts.heredocs:
        body = source[doc.start : doc.end]
        if doc.expands and re.search(rb"(?<!\\)(?:\\\\)*\\\n\Z", body):
            line, _ = _point(source, doc.end)
            return (
                f"the here-document line before its delimiter (line {line}) ends with a "
                "backslash, which bash joins with the delimiter line"
            )
    return None


def _same_body(source: bytes, bash: tuple[int, int], grammar: tuple[int, int]) -> bool:
    """The grammar's body is bash's, up to where the grammar puts its edges: before leading
    tabs, and before the newline that ends the last line (when it ends in an expansion)."""
    (start, end), (found_start, found_end) = bash, grammar
    return (
        start <= found_start
        and re.fullmatch(rb"\t*", source[start:found_start]) is not None
        and found_end <= end
        and re.fullmatch(rb"\n?\t*", source[found_end:end]) is not None
    )


def _empty_heredoc(redirect: Node) -> Heredoc:
    """The here-document a redirect with no body node stands for (for `_bash_heredoc_body`)."""
    start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
    text = "" if start is None else _text(start)
    operator = redirect.children[0].type if redirect.child_count else "<<"
    return Heredoc(
        0,
        0,
        re.sub(r"""\\(.)|['"]""", lambda m: m.group(1) or "", text),
        strip_tabs=operator == "<<-",
        expands=start is not None and not _is_quoted_start(start),
    )


def _bash_heredoc_body(redirect: Node, source: bytes, doc: Heredoc) -> tuple[int, int] | None:
    """Where bash reads the body of a here-document as `(start, end)` in the grammar's terms
    (after the leading tabs `<<-` strips), or None when the line of its start is not found.

    Bash starts the body after the newline that ends the command line (a backslash-newline
    continues it) and ends it at the first line equal to the delimiter; only in an unquoted
    here-document does a backslash-newline join two lines of the body.
    """
    start_node = next((c for c in redirect.children if c.type == "heredoc_start"), None)
    if start_node is None:
        return None
    at = start_node.end_byte
    while True:
        at = source.find(b"\n", at)
        if at < 0:
            return None
        if not _continues(source[:at]):
            break
        at += 1
    line_start = at + 1
    first = True
    while line_start <= len(source):
        end, logical = _heredoc_line(source, line_start, doc.expands)
        text = logical.lstrip(b"\t") if doc.strip_tabs else logical
        tabs = len(logical) - len(text)
        if first:
            begin, first = line_start + tabs, False
        delimiter = doc.delimiter.encode("utf-8", "surrogatepass")
        closes = text == delimiter or (
            doc.in_substitution and re.fullmatch(re.escape(delimiter) + rb"[ \t]*\).*", text)
        )
        if closes:
            return begin, line_start + tabs
        if end >= len(source):
            return begin, len(source)
        line_start = end + 1
    return None


def _continues(line: bytes) -> bool:
    """The line ends in an odd run of backslashes: the newline after it is escaped."""
    return (len(line) - len(line.rstrip(b"\\"))) % 2 == 1


def _heredoc_line(source: bytes, start: int, joins: bool) -> tuple[int, bytes]:
    """The newline ending the line of a here-document body that starts at `start` (or the
    end of the source) and the line's text; `joins`: a backslash-newline continues it."""
    pieces: list[bytes] = []
    at = start
    while True:
        end = source.find(b"\n", at)
        end = len(source) if end < 0 else end
        piece = source[at:end]
        if joins and end < len(source) and _continues(piece):
            pieces.append(piece[:-1])
            at = end + 1
            continue
        pieces.append(piece)
        return end, b"".join(pieces)


def _joined_line(command: Node, source: bytes) -> int | None:
    """Where the grammar reads one command on past a newline, `;`, `|` or `&` that ends it for
    bash (seen after a plain command's `==`: `echo ==` then `eval ...` on the next line): the
    offset of the word before, else None. Between a command's words bash allows only blanks and
    escaped newlines."""
    children = command.children
    for before, after in itertools.pairwise(children):
        gap = source[before.end_byte : after.start_byte]
        if gap.strip(b" \t") and re.search(rb"(?<!\\)[\n;|&]", gap):
            return before.start_byte
    return None


def _pattern_place(node: Node) -> str | None:
    """Where bash reads the pattern `node` as a pattern: "[[", "case" or "expansion"
    (`${x//a/b}`), or "[" (a test, where bash has plain words); None where bash has no pattern
    at all (a plain command's `==`)."""
    parent = node.parent
    while parent is not None:
        if parent.type in ("case_item", "expansion"):
            return parent.type
        if parent.type == "test_command":
            first = parent.child(0)
            return "[[" if first is not None and first.type == "[[" else "["
        if parent.type in ("command", "program", "redirected_statement"):
            return None
        parent = parent.parent
    return None


def _quote_left_open(text: bytes) -> bool:
    """Whether bash, reading `text` from outside any quotes, is still inside a quoted string
    (or right after a backslash) at its end."""
    return _open_quote(text) is not None


def _open_quote(text: bytes) -> int | None:
    """Where the quoted string (or the escaping backslash) that is still open at the end of
    `text` starts, for bash reading it from outside any quotes; None when none is."""
    i, mode, start = 0, b"", 0
    while i < len(text):
        byte = text[i : i + 1]
        if mode == b"'":
            mode = b"" if byte == b"'" else mode
        elif byte == b"\\":
            if i + 1 >= len(text):
                return i
            i += 1  # escapes the next byte (inside "..." and $'...' too)
        elif mode == b"$'":
            mode = b"" if byte == b"'" else mode
        elif mode == b'"':
            mode = b"" if byte == b'"' else mode
        elif byte == b"'" or byte == b'"':
            mode, start = byte, i
        elif text[i : i + 2] == b"$'":
            mode, start, i = b"$'", i, i + 1
        i += 1
    return start if mode else None


def _ansi_c_end(source: bytes, start: int) -> int:
    """Where bash ends the `$'...'` string starting at `start`: after the first `'` that no
    backslash escapes (every backslash escapes the next byte)."""
    i = start + 2
    while i < len(source):
        byte = source[i : i + 1]
        if byte == b"\\":
            i += 2
        elif byte == b"'":
            return i + 1
        else:
            i += 1
    return len(source)


_PATTERN_MARKS = re.compile(rb"[=!]=|=~|[@+*?!]\(")  # where the grammar may read a pattern
_WORD_BREAK = re.compile(rb"[\s|&;()<>]")  # what ends a word for bash (quotes: _quote_left_open)
_CLOSER_WORDS = re.compile(r"\b(?:esac|fi|then|else|elif|done)\b|\}")
_DECLARING_WORDS = re.compile(r"\b(?:declare|typeset|local|export|readonly|let)\b")
_QUERY = """
(declaration_command) @declaration
(command name: (command_name)) @command
(heredoc_redirect) @heredoc
["esac" "fi" "then" "else" "elif" "done" "}"] @closer
(ansi_c_string) @ansi
(function_definition) @function
[(regex) (extglob_pattern)] @pattern
"""


@lru_cache(maxsize=1)
def _query() -> object:
    from tree_sitter import Language, Query

    return Query(Language(_bash_language()), _QUERY)


def _captures(root: Node, *names: str) -> list[Node]:
    """The nodes the query captures under `names`, in source order (the search runs in C)."""
    from tree_sitter import Query, QueryCursor

    query = _query()
    assert isinstance(query, Query)
    found = QueryCursor(query).captures(root)
    nodes = [node for name in names for node in found.get(name, [])]
    return sorted(nodes, key=lambda node: node.start_byte)


def _walk(node: Node) -> Iterator[Node]:
    """Every node, parents before children, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _point(source: bytes, byte: int) -> tuple[int, int]:
    """1-based line and character column of a byte offset."""
    line_start = source.rfind(b"\n", 0, byte) + 1
    column = len(source[line_start:byte].decode("utf-8", "replace")) + 1
    return source.count(b"\n", 0, byte) + 1, column


# --- facts about the whole script ------------------------------------------------------------


@dataclass
class _Facts:
    """What the classification of one hole needs to know about the rest of the script."""

    integer_names: set[str] = field(default_factory=set)
    nameref_names: set[str] = field(default_factory=set)
    heredocs: list[tuple[Node, Heredoc]] = field(default_factory=list)
    assignments: list[tuple[str, Node]] = field(default_factory=list)  # name, value node
    arithmetic: list[Node] = field(default_factory=list)  # nodes bash evaluates as arithmetic
    functions: set[str] = field(default_factory=set)  # the functions the script defines
    brackets: frozenset[int] = frozenset()  # where `_parse` replaced a `[` command
    integer_declaration: str = ""
    """The first declaration that may make a variable integer (`declare -i n` at line 3)."""
    exported_function: str = ""
    """Where the script exports a function (`export -f f`), which a child shell inherits."""
    unseen_code: str = ""
    """Where the script runs code the engine cannot read (`source <(...)`, a
    `command_not_found_handle`), which could define a function any command name calls."""
    alias_expansion: str = ""
    """Where the script turns on alias expansion (`shopt -s expand_aliases` at line 1)."""
    history_expansion: str = ""
    """Where the script turns on history expansion (`set -H` at line 1)."""
    keyword_assignments: str = ""
    """Where the script turns on `set -k` (`set -o keyword`), which makes every `NAME=value`
    word of a command an assignment in that command's environment."""
    unknown_option: str = ""
    """Where the script sets a shell option known only at run time (`set -$f` at line 1)."""
    exec_into_program: str = ""
    """Where `exec` makes a program that runs what it reads the reader of the script's own
    output (`exec > >(sh)`): what the script writes after it is that program's input."""
    evaluating_write: tuple[Role, str] | None = None
    """The first write to one of bash's own variables that evaluate what they are given
    (`RANDOM=...`, `read PS4`), with what bash does with it."""

    @classmethod
    def of(cls, root: Node, source: bytes, text: str, *, full: bool) -> _Facts:
        """The facts of a script; `full` also collects what flows need (a whole-tree walk).

        Otherwise only declarations, `let` and here-documents matter, found by a query run
        only when the text holds such a word at all.
        """
        facts = cls()
        if full:
            nodes: Iterator[Node] | list[Node] = _walk(root)
        else:
            names = ["heredoc"] if "<<" in text else []
            if _DECLARING_WORDS.search(text):
                names += ["declaration", "command"]
            if "(" in text or "function" in text:
                names.append("function")
            nodes = _captures(root, *names) if names else []
        for node in nodes:
            kind = node.type
            if kind == "declaration_command":
                facts.declared(_words(node), [c for c in node.named_children], node, source)
            elif kind == "function_definition":
                name = node.child_by_field_name("name")
                if name is not None:
                    facts.functions.add(_text(name))
            elif kind == "command":
                words = _command_words(node)
                if len(words) > 1 and words[0] in ("builtin", "command"):
                    words = words[1:]
                if words and words[0] in _DECLARATIONS_AS_COMMANDS:
                    facts.declared(words, [], node, source)
                elif words and words[0] == "let":
                    facts.arithmetic.extend(_arguments(node))
            elif kind == "heredoc_redirect":
                doc = _heredoc(node, source)
                if doc is not None:
                    facts.heredocs.append(doc)
            elif kind == "variable_assignment":
                target, value = node.child_by_field_name("name"), node.child_by_field_name("value")
                if target is not None and value is not None and target.type == "variable_name":
                    facts.assignments.append((_text(target), value))
            elif kind in ("arithmetic_expansion", "subscript") or _is_double_paren(node):
                facts.arithmetic.append(node)
            elif kind == "c_style_for_statement":
                facts.arithmetic.extend(
                    c for c in node.children if c.type not in ("do_group", "compound_statement")
                )
            elif kind == "binary_expression" and _arithmetic_test(node):
                facts.arithmetic.append(node)
        return facts

    def declared(
        self, words: list[str | None], children: list[Node], node: Node, source: bytes
    ) -> None:
        integer, nameref, unknown = declare_flags(words)
        if not self.exported_function and _exports_functions(words):
            line, _ = _point(source, node.start_byte)
            self.exported_function = f"`{' '.join(w or '…' for w in words[:2])}` at line {line}"
        if not self.integer_declaration and (
            integer or (unknown and words[0] in ("declare", "typeset", "local"))
        ):
            line, _ = _point(source, node.start_byte)
            flag = next((w for w in words[1:] if w and w[0] in "-+" and "i" in w), None)
            what = f"`{words[0]} {flag}`" if flag else f"`{words[0]}` with run-time flags"
            self.integer_declaration = f"{what} at line {line}"
        if not (integer or nameref):
            return
        names = {
            word.split("=", 1)[0].split("[", 1)[0]
            for word in words[1:]
            if word is not None and not word.startswith(("-", "+"))
        }
        for child in children:
            if child.type == "variable_name":
                names.add(_text(child))
            elif child.type == "variable_assignment":
                target = child.child_by_field_name("name")
                if target is not None:
                    names.add(_text(target).split("[", 1)[0])
        (self.integer_names if integer else self.nameref_names).update(names)
        if integer and nameref:
            self.nameref_names.update(names)


def _exports_functions(words: list[str | None]) -> bool:
    """`export -f NAME`, `declare -fx NAME` (flags known only at run time count)."""
    flags = "".join(w[1:] for w in words[1:] if w is not None and w[:1] == "-" and w != "--")
    unknown = any(w is None for w in words[1:])
    exporting = words[0] == "export" or "x" in flags
    return exporting and ("f" in flags or (unknown and words[0] != "local"))


_DECLARATIONS_AS_COMMANDS = frozenset({"declare", "typeset", "local", "export", "readonly"})
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


def _is_double_paren(node: Node) -> bool:
    """`(( ... ))` as a command (tree-sitter calls it a compound statement)."""
    return (
        node.type == "compound_statement" and node.child_count > 0 and node.children[0].type == "(("
    )


def _arithmetic_test(node: Node) -> bool:
    """A `[[ a -gt b ]]` comparison (in `[ ]`, `test` compares without evaluating)."""
    operator = node.child_by_field_name("operator")
    if operator is None or _text(operator) not in _ARITHMETIC_TESTS:
        return False
    parent = node.parent
    while parent is not None and parent.type in (
        "binary_expression",
        "unary_expression",
        "parenthesized_expression",
    ):
        parent = parent.parent
    return parent is not None and parent.type == "test_command" and _bracket(parent) == "[["


def _bracket(test: Node) -> str:
    return test.children[0].type if test.child_count else ""


# --- literal words of a command --------------------------------------------------------------


def _literal(node: Node) -> str | None:
    """The text a word stands for when it holds no expansion at all, else None."""
    kind = node.type
    if kind in ("word", "number"):
        text = _text(node)
        return re.sub(r"\\(.)", r"\1", text) if "\\" in text else text
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "string":
        inner = [c for c in node.children if c.type not in ('"',)]
        if all(c.type == "string_content" for c in inner):
            return "".join(_text(c) for c in inner)
        return None
    if kind == "concatenation":
        pieces = [_literal(c) for c in node.children]
        return None if any(p is None for p in pieces) else "".join(p or "" for p in pieces)
    if kind == "command_name":
        return _literal(node.children[0]) if node.child_count == 1 else None
    return None


_NOT_ARGUMENTS = frozenset(
    {
        "command_name",
        "variable_assignment",
        "file_redirect",
        "heredoc_redirect",
        "herestring_redirect",
        "comment",
    }
)


def _arguments(command: Node) -> list[Node]:
    """The argument nodes of a simple command, in order."""
    return [c for c in command.children if c.is_named and c.type not in _NOT_ARGUMENTS]


def _command_words(command: Node) -> list[str | None]:
    """The command name and its arguments as literal words (None when not literal)."""
    name = command.child_by_field_name("name")
    if name is None:
        return []
    return [_literal(name), *(_literal(a) for a in _arguments(command))]


def _words(declaration: Node) -> list[str | None]:
    """A declaration command's keyword and its literal argument words."""
    keyword = declaration.children[0].type if declaration.child_count else "declare"
    rest = [c for c in declaration.children[1:] if c.is_named]
    return [keyword, *(_declared_word(c) for c in rest)]


def _declared_word(node: Node) -> str | None:
    """A declaration's argument as a literal word; a name, or an assignment given as `name=`
    when its value is not literal (what matters is that it is not an option)."""
    if node.type == "variable_name":
        return _text(node)
    name = node.child_by_field_name("name") if node.type == "variable_assignment" else None
    if name is None:
        return _literal(node)
    value = node.child_by_field_name("value")
    return _text(name) + "=" + ((_literal(value) if value is not None else "") or "")


# --- classifying one hole --------------------------------------------------------------------


@dataclass
class _State:
    """The position being worked out while walking down from the root to a hole."""

    role: Role = Role.VALUE
    why: str = ""
    context: Context = Context.UNQUOTED
    in_heredoc: bool = False
    test: str = ""  # "[" or "[[" inside a test command
    function: str = ""  # the script's function the hole is passed to
    option_of: str | None = None
    opened_by: str = ""
    compound_of: str = ""
    compound_tail: bool = False
    split_by: str = ""
    split_exact: bool = False

    def mark(self, role: Role, why: str) -> None:
        """Keep the most restrictive role met on the way down (and why)."""
        if role.value > self.role.value:
            self.role, self.why = role, why

    def quoting(self, context: Context) -> None:
        if self.context is not Context.BACKTICK:  # inside backticks everything is re-parsed
            self.context = context


def _from_root(node: Node) -> list[Node]:
    """`node` and its ancestors, the root first: the path `_step` walks down."""
    chain: list[Node] = []
    current: Node | None = node
    while current is not None:
        chain.append(current)
        current = current.parent
    chain.reverse()
    return chain


def _classify(root: Node, span: tuple[int, int], source: bytes, facts: _Facts) -> Position:
    start, end = span
    node = root.descendant_for_byte_range(start, end)
    if node is None:
        return Position(Role.UNKNOWN, Context.UNQUOTED, "a place the grammar does not find")
    exact = (
        node.type in ("expansion", "simple_expansion")
        and node.end_byte == end
        # tree-sitter puts a blank before `${` into the expansion's first token at times
        and source[node.start_byte : start].strip(b" \t") == b""
    )
    chain = _from_root(node)
    state = _State()
    for parent, child in itertools.pairwise(chain):
        _step(state, parent, child, start, source, facts)
    if not exact:
        _literal_hole(state, node, start, end, source)
    reader = _stdin_reader(chain, frozenset(facts.functions))
    if reader is not None:
        state.mark(
            Role.CODE,
            f"text fed to the standard input of `{reader}`, which could run it as a program",
        )
    for role, why in _function_calls(root, chain, source, facts, 0, set()):
        state.mark(role, why)
    state.split_by, state.split_exact = _xargs_options(chain, source)
    return Position(
        state.role,
        state.context,
        state.why,
        state.in_heredoc,
        state.function,
        state.option_of,
        state.opened_by,
        state.compound_of,
        state.compound_tail,
        state.split_by,
        state.split_exact,
    )


_INPUT_REDIRECTS = frozenset({"<", "<&", "<>"})


def _function_calls(
    root: Node, chain: list[Node], source: bytes, facts: _Facts, depth: int, seen: set[str]
) -> Iterator[tuple[Role, str]]:
    """What the calls of the functions whose bodies hold the hole do with what they write: a
    call piped into a shell (`f() { echo X; }; f | sh`), fed to one (`sh < <(f)`, `f >
    >(sh)`, `bash <(f)`) or whose output is code (`eval "$(f)"`) runs the value's text as the
    hole there would. Calls inside other functions are followed to their calls in turn."""
    names = [
        _text(named)
        for node in chain
        if node.type == "function_definition"
        and (named := node.child_by_field_name("name")) is not None
    ]
    functions = frozenset(facts.functions)
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        for call in _walk(root):
            if call.type != "command" or not _calls(_command_words(call), name):
                continue
            call_chain = _from_root(call)
            if any(n.type == "function_definition" and _defines(n, name) for n in call_chain):
                continue  # a call of the function within itself
            line, _ = _point(source, call.start_byte)
            where = f"written by the function `{name}`, called at line {line}"
            state = _State()
            for parent, child in itertools.pairwise(call_chain):
                _step(state, parent, child, call.start_byte, source, facts)
            if state.role is not Role.VALUE:
                yield state.role, f"text {where}, where its output is {state.why}"
            reader = _stdin_reader(call_chain, functions)
            if reader is not None:
                yield (
                    Role.CODE,
                    f"text {where} with its output fed to the standard input of `{reader}`, "
                    "which could run it as a program",
                )
            if depth < 4:
                yield from _function_calls(root, call_chain, source, facts, depth + 1, seen)


def _calls(words: list[str | None], name: str) -> bool:
    """A command that calls the function `name`: `f ...`, `time [-p] f ...` (bash's keyword,
    which tree-sitter reads as a command named `time`), `eval f ...` / `eval 'f ...'`."""
    at = 0
    while at < len(words) and words[at] == "time":
        at += 1
        while at < len(words) and words[at] in ("-p", "--"):
            at += 1
    if at < len(words) and words[at] == "eval":
        following = words[at + 1] if at + 1 < len(words) else None
        return following is not None and following.split()[:1] == [name]
    return words[at : at + 1] == [name]


def _defines(definition: Node, name: str) -> bool:
    found = definition.child_by_field_name("name")
    return found is not None and _text(found) == name


def _stdin_reader(chain: list[Node], functions: frozenset[str]) -> str | None:
    """A program the hole's text reaches on its standard input and may run as its program:
    `bash <<< X`, `bash <<EOF`, `bash < <(echo X)`, `echo X | sh` (any later stage of the
    pipe, as data can pass through `cat` or `tee` on the way)."""
    for parent, child in itertools.pairwise(chain):
        if parent.type == "redirected_statement" and _feeds_stdin(child):
            body = parent.child_by_field_name("body")
            found = _program_reader(body, functions) if body is not None else "?"
        elif parent.type == "command" and _feeds_stdin(child):  # `bash <<< X`
            found = _program_reader(parent, functions)
        elif parent.type == "pipeline":
            stages = [c for c in parent.children if c.is_named]
            after = [s for s in stages if s.start_byte >= child.end_byte]
            found = next(filter(None, (_program_reader(s, functions) for s in after)), None)
        else:
            found = None
        if found is None and parent.type == "redirected_statement":
            found = next(
                filter(None, (_program_reader(n, functions) for n in _output_readers(parent))),
                None,
            )
        if found is not None:
            return found
    return None


_OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})  # `>& WORD`: as `&>`


def _output_readers(statement: Node) -> Iterator[Node]:
    """What reads the output of a redirected statement besides a file: a process substitution
    it is written to (`echo X > >(sh)`, also after a here-document's start: `cat <<EOF >
    >(sh)`), and the pipe written after a here-document's start (`cat <<EOF | sh`), which the
    grammar puts inside the here-document's redirection."""
    redirects = [c for c in statement.children if c.type.endswith("redirect")]
    for redirect in redirects:
        nested = redirect.children if redirect.type == "heredoc_redirect" else [redirect]
        for node in nested:
            if node.type == "pipeline":
                yield node
            elif node.type == "file_redirect" and any(
                c.type in _OUTPUT_REDIRECTS for c in node.children
            ):
                yield from (c for c in node.children if c.type == "process_substitution")


def _xargs_options(chain: list[Node], source: bytes) -> tuple[str, bool]:
    """The `xargs ...` command line whose input the hole's text reaches (a redirection, a later
    pipe stage, `-a <(...)`) and whose command may read that input's pieces as options (it has
    a command other than `echo`, with no `--` of its own), or "", and whether xargs reads the
    text as it is (`Position.split_exact`)."""
    for parent, child in itertools.pairwise(chain):
        direct = child.type in ("herestring_redirect", "heredoc_redirect")
        if parent.type == "redirected_statement" and _feeds_stdin(child):
            body = parent.child_by_field_name("body")
            candidates = [body] if body is not None else []
        elif parent.type == "command" and (
            _feeds_stdin(child) or child.type == "process_substitution"
        ):
            candidates = [parent]
        elif parent.type == "pipeline":
            candidates = [
                c for c in parent.children if c.is_named and c.start_byte >= child.end_byte
            ]
            direct = _echoes(child, chain, source)
        elif parent.type != "redirected_statement":
            continue
        else:
            candidates = []
        if parent.type == "redirected_statement":  # `cat <<EOF | xargs rm`, `> >(xargs rm)`
            candidates += list(_output_readers(parent))
        for at, candidate in enumerate(candidates):
            for found in _walk(candidate):
                if found.type == "command":
                    line = _xargs_line(_command_words(found))
                    if line:
                        return line, direct and at == 0 and found == candidate
    return "", False


def _echoes(stage: Node, chain: list[Node], source: bytes) -> bool:
    """Whether the pipe stage `stage` writes the hole's text as it is: the hole is an argument
    of `echo` (no `-e`; no `xpg_echo` in the script) or of `printf` with a literal format of
    `%s` and plain text, not inside anything else of that command."""
    if stage.type != "command" or not any(n == stage for n in chain):
        return False
    inner = chain[[n.id for n in chain].index(stage.id) + 1 :]
    if any(n.type not in ("expansion", "string", "concatenation", "variable_name") for n in
           inner[1:]) or not inner or inner[0].type == "command_name":  # fmt: skip
        return False
    words = _command_words(stage)
    if words[:1] == ["echo"]:  # every word before the hole's written out: none is `-e` unseen
        before = [c for c in stage.children[1:] if c.end_byte <= inner[0].start_byte]
        if any(_literal(c) is None for c in before):
            return False
        flags = [w for w in itertools.takewhile(lambda w: w is not None, words[1:]) if w]
        options = itertools.takewhile(lambda w: w.startswith("-"), flags)
        return b"xpg_echo" not in source and all(set(w[1:]) <= set("nE") for w in options)
    return (  # the format first (`printf -- '%b'` is no `%s` format)
        words[:1] == ["printf"]
        and len(words) > 1
        and words[1] is not None
        and not words[1].startswith("-")
        and re.fullmatch(r"(?:[^%\\]|%s|%%|\\[ntr0])*", words[1]) is not None
    )


def _xargs_line(words: list[str | None]) -> str:
    """`xargs [options] CMD ARGS` (wrappers before it looked through) as text when CMD could
    read the pieces xargs appends as options, else ""."""
    at = next(
        (i for i, w in enumerate(words) if w is not None and w.rsplit("/", 1)[-1] == "xargs"), None
    )
    first = (words[0] or "").rsplit("/", 1)[-1] if words else ""
    if at is None or (at > 0 and first not in WRAPPER_OPERANDS):
        return ""
    start = xargs_options(words[at:])[0]
    command = words[at + start :] if start is not None else [None]
    if not command or command[0] == "echo" or "--" in command[1:]:
        return ""
    return " ".join("…" if w is None else w for w in words[at:])


# GNU xargs's options as its getopt reads them: short ones bundle (`-rd,` is `-r -d ,`), an
# argument is the rest of the word or the next word (`-d`), or only the rest of the word (`-i`);
# a long one may be shortened to any unambiguous start (`--delim=,`).
_XARGS_SHORT_FLAGS = frozenset("0prtxo")
_XARGS_SHORT_WITH_ARGUMENT = frozenset("adEILnPs")
_XARGS_SHORT_OPTIONAL = frozenset("eil")
_XARGS_LONG = {
    "--arg-file": True, "--delimiter": True, "--max-args": True, "--max-procs": True,
    "--max-chars": True, "--process-slot-var": True, "--eof": False, "--replace": False,
    "--max-lines": False, "--null": False, "--no-run-if-empty": False, "--interactive": False,
    "--open-tty": False, "--verbose": False, "--exit": False, "--show-limits": False,
    "--help": False, "--version": False,
}  # fmt: skip
"""Long options of xargs, and whether each takes its argument from the next word."""
_XARGS_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "0": "\0", "a": "\a", "b": "\b"}


def xargs_options(words: Sequence[str | None]) -> tuple[int | None, str | None]:
    """Where the command of `xargs ...` (`words`, `xargs` first) starts (None when an option
    not read here may take the next word), and the delimiter it splits its input at: None when
    it splits at blanks (honouring quotes), the character of `-0` or `-d X` (the last one given
    wins), or "" when it is not known (after an option or a delimiter not read here, or one
    named at run time)."""
    delimiter: str | None = None
    i = 1
    while i < len(words) and words[i] is not None and str(words[i]).startswith("-"):
        word = str(words[i])
        if word == "--":
            return i + 1, delimiter
        if word.startswith("--"):
            name, equals, given = word.partition("=")
            starts = [o for o in _XARGS_LONG if o.startswith(name)]
            option = name if name in _XARGS_LONG else starts[0] if len(starts) == 1 else None
            if option is None:
                return None, ""
            if _XARGS_LONG[option] and not equals:
                i += 1
                given = (words[i] or "…") if i < len(words) else ""
            if option == "--null":
                delimiter = "\0"
            elif option == "--delimiter":
                delimiter = _delimiter_char(given)
        else:
            for at, letter in enumerate(word[1:], 2):
                if letter == "0":
                    delimiter = "\0"
                elif letter in _XARGS_SHORT_WITH_ARGUMENT or letter in _XARGS_SHORT_OPTIONAL:
                    given = word[at:]
                    if not given and letter in _XARGS_SHORT_WITH_ARGUMENT:
                        i += 1
                        given = (words[i] or "…") if i < len(words) else ""
                    if letter == "d":
                        delimiter = _delimiter_char(given)
                    break
                elif letter not in _XARGS_SHORT_FLAGS:
                    return None, ""
        i += 1
    return i, delimiter


def _delimiter_char(given: str) -> str:
    """The one character `xargs -d` reads from `given` (`,`, `\\n`, `\\x2c`, `\\054`), or ""."""
    if len(given) == 1 and given != "…":
        return given
    if given[:1] == "\\" and given[1:] in _XARGS_ESCAPES:
        return _XARGS_ESCAPES[given[1:]]
    if re.fullmatch(r"\\x[0-9a-fA-F]{1,2}", given):
        return chr(int(given[2:], 16))
    if re.fullmatch(r"\\[0-7]{1,3}", given):
        return chr(int(given[1:], 8))
    return ""


def _feeds_stdin(redirect: Node) -> bool:
    if redirect.type in ("herestring_redirect", "heredoc_redirect"):
        return True
    return redirect.type == "file_redirect" and any(
        c.type in _INPUT_REDIRECTS for c in redirect.children
    )


def _program_reader(node: Node, functions: frozenset[str], depth: int = 0) -> str | None:
    """The first command in `node` that would run what it reads as a program: one whose next
    word would be code (`bash`, `python3`, `sh -s`, `ssh host`), a script given as `-`, a
    function of the script or a command named only at run time (not followed: fail closed),
    or a shell whose `-c` script does one of these (`bash -c bash`: the script reads the same
    input; followed when it is literal, refused when it is not)."""
    for found in _walk(node):
        if found.type != "command":
            continue
        words = _reader_words(found)
        if not words:
            continue
        base = (words[0] or "?").rsplit("/", 1)[-1]
        if runs_its_input(words, functions) or _replaces(base, words):
            return base
        if _inline_script_reads_code(words, depth):
            return base
    return None


def _inline_script_reads_code(words: list[str | None], depth: int) -> bool:
    """Whether the `-c` script of a shell among `words` (wrappers looked through) runs what it
    reads on standard input as a program, or cannot be followed (not literal, not parsed)."""
    for index in range(1, len(words)):
        if not argument_role(words, index).why.startswith(COMMAND_STRING):
            continue
        script = words[index]
        if script is None or depth >= 4:
            return True
        root, _ = _parse(script.encode("utf-8", "surrogateescape"))
        return root.has_error or _program_reader(root, frozenset(), depth + 1) is not None
    return False


def _reader_words(command: Node) -> list[str | None]:
    """The command's words, where an argument that expands to a path (`"$DIR/count.py"`: it
    holds a literal `/` and does not start with `-`) counts as that literal path, not as a
    word that might be an option."""
    words = _command_words(command)
    for i, argument in enumerate(_arguments(command), start=1):
        text = _text(argument).strip("\"'")
        if i < len(words) and words[i] is None and "/" in text and not text.startswith("-"):
            words[i] = "path/" + text.rsplit("/", 1)[-1]
    return words


def _replaces(base: str, words: list[str | None]) -> bool:
    """`xargs -I{} sh -c 'echo {}'`: what it reads is pasted into the command's words, code
    included."""
    return base == "xargs" and any(
        w is None or w.startswith(("-I", "-i", "--replace", "-J")) for w in words[1:]
    )


_TRANSPARENT = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "subshell",
        "redirected_statement",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "do_group",
        "case_statement",
        "case_item",
        "negated_command",
        "concatenation",
        "variable_assignments",
        "herestring_redirect",
        "for_statement",
        "heredoc_body",
        "parenthesized_expression",
        "ternary_expression",
        "postfix_expression",
        "command_name",
        "brace_expression",
        "number",
        "word",
    }
)


def _step(
    state: _State, parent: Node, child: Node, hole: int, source: bytes, facts: _Facts
) -> None:
    """Apply what `parent` does to the text of its `child` on the way to the hole."""
    kind = parent.type
    if kind in _TRANSPARENT:
        return
    handler = _STEPS.get(kind)
    if handler is None:
        state.mark(
            Role.UNKNOWN,
            f"inside `{kind}`, a place of the bash grammar the engine does not classify",
        )
        return
    handler(state, parent, child, hole, source, facts)


def _step_compound(state: _State, parent: Node, child: Node, *_: object) -> None:
    if _is_double_paren(parent):
        state.mark(Role.ARITHMETIC, "inside `(( ))`, which bash evaluates as arithmetic")


def _step_arithmetic(state: _State, *_: object) -> None:
    state.mark(Role.ARITHMETIC, "inside `$(( ))`, which bash evaluates as arithmetic")


def _step_c_for(state: _State, parent: Node, child: Node, *_: object) -> None:
    if child.type not in ("do_group", "compound_statement"):
        state.mark(Role.ARITHMETIC, "in the header of `for (( ))`, evaluated as arithmetic")


def _step_subscript(state: _State, parent: Node, child: Node, *_: object) -> None:
    if child.type != "variable_name":
        state.mark(Role.ARITHMETIC, "an array subscript, which bash evaluates as arithmetic")


def _step_expansion(state: _State, *_: object) -> None:
    state.mark(
        Role.UNKNOWN,
        "inside a bash ${...} expansion, where the value could be a "
        "pattern, an offset or a name; assign the value to a variable first",
    )


def _step_substitution(state: _State, parent: Node, child: Node, *_: object) -> None:
    if parent.child_count and parent.children[0].type == "`":
        state.context = Context.BACKTICK
        return
    if state.context is Context.HEREDOC:
        state.in_heredoc = True
    state.quoting(Context.UNQUOTED)


def _step_string(state: _State, *_: object) -> None:
    state.quoting(Context.DOUBLE)


def _step_array(
    state: _State, parent: Node, child: Node, hole: int, source: bytes, facts: _Facts
) -> None:
    """`a=([k]=v)`: the `[k]` of an element is a subscript even where the grammar sees words."""
    text = source[child.start_byte : child.end_byte]
    if text.startswith(b"["):
        close = text.find(b"]=")
        if close < 0 or hole < child.start_byte + close:
            state.mark(Role.ARITHMETIC, "an array subscript, which bash evaluates as arithmetic")


def _step_variable_assignment(
    state: _State, parent: Node, child: Node, hole: int, source: bytes, facts: _Facts
) -> None:
    target = parent.child_by_field_name("name")
    if target is None or child.type in ("variable_name", "subscript"):
        return
    name = _text(target).split("[", 1)[0]
    program = program_variable(name)
    if program is not None:
        state.mark(Role.CODE, f"a value assigned to `{name}`, {program}")
    elif name in facts.integer_names:
        state.mark(
            Role.ARITHMETIC,
            f"a value assigned to `{name}`, which this script declares "
            "integer (`declare -i`): bash evaluates it as arithmetic",
        )
    elif name in facts.nameref_names:
        state.mark(Role.NAME, f"a value assigned to `{name}`, a name reference (`declare -n`)")


def _step_declaration(
    state: _State, parent: Node, child: Node, hole: int, source: bytes, facts: _Facts
) -> None:
    words = _words(parent)
    integer, nameref, _unknown = declare_flags(words)
    keyword = words[0]
    if child.type == "variable_assignment":
        if integer:
            state.mark(Role.ARITHMETIC, f"an argument of `{keyword} -i`, evaluated as arithmetic")
        elif nameref:
            state.mark(Role.NAME, f"the target of `{keyword} -n`, a variable name")
        elif not _new_scalar(words, child, source):
            _compound_text(state, keyword or "declare", child, hole, source)
        return
    state.mark(Role.NAME, f"a name (or option) for `{keyword}`")


_LOCAL_UNSURE = re.compile(r"localvar_inherit|\beval\b|\bsource\b|(?:^|[\s;&|(!{])\.[ \t]")


def _no_array_flag(words: Sequence[str | None]) -> bool:
    return not any(w is not None and w[:1] in "-+" and set(w[1:]) & set("aAn") for w in words)


def _plain_use(name: Node) -> bool:
    """A variable name read plainly (`$x`, `${x}`, `${x:-d}`: no subscript, no `${x=...}`) or
    assigned a non-array value by a `local` without an array flag."""
    parent = name.parent
    if parent is None:
        return False
    if parent.type == "simple_expansion":
        return True
    if parent.type == "expansion":
        return not any(
            c.type == "subscript" or (not c.is_named and "=" in c.type) for c in parent.children
        )
    declaration = parent.parent
    if parent.type != "variable_assignment" or declaration is None:
        return False
    value = parent.child_by_field_name("value")
    words = _words(declaration) if declaration.type == "declaration_command" else []
    return (
        words[:1] == ["local"]
        and _no_array_flag(words)
        and (value is None or value.type != "array")
    )


def _new_scalar(words: Sequence[str | None], assignment: Node, source: bytes) -> bool:
    """Whether `local NAME=...` surely makes a new variable that is no array, whose value bash
    therefore never parses as `(...)`: bash does so only for an array — one declared `-a`/`-A`
    here, a local one of the same function already (`local -a x` before, or `x[1]=` on an
    earlier pass of a loop), or a caller's with `shopt -s localvar_inherit`.

    Provable when the script names NAME nowhere but in such `local` assignments (no array
    flag, no `(...)` value) and plain reads (`$x`, `${x}`, `${x:-d}`), and runs no code the
    engine cannot read (`eval`, `source`, `.`), which could name it out of sight.
    """
    if words[:1] != ["local"] or None in words[1:] or not _no_array_flag(words[1:]):
        return False
    target = assignment.child_by_field_name("name")
    root = assignment
    while root.parent is not None:
        root = root.parent
    text = source.decode("utf-8", "surrogatepass")
    if target is None or target.type != "variable_name" or _LOCAL_UNSURE.search(text):
        return False
    name = _text(target)
    seen = sum(
        1
        for node in _walk(root)
        if node.type == "variable_name" and _text(node) == name and _plain_use(node)
    )
    return seen == len(re.findall(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text))


def _compound_text(state: _State, keyword: str, assignment: Node, hole: int, source: bytes) -> None:
    """`declare -a a="(...)"`: given an array, `declare` and its kin parse a value that starts
    with `(` and ends with `)` as an array assignment, expanding it again (`($(cmd))` runs
    cmd), even quoted.

    A hole inside such a written `(` is code; a hole starting the value refuses values starting
    with `(` (`Position.compound_of`) — and ending with `)` when the value ends the word too.
    """
    value = assignment.child_by_field_name("value")
    if value is None or value.type == "array" or hole < value.start_byte:
        return
    before = _unquoted(source[value.start_byte : hole])
    expansion = _HOLE.match(source, hole)
    after = _unquoted(source[expansion.end() if expansion else hole : value.end_byte])
    if before.startswith("("):
        state.mark(
            Role.CODE,
            f"inside a `{keyword}` value written as `(...)`, which bash parses as an array "
            "assignment and expands again",
        )
    elif before == "" and (after == "" or after.endswith(")") or "$" in after):
        state.compound_of = keyword
        state.compound_tail = after == ""


_HOLE = re.compile(rb"[ \t]*\$(?:\{[^}]*\}?|[A-Za-z_][A-Za-z0-9_]*|.)?", re.DOTALL)
"""The expansion starting at a hole: a placeholder `${...}`, or the `$NAME` of a variable whose
flow is followed (tree-sitter may start it at a blank before the `$`)."""


def _unquoted(text: bytes) -> str:
    """Literal text of a word without its quote characters (`"`, `'`, `$'`)."""
    return re.sub(r"\$?['\"]", "", text.decode("utf-8", "surrogatepass"))


SECOND_EXPANSION = "which bash expands a second time"
"""Said of a position where a variable holding the value would be expanded again too."""


def _step_redirect(state: _State, parent: Node, child: Node, *_: object) -> None:
    """`>&WORD`, `<&WORD`: a WORD that is no file descriptor number is a file name to bash,
    which it then expands a second time (`>&'a[$(cmd)]'` runs cmd), quoted or not."""
    duplicates = any(c.type in (">&", "<&") for c in parent.children)
    if duplicates and child.is_named and child.type != "file_descriptor":
        state.mark(
            Role.UNKNOWN,
            f"the target of `{next(c.type for c in parent.children if c.type in ('>&', '<&'))}`, "
            f"{SECOND_EXPANSION} when it is not a file descriptor number (a variable holding "
            "the value too); write `>` (or `&>`) for a file",
        )


def _step_unset(state: _State, *_: object) -> None:
    state.mark(Role.NAME, "an argument of `unset`, a variable name")


def _step_test(
    state: _State, parent: Node, child: Node, hole: int, source: bytes, facts: _Facts
) -> None:
    state.test = _bracket(parent)
    if state.test != "[":
        return  # `[[ ]]` is bash syntax: a value there can never become an operator
    words = _test_words(parent)
    inside = (i for i, (node, _) in enumerate(words) if node.start_byte <= hole < node.end_byte)
    at = next(inside, None)
    if at is None:
        state.mark(Role.UNKNOWN, "a part of a `[ ]` test the engine does not classify")
        return
    verdict = test_role([word for _, word in words], at)
    state.mark(verdict.role, verdict.why)


_TEST_EXPRESSIONS = frozenset(
    {"binary_expression", "unary_expression", "parenthesized_expression", "negated_expression"}
)


def _test_words(test: Node) -> list[tuple[Node, str | None]]:
    """The words bash gives the `[` command (without `[` and `]`), each with its node.

    The grammar reads them as an expression; `test` only sees words, operators included.
    """
    words: list[tuple[Node, str | None]] = []
    stack = list(reversed(test.children[1:-1] if test.child_count > 1 else []))
    while stack:
        node = stack.pop()
        if node.type in _TEST_EXPRESSIONS:
            stack.extend(reversed(node.children))
        elif not node.is_named or node.type == "test_operator":
            words.append((node, _text(node)))
        else:
            words.append((node, _literal(node)))
    return words


def _step_binary(state: _State, parent: Node, child: Node, *_: object) -> None:
    operator = parent.child_by_field_name("operator")
    if not state.test or operator is None:
        return  # arithmetic binary expressions: their context is already marked
    text = _text(operator)
    if state.test == "[[" and text in _ARITHMETIC_TESTS:
        state.mark(Role.ARITHMETIC, f"an operand of `[[ {text} ]]`, evaluated as arithmetic")


def _step_unary(state: _State, parent: Node, child: Node, *_: object) -> None:
    operator = parent.child_by_field_name("operator")
    if state.test and operator is not None and _text(operator) in ("-v", "-R"):
        state.mark(
            Role.NAME,
            f"the operand of `{_text(operator)}`, a variable name whose "
            "subscript bash evaluates as arithmetic",
        )


def _step_command(
    state: _State, parent: Node, child: Node, hole: int, source: bytes, facts: _Facts
) -> None:
    state.option_of, state.opened_by = None, ""  # the innermost command decides
    if child.type in ("variable_assignment", "file_redirect", "herestring_redirect"):
        return
    words = _command_words(parent)
    name = parent.child_by_field_name("name")
    if words and name is not None and name.start_byte in facts.brackets:
        words[0] = "["
    functions = frozenset(facts.functions)
    if child.type == "command_name":
        verdict = argument_role(words, 0) if words else Verdict(Role.UNKNOWN, "no command name")
    else:
        arguments = _arguments(parent)
        index = next((i for i, a in enumerate(arguments) if a.id == child.id), None)
        if index is None:
            state.mark(
                Role.UNKNOWN, f"a part `{child.type}` of a command the engine does not classify"
            )
            return
        if (words[0] or "").rsplit("/", 1)[-1] == "git" and words[index + 1] is None:
            words[index + 1] = _setting_start(child, hole, source)  # `-c user.name=${...}`
        verdict = argument_role(words, index + 1, functions)
        if _starts_word(child, hole, source) and words[0] not in functions:
            state.option_of = _option_reader(words, index + 1)
        option = _option_prefix(child, hole, source)
        if option is not None:  # `-e${...}`: the value is the argument of the option `-e`
            state.mark(*_as_option(words, index + 1, option, functions))
    state.mark(verdict.role, verdict.why)
    state.function = state.function or verdict.function
    state.opened_by = verdict.opened_by
    if facts.exported_function and any(
        w is not None and program(w.rsplit("/", 1)[-1]) in SHELLS for w in words
    ):
        state.mark(
            Role.UNKNOWN,
            f"passed to a shell that inherits the functions this script exports "
            f"({facts.exported_function}): ll-loop does not follow values into functions",
        )


_STOPS_AT_OPERAND = frozenset({"echo", "printf"})
"""Builtins that read options only before their first operand (no GNU-style permutation)."""
_NO_OPTIONS = frozenset({"test", "[", "[["})
"""Their words are operands and operators by position, which the test rules classify."""
_CODE_THEN_DATA = frozenset({"bash", "sh", "zsh", "dash", "ksh", "python", "python3"})
"""After `-c CODE` their words are the code's data ($1, sys.argv), not options."""


_MAY_BE_EMPTY = re.compile(rb"\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]")
"""Expansions that may expand to nothing: another value (`${a}${b}` with `a` empty), `$x`."""


def _starts_word(word: Node, hole: int, source: bytes) -> bool:
    """The hole may be the first thing of the word's text: only quotes, or expansions that may
    be empty (an earlier value, a variable), before it."""
    before = _MAY_BE_EMPTY.sub(b"", source[word.start_byte : hole].lstrip(b" \t"))
    return before.strip(b"\"'$") == b""


def _setting_start(word: Node, hole: int, source: bytes) -> str | None:
    """`KEY=` when the hole's word starts with that literal text (`user.name="${...}`), which
    names the git setting the value is given to; else None."""
    text = _unquoted(source[word.start_byte : hole])
    return text if re.fullmatch(r"[A-Za-z0-9_.-]+=", text) else None


def _option_prefix(word: Node, hole: int, source: bytes) -> str | None:
    """The literal option a hole's word starts with (`-e` of `-e"${...}"`), or None.

    The word is not literal, so the command tables cannot see that it is an option: `sed
    -es/a/b/ -e"${...}"` took the value for a file name, and sed ran it as a second script.
    """
    before = _MAY_BE_EMPTY.sub(b"", source[word.start_byte : hole])
    text = before.decode("utf-8", "surrogatepass").replace('"', "").replace("'", "").lstrip(" \t")
    if not text.startswith("-"):
        return None
    return text + "?" if text in ("-", "--") else text  # `-`, `--`: no end of the options


def _as_option(
    words: list[str | None], index: int, option: str, functions: frozenset[str]
) -> tuple[Role, str]:
    """What the command does with the word at `index` when it is the option `option`."""
    verdict = argument_role([*words[:index], option, *words[index + 1 :]], index, functions)
    if verdict.role is Role.VALUE:
        return verdict.role, ""
    return verdict.role, f"{verdict.why} (the value is part of the option word `{option}...`)"


def _option_reader(words: Sequence[str | None], index: int) -> str | None:
    """The program that could read `words[index]` as an option (`?` if its name is unknown),
    looking through wrappers (`env`, `sudo`, `timeout`, ...); None after a literal `--`."""
    start = 0
    for _ in range(8):
        name = words[start]
        base = None if name is None else name.rsplit("/", 1)[-1]
        operands = WRAPPER_OPERANDS.get(base or "")
        if operands is None:
            break
        i = start + 1
        while i < index and _wrapper_option(words[i], base):
            i += 1
            if words[i - 1] == "--":
                break
            if words[i - 1] in WRAPPER_ARGUMENTS.get(base or "", ()):
                i += 1  # `sudo -u USER`, `env -u NAME`: the argument is no command name
        if i + operands >= index:  # one of the wrapper's own options or operands
            return None if "--" in words[start + 1 : index] else base
        start = i + operands
    return _options_open(words[start : index + 1])


def _wrapper_option(word: str | None, wrapper: str | None) -> bool:
    if word is None or word == "-":
        return False
    return word.startswith("-") or (wrapper == "env" and "=" in word)


def _options_open(words: Sequence[str | None]) -> str | None:
    """The command `words[0]` when it could still read the last word as an option."""
    name = words[0]
    base = "?" if name is None else name.rsplit("/", 1)[-1]
    before = words[1:-1]
    if "--" in before or base in _NO_OPTIONS:
        return None
    if base in _STOPS_AT_OPERAND and any(w is not None and not w.startswith("-") for w in before):
        return None
    if base in _CODE_THEN_DATA and _after_code(base, before):
        return None
    return base


def _after_code(base: str, before: Sequence[str | None]) -> bool:
    """A `-c` option (for a shell also `-ec`, ...) and then its code word came before."""
    shell = not base.startswith("python")
    return any(
        word == "-c" or (shell and word[:1] == "-" and word[1:2] != "-" and "c" in word)
        for word in before[:-1]
        if word is not None
    )


def _step_function(state: _State, parent: Node, child: Node, *_: object) -> None:
    if parent.child_by_field_name("name") == child:
        state.mark(Role.NAME, "the name of a function")


def _step_heredoc(
    state: _State, parent: Node, child: Node, hole: int, source: bytes, facts: _Facts
) -> None:
    if child.type == "heredoc_body":
        quoted = any(_is_quoted_start(c) for c in parent.children if c.type == "heredoc_start")
        state.quoting(Context.HEREDOC_LITERAL if quoted else Context.HEREDOC)
    elif child.type in ("heredoc_start", "heredoc_end"):
        state.context = Context.DELIMITER
        state.mark(Role.UNKNOWN, "the here-document delimiter")
    else:
        state.mark(Role.UNKNOWN, "a part of a here-document redirection")


_STEPS: dict[str, Callable[..., None]] = {
    "compound_statement": _step_compound,
    "arithmetic_expansion": _step_arithmetic,
    "c_style_for_statement": _step_c_for,
    "subscript": _step_subscript,
    "expansion": _step_expansion,
    "command_substitution": _step_substitution,
    "process_substitution": _step_substitution,
    "string": _step_string,
    "translated_string": _step_string,
    "array": _step_array,
    "variable_assignment": _step_variable_assignment,
    "declaration_command": _step_declaration,
    "file_redirect": _step_redirect,
    "unset_command": _step_unset,
    "test_command": _step_test,
    "binary_expression": _step_binary,
    "unary_expression": _step_unary,
    "command": _step_command,
    "function_definition": _step_function,
    "heredoc_redirect": _step_heredoc,
}


def _literal_hole(state: _State, node: Node, start: int, end: int, source: bytes) -> None:
    """A hole the grammar did not parse as an expansion: it sits in literal text."""
    kind = node.type
    if kind == "comment":
        state.mark(
            Role.COMMENT,
            "a comment, which a newline in the value would end (the rest of the value would run)",
        )
    elif kind == "raw_string":
        state.quoting(Context.SINGLE)
    elif kind == "ansi_c_string":
        state.quoting(Context.ANSI_C)
    elif kind == "heredoc_body" and state.context is Context.HEREDOC_LITERAL:
        return
    elif kind == "regex" and node.start_byte == start and node.end_byte == end:
        state.quoting(Context.REGEX)  # the whole regex: quoted, it matches literally
    elif kind == "regex":
        state.mark(
            Role.UNKNOWN,
            "inside a regular expression; assign the value to a variable "
            "first: re=${...}; [[ $x =~ $re ]]",
        )
    elif start > 0 and source[start - 1 : start] == b"\\":
        state.context = Context.ESCAPED
        state.mark(
            Role.UNKNOWN,
            "right after a backslash, which would change the value's first "
            "character (remove it, or write $${ for a literal ${)",
        )
    else:
        state.mark(Role.UNKNOWN, f"inside `{kind}`, which the engine cannot quote for")


# --- rules over the whole script -------------------------------------------------------------

# Bash's own variables that evaluate the text they are given: an assignment to these integer
# variables is arithmetic (`RANDOM='a[$(cmd)]'` runs cmd), and these prompts and start-up files
# are expanded, command substitutions included (PS4 at each `set -x` line, BASH_ENV and ENV when
# a shell starts, MAILPATH's messages in an interactive one, `BASH_FUNC_f%%` imported as a
# function by a child bash).
_EVALUATING_VARIABLES = {
    **dict.fromkeys(
        ("RANDOM", "SRANDOM", "OPTIND", "SECONDS", "HISTCMD", "LINENO", "BASHPID"),
        (Role.ARITHMETIC, "which bash evaluates as arithmetic when it is assigned"),
    ),
    **dict.fromkeys(
        ("PS0", "PS1", "PS2", "PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV", "MAILPATH"),
        (Role.CODE, "whose text bash expands, command substitutions included"),
    ),
}
_EVALUATING_NAME = re.compile("|".join(_EVALUATING_VARIABLES) + "|BASH_FUNC_")
_WRITTEN_WORD = re.compile(
    r"(?:-[A-Za-z]*?)?(" + "|".join(_EVALUATING_VARIABLES) + r"|BASH_FUNC_[^=]*)(?:[=\[].*)?",
    re.DOTALL,
)


# Environment variables whose value other programs run as a command or load as code: a command
# line (`GIT_SSH_COMMAND`, `PAGER`, `EDITOR`, `LESSOPEN`: git, man, less run it with `sh -c`), a
# program or options naming code (`GIT_SSH`, `NODE_OPTIONS=--require m`, `PERL5OPT=-Mm`), or
# where libraries, modules, start-up files and configuration that names commands are looked for
# (`LD_PRELOAD`, `PYTHONPATH`, `PATH`, `HOME`'s `.gitconfig`: a file someone else wrote runs).
# A value assigned to one, before a command, with `export`/`declare -x`/`local`, or alone (the
# variable may already be exported), is code (`type: command` may go there); `read`/`printf
# -v`/`mapfile`/`for` writing one make the script take no text anywhere, as a write to one of
# `_EVALUATING_VARIABLES` does.
_RUNS_IT = "whose text a program runs as a command"
_LOADS_IT = "which names code a program loads and runs"
RUN_AS_IS = (_RUNS_IT, _LOADS_IT, "that git may run as a command", RUNS_COMMAND, LOADS_CODE)
"""Said of positions whose text is run or loaded itself, with no slot for data beside it."""
PROGRAM_VARIABLES: dict[str, str] = {
    **dict.fromkeys(
        (
            "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_PAGER",
            "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "GIT_CONFIG_PARAMETERS",
            "SSH_ASKPASS", "SUDO_ASKPASS", "PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR",
            "VISUAL", "SYSTEMD_EDITOR", "BROWSER", "LESSOPEN", "LESSCLOSE", "LESS", "SHELL",
            "FCEDIT", "SUDO_EDITOR", "RSYNC_RSH", "RSYNC_CONNECT_PROG",
        ),
        _RUNS_IT,
    ),
    **dict.fromkeys(
        (
            "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GCONV_PATH", "GIT_EXEC_PATH",
            "GIT_TEMPLATE_DIR", "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONBREAKPOINT",
            "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT",
            "RUBYLIB", "LUA_INIT", "LUA_PATH", "LUA_CPATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
            "JDK_JAVA_OPTIONS", "CLASSPATH", "PHPRC", "PHP_INI_SCAN_DIR", "R_PROFILE",
            "R_PROFILE_USER", "TCLLIBPATH", "ZDOTDIR", "BASH_LOADABLES_PATH", "CDPATH", "HOME",
            "XDG_CONFIG_HOME", "PYTHONUSERBASE", "TAR_OPTIONS", "MAKEFLAGS", "MFLAGS", "MAKEFILES",
        ),
        _LOADS_IT,
    ),
}  # fmt: skip
_PROGRAM_PREFIXES = ("GIT_CONFIG_",)  # GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=...


def program_variable(name: str) -> str | None:
    """Why a value assigned to the environment variable `name` is code, or None."""
    found = PROGRAM_VARIABLES.get(name)
    if found is None and name.startswith(_PROGRAM_PREFIXES):
        found = _RUNS_IT
    return found


_NAME_WRITERS = frozenset({"read", "printf", "mapfile", "readarray", "getopts"})
_WRITTEN_NAME = re.compile(r"(?:-[A-Za-z]*?)?([A-Za-z_][A-Za-z0-9_]*)(?:\[.*)?", re.DOTALL)


def _invoked_words(node: Node) -> list[str | None]:
    """A command's words without a leading `builtin` or `command` (and its `-p`, `--`), which
    run the rest as written (`command set -o posix`, `command -p set -k` is `set -k`)."""
    words = _command_words(node)
    while words and words[0] in ("builtin", "command"):
        words = words[1:]
        while words and words[0] in ("-p", "--"):
            words = words[1:]
    return words


def _program_variable_read(root: Node, source: bytes) -> tuple[Role, str] | None:
    """The first `read`, `printf -v`, `mapfile`, `getopts` or `for` that writes one of
    `PROGRAM_VARIABLES`, as (role, why): the text it takes may hold a value."""
    for node in _walk(root):
        names: list[str | None] = []
        if node.type == "for_statement":
            variable = node.child_by_field_name("variable")
            names = [None if variable is None else _text(variable)]
        elif node.type == "command":
            words = _invoked_words(node)
            if words and words[0] in _NAME_WRITERS:
                names = words[1:]
        for word in names:
            match = None if word is None else _WRITTEN_NAME.fullmatch(word)
            why = None if match is None else program_variable(match.group(1))
            if match is not None and why is not None:
                line, _ = _point(source, node.start_byte)
                return Role.CODE, f"`{match.group(1)}` (line {line}), {why}"
    return None


def _evaluating_write(root: Node, source: bytes, text: str) -> tuple[Role, str] | None:
    """The first place the script writes one of `_EVALUATING_VARIABLES` (an assignment, also
    in a declaration or before a command, a `for`/`select` variable, or a command's argument
    word such as `read PS4`, `printf -v OPTIND`, `env BASH_ENV=...`), as (role, why).

    Like a `declare -i`, such a variable evaluates whatever reaches it, by any path, so the
    script admits only integers (or, for code, a `type: command` value) anywhere. Reading one
    (`$RANDOM`, `$((OPTIND - 1))`) is no write, nor is assigning a written number (`OPTIND=1`).
    """
    if not _EVALUATING_NAME.search(text):
        return _program_variable_read(root, source)
    for node in _walk(root):
        name: str | None = None
        if node.type == "variable_assignment":
            target, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if target is not None and "[" not in _text(target):
                literal = "" if value is None else _literal(value)
                written = None if literal is None else "=" + literal
                name = _text(target) if not _inert(_text(target), written) else None
            elif target is not None:
                name = _text(target).split("[", 1)[0]
        elif node.type == "for_statement":
            variable = node.child_by_field_name("variable")
            name = None if variable is None else _text(variable)
        elif node.type == "command":
            words = _command_words(node)[1:]
            name = next((w for w in map(_written_name, words) if w is not None), None)
        elif node.type == "declaration_command":  # a bare name (`export PS4`) writes nothing
            words = [w for w in _words(node)[1:] if w is None or "=" in w]
            name = next((w for w in map(_written_name, words) if w is not None), None)
        if name is None:
            continue
        found = _EVALUATING_VARIABLES.get(name)
        if found is None and name.startswith("BASH_FUNC_"):
            found = (Role.CODE, "which a child bash imports as a function")
        if found is not None:
            line, _ = _point(source, node.start_byte)
            return found[0], f"`{name}` (line {line}), {found[1]}"
    return _program_variable_read(root, source)


_RUNS_TEXT = frozenset({"eval", "trap"})


def _inline_code_facts(root: Node, source: bytes, facts: _Facts, depth: int = 0) -> None:
    """Add to `facts` what the code the script runs from its own literal text does: `eval
    'f() { eval "$1"; }'` defines `f` as surely as writing it out (and may turn on aliases or
    write `PS4`); `source <(...)`, `. /dev/stdin` and a `command_not_found_handle` run code the
    engine cannot read, which could define any function: `facts.unseen_code`."""
    if "command_not_found_handle" in facts.functions and not facts.unseen_code:
        facts.unseen_code = "a `command_not_found_handle` function"
    text = source.decode("utf-8", "surrogatepass")
    if not any(word in text for word in ("eval", "trap", "source", ".")):
        return
    for node in _captures(root, "command"):
        words = _invoked_words(node)
        line, _ = _point(source, node.start_byte)
        if words[:1] in (["source"], ["."]) and (
            len(words) < 2 or words[1] is None or _READS_INPUT.search(words[1])
        ):
            facts.unseen_code = facts.unseen_code or f"`{words[0]}` at line {line}"
        if words[:1] == ["trap"]:
            words = words[:2]  # the handler; the rest are signals
        if not words or words[0] not in _RUNS_TEXT or None in words or depth >= 3:
            continue
        code = " ".join(w for w in words[1:] if w is not None).encode("utf-8", "surrogatepass")
        inner, _ = _parse(code)
        if inner.has_error:
            continue
        where = f" (in the `{words[0]}` at line {line})"
        for found in _walk(inner):
            name = found.child_by_field_name("name")
            if found.type == "function_definition" and name is not None:
                facts.functions.add(_text(name))
        inner_text = code.decode("utf-8", "surrogatepass")
        if not facts.alias_expansion:
            aliases = _alias_expansion(inner, code, inner_text)
            facts.alias_expansion = aliases + where if aliases else ""
        if not facts.history_expansion:  # `eval 'set -H'` turns it on as surely
            history = _history_expansion(inner, code, inner_text)
            facts.history_expansion = history + where if history else ""
        if not facts.keyword_assignments:
            keyword = _keyword_assignments(inner, code, inner_text)
            facts.keyword_assignments = keyword + where if keyword else ""
        if not facts.unknown_option:
            option = _keyword_assignments(inner, code, inner_text, unknown=True)
            facts.unknown_option = option + where if option else ""
        if facts.evaluating_write is None:
            written = _evaluating_write(inner, code, inner_text)
            facts.evaluating_write = (written[0], written[1] + where) if written else None
        _inline_code_facts(inner, code, facts, depth + 1)


_READS_INPUT = re.compile(r"^/dev/stdin$|^/dev/fd/|^/proc/[^/]+/fd/")


def _alias_expansion(root: Node, source: bytes, text: str) -> str:
    """Where the script may turn on alias expansion (`shopt -s expand_aliases`; POSIX mode,
    which expands aliases too: `set -o posix`, `POSIXLY_CORRECT`; `shopt`/`set -o` with words
    known only at run time), or "".

    An alias is a command name standing for other text (`alias e=eval`, then `e ${...}`): with
    expansion on, any command of the script may be one, which the grammar cannot see.
    """
    if "POSIXLY_CORRECT" in text:
        line = text[: text.index("POSIXLY_CORRECT")].count("\n") + 1
        return f"`POSIXLY_CORRECT` at line {line}"
    if "shopt" not in text and "posix" not in text and "set" not in text:
        return ""
    for node in _captures(root, "command"):
        words = _invoked_words(node)
        if words[:1] == ["shopt"]:
            sets = any(w is None or (w[:1] == "-" and "s" in w) for w in words[1:])
            on = sets and any(w in (None, "expand_aliases", "posix") for w in words[1:])
        elif words[:1] == ["set"]:  # `set -o posix` or `-o` with a word; `+o posix` is off
            on = any(
                w in (None, "posix") and before is not None and re.fullmatch(r"-[a-zA-Z]*o", before)
                for before, w in itertools.pairwise(words)
            )
        else:
            continue
        if on:
            line, _ = _point(source, node.start_byte)
            return f"`{words[0]}` at line {line}"
    return ""


def _history_expansion(root: Node, source: bytes, text: str) -> str:
    """Where the script may turn on history expansion (`set -H`, `set -o histexpand`, `shopt
    -so histexpand`, which sets the options of `set -o`), or "".

    Bash then replaces `!!`, `!-2`, `!?text?` in each line it reads — inside a value's double
    quotes too — with earlier lines of the script, values and quotes included, before it parses
    the line: a value `!!` after `echo 'a"; cmd; "'` ends the quotes around it and runs cmd.
    """
    if "H" not in text and "histexpand" not in text:
        return ""
    for node in _captures(root, "command"):
        words = _invoked_words(node)
        if words[:1] == ["shopt"]:
            flags = "".join(w[1:] for w in words[1:] if w is not None and w[:1] == "-")
            on = "s" in flags and "o" in flags and "histexpand" in words[1:]
        elif words[:1] == ["set"]:
            on = any(
                (word == "histexpand" and before is not None and before[:1] == "-")
                or (word is not None and re.fullmatch(r"-[a-zA-Z]*H[a-zA-Z]*", word))
                for before, word in itertools.pairwise(words)
            )
        else:
            continue
        if on:
            line, _ = _point(source, node.start_byte)
            return f"`{' '.join(w or '…' for w in words[:3])}` at line {line}"
    return ""


def _exec_into_program(root: Node, source: bytes, text: str, functions: frozenset[str]) -> str:
    """Where `exec` without a command sends one of the script's output descriptors to a
    program that may run what it reads (`exec > >(sh)`, `exec 3> >(bash)`), or "": every
    later `echo ${...}` (`>&3`) is then written into it."""
    if "exec" not in text:
        return ""
    for node in _captures(root, "command"):
        statement = node.parent
        if (
            statement is None
            or statement.type != "redirected_statement"
            or statement.child_by_field_name("body") != node
            or not _exec_alone(_invoked_words(node))
        ):
            continue
        readers = (_program_reader(n, functions) for n in _output_readers(statement))
        found = next(filter(None, readers), None)
        if found is not None:
            line, _ = _point(source, node.start_byte)
            return f"`exec` at line {line} writes its output to `{found}`"
    return ""


def _coproc_reader(root: Node, source: bytes, text: str, functions: frozenset[str]) -> str:
    """Where `coproc` starts a program that may run what it reads (`coproc sh`, `coproc W {
    bash; }`: a compound command is not followed, fail closed), or "": what the script
    writes to its descriptor (`echo ${...} >&"${COPROC[1]}"`) is then that program's input."""
    if "coproc" not in text:
        return ""
    for node in _captures(root, "command"):
        words = _invoked_words(node)
        if words[:1] != ["coproc"]:
            continue
        rest = words[1:]
        compound = any(w is None or w[:1] in ("{", "(") for w in rest)
        if compound or not rest or runs_its_input(rest, functions):
            line, _ = _point(source, node.start_byte)
            started = "a compound command" if compound or not rest else f"`{rest[0]}`"
            return f"`coproc` at line {line} runs {started} as a coprocess"
    return ""


def _exec_alone(words: list[str | None]) -> bool:
    """`exec` with no command, only redirections: `exec > F`, `exec {fd}> F` (the grammar
    reads bash's `{fd}`, the descriptor it allocates, as a word of the command)."""
    return words[:1] == ["exec"] and all(
        w is not None and re.fullmatch(r"\{[A-Za-z_][A-Za-z0-9_]*\}", w) for w in words[1:]
    )


def _keyword_assignments(root: Node, source: bytes, text: str, unknown: bool = False) -> str:
    """Where the script turns on `set -k` (`set -o keyword`, `shopt -so keyword`), or "".

    Bash then takes every argument of a command that looks like an assignment for one in the
    command's environment, as `env` would: `git ls-remote URL GIT_SSH_COMMAND=X` runs X, and
    `bash -c true BASH_ENV=F` runs the file F. `unknown`: where instead it sets an option
    known only at run time (`set -$f`, `set -o "$o"`), which may be that one or any other."""
    if "set" not in text and "shopt" not in text:
        return ""
    names = (None,) if unknown else ("keyword",)
    for node in _captures(root, "command"):
        words = _invoked_words(node)
        if words[:1] == ["shopt"]:
            flags = "".join(w[1:] for w in words[1:] if w is not None and w[:1] == "-")
            on = "s" in flags and "o" in flags and any(w in names for w in words[1:])
        elif words[:1] == ["set"]:
            options = list(itertools.takewhile(lambda w: w not in ("--", "-"), words))
            on = any(
                (word in names and before is not None
                 and re.fullmatch(r"-[a-zA-Z]*o", before) is not None)
                or (not unknown and word is not None
                    and re.fullmatch(r"-[a-zA-Z]*k[a-zA-Z]*", word) is not None)
                or (unknown and word is None and before == "set")
                for before, word in itertools.pairwise(options)
            )  # fmt: skip
        else:
            continue
        if on:
            line, _ = _point(source, node.start_byte)
            return f"`{' '.join(w or '…' for w in words[:3])}` at line {line}"
    return ""


def _written_name(word: str | None) -> str | None:
    """The evaluating variable a command's word may write (`PS4`, `-vOPTIND`, `BASH_ENV=$x`)."""
    match = None if word is None else _WRITTEN_WORD.fullmatch(word)
    if match is None or _inert(match.group(1), match.string[match.end(1) :]):
        return None
    return match.group(1)


def _inert(name: str, written: str | None) -> bool:
    """Whether `written` (`=` and the literal value written in the script; None when it is not
    literal) assigned to the evaluating variable `name` carries no value: a whole number for an
    arithmetic one (`OPTIND=1`), text without `$` or a backtick for one whose text bash expands
    or runs (`ENV=prod`, `PS4='+ '`: the script's own text, which expands nothing)."""
    if written is None or not written.startswith("="):
        return False
    found = _EVALUATING_VARIABLES.get(name)
    if found is not None and found[0] is Role.ARITHMETIC:
        return re.fullmatch(r"=-?[0-9]+", written) is not None
    return "$" not in written and "`" not in written


def _whole_script_rules(
    positions: tuple[Position, ...], spans: list[tuple[int, int]], source: bytes, facts: _Facts
) -> tuple[Position, ...]:
    """Restrict positions by what the rest of the script does, beyond the path to each hole."""
    marks: list[list[tuple[Role, str]]] = [[] for _ in spans]
    for _body, doc in facts.heredocs:
        if not doc.expands:
            continue
        body = source[doc.start : doc.end]
        inside = [k for k, (s, _) in enumerate(spans) if doc.start <= s < doc.end]
        if inside and b"`" in body:
            for k in inside:
                marks[k].append((Role.UNKNOWN, _HEREDOC_BACKTICK_WHY))
        for first, last in _heredoc_arithmetic(body) if inside else []:
            for k in inside:
                if doc.start + first <= spans[k][0] < doc.start + last:
                    marks[k].append((Role.ARITHMETIC, _HEREDOC_ARITHMETIC_WHY))
    for role, why in _script_wide(facts):
        for k, position in enumerate(positions):
            if position.role in (Role.VALUE, Role.COMMENT):
                marks[k].append((role, why))
    return tuple(_restricted(p, m) for p, m in zip(positions, marks, strict=True))


def _script_wide(facts: _Facts) -> list[tuple[Role, str]]:
    """What the script does that restricts every value in it (the role each value gets, why):
    bash may evaluate whatever reaches a variable, a function, an alias or code it runs."""
    found: list[tuple[Role, str]] = []
    if facts.integer_declaration:
        found.append(
            (
                Role.ARITHMETIC,
                "a value in a script that declares an integer variable "
                f"({facts.integer_declaration}): bash evaluates as arithmetic whatever reaches "
                "such a variable — by assignment, `read`, `for`, `printf -v`, `mapfile` or a "
                "file — so only integers can go anywhere in this script",
            )
        )
    if facts.unseen_code:
        found.append(
            (
                Role.UNKNOWN,
                f"a value in a script that runs code the engine cannot read ({facts.unseen_code})"
                ": it could define a function that any command name then calls, with the value "
                "as its argument, so only integers can go anywhere in this script",
            )
        )
    if facts.alias_expansion:
        found.append(
            (
                Role.UNKNOWN,
                "a value in a script that turns on alias expansion "
                f"({facts.alias_expansion}): any command may then stand for other text (`alias "
                "e=eval`), which the engine does not follow, so only integers can go anywhere "
                "in this script",
            )
        )
    if facts.keyword_assignments:
        found.append(
            (
                Role.UNKNOWN,
                "a value in a script that turns on `set -k` "
                f"({facts.keyword_assignments}): every `NAME=value` word of a command is then "
                "an assignment in its environment (`git ls-remote URL GIT_SSH_COMMAND=...` runs "
                "it), so only integers can go anywhere in this script",
            )
        )
    if facts.unknown_option:
        found.append(
            (
                Role.UNKNOWN,
                "a value in a script that sets a shell option known only when it runs "
                f"({facts.unknown_option}): it may turn on any of them — `set -k`, which makes "
                "every `NAME=value` word of a command an assignment in its environment, `set "
                "-H`, which rewrites lines that hold `!!`, or another — so only integers can go "
                "anywhere in this script",
            )
        )
    if facts.exec_into_program:
        found.append(
            (
                Role.UNKNOWN,
                f"a value in a script where {facts.exec_into_program}, a program that may run "
                "what it reads: what the script writes after it is that program's input, so "
                "only integers can go anywhere in this script",
            )
        )
    if facts.history_expansion:
        found.append(
            (
                Role.UNKNOWN,
                "a value in a script that turns on history expansion "
                f"({facts.history_expansion}): bash replaces `!!` or `!-2` in a line, inside "
                "double quotes too, with earlier lines of the script before it reads it, so "
                "only integers can go anywhere in this script",
            )
        )
    if facts.evaluating_write is not None:
        role, what = facts.evaluating_write
        found.append(
            (
                role,
                f"a value in a script that writes to {what}: whatever reaches that variable — "
                "by assignment, `read`, `for`, `printf -v` or a file — is evaluated, so text "
                "cannot go anywhere in this script",
            )
        )
    return found


_HEREDOC_BACKTICK_WHY = (
    "in an unquoted here-document body that holds a backtick, where bash removes a level of "
    "backslashes from the value's escaping; use $(...) instead of backticks, or quote the "
    "delimiter (<<'EOF') for a literal body"
)
_HEREDOC_ARITHMETIC_WHY = (
    "inside `$(( ))` or `$[ ]` in a here-document body, which bash evaluates as arithmetic"
)


def _restricted(position: Position, marks: list[tuple[Role, str]]) -> Position:
    """The position with the most restrictive of `marks` if it is more restrictive."""
    for role, why in marks:
        if role.value > position.role.value:
            position = replace(position, role=role, why=why)
    return position


def _heredoc_arithmetic(body: bytes) -> Iterator[tuple[int, int]]:
    """Spans of `$(( ))` and `$[ ]` in an unquoted here-document body (which the grammar reads
    as text or as `$( (...) )`).

    Brackets are matched by counting; a span holding a quote, a backslash or a backtick,
    where bash's own matching could differ, or never closed, runs to the end of the body.
    """
    i = 0
    while i < len(body):
        if body[i : i + 1] == b"\\":
            i += 2
            continue
        if body.startswith((b"$((", b"$["), i):
            opening, closing = (b"(", b")") if body[i + 1 : i + 2] == b"(" else (b"[", b"]")
            end, depth = i + 1, 0
            while end < len(body):
                byte = body[end : end + 1]
                depth += (byte == opening) - (byte == closing)
                end += 1
                if depth == 0:
                    break
            if depth or re.search(rb"['\"\\`]", body[i:end]):
                end = len(body)
            yield i, end
        i += 1


# --- here-documents and flows ----------------------------------------------------------------


def _is_quoted_start(node: Node) -> bool:
    return any(c in _text(node) for c in "'\"\\")


def _heredoc(node: Node, source: bytes) -> tuple[Node, Heredoc] | None:
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    body = next((c for c in node.children if c.type == "heredoc_body"), None)
    if start is None or body is None:
        return None
    operator = node.children[0].type if node.child_count else "<<"
    delimiter = re.sub(r"""\\(.)|['"]""", lambda m: m.group(1) or "", _text(start))
    in_substitution = False
    parent = node.parent
    while parent is not None:
        if parent.type in ("command_substitution", "process_substitution"):
            in_substitution = True
            break
        parent = parent.parent
    doc = Heredoc(
        body.start_byte,
        body.end_byte,
        delimiter,
        strip_tabs=operator == "<<-",
        expands=not _is_quoted_start(start),
        in_substitution=in_substitution,
    )
    return body, doc


def _heredoc_holes(
    facts: _Facts, spans: list[tuple[int, int]], source: bytes
) -> Iterator[HeredocHoles]:
    """Bodies holding holes, as literal text (decoded) and hole indices, for the final check.

    The body must also be checked after a substitution inside it (`$(cat <<EOF` nested) —
    every heredoc is listed, nested ones too.
    """
    for _body, doc in facts.heredocs:
        inside = [k for k, (s, _) in enumerate(spans) if doc.start <= s < doc.end]
        if not inside:
            continue
        pieces: list[str | int] = []
        cursor = doc.start
        for k in inside:
            s, e = spans[k]
            pieces.append(source[cursor:s].decode("utf-8", "surrogatepass"))
            pieces.append(k)
            cursor = e
        pieces.append(source[cursor : doc.end].decode("utf-8", "surrogatepass"))
        yield HeredocHoles(doc, tuple(pieces))


def _in_substitution(value: Node, start: int, end: int) -> bool:
    """The hole is inside a `$(...)` of the assigned value: the variable gets what a command
    printed, which the engine cannot follow (docs/format.md: the boundary)."""
    node = value.descendant_for_byte_range(start, end)
    while node is not None:
        if node.type in ("command_substitution", "process_substitution"):
            return True
        if node == value:
            return False
        node = node.parent
    return False


_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def _flows(
    root: Node, facts: _Facts, spans: list[tuple[int, int]], source: bytes
) -> Iterator[Flow]:
    """`n=${...}` and then `n` where bash evaluates it: a bare name in arithmetic, `$n` in an
    evaluating position (`eval "$n"`, `printf -v "$n"`), `${!n}`, or `$n` passed to a function
    of the script (role UNKNOWN: its body is not followed)."""
    assigned: dict[str, list[int]] = {}
    for name, value in facts.assignments:
        for k, (s, e) in enumerate(spans):
            if value.start_byte <= s and e <= value.end_byte and not _in_substitution(value, s, e):
                assigned.setdefault(name, []).append(k)
    if not assigned:
        return
    seen: set[tuple[int, str]] = set()

    def flow(name: str, role: Role, why: str, byte: int) -> Iterator[Flow]:
        for k in assigned.get(name, ()):
            if (k, name) not in seen:
                seen.add((k, name))
                yield Flow(k, name, role, why, *_point(source, byte))

    arithmetic = "arithmetic, which bash evaluates"
    for node in facts.arithmetic:
        text = source[node.start_byte : node.end_byte]
        for match in _IDENTIFIER.finditer(text):
            yield from flow(match.group().decode(), Role.ARITHMETIC, arithmetic,
                            node.start_byte + match.start())  # fmt: skip
    for node in _walk(root):
        if node.type not in ("simple_expansion", "expansion"):
            continue
        variable = next((c for c in node.children if c.type == "variable_name"), None)
        if variable is None or _text(variable) not in assigned:
            continue
        if any(c.type == "!" for c in node.children):
            yield from flow(_text(variable), Role.NAME, "`${!name}`, which reads the value as "
                            "a variable name", node.start_byte)  # fmt: skip
            continue
        position = _classify(root, (node.start_byte, node.end_byte), source, facts)
        if position.role in (Role.ARITHMETIC, Role.NAME, Role.CODE):
            yield from flow(_text(variable), position.role, position.why, node.start_byte)
        elif position.function:
            why = f"an argument of `{position.function}`, a function this script defines"
            yield from flow(_text(variable), Role.UNKNOWN, why, node.start_byte)
