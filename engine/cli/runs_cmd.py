"""Run management: `ll-loop status`, `stop`, `history` and `resume` (docs/runs.md).

Each command is thin: call `engine.api` (`status`, `stop`, `history`, `events`, `resume`),
render. Results go to stdout (JSON with `--json`), diagnostics to stderr.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.cli.common import err, examples, finite, out
from engine.model.errors import LoopError, UsageError
from engine.model.terminal import printable
from engine.model.timefmt import counted, duration

if TYPE_CHECKING:  # the rest is imported by the command that needs it (fast `ll-loop validate`)
    from engine.api import HistoryEntry, RunStatus


def register(app: typer.Typer) -> None:
    """Add `status`, `stop`, `history` and `resume` to `app`."""
    app.command("status", epilog=examples("ll-loop status", "ll-loop status RUN --json"))(
        status_command
    )
    app.command("stop", epilog=examples("ll-loop stop 20261130-131423-63f3c0"))(stop_command)
    app.command(
        "history", epilog=examples("ll-loop history count-to-three", "ll-loop history RUN")
    )(history_command)
    app.command("resume", epilog=examples("ll-loop resume 20261130-131423 --json"))(resume_command)


# --- status --------------------------------------------------------------------------------


def status_command(
    run: Annotated[str | None, typer.Argument(help="A run id (or unique prefix).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    all_runs: Annotated[bool, typer.Option("--all", "-a", help="Include finished runs.")] = False,
) -> None:
    """Show live runs (running, interrupted, stopped): state, steps, elapsed, process."""
    from engine.api import status

    if run is not None:
        one = status(run)
        if json_output:
            print(json.dumps({**one.to_json(), "orphaned_actions": list(one.orphaned_actions)}))
        else:
            out(_status_detail(one))
        return
    found = status(include_finished=all_runs)
    if json_output:
        print(json.dumps({"runs": [s.to_json() for s in found]}))
        return
    if not found:
        print("no live runs" + ("" if all_runs else " (use --all to include finished runs)"))
        return
    rows = [["RUN", "LOOP", "STATUS", "STATE", "STEPS", "ELAPSED", "COST", "PID"]]
    for s in found:
        if s.status == "damaged":
            rows.append([s.run_id, "-", "damaged", "-", "-", "-", "-", "-"])
            continue
        pid = "-" if s.pid is None or s.status == "finished" else f"{s.pid}"
        if s.pid is not None and s.status in {"interrupted", "stopped"}:
            pid += " (gone)"
        shown: str = s.status
        if s.status == "finished" and s.outcome:
            shown = f"{s.outcome} ({s.terminated_by})"
        rows.append(
            [
                s.run_id,
                s.loop or "-",
                shown,
                s.state or "-",
                str(s.steps),
                _elapsed(s),
                f"${s.cost_usd:.4f}" + (" + unknown" if s.cost_unknown_in else ""),
                pid,
            ]
        )
    out(_table(rows))
    for s in found:
        if s.status == "damaged":
            out(f"run {s.run_id}: {s.error}")


def _elapsed(s: RunStatus) -> str:
    """A killed run's time is known up to its last event only: `≥` says it ran on after."""
    return ("≥" if s.elapsed_is_lower_bound else "") + duration(s.elapsed_s)


def _lower_bound_note(s: RunStatus) -> str:
    if s.status == "interrupted":
        return " (to its last event; it was killed after that)"
    if s.killed_attempts:
        return (
            f" (killed and resumed {counted(s.killed_attempts, 'time')}: what it ran after "
            "its last boundary is in no record)"
        )
    return ""


