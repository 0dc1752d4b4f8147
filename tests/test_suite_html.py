"""`ll-harness suite --output html`: a real suite run from the CLI, its page opened offline in
headless Chromium (no console error, no network request), its judges table and failing cases
equal to the JSON report of the same run, everything a case or judge wrote escaped, and the page
never written through a link."""

from __future__ import annotations

import os
import pty
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness_helpers import REPO
from tests.loopback_server import LoopbackServer
from tests.report_helpers import ARTIFACTS, load_offline, open_browser
from tests.suite_helpers import dataset, db_rows, own_project, suite, suite_json, write
from tests.test_suite_llm import SUITE_FILE as AGENT_EVAL
from tests.test_suite_llm import answers
from tests.test_suite_llm import project as agent_eval_project

# A case id and a rationale that are markup: the page must show them, not run them.
ODD_ID = '<img src=x onerror="document.body.dataset.pwned=1">'
PAYLOAD = "<script>document.body.dataset.pwned = 'yes'</script> & more"

SUITE = """\
name: html-suite
dataset: cases
subject:
  command: echo ${inputs.n}
judges:
  - name: echoed
    check: return outputs["stdout"].strip() == str(inputs["n"]), "said " + outputs["stdout"]
  - name: small
    check: return inputs["n"] < 3, inputs.get("why", "n is too big")
  - name: tenth
    check: return inputs["n"] / 10, "a tenth"
    score_range: [0, 1]
    threshold: 0
  - name: fragile
    check: |
      if inputs["n"] == 4:
          raise ValueError("boom <b>bold</b>")
      return True, "fine"
thresholds:
  echoed: {min_pass_rate: 0.5}
  small: {min_pass_rate: 0.9}
  tenth: {min_mean: 0.1}
"""


def project(root: Path) -> Path:
    cases: dict[str, dict[str, Any]] = {f"c{n}": {"input": {"n": n}} for n in range(5)}
    cases[ODD_ID] = {"input": {"n": 5, "why": PAYLOAD}}
    dataset(root, cases)
    write(root / "s.suite.yaml", SUITE)
    return own_project(root)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from open_browser()


def check_judges(page: Any, section: str, judges: list[dict[str, Any]]) -> None:
    """The section's judges table says what the JSON report says, row by row."""
    rows = page.eval_on_selector_all(
        f"#{section} table.judges tbody tr",
        "rows => rows.map(r => [r.dataset.judge, [...r.cells].map(c => c.innerText.trim()),"
        " Object.assign({}, r.querySelector('svg.bar').dataset)])",
    )
    assert [name for name, _, _ in rows] == [j["judge"] for j in judges]
    for (name, cells, bar), judge in zip(rows, judges, strict=True):
        shown_name, kind, value_kind, shown, _, skipped, errored, threshold, verdict_cell = cells
        assert shown_name == name
        gate = judge.get("threshold")
        assert (kind, value_kind) == (judge["kind"], judge["value_kind"]), name
        assert shown == result_text(judge), name
        assert (int(skipped), int(errored)) == (judge["skipped"], judge["errored"]), name
        expected_gate = "-" if gate is None else f"{next(iter(gate))} {next(iter(gate.values()))}"
        assert threshold == expected_gate, name
        assert verdict_cell == (judge["verdict"] or "-"), name
        assert (float(bar["low"]), float(bar["high"])) == shown_interval(judge), name
        if gate is not None:
            assert float(bar["threshold"]) == next(iter(gate.values())), name
        else:
            assert "threshold" not in bar


def result_text(judge: dict[str, Any]) -> str:
    """What the table shows, rebuilt from the JSON numbers."""
    if judge["kind"] == "pairwise":
        r, ties = judge["win_rate"], judge["ties"]
        tied = f", {ties} tie{'s' if ties != 1 else ''}" if ties else ""
        return f"win rate {r['k']}/{r['n']} [{r['low']:.2f}, {r['high']:.2f}]{tied}"
    if judge["value_kind"] == "numeric":
        m = judge["mean"]
        return f"mean {m['mean']:.2f} [{m['low']:.2f}, {m['high']:.2f}] (n={m['n']})"
    r = judge["pass_rate"]
    return f"pass rate {r['k']}/{r['n']} [{r['low']:.2f}, {r['high']:.2f}]"


