"""`ll-harness suite` through the real CLI with real processes, files and SQLite: thresholds
gate the exit code, refusals exit 2, per-case errors are recorded and excluded, inputs reach the
subject verbatim (never as shell code), workspaces are isolated, results land in history.db."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness_helpers import REPO
from tests.suite_helpers import (
    by_judge,
    dataset,
    db_rows,
    leftovers,
    own_project,
    suite,
    suite_json,
    write,
)

PASSING = """\
name: gate
dataset: cases
subject:
  command: echo ${inputs.n}
judges:
  - name: echoed
    check: return outputs["stdout"].strip() == str(inputs["n"]), outputs["stdout"].strip()
thresholds:
  echoed: {min_pass_rate: 0.8}
"""


def numbered(root: Path, count: int) -> None:
    dataset(root, {f"c{i:02d}": {"input": {"n": i}} for i in range(count)})


def test_the_word_count_example_runs_with_no_api_key(tmp_path: Path) -> None:
    """docs/suites.md's example, exactly as shipped, from a copy of the repository layout."""
    target = tmp_path / "examples" / "suites" / "wordcount"
    shutil.copytree(REPO / "examples" / "suites" / "wordcount", target)
    code, data, err = suite_json(tmp_path, "examples/suites/wordcount/wordcount.suite.yaml")
    assert code == 0, err
    assert data["result"] == "PASS" and data["cases"] == 4
    judges = by_judge(data)
    kinds = {j["kind"] for j in data["judges"]}
    assert kinds == {"builtin", "check", "callable"}
    assert judges["count_matches"]["pass_rate"]["k"] == 4
    assert judges["words_per_char"]["value_kind"] == "numeric"
    assert judges["words_per_char"]["skipped"] == 1  # its if: is false for the empty text
    assert judges["result_size"]["mean"]["n"] == 4
    assert len(data["results"]) == 4 * 7  # every case x judge x sample
    code, out, _ = suite(tmp_path, "examples/suites/wordcount/wordcount.suite.yaml")
    assert out.startswith("Suite wordcount: PASS")


@pytest.mark.parametrize(
    ("cases", "subject", "code", "verdict"),
    [
        (20, "echo ${inputs.n}", 0, "PASS"),  # 20/20: Wilson [0.84, 1] clears 0.8
        (20, "echo nope", 1, "FAIL"),  # 0/20: [0, 0.16] is below 0.8
        (3, "echo ${inputs.n}", 3, "INCONCLUSIVE"),  # 3/3: [0.44, 1] straddles 0.8
    ],
)
def test_thresholds_gate_the_exit_code(
    tmp_path: Path, cases: int, subject: str, code: int, verdict: str
) -> None:
    numbered(tmp_path, cases)
    write(tmp_path / "g.suite.yaml", PASSING.replace("echo ${inputs.n}", subject))
    got, out, err = suite(tmp_path, "g.suite.yaml", "--jobs", "4")
    assert got == code, out + err
    assert out.startswith(f"Suite gate: {verdict}")
    assert f"min_pass_rate 0.8  {verdict}" in out


def test_an_interval_next_to_its_gate_is_printed_as_its_verdict_reads(tmp_path: Path) -> None:
    numbered(tmp_path, 15)  # 15/15: Wilson [0.796, 1], just below the gate of 0.8
    write(tmp_path / "g.suite.yaml", PASSING)
    code, out, err = suite(tmp_path, "g.suite.yaml", "--jobs", "2")
    assert code == 3, out + err
    assert "pass rate 15/15 [0.796, 1.000]" in out  # two decimals would print [0.80, 1.00]
    assert "min_pass_rate 0.8  INCONCLUSIVE" in out
    code, out, err = suite(tmp_path, "g.suite.yaml", "--cases", "c0[0-2]")
    assert "pass rate 3/3 [0.44, 1.00]" in out, out + err  # far from the gate: two decimals


