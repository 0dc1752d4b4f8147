"""Files under `.loops/` are never written through a link ll-loop did not create, and what a run
writes or reads stays bounded (output cap, streamed history)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from engine.load.project import UnsafePath, ensure_dir, open_file, write_new_file
from engine.processes.group import output_cap
from tests.runs_helpers import LL_LOOP, ll_loop, result_of, spawn, wait_until, write

SLEEPER = """
name: sleeper
initial: a
scope: [work]
states:
  a:
    action: "echo $$ > action.pid; sleep 60"
    next: done
  done: {terminal: true}
"""


def interrupted_run(project: Path) -> str:
    """A run killed with SIGKILL mid-action (its action ended too): resumable."""
    write(project / "sleeper.yaml", SLEEPER)
    proc = spawn(project, "run", "sleeper.yaml", "--json", "-q")
    wait_until((project / "action.pid").exists)
    proc.kill()
    proc.communicate(timeout=10)
    os.killpg(int((project / "action.pid").read_text()), 9)
    return next((project / ".loops" / "runs").iterdir()).name


def test_resume_refuses_a_linked_event_log_and_leaves_its_target_whole(tmp_path: Path) -> None:
    run_id = interrupted_run(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious data without a final newline")
    log = tmp_path / ".loops" / "runs" / run_id / "events.jsonl"
    log.unlink()
    log.symlink_to(victim)
    done = ll_loop(tmp_path, "resume", run_id, "--json", "-q")
    assert done.returncode == 2
    refusal = result_of(done)
    assert "is a symbolic link" in refusal["error"] and "events.jsonl" in refusal["error"]
    assert victim.read_bytes() == b"precious data without a final newline"


@pytest.mark.parametrize("linked", [".loops/runs", ".loops/locks", ".loops"])
def test_a_run_refuses_a_linked_directory_under_loops(tmp_path: Path, linked: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "project" / Path(linked).parent).mkdir(parents=True, exist_ok=True)
    (tmp_path / "project" / linked).symlink_to(elsewhere)
    write(
        tmp_path / "project" / "one.yaml", SLEEPER.replace("echo $$ > action.pid; sleep 60", "true")
    )
    done = ll_loop(tmp_path / "project", "run", "one.yaml", "--json", "-q")
    assert done.returncode == 2
    assert "is a symbolic link" in result_of(done)["error"]
    assert list(elsewhere.iterdir()) == []  # nothing written through the link


@pytest.mark.parametrize("plain_file", [".loops", ".loops/runs", ".loops/locks"])
def test_a_run_refuses_a_file_where_loops_needs_a_directory(
    tmp_path: Path, plain_file: str
) -> None:
    """A file named `.loops` (or `.loops/runs`) was an internal error (NotADirectoryError)."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / Path(plain_file).parent).mkdir(parents=True, exist_ok=True)
    (project / plain_file).write_text("not a directory\n")
    write(project / "one.yaml", SLEEPER.replace("echo $$ > action.pid; sleep 60", "true"))
    done = ll_loop(project, "run", "one.yaml", "--json", "-q")
    assert done.returncode == 2, done.stderr
    refusal = result_of(done)
    assert refusal["error"] == f"{project / plain_file} is not a directory"
    assert "internal error" not in done.stderr and "move the file aside" in done.stderr
    assert (project / plain_file).read_text() == "not a directory\n"  # left as it was


@pytest.mark.parametrize("kind", ["fifo", "directory", "device link"])
def test_an_event_log_that_is_not_a_file_is_refused_by_history_and_resume(
    tmp_path: Path, kind: str
) -> None:
    """events.jsonl a FIFO, a directory or a link to /dev/zero: `history RUN` waited forever
    for a FIFO's writer or read /dev/zero forever, and a directory was an internal error
    (IsADirectoryError), as was resume's "File or stream is not seekable" for a FIFO. Both
    now refuse it in one sentence."""
    run_id = interrupted_run(tmp_path)
    log = tmp_path / ".loops" / "runs" / run_id / "events.jsonl"
    log.unlink()
    if kind == "fifo":
        os.mkfifo(log)
    elif kind == "directory":
        log.mkdir()
    else:
        log.symlink_to("/dev/zero")
    for args in (("history", run_id), ("resume", run_id, "-q")):
        done = ll_loop(tmp_path, *args, process=True, timeout=30)
        assert done.returncode == 2, done.stderr
        assert "internal error" not in done.stderr
        said = done.stderr.splitlines()[0]
        assert said.startswith(f"error: {log} ") and (
            "is not a regular file" in said or "is a symbolic link" in said
        ), done.stderr


