"""Text bound to a child's `type: command` parameter: an LL036 error when the child is known, and
refused at run time when the child's parameters are bound (also for a child named at run time)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli.validate_cmd import check_file
from tests.run_helpers import ll_loop, write_loop

CHILD = """\
    name: child
    initial: run
    scope: ["."]
    parameters:
      check_cmd: {type: command, required: true}
    states:
      run:
        action: bash -c "${context.check_cmd}"
        on_yes: done
        on_no: failed
        on_error: failed
      done:
        terminal: true
      failed:
        terminal: true
        failure: true
"""

PARENT = """\
    name: parent
    initial: fetch
    scope: ["."]
    parameters:
      child: {type: string, default: child}
      cmd: {type: command, default: "true"}
      word: {type: string, default: "true"}
    states:
      fetch:
        action: printf '%s' 'touch PX'
        capture: t
        next: sub
      sub:
        loop: LOOP
        with:
          check_cmd: VALUE
        on_yes: done
        on_no: failed
        on_error: failed
      done:
        terminal: true
      failed:
        terminal: true
        failure: true
"""


def parent(tmp_path: Path, value: str, loop: str = "child") -> Path:
    write_loop(tmp_path, CHILD, "child.yaml")
    text = PARENT.replace("LOOP", loop).replace("VALUE", json.dumps(value))
    return write_loop(tmp_path, text, "loop.yaml")


def codes(path: Path) -> dict[str, str]:
    return {d.code: d.severity for d in check_file(path)}


@pytest.mark.parametrize(
    "value",
    ["${captured.t.output}", "${prev.output}", "${context.word}", "make ${captured.t.output}",
     "${context.undeclared}", "${context.cmd if captured.t.output else captured.t.output}"],
)  # fmt: skip
def test_text_bound_to_a_command_parameter_is_a_lint_error(tmp_path: Path, value: str) -> None:
    assert codes(parent(tmp_path, value)).get("LL036") == "error"


@pytest.mark.parametrize(
    "value",
    ["${context.cmd}", "make test", "${context.cmd if captured.t.output else 'true'}"],
)
def test_declared_commands_and_literals_are_accepted(tmp_path: Path, value: str) -> None:
    assert "LL036" not in codes(parent(tmp_path, value))


def test_captured_output_is_refused_at_run_time_for_a_child_named_at_run_time(
    tmp_path: Path,
) -> None:
    parent(tmp_path, "${captured.t.output}", loop="${context.child}")
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json")
    assert not (tmp_path / "PX").exists()
    assert json.loads(ran.stdout.splitlines()[-1])["final_state"] == "failed"
    events = "".join(p.read_text() for p in tmp_path.glob(".loops/runs/*/events.jsonl"))
    assert (
        "state 'sub' binds ${captured.t.output} to 'check_cmd', a `type: command` parameter of "
        "loop 'child', which runs it as code; only a command this loop's caller declared may "
        "go there"
    ) in events


def test_a_declared_command_still_runs_in_the_child(tmp_path: Path) -> None:
    parent(tmp_path, "${context.cmd}", loop="${context.child}")
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--context", "cmd=touch OK")
    assert (tmp_path / "OK").exists() and not (tmp_path / "PX").exists()
    assert json.loads(ran.stdout.splitlines()[-1])["final_state"] == "done"
