"""A tester's findings on `ll-harness suite`, each pinned by a real suite run through the CLI:
judges that spin, quit or block; files that cannot be read safely; where history goes; inputs
too large to export; the report's order; and the messages around them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli import BIN, ll_harness, ll_loop


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def project(tmp_path: Path) -> Path:
    (tmp_path / ".loops").mkdir(parents=True, exist_ok=True)
    return tmp_path


def run_json(cwd: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    done = ll_harness(cwd, "suite", *args, "--output", "json", "--quiet")
    try:
        return done.code, json.loads(done.stdout), done.stderr
    except ValueError:
        shown = f"{done.stdout}\n{done.stderr}"
        raise AssertionError(f"not JSON (exit {done.code}):\n{shown}") from None


def errors_of(data: dict[str, Any], judge: str) -> list[str]:
    return [r["error"] for r in data["results"] if r["judge"] == judge]


def recorded(root: Path) -> list[str]:
    db = root / ".loops" / "history.db"
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            rows = conn.execute("SELECT case_id FROM suite_cases ORDER BY 1").fetchall()
    except sqlite3.OperationalError:  # the tables do not exist yet
        return []
    return [row[0] for row in rows]


# ---------------------------------------------------------------------------------------------
# 1. A check that never ends


SPINNING = """\
name: spinning
cases: [{id: a, input: {x: 1}}, {id: b, input: {x: 2}}]
subject: {command: "echo hi"}
judges:
  - name: spins
    timeout: 0.5
    check: |
      while True:
          try:
              pass
          except Exception:
              pass
  - name: fine
    check: return True
"""


def test_a_spinning_check_ends_as_its_error_at_its_time_limit(tmp_path: Path) -> None:
    write(project(tmp_path) / "s.suite.yaml", SPINNING)
    started = time.monotonic()
    code, data, err = run_json(tmp_path, "s.suite.yaml")
    assert code == 0, err
    assert time.monotonic() - started < 20
    [spins] = [j for j in data["judges"] if j["judge"] == "spins"]
    assert spins["errored"] == 2
    assert (
        errors_of(data, "spins")
        == [
            "judge 'spins' at s.suite.yaml:5: the check did not finish within its time limit of "
            "0.5 s (set the judge's timeout: to change it)"
        ]
        * 2
    )
    assert [r["passed"] for r in data["results"] if r["judge"] == "fine"] == [True, True]


def test_the_watchdog_never_interrupts_a_check_that_finished_in_time() -> None:
    from engine.judges.deadline import within

    assert [within(0.05, lambda n=n: n) for n in range(2000)] == list(range(2000))
    time.sleep(0.2)  # every deadline has passed: nothing may land in this thread now
    assert sum(range(100_000)) == 4999950000


def test_a_check_timeout_is_a_key_of_check_judges_only(tmp_path: Path) -> None:
    write(
        project(tmp_path) / "s.suite.yaml",
        """\
        name: t
        cases: [{id: a, input: {}}]
        subject: {command: "echo hi"}
        judges:
          - {name: smart, prompt: "Rate it.", timeout: 3}
        """,
    )
    done = ll_loop(tmp_path, "validate", "s.suite.yaml")
    assert done.code != 0
    assert (
        "timeout applies to builtin (with arguments) or an inline check snippet or module + "
        "function judges" in done.stdout + done.stderr
    )


STUCK = """\
name: stuck
cases:
  - {id: a, input: {x: 1}, annotations: {mark: "MARK"}}
  - {id: b, input: {x: 2}, annotations: {mark: "MARK"}}
  - {id: c, input: {x: 3}, annotations: {mark: "MARK"}}
subject: {command: "echo hi"}
judges:
  - name: sleeps
    check: |
      import os, time
      if inputs["x"] == 2 and not os.path.exists(annotations["mark"]):
          time.sleep(1000)  # in C code: no exception reaches it
      return True
