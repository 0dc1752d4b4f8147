"""The Python API: `engine.run` and friends do everything `ll-loop` does, in-process, and write
nothing to `os.environ`."""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import engine
from engine.api import LlmPreflightError, RunRefused
from engine.model.errors import LoadError, LockConflict, UsageError
from engine.model.ports import Event
from engine.runtime.history import open_history
from tests import cli
from tests.loopback_server import LoopbackServer, verdict_reply
from tests.run_helpers import write_loop

COUNT = """
name: count-to-three
initial: check
max_steps: 10
scope: ["notes.txt"]
states:
  check:
    action: "test -f notes.txt && wc -l < notes.txt || echo 0"
    evaluate: {type: output_numeric, operator: ge, target: 3}
    on_yes: done
    on_no: add
  add:
    action: |
      echo "$LL_RUN_ID ${env.GREETING | default('-')}" >> notes.txt
    next: check
  done:
    terminal: true
"""

TYPED = """
name: typed
initial: show
scope: ["out.json"]
parameters:
  n: {type: integer, required: true}
  mode: {type: string, enum: [fast, slow], default: fast}
states:
  show:
    action: 'echo "${context | tojson}" > out.json'
    next: done
  done: {terminal: true}
"""


def test_run_does_what_the_cli_does(tmp_path: Path) -> None:
    write_loop(tmp_path, COUNT, "count.yaml")
    before = dict(os.environ)
    result = engine.run("count.yaml", cwd=tmp_path)
    assert (result.outcome, result.terminated_by, result.steps) == ("success", "terminal", 7)
    assert result.final_state == "done" and result.exit_code == 0
    run_dir = tmp_path / ".loops" / "runs" / result.run_id
    assert json.loads((run_dir / "state.json").read_text())["status"] == "finished"
    assert [e.run_id for e in engine.history(cwd=tmp_path)] == [result.run_id]
    assert engine.status(result.run_id, cwd=tmp_path).outcome == "success"
    # the actions saw the run's id; this process's environment never did
    lines = (tmp_path / "notes.txt").read_text().splitlines()
    assert lines == [f"{result.run_id} -"] * 3
    assert dict(os.environ) == before


def test_on_event_sees_every_event_the_log_gets(tmp_path: Path) -> None:
    write_loop(tmp_path, COUNT, "count.yaml")
    seen: list[Event] = []
    result = engine.run(tmp_path / "count.yaml", on_event=seen.append, cwd=tmp_path)
    logged = engine.events(result.run_id, cwd=tmp_path)
    assert [e.event for e in seen] == [e.event for e in logged]
    assert seen[0].event == "loop_start" and seen[-1].event == "loop_complete"
    assert {e.run_id for e in seen} == {result.run_id}
    assert [e.state for e in seen if e.event == "route"][:2] == ["check", "add"]


def test_on_event_hands_over_each_event_as_its_line_reads(tmp_path: Path) -> None:
    """The docs say the fields of its line in events.jsonl: the callback got no `ts`, and the
    last event carried `run_id` among its fields (the file's has it as the Event's run_id)."""
    write_loop(tmp_path, COUNT, "count.yaml")
    seen: list[Event] = []
    result = engine.run(tmp_path / "count.yaml", on_event=seen.append, cwd=tmp_path)
    assert seen == engine.events(result.run_id, cwd=tmp_path)
    assert all("ts" in e.fields and "run_id" not in e.fields for e in seen)


def test_a_listener_that_reads_the_log_finds_the_event_it_hears(tmp_path: Path) -> None:
    """The log is written in batches; a listener must not see it trail its own events."""
    write_loop(tmp_path, COUNT, "count.yaml")
    trailing: list[str] = []

    def read_log(event: Event) -> None:
        logged = engine.events(event.run_id, cwd=tmp_path)
        if not logged or logged[-1] != event:
            trailing.append(f"{event.event}: the log ended at {len(logged)} events")

    engine.run(tmp_path / "count.yaml", on_event=read_log, cwd=tmp_path)
    assert trailing == []


