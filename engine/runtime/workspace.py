"""What a piece of work changed in its workspace, and the texts judges read (IO).

`modified_files` comes from git when the workspace is a git work tree (the working-tree changes
against HEAD within the scope: what `git status` shows), else from a before/after snapshot of the
scope (size and mtime of every file) around the state's action. `read_files` collects the texts
of files and directories for the outputs record, bounded.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable, Iterator, Sequence
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


def _under(directory: str, prefix: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(relative path, entry) of everything under `directory` but directories, with one
    `scandir` per directory: real directories are entered (but `SKIPPED`), links to them are
    not (they are listed like files)."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED:
                    yield from _under(entry.path, f"{prefix}{entry.name}/")
                continue
        except OSError:
            continue
        yield prefix + entry.name, entry


def _scan(directory: str, prefix: str) -> Iterable[tuple[str, tuple[int, int]]]:
    """The files under `directory` as (relative path, (mtime, size)), as `_walk` would list
    them (no links to directories followed): a suite takes two snapshots per case, and
    building a Path per file cost more than the files."""
    for rel, entry in _under(directory, prefix):
        try:
            if entry.is_dir():  # a link to a directory
                continue
            stat = entry.stat()
        except OSError:
            continue
        yield rel, (stat.st_mtime_ns, stat.st_size)


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
    `files` of a record, and for each directory given the relative paths of its files.

    Only regular files inside `root` are read, and no symbolic link is followed (at the top or
    inside a directory): a link could carry a file from outside the workspace into the record,
    and opening a FIFO or a device could block forever. What is passed over is left out."""
    base = root.resolve()
    files: dict[str, Any] = {}
    per_dir: dict[str, list[str]] = {}
    total = 0
    for given in paths:
        kind, found = _entries(base, given)
        listed: list[str] = []
        for rel in found:
            if len(files) >= MAX_FILES or total >= TOTAL_BYTES:
                break
            data = _read_regular(base / rel)
            if data is None:
                continue
            listed.append(rel)
            if rel in files:
                continue
            total += len(data)
            if b"\0" in data[:8192]:
                files[rel] = {"_binary": True, "path": rel, "name": rel.rsplit("/", 1)[-1]}
            else:
                files[rel] = data.decode("utf-8", "replace")
        if kind != "file":
            per_dir[given] = listed
    return files, per_dir


def _entries(base: Path, given: str) -> tuple[str, list[str]]:
    """("file" | "dir" | "none", the relative paths of the regular files `given` names): the
    path itself, or the files under it; nothing when it leaves `base` or passes a link."""
    rel = os.path.normpath(given)
    if os.path.isabs(rel) or rel == ".." or rel.startswith("../"):
        return "none", []
    rel = "" if rel == "." else rel
    where = str(base)
    try:
        mode = os.lstat(where).st_mode
        for part in rel.split("/") if rel else ():
            where = os.path.join(where, part)
            mode = os.lstat(where).st_mode
            if stat.S_ISLNK(mode):
                return "none", []
    except OSError:
        return "none", []
    if stat.S_ISREG(mode):
        return "file", [rel]
    if not stat.S_ISDIR(mode):
        return "none", []
    return "dir", sorted(_regular_files(where, f"{rel}/" if rel else ""), key=_path_order)


def _path_order(rel: str) -> tuple[str, ...]:
    return tuple(rel.split("/"))


def _regular_files(directory: str, prefix: str) -> Iterable[str]:
    """Regular files under `directory` (links, FIFOs, sockets and devices passed over; links
    to directories not entered)."""
    for rel, entry in _under(directory, prefix):
        try:
            if entry.is_file(follow_symlinks=False):
                yield rel
        except OSError:
            continue


def _read_regular(path: Path) -> bytes | None:
    """The first FILE_BYTES of a regular file; None for anything else. O_NONBLOCK and
    O_NOFOLLOW guard against a file replaced by a FIFO or a link since it was listed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = FILE_BYTES
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
