"""Where a measurement was taken: git HEAD, branch, dirtiness, and a file's committed bytes (IO).

Provenance is recorded, never required: outside a git repository every value is None. The
harness records it with each measurement, a suite with each run.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

_BRANCH_REF = "refs/heads/"


@dataclass(frozen=True)
class Provenance:
    head: str | None
    dirty: bool | None
    branch: str | None = None  # None on a detached HEAD


GIT_TIMEOUT = 10.0


def git_output(args: list[str], cwd: Path, timeout: float = GIT_TIMEOUT) -> bytes | None:
    """What `git ARGS` printed in `cwd`; None when it failed, could not run or overran."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_provenance(cwd: Path, *, timeout: float = GIT_TIMEOUT) -> Provenance:
    """HEAD, dirtiness and branch where `cwd` is; each git call bounded by `timeout` seconds."""
    # One rev-parse answers both the commit and the ref HEAD points at ("HEAD" when detached),
    # so recording the branch costs no extra git process.
    out = git_output(["rev-parse", "HEAD", "--symbolic-full-name", "HEAD"], cwd, timeout)
    if out is None:
        return Provenance(None, None)
    head, _, ref = out.decode(errors="replace").strip().partition("\n")
    status = git_output(["status", "--porcelain"], cwd, timeout)
    return Provenance(
        head.strip(),
        None if status is None else bool(status.strip()),
        _branch_of(ref.strip()),
    )


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
