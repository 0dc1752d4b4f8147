"""Proof-first gates: with learning tests enabled in .loops/config.yaml, an issue's
`learning_tests_required:` targets become `check_proof_<slug>` states between execute and the
judge, chained on `on_yes`; their output lands in the pre-patch evidence bundle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.harness_helpers import harness_json
from tests.loopback_server import LoopbackServer, loopback  # noqa: F401  (fixture)
from tests.scaffold_helpers import ScriptedLlm, lint_findings, ll_loop, run_loop, write

ISSUE = """\
---
id: FEAT-920
learning_tests_required:
  - target: api returns etag
    command: 'echo "PASS etag seen"; echo "ETag: W/1"'
  - cache-ttl
---
# FEAT-920: Conditional requests

## Use Case

- Fetch a page twice and see the second answer come from the cache.

## Acceptance Criteria

- The second fetch returns 304.
"""

ENABLED = "learning_tests:\n  enabled: true\n"
SAW = "TRANSCRIPT: second fetch returned 304"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / ".issues" / "features" / "FEAT-920-conditional.md", ISSUE)
    return tmp_path


def scaffold(project: Path, *args: str) -> dict[str, object]:
    done = ll_loop("scaffold-eval", "--issues", "FEAT-920", "--json", *args, cwd=project)
    assert done.returncode == 0, done.stderr
    made: dict[str, object] = json.loads(done.stdout)
    return made


def test_enabled_gates_sit_between_execute_and_the_judge_chained_on_yes(project: Path) -> None:
    write(project / ".loops" / "config.yaml", ENABLED)
    made = scaffold(project)
    text = (project / str(made["path"])).read_text()
    assert lint_findings(text) == []  # loads, and lint-clean
    states = yaml.safe_load(text)["states"]
    assert states["execute"]["next"] == "check_proof_api_returns_etag"
    first, second = states["check_proof_api_returns_etag"], states["check_proof_cache_ttl"]
    assert (first["on_yes"], second["on_yes"]) == ("check_proof_cache_ttl", "check_skill")
    assert first["on_no"] == second["on_no"] == "unproven"
    assert states["unproven"] == {
        "description": states["unproven"]["description"],
        "terminal": True,
        "failure": True,
    }
    assert yaml.safe_load(text)["max_steps"] == 9  # 5 + 2 attempts x 2 gates
    # and the header that explains the budget says so, rather than a gateless harness's 4 and 5
    assert "Two attempts take 8 steps; max_steps 9 is\n# a backstop" in text


def test_gates_are_off_unless_the_project_enables_them(project: Path) -> None:
    text = (project / str(scaffold(project)["path"])).read_text()
    assert "check_proof" not in text
    write(project / ".loops" / "config.yaml", "learning_tests: {enabled: yes please}\n")
    bad = ll_loop("scaffold-eval", "--issues", "FEAT-920", "--force", cwd=project)
    assert bad.returncode == 2
    assert "learning_tests.enabled` must be true or false" in bad.stderr


@pytest.mark.parametrize("text", ["", "# settings to come\n"])
def test_an_empty_config_says_what_the_config_needs(project: Path, text: str) -> None:
    """An empty `.loops/config.yaml` was refused as '... not readable YAML (the file is empty:
    a loop needs at least name, initial and states)', a loop file's words: it now says what
    the project config holds."""
    write(project / ".loops" / "config.yaml", text)
    bad = ll_loop("scaffold-eval", "--issues", "FEAT-920", "--force", cwd=project)
    assert bad.returncode == 2, bad.stderr
    assert ".loops/config.yaml:1: the project config" in bad.stderr
    assert "is empty: it holds a mapping of project settings such as `learning_tests:" in bad.stderr
    assert "name, initial and states" not in bad.stderr and "Traceback" not in bad.stderr


def test_the_judge_is_reached_only_when_every_assumption_is_proven(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    write(project / ".loops" / "config.yaml", ENABLED)
    made = scaffold(project)
    ScriptedLlm(loopback).say(SAW)
    unproven = run_loop(str(made["path"]), cwd=project)
    assert unproven.path == (
        "execute", "check_proof_api_returns_etag", "check_proof_cache_ttl", "unproven",
    )  # fmt: skip
    assert unproven.exit_code == 1
    bundle = project / ".loops" / "evidence" / "FEAT-920"
    assert (bundle / "proof-api_returns_etag.txt").read_text() == "PASS etag seen\nETag: W/1\n"
    # Record the missing learning test's result; now the judge decides.
    write(bundle / "proof-cache_ttl.txt", "PASS ttl honoured\n")
    ScriptedLlm(loopback).say(SAW).judge("yes")
    proven = run_loop(str(made["path"]), cwd=project)
    assert proven.path == (
        "execute", "check_proof_api_returns_etag", "check_proof_cache_ttl", "check_skill", "done",
    )  # fmt: skip
    assert proven.exit_code == 0
    # The proofs are the issue's pre-patch evidence, readable by ll-harness.
    _, report = harness_json(project, "cmd", "true", "--exit-code", "0", "--issue-id", "FEAT-920")
    names = sorted(f["name"] for f in report["prepatch_evidence"]["files"])
    assert names == ["proof-api_returns_etag.txt", "proof-cache_ttl.txt"]


def test_a_configured_command_template_proves_plain_targets(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    write(
        project / ".loops" / "config.yaml",
        ENABLED + "  command: echo PASS {target} && test {slug} != cache_ttl\n",
    )
    made = scaffold(project)
    ScriptedLlm(loopback).say(SAW)
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path[-2:] == ("check_proof_cache_ttl", "unproven")  # the template ran, and failed
    proof = project / ".loops" / "evidence" / "FEAT-920" / "proof-cache_ttl.txt"
    assert proof.read_text() == "PASS cache-ttl\n"


def test_a_proof_command_that_changes_directory_or_exits_still_shows_its_output(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    """The command ran in `{ ...; }` in the gate's own shell: a `cd tests && ...` made the
    gate's `tail` of the proof file (a relative path) fail, and an `exit` ended the gate before
    it, so the step showed nothing of what the learning test said. It runs in a subshell."""
    write(
        project / ".issues" / "features" / "FEAT-920-conditional.md",
        ISSUE.replace(
            """command: 'echo "PASS etag seen"; echo "ETag: W/1"'""",
            """command: 'cd tests && echo "PASS etag seen in $(basename "$PWD")" && exit 0'""",
        ).replace("  - cache-ttl\n", ""),
    )
    (project / "tests").mkdir()
    write(project / ".loops" / "config.yaml", ENABLED)
    made = scaffold(project)
    ScriptedLlm(loopback).say(SAW).judge("yes")
    run = run_loop(str(made["path"]), cwd=project)
    assert run.path[:2] == ("execute", "check_proof_api_returns_etag"), run.path
    events = [json.loads(line) for line in (run.run_dir / "events.jsonl").read_text().splitlines()]
    [gate] = [
        e
        for e in events
        if e["event"] == "action_complete" and e["state"] == "check_proof_api_returns_etag"
    ]
    assert gate["exit_code"] == 0 and gate["output"] == "PASS etag seen in tests\n", gate
    assert gate["stderr"] == "", gate


def test_variant_b_gates_each_issue_and_records_unproven(project: Path) -> None:
    write(project / ".loops" / "config.yaml", ENABLED)
    write(project / ".issues" / "FEAT-921-other.md", "# FEAT-921: Other\n\n## Use Case\n\nx\n")
    done = ll_loop("scaffold-eval", "--issues", "FEAT-920,FEAT-921", "--stdout", cwd=project)
    assert done.returncode == 0, done.stderr
    assert lint_findings(done.stdout) == []
    data = yaml.safe_load(done.stdout)
    states = data["states"]
    assert states["execute_feat_920"]["next"] == "check_proof_feat_920_api_returns_etag"
    assert states["check_proof_feat_920_cache_ttl"]["on_yes"] == "check_skill_feat_920"
    assert states["check_proof_feat_920_cache_ttl"]["on_no"] == "record_unproven"
    assert states["execute_feat_921"]["next"] == "check_skill_feat_921"
    assert data["max_steps"] == 8 * 2 + 2 + 2 * 3


HOSTILE = """\
---
id: FEAT-922
learning_tests_required:
  - "$(touch pwned)"
  - 'a "b" c'
