"""Run management: `ll-loop status`, `stop`, `history` and `resume` (DESIGN §4, §5).

Each command is thin: find the run(s) with `engine.resume`, act, render. Results go to stdout
(JSON with `--json`), diagnostics to stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from engine.cli.common import err
from engine.errors import UsageError
from engine.locks import process_alive
from engine.resume import RunSnapshot, find_run, list_runs, read_events, read_run, runs_root


def register(app: typer.Typer) -> None:
    """Add `status`, `stop`, `history` and `resume` to `app`."""
    app.command("status")(status_command)
    app.command("stop")(stop_command)
    app.command("history")(history_command)


# --- status --------------------------------------------------------------------------------


def status_command(
    run: Annotated[str | None, typer.Argument(help="A run id (or unique prefix).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    all_runs: Annotated[bool, typer.Option("--all", "-a", help="Include finished runs.")] = False,
) -> None:
    """Show live runs (running, interrupted, stopped): state, steps, elapsed, process."""
    if run is not None:
        snapshot = find_run(run)
        if json_output:
            print(json.dumps(snapshot.to_json()))
        else:
            print(_status_detail(snapshot))
        return
    snapshots = [s for s in list_runs() if all_runs or s.status != "finished"]
    if json_output:
        print(json.dumps({"runs": [s.to_json() for s in snapshots]}))
        return
    if not snapshots:
        print("no live runs" + ("" if all_runs else " (use --all to include finished runs)"))
        return
    rows = [["RUN", "LOOP", "STATUS", "STATE", "STEPS", "ELAPSED", "PID"]]
    for s in snapshots:
        pid = "-" if s.pid is None else f"{s.pid}{'' if s.alive else ' (gone)'}"
        status: str = s.status
        if status == "finished" and s.result:
            status = f"{s.result.get('outcome')} ({s.result.get('terminated_by')})"
        rows.append(
            [s.run_id, s.loop, status, s.current, str(s.steps), _duration(s.elapsed_s()), pid]
        )
    print(_table(rows))


def _status_detail(s: RunSnapshot) -> str:
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
    if s.resumable:
        lines.append(f"resume    ll-loop resume {s.run_id}")
    return "\n".join(lines)


# --- stop ----------------------------------------------------------------------------------


def stop_command(
    run: Annotated[str, typer.Argument(help="The run id (or unique prefix) to stop.")],
    wait: Annotated[
        float, typer.Option("--wait", min=0, help="Seconds to wait for the run to stop.")
    ] = 10.0,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Stop a running loop gracefully: its action is terminated, the run stays resumable."""
    snapshot = find_run(run)
    if snapshot.status == "finished":
        raise UsageError(f"run {snapshot.run_id} has already finished; there is nothing to stop")
    if not snapshot.alive or snapshot.pid is None:
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
        print(
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


# --- history -------------------------------------------------------------------------------


def history_command(
    target: Annotated[
        str | None, typer.Argument(help="A loop name (its runs) or a run id (its events).")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most N runs.")] = 20,
) -> None:
    """List past runs (optionally of one loop), or the events of one run."""
    if target is not None and _is_run(target):
        _show_events(find_run(target), json_output)
        return
    rows = _history_rows(target, limit)
    if json_output:
        print(json.dumps({"runs": rows}))
        return
    if not rows:
        print("no runs recorded" + (f" for loop {target!r}" if target else ""))
        return
    table = [["RUN", "LOOP", "STARTED", "STEPS", "RESULT"]]
    for row in rows:
        if row["ended_at"] is None:
            result = str(row.get("status") or "running")
        else:
            result = f"{row['outcome']} ({row['terminated_by']})"
        started = str(row["started_at"])[:19].replace("T", " ")
        table.append([row["run_id"], row["loop"], started, str(row["steps"]), result])
    print(_table(table))


def _is_run(target: str) -> bool:
    """A run id (or a prefix of one: run ids start with the date), not a loop name."""
    folder = runs_root()
    if (folder / target).is_dir():
        return True
    return (
        target[:1].isdigit()
        and folder.is_dir()
        and any(d.name.startswith(target) for d in folder.iterdir())
    )


def _history_rows(loop: str | None, limit: int) -> list[dict[str, Any]]:
    """Rows of `.loops/history.db`; an unfinished row gets its live status from the run dir."""
    from engine.history import history_path, open_history

    rows: list[dict[str, Any]] = []
    if history_path(Path.cwd()).exists():
        with open_history(Path.cwd()) as history:
            rows = [asdict(row) for row in history.runs(loop, limit=limit)]
    for row in rows:
        if row["ended_at"] is None:
            snapshot = read_run(runs_root() / row["run_id"])
            row["status"] = snapshot.status if snapshot else "interrupted"
    return rows


def _show_events(snapshot: RunSnapshot, json_output: bool) -> None:
    events = list(read_events(snapshot.dir / "events.jsonl"))
    if json_output:
        print(json.dumps({"run": snapshot.to_json(), "events": events}))
        return
    print(f"run {snapshot.run_id} of {snapshot.loop}: {snapshot.status}, {snapshot.steps} steps")
    for event in events:
        print(_event_line(event))


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
