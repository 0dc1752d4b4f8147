"""Is a judge stable, and does it discriminate? Statistics over its recorded verdicts.

A judge is an `evaluate` state of a loop (`loop/state`, or `loop/state/name` for a judge of an
assessment) or an `ll-harness --semantic` criterion with its judge model. Every verdict it gave
is an `Observation`: which input it judged (the judge's `input_hash` — model, criterion and
judged text — for loop judges; the subject's target, input and content hashes for harness rows,
whose flips therefore include the subject's own variation), and the sample's verdict.

- flip rate: of the inputs judged at least twice with a decision, those whose decisions were
  not all the same (the samples of one judgement, and repeated judgements of the same input);
- abstention rate: abstentions (`cannot_judge`, harness `abstain`) over decisions plus
  abstentions; errors are counted apart;
- never discriminates: at least `MIN_INPUTS` different inputs decided and every decision the
  same (always yes, or always no) — a judge that cannot say anything else tells nothing.

`observations_from_runs` reads the run directories, `observations_from_attempts` the harness
rows of `history.db` (`observations_from_counts` them counted in SQL, per judge, input and
verdict, as the report reads them); `stability` is pure, and folds them as they come.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

from engine.harness.stats import Rate
from engine.harness.verdicts import judge_notes
from engine.model import jsontext
from engine.runtime.history import Attempt, JudgedGroup
from engine.runtime.runstore import read_state

MIN_INPUTS = 20
ABSTAIN = frozenset({"cannot_judge", "abstain"})
IGNORED = frozenset({"skipped", "", "none"})


@dataclass(frozen=True)
class Observation:
    """One verdict of one judge on one input (`group`: the judgement or invocation it was in)."""

    judge: str
    input_key: str
    verdict: str
    group: str
    at: str = ""
    count: int = 1  # verdicts alike it stands for (harness rows counted in SQL, not read)


@dataclass(frozen=True)
class JudgeStability:
    judge: str
    samples: int
    inputs: int
    decided_inputs: int
    flip_rate: Rate
    abstention_rate: Rate
    errors: int
    verdicts: Mapping[str, int]

    @property
    def never_discriminates(self) -> bool:
        """Every decision the same over at least `MIN_INPUTS` different inputs."""
        decided = [v for v in self.verdicts if v not in ABSTAIN and v != "error"]
        return self.decided_inputs >= MIN_INPUTS and len(decided) == 1

    @property
    def constant_verdict(self) -> str | None:
        decided = [v for v in self.verdicts if v not in ABSTAIN and v != "error"]
        return decided[0] if len(decided) == 1 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "samples": self.samples,
            "inputs": self.inputs,
            "decided_inputs": self.decided_inputs,
            "flip_rate": self.flip_rate.to_json(),
            "abstention_rate": self.abstention_rate.to_json(),
            "errors": self.errors,
            "verdicts": dict(self.verdicts),
            "never_discriminates": self.never_discriminates,
            "constant_verdict": self.constant_verdict if self.never_discriminates else None,
        }


def stability(observations: Iterable[Observation]) -> list[JudgeStability]:
    """Per judge, in name order. Folded as they come, in memory per judge and input (not per
    verdict): a project's history holds hundreds of thousands of them."""
    by_judge: dict[str, _Fold] = {}
    for obs in observations:
        if obs.verdict.lower() not in IGNORED:
            fold = by_judge.get(obs.judge)
            if fold is None:
                fold = by_judge[obs.judge] = _Fold()
            fold.add(obs)
    return [fold.result(judge) for judge, fold in sorted(by_judge.items())]


class _Fold:
    """One judge's verdicts so far: per input, its first decision, how many decisions and
    whether they differed."""

    def __init__(self) -> None:
        self.samples = self.abstained = self.errors = 0
        self.inputs: set[str] = set()
        self.decided: dict[str, list[Any]] = {}  # input -> [first decision, count, flipped]
        self.verdicts: Counter[str] = Counter()

    def add(self, obs: Observation) -> None:
        count = obs.count
        self.samples += count
        self.inputs.add(obs.input_key)
        self.verdicts[obs.verdict] += count
        if obs.verdict in ABSTAIN:
            self.abstained += count
        elif obs.verdict == "error":
            self.errors += count
        else:
            seen = self.decided.get(obs.input_key)
            if seen is None:
                self.decided[obs.input_key] = [obs.verdict, count, False]
            else:
                seen[1] += count
                seen[2] = seen[2] or seen[0] != obs.verdict

    def result(self, judge: str) -> JudgeStability:
        repeated = [seen for seen in self.decided.values() if seen[1] >= 2]
        flipped = sum(1 for seen in repeated if seen[2])
        total_decided = sum(seen[1] for seen in self.decided.values())
        return JudgeStability(
            judge=judge,
            samples=self.samples,
            inputs=len(self.inputs),
            decided_inputs=len(self.decided),
            flip_rate=Rate(flipped, len(repeated)),
            abstention_rate=Rate(self.abstained, total_decided + self.abstained),
            errors=self.errors,
            verdicts=dict(self.verdicts.most_common()),
        )


# --- where observations come from -----------------------------------------------------------


def observations_from_attempts(attempts: Iterable[Attempt]) -> Iterator[Observation]:
    """Harness rows judged by `--semantic` (authoritative rows only)."""
    for attempt in attempts:
        if not attempt.authoritative or not attempt.semantic_criterion:
            continue
        verdict = attempt.semantic_verdict or ("error" if attempt.errored else "")
        model = f" ({attempt.judge_model})" if attempt.judge_model else ""
        yield Observation(
            judge=f"--semantic {attempt.semantic_criterion!r}{model}",
            input_key=f"{attempt.target}|{attempt.input_hash}|{attempt.target_content_hash}",
            verdict=verdict,
            group=attempt.invocation_id,
            at=attempt.created_at,
        )


