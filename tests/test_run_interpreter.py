"""The interpreter in-process, with the real run store and real bash: resume from any boundary,
bounded captures, outputs, and an events.jsonl that matches its schema."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import jsonschema

from engine.load.loader import load_loop_text
from engine.load.resources import schema_path
from engine.model.loop import Loop
from engine.model.ports import RunResult
from engine.runtime.actions import ActionRunner
from engine.runtime.interpreter import CAPTURE_LIMIT, RunState, Runtime, StopSignal, run
from engine.runtime.runstore import RunStore, now_iso

COUNTER = """
name: counter
initial: bump
scope: ["."]
max_steps: 20
outputs:
  total: ${captured.count.output}
  summary: "counted ${captured.count.output}"
states:
  bump:
    action: 'n=$(( $(cat n 2>/dev/null || echo 0) + 1 )); echo $n > n; echo $n'
    capture: count
    evaluate: {type: output_numeric, operator: ge, target: 5}
    on_yes: done
    on_no: $current
  done: {terminal: true}
"""


class StopAfter:
    """A recorder in front of the store that asks for a stop at the n-th state_enter."""

    def __init__(self, inner: RunStore, stop: StopSignal, at: int) -> None:
        self.inner, self.stop, self.at, self.seen = inner, stop, at, 0

    def emit(self, event: str, **fields: Any) -> None:
        self.inner.emit(event, **fields)
        if event == "route":
            self.seen += 1
            if self.seen == self.at:
                self.stop.request("test stop")

    def flush(self) -> None:
        self.inner.flush()


def start(
    tmp_path: Path, loop: Loop, *, stop_at: int | None = None, run_id: str | None = None
) -> tuple[RunResult, RunStore]:
    store = RunStore.create(tmp_path / ".loops" / "runs", run_id)
    stop = StopSignal()
    actions = ActionRunner(cwd=tmp_path, env=os.environ, outputs_dir=store.outputs_dir)
    stop.listeners.append(actions.terminate)
    recorder = store if stop_at is None else StopAfter(store, stop, stop_at)
    runtime = Runtime(
        recorder=recorder,
        actions=actions,
        artifacts_dir=store.artifacts_dir,
        outputs_dir=store.outputs_dir,
        save_state=store.save_state,
        stop=stop,
    )
    state = RunState(
        run_id=store.run_id, loop=loop.name, current=loop.initial, started_at=now_iso()
    )
    try:
        return run(loop, state, runtime), store
    finally:
        store.close()


def resume(tmp_path: Path, loop: Loop, store: RunStore) -> RunResult:
    """What `ll-loop resume` will do: load state.json, run on."""
    state = RunState.from_json(store.load_state())
    actions = ActionRunner(cwd=tmp_path, env=os.environ, outputs_dir=store.outputs_dir)
    runtime = Runtime(
        recorder=store,
        actions=actions,
        artifacts_dir=store.artifacts_dir,
        outputs_dir=store.outputs_dir,
        save_state=store.save_state,
    )
    try:
        return run(loop, state, runtime)
    finally:
        store.close()


def loop_of(text: str) -> Loop:
    return load_loop_text(textwrap.dedent(text))


def test_a_stopped_run_resumes_to_the_same_end(tmp_path: Path) -> None:
    loop = loop_of(COUNTER)
    straight_dir = tmp_path / "straight"
    straight_dir.mkdir()
    straight, _ = start(straight_dir, loop)

    stopped, store = start(tmp_path, loop, stop_at=2)
    assert (stopped.terminated_by, stopped.outcome, stopped.steps) == ("stopped", "inconclusive", 2)
    saved = store.load_state()
    assert saved["status"] == "stopped" and saved["current"] == "bump"

    resumed = resume(tmp_path, loop, store)
    assert (resumed.final_state, resumed.steps, resumed.outcome) == (
        straight.final_state,
        straight.steps,
        straight.outcome,
    )
    assert resumed.outputs == {"total": "5", "summary": "counted 5"} == straight.outputs


def test_events_match_the_schema(tmp_path: Path) -> None:
    loop = loop_of(
        """
        name: tour
        initial: probe
        scope: ["."]
        max_steps: 10
        states:
          probe:
            action: 'echo x >> tries; [ $(wc -l < tries) -ge 2 ]'
            on_yes: slow
            on_no: fix
          fix:
            action: 'true'
            next: probe
          slow:
            action: sleep 5
            timeout: 0.2
            on_yes: done
            on_no: done
            on_error: done
          done: {terminal: true}
        """
    )
    result, store = start(tmp_path, loop)
    assert result.outcome == "success"
    schema = json.loads(schema_path("events.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    events = [json.loads(line) for line in store.events_path.read_text().splitlines()]
    for event in events:
        validator.validate(event)
    kinds = {e["event"] for e in events}
    assert kinds >= {"loop_start", "state_enter", "action_start", "action_complete"}
    assert kinds >= {"evaluate", "route", "loop_complete"}
    assert events[-1]["event"] == "loop_complete"
    timed_out = [e for e in events if e["event"] == "action_complete" and e["timed_out"]]
    assert [e["state"] for e in timed_out] == ["slow"]


def test_a_schema_violation_is_caught(tmp_path: Path) -> None:
    schema = json.loads(schema_path("events.schema.json").read_text())
    bad = {"ts": now_iso(), "event": "route", "run_id": "20260101-000000-abcdef", "depth": 0}
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(bad))
    assert errors, "a route event without state/verdict/target must not validate"


def test_captures_are_bounded_and_the_whole_output_is_kept(tmp_path: Path) -> None:
    loop = loop_of(
        """
        name: big
        initial: spew
        scope: ["."]
        states:
          spew:
            action: head -c 200000 /dev/zero | tr '\\0' b
            capture: spew
            next: done
          done: {terminal: true}
        """
    )
    result, store = start(tmp_path, loop)
    assert result.outcome == "success"
    saved = store.load_state()
    assert len(saved["captured"]["spew"]["output"]) == CAPTURE_LIMIT
    assert store.state_path.stat().st_size < 3 * CAPTURE_LIMIT
    kept = list(store.outputs_dir.iterdir())
    assert [p.read_text() for p in kept] == ["b" * 200000]
    assert saved["captured"]["spew"]["output_path"] == str(kept[0])


def test_run_state_round_trips_through_json(tmp_path: Path) -> None:
    state = RunState(
        run_id="r",
        loop="l",
        current="a",
        steps=3,
        context={"x": [1, 2]},
        captured={"c": {"output": "o"}},
        retries={"a": 2},
        prev={"state": "a", "verdict": "no"},
    )
    assert RunState.from_json(json.loads(json.dumps(state.to_json()))) == state


def test_a_crlf_line_end_is_the_trailing_newline_a_capture_drops(tmp_path: Path) -> None:
    """`printf 'yes\\r\\n'` is captured `yes`, as `echo yes` is: a `\\r` left behind made every
    comparison of the capture fail (`[ "$x" = yes ]`, `== 'yes'`). Inner line ends stay; an
    output long enough to be read back whole from its file, and stderr, lose theirs too."""
    loop = loop_of(
        """
        name: crlf
        initial: say
        scope: ["."]
        states:
          say:
            action: printf 'a\\r\\nyes\\r\\n'; printf 'oops\\r\\n' >&2
            capture: said
            next: compare
          compare:
            action: |
              [ "${captured.said.output}" = "$(printf 'a\\r\\nyes')" ] &&
              [ "${captured.said.stderr}" = oops ]
            next: big
          big:
            action: head -c 70000 /dev/zero | tr '\\0' b; printf '\\r\\n'
            capture: big
            next: check
          check:
            action: '[ "${captured.big.output}" = "$(head -c 70000 /dev/zero | tr "\\0" b)" ]'
            next: done
          done: {terminal: true}
        """
    )
    result, store = start(tmp_path, loop)
    saved = store.load_state()
    assert saved["captured"]["said"]["output"] == "a\r\nyes"
    assert saved["captured"]["said"]["stderr"] == "oops"
    assert result.outcome == "success", result
