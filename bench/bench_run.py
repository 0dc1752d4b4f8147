"""Run-path benchmarks (issue 2, "Performance"), each against a baseline measured in this run.

(a) 1000 steps of `action: "true"` through the real `ll-loop run` (a fresh process: startup,
    load, lint, 1000 spawns, events, state.json) vs 1000 bare `bash -c true` spawns from Python.
    Target: ratio ≤ 1.3 (the reference system: 2.4). Printed: the ratio of the medians, every
    pair's ratio, the best of each side, and a 95% interval for the median pair ratio with a
    verdict (PASS / FAIL / INCONCLUSIVE when the interval straddles the target).
(b) 100,000 steps of an action-less state (evaluated, captured, routed, an event per phase and
    state.json per step, like any state; only the bash spawn is left out, which would take minutes
    and tells nothing about the interpreter's memory). Peak RSS of the `ll-loop` process from
    `wait4` (the child's own rusage). Target: < 100 MB.

`python -m bench run` runs it; `python bench/bench_run.py [--steps N]` too.
"""

from __future__ import annotations

import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import precompile  # noqa: E402

TRUE_LOOP = """\
name: bench-true
description: 1000 steps of a trivial shell action.
initial: tick
scope: ["."]
max_steps: {steps}
states:
  tick:
    action: "true"
    on_yes: $current
    on_no: done
  done:
    terminal: true
"""

IDLE_LOOP = """\
name: bench-idle
description: Many steps of an action-less state, for memory.
initial: tick
scope: ["."]
max_steps: {steps}
states:
  tick:
    evaluate:
      type: exit_code
    capture: tick
    on_yes: $current
    on_no: done
  done:
    terminal: true
"""


def ll_loop() -> str:
    """The installed CLI next to this interpreter (the venv's), else the one on PATH."""
    candidate = Path(sys.executable).with_name("ll-loop")
    return str(candidate) if candidate.exists() else shutil.which("ll-loop") or "ll-loop"


def bare_spawns(count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        subprocess.run(["bash", "-c", "true"], check=False)
    return time.perf_counter() - start


def cli_run(loop_file: Path, cwd: Path) -> tuple[float, int, int]:
    """Wall seconds, exit code and peak RSS (KiB) of one `ll-loop run`."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [ll_loop(), "run", str(loop_file), "--quiet", "--json"],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 3:  # max_steps is the expected end of both benchmark loops
        assert proc.stderr is not None
        print(proc.stderr.read().decode(), file=sys.stderr)
    proc.returncode = code
    if proc.stderr is not None:
        proc.stderr.close()
    return elapsed, code, usage.ru_maxrss


def bench_spawn_ratio(steps: int = 1000, trials: int = 5) -> float:
    """Median of `trials` interleaved pairs (bare spawns, then a run): this machine's speed
    drifts by +-10% within a minute, and interleaving puts both sides on the same drift."""
    precompile()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        loop_file = work / "true.yaml"
        loop_file.write_text(TRUE_LOOP.format(steps=steps))
        cli_run(loop_file, work)  # warm the page cache and .pyc files
        bare, ours = [], []
        for _ in range(trials):
            bare.append(bare_spawns(steps))
            elapsed, code, _ = cli_run(loop_file, work)
            ours.append(elapsed)
            if code != 3:
                print(f"ll-loop run exited {code}, expected 3 (max_steps)")
        b, o = statistics.median(bare), statistics.median(ours)
    print(f"(a) {steps} bare `bash -c true` spawns: {b:.3f}s (median of {trials})")
    print(f"    ll-loop run, {steps} steps of `true`: {o:.3f}s")
    pairs = sorted(ours_one / bare_one for bare_one, ours_one in zip(bare, ours, strict=True))
    print(
        f"    ratio {o / b:.2f}x (target <= 1.30x; reference system 2.4x; each pair: "
        f"{', '.join(f'{r:.2f}' for r in pairs)})"
    )
    print(
        f"    best of {trials} each: {min(ours):.3f}s vs {min(bare):.3f}s, "
        f"ratio {min(ours) / min(bare):.2f}x (interference only ever adds time)"
    )
    low, high = median_interval(pairs)
    verdict = "PASS" if high <= 1.3 else "FAIL" if low > 1.3 else "INCONCLUSIVE"
    print(
        f"    median pair {statistics.median(pairs):.2f}x, 95% interval [{low:.2f}, {high:.2f}] "
        f"against 1.30x: {verdict} (an interval across the target is inconclusive, as in "
        "ll-harness)"
    )
    load = os.getloadavg()[0]
    if load > (os.cpu_count() or 1) * 0.5:
        print(f"    note: load average {load:.1f} on {os.cpu_count()} CPUs; the ratio is noisy")
    return o / b


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median: the order statistics k and n-k+1, with k
    the largest for which a Binomial(n, 1/2) falls below k with probability <= (1-c)/2. With
    fewer than nine values it is the whole range (fewer than six cover less than 95%)."""
    ordered, n = sorted(values), len(values)
    tail, k, below = (1 - confidence) / 2, 0, 0.0
    while k < n // 2:
        below_next = below + math.comb(n, k) / 2**n
        if below_next > tail:
            break
        below, k = below_next, k + 1
    k = max(k, 1)
    return ordered[k - 1], ordered[n - k]


# Linux carries a process's peak RSS across fork and exec, so a child forked from a large parent
# (e.g. `python -m bench` after the lint benchmark built 4000-state loops) would report the
# parent's peak. A small fresh Python process launches `ll-loop` and reports the child's own peak.
MEASURE = """
import os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
print(time.perf_counter() - start, os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def measured_run(loop_file: Path, cwd: Path) -> tuple[float, int, int]:
    """Like `cli_run`, launched from a fresh small process so the peak RSS is ll-loop's own."""
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, ll_loop(), "run", str(loop_file), "--quiet", "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return float(out[0]), int(out[1]), int(out[2])


def bench_memory(steps: int = 100_000) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        loop_file = work / "idle.yaml"
        loop_file.write_text(IDLE_LOOP.format(steps=steps))
        elapsed, code, rss_kib = measured_run(loop_file, work)
        events = sum(
            1 for _ in next((work / ".loops" / "runs").iterdir()).joinpath("events.jsonl").open()
        )
    mib = rss_kib / 1024
    print(f"(b) {steps} action-less steps: {elapsed:.1f}s, exit {code}, {events} events")
    print(f"    peak RSS {mib:.1f} MiB (target < 100 MB)")
    return mib


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 1000
    bench_spawn_ratio(steps)
    if "--no-memory" not in args:
        bench_memory()


if __name__ == "__main__":
    main()
