"""`ll-loop explain RUN`: why a run ended where it did, on one screen.

Built from the run's trace (`engine.report.runlog`) and what its `state.json` says now: the path
taken with repeated stretches folded, each judge's verdict with its evidence and reason, where the
steps and the money went per state, and one sentence saying why the run ended (or where a live,
stopped or interrupted run stands).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from engine.harness.verdicts import JudgeNote
from engine.load.gcpause import collector_paused
from engine.model.terminal import printable
from engine.model.timefmt import counted
from engine.report.runlog import Step, Trace, distinct_children, run_again

MAX_FOLD = 32  # longest repeated stretch of steps looked for when folding the path
# (a cycle with a cycle inside, `(a → b) ×4 → a → c`, is one stretch: its inside is folded
# again when it is shown)
SHOWN_JUDGEMENTS = 6  # judged steps listed in text at most (JSON has all)
SCREEN_LINES = 24
STDERR_LINES = 5


class Hop(NamedTuple):
    """One step on the path: its state and verdict, the state entered next, why that is not
    simply the route's target ('' when it is), and whether the step ended (routed)."""

    state: str
    verdict: str | None
    target: str | None
    note: str
    ended: bool


@dataclass(frozen=True)
class PathItem:
    """A stretch of the path: `steps` (state, verdict, the state entered next, and a note when
    that is not simply the route's target) repeated `times` times."""

    first_step: int
    steps: tuple[Hop, ...]
    times: int = 1
    last: int | None = None  # the last step's number, when not first_step + count - 1

    @property
    def last_step(self) -> int:
        """The number of the stretch's last step: attempts a kill cut short and a resume ran
        again share their step's number, so it is not always first + count - 1."""
        if self.last is not None:
            return self.last
        return self.first_step + len(self.steps) * self.times - 1

    def to_json(self) -> dict[str, Any]:
        return {
            "first_step": self.first_step,
            "last_step": self.last_step,
            "times": self.times,
            "steps": [
                {"state": h.state, "verdict": h.verdict, "target": h.target, "note": h.note or None}
                for h in self.steps
            ],
        }


@dataclass(frozen=True)
class Judgement:
    step: int
    state: str
    note: JudgeNote


@dataclass(frozen=True)
class RunFacts:
    """What state.json (and the run's status) says, independent of the event log."""

    run_id: str
    loop: str
    status: str  # running | interrupted | stopped | finished | unknown (no state.json)
    current: str
    steps: int
    elapsed_ms: int
    cost_usd: float
    result: dict[str, Any] | None = None
    max_cost_usd: float | None = None
    timeout_s: float | None = None  # the loop's `timeout` (the run directory does not keep it)
    replay_from: str = ""  # the run directory whose logged model answers this run replayed
    state_problem: str = ""  # why state.json could not be read (the facts are the log's)
    # a sub-loop's run: its directory under its top run's (`children/fix-1`); `run_id` is then
    # the top run's id, the one `resume` takes (one run, one event log)
    place: str = ""
    killed_attempts: int = 0  # sessions killed and then resumed, as state.json counts them

    @property
    def named(self) -> str:
        """`RUN`, or `RUN (children/fix-1)` for a sub-loop's run."""
        return f"{self.run_id} ({self.place})" if self.place else self.run_id