def observations_from_counts(groups: Iterable[JudgedGroup]) -> Iterator[Observation]:
    """`observations_from_attempts` of the rows `History.judged_counts` counted."""
    for g in groups:
        model = f" ({g.judge_model})" if g.judge_model else ""
        yield Observation(
            judge=f"--semantic {g.criterion!r}{model}",
            input_key=f"{g.target}|{g.input_hash}|{g.content_hash}",
            verdict=g.verdict or ("error" if g.errored else ""),
            group="",
            count=g.count,
        )


def observations_from_runs(runs_dir: Path, loop: str | None = None) -> Iterator[Observation]:
    """The judges' verdicts in every run under `runs_dir` (`.loops/runs`), optionally only the
    judges of loop `loop` (sub-loops' judges count under their own loop's name)."""
    if not runs_dir.is_dir():
        return
    for run_dir in sorted(runs_dir.iterdir()):
        if loop is None or _may_judge_in(run_dir, loop):
            yield from observations_from_events(_evaluate_events(run_dir / "events.jsonl"), loop)


def _may_judge_in(run_dir: Path, loop: str) -> bool:
    """Whether the log in `run_dir` can hold verdicts of `loop`'s judges: it is a run of that
    loop, or it ran sub-loops (their events are in its log), or its state.json cannot say. The
    report of one run of a loop read every other loop's log to the end (a 300 MB one: 6 s)."""
    if (run_dir / "children").exists():
        return True
    try:
        ran = read_state(run_dir / "state.json").get("loop")
    except (OSError, ValueError):
        return True
    return not isinstance(ran, str) or ran == loop


def observations_from_events(
    events: Iterable[Mapping[str, Any]], loop: str | None = None
) -> Iterator[Observation]:
    """The judges' verdicts in one run's events (loop_start names the loop at each depth)."""
    loops: dict[int, str] = {}
    for event in events:
        depth = event.get("depth") if isinstance(event.get("depth"), int) else 0
        assert isinstance(depth, int)
        if event.get("event") == "loop_start":
            loops[depth] = str(event.get("loop") or "")
            continue
        if event.get("event") != "evaluate" or (loop is not None and loops.get(depth) != loop):
            continue
        details = event.get("details")
        if not isinstance(details, Mapping):
            continue
        state = str(event.get("state") or "")
        group = f"{event.get('run_id')}:{depth}:{event.get('step')}:{state}"
        notes = judge_notes(_str(event.get("evaluator")), details)
        for note in notes:
            name = f"{loops.get(depth, '?')}/{state}"
            if note.name not in ("judge", "rubric"):
                name += f"/{note.name}"
            verdicts = note.samples or ((note.verdict,) if note.verdict else ())
            for verdict in verdicts:
                yield Observation(
                    judge=name,
                    input_key=note.input_hash or group,
                    verdict=_decision(verdict),
                    group=group,
                    at=str(event.get("ts") or ""),
                )


def _decision(verdict: str) -> str:
    """An assessment judge's pass/fail reads as yes/no, like every other judge's decision."""
    return {"pass": "yes", "fail": "no"}.get(verdict, verdict)


def _evaluate_events(path: Path) -> Iterator[dict[str, Any]]:
    """The `loop_start` and `evaluate` events of a log; other lines are not even parsed."""

    if path.exists() and not path.is_file():
        return  # a FIFO would block the report forever, /dev/zero never ends a line
    try:
        handle = path.open("rb")
    except OSError:
        return
    with handle:
        for raw in handle:
            if b'"evaluate"' not in raw and b'"loop_start"' not in raw:
                continue
            try:
                event = jsontext.loads(raw)
            except ValueError:
                continue  # a torn last line
            if isinstance(event, dict):
                yield event


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def render_text(rows: Sequence[JudgeStability]) -> str:
    """The table `ll-harness history --stability` prints."""
    if not rows:
        return "no judge verdicts recorded"
    lines = []
    for row in rows:
        flag = ""
        if row.never_discriminates:
            flag = (
                f"  ⚑ never discriminates: {row.constant_verdict} on all {row.decided_inputs} "
                "inputs"
            )
        lines.append(f"{row.judge}{flag}")
        lines.append(
            f"  {row.samples} verdicts on {row.inputs} inputs · flips {row.flip_rate.render()}"
            f" · abstains {row.abstention_rate.render()} · errors {row.errors}"
        )
        verdicts = ", ".join(f"{k} {v}" for k, v in row.verdicts.items())
        lines.append(f"  verdicts: {verdicts}")
    return "\n".join(lines)


def stability_report(root: Path, target: str | None, since: str | None) -> list[JudgeStability]:
    """Every judge of the project in `root` (only TARGET's when given), since a date."""
    from engine.runtime.history import history_path, open_history

    groups: list[JudgedGroup] = []
    if history_path(root).exists():
        with open_history(root) as history:
            groups = history.judged_counts(target=target, since=since)
    observations: Iterable[Observation] = chain(
        observations_from_runs(root / ".loops" / "runs", target),
        observations_from_counts(groups),
    )
    if since is not None:
        observations = (o for o in observations if not o.at or o.at >= since)
    return stability(observations)
