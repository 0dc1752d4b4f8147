"""A fresh workspace per case, so file-changing subjects never see each other (IO).

- `worktree`: a detached git worktree of the project at HEAD (`git worktree add`): the
  committed project, whatever the working copy holds;
- `copy`: a new directory holding a copy of the suite's `workspace:` paths (none: empty).

`auto` is a worktree in a git repository, else a copy. The case's files (its dataset folder but
`annotations.yaml`, or `input.yaml` written from inline `input:`) are put at the workspace's top,
where the subject finds them. Workspaces live outside the project, under the run's scratch root
(`<tmp>/ll-suite-<run>/`), next to a per-case scratch directory the workspace never shows (the
prompt file, spilled outputs). `remove` deletes both and unregisters a worktree.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from engine.load.dataset import ANNOTATION_NAMES
from engine.model.suite import Case, Suite

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


def scratch_root(run_id: str) -> Path:
    """Where one run's workspaces live."""
    return Path(tempfile.gettempdir()) / f"ll-suite-{run_id}"


def git_toplevel(path: Path) -> Path | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    top = done.stdout.strip()
    return Path(top) if done.returncode == 0 and top else None


def git_state(cwd: Path) -> tuple[str | None, bool | None, str | None]:
    """(HEAD commit, dirty, branch) where the run starts; Nones outside a repository."""
    done = _git(cwd, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD")
    if done is None or done.returncode != 0:
        return None, None, None
    head, _, ref = done.stdout.strip().partition("\n")
    status = _git(cwd, "status", "--porcelain")
    dirty = None if status is None or status.returncode != 0 else bool(status.stdout.strip())
    branch = ref.strip().removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
    return head.strip(), dirty, branch


def has_head(root: Path) -> bool:
    """A repository with at least one commit (a worktree needs one)."""
    done = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    return done is not None and done.returncode == 0


def isolation_of(suite: Suite, project_root: Path) -> tuple[str, Path | None]:
    """(`worktree` | `copy`, the git root) for this suite in this project."""
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
) -> Workspace:
    """A new workspace `root/<label>/ws` for `case` (WorkspaceError when it cannot be made)."""
    base = root / label
    path, scratch = base / "ws", base / "scratch"
    if base.exists():  # left by a run that was killed: start clean
        shutil.rmtree(base, ignore_errors=True)
    scratch.mkdir(parents=True)
    if mode == "worktree":
        assert git_root is not None
        _add_worktree(git_root, path)
    else:
        path.mkdir()
        _copy_paths(suite.workspace, project_root, path)
    return Workspace(path, scratch, mode, git_root, _place_case(case, path))


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


def _place_case(case: Case, into: Path) -> tuple[str, ...]:
    """Put the case's files at the workspace's top; never over a file of the project."""
    placed: list[str] = []
    if case.folder is None:
        target = into / "input.yaml"
        if target.exists():
            raise WorkspaceError("the project has its own input.yaml at the workspace's top")
        target.write_text(yaml.safe_dump(case.inputs, sort_keys=False, allow_unicode=True))
        return ("input.yaml",)
    for source in sorted(Path(case.folder).iterdir()):
        if source.name in ANNOTATION_NAMES:
            continue  # facts for the judges, not for the subject
        target = into / source.name
        if target.exists() or target.is_symlink():
            raise WorkspaceError(
                f"the case file {source.name!r} would replace the project's own {source.name!r}"
            )
        try:
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target, follow_symlinks=False)
        except OSError as exc:
            raise WorkspaceError(f"cannot copy the case file {source.name!r}: {exc}") from None
        placed.append(source.name)
    return tuple(placed)


def remove(ws: Workspace) -> None:
    """Delete the workspace and its scratch directory (and unregister a worktree)."""
    if ws.mode == "worktree" and ws.git_root is not None:
        with _GIT_LOCK:
            done = _git(ws.git_root, "worktree", "remove", "--force", str(ws.path))
        if done is None or done.returncode != 0:
            shutil.rmtree(ws.path, ignore_errors=True)
            with _GIT_LOCK:
                _git(ws.git_root, "worktree", "prune")
    shutil.rmtree(ws.path.parent, ignore_errors=True)


def clean_run(root: Path, git_root: Path | None, keep: frozenset[str] = frozenset()) -> None:
    """Remove what a killed run left under `root` (but the `keep` labels), prune worktrees."""
    if root.is_dir():
        for entry in root.iterdir():
            if entry.name not in keep:
                shutil.rmtree(entry, ignore_errors=True)
        with contextlib.suppress(OSError):
            if not any(root.iterdir()):
                root.rmdir()
    if git_root is not None:
        with _GIT_LOCK:
            _git(git_root, "worktree", "prune")