"""


def _start_suite(root: Path, *, jobs: int) -> subprocess.Popen[str]:
    """`ll-harness suite s.suite.yaml` as a process of its own, Ctrl-C at its default."""
    return subprocess.Popen(
        [str(BIN / "ll-harness"), "suite", "s.suite.yaml", "--jobs", str(jobs)],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    """Ctrl-C and a closed terminal (SIGHUP) at their defaults, as in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_does_not_wait_for_a_case_stuck_in_c_code(tmp_path: Path, signum: int) -> None:
    mark = tmp_path / "mark"
    write(project(tmp_path) / "s.suite.yaml", STUCK.replace("MARK", str(mark)))
    process = _start_suite(tmp_path, jobs=3)
    deadline = time.monotonic() + 60
    while recorded(tmp_path) != ["a", "c"]:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    started = time.monotonic()
    process.send_signal(signum)
    _, err = process.communicate(timeout=30)
    assert time.monotonic() - started < 12
    assert process.returncode == 3, err
    assert "of 3 cases (1 stuck case left unrecorded)" in err
    how = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    assert f"{how} after 2 of 3 cases" in err
    assert "--resume" in err
    assert recorded(tmp_path) == ["a", "c"]
    run_id = err.split("--resume ")[1].split("`")[0]
    assert not [p for p in Path("/dev/shm").glob(f"ll-suite-{run_id}")]
    mark.write_text("")
    done = ll_harness(tmp_path, "suite", "s.suite.yaml", "--resume", run_id, "--quiet")
    assert done.code == 0, done.stderr
    assert recorded(tmp_path) == ["a", "b", "c"]


# ---------------------------------------------------------------------------------------------
# 3. A check that tries to end the process


QUITTING = """\
name: quitting
cases: [{id: a, input: {}}]
subject: {command: "echo hi"}
judges:
  - name: quits
    check: |
      import sys
      sys.exit(5)
  - name: raises_exit
    check: raise SystemExit
  - name: ctrl_c
    check: raise KeyboardInterrupt
  - name: generator
    check: raise GeneratorExit
  - name: fine
    check: return True
"""


def test_sys_exit_and_friends_in_a_check_are_that_judges_error(tmp_path: Path) -> None:
    write(project(tmp_path) / "s.suite.yaml", QUITTING)
    code, data, err = run_json(tmp_path, "s.suite.yaml")
    assert code == 0, err
    assert errors_of(data, "quits") == [
        "judge 'quits' at s.suite.yaml:8: the check called sys.exit(5); a judge cannot end the run"
    ]
    assert errors_of(data, "raises_exit") == [
        "judge 'raises_exit' at s.suite.yaml:10: the check called sys.exit(); a judge cannot "
        "end the run"
    ]
    assert errors_of(data, "ctrl_c") == [
        "judge 'ctrl_c' at s.suite.yaml:12: the check raised KeyboardInterrupt; a judge cannot "
        "stop the run"
    ]
    assert "raised GeneratorExit" in errors_of(data, "generator")[0]
    assert [r["passed"] for r in data["results"] if r["judge"] == "fine"] == [True]
    assert data["case_runs"][0]["status"] == "ok"


def test_sys_exit_in_a_loops_assessment_is_its_error_not_the_runs_exit(tmp_path: Path) -> None:
    write(
        project(tmp_path) / "l.yaml",
        """\
        name: l
        scope: ["."]
        initial: assess
        states:
          assess:
            evaluate:
              type: assessment
              judges:
                - name: quits
                  check: |
                    import sys
                    sys.exit(4)
            on_yes: done
            on_no: done
            on_error: broken
          done: {terminal: true}
          broken: {terminal: true}
        """,
    )
    done = ll_loop(tmp_path, "run", "l.yaml", "--json", process=True)
    assert done.code == 0, done.stderr
    assert done.verdicts() == [("assess", "error")]
    assert done.json["final_state"] == "broken"


