"""What a suite shows while it runs: a live line on a terminal (cases done, running pass rates,
errors, cost, ETA), plain lines otherwise (every case when few, every 5% when many), nothing with
--quiet; and Ctrl-C stops the running subjects and leaves the run resumable (exit 3)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.suites.progress import SuiteProgress
from engine.suites.result import SuiteResult
from engine.suites.spec import ArmOutcome, CaseOutcome, JudgeOutcome
from tests.harness_helpers import REPO
from tests.suite_helpers import dataset, db_rows, own_project, recorded, suite, write


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def outcome(case: str, passed: bool, error: str | None = None) -> CaseOutcome:
    judge = JudgeOutcome("echoed", "check", "ok", 1.0 if passed else 0.0, True, passed)
    arm = ArmOutcome("subject", "error" if error else "ok", () if error else (judge,), error)
    return CaseOutcome(case, "k", 0, (arm,))


def test_the_live_line_shows_cases_rates_errors_cost_and_eta() -> None:
    stream = Terminal()
    display = SuiteProgress(
        suite="demo", run_id="r1", total=10, mode="live", cost=lambda: 0.0123, stream=stream
    )
    display.start()
    for n, passed in enumerate([True, True, False]):
        display.update(outcome(f"c{n}", passed))
    display.update(outcome("c3", False, error="the subject timed out after 1s"))
    display.close()
    shown = stream.getvalue()
    last = shown.split("\r\x1b[K")[-2]  # the last line drawn before close() cleared it
    assert last.startswith("⟳ demo · 4/10 cases · echoed 0.67 · 1 errored · $0.0123 · ")
    assert "ETA" in last
    assert shown.endswith("\r\x1b[K")  # cleared: the report starts on a clean line


def test_plain_lines_every_case_for_small_suites_every_5_percent_for_big_ones() -> None:
    small = io.StringIO()
    display = SuiteProgress(suite="s", run_id="r", total=3, mode="lines", stream=small)
    display.start()
    for n in range(3):
        display.update(outcome(f"c{n}", n != 1))
    assert small.getvalue().splitlines() == [
        "suite s: run r, 3 cases",
        "  case 1/3  c0  1/1 judges passed",
        "  case 2/3  c1  0/1 judges passed",
        "  case 3/3  c2  1/1 judges passed",
    ]
    big = io.StringIO()
    display = SuiteProgress(suite="b", run_id="r", total=400, mode="lines", stream=big)
    for n in range(400):
        display.update(outcome(f"c{n}", True))
    lines = big.getvalue().splitlines()
    assert 20 <= len(lines) <= 22, lines
    assert lines[-1].startswith("  400/400 cases · echoed 1.00")


def test_a_case_line_counts_the_judges_that_errored_or_were_skipped() -> None:
    """A case whose one judge passed, one errored and one was skipped read '1/1 judges
    passed', as if it had been judged whole."""
    judges = (
        JudgeOutcome("echoed", "check", "ok", 1.0, True, True),
        JudgeOutcome("broken", "check", "error", None, None, None, error="boom"),
        JudgeOutcome("gated", "check", "skipped", None, None, None),
    )
    case = CaseOutcome("c0", "k", 0, (ArmOutcome("subject", "ok", judges, None),))
    stream = io.StringIO()
    display = SuiteProgress(suite="s", run_id="r", total=1, mode="lines", stream=stream)
    display.update(case)
    assert stream.getvalue().splitlines() == [
        "  case 1/1  c0  1/1 judges passed, 1 errored, 1 skipped"
    ]


def test_quiet_and_a_pipe_that_closed_show_nothing_and_do_not_fail() -> None:
    stream = io.StringIO()
    SuiteProgress(suite="q", run_id="r", total=1, mode="quiet", stream=stream).update(
        outcome("c", True)
    )
    assert stream.getvalue() == ""
    closed = io.StringIO()
    closed.close()
    display = SuiteProgress(suite="q", run_id="r", total=2, mode="lines", stream=closed)
    display.start()
    display.update(outcome("c", True))  # no exception: the display goes quiet
    assert display.mode == "quiet"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_running_subjects_and_the_run_resumes(tmp_path: Path) -> None:
    dataset(tmp_path, {f"c{i}": {"input": {"n": i}} for i in range(6)})
    write(
        tmp_path / "s.suite.yaml",
        """\
        name: stoppable
        dataset: cases
        subject:
          command: sleep ${inputs.n}0; echo done
        judges:
          - {name: done, builtin: regex, arguments: {pattern: done}}
        """,
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from engine.cli.harness_cmd import main; main()",
            "suite",
            "s.suite.yaml",
            "--jobs",
            "2",
        ],
        cwd=own_project(tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as a terminal sends it: a pytest started in the background (`make test &`)
        # ignores SIGINT, and its children would inherit that (as POSIX says they should).
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 60
    while recorded(tmp_path) < 1:  # c0 (no sleep) is recorded; c1 (10 s) is running
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert time.monotonic() - started < 15, "the running 10 s subject was waited for"
    assert process.returncode == 3, err
    [(run_id,)] = db_rows(tmp_path, "SELECT run_id FROM suite_runs")
    done = recorded(tmp_path)
    assert f"interrupted after {done} of 6 cases" in err and f"--resume {run_id}" in err
    assert done < 3  # c1 (10 s) and c2 (20 s) were stopped, not finished
    code, _, err = suite(tmp_path, "s.suite.yaml", "--resume", run_id, "--cases", "c0")
    assert code == 2 and "--cases differs" in err  # resume keeps the run's own options


def test_a_stop_under_output_json_is_inconclusive_not_a_refusal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--output json` printed a Ctrl-C as {"result": "ERROR", "exit_code": 3, "refused": true}:
    the result contradicted its own exit code, and the stopped run's cases had run. The shape is
    the one docs/harness.md gives for a stop, as the other runners print it."""
    from engine.cli.harness_suite import deliver
    from engine.suites.driver import SuiteInterrupted, SuiteRefusal

    def stopped() -> SuiteResult:
        raise SuiteInterrupted("interrupted after 1 of 4 cases", hint="--resume r1")

    with pytest.raises(SuiteInterrupted):
        deliver(stopped, "json", None)
    said = json.loads(capsys.readouterr().out)
    assert (said["result"], said["exit_code"], said["refused"]) == ("INCONCLUSIVE", 3, False)

    def refused() -> SuiteResult:
        raise SuiteRefusal("--cases 'x*' matches none of the 4 cases")

    with pytest.raises(SuiteRefusal):
        deliver(refused, "json", None)
    said = json.loads(capsys.readouterr().out)
    assert (said["result"], said["exit_code"], said["refused"]) == ("ERROR", 2, True)