def test_a_state_json_that_is_a_fifo_hangs_nothing(tmp_path: Path) -> None:
    """One run directory whose state.json is a FIFO made `status` (every run's listing),
    `explain`, `resume` and `stop` wait for a writer forever; it now reads as a damaged
    state.json, as one that does not parse does."""
    run_id = interrupted_run(tmp_path)
    state = tmp_path / ".loops" / "runs" / run_id / "state.json"
    state.unlink()
    os.mkfifo(state)
    listed = ll_loop(tmp_path, "status", "--all", process=True, timeout=30)
    assert listed.returncode == 0, listed.stderr
    explained = ll_loop(tmp_path, "explain", run_id, process=True, timeout=30)
    assert explained.returncode == 0 and "state.json is damaged" in explained.stdout
    for command in ("resume", "stop"):
        done = ll_loop(tmp_path, command, run_id, process=True, timeout=30)
        assert done.returncode == 2
        assert f"run {run_id}'s state.json is damaged" in done.stderr, done.stderr


def test_a_fifo_among_the_lock_records_hangs_nothing(tmp_path: Path) -> None:
    """A FIFO named like a record in .loops/locks/ made every `run` and `status` wait for a
    writer forever (the registry read each record with a blocking open); a record that is not
    a regular file is skipped now, as a torn or foreign one is."""
    (tmp_path / ".loops" / "locks").mkdir(parents=True)
    os.mkfifo(tmp_path / ".loops" / "locks" / "planted.json")
    write(tmp_path / "one.yaml", SLEEPER.replace("echo $$ > action.pid; sleep 60", "true"))
    ran = ll_loop(tmp_path, "run", "one.yaml", "--json", "-q", process=True, timeout=30)
    assert ran.returncode == 0, ran.stderr
    listed = ll_loop(tmp_path, "status", process=True, timeout=30)
    assert listed.returncode == 0, listed.stderr
    ticket = tmp_path / ".loops" / "locks" / ".ticket"
    ticket.unlink()
    os.mkfifo(ticket)
    refused = ll_loop(tmp_path, "run", "one.yaml", "-q", process=True, timeout=30)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith(f"error: {ticket} exists and is not a regular file")


def test_the_history_database_is_not_written_through_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.db"
    victim.write_bytes(b"not yours")
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "history.db").symlink_to(victim)
    write(tmp_path / "one.yaml", SLEEPER.replace("echo $$ > action.pid; sleep 60", "true"))
    done = ll_loop(tmp_path, "run", "one.yaml", "--json", "-q")
    assert result_of(done)["final_state"] == "done"  # history never fails a run
    assert victim.read_bytes() == b"not yours"
    warnings = [line for line in done.stderr.splitlines() if "history.db" in line]
    assert len(warnings) == 1 and "symbolic link" in warnings[0]  # said once, not per row


def test_install_refuses_a_dangling_link_in_loops(tmp_path: Path) -> None:
    (tmp_path / ".loops").mkdir()
    target = tmp_path / "outside.yaml"
    (tmp_path / ".loops" / "fix-until-clean.yaml").symlink_to(target)
    for extra in ([], ["--force"]):
        done = ll_loop(tmp_path, "install", "fix-until-clean", *extra)
        assert done.returncode == 2
        assert "is a symbolic link" in done.stderr
        assert not target.exists()


def test_scaffold_out_refuses_a_link_and_writes_into_a_directory(tmp_path: Path) -> None:
    write(
        tmp_path / ".issues" / "FEAT-1-login.md",
        """
        # FEAT-1: Login
        ## Acceptance Criteria
        - a user can log in
        """,
    )
    target = tmp_path / "outside.yaml"
    (tmp_path / "link.yaml").symlink_to(target)
    for extra in ([], ["--force"]):
        done = ll_loop(
            tmp_path, "scaffold-eval", "--issues", "FEAT-1", "--out", "link.yaml", *extra
        )
        assert done.returncode == 2, done.stdout
        assert "is a symbolic link" in done.stderr
        assert not target.exists()
    done = ll_loop(tmp_path, "scaffold-eval", "--issues", "FEAT-1", "--out", "evals/")
    assert done.returncode == 0, done.stderr
    written = list((tmp_path / "evals").iterdir())
    assert len(written) == 1 and written[0].suffix == ".yaml"
    assert ll_loop(tmp_path, "validate", str(written[0])).returncode == 0


def test_harness_history_html_is_not_written_through_a_link(tmp_path: Path) -> None:
    from tests.harness_helpers import harness

    assert harness(tmp_path, "cmd", "true", "--exit-code", "0").returncode == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (tmp_path / "page.html").symlink_to(victim)
    done = harness(tmp_path, "history", "true", "--html", "page.html")
    assert done.returncode == 2 and "is a symbolic link" in done.stderr, done.stderr
    assert victim.read_text() == "keep me\n"
    assert harness(tmp_path, "history", "true", "--html", "real.html").returncode == 0
    assert (tmp_path / "real.html").read_text().startswith("<!DOCTYPE html>")


