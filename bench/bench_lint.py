"""Validation scales linearly: load + every lint rule on generated 2000- and 4000-state loops.

Targets (issue 4): 2000 states under 2 s, 4000 states at most 2.2x the 2000-state time. Also
times `ll-loop validate` of a 20-state loop end to end (target: under 0.2 s median wall).
Run: `.venv/bin/python bench/bench_lint.py`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import fresh_process_floats


def generate(n: int, salt: str = "") -> str:
    """A loop of `n` work states: check/fix pairs with captures, retries and interpolation.

    `salt` makes every expression text new, so no cache from an earlier repetition helps.
    """
    lines = [
        f"name: generated-{n}",
        "initial: s0",
        'scope: ["."]',
        f"max_steps: {4 * n}",
        "states:",
    ]
    for i in range(0, n, 2):
        check, fix, after = f"s{i}", f"s{i + 1}", f"s{i + 2}" if i + 2 < n else "done"
        previous = f"${{captured.c{i - 2}{salt}.output | default('')}}" if i else "start"
        lines += [
            f"  {check}:",
            f'    action: echo "{previous}" && test -f ok{i}',
            f"    capture: c{i}{salt}",
            f"    on_yes: {after}",
            f"    on_no: {fix}",
            "    on_error: failed",
            "    max_retries: 3",
            "    on_retry_exhausted: failed",
            f"  {fix}:",
            f'    action: touch ok{i} && echo "${{captured.c{i}{salt}.output}}"',
            f"    next: {check}",
            "    on_error: failed",
        ]
    lines += [
        "  done:",
        "    terminal: true",
        "  failed:",
        "    terminal: true",
        "    failure: true",
    ]
    return "\n".join(lines) + "\n"


def validate_once(n: int, rep: int) -> tuple[float, float]:
    """(wall, CPU) seconds of load (schema) + lint of a fresh `n`-state loop, in process.

    CPU time is printed too because the machines this runs on are often shared: wall time then
    measures the neighbours as much as the code, CPU time of this process much less so.
    """
    from engine.load.loader import check_loop_text
    from lint import lint_loop

    text = generate(n, salt=f"_{n}_{rep}")
    wall, cpu = time.perf_counter(), time.process_time()
    loop, positions, problems = check_loop_text(text, "generated.yaml")
    assert loop is not None and not problems, problems[:3]
    diagnostics = lint_loop(loop, positions)
    elapsed = time.perf_counter() - wall, time.process_time() - cpu
    assert not [d for d in diagnostics if d.severity != "info"], diagnostics[:3]
    return elapsed


# One measurement per fresh process, as `ll-loop validate` runs: in a long-lived process the
# second size inherits the heap (and the warm pages) the first one grew, which skews the ratio
# by +-15% depending on the order. Imports and a 20-state warm-up are not timed.
FRESH = """
import sys
from bench.bench_lint import validate_once
validate_once(20, 0)
wall, cpu = validate_once(int(sys.argv[1]), int(sys.argv[2]))
print(wall, cpu)
"""


def validate_fresh(n: int, rep: int) -> tuple[float, float]:
    wall, cpu = fresh_process_floats(FRESH, n, rep)
    return wall, cpu


def validate_pair(repeat: int = 5) -> tuple[tuple[float, float], tuple[float, float]]:
    """Best (wall, CPU) of `repeat` fresh processes for 2000 and for 4000 states, measured
    alternately. The best, as `timeit` takes it: validation is CPU-bound work that noise can only
    slow down, and on this shared machine the median of five still moved the ratio by +-0.1."""
    small, large = [], []
    for rep in range(repeat):
        small.append(validate_fresh(2000, rep))
        large.append(validate_fresh(4000, rep))

    def best(pairs: list[tuple[float, float]]) -> tuple[float, float]:
        return min(p[0] for p in pairs), min(p[1] for p in pairs)

    return best(small), best(large)


def cli_seconds(n_states: int = 20, repeat: int = 7) -> float:
    """Median wall time of `ll-loop validate` on a generated loop, as a user runs it."""
    exe = Path(sys.executable).with_name("ll-loop")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "loop.yaml"
        path.write_text(generate(n_states))
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([str(exe), "validate", str(path)], check=True, capture_output=True)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    (small, small_cpu), (large, large_cpu) = validate_pair()
    print(f"validate 2000 states: {small:.3f} s wall, {small_cpu:.3f} s CPU  (target < 2 s)")
    print(f"validate 4000 states: {large:.3f} s wall, {large_cpu:.3f} s CPU")
    print(
        f"ratio 4000/2000:      {large / small:.2f}x wall, {large_cpu / small_cpu:.2f}x CPU  "
        "(target <= 2.2x)"
    )
    print(f"ll-loop validate, 20 states (median wall): {cli_seconds():.3f} s  (target < 0.2 s)")


if __name__ == "__main__":
    main()
