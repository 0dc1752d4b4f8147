"""An exploring reviewer's workspace tools under attack: what a model (or a prompt injection in
the files it reads) may ask of read_file, glob and grep must end in an answer the model sees,
never a hang, a blown memory or the whole review's error. Real files, the real SDK, the
loopback server."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine.judges import JudgeResult, run_judge
from engine.judges.explore import MAX_MATCHES, Refused, Workspace, glob_matcher
from tests.judges_helpers import judges_of, llm_env
from tests.loopback_server import (
    LoopbackServer,
    Reply,
    text_reply,
    tool_reply,
    tool_results,
    tool_use_reply,
)

REPO = Path(__file__).resolve().parent.parent
REVIEW = """\
type: assessment
expectations:
  - type: llm_review
    criteria: Is the change right?
    reviewers: 1
    explore: true
"""
RECORD: dict[str, Any] = {"stdout": "done\n", "stderr": "", "exit_code": 0, "files": {}}
SCORES = {"correctness": 4, "completeness": 4, "code_quality": 4, "edge_cases": 4, "reason": "ok"}


def explorer(*turns: tuple[str, dict[str, Any]]) -> Any:
    """A reviewer making one tool call per turn (in order), then summarising, then scoring."""

    def answer(request: dict[str, Any]) -> Reply:
        if request.get("tool_choice", {}).get("type") == "tool":
            return tool_reply(SCORES)(request)  # type: ignore[operator, no-any-return]
        done = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if done < len(turns):
            return tool_use_reply(turns[done])(request)  # type: ignore[operator, no-any-return]
        return text_reply("I have seen enough.")(request)  # type: ignore[operator, no-any-return]

    return answer


def review(workspace: Path) -> JudgeResult:
    [judge] = judges_of(REVIEW)
    return run_judge(judge, RECORD, llm_env(workspace))


def answers(loopback: LoopbackServer) -> list[dict[str, Any]]:
    """Every tool result the reviewer was given, in order."""
    return [r for received in loopback.requests for r in tool_results(received.body)]


def test_grep_and_glob_pass_over_a_fifo_instead_of_blocking_on_it(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    (tmp_path / "app.py").write_text("needle = 1\n")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    loopback.default = explorer(("grep", {"pattern": "needle"}), ("glob", {"pattern": "*"}))
    done: list[JudgeResult] = []
    worker = threading.Thread(target=lambda: done.append(review(tmp_path)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    if worker.is_alive():  # blocked reading the FIFO: give it an end of file, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=10)
        pytest.fail("the reviewer's grep blocked on a FIFO in the workspace")
    assert done[0].status == "ok", done[0].error
    grep, glob = (a["content"] for a in answers(loopback))
    assert grep == "app.py:1: needle = 1"
    assert glob == "app.py"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_file", {"path": "app.py", "offset": "abc"}),
        ("read_file", {"path": "app.py", "limit": "all"}),
        ("read_file", {"path": "app\x00.py"}),
        ("grep", {"pattern": "x", "path": "app\x00.py"}),
    ],
)
def test_a_malformed_tool_call_is_a_tool_error_the_model_sees(
    loopback: LoopbackServer, tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    (tmp_path / "app.py").write_text("needle = 1\n")
    loopback.default = explorer((tool, arguments))
    result = review(tmp_path)
    assert result.status == "ok", result.error
    [answer] = answers(loopback)
    assert answer["is_error"] is True
    assert answer["content"].startswith(f"refused: the {tool} arguments are not valid")
    assert result.cost_usd > 0


# Reads two lines of a 3 GiB file and sizes a 3 GiB binary one in a process that may map 1 GiB.
BOUNDED_READ = """
import resource, sys
from pathlib import Path
from engine.judges.explore import Workspace
resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))
workspace = Workspace(Path(sys.argv[1]))
print(workspace.read_file("big.log", 5, 2))
print(workspace.read_file("blob.bin"))
"""


def test_read_file_of_a_huge_file_holds_only_what_it_answers(tmp_path: Path) -> None:
    huge = 3 * 2**30  # sparse: no disk is used
    with (tmp_path / "big.log").open("wb") as log:
        log.write(b"".join(b"line %d\n" % n for n in range(2000)))  # text past the 8 KiB sniff
        log.truncate(huge)
    with (tmp_path / "blob.bin").open("wb") as blob:
        blob.truncate(huge)
    done = subprocess.run(
        [sys.executable, "-c", BOUNDED_READ, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout == (
        "    6  line 5\n    7  line 6\n(blob.bin is a binary file of 3,221,225,472 bytes)\n"
    )


def test_glob_negates_a_class_only_with_a_leading_bang(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    for name in ("!.txt", "a.txt", "b.txt"):
        (tmp_path / name).write_text("x\n")
    loopback.default = explorer(
        ("glob", {"pattern": "[a!].txt"}), ("glob", {"pattern": "[!a].txt"})
    )
    assert review(tmp_path).status == "ok"
    assert [a["content"] for a in answers(loopback)] == ["!.txt\na.txt", "!.txt\nb.txt"]


def test_a_reviewer_cannot_read_inside_git_or_loops(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """`.git/config` may carry a token in a remote URL: it never reaches the model."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("url = https://user:SECRET@example.com/r.git\n")
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "note.txt").write_text("SECRET\n")
    loopback.default = explorer(
        ("read_file", {"path": ".git/config"}),
        ("read_file", {"path": "sub/../.loops/note.txt"}),
    )
    assert review(tmp_path).status == "ok"
    given = [a["content"] for a in answers(loopback)]
    assert len(given) == 2 and not any("SECRET" in g for g in given)
    assert "inside .git/" in given[0] and "inside .loops/" in given[1]


