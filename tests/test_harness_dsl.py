"""`ll-harness dsl`: task files, the answer contract, key-by-key grading, ungraded tasks, exit
codes, --jobs, --retry-of — through the real CLI with a scripted agent CLI as the prompt runner."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine.harness.dsl import TaskOutcome, dsl_exit_code
from engine.harness.tasks import extract_answer, grade_answer, load_task, task_files
from engine.model.errors import UsageError
from engine.runtime.history import open_history
from tests.harness_helpers import DATA, harness
from tests.loopback_server import LoopbackServer, Reply, message, text_reply, verdict_reply

# ---- answer extraction and grading (pure) ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```json\n{"a": 1}\n```\nthen\n```json\n{"a": 2}\n```', {"a": 2}),
        ('```JSON\n{"a": "x"}\n```', {"a": "x"}),
        ('```json\n{"a": 1}\n```\n```json\n{broken\n```', {"a": 1}),
        ('```json\n[1, 2]\n```\nfinal {"b": true}', {"b": True}),
        ('first {"a": 1} then {"a": {"nested": 2}} done', {"a": {"nested": 2}}),
        ('braces { that are not json } and {"k": "v"}', {"k": "v"}),
        ("no object at all", None),
        ("", None),
    ],
)
def test_extract_answer(text: str, answer: dict[str, Any] | None) -> None:
    assert extract_answer(text) == answer


def test_grade_answer_key_by_key() -> None:
    expected = {"on_yes": "done", "steps": 10, "flag": True, "path": ["a", "b"]}
    assert grade_answer(expected, {"on_yes": " done\n", "steps": 10.0, "flag": True,
                                   "path": ["a", "b"]}) == []  # fmt: skip
    problems = grade_answer(expected, {"on_yes": "finish", "steps": 10, "flag": 1})
    assert problems == [
        "on_yes: expected 'done' got 'finish'",
        "flag: expected true got 1",
        "path: missing from the answer",
    ]


def write_task(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("prompt: hi\nexpect:\n  a: 1\n", "bad.yaml:2: the top level: unknown key 'expect'"),
        ("prompt: hi\nsource_dsl: x\n", "bad.yaml:2: the top level: unknown key 'source_dsl'"),
        ("blanks: [a]\n", "bad.yaml:1: the top level: 'prompt' is a required property"),
        ("prompt: hi\nexpected: [1]\n", "bad.yaml:2: expected: [1] is not of type 'object'"),
        ("prompt: hi\nblanks: [a]\nexpected:\n  b: 1\n", "bad.yaml:4: expected key 'b'"),
        ("prompt: [unclosed\n", "bad.yaml:2: not valid YAML"),
    ],
)
def test_invalid_task_files_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = write_task(tmp_path, "bad.yaml", text)
    with pytest.raises(UsageError) as caught:
        load_task(path, tmp_path)
    assert caught.value.message.startswith(message)


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_an_empty_task_file_is_said_to_be_a_task_file(tmp_path: Path, text: str) -> None:
    """An empty task file was refused in the loop reader's words: "not valid YAML (the file is
    empty: a loop needs at least name, initial and states)", hint "run `ll-loop schema` or see
    docs/format.md for a minimal loop": the wrong format, and the wrong page."""
    path = write_task(tmp_path, "bad.yaml", text)
    with pytest.raises(UsageError) as caught:
        load_task(path, tmp_path)
    assert caught.value.message == "bad.yaml:1: the task file is empty: a task needs a prompt"
    assert caught.value.hint == "see docs/harness.md for the task file format"
    path.write_bytes(b"prompt: \x00")
    with pytest.raises(UsageError) as caught:
        load_task(path, tmp_path)
    assert "loop" not in caught.value.hint


def test_a_task_path_that_is_a_pipe_or_a_device_is_said_to_be_one(tmp_path: Path) -> None:
    """`ll-harness dsl t.yaml` of a FIFO (or `<(cat t.yaml)`, or /dev/null) said "no task file
    or directory at t.yaml", of a path that exists."""
    import os

    os.mkfifo(tmp_path / "t.yaml")
    with pytest.raises(UsageError) as caught:
        task_files(tmp_path / "t.yaml")
    assert caught.value.message == f"{tmp_path / 't.yaml'} is a pipe (FIFO), not a task file"
    with pytest.raises(UsageError, match="/dev/null is a device, not a task file"):
        task_files(Path("/dev/null"))
    with pytest.raises(UsageError, match="no task file or directory at"):
        task_files(tmp_path / "gone.yaml")


def test_source_dsl_gets_a_use_source_hint(tmp_path: Path) -> None:
    path = write_task(tmp_path, "bad.yaml", "prompt: hi\nsource_dsl: x\n")
    with pytest.raises(UsageError) as caught:
        load_task(path, tmp_path)
    assert caught.value.hint == "not supported: use `source`"


