"""Suites: a dataset of cases x a subject x judges, with per-judge aggregates and thresholds.

- `run_suite(path_or_suite, SuiteOptions(...))` -> `SuiteResult` (records into the project's
  `.loops/history.db`; `SuiteRefusal`, `SuiteInterrupted` for what stops it);
- `Executor` / `LocalExecutor`: where cases run (`run_case(CaseSpec) -> CaseOutcome` is a plain
  function of picklable data, so other backends can run it);
- `suite_text` / `suite_json`: the reports.

See docs/suites.md. Importing this package is light: judges, workspaces and the LLM layer load
only when a suite runs.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.suites.casework import run_case
    from engine.suites.driver import SuiteInterrupted, SuiteOptions, SuiteRefusal, run_suite
    from engine.suites.executor import Executor, LocalExecutor
    from engine.suites.render import suite_json, suite_text
    from engine.suites.result import SuiteResult
    from engine.suites.spec import CaseOutcome, CaseSpec

__all__ = [
    "CaseOutcome",
    "CaseSpec",
    "Executor",
    "LocalExecutor",
    "SuiteInterrupted",
    "SuiteOptions",
    "SuiteRefusal",
    "SuiteResult",
    "run_case",
    "run_suite",
    "suite_json",
    "suite_text",
]

_HOMES = {
    "run_case": "engine.suites.casework",
    "SuiteInterrupted": "engine.suites.driver",
    "SuiteOptions": "engine.suites.driver",
    "SuiteRefusal": "engine.suites.driver",
    "run_suite": "engine.suites.driver",
    "Executor": "engine.suites.executor",
    "LocalExecutor": "engine.suites.executor",
    "suite_json": "engine.suites.render",
    "suite_text": "engine.suites.render",
    "SuiteResult": "engine.suites.result",
    "CaseOutcome": "engine.suites.spec",
    "CaseSpec": "engine.suites.spec",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'engine.suites' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
