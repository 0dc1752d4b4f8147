"""Benchmark the LLM layer: concurrent samples, and that non-LLM paths never import anthropic.

1. `samples: 3` against the loopback Messages API with 200 ms latency per answer, compared with
   `samples: 1` measured in the same run: the ratio should stay within 1.5× (samples run
   concurrently, so three cost about one round trip).
2. In fresh interpreters (`python -X importtime`): importing `engine.llm` and
   `engine.runtime.interpreter`, and running a loop without LLM states, must not import
   `anthropic`; a real SDK client does, and its import cost is printed for reference.
Run: `.venv/bin/python -m bench llm` or `.venv/bin/python bench/bench_llm.py`.
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

from engine.llm import judge_text  # noqa: E402
from tests.loopback_server import LoopbackServer, verdict_reply  # noqa: E402

LATENCY = 0.2
REPEATS = 5
TEXT = "build finished: all 40 tests passed"

NO_LLM_LOOP = """\
name: shell-only
initial: a
scope: [src]
states:
  a: {action: "true", next: done}
  done: {terminal: true}
"""


def time_judge(server: LoopbackServer, samples: int) -> float:
    """Median wall seconds of one judge call with `samples` samples."""
    walls = []
    for _ in range(REPEATS):
        server.push(
            *[
                verdict_reply("yes", evidence="all 40 tests passed", delay=LATENCY)
                for _ in range(samples)
            ]
        )
        started = time.perf_counter()
        verdict = judge_text("Did all tests pass?", TEXT, samples=samples)
        walls.append(time.perf_counter() - started)
        assert verdict.name == "yes", verdict
    return statistics.median(walls)


def bench_samples() -> bool:
    server = LoopbackServer().start()
    os.environ.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="sk-bench")
    try:
        judge_text("warm-up", TEXT)  # pays the SDK import and connection set-up once
        one = time_judge(server, 1)
        three = time_judge(server, 3)
    finally:
        server.stop()
    ratio = three / one
    ok = ratio <= 1.5
    print(
        f"judge samples=1: {one * 1000:.0f} ms   samples=3: {three * 1000:.0f} ms   "
        f"ratio {ratio:.2f}x (budget 1.5x) {'OK' if ok else 'OVER BUDGET'}"
    )
    return ok


def imports_anthropic(code: str, *args: str, cwd: Path | None = None) -> tuple[bool, float, int]:
    """Run `code` in a fresh interpreter with -X importtime: (imported anthropic?, ms, exit)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=env,
        check=False,
    )
    cost = 0.0
    found = False
    for line in proc.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == "anthropic":
            found, cost = True, int(parts[1]) / 1000
    return found, cost, proc.returncode


def bench_imports() -> bool:
    ok = True
    checks: list[tuple[str, str, tuple[str, ...], Path | None, bool]] = [
        ("import engine.llm", "import engine.llm", (), None, False),
        (
            "import engine.runtime.interpreter",
            "import engine.runtime.interpreter, engine.llm.services",
            (),
            None,
            False,
        ),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "loop.yaml").write_text(NO_LLM_LOOP)
        checks.append(
            (
                "ll-loop run (no LLM states)",
                "import sys; from engine.cli import main; sys.exit(main())",
                ("run", "loop.yaml", "--quiet"),
                Path(tmp),
                False,
            )
        )
        checks.append(
            (
                "an SDK client (reference)",
                "from engine.llm.client import AnthropicClient; "
                "AnthropicClient(timeout=1)._client()",
                (),
                None,
                True,
            )
        )
        for label, code, args, cwd, expected in checks:
            found, cost, code_ = imports_anthropic(code, *args, cwd=cwd)
            good = found == expected and code_ == 0
            ok = ok and good
            what = f"imports anthropic ({cost:.0f} ms cumulative)" if found else "no anthropic"
            verdict = "OK" if good else f"UNEXPECTED (exit {code_})"
            print(f"{label:32} {what:40} {verdict}")
    return ok


def main() -> None:
    samples_ok = bench_samples()
    imports_ok = bench_imports()
    print("bench_llm:", "OK" if samples_ok and imports_ok else "FAILED")


if __name__ == "__main__":
    main()
