"""A fresh workspace per case, so file-changing subjects never see each other (IO).

- `worktree`: a detached git worktree of the project at HEAD (`git worktree add`): the
  committed project, whatever the working copy holds;
- `copy`: a new directory holding a copy of the suite's `workspace:` paths (none: empty);
- `none`: the directory the suite started in (no isolation: for subjects that change nothing).

`auto` is a worktree in a git repository, else a copy. The case's files (its dataset folder but
`annotations.yaml`, or `input.yaml` written from inline `input:`) are put at the workspace's top,
where the subject finds them. Workspaces live outside the project, under the run's scratch root
(`<tmp>/ll-suite-<run>/`, or `/dev/shm` for small copies), next to a per-case scratch directory
the workspace never shows (spilled outputs). `remove` deletes both and unregisters a worktree.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from engine.model.suite import Case, Suite
from engine.runtime.workspace import git_toplevel

GIT_TIMEOUT = 120.0
SKIPPED = frozenset({".git", ".loops", "__pycache__", ".venv", "node_modules"})
_GIT_LOCK = threading.Lock()  # git serialises worktree bookkeeping; so do we, in-process


class WorkspaceError(Exception):
    """A workspace could not be made: the case is errored with this sentence."""


@dataclass(frozen=True)
class Workspace:
    path: Path
    scratch: Path
    mode: str  # worktree | copy
    git_root: Path | None
    case_files: tuple[str, ...]  # names put there for the case (not the subject's changes)
    # (mtime, size) of every file when the case starts, when known without walking the tree
    # (a copy holding only the case's own files): the "before" of modified_files.
    known_files: dict[str, tuple[int, int]] | None = None


SHM = Path("/dev/shm")
SMALL_COPY_BYTES = 64 * 1024 * 1024  # a copy workspace this small may live in memory
SHM_HEADROOM_BYTES = 1024 * 1024 * 1024


def scratch_root(run_id: str, *, in_memory: bool = False) -> Path:
    """Where one run's workspaces live: `$LL_SUITE_WORKSPACES`, else (small copies) the memory
    file system `/dev/shm` when there is one, else the temporary directory."""
    chosen = os.environ.get("LL_SUITE_WORKSPACES")
    if chosen:
        return Path(chosen) / f"ll-suite-{run_id}"
    if in_memory and _shm_usable():
        return SHM / f"ll-suite-{run_id}"
    return Path(tempfile.gettempdir()) / f"ll-suite-{run_id}"


def scratch_roots(run_id: str) -> list[Path]:
    """Every place a run's workspaces may be (a resume cleans them all)."""
    return list(dict.fromkeys([scratch_root(run_id, in_memory=True), scratch_root(run_id)]))


def _shm_usable() -> bool:
    """A memory file system with room to spare: creating and removing a directory there costs
    ~0.1 ms, against 2-7 ms on a busy disk (thousands of cases make that the run's cost)."""
    try:
        stats = os.statvfs(SHM)
    except OSError:
        return False
    return os.access(SHM, os.W_OK) and stats.f_bavail * stats.f_frsize > SHM_HEADROOM_BYTES


def copy_size(paths: tuple[str, ...], project_root: Path, limit: int = SMALL_COPY_BYTES) -> int:
    """Bytes the `workspace:` paths hold (counting stops past `limit`)."""
    total = 0
    for given in paths:
        start = project_root / given
        if start.is_file():
            total += start.stat().st_size
            continue
        for directory, subdirs, names in os.walk(start):
            subdirs[:] = [d for d in subdirs if d not in SKIPPED]
            for name in names:
                try:
                    total += (Path(directory) / name).lstat().st_size
                except OSError:
                    continue
                if total > limit:
                    return total
    return total


def has_head(root: Path) -> bool:
    """A repository with at least one commit (a worktree needs one)."""
    done = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    return done is not None and done.returncode == 0


def isolation_of(suite: Suite, project_root: Path) -> tuple[str, Path | None]:
    """(`worktree` | `copy` | `none`, the git root) for this suite in this project."""
    if suite.isolation == "none":
        return "none", None
    top = git_toplevel(project_root) if suite.isolation != "copy" else None
    if suite.isolation == "worktree" and (top is None or not has_head(top)):
        raise WorkspaceError(
            f"isolation: worktree needs a git repository with a commit at {project_root}"
        )
    if top is not None and has_head(top):
        return "worktree", top
    return "copy", None


