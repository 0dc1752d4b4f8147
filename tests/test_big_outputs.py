"""Evaluators judge the whole output, also when it is too big to keep in memory.

The action runner keeps the first MiB of a stream in memory and spills the whole stream to the
run's `outputs/`; the verdict must still be about all of it (a test log's summary is at its end).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.runtime.interpreter import WHOLE_OUTPUT_LIMIT
from tests.loopback_server import LoopbackServer, verdict_reply
from tests.run_helpers import run_yaml

# ~2 MB of numbers, then the line that matters.
BIG = "seq 1 300000; echo 'SUMMARY: 300000 passed'"


def loop_with(evaluate: str) -> str:
    return f"""
name: big
initial: test
scope: ["."]
states:
  test:
    action: "{BIG}"
    evaluate: {evaluate}
    on_yes: done
    on_no: failed
    on_error: broken
  done: {{terminal: true}}
  failed: {{terminal: true, failure: true}}
  broken: {{terminal: true, failure: true}}
"""


def test_output_contains_finds_the_summary_after_the_first_mib(tmp_path: Path) -> None:
    ran = run_yaml(tmp_path, loop_with("{type: output_contains, pattern: 'SUMMARY: \\d+ passed'}"))
    assert ran.code == 0, ran.stdout
    assert ran.json["final_state"] == "done"
    [spilled] = (ran.run_dir / "outputs").glob("*.stdout")
    assert spilled.stat().st_size > 1024 * 1024
    assert spilled.read_text().endswith("SUMMARY: 300000 passed\n")


def test_classify_reads_the_last_line_of_the_whole_output(tmp_path: Path) -> None:
    loop = """
name: big-classify
initial: test
scope: ["."]
states:
  test:
    action: "seq 1 300000; echo passed"
    evaluate: {type: classify, verdicts: [passed, failed]}
    route: {passed: done, failed: failed, _error: broken}
  done: {terminal: true}
  failed: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
"""
    ran = run_yaml(tmp_path, loop)
    assert ran.verdicts() == [("test", "passed")], ran.stdout
    assert ran.json["final_state"] == "done"


def test_a_judge_is_shown_the_end_of_a_spilled_output(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(verdict_reply("yes", evidence="SUMMARY: 300000 passed"))
    ran = run_yaml(tmp_path, loop_with("{type: llm_structured, prompt: 'Did it pass? Quote.'}"))
    assert ran.code == 0, ran.stderr
    content = loopback.requests[0].body["messages"][0]["content"]
    assert "SUMMARY: 300000 passed" in content  # the tail of the whole output, not of 1 MiB
    assert ran.json["final_state"] == "done"


def test_an_output_too_big_to_read_back_is_an_error_not_a_guess(tmp_path: Path) -> None:
    size = WHOLE_OUTPUT_LIMIT + 1
    loop = loop_with("{type: output_contains, pattern: x}").replace(
        BIG, f"head -c {size} /dev/zero"
    )
    ran = run_yaml(tmp_path, loop)
    assert ran.json["final_state"] == "broken", ran.stdout
    [evaluated] = [e for e in ran.events() if e["event"] == "evaluate"]
    assert evaluated["verdict"] == "error"
    assert f"{size:,} bytes" in evaluated["details"]["reason"]


PASSED_ON = """
name: passed-on
initial: read
scope: ["."]
states:
  read:
    action: "head -c {size} /dev/zero | tr '\\\\0' x; echo; echo END"
    capture: text
    on_yes: use
    on_no: failed
  use:
    action: printf "%s" "${{{value}}}" | wc -c
    capture: used
    on_yes: done
    on_no: failed
    on_error: broken
  done: {{terminal: true}}
  failed: {{terminal: true, failure: true}}
  broken: {{terminal: true, failure: true}}
"""


@pytest.mark.parametrize("value", ["captured.text.output", "prev.output"])
def test_an_output_longer_than_state_json_keeps_is_interpolated_whole(
    tmp_path: Path, value: str
) -> None:
    """Captures and `prev` keep 64 Ki characters in memory and state.json; interpolated, they
    gave the next action those, silently, for a 100 KB output (its end lost)."""
    ran = run_yaml(tmp_path, PASSED_ON.format(size=100_000, value=value))
    assert ran.code == 0, ran.stdout
    state = (ran.run_dir / "state.json").read_text()
    assert '"output":"100004"' in state  # 100,000 x, a newline and END, all of them


def test_a_value_too_large_for_the_environment_is_an_error_that_says_what_to_do(
    tmp_path: Path,
) -> None:
    ran = run_yaml(tmp_path, PASSED_ON.format(size=200_000, value="captured.text.output"))
    assert ran.code == 1, ran.stdout
    assert ran.json["final_state"] == "broken"
    events = (ran.run_dir / "events.jsonl").read_text()
    assert "Argument list too long: the script or an interpolated value is larger" in events
    assert "${captured.name.output_path}" in events


STDERR_LOOP = """
name: noisy
initial: fail
scope: ["."]
states:
  fail:
    action: >-
      head -c {size} /dev/zero | tr '\\0' e >&2; echo >&2;
      echo 'FAILED: the reason' >&2
    capture: run
    next: use
  use:
    action: 'echo ${{captured.run.stderr | length | integer}}'
    capture: used
    next: done
  done: {{terminal: true}}
"""


@pytest.mark.parametrize("size", [100_000, 3_000_000])
def test_stderr_keeps_its_end_and_is_interpolated_whole(tmp_path: Path, size: int) -> None:
    """A capture kept stderr's last 64 Ki characters silently, and past the MiB an action's
    stderr held in memory those were the end of its first MiB: the reason a failure gives, at
    its very end, was lost from the capture and from the `action_complete` event."""
    ran = run_yaml(tmp_path, STDERR_LOOP.format(size=size))
    assert ran.code == 0, ran.stdout
    state = json.loads((ran.run_dir / "state.json").read_text())
    kept = state["captured"]["run"]["stderr"]
    assert kept.endswith("FAILED: the reason") and len(kept) == 64 * 1024
    assert state["captured"]["used"]["output"] == str(size + 1 + len("FAILED: the reason"))
    events = [json.loads(line) for line in (ran.run_dir / "events.jsonl").read_text().splitlines()]
    [ended] = [e for e in events if e["event"] == "action_complete" and e["state"] == "fail"]
    assert ended["stderr"].endswith("FAILED: the reason\n")
