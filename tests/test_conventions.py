"""What users of any Python CLI expect: --version, completion, examples in --help, NO_COLOR,
a pre-commit hook, SARIF that code scanning can track, a schema modeline in every loop file."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

import engine
from engine.load.codes import LOAD_CODES
from engine.load.modeline import schema_of
from engine.load.resources import builtin_loops_dir, schema_path
from tests.cli import BIN, ll_harness, ll_loop

REPO = Path(__file__).resolve().parent.parent
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-9]m")  # a foreground colour escape


@pytest.mark.parametrize(("program", "call"), [("ll-loop", ll_loop), ("ll-harness", ll_harness)])
def test_version(tmp_path: Path, program: str, call: object) -> None:
    ran = call(tmp_path, "--version")  # type: ignore[operator]
    assert (ran.code, ran.stdout) == (0, f"{program} {engine.__version__}\n")


def test_completion_completes_commands_and_options(tmp_path: Path) -> None:
    def complete(words: str, index: int) -> list[str]:
        env = {"COMP_WORDS": words, "COMP_CWORD": str(index), "_LL_LOOP_COMPLETE": "complete_bash"}
        done = subprocess.run(
            [str(BIN / "ll-loop")], env={**os.environ, **env}, capture_output=True, text=True
        )
        return done.stdout.split()

    assert complete("ll-loop va", 1) == ["validate"]
    assert complete("ll-loop run --max", 2) == ["--max-steps"]
    # `--show-completion` prints the script of the shell it runs under (a word after it is
    # ignored): from bash itself, not whatever shell started pytest (under `sh` it printed
    # nothing and said "Shell sh not supported").
    script = subprocess.run(
        ["bash", "-c", f"{shlex.quote(str(BIN / 'll-loop'))} --show-completion; exit $?"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert "_LL_LOOP_COMPLETE=complete_bash" in script.stdout, script.stderr


def test_help_shows_an_example(tmp_path: Path) -> None:
    shown = ll_loop(tmp_path, "run", "--help").stdout
    assert "ll-loop run fix-until-green-demo" in shown
    assert "ll-harness cmd 'pytest -q'" in ll_harness(tmp_path, "cmd", "--help").stdout


@pytest.mark.parametrize(
    ("call", "command", "summary"),
    [
        (ll_loop, "validate", "schema and every lint rule; report where and how to fix."),
        (ll_harness, "suite", "every judge on each case's outputs, the per-judge aggregates"),
    ],
)
def test_command_list_keeps_each_summary_one_paragraph(
    tmp_path: Path, call: object, command: str, summary: str
) -> None:
    """A docstring's first paragraph spans two source lines; the list shows it as one."""
    shown = call(tmp_path, "--help", env={"COLUMNS": "400"}).stdout  # type: ignore[operator]
    row = next(line for line in shown.splitlines() if f" {command} " in line)
    assert summary in row


def test_no_color_turns_every_colour_off(tmp_path: Path) -> None:
    """rich (help) colours a forced terminal; NO_COLOR wins over it."""
    forced = {"FORCE_COLOR": "1", "TERM": "xterm-256color"}
    loud = ll_loop(tmp_path, "--help", env=forced, process=True)
    assert COLOUR.search(loud.stdout)
    quiet = ll_loop(tmp_path, "--help", env={**forced, "NO_COLOR": "1"}, process=True)
    assert not COLOUR.search(quiet.stdout)


def test_our_colour_needs_a_terminal_and_no_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.cli.style import paint

    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert paint("✔", "green", Terminal()) == "\x1b[32m✔\x1b[0m"  # type: ignore[arg-type]
    monkeypatch.setenv("NO_COLOR", "1")
    assert paint("✔", "green", Terminal()) == "✔"  # type: ignore[arg-type]


