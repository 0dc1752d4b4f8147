"""YAML text → plain JSON-like data plus the line/column of every node.

This is the one YAML reader of the engine: loop files, harness task files, issue front matter
and suite files all come through `parse_yaml` (or `read_yaml_file`), so each of them gets the
same protection against alias bombs ("billion laughs"), deep nesting, cycles and tags.

`yaml.safe_load` throws positions away and silently keeps the last of two duplicate keys, so we
compose the node graph (libyaml when available) and build the data ourselves. Plain scalars are
resolved by the YAML 1.2 core schema, not PyYAML's YAML 1.1 rules: only `true`/`false` are
booleans, so `on_terminal: {yes: done}` or `verdicts: [yes, no]` keep their words; `1e3` and
`0o17` are numbers while `1_000`, `0b101` and `1:30` stay strings. Every number must be finite:
`.nan` and `.inf` are refused (F015), as is an integer too large for a float.

Every problem becomes a `Diagnostic`; nothing here raises anything but `YamlProblems`.
"""

from __future__ import annotations

import errno
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from engine.load.project import regular_file_bytes
from engine.model.errors import Diagnostic

MAX_YAML_BYTES = 10 * 1024 * 1024
"""The largest YAML file read: a loop, suite, fragment library or case file is a few KB; one
of 10 MB is a mistake (or an attack) that would cost its size many times over in memory."""

PathKey = tuple[str | int, ...]
Position = tuple[int, int]

_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CoreLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """libyaml's composer with the YAML 1.2 core schema's implicit tags for plain scalars."""


def _core_resolvers() -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    """PyYAML's resolvers minus its YAML 1.1 scalars, plus the YAML 1.2 core ones."""
    tag = "tag:yaml.org,2002:"
    replaced = {tag + name for name in ("bool", "int", "float", "null", "timestamp")}
    table = {
        first: [(t, r) for t, r in found if t not in replaced]
        for first, found in _BaseLoader.yaml_implicit_resolvers.items()
    }
    core = (
        ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
        ("bool", r"true|True|TRUE|false|False|FALSE", list("tTfF")),
        ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", list("-+0123456789")),
        (
            "float",
            r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?(?:\.inf|\.Inf|\.INF)|\.nan|\.NaN|\.NAN",
            list("-+.0123456789"),
        ),
    )
    for name, pattern, firsts in core:
        compiled = re.compile(rf"^(?:{pattern})$")
        for first in firsts:
            table.setdefault(first, []).append((tag + name, compiled))
    return table


_CoreLoader.yaml_implicit_resolvers = _core_resolvers()
_Loader: type[Any] = _CoreLoader

MAX_DEPTH = 64  # real loops nest ~8 deep; deeper is junk, and keeps our recursion bounded
ALIAS_EXPANSION_FACTOR = 10  # alias expansion beyond 10x the distinct nodes is a "billion laughs"
ALIAS_EXPANSION_SLACK = 10_000

_TAG = "tag:yaml.org,2002:"
_BOOL_WORDS = frozenset({"true", "false"})
_KEY_TAGS = frozenset({"str", "int", "float", "bool", "null", "timestamp"})
_YAML11 = SafeConstructor()  # PyYAML's own scalar rules, for `parse_yaml(..., yaml11=True)`
_SPECIAL_FLOATS = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}


@dataclass(frozen=True)
class Positions:
    """Where each node of a loaded document sits: 1-based (line, column).

    `keys` holds the position of a mapping entry's key (or a list item), `values` the position
    of the value node. `of(path)` answers with the key position, falling back to the nearest
    ancestor that is known, so every diagnostic can be placed.
    """

    keys: Mapping[PathKey, Position]
    values: Mapping[PathKey, Position]
    text: str = ""  # the source text, so findings can point inside a value without re-reading
    # Nodes a state took from a fragment: path -> "fragment 'x' at lib.yaml:12" (see fragments.py)
    origins: Mapping[PathKey, str] = field(default_factory=dict)

    def of(self, path: PathKey) -> Position:
        """Position of the node at `path` (its key for mapping entries), else nearest ancestor."""
        return self._find(tuple(path), self.keys, self.values)

    def value_of(self, path: PathKey) -> Position:
        """Position of the value node at `path`, else of its key, else nearest ancestor."""
        return self._find(tuple(path), self.values, self.keys)

    def origin_of(self, path: PathKey) -> str:
        """Where the node at `path` (or its nearest ancestor) was written, when a fragment
        contributed it ("" for nodes written in the loop file itself)."""
        path = tuple(path)
        while path:
            found = self.origins.get(path)
            if found:
                return found
            path = path[:-1]
        return ""

    @staticmethod
    def _find(
        path: PathKey, first: Mapping[PathKey, Position], second: Mapping[PathKey, Position]
    ) -> Position:
        while True:
            found = first.get(path) or second.get(path)
            if found is not None:
                return found
            if not path:
                return (1, 1)
            path = path[:-1]