def test_a_callback_that_raises_leaves_an_interrupted_run_not_a_live_one(tmp_path: Path) -> None:
    """The exception reaches the caller; the run no longer names this (living) process, so
    `status` does not call it running and `stop` has no process to signal."""
    write_loop(tmp_path, COUNT, "count.yaml")

    def boom(event: Event) -> None:
        if event.event == "state_enter" and event.fields.get("step") == 3:
            raise ValueError("callback boom")

    with pytest.raises(ValueError, match="callback boom"):
        engine.run("count.yaml", on_event=boom, cwd=tmp_path)
    (snapshot,) = engine.status(cwd=tmp_path)
    assert snapshot.status == "interrupted" and snapshot.pid is None
    assert snapshot.steps == 2  # the last boundary, as resume will take it up
    resumed = engine.resume(snapshot.run_id, cwd=tmp_path)
    assert (resumed.outcome, resumed.steps) == ("success", 7)


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda d: engine.run(None, cwd=d), "path_or_loop must be a path"),
        (lambda d: engine.run("count.yaml", max_steps="5", cwd=d), "max_steps must be a whole"),
        (lambda d: engine.run("count.yaml", context=["a"], cwd=d), "context must be a mapping"),
        (lambda d: engine.run("count.yaml", env={"A": 1}, cwd=d), "env must map variable"),
        (lambda d: engine.run("count.yaml", on_event=5, cwd=d), "on_event must be a function"),
        (lambda d: engine.run("count.yaml", cwd=d / "nowhere"), "is not a directory"),
        (lambda d: engine.status(123, cwd=d), "run_id must be a run id"),
        (lambda d: engine.stop(None, cwd=d), "run_id must be a run id"),  # type: ignore[arg-type]
        (lambda d: engine.resume(None, cwd=d), "run_id must be a run id"),  # type: ignore[arg-type]
        # validate(None) looked for a loop named 'None'; suite(3) raised TypeError
        (lambda d: engine.validate(None, cwd=d), "path must be a path or a loop name"),
        (lambda d: engine.suite(3, cwd=d), "path must be a suite file's path or a Suite"),
        (lambda d: engine.suite("s.suite.yaml", jobs="2", cwd=d), "jobs must be a whole"),
        (lambda d: engine.suite("s.suite.yaml", progress="x", cwd=d), "progress must be a func"),
        # checked as the commands' options are; a string of seconds was a TypeError once a run
        # waited in the queue, an env name with '=' a run that failed to spawn its first action
        (lambda d: engine.run("count.yaml", queue=True, queue_timeout="5", cwd=d), "seconds"),
        (lambda d: engine.run("count.yaml", queue_timeout=-1, cwd=d), "at least 0, got -1"),
        (lambda d: engine.run("count.yaml", lock="no", cwd=d), "lock must be True or False"),
        (lambda d: engine.run("count.yaml", env={"A=B": "x"}, cwd=d), "no environment can hold"),
        (lambda d: engine.run("count.yaml", env={"A": "x\0"}, cwd=d), "NUL"),
        (lambda d: engine.resume("x", queue_timeout=float("nan"), cwd=d), "finite number"),
        (lambda d: engine.stop("x", wait="1", cwd=d), "wait must be a number of seconds"),
        (lambda d: engine.history(cwd=d, limit=0), "limit must be at least 1"),
        (lambda d: engine.history(3, cwd=d), "loop must be a loop name"),
        (lambda d: engine.status(include_finished="yes", cwd=d), "include_finished must be"),
        # replay=5 was a bare TypeError from inside the path handling
        (lambda d: engine.run("count.yaml", replay=5, cwd=d), "replay must be a run id or a run"),
        # a key that is not a name was a bare TypeError (or a run whose state.json failed)
        (lambda d: engine.run("count.yaml", context={1: "x"}, cwd=d), "context keys must be names"),
        (lambda d: engine.run("count.yaml", inputs={("a",): 1}, cwd=d), "inputs keys must be"),
        # values that are not JSON data were saved in state.json as their str() (a date came
        # back from a resume as text, a set as a list), silently
        (
            lambda d: engine.run("count.yaml", context={"when": datetime.date(2026, 1, 2)}, cwd=d),
            r"context\['when'\] is a date, which a run cannot keep",
        ),
        (
            lambda d: engine.run("count.yaml", context={"a": [{"b": {1, 2}}]}, cwd=d),
            r"context\['a'\]\[0\]\['b'\] is a set",
        ),
        (lambda d: engine.run("count.yaml", context={"x": float("nan")}, cwd=d), "not finite"),
        # a list nested 5000 deep was a RecursionError of the check itself
        (
            lambda d: engine.run("count.yaml", context={"a": _nested(5000)}, cwd=d),
            r"context\['a'\] nests more than 100 levels deep",
        ),
        # an integer past Python's 4300 digits passed, and json.dumps of state.json raised a
        # bare ValueError after the run directory was made
        (
            lambda d: engine.run("count.yaml", context={"n": [10**5000]}, cwd=d),
            r"context\['n'\]\[0\] is an integer of more than 4300 digits",
        ),
        (lambda d: engine.run("count.yaml", inputs={"p": Path("x")}, cwd=d), r"inputs\['p'\]"),
    ],
)
def test_arguments_of_the_wrong_kind_are_usage_errors_and_start_nothing(
    tmp_path: Path, call: Any, message: str
) -> None:
    write_loop(tmp_path, COUNT, "count.yaml")
    with pytest.raises(UsageError, match=message):
        call(tmp_path)
    assert not (tmp_path / ".loops" / "runs").exists() or not any(
        (tmp_path / ".loops" / "runs").iterdir()
    )


@pytest.mark.parametrize(
    ("options", "message", "hint"),
    [
        ({"jobs": 0}, "jobs must be at least 1", "pass jobs=1 or more"),
        ({"cases": "zz*"}, "cases='zz*' matches none of the 1 cases", None),
        (
            {"measure_baseline": True, "compare_baseline": True},
            "measure_baseline=True and compare_baseline=True are two separate arms",
            None,
        ),
        (
            {"baseline_of": "x"},
            "baseline_of only makes sense with compare_baseline=True",
            "add compare_baseline=True, or drop baseline_of",
        ),
        ({"address": "ray://h:1"}, "address names a Ray cluster, which only executor='ray'", None),
        ({"resume": "nope"}, "resume='nope': there is no such suite run in the history", None),
    ],
)
def test_suite_refusals_name_the_apis_arguments_not_the_commands_flags(
    tmp_path: Path, options: dict[str, Any], message: str, hint: str | None
) -> None:
    """`engine.suite(..., jobs=0)` was told "--jobs must be at least 1 … pass --jobs 1 or more":
    a flag a Python caller has no way to pass. The command keeps its flags."""
    (tmp_path / "s.suite.yaml").write_text(
        "name: s\ncases: [{id: a, input: {}}]\nsubject: {command: 'true'}\n"
        "judges: [{name: ok, builtin: exit_code}]\n"
    )
    with pytest.raises(engine.SuiteRefusal) as refused:
        engine.suite("s.suite.yaml", cwd=tmp_path, **options)
    assert refused.value.message.startswith(message), refused.value.message
    assert "--" not in refused.value.message + (refused.value.hint or "")
    if hint is not None:
        assert refused.value.hint == hint
    done = cli.ll_harness(tmp_path, "suite", "s.suite.yaml", "--jobs", "0")
    assert "--jobs must be at least 1" in done.stderr, done.stderr