def test_a_mean_is_gated_by_its_bootstrap_interval(tmp_path: Path) -> None:
    dataset(tmp_path, {f"c{i}": {"input": {"score": 4 + i % 2}} for i in range(12)})
    write(
        tmp_path / "m.suite.yaml",
        """\
        name: means
        dataset: cases
        subject: {command: "echo ${inputs.score}"}
        judges:
          - name: score
            check: return float(outputs["stdout"]), "the score printed"
            score_range: [1, 5]
        thresholds:
          score: {min_mean: 3.5}
        """,
    )
    code, data, err = suite_json(tmp_path, "m.suite.yaml")
    assert code == 0, err
    mean = by_judge(data)["score"]["mean"]
    assert mean["mean"] == 4.5 and 3.5 <= mean["low"] < 4.5 < mean["high"] <= 5
    text = suite(tmp_path, "m.suite.yaml")[1]
    assert "mean 4.50 [" in text and "min_mean 3.5  PASS" in text


def test_one_numeric_value_has_no_interval_and_decides_no_gate(tmp_path: Path) -> None:
    dataset(tmp_path, {"only": {"input": {"score": 5}}})
    write(
        tmp_path / "m.suite.yaml",
        """\
        name: single
        dataset: cases
        subject: {command: "echo ${inputs.score}"}
        judges:
          - name: score
            check: return float(outputs["stdout"]), "the score printed"
            score_range: [1, 5]
        thresholds:
          score: {min_mean: 4}
        """,
    )
    code, data, err = suite_json(tmp_path, "m.suite.yaml")
    assert code == 3 and data["result"] == "INCONCLUSIVE", err  # one case, like 1/1 [0.21, 1]
    assert by_judge(data)["score"]["mean"] == {"n": 1, "mean": 5.0, "low": None, "high": None}
    text = suite(tmp_path, "m.suite.yaml")[1]
    assert "mean 5.00 (n=1: no interval)" in text and "min_mean 4  INCONCLUSIVE" in text


def test_equal_numeric_values_are_not_a_certain_mean(tmp_path: Path) -> None:
    """Two cases scoring 5 of [1, 5] resampled to the point [5, 5] and PASSed min_mean 4.5 for
    sure, where two passing bool cases give [0.34, 1]: the unseen share of other values (at most
    0.66 of the cases at n = 2) may lie anywhere in the range."""
    dataset(tmp_path, {"a": {"input": {"score": 5}}, "b": {"input": {"score": 5}}})
    write(
        tmp_path / "m.suite.yaml",
        """\
        name: equal
        dataset: cases
        subject: {command: "echo ${inputs.score}"}
        judges:
          - name: score
            check: return float(outputs["stdout"]), "the score printed"
            score_range: [1, 5]
        thresholds:
          score: {min_mean: 4.5}
        """,
    )
    code, data, err = suite_json(tmp_path, "m.suite.yaml")
    assert code == 3 and data["result"] == "INCONCLUSIVE", err
    mean = by_judge(data)["score"]["mean"]
    assert mean["mean"] == 5.0 and mean["high"] == 5.0
    assert mean["low"] == pytest.approx(1 + 4 * 0.34238, abs=1e-4)  # 1..5 scaled like 2/2


