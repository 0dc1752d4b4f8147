"""Judge stability: flip and abstention rates, and the flag on a judge that never discriminates —
on hand-made observations, on real harness rows in SQLite, and end to end on a loop whose judge
(the loopback server) always answers yes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from engine.harness.stability import (
    MIN_INPUTS,
    Observation,
    observations_from_attempts,
    stability,
)
from engine.runtime.history import NewAttempt, open_history
from tests.harness_helpers import REPO
from tests.loopback_server import LoopbackServer, Reply, verdict_reply
from tests.run_helpers import ll_loop, write_loop


def obs(judge: str, key: str, verdict: str, group: str = "g") -> Observation:
    return Observation(judge=judge, input_key=key, verdict=verdict, group=group)


def test_flips_count_inputs_whose_decisions_disagree() -> None:
    rows = [
        obs("j", "a", "yes"), obs("j", "a", "yes"),
        obs("j", "b", "yes"), obs("j", "b", "no"),
        obs("j", "c", "no"),  # judged once: cannot flip
        obs("j", "d", "cannot_judge"), obs("j", "d", "yes"),  # one decision: no flip
        obs("j", "e", "error"),
    ]  # fmt: skip
    [row] = stability(rows)
    assert (row.flip_rate.k, row.flip_rate.n) == (1, 2)
    assert (row.abstention_rate.k, row.abstention_rate.n) == (1, 7)
    assert row.errors == 1 and row.inputs == 5 and row.decided_inputs == 4
    assert not row.never_discriminates


def test_a_judge_that_always_says_yes_is_flagged_from_twenty_inputs_on() -> None:
    always = [obs("lazy", f"input {i}", "yes") for i in range(MIN_INPUTS)]
    few = [obs("young", f"input {i}", "yes") for i in range(MIN_INPUTS - 1)]
    mixed = [*(obs("fair", f"input {i}", "yes") for i in range(30)), obs("fair", "x", "no")]
    rows = {r.judge: r for r in stability([*always, *few, *mixed])}
    assert rows["lazy"].never_discriminates and rows["lazy"].constant_verdict == "yes"
    assert not rows["young"].never_discriminates  # too few inputs to tell
    assert not rows["fair"].never_discriminates


def test_harness_rows_in_history_are_judged_per_criterion(tmp_path: Path) -> None:
    with open_history(tmp_path) as history:
        for i in range(MIN_INPUTS + 2):
            for sample in range(2):
                history.record_attempt(
                    NewAttempt(
                        invocation_id=f"inv{i}",
                        runner="cmd",
                        target=f"echo {i}",
                        input_hash="h",
                        target_content_hash="c",
                        conditions_fp="f",
                        outcome="pass",
                        sample_index=sample,
                        semantic_criterion="prints a number",
                        semantic_verdict="yes",
                        judge_model="claude-haiku-4-5",
                    )
                )
        attempts = history.judged_attempts()
    [row] = stability(observations_from_attempts(attempts))
    assert row.judge == "--semantic 'prints a number' (claude-haiku-4-5)"
    assert row.decided_inputs == MIN_INPUTS + 2 and row.flip_rate.n == MIN_INPUTS + 2
    assert row.flip_rate.k == 0 and row.never_discriminates


ITEMS = """
name: items
initial: next_item
scope: ["."]
max_steps: 200
states:
  next_item:
    action: |
      n=$(cat "${run.dir}/n" 2>/dev/null || echo 0)
      n=$((n + 1))
      echo "$n" > "${run.dir}/n"
      echo "item $n: widget-$n passes its checks"
    evaluate:
      type: llm_structured
      prompt: "Does the item pass its checks? Quote the line verbatim."
      samples: 2
    on_yes: more
    on_no: more
    on_error: more
  more:
    action: test "$(cat "${run.dir}/n")" -lt 22
    on_yes: next_item
    on_no: done
  done:
    terminal: true
