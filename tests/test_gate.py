"""The gate itself: `make test` (ruff, mypy, pytest) must fail whenever it has not tested."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_a_run_that_collects_nothing_fails() -> None:
    """pytest's "no tests collected" (exit 5) becomes a failure (tests/conftest.py)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "tests/test_gate.py", "-k", "no_test_has_this_name"],
        cwd=REPO, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},  # no xdist, cov, hypothesis
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
