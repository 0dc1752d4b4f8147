"""The deterministic evaluators moved to `engine.judges.evaluators` (each is also a builtin judge);
this module keeps the old import path working."""

from engine.judges.evaluators import (
    Evaluator,
    Judged,
    crash_verdict,
    error,
    evaluator,
    json_path,
    judge,
    parse_number,
    registered,
    step_verdict,
    to_json_text,
)

__all__ = [
    "Evaluator",
    "Judged",
    "crash_verdict",
    "error",
    "evaluator",
    "json_path",
    "judge",
    "parse_number",
    "registered",
    "step_verdict",
    "to_json_text",
]