def test_a_real_ctrl_c_in_the_main_thread_still_stops_a_check() -> None:
    """In the main thread with Python's SIGINT handler, a KeyboardInterrupt is the user's
    Ctrl-C: it is not turned into the judge's error, and the check's process is ended."""
    from engine.judges import run_judge
    from engine.model.judges import Judge

    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        judge = Judge(name="waits", kind="check", check="import time\ntime.sleep(30)\nreturn True")
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            run_judge(judge, {"stdout": ""})
        assert time.monotonic() - started < 10
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_stops_a_suite_whose_check_spins(tmp_path: Path) -> None:
    write(project(tmp_path) / "s.suite.yaml", SPINNING.replace("timeout: 0.5", "timeout: 600"))
    process = _start_suite(tmp_path, jobs=2)
    deadline = time.monotonic() + 60
    while not list((tmp_path / ".loops" / "suites").glob("*/lock")):  # the run has begun
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    time.sleep(1)  # the subjects have run: both cases are in their spinning check
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 3, err
    assert "interrupted after 0 of 2 cases" in err and "--resume" in err
    assert recorded(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# 2 and 7. Collecting outputs: only regular files, never through a link


def test_a_fifo_in_an_output_directory_is_passed_over(tmp_path: Path) -> None:
    write(
        project(tmp_path) / "s.suite.yaml",
        """\
        name: fifo
        cases: [{id: a, input: {}}]
        isolation: copy
        subject: {command: "mkdir out && mkfifo out/pipe && echo text > out/a.txt", timeout: 5}
        outputs: {paths: [out]}
        judges:
          - name: read
            check: return sorted(outputs["files"]) == ["out/a.txt"], str(sorted(outputs["files"]))
        """,
    )
    done = ll_harness(
        tmp_path, "suite", "s.suite.yaml", "--output", "json", process=True, timeout=60
    )
    assert done.code == 0, done.stderr
    assert [r["passed"] for r in done.json["results"]] == [True]


def test_links_in_output_directories_are_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "inner.txt").write_text("TOP-SECRET too")
    write(
        project(tmp_path) / "s.suite.yaml",
        f"""\
        name: links
        cases: [{{id: a, input: {{}}}}]
        isolation: copy
        subject:
          command: >-
            mkdir -p out && echo mine > out/own.txt && ln -s {secret} out/leak.txt &&
            ln -s {tmp_path / "secrets"} out/dir && ln -s own.txt out/inside.txt &&
            ln -s {secret} top.txt
        outputs: {{paths: [out, top.txt, out/dir/inner.txt]}}
        judges:
          - name: no_leak
            check: |
              texts = [str(v) for v in outputs["files"].values()]
              leaked = [t for t in texts if "SECRET" in t]
              return not leaked and sorted(outputs["files"]) == ["out/own.txt"], str(texts)
        """,
    )
    code, data, err = run_json(tmp_path, "s.suite.yaml")
    assert code == 0, err
    assert [r["passed"] for r in data["results"]] == [True], data["results"]


# ---------------------------------------------------------------------------------------------
# 4. Where the history goes


def test_a_loops_folder_in_a_world_writable_parent_is_not_the_project(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / ".loops").mkdir(parents=True)
    shared.chmod(0o1777)
    here = shared / "x1"
    write(
        here / "s.suite.yaml",
        """\
        name: where
        cases: [{id: a, input: {}}]
        subject: {command: "echo hi"}
        judges: [{name: fine, check: return True}]
        """,
    )
    done = ll_harness(here, "suite", "s.suite.yaml", "--quiet")
    assert done.code == 0, done.stderr
    assert not list((shared / ".loops").iterdir())
    assert (here / ".loops" / "history.db").is_file()


# ---------------------------------------------------------------------------------------------
# 5. Inputs too large to export


def test_an_input_too_large_to_export_errors_its_case(tmp_path: Path) -> None:
    write(
        project(tmp_path) / "s.suite.yaml",
        """\
        name: big
        dataset: cases
        subject: {command: 'printf %s "$LL_INPUTS_small"'}
        judges:
          - {name: echoed, builtin: regex, arguments: {pattern: "^ok$"}}
          - {name: answer, builtin: test, arguments: {command: 'test -n "$LL_ANNOTATIONS_big"'}}
          - {name: fine, check: return True}
        """,
    )
    for case, size in (("fits", 1_000), ("huge", 150_000)):
        folder = tmp_path / "cases" / case
        folder.mkdir(parents=True)
        (folder / "input.yaml").write_text(json.dumps({"small": "ok", "text": "x" * size}))
    folder = tmp_path / "cases" / "answers"
    folder.mkdir()
    (folder / "input.yaml").write_text(json.dumps({"small": "ok"}))
    (folder / "annotations.yaml").write_text(json.dumps({"big": "y" * 150_000}))
    code, data, err = run_json(tmp_path, "s.suite.yaml")
    assert code == 0, err
    runs = {c["case"]: c for c in data["case_runs"]}
    assert runs["fits"]["status"] == "ok" and runs["answers"]["status"] == "ok"
    assert runs["huge"]["status"] == "error"
    assert runs["huge"]["error"] == (
        "input 'text' (150,000 bytes quoted for the shell) cannot be exported as LL_INPUTS_text: "
        "a case's inputs may take 100,000 bytes in all as variables (one shell argument holds "
        "128 KiB); read the case's input.yaml from the workspace instead"
    )
    results = {(r["case"], r["judge"]): r for r in data["results"]}
    assert results[("fits", "echoed")]["passed"] is True
    assert results[("answers", "echoed")]["passed"] is True
    assert results[("answers", "fine")]["passed"] is True
    assert "annotation 'big'" in results[("answers", "answer")]["error"]


# ---------------------------------------------------------------------------------------------
# 6. The report's order