@dataclass(frozen=True)
class Explanation:
    facts: RunFacts
    reason: str
    path: tuple[PathItem, ...]
    judgements: tuple[Judgement, ...]
    steps_by_state: dict[str, int]
    cost_by_state: dict[str, float]
    calls_by_state: dict[str, int]
    max_steps: int | None
    stderr_tail: tuple[str, ...] = ()
    stderr_from: str = ""  # the failing action's state (`sub-loop 'x' → state 'go'` in a child)
    failed_in: tuple[tuple[str, str], ...] = ()  # (loop, state) from this run to the failing one
    root_error: str = ""  # the error of the innermost run that failed
    output_errors: tuple[str, ...] = ()  # `name: why` of each `outputs:` value left null
    children: tuple[tuple[int, str, Explanation], ...] = field(default_factory=tuple)
    log_gap: str = ""  # why the event log cannot tell the whole run (empty: it can)
    cached_calls: int = 0  # model calls the `--cache` answered (no call was made)
    replay_misses: int = 0  # replayed calls the replayed log had no answer for (an error)
    killed_attempts: int = 0  # steps a kill cut short and a resume ran again: time not kept
    # states (a sub-loop's as `state > child state`) whose agent CLI reported no cost: the
    # dollars shown leave that spend out, so they are a lower bound, not the run's cost
    cost_unknown_in: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        result = self.facts.result or {}
        return {
            "run_id": self.facts.run_id,
            "child_dir": self.facts.place or None,
            "loop": self.facts.loop,
            "status": self.facts.status,
            "outcome": result.get("outcome"),
            "terminated_by": result.get("terminated_by"),
            "final_state": self.facts.current,
            "steps": self.facts.steps,
            "max_steps": self.max_steps,
            "duration_ms": self.facts.elapsed_ms,
            "cost_usd": round(self.facts.cost_usd, 6),
            "replay_from": self.facts.replay_from or None,
            "cached_calls": self.cached_calls,
            "replay_misses": self.replay_misses,
            "state_unreadable": self.facts.state_problem or None,
            "reason": self.reason,
            "path": [p.to_json() for p in self.path],
            "judgements": [
                {"step": j.step, "state": j.state, **j.note.to_json()} for j in self.judgements
            ],
            "steps_by_state": self.steps_by_state,
            "cost_by_state": {k: round(v, 6) for k, v in self.cost_by_state.items()},
            "cost_unknown_in": list(self.cost_unknown_in),
            "calls_by_state": self.calls_by_state,
            "stderr_tail": list(self.stderr_tail),
            "stderr_from": self.stderr_from or None,
            "output_errors": list(self.output_errors),
            "log_incomplete": self.log_gap or None,
            "children": [
                {"step": step, "state": state, **child.to_json()}
                for step, state, child in self.children
            ],
        }


def explain(
    facts: RunFacts, trace: Trace | None, *, child: bool = False, nested: bool = False
) -> Explanation:
    """The explanation of one run (or one child run: pass its facts and trace, and `child`:
    its facts come from the same log, which cannot be checked against itself). `nested`: a
    child told under its parent's explanation, whose sentence says how the run is continued
    (a child explained on its own says it itself)."""
    if facts.status == "finished" and not facts.result and trace is not None and trace.end:
        facts = replace(facts, result=dict(trace.end))  # a state.json without its result
    if trace is not None and not child:  # the limits the run recorded, over its loop file's
        facts = replace(
            facts,
            max_cost_usd=_first(trace.max_cost_usd, facts.max_cost_usd),
            timeout_s=_first(trace.timeout, facts.timeout_s),
        )
    steps = trace.steps if trace else []
    again = run_again(steps)
    counted_steps = [s for i, s in enumerate(steps) if i not in again]
    # the on_max_steps state runs once the budget is spent and is no step of it; nor is the
    # attempt a stop or kill cut short (state.json does not count it, a resume runs it again)
    cut = steps[-1] if steps and not steps[-1].finished and facts.status != "running" else None
    if cut is not None and facts.status == "finished" and trace is not None and not trace.end:
        cut.log_cut = True  # no attempt cut short: the run finished, and its log ends in it
        cut = None
    per_state = Counter(s.state for s in counted_steps if not s.budget_end and s is not cut)
    steps_by_state = dict(per_state.most_common())
    cost: dict[str, float] = {}
    calls: Counter[str] = Counter()
    for step in steps:
        step_calls, step_cost = step.spent()  # a sub-loop step pays for its child run
        cost[step.state] = cost.get(step.state, 0.0) + step_cost
        calls[step.state] += step_calls
    judgements = tuple(
        Judgement(s.step, s.state, note) for s in steps for note in s.judges() if note.verdict
    )
    children = tuple(
        (
            s.step,
            s.state,
            explain(_child_facts(facts, s, trace), s.child, child=True, nested=True),
        )
        for s in counted_steps
        if s.child is not None and trace is not None
    )
    last = steps[-1] if steps else None
    gap = "" if child else log_gap(facts, trace)
    stderr = _failing_stderr(last, children)
    ended_on_a_failure = (facts.result or {}).get("outcome") == "failure"
    cleaned_up = last is not None and last.verdict in (None, "yes")  # no verdict of its own
    if not stderr[0] and trace is not None and ended_on_a_failure and cleaned_up:
        stderr = _failure_on_the_way(trace)
    failing = _child_of(children, last) if last is not None and _failed(last) else None
    own_error = str((facts.result or {}).get("error") or "")
    with collector_paused():
        path, counted_path = folded_paths(steps)
    told = trace if not gap else None  # a log that does not tell the whole run has no say
    reason = end_reason(facts, told, children, counted_path if told else (), child=nested)
    said = _one_line(" ".join(stderr[0]))
    if len(said) >= 16 and said in _one_line(reason):  # not a short `error` the words hold
        stderr = ((), "")  # the sentence quotes it already (a model call's error, say)
    return Explanation(
        facts=facts,
        reason=reason,
        path=path,
        judgements=judgements,
        steps_by_state=steps_by_state,
        cost_by_state={k: v for k, v in sorted(cost.items(), key=lambda kv: -kv[1]) if v},
        calls_by_state={k: v for k, v in calls.most_common() if v},
        max_steps=trace.max_steps if trace else None,
        stderr_tail=stderr[0],
        stderr_from=stderr[1],
        failed_in=(
            ((facts.loop, last.state), *(failing.failed_in if failing else ()))
            if last is not None and _failed(last)
            else ()
        ),
        root_error=(failing.root_error if failing and failing.root_error else own_error),
        output_errors=tuple(trace.output_errors) if trace else (),
        children=children,
        log_gap=gap,
        cached_calls=trace.cached() if trace else 0,
        replay_misses=trace.missed() if trace else 0,
        killed_attempts=sum(1 for i in again if not steps[i].stopped),
        cost_unknown_in=_cost_unknown_in(steps, children),
    )


