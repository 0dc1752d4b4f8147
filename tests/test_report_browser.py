"""The HTML report in a real browser: headless Chromium from the OS packages, driven by
Playwright (the `report-test` extra). The page must load offline with no console errors, draw
one node per state, and highlight exactly the transitions the run's events record; the test
saves a screenshot for people to look at (its path is printed).

Chromium is not optional here: `make test` (and CI) install it, and a missing browser fails
this test with the install command rather than skipping it silently.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.loopback_server import LoopbackServer, Reply, verdict_reply
from tests.report_helpers import (
    ARTIFACTS,
    check_report,
    expected_path,
    load_offline,
    open_browser,
)
from tests.run_helpers import ll_loop, write_loop

# A check that fails twice (judged no), a fixer, a retry limit, and a judged final review.
LOOP = """
name: review-until-clean
initial: setup
scope: ["."]
max_steps: 20
states:
  setup:
    action: 'echo 0 > "${run.dir}/n"; echo ready'
    next: check
    on_error: broken
  check:
    action: |
      n=$(cat "${run.dir}/n")
      if [ "$n" -ge 2 ]; then echo "lint: 0 problems"; else echo "lint: $((2 - n)) problems"; fi
    evaluate:
      type: llm_structured
      prompt: "Is the lint output clean? Quote the summary line verbatim."
      samples: 2
    on_yes: review
    on_no: fix
    on_error: broken
    max_retries: 4
    on_retry_exhausted: gave_up
  fix:
    action: 'n=$(cat "${run.dir}/n"); echo $((n + 1)) > "${run.dir}/n"; echo fixed one'
    next: check
    on_error: broken
  review:
    action: echo "All checks passed, ready to merge"
    evaluate:
      type: llm_structured
      prompt: "Is it ready to merge? Quote the line verbatim."
    on_yes: done
    on_no: gave_up
    on_error: broken
  done:
    terminal: true
  gave_up:
    terminal: true
    failure: true
  broken:
    terminal: true
    failure: true
"""


def judge_from_text(request: dict[str, Any]) -> Reply:
    """yes with the summary line as evidence when the text says 0 problems, else no."""
    text = request["messages"][0]["content"]
    if "0 problems" in text:
        build = verdict_reply("yes", evidence="lint: 0 problems", input_tokens=900)
    elif "ready to merge" in text:
        build = verdict_reply("yes", evidence="ready to merge", input_tokens=700)
    else:
        build = verdict_reply("no", evidence="problems", reason="lint still reports problems")
    assert callable(build)
    return build(request)


LL_HARNESS = Path(sys.executable).with_name("ll-harness")


@pytest.fixture
def browser() -> Iterator[Any]:
    yield from open_browser()


def test_report_loads_offline_and_shows_the_path_the_events_record(
    browser: Any, loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = judge_from_text
    write_loop(tmp_path, LOOP)
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--quiet")
    assert ran.code == 0, ran.stderr
    run_id = ran.json["run_id"]
    page_file = tmp_path / "report.html"
    made = ll_loop(tmp_path, "report", run_id, "--html", "--out", str(page_file))
    assert made.code == 0, made.stderr
    check_report(browser, page_file, tmp_path / "loop.yaml", ran.run_dir)
    events = [json.loads(line) for line in (ran.run_dir / "events.jsonl").read_text().splitlines()]
    _, moves = expected_path(events)
    assert moves[("check", "fix")] == 2 and moves[("check", "review")] == 1
    assert "×2" in browser.text_content("svg.graph .edge[data-source=check][data-target=fix]")
    assert browser.inner_text("#why").startswith("reached the success terminal 'done'")
    judges = browser.inner_text("#judges")
    assert "lint still reports problems" in judges and "lint: 0 problems" in judges

    # clicking a state keeps only its rows in the step table
    browser.click("svg.graph .node[data-state=fix]")
    dimmed = browser.eval_on_selector_all("tr.dim", "rows => rows.map(r => r.dataset.state)")
    assert dimmed and "fix" not in dimmed

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    browser.click("svg.graph .node[data-state=fix]")  # back to the whole table
    browser.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    print(f"report screenshot: {shot}")


def test_harness_history_page_charts_each_invocation_with_its_interval(
    browser: Any, tmp_path: Path
) -> None:
    from engine.runtime.history import NewAttempt, open_history

    outcomes = [["pass", "fail", "pass"], ["pass", "pass", "pass"], ["fail", "abstain", "pass"]]
    with open_history(tmp_path) as history:
        for number, invocation in enumerate(outcomes):
            for sample, outcome in enumerate(invocation):
                history.record_attempt(
                    NewAttempt(
                        invocation_id=f"inv{number}",
                        runner="cmd",
                        target="make test",
                        input_hash="i",
                        target_content_hash="c",
                        conditions_fp="f",
                        outcome=outcome,  # type: ignore[arg-type]
                        sample_index=sample,
                    ),
                    created_at=f"2026-11-0{number + 1}T10:00:00+00:00",
                )
    page_file = tmp_path / "history.html"
    made = subprocess.run(
        [str(LL_HARNESS), "history", "make test", "--html", str(page_file)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    load_offline(browser, page_file)
    points = browser.eval_on_selector_all(
        "svg.chart .point", "ps => ps.map(p => [+p.dataset.k, +p.dataset.n])"
    )
    assert points == [[2, 3], [3, 3], [1, 2]]  # oldest first; an abstention is not graded
    bars = browser.eval_on_selector_all("svg.chart .interval", "ls => ls.length")
    assert bars == 3
    ARTIFACTS.mkdir(exist_ok=True)
    browser.screenshot(path=str(ARTIFACTS / "harness-history.png"), full_page=True)


SPIN = """
name: spin
initial: poll
scope: ["."]
max_steps: 40000
states:
  poll:
    action: "false"
    on_yes: done
    on_no: nap
  nap:
    action: "true"
    next: poll
  done:
    terminal: true
