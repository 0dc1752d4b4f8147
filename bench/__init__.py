"""Benchmarks: each `bench_*.py` has a `main()` that prints figures and ratios against a
baseline measured in the same run (absolute times mean little on noisy machines)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def precompile() -> None:
    """Byte-compile the package, as `pip install` does for a wheel. With PYTHONDONTWRITEBYTECODE
    set (as on this machine) an editable checkout would otherwise compile every module changed
    since the last `make test` in every `ll-loop` process the benchmark starts, and the figures
    of anything measured as a fresh process would mislead. Quick when nothing changed."""
    import compileall

    for package in ("engine", "lint"):
        compileall.compile_dir(str(ROOT / package), quiet=1)


def fresh_process_floats(code: str, *args: object) -> list[float]:
    """Run `code` (which prints numbers) in a fresh Python at the repository root; the numbers.

    Size-scaling figures are measured this way: in one long-lived process the later size runs on
    the heap an earlier one grew, and the order of the sizes skews the ratio."""
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [float(word) for word in out.split()]
