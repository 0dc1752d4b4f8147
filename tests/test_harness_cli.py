"""The `ll-harness` command line: refusals, the text and JSON reports, and `history`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from tests import cli
from tests.harness_helpers import calls, counter_command, flaky_command, harness, harness_json


def test_no_gate_refuses_with_exit_2(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    done = harness(tmp_path, "cmd", f"touch {marker}")
    assert done.returncode == 2
    assert "nothing is measured" in done.stderr and "hint:" in done.stderr
    assert done.stdout == "" and not marker.exists()


def test_a_refusal_is_still_one_json_object(tmp_path: Path) -> None:
    code, data = harness_json(tmp_path, "cmd", "true")
    assert code == 2
    assert data["refused"] is True and data["result"] == "ERROR"
    assert data["error"].startswith("nothing is measured")


def test_text_report_rows(tmp_path: Path) -> None:
    done = harness(tmp_path, "cmd", "echo hi", "--exit-code", "0")
    assert done.returncode == 0
    assert done.stdout.splitlines()[:4] == [
        "ll-harness cmd: echo hi",
        "Exit      0 (expected 0: ok)",
        "Semantic  [not checked]",
        "Result    PASS  1/1 passed; pass rate 1/1 [0.21, 1.00] (95% CI)",
    ]


def test_flaky_command_through_the_cli_is_inconclusive(tmp_path: Path) -> None:
    command = flaky_command(tmp_path / "count", failing_call=2)
    done = harness(tmp_path, "cmd", command, "--exit-code", "0", "--samples", "3")
    assert done.returncode == 3
    assert "Sample 2/3: fail" in done.stdout
    assert "Result    INCONCLUSIVE  2/3 passed, 1 failed" in done.stdout


def test_a_timeout_is_reported_with_a_retry_hint(tmp_path: Path) -> None:
    done = harness(tmp_path, "cmd", "sleep 30", "--exit-code", "0", "--timeout", "0.5")
    assert done.returncode == 2
    assert "Exit      [timed out after 0.5s]" in done.stdout
    assert "Result    ERROR  0/1 passed, 1 errored" in done.stdout
    assert "Timeouts  attempt 1: rerun with --retry-of ID to replace one" in done.stdout
    retried = harness(
        tmp_path, "cmd", "sleep 30", "--exit-code", "0", "--timeout", "0.5", "--retry-of", "1"
    )
    assert retried.returncode == 2
    # one sample, said in the singular (it read "the result counts the 1 samples of ...")
    assert "Retry     supersedes attempt 1; the result counts the 1 sample of invocation" in (
        retried.stdout
    )
    two = harness(tmp_path, "cmd", "sleep 31", "--exit-code", "0", "--timeout", "0.2",
                  "--samples", "2")  # fmt: skip
    assert "Timeouts  attempts 3, 4: rerun with --retry-of ID to replace one" in two.stdout


def test_json_report_fields(tmp_path: Path) -> None:
    code, data = harness_json(tmp_path, "cmd", "echo out; echo err >&2", "--exit-code", "0")
    assert code == 0
    assert data["result"] == "PASS" and data["exit_code"] == 0
    assert data["stdout"] == "out\n" and data["stderr"] == "err\n"
    assert data["semantic_checked"] is False
    assert data["samples"][0]["attempt_id"] >= 1
    assert data["history_pass_rate"] is None  # fewer than 3 prior rows


def test_history_rates_fold_into_the_json_report(tmp_path: Path) -> None:
    for _ in range(3):
        harness(tmp_path, "cmd", "true", "--exit-code", "0")
    _, data = harness_json(tmp_path, "cmd", "true", "--exit-code", "0")
    assert data["history_pass_rate"]["k"] == 3 and data["history_pass_rate"]["n"] == 3
    assert data["history_abstention_rate"]["k"] == 0


def test_history_reader(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    command = counter_command(counter, "if [ $n -eq 1 ]; then sleep 30; fi; [ $n -ne 3 ]")
    _, first = harness_json(tmp_path, "cmd", command, "--exit-code", "0", "--timeout", "0.5")
    timed_out = first["samples"][0]["attempt_id"]
    harness(tmp_path, "cmd", command, "--exit-code", "0", "--timeout", "0.5",
            "--retry-of", str(timed_out))  # fmt: skip
    for _ in range(2):  # call 3 fails, call 4 passes
        harness(tmp_path, "cmd", command, "--exit-code", "0", "--timeout", "0.5")

    done = harness(tmp_path, "history", command, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["rows"], data["authoritative"], data["superseded"]) == (4, 3, 1)
    assert data["tally"] == {"pass": 2, "fail": 1, "abstain": 0, "error": 0}
    assert (data["pass_rate"]["k"], data["pass_rate"]["n"]) == (2, 3)
    assert data["admissions"] == {"timeout": 1}
    assert data["last"][-1]["timed_out"] is True

    text = harness(tmp_path, "history", command).stdout
    assert "4 rows, 3 authoritative, 1 superseded by a retry" in text
    assert "pass rate     2/3 [0.21, 0.94] (95% CI)" in text
    assert "abstention    0/3 [0.00, 0.56] (95% CI)" in text
    assert "timed-out superseded-by=" in text

    later = json.loads(
        harness(tmp_path, "history", command, "--json", "--since", "2999-01-01").stdout
    )
    assert later["rows"] == 0 and later["pass_rate"]["rate"] is None


def test_a_passing_retry_reports_its_whole_measurement_not_one_pass(tmp_path: Path) -> None:
    # Calls 1 and 3 fail, call 2 times out, the retry (call 4) passes: the measurement is 1/3
    # passed and 2 failed, INCONCLUSIVE, never the retry's own "PASS 1/1" with exit 0.
    counter = tmp_path / "count"
    command = counter_command(counter, "if [ $n -eq 2 ]; then sleep 30; fi; [ $n -ge 4 ]")
    flags = ("--exit-code", "0", "--timeout", "0.5")
    code, first = harness_json(tmp_path, "cmd", command, *flags, "--samples", "3")
    assert code == 1 and first["tally"] == {"pass": 0, "fail": 2, "abstain": 0, "error": 1}
    timed_out = first["samples"][1]["attempt_id"]

    done = harness(tmp_path, "cmd", command, *flags, "--retry-of", str(timed_out))
    assert done.returncode == 3, done.stdout
    assert "Result    INCONCLUSIVE  1/3 passed, 2 failed" in done.stdout
    assert f"samples of invocation {first['invocation_id']} with this one" in done.stdout


def test_a_retry_json_counts_every_sample_of_its_measurement(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    command = counter_command(counter, "if [ $n -le 2 ]; then sleep 30; fi; true")
    flags = ("--exit-code", "0", "--timeout", "0.5")
    _, first = harness_json(tmp_path, "cmd", command, *flags, "--samples", "3")
    one, two = (s["attempt_id"] for s in first["samples"][:2])

    code, data = harness_json(tmp_path, "cmd", command, *flags, "--retry-of", str(one))
    assert (code, data["result"]) == (3, "INCONCLUSIVE")  # sample 2 still timed out
    assert data["tally"] == {"pass": 2, "fail": 0, "abstain": 0, "error": 1}
    assert data["measurement_invocation"] == first["invocation_id"]

    code, data = harness_json(tmp_path, "cmd", command, *flags, "--retry-of", str(two))
    assert (code, data["result"]) == (0, "PASS")  # both retries in place: 3/3
    assert data["tally"] == {"pass": 3, "fail": 0, "abstain": 0, "error": 0}
    assert data["samples_run"] == 1 and data["samples_requested"] == 3


def _commit(root: Path, message: str) -> None:
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", message]):
        if args[0] == "init" and (root / ".git").exists():
            continue
        subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True
        )


def test_a_baseline_is_measured_again_at_a_new_commit_and_compared_as_named(
    tmp_path: Path,
) -> None:
    """A command's content is its text: `--measure-baseline` reused the rows of `grep -q ok f`
    measured before f changed (PASS, exit 0, nothing run), and `--baseline-of` the new
    measurement pooled the old commit's rows into it (baseline 2/4, not the 0/2 it measured)."""
    (tmp_path / ".gitignore").write_text(".loops/\n")
    (tmp_path / "f").write_text("ok\n")
    _commit(tmp_path, "ok")
    flags = ("--exit-code", "0", "--samples", "2")
    code, before = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, "--measure-baseline")
    assert code == 0 and before["tally"]["pass"] == 2
    (tmp_path / "f").write_text("bad\n")
    _commit(tmp_path, "bad")

    code, after = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, "--measure-baseline")
    assert code == 1 and "baseline_reused" not in after, after  # measured, at this commit
    assert after["tally"] == {"pass": 0, "fail": 2, "abstain": 0, "error": 0}

    code, compared = harness_json(
        tmp_path, "cmd", "grep -q ok  f", *flags, "--compare-baseline", "--baseline-of",
        after["invocation_id"],
    )  # fmt: skip
    assert (compared["baseline"]["baseline"]["k"], compared["baseline"]["baseline"]["n"]) == (0, 2)
    assert compared["baseline"]["delta"] == 0.0
    code, older = harness_json(
        tmp_path, "cmd", "grep -q ok  f", *flags, "--compare-baseline", "--baseline-of",
        before["invocation_id"],
    )  # fmt: skip
    assert (older["baseline"]["baseline"]["k"], older["baseline"]["baseline"]["n"]) == (2, 2)
    assert older["baseline"]["measured_at_other_head"] is True


