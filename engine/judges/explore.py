"""The workspace tools of an exploring reviewer: read, glob and grep, confined to the workspace.

A path is resolved (symlinks followed) and must stay inside the workspace: `../x`, an absolute
path elsewhere, or a symlink pointing out are refused with a tool error the model sees, never
read. Walks skip `.git` and `.loops` and never descend through symlinked directories. Answers are
bounded, so one tool call cannot flood the reviewer's context, and so is their time: globs are
matched without backtracking, and grep's regular expression (which may backtrack) is searched
in a child process with a time limit.
"""

from __future__ import annotations

import fnmatch
import io
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.processes.group import run_process

MAX_TOOL_STEPS = 20
READ_CHARS = 40_000
MAX_LISTED = 200
MAX_MATCHES = 100
GREP_FILE_BYTES = 2_000_000
GREP_SECONDS = 10.0  # a grep call's time limit: its search runs in a child process
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
    grep_seconds: float = GREP_SECONDS

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
        matches = glob_matcher(pattern)
        found = [rel for rel in (self.relative(p) for p in self.files()) if matches(rel)]
        if not found:
            return f"no file matches {pattern!r}"
        shown = found[:MAX_LISTED]
        more = f"\n[... {len(found) - MAX_LISTED} more ...]" if len(found) > MAX_LISTED else ""
        return "\n".join(shown) + more

    def grep(self, pattern: str, given: str = ".", only: Any = None) -> str:
        """Matching lines, searched in a child process that ends after `GREP_SECONDS`: a
        pattern that backtracks (`(a+)+$` on a line of a's) runs in C holding the GIL, which
        froze every thread of the run, its stop included, for as long as it took (hours)."""
        try:
            re.compile(pattern)
        except (re.error, OverflowError, RecursionError) as exc:  # a{99999999999}, ((((...
            raise Refused(f"{pattern!r} is not a regular expression: {exc}") from None
        start = self.resolve(given)
        matches = glob_matcher(str(only)) if only else None
        named = ((self.relative(path), os.fsdecode(path)) for path in self.files(start))
        files = [(rel, path) for rel, path in named if matches is None or matches(rel)]
        job = {
            "pattern": pattern,
            "files": files,
            "max_bytes": GREP_FILE_BYTES,
            "max_matches": MAX_MATCHES,
            "line_chars": 300,
            "alarm": math.ceil(self.grep_seconds) + 2,
        }
        ran = run_process(
            [sys.executable, "-I", "-S", "-c", _GREP_PROGRAM],
            timeout=self.grep_seconds,
            stdin=json.dumps(job),
            max_output=MAX_MATCHES * 2_000,
            grace=0.5,
        )
        hits = ran.output.splitlines()
        if ran.timed_out:
            hits.append(
                f"[... the search stopped after {self.grep_seconds:g} s: the pattern backtracks "
                "too much (nested repetition such as (a+)+); simplify it ...]"
            )
        elif ran.exit_code != 0:
            raise Refused(f"the search failed: {(ran.stderr or ran.spawn_error or '').strip()}")
        elif len(hits) >= MAX_MATCHES:
            hits.append("[... more matches not shown ...]")
        return "\n".join(hits) or f"no line matches {pattern!r}"


# The grep child: standard library only, started isolated (-I -S) so it starts in ~15 ms. It
# prints each hit as found, so what a stopped search found is still shown, and its own alarm
# ends it even when the run that started it is gone (SIGALRM's default action).
_GREP_PROGRAM = """
import json, re, signal, sys
job = json.load(sys.stdin)
signal.alarm(job["alarm"])
wanted, out, found = re.compile(job["pattern"]), sys.stdout.buffer, 0
for rel, path in job["files"]:
    try:
        with open(path, "rb") as file:
            data = file.read(job["max_bytes"] + 1)
    except OSError:
        continue
    if len(data) > job["max_bytes"] or b"\\0" in data[:8192]:
        continue
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if wanted.search(line):
            hit = f"{rel}:{number}: {line[: job['line_chars']]}"
            out.write(hit.encode("utf-8", "backslashreplace") + b"\\n")
            out.flush()
            found += 1
            if found >= job["max_matches"]:
                sys.exit(0)
"""


def _bounded_lines(text: io.TextIOWrapper) -> Iterator[str]:
    """The lines of `text` without their ends, each cut to `READ_CHARS` characters (the rest
    of a longer line is read past, never held)."""
    while line := text.readline(READ_CHARS):
        rest = line
        while rest and not rest.endswith("\n"):
            rest = text.readline(READ_CHARS)
        yield line.rstrip("\n")


@lru_cache(maxsize=128)
def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """Whether a relative path matches a glob: `*`, `?` and `[...]` (`[!...]` negates) within
    one name, and `**` as a whole name for any number of directories (none included).

    Matched name by name, each with fnmatch's translation (which does not backtrack), the
    `**` names followed as a set of positions: linear in the path. One regex of the whole glob
    backtracked: ten `**/` before a name took 48 s per path, which a model (or a prompt
    injection in what it read) could ask for.
    """
    names: list[str] = []
    for name in pattern.removeprefix("./").split("/"):
        if not (name == "**" and names and names[-1] == "**"):  # `**/**` is `**`
            names.append(name)
    compiled = [None if n == "**" else re.compile(fnmatch.translate(n)) for n in names]
    end = len(compiled)

    def reach(positions: set[int]) -> set[int]:
        """`positions` and every position after `**` names, which may match no directory."""
        out, stack = set(), list(positions)
        while stack:
            at = stack.pop()
            if at not in out:
                out.add(at)
                if at < end and compiled[at] is None:
                    stack.append(at + 1)
        return out

    def matches(path: str) -> bool:
        positions = reach({0})
        for part in path.split("/"):
            after: set[int] = set()
            for at in positions:
                if at == end:
                    continue
                glob = compiled[at]
                if glob is None:
                    after.add(at)  # `**` takes this name and may take more
                elif glob.match(part):
                    after.add(at + 1)
            positions = reach(after)
            if not positions:
                return False
        return end in positions

    return matches