def test_a_misspelt_key_says_which_key_was_meant(tmp_path: Path) -> None:
    """Loop files answer a typo with "did you mean"; task files only listed every key."""
    path = write_task(tmp_path, "bad.yaml", "prompt: hi\nexpcted:\n  a: 1\n")
    with pytest.raises(UsageError) as caught:
        load_task(path, tmp_path)
    assert caught.value.message == (
        "bad.yaml:2: the top level: unknown key 'expcted' (did you mean 'expected'?)"
    )


def test_answer_contract_is_appended(tmp_path: Path) -> None:
    task = load_task(DATA / "tasks" / "route-ok.yaml", DATA)
    prompt = task.full_prompt()
    assert prompt.startswith(task.prompt.rstrip())
    assert '- "on_yes": the state after a passing check' in prompt
    assert "```json" in prompt
    bare = load_task(DATA / "tasks" / "describe.yaml", DATA)
    assert bare.full_prompt() == bare.prompt


@pytest.mark.parametrize(
    ("outcomes", "code"),
    [
        (["pass", "pass"], 0),
        (["pass", "fail"], 1),
        (["pass", "ungraded"], 1),
        (["ungraded", "ungraded"], 2),
        ([], 2),
        (["pass", "error"], 2),
        (["fail", "error"], 2),
        (["pass", "abstain"], 3),
        (["abstain", "fail"], 1),
        (["abstain", "ungraded"], 1),
    ],
)
def test_dsl_exit_codes(outcomes: list[TaskOutcome], code: int) -> None:
    assert dsl_exit_code(outcomes) == code


# ---- the real CLI ------------------------------------------------------------------------------


def runner_for(answers: Path) -> str:
    return f"cmd:{sys.executable} {DATA / 'answer.py'} {answers}"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(DATA / "tasks", tmp_path / "tasks")
    shutil.copy(DATA / "answers.json", tmp_path / "answers.json")
    return tmp_path


def dsl(workdir: Path, target: str, *extra: str) -> tuple[int, str, str]:
    done = harness(workdir, "dsl", target, "--runner", runner_for(workdir / "answers.json"), *extra)
    return done.returncode, done.stdout, done.stderr


def test_batch_report_with_failures_and_an_ungraded_task(workdir: Path) -> None:
    code, out, err = dsl(workdir, "tasks")
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0].startswith("DSL pass-rate: 2/4 [0.15, 0.85] (95% CI)")
    assert "graded 4 of 5 tasks — 1 ungraded (no `expected:` and no --semantic)" in out
    assert "failed: tasks/prose.yaml (unparseable answer — no JSON object in response)" in out
    assert "tasks/route-wrong.yaml (on_yes: expected 'done' got 'finish')" in out
    assert "ungraded: tasks/describe.yaml" in out
    with open_history(workdir) as history:
        assert history.attempts("tasks/describe.yaml") == []  # an ungraded task is not run
        [row] = history.attempts("tasks/route-wrong.yaml")
        assert row.runner == "dsl" and row.outcome == "fail"


def test_all_graded_tasks_pass(workdir: Path) -> None:
    (workdir / "tasks" / "describe.yaml").unlink()
    (workdir / "tasks" / "prose.yaml").unlink()
    (workdir / "tasks" / "route-wrong.yaml").unlink()
    code, out, _ = dsl(workdir, "tasks", "--output", "json")
    assert code == 0
    data = json.loads(out)
    assert data["pass_rate"]["k"] == 2 and data["pass_rate"]["n"] == 2
    assert data["counts"] == {"pass": 2, "fail": 0, "abstain": 0, "error": 0, "ungraded": 0}


def test_every_task_ungraded_exits_2(workdir: Path) -> None:
    code, out, _ = dsl(workdir, "tasks/describe.yaml")
    assert code == 2
    assert out.startswith("DSL pass-rate: 0/0 [0.00, 1.00] (95% CI)")


def test_samples_above_one_are_refused(workdir: Path) -> None:
    code, _, err = dsl(workdir, "tasks", "--samples", "2")
    assert code == 2 and "dsl does not take --samples > 1" in err


def test_an_invalid_task_stops_the_batch_before_anything_runs(workdir: Path) -> None:
    write_task(workdir / "tasks", "zz-bad.yaml", "prompt: hi\nexpectd: {a: 1}\n")
    code, out, err = dsl(workdir, "tasks")
    assert code == 2 and out == ""
    assert "tasks/zz-bad.yaml:2" in err and "unknown key 'expectd'" in err
    with open_history(workdir) as history:
        assert history.attempts("tasks/route-ok.yaml") == []


