"""ll-harness refuses what it cannot measure before the first sample: numbers that make no sense,
a judge without credentials; and it runs `ll-loop` as itself, never a project's `engine/`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness_helpers import harness
from tests.loopback_server import LoopbackServer, verdict_reply
from tests.runs_helpers import write

LL_HARNESS = str(Path(sys.executable).with_name("ll-harness"))
NO_CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE")


def ll_harness(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, run in `cwd` without any Anthropic credentials."""
    env = {k: v for k, v in os.environ.items() if k not in NO_CREDENTIALS}
    return subprocess.run(
        [LL_HARNESS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_loop_runs_our_ll_loop_even_beside_a_project_engine_package(tmp_path: Path) -> None:
    decoy = tmp_path / "engine" / "cli"
    decoy.mkdir(parents=True)
    (tmp_path / "engine" / "__init__.py").write_text("")
    (decoy / "__init__.py").write_text(
        "def main():\n    open('decoy-ran', 'w').write('x')\n    print('{}')\n"
    )
    write(
        tmp_path / "ok.yaml",
        """
        name: ok
        initial: a
        scope: [out]
        states:
          a: {action: "true", next: done}
          done: {terminal: true}
        """,
    )
    done = ll_harness(tmp_path, "loop", "ok.yaml", "--exit-code", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout
    assert not (tmp_path / "decoy-ran").exists()


@pytest.mark.parametrize(
    "flags",
    [
        ["--exit-code", "0", "--timeout", "inf"],
        ["--exit-code", "0", "--timeout", "nan"],
        ["--exit-code", "0", "--timeout", "-1"],
        ["--exit-code", "256"],
        ["--exit-code", "-1"],
    ],
)
def test_numbers_that_cannot_mean_anything_are_usage_errors(
    tmp_path: Path, flags: list[str]
) -> None:
    done = ll_harness(tmp_path, "cmd", "touch ran", *flags)
    assert done.returncode == 2
    assert "Invalid value" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "ran").exists()  # refused before the first sample


def test_timeout_zero_still_means_no_limit(tmp_path: Path) -> None:
    done = ll_harness(tmp_path, "cmd", "true", "--exit-code", "0", "--timeout", "0")
    assert done.returncode == 0, done.stderr


def test_semantic_without_credentials_is_refused_before_the_subject_runs(tmp_path: Path) -> None:
    done = ll_harness(tmp_path, "cmd", "touch ran; echo hello", "--semantic", "says hello")
    assert done.returncode == 2
    assert "no credentials are set" in done.stderr and "ANTHROPIC_API_KEY" in done.stderr
    assert not (tmp_path / "ran").exists()
    database = tmp_path / ".loops" / "history.db"
    if database.exists():  # nothing recorded: no ERROR row for a sample that never ran
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT count(*) FROM harness_attempts").fetchone()[0] == 0


def test_dsl_semantic_without_credentials_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "task.yaml", "prompt: say hello\n")
    done = ll_harness(tmp_path, "dsl", "task.yaml", "--runner", "cmd:cat", "--semantic", "hi")
    assert done.returncode == 2
    assert "no credentials are set" in done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("prompt", "say hi", "--exit-code", "0"), "no credentials are set"),
        (("dsl", "task.yaml"), "no credentials are set"),
    ],
)
def test_a_prompt_runner_without_credentials_is_refused_before_any_sample(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    """The prompt and dsl subjects ran every sample without credentials and recorded each as an
    infra error: `unexpected TypeError: "Could not resolve authentication method..."`, once per
    task, exit 2 only at the end."""
    write(tmp_path / "task.yaml", "prompt: say hello\nexpected: {answer: hello}\n")
    done = ll_harness(tmp_path, *args)
    assert done.returncode == 2, done
    assert said in done.stderr and "TypeError" not in done.stderr + done.stdout
    database = tmp_path / ".loops" / "history.db"
    if database.exists():  # nothing ran, nothing recorded
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT count(*) FROM harness_attempts").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("args", "said", "hint"),
    [
        (
            ("prompt", "hi", "--runner", "cmd:no-such-agent -p", "--exit-code", "0"),
            "runner 'cmd:no-such-agent -p': 'no-such-agent' is not an executable on PATH",
            "install the agent CLI, or pass another --runner",
        ),
        (
            ("dsl", "task.yaml", "--runner", "cmd:no-such-agent"),
            "runner 'cmd:no-such-agent': 'no-such-agent' is not an executable on PATH",
            "install the agent CLI, or pass another --runner",
        ),
        (
            ("prompt", "hi", "--runner", "anthropc", "--exit-code", "0"),
            "unknown prompt runner 'anthropc'",
            "pass --runner anthropic or --runner 'cmd:<agent command>'",
        ),
        (
            ("skill", "check", "--host", "no-such-agent -p", "--exit-code", "0"),
            "the host agent CLI 'no-such-agent' is not an executable on PATH",
            "install it, or name another with --host '<agent CLI>' (or LL_HOST_CLI)",
        ),
    ],
)
def test_an_agent_cli_that_is_not_installed_is_refused_before_any_sample(
    tmp_path: Path, args: tuple[str, ...], said: str, hint: str
) -> None:
    """A `cmd:` runner not on PATH was bash's exit 127, recorded as the prompt's FAIL; a
    misspelt runner and a missing skill host were recorded as one infra error per sample."""
    write(tmp_path / "task.yaml", "prompt: say hello\nexpected: {answer: hello}\n")
    write(tmp_path / ".claude" / "skills" / "check" / "SKILL.md", "Check.\n")
    done = ll_harness(tmp_path, *args)
    assert done.returncode == 2, done
    assert f"error: {said}" in done.stderr and f"hint: {hint}" in done.stderr, done.stderr
    assert done.stdout == ""
    database = tmp_path / ".loops" / "history.db"
    if database.exists():  # nothing ran, nothing recorded
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT count(*) FROM harness_attempts").fetchone()[0] == 0


