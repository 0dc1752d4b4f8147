"""Report benchmarks: what `explain` and `report --html` cost on a long run, against two
baselines measured in the same run: a fresh Python process that only parses every line of the
run's `events.jsonl` with `json` (the floor: explain cannot read the log faster), and
`ll-loop history RUN --json` (parses every event and prints them).

A run of an action-less state (5 events a step) is made once; then each command runs in a fresh
process, median of 5 interleaved rounds. Also prints the report's size.

`python -m bench report` (10,000 steps); `python bench/bench_report.py --steps 100000`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.bench_run import IDLE_LOOP, ll_loop  # noqa: E402

STEPS = 10_000
PARSE_ONLY = "import json, sys\nfor line in open(sys.argv[1], 'rb'):\n    json.loads(line)\n"


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{command}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else STEPS
    rounds = 5
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        loop_file = work / "idle.yaml"
        loop_file.write_text(IDLE_LOOP.format(steps=steps))
        subprocess.run([ll_loop(), "run", str(loop_file), "--quiet"], cwd=work, check=False)
        run_dir = next((work / ".loops" / "runs").iterdir())
        out = work / "report.html"
        commands = {
            "json.loads of every event": [
                sys.executable,
                "-c",
                PARSE_ONLY,
                str(run_dir / "events.jsonl"),
            ],
            "history RUN --json": [ll_loop(), "history", run_dir.name, "--json"],
            "explain RUN": [ll_loop(), "explain", run_dir.name],
            "explain RUN --format json": [ll_loop(), "explain", run_dir.name, "--format", "json"],
            "report RUN --html": [ll_loop(), "report", run_dir.name, "--html", "--out", str(out)],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(rounds):
            for name, command in commands.items():
                times[name].append(timed(command, work))
        base = statistics.median(times["json.loads of every event"])
        print(f"a run of {steps} steps; median of {rounds} fresh processes each")
        for name, values in times.items():
            median = statistics.median(values)
            print(f"  {name:<28} {median:6.3f}s  ratio {median / base:.2f}x")
        print(f"  report.html: {out.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