def _on_a_terminal(cwd: Path, argv: list[str], env: dict[str, str]) -> bytes:
    """What `argv` writes to stderr when stderr is a terminal (a pty)."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower,
        env={**os.environ, **env},
    )  # fmt: skip
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    process.wait(timeout=60)
    return seen


@pytest.mark.parametrize("program", ["ll-loop", "ll-harness"])
def test_a_dumb_terminal_gets_plain_lines_not_a_live_line(tmp_path: Path, program: str) -> None:
    """TERM=dumb (an Emacs shell buffer, some CI consoles) cannot erase a line: the live
    progress line was drawn there with `\\r\\x1b[K` all the same (colour already honoured
    TERM=dumb), so its escape codes showed as text. It gets the plain lines of a pipe now."""
    (tmp_path / "steps.yaml").write_text(STEPS.replace("sleep 0.05", "true"))
    (tmp_path / "cases" / "one").mkdir(parents=True)
    (tmp_path / "cases" / "one" / "input.yaml").write_text("text: hi\n")
    (tmp_path / "s.suite.yaml").write_text(
        "name: s\ndataset: cases\nsubject: {command: 'echo hi'}\n"
        "judges:\n  - {name: exits, builtin: exit_code}\n"
    )
    args = ["run", "steps.yaml"] if program == "ll-loop" else ["suite", "s.suite.yaml"]
    argv = [str(BIN / program), *args]
    live = _on_a_terminal(tmp_path, argv, {"TERM": "xterm"})
    assert b"\x1b[K" in live  # the live line, on a terminal that can erase
    dumb = _on_a_terminal(tmp_path, argv, {"TERM": "dumb"})
    assert b"\x1b[" not in dumb and dumb.strip(), dumb


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "NAME"],
        ["validate", "--format", "github", "NAME"],
        ["show", "--format", "json", "NAME"],
    ],
)
def test_a_file_name_that_is_not_utf8_prints_in_a_utf8_locale(
    tmp_path: Path, args: list[str]
) -> None:
    """In a UTF-8 locale (en_US.UTF-8: stdout's errors are strict) a loop file whose name is
    not UTF-8 made validate an internal error and `show --format json` a traceback (the error
    object could not be printed either): the name's byte is a lone surrogate in Python. The
    byte is shown as an escape (`\\udce9`), as stderr already shows it."""
    name = os.fsdecode(b"caf\xe9.yaml")
    (tmp_path / name).write_text("name: x\ninitial: a\nstates: {a: {terminal: maybe}}\n")
    argv = [str(BIN / "ll-loop"), *(name if a == "NAME" else a for a in args)]
    done = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )  # fmt: skip
    assert done.returncode in (1, 2), done.stderr
    assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr
    assert b"caf\\udce9.yaml" in done.stdout + done.stderr
    done.stdout.decode("utf-8")  # what it printed is UTF-8 text


def test_pre_commit_hook_runs_validate() -> None:
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "ll-loop-validate" and hook["entry"] == "ll-loop validate"
    assert re.search(hook["files"], ".loops/fix.yaml") and not re.search(hook["files"], "a.yaml")
    # not what ll-loop writes, nor the dsl task files scaffold-eval writes there (not loops)
    assert not re.search(hook["exclude"], ".loops/fix.yaml")
    for kept_out in ("suites/R/report.yaml", "dsl/feat-1/example-01.yaml", "evidence/F/b.yaml"):
        assert re.search(hook["exclude"], f".loops/{kept_out}"), kept_out


def test_sarif_names_its_version_and_every_rule_in_one_order(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("name: [\n")
    (tmp_path / "ok.yaml").write_text("name: ok\ninitial: a\nstates: {a: {terminal: true}}\n")
    logs = [
        json.loads(ll_loop(tmp_path, "validate", "--format", "sarif", f).stdout)
        for f in ("bad.yaml", "ok.yaml")
    ]
    drivers = [log["runs"][0]["tool"]["driver"] for log in logs]
    assert drivers[0]["version"] == engine.__version__
    assert drivers[0]["rules"] == drivers[1]["rules"]  # same ids, same indices, every run
    ids = [rule["id"] for rule in drivers[0]["rules"]]
    assert len(ids) == len(set(ids)) and {"LL001", "F001", "F012", "USAGE"} <= set(ids)
    [result] = logs[0]["runs"][0]["results"]
    assert ids[result["ruleIndex"]] == result["ruleId"] == "F001"


def test_every_load_code_is_registered_and_documented() -> None:
    used = set()
    for path in (REPO / "engine" / "load").glob("*.py"):
        used |= set(re.findall(r'"(F\d{3})"', path.read_text()))
    registered = {c.code for c in LOAD_CODES}
    assert used <= registered, f"unregistered codes (engine/load/codes.py): {used - registered}"
    table = (REPO / "docs" / "format.md").read_text().split("## Diagnostics", 1)[1]
    documented = set(re.findall(r"^\| (F\d{3}) \|", table, re.M))
    assert documented == registered


def test_every_builtin_loop_has_a_modeline_that_resolves() -> None:
    for path in sorted(builtin_loops_dir().glob("*.yaml")):
        target = schema_of(path.read_text())
        assert target is not None, f"{path.name} has no modeline"
        assert (path.parent / target).resolve() == schema_path().resolve(), path.name


def test_installed_and_scaffolded_loops_point_at_the_project_schema(tmp_path: Path) -> None:
    assert ll_loop(tmp_path, "install", "fix-until-clean").code == 0
    installed = tmp_path / ".loops" / "fix-until-clean.yaml"
    target = installed.parent / str(schema_of(installed.read_text()))
    assert target.read_text() == schema_path().read_text()
    assert ll_loop(tmp_path, "validate", str(installed)).code == 0


def test_schema_out_writes_the_file(tmp_path: Path) -> None:
    done = ll_loop(tmp_path, "schema", "--out", "loop.schema.json")
    assert done.code == 0 and done.stdout == ""
    assert json.loads((tmp_path / "loop.schema.json").read_text())["$id"].endswith(
        "loop.schema.json"
    )
    refused = ll_loop(tmp_path, "schema", "--out", str(tmp_path))
    assert refused.code == 2 and "is a directory" in refused.stderr


STEPS = """\
name: steps
initial: tick
scope: ["."]
max_steps: 12
states:
  tick:
    action: "sleep 0.05"
    on_yes: $current
    on_no: done
  done: {terminal: true}
"""


def test_a_reader_that_leaves_the_pipe_does_not_end_a_run(tmp_path: Path) -> None:
    """`ll-loop run LOOP 2>&1 | head -2`: the run went on only until its next line, then was
    left interrupted with exit 1 (a failure, by our exit codes). It runs to its end now and
    exits with its own code; what nobody reads is dropped."""
    (tmp_path / "steps.yaml").write_text(STEPS)
    process = subprocess.Popen(
        [str(BIN / "ll-loop"), "run", "steps.yaml"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None
    process.stdout.readline()  # the run's first line: it has started
    process.stdout.close()  # the reader leaves, as head does
    assert process.wait(timeout=60) == 3  # max_steps: inconclusive, as without the pipe
    assert "inconclusive (max_steps)" in ll_loop(tmp_path, "history").stdout
    [run] = (tmp_path / ".loops" / "runs").iterdir()
    assert json.loads((run / "state.json").read_text())["steps"] == 12


def test_a_closed_stderr_neither_crashes_nor_spills_into_stdout(tmp_path: Path) -> None:
    """`ll-loop run LOOP --json 2>&-` (a cron line, a daemon's child): with no stderr, Python
    has no sys.stderr, and the progress line's isatty() was an internal error printed on
    stdout ahead of the result object (print(file=None) writes to stdout); exit 1. The closed
    descriptor is now /dev/null and the run reports as with a stderr nobody reads."""
    (tmp_path / "steps.yaml").write_text(STEPS.replace("sleep 0.05", "true"))
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" run steps.yaml --json 2>&-', str(BIN / "ll-loop")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stdout
    result = json.loads(done.stdout)  # the one object, nothing before it
    assert (result["outcome"], result["steps"]) == ("inconclusive", 12)


@pytest.mark.parametrize("closed", ["<&-", ">&-", ">&- 2>&-"])
def test_a_closed_standard_descriptor_keeps_the_commands_exit_code(
    tmp_path: Path, closed: str
) -> None:
    """`ll-loop run LOOP >&-`: the run ran, then flushing the absent sys.stdout on the way out
    was a traceback and exit 1 (a failure, by our exit codes). A file the command opens never
    takes the closed descriptor's number either (a later write to fd 1 or 2 would land in it)."""
    (tmp_path / "steps.yaml").write_text(STEPS.replace("sleep 0.05", "true"))
    for program, args in (("ll-loop", "run steps.yaml"), ("ll-harness", "cmd true --exit-code 0")):
        done = subprocess.run(
            ["sh", "-c", f'exec "$0" {args} {closed}', str(BIN / program)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == (3 if program == "ll-loop" else 0), done.stderr
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    [run] = (tmp_path / ".loops" / "runs").iterdir()
    events = (run / "events.jsonl").read_text().splitlines()
    assert all(json.loads(line)["run_id"] == run.name for line in events)


def test_a_stderr_that_cannot_be_written_does_not_end_the_run(tmp_path: Path) -> None:
    """`ll-loop run LOOP --json 2>log` with the log's disk full: the first progress line's
    ENOSPC ended the run at step 0 (left interrupted), exit 1, and no result object. stderr
    carries progress and diagnostics: what cannot be written there is dropped, the run goes
    to its end."""
    (tmp_path / "steps.yaml").write_text(STEPS.replace("sleep 0.05", "true"))
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(BIN / "ll-loop"), "run", "steps.yaml", "--json"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=full,
            text=True,
            timeout=60,
        )
    assert done.returncode == 3
    result = json.loads(done.stdout)
    assert (result["outcome"], result["steps"]) == ("inconclusive", 12)


@pytest.mark.parametrize(
    "args", [["validate", "--verbose", "steps.yaml"], ["run", "steps.yaml", "--json"]]
)
def test_a_result_that_cannot_be_written_to_stdout_is_said_and_fails(
    tmp_path: Path, args: list[str]
) -> None:
    """`ll-loop validate -v LOOP >file` on a full disk exited 0 with the report lost (the last
    flush's ENOSPC was ignored); `run` said "continue an interrupted run with ll-loop resume"
    of a run that had finished. Both now say the output was lost, exit 2, and the run stays
    finished."""
    (tmp_path / "steps.yaml").write_text(STEPS.replace("sleep 0.05", "true"))
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(BIN / "ll-loop"), *args],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    said = done.stderr.strip().splitlines()
    assert said[-2] == "error: could not write the output to stdout: No space left on device"
    assert "resume" not in done.stderr and "internal error" not in done.stderr
    if args[0] == "run":
        listed = ll_loop(tmp_path, "history", "--json").json["runs"]
        assert [(r["outcome"], r["steps"]) for r in listed] == [("inconclusive", 12)]


def test_a_harness_result_nobody_reads_keeps_its_exit_code(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [str(BIN / "ll-harness"), "cmd", "echo hi", "--exit-code", "0", "--samples", "2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # nobody reads the report
    assert process.wait(timeout=60) == 0
    assert process.stderr.read() == b""


def test_ctrl_c_says_interrupted(tmp_path: Path) -> None:
    """Ctrl-C during a long command exited 130 with nothing said: typer turns the
    KeyboardInterrupt into that exit code before our handler would have said so."""
    states = "".join(f"  s{i}:\n    action: 'true'\n    on_yes: s{i + 1}\n" for i in range(20_000))
    head = "name: huge\ninitial: s0\nmax_steps: 30000\nstates:\n"
    (tmp_path / "huge.yaml").write_text(head + states + "  s20000: {terminal: true}\n")
    process = subprocess.Popen(
        [str(BIN / "ll-loop"), "validate", "huge.yaml"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    ticks = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until it has started on the file (start-up is ~0.3 s)
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        if (int(fields[11]) + int(fields[12])) / ticks >= 0.8:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (130, "interrupted\n")


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (ll_loop, ("scaffold-eval", "--issues", "NOPE-1", "--json")),
        (ll_loop, ("status", "nope", "--json")),
        (ll_loop, ("explain", "nope", "--format", "json")),
        (ll_loop, ("show", "no-such-loop", "--format", "json")),
        (ll_loop, ("list", "--json", "--no-such-option")),
        (ll_harness, ("cmd", "true", "--output", "json", "--samples", "x")),
        (ll_harness, ("suite", "s.suite.yaml", "--output=json", "--jobs", "x")),
    ],
)
def test_an_error_asked_for_as_json_is_a_json_object_on_stdout(
    tmp_path: Path, call: object, args: tuple[str, ...]
) -> None:
    """These printed nothing on stdout (the sentence went to stderr only): a script reading
    the JSON it asked for got an empty string."""
    ran = call(tmp_path, *args)  # type: ignore[operator]
    assert ran.code == 2
    payload = json.loads(ran.stdout)
    assert payload["exit_code"] == 2 and payload["error"]
    assert "error" in ran.stderr.lower() or "invalid" in ran.stderr.lower()


CTRL_C_ON_IMPORT = """\
import builtins, importlib, os, signal

_real, _real_module = builtins.__import__, importlib.import_module


def _ctrl_c(name):
    if name == os.environ.get("CTRL_C_AT"):
        del os.environ["CTRL_C_AT"]
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, while Python loads that module


def _importing(name, *args, **kwargs):
    _ctrl_c(name)
    return _real(name, *args, **kwargs)


def _import_module(name, *args, **kwargs):
    _ctrl_c(name)
    return _real_module(name, *args, **kwargs)


builtins.__import__ = _importing
importlib.import_module = _import_module
"""


@pytest.mark.parametrize(
    ("program", "module"),
    [("ll-loop", "typer"), ("ll-harness", "typer"), ("ll-loop", "engine.cli.run_cmd")],
)
def test_ctrl_c_while_the_command_starts_says_interrupted(
    tmp_path: Path, program: str, module: str
) -> None:
    """Ctrl-C in the first ~0.1 s, while Python imports the command line (typer, the command's
    module), printed a KeyboardInterrupt traceback: our guard had not started yet. It says
    `interrupted` and exits 130, as a Ctrl-C later does."""
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(CTRL_C_ON_IMPORT)
    (tmp_path / "steps.yaml").write_text(STEPS)
    args = ["run", "steps.yaml"] if program == "ll-loop" else ["cmd", "true", "--exit-code", "0"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "hook"), "CTRL_C_AT": module}
    done = subprocess.run(
        [str(BIN / program), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (130, "interrupted\n")
    assert not (tmp_path / ".loops" / "runs").exists()  # nothing started
