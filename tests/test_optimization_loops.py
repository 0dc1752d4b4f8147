"""The optimisation loops that consume an evaluator -- apo-textgrad, harness-optimize and
loop-specialist-eval -- driven end to end through the real CLI, real shell states, real
`ll-harness`/`ll-loop` processes and the loopback Messages-API server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.load.resources import builtin_loops_dir
from tests.loopback_server import LoopbackServer, loopback  # noqa: F401  (fixture)
from tests.scaffold_helpers import (
    REPO,
    Judge,
    ScriptedLlm,
    ll_loop,
    put_cli_on_path,
    request_text,
    run_loop,
    write,
)

OPTIMIZERS = ("apo-textgrad", "harness-optimize", "loop-specialist-eval")


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_builtin_is_valid_and_lint_clean(name: str, tmp_path: Path) -> None:
    path = builtin_loops_dir() / f"{name}.yaml"
    done = ll_loop("validate", str(path), "--strict", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no problems" in done.stdout + done.stderr


# --- apo-textgrad --------------------------------------------------------------------------------

# Scores a prompt by two words it should contain: 0, 0.5 or 1.
SCORER = """\
s=0
grep -qi cite "$PROMPT_FILE" && s=$((s + 1))
grep -qi example "$PROMPT_FILE" && s=$((s + 1))
echo "checked $PROMPT_FILE: cite and example wanted"
case $s in 0) echo 0 ;; 1) echo 0.5 ;; *) echo 1 ;; esac
"""


def apo_args(*extra: str) -> list[str]:
    return ["--context", "prompt_file=prompt.txt", "--context", "score_cmd=bash score.sh", *extra]


def test_apo_textgrad_keeps_only_improvements_until_the_target(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    write(tmp_path / "score.sh", SCORER)
    prompt = write(tmp_path / "prompt.txt", "Answer briefly.\n")
    llm = ScriptedLlm(loopback).say(
        "It never asks for sources.", "Answer briefly. Cite sources.",
        "No example is asked for.", "Be vague.",
        "Still no example.", "Answer briefly. Cite sources. Give an example.",
    )  # fmt: skip
    run = run_loop("apo-textgrad", cwd=tmp_path, args=apo_args())
    one_round = ("read_best", "gradient", "rewrite", "try_candidate")
    assert run.path == ("baseline", *one_round * 3, "done")
    assert run.exit_code == 0
    assert prompt.read_text() == "Answer briefly. Cite sources. Give an example.\n"
    history = (run.run_dir / "artifacts" / "history.txt").read_text().splitlines()
    assert history == [
        "original: 0",
        "round 1: 0.5 (kept, was 0)",
        "round 2: 0 (reverted to 0.5)",
        "round 3: 1 (kept, was 0.5)",
    ]
    # Each gradient saw the best prompt so far (never the reverted one) and its scorer output.
    second, third = request_text(llm.prompted[2]), request_text(llm.prompted[4])
    assert "Answer briefly. Cite sources." in second and "cite and example wanted" in second
    assert "Be vague." not in third and "Answer briefly. Cite sources." in third


def test_apo_textgrad_without_improvement_restores_the_original(
    tmp_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    write(tmp_path / "score.sh", SCORER)
    prompt = write(tmp_path / "prompt.txt", "Answer briefly.\n")
    ScriptedLlm(loopback).say("g1", "Be vague.", "g2", "Be terse.")
    run = run_loop("apo-textgrad", cwd=tmp_path, args=apo_args("--context", "rounds=2"))
    assert run.path[-2:] == ("try_candidate", "no_improvement")
    assert run.exit_code == 1
    assert prompt.read_text() == "Answer briefly.\n"


# --- harness-optimize ----------------------------------------------------------------------------

GATE = """\
name: gate
initial: check
scope: [".loops/gate"]
states:
  check:
    action: {action}
    on_yes: done
    on_no: failed
  done:
    terminal: true
  failed:
    terminal: true
    failure: true
