"""Benchmarks: each `bench_*.py` has a `main()` that prints figures and ratios against a
baseline measured in the same run (absolute times mean little on noisy machines)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


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
