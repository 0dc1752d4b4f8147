"""The judge engine: checks, scores and reviews of one piece of work (docs/judges.md).

Judges come from a loop's `evaluate: {type: assessment, ...}` or a suite, already normalised
into `engine.model.judges.Judge` by the loader. This package runs them on an outputs record:

- `build_record(...)` -> the outputs record (a dict) judges read;
- `compile_judges(judges)` once, then `run_judge(judge, record, env)` per record (never raises)
  or `assess(judges, record, env)` -> `Assessment` (verdict yes / no / error, every result);
- `JudgeEnv` carries the IO ports (`CommandPort`, `MessagesPort`), `${...}` rendering and the
  judge defaults; `JudgeResult` is one judge's value, pass/fail, rationale, evidence and cost;
- `all_builtins()` / `find_builtin(name)` -> the registry (ours and `ll_loop.judges` plugins).

Importing it stays light: jinja2 and the SDK load only when an LLM judge runs.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.judges.core import (
        Assessment,
        CompiledJudge,
        assess,
        compile_judge,
        compile_judges,
        run_judge,
        run_judges,
        verdict_of,
    )
    from engine.judges.env import JudgeContext, JudgeEnv
    from engine.judges.record import OutputsRecord, build_record
    from engine.judges.registry import (
        ENTRY_POINT_GROUP,
        Argument,
        Builtin,
        all_builtins,
        builtin,
        find_builtin,
    )
    from engine.judges.result import JudgeError, Judgement, JudgeResult

__all__ = [
    "ENTRY_POINT_GROUP",
    "Argument",
    "Assessment",
    "Builtin",
    "CompiledJudge",
    "JudgeContext",
    "JudgeEnv",
    "JudgeError",
    "JudgeResult",
    "Judgement",
    "OutputsRecord",
    "all_builtins",
    "assess",
    "build_record",
    "builtin",
    "compile_judge",
    "compile_judges",
    "find_builtin",
    "run_judge",
    "run_judges",
    "verdict_of",
]

# Where each public name lives: imported on first use, so `engine.judges.evaluators` (which every
# run imports) does not pull in the whole engine.
_HOMES = {
    **dict.fromkeys(
        (
            "Assessment",
            "CompiledJudge",
            "assess",
            "compile_judge",
            "compile_judges",
            "run_judge",
            "run_judges",
            "verdict_of",
        ),
        "engine.judges.core",
    ),
    **dict.fromkeys(("JudgeContext", "JudgeEnv"), "engine.judges.env"),
    **dict.fromkeys(("OutputsRecord", "build_record"), "engine.judges.record"),
    **dict.fromkeys(
        ("ENTRY_POINT_GROUP", "Argument", "Builtin", "all_builtins", "builtin", "find_builtin"),
        "engine.judges.registry",
    ),
    **dict.fromkeys(("JudgeError", "Judgement", "JudgeResult"), "engine.judges.result"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'engine.judges' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