"""


def test_a_long_runs_visit_counts_fit_their_badges(browser: Any, tmp_path: Path) -> None:
    """A state that ran 20000 times: the badge holds all five digits (a circle held two)."""
    write_loop(tmp_path, SPIN.replace("max_steps: 40000", "max_steps: 4"))
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--quiet")
    log = ran.run_dir / "events.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    start, body, end = events[0], events[1:-1], events[-1]  # 4 steps, two rounds of the cycle
    start["max_steps"] = end["steps"] = 40000
    with log.open("w") as out:  # the same two rounds, 10000 times: 40000 steps
        out.write(json.dumps(start) + "\n")
        for round_ in range(10000):
            for event in body:
                out.write(json.dumps({**event, "step": event["step"] + 4 * round_}) + "\n")
        out.write(json.dumps(end) + "\n")
    page_file = tmp_path / "report.html"
    assert (
        ll_loop(tmp_path, "report", ran.json["run_id"], "--html", "--out", str(page_file)).code == 0
    )
    load_offline(browser, page_file)
    fits = browser.eval_on_selector_all(
        "svg.graph .node[data-visits='20000']",
        """nodes => nodes.map(n => {
            const badge = n.querySelector('.badge').getBBox();
            const text = n.querySelector('.badge-text').getBBox();
            return [n.querySelector('.badge-text').textContent,
                    text.x >= badge.x && text.x + text.width <= badge.x + badge.width];
        })""",
    )
    assert fits == [["20000", True], ["20000", True]]


BUDGET = """\
name: spin
initial: poll
scope: ["."]
max_steps: 7
on_max_steps: cleanup
states:
  poll:
    action: "{poll}"
    on_yes: done
    on_no: nap
  nap:
    action: "true"
    next: poll
  cleanup:
    action: echo cleaning
    next: done
  done:
    terminal: true
"""


def test_the_hop_to_on_max_steps_is_drawn_dotted_with_its_budget(
    browser: Any, tmp_path: Path
) -> None:
    """No route leads to the on_max_steps state: the report draws the hop a run took there
    when its budget ran out (from the state it was in), dotted and labelled with the budget;
    a run whose budget was not spent shows where the state is entered from instead."""
    write_loop(tmp_path, BUDGET.format(poll="false"))
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--quiet", process=True)
    assert ran.code == 3, ran.stderr
    page_file = tmp_path / "spent.html"
    made = ll_loop(
        tmp_path, "report", ran.json["run_id"], "--html", "--out", str(page_file), process=True
    )
    assert made.code == 0, made.stderr
    load_offline(browser, page_file)
    events = [json.loads(line) for line in (ran.run_dir / "events.jsonl").read_text().splitlines()]
    _, moves = expected_path(events)  # 7 steps: the 7th went poll → nap, then the budget ended
    taken = browser.eval_on_selector_all(
        "svg.graph .edge.taken",
        "edges => edges.map(e => [e.dataset.source, e.dataset.target, +e.dataset.count,"
        " e.classList.contains('budget'), getComputedStyle(e.querySelector('path'))"
        ".strokeDasharray, e.textContent])",
    )
    routes = {(s, t): c for s, t, c, budget, _, _ in taken if not budget}
    assert routes == dict(moves)
    spent = [row for row in taken if row[3]]
    assert len(spent) == 1
    source, target, count, _, dashes, label = spent[0]
    assert (source, target, count) == ("nap", "cleanup", 1)
    assert dashes not in ("", "none") and label == "max_steps 7 spent ×1"

    write_loop(tmp_path, BUDGET.format(poll="true"))
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--quiet", process=True)
    assert ran.code == 0, ran.stderr
    page_file = tmp_path / "unspent.html"
    made = ll_loop(
        tmp_path, "report", ran.json["run_id"], "--html", "--out", str(page_file), process=True
    )
    assert made.code == 0, made.stderr
    load_offline(browser, page_file)
    assert browser.eval_on_selector_all("svg.graph .edge.budget", "e => e.length") == 0
    entry = browser.locator("svg.graph .budget-entry[data-target=cleanup]")
    assert entry.is_visible() and entry.text_content().endswith("max_steps 7 spent")


WIDE = """\
name: wide
initial: shout
scope: ["."]
states:
  shout:
    action: head -c 5000 /dev/zero | tr '\\0' x
    evaluate:
      type: assessment
      judges:
        - name: long_word
          check: return False, "y" * 3000
    on_yes: done
    on_no: done
  done:
    terminal: true
