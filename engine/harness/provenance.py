"""Where a measurement was taken: git HEAD, dirtiness, and a file's committed bytes (IO).

Provenance is recorded, never required: outside a git repository every value is None.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from engine.harness.keys import sha256_bytes


@dataclass(frozen=True)
class Provenance:
    head: str | None
    dirty: bool | None


def _git(args: list[str], cwd: Path) -> bytes | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_provenance(cwd: Path) -> Provenance:
    head = _git(["rev-parse", "HEAD"], cwd)
    if head is None:
        return Provenance(None, None)
    status = _git(["status", "--porcelain"], cwd)
    return Provenance(head.decode().strip(), None if status is None else bool(status.strip()))


def head_content_hash(path: Path) -> str | None:
    """sha256 of `path` as committed at HEAD (the incumbent of an uncommitted edit)."""
    path = path.resolve()
    blob = _git(["show", f"HEAD:./{path.name}"], path.parent)
    return None if blob is None else sha256_bytes(blob)