def _status_detail(s: RunStatus) -> str:
    if s.status == "queued" and s.run_dir is None:  # a new run waiting: no directory yet
        return "\n".join(
            [
                f"run       {s.run_id}",
                f"loop      {s.loop or '-'}",
                "status    queued (waiting for the scope lock; it has not started)",
                f"waits for {', '.join(s.waiting_for)}",
                f"waited    {duration(s.elapsed_s)}",
                f"process   {s.pid}",
                f"stop      ll-loop stop {s.run_id}",
            ]
        )
    lines = [
        f"run       {s.run_id}",
        f"loop      {s.loop}" + (f" ({s.loop_file})" if s.loop_file else ""),
        f"status    {s.status}",
        f"state     {s.state}",
        f"steps     {s.steps}",
        f"elapsed   {_elapsed(s)}" + _lower_bound_note(s),
        f"cost      ${s.cost_usd:.4f}"
        + (
            f" + unknown (the agent of state {', '.join(s.cost_unknown_in)} reported no cost)"
            if s.cost_unknown_in
            else ""
        ),
        f"started   {s.started_at}",
        f"process   {'-' if s.pid is None else s.pid} ({'alive' if s.alive else 'gone'})",
        f"directory {s.run_dir}",
    ]
    if s.outcome or s.terminated_by:
        lines.append(
            f"result    {s.outcome} ({s.terminated_by})" + (f": {s.error}" if s.error else "")
        )
    if s.orphaned_actions:
        groups = ", ".join(str(g) for g in s.orphaned_actions)
        lines.append(
            f"left      action process group(s) {groups} still running; "
            f"`ll-loop stop {s.run_id}` or `resume` ends them"
        )
    if s.resumable:
        lines.append(f"resume    ll-loop resume {s.run_id}")
    return "\n".join(lines)


# --- stop ----------------------------------------------------------------------------------