def test_a_backtracking_grep_pattern_ends_in_its_time_limit_without_freezing_the_run(
    tmp_path: Path,
) -> None:
    """`(a+)+$` over a line of 40 a's backtracks for days. It ends at the limit with what was
    found and a hint, and the run's other threads (its stop, other cases) keep running."""
    (tmp_path / "a.txt").write_text("first (a+) hit\n")
    (tmp_path / "b.txt").write_text("a" * 40 + "!\n")
    ticks: list[float] = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.monotonic())
            done.wait(0.01)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    started = time.monotonic()
    answer = Workspace(tmp_path, grep_seconds=1.0).grep(r"(a+)+$|\(a\+\)")
    ended = time.monotonic()
    done.set()
    ticker.join()
    assert 1.0 <= ended - started < 5.0
    first, note = answer.splitlines()
    assert first == "a.txt:1: first (a+) hit"
    assert note.startswith("[... the search stopped after 1 s: the pattern backtracks")
    # The other thread ran all along: `re` holding the GIL while it backtracks let it tick once
    # or twice in the whole search. Unloaded it ticks ~95 times (every 10 ms); at least 50 were
    # asked for, which a loaded machine (CI's three workers on two cores) starved to 50-70 and,
    # under more load, to 21 and 38: ten is still five times what a held GIL allows.
    during = sum(started < t < ended for t in ticks)
    assert during >= 10, f"the other thread ticked {during} times in {ended - started:.1f} s"


def test_grep_answers_and_limits_as_before(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("x = 1\n" * (MAX_MATCHES + 5))
    (tmp_path / "blob.bin").write_bytes(b"x = 1\0")
    (tmp_path / "notes.md").write_text("x = 1 é\n")
    workspace = Workspace(tmp_path)
    lines = workspace.grep("x = 1").splitlines()
    assert lines[0] == "notes.md:1: x = 1 é"  # the binary file is passed over
    assert lines[1:3] == ["src/m.py:1: x = 1", "src/m.py:2: x = 1"]
    assert len(lines) == MAX_MATCHES + 1 and lines[-1] == "[... more matches not shown ...]"
    assert workspace.grep("x", "src", "*.md") == "no line matches 'x'"
    assert workspace.grep("x", ".", "**/*.md") == "notes.md:1: x = 1 é"
    with pytest.raises(Refused, match="is not a regular expression"):
        workspace.grep("(")


@pytest.mark.parametrize(
    ("pattern", "path", "matched"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("src/**", "src/a/b.py", True),
        ("src/**/b.py", "src/b.py", True),
        ("a/**/b/**/c", "a/x/b/y/z/c", True),
        ("a/**/b", "a/c", False),
        ("[a!]x", "!x", True),
        ("[!a]x", "ax", False),
        ("?", "ab", False),
        ("[z-a]", "z", False),
        ("./*.md", "notes.md", True),
    ],
)
def test_glob_names(pattern: str, path: str, matched: bool) -> None:
    assert glob_matcher(pattern)(path) is matched


def test_globs_that_made_a_regex_backtrack_match_at_once() -> None:
    """As one regex, ten `**/` took 48 s per path and sixteen `*` half a second."""
    started = time.monotonic()
    assert not glob_matcher("**/" * 10 + "x")("a/" * 30 + "y")
    assert glob_matcher("**/" * 10 + "x")("a/" * 30 + "x")
    assert not glob_matcher("*" * 16 + "x")("a" * 60 + "y")
    assert time.monotonic() - started < 0.5
