"""Run management: `ll-loop status`, `stop`, `history` and `resume` (DESIGN §4, §5).

Each command is thin: find the run(s) with `engine.run.resume`, act, render. Results go to stdout
(JSON with `--json`), diagnostics to stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.cli.common import err, finite, out
from engine.model.errors import LoopError, UsageError
from engine.model.terminal import printable

if TYPE_CHECKING:  # the rest is imported by the command that needs it (fast `ll-loop validate`)
    from engine.cli.run_cmd import RunOptions
    from engine.model.loop import Loop
    from engine.run.locks import Record
    from engine.run.resume import RunSnapshot


def register(app: typer.Typer) -> None:
    """Add `status`, `stop`, `history` and `resume` to `app`."""
    app.command("status")(status_command)
    app.command("stop")(stop_command)
    app.command("history")(history_command)
    app.command("resume")(resume_command)


# --- status --------------------------------------------------------------------------------


def status_command(
    run: Annotated[str | None, typer.Argument(help="A run id (or unique prefix).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    all_runs: Annotated[bool, typer.Option("--all", "-a", help="Include finished runs.")] = False,
) -> None:
    """Show live runs (running, interrupted, stopped): state, steps, elapsed, process."""
    from engine.run.resume import find_run, list_runs, orphaned_actions

    if run is not None:
        snapshot = find_run(run)
        # A dead run's actions may still be running (SIGKILL cannot take them along).
        left = orphaned_actions(snapshot.run_id) if snapshot.status == "interrupted" else []
        if json_output:
            print(json.dumps({**snapshot.to_json(), "orphaned_actions": left}))
        else:
            out(_status_detail(snapshot, left))
        return
    snapshots = [s for s in list_runs() if all_runs or s.status != "finished"]
    queued = _queued({s.run_id for s in snapshots})
    if json_output:
        print(
            json.dumps(
                {"runs": [*(_queued_json(r) for r in queued), *(s.to_json() for s in snapshots)]}
            )
        )
        return
    if not snapshots and not queued:
        print("no live runs" + ("" if all_runs else " (use --all to include finished runs)"))
        return
    rows = [["RUN", "LOOP", "STATUS", "STATE", "STEPS", "ELAPSED", "PID"]]
    for record in queued:
        waited = _duration(max(0.0, time.time() - record.queued_at))
        rows.append([record.run_id, "-", "queued", "-", "0", waited, str(record.pid)])
    for s in snapshots:
        pid = "-" if s.pid is None or s.status == "finished" else f"{s.pid}"
        if s.pid is not None and s.status in {"interrupted", "stopped"}:
            pid += " (gone)"
        status: str = s.status
        if status == "finished" and s.result:
            status = f"{s.result.get('outcome')} ({s.result.get('terminated_by')})"
        rows.append(
            [s.run_id, s.loop, status, s.current, str(s.steps), _duration(s.elapsed_s()), pid]
        )
    out(_table(rows))


def _queued(known: set[str]) -> list[Record]:
    """Runs waiting with `--queue` for a scope lock: they have no run directory yet."""
    from engine.load.project import loops_dir, project_root

    root = project_root()
    if not (loops_dir(root) / "locks").is_dir():
        return []
    from engine.run.locks import holders

    return [r for r in holders(root) if not r.holding and r.run_id not in known]


def _queued_json(record: Record) -> dict[str, Any]:
    return {
        "run_id": record.run_id,
        "loop": None,
        "status": "queued",
        "state": None,
        "steps": 0,
        "elapsed_ms": int(max(0.0, time.time() - record.queued_at) * 1000),
        "started_at": None,
        "pid": record.pid,
        "alive": True,
        "outcome": None,
        "terminated_by": None,
        "run_dir": None,
        "waiting_for": list(record.paths),
    }


def _status_detail(s: RunSnapshot, orphaned: list[int]) -> str:
    lines = [
        f"run       {s.run_id}",
        f"loop      {s.loop}" + (f" ({s.loop_file})" if s.loop_file else ""),
        f"status    {s.status}",
        f"state     {s.current}",
        f"steps     {s.steps}",
        f"elapsed   {_duration(s.elapsed_s())}",
        f"started   {s.started_at}",
        f"process   {'-' if s.pid is None else s.pid} ({'alive' if s.alive else 'gone'})",
        f"directory {s.dir}",
    ]
    if s.result:
        lines.append(
            f"result    {s.result.get('outcome')} ({s.result.get('terminated_by')})"
            + (f": {s.result['error']}" if s.result.get("error") else "")
        )
    if orphaned:
        groups = ", ".join(str(g) for g in orphaned)
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
    from engine.run.locks import process_alive
    from engine.run.resume import end_orphaned_actions, find_run, read_run

    waiting = [r for r in _queued(set()) if r.run_id.startswith(run)]
    if len(waiting) == 1:  # still in the lock queue: nothing ran, nothing to resume
        with contextlib.suppress(ProcessLookupError):
            os.kill(waiting[0].pid, signal.SIGTERM)
        print(f"stopped queued run {waiting[0].run_id} (it had not started)")
        return
    snapshot = find_run(run)
    if snapshot.status == "finished":
        raise UsageError(f"run {snapshot.run_id} has already finished; there is nothing to stop")
    if not snapshot.alive or snapshot.pid is None:
        ended = end_orphaned_actions(snapshot.run_id)  # a killed run's action may still run
        if ended:
            if json_output:
                print(json.dumps({**snapshot.to_json(), "stopped": True, "ended_actions": ended}))
            else:
                out(
                    f"run {snapshot.run_id} was not running (status {snapshot.status}); ended "
                    f"{len(ended)} action(s) it left running: {ended}; continue it with "
                    f"`ll-loop resume {snapshot.run_id}`"
                )
            return
        raise UsageError(
            f"run {snapshot.run_id} is not running (status {snapshot.status}, its process is gone)",
            hint=f"continue it with `ll-loop resume {snapshot.run_id}`",
        )
    with contextlib.suppress(ProcessLookupError):
        os.kill(snapshot.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and process_alive(snapshot.pid, snapshot.pid_start):
        time.sleep(0.05)
    after = read_run(snapshot.dir) or snapshot
    stopped = not process_alive(snapshot.pid, snapshot.pid_start)
    if json_output:
        print(json.dumps({**after.to_json(), "stopped": stopped}))
    elif stopped:
        out(
            f"stopped run {after.run_id} in state {after.current!r} after {after.steps} steps"
            f" ({after.status}); continue it with `ll-loop resume {after.run_id}`"
        )
    else:
        err(
            f"run {snapshot.run_id} (pid {snapshot.pid}) got SIGTERM and is still running after"
            f" {wait:g}s; it stops once its current action has been terminated"
        )
    if not stopped:
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
            help="With --queue: give up after S seconds.",
        ),
    ] = None,
    no_lock: Annotated[bool, typer.Option("--no-lock", help="Do not take the scope lock.")] = False,
) -> None:
    """Continue an interrupted or stopped run from its last state boundary."""
    from engine.cli.run_cmd import RunOptions

    options = RunOptions(
        loop_ref=run,
        json=json_output,
        quiet=quiet,
        queue=queue,
        queue_timeout=queue_timeout,
        no_lock=no_lock,
    )
    raise typer.Exit(execute_resume(run, options))


def execute_resume(ref: str, options: RunOptions) -> int:
    """Reload the run's loop and state, repair its log, and run on from the saved boundary.

    The state that was running when the run died runs again from its start (its effects may
    happen twice: actions should be idempotent). Context, captures, step and retry counters are
    those of the last boundary.
    """
    from engine.cli.run_cmd import _report, preflight, start_run, take_lock
    from engine.run.interpreter import RunState
    from engine.run.resume import end_orphaned_actions, find_run, repair_events, restore_state
    from engine.run.runstore import RunStore, read_state

    started = time.monotonic()
    snapshot: RunSnapshot | None = None
    try:
        snapshot = find_run(ref)
        _check_resumable(snapshot)
        if restore_state(snapshot.dir) and not options.quiet:
            err("state.json did not parse; resuming from the boundary before it")
        saved = read_state(snapshot.dir / "state.json")
        options = replace(
            options,
            loop_ref=snapshot.loop_file or snapshot.loop,
            context=_as_arguments(saved.get("context", {})),
        )
        loop, context, replay_dir = preflight(options)
        loop = _with_original_budget(loop, saved)
        if snapshot.current not in loop.states:
            raise UsageError(
                f"run {snapshot.run_id} stopped in state {snapshot.current!r}, which "
                f"{loop.source} no longer has",
                hint="restore the state in the loop file, or start a new run",
            )
        lease = take_lock(loop, snapshot.run_id, options)
    except LoopError as exc:
        return _refuse_resume(ref, snapshot, options, exc, started)
    with lease:
        store = RunStore.open(snapshot.dir.parent, snapshot.run_id)
        dropped = repair_events(store.events_path)
        # The state runs again: an action the killed run left running must not run alongside.
        ended = end_orphaned_actions(snapshot.run_id)
        if ended and not options.quiet:
            err(f"ended {len(ended)} action(s) the interrupted run left running: {ended}")
        state = RunState.from_json(store.load_state())
        state.status, state.result = "running", None
        store.emit(
            "loop_resume",
            depth=0,
            step=state.steps,
            state=state.current,
            previous_status=snapshot.status,
            repaired_bytes=dropped,
            ended_actions=ended,
        )
        result = start_run(loop, context, options, replay_dir, resume=(store, state))
    _report(result, options)
    return result.exit_code


def _refuse_resume(
    ref: str, snapshot: RunSnapshot | None, options: RunOptions, exc: LoopError, started: float
) -> int:
    """A resume that did not start: the reason on stderr, and the result object with --json."""
    from engine.cli.run_cmd import _refuse

    code = _refuse(replace(options, json=False), exc, started)  # the reason, on stderr
    if not options.json:
        return code
    refusal = {
        "run_id": snapshot.run_id if snapshot else ref,
        "loop": snapshot.loop if snapshot else None,
        "final_state": snapshot.current if snapshot else None,
        "outcome": "error",
        "terminated_by": "error",
        "steps": snapshot.steps if snapshot else 0,
        "duration_ms": int((time.monotonic() - started) * 1000),
        "cost_usd": 0.0,
        "error": exc.message,
    }
    print(json.dumps(refusal))
    return code


def _as_arguments(context: dict[str, Any]) -> tuple[str, ...]:
    """The saved context as `--context K=V` text, so preflight checks it like a run's.

    Only the check matters: the resumed run continues with the saved context itself.
    """
    return tuple(
        f"{key}={value if isinstance(value, str) else json.dumps(value)}"
        for key, value in context.items()
    )


def _check_resumable(snapshot: RunSnapshot) -> None:
    if snapshot.status == "finished":
        result = snapshot.result or {}
        raise UsageError(
            f"run {snapshot.run_id} already finished ({result.get('outcome')}, "
            f"{result.get('terminated_by')} in state {snapshot.current!r}); there is nothing "
            "to resume",
            hint=f"start a new run with `ll-loop run {snapshot.loop_file or snapshot.loop}`",
        )
    if snapshot.status == "running":
        raise UsageError(
            f"run {snapshot.run_id} is still running (pid {snapshot.pid})",
            hint=f"stop it first with `ll-loop stop {snapshot.run_id}`",
        )


def _with_original_budget(loop: Loop, saved: dict[str, Any]) -> Loop:
    """The loop with the `max_steps` the run started with (`run --max-steps` is not in the file)."""
    budget = saved.get("max_steps")
    if isinstance(budget, int) and budget >= 1 and budget != loop.max_steps:
        return replace(loop, max_steps=budget)
    return loop


# --- history -------------------------------------------------------------------------------


def history_command(
    target: Annotated[
        str | None, typer.Argument(help="A loop name (its runs) or a run id (its events).")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most N runs.")] = 20,
) -> None:
    """List past runs (optionally of one loop), or the events of one run."""
    from engine.run.resume import find_run

    if target is not None and _is_run(target):
        _show_events(find_run(target), json_output)
        return
    rows = _history_rows(target, limit)
    if json_output:
        print(json.dumps({"runs": rows}))
        return
    if not rows:
        out("no runs recorded" + (f" for loop {target!r}" if target else ""))
        return
    table = [["RUN", "LOOP", "STARTED", "STEPS", "RESULT"]]
    for row in rows:
        if row["ended_at"] is None:
            result = str(row.get("status") or "running")
        else:
            result = f"{row['outcome']} ({row['terminated_by']})"
        started = str(row["started_at"])[:19].replace("T", " ")
        table.append([row["run_id"], row["loop"], started, str(row["steps"]), result])
    out(_table(table))


def _is_run(target: str) -> bool:
    """A run id (or a prefix of one: run ids start with the date), not a loop name."""
    from engine.run.runstore import runs_root

    folder = runs_root()
    if os.sep in target or target in {".", ".."}:
        return True  # a path: a run directory, or refused as not one (never a loop name)
    if (folder / target).is_dir():
        return True
    return (
        target[:1].isdigit()
        and folder.is_dir()
        and any(d.name.startswith(target) for d in folder.iterdir())
    )


def _history_rows(loop: str | None, limit: int) -> list[dict[str, Any]]:
    """Rows of `.loops/history.db`; an unfinished row gets its live status from the run dir."""
    from engine.run.history import history_path, open_history
    from engine.run.resume import read_run
    from engine.run.runstore import runs_root

    rows: list[dict[str, Any]] = []
    if history_path().exists():
        with open_history() as history:
            rows = [asdict(row) for row in history.runs(loop, limit=limit)]
    for row in rows:
        if row["ended_at"] is None:
            snapshot = read_run(runs_root() / row["run_id"])
            row["status"] = snapshot.status if snapshot else "interrupted"
    return rows


def _show_events(snapshot: RunSnapshot, json_output: bool) -> None:
    """The run's events, streamed one at a time: a 48k-step log never sits in memory whole."""
    from engine.run.resume import read_events

    events = read_events(snapshot.dir / "events.jsonl")
    write = sys.stdout.write
    if json_output:  # the same one JSON object, written piece by piece
        write(json.dumps({"run": snapshot.to_json()})[:-1] + ', "events": [')
        for index, event in enumerate(events):
            write((", " if index else "") + json.dumps(event))
        write("]}\n")
        return
    head = f"run {snapshot.run_id} of {snapshot.loop}: {snapshot.status}, {snapshot.steps} steps"
    write(printable(head) + "\n")
    for event in events:
        write(printable(_event_line(event)) + "\n")


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


def _event_line(event: dict[str, Any]) -> str:
    """`12:23:01.123  step 3  state_enter state=check` with child events indented by depth."""
    stamp = str(event.get("ts", ""))[11:23]
    indent = "  " * int(event.get("depth") or 0)
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


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
