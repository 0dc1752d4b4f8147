"""Start-up: `ll-loop validate` of a 20-state loop against the cheapest possible look at the same
file, `python -c "import yaml; yaml.safe_load(open(F))"`, both fresh processes.

The baseline is what any Python tool that reads a YAML file pays (interpreter start, the YAML
library, the parse); the ratio is what ll-loop adds on top to check the schema and every lint
rule. Target: ratio <= 3.0 (the reference system: 24x). Median of interleaved pairs, so both
sides ride the same drift of a shared machine.

`python -m bench run startup`; `python -m bench.bench_startup [--trials N] [--instructions]` too
(`--instructions` adds valgrind's instruction counts, which a busy machine does not skew).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import precompile
from bench.bench_load import generate_loop
from bench.bench_run import ll_loop

BASELINE = "import yaml, sys; yaml.safe_load(open(sys.argv[1]))"


def measure(argv: list[str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh process; CPU (user + system, from `wait4`) moves less
    than wall time when other work shares the machine."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    assert proc.stderr is not None
    errors = proc.stderr.read().decode()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} exited {proc.returncode}: {errors}")
    return elapsed, usage.ru_utime + usage.ru_stime


def bench_startup(trials: int = 15) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        loop_file = work / "twenty.yaml"
        loop_file.write_text(generate_loop(20))
        ours = [ll_loop(), "validate", str(loop_file)]
        base = [sys.executable, "-c", BASELINE, str(loop_file)]
        for argv in (ours, base):  # warm the page cache and the .pyc files
            measure(argv, work)
        yaml_s, validate_s = [], []
        for _ in range(trials):
            yaml_s.append(measure(base, work))
            validate_s.append(measure(ours, work))
    b = [statistics.median(t[i] for t in yaml_s) for i in (0, 1)]
    o = [statistics.median(t[i] for t in validate_s) for i in (0, 1)]
    print(f"median of {trials} interleaved pairs        wall       CPU")
    print(f"python -c 'yaml.safe_load(F)'      {b[0] * 1000:8.1f} ms {b[1] * 1000:8.1f} ms")
    print(f"ll-loop validate F                 {o[0] * 1000:8.1f} ms {o[1] * 1000:8.1f} ms")
    print(
        f"ratio (wall) {o[0] / b[0]:.2f}x, (CPU) {o[1] / b[1]:.2f}x"
        "  (target <= 3.00x; reference system 24x)"
    )
    load = os.getloadavg()[0]
    if load > (os.cpu_count() or 1) * 0.5:
        print(f"note: load average {load:.1f} on {os.cpu_count()} CPUs; wall times are noisy")
    return o[0] / b[0]


def instructions(argv: list[str], cwd: Path) -> int | None:
    """Instructions one process executes (valgrind's count): the same on a busy machine as on an
    idle one, unlike any time. None without valgrind."""
    import re
    import shutil

    if shutil.which("valgrind") is None:
        return None
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         *argv],
        cwd=cwd, capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    return int(found.group(1).replace(",", "")) if found else None


def bench_instructions() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        loop_file = work / "twenty.yaml"
        loop_file.write_text(generate_loop(20))
        base = instructions([sys.executable, "-c", BASELINE, str(loop_file)], work)
        ours = instructions([ll_loop(), "validate", str(loop_file)], work)
    if base is None or ours is None:
        print("instructions: valgrind is not available")
        return
    print(
        f"instructions (valgrind): yaml.safe_load {base / 1e6:.0f} M, "
        f"validate {ours / 1e6:.0f} M, ratio {ours / base:.2f}x"
    )


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    trials = int(args[args.index("--trials") + 1]) if "--trials" in args else 15
    precompile()
    bench_startup(trials)
    if "--instructions" in args:
        bench_instructions()


if __name__ == "__main__":
    main()
