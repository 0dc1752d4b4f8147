"""One project root: `.loops/` is found upward from the working directory, as git finds `.git`,
so runs, locks and history are shared by every directory of the project."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine.load.project import project_root
from tests.cli import BIN
from tests.runs_helpers import ll_loop, result_of, spawn, wait_until, write

HOLDER = """
name: holder
initial: hold
scope: {scope}
states:
  hold:
    action: "touch {flag}; while [ ! -f {go} ]; do sleep 0.05; done"
    next: done
  done: {{terminal: true}}
"""


def holder_loop(path: Path, scope: list[str], flag: Path, go: Path) -> Path:
    return write(path, HOLDER.format(scope=json.dumps(scope), flag=flag, go=go))


def test_the_root_is_the_nearest_directory_with_loops_else_git(tmp_path: Path) -> None:
    deep = tmp_path / "repo" / "src" / "pkg"
    deep.mkdir(parents=True)
    assert project_root(deep) == deep  # neither marker: the working directory itself
    (tmp_path / "repo" / ".git").mkdir()
    assert project_root(deep) == tmp_path / "repo"
    (tmp_path / "repo" / "src" / ".git").write_text("gitdir: elsewhere\n")  # a submodule
    assert project_root(deep) == tmp_path / "repo" / "src"  # the nearest .git
    (tmp_path / "repo" / ".loops").mkdir()
    assert project_root(deep) == tmp_path / "repo"  # .loops/ wins over any .git
    (deep / ".loops").mkdir()
    assert project_root(deep) == deep


def test_a_marker_anyone_could_have_planted_is_passed_over(tmp_path: Path) -> None:
    shared = tmp_path / "shared"  # like /tmp: world-writable, sticky
    project = shared / "project" / "src"
    project.mkdir(parents=True)
    (shared / ".loops").mkdir()
    shared.chmod(0o1777)
    assert project_root(project) == project
    (shared / "project" / ".git").mkdir()
    assert project_root(project) == shared / "project"
    if os.geteuid() == 0:  # a marker owned by another user is not ours to use either
        (shared / "project" / ".loops").mkdir()
        os.chown(shared / "project" / ".loops", 65534, 65534)
        assert project_root(project) == shared / "project"  # found by its .git, not .loops
        os.chown(shared / "project" / ".git", 65534, 65534)
        assert project_root(project) == project


def test_the_search_stops_at_a_ceiling_directory(tmp_path: Path, monkeypatch: Any) -> None:
    """`LL_CEILING_DIRECTORIES`, as git's: a `.loops/` at or above a ceiling is not this
    project's (a stray `/tmp/.loops` made `/tmp` the project of every test under it)."""
    (tmp_path / ".loops").mkdir()
    ceiling, project = tmp_path / "ceiling", tmp_path / "ceiling" / "project" / "src"
    project.mkdir(parents=True)
    monkeypatch.delenv("LL_CEILING_DIRECTORIES", raising=False)
    assert project_root(project) == tmp_path
    monkeypatch.setenv("LL_CEILING_DIRECTORIES", f"/nowhere{os.pathsep}{ceiling}")
    assert project_root(project) == project  # nothing below the ceiling: the directory itself
    (ceiling / ".loops").mkdir()
    assert project_root(project) == project  # the ceiling itself is not looked at
    (ceiling / "project" / ".git").mkdir()
    assert project_root(project) == ceiling / "project"


def test_a_run_from_a_subdirectory_keeps_its_files_at_the_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    write(
        repo / "one.yaml",
        """
        name: one
        initial: a
        scope: [src]
        states:
          a: {action: "pwd > where.txt", next: done}
          done: {terminal: true}
        """,
    )
    done = ll_loop(repo / "src", "run", "../one.yaml", "--json", "-q")
    run_id = result_of(done)["run_id"]
    assert (repo / ".loops" / "runs" / run_id / "state.json").is_file()
    assert not (repo / "src" / ".loops").exists()
    # actions run where the user started the run; paths typed there resolve from there
    assert (repo / "src" / "where.txt").read_text().strip() == str(repo / "src")
    listed = ll_loop(repo, "status", "--all", "--json")
    assert [r["run_id"] for r in json.loads(listed.stdout)["runs"]] == [run_id]
    history = ll_loop(repo / "src", "history", "--json")
    assert [r["run_id"] for r in json.loads(history.stdout)["runs"]] == [run_id]
    # the summary names the run directory as seen from where the user is
    text = ll_loop(repo / "src", "run", "../one.yaml")
    assert "../.loops/runs/" in text.stdout


