"""`scaffold-eval --dsl`: `ll-harness dsl` task files from an issue's examples (pure text).

An issue gives examples in an `## Examples` section (also "Example", "Test Cases"), one list
item each, written `INPUT → EXPECTED` (`->` and `=>` work too; backticks around either side are
dropped), or in its front matter:

    examples:
      - {input: "2 + 3", expected: "5"}
      - input: "a user with no sprint"
        expected: {status: empty, count: 0}     # a mapping: one answer key per entry

Each example becomes one task: the prompt states the feature (title, ID, summary) and the input;
`expected` is graded key by key by `ll-harness dsl` (a scalar becomes the key `answer`). An item
with no arrow becomes a task without `expected`, judged only with `--semantic`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from engine.load.issuefile import Issue, list_items, slugify
from engine.model.errors import UsageError
from engine.scaffold.text import comment, flat, yaml_scalar

# The sides are stripped by `_unquote`; `\s*(?:→|->|=>)\s*` backtracked over every run of
# spaces, quadratically (an example padded with 20,000 spaces took 4 s, 100,000 minutes).
_ARROW = re.compile(r"→|->|=>")


@dataclass(frozen=True)
class Example:
    input: str
    expected: Any = None  # None: no expected answer (semantic grading only)


@dataclass(frozen=True)
class TaskFile:
    name: str  # the file name, e.g. example-01.yaml
    text: str


def issue_examples(issue: Issue) -> tuple[Example, ...]:
    """The issue's examples: front matter `examples:` first, else the Examples section."""
    raw = issue.front_matter.get("examples")
    if raw is not None:
        return _front_matter_examples(issue, raw)
    return tuple(_item_example(item) for item in list_items(issue.examples) if item.strip())


def _front_matter_examples(issue: Issue, raw: Any) -> tuple[Example, ...]:
    where = f"{issue.path}" if issue.path else issue.id
    if not isinstance(raw, list):
        raise UsageError(
            f"{where}: `examples` in the front matter must be a list",
            hint="write `- {input: ..., expected: ...}` items",
        )
    found: list[Example] = []
    for entry in raw:
        if isinstance(entry, str):
            found.append(_item_example(entry))
        elif isinstance(entry, dict) and "input" in entry:
            found.append(Example(str(entry["input"]), entry.get("expected")))
        else:
            raise UsageError(
                f"{where}: an example must be `INPUT -> EXPECTED` or {{input, expected}}, "
                f"got {entry!r}",
                hint="write `- {input: 2 + 3, expected: 5}`",
            )
    return tuple(found)


def _item_example(item: str) -> Example:
    parts = _ARROW.split(item, maxsplit=1)
    if len(parts) == 2 and parts[0].strip() and parts[1].strip():
        return Example(_unquote(parts[0]), _unquote(parts[1]))
    return Example(_unquote(item))


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "`":
        return text[1:-1]
    return text


def dsl_tasks(issue: Issue) -> tuple[TaskFile, ...]:
    """One task file per example; an issue without examples is refused."""
    examples = issue_examples(issue)
    if not examples:
        where = f" ({issue.path})" if issue.path else ""
        raise UsageError(
            f"{issue.id}{where} has no examples to turn into DSL tasks",
            hint="add an `## Examples` section with `input → expected` items, or an `examples:` "
            "list in the front matter",
        )
    width = max(2, len(str(len(examples))))
    return tuple(
        TaskFile(f"example-{n:0{width}d}.yaml", _task_text(issue, example, n))
        for n, example in enumerate(examples, 1)
    )


def task_directory(issue: Issue) -> str:
    """Where the tasks of one issue go by default: `.loops/dsl/<id>/`."""
    return f".loops/dsl/{slugify(issue.id)}"


def _task_text(issue: Issue, example: Example, number: int) -> str:
    about = f"{issue.title} ({issue.id})"
    summary = flat(issue.summary.split("\n\n")[0]) if issue.summary else ""
    lines = [f"This task checks {about}."]
    if summary:
        lines.append(f"What it does: {summary}")
    lines += ["", f"Input: {example.input}", "", f"Give exactly what {about} produces for it."]
    prompt = "\n".join(lines)
    task: dict[str, Any] = {}
    if isinstance(example.expected, dict) and example.expected:
        task["blanks"] = {str(k): f"the {k} of the result" for k in example.expected}
        task["expected"] = {str(k): v for k, v in example.expected.items()}
    else:
        task["blanks"] = {"answer": f"the result {issue.id} specifies for this input"}
        if example.expected is not None:
            task["expected"] = {"answer": example.expected}
    task["task_type"] = "example"
    if issue.path:
        task["source"] = str(issue.path)
    task["description"] = f"Example {number} of {issue.id}"
    header = f"# Generated by `ll-loop scaffold-eval --dsl` from {comment(issue.id)}."
    if "expected" not in task:
        header += "\n# No expected answer in the issue: grade it with `ll-harness dsl --semantic`."
    rest = yaml.safe_dump(task, sort_keys=False, allow_unicode=True, width=100)
    # The prompt as a block scalar, read back exactly (task files are not interpolated).
    return f"{header}\nprompt: {yaml_scalar(prompt, 2, escape=False)}\n{rest}"