def test_the_report_lists_cases_in_dataset_order_not_completion_order(tmp_path: Path) -> None:
    write(
        project(tmp_path) / "s.suite.yaml",
        """\
        name: order
        dataset: cases
        subject: {command: "sleep ${inputs.wait}; echo hi"}
        judges: [{name: never, check: 'return False, "no"'}]
        """,
    )
    for case, wait in (("a-slow", 1.5), ("b-fast", 0)):
        (tmp_path / "cases" / case).mkdir(parents=True)
        (tmp_path / "cases" / case / "input.yaml").write_text(json.dumps({"wait": wait}))
    code, data, err = run_json(tmp_path, "s.suite.yaml", "--jobs", "2")
    assert code == 0, err
    assert [c["case"] for c in data["case_runs"]] == ["a-slow", "b-fast"]
    assert [r["case"] for r in data["results"]] == ["a-slow", "b-fast"]
    text = ll_harness(tmp_path, "suite", "s.suite.yaml", "--jobs", "2", "--quiet").stdout
    assert text.index("  a-slow") < text.index("  b-fast")
    page = ll_harness(tmp_path, "suite", "s.suite.yaml", "--jobs", "2", "--output", "html")
    assert page.stdout.index("a-slow") < page.stdout.index("b-fast")


# ---------------------------------------------------------------------------------------------
# 8. Messages


MINIMAL = """\
name: m
dataset: cases
isolation: copy
subject: {command: "echo hi"}
judges: [{name: fine, check: return True}]
"""


def test_an_empty_input_yaml_is_a_case_without_inputs(tmp_path: Path) -> None:
    write(project(tmp_path) / "s.suite.yaml", MINIMAL)
    (tmp_path / "cases" / "empty").mkdir(parents=True)
    (tmp_path / "cases" / "empty" / "input.yaml").write_text("")
    (tmp_path / "cases" / "empty" / "annotations.yaml").write_text("# nothing\n")
    code, data, err = run_json(tmp_path, "s.suite.yaml")
    assert code == 0, err
    assert data["case_runs"][0]["status"] == "ok"


def test_an_empty_suite_file_is_told_what_a_suite_needs(tmp_path: Path) -> None:
    (project(tmp_path) / "s.suite.yaml").write_text("")
    done = ll_harness(tmp_path, "suite", "s.suite.yaml")
    assert done.code == 2
    assert "a suite needs name, subject, judges, and cases or a dataset" in done.stderr
    assert "loop" not in done.stderr


def test_a_dataset_folder_name_with_control_characters_is_refused(tmp_path: Path) -> None:
    write(project(tmp_path) / "s.suite.yaml", MINIMAL)
    (tmp_path / "cases" / "ok\n  forged\x1b[31m").mkdir(parents=True)
    done = ll_harness(tmp_path, "suite", "s.suite.yaml")
    assert done.code == 2
    assert "s.suite.yaml:2: the dataset folder 'ok\\n  forged\\x1b[31m' has control" in (
        done.stderr
    )
    assert "\x1b" not in done.stderr and "\n  forged" not in done.stderr


def test_a_missing_dataset_is_refused_at_its_line(tmp_path: Path) -> None:
    write(project(tmp_path) / "s.suite.yaml", MINIMAL)
    done = ll_harness(tmp_path, "suite", "s.suite.yaml")
    assert done.code == 2
    # lint (LL093) refuses it before the run reads the dataset
    assert "s.suite.yaml:2:1: LL093 the dataset 'cases' (" in done.stderr
    assert "does not exist; the suite did not run" in done.stderr


@pytest.mark.parametrize(
    ("given", "why"),
    [("../proj", "is outside the project root"), ("/etc/hostname", "is outside the project")],
)
def test_an_unusable_workspace_path_is_refused_before_the_run(
    tmp_path: Path, given: str, why: str
) -> None:
    (tmp_path / "proj").mkdir()
    here = project(tmp_path / "here")
    write(here / "s.suite.yaml", MINIMAL + f"workspace: [ok.txt, {json.dumps(given)}]\n")
    (here / "ok.txt").write_text("ok")
    (here / "cases" / "a").mkdir(parents=True)
    (here / "cases" / "a" / "input.yaml").write_text("{}")
    done = ll_harness(here, "suite", "s.suite.yaml")
    assert done.code == 2, done.stdout
    # lint (LL096) refuses it, at the entry, before the run's own check
    assert f"s.suite.yaml:6:21: LL096 workspace path {given!r} {why}" in done.stderr
    assert not recorded(here)


def test_validate_counts_a_suite_as_a_suite(tmp_path: Path) -> None:
    write(project(tmp_path) / "s.suite.yaml", MINIMAL)
    write(tmp_path / "cases" / "a" / "input.yaml", "{}")
    done = ll_loop(tmp_path, "validate", "s.suite.yaml")
    assert done.code == 0, done.stderr
    assert "1 suite: no problems" in done.stdout + done.stderr


