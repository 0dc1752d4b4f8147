"""What ll-loop says: control characters are shown, never sent to the terminal; events name only
states the run entered; callers' mistakes and foreign directories get one clear sentence."""

from __future__ import annotations

import json
from pathlib import Path

from engine.load.loader import load_loop_with_positions
from engine.model.terminal import printable
from lint import lint_loop
from tests.runs_helpers import ll_loop, result_of, write

ESCAPES = r"printf '\033[31mRED\033]0;pwned\007 \233done\342\200\256 end\n'"


def test_printable_shows_control_characters_and_keeps_text() -> None:
    assert printable("a\x1b[31mb\x07\r\x9bc\u202ed") == "a\\x1b[31mb\\x07\\x0d\\x9bc\\u202ed"
    assert printable("línea 1\n\tзадача ✔") == "línea 1\n\tзадача ✔"


def test_progress_and_history_show_what_an_action_printed_without_its_escapes(
    tmp_path: Path,
) -> None:
    (tmp_path / "loud.yaml").write_text(
        "name: loud\ninitial: a\nscope: [out]\nstates:\n  a:\n"
        f"    action: |\n      {ESCAPES}; exit 1\n"
        "    on_yes: done\n    on_no: failed\n"
        "  done: {terminal: true}\n  failed: {terminal: true, failure: true}\n"
    )
    done = ll_loop(tmp_path, "run", "loud.yaml")  # stderr is a pipe: plain progress lines
    assert done.returncode == 1
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr and "\u202e" not in done.stderr
    assert "\\x1b[31mRED\\x1b]0;pwned\\x07" in done.stderr  # shown, not obeyed
    run_id = next((tmp_path / ".loops" / "runs").iterdir()).name
    shown = ll_loop(tmp_path, "history", run_id)
    assert shown.returncode == 0 and "\x1b" not in shown.stdout


def test_diagnostics_quote_file_text_without_its_escapes(tmp_path: Path) -> None:
    write(
        tmp_path / "bad.yaml",
        'name: x\ninitial: a\n"\\e[2Jwipe": 1\nstates: {a: {terminal: true}}\n',
    )
    done = ll_loop(tmp_path, "validate", "bad.yaml")
    assert done.returncode == 1
    assert "\\x1b[2Jwipe" in done.stdout and "\x1b" not in done.stdout + done.stderr


def test_a_loop_timeout_routes_nowhere(tmp_path: Path) -> None:
    write(
        tmp_path / "slow.yaml",
        """
        name: slow
        initial: a
        scope: [out]
        timeout: 0.5
        states:
          a:
            action: sleep 10
            on_yes: done
            on_no: recover
            on_error: recover
          recover: {action: "true", next: done}
          done: {terminal: true}
        """,
    )
    done = ll_loop(tmp_path, "run", "slow.yaml", "--json")
    result = result_of(done)
    assert result["terminated_by"] == "timeout" and result["final_state"] == "a"
    run = tmp_path / ".loops" / "runs" / result["run_id"]
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    entered = {e["state"] for e in events if e["event"] == "state_enter"}
    routes = [e for e in events if e["event"] == "route"]
    assert routes == [{**routes[0], "target": None, "timeout": True}]
    assert all(r["target"] is None or r["target"] in entered for r in routes)
    assert "a → error → (loop timeout)" in done.stderr


PARAMETERS = """
name: greet
initial: a
scope: [out]
parameters:
  target: {type: string, default: world}
context:
  greeting: hello
states:
  a: {action: 'echo "${context.greeting} ${context.target}"', next: done}
  done: {terminal: true}
"""


def test_a_context_key_no_parameter_declares_is_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path / "greet.yaml", PARAMETERS)
    done = ll_loop(tmp_path, "run", "greet.yaml", "--context", "tagret=you", "--json")
    assert done.returncode == 2
    error = result_of(done)["error"]
    assert error == "loop 'greet' declares no parameter 'tagret' (did you mean 'target'?)"
    assert not (tmp_path / ".loops" / "runs").exists()
    for ok in (["--context", "target=you"], ["--context", "greeting=hi"], ["INPUT"]):
        assert ll_loop(tmp_path, "run", "greet.yaml", *ok, "-q").returncode == 0
    free = PARAMETERS.replace("parameters:\n  target: {type: string, default: world}\n", "")
    write(tmp_path / "free.yaml", free.replace("${context.target}", "x"))
    assert ll_loop(tmp_path, "run", "free.yaml", "--context", "any=1", "-q").returncode == 0


def test_status_refuses_what_is_not_a_run_directory(tmp_path: Path) -> None:
    write(tmp_path / "greet.yaml", PARAMETERS)
    run_id = result_of(ll_loop(tmp_path, "run", "greet.yaml", "--json"))["run_id"]
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "state.json").write_text(json.dumps({"run_id": "x", "pid": 1}))
    for command in ("status", "stop", "history", "resume"):
        for ref in (".", "/etc", "fake/", str(tmp_path / "fake"), "..", ".loops/runs"):
            done = ll_loop(tmp_path, command, ref)
            assert done.returncode == 2, (command, ref, done.stdout)
            assert "Traceback" not in done.stderr and "state.json" not in done.stderr, done.stderr
    done = ll_loop(tmp_path, "status", "/etc")
    assert "/etc is not a run directory of this project" in done.stderr
    shown = ll_loop(tmp_path, "status", f".loops/runs/{run_id}", "--json")
    assert json.loads(shown.stdout)["run_id"] == run_id  # a real run directory still works


def test_a_dynamic_loop_reference_warns_unless_its_values_are_listed(tmp_path: Path) -> None:
    parent = """
    name: parent
    initial: run
    scope: [out]
    parameters:
      child: {type: string, required: true}
    states:
      run:
        loop: "${context.child}"
        on_yes: done
        on_no: done
        on_error: done
      done: {terminal: true}
    """
    path = write(tmp_path / "parent.yaml", parent)
    loop, positions = load_loop_with_positions(path)
    found = [d for d in lint_loop(loop, positions) if d.code == "LL043"]
    assert len(found) == 1 and found[0].severity == "warning" and found[0].line == 8
    assert "any absolute path" in found[0].message
    write(path, parent.replace("required: true}", "required: true, enum: [a, b]}"))
    loop, positions = load_loop_with_positions(path)
    assert not [d for d in lint_loop(loop, positions) if d.code == "LL043"]
