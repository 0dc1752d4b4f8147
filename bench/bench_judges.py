"""Benchmark the judge engine.

1. One state's six judges (2 deterministic builtins, 1 inline check, 1 numeric LLM judge, 1
   `llm_review` with 3 reviewers, 1 metric command) against the loopback Messages API with
   200 ms latency per answer, compared with one LLM judge alone measured in the same run: the
   judges run concurrently, so the ratio should stay within 1.5x.
2. 10,000 inline `check` evaluations of a judge compiled once: within 0.5 s.
3. In fresh interpreters (`python -X importtime`): `ll-loop run` of a loop without judges, and of
   one with deterministic judges only, imports neither `anthropic` nor `jinja2`.
Run: `.venv/bin/python -m bench run judges` or `.venv/bin/python bench/bench_judges.py`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.judges import JudgeEnv, assess, build_record, compile_judges, run_judge  # noqa: E402
from engine.llm.services import messages_port  # noqa: E402
from engine.load.loader import load_loop_text  # noqa: E402
from engine.model.ports import ActionResult  # noqa: E402
from engine.runtime.actions import ActionRunner  # noqa: E402
from tests.loopback_server import LoopbackServer, Reply, forced_tool_name, tool_reply  # noqa: E402

LATENCY = 0.2
REPEATS = 5
CHECKS = 10_000

SIX = """\
name: six
initial: s
scope: ["."]
states:
  s:
    action: "true"
    evaluate:
      type: assessment
      judges:
        - {name: mentions, builtin: regex, arguments: {pattern: "tests passed"}}
        - {name: exited, builtin: exit_code}
        - name: long_enough
          check: return len(outputs["stdout"]) > 10, "length"
        - name: quality
          prompt: "Rate the build log 1-5. Quote the line you rely on."
      expectations:
        - {type: llm_review, criteria: "Is the build sound?"}
      metrics:
        - {name: tests, command: "echo 40", threshold: 30}
    on_yes: d
    on_no: d
    on_error: d
  d: {terminal: true}
"""

ANSWERS = {
    "submit_score": {"score": 4, "reason": "clean", "evidence": "40 tests passed"},
    "submit_scores": {
        "correctness": 4,
        "completeness": 4,
        "code_quality": 4,
        "edge_cases": 4,
        "reason": "sound",
    },
}

NO_JUDGES = """\
name: plain
initial: a
scope: ["."]
states:
  a: {action: "echo ok", next: done}
  done: {terminal: true}
"""

DETERMINISTIC = """\
name: checked
initial: a
scope: ["."]
states:
  a:
    action: "echo 40 tests passed"
    evaluate:
      type: assessment
      judges:
        - {name: ok, builtin: regex, arguments: {pattern: passed}}
        - {name: n, check: "return 'passed' in outputs['stdout']"}
      expectations:
        - {type: test, command: "true"}
      metrics:
        - {command: "echo 40", threshold: 30}
    on_yes: done
    on_no: done
    on_error: done
  done: {terminal: true}
"""


class Commands:
    """Bash in the current directory through the loop's own action runner."""

    def run_command(self, command: str, *, timeout: float | None, label: str) -> ActionResult:
        runner = ActionRunner(cwd=Path.cwd(), env=dict(os.environ))
        try:
            return runner.run_shell(command, state=label, timeout=timeout)
        finally:
            runner.close()


def slow_model(request: dict[str, object]) -> Reply:
    return tool_reply(ANSWERS[forced_tool_name(request)], delay=LATENCY)(request)  # type: ignore[arg-type, operator, no-any-return]


def bench_six_judges() -> bool:
    server = LoopbackServer().start()
    server.default = slow_model
    os.environ.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-bench")
    judges = compile_judges(load_loop_text(SIX).states["s"].evaluate.judges)  # type: ignore[union-attr]
    llm_alone = [j for j in judges if j.judge.name == "quality"]
    record = build_record(stdout="build finished: 40 tests passed\n")
    env = JudgeEnv(workspace=Path.cwd(), commands=Commands(), messages=messages_port())
    try:
        assess(judges, record, env)  # pays the SDK import and connection set-up once
        one, six = [], []
        for _ in range(REPEATS):  # interleaved, so both see the same machine load
            started = time.perf_counter()
            assert run_judge(llm_alone[0], record, env).status == "ok"
            one.append(time.perf_counter() - started)
            started = time.perf_counter()
            assessment = assess(judges, record, env)
            six.append(time.perf_counter() - started)
            assert assessment.verdict == "yes", assessment.details()
    finally:
        server.stop()
    ratio = statistics.median(six) / statistics.median(one)
    ok = ratio <= 1.5
    print(
        f"one LLM judge: {statistics.median(one) * 1000:.0f} ms   six judges (5 model calls "
        f"+ 1 command): {statistics.median(six) * 1000:.0f} ms   ratio {ratio:.2f}x "
        f"(budget 1.5x) {'OK' if ok else 'OVER BUDGET'}"
    )
    return ok


def bench_checks() -> bool:
    [judge] = compile_judges(
        load_loop_text(SIX).states["s"].evaluate.judges[2:3]  # type: ignore[union-attr]
    )
    record = build_record(stdout="build finished: 40 tests passed\n")
    env = JudgeEnv(workspace=Path.cwd())
    run_judge(judge, record, env)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(CHECKS):
            run_judge(judge, record, env)
        best = min(best, time.perf_counter() - started)
    baseline = _plain_calls(record)
    ok = best <= 0.5
    print(
        f"{CHECKS:,} inline checks: {best * 1000:.0f} ms ({best / CHECKS * 1e6:.1f} us each; "
        f"a bare Python call of the same snippet: {baseline / CHECKS * 1e6:.2f} us) "
        f"(budget 500 ms) {'OK' if ok else 'OVER BUDGET'}"
    )
    return ok


def _plain_calls(record: dict[str, object]) -> float:
    def snippet(outputs: dict[str, object]) -> tuple[bool, str]:
        return len(str(outputs["stdout"])) > 10, "length"

    started = time.perf_counter()
    for _ in range(CHECKS):
        snippet(record)
    return time.perf_counter() - started


def imported(loop: str) -> tuple[set[str], int]:
    """Top-level modules `ll-loop run` imported for `loop` in a fresh interpreter."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "loop.yaml").write_text(loop)
        proc = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "-c",
                "import sys; from engine.cli import main; sys.exit(main())",
                "run",
                "loop.yaml",
                "--quiet",
            ],
            capture_output=True,
            text=True,
            cwd=tmp,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            check=False,
        )
    names = set()
    for line in proc.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3:
            names.add(parts[2].split(".")[0])
    return names, proc.returncode


def bench_imports() -> bool:
    ok = True
    for label, loop in (("no judges", NO_JUDGES), ("deterministic judges", DETERMINISTIC)):
        names, code = imported(loop)
        heavy = sorted({"anthropic", "jinja2"} & names)
        good = not heavy and code == 0
        ok = ok and good
        what = f"imports {', '.join(heavy)}" if heavy else "neither anthropic nor jinja2"
        print(f"ll-loop run ({label}): {what:40} {'OK' if good else f'UNEXPECTED (exit {code})'}")
    return ok


def main() -> None:
    results = [bench_six_judges(), bench_checks(), bench_imports()]
    print("bench_judges:", "OK" if all(results) else "FAILED")


if __name__ == "__main__":
    main()