def test_a_loop_whose_llm_states_cannot_run_is_refused_before_any_sample(tmp_path: Path) -> None:
    """Every sample's `ll-loop run` refused it, each recorded as an infra error (three for a
    loop with LLM states), and the message offered `--replay`, which ll-harness has not."""
    write(
        tmp_path / "judged.yaml",
        """
        name: judged
        initial: a
        scope: [out]
        states:
          a:
            action: echo hi
            evaluate: {type: llm_structured, prompt: "Said hi? Quote it verbatim."}
            on_yes: done
            on_no: done
          done: {terminal: true}
        """,
    )
    done = ll_harness(tmp_path, "loop", "judged.yaml", "--exit-code", "0")
    assert done.returncode == 2, done
    assert done.stderr.startswith(
        "error: state 'a' calls the Anthropic API but no credentials are set: set "
        "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)\n"
    ), done.stderr
    database = tmp_path / ".loops" / "history.db"
    if database.exists():
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT count(*) FROM harness_attempts").fetchone()[0] == 0


def test_an_alias_bomb_in_a_task_file_is_refused_by_the_yaml_reader(tmp_path: Path) -> None:
    rows = ["expected:", '  a: &a ["x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefg", "bcdefgh", strict=True):
        rows.append(f"  {name}: &{name} [{','.join(['*' + prev] * 9)}]")
    rows.append("prompt: *h")
    (tmp_path / "bomb.yaml").write_text("\n".join(rows) + "\n")
    assert len((tmp_path / "bomb.yaml").read_bytes()) < 600
    done = subprocess.run(
        [LL_HARNESS, "dsl", "bomb.yaml", "--runner", "cmd:cat"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limit_memory,  # the point: it must fit in 1 GB
    )
    assert done.returncode == 2, done.stderr
    assert "aliases expand this document beyond a sane size" in done.stderr
    assert "bomb.yaml:" in done.stderr and "MemoryError" not in done.stderr


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("criterion", ["", "   "])
def test_an_empty_semantic_criterion_is_refused(
    tmp_path: Path, loopback: LoopbackServer, criterion: str
) -> None:
    """A blank --semantic is a gate that asks nothing: with credentials and a judge saying yes,
    it passed every sample. It is refused, as no gate at all is."""
    loopback.default = verdict_reply("yes", evidence="hi")
    done = harness(tmp_path, "cmd", "echo hi", "--semantic", criterion)
    assert done.returncode == 2, done
    assert "--semantic is empty" in done.stderr
    tasks = tmp_path / "t.yaml"
    tasks.write_text("prompt: hi\n")
    done = harness(tmp_path, "dsl", "t.yaml", "--semantic", criterion, "--runner", "cmd:echo hi")
    assert done.returncode == 2 and "--semantic is empty" in done.stderr, done
    assert not loopback.requests


PARAMETERISED = """
name: counted
initial: count
scope: ["."]
parameters:
  n: {type: integer, required: true}
states:
  count:
    action: "echo ${param.n} >> samples.log"
    next: done
  done: {terminal: true}
"""


@pytest.mark.parametrize(
    ("context", "why"),
    [
        (["--context", "m=1"], "declares no parameter 'm'"),
        (["--context", "n=x"], "must be an integer"),
        ([], "requires parameter 'n'"),
    ],
)
def test_a_loop_subject_with_unusable_context_is_refused_before_any_sample(
    tmp_path: Path, context: list[str], why: str
) -> None:
    """Every sample's `ll-loop run` would refuse it: refused once, nothing run or recorded
    (it ran N refused runs and recorded N error rows)."""
    write(tmp_path / "counted.yaml", PARAMETERISED)
    done = ll_harness(
        tmp_path, "loop", "counted.yaml", "--exit-code", "0", "--samples", "3", *context
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert why in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "samples.log").exists()
    assert not (tmp_path / ".loops" / "history.db").exists()
    ok = ll_harness(
        tmp_path, "loop", "counted.yaml", "--exit-code", "0", "--samples", "2", "--context", "n=3"
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert (tmp_path / "samples.log").read_text() == "3\n3\n"


@pytest.mark.parametrize(
    ("runner", "said"),
    [("bogus", "unknown prompt runner 'bogus'"), ("cmd:", "names no command"),
     ("cmd:  ", "names no command")],
)  # fmt: skip
def test_a_prompt_runner_that_is_no_runner_is_refused_before_any_sample(
    tmp_path: Path, runner: str, said: str
) -> None:
    """`--runner bogus` ran three samples, each an error; `--runner cmd:` ran `bash -c ''`
    three times and reported PASS for a prompt nobody answered."""
    done = ll_harness(tmp_path, "prompt", "say hi", "--runner", runner, "--exit-code", "0")
    assert done.returncode == 2, done
    assert said in done.stderr
    database = tmp_path / ".loops" / "history.db"
    if database.exists():
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT count(*) FROM harness_attempts").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("prompt", "hi \udcff", "--runner", "cmd:cat"), "PROMPT is not valid UTF-8 text"),
        (("cmd", "echo \udcff"), "COMMAND is not valid UTF-8 text"),
        (("cmd", "true", "--semantic", "ok \udcff"), "--semantic is not valid UTF-8 text"),
    ],
)
def test_an_argument_that_is_not_utf8_is_refused(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    """Command-line bytes that are not UTF-8 (`$'hi \\xff'`) died as `internal error:
    UnicodeEncodeError` when the subject was hashed; `--output json` printed no object."""
    done = ll_harness(tmp_path, *args, "--exit-code", "0", "--output", "json")
    assert done.returncode == 2, done
    assert said in done.stderr and "internal error" not in done.stderr
    assert json.loads(done.stdout)["error"] == said


def test_a_history_target_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    done = ll_harness(tmp_path, "history", "x \udcff")
    assert done.returncode == 2 and "TARGET is not valid UTF-8 text" in done.stderr, done
    assert "internal error" not in done.stderr


@pytest.mark.parametrize("flag", ["--model", "--semantic"])
def test_a_dsl_option_that_is_not_utf8_is_refused(tmp_path: Path, flag: str) -> None:
    """`--model $'m\\xff'` died with an internal error; `--semantic` with such bytes was
    judged (or not) without a word."""
    write(tmp_path / "task.yaml", "prompt: say hello\nexpected: {answer: hello}\n")
    done = ll_harness(tmp_path, "dsl", "task.yaml", "--runner", "cmd:cat", flag, "m \udcff")
    assert done.returncode == 2 and f"{flag} is not valid UTF-8 text" in done.stderr, done


THREE_ERRORS = """\
name: three
initial: a
max_steps: 0
states:
  a:
    action: true
    next: b
  b: {terminal: maybe}
"""


def test_a_loop_subject_that_does_not_load_shows_every_diagnostic(tmp_path: Path) -> None:
    """`ll-harness loop` let the LoadError reach the CLI's guard, which showed the first of
    three errors (without its hint): fixing the loop took three tries. Every diagnostic is
    shown now, each at its file:line:col, as `ll-loop run` and `validate` show them."""
    (tmp_path / "three.yaml").write_text(THREE_ERRORS)
    done = harness(tmp_path, "loop", "three.yaml", "--exit-code", "0")
    assert done.code == 2
    lines = done.stderr.strip().splitlines()
    where = tmp_path / "three.yaml"
    assert [line.split(" ", 2)[:2] for line in lines if not line.startswith(" ")] == [
        [f"{where}:3:12:", "error"],
        [f"{where}:6:13:", "error"],
        [f"{where}:8:17:", "error"],
    ]
    assert '    hint: quote the word if you meant text, e.g. "yes"' in lines


@pytest.mark.parametrize(
    ("runner", "text"), [("cmd", ""), ("cmd", "  \n "), ("prompt", ""), ("prompt", "   ")]
)
def test_an_empty_subject_is_refused_not_measured(tmp_path: Path, runner: str, text: str) -> None:
    """`ll-harness cmd ""` ran `bash -c ""`, passed, and recorded the attempt under an empty
    target, where `cmd "  "` and `prompt ""` pooled with it: an empty subject is refused as an
    empty --semantic criterion is, before anything runs or is recorded."""
    extra = ["--runner", "cmd:cat"] if runner == "prompt" else []
    done = ll_harness(tmp_path, runner, text, "--exit-code", "0", *extra)
    assert done.returncode == 2
    what = "command" if runner == "cmd" else "prompt"
    assert done.stderr.startswith(f"error: the {what} is empty: there is nothing to measure")
    history = tmp_path / ".loops" / "history.db"
    if history.exists():
        with sqlite3.connect(history) as db:
            assert db.execute("SELECT count(*) FROM harness_attempts").fetchone() == (0,)
