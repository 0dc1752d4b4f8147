"""How many examples a property test (hypothesis) tries.

The gate (`make test`) tries a third of each test's deep count, at least 50 (hypothesis's own
default is 100): every property is still checked on every run, on fewer generated inputs.
`LL_DEEP_TESTS=1` (`make test-deep`) tries the full counts. The shell-quoting properties keep
their own knob (`LL_QUOTE_EXAMPLES`) and their full count in the gate: they are the safety tests.
"""

from __future__ import annotations

import os

DEEP = os.environ.get("LL_DEEP_TESTS", "") == "1"


def examples(deep: int) -> int:
    """`deep` under LL_DEEP_TESTS=1, else a third of it (never fewer than 50, nor than `deep`)."""
    return deep if DEEP else max(min(deep, 50), deep // 3)
