"""A suite killed with SIGKILL resumes with `--resume RUN`: only the cases without rows run
again, no row is lost or duplicated, and the report equals an uninterrupted run's."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.suites.workspace import scratch_roots
from tests.harness_helpers import REPO
from tests.suite_helpers import (
    dataset,
    db_rows,
    leftovers,
    own_project,
    recorded,
    suite,
    suite_json,
    write,
)

SUITE = """\
name: slow
dataset: cases
subject:
  command: echo ${inputs.n} >> "$LL_SUITE_DIR/calls.log"; sleep 0.3; echo ${inputs.n}
judges:
  - name: echoed
    check: return outputs["stdout"].strip() == str(inputs["n"]), outputs["stdout"].strip()
  - name: even
    check: return inputs["n"] % 2 == 0, "parity"
thresholds:
  echoed: {min_pass_rate: 0.8}
"""
CASES = 24


def start(root: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from engine.cli.harness_cmd import main; main()",
            "suite",
            "s.suite.yaml",
            "--jobs",
            "4",
            "--quiet",
        ],
        cwd=own_project(root),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_a_suite_killed_with_sigkill_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    dataset(tmp_path, {f"c{i:02d}": {"input": {"n": i}} for i in range(CASES)})
    write(tmp_path / "s.suite.yaml", SUITE)
    process = start(tmp_path)
    deadline = time.monotonic() + 120
    while recorded(tmp_path) < 8:
        assert process.poll() is None, "the suite ended before it could be killed"
        assert time.monotonic() < deadline, "no case was recorded in time"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    time.sleep(0.6)  # let the orphaned subjects of the killed driver finish
    [(run_id,)] = db_rows(tmp_path, "SELECT run_id FROM suite_runs")
    before = {c for (c,) in db_rows(tmp_path, "SELECT case_id FROM suite_cases")}
    assert 8 <= len(before) < CASES
    assert db_rows(tmp_path, "SELECT ended_at FROM suite_runs") == [(None,)]
    calls_before = Counter((tmp_path / "calls.log").read_text().split())

    code, data, err = suite_json(tmp_path, "s.suite.yaml", "--resume", run_id, "--jobs", "4")
    assert code == 0, err
    assert data["run_id"] == run_id and data["resumed"] == len(before)
    calls = Counter((tmp_path / "calls.log").read_text().split())
    for case in range(CASES):
        if f"c{case:02d}" in before:
            assert calls[str(case)] == calls_before[str(case)] == 1, case  # not run again
        else:
            assert calls[str(case)] - calls_before[str(case)] == 1, case  # run exactly once now
    # every case x judge exactly once (the unique keys would refuse a duplicate)
    assert db_rows(tmp_path, "SELECT count(*), count(DISTINCT case_id) FROM suite_cases") == [
        (CASES, CASES)
    ]
    assert db_rows(
        tmp_path, "SELECT judge, count(*) FROM suite_judgements GROUP BY judge ORDER BY judge"
    ) == [("echoed", CASES), ("even", CASES)]
    assert len(data["results"]) == 2 * CASES
    assert leftovers(run_id) == []  # the killed run's workspaces are gone

    # the report of the resumed run is the report of an uninterrupted one
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    dataset(fresh, {f"c{i:02d}": {"input": {"n": i}} for i in range(CASES)})
    write(fresh / "s.suite.yaml", SUITE)
    _, whole, _ = suite_json(fresh, "s.suite.yaml", "--jobs", "4")
    assert data["judges"] == whole["judges"] and data["result"] == whole["result"] == "PASS"

    code, _, err = suite(tmp_path, "s.suite.yaml", "--resume", run_id)
    assert code == 2 and f"run {run_id} already finished (PASS)" in err


def test_resume_refuses_a_changed_suite_and_other_options(tmp_path: Path) -> None:
    dataset(tmp_path, {f"c{i}": {"input": {"n": i}} for i in range(2)})
    write(tmp_path / "s.suite.yaml", SUITE)
    code, data, _ = suite_json(tmp_path, "s.suite.yaml")
    run_id = data["run_id"]
    with sqlite3.connect(tmp_path / ".loops" / "history.db") as db:  # as if it had been killed
        db.execute("UPDATE suite_runs SET ended_at = NULL")
    code, _, err = suite(tmp_path, "s.suite.yaml", "--resume", run_id, "--samples", "3")
    assert code == 2 and "--samples differs from the run being resumed" in err
    write(tmp_path / "s.suite.yaml", SUITE.replace("0.8", "0.7"))
    code, _, err = suite(tmp_path, "s.suite.yaml", "--resume", run_id)
    assert code == 2 and "the suite file changed since it started" in err
    code, _, err = suite(tmp_path, "s.suite.yaml", "--resume", "nope")
    assert code == 2 and "--resume nope: there is no such suite run" in err


def test_resume_and_baseline_of_take_a_unique_prefix_of_a_run_id(tmp_path: Path) -> None:
    """Every RUN argument of `ll-loop` takes a unique prefix of a run id; `--resume` and
    `--baseline-of` said `there is no such suite run` of one. A prefix two runs share is
    refused, naming both."""
    dataset(tmp_path, {f"c{i}": {"input": {"n": i}} for i in range(2)})
    write(tmp_path / "s.suite.yaml", SUITE)
    _, first, _ = suite_json(tmp_path, "s.suite.yaml", "--measure-baseline")
    _, second, _ = suite_json(tmp_path, "s.suite.yaml")
    old, new = first["run_id"], second["run_id"]
    with sqlite3.connect(tmp_path / ".loops" / "history.db") as db:  # as if it had been killed
        db.execute("UPDATE suite_runs SET ended_at = NULL WHERE run_id = ?", (new,))
        db.execute("DELETE FROM suite_cases WHERE run_id = ? AND case_id = 'c1'", (new,))
        db.execute("DELETE FROM suite_judgements WHERE run_id = ? AND case_id = 'c1'", (new,))
    shared = next((old[:i] for i in range(len(old)) if old[i] != new[i]), old)
    code, _, err = suite(tmp_path, "s.suite.yaml", "--resume", shared)
    assert code == 2 and f"--resume {shared}: names 2 suite runs" in err, err
    assert old in err and new in err
    code, data, err = suite_json(tmp_path, "s.suite.yaml", "--resume", new[: len(shared) + 1])
    assert code == 3 and data["run_id"] == new, err  # 2 of 2 cases: INCONCLUSIVE under 0.8
    assert data["resumed"] == 1, data
    code, data, err = suite_json(
        tmp_path, "s.suite.yaml", "--compare-baseline", "--baseline-of", old[: len(shared) + 1]
    )
    assert code == 3 and data["baseline_run"] == old, err


@pytest.mark.parametrize("given", ["\udcff", "\ud7ff"], ids=["not-utf8", "ends-in-U+D7FF"])
def test_a_run_id_that_no_run_can_have_is_no_such_run_not_an_internal_error(
    tmp_path: Path, given: str
) -> None:
    """A prefix's upper bound (its last character plus one) of a run id ending in U+D7FF was a
    lone surrogate, and a byte that is not UTF-8 one already: SQLite could not take either, and
    `--resume` / `--baseline-of` ended in 'internal error: UnicodeEncodeError'."""
    dataset(tmp_path, {"c0": {"input": {"n": 0}}})
    write(tmp_path / "s.suite.yaml", SUITE)
    suite_json(tmp_path, "s.suite.yaml")
    for option in (["--resume", given], ["--compare-baseline", "--baseline-of", given]):
        code, _, err = suite(tmp_path, "s.suite.yaml", *option)
        assert code == 2 and "internal error" not in err, err
        assert "no such suite run" in err or "no run of suite" in err, err


def test_resume_reads_only_the_cases_it_runs(tmp_path: Path) -> None:
    """A finished case is neither run nor read again (a resumed run of thousands of cases
    started by reading them all, for lint); the cases still to run are read and linted."""
    from engine.api import _refuse_lint_errors, _Where

    dataset(tmp_path, {f"c{i:02d}": {"input": {"n": i}} for i in range(4)})
    write(tmp_path / "s.suite.yaml", SUITE)
    code, first, err = suite_json(tmp_path, "s.suite.yaml")
    assert code == 3, err  # 4 of 4 cannot show 0.8 yet: inconclusive
    run_id = first["run_id"]
    with sqlite3.connect(tmp_path / ".loops" / "history.db") as db:  # as if killed before c03
        db.execute("UPDATE suite_runs SET ended_at = NULL")
        db.execute("DELETE FROM suite_cases WHERE case_id = 'c03'")
        db.execute("DELETE FROM suite_judgements WHERE case_id = 'c03'")
    where = _Where.of(tmp_path)
    _, fresh = _refuse_lint_errors(tmp_path / "s.suite.yaml", where)
    _, resumed = _refuse_lint_errors(tmp_path / "s.suite.yaml", where, run_id)
    assert fresh is not None and [c.loaded for c in fresh] == [True] * 4
    assert resumed is not None and [c.loaded for c in resumed] == [False, False, False, True]
    # a unique prefix of the id names the run here too (every case was read and linted again)
    _, by_prefix = _refuse_lint_errors(tmp_path / "s.suite.yaml", where, run_id[:-3])
    assert by_prefix is not None and [c.loaded for c in by_prefix] == [False, False, False, True]
    _, unknown = _refuse_lint_errors(tmp_path / "s.suite.yaml", where, "nope")
    assert unknown is not None and all(c.loaded for c in unknown)

    code, data, err = suite_json(tmp_path, "s.suite.yaml", "--resume", run_id, "--jobs", "4")
    assert code == 3, err
    assert data["resumed"] == 3 and data["judges"] == first["judges"]
    assert db_rows(tmp_path, "SELECT count(DISTINCT case_id) FROM suite_cases") == [(4,)]


HARNESS = [sys.executable, "-c", "from engine.cli.harness_cmd import main; main()"]
FILLING = """\
name: fill
dataset: cases
isolation: copy
subject:
  command: head -c 3000 /dev/zero | tr '\\\\0' x; echo ${inputs.n}