def test_the_same_command_is_compared_across_a_commit_and_an_edit(tmp_path: Path) -> None:
    """`make test` before a change against `make test` after it: the same text, other code.
    `--compare-baseline --baseline-of` refused it as 'the subject is unchanged' (exit 2), after
    a commit and after an uncommitted edit alike; a later candidate on the baseline's HEAD
    must not be pooled into the baseline either."""
    (tmp_path / ".loops").mkdir()  # this project's, not one in a folder above
    (tmp_path / ".gitignore").write_text(".loops/\n")
    (tmp_path / "f").write_text("ok\n")
    _commit(tmp_path, "ok")
    flags = ("--exit-code", "0", "--samples", "2")
    code, base = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, "--measure-baseline")
    assert code == 0
    compare = ("--compare-baseline", "--baseline-of", base["invocation_id"])
    unchanged = harness(tmp_path, "cmd", "grep -q ok f", *flags, *compare)
    assert unchanged.returncode == 2 and "unchanged" in unchanged.stderr

    (tmp_path / "f").write_text("bad\n")  # an uncommitted edit
    code, edited = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, *compare)
    assert code == 1 and edited["tally"]["fail"] == 2, edited
    assert edited["baseline"]["baseline"]["k"] == 2 and edited["baseline"]["delta"] == -1.0
    code, again = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, *compare)
    assert (again["baseline"]["baseline"]["k"], again["baseline"]["baseline"]["n"]) == (2, 2)

    _commit(tmp_path, "bad")
    code, committed = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, *compare)
    assert code == 1 and committed["baseline"]["measured_at_other_head"] is True
    assert (committed["baseline"]["baseline"]["k"], committed["baseline"]["baseline"]["n"]) == (
        2,
        2,
    )


