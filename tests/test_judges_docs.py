"""docs/judges.md is executed: its worked examples run through `ll-loop run` against the loopback
server and end where the doc says, its Python example runs, and its other YAML loads."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.load.loader import check_loop_text
from tests.loopback_server import LoopbackServer, Reply, text_reply, tool_reply
from tests.run_helpers import run_yaml

DOC = Path(__file__).resolve().parents[1] / "docs" / "judges.md"
TEXT = DOC.read_text()
_BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
BLOCKS = [(lang, info.strip(), body) for lang, info, body in _BLOCK.findall(TEXT)]
RUNS = [i for i, (lang, info, _) in enumerate(BLOCKS) if lang == "yaml" and info.startswith("run=")]


def answer(request: dict[str, Any]) -> Reply:
    """A model that scores 4, passes with a verbatim quote, and explores nothing."""
    choice = request.get("tool_choice", {})
    if choice.get("type") != "tool":
        return text_reply("Seen enough.")(request)  # type: ignore[operator, no-any-return]
    tool = next(t for t in request["tools"] if t["name"] == choice["name"])
    fields = tool["input_schema"]["required"]
    if choice["name"] == "submit_evaluation":
        content = request["messages"][0]["content"]
        quote = re.findall(r"^\w.{10,40}", content.split("<judged_text_")[-1], re.MULTILINE)[0]
        given = {"passed": True, "confidence": 0.9, "reason": "ok", "evidence": quote}
    elif choice["name"] == "submit_score":
        given = {"score": 4, "reason": "good", "evidence": ""}
    else:
        given = {name: 4 for name in fields if name != "reason"} | {"reason": "good"}
    return tool_reply(given)(request)  # type: ignore[operator, no-any-return]


def files_before(index: int) -> list[tuple[str, str]]:
    """The `file=PATH` blocks between the previous run block and this one."""
    start = max([i for i in RUNS if i < index], default=-1) + 1
    found = []
    for _lang, info, body in BLOCKS[start:index]:
        if info.startswith("file="):
            found.append((info.removeprefix("file="), body))
    return found


@pytest.mark.parametrize("index", RUNS, ids=lambda i: yaml.safe_load(BLOCKS[i][2])["name"])
def test_worked_example_runs_to_the_state_the_doc_names(
    index: int, loopback: LoopbackServer, tmp_path: Path
) -> None:
    _, info, body = BLOCKS[index]
    for path, content in files_before(index):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(content)
    loopback.default = answer
    ran = run_yaml(tmp_path, body)
    assert ran.json["final_state"] == info.removeprefix("run="), ran.stderr
    judges = ran.state()["captured"][next(iter(yaml.safe_load(body)["states"]))]["judges"]
    assert all(j["passed"] for j in judges.values()), judges
    if "has_content" in judges:  # the doc quotes this rationale
        claimed = re.search(r"`\{\"value\": true, \"rationale\": \"(Output has \d+ chars)\"", TEXT)
        assert claimed is not None and judges["has_content"]["rationale"] == claimed.group(1)


def test_the_python_example_runs(tmp_path: Path) -> None:
    [code] = [body for lang, info, body in BLOCKS if lang == "python" and info == "run"]
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, str(DOC), "exec"), {})
    finally:
        os.chdir(cwd)


MINIMAL = """\
name: doc
initial: s
scope: ["."]
states:
  s:
    action: "true"
{body}
    on_yes: d
    on_no: d
    on_error: d
  d: {{terminal: true}}
"""


@pytest.mark.parametrize(
    "body",
    [b for lang, info, b in BLOCKS if lang == "yaml" and not info],
    ids=lambda b: b.splitlines()[0][:30],
)
def test_every_other_yaml_example_loads(body: str) -> None:
    data = yaml.safe_load(body)
    if isinstance(data, list):  # a judges: list entry
        text = "evaluate:\n  type: assessment\n  judges:\n" + textwrap.indent(body, "    ")
    elif list(data) == ["evaluate"]:
        text = body
    elif len(data) == 1 and "evaluate" in next(iter(data.values())):  # a whole state
        text = yaml.safe_dump({"evaluate": next(iter(data.values()))["evaluate"]})
    elif "type" in data:
        text = "evaluate:\n" + textwrap.indent(body, "  ")
    else:
        text = "evaluate:\n  type: assessment\n" + textwrap.indent(body, "  ")
    loop, _, problems = check_loop_text(MINIMAL.format(body=textwrap.indent(text, "    ")))
    assert loop is not None, [d.render() for d in problems]
