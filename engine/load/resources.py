"""Find the files shipped with the package: the schemas and the built-in loops.

In a wheel they live in `engine/_data/`; in a source checkout (and an editable install) they are
the top-level `schemas/` and `loops/` folders next to `engine/`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # engine/


@cache
def data_dir(name: str) -> Path:
    """The directory of shipped data `name` ("schemas" or "loops")."""
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name


def schema_path(name: str = "loop.schema.json") -> Path:
    return data_dir("schemas") / name


def builtin_loops_dir() -> Path:
    return data_dir("loops")