---
# FEAT-922: Hostile targets

## Use Case

- Use it.
"""


def test_a_target_in_the_template_is_text_wherever_it_sits(
    project: Path,
    loopback: LoopbackServer,  # noqa: F811
) -> None:
    """The target was pasted as `shlex.quote` text: inside the template's double quotes its
    `$(...)` ran, and `a "b" c` arrived as `'a b c'`."""
    write(project / ".issues" / "FEAT-922-hostile.md", HOSTILE)
    write(project / ".loops" / "config.yaml", ENABLED + '  command: echo "got {target}"\n')
    done = ll_loop("scaffold-eval", "--issues", "FEAT-922", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    path = str(json.loads(done.stdout)["path"])
    assert lint_findings((project / path).read_text()) == []
    ScriptedLlm(loopback).say(SAW)
    run_loop(path, cwd=project)
    bundle = project / ".loops" / "evidence" / "FEAT-922"
    assert (bundle / "proof-touch_pwned.txt").read_text() == "got $(touch pwned)\n"
    assert (bundle / "proof-a_b_c.txt").read_text() == 'got a "b" c\n'
    assert not (project / "pwned").exists()


@pytest.mark.parametrize("template", ['bash -c "pytest -k {target}"', "eval {target}"])
def test_a_template_that_runs_the_target_as_code_is_refused(project: Path, template: str) -> None:
    write(project / ".loops" / "config.yaml", ENABLED + f"  command: '{template}'\n")
    done = ll_loop("scaffold-eval", "--issues", "FEAT-920", cwd=project)
    assert done.returncode == 2
    assert ".loops/config.yaml: `learning_tests.command` puts {target} where bash" in done.stderr
    assert "bug in ll-loop" not in done.stderr
