"""`ll-loop scaffold-eval` / `scaffold-verify` as a user runs them: files, refusals, JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from engine.cli.schema_cmd import schema_text
from tests.scaffold_helpers import ll_loop, make_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def test_scaffold_eval_writes_the_harness_and_says_what_next(project: Path) -> None:
    done = ll_loop("scaffold-eval", "--issues", "FEAT-919", cwd=project)
    assert done.returncode == 0, done.stderr
    target = project / ".loops" / "eval-harness-feat-919.yaml"
    assert target.is_file()
    assert done.stdout.splitlines() == [
        "wrote .loops/eval-harness-feat-919.yaml (Variant A: one issue, execute → check_skill)",
        "next:",
        "  ll-loop validate .loops/eval-harness-feat-919.yaml",
        "  ll-loop run eval-harness-feat-919",
    ]
    assert yaml.safe_load(target.read_text())["name"] == "eval-harness-feat-919"


def test_refuses_to_overwrite_without_force(project: Path) -> None:
    assert ll_loop("scaffold-eval", "--issues", "FEAT-919", cwd=project).returncode == 0
    target = project / ".loops" / "eval-harness-feat-919.yaml"
    target.write_text("# my edits\n")
    again = ll_loop("scaffold-eval", "--issues", "FEAT-919", cwd=project)
    assert again.returncode == 2
    assert "already exists; not overwriting it" in again.stderr
    assert "--force" in again.stderr
    assert target.read_text() == "# my edits\n"
    forced = ll_loop("scaffold-eval", "--issues", "FEAT-919", "--force", cwd=project)
    assert forced.returncode == 0
    first, second = target.read_text().splitlines()[:2]
    assert first == "# yaml-language-server: $schema=loop.schema.json"
    assert second.startswith("# Eval harness for FEAT-919")
    assert (target.parent / "loop.schema.json").read_text() == schema_text("loop")


def test_stdout_prints_yaml_and_writes_nothing(project: Path) -> None:
    done = ll_loop("scaffold-eval", "--issues", "BUG-204", "--stdout", cwd=project)
    assert done.returncode == 0
    assert yaml.safe_load(done.stdout)["name"] == "eval-harness-bug-204"
    assert not (project / ".loops").exists()
    both = ll_loop(
        "scaffold-eval", "--issues", "BUG-204", "--stdout", "--out", "x.yaml", cwd=project
    )
    assert both.returncode == 2  # --out was ignored without a word
    assert "--stdout prints the loop and writes no file, so --out has nothing to do" in both.stderr
    assert not (project / "x.yaml").exists()


def test_json_summary_lists_placeholders_and_diagnostics(project: Path) -> None:
    done = ll_loop("scaffold-eval", "--issues", "BUG-555", "--json", cwd=project)
    assert done.returncode == 0
    summary = json.loads(done.stdout)
    assert summary["path"] == ".loops/eval-harness-bug-555.yaml"
    assert summary["issues"] == ["BUG-555"]
    assert summary["variant"] == "A"
    assert [p["path"] for p in summary["placeholders"]] == [
        "states.execute.action",
        "states.check_skill.evaluate.prompt",
    ]
    codes = [(d["code"], d["severity"]) for d in summary["diagnostics"]]
    assert codes == [("LL060", "warning")] * 2
    text = (project / ".loops" / "eval-harness-bug-555.yaml").read_text().splitlines()
    for diagnostic in summary["diagnostics"]:
        assert "<FILL:" in text[diagnostic["line"] - 1]


def test_placeholders_are_reported_on_stderr_with_file_and_line(project: Path) -> None:
    (project / ".issues" / "bugs" / "BUG-301-login.md").write_text(
        "# BUG-301: Login times out\n\n## Steps to Reproduce\n\n1. Sign in.\n"
    )
    done = ll_loop("scaffold-eval", "--issues", "BUG-301", cwd=project)
    assert done.returncode == 0
    first = done.stderr.splitlines()[0]
    assert first.startswith(".loops/eval-harness-bug-301.yaml:")
    assert "warning LL060 unfilled placeholder: numbered observable conditions" in first
    assert "1 placeholder to fill first" in done.stdout


def test_bug_report_with_expected_behavior_bullets_gets_complete_conditions(
    project: Path,
) -> None:
    (project / ".issues" / "bugs" / "BUG-302-search.md").write_text(
        "# BUG-302: Search ignores accents\n\n## Steps to Reproduce\n\n1. Search `cafe`.\n\n"
        "## Expected Behavior\n\n- `cafe` finds `café`.\n- `café` finds `café`.\n"
    )
    done = ll_loop("scaffold-eval", "--issues", "BUG-302", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["placeholders"] == [] and summary["diagnostics"] == []
    text = (project / ".loops" / "eval-harness-bug-302.yaml").read_text()
    assert "(1) `cafe` finds `café`." in text and "(2) `café` finds `café`." in text


def test_several_issues_and_out_path(project: Path) -> None:
    out = project / "evals" / "sprint.yaml"
    done = ll_loop(
        "scaffold-eval", "--issues", "FEAT-919, BUG-204,ENH-77", "--out", str(out), cwd=project
    )
    assert done.returncode == 0, done.stderr
    assert "(Variant B: a work list of 3 issues)" in done.stdout
    assert "  ll-loop run evals/sprint.yaml" in done.stdout
    assert yaml.safe_load(out.read_text())["initial"] == "discover"


def test_issue_by_path(project: Path) -> None:
    done = ll_loop(
        "scaffold-eval", "--issues", ".issues/bugs/BUG-555-bare.md", "--stdout", cwd=project
    )
    assert done.returncode == 0
    assert "name: eval-harness-bug-555" in done.stdout


def test_a_path_with_a_space_is_one_issue(project: Path) -> None:
    """`--issues` split on spaces too, so `my issues/x.md` was looked up as the IDs `my` and
    `issues/x.md` (and scaffold-verify, which takes one issue, failed the same way)."""
    folder = project / "my issues"
    folder.mkdir()
    (folder / "BUG-555 bare.md").write_text((project / ".issues/bugs/BUG-555-bare.md").read_text())
    done = ll_loop(
        "scaffold-eval", "--issues", "my issues/BUG-555 bare.md", "--stdout", cwd=project
    )
    assert done.returncode == 0, done.stderr
    assert "name: eval-harness-bug-555" in done.stdout
    done = ll_loop("scaffold-verify", "my issues/BUG-555 bare.md", "--adversarial", "--stdout",
                   cwd=project)  # fmt: skip
    assert done.returncode == 0, done.stderr
    both = ll_loop("scaffold-eval", "--issues", "FEAT-919 BUG-204", "--stdout", cwd=project)
    assert both.returncode == 0 and "Eval harness for 2 issues" in both.stdout  # IDs: still split


def test_the_next_commands_can_be_pasted_when_a_path_has_a_space(project: Path) -> None:
    """From a project whose path has a space, the "next:" lines printed the path bare, so
    pasting `ll-loop validate /tmp/my proj/.loops/x.yaml` validated `/tmp/my` and `proj/...`."""
    out = project / "my evals"
    done = ll_loop("scaffold-eval", "--issues", "FEAT-919", "--out", f"{out}/", cwd=project)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "  ll-loop validate 'my evals/eval-harness-feat-919.yaml'" in lines
    assert "  ll-loop run 'my evals/eval-harness-feat-919.yaml'" in lines
    (project / ".issues" / "FEAT-930-calc.md").write_text(
        "# FEAT-930: Calculator adds\n\n## Examples\n\n- `2 + 3` -> `5`\n"
    )
    done = ll_loop(
        "scaffold-eval", "--issues", "FEAT-930", "--dsl", "--out", f"{out}/dsl", cwd=project
    )
    assert done.returncode == 0, done.stderr
    assert "  ll-harness dsl 'my evals/dsl/'" in done.stdout.splitlines()


def test_unknown_id_lists_close_candidates(project: Path) -> None:
    done = ll_loop("scaffold-eval", "--issues", "FEAT-91", cwd=project)
    assert done.returncode == 2
    assert "error: no issue FEAT-91 under .issues/" in done.stderr
    assert "did you mean: FEAT-919 (.issues/features/P2-FEAT-919-sprint-dashboard.md)" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


def test_ambiguous_id_lists_every_match(project: Path) -> None:
    extra = project / ".issues" / "completed"
    extra.mkdir()
    (extra / "P3-BUG-204-old.md").write_text("# BUG-204: old\n")
    done = ll_loop("scaffold-verify", "BUG-204", cwd=project)
    assert done.returncode == 2
    assert "ambiguous" in done.stderr
    assert ".issues/completed/P3-BUG-204-old.md" in done.stderr
    assert ".issues/bugs/P1-BUG-204-export-crash.md" in done.stderr


@pytest.mark.parametrize("dsl", [(), ("--dsl",)])
def test_two_files_with_one_id_are_refused_not_one_dropped(
    project: Path, dsl: tuple[str, ...]
) -> None:
    """Two paths of one ID made a harness for the second only (Variant A, no message), and
    `--dsl` wrote the second's task files over the first's, saying it wrote both."""
    for folder, answer in (("old", "5"), ("new", "6")):
        text = "---\nid: FEAT-50\n---\n# Adds\n\n## Use Case\n\nadd\n\n## Examples\n\n"
        text += f"- 2 -> {answer}\n"
        (project / ".issues" / folder).mkdir()
        (project / ".issues" / folder / "adds.md").write_text(text)
    refs = ".issues/old/adds.md,.issues/new/adds.md"
    done = ll_loop("scaffold-eval", "--issues", refs, *dsl, cwd=project)
    assert done.returncode == 2, done
    assert ".issues/old/adds.md" in done.stderr and ".issues/new/adds.md" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (project / ".loops").exists()  # nothing written


def test_a_binary_file_is_not_an_issue(project: Path) -> None:
    """A screenshot passed as the issue became a harness whose prompts were its bytes."""
    (project / "mockup.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    for command in (("scaffold-eval", "--issues", "mockup.png"), ("scaffold-verify", "mockup.png")):
        done = ll_loop(*command, cwd=project)
        assert done.returncode == 2, done
        assert "mockup.png is not a text file (it contains NUL bytes)" in done.stderr
    assert not (project / ".loops").exists()


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
def test_a_utf16_issue_file_is_named_as_such(project: Path, encoding: str) -> None:
    """An issue saved as UTF-16 (PowerShell's `>`, Notepad's "Unicode") was "not a text file
    (it contains NUL bytes)", where a loop file in UTF-16 is told what it is and what to do."""
    text = "# BUG-7: the parser crashes\n\n## Expected Behavior\nNo crash.\n"
    (project / "bug.md").write_bytes(text.encode(encoding))
    for command in (("scaffold-eval", "--issues", "bug.md"), ("scaffold-verify", "bug.md")):
        done = ll_loop(*command, cwd=project)
        assert done.returncode == 2, done
        assert "error: bug.md:1:1: the file is UTF-16 text, not UTF-8" in done.stderr, done
        assert "hint: save it as UTF-8" in done.stderr and "not a text file" not in done.stderr
    assert not (project / ".loops").exists()


