"""The project root and its `.loops/` directory: where runs, locks and history live.

The root is found the way git finds a repository: from the working directory upward, the
nearest directory holding `.loops/`; when there is none, the nearest holding `.git` (a
directory, or the file of a worktree or submodule); when there is neither, the working directory
itself. Like git, the search stops at a filesystem boundary. So `ll-loop` started in `repo/` and
in `repo/src/` uses the same `repo/.loops/`, and the two runs see each other's scope locks.

Writing under `.loops/` never follows a symbolic link the engine did not create (it creates
none): a link planted there could otherwise make a resume truncate, or an install overwrite,
any file the user can write. Directories are created component by component with each one
checked (`ensure_dir`); files are opened with `O_NOFOLLOW` (`open_file`). A link is refused
with `UnsafePath`, one sentence naming it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from engine.model.errors import LoopError

LOOPS_DIR = ".loops"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnsafePath(LoopError):
    """A path ll-loop would write through is a symbolic link it did not create."""

    code = "UNSAFE_PATH"


def project_root(start: Path | None = None) -> Path:
    """The root of the project `start` (default: the working directory) belongs to.

    A marker in a directory anyone may write to (`/tmp`), or one owned by another user, is
    passed over: anyone could have put it there, and it would otherwise claim every directory
    below it (git ignores such repositories for the same reason).
    """
    here = Path.cwd() if start is None else Path(os.path.abspath(start))
    try:
        device = here.stat().st_dev
    except OSError:
        return here
    first_git: Path | None = None
    ceilings = _ceilings()
    for folder in (here, *here.parents):
        if folder in ceilings:
            break  # LL_CEILING_DIRECTORIES: not looked at, nor anything above it
        try:
            info = folder.stat()
        except OSError:
            break
        if info.st_dev != device:
            break  # a mount point: the project does not reach beyond it
        if info.st_mode & stat.S_IWOTH:
            continue  # world-writable (/tmp): no marker here can be trusted
        if _owned_dir(folder / LOOPS_DIR):
            return folder
        if first_git is None and _owned(folder / ".git"):
            first_git = folder
    return first_git or here


def _ceilings() -> frozenset[Path]:
    """`LL_CEILING_DIRECTORIES` (paths joined by `:`), as git's `GIT_CEILING_DIRECTORIES`: the
    search for a marker stops below each. A test suite sets it to its temporary directory, so a
    stray `/tmp/.loops` never becomes the project of every test under `/tmp`."""
    given = os.environ.get("LL_CEILING_DIRECTORIES", "")
    return frozenset(Path(os.path.abspath(p)) for p in given.split(os.pathsep) if p)


def workspace_path_problem(given: str, project_root: Path) -> str | None:
    """Why a suite's `workspace:` path cannot be copied into a case (None: it can): the suite
    run refuses it, and lint (LL096) reports it first."""
    source = (project_root / given).resolve()
    try:
        source.relative_to(project_root.resolve())
    except ValueError:
        return f"workspace path {given!r} is outside the project root {project_root}"
    if not source.exists():
        return f"workspace path {given!r} does not exist under the project root {project_root}"
    return None


def _owned(path: Path) -> bool:
    """`path` exists (a link counts as itself) and belongs to this user."""
    try:
        return os.lstat(path).st_uid == os.geteuid()
    except OSError:
        return False


def _owned_dir(path: Path) -> bool:
    """`path` is a directory (or a link to one, refused later when written) of this user."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode) and os.lstat(path).st_uid == os.geteuid()
    except OSError:
        return False


def loops_dir(root: Path | None = None) -> Path:
    """`<root>/.loops`, for the project of the working directory when `root` is None."""
    return (project_root() if root is None else root) / LOOPS_DIR


def refuse_links(path: Path) -> None:
    """Raise `UnsafePath` when `path`, or a directory between `.loops/` and it, is a link.

    Components that do not exist yet are fine (they will be created by us). A path outside any
    `.loops/` only has its last component checked.
    """
    parts = (*_below_loops(Path(path).parent), Path(path))
    for index, part in enumerate(parts):
        try:
            mode = os.lstat(part).st_mode
        except FileNotFoundError:
            return
        except NotADirectoryError:  # a file where a directory goes (`.loops` a plain file)
            raise _not_a_directory(parts[index - 1] if index else part.parent) from None
        if stat.S_ISLNK(mode):
            raise _unsafe(part)


