"""Run judges on an outputs record: compile once, run many, concurrently; aggregate a verdict.

`compile_judge` prepares a judge (finds its builtin, compiles its snippet or condition) so that
running it on many records costs only the call. `run_judge` never raises: a judge that cannot
run, raises, returns something that is neither a bool nor a number, or leaves its range is an
`error` result whose message names the judge and its file line. `assess` runs a state's judges
at once and gives yes (every judge that ran passed), no (one failed) or error (none failed but
one could not run, or none ran: every one was skipped).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import CodeType
from typing import Any

from engine.judges.deadline import real_interrupt
from engine.judges.env import JudgeContext, JudgeEnv
from engine.judges.python_judges import (
    ConditionRefused,
    callable_runner,
    check_runner,
    compile_condition,
    condition_holds,
    describe,
    where_it_failed,
)
from engine.judges.record import OutputsRecord
from engine.judges.registry import find_builtin
from engine.judges.result import JudgeError, JudgeResult, coerce
from engine.model.judges import Judge

Runner = Callable[[JudgeContext], Any]
MAX_TEXT_CHARS = 10_000  # of a judge's rationale, evidence or error kept


@dataclass(frozen=True)
class CompiledJudge:
    """A judge ready to run: its code, its compiled `if:`, or why it can never run."""

    judge: Judge
    run: Runner | None
    condition: CodeType | None = None
    problem: str | None = None


def compile_judge(judge: Judge) -> CompiledJudge:
    """Prepare `judge`; a problem found here (unknown builtin, bad `if:`) becomes its error."""
    condition = None
    if judge.condition is not None:
        try:
            condition = compile_condition(judge.condition, f"{judge.where} if")
        except SyntaxError as exc:
            how = "is refused" if isinstance(exc, ConditionRefused) else "does not parse"
            return CompiledJudge(judge, None, problem=f"its if: expression {how} ({exc.msg})")
    try:
        run = _runner(judge)
    except JudgeError as exc:
        return CompiledJudge(judge, None, condition, exc.message)
    except SyntaxError as exc:
        return CompiledJudge(judge, None, condition, f"its check does not compile ({exc.msg})")
    return CompiledJudge(judge, run, condition)


def _runner(judge: Judge) -> Runner:
    if judge.kind == "builtin":
        found = find_builtin(judge.builtin or "")
        if found is None:
            raise JudgeError(f"there is no builtin judge {judge.builtin!r} (see `ll-loop judges`)")
        problem = found.argument_problem(judge.arguments)
        if problem is not None:
            raise JudgeError(problem)
        arguments = dict(judge.arguments)
        if found.origin != "ll-loop":  # ours interpolate what they read; theirs get text
            return lambda ctx: found.run(ctx, **_rendered(ctx, arguments))
        return lambda ctx: found.run(ctx, **arguments)
    if judge.kind == "check":
        return check_runner(judge)
    if judge.kind == "callable":
        return callable_runner(judge)
    if judge.kind == "llm":
        from engine.judges.llm_judges import run_llm_judge

        return run_llm_judge
    from engine.judges.review import run_review

    return run_review


def _rendered(ctx: JudgeContext, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {k: ctx.render(v) if isinstance(v, str) else v for k, v in arguments.items()}


def compile_judges(judges: Sequence[Judge]) -> tuple[CompiledJudge, ...]:
    return tuple(compile_judge(judge) for judge in judges)


def run_judge(
    judge: Judge | CompiledJudge, outputs: OutputsRecord, env: JudgeEnv | None = None
) -> JudgeResult:
    """One judge on one record; never raises."""
    compiled = judge if isinstance(judge, CompiledJudge) else compile_judge(judge)
    env = env if env is not None else JudgeEnv()
    started = time.perf_counter()
    result = _judge(compiled, outputs, env, started)
    if env.on_result is not None:
        env.on_result(result)
    return result


def _judge(
    compiled: CompiledJudge, outputs: OutputsRecord, env: JudgeEnv, started: float
) -> JudgeResult:
    judge = compiled.judge
    if compiled.problem is not None or compiled.run is None:
        return _error(judge, judge.where, str(compiled.problem), started)
    if compiled.condition is not None:
        try:
            holds = condition_holds(compiled.condition, outputs, env.annotations, env.inputs)
        except Exception as exc:
            return _error(
                judge, judge.where, f"its if: expression failed ({describe(exc)})", started
            )
        if not holds:
            return JudgeResult(
                judge.name,
                "skipped",
                rationale=f"skipped: if {judge.condition.strip()!r} is false",  # type: ignore[union-attr]
                duration_ms=_ms(started),
            )
    try:
        raw = compiled.run(JudgeContext(judge, outputs, env))
        judgement = coerce(raw, judge)
    except JudgeError as exc:
        where = exc.where or judge.where
        return _error(judge, where, exc.message, started, exc.cost_usd, exc.details)
    except Exception as exc:  # user code (a snippet, a module, a plugin) raised
        where = where_it_failed(judge, exc)
        return _error(judge, where, f"raised {describe(exc)}", started)
    except BaseException as exc:  # sys.exit(), KeyboardInterrupt... from user code
        if real_interrupt(exc):
            raise
        return _error(judge, where_it_failed(judge, exc), quit_reason(judge, exc), started)
    value = judgement.value
    if judgement.passed is not None:
        passed = judgement.passed
    elif isinstance(value, bool):
        passed = value
    else:
        passed = value >= judge.pass_mark()
    return JudgeResult(
        judge.name,
        "ok",
        value,
        passed,
        cut(judgement.rationale),
        cut(judgement.evidence),
        None if isinstance(value, bool) or judge.builtin == "metric" else judge.value_range(),
        _ms(started),
        judgement.cost_usd,
        samples=judgement.samples,
        details=judgement.details,
    )


def quit_reason(judge: Judge, exc: BaseException) -> str:
    """Why a judge whose code tried to end the process or the run is an error instead."""
    who = {"check": "the check", "callable": "the function"}.get(judge.kind, "the judge")
    if isinstance(exc, SystemExit):
        code = "" if exc.code is None else repr(exc.code)
        return f"{who} called sys.exit({code}); a judge cannot end the run"
    return f"{who} raised {describe(exc)}; a judge cannot stop the run"


def _error(
    judge: Judge,
    where: str,
    reason: str,
    started: float,
    cost_usd: float = 0.0,
    details: Mapping[str, Any] | None = None,
) -> JudgeResult:
    details = dict(details or {})
    samples = tuple(details.pop("samples", ()) or ())
    sentence = cut(f"judge {judge.name!r} at {where}: {reason}")
    return JudgeResult(
        judge.name,
        "error",
        rationale=sentence,
        duration_ms=_ms(started),
        cost_usd=cost_usd,
        error=sentence,
        samples=samples,
        details=details,
    )


def cut(text: str) -> str:
    """`text`, or its first `MAX_TEXT_CHARS` characters and how many more there were: a judge's
    code writes its rationale (or its exception's message), and one of 200 MB went whole into
    every event, report and `history.db` row that names the judge."""
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return f"{text[:MAX_TEXT_CHARS]}... [cut: {len(text) - MAX_TEXT_CHARS:,} more characters]"


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def run_judges(
    judges: Sequence[Judge | CompiledJudge],
    outputs: OutputsRecord,
    env: JudgeEnv | None = None,
    *,
    concurrency: int | None = None,
) -> list[JudgeResult]:
    """Every judge on one record, at most `concurrency` at once (default: all), in order."""
    if len(judges) <= 1 or concurrency == 1:
        return [run_judge(j, outputs, env) for j in judges]
    workers = min(len(judges), concurrency or len(judges))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
        return list(pool.map(lambda j: run_judge(j, outputs, env), judges))


@dataclass(frozen=True)
class Assessment:
    """The judges of one piece of work and the verdict they add up to."""

    verdict: str  # yes | no | error
    results: tuple[JudgeResult, ...]
    duration_ms: int = 0

    @property
    def cost_usd(self) -> float:
        return sum(r.cost_usd for r in self.results)

    def failing(self) -> list[JudgeResult]:
        """Judges that failed or could not run, lowest-scoring first (errors before fails)."""
        bad = [r for r in self.results if r.errored or r.passed is False]
        return sorted(bad, key=lambda r: (not r.errored, r.normalised() or 0.0))

    def feedback(self) -> str:
        """What still fails, one line per judge, lowest-scoring first (for a fix prompt)."""
        lines = []
        for result in self.failing():
            if result.errored:
                lines.append(f"- {result.name}: could not run: {result.error}")
            else:
                lines.append(f"- {result.name}: {_shown(result)}: {result.rationale}")
        return "\n".join(lines)

    def reason(self) -> str:
        ran = [r for r in self.results if not r.skipped]
        if self.results and not ran:
            return (
                f"no judge ran: all {len(self.results)} were skipped (their if: was false), "
                "so nothing was judged"
            )
        passed = sum(1 for r in ran if r.passed)
        text = f"{passed} of {len(ran)} judge(s) passed"
        if len(ran) < len(self.results):
            text += f", {len(self.results) - len(ran)} skipped"
        # a judge that could not run said nothing about the work: never call it failing
        broken = [r.name for r in self.failing() if r.errored]
        failed = [r.name for r in self.failing() if not r.errored]
        if broken:
            text += "; could not run: " + ", ".join(broken)
        if failed:
            text += "; failing: " + ", ".join(failed)
        return text

    def details(self) -> dict[str, Any]:
        """The evaluate event's and capture's details."""
        failing = self.failing()
        return {
            "reason": self.reason(),
            "judges": {r.name: r.to_json() for r in self.results},
            "failing": [r.name for r in failing],
            "feedback": self.feedback(),
            "cost_usd": round(self.cost_usd, 6),
            "duration_ms": self.duration_ms,
        }


def _shown(result: JudgeResult) -> str:
    if isinstance(result.value, bool) or result.value is None:
        return "failed"
    return f"scored {result.value:g}"


def verdict_of(results: Sequence[JudgeResult]) -> str:
    """yes: every judge that ran passed; no: one failed; error: none failed, one could not run,
    or none ran (every `if:` was false): a yes needs a judge that passed, not a vacuous 'all'."""
    if any(r.passed is False for r in results):
        return "no"
    if any(r.errored for r in results):
        return "error"
    if results and all(r.skipped for r in results):
        return "error"
    return "yes"


def assess(
    judges: Sequence[Judge | CompiledJudge],
    outputs: OutputsRecord,
    env: JudgeEnv | None = None,
    *,
    concurrency: int | None = None,
) -> Assessment:
    """Run `judges` concurrently on `outputs` and aggregate their verdict."""
    started = time.perf_counter()
    results = tuple(run_judges(judges, outputs, env, concurrency=concurrency))
    return Assessment(verdict_of(results), results, _ms(started))
