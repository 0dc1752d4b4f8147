"""Report benchmarks: what `explain` and `report --html` cost on a long run, against reading the
same run with `ll-loop history RUN --json` (parses every event and prints them), measured in the
same run.

A 10,000-step run of an action-less state (50,000 events) is made once; then each command runs
in a fresh process, median of 5 interleaved rounds. Also prints the report's size.

`python -m bench report`.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.bench_run import IDLE_LOOP, ll_loop

STEPS = 10_000


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run([ll_loop(), *args], cwd=cwd, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{args}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return time.perf_counter() - start


def main(steps: int = STEPS, rounds: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        loop_file = work / "idle.yaml"
        loop_file.write_text(IDLE_LOOP.format(steps=steps))
        subprocess.run([ll_loop(), "run", str(loop_file), "--quiet"], cwd=work, check=False)
        run_id = next((work / ".loops" / "runs").iterdir()).name
        out = work / "report.html"
        commands = {
            "history RUN --json": ["history", run_id, "--json"],
            "explain RUN": ["explain", run_id],
            "explain RUN --format json": ["explain", run_id, "--format", "json"],
            "report RUN --html": ["report", run_id, "--html", "--out", str(out)],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(rounds):
            for name, args in commands.items():
                times[name].append(timed(args, work))
        base = statistics.median(times["history RUN --json"])
        print(f"a run of {steps} steps; median of {rounds} fresh processes each")
        for name, values in times.items():
            median = statistics.median(values)
            print(f"  {name:<28} {median:6.3f}s  ratio {median / base:.2f}x")
        print(f"  report.html: {out.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
