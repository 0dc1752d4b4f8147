"""Pre-patch evidence bundles: what was recorded about an issue before its fix (read-only IO).

A bundle is the directory `.loops/evidence/<ISSUE-ID>/`. Proof-first eval harnesses
(`scaffold-eval` with learning tests enabled) write each learning test's output there as
`proof-<slug>.txt`, and people or loops may add anything else worth keeping from before the
patch (a failing log, a captured response). An optional `bundle.json` is the bundle's own
description. `ll-harness ... --issue-id ID --output json` adds the bundle as the
`prepatch_evidence` block; the harness never writes to it.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.harness.refusal import Refusal

EVIDENCE_DIR = Path(".loops") / "evidence"
MANIFEST = "bundle.json"
MAX_FILES = 200
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def check_issue_id(issue_id: str) -> str:
    """The ID as a safe directory name, or a refusal (it must never reach outside the bundle)."""
    if not _ID_RE.match(issue_id) or ".." in issue_id:
        raise Refusal(
            f"--issue-id {issue_id!r} is not an issue ID",
            hint="pass an ID such as FEAT-919 (letters, digits, '.', '_' and '-')",
        )
    return issue_id


def bundle_dir(root: Path, issue_id: str) -> Path | None:
    """The issue's bundle directory (the ID matched case-insensitively), if there is one."""
    base = root / EVIDENCE_DIR
    exact = base / check_issue_id(issue_id)
    if exact.is_dir() and not exact.is_symlink():
        return exact
    if not base.is_dir():
        return None
    for child in sorted(base.iterdir()):
        if child.name.lower() == issue_id.lower() and child.is_dir() and not child.is_symlink():
            return child
    return None


def prepatch_evidence(root: Path, issue_id: str) -> dict[str, Any] | None:
    """The bundle as a JSON block: every file with its size and hash, and the manifest."""
    found = bundle_dir(root, issue_id)
    if found is None:
        return None
    files: list[dict[str, Any]] = []
    for path in sorted(p for p in found.rglob("*") if p.is_file() and not p.is_symlink()):
        if len(files) == MAX_FILES:
            break
        data = path.read_bytes()
        files.append(
            {
                "name": str(path.relative_to(found)),
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "modified": datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(
                    timespec="seconds"
                ),
            }
        )
    manifest: Any = None
    manifest_path = found / MANIFEST
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            manifest = {"error": f"{MANIFEST} is not valid JSON: {exc}"}
    return {
        "issue_id": issue_id,
        "path": str(found.relative_to(root)) if found.is_relative_to(root) else str(found),
        "read_only": True,
        "files": files,
        "manifest": manifest,
    }


def evidence_line(block: dict[str, Any] | None, issue_id: str) -> str:
    """The text report's line about the bundle."""
    if block is None:
        return f"Evidence  no pre-patch bundle for {issue_id} under {EVIDENCE_DIR}/"
    count = len(block["files"])
    return f"Evidence  pre-patch bundle {block['path']}/ ({count} file{'s' if count != 1 else ''})"
