"""Every number read from an `LL_*` environment variable is checked before a run or a suite
starts, as a file's or a flag's is: one sentence naming the variable, its value and what it takes,
exit 2, nothing run (DESIGN §13 "every number is checked")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import ll_harness, ll_loop

REPO = Path(__file__).parent.parent
PLAIN = """name: plain
initial: a
max_steps: 3
scope: ["."]
states:
  a:
    action: "echo ran > ran.txt"
    next: done
  done:
    terminal: true
"""
JUDGED = """name: judged
initial: build
max_steps: 3
scope: ["."]
states:
  build:
    action: "echo ran > ran.txt"
    evaluate:
      type: llm_structured
      prompt: "Did it run? Quote the line that shows it."
    on_yes: done
    on_no: done
    on_error: done
  done: {terminal: true}
"""
BAD = ["nan", "-1", "inf", "abc"]


def _project(tmp_path: Path, text: str) -> Path:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "loop.yaml").write_text(text)
    return tmp_path


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("name", ["LL_CHECK_MEMORY_BYTES", "LL_HISTORY_BUSY_TIMEOUT"])
def test_a_bad_number_refuses_a_run_before_its_first_step(
    tmp_path: Path, name: str, value: str
) -> None:
    project = _project(tmp_path, PLAIN)
    done = ll_loop(project, "run", "loop", "--json", env={name: value})
    assert done.code == 2, done
    assert f"{name}={value!r} is not" in done.json["error"], done.json
    assert f"{name}={value!r} is not" in done.stderr
    assert done.json["steps"] == 0
    assert not (project / "ran.txt").exists()


@pytest.mark.parametrize("value", ["1_000", "\u0665", "1e3"])
@pytest.mark.parametrize("name", ["LL_CHECK_MEMORY_BYTES", "LL_HISTORY_BUSY_TIMEOUT"])
def test_a_number_python_reads_but_a_person_would_not_write_is_refused_by_every_setting(
    tmp_path: Path, name: str, value: str
) -> None:
    """The busy timeout read its value with float(), which takes `1_000`, the Arabic-Indic
    digit five and `1e3`, while the size settings refuse them: one rule, plain ASCII digits."""
    project = _project(tmp_path, PLAIN)
    done = ll_loop(project, "run", "loop", "--json", env={name: value})
    assert done.code == 2, done
    assert f"{name}={value!r} is not" in done.json["error"], done.json
    assert not (project / "ran.txt").exists()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LL_MAX_OUTPUT_BYTES", "9" * 5000),  # was ValueError: Exceeds the limit (4300 digits)
        ("LL_CHECK_MEMORY_BYTES", "9" * 5000),
        ("LL_HISTORY_BUSY_TIMEOUT", "1e308"),  # was OverflowError (seconds to milliseconds)
        ("LL_HISTORY_BUSY_TIMEOUT", "3000000"),  # over SQLite's int ms: it waited not at all
    ],
)
def test_a_number_too_large_is_refused_not_a_crash(tmp_path: Path, name: str, value: str) -> None:
    """A size of 5000 digits made every run an internal error (int() refuses more than 4300
    digits), a busy timeout of 1e308 s too (its milliseconds overflow); one above 2147483 s
    (SQLite's busy timeout is an int of milliseconds) was taken and made the history wait
    0 s, the opposite of what was asked. Each is refused in its one sentence."""
    project = _project(tmp_path, PLAIN)
    done = ll_loop(project, "run", "loop", "--json", env={name: value})
    assert done.code == 2 and "internal error" not in done.stderr, done
    assert f"{name}={value!r} is not" in done.json["error"], done.json
    assert not (project / "ran.txt").exists()


@pytest.mark.parametrize("value", BAD)
def test_a_bad_rate_limit_refuses_a_run_that_calls_a_model(tmp_path: Path, value: str) -> None:
    project = _project(tmp_path, JUDGED)
    env = {"LL_LLM_RPM": value, "ANTHROPIC_API_KEY": "sk-test-unused"}
    done = ll_loop(project, "run", "loop", "--json", env=env)
    assert done.code == 2, done
    assert f"LL_LLM_RPM={value!r} is not a number of requests per minute" in done.json["error"]
    assert not (project / "ran.txt").exists()


@pytest.mark.parametrize("name", ["LL_LLM_TIMEOUT", "LL_LLM_MAX_WAIT"])
def test_a_model_time_setting_past_a_year_is_refused_as_a_loop_files_is(
    tmp_path: Path, name: str
) -> None:
    """`llm.timeout: 1e10` in a loop file is a load error (at most 31536000 s, 365 days), but
    LL_LLM_TIMEOUT=1e10 passed the preflight and every call of the run then failed
    ('OverflowError: timestamp out of range for platform time_t'), each judge an error verdict.
    The environment's seconds take the file's bound: refused before the first step."""
    project = _project(tmp_path, JUDGED)
    env = {name: "1e10", "ANTHROPIC_API_KEY": "sk-test-unused"}
    done = ll_loop(project, "run", "loop", "--json", env=env)
    assert done.code == 2, done
    assert f"{name}='1e10' is not a number of seconds" in done.json["error"], done.json
    assert "31536000" in done.json["error"], done.json
    assert not (project / "ran.txt").exists()


@pytest.mark.parametrize("value", BAD)
def test_a_bad_check_memory_limit_refuses_a_suite(tmp_path: Path, value: str) -> None:
    suite = REPO / "examples" / "suites" / "wordcount" / "wordcount.suite.yaml"
    done = ll_harness(tmp_path, "suite", str(suite), "--json", env={"LL_CHECK_MEMORY_BYTES": value})
    assert done.code == 2, done
    assert f"LL_CHECK_MEMORY_BYTES={value!r} is not a size in bytes" in done.stderr