def test_an_unknown_executor_is_a_refusal_and_records_no_run(tmp_path: Path) -> None:
    """`executor="thread"` raised a bare ValueError (no hint, not one of the errors the API
    documents) after the run's row was written, leaving an unfinished run in history.db."""
    (tmp_path / "s.suite.yaml").write_text(
        "name: s\ncases: [{id: a, input: {}}]\nsubject: {command: 'true'}\n"
        "judges: [{name: ok, builtin: exit_code}]\n"
    )
    with pytest.raises(engine.SuiteRefusal) as refused:
        engine.suite("s.suite.yaml", executor="thread", cwd=tmp_path)
    assert refused.value.message == "unknown executor 'thread' (did you mean 'threads'?)"
    assert refused.value.hint == "use one of threads, processes, ray"
    with open_history(tmp_path) as history:
        assert history.suite_runs("s") == []


def test_actions_get_the_env_given_and_the_process_keeps_its_own(tmp_path: Path) -> None:
    write_loop(tmp_path, COUNT, "count.yaml")
    result = engine.run("count.yaml", cwd=tmp_path, env={**os.environ, "GREETING": "hi"})
    assert (tmp_path / "notes.txt").read_text().splitlines() == [f"{result.run_id} hi"] * 3
    assert "GREETING" not in os.environ