def test_semantic_grades_tasks_without_expected(workdir: Path, loopback: LoopbackServer) -> None:
    loopback.push(verdict_reply("yes", evidence="re-checks until the tests pass"))
    code, out, err = dsl(workdir, "tasks/describe.yaml", "--semantic", "Is it accurate? Quote it.")
    assert code == 0, err + out
    assert out.startswith("DSL pass-rate: 1/1")
    assert len(loopback.requests) == 1  # tasks with `expected` never call the judge


def test_semantic_abstention_exits_3(workdir: Path, loopback: LoopbackServer) -> None:
    loopback.push(verdict_reply("cannot_judge"))
    code, out, err = dsl(workdir, "tasks/describe.yaml", "--semantic", "Is it accurate?")
    assert code == 3, out + err
    assert "abstained: tasks/describe.yaml" in out


def _set_answer(workdir: Path, task: str, **entry: Any) -> None:
    path = workdir / "answers.json"
    answers = json.loads(path.read_text())
    answers[task] = {**answers[task], **entry}
    path.write_text(json.dumps(answers))


def test_timeout_then_admitted_retry(workdir: Path) -> None:
    # 3 s: long enough for the answering process to start on a busy machine
    _set_answer(workdir, "route-ok", sleep=30)
    code, out, _ = dsl(workdir, "tasks/route-ok.yaml", "--timeout", "3", "--output", "json")
    assert code == 2
    data = json.loads(out)
    assert data["counts"]["error"] == 1 and data["results"][0]["timed_out"] is True
    attempt_id = data["results"][0]["attempt_id"]

    _set_answer(workdir, "route-ok", sleep=0)
    code, out, err = dsl(workdir, "tasks", "--timeout", "3", "--retry-of", str(attempt_id))
    assert code == 2 and "needs the path of the single task file" in err
    code, out, err = dsl(
        workdir, "tasks/route-ok.yaml", "--timeout", "3", "--retry-of", str(attempt_id)
    )
    assert code == 0, err
    assert "admissions: 1 (timeout×1)" in out
    with open_history(workdir) as history:
        old = history.attempt(attempt_id)
        assert old is not None and old.superseded_by is not None
    code, _, err = dsl(
        workdir, "tasks/route-ok.yaml", "--timeout", "3", "--retry-of", str(attempt_id)
    )
    assert code == 2 and "already superseded" in err


def test_jobs_run_tasks_concurrently(workdir: Path) -> None:
    for task in ("route-ok", "route-wrong", "count-ok", "prose"):
        _set_answer(workdir, task, sleep=2)
    (workdir / "tasks" / "describe.yaml").unlink()
    started = time.monotonic()
    code, _, _ = dsl(workdir, "tasks", "--jobs", "4")
    elapsed = time.monotonic() - started
    assert code == 1
    assert elapsed < 6.5, f"4 tasks of 2 s with --jobs 4 took {elapsed:.1f}s"


def test_anthropic_runner_answers_and_refusals(workdir: Path, loopback: LoopbackServer) -> None:
    loopback.push(text_reply('```json\n{"on_yes": "done", "on_no": "fix"}\n```'))
    refusal = message([{"type": "text", "text": "I can't help."}], stop_reason="refusal")
    loopback.push(Reply(body=refusal))
    code, out, err = dsl_with(workdir, "anthropic", "tasks/route-ok.yaml", "--model", "m-1")
    assert code == 0, out + err
    assert "Answer contract" in loopback.requests[0].body["messages"][0]["content"]
    assert loopback.requests[0].body["model"] == "m-1"
    code, out, err = dsl_with(workdir, "anthropic", "tasks/route-ok.yaml")
    assert code == 1, out + err  # a refusal is a failed task, not an infra error
    assert "tasks/route-ok.yaml (the model refused to answer)" in out


def test_agent_cli_crash_is_an_infra_error(workdir: Path) -> None:
    _set_answer(workdir, "route-ok", exit=3)
    code, out, _ = dsl(workdir, "tasks/route-ok.yaml")
    assert code == 2
    assert "errors: tasks/route-ok.yaml (the prompt runner exited with code 3)" in out


def dsl_with(workdir: Path, runner: str, target: str, *extra: str) -> tuple[int, str, str]:
    done = harness(workdir, "dsl", target, "--runner", runner, *extra)
    return done.returncode, done.stdout, done.stderr


def test_an_empty_task_path_is_refused_not_read_as_the_working_directory(tmp_path: Path) -> None:
    """`ll-harness dsl "$TASKS"` with TASKS unset graded every *.yaml of the working directory
    as a task file (the empty path is `.`), loops and suites included."""
    (tmp_path / "loop.yaml").write_text("name: l\ninitial: a\nstates: {a: {terminal: true}}\n")
    ran = harness(tmp_path, "dsl", "")
    assert ran.code == 2, ran.stderr
    assert ran.stderr.startswith("error: the task path is empty\n"), ran.stderr