def _cost_unknown_in(
    steps: list[Step], children: tuple[tuple[int, str, Explanation], ...]
) -> tuple[str, ...]:
    """The states whose agent reported no cost, in order, once each (a child's nested)."""
    found = [s.state for s in steps if s.cost_unknown]
    for _, state, child in children:
        found += [f"{state} > {inner}" for inner in child.cost_unknown_in]
    return tuple(dict.fromkeys(found))


def log_gap(facts: RunFacts, trace: Trace | None) -> str:
    """A finished or stopped run whose event log ends before the run did (cut, lost): what
    the log shows is then only the start of the story, and the reason comes from state.json."""
    if facts.status == "running":
        return ""  # the log of a live run is simply not written yet
    logged = max((s.step for s in trace.steps), default=0) if trace else 0
    if trace is None:
        return (
            "the event log is missing, empty or unreadable; state.json records "
            f"{counted(facts.steps, 'step')}"
        )
    if facts.status == "finished" and trace.end is None:
        return (
            f"the event log ends at step {logged} before the run's end "
            f"(state.json records {counted(facts.steps, 'step')})"
        )
    if logged < facts.steps:
        return f"the event log records {logged} of the {facts.steps} steps state.json counts"
    return ""


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def _child_facts(parent: RunFacts, step: Step, trace: Trace) -> RunFacts:
    """The facts of the sub-loop run `step` started in `trace` (the parent's)."""
    child = step.child
    assert child is not None
    started = distinct_children(trace, step.state)
    index = next(i for i, c in enumerate(started, 1) if c is child)
    place = f"children/{step.state}-{index}"  # as the runtime names its directory
    end = child.end or {}
    if end:
        status = "finished"
    elif parent.status == "finished" or step.finished:
        status = "finished"  # the child ended without a loop_complete (it could not start)
    else:
        status = parent.status
    last = child.steps[-1].state if child.steps else child.initial
    return RunFacts(
        run_id=parent.run_id,
        place=f"{parent.place}/{place}" if parent.place else place,
        loop=child.loop,
        status=status,
        current=str(end.get("final_state") or last),
        steps=int(_amount(end.get("steps")) or sum(1 for s in child.steps if s.routed)),
        elapsed_ms=int(_amount(end.get("duration_ms")) or 0),
        cost_usd=float(_amount(end.get("cost_usd")) or child.spent()[1]),
        result=end or None,
        max_cost_usd=child.max_cost_usd,
        timeout_s=child.timeout,
    )


