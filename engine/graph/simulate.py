"""Walk a loop's graph without running anything: verdicts come from a scenario and overrides.

`simulate` answers "where does this loop go if every check says no?" before a token or a second
is spent. It applies the interpreter's rules exactly (docs/architecture.md, "One step"): the
terminal check comes before the budget check, `on_max_steps` runs once when the budget is spent,
routing uses `engine.graph.routing.route_for`, and a retry is an entry along a retry edge
(`engine.graph.loop_graph.retry_edges`), counted against `max_retries` and redirected to
`on_retry_exhausted` when exceeded; any other entry resets the count.

Scenarios pick each state's verdict from the state's closed verdict set:
- `all-yes`: the favourable verdict (yes; convergence target; the first declared classify verdict),
- `all-no`: the unfavourable one (no; convergence stall; the last declared classify verdict;
  a `next:` step, which has no "no", succeeds),
- `all-error`: every state errors,
- `first-no`: a state's first visit is unfavourable, later visits favourable (one fix cycle).
Overrides `STATE=VERDICT` (or `STATE=v1,v2,...`, one per visit, the last repeating) win; a
sub-loop state also takes `terminal:NAME`, the child ending in NAME, routed by `on_terminal`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from engine.graph.loop_graph import compile_graph, retry_edges
from engine.graph.routing import possible_verdicts, route_for
from engine.load.spelling import did_you_mean_hint
from engine.model.errors import UsageError
from engine.model.loop import CURRENT, Loop, State
from engine.model.ports import EXIT_CODES, Outcome
from engine.model.timefmt import counted

_FAVOURABLE = ("yes", "target", "progress")
_UNFAVOURABLE = ("no", "stall", "progress")


def _favourable(state: State) -> str:
    return _pick(state, _FAVOURABLE, first_declared=True)


def _unfavourable(state: State) -> str:
    return _pick(state, _UNFAVOURABLE, first_declared=False)


def _pick(state: State, preferred: Sequence[str], *, first_declared: bool) -> str:
    possible = possible_verdicts(state)
    for verdict in preferred:
        if verdict in possible:
            return verdict
    declared = state.evaluate.verdicts if state.evaluate is not None else ()
    if declared:
        return declared[0] if first_declared else declared[-1]
    return "yes" if "yes" in possible else sorted(possible)[0]


Chooser = Callable[[State, int], str]  # (state, visit number starting at 1) -> verdict

SCENARIOS: Mapping[str, Chooser] = {
    "all-yes": lambda state, visit: _favourable(state),
    "all-no": lambda state, visit: _unfavourable(state),
    "all-error": lambda state, visit: "error",
    "first-no": lambda state, visit: _unfavourable(state) if visit == 1 else _favourable(state),
}


@dataclass(frozen=True)
class Step:
    """One simulated step: the state ran, produced `verdict`, and the run went to `target`."""

    number: int
    state: str
    verdict: str
    target: str | None
    note: str = ""


@dataclass(frozen=True)
class Simulation:
    """How the simulated run ended, and the path it took."""

    loop: str
    scenario: str
    max_steps: int
    steps: tuple[Step, ...]
    terminated_by: str  # terminal | max_steps | error
    outcome: Outcome
    final_state: str | None
    reason: str
    on_max_steps_ran: str | None = None
    skipped: int = 0  # steps of a repeating cycle walked arithmetically, not listed in `steps`

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    @property
    def steps_used(self) -> int:
        return len(self.steps) + self.skipped

    def to_json(self) -> dict[str, object]:
        return {
            "loop": self.loop,
            "scenario": self.scenario,
            "max_steps": self.max_steps,
            "steps": self.steps_used,
            "skipped_steps": self.skipped,
            "terminated_by": self.terminated_by,
            "outcome": self.outcome,
            "final_state": self.final_state,
            "reason": self.reason,
            "on_max_steps_ran": self.on_max_steps_ran,
            "path": [
                {
                    "step": s.number,
                    "state": s.state,
                    "verdict": s.verdict,
                    "target": s.target,
                    "note": s.note,
                }
                for s in self.steps
            ],
        }


def parse_overrides(loop: Loop, items: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """`STATE=VERDICT[,VERDICT...]` → {state: verdicts}; a verdict the state cannot produce,
    or a state that does not exist, is a usage error."""
    overrides: dict[str, tuple[str, ...]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip()
        verdicts = tuple(v.strip() for v in values.split(",") if v.strip())
        if not sep or not name or not verdicts:
            raise UsageError(f"--verdict {item!r} is not STATE=VERDICT", hint="e.g. check=no")
        state = loop.states.get(name)
        if state is None:
            maybe = did_you_mean_hint(name, loop.states)
            raise UsageError(f"--verdict names state {name!r}, which does not exist{maybe}")
        possible = possible_verdicts(state) | {f"terminal:{t}" for t in state.on_terminal}
        for verdict in verdicts:
            if verdict not in possible:
                choices = ", ".join(sorted(possible)) or "none: it is terminal"
                raise UsageError(
                    f"state {name!r} can never produce verdict {verdict!r}",
                    hint=f"its verdicts are: {choices}",
                )
        overrides[name] = verdicts
    return overrides


# A walk longer than this lists no more steps once it is caught in a cycle: the rest of the
# budget (which may be millions of steps) is walked by arithmetic instead of one by one.
LISTED_STEPS = 200


@dataclass
class _Walk:
    loop: Loop
    retry: frozenset[tuple[str, str]]
    overrides: Mapping[str, Sequence[str]]
    visits: dict[str, int] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    seen: dict[tuple[object, ...], int] = field(default_factory=dict)  # configuration → step
    # Bumped whenever a visit count changes as far as verdicts can tell visits apart (the
    # first, and each of its `--verdict` list). Those counts only grow, so equal generations
    # mean equal counts: a configuration is compared in O(1), not by sorting every state's
    # count at each step (3,000 states in a row took 10 s).
    generation: int = 0

    def visit(self, name: str) -> int:
        """Count a visit of `name`; its number."""
        count = self.visits[name] = self.visits.get(name, 0) + 1
        if count <= max(2, len(self.overrides.get(name, ()))):
            self.generation += 1
        return count

    def configuration(self, current: str) -> tuple[object, ...]:
        """Everything the rest of the walk depends on: the state, the visit counts verdicts
        can tell apart (their generation), and the retry counts that a limit makes matter."""
        retries = tuple(
            sorted(
                (name, n)
                for name, n in self.retries.items()
                if self.loop.states[name].max_retries is not None
            )
        )
        return current, self.generation, retries


def simulate(
    loop: Loop,
    scenario: str = "all-yes",
    overrides: Mapping[str, Sequence[str]] | None = None,
    max_steps: int | None = None,
) -> Simulation:
    """Walk `loop` from `initial` with verdicts from `scenario` and `overrides`."""
    if scenario not in SCENARIOS:
        raise UsageError(
            f"unknown scenario {scenario!r}", hint=f"choose one of {', '.join(SCENARIOS)}"
        )
    choose, overrides = SCENARIOS[scenario], overrides or {}
    budget = loop.max_steps if max_steps is None else max_steps
    walk = _Walk(loop, retry_edges(compile_graph(loop)), overrides)
    skipped = 0

    def end(
        by: str, outcome: Outcome, final: str | None, reason: str, **kw: str | None
    ) -> Simulation:
        return Simulation(
            loop.name,
            scenario,
            budget,
            tuple(walk.steps),
            by,
            outcome,
            final,
            reason,
            skipped=skipped,
            **kw,
        )

    current = loop.initial
    while True:
        state = loop.states.get(current)
        if state is None:
            return end("error", "error", current, f"state {current!r} does not exist")
        if state.terminal:
            outcome: Outcome = "failure" if state.failure else "success"
            return end("terminal", outcome, current, f"reached terminal {current!r} ({outcome})")
        done = len(walk.steps)
        key = walk.configuration(current)
        last = walk.seen.get(key)
        walk.seen[key] = done
        if done >= LISTED_STEPS and last is not None and done < budget:
            # The walk repeats steps last+1..done forever: jump to where the budget runs out.
            period = done - last
            skipped = budget - done
            current = walk.steps[last + (budget - last) % period].state
        if done + skipped >= budget:
            why = f"the step budget ({budget}) ran out in state {current!r}"
            if skipped:
                why += f" (a cycle of {counted(done - (last or 0), 'step')} repeats to the end)"
            if loop.on_max_steps is not None:
                return end(
                    "max_steps",
                    "inconclusive",
                    loop.on_max_steps,
                    why + f"; on_max_steps ran {loop.on_max_steps!r}",
                    on_max_steps_ran=loop.on_max_steps,
                )
            return end("max_steps", "inconclusive", current, why)
        visit = walk.visit(current)
        verdict = _verdict(state, visit, choose, overrides)
        target = _route(state, verdict)
        if target is None:
            walk.steps.append(Step(len(walk.steps) + 1, current, verdict, None, "unrouted"))
            return end(
                "error", "error", current, f"verdict {verdict!r} of state {current!r} is not routed"
            )
        entered, note = _enter(walk, current, target)
        walk.steps.append(Step(len(walk.steps) + 1, current, verdict, entered or target, note))
        if entered is None:
            return end(
                "error",
                "error",
                target,
                f"state {target!r} exhausted its retries and has no on_retry_exhausted",
            )
        current = entered


def _route(state: State, verdict: str) -> str | None:
    """`route_for`, plus a sub-loop child's terminal (`terminal:NAME`) routed by `on_terminal`."""
    child_terminal = verdict.removeprefix("terminal:")
    if child_terminal != verdict:
        target = state.on_terminal[child_terminal]
        return state.name if target == CURRENT else target
    return route_for(state, verdict)