def test_the_file_helpers_refuse_links_below_loops(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "runs").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePath):
        ensure_dir(tmp_path / ".loops" / "runs" / "x")
    with pytest.raises(UnsafePath):
        open_file(tmp_path / ".loops" / "runs" / "f", os.O_WRONLY | os.O_CREAT)
    (tmp_path / ".loops" / "f").symlink_to(tmp_path / "real" / "g")
    with pytest.raises(UnsafePath):
        open_file(tmp_path / ".loops" / "f", os.O_WRONLY | os.O_CREAT)
    with pytest.raises(UnsafePath):
        write_new_file(tmp_path / ".loops" / "f", b"x", replace=True)
    assert list((tmp_path / "real").iterdir()) == []
    ensure_dir(tmp_path / ".loops" / "locks" / "deep")  # plain directories are made as usual
    assert (tmp_path / ".loops" / "locks" / "deep").is_dir()


# --- the output cap ------------------------------------------------------------------------

YES = """
name: flood
initial: a
scope: [work]
states:
  a:
    action: "yes"
    timeout: 5  # a regression must not fill the disk for long: the cap ends it in milliseconds
    on_yes: done
    on_no: done
    on_error: capped
  done: {terminal: true}
  capped: {terminal: true, failure: true}
"""


def test_an_action_printing_past_the_cap_is_ended_with_an_error_naming_it(tmp_path: Path) -> None:
    write(tmp_path / "flood.yaml", YES)
    began = time.monotonic()
    done = ll_loop(tmp_path, "run", "flood.yaml", "--json", "-q", env={"LL_MAX_OUTPUT_BYTES": "3M"})
    assert time.monotonic() - began < 20
    result = result_of(done)
    assert result["final_state"] == "capped", done.stderr
    run = tmp_path / ".loops" / "runs" / result["run_id"]
    spilled = sum(p.stat().st_size for p in (run / "outputs").iterdir())
    assert 0 < spilled <= 3 * 1024 * 1024
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    verdict = next(e for e in events if e["event"] == "evaluate")
    assert verdict["verdict"] == "error"
    assert verdict["details"]["output_capped"] == 3 * 1024 * 1024
    assert "LL_MAX_OUTPUT_BYTES" in verdict["details"]["reason"]
    assert "3145728 bytes" in verdict["details"]["reason"]


def test_a_cap_that_is_not_a_size_refuses_the_run(tmp_path: Path) -> None:
    write(tmp_path / "flood.yaml", YES)
    for bad in ("0", "-5", "lots", "nan", "1.5G"):
        done = ll_loop(tmp_path, "run", "flood.yaml", "--json", env={"LL_MAX_OUTPUT_BYTES": bad})
        assert done.returncode == 2
        assert "LL_MAX_OUTPUT_BYTES" in result_of(done)["error"]
    assert not (tmp_path / ".loops" / "runs").exists()


def test_output_cap_reads_sizes_in_bytes_or_binary_units() -> None:
    assert output_cap({}) == 1 << 30
    assert output_cap({"LL_MAX_OUTPUT_BYTES": "4096"}) == 4096
    assert output_cap({"LL_MAX_OUTPUT_BYTES": "512M"}) == 512 << 20
    assert output_cap({"LL_MAX_OUTPUT_BYTES": "2GiB"}) == 2 << 30


# --- history streams -----------------------------------------------------------------------


def _peak_rss_kib(cwd: Path, *args: str) -> int:
    proc = subprocess.Popen([LL_LOOP, *args], cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return usage.ru_maxrss


def test_history_of_a_run_streams_its_events_in_bounded_memory(tmp_path: Path) -> None:
    done = ll_loop(
        tmp_path,
        "run",
        str(
            write(tmp_path / "one.yaml", SLEEPER.replace("echo $$ > action.pid; sleep 60", "true"))
        ),
        "--json",
        "-q",
    )
    small_id = result_of(done)["run_id"]
    runs = tmp_path / ".loops" / "runs"
    big_id = small_id[:-6] + "ffffff"
    (runs / big_id).mkdir()
    state = json.loads((runs / small_id / "state.json").read_text())
    (runs / big_id / "state.json").write_text(json.dumps({**state, "run_id": big_id}))
    line = json.dumps(
        {"ts": "2026-01-01T00:00:00.000Z", "event": "action_complete", "run_id": big_id,
         "depth": 0, "step": 1, "state": "a", "exit_code": 0, "output": "x" * 2000}
    )  # fmt: skip
    with (runs / big_id / "events.jsonl").open("w") as log:
        for _ in range(20_000):  # 40 MB of events
            log.write(line + "\n")
    for flags in ([], ["--json"]):
        small = _peak_rss_kib(tmp_path, "history", small_id, *flags)
        big = _peak_rss_kib(tmp_path, "history", big_id, *flags)
        assert big - small < 10 * 1024, (flags, small, big)  # < 10 MB more for 40 MB of log
    listed = ll_loop(tmp_path, "history", big_id, "--json")
    assert len(json.loads(listed.stdout)["events"]) == 20_000
