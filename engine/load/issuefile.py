"""Read issue files: markdown with optional YAML front matter, split into the sections we use.

Issue files are written by people, so the parser is tolerant: headings at any level (or a bold
line used as a heading), case and spelling variants ("Expected Behaviour", "Success Criteria"),
checkbox / plain / numbered bullets with continuation lines. It never invents content: a section
the issue does not have stays empty, and the scaffolder turns that into a visible placeholder.

`parse_issue` is pure; `load_issue` and `find_issue` are the only functions that touch files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from engine.load.project import regular_file_bytes
from engine.load.spelling import close_matches
from engine.load.yaml_positions import (
    MAX_YAML_BYTES,
    UTF16_HINT,
    YamlProblems,
    is_utf16,
    parse_yaml,
)
from engine.model.errors import UsageError

# ID like FEAT-919, BUG-12, ENH-3415 (letters, a dash, digits).
_ID_RE = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{2,12}-\d+)(?![A-Za-z0-9])")
_PRIORITY_RE = re.compile(r"^P\d-", re.IGNORECASE)

KINDS: Mapping[str, str] = MappingProxyType(
    {
        "FEAT": "feature",
        "FEATURE": "feature",
        "BUG": "bug",
        "FIX": "bug",
        "ENH": "enhancement",
        "ENHANCEMENT": "enhancement",
        "DOC": "docs",
        "DOCS": "docs",
        "CHORE": "chore",
        "TASK": "task",
        "REFACTOR": "refactor",
        "PERF": "performance",
        "SEC": "security",
    }
)

# Normalised heading text → section key. Matching is on the normalised heading (lowercase,
# punctuation and numbering stripped), first by exact name, then by prefix.
_SECTION_NAMES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "summary": ("summary", "overview", "description", "problem", "problem statement", "tldr"),
        "expected_behavior": (
            "expected behavior",
            "expected behaviour",
            "expected result",
            "expected results",
            "expected outcome",
            "desired behavior",
            "desired behaviour",
            "proposed behavior",
            "proposed behaviour",
            "expected",
        ),
        "use_case": (
            "use case",
            "use cases",
            "user story",
            "user stories",
            "scenario",
            "motivation",
        ),
        "acceptance_criteria": (
            "acceptance criteria",
            "acceptance criterion",
            "acceptance",
            "success criteria",
            "definition of done",
            "acceptance tests",
            "criteria",
        ),
        "steps_to_reproduce": (
            "steps to reproduce",
            "steps to reproduction",
            "reproduction steps",
            "repro steps",
            "how to reproduce",
            "reproduction",
            "to reproduce",
            "repro",
        ),
        "examples": (
            "examples",
            "example",
            "test cases",
            "example inputs",
            "sample inputs",
        ),
        "actual_behavior": (
            "actual behavior",
            "actual behaviour",
            "actual result",
            "actual results",
            "current behavior",
            "current behaviour",
            "observed behavior",
            "observed behaviour",
            "actual",
        ),
    }
)

_NEGATIVE_RE = re.compile(
    r"\b(should\s+not|shouldn'?t|must\s+not|mustn'?t|never|may\s+not|must\s+never|"
    r"should\s+never|no\s+longer)\b",
    re.IGNORECASE,
)
# The text after the marker is taken whole and its closing `#`s are cut in `_heading_text`: the
# one-pattern form (`\s+(.*?)\s*#*\s*$`) backtracked in cubic time over a run of spaces, so a
# heading padded with 2,000 spaces took 20 seconds to read.
_HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*)$")
_MAX_SECTION_HEADING = 200  # characters; longer headings name no section
_BOLD_HEADING_RE = re.compile(r"^\s{0,3}(?:\*\*|__)([^*_]{2,60}?):?(?:\*\*|__):?\s*$")
_ITEM_RE = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s*)?(.*)$")
_FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
# YAML 1.1 treats these as line breaks; issue text must not smuggle them into a block scalar.
# A lone CR (a classic Mac file) is a line break too: deleting it ran every line into the first.
_ODD_BREAKS = str.maketrans({"\u0085": "\n", "\u2028": "\n", "\u2029": "\n", "\r": "\n"})


@dataclass(frozen=True)
class Issue:
    """One issue file, reduced to what an eval needs. Empty strings mean "the issue lacks it"."""

    id: str
    title: str
    kind: str
    path: Path | None
    summary: str = ""
    expected_behavior: str = ""
    use_case: str = ""
    acceptance_criteria: tuple[str, ...] = ()
    steps_to_reproduce: str = ""
    actual_behavior: str = ""
    examples: str = ""  # the Examples section (`input → expected` items), for `--dsl`
    should_not: tuple[str, ...] = ()
    front_matter: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        """No text of an issue holds a NUL character: an eval scaffolded from it would put the
        NUL in its loop, which the loader refuses (F016), so the issue is refused first."""
        if _holds_nul([getattr(self, f.name) for f in fields(self)]):
            raise UsageError(
                f"{self.path or self.id or 'the issue'} contains a NUL character, "
                "so it is not an issue",
                hint="remove the NUL character",
            )

    @property
    def is_bug(self) -> bool:
        return self.kind == "bug"


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, tuple | list):
        return any(_holds_nul(item) for item in value)
    return False


def load_issue(path: Path) -> Issue:
    """Read and parse one issue file; unreadable or malformed files are a `UsageError`."""
    try:
        raw = regular_file_bytes(path, MAX_YAML_BYTES)  # not a FIFO, not /dev/zero
    except OSError as exc:
        raise UsageError(
            f"cannot read issue file {path}: {exc.strerror or exc}",
            hint="pass an existing markdown file or an issue ID found under .issues/",
        ) from exc
    if is_utf16(raw):  # its every other byte is NUL: not "not a text file"
        raise UsageError(f"{path}:1:1: the file is UTF-16 text, not UTF-8", hint=UTF16_HINT)
    if b"\x00" in raw[:8192]:  # an image or archive: its bytes would become the prompts
        raise UsageError(
            f"{path} is not a text file (it contains NUL bytes), so it is not an issue",
            hint="pass the issue's markdown file, or an issue ID found under .issues/",
        )
    text = raw.decode("utf-8", errors="replace")
    return parse_issue(text, path=path)


def parse_issue(text: str, *, path: Path | None = None, issue_id: str | None = None) -> Issue:
    """Parse issue markdown. `issue_id` overrides what the front matter and file name say."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").translate(_ODD_BREAKS)
    front, body = _split_front_matter(text, path)
    title, sections = _split_sections(body)
    fm_title = _fm_str(front, "title", path)
    found_id = issue_id or _fm_str(front, "id", path) or _id_from(path, title)
    title = fm_title or _strip_id_prefix(title, found_id) or (path.stem if path else found_id)
    kind = _kind(front, found_id)
    criteria = _criteria(front, sections.get("acceptance_criteria", ""), path)
    expected = sections.get("expected_behavior", "")
    return Issue(
        id=found_id,
        title=_one_line(title),
        kind=kind,
        path=path,
        summary=sections.get("summary", "") or _fm_str(front, "summary", path),
        expected_behavior=expected,
        use_case=sections.get("use_case", ""),
        acceptance_criteria=criteria,
        steps_to_reproduce=sections.get("steps_to_reproduce", ""),
        actual_behavior=sections.get("actual_behavior", ""),
        examples=sections.get("examples", ""),
        should_not=_should_not(criteria, expected, sections.get("use_case", "")),
        front_matter=MappingProxyType(dict(front)),
    )