def shown_interval(judge: dict[str, Any]) -> tuple[float, float]:
    """The interval the bar draws: the one its gate reads (the default aggregate's if none)."""
    numeric = judge["value_kind"] == "numeric"
    gate = next(iter(judge.get("threshold") or {"min_mean" if numeric else "": 0}))
    if judge["kind"] == "pairwise":
        block = judge["win_rate"]
    else:
        block = judge["mean"] if gate == "min_mean" and numeric else judge["pass_rate"]
    return block["low"], block["high"]


def suite_runs(root: Path) -> int:
    if not (root / ".loops" / "history.db").exists():
        return 0
    return int(db_rows(root, "SELECT count(*) FROM suite_runs")[0][0])


def failing(data: dict[str, Any]) -> dict[str, dict[str, tuple[str, str]]]:
    """case -> judge -> (status, rationale or error), as the JSON report has them."""
    found: dict[str, dict[str, tuple[str, str]]] = {}
    for r in data["results"]:
        if (
            r["sample"] == 0
            and r["arm"] in ("subject", "pairwise")
            and (r["status"] in ("error", "abstain") or r["passed"] is False)
        ):
            reason = (r["error"] or r["rationale"] or "").strip()
            found.setdefault(r["case"], {})[r["judge"]] = (r["status"], reason)
    return found


def test_the_html_page_shows_what_the_json_report_of_the_same_run_says(
    tmp_path: Path, browser: Any
) -> None:
    root = project(tmp_path)
    code, data, err = suite_json(root, "s.suite.yaml", "--jobs", "2")
    assert code == 1 and data["result"] == "FAIL", err  # small: 3/6 is below 0.9
    run_id = data["run_id"]
    with sqlite3.connect(root / ".loops" / "history.db") as db:  # as if it had been killed
        db.execute("UPDATE suite_runs SET ended_at = NULL")
    code, out, err = suite(root, "s.suite.yaml", "--resume", run_id, "--output", "html",
                           "--out", "page.html")  # fmt: skip
    assert code == 1, err
    assert out == "" and "wrote page.html" in err
    report = root / "page.html"
    load_offline(browser, report)
    browser.screenshot(path=str(ARTIFACTS / "suite-report.png"), full_page=True)
    print(f"screenshot: {ARTIFACTS / 'suite-report.png'}")

    verdict = browser.eval_on_selector("#verdict", "e => [e.dataset.verdict, +e.dataset.exit]")
    assert verdict == [data["result"], data["exit_code"]] == ["FAIL", 1]
    assert browser.title() == f"Suite html-suite · run {run_id}"
    assert browser.inner_text("#subject") == "command: echo ${inputs.n}" == data["subject"]

    check_judges(browser, "judges", data["judges"])
    assert data["judges"][3]["errored"] == 1  # fragile raised on c4

    listed = browser.eval_on_selector_all(
        "#failures div.case",
        "cases => cases.map(c => [c.dataset.case, c.querySelector('h3').textContent,"
        " [...c.querySelectorAll('tbody tr')].map(r => [r.dataset.judge, r.dataset.status,"
        " r.cells[2].textContent])])",
    )
    expected = failing(data)
    assert {case for case, _, _ in listed} == set(expected) == {"c3", "c4", ODD_ID}
    for case, heading, judged in listed:
        assert heading == case
        assert {j: (s, why) for j, s, why in judged} == expected[case], case
    assert expected[ODD_ID]["small"] == ("ok", PAYLOAD)  # shown as text, verbatim
    assert "boom <b>bold</b>" in expected["c4"]["fragile"][1]

    # nothing a case or judge wrote became markup
    assert browser.evaluate("document.body.dataset.pwned") is None
    assert browser.evaluate("document.querySelectorAll('script').length") == 1
    assert browser.evaluate("document.querySelectorAll('img, #failures b').length") == 0
    totals = dict(
        browser.eval_on_selector_all(
            "#totals tbody tr", "rows => rows.map(r => [r.dataset.total, r.cells[1].innerText])"
        )
    )
    assert totals["cases"] == str(data["cases"]) == "6"
    assert totals["cases recorded before a resume"] == "6"
    assert totals["judgements (case × judge × sample)"] == str(len(data["results"]))


