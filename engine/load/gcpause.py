"""Pause Python's cyclic garbage collector around bulk work on a loop (load, lint)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the duration (reference counting still frees memory).

    Loading and linting allocate many small, mostly acyclic objects; every generation-2
    collection walks the whole growing heap, which made a 4000-state loop cost 2.3-2.7x a
    2000-state one. Paused, both scale linearly. A nested pause leaves the collector to the
    outermost one.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