def test_progress_counts_one_case_as_one_case() -> None:
    import io

    from engine.suites.progress import SuiteProgress

    stream = io.StringIO()
    display = SuiteProgress(suite="m", run_id="r", total=1, mode="lines", stream=stream)
    display.start()
    display.close()
    assert stream.getvalue() == "suite m: run r, 1 case\n"
    assert display._status().startswith("0/1 case")


AGENT = """\
name: agent
cases: [{id: a, input: {}}]
subject:
  prompt: "Do the work."
  agent: "echo $$ > PIDFILE; sleep 300"
judges: [{name: ran, builtin: exit_code}]
"""


def test_a_stop_ends_an_agent_subject_instead_of_leaving_it_running(tmp_path: Path) -> None:
    """The agent CLI has a session of its own: Ctrl-C never reaches it. The stop used to wait
    5 s for it, then leave it running after ll-harness had exited."""
    pidfile = tmp_path / "agent.pid"
    write(project(tmp_path) / "s.suite.yaml", AGENT.replace("PIDFILE", str(pidfile)))
    process = _start_suite(tmp_path, jobs=1)
    try:
        deadline = time.monotonic() + 60
        while not pidfile.exists() or not pidfile.read_text().strip():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.1)
        agent = int(pidfile.read_text())
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
        assert time.monotonic() - started < 4, err
        assert process.returncode == 3, err
        gone = time.monotonic() + 5
        while Path(f"/proc/{agent}").exists() and time.monotonic() < gone:
            time.sleep(0.05)
        assert not Path(f"/proc/{agent}").exists(), "the agent outlived the suite"
    finally:
        if pidfile.exists() and pidfile.read_text().strip():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pidfile.read_text()), signal.SIGKILL)


def test_validate_reports_a_workspace_path_the_run_would_refuse(tmp_path: Path) -> None:
    """`ll-loop validate` passed a copy suite whose workspace: path was missing or outside the
    project; only `ll-harness suite` refused it. With `isolation: auto` (a git worktree in a
    repository, where nothing is copied) lint leaves it to the run."""
    here = project(tmp_path / "here")
    (here / "ok.txt").write_text("ok")
    (here / "cases" / "a").mkdir(parents=True)
    (here / "cases" / "a" / "input.yaml").write_text("{}")
    write(here / "s.suite.yaml", MINIMAL + "workspace: [ok.txt, nosuch.txt, ../x]\n")
    done = ll_loop(here, "validate", "s.suite.yaml")
    assert done.code == 1
    found = [line for line in done.stdout.splitlines() if " LL096 " in line]
    assert found == [
        f"s.suite.yaml:6:21: error LL096 workspace path 'nosuch.txt' does not exist under the "
        f"project root {here}",
        f"s.suite.yaml:6:33: error LL096 workspace path '../x' is outside the project root {here}",
    ]
    write(here / "s.suite.yaml", MINIMAL.replace("copy", "auto") + "workspace: [nosuch.txt]\n")
    assert " LL096 " not in ll_loop(here, "validate", "s.suite.yaml").stdout
    done = ll_harness(here, "suite", "s.suite.yaml")  # no git here: auto copies, and refuses
    assert done.code == 2
    assert "s.suite.yaml:6: workspace path 'nosuch.txt' does not exist" in done.stderr


def test_judge_samples_are_bounded_in_the_file_and_on_the_command_line(tmp_path: Path) -> None:
    """`samples: 100000000` on an LLM judge queued every sample at once (one future each) and
    grew the process by ~130 MB a second until the machine ran out of memory, before the first
    model call; `--samples` did the same. Both are refused, at the judge's line."""
    write(
        project(tmp_path) / "s.suite.yaml",
        """\
        name: t
        cases: [{id: a, input: {}}]
        subject: {command: "echo hi"}
        judges:
          - {name: smart, prompt: "Rate it.", samples: 100000000}
        """,
    )
    done = ll_loop(tmp_path, "validate", "s.suite.yaml")
    assert done.code == 1, done  # validate's "the file has errors"
    assert "s.suite.yaml:5:" in done.stdout + done.stderr
    assert "judges[0].samples must be at most 100, got 100000000" in done.stdout + done.stderr
    (tmp_path / "s.suite.yaml").write_text(
        (tmp_path / "s.suite.yaml").read_text().replace("samples: 100000000", "samples: 3")
    )
    refused = ll_harness(tmp_path, "suite", "s.suite.yaml", "--samples", "100000000")
    assert refused.code == 2, refused
    assert "--samples must be from 1 to 100, got 100000000" in refused.stderr