judges:
  - name: exit
    builtin: exit_code
"""


def test_a_suite_on_a_full_disk_says_so_and_resumes_when_there_is_room(tmp_path: Path) -> None:
    """The history database past a file-size limit (SQLite reports a full disk so, or as a
    'disk I/O error'): one sentence whose hint names the full disk, exit 2, and `--resume`
    then records every case once."""
    root = own_project(tmp_path)
    write(root / "s.suite.yaml", FILLING)
    dataset(root, {f"c{n:03d}": {"input": {"n": n}} for n in range(300)})

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    full = subprocess.run(
        [*HARNESS, "suite", "s.suite.yaml", "--quiet"],
        cwd=root,
        env=env,
        preexec_fn=small_files,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert full.returncode == 2, full.stderr
    assert "hint: if the disk is full" in full.stderr
    [(run_id,)] = db_rows(root, "SELECT run_id FROM suite_runs")
    code, data, err = suite_json(root, "s.suite.yaml", "--resume", run_id)
    assert code == 0 and data["resumed"], err
    assert recorded(root) == 300
    assert db_rows(root, "SELECT count(DISTINCT case_id) FROM suite_cases") == [(300,)]


def test_a_resume_of_a_running_run_is_refused_before_its_executor_is_made(
    tmp_path: Path,
) -> None:
    """`--resume` of a run another process is running is refused; the executor was made first,
    so `--executor ray` started a Ray instance (or joined a cluster) only to be refused, and
    with an `--address` nothing answers at, the refusal named the address instead of the run
    that is running."""
    from tests.ray_helpers import free_port

    dataset(tmp_path, {f"c{i:02d}": {"input": {"n": i}} for i in range(CASES)})
    write(tmp_path / "s.suite.yaml", SUITE.replace("sleep 0.3", "sleep 2"))
    process = start(tmp_path)

    def runs() -> list[tuple[Any, ...]]:
        if not (tmp_path / ".loops" / "history.db").exists():
            return []
        try:
            return db_rows(tmp_path, "SELECT run_id FROM suite_runs")
        except sqlite3.OperationalError:  # the file is made before its tables
            return []

    run_id = None
    try:
        deadline = time.monotonic() + 120
        while not runs():
            assert process.poll() is None, "the suite ended before it was resumed"
            assert time.monotonic() < deadline, "the run was not recorded in time"
            time.sleep(0.05)
        [(run_id,)] = runs()
        address = f"127.0.0.1:{free_port()}"
        code, _, err = suite(
            tmp_path, "s.suite.yaml", "--resume", run_id, "--executor", "ray", "--address", address
        )
        assert code == 2, err
        assert f"run {run_id} is running in another process" in err, err
        assert "Ray" not in err
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        for root in scratch_roots(run_id) if run_id else ():  # a resume would clean them
            shutil.rmtree(root, ignore_errors=True)
