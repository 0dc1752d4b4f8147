"""Baselines of a suite against the runs compared with them: what the comparison is over, and
what it refuses — the judge model the environment chose, cases the baseline does not have, and
baseline cases whose subject could not run. Real `ll-harness suite` runs; the model calls are
answered by the loopback Messages server through the real SDK."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.loopback_server import LoopbackServer, Reply, forced_tool_name, tool_reply
from tests.suite_helpers import by_judge, dataset, suite, suite_json, write


def prefers_the_subject(request: dict[str, Any]) -> Reply:
    """The model: a score of 4 for every score judge; the pairwise judge prefers the record
    whose output says NEW."""
    tool = forced_tool_name(request)
    if tool == "submit_preference":
        text = json.dumps(request["messages"])
        first = re.search(r"<response_A>(.*?)</response_A>", text, re.S)
        better = "A" if first and "NEW" in first.group(1) else "B"
        return tool_reply({"better": better, "reason": "it is newer"})(request)  # type: ignore[operator,no-any-return]
    assert tool == "submit_score", tool
    return tool_reply({"score": 4, "reason": "fine", "evidence": ""})(request)  # type: ignore[operator,no-any-return]


SCORED = """\
    name: scored
    cases:
      - {id: one, input: {v: 1}}
      - {id: two, input: {v: 2}}
    subject:
      command: echo answer ${inputs.v}
    isolation: copy
    judges:
      - name: quality
        prompt: "Rate this answer: {{ outputs.stdout }}"