class YamlProblems(Exception):
    """The text is not a usable YAML document; `diagnostics` say where and why."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(diagnostics[0].message if diagnostics else "invalid YAML")
        self.diagnostics = diagnostics


def parse_yaml(text: str, file: str, *, yaml11: bool = False) -> tuple[Any, Positions]:
    """Parse `text` into data and positions, or raise `YamlProblems` with every problem found.

    `yaml11` reads plain scalars by PyYAML's YAML 1.1 rules instead (`yes` is true, `0o17` is
    text): only for files of another system that reads them so (`ll-loop migrate`); every other
    protection stays.
    """
    node = _compose(text, file, _BaseLoader if yaml11 else _Loader)
    builder = _Builder(file, yaml11=yaml11)
    data = builder.build(node, (), 0)
    if builder.problems:
        raise YamlProblems(sorted(builder.problems, key=lambda d: (d.line, d.column)))
    return data, Positions(builder.keys, builder.values, text)


def read_yaml_file(path: Path, file: str | None = None) -> tuple[Any, Positions]:
    """Read and parse a YAML file (`file` names it in diagnostics, default the path)."""
    name = str(path) if file is None else file
    return parse_yaml(read_text(path, name), name)


def read_text(path: Path, file: str) -> str:
    """The text of a YAML file; unreadable, binary or non-UTF-8 files are `YamlProblems`, and so
    is what is not a regular file (a FIFO or `/dev/zero` named by a state.json or a sub-loop's
    `loop:` was read forever) or is over `MAX_YAML_BYTES` (held whole in memory, then parsed)."""
    try:
        raw = regular_file_bytes(Path(path), MAX_YAML_BYTES)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise YamlProblems(
            [_diag("F000", f"cannot read the file: {reason}", file, 1, 1, unreadable_hint(exc))]
        ) from None
    return decode(raw, file)


def unreadable_hint(exc: OSError) -> str:
    """The hint for a YAML file `regular_file_bytes` could not read (F000, F030)."""
    if exc.errno == errno.EFBIG:
        return "loop, suite and case files are a few KB: check that this is the file meant"
    return "check the path"


def _yaml11_number(node: yaml.ScalarNode) -> int | float | None:
    """An int or float tagged by the YAML 1.1 resolver, built as PyYAML builds it."""
    try:
        if node.tag == _TAG + "int":
            return int(_YAML11.construct_yaml_int(node))
        return float(_YAML11.construct_yaml_float(node))
    except (ValueError, TypeError):
        return None


def _core_int(text: str) -> int | None:
    """A YAML 1.2 core integer (decimal, 0o octal, 0x hex), or None."""
    try:
        if text[:2] == "0o":
            return int(text[2:], 8)
        if text[:2] == "0x":
            return int(text[2:], 16)
        return int(text, 10)
    except ValueError:
        return None


def _core_float(text: str) -> float | None:
    """A YAML 1.2 core float (`1e3`, `.5`, `-.inf`, `.nan`), or None."""
    special = _SPECIAL_FLOATS.get(text.lower())
    if special is not None:
        return special
    try:
        return float(text)
    except ValueError:
        return None


# What to do about a UTF-16 file (loop files here; issue files say the same).
UTF16_HINT = "save it as UTF-8 (Windows PowerShell's `>` and Notepad's \"Unicode\" write UTF-16)"


def decode(raw: bytes, file: str) -> str:
    """Bytes of a loop file → text; a binary or non-UTF-8 file becomes a diagnostic."""
    if is_utf16(raw):
        raise YamlProblems(
            [
                _diag(
                    "F002",
                    "the file is UTF-16 text, not UTF-8",
                    file,
                    1,
                    1,
                    UTF16_HINT,
                )
            ]
        )
    if b"\x00" in raw:
        line, column = _line_col(raw, raw.index(b"\x00"))
        raise YamlProblems(
            [
                _diag(
                    "F002",
                    "the file is binary, not YAML text (it contains NUL bytes)",
                    file,
                    line,
                    column,
                    "a loop file is UTF-8 YAML text; check the path",
                )
            ]
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, column = _line_col(raw, exc.start)
        raise YamlProblems(
            [
                _diag(
                    "F002",
                    f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
                    file,
                    line,
                    column,
                    "save the loop file as UTF-8",
                )
            ]
        ) from None


def is_utf16(raw: bytes) -> bool:
    """UTF-16 text: its byte order mark, or (without one) mostly-ASCII text whose every other
    byte is NUL."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    sample = raw[:4096]
    if len(sample) < 4 or b"\x00" not in sample or not any(sample):  # all NUL: binary
        return False
    sample = sample[: len(sample) // 2 * 2]
    return not any(sample[1::2]) or not any(sample[0::2])


def _line_col(raw: bytes, offset: int) -> Position:
    line = raw.count(b"\n", 0, offset) + 1
    start = raw.rfind(b"\n", 0, offset) + 1
    return line, offset - start + 1


def _compose(text: str, file: str, loader: type[Any] = _Loader) -> yaml.Node:
    try:
        node = yaml.compose(text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        raise YamlProblems([_syntax_diag(exc, file, text)]) from None
    except yaml.reader.ReaderError as exc:
        line, column = _text_line_col(text, exc.position)
        raise YamlProblems(
            [
                _diag(
                    "F002",
                    f"the text holds a character YAML does not allow: {_codepoint(exc.character)}",
                    file,
                    line,
                    column,
                    "a loop file is printable UTF-8 text; remove control characters",
                )
            ]
        ) from None
    except yaml.YAMLError as exc:
        raise YamlProblems([_diag("F001", f"invalid YAML: {exc}", file, 1, 1)]) from None
    except UnicodeError:
        raise YamlProblems(
            [_diag("F002", "the text is not valid Unicode (it holds lone surrogates)", file, 1, 1)]
        ) from None
    except RecursionError:
        raise YamlProblems([_too_deep(file, 1, 1)]) from None
    if node is None:
        raise YamlProblems(
            [
                _diag(
                    "F003",
                    "the file is empty: a loop needs at least name, initial and states",
                    file,
                    1,
                    1,
                    "run `ll-loop schema` or see docs/format.md for a minimal loop",
                )
            ]
        )
    return node


def _codepoint(character: object) -> str:
    code = ord(character) if isinstance(character, str) and len(character) == 1 else character
    return f"U+{code:04X}" if isinstance(code, int) else repr(character)


def _text_line_col(text: str, offset: int) -> Position:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _syntax_diag(exc: yaml.MarkedYAMLError, file: str, text: str) -> Diagnostic:
    mark = exc.problem_mark or exc.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = exc.problem or "invalid YAML"
    if "maximum nesting depth" in problem:
        return _too_deep(file, line, column)
    message = f"YAML syntax error: {problem}"
    context_mark = exc.context_mark
    if exc.context:
        message += f" ({exc.context}"
        if context_mark is not None and mark is not None and context_mark.line != mark.line:
            message += f" at line {context_mark.line + 1}"
        message += ")"
    char = text[mark.index] if mark is not None and 0 <= mark.index < len(text) else ""
    hint = "check indentation and quoting around this line"
    if "another document" in problem or "single document" in (exc.context or ""):
        hint = "a loop file holds one YAML document: remove the extra `---`"
    elif char == "\t":
        hint = "YAML indentation uses spaces, not tabs"
    elif "flow" in f"{exc.context} {problem}" and "${" in _line_text(text, line):
        hint = (
            "the } of a ${...} ends a {...} or [...] written on one line: quote the value, "
            'e.g. {action: "echo ${context.x}"}'
        )
    elif "mapping values are not allowed" in problem:
        hint = _missing_colon_hint(text, line, column) or (
            'quote a value that contains ": ", e.g. action: "echo a: b"'
        )
    elif "cannot start any token" in problem and char in "`@%":
        hint = f"quote a value that starts with {char}"
    elif "undefined alias" in problem:
        hint = "define the anchor (&name) before using the alias (*name)"
    elif "did not find expected key" in problem and _missing_colon_hint(text, line, column):
        hint = _missing_colon_hint(text, line, column)
    elif "could not find expected ':'" in problem:
        hint = "a key needs a colon; a multi-line text value needs | or > after the key"
    return _diag("F001", message, file, line, column, hint)


def _line_text(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


_KEY_ONLY = re.compile(r"^\s*(?:-\s+)?[\w.-]*\s*$")
_KEY_WITHOUT_COLON = re.compile(r"^(\s*(?:-\s+)?)([A-Za-z_][\w.-]*)\s+([^\s:#].*)$")


def _missing_colon_hint(text: str, line: int, column: int) -> str:
    """`action "true"` followed by `next: done`: YAML reads the two lines as one text and
    stumbles on the second colon (or, past a comment, finds no key), so the error lands below
    the mistake."""
    lines = text.splitlines()
    if not 0 < line <= len(lines) or not _KEY_ONLY.match(lines[line - 1][: column - 1]):
        return ""
    above = line - 1
    while above > 0 and (not lines[above - 1].strip() or lines[above - 1].lstrip()[0] == "#"):
        above -= 1
    match = _KEY_WITHOUT_COLON.match(lines[above - 1]) if above > 0 else None
    if match is None or ": " in match.group(3) or match.group(3).endswith(":"):
        return ""
    _, key, rest = match.groups()
    return f"line {above} has no colon after its key: write {key}: {rest.rstrip()}"


def _too_deep(file: str, line: int, column: int) -> Diagnostic:
    return _diag(
        "F007",
        f"the document nests deeper than {MAX_DEPTH} levels",
        file,
        line,
        column,
        "loop and suite files nest only a few levels deep; this looks like generated junk",
    )


def _diag(code: str, message: str, file: str, line: int, column: int, hint: str = "") -> Diagnostic:
    return Diagnostic(code, "error", message, file, "", line, column, hint)


class _Builder:
    """Walks the composed node graph once, recording positions and collecting problems."""

    def __init__(self, file: str, *, yaml11: bool = False) -> None:
        self.file = file
        self.yaml11 = yaml11
        self.keys: dict[PathKey, Position] = {}
        self.values: dict[PathKey, Position] = {}
        self.problems: list[Diagnostic] = []
        self.visits = 0
        self.distinct = 0  # nodes seen once; visits beyond that are alias expansions
        self.aborted = False
        self.open: set[int] = set()  # mappings and sequences being built: a cycle check

    def problem(self, code: str, message: str, node: yaml.Node, hint: str = "") -> None:
        mark = node.start_mark
        self.problems.append(_diag(code, message, self.file, mark.line + 1, mark.column + 1, hint))

    def build(self, node: yaml.Node, path: PathKey, depth: int) -> Any:
        if self.aborted:
            return None
        self.visits += 1
        if getattr(node, "_ll_seen_by", None) is not self:
            node._ll_seen_by = self  # type: ignore[attr-defined]  # marks a revisit (an alias)
            self.distinct += 1
        if self.visits > ALIAS_EXPANSION_FACTOR * self.distinct + ALIAS_EXPANSION_SLACK:
            self.problem(
                "F007",
                "YAML aliases expand this document beyond a sane size",
                node,
                "anchors and aliases (&a / *a) may share a block, not multiply it",
            )
            self.aborted = True
            return None
        if depth > MAX_DEPTH:
            self.problems.append(
                _too_deep(self.file, node.start_mark.line + 1, node.start_mark.column + 1)
            )
            self.aborted = True
            return None
        self.values.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if id(node) in self.open:
            self.problem(
                "F007",
                "a YAML alias refers to a block that contains it (a cycle)",
                node,
                "an alias (*name) may not point into its own anchor (&name)",
            )
            self.aborted = True
            return None
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self.mapping(node, path, depth)
            return self.sequence(node, path, depth)
        finally:
            self.open.discard(id(node))

    def sequence(self, node: yaml.Node, path: PathKey, depth: int) -> list[Any] | None:
        if node.tag != _TAG + "seq":
            self.bad_tag(node)
            return None
        items = []
        for index, item in enumerate(node.value):
            child = (*path, index)
            self.keys.setdefault(child, (item.start_mark.line + 1, item.start_mark.column + 1))
            items.append(self.build(item, child, depth + 1))
        return items

    def mapping(
        self, node: yaml.MappingNode, path: PathKey, depth: int, merging: bool = False
    ) -> dict[str, Any]:
        if node.tag != _TAG + "map":
            self.bad_tag(node)
            return {}
        result: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        seen: dict[str, yaml.Node] = {}
        merges = [value for key, value in node.value if key.tag == _TAG + "merge"]
        for key_node, value_node in node.value:
            if key_node.tag == _TAG + "merge":
                continue
            key = self.key(key_node)
            if key is None:
                continue
            if key in seen:
                first = seen[key].start_mark
                self.problem(
                    "F005",
                    f"duplicate key {key!r} (first defined at line {first.line + 1})",
                    key_node,
                    "YAML would silently keep only the last one; remove or rename one of them",
                )
                continue
            seen[key] = key_node
            child = (*path, key)
            position = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if merging:
                self.keys.setdefault(child, position)
            else:
                self.keys[child] = position
            result[key] = self.build(value_node, child, depth + 1)
        for value_node in merges:  # after the explicit keys, whose positions win
            self.merge(value_node, path, depth, merged)
        if merged:
            return {**{k: v for k, v in merged.items() if k not in result}, **result}
        return result

    def merge(self, value: yaml.Node, path: PathKey, depth: int, merged: dict[str, Any]) -> None:
        """`<<: *defaults` merges (earlier sources win, explicit keys win over all)."""
        sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
        for source in sources:
            if not isinstance(source, yaml.MappingNode):
                self.problem(
                    "F007",
                    "a `<<` merge key needs a mapping (or a list of mappings) to merge",
                    source,
                )
                continue
            built = self.mapping(source, path, depth + 1, merging=True)
            for key, item in built.items():
                merged.setdefault(key, item)

    def key(self, node: yaml.Node) -> str | None:
        """A mapping key as text; keys are names in our format, so plain `yes:` is "yes"."""
        if not isinstance(node, yaml.ScalarNode):
            self.problem(
                "F006",
                "a mapping key must be a plain name, not a list or a mapping",
                node,
                "keys in a loop file are names such as `states`, `on_yes` or a state name",
            )
            return None
        if not node.tag.startswith(_TAG) or node.tag[len(_TAG) :] not in _KEY_TAGS:
            self.problem(
                "F006", f"a mapping key must be a plain name, not a value tagged {node.tag}", node
            )
            return None
        if node.tag == _TAG + "null":
            self.problem(
                "F006",
                "a mapping key is empty",
                node,
                "write a name before the colon, or quote a key that should be text",
            )
            return None
        return str(node.value)

    def scalar(self, node: yaml.ScalarNode) -> Any:
        tag = node.tag
        value = node.value
        if tag == _TAG + "str":
            return value
        if tag == _TAG + "null":
            return None
        if tag == _TAG + "bool":
            if self.yaml11:
                return _YAML11.construct_yaml_bool(node)
            if value.lower() in _BOOL_WORDS:
                return value.lower() == "true"
            return value  # yes/no/on/off: words, as in YAML 1.2
        number: int | float | None = None
        if tag == _TAG + "int":
            number = _yaml11_number(node) if self.yaml11 else _core_int(value)
        elif tag == _TAG + "float":
            number = _yaml11_number(node) if self.yaml11 else _core_float(value)
        if tag in (_TAG + "int", _TAG + "float"):
            if number is None:
                return value  # an explicit !!int / !!float that is not one: keep the text
            if abs(number) > sys.float_info.max or not math.isfinite(number):
                return self.not_finite(node)
            return number
        if tag in (_TAG + "timestamp", _TAG + "value"):
            return value
        return self.bad_tag(node)

    def not_finite(self, node: yaml.ScalarNode) -> None:
        shown = node.value if len(node.value) <= 24 else node.value[:21] + "..."
        self.problem(
            "F015",
            f"{shown} is not a finite number: numbers in ll-loop files must be finite",
            node,
            "write a plain number such as 3600; to set no limit, leave the key out",
        )
        return None

    def bad_tag(self, node: yaml.Node) -> None:
        tag = node.tag
        shown = "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag
        self.problem(
            "F007",
            f"the YAML tag {shown} is not supported in a loop file",
            node,
            "use plain YAML values (strings, numbers, true/false, lists, mappings)",
        )
        return None
