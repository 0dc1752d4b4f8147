"""The optimisation loops that consume an evaluator -- apo-textgrad, harness-optimize and
loop-specialist-eval -- driven end to end through the real CLI, real shell states, real
`ll-harness`/`ll-loop` processes and the loopback Messages-API server."""

from __future__ import annotations

import os
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