def test_two_runs_in_one_process_do_not_share_variables(tmp_path: Path) -> None:
    """Each run's actions see their own LL_RUN_ID: nothing goes through os.environ."""
    results: dict[str, engine.RunResult] = {}

    def work(name: str) -> None:
        folder = tmp_path / name
        folder.mkdir()
        write_loop(folder, COUNT.replace('"notes.txt"', '"."'), "count.yaml")
        results[name] = engine.run("count.yaml", cwd=folder, handle_signals=False)

    threads = [threading.Thread(target=work, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for name in ("a", "b"):
        ids = {line.split()[0] for line in (tmp_path / name / "notes.txt").read_text().splitlines()}
        assert ids == {results[name].run_id}


def test_a_lint_error_refuses_the_run_with_its_diagnostics(tmp_path: Path) -> None:
    write_loop(tmp_path, COUNT.replace("on_no: add", "on_no: ad"), "count.yaml")
    shown: list[engine.Diagnostic] = []
    with pytest.raises(RunRefused) as refused:
        engine.run("count.yaml", cwd=tmp_path, on_diagnostic=shown.append)
    assert [d.code for d in refused.value.diagnostics] == ["LL001"]
    assert "did you mean 'add'" in refused.value.diagnostics[0].message
    assert refused.value.diagnostics[0] in shown
    assert not (tmp_path / ".loops" / "runs").exists()


def test_a_child_with_a_lint_error_refuses_the_parent(tmp_path: Path) -> None:
    write_loop(tmp_path, COUNT.replace("on_no: add", "on_no: ad"), "child.yaml")
    write_loop(
        tmp_path,
        """
        name: parent
        initial: call
        scope: ["."]
        states:
          call: {loop: child.yaml, on_yes: done, on_no: done, on_error: done}
          done: {terminal: true}
        """,
        "parent.yaml",
    )
    with pytest.raises(RunRefused) as refused:
        engine.run("parent.yaml", cwd=tmp_path)
    [diagnostic] = refused.value.diagnostics
    assert diagnostic.code == "LL040" and "child loop is invalid" in diagnostic.message
    # the child was found: the hint sends its author to the child's problems, not to a path
    assert diagnostic.hint == f"see `ll-loop validate {tmp_path / 'child.yaml'}`"


def test_a_file_that_does_not_load_raises_load_error(tmp_path: Path) -> None:
    write_loop(tmp_path, "name: x\ninitial: a\nstates: {a: {terminal: true, colour: red}}\n")
    with pytest.raises(LoadError) as failed:
        engine.run("loop.yaml", cwd=tmp_path)
    assert "colour" in failed.value.diagnostics[0].message
    assert engine.validate("loop.yaml", cwd=tmp_path)[0].line == 3


def test_values_bind_to_parameters_with_their_types(tmp_path: Path) -> None:
    write_loop(tmp_path, TYPED, "typed.yaml")
    engine.run("typed.yaml", cwd=tmp_path, inputs={"n": "3"}, context={"note": "x"})
    assert json.loads((tmp_path / "out.json").read_text()) == {"n": 3, "mode": "fast", "note": "x"}
    with pytest.raises(UsageError, match="has no parameter 'm'"):
        engine.run("typed.yaml", cwd=tmp_path, inputs={"n": 1, "m": 2})
    with pytest.raises(UsageError, match="must be one of"):
        engine.run("typed.yaml", cwd=tmp_path, inputs={"n": 1, "mode": "medium"})
    with pytest.raises(UsageError, match="requires parameter 'n'"):
        engine.run("typed.yaml", cwd=tmp_path)


def test_an_overlapping_run_is_refused_unless_unlocked(tmp_path: Path) -> None:
    from engine.runtime.locks import acquire_scope

    write_loop(tmp_path, COUNT, "count.yaml")
    with acquire_scope(tmp_path, "20260101-000000-aaaaaa", ["."], env={}):
        with pytest.raises(LockConflict, match="is locked by"):
            engine.run("count.yaml", cwd=tmp_path)
        assert engine.run("count.yaml", cwd=tmp_path, lock=False).outcome == "success"


def test_a_judge_without_credentials_refuses_before_the_first_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "LL_PROMPT_RUNNER"):
        monkeypatch.delenv(name, raising=False)
    write_loop(tmp_path, JUDGED, "judged.yaml")
    with pytest.raises(LlmPreflightError) as refused:
        engine.run("judged.yaml", cwd=tmp_path)
    assert "ANTHROPIC_API_KEY" in refused.value.message
    assert not (tmp_path / ".loops" / "runs").exists()


JUDGED = """
name: judged
initial: build
scope: [src]
states:
  build:
    action: "echo 'suite ran: All 5 checks passed'"
    evaluate:
      type: llm_structured
      prompt: "Did every check pass? Quote the line that shows it."
    on_yes: done
    on_no: failed
    on_error: failed
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""


def test_llm_states_run_through_the_api(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(verdict_reply("yes", evidence="All 5 checks passed", input_tokens=1_000_000))
    write_loop(tmp_path, JUDGED, "judged.yaml")
    seen: list[Event] = []
    result = engine.run("judged.yaml", cwd=tmp_path, on_event=seen.append)
    assert (result.outcome, result.final_state) == ("success", "done")
    assert result.cost_usd > 0
    assert [e.fields["status"] for e in seen if e.event == "llm_call"] == ["ok"]
    # replay answers from the log without a request
    requests = len(loopback.requests)
    again = engine.run("judged.yaml", cwd=tmp_path, replay=result.run_id)
    assert again.outcome == "success" and len(loopback.requests) == requests


def test_llm_runs_close_their_connections(loopback: LoopbackServer, tmp_path: Path) -> None:
    """Each run's SDK client was left to the garbage collector: its sockets (and the
    server's end of them) stayed open until a collection found the cycle."""
    import gc
    import time

    write_loop(tmp_path, JUDGED, "judged.yaml")

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    loopback.push(verdict_reply("yes", evidence="All 5 checks passed"))
    assert engine.run("judged.yaml", cwd=tmp_path).outcome == "success"  # imports settle
    gc.collect()
    before = open_fds()
    gc.disable()
    try:
        for _ in range(5):
            loopback.push(verdict_reply("yes", evidence="All 5 checks passed"))
            assert engine.run("judged.yaml", cwd=tmp_path).outcome == "success"
        deadline = time.monotonic() + 5
        while open_fds() > before and time.monotonic() < deadline:
            time.sleep(0.05)  # the server's thread sees the close and closes its end
        assert open_fds() <= before
    finally:
        gc.enable()


def test_stop_then_resume_in_process(tmp_path: Path) -> None:
    """A SIGTERM stops the run at its next boundary (resumable); `resume` finishes it."""
    write_loop(tmp_path, COUNT, "count.yaml")

    def stop_at_step_three(event: Event) -> None:
        if event.event == "state_enter" and event.step == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    first = engine.run("count.yaml", cwd=tmp_path, on_event=stop_at_step_three)
    assert (first.outcome, first.terminated_by) == ("inconclusive", "stopped")
    assert engine.status(first.run_id, cwd=tmp_path).resumable
    assert [s.run_id for s in engine.status(cwd=tmp_path)] == [first.run_id]
    second = engine.resume(first.run_id[:17], cwd=tmp_path)
    assert (second.run_id, second.outcome, second.steps) == (first.run_id, "success", 7)
    assert engine.status(cwd=tmp_path) == []
    with pytest.raises(UsageError, match="already finished"):
        engine.resume(first.run_id, cwd=tmp_path)


def test_a_run_given_a_budget_resumes_with_it_past_lint(tmp_path: Path) -> None:
    """A run started with `max_steps=` (`--max-steps`) above a file budget too short for the loop
    could not be resumed: resume linted the file's `max_steps` (LL006) before it restored the
    budget the run started with, and refused the run. It lints the budget the run has."""
    chain = (
        "name: chain\ninitial: first\nmax_steps: 1\nscope: [out]\nstates:\n"
        "  first: {action: echo one, next: second}\n"
        "  second: {action: echo two, next: done}\n"
        "  done: {terminal: true}\n"
    )
    write_loop(tmp_path, chain, "chain.yaml")

    def stop_at_step_two(event: Event) -> None:
        if event.event == "state_enter" and event.step == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    first = engine.run("chain.yaml", cwd=tmp_path, max_steps=4, on_event=stop_at_step_two)
    assert (first.outcome, first.terminated_by, first.steps) == ("inconclusive", "stopped", 1)
    second = engine.resume(first.run_id, cwd=tmp_path)
    assert (second.outcome, second.steps) == ("success", 2)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("steps", "x"),
        ("context", []),
        ("retries", {"check": None}),
        ("cost_usd", None),
        ("elapsed_ms", "x"),
        ("cost_unknown_in", 5),
        ("loop_file", None),  # was "its loop file None is gone"
        ("loop_file", 5),  # was "its loop file 5 is gone"
        ("killed_attempts", "x"),  # was TypeError: can only concatenate str
        ("killed_attempts", None),
        ("killed_attempts", float("inf")),  # was OverflowError
    ],
)
def test_a_state_json_of_the_wrong_shape_is_refused_in_one_sentence(
    tmp_path: Path, key: str, value: Any
) -> None:
    """A state.json that parses but holds a key of the wrong kind (a hand edit, a file from
    elsewhere) made `ll-loop resume` an internal error (TypeError, AttributeError: "this is a
    bug") wherever the value was first used. It is refused before anything runs, naming the key;
    put right, the run resumes."""
    write_loop(tmp_path, COUNT, "count.yaml")

    def stop_at_step_three(event: Event) -> None:
        if event.event == "state_enter" and event.step == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    first = engine.run("count.yaml", cwd=tmp_path, on_event=stop_at_step_three)
    state_file = tmp_path / ".loops" / "runs" / first.run_id / "state.json"
    saved = state_file.read_text()
    state_file.write_text(json.dumps({**json.loads(saved), key: value}))
    with pytest.raises(UsageError) as refused:
        engine.resume(first.run_id, cwd=tmp_path)
    assert refused.value.message.startswith(f"run {first.run_id}'s state.json is damaged (")
    assert f"its {key!r} is " in refused.value.message
    command = cli.ll_loop(tmp_path, "resume", first.run_id, "--json")
    assert command.code == 2 and "internal error" not in command.stderr
    assert "state.json is damaged" in json.loads(command.stdout)["error"]
    state_file.write_text(saved)
    assert engine.resume(first.run_id, cwd=tmp_path).outcome == "success"


