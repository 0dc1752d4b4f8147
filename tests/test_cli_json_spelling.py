"""One spelling for JSON on every command (docs/decisions.md, "--json everywhere"): `--json` on
every command that can print JSON, `--format json` (or ll-harness's seed spelling `--output
json`) where a command has several formats. Each call here must print the command's own JSON
result, not the `{"error": ...}` object a command line that does not parse gets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli import ll_harness, ll_loop

REPO = Path(__file__).parent.parent
LOOP = """name: once
initial: a
max_steps: 3
scope: ["."]
states:
  a:
    action: "true"
    next: done
  done:
    terminal: true
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "once.yaml").write_text(LOOP)
    return tmp_path


def _result(text: str) -> object:
    data = json.loads(text)
    assert not (isinstance(data, dict) and "error" in data and "hint" in data), data
    return data


@pytest.mark.parametrize("spelling", [["--json"], ["--format", "json"], ["-f", "json"]])
def test_ll_loop_commands_with_several_formats_take_json_too(
    project: Path, spelling: list[str]
) -> None:
    ran = ll_loop(project, "run", "once", "--json")
    run_id = ran.json["run_id"]
    explained = ll_loop(project, "explain", run_id, *spelling)
    assert explained.code == 0, explained.stderr
    assert _result(explained.stdout)["run_id"] == run_id  # type: ignore[index]
    validated = ll_loop(project, "validate", "once", *spelling)
    assert validated.code == 0, validated.stderr
    assert "loops" in _result(validated.stdout)  # type: ignore[operator]
    shown = ll_loop(project, "show", "once", *spelling)
    assert shown.code == 0, shown.stderr
    _result(shown.stdout)


@pytest.mark.parametrize("spelling", [["--json"], ["--format", "json"], ["-f", "json"]])
def test_migrate_takes_json_too(tmp_path: Path, spelling: list[str]) -> None:
    shutil.copytree(REPO / "tests" / "data" / "migrate", tmp_path / "loops")
    done = ll_loop(tmp_path / "loops", "migrate", "smoke.yaml", *spelling)
    assert "files" in _result(done.stdout), done.stderr  # type: ignore[operator]


@pytest.mark.parametrize(
    "spelling", [["--json"], ["--format", "json"], ["--output", "json"], ["-f", "json"]]
)
def test_ll_harness_commands_take_json_too(tmp_path: Path, spelling: list[str]) -> None:
    measured = ll_harness(tmp_path, "cmd", "true", "--exit-code", "0", *spelling)
    assert measured.code == 0, measured.stderr
    assert _result(measured.stdout)["result"] == "PASS"  # type: ignore[index]
    task = tmp_path / "t.yaml"
    task.write_text("prompt: hi\nblanks: [a]\nexpected: {a: 1}\n")
    answer = "cmd:cat > /dev/null; printf '{\"a\": 1}'"
    batch = ll_harness(tmp_path, "dsl", str(task), "--runner", answer, *spelling)
    assert batch.code == 0, batch.stderr
    _result(batch.stdout)
    suite = ll_harness(
        tmp_path, "suite", str(REPO / "examples/suites/wordcount/wordcount.suite.yaml"), *spelling
    )
    assert "cases" in json.dumps(_result(suite.stdout)), suite.stderr


@pytest.mark.parametrize(
    "arguments",
    [
        ["history"],  # no TARGET
        ["history", "x", "--since", "soon"],
        ["history", "x"],  # no history database here
        ["history", "--stability", "--since", "soon"],
    ],
)
def test_ll_harness_history_refusing_still_prints_its_json_object(
    tmp_path: Path, arguments: list[str]
) -> None:
    """Every other ll-harness command asked for JSON prints its refusal object on stdout; a
    refusal of `history --json` printed the sentence on stderr and nothing on stdout."""
    done = ll_harness(tmp_path, *arguments, "--json")
    assert done.code == 2, done
    refusal = json.loads(done.stdout)
    assert refusal["result"] == "ERROR" and refusal["refused"] is True, refusal
    assert refusal["error"] in done.stderr


@pytest.mark.parametrize("command", [["explain"], ["report", "--html"]])
def test_explain_and_report_without_a_run_name_the_newest(
    project: Path, command: list[str]
) -> None:
    """`status` without RUN lists the live runs; `explain` and `report` need one run and said
    only "Missing argument 'run'": they now say so in a sentence whose hint names this
    project's newest run (and `ll-loop history` for the others)."""
    empty = ll_loop(project, *command)
    assert empty.code == 2
    assert "this project has no runs yet" in empty.stderr, empty.stderr
    ll_loop(project, "run", "once", "--json")
    newest = ll_loop(project, "run", "once", "--json").json["run_id"]
    asked = ll_loop(project, *command)
    assert asked.code == 2 and "Traceback" not in asked.stderr
    assert f"say which run to {command[0]}" in asked.stderr, asked.stderr
    assert f"ll-loop {command[0]} {newest}" in asked.stderr
    assert "ll-loop history" in asked.stderr