"""

SUITE = """\
name: wide
cases:
  - id: one
    input: {text: hi}
subject:
  command: "true"
judges:
  - name: long_word
    check: return False, "y" * 3000
"""


def test_one_long_word_does_not_widen_the_page(browser: Any, tmp_path: Path) -> None:
    """An output or a judge's reason with no space in it (a path, a hash, `xxxx…`) once widened
    its table past the window: the page scrolled sideways and the short columns wrapped
    (`0.00 / s`). Such text now wraps inside its cell, on the run's page and the suite's."""
    write_loop(tmp_path, WIDE)
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--quiet")
    page_file = tmp_path / "report.html"
    assert (
        ll_loop(tmp_path, "report", ran.json["run_id"], "--html", "--out", str(page_file)).code == 0
    )
    (tmp_path / "s.suite.yaml").write_text(SUITE)
    suite_file = tmp_path / "suite.html"
    made = subprocess.run(
        [str(LL_HARNESS), "suite", "s.suite.yaml", "--output", "html", "--out", str(suite_file)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert made.returncode in (0, 1, 3), made.stderr
    load_offline(browser, page_file)
    width = "() => [document.documentElement.scrollWidth, window.innerWidth]"
    scrolled, window = browser.evaluate(width)
    assert scrolled <= window
    times = browser.eval_on_selector_all(
        "table.steps td:nth-child(6)", "c => c.map(x => x.innerText)"
    )
    assert times and all("\n" not in t for t in times), times
    browser.goto(suite_file.as_uri())
    scrolled, window = browser.evaluate(width)
    assert scrolled <= window


RETRIES = """\
name: retries
initial: check
scope: ["."]
max_steps: 7
on_max_steps: cleanup
states:
  check:
    action: "false"
    on_yes: done
    on_no: fix
    max_retries: 2
    on_retry_exhausted: gave_up
  fix:
    action: "true"
    next: check
  cleanup:
    action: echo cleaning
    next: done
  done:
    terminal: true
  gave_up:
    terminal: true
    failure: true
"""


SELF = """\
name: self
initial: go
scope: ["."]
max_steps: 12
states:
  go:
    action: echo middle_one
    evaluate: {type: classify, verdicts: [left_verdict, middle_one]}
    route: {left_verdict: done, middle_one: again}
  done:
    terminal: true
  again:
    action: echo a_very_long_verdict_name
    evaluate: {type: classify, verdicts: [a_very_long_verdict_name, other]}
    route: {a_very_long_verdict_name: $current, _: done}
"""


def test_edge_labels_neither_overlap_nor_leave_the_drawing(browser: Any, tmp_path: Path) -> None:
    """Every label sat right of its edge's middle: the two edges of a check ⇄ fix pair, and
    the edges fanning out of one state, wrote `no ×3` over `next ×3`, and a label lay across
    its own line. Labels now stand off the outer side of their edge, inside the drawing."""
    spin = SPIN.replace("max_steps: 40000", "max_steps: 200")
    for name, text in (
        ("spin", spin),
        ("budget", BUDGET.format(poll="false")),
        ("retries", RETRIES),
        ("self", SELF),  # a self-loop's label ran past the drawing's right edge, unseen
    ):
        write_loop(tmp_path, text)
        ran = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--quiet")
        page_file = tmp_path / f"{name}.html"
        made = ll_loop(tmp_path, "report", ran.json["run_id"], "--html", "--out", str(page_file))
        assert made.code == 0
        load_offline(browser, page_file)
        boxes = browser.eval_on_selector_all(
            "svg.graph .edge-label",
            "ls => ls.map(l => { const b = l.getBBox();"
            " return [l.textContent, b.x, b.y, b.x + b.width, b.y + b.height]; })",
        )
        width = browser.eval_on_selector("svg.graph", "s => s.viewBox.baseVal.width")
        assert len(boxes) >= 3
        for label, left, _, right, _ in boxes:
            assert left >= 0 and right <= width, (name, label)
        covered = browser.eval_on_selector_all(
            "svg.graph .edge",
            """es => es.filter(e => e.querySelector('text')).map(e => {
                const p = e.querySelector('path'), b = e.querySelector('text').getBBox();
                const points = [...Array(41).keys()].map(
                    i => p.getPointAtLength(p.getTotalLength() * i / 40));
                return [e.querySelector('text').textContent, points.some(m =>
                    m.x > b.x && m.x < b.x + b.width && m.y > b.y && m.y < b.y + b.height)];
            })""",
        )
        assert [label for label, over in covered if over] == [], name  # a label beside its line
        for i, (one, l1, t1, r1, b1) in enumerate(boxes):
            for other, l2, t2, r2, b2 in boxes[i + 1 :]:
                apart = r1 <= l2 or r2 <= l1 or b1 <= t2 or b2 <= t1
                assert apart, (name, one, other)