def test_many_equal_numeric_values_decide_their_gate(tmp_path: Path) -> None:
    dataset(tmp_path, {f"c{i:03d}": {"input": {"score": 5}} for i in range(100)})
    write(
        tmp_path / "m.suite.yaml",
        """\
        name: equal
        dataset: cases
        subject: {command: "echo ${inputs.score}"}
        judges:
          - name: score
            check: return float(outputs["stdout"]), "the score printed"
            score_range: [1, 5]
        thresholds:
          score: {min_mean: 4.5}
        """,
    )
    code, data, err = suite_json(tmp_path, "m.suite.yaml")
    assert code == 0 and data["result"] == "PASS", err
    assert 4.8 < by_judge(data)["score"]["mean"]["low"] < 5.0


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("empty", "g.suite.yaml:2:1: LL093 the dataset 'cases' ("),  # ... holds no case folder
        ("no-judges", "g.suite.yaml:1:1: error F055 the suite has no judges"),
        ("unknown-threshold", "g.suite.yaml:9:3: error F052 thresholds names 'ecoed'"),
        ("no-match", "--cases 'zz*' matches none of the 2 cases"),
        ("both-baselines", "--measure-baseline and --compare-baseline are two separate arms"),
        ("no-baseline", "no baseline is measured for suite 'gate'"),
    ],
)
def test_refusals_exit_2_before_anything_runs(tmp_path: Path, setup: str, message: str) -> None:
    text = PASSING
    args: list[str] = []
    if setup == "empty":
        (tmp_path / "cases").mkdir()
    else:
        numbered(tmp_path, 2)
    if setup == "no-judges":
        text = "name: gate\ndataset: cases\nsubject: {command: 'true'}\n"
    if setup == "unknown-threshold":
        text = text.replace("  echoed: {min", "  ecoed: {min")
    if setup == "no-match":
        args = ["--cases", "zz*"]
    if setup == "both-baselines":
        args = ["--measure-baseline", "--compare-baseline"]
    if setup == "no-baseline":
        args = ["--compare-baseline"]
    write(tmp_path / "g.suite.yaml", text)
    code, out, err = suite(tmp_path, "g.suite.yaml", *args)
    assert code == 2, out + err
    assert message in err
    assert "Traceback" not in err
    if (tmp_path / ".loops" / "history.db").exists():
        assert db_rows(tmp_path, "SELECT count(*) FROM suite_judgements") == [(0,)]


def test_an_empty_suite_argument_is_refused_not_read_as_the_working_directory(
    tmp_path: Path,
) -> None:
    """`ll-harness suite "$SUITE"` with SUITE unset said `.:1:1: F000 cannot read the file: it
    is not a regular file`: the empty path had become the working directory."""
    numbered(tmp_path, 2)
    write(tmp_path / "g.suite.yaml", PASSING)
    for empty in ("", " "):
        code, out, err = suite(tmp_path, empty)
        assert code == 2, out + err
        assert "the suite argument is empty" in err, err
        assert "*.suite.yaml" in err and "F000" not in err, err
    assert not (tmp_path / ".loops" / "history.db").exists()