def find_issue(id_or_path: str, root: Path) -> Path:
    """A path to an existing file, or the one file under `.issues/` whose name has the ID: the
    `.issues/` of `root`, else of the project `root` is in (as `.loops/` is found).

    The ID must appear as a whole token (FEAT-91 does not match FEAT-919), case-insensitively.
    """
    ref = id_or_path.strip()
    as_path = Path(ref) if Path(ref).is_absolute() else root / ref
    looks_like_path = ref.endswith((".md", ".markdown")) or "/" in ref or "\\" in ref
    if as_path.is_file():
        return as_path
    if looks_like_path:
        raise UsageError(
            f"no issue file at {ref}",
            hint="pass an existing markdown file, or an issue ID such as FEAT-919",
        )
    if not ref:
        raise UsageError("empty issue ID", hint="pass an issue ID such as FEAT-919, or a path")
    issues_dir = root / ".issues"
    if not issues_dir.is_dir():  # run from a sub-directory: the project's own, as for .loops/
        from engine.load.project import project_root

        issues_dir = project_root(root) / ".issues"
    if not issues_dir.is_dir():
        raise UsageError(
            f"no .issues/ directory under {root} to look up {ref}",
            hint="run from the project root, or pass the issue file's path",
        )
    files = sorted(
        p for p in issues_dir.rglob("*") if p.is_file() and p.suffix in {".md", ".markdown"}
    )
    token = re.compile(rf"(?<![A-Za-z0-9]){re.escape(ref)}(?![A-Za-z0-9])", re.IGNORECASE)
    matches = [p for p in files if token.search(p.name)]
    # A file named by the ID beats one that only mentions it: the bug eval-driven-development
    # files for a harness, P2-BUG-302-eval-harness-feat-919.md, made FEAT-919 ambiguous.
    named = [p for p in matches if _id_from(p, "") == ref.upper()]
    matches = named or matches
    if not matches:  # file names without IDs: the front matter `id:` or the title may say it
        matches = [p for p in files if _declares_id(p, token)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        listing = ", ".join(_rel(p, root) for p in matches)
        raise UsageError(
            f"issue ID {ref} is ambiguous: {len(matches)} files match: {listing}",
            hint="pass the file's path instead of the ID",
        )
    raise UsageError(
        f"no issue {ref} under {_rel(issues_dir, root)}/",
        hint=_candidates_hint(ref, files, root),
    )


def _declares_id(path: Path, token: re.Pattern[str]) -> bool:
    """True when the file's front matter `id:` or its first `# ` heading names the ID."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    for line in head.splitlines():
        stripped = line.strip()
        if re.match(r"^id\s*:", stripped):
            return token.search(stripped.split(":", 1)[1]) is not None
        if stripped.startswith("# "):
            return token.search(stripped) is not None
    return False


def slugify(text: str, *, max_len: int = 48) -> str:
    """Lowercase ASCII words joined by dashes, for file and loop names. Accented letters keep
    their base letter (`Überprüfung` → `uberprufung`, not `berpr-fung`)."""
    import unicodedata

    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:max_len].rstrip("-") or "issue"


# --- parsing helpers -----------------------------------------------------------------------------


def _split_front_matter(text: str, path: Path | None) -> tuple[dict[str, Any], str]:
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() in {"---", "..."}:
            break
    else:
        return {}, text  # an opening rule with no closing one is just markdown
    block = "\n".join(lines[1:end])
    try:  # the engine's one YAML reader: alias bombs and tags are refused here too
        data = parse_yaml(block, str(path or ""))[0] if block.strip() else {}
    except YamlProblems as exc:
        first = exc.diagnostics[0]
        line = first.line + 1  # the block starts on the line after the opening ---
        where = f"{path}:{line}" if path else f"line {line}"
        raise UsageError(
            f"{where}: the issue's front matter is not valid YAML ({first.message})",
            hint="fix the YAML between the two --- lines, or remove them",
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        where = f"{path}:2" if path else "line 2"
        raise UsageError(
            f"{where}: the issue's front matter must be a mapping of keys to values",
            hint="write it as `key: value` lines between the two --- lines",
        )
    return {str(k): v for k, v in data.items()}, "\n".join(lines[end + 1 :])


def _split_sections(body: str) -> tuple[str, dict[str, str]]:
    """The first level-1 heading (the title) and the text under each recognised heading.

    Text between the title and the first heading is the summary when there is no Summary section.
    """
    title = ""
    preamble: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] | None = preamble
    current_level = 0  # the heading level of the section being read (0: none)
    in_fence = False
    for line in body.split("\n"):
        if _FENCE_RE.match(line):
            in_fence = not in_fence
        heading = None if in_fence else _heading(line)
        if heading is not None:
            level, text = heading
            if not title and level == 1 and not sections:
                title = text
                current = preamble
                continue
            key = _section_key(text)
            if key is None and current_level and level > current_level and current is not None:
                current.append(line.strip())  # a sub-heading of the section (`### AC1: ...`)
                continue
            if key is not None and key not in sections:
                current, current_level = sections.setdefault(key, []), level
            else:
                current, current_level = None, 0  # an unknown or repeated heading ends it
            continue
        if current is not None:
            current.append(line.rstrip())
    found = {k: _tidy("\n".join(v)) for k, v in sections.items()}
    if not found.get("summary"):
        found["summary"] = _tidy("\n".join(preamble))
    return title, {k: v for k, v in found.items() if v}


def _heading(line: str) -> tuple[int, str] | None:
    match = _HEADING_RE.match(line)
    if match:
        return len(match.group(1)), _heading_text(match.group(2))
    bold = _BOLD_HEADING_RE.match(line)
    if bold and _section_key(bold.group(1)) is not None:
        return 2, bold.group(1).strip()
    return None


def _heading_text(raw: str) -> str:
    """A heading's text without its closing run of `#` (`## Summary ##`), as CommonMark reads
    it: the run counts only after a space."""
    text = raw.strip()
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1] in " \t"):
        text = bare.rstrip()
    return text


def _normalise_heading(text: str) -> str:
    text = re.sub(r"[*_`]", "", text).lower()
    text = re.sub(r"^\s*(\d+[.)]|[ivx]+\.)\s*", "", text)  # "2. Expected behavior"
    text = re.sub(r"\(.*?\)", "", text)  # "Acceptance Criteria (must all hold)"
    return re.sub(r"[^a-z0-9]+", " ", text).strip()


def _section_key(heading: str) -> str | None:
    if len(heading) > _MAX_SECTION_HEADING:  # and `\(.*?\)` below is quadratic in "(" runs
        return None
    norm = _normalise_heading(heading)
    if not norm:
        return None
    for key, names in _SECTION_NAMES.items():
        if norm in names:
            return key
    for key, names in _SECTION_NAMES.items():
        if any(norm.startswith(name + " ") for name in names if " " in name):
            return key
    return None


def _without_comments(text: str) -> str:
    """`text` without `<!-- ... -->` comments; an unclosed one is kept. In one pass: the regex
    `<!--.*?-->` scanned to the end of the text from every unclosed `<!--`."""
    parts: list[str] = []
    start = 0
    while (open_at := text.find("<!--", start)) != -1:
        close_at = text.find("-->", open_at + 4)
        if close_at == -1:
            break
        parts.append(text[start:open_at])
        start = close_at + 3
    parts.append(text[start:])
    return "".join(parts)


def _tidy(text: str) -> str:
    """Strip blank edges and trailing spaces; drop HTML comments (issue templates use them)."""
    text = _without_comments(text)
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def list_items(text: str) -> tuple[str, ...]:
    """Bullet, checkbox or numbered items; continuation lines and sub-bullets join their item.

    After a blank line only indented text continues an item; an unindented paragraph or code
    fence between items is commentary and is left out. A section with no list at all yields one
    item per paragraph. Sub-headings split the section: a sub-heading over a list only groups
    its items; one over plain text is one item, the heading and its text (`### AC1: Export`).
    """
    chunks = _heading_chunks(text)
    if not any(heading for heading, _ in chunks):
        return _plain_items(text)
    found: list[str] = []
    for heading, chunk in chunks:
        if _has_list(chunk):
            found += _plain_items(chunk)
        elif heading:
            body = " ".join(_plain_items(chunk))
            found.append(f"{heading.rstrip('.:')}. {body}" if body else heading)
        elif not _has_list(text):  # text before the first sub-heading, in a section of prose
            found += _plain_items(chunk)
    return tuple(found)


def _heading_chunks(text: str) -> list[tuple[str, str]]:
    """`text` split at its markdown headings (outside code fences): (heading, text under it)."""
    chunks: list[tuple[str, list[str]]] = [("", [])]
    in_fence = False
    for line in text.split("\n"):
        if _FENCE_RE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING_RE.match(line)
        if match:
            chunks.append((_heading_text(match.group(2)), []))
        else:
            chunks[-1][1].append(line)
    return [(heading, "\n".join(lines)) for heading, lines in chunks if heading or any(lines)]


def _has_list(text: str) -> bool:
    return any(_ITEM_RE.match(line) for line in text.split("\n"))


def _plain_items(text: str) -> tuple[str, ...]:
    """`list_items` of text without headings."""
    items: list[list[str]] = []
    current: list[str] | None = None  # the item that continuation lines join, if any
    base_indent: int | None = None
    in_fence = after_blank = False
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" \t"))
        fence = _FENCE_RE.match(line) is not None
        if fence and not in_fence and after_blank and indent <= (base_indent or 0):
            current = None  # a code block between items belongs to no item
        if fence or in_fence:
            in_fence = in_fence != fence
            if current is not None:
                current.append(line.strip())
            after_blank = False
            continue
        match = _ITEM_RE.match(line)
        if match:
            item_indent = len(match.group(1).expandtabs(4))
            if base_indent is None or item_indent <= base_indent or current is None:
                base_indent = item_indent if base_indent is None else min(base_indent, item_indent)
                current = [match.group(2).strip()]
                items.append(current)
            else:  # a nested bullet elaborates its parent
                current.append(match.group(2).strip())
            after_blank = False
            continue
        if not line.strip():
            after_blank = True
            continue
        if after_blank and indent <= (base_indent or 0):
            current = None  # an unindented paragraph closes the item; it is not a criterion
        if current is not None:
            current.append(line.strip())
        after_blank = False
    if base_indent is None:
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
        return tuple(_join(p.split("\n")) for p in paragraphs)
    return tuple(joined for joined in (_join(parts) for parts in items) if joined)


def _join(parts: Iterable[str]) -> str:
    return " ".join(part.strip() for part in parts if part.strip())


def _criteria(front: Mapping[str, Any], section: str, path: Path | None) -> tuple[str, ...]:
    """Front matter `acceptance_criteria:` (a list, or markdown text), else the section.

    An empty entry (`- ` reads as null) is skipped and a nested list or mapping is refused:
    as text they became criteria such as `None` and `['a', 'b']` that a judge was asked to
    verify."""
    from_front = front.get("acceptance_criteria")
    if isinstance(from_front, list) and from_front:
        for item in from_front:
            if isinstance(item, (list, dict)):
                raise UsageError(
                    f"{path or 'the issue'}: an entry of `acceptance_criteria` in the front "
                    f"matter is a {'list' if isinstance(item, list) else 'mapping'}: {item!r}",
                    hint="write each criterion as one line of text: `- the export has a header`",
                )
        texts = (str(item) for item in from_front if item is not None)
        return tuple(_join(text.split("\n")) for text in texts if text.strip())
    if isinstance(from_front, str) and from_front.strip():
        return list_items(from_front)
    if from_front is not None and not isinstance(from_front, (list, str)):
        raise UsageError(
            f"{path or 'the issue'}: `acceptance_criteria` in the front matter must be a list "
            f"of criteria, got {from_front!r}",
            hint="write one criterion per line: `- the export has a header`",
        )
    return list_items(section) if section else ()


def _should_not(criteria: tuple[str, ...], *texts: str) -> tuple[str, ...]:
    """Criteria and sentences that state what must not happen: the judge's material for NO."""
    found: list[str] = [c for c in criteria if _NEGATIVE_RE.search(c)]
    for text in texts:
        for item in list_items(text) if text else ():
            for sentence in re.split(r"(?<=[.!?])\s+", item):
                if _NEGATIVE_RE.search(sentence) and sentence not in found:
                    found.append(sentence.strip())
    return tuple(dict.fromkeys(found))


def _fm_str(front: Mapping[str, Any], key: str, path: Path | None) -> str:
    """A front matter field as one line of text; a list, mapping or boolean is a `UsageError`
    (it became its Python repr, `['a', 'b']`, in the prompts and the loop's name)."""
    value = front.get(key)
    if value is None or value == "":
        return ""
    if isinstance(value, dict | list | bool):
        kind = {dict: "a mapping", list: "a list", bool: "true or false"}[type(value)]
        raise UsageError(
            f"{path or 'the issue'}: front matter `{key}` must be text, got {kind}",
            hint=f'quote it: `{key}: "..."`',
        )
    return _one_line(str(value))


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _id_from(path: Path | None, title: str) -> str:
    for text in (path.name if path else "", title):
        match = _ID_RE.search(_PRIORITY_RE.sub("", text))
        if match:
            return match.group(1).upper()
    return path.stem if path else "ISSUE"


def _strip_id_prefix(title: str, issue_id: str) -> str:
    pattern = rf"^\s*\[?{re.escape(issue_id)}\]?\s*[:\-—–]?\s*"
    return re.sub(pattern, "", title, flags=re.IGNORECASE).strip()


def _kind(front: Mapping[str, Any], issue_id: str) -> str:
    for key in ("kind", "type"):
        value = front.get(key)
        if isinstance(value, str) and value.strip():
            raw = value.strip()
            return KINDS.get(raw.upper(), raw.lower())
    prefix = issue_id.split("-", 1)[0].upper() if "-" in issue_id else ""
    return KINDS.get(prefix, "issue")


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _candidates_hint(ref: str, files: list[Path], root: Path) -> str:
    known: dict[str, Path] = {}
    found = [
        (p, [m.group(1).upper() for m in _ID_RE.finditer(_PRIORITY_RE.sub("", p.name))])
        for p in files
    ]
    for path, ids in found:  # a file named by an ID first, then the ones that mention it
        if ids:
            known.setdefault(ids[0], path)
    for path, ids in found:
        for issue_id in ids[1:]:
            known.setdefault(issue_id, path)
    number = re.search(r"\d+", ref)
    close = close_matches(ref.upper(), known, n=5)
    if number:
        close += [k for k in known if k.split("-")[-1] == number.group(0) and k not in close]
    if close:
        listed = ", ".join(f"{k} ({_rel(known[k], root)})" for k in close[:5])
        return f"did you mean: {listed}"
    if not files:
        return "the .issues/ directory has no markdown files"
    return "no similar IDs; pass the issue file's path, or check `ls .issues/`"
