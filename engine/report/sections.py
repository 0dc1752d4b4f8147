"""The sections of a run's HTML report, each a pure function of what it shows.

`summary` (why it ended), `graph` (the loop drawn with the path taken), `timeline` (steps over
time, one lane per state, and the step table), `judges` (every verdict with its evidence and
cost), `cost` (spend per state against the static bound), `stability` (the loop's judges over
history) and `harness` (pass rate over time with intervals). A suite run's sections live in
`engine.report.suite_page`, each a function of the suite's result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape

from engine.graph.cost import CostBound
from engine.graph.loop_graph import LoopGraph
from engine.harness.stability import JudgeStability
from engine.harness.trends import RatePoint
from engine.model.timefmt import epoch_seconds
from engine.report.charts import rate_chart
from engine.report.explain import (
    Explanation,
    PathItem,
    all_judgements,
    at_least,
    from_cache,
    next_text,
    replayed,
    round_text,
    shown_source,
    sub_loops,
)
from engine.report.layout import layout
from engine.report.page import Section, table
from engine.report.runlog import Step, Trace, run_again
from engine.report.svg import PathCounts, graph_svg

TIMELINE_WIDTH = 900
LANE_H = 22
TIMELINE_BARS = 2000  # a longer run draws its last steps (one bar each would be megabytes)
STEP_ROWS = 400  # the step table lists at most this many steps (the first and the last ones)
JUDGE_ROWS = 400  # and the judges table this many verdicts


def path_counts(trace: Trace | None, final_state: str | None) -> PathCounts:
    """How often each state ran and each transition was taken, from the top run's steps.

    A step routed to a state whose retries were exhausted moves on to that state's
    `on_retry_exhausted` target: both hops count (the second is the `retry_exhausted` edge).
    """
    visits: Counter[str] = Counter()
    moves: Counter[tuple[str, str]] = Counter()
    steps = trace.steps if trace else []
    again = run_again(steps)  # a cut attempt that a resume ran again counts once, not twice
    for index, step in enumerate(steps):
        if index in again:
            continue
        visits[step.state] += 1
        if not step.routed or step.target is None:
            continue
        moves[(step.state, step.target)] += 1
        retry = step.retry or {}
        after = retry.get("target")
        if retry.get("exhausted") and isinstance(after, str):
            moves[(step.target, after)] += 1
    if final_state and trace and trace.end and trace.end.get("terminated_by") == "terminal":
        visits[final_state] += 1
    return PathCounts(
        dict(visits),
        dict(moves),
        current=final_state,
        budget=budget_hop(trace, final_state),
        max_steps=trace.max_steps if trace else None,
    )


def budget_hop(trace: Trace | None, final_state: str | None) -> tuple[str, str] | None:
    """(the state the run was in when its budget ran out, the `on_max_steps` state it went
    to): the state it ran once, or the terminal it ended in without running anything."""
    if trace is None or (trace.end or {}).get("terminated_by") != "max_steps":
        return None
    counted = next((s for s in reversed(trace.steps) if not s.budget_end), None)
    was_in = counted.went_to if counted is not None else trace.initial
    last = trace.current
    if not was_in:
        return None
    if last is not None and last.budget_end:
        return was_in, last.state
    if final_state and final_state != was_in:  # a terminal on_max_steps: nothing ran
        return was_in, final_state
    return None


def summary_section(explanation: Explanation) -> Section:
    facts = explanation.facts
    result = facts.result or {}
    kind = str(result.get("outcome") or facts.status)
    budget = f" of {explanation.max_steps}" if explanation.max_steps else ""
    items = [
        ("run", facts.named),
        ("loop", facts.loop),
        ("status", facts.status),
        ("outcome", f"{result.get('outcome')} ({result.get('terminated_by')})" if result else "—"),
        ("steps", f"{facts.steps}{budget}"),
        ("time", f"{at_least(explanation)}{facts.elapsed_ms / 1000:.1f} s"),
        ("cost", f"${facts.cost_usd:.4f}" + (" + unknown" if explanation.cost_unknown_in else "")),
    ]
    facts_html = "".join(f"<span>{escape(k)} <b>{escape(v)}</b></span>" for k, v in items)
    body = [
        f'<p class="facts">{facts_html}</p>',
        f'<p class="why {escape(kind)}" id="why">{escape(explanation.reason)}</p>',
    ]
    if facts.state_problem:
        body.append(f'<p class="note">Note: {escape(facts.state_problem)}.</p>')
    if explanation.cost_unknown_in:
        states = escape(", ".join(explanation.cost_unknown_in))
        body.append(
            f'<p class="note">Cost: the agent of state {states} reported no cost; its spend is '
            f"not in the ${facts.cost_usd:.4f}.</p>"
        )
    if explanation.log_gap:
        body.append(
            f'<p class="note">Note: {escape(explanation.log_gap)}; the path below is '
            "incomplete.</p>"
        )
    if facts.replay_from:
        body.append(f"<p>Replayed: {escape(replayed(facts.replay_from, explanation))}.</p>")
    elif explanation.cached_calls:
        body.append(f"<p>Cache: {escape(from_cache(explanation))}.</p>")
    for problem in explanation.output_errors:
        body.append(f"<p>Output not computed (null): {escape(problem)}</p>")
    if explanation.stderr_tail:
        source = explanation.stderr_from
        inside = f" ({escape(source)})" if shown_source(source) else ""
        body.append(f"<p>stderr of the failing action{inside} ends:</p>")
        body.append(f"<pre>{escape(chr(10).join(explanation.stderr_tail))}</pre>")
    for depth, step, state, child in sub_loops(explanation, 5):
        inset = f' style="margin-left:{2 * depth}em"' if depth else ""
        body.append(
            f"<p{inset}>sub-loop at step {step} ({escape(state)}): "
            f"<b>{escape(child.facts.loop)}</b> — {escape(child.reason)}</p>"
        )
    title = "Where it stands" if facts.status == "running" else "Why it ended"
    return Section("summary", title, "\n".join(body))


def graph_section(graph: LoopGraph, counts: PathCounts, *, note: str = "") -> Section:
    """The loop's graph with the path taken; `note`: why it is only the states and edges the
    run's events name (its loop file could not be trusted)."""
    placed = layout(graph)
    rebuilt = (
        f'<p class="legend">Only the states and transitions this run took: {escape(note)}.</p>'
        if note
        else ""
    )
    legend = rebuilt + (
        '<p class="legend">Orange: the path this run took (badge: times a state ran; '
        "×n on an edge: times the run went that way). Dashed edges count a retry; a dotted "
        "one labelled max_steps N spent leads to the on_max_steps state, which runs once when "
        "the budget is spent (from the state the run was in, or, if its budget was not spent, "
        "an arrow from above). A dashed outline marks where the run ended or stands. Click a "
        "state to show only its steps below.</p>"
    )
    svg = graph_svg(graph, placed, counts)
    return Section("graph", "Graph and path", f'{legend}<div class="graph-wrap">{svg}</div>')