def test_out_onto_a_fifo_is_refused_not_waited_on(project: Path) -> None:
    """`--out FIFO --force` opened the FIFO to write and waited for a reader for ever."""
    os.mkfifo(project / "pipe.yaml")
    done = ll_loop("scaffold-eval", "--issues", "FEAT-919", "--out", "pipe.yaml", "--force",
                   cwd=project, process=True, timeout=30)  # fmt: skip
    assert done.returncode == 2, done
    assert "pipe.yaml exists and is not a regular file" in done.stderr


def test_scaffold_verify_files_and_modes(project: Path) -> None:
    done = ll_loop("scaffold-verify", "FEAT-919", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (project / ".loops" / "verify-FEAT-919-sprint-dashboard.yaml").is_file()
    adversarial = ll_loop("scaffold-verify", "FEAT-919", "--adversarial", "--json", cwd=project)
    assert adversarial.returncode == 0
    summary = json.loads(adversarial.stdout)
    assert summary["path"] == ".loops/adversarial-FEAT-919-sprint-dashboard.yaml"
    assert summary["variant"] == "adversarial"


def test_scaffold_verify_without_criteria_is_a_clear_error(project: Path) -> None:
    done = ll_loop("scaffold-verify", "FEAT-1001", cwd=project)
    assert done.returncode == 2
    assert "has no acceptance criteria, so there is nothing to verify" in done.stderr
    assert not (project / ".loops").exists()


def test_bad_front_matter_is_a_clear_error(project: Path) -> None:
    (project / ".issues" / "FEAT-5-broken.md").write_text("---\ntitle: [x\n---\n# FEAT-5\n")
    done = ll_loop("scaffold-eval", "--issues", "FEAT-5", cwd=project)
    assert done.returncode == 2
    assert ".issues/FEAT-5-broken.md:" in done.stderr
    assert "front matter is not valid YAML" in done.stderr


def test_a_generated_loop_that_does_not_load_is_reported_as_a_bug() -> None:
    from engine.cli.scaffold_cmd import GeneratedLoopInvalid, check_generated
    from engine.scaffold import Scaffold

    text = "name: x\ninitial: nowhere\nstates:\n  a:\n    terminal: true\n"
    broken = Scaffold("x", text, "A", ())
    with pytest.raises(GeneratedLoopInvalid) as caught:
        check_generated(broken, "x.yaml")
    assert caught.value.exit_code == 2
    assert "this is a bug in ll-loop scaffold" in caught.value.message
    assert "x.yaml:2" in caught.value.message  # the diagnostics, with file and line


def test_an_accented_title_keeps_its_letters_in_the_file_name(project: Path) -> None:
    issue = project / ".issues" / "FEAT-77.md"
    issue.write_text("# FEAT-77: Überprüfung der Café-Liste\n\n## Acceptance Criteria\n- works\n")
    done = ll_loop("scaffold-verify", "FEAT-77", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (project / ".loops" / "verify-FEAT-77-uberprufung-der-cafe-liste.yaml").is_file()