"""


def test_a_baseline_judged_by_another_model_from_the_environment_is_refused(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.default = prefers_the_subject
    write(tmp_path / "s.suite.yaml", SCORED)
    monkeypatch.setenv("LL_JUDGE_MODEL", "claude-haiku-4-5")
    code, measured, err = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert code == 0, err
    assert {r.body["model"] for r in loopback.requests} == {"claude-haiku-4-5"}
    monkeypatch.setenv("LL_JUDGE_MODEL", "claude-opus-4-1")
    code, out, err = suite(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert code == 2, out + err
    assert "judged under other conditions" in err
    assert len(loopback.requests) == 2  # refused before anything ran
    # the same model, chosen the same way, compares
    monkeypatch.setenv("LL_JUDGE_MODEL", "claude-haiku-4-5")
    code, compared, err = suite_json(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert compared["baseline_run"] == measured["run_id"], err


def test_a_baseline_judged_with_other_thinking_from_the_environment_is_refused(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`LL_JUDGE_REASONING` gives the judges extended thinking, which moves their verdicts as a
    model does; unset, the fingerprint is the one recorded before it counted."""
    loopback.default = prefers_the_subject
    write(tmp_path / "s.suite.yaml", SCORED)
    monkeypatch.delenv("LL_JUDGE_REASONING", raising=False)
    code, measured, err = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert code == 0, err
    monkeypatch.setenv("LL_JUDGE_REASONING", "high")
    code, out, err = suite(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert code == 2, out + err
    assert "judged under other conditions" in err
    monkeypatch.setenv("LL_JUDGE_REASONING", "off")  # off is no thinking, as unset
    code, compared, err = suite_json(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert compared["baseline_run"] == measured["run_id"], err


PAIRWISE = """\
    name: paired
    cases:
      - {id: one, input: {v: 1, w: 1}}
      - {id: two, input: {v: 2}}
    subject:
      command: echo OLD ${inputs.w}
    isolation: copy
    judges:
      - name: answered
        builtin: exit_code
    pairwise:
      name: preference
      prompt: Which answer is better?
"""


def test_a_case_the_stored_baseline_cannot_compare_is_an_errored_pairwise_judgement(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = prefers_the_subject
    path = write(tmp_path / "s.suite.yaml", PAIRWISE)
    code, measured, err = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert [c["status"] for c in measured["case_runs"]] == ["ok", "error"], err  # two lacks w
    # the candidate: runs every case; a third case is new since the baseline
    write(
        path,
        PAIRWISE.replace("echo OLD ${inputs.w}", "echo NEW ${inputs.v}").replace(
            "- {id: two, input: {v: 2}}",
            "- {id: two, input: {v: 2}}\n      - {id: three, input: {v: 3}}",
        ),
    )
    code, compared, err = suite_json(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert compared["baseline_run"] == measured["run_id"], err
    preference = by_judge(compared)["preference"]
    assert (preference["wins"], preference["losses"], preference["errored"]) == (1, 0, 2)
    errors = {r["case"]: r["error"] for r in compared["results"] if r["judge"] == "preference"}
    assert errors["one"] is None
    assert "could not run on this case in baseline run" in errors["two"]
    assert "has no case with these inputs and annotations" in errors["three"]
    code, out, err = suite(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert code == 0, err  # no thresholds
    assert re.search(r"preference\s+pairwise\s+win/loss\s+win rate 1/1 \S+ \S+\s+0\s+2", out), out
    assert "has no case with these inputs and annotations" in out


DETERMINISTIC = """\
    name: counted
    cases:
      - {id: one, input: {v: 1}}
      - {id: two, input: {v: 2}}
      - {id: three, input: {v: 3}}
    subject:
      command: echo ${inputs.v}
    isolation: copy
    judges:
      - name: small
        check: |
          return int(outputs["stdout"]) < 3, "below 3"
"""


def test_a_comparison_says_how_many_cases_the_baseline_lacks_and_refuses_when_it_has_none(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "s.suite.yaml", DETERMINISTIC)
    code, measured, err = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert code == 0, err
    # one case edited: the deltas are over the two others, and the report says so
    write(path, DETERMINISTIC.replace("{id: three, input: {v: 3}}", "{id: three, input: {v: 4}}"))
    code, compared, err = suite_json(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert compared["baseline_run"] == measured["run_id"], err
    [delta] = compared["deltas"]
    assert delta["baseline"]["pass_rate"]["n"] == delta["candidate"]["pass_rate"]["n"] == 2
    [note] = [n for n in compared["notes"] if "baseline run" in n]
    assert note.startswith(f"1 case of this run is not in the baseline run {measured['run_id']}")
    assert note.endswith("the deltas are over the other 2")
    code, out, err = suite(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert note in " ".join(out.split()), out
    # every case edited: nothing to compare, refused before anything runs
    write(path, DETERMINISTIC.replace("input: {v:", "input: {w: 0, v:"))
    runs = len(list((tmp_path / ".loops" / "suites").iterdir()))
    code, out, err = suite(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert code == 2 and not out, out + err
    assert f"the baseline run {measured['run_id']} has none of these 3 cases" in err
    assert "Traceback" not in err
    assert len(list((tmp_path / ".loops" / "suites").iterdir())) == runs


def test_a_run_whose_only_gate_is_the_pairwise_judge_does_not_claim_the_suite_has_none(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = prefers_the_subject
    write(
        tmp_path / "s.suite.yaml",
        PAIRWISE + "    thresholds:\n      preference: {min_win_rate: 0.5}\n",
    )
    code, out, err = suite(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert code == 0 and out.startswith("Suite paired: UNGATED"), out + err
    assert "the suite has no thresholds" not in out
    assert "no threshold was judged in this run" in " ".join(out.split())
    assert not loopback.requests  # nothing to compare with: no pairwise call


def test_a_resumed_comparison_keeps_the_baseline_it_started_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "s.suite.yaml", DETERMINISTIC.replace("echo ${inputs.v}", "echo $V"))
    monkeypatch.setenv("V", "1")  # the incumbent: every case passes
    code, first, err = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert code == 0, err
    monkeypatch.setenv("V", "2")
    code, compared, err = suite_json(tmp_path, "s.suite.yaml", "--compare-baseline")
    run_id = compared["run_id"]
    assert compared["baseline_run"] == first["run_id"], err
    with sqlite3.connect(tmp_path / ".loops" / "history.db") as db:  # as if killed before 'three'
        db.execute("UPDATE suite_runs SET ended_at = NULL WHERE run_id = ?", (run_id,))
        for table in ("suite_judgements", "suite_cases"):
            db.execute(f"DELETE FROM {table} WHERE run_id = ? AND case_id = 'three'", (run_id,))
    monkeypatch.setenv("V", "9")  # a newer baseline is measured meanwhile
    code, second, err = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert second["run_id"] != first["run_id"], err
    monkeypatch.setenv("V", "2")
    code, resumed, err = suite_json(
        tmp_path, "s.suite.yaml", "--compare-baseline", "--resume", run_id
    )
    assert resumed["run_id"] == run_id and resumed["resumed"] == 2, err
    assert resumed["baseline_run"] == first["run_id"]
    assert resumed["deltas"] == compared["deltas"]


def test_a_baseline_judged_with_another_prompt_file_is_refused(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = prefers_the_subject
    text = SCORED.replace(
        'prompt: "Rate this answer: {{ outputs.stdout }}"', "prompt_file: rate.j2"
    )
    write(tmp_path / "s.suite.yaml", text)
    prompt = write(tmp_path / "rate.j2", "Rate this answer: {{ outputs.stdout }}")
    code, measured, err = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert code == 0 and len(loopback.requests) == 2, err
    code, compared, err = suite_json(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert compared["baseline_run"] == measured["run_id"], err  # the same prompt compares
    write(prompt, "Rate this answer harshly: {{ outputs.stdout }}")
    code, out, err = suite(tmp_path, "s.suite.yaml", "--compare-baseline")
    assert code == 2 and "judged under other conditions" in err, out + err


def test_a_broken_case_has_no_pairwise_judgement_when_nothing_is_compared(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = prefers_the_subject
    dataset(tmp_path, {"good": {"input": {"v": 1, "w": 1}}, "broken": {}})  # no input.yaml
    inline = (
        "    cases:\n      - {id: one, input: {v: 1, w: 1}}\n      - {id: two, input: {v: 2}}\n"
    )
    assert inline in PAIRWISE
    write(tmp_path / "s.suite.yaml", PAIRWISE.replace(inline, "    dataset: cases\n"))
    code, data, err = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert [c["status"] for c in data["case_runs"]] == ["error", "ok"], err
    assert not [r for r in data["results"] if r["judge"] == "preference"]
    code, out, err = suite(tmp_path, "s.suite.yaml", "--measure-baseline")
    assert code == 0 and "preference" not in out, out + err


def test_baseline_of_an_unfinished_run_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "s.suite.yaml", DETERMINISTIC)
    code, measured, err = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    run_id = measured["run_id"]
    with sqlite3.connect(tmp_path / ".loops" / "history.db") as db:  # as if killed after 'one'
        db.execute("UPDATE suite_runs SET ended_at = NULL WHERE run_id = ?", (run_id,))
        for table in ("suite_judgements", "suite_cases"):
            db.execute(f"DELETE FROM {table} WHERE run_id = ? AND case_id != 'one'", (run_id,))
    code, out, err = suite(tmp_path, "s.suite.yaml", "--compare-baseline", "--baseline-of", run_id)
    assert code == 2 and not out, out + err
    assert f"--baseline-of {run_id}: that run has not finished" in err
    assert f"--resume {run_id}" in err
    code, _, err = suite(tmp_path, "s.suite.yaml", "--resume", run_id)
    assert code == 0, err
    code, compared, err = suite_json(
        tmp_path, "s.suite.yaml", "--compare-baseline", "--baseline-of", run_id
    )
    assert compared["baseline_run"] == run_id, err
    assert not [n for n in compared["notes"] if "not in the baseline run" in n]


TIED = """\
    name: tied
    cases:
      - {id: even, input: {v: 1}}
      - {id: worse, input: {v: 2}}
    subject:
      command: echo NEW ${inputs.v}
    baseline_subject:
      command: echo OLD ${inputs.v}
    isolation: copy
    judges:
      - name: answered
        builtin: exit_code
    pairwise:
      name: preference
      prompt: Which answer is better?
"""


def test_a_pairwise_tie_is_not_listed_as_a_failure_and_a_loss_says_it_lost(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Case `even` is called even; for `worse` the model prefers the baseline's answer."""

    def model(request: dict[str, Any]) -> Reply:
        text = json.dumps(request["messages"])
        first = re.search(r"<response_A>(.*?)</response_A>", text, re.S)
        assert first is not None
        if "NEW 1" in text:
            return tool_reply({"better": "tie", "reason": "the same"})(request)  # type: ignore[operator,no-any-return]
        better = "A" if "OLD" in first.group(1) else "B"
        return tool_reply({"better": better, "reason": "the old one is right"})(request)  # type: ignore[operator,no-any-return]

    loopback.default = model
    write(tmp_path / "s.suite.yaml", TIED)
    code, out, err = suite(tmp_path, "s.suite.yaml")
    assert code == 0, out + err  # no thresholds
    failures = out.split("Failed or errored judges by case:")[1]
    assert "even" not in failures  # a tie is neither a win nor a failure
    assert "    preference: lost to the baseline: the old one is right" in failures
    assert "1 tie" in out


def test_the_baseline_and_the_trends_read_only_the_runs_they_use(tmp_path: Path) -> None:
    """`--compare-baseline` read every run of the suite to take the newest measured baseline,
    and the HTML trends every run to take the last 20: with 100,000 runs recorded (a suite run
    in CI for years) a comparison took 2.5 s and 98 MB instead of 0.9 s and 37 MB."""
    import tracemalloc

    write(
        tmp_path / "t.suite.yaml",
        """\
        name: tally
        cases:
          - {id: one, input: {v: 1}}
          - {id: two, input: {v: 2}}
        subject:
          command: echo ${inputs.v}
        judges:
          - {name: exits, builtin: exit_code}
        """,
    )
    code, measured, err = suite_json(tmp_path, "t.suite.yaml", "--measure-baseline")
    assert code == 0, err
    with sqlite3.connect(tmp_path / ".loops" / "history.db") as db:
        columns = [r[1] for r in db.execute("PRAGMA table_info(suite_runs)")]
        names = ", ".join(columns)
        copied = ", ".join(
            {"run_id": "run_id || '-' || n.i", "kind": "'run'", "ended_at": "NULL"}.get(c, c)
            for c in columns
        )
        db.execute(  # 20,000 older runs, none of them finished: none is a baseline
            f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
            f"INSERT INTO suite_runs ({names}) SELECT {copied} FROM suite_runs, n"
        )
    page = tmp_path / "t.html"
    args = ["t.suite.yaml", "--compare-baseline", "--output", "html", "--out", str(page)]
    suite(tmp_path, *args)  # the modules a run imports
    tracemalloc.start()
    try:
        code, out, err = suite(tmp_path, *args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 0, out + err
    assert measured["run_id"] in page.read_text()  # compared with the measured baseline
    # reading every run held ~24 MB here; the runs used, ~1.4 MB
    assert peak < 6_000_000, peak