def create(
    suite: Suite,
    case: Case,
    *,
    root: Path,
    label: str,
    project_root: Path,
    mode: str,
    git_root: Path | None,
    cwd: Path | None = None,
) -> Workspace:
    """A new workspace `root/<label>` for `case`, with `root/<label>.scratch` (made only when
    something is spilled there) beside it; WorkspaceError when it cannot be made."""
    # Paths as text: a case makes a few of them, and pathlib costs more than the file system
    # does on a memory file system (thousands of cases).
    text = os.path.join(root, label)
    path, scratch = Path(text), Path(text + ".scratch")
    if mode == "none":  # where the suite started: nothing is made, copied or removed
        return Workspace(cwd or project_root, scratch, mode, None, ())
    if mode == "worktree":
        assert git_root is not None
        shutil.rmtree(path, ignore_errors=True)  # left by a run that was killed
        root.mkdir(parents=True, exist_ok=True)
        _add_worktree(git_root, path)
    else:
        try:
            os.mkdir(text)
        except FileExistsError:  # left by a run that was killed: start clean
            shutil.rmtree(text, ignore_errors=True)
            os.mkdir(text)
        except FileNotFoundError:  # the root is made by the driver, unless this worker is
            os.makedirs(text)  # elsewhere
        _copy_paths(suite.workspace, project_root, path)
    placed, known = _place_case(case, text)
    if mode == "worktree" or suite.workspace:
        known = None  # the project's files are there too: the caller takes a snapshot
    return Workspace(path, scratch, mode, git_root, placed, known)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _add_worktree(git_root: Path, path: Path) -> None:
    last = ""
    for attempt in range(3):  # another git process may hold a lock for a moment
        with _GIT_LOCK:
            done = _git(git_root, "worktree", "add", "--detach", "--quiet", str(path), "HEAD")
        if done is not None and done.returncode == 0:
            return
        last = (done.stderr.strip().splitlines() or ["git did not answer"])[-1] if done else ""
        time.sleep(0.2 * (attempt + 1))
    raise WorkspaceError(f"cannot make a git worktree for the case: {last or 'git failed'}")


def _copy_paths(paths: tuple[str, ...], project_root: Path, into: Path) -> None:
    for given in paths:
        source = (project_root / given).resolve()
        try:
            relative = source.relative_to(project_root.resolve())
        except ValueError:
            raise WorkspaceError(f"workspace path {given!r} is outside the project") from None
        target = into / relative
        try:
            if source.is_dir():
                shutil.copytree(
                    source,
                    target,
                    symlinks=True,
                    ignore=shutil.ignore_patterns(*SKIPPED),
                    dirs_exist_ok=True,
                )
            elif source.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target, follow_symlinks=False)
            else:
                raise WorkspaceError(f"workspace path {given!r} does not exist")
        except OSError as exc:
            raise WorkspaceError(f"cannot copy workspace path {given!r}: {exc}") from None


def _place_case(case: Case, into: str) -> tuple[tuple[str, ...], dict[str, tuple[int, int]] | None]:
    """Put the case's files at the workspace's top (`input.yaml` as it was read, or written
    from inline `input:`); never over a file of the project. Annotations are facts for the
    judges, not for the subject: they are not copied. Returns the names placed, and their
    (mtime, size) when they are plain files."""
    text = case.input_text
    if text is None:
        text = yaml.safe_dump(case.inputs, sort_keys=False, allow_unicode=True)
    known: dict[str, tuple[int, int]] | None = {
        "input.yaml": _write_new(os.path.join(into, "input.yaml"), text)
    }
    for name in case.files:
        source, target = Path(str(case.folder), name), Path(into, name)
        if os.path.lexists(target):
            raise WorkspaceError(f"the case file {name!r} would replace the project's own {name!r}")
        try:
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True)
                known = None
            else:
                shutil.copy(source, target, follow_symlinks=False)
                if known is not None:
                    info = target.stat()
                    known[name] = (info.st_mtime_ns, info.st_size)
        except OSError as exc:
            raise WorkspaceError(f"cannot copy the case file {name!r}: {exc}") from None
    return ("input.yaml", *case.files), known


def _write_new(path: str, text: str) -> tuple[int, int]:
    """Create `path` holding `text`; its (mtime, size)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        raise WorkspaceError("the project has its own input.yaml at the workspace's top") from None
    try:
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
        info = os.fstat(fd)
    finally:
        os.close(fd)
    return info.st_mtime_ns, info.st_size


def remove(ws: Workspace) -> None:
    """Delete the workspace and its scratch directory (and unregister a worktree)."""
    if ws.mode == "none":
        if ws.scratch.exists():
            shutil.rmtree(ws.scratch, ignore_errors=True)
        return
    if ws.mode == "worktree" and ws.git_root is not None:
        with _GIT_LOCK:
            done = _git(ws.git_root, "worktree", "remove", "--force", str(ws.path))
        if done is None or done.returncode != 0:
            shutil.rmtree(ws.path, ignore_errors=True)
            with _GIT_LOCK:
                _git(ws.git_root, "worktree", "prune")
    _remove_tree(ws.path)
    scratch = str(ws.scratch)
    if os.path.exists(scratch):
        shutil.rmtree(scratch, ignore_errors=True)


def _remove_tree(path: Path) -> None:
    """Delete a directory: a flat one (most cases) directly, else with `rmtree`."""
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    raise IsADirectoryError(entry.path)
                os.unlink(entry.path)
        os.rmdir(path)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def clean_run(roots: list[Path], git_root: Path | None, keep: frozenset[str] = frozenset()) -> None:
    """Remove what a killed run left under `roots` (but the `keep` labels), prune worktrees."""
    for root in roots:
        if not root.is_dir():
            continue
        for entry in root.iterdir():
            if entry.name.removesuffix(".scratch") not in keep:
                shutil.rmtree(entry, ignore_errors=True)
        with contextlib.suppress(OSError):
            if not any(root.iterdir()):
                root.rmdir()
    if git_root is not None:
        with _GIT_LOCK:
            _git(git_root, "worktree", "prune")
