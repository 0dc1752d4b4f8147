"""Where a measurement was taken: git HEAD, branch, dirtiness, and a file's committed bytes (IO).

Provenance is recorded, never required: outside a git repository every value is None. The
harness records it with each measurement, a suite with each run.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from engine.load.bounded import FileRefused, read_capped

_BRANCH_REF = "refs/heads/"


@dataclass(frozen=True)
class Provenance:
    head: str | None
    dirty: bool | None
    branch: str | None = None  # None on a detached HEAD
    worktree: str | None = None  # what is uncommitted, fingerprinted (None: clean or unknown)


GIT_TIMEOUT = 10.0
# The whole repository but the `.loops/` folders ll-loop writes (the history database among
# them): an unignored one would make every tree dirty, and every fingerprint new.
_OURS_EXCLUDED = (":/", ":(top,exclude,glob)**/.loops/**")
MAX_UNTRACKED_BYTES = 64 * 1024 * 1024  # hashed for a fingerprint; past it there is none


def git_output(args: list[str], cwd: Path, timeout: float = GIT_TIMEOUT) -> bytes | None:
    """What `git ARGS` printed in `cwd`; None when it failed, could not run or overran."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_provenance(
    cwd: Path, *, timeout: float = GIT_TIMEOUT, fingerprint: bool = False
) -> Provenance:
    """HEAD, dirtiness and branch where `cwd` is, and with `fingerprint` what is uncommitted
    (for reusing measurements: three more git calls on a dirty tree); each git call bounded by
    `timeout` seconds."""
    # One rev-parse answers both the commit and the ref HEAD points at ("HEAD" when detached),
    # so recording the branch costs no extra git process.
    out = git_output(["rev-parse", "HEAD", "--symbolic-full-name", "HEAD"], cwd, timeout)
    if out is None:
        return Provenance(None, None)
    head, _, ref = out.decode(errors="replace").strip().partition("\n")
    status = git_output(["status", "--porcelain=v2", "--", *_OURS_EXCLUDED], cwd, timeout)
    dirty = None if status is None else bool(status.strip())
    worktree = None
    if dirty and fingerprint and status is not None and not _submodule_edited(status):
        worktree = _worktree_fingerprint(cwd, timeout)
    return Provenance(head.strip(), dirty, _branch_of(ref.strip()), worktree)


def _worktree_fingerprint(cwd: Path, timeout: float) -> str | None:
    """sha256 of what differs from HEAD: the diff of tracked files, and the path and bytes of
    each untracked one (not ignored). Two measurements on one dirty HEAD measured the same code
    only when this is equal; None when it cannot be told (git failed, or the untracked files
    pass `MAX_UNTRACKED_BYTES`, a submodule has edits of its own), which matches nothing."""
    diff = git_output(
        ["diff", "HEAD", "--binary", "--no-ext-diff", "--", *_OURS_EXCLUDED], cwd, timeout
    )
    listed = git_output(
        ["ls-files", "-z", "--others", "--exclude-standard", "--full-name", "--", *_OURS_EXCLUDED],
        cwd,
        timeout,
    )
    top = git_output(["rev-parse", "--show-toplevel"], cwd, timeout)
    if diff is None or listed is None or top is None:
        return None
    root = Path(top.decode(errors="surrogateescape").strip())
    digest = hashlib.sha256(diff)
    budget = MAX_UNTRACKED_BYTES
    for name in sorted(filter(None, listed.split(b"\0"))):
        path = root / name.decode(errors="surrogateescape")
        try:
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                data = b"link:" + os.fsencode(os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                budget -= info.st_size
                if budget < 0:
                    return None
                data = read_capped(path, info.st_size)
            else:  # a FIFO or a socket: only that it is there (reading one could block)
                data = b"special"
        except (OSError, FileRefused):
            return None
        digest.update(b"\0" + name + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def _submodule_edited(status: bytes) -> bool:
    """Whether a submodule has uncommitted edits or untracked files (`git status --porcelain=v2`
    marks its `S<c><m><u>` field with M or U): the diff says only `-dirty`, or nothing, so two
    different edits in it would share a fingerprint. None is taken then."""
    for line in status.splitlines():
        fields = line.split(b" ", 3)
        if line[:2] in (b"1 ", b"2 ") and len(fields) > 2 and fields[2].startswith(b"S"):
            sub = fields[2]  # S<c><m><u>
            if sub[2:3] == b"M" or sub[3:4] == b"U":
                return True
    return False


def _branch_of(ref: str) -> str | None:
    """`refs/heads/feature-x` -> `feature-x`; a detached HEAD (`HEAD`) or anything else -> None."""
    if ref.startswith(_BRANCH_REF) and len(ref) > len(_BRANCH_REF):
        return ref[len(_BRANCH_REF) :]
    return None


def head_content_hash(path: Path) -> str | None:
    """sha256 of `path` as committed at HEAD (the incumbent of an uncommitted edit)."""
    path = path.resolve()
    blob = git_output(["show", f"HEAD:./{path.name}"], path.parent)
    return None if blob is None else hashlib.sha256(blob).hexdigest()
