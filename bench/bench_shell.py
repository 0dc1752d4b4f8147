"""What the bash grammar costs `ll-loop validate`, against the same command without it.

Issue 11 target: `ll-loop validate` of a 20-state loop within 1.2x of its time before the
grammar. Before the grammar, validate did no shell analysis at all, so the baseline measured in
the same run is the same `ll-loop validate` with the two grammar rules (LL034, LL035) taken out
of the registry — no tree-sitter import, no parse. Both run as whole fresh processes on the
generated 20-state loop of `bench_lint` (every state interpolates into its shell action), and
for scale `python -c "import yaml; yaml.safe_load(...)"` of the same file. Also: the cost of one
layout (parse + classify) of a new action text, and of a cached render.
Run: `.venv/bin/python -m bench run shell`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_lint import generate

ROOT = Path(__file__).resolve().parent.parent

VALIDATE = """
import sys
from engine.cli import main
sys.argv = ["ll-loop", "validate", sys.argv[1]]
main()
"""
WITHOUT_GRAMMAR = """
import sys
from lint._registry import _RULES
del _RULES["LL034"], _RULES["LL035"]
from engine.cli import main
sys.argv = ["ll-loop", "validate", sys.argv[1]]
main()
"""
YAML_ONLY = "import sys, yaml; yaml.safe_load(open(sys.argv[1]))"


def median_wall(code: str, path: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code, str(path)], cwd=ROOT, check=True, capture_output=True
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(codes: dict[str, str], path: Path, rounds: int = 9) -> dict[str, float]:
    """Median wall time of each variant, measured alternately so that noise hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in codes}
    for _ in range(rounds):
        for name, code in codes.items():
            times[name].append(median_wall(code, path, 1))
    return {name: statistics.median(values) for name, values in times.items()}


def per_layout_us() -> tuple[float, float]:
    """Microseconds to lay out a never-seen action (parse + classify), and to render it again."""
    from engine.shell.interpolate import render_shell

    ns = {"context": {"v": "it's $(x)", "n": 3}}
    render_shell("echo ${context.v}", ns)  # load the grammar once
    rounds = 2000
    start = time.perf_counter()
    for i in range(rounds):
        render_shell(f'x{i}=1; printf "%s" "${{context.v}}" | grep -c a > out', ns)
    fresh = (time.perf_counter() - start) / rounds * 1e6
    start = time.perf_counter()
    for _ in range(rounds):
        render_shell('x0=1; printf "%s" "${context.v}" | grep -c a > out', ns)
    cached = (time.perf_counter() - start) / rounds * 1e6
    return fresh, cached


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "loop.yaml"
        path.write_text(generate(20))
        codes = {"yaml": YAML_ONLY, "without": WITHOUT_GRAMMAR, "with": VALIDATE}
        median_wall(VALIDATE, path, 1)  # warm the page cache and the byte code
        found = interleaved(codes, path)
    print(f"python -c yaml.safe_load (20 states):        {found['yaml']:.3f} s")
    print(f"ll-loop validate, without the grammar rules: {found['without']:.3f} s")
    print(
        f"ll-loop validate, with the grammar:          {found['with']:.3f} s  "
        f"({found['with'] / found['without']:.2f}x; target <= 1.2x)"
    )
    fresh, cached = per_layout_us()
    print(f"layout of a new action text (parse + classify): {fresh:8.1f} us")
    print(f"render of a known action text (cached layout):  {cached:8.1f} us")


if __name__ == "__main__":
    main()
