"""ll-loop: a declarative FSM loop engine for LLM-driven automation and evaluation.

The public Python API lives in `engine.api` and is re-exported here, lazily, so that
`import engine` stays cheap (nothing heavy is imported until a function is called):

    >>> import engine
    >>> engine.validate("loops/fix-until-green-demo.yaml")
    []
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from engine.api import (
        Diagnostic,
        Event,
        HistoryEntry,
        LoadError,
        LockConflict,
        LoopError,
        PreflightError,
        RunRefused,
        RunResult,
        RunStatus,
        StoppedWaiting,
        StopResult,
        SuiteInterrupted,
        SuiteRefusal,
        SuiteResult,
        UsageError,
        events,
        history,
        iter_events,
        resume,
        run,
        status,
        stop,
        suite,
        validate,
    )

__all__ = [
    "Diagnostic",
    "Event",
    "HistoryEntry",
    "LoadError",
    "LockConflict",
    "LoopError",
    "PreflightError",
    "RunRefused",
    "RunResult",
    "RunStatus",
    "StopResult",
    "StoppedWaiting",
    "SuiteInterrupted",
    "SuiteRefusal",
    "SuiteResult",
    "UsageError",
    "__version__",
    "events",
    "history",
    "iter_events",
    "resume",
    "run",
    "status",
    "stop",
    "suite",
    "validate",
]
_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    """`engine.validate`, `engine.RunResult`, …: imported from `engine.api` on first use."""
    if name in _API:
        value = getattr(importlib.import_module("engine.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'engine' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API with the rest, so `engine.<Tab>` lists `validate`, `run`, … before their
    first use (they are imported lazily, by `__getattr__`)."""
    return sorted(set(globals()) | set(__all__))
