"""ll-loop: a declarative FSM loop engine for LLM-driven automation and evaluation.

The public Python API lives in `engine.api` and is re-exported here, lazily, so that
`import engine` stays cheap (nothing heavy is imported until a function is called):

    >>> import engine
    >>> engine.validate("loops/fix-until-green-demo.yaml")
    []

`engine.run` is both the runtime's package (`engine.run.interpreter`, …) and the API's `run`
function: calling the package calls `engine.api.run` (see docs/api.md); `engine.suite` likewise
calls `engine.api.suite`. Type-checked code can import the functions themselves:
`from engine.api import run, suite`.
"""

from __future__ import annotations

import importlib
import types
from typing import TYPE_CHECKING, Any

import engine.run as _run_package  # the package's __init__ imports nothing: cheap
import engine.suite as _suite_package  # likewise (its names load on first use)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from engine.api import (
        Diagnostic,
        Event,
        HistoryEntry,
        LoopError,
        RunRefused,
        RunResult,
        RunStatus,
        StopResult,
        SuiteResult,
        events,
        history,
        iter_events,
        resume,
        status,
        stop,
        validate,
    )

__all__ = [
    "Diagnostic",
    "Event",
    "HistoryEntry",
    "LoopError",
    "RunRefused",
    "RunResult",
    "RunStatus",
    "StopResult",
    "SuiteResult",
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
_API = frozenset(__all__) - {"__version__", "run", "suite"}


class _CallablePackage(types.ModuleType):
    """A subpackage that shares its name with an API function, and forwards calls to it."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        api = importlib.import_module("engine.api")
        return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)


_run_package.__class__ = _CallablePackage
_suite_package.__class__ = _CallablePackage

def __getattr__(name: str) -> Any:
    """`engine.validate`, `engine.RunResult`, …: imported from `engine.api` on first use."""
    if name in _API:
        value = getattr(importlib.import_module("engine.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
