"""docs/guide.md is executed: every command of its ```console blocks runs, in order, in one fresh
directory, and prints what the guide shows (stdout and stderr as a terminal interleaves them).

Before the commands run, each ```yaml block that starts with `name: NAME` is saved as
`.loops/NAME.yaml`, as the guide tells its reader to. Run ids, times and dates differ on every
run and are normalised on both sides; an expected line `...` stands for any number of lines.
`ll-loop` commands run in this process (tests/cli.py); anything else (`rm`, `cat`) runs in bash.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli import run_cli

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"

_VOLATILE = [
    (re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}"), "<RUN>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"), "<DATE>"),
    (re.compile(r"\(\d+(\.\d+)?s\)"), "(<TIME>)"),
    (re.compile(r'"duration_ms": \d+'), '"duration_ms": <MS>'),
]


@dataclass(frozen=True)
class Command:
    line: int  # where it is in the guide
    text: str
    expected: tuple[str, ...]


def console_commands(markdown: str) -> list[Command]:
    """Every `$ command` of every ```console block, with the lines shown after it."""
    commands: list[Command] = []
    inside = False
    current: tuple[int, str] | None = None
    shown: list[str] = []
    for number, line in enumerate(markdown.splitlines(), 1):
        if line.startswith("```"):
            if inside and current is not None:
                commands.append(Command(current[0], current[1], tuple(shown)))
                current = None
            inside = line.strip() == "```console"
            continue
        if not inside:
            continue
        if line.startswith("$ "):
            if current is not None:
                commands.append(Command(current[0], current[1], tuple(shown)))
            current, shown = (number, line[2:]), []
        else:
            shown.append(line)
    return commands


def loop_files(markdown: str) -> dict[str, str]:
    """The guide's loops: ```yaml blocks that start with `name: NAME`."""
    blocks = re.findall(r"```yaml\n(name: ([\w-]+)\n.*?)```", markdown, re.S)
    return {name: text for text, name in blocks}


def normalise(text: str) -> list[str]:
    for pattern, stand_in in _VOLATILE:
        text = pattern.sub(stand_in, text)
    return [line.rstrip() for line in text.rstrip("\n").splitlines()]


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line; an expected `...` line matches any run of lines (none included)."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def run(command: str, cwd: Path) -> str:
    words = shlex.split(command, comments=True)
    if words[0] == "ll-loop":
        return run_cli("ll-loop", cwd, words[1:], merged=True).stdout
    done = subprocess.run(
        ["bash", "-c", shlex.join(words)], cwd=cwd, capture_output=True, text=True, check=False
    )
    return done.stdout + done.stderr


def test_the_guide_has_commands_to_run() -> None:
    commands = console_commands(GUIDE.read_text(encoding="utf-8"))
    assert len(commands) >= 8
    assert {"count-to-three", "greet"} <= set(loop_files(GUIDE.read_text(encoding="utf-8")))


def test_every_command_of_the_guide_prints_what_the_guide_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    text = GUIDE.read_text(encoding="utf-8")
    (tmp_path / ".loops").mkdir()
    for name, body in loop_files(text).items():
        (tmp_path / ".loops" / f"{name}.yaml").write_text(body)
    for command in console_commands(text):
        actual = normalise(run(command.text, tmp_path))
        expected = normalise("\n".join(command.expected))
        assert matches(expected, actual), (
            f"docs/guide.md:{command.line}: `{command.text}` printed\n"
            + "\n".join(actual)
            + "\n-- but the guide shows --\n"
            + "\n".join(expected)
        )


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        (["a", "...", "d"], ["a", "b", "c", "d"], True),
        (["a", "...", "d"], ["a", "d"], True),
        (["a", "...", "d"], ["a", "b"], False),
        (["a"], ["a", "b"], False),
    ],
)
def test_the_ellipsis_matches_lines_left_out(
    expected: list[str], actual: list[str], ok: bool
) -> None:
    assert matches(expected, actual) is ok