"""


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def put_harness_on_path(bin_dir: Path) -> str:
    """`ll-loop` and `ll-harness` for this checkout, first on PATH (the loop calls both)."""
    path = put_cli_on_path(bin_dir)
    script = bin_dir / "ll-harness"
    script.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{REPO}" exec "{sys.executable}" -c '
        '"from engine.cli.harness_cmd import main; main()" "$@"\n'
    )
    script.chmod(0o755)
    return path


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", put_harness_on_path(tmp_path / "bin"))
    # the loop's own `git commit` (a kept edit) needs an identity: the tester's ~/.gitconfig
    # gave it one, and without one (a fresh HOME, a CI user) the round ended `broken`
    for variable in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(variable, "t")
    for variable in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(variable, "t@t")
    project = tmp_path / "project"
    write(project / ".loops" / "gate.yaml", GATE.format(action="exit 1"))
    git(project, "init", "-q")
    git(project, "-c", "commit.gpgsign=false", "add", "-A")
    git(project, "commit", "-qm", "incumbent")
    return project


def test_harness_optimize_keeps_an_edit_only_when_the_measured_score_improves(
    repo: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    still_failing = GATE.format(action="'exit 1  # tried a comment'")
    passing = GATE.format(action="exit 0")
    llm = ScriptedLlm(loopback).say(still_failing, passing)
    run = run_loop(
        "harness-optimize",
        cwd=repo,
        args=["--context", "target_file=.loops/gate.yaml", "--context", "samples=1"],
    )
    assert run.path == (
        "measure", "propose", "apply", "compare", "revert",
        "measure", "propose", "apply", "compare", "keep", "done",
    )  # fmt: skip
    assert run.exit_code == 0
    assert (repo / ".loops" / "gate.yaml").read_text() == passing
    assert git(repo, "log", "--format=%s", "-1").startswith("harness-optimize: keep edit")
    assert git(repo, "status", "--porcelain", "--", ".loops/gate.yaml") == ""
    history = (run.run_dir / "artifacts" / "history.txt").read_text().splitlines()
    assert history[0] == "round 1: reverted (no improvement over the baseline)"
    assert history[1].startswith("round 2: kept (")
    first, second = request_text(llm.prompted[0]), request_text(llm.prompted[1])
    assert "action: exit 1" in first and "FAIL" in first  # the incumbent and its measurement
    assert "Baseline  reused" in second  # the incumbent was not measured twice
    assert "round 1: reverted" in second


def test_harness_optimize_refuses_an_uncommitted_target(
    repo: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    write(repo / ".loops" / "gate.yaml", GATE.format(action="exit 2"))
    run = run_loop("harness-optimize", cwd=repo, args=["--context", "target_file=.loops/gate.yaml"])
    assert run.path == ("measure", "broken")
    assert "differs from HEAD" in (run.run_dir / "events.jsonl").read_text()


# --- loop-specialist-eval ------------------------------------------------------------------------

REPAIRED = """\
The defects: `initial: biuld` names no state (the state is `build`), and `test` routes
`on_yes` to `finsh`, which does not exist (the terminal is `finish`).

```yaml
name: build-and-test
initial: build
scope: [".loops/build-and-test"]
states:
  build:
    action: make build
    next: test
  test:
    action: make test
    on_yes: finish
    on_no: build
  finish:
    terminal: true
```
"""


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", put_cli_on_path(tmp_path / "bin"))
    project = tmp_path / "project"
    project.mkdir()
    return project


def test_loop_specialist_eval_passes_a_real_repair(
    on_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    llm = ScriptedLlm(loopback).say(REPAIRED).judge(Judge("yes", evidence='"valid": true'))
    run = run_loop("loop-specialist-eval", cwd=on_path)
    assert run.path == ("seed", "execute", "verify", "check_skill", "done")
    assert run.exit_code == 0
    seeded = request_text(llm.prompted[0])
    assert "on_yes: finsh" in seeded and "finsh" in seeded.split("## ll-loop validate")[1]
    judged = request_text(llm.judged[0])
    assert '"valid": true' in judged  # the repaired loop was really validated
    assert "build test finish -> build test finish" in judged


def test_loop_specialist_eval_fails_a_repair_that_does_not_validate(
    on_path: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    lazy = "Fixed it.\n\n```yaml\nname: build-and-test\ninitial: build\nstates: {}\n```\n"
    no = Judge("no", evidence='"valid": false')
    llm = ScriptedLlm(loopback).say(lazy, lazy).judge(no, no)
    run = run_loop("loop-specialist-eval", cwd=on_path)
    assert run.path == (
        "seed", "execute", "verify", "check_skill", "execute", "verify", "check_skill", "failed",
    )  # fmt: skip
    assert run.exit_code == 1
    assert '"valid": false' in request_text(llm.judged[0])
    assert run.result["outputs"]["verdict"] == "no"