def test_a_baseline_on_a_dirty_tree_is_reused_only_for_the_same_uncommitted_changes(
    tmp_path: Path,
) -> None:
    """`--measure-baseline` reused rows measured at this HEAD whatever was uncommitted: after
    `f` was edited to pass, it reported the FAIL measured before the edit (exit 1, nothing
    run). Rows are reused for the same edits only; `.loops/` (unignored here) is not an edit."""
    (tmp_path / "f").write_text("ok\n")
    _commit(tmp_path, "ok")
    flags = ("--exit-code", "0", "--samples", "2")
    (tmp_path / "f").write_text("bad\n")  # uncommitted
    code, bad = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, "--measure-baseline")
    assert code == 1 and bad["git_dirty"] is True and bad["git_worktree"]
    (tmp_path / "f").write_text("ok, edited\n")  # still uncommitted, other code
    code, edited = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, "--measure-baseline")
    assert code == 0 and "baseline_reused" not in edited, edited
    code, again = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, "--measure-baseline")
    assert code == 0 and {a["invocation_id"] for a in again["baseline_reused"]} == {
        edited["invocation_id"]
    }
    (tmp_path / "new.txt").write_text("an untracked file is an edit too\n")
    code, untracked = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, "--measure-baseline")
    assert code == 0 and "baseline_reused" not in untracked
    (tmp_path / "new.txt").unlink()
    subprocess.run(["git", "checkout", "-q", "f"], cwd=tmp_path, check=True)  # clean again
    code, clean = harness_json(tmp_path, "cmd", "grep -q ok f", *flags, "--measure-baseline")
    assert code == 0 and "baseline_reused" not in clean
    assert clean["git_dirty"] is False and clean["git_worktree"] is None  # .loops/ is no edit


def test_a_baseline_is_not_reused_when_git_cannot_tell_whether_the_tree_is_dirty(
    tmp_path: Path,
) -> None:
    """With `git status` failing (here a corrupt index) the tree's dirtiness was unknown, and
    unknown matched the clean rows: after `f` was edited to fail, `--measure-baseline` reused
    the PASS measured on the clean tree (exit 0, nothing run)."""
    (tmp_path / "f").write_text("ok\n")
    _commit(tmp_path, "ok")
    flags = ("--exit-code", "0", "--samples", "2", "--measure-baseline")
    code, clean = harness_json(tmp_path, "cmd", "grep -q ok f", *flags)
    assert code == 0 and clean["git_dirty"] is False
    (tmp_path / "f").write_text("bad\n")
    (tmp_path / ".git" / "index").write_bytes(b"not an index")
    code, unknown = harness_json(tmp_path, "cmd", "grep -q ok f", *flags)
    assert "baseline_reused" not in unknown and unknown["git_dirty"] is None
    assert code == 1