def _amount(value: Any) -> float | None:
    """A count, time or cost of the child's `loop_complete` event, or None when it is no finite
    number (a log written by hand or by something else: `int('x')` was an internal error)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value


def fold_path(steps: list[Step]) -> tuple[PathItem, ...]:
    """The path with consecutive repeats folded: `(test no → fix · fix fixed → test) ×3`."""
    return folded_paths(steps)[0]


def folded_paths(steps: list[Step]) -> tuple[tuple[PathItem, ...], tuple[PathItem, ...]]:
    """The folded path of all `steps`, and of the steps the budget counts (without the
    `on_max_steps` state, which runs once the budget is spent): what the path shows and what
    the end's cycle is read from, in one pass.

    In a log the engine wrote, the `on_max_steps` step is the last one and its hop
    (`on_max_steps; the run ended`) is like no other, so no repeat can take it in: the fold of
    all steps is then the fold of the counted ones plus that step alone."""
    hops = [Hop(s.state, s.verdict, s.went_to, s.hop_note(), s.ended) for s in steps]
    ids: dict[Hop, int] = {}
    keys = [ids.setdefault(hop, len(ids)) for hop in hops]
    numbers = [s.step for s in steps]
    budget_end = [i for i, s in enumerate(steps) if s.budget_end]
    if not budget_end:
        path = _items(hops, numbers, _fold(keys))
        return path, path
    last = len(steps) - 1
    if budget_end == [last] and keys.count(keys[last]) == 1:
        counted = _items(hops, numbers, _fold(keys[:last]))
        return (*counted, PathItem(numbers[last], (hops[last],), last=numbers[last])), counted
    # a log appended to after its end: an on_max_steps step inside the path (no fast way)
    kept = [i for i, s in enumerate(steps) if not s.budget_end]
    counted = _items(
        [hops[i] for i in kept], [numbers[i] for i in kept], _fold([keys[i] for i in kept])
    )
    return _items(hops, numbers, _fold(keys)), counted


def _fold(keys: list[int]) -> list[tuple[int, int, int]]:
    """(start, period, times) of each stretch: at each place the repeat covering the most
    steps (the shortest period among equals), looked for up to MAX_FOLD steps long."""
    stretches: list[tuple[int, int, int]] = []
    count = len(keys)
    i = 0
    while i < count:
        best_period, best_times = 1, 1
        for period in range(1, min(MAX_FOLD, (count - i) // 2) + 1):
            j = i + period  # the stretch repeats while each key equals the one a period back
            while j < count and keys[j] == keys[j - period]:
                j += 1
            times = (j - i) // period
            if times >= 2 and period * times > best_period * best_times:
                best_period, best_times = period, times
        stretches.append((i, best_period, best_times))
        i += best_period * best_times
    return stretches


def _inner_fold(hops: tuple[Hop, ...]) -> list[tuple[tuple[Hop, ...], int]]:
    """The hops of one stretch with their own repeats folded, as (hops, times) pieces: a
    stretch of 10 steps reads `(a → b) ×4 → a → c`, not ten states."""
    if len(hops) < 4:
        return [((hop,), 1) for hop in hops]
    ids: dict[Hop, int] = {}
    keys = [ids.setdefault(hop, len(ids)) for hop in hops]
    pieces: list[tuple[tuple[Hop, ...], int]] = []
    for start, period, times in _fold(keys):
        if times > 1:
            pieces.append((hops[start : start + period], times))
        else:
            pieces += [((hop,), 1) for hop in hops[start : start + period]]
    return pieces


def _items(
    hops: list[Hop], numbers: list[int], stretches: list[tuple[int, int, int]]
) -> tuple[PathItem, ...]:
    return tuple(
        PathItem(
            numbers[i], tuple(hops[i : i + period]), times, last=numbers[i + period * times - 1]
        )
        for i, period, times in stretches
    )


def end_reason(
    facts: RunFacts,
    trace: Trace | None,
    children: tuple[tuple[int, str, Explanation], ...],
    counted_path: tuple[PathItem, ...],
    *,
    child: bool = False,
) -> str:
    """One sentence: why the run ended, or where it stands (`counted_path`: the folded path
    of the steps the budget counts, `folded_paths`'s second). A `child` run is resumed with
    its parent, whose sentence gives the command."""
    steps = trace.steps if trace else []
    again = "" if child else f"; `ll-loop resume {_id(facts)}` continues it"
    last = steps[-1] if steps else None
    budget = f" of {trace.max_steps}" if trace and trace.max_steps else ""
    if facts.status == "running":
        if last is not None and not last.finished:  # the step under way
            return f"still running: step {last.step}{budget}, in state {last.state!r}"
        return f"still running: {_steps(facts.steps, budget)} done, now in state {facts.current!r}"
    if facts.status == "unknown":  # no state.json, and the log has no end
        where = f"in step {last.step}{budget}, state {last.state!r}" if last else "before step 1"
        return (
            f"the event log stops {where}, and without state.json whether its process still "
            "runs is not known (`ll-loop status` shows the live runs)"
        )
    if facts.status == "interrupted":
        return (
            f"interrupted: its process is gone (killed or crashed) in state {facts.current!r} "
            f"after {_steps(facts.steps, budget)}{again}"
        )
    result = facts.result or {}
    how = result.get("terminated_by")
    if facts.status == "stopped" or how == "stopped":
        return (
            f"{_stopped_by(result.get('error'))} in state {facts.current!r} after "
            f"{_steps(facts.steps, budget)}{again}"
        )
    final = str(result.get("final_state") or facts.current)
    if how == "terminal":
        kind = "failure" if result.get("outcome") == "failure" else "success"
        via = _via(last)
        return f"reached the {kind} terminal {final!r}{via} at step {facts.steps}{budget}"
    if how == "max_steps":
        after = steps[-1] if steps and steps[-1].budget_end else None
        then = f"; then on_max_steps ran {after.state!r} ({after.verdict})" if after else ""
        last_counted = next((s for s in reversed(steps) if not s.budget_end), None)
        # where the budget ran out: the state the last counted step routed to (final_state,
        # unless on_max_steps went on from there), not the state that step ran
        stopped = (last_counted.went_to if last_counted else None) or final
        where = _cycling(counted_path) or f"; it ended in state {stopped!r}"
        if not after and last_counted and final not in (last_counted.went_to, last_counted.state):
            # a terminal on_max_steps runs nothing: the run ends there, still inconclusive
            then = f"; on_max_steps then sent it to the terminal {final!r} (still inconclusive)"
        used = f"all {facts.steps} steps" if facts.steps != 1 else "its only step"
        return f"used {used} without reaching a terminal{where}{then}"
    if how == "timeout":
        limit = f" ({facts.timeout_s:g}s)" if facts.timeout_s is not None else ""
        if last is not None and last.out_of_time:
            return (
                f"its time limit{limit} ran out during step {last.step}{budget}, in state "
                f"{last.state!r}; its action was ended"
            )
        if last is not None and last.finished:
            # the limit passed while the step was judged (a judge is not cut by it): the run
            # ended at the boundary after it, and the state named next never ran
            return (
                f"its time limit{limit} had run out when step {last.step}{budget} (state "
                f"{last.state!r}) ended, {facts.elapsed_ms / 1000:.1f}s into the run; it ended "
                f"before state {final!r}"
            )
        return (
            f"its time limit{limit} ran out in state {final!r} after {_steps(facts.steps, budget)}"
        )
    if how == "max_cost":
        limit = f" of ${facts.max_cost_usd:g}" if facts.max_cost_usd is not None else ""
        whose = str(result.get("error") or f"its max_cost_usd{limit}")  # an outer loop's
        return (
            f"spent ${facts.cost_usd:.4f}, reaching {whose}, after state "
            f"{last.state if last else final!r} at step {facts.steps}{budget}"
        )
    if how == "error":
        error = str(result.get("error") or "an error")
        inside = _inside(children, last, error)
        if last is not None and last.timeout_note() and last.timeout_note() not in error:
            inside += f"; {last.timeout_note()}"
        return f"ended with an error: {error}{inside}"
    if not result:
        return (
            f"finished in state {final!r} after {_steps(facts.steps, budget)}; neither "
            "state.json nor the event log records how it ended"
        )
    return f"ended: {result.get('outcome')} ({how}) in state {final!r}"


def _steps(n: int, budget: str) -> str:
    """`3 of 20 steps`, or without a budget `1 step`, `3 steps`."""
    return f"{n}{budget} steps" if budget else counted(n, "step")


def _id(facts: RunFacts) -> str:
    return facts.run_id


def _via(last: Step | None) -> str:
    if last is None:
        return ""
    verdict = f"verdict {last.verdict}" if last.verdict else "no verdict"
    why = last.details.get("reason") or last.details.get("error")  # an error's own cause
    if last.timeout_note():
        verdict += f": {last.timeout_note()}"
    elif last.verdict == "error" and isinstance(why, str) and why:  # why it was an error
        verdict += f": {why}"
    exhausted = last.exhausted
    if exhausted is not None:  # its route led back to a state whose retries were used up
        limit = (last.retry or {}).get("max_retries")
        used = f"its {limit} retries" if isinstance(limit, int) else "its retries"
        verdict += f", routed to {exhausted[0]!r}, which had used {used}: on_retry_exhausted"
    return f" from state {last.state!r} ({verdict})"


STOPPED_BY = {
    "SIGINT": "Ctrl-C (SIGINT)",
    "SIGTERM": "SIGTERM (ll-loop stop or a kill)",
    "SIGHUP": "SIGHUP (its terminal closed)",
}


def _stopped_by(error: object) -> str:
    """`stopped by Ctrl-C (SIGINT)`: what the run's result says stopped it (`stopped by
    SIGTERM`, `stopped by ll-loop stop`), or `stopped` when it does not say."""
    text = str(error or "")
    if not text.startswith("stopped by "):
        return "stopped"
    by = text.removeprefix("stopped by ").split(";")[0].strip()
    return f"stopped by {STOPPED_BY.get(by, by)}"


def _cycling(tail: tuple[PathItem, ...]) -> str:
    """`; the last 9 steps went round poll → nap` when the folded path ends in a repeated
    stretch (and perhaps the start of one more round: the run went round the 14 steps
    `(a → b) ×6 → a → c`, not round the `a → b` it had begun again when it ended); else ""."""
    if not tail:
        return ""
    found: int | None = None  # the earliest stretch whose rounds the path's end continues
    fallback: int | None = None  # else the last one followed by less than a round
    after_steps = after_periods = 0
    for index in range(len(tail) - 1, -1, -1):
        item = tail[index]
        period = len(item.steps)
        if item.times > 1:
            if after_steps < period and _begins_round(tail[index + 1 :], item.steps):
                found = index
            elif found is None and fallback is None and after_periods < period:
                fallback = index
        after_steps += period * item.times
        after_periods += period
        if after_periods >= MAX_FOLD:  # no stretch before is longer than what follows it
            break
    chosen = found if found is not None else fallback
    if chosen is None:
        return ""
    item = tail[chosen]
    count = tail[-1].last_step - item.first_step + 1
    return f"; the last {count} steps went round {round_text(item.steps)}"


def round_text(hops: tuple[Hop, ...]) -> str:
    """The states of one round of a repeated stretch, its own repeats folded:
    `(a → b) ×6 → a → c`."""
    return " → ".join(
        f"({' → '.join(h.state for h in inner)}) ×{times}" if times > 1 else inner[0].state
        for inner, times in _inner_fold(hops)
    )


def _begins_round(after: tuple[PathItem, ...], round_: tuple[Hop, ...]) -> bool:
    """Whether the steps of `after` are the start of one more `round_`."""
    hops = [hop for item in after for _ in range(item.times) for hop in item.steps]
    return tuple(hops) == round_[: len(hops)]


def _inside(
    children: tuple[tuple[int, str, Explanation], ...], last: Step | None, error: str
) -> str:
    """The child's own reason when the failing step ran a sub-loop, unless the run's error
    already carries the child's (the engine nests a child's cause in its parent's error)."""
    child = _child_of(children, last)
    if child is None:
        return ""
    own = str((child.facts.result or {}).get("error") or "")
    if own and own in error:
        return ""
    if child.root_error and child.root_error in error:
        # the engine names the innermost cause only: say which sub-loops it is in
        return " — inside " + " → ".join(
            f"sub-loop {loop!r}, state {state!r}" for loop, state in child.failed_in
        )
    return f" — inside sub-loop {child.facts.loop!r}: {child.reason}"


def _child_of(
    children: tuple[tuple[int, str, Explanation], ...], last: Step | None
) -> Explanation | None:
    """The explanation of the child run `last` (a sub-loop step) ran, if any."""
    if last is None:
        return None
    for step, state, child in children:
        if step == last.step and state == last.state:
            return child
    return None


def _failing_stderr(
    last: Step | None, children: tuple[tuple[int, str, Explanation], ...]
) -> tuple[tuple[str, ...], str]:
    """The end of the failing action's stderr and the state it ran in; for a sub-loop step
    that failed, the failing action inside its child (however deep)."""
    if last is None or not _failed(last):
        return (), ""
    own = _stderr_tail(last)
    if own:
        return own, f"state {last.state!r}"
    child = _child_of(children, last)
    if child is not None and child.stderr_tail:
        return child.stderr_tail, f"sub-loop {child.facts.loop!r} → {child.stderr_from}"
    return (), ""


def _failure_on_the_way(trace: Trace) -> tuple[tuple[str, ...], str]:
    """For a run that reached a failure terminal through an `on_error` route (harness-optimize's
    `compare` errors, `abandon` reverts, `broken`): the end of the stderr of the last action that
    failed on the way, and its state and step. Its last step failed in nothing of its own."""
    if trace.failed_before is None:
        return (), ""
    step, state, stderr = trace.failed_before
    lines = [line for line in stderr.splitlines() if line.strip()]
    return tuple(lines[-STDERR_LINES:]), f"state {state!r} (step {step})"


def shown_source(source: str) -> bool:
    """Whether the failing action's place is said: not when it is the last step's own."""
    return source.startswith("sub-loop") or source.endswith(")")


def _failed(step: Step) -> bool:
    return bool(
        step.spawn_error
        or step.timed_out
        or step.verdict == "error"
        or (step.exit_code not in (None, 0))
    )


def _stderr_tail(step: Step) -> tuple[str, ...]:
    lines = [line for line in step.stderr.splitlines() if line.strip()]
    if not lines and step.spawn_error:
        lines = [step.spawn_error]
    return tuple(lines[-STDERR_LINES:])


# --- text ----------------------------------------------------------------------------------


def render_text(explanation: Explanation, screen: int = SCREEN_LINES) -> str:
    """The text of `ll-loop explain`, fitted to `screen` lines: when everything does not fit,
    fewer judgements and then the middle of the path give way (`--format json` has them all).
    Control characters in it (an action's stderr, a judge's reason) are shown as escapes."""
    head, tail = _head_lines(explanation), _tail_lines(explanation)
    unfinished = unfinished_label(explanation.facts.status)
    path = [f"  {_path_line(item, unfinished)}" for item in explanation.path]
    shown = SHOWN_JUDGEMENTS
    judgements = all_judgements(explanation)
    judges = _judgement_lines(judgements, shown)
    while shown > 1 and len(head) + len(path) + len(judges) + len(tail) + 1 > screen:
        shown -= 1
        judges = _judgement_lines(judgements, shown)
    room = screen - len(head) - len(judges) - len(tail) - 1
    if len(path) > max(room, 4):
        keep = max(room, 4) - 1
        first = keep // 3
        hidden = len(path) - keep
        path = [
            *path[:first],
            f"  … {hidden} more stretches of the path …",
            *path[-(keep - first) :],
        ]
    text = "\n".join([*head, *(["path:", *path] if path else []), *judges, *tail])
    return printable(text)  # an action's stderr, a judge's reason: shown, never obeyed


def _head_lines(explanation: Explanation) -> list[str]:
    facts = explanation.facts
    result = facts.result or {}
    state = facts.status
    if state == "finished" and result:
        state = f"{result.get('outcome')} ({result.get('terminated_by')})"
    budget = f"/{explanation.max_steps}" if explanation.max_steps else ""
    steps = f"{facts.steps}{budget} steps" if budget else counted(facts.steps, "step")
    lines = [
        f"run {facts.named} · {facts.loop} · {state} · {steps} · "
        f"{at_least(explanation)}{facts.elapsed_ms / 1000:.1f}s · ${facts.cost_usd:.4f}"
        + (" + unknown" if explanation.cost_unknown_in else ""),
        f"why: {_one_line(explanation.reason)}",
    ]
    if explanation.cost_unknown_in:
        states = ", ".join(explanation.cost_unknown_in)
        lines.append(
            f"cost: the agent of state {states} reported no cost; its spend is not in the "
            f"${facts.cost_usd:.4f}"
        )
    if facts.state_problem:
        lines.append(f"note: {facts.state_problem}")
    if facts.replay_from:
        lines.append(f"replay: {replayed(facts.replay_from, explanation)}")
    elif explanation.cached_calls:
        lines.append(f"cache: {from_cache(explanation)}")
    if explanation.log_gap:
        lines.append(f"note: {explanation.log_gap}; the path below is incomplete")
    for problem in explanation.output_errors:
        lines.append(f"output not computed (null): {_clip(problem, 150)}")
    if explanation.stderr_tail:
        source = explanation.stderr_from
        inside = f" ({source})" if shown_source(source) else ""
        lines.append(f"stderr of the failing action{inside} ends:")
        lines += [f"  | {_clip(line, 100)}" for line in explanation.stderr_tail]
    return lines


def sub_loops(
    explanation: Explanation, shown: int, depth: int = 0
) -> list[tuple[int, int, str, Explanation]]:
    """The last `shown` children of a run, each followed by its own last child, and so on down
    (depth, step, state, child): a child that failed because its own sub-loop timed out or
    failed says so only through that grandchild."""
    found: list[tuple[int, int, str, Explanation]] = []
    for step, state_name, child in explanation.children[-shown:]:
        found.append((depth, step, state_name, child))
        found += sub_loops(child, 1, depth + 1)
    return found


def _tail_lines(explanation: Explanation) -> list[str]:
    lines = [
        f"{'  ' * depth}sub-loop at step {step} ({state_name}): {child.facts.loop}, "
        f"{_one_line(child.reason)}"
        for depth, step, state_name, child in sub_loops(explanation, 2)
    ]
    if explanation.steps_by_state:
        parts = ", ".join(f"{k} {v}" for k, v in explanation.steps_by_state.items())
        lines.append(f"steps by state: {parts}")
    if explanation.cost_by_state:
        parts = ", ".join(
            _state_cost(k, v, explanation.calls_by_state.get(k, 0))
            for k, v in explanation.cost_by_state.items()
        )
        lines.append(f"cost by state: {parts}")
    return lines


def _state_cost(state: str, usd: float, calls: int) -> str:
    """`fix $0.0105 (1 call)`; an agent CLI's own spend comes with no call to count."""
    return f"{state} ${usd:.4f}" + (f" ({counted(calls, 'call')})" if calls else "")


def _path_line(item: PathItem, unfinished: str) -> str:
    """One line of the path; a step with no verdict yet ends in `unfinished` (a live run's
    current step is running, a dead run's was interrupted)."""
    span = (
        f"{item.first_step}"
        if item.last_step == item.first_step
        else (f"{item.first_step}-{item.last_step}")
    )
    hops = " · ".join(
        f"({' · '.join(_hop_text(h, unfinished) for h in inner)}) ×{times}"
        if times > 1
        else _hop_text(inner[0], unfinished)
        for inner, times in _inner_fold(item.steps)
    )
    if item.times > 1:
        return f"{span:>7}  ({hops}) ×{item.times}"
    return f"{span:>7}  {hops}"


def at_least(explanation: Explanation) -> str:
    """`≥` before a killed run's time: it is known up to its last event only, as in `status`;
    and before the time of a run that was killed and resumed (what the killed attempt ran
    after its last boundary is in no record)."""
    facts = explanation.facts
    killed = facts.status == "interrupted" or explanation.killed_attempts or facts.killed_attempts
    return "≥" if killed else ""


def unfinished_label(status: str) -> str:
    """What a step with no end is, by the run's status: under way, stopped (`ll-loop stop`),
    cut short (a kill), or not known."""
    labels = {"running": "(running)", "stopped": "(stopped)", "unknown": "(no end logged)"}
    return labels.get(status, "(interrupted)")


def from_cache(explanation: Explanation) -> str:
    """What a run that used `--cache` had from it: answers of earlier calls, at no cost."""
    total = sum(explanation.calls_by_state.values())
    return (
        f"{explanation.cached_calls} of {total} model answers came from the cache (--cache): "
        "no call was made for them, and they cost nothing"
    )


def replayed(source: str, explanation: Explanation | None = None) -> str:
    """What a replayed run's verdicts and costs are: answers of another run, not the model's
    (and how many requests it had none for: each of those was an error, not a replayed answer)."""
    name = source.rstrip("/").rsplit("/", 1)[-1]
    said = f"the model's answers came from run {name}'s llm.jsonl (--replay): no call was made"
    missed = explanation.replay_misses if explanation is not None else 0
    if missed and explanation is not None:
        total = sum(explanation.calls_by_state.values())
        return (
            f"{said}; {missed} of {total} requests had no answer recorded there "
            "(a replay miss is an error)"
        )
    return f"{said} (its costs are those recorded then), and its judges said what they said then"


def _hop_text(hop: Hop, unfinished: str) -> str:
    where = next_text(hop.ended, hop.target, hop.note, unfinished)
    return f"{hop.state} {hop.verdict or '?'} → {where}"


def next_text(ended: bool, target: str | None, note: str, unfinished: str) -> str:
    """Where a step went: its target (with why, when not its route's), why it went nowhere,
    or `unfinished` for a step that never ended (running, or cut short: `(stopped)` when its
    note says a stop cut it, whatever the run's status is now)."""
    if not ended:
        return f"({note})" if note else unfinished
    if target is not None:
        return f"{target} ({note})" if note else target
    return f"({note or 'no route'})"


def all_judgements(explanation: Explanation) -> tuple[Judgement, ...]:
    """The run's verdicts and its sub-loops' (under the parent's step, their state as
    `call > check`), in step order: a parent whose judges all ran in a child judged too."""
    if not explanation.children:
        return explanation.judgements
    found = list(explanation.judgements)
    for step, state, child in explanation.children:
        found += [Judgement(step, f"{state} > {j.state}", j.note) for j in all_judgements(child)]
    return tuple(sorted(found, key=lambda j: j.step))


def _judgement_lines(judgements: tuple[Judgement, ...], count: int) -> list[str]:
    if not judgements:
        return []
    shown = judgements[-count:]
    lines = ["judges:"]
    if len(judgements) > len(shown):
        lines.append(f"  … {len(judgements) - len(shown)} earlier (--format json lists all)")
    for j in shown:
        note = j.note
        votes = ""
        if len(note.samples) > 1:
            votes = f" [{', '.join(note.samples)}]"
        score = f" score {note.score:g}" if note.score is not None else ""
        name = "" if note.name in ("judge", "rubric") else f" {note.name}"
        line = f"  step {j.step} {j.state}{name}: {note.verdict}{score}{votes}"
        if note.reason:
            line += f" — {_clip(note.reason, 90)}"
        lines.append(line)
        if note.evidence:
            lines.append(f'      evidence: "{_clip(note.evidence, 90)}"')
        rejection = note.evidence_check
        if rejection and "rejected" in rejection and not note.reason.startswith(rejection):
            lines.append(f"      {_clip(rejection, 100)}")
    return lines


def _one_line(text: str) -> str:
    """A sentence on one line: an error quoted in it (an API's message, an action's words) may
    hold line breaks, which would start lines of their own (`why: reached the success …`)."""
    return " ".join(text.split())


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