def test_per_case_errors_are_recorded_excluded_and_the_suite_goes_on(tmp_path: Path) -> None:
    dataset(
        tmp_path,
        {
            **{f"ok{i}": {"input": {"mode": "ok"}} for i in range(4)},
            "slow": {"input": {"mode": "slow"}},
            "killed": {"input": {"mode": "kill"}},
            "judge-raises": {"input": {"mode": "odd"}},
            "no-input": {"annotations": {"x": 1}},
        },
    )
    (tmp_path / "cases" / "bad-notes").mkdir()
    (tmp_path / "cases" / "bad-notes" / "input.yaml").write_text("mode: ok\n")
    (tmp_path / "cases" / "bad-notes" / "annotations.yaml").write_text("a: [unclosed\n")
    write(
        tmp_path / "e.suite.yaml",
        """\
        name: errors
        dataset: cases
        subject:
          command: |
            case ${inputs.mode} in
              slow) sleep 30 ;;
              kill) kill -9 $$ ;;
              *) echo ${inputs.mode} ;;
            esac
          timeout: 1
        judges:
          - name: said_ok
            check: |
              if outputs["stdout"].strip() == "odd":
                  raise ValueError("cannot judge odd output")
              return outputs["stdout"].strip() == "ok", "printed " + outputs["stdout"].strip()
          - name: exit
            builtin: exit_code
        thresholds:
          said_ok: {min_pass_rate: 0.15}
        """,
    )
    code, data, err = suite_json(tmp_path, "e.suite.yaml", "--jobs", "4")
    # 4/4 scored cases pass ([0.51, 1]); with the 5 errored ones failing it is 4/9 [0.19, 0.73]:
    # still at or above 0.15
    assert code == 0, err
    said = by_judge(data)["said_ok"]
    assert (said["scored"], said["errored"]) == (4, 5)
    assert said["pass_rate"]["n"] == 4  # errored cases are excluded from the rate
    exit_judge = by_judge(data)["exit"]
    assert (exit_judge["scored"], exit_judge["errored"]) == (5, 4)
    errors = {r["case"]: r["error"] for r in data["results"] if r["judge"] == "said_ok"}
    assert errors["slow"] == "the subject timed out after 1s"
    assert errors["killed"] == "the subject was killed by signal 9"
    assert errors["no-input"] == "the case folder has no input.yaml"
    assert "bad-notes/annotations.yaml:2" in errors["bad-notes"]
    assert "ValueError: cannot judge odd output" in errors["judge-raises"]
    assert "e.suite.yaml:15" in errors["judge-raises"]  # the raising line in the suite file
    runs = {c["case"]: c for c in data["case_runs"]}
    assert runs["slow"]["timed_out"] is True and runs["slow"]["status"] == "error"
    text = suite(tmp_path, "e.suite.yaml", "--jobs", "4")[1]
    assert "slow\n    said_ok: error: the subject timed out after 1s" in text
    # every case x judge is a row, errors included
    assert db_rows(tmp_path, "SELECT count(*) FROM suite_judgements WHERE judge = 'exit'") == [
        (18,)
    ]


def test_errored_cases_cannot_pass_a_gate_the_scored_ones_alone_would(tmp_path: Path) -> None:
    """Nine cases of ten timed out and the one scored case passed: 1/1 [0.21, 1] PASSed
    min_pass_rate 0.2, exit 0, though the nine could all be failures (1/10 [0.02, 0.40])."""
    numbered(tmp_path, 10)
    write(
        tmp_path / "t.suite.yaml",
        """\
        name: mostly
        dataset: cases
        subject: {command: 'if [ "$LL_INPUTS_n" != 0 ]; then sleep 30; fi', timeout: 0.3}
        judges:
          - {name: ok, builtin: exit_code}
        thresholds:
          ok: {min_pass_rate: 0.2}
        """,
    )
    code, data, err = suite_json(tmp_path, "t.suite.yaml")
    assert (code, data["result"]) == (3, "INCONCLUSIVE"), err
    ok = by_judge(data)["ok"]
    assert (ok["scored"], ok["errored"], ok["verdict"]) == (1, 9, "INCONCLUSIVE")
    assert any("9 errored cases could still turn it" in note for note in data["notes"])


def test_a_gate_decided_whatever_the_errored_cases_say_is_decided(tmp_path: Path) -> None:
    numbered(tmp_path, 30)
    write(
        tmp_path / "t.suite.yaml",
        """\
        name: few
        dataset: cases
        subject: {command: 'if [ "$LL_INPUTS_n" = 0 ]; then sleep 30; fi', timeout: 0.3}
        judges:
          - {name: ok, builtin: exit_code}
        thresholds:
          ok: {min_pass_rate: 0.7}
        """,
    )
    code, data, err = suite_json(tmp_path, "t.suite.yaml")
    assert (code, data["result"]) == (0, "PASS"), err  # 29/30 counting the error a failure
    write(tmp_path / "t.suite.yaml", (tmp_path / "t.suite.yaml").read_text().replace(
        "exit_code}", "exit_code}\n  - {name: no, check: 'return False, \"no\"'}").replace(
        "ok: {min_pass_rate: 0.7}", "no: {min_pass_rate: 0.5}"))  # fmt: skip
    code, data, err = suite_json(tmp_path, "t.suite.yaml")
    assert (code, data["result"]) == (1, "FAIL"), err  # 0/30 counting the error a pass: 1/30


