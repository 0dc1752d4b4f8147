"""Helpers for the scaffold and built-in eval loop tests: a project with issues, the real CLI,
and a scripted loopback LLM that answers prompt actions with text and judges with verdicts."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.load.issuefile import Issue, load_issue
from engine.load.loader import check_loop_text
from engine.model.errors import Diagnostic
from lint import lint_loop
from tests import cli
from tests.loopback_server import LoopbackServer, Reply, text_reply, verdict_reply

REPO = Path(__file__).resolve().parent.parent
ISSUES = Path(__file__).parent / "data" / "issues"


def issue_of(name: str) -> Issue:
    """The fixture issue whose file is called `name`."""
    return load_issue(next(ISSUES.rglob(name)))


def lint_findings(text: str) -> list[tuple[str, str]]:
    """Load (must succeed) and lint; (code, message) of every warning and error but LL060."""
    loop, positions, problems = check_loop_text(text, "gen.yaml")
    assert loop is not None, [p.render() for p in problems]
    found = lint_loop(loop, positions)
    return [(d.code, d.message) for d in found if d.severity != "info" and d.code != "LL060"]


def placeholder_warnings(text: str, file: str = "") -> list[Diagnostic]:
    """What `validate` says about a scaffold's unfilled markers: lint's LL060 findings."""
    loop, positions, problems = check_loop_text(text, file)
    assert loop is not None, [p.render() for p in problems]
    return [d for d in lint_loop(loop, positions) if d.code == "LL060"]


def make_project(root: Path) -> Path:
    """A project directory whose `.issues/` holds every fixture issue."""
    shutil.copytree(ISSUES, root / ".issues")
    return root


def ll_loop(*args: str, cwd: Path, timeout: float = 120, process: bool = False) -> cli.Ran:
    """Run the `ll-loop` command line (in this process unless `process`: tests/cli.py)."""
    return cli.ll_loop(cwd, *args, env={"NO_COLOR": "1"}, timeout=timeout, process=process)


@dataclass
class Judge:
    """One scripted judge answer; `evidence=None` quotes the start of the judged text."""

    verdict: str
    evidence: str | None = None
    confidence: float = 0.9


@dataclass
class ScriptedLlm:
    """Answers prompt actions from `texts` and judge calls from `verdicts`, in order.

    Requests are told apart by the forced tool a judge call carries, so the order of prompt
    and judge calls does not have to be scripted; running out of answers is a 500.
    """

    server: LoopbackServer
    texts: deque[str] = field(default_factory=deque)
    verdicts: deque[Judge] = field(default_factory=deque)
    judged: list[dict[str, Any]] = field(default_factory=list)
    prompted: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server.default = self._answer

    def say(self, *texts: str) -> ScriptedLlm:
        self.texts.extend(texts)
        return self

    def judge(self, *verdicts: Judge | str) -> ScriptedLlm:
        self.verdicts.extend(v if isinstance(v, Judge) else Judge(v) for v in verdicts)
        return self

    def _answer(self, request: dict[str, Any]) -> Reply:
        if request.get("tools"):
            self.judged.append(request)
            if not self.verdicts:
                return Reply(
                    status=500,
                    body={"type": "error", "error": {"type": "api_error", "message": "no more"}},
                )
            wanted = self.verdicts.popleft()
            evidence = wanted.evidence
            if evidence is None:
                evidence = _judged_text(request).split("\n", 1)[0][:60]
            build = verdict_reply(wanted.verdict, evidence=evidence, confidence=wanted.confidence)
        else:
            self.prompted.append(request)
            if not self.texts:
                return Reply(
                    status=500,
                    body={"type": "error", "error": {"type": "api_error", "message": "no more"}},
                )
            build = text_reply(self.texts.popleft())
        return build(request) if callable(build) else build


def request_text(request: dict[str, Any]) -> str:
    """Everything a request sends as text: system prompt and every message block."""
    parts: list[str] = []
    system = request.get("system")
    if isinstance(system, str):
        parts.append(system)
    elif isinstance(system, list):
        parts += [b.get("text", "") for b in system if isinstance(b, dict)]
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [b.get("text", "") for b in content if isinstance(b, dict)]
    return "\n".join(parts)


def _judged_text(request: dict[str, Any]) -> str:
    """The judged text inside a judge request, from the last transcript marker on."""
    text = request_text(request)
    for marker in ("TRANSCRIPT:", "REPORT:"):
        if marker in text:
            return text[text.rindex(marker) :]
    return text


@dataclass(frozen=True)
class Run:
    """A finished `ll-loop run --json`: exit code, the JSON result and the path it took."""

    exit_code: int
    result: dict[str, Any]
    path: tuple[str, ...]
    run_dir: Path
    stderr: str


def run_loop(loop: str, *, cwd: Path, args: Iterable[str] = ()) -> Run:
    """`ll-loop run LOOP --json` and the states it entered at depth 0, in order."""
    done = ll_loop("run", loop, "--json", *args, cwd=cwd)
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"no JSON result: {done.stdout!r}\n{done.stderr}") from exc
    run_dir = cwd / ".loops" / "runs" / str(result.get("run_id"))
    path: list[str] = []
    events = run_dir / "events.jsonl"
    if events.is_file():
        for line in events.read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "state_enter" and event.get("depth", 0) == 0:
                path.append(event["state"])
    if result.get("final_state") and (not path or path[-1] != result["final_state"]):
        path.append(result["final_state"])
    return Run(done.returncode, result, tuple(path), run_dir, done.stderr)


def put_cli_on_path(bin_dir: Path) -> str:
    """A directory holding an `ll-loop` script for this checkout; returns a PATH with it first.

    Loops that call `ll-loop` from a shell state (outer-loop-eval) then run this code, not
    whatever `ll-loop` happens to be installed.
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "ll-loop"
    script.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{REPO}" exec "{sys.executable}" -c '
        '"import sys; sys.argv[0] = \'ll-loop\'; from engine.cli import main; main()" "$@"\n'
    )
    script.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def counter_script(path: Path, outputs: list[tuple[int, str]]) -> Path:
    """A bash script that, on its n-th call, prints outputs[n][1] and exits outputs[n][0]
    (the last entry repeats). The call count lives next to the script."""
    cases = "\n".join(
        f"  {n}) printf '%s\\n' {shlex.quote(text)}; exit {code} ;;"
        for n, (code, text) in enumerate(outputs[:-1], start=1)
    )
    last_code, last_text = outputs[-1]
    count = path.with_suffix(".count")
    path.write_text(
        "#!/bin/bash\n"
        f'n=$(( $(cat "{count}" 2>/dev/null || echo 0) + 1 ))\n'
        f'echo "$n" > "{count}"\n'
        'case "$n" in\n'
        f"{cases}\n"
        f"  *) printf '%s\\n' {shlex.quote(last_text)}; exit {last_code} ;;\n"
        "esac\n"
    )
    return path
