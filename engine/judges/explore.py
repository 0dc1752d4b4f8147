"""The workspace tools of an exploring reviewer: read, glob and grep, confined to the workspace.

A path is resolved (symlinks followed) and must stay inside the workspace: `../x`, an absolute
path elsewhere, or a symlink pointing out are refused with a tool error the model sees, never
read. Walks skip `.git` and `.loops` and never descend through symlinked directories. Answers are
bounded, so one tool call cannot flood the reviewer's context.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

MAX_TOOL_STEPS = 20
READ_CHARS = 40_000
MAX_LISTED = 200
MAX_MATCHES = 100
GREP_FILE_BYTES = 2_000_000
SKIPPED_DIRS = frozenset({".git", ".loops"})

TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "read_file",
        "description": "Read a text file of the workspace (path relative to its root).",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 0, "description": "first line (0-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "lines to read"},
            },
            "required": ["path"],
        },
    },
    {
        "name": "glob",
        "description": "List workspace files matching a glob pattern such as src/**/*.py.",
        "input_schema": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}},
            "required": ["pattern"],
        },
    },
    {
        "name": "grep",
        "description": "Search workspace files for a regular expression; answers file:line: text.",
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "a file or directory (default: all)"},
                "glob": {"type": "string", "description": "only files matching this glob"},
            },
            "required": ["pattern"],
        },
    },
)
TOOL_NAMES = frozenset(t["name"] for t in TOOLS)


class Refused(Exception):
    """A tool call the workspace does not allow (outside it, missing, not text)."""


@dataclass(frozen=True)
class Workspace:
    """The directory a reviewer may look at."""

    root: Path

    def resolve(self, given: str) -> Path:
        """`given` inside the workspace, symlinks followed; Refused when it leads outside."""
        root = self.root.resolve()
        candidate = Path(given)
        if not candidate.is_absolute():
            candidate = root / candidate
        resolved = candidate.resolve()
        if resolved != root and not resolved.is_relative_to(root):
            raise Refused(f"{given!r} is outside the workspace; only paths inside it can be read")
        hidden = SKIPPED_DIRS.intersection(resolved.relative_to(root).parts)
        if hidden:  # `.git/config` may hold a token in a remote URL: never sent to a model
            raise Refused(
                f"{given!r} is inside {sorted(hidden)[0]}/, which reviewers do not read "
                "(version control internals and ll-loop's own records are not the work)"
            )
        return resolved

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root.resolve()).as_posix()

    def files(self, start: Path | None = None) -> Iterator[Path]:
        """Every regular file under `start` (default: the root), symlinks leading out skipped."""
        root = self.root.resolve()
        top = start or root
        if top.is_file():
            yield top
            return
        for directory, subdirs, names in os.walk(top, followlinks=False):
            subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRS)
            for name in sorted(names):
                path = Path(directory) / name
                if path.is_symlink() and not path.resolve().is_relative_to(root):
                    continue
                if path.is_file():  # not a FIFO (reading one blocks forever), socket or device
                    yield path

    def run(self, name: str, arguments: Mapping[str, Any]) -> str:
        """The answer of one tool call (Refused when it is not allowed)."""
        if name == "read_file":
            return self.read_file(
                str(arguments.get("path", "")),
                int(arguments.get("offset") or 0),
                arguments.get("limit"),
            )
        if name == "glob":
            return self.glob(str(arguments.get("pattern", "")))
        if name == "grep":
            return self.grep(
                str(arguments.get("pattern", "")),
                str(arguments.get("path") or "."),
                arguments.get("glob"),
            )
        raise Refused(f"there is no tool {name!r}; use read_file, glob or grep")

    def read_file(self, given: str, offset: int = 0, limit: Any = None) -> str:
        """Lines `offset`.. of a text file, numbered; read only as far as the answer needs, so
        a file of many gigabytes costs no more memory than a small one."""
        path = self.resolve(given)
        if not path.is_file():
            raise Refused(f"{given!r} is not a file of the workspace")
        end = None if limit is None else offset + max(1, int(limit))
        with path.open("rb") as raw:
            if b"\0" in raw.read(8192):
                return f"({given} is a binary file of {path.stat().st_size:,} bytes)"
            raw.seek(0)
            text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
            shown, size = [], 0
            for n, line in enumerate(_bounded_lines(text)):
                if n >= offset:
                    shown.append(f"{n + 1:>5}  {line}")
                    size += len(shown[-1]) + 1
                if (end is not None and n + 1 >= end) or size > READ_CHARS:
                    break
        answer = "\n".join(shown)
        if len(answer) > READ_CHARS:
            answer = answer[:READ_CHARS] + "\n[... cut: read a smaller range with offset/limit ...]"
        return answer or f"({given} is empty)"

    def glob(self, pattern: str) -> str:
        if not pattern:
            raise Refused("give a glob pattern, e.g. **/*.py")
        matcher = glob_regex(pattern)
        found = [rel for rel in (self.relative(p) for p in self.files()) if matcher.fullmatch(rel)]
        if not found:
            return f"no file matches {pattern!r}"
        shown = found[:MAX_LISTED]
        more = f"\n[... {len(found) - MAX_LISTED} more ...]" if len(found) > MAX_LISTED else ""
        return "\n".join(shown) + more

    def grep(self, pattern: str, given: str = ".", only: Any = None) -> str:
        try:
            wanted = re.compile(pattern)
        except re.error as exc:
            raise Refused(f"{pattern!r} is not a regular expression: {exc}") from None
        start = self.resolve(given)
        matcher = glob_regex(str(only)) if only else None
        hits: list[str] = []
        for path in self.files(start):
            rel = self.relative(path)
            if matcher is not None and not matcher.fullmatch(rel):
                continue
            try:
                if path.stat().st_size > GREP_FILE_BYTES:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if wanted.search(line):
                    hits.append(f"{rel}:{number}: {line[:300]}")
                    if len(hits) >= MAX_MATCHES:
                        return "\n".join(hits) + "\n[... more matches not shown ...]"
        return "\n".join(hits) or f"no line matches {pattern!r}"


def _bounded_lines(text: io.TextIOWrapper) -> Iterator[str]:
    """The lines of `text` without their ends, each cut to `READ_CHARS` characters (the rest
    of a longer line is read past, never held)."""
    while line := text.readline(READ_CHARS):
        rest = line
        while rest and not rest.endswith("\n"):
            rest = text.readline(READ_CHARS)
        yield line.rstrip("\n")


@lru_cache(maxsize=128)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob (`*`, `?`, `[...]`, `**` across directories) as a regex on relative paths."""
    out, i = "", 0
    pattern = pattern.removeprefix("./")
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif char == "*":
            out, i = out + "[^/]*", i + 1
        elif char == "?":
            out, i = out + "[^/]", i + 1
        elif char == "[":
            close = pattern.find("]", i + 1)
            if close < 0:
                out, i = out + re.escape(char), i + 1
            else:
                members = pattern[i + 1 : close]  # only a leading ! negates: [a!] holds "!"
                members = "^" + members[1:] if members.startswith("!") else members
                out, i = out + "[" + members + "]", close + 1
        else:
            out, i = out + re.escape(char), i + 1
    return re.compile(out)
