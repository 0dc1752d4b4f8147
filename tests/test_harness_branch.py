"""Every ll-harness attempt records the git branch it ran on: in the JSON report, the history
row and `ll-harness history --json`; a detached HEAD or no repository records null.

Real git in a temp directory and the real CLI as a subprocess."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engine.runtime.history import history_path, open_history
from engine.runtime.provenance import Provenance, git_provenance
from tests.harness_helpers import DATA, harness, harness_json


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def repo_on(path: Path, branch: str) -> Path:
    """A git repository at `path` with one commit, checked out on `branch`."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "checkout", "-q", "-b", branch)
    (path / "README").write_text("x\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "first")
    return path


def row_branches(root: Path) -> list[str | None]:
    """The git_branch column of every attempt, read with plain SQL (not through our reader)."""
    db = sqlite3.connect(history_path(root))
    try:
        return [r[0] for r in db.execute("SELECT git_branch FROM harness_attempts ORDER BY id")]
    finally:
        db.close()


def test_a_cmd_attempt_on_a_branch_records_it_everywhere(tmp_path: Path) -> None:
    repo = repo_on(tmp_path / "repo", "feature-x")
    code, data = harness_json(repo, "cmd", "exit 0", "--exit-code", "0")
    assert code == 0 and data["result"] == "PASS"
    assert data["git_branch"] == "feature-x"
    assert data["git_head"] == git(repo, "rev-parse", "HEAD")
    assert row_branches(repo) == ["feature-x"]
    with open_history(repo) as history:
        [attempt] = history.attempts("exit 0")
    assert (attempt.git_branch, attempt.git_head) == ("feature-x", data["git_head"])

    shown = harness(repo, "history", "exit 0", "--json")
    assert shown.returncode == 0, shown.stderr
    assert [a["git_branch"] for a in json.loads(shown.stdout)["last"]] == ["feature-x"]


def test_a_detached_head_records_the_commit_but_no_branch(tmp_path: Path) -> None:
    repo = repo_on(tmp_path / "repo", "feature-x")
    git(repo, "checkout", "-q", "--detach")
    code, data = harness_json(repo, "cmd", "exit 0", "--exit-code", "0")
    assert code == 0
    assert data["git_branch"] is None
    assert data["git_head"] == git(repo, "rev-parse", "HEAD")
    assert row_branches(repo) == [None]


def test_switching_branches_between_attempts_is_recorded_per_row(tmp_path: Path) -> None:
    repo = repo_on(tmp_path / "repo", "main-line")
    assert harness_json(repo, "cmd", "exit 0", "--exit-code", "0")[0] == 0
    git(repo, "checkout", "-q", "-b", "team/feature-y")
    assert harness_json(repo, "cmd", "exit 0", "--exit-code", "0")[1]["git_branch"] == (
        "team/feature-y"
    )
    assert row_branches(repo) == ["main-line", "team/feature-y"]


def test_outside_a_git_repository_everything_is_null(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    # Stop git's upward search at `plain`, whatever directory the temp dir sits in.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    code, data = harness_json(plain, "cmd", "exit 0", "--exit-code", "0")
    assert code == 0
    assert (data["git_branch"], data["git_head"], data["git_dirty"]) == (None, None, None)
    assert row_branches(plain) == [None]


def test_a_dsl_task_row_records_the_branch(tmp_path: Path) -> None:
    repo = repo_on(tmp_path / "repo", "feature-x")
    shutil.copytree(DATA / "tasks", repo / "tasks")
    shutil.copy(DATA / "answers.json", repo / "answers.json")
    runner = f"cmd:{sys.executable} {DATA / 'answer.py'} {repo / 'answers.json'}"
    done = harness(repo, "dsl", "tasks/route-ok.yaml", "--runner", runner, "--output", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["git_branch"] == "feature-x"
    assert row_branches(repo) == ["feature-x"]


def test_no_git_on_the_path_is_no_provenance_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = repo_on(tmp_path / "repo", "feature-x")
    assert git_provenance(repo).branch == "feature-x"
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert git_provenance(repo) == Provenance(None, None, None)


def test_edits_inside_a_submodule_give_no_fingerprint(tmp_path: Path) -> None:
    """`git diff HEAD` shows a submodule with edits of its own as `-dirty` (untracked files in it
    not at all): two different edits there shared one fingerprint, so a baseline measured with
    one was reused with the other. Such a tree has no fingerprint (reuses nothing)."""
    inner, outer = tmp_path / "inner", tmp_path / "outer"
    for folder in (inner, outer):
        folder.mkdir()
        git(folder, "init", "-q")
    (inner / "s").write_text("a\n")
    git(inner, "add", "-A")
    git(inner, "commit", "-qm", "inner")
    git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sm")
    git(outer, "commit", "-qm", "outer")
    assert git_provenance(outer, fingerprint=True).dirty is False
    seen = []
    for edit in ("one\n", "two\n"):
        (outer / "sm" / "s").write_text(edit)
        seen.append(git_provenance(outer, fingerprint=True))
    (outer / "sm" / "s").write_text("a\n")
    (outer / "sm" / "new").write_text("untracked\n")
    seen.append(git_provenance(outer, fingerprint=True))
    assert [(p.dirty, p.worktree) for p in seen] == [(True, None)] * 3
    (outer / "sm" / "new").unlink()
    (outer / "f").write_text("an edit of the outer tree\n")
    edited = git_provenance(outer, fingerprint=True)
    assert edited.dirty is True and edited.worktree is not None