def _verdict(
    state: State, visit: int, choose: Chooser, overrides: Mapping[str, Sequence[str]]
) -> str:
    forced = overrides.get(state.name)
    if forced:
        return forced[min(visit, len(forced)) - 1]
    return choose(state, visit)


def _enter(walk: _Walk, source: str, target: str) -> tuple[str | None, str]:
    """The interpreter's retry rule: the state actually entered and a note for the path."""
    notes: list[str] = []
    for _ in range(len(walk.loop.states) + 1):
        state = walk.loop.states.get(target)
        if state is None:
            return target, "; ".join(notes)
        if (source, target) not in walk.retry:
            walk.retries.pop(target, None)
            return target, "; ".join(notes)
        count = walk.retries.get(target, 0) + 1
        limit = state.max_retries
        if limit is None or count <= limit:
            walk.retries[target] = count
            notes.append(f"↺ retry {count}" + (f"/{limit}" if limit is not None else ""))
            return target, "; ".join(notes)
        walk.retries.pop(target, None)
        notes.append(f"retries of {target!r} exhausted ({limit})")
        if state.retry_exhausted_target is None:
            return None, "; ".join(notes)
        source, target = target, state.retry_exhausted_target
    return target, "; ".join(notes)


def render_text(sim: Simulation) -> str:
    """The path as a table and one closing line saying where and why it ended."""
    width = max((len(s.state) for s in sim.steps), default=5)
    vwidth = max((len(s.verdict) for s in sim.steps), default=3)
    lines = [f"simulate {sim.loop} (scenario {sim.scenario}, max_steps {sim.max_steps})"]
    for s in sim.steps:
        target = s.target if s.target is not None else "(nowhere)"
        note = f"  {s.note}" if s.note else ""
        lines.append(
            f"  {s.number:>3}  {s.state.ljust(width)}  {s.verdict.ljust(vwidth)}  → {target}{note}"
        )
    if sim.skipped:
        lines.append(f"  ...  the cycle repeats: {sim.skipped} more steps not listed")
    lines.append(
        f"ended: {sim.terminated_by} — {sim.reason}; {sim.steps_used} of "
        f"{sim.max_steps} steps used (outcome {sim.outcome}, exit {sim.exit_code})"
    )
    return "\n".join(lines)