@pytest.mark.parametrize("value", [float("inf"), "x", True, -3, [1]])
def test_a_hostile_killed_attempts_is_read_as_none_by_status_and_explain(
    tmp_path: Path, value: Any
) -> None:
    """state.json's `killed_attempts` (absent in older files: 0) was read with int(): `1e999`
    made `ll-loop status` and `ll-loop explain` an internal error (OverflowError), and `true`
    counted as one killed attempt. A value that is not a whole number >= 0 counts as none."""
    write_loop(tmp_path, COUNT, "count.yaml")

    def stop_at_step_three(event: Event) -> None:
        if event.event == "state_enter" and event.step == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    first = engine.run("count.yaml", cwd=tmp_path, on_event=stop_at_step_three)
    state_file = tmp_path / ".loops" / "runs" / first.run_id / "state.json"
    saved = json.loads(state_file.read_text())
    state_file.write_text(json.dumps({**saved, "killed_attempts": value}))
    for args in (("status",), ("status", first.run_id), ("explain", first.run_id)):
        shown = cli.ll_loop(tmp_path, *args)
        assert shown.code == 0 and "internal error" not in shown.stderr, (args, shown.stderr)
        assert "≥" not in shown.stdout, (args, shown.stdout)
    listed = cli.ll_loop(tmp_path, "status", first.run_id, "--json")
    assert json.loads(listed.stdout)["killed_attempts"] == 0


def test_on_event_raising_at_loop_resume_leaves_the_run_resumable(tmp_path: Path) -> None:
    """The loop_resume event was emitted after state.json named this process and before the
    part that releases the run on an exception: the run read as running, by this living
    process, so neither resume nor stop could take it up until the process ended."""
    write_loop(tmp_path, COUNT, "count.yaml")

    def stop_at_step_three(event: Event) -> None:
        if event.event == "state_enter" and event.step == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    def boom(event: Event) -> None:
        if event.event == "loop_resume":
            raise RuntimeError("boom")

    first = engine.run("count.yaml", cwd=tmp_path, on_event=stop_at_step_three)
    with pytest.raises(RuntimeError, match="boom"):
        engine.resume(first.run_id, cwd=tmp_path, on_event=boom)
    after = engine.status(first.run_id, cwd=tmp_path)
    assert (after.status, after.alive, after.resumable) == ("interrupted", False, True)
    assert engine.resume(first.run_id, cwd=tmp_path).outcome == "success"


class Interrupted(Exception):
    """Raised by a signal handler while the run waits for its action (as Ctrl-C raises
    KeyboardInterrupt in a program that leaves the signals to Python: handle_signals=False)."""


