"""Shown output of other pages is executed too: a command a page shows with its output (a `$ `
line in a fenced block, then the lines it prints) runs in a fresh directory and must print
what the page shows, as tests/test_docs_guide.py does for the guide. Run ids, invocation ids,
times and dates are normalised on both sides; an expected `...` line (indented or not) stands
for any lines.

Only blocks that are cheap and deterministic are here: each test sets up what its page says
the command runs on (a loop the page shows, a shipped example, earlier measurements).
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.cli import ll_harness, ll_loop
from tests.test_docs_guide import matches

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"

_VOLATILE = [
    (re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}"), "<RUN>"),
    (re.compile(r"invocation [0-9a-f]{16}"), "invocation <ID>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"), "<DATE>"),
    (re.compile(r"\d+ cases, \d+(\.\d+)?s\)"), "<CASES>)"),
]


def shown(page: str, command: str) -> list[str]:
    """The lines a page shows after `$ command` (to the next `$ ` line or the block's end)."""
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    start = lines.index(f"$ {command}") + 1
    out: list[str] = []
    for line in lines[start:]:
        if line.startswith("```") or line.startswith("$ "):
            break
        out.append(line)
    return normalise("\n".join(out))


def normalise(text: str) -> list[str]:
    for pattern, stand_in in _VOLATILE:
        text = pattern.sub(stand_in, text)
    lines = [line.rstrip() for line in text.rstrip("\n").splitlines()]
    return ["..." if line.strip() == "..." else line for line in lines]  # also indented


def yaml_block_before(page: str, marker: str) -> str:
    """The last ```yaml block of a page before the line `marker`."""
    text = (DOCS / page).read_text(encoding="utf-8")
    head = text[: text.index(marker)]
    start = head.rindex("```yaml\n") + len("```yaml\n")
    return head[start : head.index("```", start)]


def run(cwd: Path, command: str) -> list[str]:
    program, *args = shlex.split(command)
    call = {"ll-loop": ll_loop, "ll-harness": ll_harness}[program]
    return normalise(call(cwd, *args).stdout)


def check(page: str, command: str, cwd: Path) -> None:
    expected, actual = shown(page, command), run(cwd, command)
    assert matches(expected, actual), (
        f"docs/{page}: `{command}` printed\n"
        + "\n".join(actual)
        + "\n-- but the page shows --\n"
        + "\n".join(expected)
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("LL_PRICES", "LL_MODEL", "LL_JUDGE_MODEL", "LL_PROMPT_RUNNER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / ".loops").mkdir()
    return tmp_path


def test_the_simulate_example_of_lint_rules(project: Path) -> None:
    command = "ll-loop simulate fix-until-green --scenario first-no"
    loop = yaml_block_before("lint-rules.md", f"$ {command}")
    (project / ".loops" / "fix-until-green.yaml").write_text(loop)
    check("lint-rules.md", command, project)


def test_the_cost_bound_example_of_llm(project: Path) -> None:
    check("llm.md", "ll-loop show fix-until-clean --cost", project)


def test_the_wordcount_suite_of_suites(project: Path) -> None:
    example = project / "examples" / "suites" / "wordcount"
    shutil.copytree(REPO / "examples" / "suites" / "wordcount", example)
    check("suites.md", "ll-harness suite examples/suites/wordcount/wordcount.suite.yaml", project)


def test_the_text_report_and_the_history_of_harness(project: Path) -> None:
    (project / "Makefile").write_text("test:\n\t@sh mode.sh\n")
    mode = project / "mode.sh"
    mode.write_text("exit 0\n")
    check("harness.md", 'll-harness cmd "make test" --exit-code 0', project)

    # the history the page shows: a timed-out attempt replaced by a passing retry, a fail, a pass
    (project / ".loops" / "history.db").unlink()
    gates = ("--exit-code", "0", "--timeout", "1")
    mode.write_text("sleep 5\n")
    assert ll_harness(project, "cmd", "make test", *gates).code == 2
    mode.write_text("exit 0\n")
    assert ll_harness(project, "cmd", "make test", *gates, "--retry-of", "1").code == 0
    mode.write_text("exit 1\n")
    assert ll_harness(project, "cmd", "make test", *gates).code == 1
    mode.write_text("exit 0\n")
    assert ll_harness(project, "cmd", "make test", *gates).code == 0
    check("harness.md", 'll-harness history "make test"', project)


def _yaml_blocks(page: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each ```yaml block of a page (not lint-rules.md's, which
    tests/test_lint_docs.py runs), dedented as a reader copies it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    at = 0
    while at < len(lines):
        fence = lines[at]
        if fence.strip() == "```yaml":
            indent = len(fence) - len(fence.lstrip())
            end = next(i for i in range(at + 1, len(lines)) if lines[i].strip() == "```")
            yield at + 2, "\n".join(line[indent:] for line in lines[at + 1 : end]) + "\n"
            at = end
        at += 1


_PAGES = [REPO / "README.md", *sorted(p for p in DOCS.glob("*.md") if p.name != "lint-rules.md")]
_NAMED = re.compile(r"\A# (\S+\.ya?ml)\n")  # a block that says which file it is


def _loop_blocks() -> Iterator[tuple[str, int, str]]:
    for page in _PAGES:
        for line, text in _yaml_blocks(page):
            data = yaml.safe_load(text) if "\n---" not in text else None
            if isinstance(data, dict) and "states" in data:
                yield page.name, line, text


@pytest.mark.parametrize(("page", "line", "text"), list(_loop_blocks()), ids=lambda v: str(v)[:20])
def test_every_whole_loop_a_page_shows_validates(
    page: str, line: int, text: str, project: Path
) -> None:
    """A loop a page shows whole (it has states:) loads and lints without an error, beside the
    files the same page shows by name (`# lib/checks.yaml`), as a reader would copy them."""
    source = REPO / page if page == "README.md" else DOCS / page
    for _, other in _yaml_blocks(source):
        named = _NAMED.match(other)
        if named and other != text:
            (project / named.group(1)).parent.mkdir(parents=True, exist_ok=True)
            (project / named.group(1)).write_text(other)
    named = _NAMED.match(text)
    path = project / (named.group(1) if named else "shown.yaml")
    path.write_text(text)
    ran = ll_loop(project, "validate", str(path.relative_to(project)))
    assert ran.code == 0, f"docs/{page}:{line}: the loop shown there does not validate:\n" + (
        ran.stdout + ran.stderr
    )