def stop_command(
    run: Annotated[str, typer.Argument(help="The run id (or unique prefix) to stop.")],
    wait: Annotated[
        float,
        typer.Option("--wait", min=0, callback=finite, help="Seconds to wait for the run to stop."),
    ] = 10.0,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Stop a run gracefully (it stays resumable); for a killed run, end what it left running."""
    from engine.api import stop

    done = stop(run, wait=wait)
    after = done.status
    if done.was == "queued" or after is None:
        if json_output:  # the run a queued resume would have continued, or the queued run
            shown = after.to_json() if after is not None else {"run_id": done.run_id}
            print(json.dumps({**shown, "was": "queued", "stopped": True}))
        elif after is not None:
            out(
                f"stopped the queued resume of run {done.run_id}; the run stays {after.status} "
                f"in state {after.state!r}: `ll-loop resume {done.run_id}` continues it"
            )
        else:
            print(f"stopped queued run {done.run_id} (it had not started)")
        return
    if done.ended_actions:
        ended = list(done.ended_actions)
        if json_output:
            print(json.dumps({**after.to_json(), "stopped": True, "ended_actions": ended}))
        else:
            out(
                f"run {done.run_id} was not running (status {after.status}); ended "
                f"{len(ended)} action(s) it left running: {ended}; continue it with "
                f"`ll-loop resume {done.run_id}`"
            )
        return
    if json_output:
        print(json.dumps({**after.to_json(), "stopped": done.stopped}))
    elif done.stopped:
        out(
            f"stopped run {after.run_id} in state {after.state!r} after "
            f"{counted(after.steps, 'step')}"
            f" ({after.status}); continue it with `ll-loop resume {after.run_id}`"
        )
    else:
        err(
            f"run {done.run_id} (pid {after.pid}) got SIGTERM and is still running after"
            f" {wait:g}s; it stops once its current action has been terminated"
        )
    if not done.stopped:
        raise typer.Exit(1)


# --- resume --------------------------------------------------------------------------------


def resume_command(
    run: Annotated[str, typer.Argument(help="The run id (or unique prefix) to continue.")],
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON result object on stdout.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress; errors only.")] = False,
    queue: Annotated[
        bool, typer.Option("--queue", help="Wait for overlapping runs instead of failing.")
    ] = False,
    queue_timeout: Annotated[
        float | None,
        typer.Option(
            "--queue-timeout",
            min=0,
            callback=finite,
            help="Wait for overlapping runs at most S seconds (implies --queue).",
        ),
    ] = None,
    no_lock: Annotated[bool, typer.Option("--no-lock", help="Do not take the scope lock.")] = False,
) -> None:
    """Continue an interrupted or stopped run from its last state boundary."""
    from engine.api import resume
    from engine.cli.run_cmd import Display, RunOutput, report_refusal, report_result

    output = RunOutput(json=json_output, quiet=quiet)
    started = time.monotonic()
    display = Display(output)
    try:
        result = resume(
            run,
            lock=not no_lock,
            queue=queue,
            queue_timeout=queue_timeout,
            on_event=display.progress,
            on_diagnostic=display.diagnostic,
            on_notice=None if quiet else err,
        )
    except LoopError as exc:
        known = _known_run(run)
        raise typer.Exit(report_refusal(exc, output, started, loop=None, run=known)) from None
    finally:
        display.close()
    report_result(result, output)
    raise typer.Exit(result.exit_code)


def _known_run(ref: str) -> dict[str, Any]:
    """The fields a refused resume's JSON takes from the run, when `ref` names one."""
    from engine.api import status

    try:
        found = status(ref)
    except LoopError:
        return {"run_id": ref}
    return {"run_id": found.run_id, "loop": found.loop, "final_state": found.state,
            "steps": found.steps}  # fmt: skip


# --- history -------------------------------------------------------------------------------


def history_command(
    target: Annotated[
        str | None, typer.Argument(help="A loop name or file (its runs), or a run id (its events).")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most N runs.")] = 20,
) -> None:
    """List past runs (optionally of one loop), or the events of one run."""
    from engine.api import history

    if target is not None and target.endswith((".yaml", ".yml")) and os.path.isfile(target):
        target = _loop_name(target)  # `history fix.yaml` after `run fix.yaml`: its runs
    if target is not None and _is_run(target):
        _show_events(target, json_output)
        return
    entries = history(target, limit=limit)
    if not entries and target is not None and _RUN_ID.match(target):
        _refuse_missing_run(target)  # a run id, not a loop: "no runs of loop '2026…'" misled
    if json_output:
        print(json.dumps({"runs": [e.to_json() for e in entries]}))
        return
    if not entries:
        out("no runs recorded" + (f" for loop {target!r}" if target else ""))
        return
    table = [["RUN", "LOOP", "STARTED", "STEPS", "COST", "RESULT"]]
    for entry in entries:
        table.append(
            [entry.run_id, entry.loop, entry.started_at[:19].replace("T", " "),
             str(entry.steps),
             f"${entry.cost_usd:.4f}" + (" + unknown" if entry.cost_unknown_in else ""),
             _result(entry)]
        )  # fmt: skip
    out(_table(table))


# What a run id (`20261130-122301-a1b2c3`) or a prefix of one looks like.
_RUN_ID = re.compile(r"^\d{8}(?:-\d{0,6}(?:-[0-9a-f]{0,6})?)?$")


def _refuse_missing_run(ref: str) -> None:
    """`history RUN` of a run without a directory: one the history still lists (its directory
    removed since) is said to be that, not a loop without runs."""
    from engine.runtime.history import history_path, open_history
    from engine.runtime.runstore import runs_root

    row = None
    if history_path().exists():
        with open_history() as db:
            row = db.run(ref)
    if row is not None:
        raise UsageError(
            f"run {ref}'s directory is gone from {runs_root()}, so its events cannot be shown "
            f"(the history keeps its row: {row.outcome or 'no end recorded'}, "
            f"{counted(row.steps or 0, 'step')})",
            hint="`ll-loop history` lists it with the runs recorded here",
        )
    from engine.load.project import refuse_non_directory

    refuse_non_directory(runs_root().parent, runs_root())  # a file there, not "no run RUN"
    raise UsageError(
        f"no run {ref!r} in {runs_root()}", hint="`ll-loop history` lists the runs recorded here"
    )


def _loop_name(path: str) -> str:
    """The name the runs of the loop file at `path` are recorded under (its `name:`)."""
    from pathlib import Path

    from engine.load.loader import load_loop_file

    try:
        return load_loop_file(Path(path)).name
    except LoopError as exc:
        raise UsageError(
            f"{path} does not load, so its loop's name is not known: {exc.message}",
            hint="give the loop's name (`name:` in the file), or fix the file",
        ) from None


def _result(entry: HistoryEntry) -> str:
    if entry.ended_at is None:
        return entry.status
    return f"{entry.outcome} ({entry.terminated_by})"


def _is_run(target: str) -> bool:
    """A run id (or a prefix of one: run ids start with the date), not a loop name."""
    from engine.runtime.runstore import runs_root

    folder = runs_root()
    if os.sep in target or target in {".", ".."}:
        return True  # a path: a run directory, or refused as not one (never a loop name)
    if os.path.isdir(folder / target):  # False, not a crash, for a name too long
        return True
    return (
        target[:1].isdigit()
        and folder.is_dir()
        and any(d.name.startswith(target) for d in folder.iterdir())
    )


def _show_events(ref: str, json_output: bool) -> None:
    """The run's events, streamed one at a time: a 48k-step log never sits in memory whole."""
    from engine.api import iter_events, status
    from engine.runtime.resume import find_run_dir

    try:
        run = status(ref)
        run_id, run_json = run.run_id, run.to_json()
        header = f"run {run.run_id} of {run.loop}: {run.status}, {counted(run.steps, 'step')}"
    except UsageError as exc:  # a damaged state.json: the events can still be shown
        directory = find_run_dir(ref)
        if not (directory / "events.jsonl").is_file():
            raise
        run_id, run_json, header = directory.name, None, f"{exc.message}; its events follow"
    found = iter_events(run_id)
    write = sys.stdout.write
    if json_output:  # the same one JSON object, written piece by piece
        write(json.dumps({"run": run_json})[:-1] + ', "events": [')
        for index, event in enumerate(found):
            write((", " if index else "") + json.dumps(_event_json(event)))
        write("]}\n")
        return
    out(header)
    for event in found:
        write(printable(_event_line(_event_json(event))) + "\n")


def _event_json(event: Any) -> dict[str, Any]:
    """The event as its line in events.jsonl (`ts` first, as written)."""
    data: dict[str, Any] = event.to_json()
    ts = data.pop("ts", None)
    return {"ts": ts, **data} if ts is not None else data


_EVENT_FIELDS = (
    "state",
    "verdict",
    "target",
    "exit_code",
    "duration_ms",
    "terminal",
    "outcome",
    "terminated_by",
    "steps",
    "error",
)


_MAX_INDENT = 32  # deeper than sub-loops nest (8): a number no run wrote is not indented by


def _event_line(event: dict[str, Any]) -> str:
    """`12:23:01.123  step 3  state_enter state=check` with child events indented by depth."""
    stamp = str(event.get("ts", ""))[11:23]
    depth = event.get("depth")  # a child's events are indented; a line of another shape is not
    nested = isinstance(depth, int) and not isinstance(depth, bool) and 0 < depth <= _MAX_INDENT
    indent = "  " * depth if nested and isinstance(depth, int) else ""
    parts = [f"{k}={_short(event[k])}" for k in _EVENT_FIELDS if event.get(k) is not None]
    step = event.get("step")
    where = f"step {step:>3}" if isinstance(step, int) else " " * 8
    return f"{stamp}  {where}  {indent}{event.get('event', '?')} {' '.join(parts)}".rstrip()


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    text = text.replace("\n", "⏎")
    return text if len(text) <= 80 else text[:77] + "..."


# --- rendering -----------------------------------------------------------------------------


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
