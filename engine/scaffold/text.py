"""YAML emission: scalars that read back exactly, comment-safe issue text, and short names.

The YAML is written as text (so it can carry comments); every string that came from an issue
goes through `yaml_scalar`, which emits a block scalar or a double-quoted scalar that reads back
exactly; literal `${` from an issue is escaped as `$${` so ll-loop never interpolates it.
"""

from __future__ import annotations

import re

from engine.load.issuefile import Issue
from engine.scaffold.result import Placeholder

# Characters YAML will not take literally: non-printables (PyYAML's reader rejects them), line
# breaks other than \n, the BOM, and surrogates. Inside double quotes they are escaped.
NEEDS_ESCAPE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff\ufffe\uffff]"
)


def yaml_scalar(text: str, indent: int, *, escape: bool = True) -> str:
    """A YAML scalar holding exactly `text` (`${` escaped when `escape`): a `|-` block if it can.

    A block scalar is used for multi-line text whose lines fit one (no tabs or control
    characters, no leading space on the first line, no trailing spaces); anything else is
    double-quoted with escapes. Either way `yaml.safe_load` gives back exactly the text.
    """
    if escape:
        text = text.replace("${", "$${")
    lines = text.split("\n")
    block_safe = (
        len(lines) > 1
        and not NEEDS_ESCAPE.search(text)
        and "\t" not in text
        and not lines[0].startswith(" ")
        and all(line == line.rstrip() for line in lines)
        and lines[-1] != ""
    )
    if not block_safe:
        return yaml_quoted(text)
    pad = " " * indent
    body = "\n".join(f"{pad}{line}" if line else "" for line in lines)
    return f"|-\n{body}"


def yaml_quoted(text: str) -> str:
    """A double-quoted YAML scalar; non-printable and YAML line-break characters are escaped."""
    out: list[str] = ['"']
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif NEEDS_ESCAPE.match(char):
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def comment(text: str) -> str:
    """Issue text safe inside a `#` comment: one line, no control characters."""
    return NEEDS_ESCAPE.sub(" ", " ".join(text.split()))


def source_note(issue: Issue, lead: str = " from ") -> str:
    """` from PATH` for a header comment, or nothing when the issue came from no file."""
    return f"{lead}{comment(str(issue.path))}" if issue.path else ""


def placeholder_banner(holes: tuple[Placeholder, ...]) -> str:
    """The header comment listing what is still to fill (nothing when nothing is)."""
    if not holes:
        return ""
    listed = "\n".join(f"#   - {comment(h.path)}: {comment(h.what)}" for h in holes)
    return (
        "#\n# TO FILL before this harness means anything (`ll-loop validate` lists them):\n"
        f"{listed}\n"
    )


def safe_id(issue_id: str) -> str:
    """The ID as a token safe in file names, shell words and YAML keys."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", issue_id).strip("-.") or "ISSUE"


def flat(text: str) -> str:
    """`text` on one line, runs of white space folded to one space."""
    return " ".join(text.split())


def shorten(text: str, limit: int = 100) -> str:
    """`text` on one line, cut to `limit` characters with `...` when longer."""
    one_line = flat(text)
    return one_line if len(one_line) <= limit else one_line[: limit - 3].rstrip() + "..."
