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
    from engine.suite.casework import run_case
    from engine.suite.driver import SuiteInterrupted, SuiteOptions, SuiteRefusal, run_suite
    from engine.suite.executor import Executor, LocalExecutor
    from engine.suite.render import suite_json, suite_text
    from engine.suite.result import SuiteResult
    from engine.suite.spec import CaseOutcome, CaseSpec

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
    "run_case": "engine.suite.casework",
    "SuiteInterrupted": "engine.suite.driver",
    "SuiteOptions": "engine.suite.driver",
    "SuiteRefusal": "engine.suite.driver",
    "run_suite": "engine.suite.driver",
    "Executor": "engine.suite.executor",
    "LocalExecutor": "engine.suite.executor",
    "suite_json": "engine.suite.render",
    "suite_text": "engine.suite.render",
    "SuiteResult": "engine.suite.result",
    "CaseOutcome": "engine.suite.spec",
    "CaseSpec": "engine.suite.spec",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'engine.suite' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
