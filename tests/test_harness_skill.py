"""`ll-harness skill NAME`: a skill run through a host agent CLI (a real process the test writes),
three samples by default, baselines resolved from the skill file at git HEAD."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness_helpers import harness, harness_json
from tests.loopback_server import LoopbackServer, verdict_reply

# A stand-in for `claude -p`: reads `/NAME ARGS` on stdin, "runs" the skill by reading its file,
# and fails when the skill says BROKEN. Every call is counted.
HOST = """\
import pathlib, sys
prompt = sys.stdin.read().strip()
name, _, args = prompt[1:].partition(" ")
calls = pathlib.Path("host-calls.txt")
calls.write_text(str(int(calls.read_text()) + 1 if calls.exists() else 1))
skill = pathlib.Path(".claude/skills") / name / "SKILL.md"
body = skill.read_text()
print(f"host ran /{name} with args {args!r}")
print(body.splitlines()[0])
sys.exit(1 if "BROKEN" in body else 0)
"""


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    skill = tmp_path / ".claude" / "skills" / "check-code" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("Run the linters and report.\n")
    (tmp_path / "host.py").write_text(HOST)
    return tmp_path


def host_flag() -> list[str]:
    return ["--host", f"{sys.executable} host.py"]


def test_a_skill_is_stochastic_and_every_sample_runs_through_the_host(project: Path) -> None:
    code, data = harness_json(project, "skill", "check-code", "src/ --fast", *host_flag(),
                              "--exit-code", "0")  # fmt: skip
    assert code == 0, data
    assert (data["runner"], data["target"], data["result"]) == ("skill", "check-code", "PASS")
    assert data["samples_requested"] == 3 and data["samples_run"] == 3
    assert (project / "host-calls.txt").read_text() == "3"  # all three samples really ran
    assert data["stdout"] == (
        "host ran /check-code with args 'src/ --fast'\nRun the linters and report.\n"
    )


def test_the_host_comes_from_ll_host_cli(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LL_HOST_CLI", f"{sys.executable} host.py")
    code, data = harness_json(project, "skill", "check-code", "--exit-code", "0", "--samples", "1")
    assert code == 0, data
    assert "host ran /check-code" in data["stdout"]


def test_an_unknown_skill_is_refused_naming_where_it_looked(project: Path) -> None:
    done = harness(project, "skill", "nope", *host_flag(), "--exit-code", "0")
    assert done.returncode == 2
    assert "no skill 'nope': looked for .claude/skills/nope/SKILL.md" in done.stderr
    assert not (project / "host-calls.txt").exists()
    typo = harness(project, "skill", "check-cod", *host_flag(), "--exit-code", "0")
    assert typo.returncode == 2
    assert "no skill 'check-cod' (did you mean 'check-code'?): looked for" in typo.stderr


def test_semantic_judges_the_hosts_output(project: Path, loopback: LoopbackServer) -> None:
    loopback.push(*[verdict_reply("yes", evidence="Run the linters")] * 3)
    code, data = harness_json(project, "skill", "check-code", *host_flag(),
                              "--semantic", "Did it lint? Quote it.")  # fmt: skip
    assert code == 0, data
    assert len(loopback.requests) == 3
    assert "host ran /check-code" in json.dumps(loopback.requests[0].body["messages"])


def test_an_edited_skill_is_compared_with_its_committed_baseline(project: Path) -> None:
    skill = project / ".claude" / "skills" / "check-code" / "SKILL.md"
    skill.write_text("BROKEN: report nothing.\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "incumbent")
    flags = [*host_flag(), "--exit-code", "0", "--samples", "2"]
    code, measured = harness_json(project, "skill", "check-code", *flags, "--measure-baseline")
    assert code == 1 and measured["tally"]["fail"] == 2
    skill.write_text("Run the linters and report.\n")  # the candidate, uncommitted
    code, compared = harness_json(project, "skill", "check-code", *flags, "--compare-baseline")
    assert code == 0, compared
    assert compared["baseline"]["delta"] == 1.0
    assert (compared["baseline"]["baseline"]["k"], compared["baseline"]["candidate"]["k"]) == (0, 2)


# A stand-in for `claude -p --output-format stream-json --verbose`: it streams events, and its
# result says the run failed when the skill says OUT OF TURNS.
STREAMING_HOST = """\
import json, pathlib, sys
name = sys.stdin.read().strip()[1:].partition(" ")[0]
body = (pathlib.Path(".claude/skills") / name / "SKILL.md").read_text()
said = {"role": "assistant", "content": [{"type": "text", "text": "Linted: 0 problems."}]}
print(json.dumps({"type": "system", "subtype": "init"}))
print(json.dumps({"type": "assistant", "message": said, "parent_tool_use_id": None}))
failed = "OUT OF TURNS" in body
end = {"type": "result", "is_error": failed, "num_turns": 1, "total_cost_usd": 0.02}
print(json.dumps({**end, "subtype": "error_max_turns"} if failed else {**end, "result": "ok"}))
"""


def test_a_host_streaming_json_events_is_read_as_a_trace(project: Path) -> None:
    """A stream-json host's raw event stream was the judged output, its cost 0, and a run its
    result called failed (`is_error`) passed `--exit-code 0`."""
    (project / "stream.py").write_text(STREAMING_HOST)
    flags = ["--host", f"{sys.executable} stream.py", "--exit-code", "0", "--samples", "1"]
    code, data = harness_json(project, "skill", "check-code", *flags)
    assert code == 0, data
    assert data["stdout"] == "ok"
    assert data["samples"][0]["cost_usd"] == pytest.approx(0.02)
    skill = project / ".claude" / "skills" / "check-code" / "SKILL.md"
    skill.write_text("OUT OF TURNS\n")
    code, data = harness_json(project, "skill", "check-code", *flags)
    assert (code, data["samples"][0]["exit_code"]) == (1, 1), data
    assert "error_max_turns" in data["samples"][0]["stderr"]