def test_the_pairwise_judge_and_the_baseline_subject_are_on_the_page(
    loopback: LoopbackServer, tmp_path: Path, browser: Any
) -> None:
    """The agent_eval example (LLM judges on the loopback server): the pairwise win rate and
    the baseline subject's table, as in the JSON report of the same run."""
    loopback.default = answers
    root = agent_eval_project(tmp_path)
    code, data, err = suite_json(root, AGENT_EVAL, "--jobs", "3")
    assert code == 3, err
    with sqlite3.connect(root / ".loops" / "history.db") as db:
        db.execute("UPDATE suite_runs SET ended_at = NULL")
    code, _, err = suite(root, AGENT_EVAL, "--resume", data["run_id"], "--output", "html",
                         "--out", "agent.html")  # fmt: skip
    assert code == 3, err
    load_offline(browser, root / "agent.html")
    check_judges(browser, "judges", data["judges"])
    check_judges(browser, "baseline", data["baseline_subject"])
    assert browser.inner_text("#judges tr[data-judge=preference] td:nth-child(4)") == (
        "win rate 3/3 [0.44, 1.00]"
    )
    assert browser.eval_on_selector("#verdict", "e => e.dataset.verdict") == "INCONCLUSIVE"
    assert "agent:" in browser.inner_text("#subject")


def test_html_goes_to_stdout_when_it_is_not_a_terminal(tmp_path: Path) -> None:
    code, out, err = suite(project(tmp_path), "s.suite.yaml", "--output", "html", "--quiet")
    assert code == 1, err
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert "&lt;script&gt;document.body.dataset.pwned" in out and "<script>document" not in out


def test_html_on_a_terminal_needs_out_and_runs_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-c", "from engine.cli.harness_cmd import main; main()", "suite",
             "s.suite.yaml", "--output", "html"],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=follower,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )  # fmt: skip
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 2
    assert "--output html writes a page, not terminal text: name its file with --out" in (
        done.stderr
    )
    assert suite_runs(root) == 0


@pytest.mark.parametrize("dangling", [False, True])
def test_the_page_is_never_written_through_a_link(tmp_path: Path, dangling: bool) -> None:
    root = project(tmp_path)
    victim = tmp_path / "victim.txt"
    if not dangling:
        victim.write_text("keep me")
    (root / "page.html").symlink_to(victim)
    code, out, err = suite(root, "s.suite.yaml", "--output", "html", "--out", "page.html")
    assert code == 2, out + err
    assert "page.html is a symbolic link, and ll-loop does not write through links" in err
    assert victim.read_text() == "keep me" if not dangling else not victim.exists()
    assert (root / "page.html").is_symlink()
    assert suite_runs(root) == 0  # refused before anything ran


def test_out_writes_text_and_json_reports_too(tmp_path: Path) -> None:
    root = project(tmp_path)
    code, out, err = suite(root, "s.suite.yaml", "--output", "json", "--out", "r.json", "-q")
    assert code == 1 and out == "", err
    assert '"result": "FAIL"' in (root / "r.json").read_text()
    code, out, err = suite(root, "s.suite.yaml", "--out", str(root), "-q")
    assert code == 2 and f"--out {root} is a directory" in err


def test_each_judge_is_charted_over_the_suites_runs_from_history(
    tmp_path: Path, browser: Any
) -> None:
    """Two runs of one suite with a case changed between them: the second run's page charts
    every judge's pass rate in both runs, as each run's JSON report gave it, oldest first; a
    baseline measurement is not a run of the subject and is left out."""
    root = project(tmp_path)
    code, first, err = suite_json(root, "s.suite.yaml")
    assert code == 1, err
    code, _, err = suite(root, "s.suite.yaml", "--measure-baseline", "--quiet")
    assert code in (0, 1, 3), err
    write(root / "cases" / "c4" / "input.yaml", "n: 1\n")  # small passes, fragile stops raising
    code, second, err = suite_json(root, "s.suite.yaml")
    assert code == second["exit_code"] == 3, err  # small: 4/6 now straddles 0.9
    with sqlite3.connect(root / ".loops" / "history.db") as db:  # report that very run again
        db.execute("UPDATE suite_runs SET ended_at = NULL WHERE run_id = ?", (second["run_id"],))
    code, _, err = suite(root, "s.suite.yaml", "--resume", second["run_id"], "--output",
                         "html", "--out", "trend.html")  # fmt: skip
    assert code == 3, err
    load_offline(browser, root / "trend.html")
    charted = browser.eval_on_selector_all(
        "#trends figure.trend",
        "figs => figs.map(f => [f.dataset.judge, [...f.querySelectorAll('g.point')]"
        ".map(g => [+g.dataset.k, +g.dataset.n])])",
    )
    expected = [
        (j["judge"], [(r["pass_rate"]["k"], r["pass_rate"]["n"]) for r in (jf, j)])
        for jf, j in zip(first["judges"], second["judges"], strict=True)
    ]
    assert [(name, [tuple(p) for p in points]) for name, points in charted] == expected
    small = dict(expected)["small"]
    assert small[0] != small[1]  # the change between the runs shows