def test_a_retry_at_another_commit_is_refused(tmp_path: Path) -> None:
    """A command's content is its text, so a timed-out sample measured at one commit was
    replaced by a sample of other code, completing a measurement neither commit had."""
    (tmp_path / ".gitignore").write_text(".loops/\ncount\n")
    (tmp_path / "f").write_text("one\n")
    _commit(tmp_path, "one")
    counter = tmp_path / "count"
    command = counter_command(counter, "if [ $n -eq 1 ]; then sleep 30; fi; true")
    flags = ("--exit-code", "0", "--timeout", "0.5")
    _, first = harness_json(tmp_path, "cmd", command, *flags)
    [sample] = first["samples"]
    (tmp_path / "f").write_text("two\n")
    _commit(tmp_path, "two")
    done = harness(tmp_path, "cmd", command, *flags, "--retry-of", str(sample["attempt_id"]))
    assert done.returncode == 2 and done.stdout == ""
    assert "is at another commit than attempt" in done.stderr and "hint:" in done.stderr
    assert calls(counter) == 1  # refused before anything ran


def test_a_reused_baseline_names_the_invocation_that_measured_it(tmp_path: Path) -> None:
    """Rows reused from an ordinary run (not --measure-baseline) printed 'invocation None'."""
    harness(tmp_path, "cmd", "true", "--exit-code", "0")
    done = harness(tmp_path, "cmd", "true", "--exit-code", "0", "--measure-baseline")
    assert done.returncode == 0 and "invocation None" not in done.stdout, done.stdout
    [line] = [x for x in done.stdout.splitlines() if x.startswith("Baseline")]
    [hint] = [x for x in done.stdout.splitlines() if x.startswith("Next")]
    assert line.split("invocation ")[1] == hint.split("--baseline-of ")[1]


def test_history_of_a_mistyped_target_names_the_recorded_one(tmp_path: Path) -> None:
    """`history "make tst"` said only "no attempts recorded", as if nothing had been measured."""
    assert harness(tmp_path, "cmd", "echo make test", "--exit-code", "0").returncode == 0
    done = harness(tmp_path, "history", "echo make tst")
    assert done.returncode == 0
    assert done.stdout.splitlines()[1] == "  no attempts recorded (did you mean 'echo make test'?)"
    done = harness(tmp_path, "history", "echo make test", "--since", "2999-01-01")
    assert done.stdout.splitlines()[1] == "  no attempts recorded"  # known, just not since then


def test_history_refuses_bad_input(tmp_path: Path) -> None:
    missing = harness(tmp_path, "history", "true")
    assert missing.returncode == 2 and "no history database" in missing.stderr
    harness(tmp_path, "cmd", "true", "--exit-code", "0")
    bad = harness(tmp_path, "history", "true", "--since", "last tuesday")
    assert bad.returncode == 2 and "is not a date" in bad.stderr


def test_malformed_context_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "l.yaml").write_text("name: l\ninitial: d\nstates:\n  d:\n    terminal: true\n")
    done = harness(tmp_path, "loop", "l.yaml", "--exit-code", "0", "--context", "novalue")
    assert done.returncode == 2 and "is not K=V" in done.stderr


def test_unknown_option_is_one_clear_error(tmp_path: Path) -> None:
    done = harness(tmp_path, "cmd", "true", "--exit-cod", "0")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_a_history_database_damaged_inside_is_one_clear_error(tmp_path: Path) -> None:
    for _ in range(3):
        assert harness(tmp_path, "cmd", "echo 1", "--exit-code", "0").returncode == 0
    path = tmp_path / ".loops" / "history.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    [(root,)] = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'harness_attempts'")
    db.close()
    with path.open("r+b") as file:  # the header opens fine; the attempts' page is garbage
        file.seek((root - 1) * page_size + 8)
        file.write(b"\xde\xad" * 1000)
    for args in (("cmd", "echo 1", "--exit-code", "0"), ("history", "echo 1")):
        done = harness(tmp_path, *args)
        assert done.returncode == 2, done
        assert "internal error" not in done.stderr
        assert "history database" in done.stderr and "malformed" in done.stderr
        assert "if it is damaged, move it aside" in done.stderr
    code, data = harness_json(tmp_path, "cmd", "echo 1", "--exit-code", "0")
    assert (code, data["exit_code"]) == (2, 2) and "malformed" in data["error"]