def ensure_dir(path: Path) -> Path:
    """Create directory `path` and its missing parents; under `.loops/` no link is followed."""
    path = Path(path)
    chain = _below_loops(path)
    if not chain:  # a directory the user named: theirs to arrange
        path.mkdir(parents=True, exist_ok=True)
        return path
    chain[0].parent.mkdir(parents=True, exist_ok=True)
    for part in chain:
        try:
            os.mkdir(part)
            continue
        except FileExistsError:
            mode = os.lstat(part).st_mode
        if stat.S_ISLNK(mode):
            raise _unsafe(part)
        if not stat.S_ISDIR(mode):
            raise _not_a_directory(part)
    return path


def refuse_non_directory(*paths: Path) -> None:
    """Raise `UnsafePath` when one of `paths` exists but is not a directory (a file where
    `.loops` or `.loops/runs` goes): a command reading them says so, as one writing them does,
    instead of reading "no runs" there."""
    for path in paths:
        if path.exists() and not path.is_dir():
            raise _not_a_directory(path)


def _not_a_directory(path: Path) -> UnsafePath:
    return UnsafePath(
        f"{path} is not a directory", hint="move the file aside; ll-loop needs a directory"
    )


def open_file(
    path: Path | str | bytes, flags: int, mode: int = 0o644, *, parents_checked: bool = False
) -> int:
    """`os.open` that refuses to follow a link at `path` or between `.loops/` and it, and
    anything but a regular file there: a FIFO planted as `events.jsonl` made a resume wait for
    a reader forever (or fail on a seek, an internal error), a directory was an internal error.

    `parents_checked`: the caller made or checked the directories itself (a run directory, once
    per run), so only the file is guarded; this is the per-boundary path of every run.
    """
    if not parents_checked:
        for part in _below_loops(Path(os.fsdecode(path)).parent):
            if os.path.islink(part):
                raise _unsafe(part)
    try:
        fd = os.open(path, flags | _NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _unsafe(Path(os.fsdecode(path))) from None
        if exc.errno in (errno.EISDIR, errno.ENXIO):  # ENXIO: a FIFO nobody reads, to write
            raise _not_a_file(Path(os.fsdecode(path))) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _not_a_file(Path(os.fsdecode(path)))
    if not flags & os.O_NONBLOCK:
        os.set_blocking(fd, True)
    return fd


def regular_file_bytes(path: Path, limit: int | None = None) -> bytes:
    """The bytes of `path`; an `OSError` for anything but a regular file (opened without
    waiting for a FIFO's writer): a loop file, or a run's state.json, that a FIFO or
    `/dev/zero` stands in for was read forever. With `limit`, a file larger than that many
    bytes (before or while reading: it may grow) is an `OSError` too, not all in memory."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file (a FIFO or a device)")
        os.set_blocking(fd, True)
        if limit is None:
            return handle.read()
        data = handle.read(limit + 1) if info.st_size <= limit else b""
        if info.st_size > limit or len(data) > limit:
            size = max(info.st_size, len(data))
            limits = f"{size_text(size)}; the limit is {size_text(limit)}"
            raise OSError(errno.EFBIG, f"it is too large to read ({limits})")
        return data


def size_text(count: int) -> str:
    """A file size as people read it: `12.3 MB`, or `4,096 bytes` under a megabyte."""
    return f"{count / (1024 * 1024):.1f} MB" if count >= 1024 * 1024 else f"{count:,} bytes"


def write_new_file(path: Path, data: bytes, *, replace: bool = False) -> None:
    """Write a file the user asked for (`install`, `scaffold-eval --out`): never through a link.

    Without `replace` an existing file is left alone (`FileExistsError`); with it, the file is
    overwritten in place. A link at `path`, dangling or not, is refused either way, and so is
    anything but a regular file: opening a FIFO to write waits for a reader that never comes,
    and a device is not where a loop goes.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | (os.O_TRUNC if replace else os.O_EXCL)
    if os.path.islink(path):
        raise _unsafe(Path(path))
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise _not_a_file(Path(path))
    except FileNotFoundError:
        pass
    fd = open_file(path, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the check
        os.close(fd)
        raise _not_a_file(Path(path))
    os.set_blocking(fd, True)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _below_loops(path: Path) -> list[Path]:
    """The prefixes of `path` from its `.loops` component down; empty outside `.loops/`."""
    parts = path.parts
    if LOOPS_DIR not in parts:
        return []
    start = parts.index(LOOPS_DIR)
    return [Path(*parts[: index + 1]) for index in range(start, len(parts))]


def _not_a_file(path: Path) -> UnsafePath:
    return UnsafePath(
        f"{path} exists and is not a regular file (a FIFO, device or directory); "
        "ll-loop writes only regular files",
        hint="choose another path, or remove what is there",
    )


def _unsafe(path: Path) -> UnsafePath:
    return UnsafePath(
        f"{path} is a symbolic link, and ll-loop does not write through links it did not create",
        hint="remove the link (ll-loop creates the file or directory it needs)",
    )
