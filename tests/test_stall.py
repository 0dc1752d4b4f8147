"""Stall windows: `max_stall` on convergence, and the `diff_stall` evaluator (git diff --stat)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from engine.judges.evaluators import Judged, judge, stall_window
from engine.model.loop import Evaluate
from engine.model.ports import ActionResult
from tests.lint_cli_helpers import ll_loop

OK = ActionResult(exit_code=0)


def test_the_window_counts_checks_without_progress_and_resets_on_progress() -> None:
    assert stall_window(False, 0, 3) == ("progress", 1)
    assert stall_window(False, 1, 3) == ("progress", 2)
    assert stall_window(False, 2, 3) == ("stall", 3)
    assert stall_window(True, 2, 3) == ("progress", 0)
    assert stall_window(False, 0, 1) == ("stall", 1)  # the default: one bad check is a stall


def test_convergence_reports_stall_only_when_the_window_is_full() -> None:
    spec = Evaluate(type="convergence", target=0, max_stall=2)
    first = judge(spec, Judged("5", OK, target=0, previous=5, stalled=0))
    assert (first.name, first.details["stalled"]) == ("progress", 1)
    second = judge(spec, Judged("6", OK, target=0, previous=5, stalled=1))
    assert (second.name, second.details["stalled"]) == ("stall", 2)
    better = judge(spec, Judged("4", OK, target=0, previous=5, stalled=1))
    assert (better.name, better.details["stalled"]) == ("progress", 0)


def write(tmp_path: Path, text: str) -> None:
    (tmp_path / "loop.yaml").write_text(text)


def events(tmp_path: Path) -> list[dict[str, object]]:
    [run] = (tmp_path / ".loops" / "runs").iterdir()
    lines = (run / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_plateau_ends_the_loop_after_max_stall_checks(tmp_path: Path) -> None:
    write(
        tmp_path,
        """\
name: shrink
initial: measure
scope: ["."]
max_steps: 20
states:
  measure:
    action: echo 7
    evaluate: {type: convergence, target: 0, max_stall: 3}
    on_target: done
    on_progress: measure
    on_stall: gave_up
    on_error: gave_up
  done:
    terminal: true
  gave_up:
    terminal: true
    failure: true
""",
    )
    result = ll_loop("run", "loop.yaml", "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    verdicts = [e["verdict"] for e in events(tmp_path) if e["event"] == "evaluate"]
    # first check has nothing to compare with; then three checks without progress
    assert verdicts == ["progress", "progress", "progress", "stall"]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


DIFF_LOOP = """\
name: keep-editing
initial: edit
scope: ["notes.txt"]
max_steps: 30
states:
  edit:
    action: test -f stop || echo more >> notes.txt
    next: check
  check:
    evaluate: {type: diff_stall, max_stall: 2}
    on_progress: edit
    on_stall: done
    on_error: broken
  done:
    terminal: true
  broken:
    terminal: true
    failure: true
"""


def test_diff_stall_sees_the_work_tree_stop_changing(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "notes.txt").write_text("start\n")
    (tmp_path / ".gitignore").write_text(".loops/\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "init")
    write(tmp_path, DIFF_LOOP)
    (tmp_path / "stop").write_text("")  # the edits stop at once: only the window decides
    result = ll_loop("run", "loop.yaml", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    checks = [e for e in events(tmp_path) if e["event"] == "evaluate" and e["state"] == "check"]
    assert [c["verdict"] for c in checks] == ["progress", "progress", "stall"]
    assert [c["details"]["stalled"] for c in checks] == [0, 1, 2]  # type: ignore[index]


def test_diff_stall_progresses_while_files_change(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "notes.txt").write_text("start\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "init")
    write(tmp_path, DIFF_LOOP)
    result = ll_loop("run", "loop.yaml", "--max-steps", "8", "--json", cwd=tmp_path)
    assert result.returncode == 3  # the budget ran out while every check saw new changes
    checks = [e for e in events(tmp_path) if e["event"] == "evaluate" and e["state"] == "check"]
    assert {c["verdict"] for c in checks} == {"progress"}
    assert all(c["details"]["changed"] for c in checks)  # type: ignore[index]


def test_diff_stall_outside_a_repository_is_an_error_verdict(tmp_path: Path) -> None:
    write(tmp_path, DIFF_LOOP)
    result = ll_loop("run", "loop.yaml", "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # routed on_error to the failure terminal
    [check] = [e for e in events(tmp_path) if e["event"] == "evaluate" and e["state"] == "check"]
    assert check["verdict"] == "error"
    assert "git diff --stat" in str(check["details"])


def test_diff_stall_with_ignore_exit_code_judges_the_tree_after_a_failed_action(
    tmp_path: Path,
) -> None:
    """An agent step that exits non-zero may still have changed files: with
    `ignore_exit_code: true` the tree is judged; without it the failure is `error`."""
    git(tmp_path, "init", "-q")
    (tmp_path / "notes.txt").write_text("start\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "init")
    loop = """\
name: failing-edit
initial: edit
scope: ["notes.txt"]
states:
  edit:
    action: echo more >> notes.txt; exit 1
    evaluate: {type: diff_stall%s}
    on_progress: done
    on_stall: broken
    on_error: broken
  done:
    terminal: true
  broken:
    terminal: true
    failure: true
"""
    write(tmp_path, loop % "")
    assert ll_loop("run", "loop.yaml", "--json", cwd=tmp_path).returncode == 1
    write(tmp_path, loop % ", ignore_exit_code: true")
    result = ll_loop("run", "loop.yaml", "--json", cwd=tmp_path)
    assert (result.returncode, json.loads(result.stdout)["final_state"]) == (0, "done")
