"""`--issue-id ID` on ll-harness: the issue's pre-patch evidence bundle (.loops/evidence/ID/) is
added to the JSON report read-only, when there is one."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.harness_helpers import harness, harness_json


def bundle(root: Path) -> Path:
    found = root / ".loops" / "evidence" / "FEAT-919"
    found.mkdir(parents=True)
    (found / "proof-stripe-idempotency.txt").write_text("PASS idempotency key honoured\n")
    (found / "bundle.json").write_text('{"issue": "FEAT-919", "captured": "before the patch"}')
    return found


def test_the_bundle_is_added_read_only_when_it_exists(tmp_path: Path) -> None:
    found = bundle(tmp_path)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in found.iterdir()}
    code, data = harness_json(tmp_path, "cmd", "true", "--exit-code", "0", "--issue-id", "feat-919")
    assert code == 0, data
    block = data["prepatch_evidence"]
    assert block["path"] == ".loops/evidence/FEAT-919" and block["read_only"] is True
    assert block["manifest"] == {"issue": "FEAT-919", "captured": "before the patch"}
    proof = next(f for f in block["files"] if f["name"] == "proof-stripe-idempotency.txt")
    assert proof["sha256"] == hashlib.sha256(b"PASS idempotency key honoured\n").hexdigest()
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in found.iterdir()} == before
    text = harness(tmp_path, "cmd", "true", "--exit-code", "0", "--issue-id", "FEAT-919")
    assert "Evidence  pre-patch bundle .loops/evidence/FEAT-919/ (2 files)" in text.stdout


def test_no_bundle_means_no_block(tmp_path: Path) -> None:
    code, data = harness_json(tmp_path, "cmd", "true", "--exit-code", "0", "--issue-id", "BUG-1")
    assert code == 0
    assert data["issue_id"] == "BUG-1" and "prepatch_evidence" not in data
    _, plain = harness_json(tmp_path, "cmd", "true", "--exit-code", "0")
    assert "issue_id" not in plain


def test_an_id_that_could_leave_the_evidence_directory_is_refused(tmp_path: Path) -> None:
    bundle(tmp_path)
    code, data = harness_json(tmp_path, "cmd", "true", "--exit-code", "0", "--issue-id", "../..")
    assert code == 2 and data["refused"] is True
    assert "is not an issue ID" in data["error"]
