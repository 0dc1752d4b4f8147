"""`input_key` binds the positional INPUT to a parameter; `${run.dir}` makes a per-run scope."""

from __future__ import annotations

import json
import time
from pathlib import Path

from engine.load.loader import load_loop_text
from engine.runtime.runstore import runs_root
from engine.runtime.scope import run_scope
from tests.lint_cli_helpers import ll_loop

LOOP = """\
name: triage
initial: show
input_key: issue
scope: ["${run.dir}", "${context.extra}"]
parameters:
  issue: {type: string, required: true}
context:
  extra: ""
states:
  show:
    action: printf '%s' "${context.issue}" > "${run.dir}/issue.txt"
    next: done
  done:
    terminal: true
"""


def test_input_binds_to_the_named_parameter(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").write_text(LOOP)
    result = ll_loop("run", "loop.yaml", "ENH-7; rm -rf /", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run_id = json.loads(result.stdout)["run_id"]
    written = tmp_path / ".loops" / "runs" / run_id / "artifacts" / "issue.txt"
    assert written.read_text() == "ENH-7; rm -rf /"


def test_a_missing_input_says_it_can_be_given_as_input(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").write_text(LOOP)
    result = ll_loop("run", "loop.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert "requires parameter 'issue'" in result.stderr
    assert "or give it as INPUT" in result.stderr


def test_run_scope_renders_run_level_values_and_drops_empty_entries(tmp_path: Path) -> None:
    loop = load_loop_text(LOOP)
    scope = run_scope(loop, "r-1", {"issue": "x", "extra": ""})
    assert scope == (str(runs_root() / "r-1" / "artifacts"),)
    assert run_scope(loop, "r-1", {"issue": "x", "extra": "docs/"}) == (
        str(runs_root() / "r-1" / "artifacts"),
        "docs/",
    )


def test_two_runs_with_a_per_run_scope_do_not_conflict(tmp_path: Path) -> None:
    """Each run locks only its own directory, so a second run starts while one holds its."""
    (tmp_path / "slow.yaml").write_text(
        LOOP.replace("name: triage", "name: slow").replace(
            "printf '%s' \"${context.issue}\" >", "sleep 2; printf x >"
        )
    )
    (tmp_path / "loop.yaml").write_text(LOOP)
    import subprocess
    import sys

    script = Path(sys.executable).with_name("ll-loop")
    first = subprocess.Popen(
        [str(script), "run", "slow.yaml", "A"], cwd=tmp_path, stderr=subprocess.DEVNULL
    )
    try:
        runs = tmp_path / ".loops" / "runs"
        deadline = time.monotonic() + 20
        while not list(runs.glob("*/state.json")) and time.monotonic() < deadline:
            time.sleep(0.02)  # the first run holds its scope once its run directory exists
        second = ll_loop("run", "loop.yaml", "B", "--json", cwd=tmp_path)
        assert second.returncode == 0, second.stderr
    finally:
        assert first.wait(timeout=30) == 0


def test_the_api_binds_input_to_the_input_key() -> None:
    from engine.model.params import bind_context

    loop = load_loop_text(LOOP)
    assert bind_context(loop, {}, {}, input="ENH-9")["issue"] == "ENH-9"
    assert bind_context(loop, {"input": "ENH-8"}, {})["issue"] == "ENH-8"  # the CLI's spelling
    assert "input" not in bind_context(loop, {}, {}, input="ENH-9")


def test_a_child_s_input_is_its_input_key(tmp_path: Path) -> None:
    (tmp_path / "triage.yaml").write_text(LOOP)
    (tmp_path / "parent.yaml").write_text(
        """\
name: parent
initial: call
scope: ["."]
states:
  call:
    loop: triage
    with: {input: BUG-3}
    capture: child
    on_yes: done
    on_no: done
  done:
    terminal: true
"""
    )
    result = ll_loop("run", "parent.yaml", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [written] = (tmp_path / ".loops" / "runs").rglob("issue.txt")
    assert written.read_text() == "BUG-3"
