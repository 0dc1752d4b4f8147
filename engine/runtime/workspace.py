"""What a piece of work changed in its workspace, and the texts judges read (IO).

`modified_files` comes from git when the workspace is a git work tree (the working-tree changes
against HEAD within the scope: what `git status` shows), else from a before/after snapshot of the
scope (size and mtime of every file) around the state's action. `read_files` collects the texts
of files and directories for the outputs record, bounded.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.runtime.provenance import GIT_TIMEOUT, git_output

SKIPPED = frozenset({".git", ".loops", "__pycache__", "node_modules", ".venv"})
MAX_SNAPSHOT_FILES = 50_000
MAX_FILES = 200
FILE_BYTES = 256 * 1024
TOTAL_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Baseline:
    """The workspace before an action: None entries when git answers instead."""

    root: Path
    scope: tuple[str, ...]
    git: bool
    files: dict[str, tuple[int, int]] | None = None


def git_toplevel(root: Path) -> Path | None:
    """The top of the git work tree holding `root`; None outside one (or without git)."""
    out = git_output(["rev-parse", "--show-toplevel"], root)
    top = os.fsdecode(out).strip() if out is not None else ""
    return Path(top) if top else None


def baseline(root: Path, scope: Sequence[str] | None, *, git: bool | None = None) -> Baseline:
    """Take what is needed to tell, after the action, which files it changed (`git`: whether
    `root` is a git work tree, when the caller knows; else git is asked)."""
    paths = tuple(scope) if scope else (".",)
    if git if git is not None else git_toplevel(root) is not None:
        return Baseline(root, paths, True)
    return Baseline(root, paths, False, dict(_snapshot(root, paths)))


def _walk(root: Path, scope: Iterable[str]) -> Iterable[Path]:
    for entry in scope:
        start = (root / entry).resolve()
        if start.is_file():
            yield start
            continue
        for directory, subdirs, names in os.walk(start):
            subdirs[:] = [d for d in subdirs if d not in SKIPPED]
            for name in names:
                yield Path(directory) / name


def _scan(directory: str, prefix: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """The files under `directory` as (relative path, (mtime, size)), as `_walk` would list
    them (no links to directories followed), with one `scandir` per directory: a suite takes
    two snapshots per case, and building a Path per file cost more than the files."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir():
                if entry.name not in SKIPPED and not entry.is_symlink():
                    yield from _scan(entry.path, f"{prefix}{entry.name}/")
                continue
            stat = entry.stat()
        except OSError:
            continue
        yield prefix + entry.name, (stat.st_mtime_ns, stat.st_size)


def _snapshot(root: Path, scope: Iterable[str]) -> Iterable[tuple[str, tuple[int, int]]]:
    scope = tuple(scope)
    if scope == (".",):
        start = str(root if root.is_absolute() else root.resolve())
        for count, item in enumerate(_scan(start, "")):
            if count >= MAX_SNAPSHOT_FILES:
                return
            yield item
        return
    base = root.resolve()
    for count, path in enumerate(_walk(base, scope)):
        if count >= MAX_SNAPSHOT_FILES:
            return
        try:
            stat = path.stat()
            rel = path.relative_to(base).as_posix()
        except (OSError, ValueError):
            continue
        yield rel, (stat.st_mtime_ns, stat.st_size)


def modified_files(before: Baseline) -> list[str]:
    """Files (relative to the root) changed, added or deleted: against HEAD with git, else
    since `before` was taken."""
    if before.git:
        found = _git_changes(before.root, before.scope)
        if found is not None:
            return found
    after = dict(_snapshot(before.root, before.scope))
    earlier = before.files or {}
    changed = {p for p, s in after.items() if earlier.get(p) != s}
    changed |= set(earlier) - set(after)
    return sorted(changed)


def _git_changes(root: Path, scope: Sequence[str]) -> list[str] | None:
    try:
        out = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--",
                *scope,
            ],
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    top = git_toplevel(root)
    if top is None:
        return None
    entries = out.stdout.decode("utf-8", "replace").split("\0")
    found: list[str] = []
    skip_next = False
    for entry in entries:
        if skip_next:  # the old name of a rename
            skip_next = False
            continue
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        skip_next = "R" in status or "C" in status
        absolute = (top / path).resolve()
        try:
            rel = absolute.relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        if rel.split("/", 1)[0] not in SKIPPED:
            found.append(rel)
    return sorted(set(found))


def read_files(root: Path, paths: Iterable[str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Texts of `paths` (files, or directories read whole) relative to `root`, bounded: the
    `files` of a record, and for each directory given the relative paths of its files."""
    base = root.resolve()
    files: dict[str, Any] = {}
    per_dir: dict[str, list[str]] = {}
    total = 0
    for given in paths:
        start = (base / given).resolve()
        listed: list[str] = []
        candidates = [start] if start.is_file() else sorted(_walk(base, [given]))
        for path in candidates:
            if len(files) >= MAX_FILES or total >= TOTAL_BYTES:
                break
            try:
                rel = path.relative_to(base).as_posix()
                data = path.read_bytes()[:FILE_BYTES]
            except (OSError, ValueError):
                continue
            listed.append(rel)
            if rel in files:
                continue
            total += len(data)
            if b"\0" in data[:8192]:
                files[rel] = {"_binary": True, "path": rel, "name": path.name}
            else:
                files[rel] = data.decode("utf-8", "replace")
        if not start.is_file():
            per_dir[given] = listed
    return files, per_dir