def test_inputs_reach_the_subject_verbatim_never_as_code(tmp_path: Path) -> None:
    hostile = [
        "$(touch pwned1)",
        "`touch pwned2`",
        '"; touch pwned3; echo "',
        "'; touch pwned4; echo '",
        "a\nb; touch pwned5",
        "${HOME}",
    ]
    dataset(tmp_path, {f"c{i}": {"input": {"text": t}} for i, t in enumerate(hostile)})
    write(
        tmp_path / "i.suite.yaml",
        """\
        name: inject
        dataset: cases
        subject:
          command: printf '%s' ${inputs.text} > got.txt; printf '%s' "${inputs.text}"
        outputs: {paths: [got.txt]}
        judges:
          - name: verbatim
            check: |
              same = outputs["stdout"] == inputs["text"] == outputs["files"]["got.txt"]
              return same, repr(outputs["stdout"])
        thresholds:
          verbatim: {min_pass_rate: 0.5}
        """,
    )
    _code, data, _err = suite_json(tmp_path, "i.suite.yaml", "--keep-workspaces")
    assert by_judge(data)["verbatim"]["pass_rate"]["k"] == len(hostile), data["results"]
    for run in data["case_runs"]:
        assert not any(Path(run["workspace"]).glob("pwned*"))
    assert not list(tmp_path.glob("pwned*"))
    shutil.rmtree(Path(data["case_runs"][0]["workspace"]).parent)  # kept: ours to remove