def test_an_attempt_id_past_sqlite_integers_is_no_such_attempt(tmp_path: Path) -> None:
    huge = str(1 << 70)
    assert harness(tmp_path, "cmd", "true", "--exit-code", "0").returncode == 0
    for flags in (("--retry-of", huge), ("--compare-baseline", "--baseline-of", huge)):
        done = harness(tmp_path, "cmd", "true", "--exit-code", "0", *flags)
        assert done.returncode == 2, done
        assert "internal error" not in done.stderr
        assert f"{huge}: no such attempt" in done.stderr


def test_too_many_samples_are_refused_before_any_sample_runs(tmp_path: Path) -> None:
    counter = tmp_path / "calls"
    for samples in (str(1 << 70), "10001"):
        done = harness(tmp_path, "cmd", counter_command(counter, "true"), "--exit-code", "0",
                       "--samples", samples)  # fmt: skip
        assert done.returncode == 2, done
        assert "internal error" not in done.stderr and "at most 10000" in done.stderr
    assert not counter.exists()  # refused before the first sample


def test_a_sample_ends_when_its_command_exits_not_when_a_background_job_does(
    tmp_path: Path,
) -> None:
    """`server & echo started` hands the background job its stdout; the sample is over when
    bash exits (as an action of `ll-loop run`), not graded as timed out when --timeout ends."""
    background = tmp_path / "background"
    command = f"sleep 60 & echo $! > {background}; echo started"
    started = time.monotonic()
    try:
        code, data = harness_json(tmp_path, "cmd", command, "--exit-code", "0", "--timeout", "20")
    finally:
        if background.exists():
            with contextlib.suppress(OSError):
                os.kill(int(background.read_text()), signal.SIGKILL)
    assert time.monotonic() - started < 10
    assert (code, data["result"]) == (0, "PASS"), data
    assert data["stdout"] == "started\n" and not data["samples"][0]["timed_out"]


def test_a_sample_printing_past_the_output_cap_is_ended_as_an_infra_error(
    tmp_path: Path,
) -> None:
    """What a sample prints is held in memory: past LL_MAX_OUTPUT_BYTES (both streams) its
    group is ended, as an action's is, instead of filling the memory until the timeout."""
    command = "head -c 1000000 /dev/zero | tr '\\0' y; echo more >&2; sleep 30"
    started = time.monotonic()
    done = cli.ll_harness(tmp_path, "cmd", command, "--exit-code", "0", "--timeout", "10",
                          "--output", "json", env={"LL_MAX_OUTPUT_BYTES": "64K"})  # fmt: skip
    assert time.monotonic() - started < 8
    assert done.returncode == 2, done
    [sample] = done.json["samples"]
    assert "passed the cap of 65536 bytes" in sample["infra_error"]
    assert len(sample["stdout"]) + len(sample["stderr"]) <= 65536
    assert (sample["outcome"], sample["timed_out"], sample["exit_code"]) == ("error", False, None)


def test_the_json_report_bounds_each_samples_streams_and_says_so(tmp_path: Path) -> None:
    """`--output json` copied each sample's stdout and stderr whole (and the first sample's
    twice): a 100 MB output made a report of 200 MB, held in memory. Each stream is now cut
    as a capture is (64 Ki characters: stdout its start, stderr its end), saying so."""
    command = "head -c 300000 /dev/zero | tr '\\0' y; head -c 200000 /dev/zero | tr '\\0' e >&2"
    done = cli.ll_harness(tmp_path, "cmd", command, "--exit-code", "0", "--samples", "2",
                          "--output", "json")  # fmt: skip
    assert done.returncode == 0, done
    for shown in (done.json, *done.json["samples"]):
        assert shown["stdout"].startswith("y" * 65536)
        assert shown["stdout"].endswith("\n[... 234,464 more characters not shown ...]")
        assert shown["stderr"].startswith("[... 134,464 earlier characters not shown ...]\n")
        assert shown["stderr"].endswith("e" * 65536)
    assert len(done.stdout) < 700_000