def test_the_same_loop_from_the_root_and_from_a_subdirectory_is_serialised(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    flag, go = tmp_path / "holding", tmp_path / "go"
    holder_loop(repo / "holder.yaml", ["src"], flag, go)
    first = spawn(repo, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(flag.exists)
        second = ll_loop(repo / "src", "run", "../holder.yaml", "--json", "-q")
        assert second.returncode == 2, second.stderr
        refusal = result_of(second)
        assert refusal["steps"] == 0 and "is locked by run" in refusal["error"]
        # the scope resolved from the root in both runs: repo/src, not repo/src/src
        assert f"scope path {repo.resolve() / 'src'} is locked" in refusal["error"]
    finally:
        go.touch()
        first.communicate(timeout=30)
    assert first.returncode == 0


def test_loops_in_sibling_directories_sharing_a_scope_are_serialised(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".loops").mkdir(parents=True)
    for part in ("a", "b", "shared"):
        (repo / part).mkdir()
    flag, go = tmp_path / "holding", tmp_path / "go"
    holder_loop(repo / "a" / "first.yaml", ["shared/data"], flag, go)
    write(
        repo / "b" / "second.yaml",
        """
        name: second
        initial: a
        scope: [shared]
        states:
          a: {action: "touch ran", next: done}
          done: {terminal: true}
        """,
    )
    first = spawn(repo / "a", "run", "first.yaml", "--json", "-q")
    try:
        wait_until(flag.exists)
        second = ll_loop(repo / "b", "run", "second.yaml", "--json", "-q")
        assert second.returncode == 2, second.stderr
        assert "is locked by run" in result_of(second)["error"]
        assert not (repo / "b" / "ran").exists()
        queued = spawn(repo / "b", "run", "second.yaml", "--queue", "--json", "-q")
        wait_until(lambda: _waiting(repo))  # visible from any directory of the project
        go.touch()
        out, err = queued.communicate(timeout=30)
        assert json.loads(out)["final_state"] == "done", err
    finally:
        go.touch()
        first.communicate(timeout=30)
    assert not (repo / "a" / ".loops").exists() and not (repo / "b" / ".loops").exists()


def _waiting(repo: Path) -> bool:
    status = ll_loop(repo / "shared", "status", "--json")
    return any(r["status"] == "queued" for r in json.loads(status.stdout)["runs"])


def test_ll_harness_records_in_the_project_history(tmp_path: Path) -> None:
    import subprocess
    import sys

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    harness = str(Path(sys.executable).with_name("ll-harness"))
    done = subprocess.run(
        [harness, "cmd", "true", "--exit-code", "0"],
        cwd=repo / "src",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (repo / ".loops" / "history.db").is_file()
    assert not (repo / "src" / ".loops").exists()


@pytest.mark.parametrize(
    ("program", "args"),
    [
        ("ll-loop", "status"),
        ("ll-loop", "history --json"),
        ("ll-loop", "run x.yaml --json"),
        ("ll-harness", "cmd true --exit-code 0"),
    ],
)
def test_a_working_directory_removed_under_the_shell_is_one_sentence(
    tmp_path: Path, program: str, args: str
) -> None:
    """A terminal left in a directory that `rm -rf` or a `git checkout` removed: every command
    that resolves a path was an internal error (a bare FileNotFoundError, no file named)."""
    (tmp_path / "gone").mkdir()
    done = subprocess.run(
        ["sh", "-c", f'cd gone && rmdir "$PWD" && exec "$0" {args}', str(BIN / program)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[:2] == [
        "error: the working directory no longer exists (it was removed or moved)",
        '  hint: cd to the project (`cd "$PWD"` if it was made again), then run the command again',
    ], done.stderr
    if "--json" in args:
        assert "no longer exists" in json.loads(done.stdout)["error"]
