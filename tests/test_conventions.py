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


def test_pre_commit_hook_runs_validate() -> None:
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "ll-loop-validate" and hook["entry"] == "ll-loop validate"
    assert re.search(hook["files"], ".loops/fix.yaml") and not re.search(hook["files"], "a.yaml")


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
