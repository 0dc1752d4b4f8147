"""`scaffold-eval --dsl`: an issue's examples become `ll-harness dsl` task files, which the real
harness then runs against an agent CLI (a script the test writes)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import yaml

from engine.load.issuefile import parse_issue
from engine.scaffold.dsl_tasks import Example, issue_examples
from tests.harness_helpers import harness_json
from tests.scaffold_helpers import ll_loop, write

ISSUE = """\
# FEAT-930: Calculator adds

## Summary

`calc` adds two integers.

## Examples

- `2 + 3` → `5`
- `10 + 1` -> `11`
- `7 + 7` => `15`
- `x + 1`
"""

# An agent that really adds the two numbers of the input (so the third example, which the issue
# got wrong on purpose, fails) and answers under the DSL answer contract.
AGENT = r"""
import json, re, sys
prompt = sys.stdin.read()
match = re.search(r"Input: (\S+) \+ (\S+)", prompt)
try:
    answer = str(int(match.group(1)) + int(match.group(2)))
except ValueError:
    answer = "not a number"
print("Working it out.\n```json\n" + json.dumps({"answer": answer}) + "\n```")
"""


def test_examples_become_task_files_the_harness_grades(tmp_path: Path) -> None:
    write(tmp_path / ".issues" / "FEAT-930-calc.md", ISSUE)
    done = ll_loop("scaffold-eval", "--issues", "FEAT-930", "--dsl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote 4 task files to .loops/dsl/feat-930/" in done.stdout
    tasks = tmp_path / ".loops" / "dsl" / "feat-930"
    first = yaml.safe_load((tasks / "example-01.yaml").read_text())
    assert first["expected"] == {"answer": "5"}
    assert "Input: 2 + 3" in first["prompt"] and "`calc` adds two integers." in first["prompt"]
    assert first["source"] == ".issues/FEAT-930-calc.md"
    assert "expected" not in yaml.safe_load((tasks / "example-04.yaml").read_text())
    write(tmp_path / "agent.py", AGENT)
    code, report = harness_json(
        tmp_path, "dsl", ".loops/dsl/feat-930", "--runner", f"cmd:{sys.executable} agent.py"
    )
    assert code == 1  # one example fails, one is ungraded
    outcomes = {Path(r["task"]).name: r["outcome"] for r in report["results"]}
    assert outcomes == {
        "example-01.yaml": "pass",
        "example-02.yaml": "pass",
        "example-03.yaml": "fail",
        "example-04.yaml": "ungraded",
    }


def test_front_matter_examples_with_mapping_answers(tmp_path: Path) -> None:
    write(
        tmp_path / ".issues" / "FEAT-931.md",
        "---\nid: FEAT-931\nexamples:\n  - {input: empty sprint, expected: {status: empty, "
        "count: 0}}\n---\n# FEAT-931: Sprint summary\n",
    )
    done = ll_loop("scaffold-eval", "--issues", "FEAT-931", "--dsl", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["files"] == [".loops/dsl/feat-931/example-01.yaml"]
    task = yaml.safe_load((tmp_path / summary["files"][0]).read_text())
    assert task["expected"] == {"status": "empty", "count": 0}
    assert set(task["blanks"]) == {"status", "count"}


def test_an_issue_without_examples_is_refused_and_files_are_not_overwritten(
    tmp_path: Path,
) -> None:
    write(tmp_path / ".issues" / "FEAT-932.md", "# FEAT-932: Nothing\n\n## Use Case\n\nx\n")
    done = ll_loop("scaffold-eval", "--issues", "FEAT-932", "--dsl", cwd=tmp_path)
    assert done.returncode == 2 and "has no examples" in done.stderr
    write(tmp_path / ".issues" / "FEAT-930-calc.md", ISSUE)
    assert ll_loop("scaffold-eval", "--issues", "FEAT-930", "--dsl", cwd=tmp_path).returncode == 0
    again = ll_loop("scaffold-eval", "--issues", "FEAT-930", "--dsl", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr


def test_an_example_padded_with_spaces_is_split_in_linear_time() -> None:
    """The arrow pattern `\\s*(?:→|->|=>)\\s*` backtracked over every run of spaces: an example
    with 20,000 spaces took 4 s to split, one with 100,000 minutes."""
    issue = parse_issue(
        "# FEAT-9: t\n\n## Examples\n\n- `2 + 3`   →   `5`\n- a" + " " * 30000 + "b\n"
    )
    started = time.monotonic()
    examples = issue_examples(issue)
    assert time.monotonic() - started < 2
    assert examples[0] == Example("2 + 3", "5")
    assert examples[1].expected is None and examples[1].input.startswith("a ")