def test_an_exception_while_an_action_runs_ends_the_action(tmp_path: Path) -> None:
    """The exception left engine.run and the action's process group ran on, unseen (status
    listed it as orphaned), changing files after the caller saw the run end."""
    write_loop(
        tmp_path,
        """
        name: slow
        initial: wait
        states:
          wait: {action: "echo $$ > action.pid; sleep 30", next: done}
          done: {terminal: true}
        """,
        "slow.yaml",
    )

    def interrupt(signum: int, frame: object) -> None:
        raise Interrupted()

    def soon(event: Event) -> None:
        if event.event == "action_start":
            threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGUSR1)).start()

    previous = signal.signal(signal.SIGUSR1, interrupt)
    try:
        with pytest.raises(Interrupted):
            engine.run("slow.yaml", cwd=tmp_path, on_event=soon, handle_signals=False)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    action = int((tmp_path / "action.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.killpg(action, 0)
    [run] = engine.status(cwd=tmp_path)
    assert (run.status, engine.status(run.run_id, cwd=tmp_path).orphaned_actions) == (
        "interrupted",
        (),
    )


def test_stop_ends_a_run_in_another_process(tmp_path: Path) -> None:
    write_loop(
        tmp_path,
        """
        name: slow
        initial: wait
        scope: ["."]
        states:
          wait: {action: "sleep 30", next: done}
          done: {terminal: true}
        """,
        "slow.yaml",
    )
    code = "import engine, sys; print(engine.run(sys.argv[1]).terminated_by, flush=True)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "slow.yaml"], cwd=tmp_path, stdout=subprocess.PIPE, text=True
    )
    try:
        from tests.runs_helpers import wait_until

        wait_until(lambda: any(s.status == "running" for s in engine.status(cwd=tmp_path)))
        [running] = engine.status(cwd=tmp_path)
        done = engine.stop(running.run_id, cwd=tmp_path)
        assert done.stopped and done.status is not None and done.status.status == "stopped"
        assert proc.communicate(timeout=30)[0].strip() == "stopped"
    finally:
        proc.kill()
        proc.wait()


IN_A_THREAD = """
import sys, threading, time
import engine
got = {}
worker = threading.Thread(target=lambda: got.update(r=engine.run("slow.yaml")))
worker.start()
while not [s for s in engine.status() if s.status == "running"]:
    time.sleep(0.05)
[running] = engine.status()
done = engine.stop(running.run_id)
worker.join()
print(done.stopped, done.status.status, got["r"].terminated_by, flush=True)
"""


def test_stop_of_a_run_in_a_thread_of_this_process_stops_only_that_run(tmp_path: Path) -> None:
    """A run in a worker thread installs no signal handler: `stop` sent this very process a
    SIGTERM, which killed it (a web service calling engine.stop died with its run)."""
    write_loop(
        tmp_path,
        """
        name: slow
        initial: wait
        states:
          wait: {action: "sleep 30", next: done}
          done: {terminal: true}
        """,
        "slow.yaml",
    )
    proc = subprocess.run(
        [sys.executable, "-c", IN_A_THREAD],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, "True stopped stopped"), proc.stderr


HOST = """
import sys, threading
import engine
got = {}
worker = threading.Thread(target=lambda: got.update(r=engine.run("slow.yaml")))
worker.start()
worker.join()
print("host alive", got["r"].terminated_by, flush=True)
sys.stdin.read()  # a service lives on after its run
"""


def test_stop_from_another_process_of_a_run_in_a_thread_leaves_its_host_alive(
    tmp_path: Path,
) -> None:
    """`ll-loop stop RUN` of a run a service runs in a worker thread sent the service SIGTERM
    (no handler in a thread): the service died. The run is asked through its directory."""
    write_loop(
        tmp_path,
        """
        name: slow
        initial: wait
        states:
          wait: {action: "sleep 30", next: done}
          done: {terminal: true}
        """,
        "slow.yaml",
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", HOST],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        from tests.runs_helpers import wait_until

        wait_until(lambda: any(s.status == "running" for s in engine.status(cwd=tmp_path)))
        [running] = engine.status(cwd=tmp_path)
        done = engine.stop(running.run_id, cwd=tmp_path)
        assert done.stopped and done.status is not None and done.status.status == "stopped"
        assert proc.stdout is not None and proc.stdout.readline().strip() == "host alive stopped"
        assert proc.communicate(timeout=30)[0] == "" and proc.returncode == 0
    finally:
        proc.kill()
        proc.wait()


QUEUED_IN_A_THREAD = """
import sys, threading, time
import engine
got = {}
def run(name, **kw):
    try:
        got[name] = engine.run("slow.yaml", **kw).terminated_by
    except engine.LoopError as exc:
        got[name] = type(exc).__name__
holder = threading.Thread(target=run, args=("holder",))
holder.start()
while not engine.status():
    time.sleep(0.05)
waiter = threading.Thread(target=run, args=("waiter",), kwargs={"queue": True})
waiter.start()
while not [s for s in engine.status() if s.status == "queued"]:
    time.sleep(0.05)
[queued] = [s for s in engine.status() if s.status == "queued"]
if sys.argv[1] == "here":
    engine.stop(queued.run_id)
else:
    print(queued.run_id, flush=True)
waiter.join()
engine.stop([s for s in engine.status() if s.status == "running"][0].run_id)
holder.join()
print(got["waiter"], got["holder"], flush=True)
"""


@pytest.mark.parametrize("where", ["here", "elsewhere"])
def test_stop_of_a_run_queued_in_a_thread_leaves_its_process_alive(
    tmp_path: Path, where: str
) -> None:
    """A run waiting in the lock queue from a worker thread: `stop` sent the process SIGTERM,
    which killed it, whether the stop came from the process itself or from `ll-loop stop`."""
    write_loop(
        tmp_path,
        """
        name: slow
        initial: wait
        scope: ["."]
        states:
          wait: {action: "sleep 30", next: done}
          done: {terminal: true}
        """,
        "slow.yaml",
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", QUEUED_IN_A_THREAD, where],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if where == "elsewhere":
            assert proc.stdout is not None
            queued = proc.stdout.readline().strip()
            assert engine.stop(queued, cwd=tmp_path).was == "queued"
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out.split()[-2:]) == (0, ["StoppedWaiting", "stopped"]), err
    finally:
        proc.kill()
        proc.wait()


def test_a_run_that_takes_no_signals_leaves_no_thread_behind(tmp_path: Path) -> None:
    """Its stop-request watcher outlived the run by a moment (half the runs, here)."""
    write_loop(tmp_path, "name: o\ninitial: a\nstates:\n  a: {action: 'true', next: b}\n"
               "  b: {terminal: true}\n", "o.yaml")  # fmt: skip
    before = threading.enumerate()
    for _ in range(20):
        assert engine.run("o.yaml", cwd=tmp_path, handle_signals=False).outcome == "success"
        assert threading.enumerate() == before


def test_stop_from_on_event_does_not_wait_for_its_own_run(tmp_path: Path) -> None:
    write_loop(tmp_path, COUNT, "count.yaml")
    answers: list[engine.StopResult] = []

    def stop_at_step_three(event: Event) -> None:
        if event.event == "state_enter" and event.step == 3:
            answers.append(engine.stop(event.run_id, cwd=tmp_path, wait=30))

    result = engine.run("count.yaml", cwd=tmp_path, on_event=stop_at_step_three)
    assert (result.terminated_by, result.steps) == ("stopped", 2)
    assert result.duration_ms < 10_000 and answers[0].was == "running"


def test_two_suites_in_threads_leave_the_switch_interval_as_it_was(tmp_path: Path) -> None:
    """Each suite saved the GIL switch interval and put it back when it ended: with two in
    threads, the first to start ending first, the second put back the suites' 0.5 ms, which
    the process kept for good."""
    import shutil

    shutil.copytree(Path(__file__).parent.parent / "examples/suites/wordcount", tmp_path / "wc")
    suite_file = tmp_path / "wc" / "wordcount.suite.yaml"
    own = sys.getswitchinterval()
    second_running, first_done = threading.Event(), threading.Event()
    verdicts: list[str] = []

    def run_second() -> None:
        result = engine.suite(suite_file, cwd=tmp_path, on_case=second, jobs=1)
        verdicts.append(result.verdict.value)

    other = threading.Thread(target=run_second, daemon=True)

    def second(_case: object) -> None:
        second_running.set()
        first_done.wait(60)

    def first(_case: object) -> None:
        if not other.is_alive() and not second_running.is_set():
            other.start()
            second_running.wait(60)

    verdicts.append(engine.suite(suite_file, cwd=tmp_path, on_case=first, jobs=1).verdict.value)
    first_done.set()
    other.join(60)
    assert verdicts == ["PASS", "PASS"]
    assert sys.getswitchinterval() == own


def test_the_exceptions_the_docs_name_are_the_package_s() -> None:
    """docs/api.md says run raises LoadError, LockConflict, PreflightError, UsageError and
    suite SuiteRefusal, SuiteInterrupted; none could be caught as `engine.<name>`."""
    from engine.model import errors
    from engine.suites import driver

    for name in ("LoadError", "LockConflict", "PreflightError", "UsageError", "StoppedWaiting"):
        assert getattr(engine, name) is getattr(errors, name)
    assert engine.SuiteRefusal is driver.SuiteRefusal
    assert engine.SuiteInterrupted is driver.SuiteInterrupted
    assert {"LockConflict", "SuiteRefusal"} <= set(engine.__all__)


def test_the_child_loop_cache_keeps_one_version_per_file_and_a_bounded_number(
    tmp_path: Path,
) -> None:
    """Sub-loops were cached by path, mtime and size, never forgotten: a child edited between
    runs kept every version, and a service writing children to temporary files grew without
    end."""
    import time

    from engine import api

    child = tmp_path / "child.yaml"
    for n in range(5):
        child.write_text(COUNT.replace("max_steps: 10", f"max_steps: {10 + n}"))
        os.utime(child, ns=(time.time_ns(), time.time_ns() + n))
        assert api.load_child(child).max_steps == 10 + n
    assert sum(key == str(child.resolve()) for key in api._children) == 1
    for n in range(api._CHILDREN_MAX + 5):
        other = tmp_path / f"c{n}.yaml"
        other.write_text(COUNT)
        api.load_child(other)
    assert len(api._children) == api._CHILDREN_MAX


def test_engine_run_is_the_function_even_after_the_runtime_is_imported(tmp_path: Path) -> None:
    import engine.runtime.interpreter  # the runtime's package is engine.runtime, not engine.run

    write_loop(tmp_path, COUNT, "count.yaml")
    assert engine.run("count.yaml", cwd=tmp_path).outcome == "success"
    assert engine.runtime.interpreter.RunState.__name__ == "RunState"


def test_import_engine_stays_cheap() -> None:
    code = (
        "import sys, engine; engine.validate; "
        "print(sorted(m for m in ('anthropic', 'jinja2', 'typer', 'networkx', 'lint', "
        "'engine.runtime.interpreter') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_hints_name_a_path_with_a_space_as_a_shell_word(tmp_path: Path) -> None:
    """A hint's command to paste (`ll-loop validate my loops/bad.yaml`) named two files."""
    bad = tmp_path / "my loops" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_text(COUNT.replace("next: check", "next: nowhere"))
    with pytest.raises(RunRefused) as refused:
        engine.run("my loops/bad.yaml", cwd=tmp_path)
    assert refused.value.hint == "fix it, or see `ll-loop validate 'my loops/bad.yaml'`"
    (tmp_path / "my s.suite.yaml").write_text(
        "name: s\ncases: [{id: a, input: {}}]\nsubject: {command: 'true'}\n"
        "judges: [{name: ok, builtin: exit_cod}, {name: ok2, builtin: exit_cod}]\n"
    )
    with pytest.raises(engine.SuiteRefusal) as suite_refused:
        engine.suite("my s.suite.yaml", cwd=tmp_path)
    hint = suite_refused.value.hint
    assert "; `ll-loop validate '/" in hint and hint.endswith("my s.suite.yaml'` lists all 2")


def test_the_public_api_is_listed_before_its_first_use() -> None:
    """`dir(engine)` (what a REPL completes `engine.` from) listed `importlib`, `Any` and
    `annotations` but not `validate`, `events` or `SuiteRefusal`: lazy names appeared only
    once used."""
    code = "import engine; print(' '.join(dir(engine)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    listed = set(out.stdout.split())
    assert set(engine.__all__) <= listed


def test_validate_names_a_missing_loop(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no loop named 'nope'"):
        engine.validate("nope", cwd=tmp_path)
    assert engine.validate("fix-until-green-demo") == []
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "count-to-three.yaml").write_text("name: count-to-three\n")
    (tmp_path / ".loops" / "nightly.suite.yaml").write_text("name: nightly\n")
    with pytest.raises(UsageError) as typo:
        engine.validate("count-to-thre", cwd=tmp_path)
    assert typo.value.message == (
        "no loop named 'count-to-thre' in .loops/ or the built-ins (did you mean 'count-to-three'?)"
    )
    with pytest.raises(UsageError) as suite:  # a suite is not a loop to suggest
        engine.validate("nightly", cwd=tmp_path)
    assert "did you mean" not in suite.value.message


def test_a_name_beside_its_file_is_told_to_pass_the_path(tmp_path: Path) -> None:
    """`ll-loop run greet` next to greet.yaml: a name is looked up in .loops/ and the
    built-ins only, and the hint said to run `ll-loop list`, which does not list the file."""
    write_loop(tmp_path, COUNT, "greet.yaml")
    with pytest.raises(UsageError) as missing:
        engine.validate("greet", cwd=tmp_path)
    assert missing.value.hint == "pass the file's path: greet.yaml"


def test_a_loaded_loop_runs_too(tmp_path: Path) -> None:
    from engine.load.loader import load_loop_file

    loop = load_loop_file(write_loop(tmp_path, COUNT, "count.yaml"))
    result = engine.run(loop, cwd=tmp_path, max_steps=3)
    assert (result.outcome, result.terminated_by, result.steps) == ("inconclusive", "max_steps", 3)
    with pytest.raises(UsageError, match="max_steps must be at least 1"):
        engine.run(loop, cwd=tmp_path, max_steps=0)


DYNAMIC_PARENT = """
name: parent
initial: call
scope: ["out.txt"]
context:
  child: kid
states:
  call:
    loop: "${context.child}"
    on_yes: done
    on_no: done
  done: {terminal: true}
"""

KID = """
name: kid
initial: a
states:
  a:
    action: "echo kid"
    next: done
  done: {terminal: true}
"""


def test_a_sub_loop_named_at_run_time_is_found_after_the_program_changes_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program may change directory while its run goes on (another thread's os.chdir): the
    relative path it gave still names the loop file the run started from."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "parent.yaml").write_text(DYNAMIC_PARENT)
    (tmp_path / "sub" / "kid.yaml").write_text(KID)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(tmp_path)

    def move_away(event: Event) -> None:
        if event.event == "state_enter" and event.state == "call":
            os.chdir(elsewhere)

    result = engine.run("sub/parent.yaml", on_event=move_away)
    assert (result.outcome, result.error) == ("success", None)


SLEEPER = """
name: sleeper
initial: work
scope: ["ran.txt"]
states:
  work:
    action: "sleep 5; touch ran.txt"
    next: done
  done: {terminal: true}
"""


def test_a_stop_that_comes_before_the_action_starts_keeps_it_from_running(
    tmp_path: Path,
) -> None:
    """A stop asked while a listener held the run (here at `action_start`, the last moment
    before the spawn) was lost: the action then ran to its end, however long, before the run
    saw the stop. It must not run at all; the state runs again on resume."""
    write_loop(tmp_path, SLEEPER, "sleeper.yaml")

    def stop_at_action_start(event: Event) -> None:
        if event.event == "action_start":
            engine.stop(event.run_id, cwd=tmp_path)

    result = engine.run("sleeper.yaml", cwd=tmp_path, on_event=stop_at_action_start)
    assert (result.terminated_by, result.steps) == ("stopped", 0)
    assert result.duration_ms < 4_000 and not (tmp_path / "ran.txt").exists()
    resumed = engine.resume(result.run_id, cwd=tmp_path)
    assert resumed.outcome == "success" and (tmp_path / "ran.txt").exists()


def test_a_listener_that_queues_behind_its_own_run_is_refused_at_once(tmp_path: Path) -> None:
    """A listener that started a run of an overlapping scope with `queue=True` waited for the
    run it was called from, which waited for the listener: without a time limit, for ever."""
    write_loop(tmp_path, SLEEPER.replace("sleep 5; ", ""), "sleeper.yaml")
    refusals: list[LockConflict] = []

    def run_again(event: Event) -> None:
        if event.event == "state_enter":
            try:
                engine.run("sleeper.yaml", cwd=tmp_path, queue=True, queue_timeout=20)
            except LockConflict as refused:
                refusals.append(refused)

    result = engine.run("sleeper.yaml", cwd=tmp_path, on_event=run_again)
    assert result.outcome == "success" and result.duration_ms < 10_000
    assert "whose on_event listener is making this call" in refusals[0].message
