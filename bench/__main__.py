"""Run every benchmark: `python -m bench` (all) or `python -m bench run lint` (some)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

from bench import precompile


def main(argv: list[str]) -> int:
    precompile()
    names = sorted(
        m.name.removeprefix("bench_")
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("bench_")
    )
    chosen = [n for n in names if not argv or n in argv]
    for name in chosen:
        print(f"== bench_{name}", flush=True)
        module = importlib.import_module(f"bench.bench_{name}")
        module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