def test_workspaces_hold_the_inputs_not_the_annotations_and_are_removed(tmp_path: Path) -> None:
    dataset(tmp_path, {"a": {"input": {"n": 1}, "annotations": {"secret": "answer"}}})
    (tmp_path / "cases" / "a" / "fixture.txt").write_text("data\n")
    write(
        tmp_path / "w.suite.yaml",
        """\
        name: ws
        dataset: cases
        subject: {command: "ls -A; pwd"}
        judges:
          - {name: listed, check: 'return "input.yaml" in outputs["stdout"], "ls"'}
        """,
    )
    code, data, err = suite_json(tmp_path, "w.suite.yaml", "--keep-workspaces")
    assert code == 0, err  # no thresholds: UNGATED exits 0
    assert data["result"] == "UNGATED"
    listing = data["results"][0]
    assert listing["passed"] is True
    workspace = Path(data["case_runs"][0]["workspace"])
    assert sorted(p.name for p in workspace.iterdir()) == ["fixture.txt", "input.yaml"]
    assert (workspace / "input.yaml").read_text() == '{"n": 1}'
    shutil.rmtree(workspace.parent)
    code, data, err = suite_json(tmp_path, "w.suite.yaml")
    assert data["case_runs"][0]["workspace"] is None
    assert leftovers(data["run_id"]) == []


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def test_git_projects_get_a_worktree_per_case(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    git(project, "config", "user.email", "t@example.com")
    git(project, "config", "user.name", "t")
    (project / "app.py").write_text("VALUE = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "initial")
    dataset(project, {f"c{i}": {"input": {"value": i + 2}} for i in range(3)}, name="evals/cases")
    write(
        project / "evals" / "edit.suite.yaml",
        """\
        name: edit
        dataset: cases
        subject:
          # each case edits app.py in its own worktree; none sees another's edit
          command: grep -q 'VALUE = 1' app.py && echo "VALUE = ${inputs.value}" > app.py
        judges:
          - name: changed_app
            check: return outputs["modified_files"] == ["app.py"], str(outputs["modified_files"])
          - name: own_value
            check: |
              return outputs["files"]["app.py"] == f"VALUE = {inputs['value']}\\n", "app.py"
        """,
    )
    code, data, err = suite_json(project, "evals/edit.suite.yaml", "--jobs", "3")
    assert code == 0, err
    judges = by_judge(data)
    assert judges["changed_app"]["pass_rate"]["k"] == 3, data["results"]
    assert judges["own_value"]["pass_rate"]["k"] == 3, data["results"]
    assert (project / "app.py").read_text() == "VALUE = 1\n"  # the project is untouched
    assert git(project, "worktree", "list").count("\n") == 1  # every worktree removed


def test_cases_glob_runs_a_subset(tmp_path: Path) -> None:
    numbered(tmp_path, 12)
    write(tmp_path / "g.suite.yaml", PASSING)
    _code, data, _ = suite_json(tmp_path, "g.suite.yaml", "--cases", "c1*")
    assert data["cases"] == 2
    assert sorted({r["case"] for r in data["results"]}) == ["c10", "c11"]


def test_history_rows_and_the_run_row(tmp_path: Path) -> None:
    numbered(tmp_path, 3)
    write(tmp_path / "g.suite.yaml", PASSING)
    _code, data, _ = suite_json(tmp_path, "g.suite.yaml")
    run = data["run_id"]
    rows = db_rows(
        tmp_path,
        "SELECT case_id, judge, sample_index, status, passed FROM suite_judgements "
        "WHERE run_id = ? ORDER BY case_id",
        run,
    )
    assert rows == [(f"c{i:02d}", "echoed", 0, "ok", 1) for i in range(3)]
    [(result, planned, ended)] = db_rows(
        tmp_path, "SELECT result, cases_planned, ended_at IS NOT NULL FROM suite_runs"
    )
    assert (result, planned, ended) == ("INCONCLUSIVE", 3, 1)


def test_the_python_example_of_the_docs_runs(tmp_path: Path) -> None:
    """docs/suites.md "From Python", executed in a copy of the repository layout."""
    import os
    import re
    import sys

    text = (REPO / "docs" / "suites.md").read_text()
    [code] = re.findall(r"```python\n(.*?)```", text, re.S)
    shutil.copytree(
        REPO / "examples" / "suites" / "wordcount", tmp_path / "examples" / "suites" / "wordcount"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=own_project(tmp_path),
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["PASS 0", "4/4 [0.51, 1.00] (95% CI)"]
    assert lines[2].startswith("Suite wordcount: PASS")


def test_a_suite_run_records_where_it_ran_in_git(tmp_path: Path) -> None:
    numbered(tmp_path, 20)  # 20 of 20 passing clears the 0.8 threshold: exit 0
    write(tmp_path / "s.suite.yaml", PASSING)
    git(tmp_path, "init", "-q", "-b", "trunk")
    git(tmp_path, "config", "user.email", "t@example.com")
    git(tmp_path, "config", "user.name", "t")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "cases")
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    (tmp_path / "untracked.txt").write_text("dirty\n")
    code, _, err = suite_json(tmp_path, "s.suite.yaml")
    assert code == 0, err
    rows = db_rows(tmp_path, "SELECT git_head, git_branch, git_dirty FROM suite_runs")
    assert rows == [(head, "trunk", 1)]


def test_an_ungated_suite_whose_every_case_errored_is_an_error_not_exit_0(tmp_path: Path) -> None:
    """No thresholds gate nothing, but a run in which no judge scored any case measured nothing:
    exit 0 would read as "it ran fine" to CI."""
    numbered(tmp_path, 2)
    write(
        tmp_path / "t.suite.yaml",
        """\
        name: stuck
        dataset: cases
        subject: {command: "sleep 30", timeout: 0.3}
        judges:
          - {name: ran, builtin: exit_code}
        """,
    )
    code, data, err = suite_json(tmp_path, "t.suite.yaml")
    assert (code, data["result"], data["exit_code"]) == (2, "ERROR", 2), err
    assert any("nothing was measured" in note for note in data["notes"])
    code, out, _ = suite(tmp_path, "t.suite.yaml")
    assert code == 2 and out.startswith("Suite stuck: ERROR")


def test_an_ungated_suite_whose_judgements_errored_or_were_skipped_is_an_error(
    tmp_path: Path,
) -> None:
    """A judge skipped on every case (its `if:` false) beside one that errored on every case:
    nothing was scored, yet the run was UNGATED and exited 0, because only a run whose every
    judgement errored counted as having measured nothing."""
    numbered(tmp_path, 2)
    write(
        tmp_path / "t.suite.yaml",
        """\
        name: nothing
        dataset: cases
        subject: {command: "echo"}
        judges:
          - {name: said, if: "outputs['stdout'].strip() != ''", check: "return True, 'x'"}
          - {name: broken, check: "raise ValueError('boom')"}
        """,
    )
    code, data, err = suite_json(tmp_path, "t.suite.yaml")
    assert (code, data["result"], data["exit_code"]) == (2, "ERROR", 2), err
    assert any("nothing was measured" in note for note in data["notes"]), data["notes"]


def test_an_ungated_suite_with_one_scored_case_stays_ungated(tmp_path: Path) -> None:
    numbered(tmp_path, 2)
    write(
        tmp_path / "t.suite.yaml",
        """\
        name: half
        dataset: cases
        subject: {command: 'if [ "$LL_INPUTS_n" = 0 ]; then sleep 30; fi', timeout: 0.3}
        judges:
          - {name: ran, builtin: exit_code}
        """,
    )
    code, data, err = suite_json(tmp_path, "t.suite.yaml")
    assert (code, data["result"]) == (0, "UNGATED"), err


def test_a_suite_without_models_imports_neither_jinja_nor_the_model_client(
    tmp_path: Path,
) -> None:
    """A suite of a shell subject and deterministic judges renders no template and calls no
    model: its start-up imported Jinja (through the `if:` size checks) and the Anthropic client
    (through the credentials preflight), ~30 ms of every run and resume."""
    import sys

    (tmp_path / ".loops").mkdir()
    (tmp_path / "s.suite.yaml").write_text(
        "name: s\ncases: [{input: {n: 3}}]\nsubject: {command: 'echo ${inputs.n}'}\n"
        "judges:\n  - name: echoed\n    check: return outputs['stdout'].strip() == '3'\n"
        "    if: inputs['n'] * 2 == 6\n  - {name: exit, builtin: exit_code}\n"
    )
    code = (
        "import sys, engine\n"
        "result = engine.suite('s.suite.yaml')\n"
        "assert [s.passed for j in result.summaries for s in j.scores] == [True, True], result\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('jinja2', 'anthropic')"
        " or m.startswith('engine.llm'))\n"
        "assert not loaded, loaded\n"
    )
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_cases_glob_reads_only_the_cases_it_chooses(tmp_path: Path) -> None:
    """Every case was read (and held) before a run to lint it, also those `--cases` leaves
    out: `--cases 'x-1*'` on 20,000 cases read all 20,000 to run ten (2.5 s, not 0.5 s)."""
    import tracemalloc

    padding = "word " * 400  # 2 KB of input a read case holds, twice (its text and its value)
    dataset(tmp_path, {f"c{i:04d}": {"input": {"n": i, "text": padding}} for i in range(1500)})
    write(tmp_path / "g.suite.yaml", PASSING)
    suite_json(tmp_path, "g.suite.yaml", "--cases", "c0003")  # the modules a run imports
    tracemalloc.start()
    try:
        _code, data, err = suite_json(tmp_path, "g.suite.yaml", "--cases", "c000[0-2]")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data["cases"] == 3, err
    assert sorted({r["case"] for r in data["results"]}) == ["c0000", "c0001", "c0002"]
    # reading all 1,500 held ~9 MB here; listing them ~2 MB
    assert peak < 4_500_000, peak
