"""Helpers for the judge tests: judges built the way the loader builds them, an environment
wired to the loopback server, and scripted answers chosen by the tool a request asks for."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from engine.judges import JudgeEnv
from engine.llm.services import messages_port
from engine.load.loader import load_loop_text
from engine.model.judges import Judge
from tests.loopback_server import Reply, forced_tool_name, text_reply, tool_reply

SHELL_LOOP = """\
name: judged
initial: work
scope: ["."]
states:
  work:
    action: {action}
    evaluate:
{evaluate}
    on_yes: done
    on_no: failed
    on_error: broken
  done: {{terminal: true}}
  failed: {{terminal: true, failure: true}}
  broken: {{terminal: true, failure: true}}
"""


def loop_text(evaluate: str, action: str = "echo 'all 5 checks passed'") -> str:
    """A loop whose `work` state runs `action` and is judged by the `evaluate:` block."""
    body = textwrap.indent(textwrap.dedent(evaluate).strip("\n"), " " * 6)
    return SHELL_LOOP.format(action=action, evaluate=body)


def judges_of(evaluate: str, file: str = "judges.yaml") -> tuple[Judge, ...]:
    """The judges of an `evaluate:` block, loaded as a loop would load them."""
    return load_loop_text(loop_text(evaluate), file).states["work"].evaluate.judges  # type: ignore[union-attr]


def judge_of(entry: str) -> Judge:
    """One agent_eval judge entry (YAML text of a list item's mapping)."""
    first, *rest = textwrap.dedent(entry).strip().splitlines()
    item = "\n".join([f"  - {first}", *(f"    {line}" for line in rest)])
    return judges_of(f"type: assessment\njudges:\n{item}")[0]


def llm_env(workspace: Path, run_dir: Path | None = None, **kwargs: Any) -> JudgeEnv:
    """An environment whose model calls go to the loopback server (set up by its fixture)."""
    return JudgeEnv(workspace=workspace, messages=messages_port(run_dir=run_dir), **kwargs)


def by_tool(answers: dict[str, dict[str, Any]], delay: float = 0.0) -> Any:
    """A server default answering each request through the tool it forces; a request that
    forces none (an exploring reviewer's turn) gets a text answer, ending the exploration."""

    def answer(request: dict[str, Any]) -> Reply:
        if request.get("tool_choice", {}).get("type") != "tool":
            return text_reply("Nothing more to look at.", delay=delay)(request)  # type: ignore[operator, no-any-return]
        script = tool_reply(answers[forced_tool_name(request)], delay=delay)
        return script(request)  # type: ignore[operator, no-any-return]

    return answer
