"""JSON read from text we did not write: an action's or a subject's output, an agent's event
stream, a model's reply, a hook's stdout, a `--context` value.

`json.loads` raises `RecursionError`, not `ValueError`, on JSON nested deeper than Python's
recursion limit (`[` a few thousand times): every caller expecting bad JSON caught
`ValueError` only, so an output like that ended the run as an internal error.
"""

from __future__ import annotations

import json
from typing import Any


def loads(text: str | bytes, **options: Any) -> Any:
    """`json.loads(text, **options)`; JSON nested too deeply is a `ValueError` like any other
    text that is not JSON we can use."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise ValueError("the JSON nests too deeply (more than about 1,000 levels)") from None