def test_history_since_compares_instants_whatever_the_spelling(tmp_path: Path) -> None:
    """Rows are stamped `...T03:57:32.123Z` (UTC); --since is read as an instant, not compared
    as typed: a space for the T, an offset, or the basic format `20261202` mean the same."""
    assert harness(tmp_path, "cmd", "true", "--exit-code", "0").returncode == 0
    now = datetime.now(UTC)
    hour = timedelta(hours=1)
    plus5, minus5 = timezone(timedelta(hours=5)), timezone(timedelta(hours=-5))
    cases = {
        (now + hour).strftime("%Y-%m-%d %H:%M"): 0,  # an hour from now, with a space
        (now - hour).strftime("%Y-%m-%d %H:%M"): 1,
        (now - hour).astimezone(plus5).isoformat(): 1,  # an hour ago, at +05:00
        (now + hour).astimezone(minus5).isoformat(): 0,
        (now - timedelta(days=1)).strftime("%Y%m%d"): 1,
    }
    for since, rows in cases.items():
        done = harness(tmp_path, "history", "true", "--json", "--since", since)
        assert done.returncode == 0, done
        assert (since, done.json["rows"]) == (since, rows)
    done = harness(tmp_path, "history", "true", "--since", "9999-12-31T23:00-05:00")
    assert done.returncode == 2 and "is not a date" in done.stderr, done


def test_a_timeout_too_far_for_the_clock_is_waited_for_as_no_limit(tmp_path: Path) -> None:
    """`--timeout 1e300` is a finite number of seconds, so it is accepted; the agent CLI's
    wait must not overflow Python's clock (an internal error on every sample)."""
    agent = "cmd:cat > /dev/null; echo ok"
    args = ("--exit-code", "0", "--timeout", "1e300", "--samples", "1")
    done = harness(tmp_path, "prompt", "hi", "--runner", agent, *args)
    assert done.returncode == 0, done
    assert "internal error" not in done.stdout + done.stderr


def test_history_html_into_a_directory_names_the_html_flag(tmp_path: Path) -> None:
    assert harness(tmp_path, "cmd", "true", "--exit-code", "0").returncode == 0
    done = harness(tmp_path, "history", "true", "--html", str(tmp_path))
    assert done.returncode == 2, done
    assert f"hint: --html names the file to write, e.g. --html {tmp_path / 'report.html'}" in (
        done.stderr
    )


def test_history_of_a_target_two_runners_share_says_so_and_filters(tmp_path: Path) -> None:
    """`cmd 'echo hi'` and `prompt 'echo hi'` are two subjects with one target text: the cmd
    report's history counts its own runner only, and `history --runner cmd` agrees with it."""
    for _ in range(3):
        assert harness(tmp_path, "cmd", "echo hi", "--exit-code", "0").returncode == 0
        failing = harness(tmp_path, "prompt", "echo hi", "--runner", "cmd:exit 1",
                          "--exit-code", "0", "--samples", "1")  # fmt: skip
        assert failing.returncode == 1, failing
    _, report = harness_json(tmp_path, "cmd", "echo hi", "--exit-code", "0")
    assert (report["history_pass_rate"]["k"], report["history_pass_rate"]["n"]) == (3, 3)
    pooled = harness(tmp_path, "history", "echo hi")
    assert "runners       cmd 4, prompt 3 rows: pooled; --runner R keeps one" in pooled.stdout
    own = harness(tmp_path, "history", "echo hi", "--runner", "cmd", "--json")
    assert own.returncode == 0, own
    assert (own.json["pass_rate"]["k"], own.json["pass_rate"]["n"]) == (4, 4)
    assert own.json["runners"] == {"cmd": 4}


def test_dsl_refuses_a_sample_count_below_one(tmp_path: Path) -> None:
    """`cmd --samples 0` is refused; `dsl --samples 0` (or -3) ran the batch as if it were 1."""
    (tmp_path / "t.yaml").write_text("prompt: hi\nblanks: [a]\nexpected: {a: 1}\n")
    answer = "cmd:cat > /dev/null; printf '{\"a\": 1}'"
    for samples in ("0", "-3"):
        done = harness(tmp_path, "dsl", "t.yaml", "--runner", answer, "--samples", samples)
        assert done.returncode == 2, done
        assert "--samples must be at least 1" in done.stderr
    assert harness(tmp_path, "dsl", "t.yaml", "--runner", answer, "--samples", "1").code == 0


def test_a_command_that_closes_its_output_is_still_bound_by_the_timeout(tmp_path: Path) -> None:
    """A sample ends at its process's exit, not its pipes' end: one that closes stdout and
    stderr and goes on running still overruns --timeout (and is not graded on its exit)."""
    started = time.monotonic()
    command = "exec >&- 2>&-; sleep 30"
    code, data = harness_json(tmp_path, "cmd", command, "--exit-code", "0", "--timeout", "2")
    assert time.monotonic() - started < 15
    assert (code, data["result"]) == (2, "ERROR"), data
    assert data["samples"][0]["timed_out"] is True


