"""Every number from a file or a flag is checked: YAML 1.2 core numbers, finite only, and flags
that cannot mean anything are usage errors (never a crash, never a silent "no limit")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.load.loader import check_loop_text, load_loop_text
from tests.runs_helpers import ll_loop, result_of, write

LOOP = """
name: numbers
initial: a
scope: [out]
{top}
states:
  a:
    action: "echo ok"
    next: done
  done: {{terminal: true}}
"""


@pytest.mark.parametrize(
    ("top", "shown"),
    [
        ("timeout: .nan", ".nan"),
        ("timeout: .inf", ".inf"),
        ("default_timeout: .inf", ".inf"),
        ("default_timeout: -.Inf", "-.Inf"),
        ("timeout: 1e400", "1e400"),
        ("context: {limit: .NaN}", ".NaN"),
    ],
)
def test_non_finite_numbers_are_load_errors(tmp_path: Path, top: str, shown: str) -> None:
    path = write(tmp_path / "loop.yaml", LOOP.format(top=top))
    done = ll_loop(tmp_path, "validate", "loop.yaml", "--format", "json")
    assert done.returncode == 1
    (diagnostic,) = json.loads(done.stdout)["loops"][0]["diagnostics"]
    assert diagnostic["code"] == "F015" and diagnostic["line"] == 4
    assert diagnostic["message"].startswith(f"{shown} is not a finite number")
    ran = ll_loop(tmp_path, "run", str(path), "--json")
    assert ran.returncode == 2 and result_of(ran)["steps"] == 0


def test_yaml_numbers_follow_the_yaml_1_2_core_schema() -> None:
    loop = load_loop_text(LOOP.format(top="timeout: 1e3\nmax_steps: 0o17"))
    assert loop.timeout == 1000.0 and loop.max_steps == 15
    loop = load_loop_text(LOOP.format(top="context: {a: 017, b: 0x1F, c: .5, d: +12, e: 1.}"))
    assert dict(loop.context) == {"a": 17, "b": 31, "c": 0.5, "d": 12, "e": 1.0}
    words = "context: {a: 1_000, b: 0b101, c: 1:30, d: yes, e: 2024-01-01, f: ~}"
    loop = load_loop_text(LOOP.format(top=words))
    assert dict(loop.context) == {
        "a": "1_000", "b": "0b101", "c": "1:30", "d": "yes", "e": "2024-01-01", "f": None
    }  # fmt: skip
    _, _, problems = check_loop_text(LOOP.format(top="timeout: 1_000"))
    assert [(d.code, d.message) for d in problems] == [
        ("F011", "timeout must be a number, got string '1_000'")
    ]


def test_the_longest_timeout_runs_and_a_longer_one_is_refused_at_its_line(tmp_path: Path) -> None:
    """A year is the longest timeout: 1e308 seconds ended the run in an internal error (the
    action runner's wait became infinite milliseconds), so anything longer is refused at load
    (F015) rather than taken as "no limit" without a word."""
    write(tmp_path / "loop.yaml", LOOP.format(top="timeout: 31536000\ndefault_timeout: 31536000"))
    done = ll_loop(tmp_path, "run", "loop.yaml", "--json", "-q")
    assert result_of(done)["final_state"] == "done", done.stderr
    write(tmp_path / "loop.yaml", LOOP.format(top="timeout: 1e300\ndefault_timeout: 1e12"))
    done = ll_loop(tmp_path, "run", "loop.yaml", "--json", "-q")
    assert done.returncode == 2
    assert "loop.yaml:4:10: error F015 timeout must be at most 31536000" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "loop.yaml", "--queue-timeout", "nan"],
        ["run", "loop.yaml", "--queue-timeout", "inf"],
        ["run", "loop.yaml", "--queue-timeout", "-1"],
        ["stop", "20260101-000000-abcdef", "--wait", "nan"],
    ],
)
def test_flags_that_are_no_number_of_seconds_are_usage_errors(
    tmp_path: Path, args: list[str]
) -> None:
    write(tmp_path / "loop.yaml", LOOP.format(top=""))
    done = ll_loop(tmp_path, *args)
    assert done.returncode == 2
    assert "Invalid value" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / ".loops" / "runs").exists()


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_number_parameter_refuses_nan_and_infinity(tmp_path: Path, value: str) -> None:
    top = "parameters:\n  limit: {type: number, required: true}"
    write(tmp_path / "loop.yaml", LOOP.format(top=top))
    done = ll_loop(tmp_path, "run", "loop.yaml", "--context", f"limit={value}", "--json")
    assert done.returncode == 2
    assert "must be a number" in result_of(done)["error"]