def timeline_section(
    trace: Trace | None, path: Sequence[PathItem], *, unfinished: str = "(interrupted)"
) -> Section:
    """The steps over time and as a table (`path`: their folded path, whose repeats the
    table's legend names); a step with no end reads `unfinished`."""
    steps = trace.steps if trace else []
    if not steps:
        return Section("timeline", "Timeline", "<p>No step has run.</p>")
    drawn = steps[-TIMELINE_BARS:]
    note = ""
    if len(drawn) < len(steps):
        note = f'<p class="legend">The last {len(drawn)} of {len(steps)} steps.</p>'
    table_html = _step_table(steps, path, unfinished)
    return Section("timeline", "Timeline", note + _timeline_svg(drawn) + table_html)


def _timeline_svg(steps: list[Step]) -> str:
    times = [epoch_seconds(s.started_at) for s in steps]
    if any(t is None for t in times):
        return ""
    starts = [t for t in times if t is not None]
    ends = [_bar_end(s, starts[i], starts[i + 1 : i + 2]) for i, s in enumerate(steps)]
    origin, total = starts[0], max(max(ends) - starts[0], 0.001)
    lanes = list(dict.fromkeys(s.state for s in steps))
    label_w = 150
    height = len(lanes) * LANE_H + 30
    scale = (TIMELINE_WIDTH - label_w - 10) / total
    parts = [
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{TIMELINE_WIDTH}" '
        f'height="{height}" viewBox="0 0 {TIMELINE_WIDTH} {height}">'
    ]
    for index, lane in enumerate(lanes):
        y = index * LANE_H + 4
        shown = lane if len(lane) <= 22 else lane[:21] + "…"  # cut, and seen to be cut
        parts.append(
            f'<text x="4" y="{y + 14}"><title>{escape(lane)}</title>{escape(shown)}</text>'
        )
    for step, start, end in zip(steps, starts, ends, strict=True):
        y = lanes.index(step.state) * LANE_H + 4
        x = label_w + (start - origin) * scale
        width = max(1.5, (end - start) * scale)
        verdict = escape(step.verdict or ("none" if step.finished else "interrupted"))
        parts.append(
            f'<rect class="bar {verdict}" data-step="{step.step}" x="{x:.1f}" y="{y}" '
            f'width="{width:.1f}" height="{LANE_H - 6}"><title>step {step.step} '
            f"{escape(step.state)}: {verdict} ({end - start:.2f} s)</title></rect>"
        )
    parts.append(
        f'<text x="{label_w}" y="{height - 6}">0 s</text>'
        f'<text x="{TIMELINE_WIDTH - 10}" y="{height - 6}" text-anchor="end">{total:.2f} s</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _bar_end(step: Step, start: float, following: list[float]) -> float:
    """Until the next step starts; a step cut short (stopped, killed) only as long as its
    action ran, not the time until a resume took it up again."""
    own = start + (step.duration_ms or 0) / 1000
    if not following:
        # the last step: until it was routed (its judges took time too), else its action's end
        ended = step.ended_at or step.stopped_at  # routed, or ended by a stop (its judges too)
        routed = epoch_seconds(ended) if ended else None
        return max(own, routed) if routed is not None else own
    return following[0] if step.finished else min(own, following[0])


def _step_seconds(step: Step) -> float:
    """The whole step, until it was routed: its action, its judges, a sub-loop's child run
    (the action's own time alone read 0.00 s for a child that ran for minutes)."""
    action = (step.duration_ms or 0) / 1000
    if step.child is not None and not step.ended_at:  # cut by a stop: the child ran till then
        child = step.child.end or {}
        ran = child.get("duration_ms")
        if isinstance(ran, int | float) and not isinstance(ran, bool):
            action = max(action, ran / 1000)
    start = epoch_seconds(step.started_at)
    end = epoch_seconds(step.ended_at or step.stopped_at)  # a stop ends a step never routed
    if start is None or end is None:
        return action
    return max(action, end - start)


def _text(text: str) -> str:
    """Free text in a table cell (an action's output, a judge's reason), in a block that wraps
    anywhere: one long word (`xxxx…`, a path) would otherwise widen the table past the page."""
    return f'<div class="text">{escape(text)}</div>'


def _step_table(steps: list[Step], path: Sequence[PathItem], unfinished: str) -> str:
    """The steps as rows; one with no verdict yet reads `unfinished` (running or interrupted)."""
    shown = steps if len(steps) <= STEP_ROWS else steps[: STEP_ROWS // 2] + steps[-STEP_ROWS // 2 :]
    rows = []
    for step in shown:
        verdict = step.verdict or ""
        outcome = (
            f"exit {step.exit_code}"
            if step.exit_code is not None
            else (step.spawn_error or ("timed out" if step.timed_out else _killed_by(step)))
        )
        rows.append(
            (
                str(step.step),
                escape(step.state),
                escape(outcome),
                f'<span class="verdict-{escape(verdict)}">{escape(verdict)}</span>',
                escape(next_text(step.ended, step.went_to, step.hop_note(), unfinished)),
                f"{_step_seconds(step):.2f} s",
                f"${step.spent()[1]:.4f}" if step.spent()[1] else "",
                _text(_clip(step.output, 120)),
            )
        )
    html = table(
        ["step", "state", "action", "verdict", "next", "time", "cost", "output (start)"],
        rows,
        cls="steps",
        row_attrs=[f'data-state="{escape(s.state)}"' for s in shown],
    )
    note = ""
    if len(steps) > len(shown):
        note = f"<p>{len(steps) - len(shown)} steps in the middle are not listed.</p>"
    folded = " ".join(
        f"{_span(p.first_step, p.last_step)}: ({round_text(p.steps)}) ×{p.times}"
        for p in path
        if p.times > 1
    )
    repeats = f'<p class="legend">Repeated stretches: {escape(folded)}</p>' if folded else ""
    return repeats + html + note


def _killed_by(step: Step) -> str:
    return f"killed by signal {step.signal}" if step.signal else ""


def _span(first: int, last: int) -> str:
    """`4-9`, or `2` for attempts of one step (a kill cut them short, a resume ran it again)."""
    return str(first) if first == last else f"{first}-{last}"


def judges_section(explanation: Explanation) -> Section:
    judgements = all_judgements(explanation)
    if not judgements:
        return Section("judges", "Judges", "<p>No LLM judge or assessment ran in this run.</p>")
    shown = judgements
    if len(judgements) > JUDGE_ROWS:  # like the step table: the first and the last ones
        shown = judgements[: JUDGE_ROWS // 2] + judgements[-JUDGE_ROWS // 2 :]
    rows = []
    for j in shown:
        note = j.note
        verdict = note.verdict or ""
        extra = []
        if note.samples and len(note.samples) > 1:
            extra.append("samples: " + ", ".join(note.samples))
        if note.score is not None:
            extra.append(f"score {note.score:g}")
        if note.confidence is not None:
            extra.append(f"confidence {note.confidence:.2f}")
        evidence = escape(note.evidence)
        if note.evidence_check:
            evidence += f"<br><i>{escape(note.evidence_check)}</i>"
        rows.append(
            (
                str(j.step),
                escape(j.state),
                escape(note.name),
                f'<span class="verdict-{escape(verdict)}">{escape(verdict)}</span>'
                + (f"<br>{escape('; '.join(extra))}" if extra else ""),
                _text(note.reason),
                f'<div class="text">{evidence}</div>',
                f"${note.cost_usd:.4f}",
            )
        )
    body = table(["step", "state", "judge", "verdict", "reason", "evidence", "cost"], rows)
    if len(judgements) > len(shown):
        hidden = len(judgements) - len(shown)
        body += (
            f"<p>{hidden} judged steps in the middle are not listed "
            "(<code>ll-loop explain RUN -f json</code> lists them all).</p>"
        )
    return Section("judges", "Judges", body)


def cost_section(explanation: Explanation, bound: CostBound | None) -> Section:
    spent = explanation.facts.cost_usd
    rows = [
        (
            escape(state),
            str(explanation.steps_by_state.get(state, 0)),
            str(explanation.calls_by_state.get(state, 0)),
            f"${explanation.cost_by_state.get(state, 0.0):.4f}",
        )
        for state in dict.fromkeys([*explanation.steps_by_state, *explanation.cost_by_state])
    ]
    body = [table(["state", "steps", "LLM calls", "cost"], rows)]
    if bound is not None and bound.bounded and bound.usd is not None:
        basis = (
            "any max_steps" if bound.independent_of_max_steps else f"max_steps {bound.max_steps}"
        )
        if bound.outside:
            basis += f"; agent CLIs' own spend not counted: {', '.join(bound.outside)}"
        body.append(
            f"<p>Spent <b>${spent:.4f}</b>; the static bound for one run of this loop is "
            f"<b>{bound.calls} LLM calls, ${bound.usd:.4f}</b> ({escape(basis)}).</p>"
        )
    elif bound is not None:
        reasons = "; ".join(f"{k}: {v}" for k, v in bound.unknown.items())
        body.append(f"<p>Spent <b>${spent:.4f}</b>; no static bound ({escape(reasons)}).</p>")
    return Section("cost", "Steps and cost", "\n".join(body))


def stability_section(rows: Sequence[JudgeStability]) -> Section:
    if not rows:
        return Section("stability", "Judge stability", "<p>No judge verdicts in the history.</p>")
    cells = []
    for row in rows:
        flag = ""
        if row.never_discriminates:
            flag = (
                f'<span class="flag">never discriminates: {escape(str(row.constant_verdict))} '
                f"on all {row.decided_inputs} inputs</span>"
            )
        cells.append(
            (
                escape(row.judge),
                str(row.samples),
                str(row.inputs),
                escape(row.flip_rate.render()),
                escape(row.abstention_rate.render()),
                str(row.errors),
                flag,
            )
        )
    body = table(
        ["judge", "verdicts", "inputs", "flip rate", "abstention rate", "errors", ""], cells
    )
    note = (
        '<p class="legend">Over every recorded run of this loop: flips are inputs judged more '
        "than once whose decisions differed; intervals are 95% Wilson intervals.</p>"
    )
    return Section("stability", "Judge stability", note + body)


def harness_section(points: Sequence[RatePoint], target: str, total: int = 0) -> Section:
    """The pass rate per invocation (`points`, the last ones of `total` when more)."""
    if not points:
        return Section(
            "harness",
            "Harness pass rate",
            f"<p>No ll-harness results recorded for {escape(target)}.</p>",
        )
    chart = rate_chart(points, f"pass rate of {target} over time")
    rows = [
        (
            escape(p.at[:19].replace("T", " ")),
            escape(p.runner),
            escape(p.rate.render()),
            str(p.abstained),
            str(p.errored),
        )
        for p in points[-20:]
    ]
    note = ""
    if total > len(points):
        note = f'<p class="legend">The last {len(points)} of {total} invocations.</p>'
    body = note + chart + table(["when", "runner", "pass rate", "abstained", "errors"], rows)
    return Section("harness", "Harness pass rate", body)


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