def test_dsl_counts_read_as_english(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("prompt: hi\nblanks: [a]\nexpected: {a: 1}\n")
    done = harness(tmp_path, "dsl", "t.yaml", "--runner", "cmd:exit 3")
    assert done.returncode == 2, done
    assert "graded 0 of 1 task — 1 infra error\n" in done.stdout


def test_an_agent_cli_is_bounded_like_a_command(tmp_path: Path) -> None:
    """`prompt --runner cmd:AGENT` runs the agent as a `cmd` subject is run: it is done when it
    exits, though a background job it started holds its stdout (it was graded as timed out),
    and past LL_MAX_OUTPUT_BYTES it is ended (`yes` grew the memory until the timeout)."""
    background = tmp_path / "background"
    agent = f"cmd:cat > /dev/null; sleep 60 & echo $! > {background}; echo the answer"
    started = time.monotonic()
    one = ("--exit-code", "0", "--samples", "1", "--timeout", "20")
    try:
        code, data = harness_json(tmp_path, "prompt", "hi", "--runner", agent, *one)
    finally:
        if background.exists():
            with contextlib.suppress(OSError):
                os.kill(int(background.read_text()), signal.SIGKILL)
    assert time.monotonic() - started < 10
    assert (code, data["stdout"]) == (0, "the answer\n"), data
    started = time.monotonic()
    done = cli.ll_harness(tmp_path, "prompt", "hi", "--runner", "cmd:cat > /dev/null; yes",
                          *one, "--output", "json", env={"LL_MAX_OUTPUT_BYTES": "64K"})  # fmt: skip
    assert time.monotonic() - started < 10
    [sample] = done.json["samples"]
    assert done.code == 2 and "passed the cap of 65536 bytes" in sample["infra_error"], sample


def test_a_measured_cmd_baseline_says_how_to_compare_with_it(tmp_path: Path) -> None:
    """A cmd baseline is found again only by --baseline-of, and the ids the run printed gave no
    hint which to pass; a second measurement of the same content reuses the rows and recorded
    nothing, so its own invocation id was not one --baseline-of could find."""
    measured = harness(tmp_path, "cmd", "true", "--exit-code", "0", "--measure-baseline")
    assert measured.returncode == 0, measured.stderr
    [hint] = [line for line in measured.stdout.splitlines() if line.startswith("Next")]
    invocation = hint.split("--baseline-of ")[1]
    code, again = harness_json(tmp_path, "cmd", "true", "--exit-code", "0", "--measure-baseline")
    assert code == 0 and again["baseline_reused"]
    assert again["baseline_invocation"] == invocation != again["invocation_id"]
    compared = harness(
        tmp_path, "cmd", "true ", "--exit-code", "0", "--compare-baseline", "--baseline-of",
        invocation,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    assert "Delta     +0.00" in compared.stdout


def test_history_and_each_measurement_count_a_busy_targets_rows_without_reading_them(
    tmp_path: Path,
) -> None:
    """A target measured in CI for months has hundreds of thousands of attempts: `history`
    and the prior-rates line of every `cmd` read them all (100,000 rows: 2.5 s and 300 MB
    each). They are counted in SQL now, and only the rows listed are read."""
    import tracemalloc

    harness(tmp_path, "cmd", "true", "--exit-code", "0", "--samples", "2")
    db = sqlite3.connect(tmp_path / ".loops" / "history.db")
    columns = [r[1] for r in db.execute("PRAGMA table_info(harness_attempts)") if r[1] != "id"]
    names = ", ".join(columns)
    for _ in range(13):  # 2 rows doubled 13 times: 16,384 rows of the target
        db.execute(f"INSERT INTO harness_attempts ({names}) SELECT {names} FROM harness_attempts")
    db.commit()
    db.close()
    tracemalloc.start()
    try:
        listed = harness(tmp_path, "history", "true", "--json", "--last", "3")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        _, measured = harness_json(tmp_path, "cmd", "true", "--exit-code", "0", "--samples", "1")
        _, peak_cmd = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    data = json.loads(listed.stdout)
    assert (data["rows"], data["authoritative"], data["tally"]["pass"]) == (16384,) * 3
    assert len(data["last"]) == 3
    assert measured["history_pass_rate"]["n"] == 16384
    # reading every row took ~45 MB here; counting them, under 1 MB
    assert peak < 5_000_000 and peak_cmd < 5_000_000, (peak, peak_cmd)


def test_a_baseline_reads_only_the_rows_of_its_code_and_conditions(tmp_path: Path) -> None:
    """`--measure-baseline` (and `--compare-baseline`) read every row of the subject's cell
    and kept those of this HEAD and these conditions: a command measured in CI at every commit
    has a row per sample per commit (100,000 rows: 4.8 s and 316 MB). They are filtered in SQL."""
    import tracemalloc

    _, first = harness_json(tmp_path, "cmd", "true", "--exit-code", "0", "--samples", "2")
    mine = [s["attempt_id"] for s in first["samples"]]
    db = sqlite3.connect(tmp_path / ".loops" / "history.db")
    columns = [r[1] for r in db.execute("PRAGMA table_info(harness_attempts)") if r[1] != "id"]
    names = ", ".join(columns)
    elsewhere = ", ".join("'c' || id" if c == "git_head" else c for c in columns)
    for _ in range(13):  # 16,382 rows of the same cell, measured at other commits
        db.execute(
            f"INSERT INTO harness_attempts ({names}) SELECT {elsewhere} FROM harness_attempts"
        )
    db.commit()
    db.close()
    args = ("cmd", "true", "--exit-code", "0", "--samples", "2", "--measure-baseline")
    harness_json(tmp_path, *args)  # the modules it imports
    tracemalloc.start()
    try:
        code, data = harness_json(tmp_path, *args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 0, data
    assert data["samples_run"] == 0  # this code's rows are reused, no other commit's
    assert sorted(r["id"] for r in data["baseline_reused"]) == sorted(mine)
    # reading the cell's every row took ~45 MB here; its rows of this code, under 1 MB
    assert peak < 5_000_000, peak


def test_the_history_page_charts_the_last_invocations_from_counts(tmp_path: Path) -> None:
    """`history --html` (and a loop's report) read every attempt of the target and drew a
    point for every invocation: 100,000 rows made a 20 MB page in 7 s and 394 MB. The chart
    shows the last invocations, counted in SQL, and says how many there are."""
    import tracemalloc

    shown = 200  # engine.harness.trends.CHART_POINTS
    harness(tmp_path, "cmd", "true", "--exit-code", "0", "--samples", "2")
    db = sqlite3.connect(tmp_path / ".loops" / "history.db")
    columns = [r[1] for r in db.execute("PRAGMA table_info(harness_attempts)") if r[1] != "id"]
    names = ", ".join(columns)
    apart = ", ".join("invocation_id || '-' || id" if c == "invocation_id" else c for c in columns)
    for _ in range(11):  # 4,096 rows, each copy an invocation of its own
        db.execute(f"INSERT INTO harness_attempts ({names}) SELECT {apart} FROM harness_attempts")
    db.commit()
    invocations = db.execute("SELECT COUNT(DISTINCT invocation_id) FROM harness_attempts")
    total = invocations.fetchone()[0]
    db.close()
    page = tmp_path / "history.html"
    harness(tmp_path, "history", "true", "--html", str(page))  # the modules it imports
    tracemalloc.start()
    try:
        done = harness(tmp_path, "history", "true", "--html", str(page))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert html.count('<g class="point"') == shown
    assert f"The last {shown} of {total} invocations" in html
    assert "pass rate 4096/4096" in html  # the rates still count every row
    # every row read and a point per invocation took ~15 MB here
    assert peak < 5_000_000, peak


def test_a_sample_whose_agent_reported_no_cost_says_so(tmp_path: Path) -> None:
    """A prompt through an agent CLI that reports no cost (plain text), or a loop whose agent
    did, gave a sample `cost_usd: 0.0` and nothing more: a spend of nothing, to a script. The
    sample now says `cost_known: false`; a sample whose cost is known has no such key."""
    (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('Done.')\n")
    agent = "cmd:python3 agent.py"
    code, data = harness_json(tmp_path, "prompt", "hi", "--runner", agent, "--exit-code", "0",
                              "--samples", "1")  # fmt: skip
    assert code == 0, data
    [sample] = data["samples"]
    assert (sample["cost_usd"], sample["cost_known"]) == (0.0, False), sample
    (tmp_path / "l.yaml").write_text(
        "name: l\ninitial: work\nscope: [out]\nstates:\n"
        f"  work: {{action: hi, action_type: prompt, runner: '{agent}', timeout: 30,"
        " next: done, on_error: failed}\n"
        "  done: {terminal: true}\n  failed: {terminal: true, failure: true}\n"
    )
    code, data = harness_json(tmp_path, "loop", "l.yaml", "--exit-code", "0", "--samples", "1")
    assert code == 0, data
    assert [s.get("cost_known") for s in data["samples"]] == [False], data["samples"]
    code, data = harness_json(tmp_path, "cmd", "true", "--exit-code", "0")
    assert code == 0 and all("cost_known" not in s for s in data["samples"]), data