"""


def test_stability_report_flags_a_judge_scripted_to_always_answer_yes(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = verdict_reply("yes", evidence="passes its checks")
    write_loop(tmp_path, ITEMS)
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--quiet", timeout=120)
    assert ran.code == 0, ran.stderr
    report = _harness(tmp_path, "history", "--stability", "--json")
    [judge] = report["judges"]
    assert judge["judge"] == "items/next_item"
    assert judge["decided_inputs"] == 22 and judge["samples"] == 44
    assert judge["never_discriminates"] and judge["constant_verdict"] == "yes"
    assert judge["flip_rate"]["k"] == 0 and judge["flip_rate"]["n"] == 22
    text = _harness(tmp_path, "history", "items", "--stability", text=True)
    assert "never discriminates: yes on all 22 inputs" in text


def test_a_judge_that_disagrees_with_itself_shows_flips_and_abstentions(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    answers = iter(["yes", "no", "cannot_judge"] * 40)

    def fickle(request: dict[str, Any]) -> Reply:
        build = verdict_reply(next(answers), evidence="passes its checks")
        assert callable(build)
        return build(request)

    loopback.default = fickle
    write_loop(tmp_path, ITEMS.replace("-lt 22", "-lt 6"))
    assert ll_loop(tmp_path, "run", "loop.yaml", "--quiet", timeout=120).code == 0
    [judge] = _harness(tmp_path, "history", "--stability", "--json")["judges"]
    assert judge["flip_rate"]["k"] > 0
    assert judge["abstention_rate"]["k"] > 0
    assert not judge["never_discriminates"]


LL_HARNESS = Path(sys.executable).with_name("ll-harness")


def _harness(cwd: Path, *args: str, text: bool = False) -> Any:
    done = subprocess.run(
        [str(LL_HARNESS), *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout if text else json.loads(done.stdout)


def test_stability_counts_a_large_history_without_reading_every_row(tmp_path: Path) -> None:
    """`history --stability` read every judged attempt into memory, and every verdict into a
    list per judge: 500,000 judged rows took 16 s and 1.4 GB. The rows are now counted in SQL
    per judge, input and verdict, and the verdicts folded as they come."""
    import sqlite3
    import tracemalloc

    from tests.harness_helpers import harness

    (tmp_path / ".loops").mkdir()
    with open_history(tmp_path) as history:
        for i, verdict in enumerate(["yes", "no", "cannot_judge", "yes"]):
            history.record_attempt(
                NewAttempt(
                    invocation_id=f"inv{i}",
                    runner="cmd",
                    target=f"echo {i % 2}",
                    input_hash="h",
                    target_content_hash="c",
                    conditions_fp="f",
                    outcome="abstain" if verdict == "cannot_judge" else "pass",
                    semantic_criterion="prints a number",
                    semantic_verdict=verdict,
                    judge_model="m",
                )
            )
    db = sqlite3.connect(tmp_path / ".loops" / "history.db")
    columns = [r[1] for r in db.execute("PRAGMA table_info(harness_attempts)") if r[1] != "id"]
    names = ", ".join(columns)
    for _ in range(12):  # 4 rows doubled 12 times: 16,384 judged rows
        db.execute(f"INSERT INTO harness_attempts ({names}) SELECT {names} FROM harness_attempts")
    db.commit()
    db.close()
    harness(tmp_path, "history", "--stability", "--json")  # the modules it imports
    tracemalloc.start()
    try:
        done = harness(tmp_path, "history", "--stability", "--json")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [judge] = json.loads(done.stdout)["judges"]
    assert judge["samples"] == 16384 and judge["inputs"] == 2
    assert judge["verdicts"] == {"yes": 8192, "no": 4096, "cannot_judge": 4096}
    assert (judge["flip_rate"]["k"], judge["flip_rate"]["n"]) == (1, 2)  # echo 1: no and yes
    assert judge["abstention_rate"]["k"] == 4096
    # reading the rows took ~50 MB here; counting them, well under 1 MB
    assert peak < 5_000_000, peak


COUNT_LOGS_OPENED = """
import sys
from pathlib import Path
from engine.harness.stability import stability_report
opened = []
def audit(event, args):
    if event == "open" and str(args[0]).endswith("events.jsonl"):
        opened.append(Path(str(args[0])).parent.name)
sys.addaudithook(audit)
stability_report(Path.cwd(), "mine", None)
print(" ".join(opened))
"""


def test_a_loops_judges_are_read_only_from_logs_that_can_hold_them(tmp_path: Path) -> None:
    """A loop's report (its judges' stability) read every run's log to the end, other loops'
    too: a tiny run's report took 6.5 s beside a 300 MB log of another loop. A run of another
    loop is skipped unless it ran sub-loops (whose events are in its log)."""
    (tmp_path / ".loops").mkdir()
    for name in ("mine", "other"):
        write_loop(
            tmp_path,
            f"""
            name: {name}
            initial: go
            scope: ["."]
            states:
              go: {{action: "true", next: done}}
              done: {{terminal: true}}
            """,
            f"{name}.yaml",
        )
    write_loop(
        tmp_path,
        """
        name: outer
        initial: call
        scope: ["."]
        states:
          call: {loop: mine.yaml, on_yes: done, on_no: done}
          done: {terminal: true}
        """,
        "outer.yaml",
    )
    runs = {}
    for name in ("mine", "other", "outer"):
        ran = ll_loop(tmp_path, "run", f"{name}.yaml", "--json", "--quiet")
        runs[name] = json.loads(ran.stdout)["run_id"]
    # in a process of its own: an audit hook cannot be removed, and one left in the test
    # process runs for every later event there (thread starts included, under coverage)
    done = subprocess.run(
        [sys.executable, "-c", COUNT_LOGS_OPENED],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    opened = done.stdout.split()
    assert sorted(opened) == sorted([runs["mine"], runs["outer"]])  # not the other loop's
