"""Benchmark the loader: parse + schema check + model of generated loops.

Prints the median time for a 20-state loop (budget: well under 20 ms in-process) and for
2000 and 4000 states, with their ratio (linear scaling means ≤ 2.2×). Run:
`.venv/bin/python bench/bench_load.py`.
"""

from __future__ import annotations

import time

from bench import fresh_process_floats
from engine.load.loader import check_loop_text


def generate_loop(states: int) -> str:
    """A loop of `states` states mixing the common shapes (routes, evaluators, captures)."""
    lines = [f"name: generated-{states}", "initial: s0", f"max_steps: {states * 2}", "states:"]
    for index in range(states - 1):
        following = f"s{index + 1}"
        lines += [
            f"  s{index}:",
            f"    description: step {index}",
            f'    action: "echo {index} && test -f file{index}"',
            "    timeout: 30",
            f"    capture: c{index}",
        ]
        if index % 3 == 0:
            lines += [
                "    evaluate:",
                "      type: output_contains",
                f'      pattern: "^ok {index}$"',
                f"    on_yes: {following}",
                f"    on_no: s{max(index - 1, 0)}",
                "    on_error: done",
            ]
        elif index % 3 == 1:
            lines += [
                "    evaluate: {type: output_numeric, operator: ge, target: 3}",
                f"    route: {{'yes': {following}, _: done}}",
            ]
        else:
            lines += [f"    next: {following}", "    on_error: done"]
    lines += [f"  s{states - 1}:", "    next: done", "    action: 'true'"]
    lines += ["  done:", "    terminal: true"]
    return "\n".join(lines) + "\n"


def best_times(texts: dict[int, str], repeats: int) -> dict[int, tuple[float, float]]:
    """(CPU seconds, wall seconds) per size: the best of `repeats` interleaved runs.

    The loader is single-threaded CPU work, so process CPU time is the honest measure on a
    shared machine; interleaving the sizes keeps background load from favouring one of them.
    """
    best = {size: (float("inf"), float("inf")) for size in texts}
    for _ in range(repeats):
        for size, text in texts.items():
            cpu, wall = time.process_time(), time.perf_counter()
            loop, _, problems = check_loop_text(text, "bench.yaml")
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            assert loop is not None, problems[:3]
            best[size] = (min(best[size][0], cpu), min(best[size][1], wall))
    return best


# Each size is measured in processes of its own: in one process the smaller size, measured
# after the larger one grew the heap, ran on warm pages and made the ratio look worse by ~10%.
FRESH = """
import sys
from bench.bench_load import best_times, generate_loop
size = int(sys.argv[1])
cpu, wall = best_times({size: generate_loop(size)}, int(sys.argv[2]))[size]
print(cpu, wall)
"""


def fresh_best(size: int, repeats: int, processes: int = 3) -> tuple[float, float]:
    """The best (CPU, wall) of `repeats` loads in each of `processes` fresh processes."""
    best = (float("inf"), float("inf"))
    for _ in range(processes):
        cpu, wall = fresh_process_floats(FRESH, size, repeats)
        best = (min(best[0], cpu), min(best[1], wall))
    return best


def main() -> None:
    small = best_times({20: generate_loop(20)}, 50)[20]
    large = {n: fresh_best(n, 4) for n in (2000, 4000)}
    print(
        f"20 states:   cpu {small[0] * 1000:8.2f} ms  wall {small[1] * 1000:8.2f} ms"
        "  (budget: well under 20 ms)"
    )
    for size in (2000, 4000):
        cpu, wall = large[size]
        print(f"{size} states: cpu {cpu * 1000:8.2f} ms  wall {wall * 1000:8.2f} ms")
    ratio = large[4000][0] / large[2000][0]
    print(f"ratio 4000/2000 (cpu): {ratio:.2f}x  (linear: <= 2.2x)")


if __name__ == "__main__":
    main()
