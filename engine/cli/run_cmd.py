"""`ll-loop run LOOP [INPUT]`: preflight (load, lint, LLM), run, report (DESIGN §5).

stdout carries only the result: one JSON object with `--json` (for every outcome, a refusal
before the first step included), else a short summary. Progress and diagnostics go to stderr.
Exit codes: 0 success · 1 failure terminal · 2 error · 3 inconclusive.

`register` imports typer and builds the command's annotations at definition time, so this
module has no `from __future__ import annotations`.
"""

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

from engine.cli.common import err, finite, out
from engine.model.errors import Diagnostic, LoadError, LoopError, PreflightError, UsageError
from engine.model.loop import Loop
from engine.model.ports import RunResult


@dataclass(frozen=True)
class RunOptions:
    """The parsed command line of `run` (and, later, `resume`)."""

    loop_ref: str
    input: str | None = None
    context: tuple[str, ...] = ()
    max_steps: int | None = None
    json: bool = False
    quiet: bool = False
    replay: str | None = None
    cache: bool = False
    queue: bool = False
    queue_timeout: float | None = None
    no_lock: bool = False


class Refused(LoopError):
    """The run did not start: invalid loop, lint errors, failed preflight, bad arguments."""

    code = "REFUSED"


if TYPE_CHECKING:
    import typer

    from engine.model.ports import Recorder
    from engine.run.interpreter import RunState
    from engine.run.locks import Lease
    from engine.run.runstore import RunStore


def register(app: "typer.Typer") -> None:
    """Add `run` to `app`."""
    import typer

    @app.command("run")
    def run_command(
        loop: Annotated[
            str,
            typer.Argument(
                metavar="LOOP", help="Loop file path, or a name in .loops/ or the built-ins."
            ),
        ],
        input: Annotated[
            str | None,
            typer.Argument(
                metavar="[INPUT]", help="Input for the loop, available as ${context.input}."
            ),
        ] = None,
        context: Annotated[
            list[str] | None,
            typer.Option("--context", "-c", help="Set a context value: K=V (repeatable)."),
        ] = None,
        max_steps: Annotated[
            int | None, typer.Option("--max-steps", min=1, help="Override the loop's max_steps.")
        ] = None,
        json_output: Annotated[
            bool, typer.Option("--json", help="Print one JSON result object on stdout.")
        ] = False,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="No progress; errors only.")
        ] = False,
        replay: Annotated[
            str | None,
            typer.Option(
                "--replay", help="Answer LLM calls from an earlier run's log (RUN id or dir)."
            ),
        ] = None,
        cache: Annotated[bool, typer.Option("--cache", help="Reuse cached LLM answers.")] = False,
        queue: Annotated[
            bool,
            typer.Option("--queue", help="Wait for overlapping runs instead of failing."),
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
        no_lock: Annotated[
            bool, typer.Option("--no-lock", help="Do not take the scope lock.")
        ] = False,
    ) -> None:
        """Run a loop to its end. Exit 0 success, 1 failure, 2 error, 3 inconclusive."""
        options = RunOptions(
            loop_ref=loop,
            input=input,
            context=tuple(context or ()),
            max_steps=max_steps,
            json=json_output,
            quiet=quiet,
            replay=replay,
            cache=cache,
            queue=queue,
            queue_timeout=queue_timeout,
            no_lock=no_lock,
        )
        raise typer.Exit(execute_run(options))


def execute_run(options: RunOptions) -> int:
    """Preflight, run and report; the exit code. Never raises for a refused or failed run."""
    started = time.monotonic()
    from engine.run.runstore import new_run_id

    run_id = new_run_id()
    try:
        loop, context, replay_dir = preflight(options)
        lease = take_lock(loop, run_id, options)
    except LoopError as exc:
        return _refuse(options, exc, started)
    with lease:
        result = start_run(loop, context, options, replay_dir, run_id=run_id)
    _report(result, options)
    return result.exit_code


def take_lock(loop: Loop, run_id: str, options: RunOptions) -> "Lease":
    """Hold the loop's `scope` for this run (DESIGN §4): fail fast on an overlapping live run
    (`LockConflict`, exit 2), or wait in line with `--queue`; `--no-lock` holds nothing. The
    lease goes into the environment, so an `ll-loop run` inside an action inherits it."""
    from engine.load.project import project_root
    from engine.run.locks import acquire_scope, no_lock

    root = project_root()  # one registry per project, whichever directory the run starts in
    if options.no_lock:
        return no_lock(root, run_id)
    lease = acquire_scope(
        root, run_id, loop.scope, queue=options.queue, timeout=options.queue_timeout
    )
    os.environ.update(lease.env())
    return lease


def preflight(options: RunOptions) -> tuple[Loop, dict[str, Any], Path | None]:
    """Load, lint and check the loop before the first step; raise on anything that stops it."""
    from engine.cli.common import resolve_loop
    from engine.load.loader import load_loop_with_positions
    from engine.load.project import refuse_links
    from engine.run.actions import output_cap
    from engine.run.runstore import runs_root
    from lint import lint_loop

    output_cap()  # a bad LL_MAX_OUTPUT_BYTES refuses the run before it starts
    refuse_links(runs_root())  # as does a planted .loops/ or .loops/runs link
    path = resolve_loop(options.loop_ref)
    loop, positions = load_loop_with_positions(path)
    diagnostics = lint_loop(loop, positions, resolve_loop=_child_resolver(loop))
    errors = [d for d in diagnostics if d.severity == "error"]
    shown = errors if options.quiet else [d for d in diagnostics if d.severity != "info"]
    for diagnostic in shown:
        err(diagnostic.render())
    if errors:
        raise Refused(
            f"{_count(len(errors), 'lint error')} in {loop.source}; the run did not start",
            hint=f"fix it, or see `ll-loop validate {options.loop_ref}`",
        )
    if options.max_steps is not None:
        loop = replace(loop, max_steps=options.max_steps)
    context = build_context(loop, options)
    replay_dir = _replay_dir(options.replay)
    llm_loops = _llm_loops(loop)
    if llm_loops:
        _llm_preflight(loop, llm_loops, replay_dir)
    return loop, context, replay_dir


def start_run(
    loop: Loop,
    context: dict[str, Any],
    options: RunOptions,
    replay_dir: Path | None,
    *,
    run_id: str | None = None,
    resume: "tuple[RunStore, RunState] | None" = None,
) -> RunResult:
    """Create the run directory (or take a resumed run's), wire the IO, run to the end."""
    from engine.load.project import project_root
    from engine.run.actions import ActionRunner
    from engine.run.history import RunRecorder
    from engine.run.interpreter import RunState, Runtime, StopSignal, run
    from engine.run.locks import process_start_time
    from engine.run.progress import Progress, choose_mode
    from engine.run.runstore import RunStore, now_iso, runs_root

    store = resume[0] if resume is not None else RunStore.create(runs_root(), run_id)
    # Actions inherit this process's environment (cheapest to spawn) plus the run's identity.
    os.environ["LL_RUN_ID"] = store.run_id
    os.environ["LL_RUN_DIR"] = str(store.artifacts_dir)
    actions = ActionRunner(cwd=Path.cwd(), outputs_dir=store.outputs_dir)
    stop = StopSignal(listeners=[actions.terminate])
    progress = Progress(
        store,
        run_id=store.run_id,
        mode=choose_mode(quiet=options.quiet, stream=sys.stderr),
        max_steps=loop.max_steps,
    )
    # With nothing to display, events go straight to the store (no tee per event).
    recorder: Recorder = store if progress.mode == "quiet" else progress
    runtime = Runtime(
        recorder=recorder,
        actions=actions,
        artifacts_dir=store.artifacts_dir,
        outputs_dir=store.outputs_dir,
        save_state=store.save_state,
        stop=stop,
    )
    if any(s.is_subloop for s in loop.states.values()):
        from engine.run.subloop import make_hook

        runtime.run_subloop = make_hook(project_root())
    if _llm_loops(loop):  # one set of services for the run's sub-loops too (replay, cost)
        from engine.llm import create_llm_services

        llm = create_llm_services(
            loop, run_dir=store.dir, recorder=recorder, replay_from=replay_dir, cache=options.cache
        )
        runtime.llm = llm
        progress.cost = lambda: llm.cost_usd
    if resume is not None:
        state = resume[1]
    else:
        state = RunState(
            run_id=store.run_id,
            loop=loop.name,
            loop_file=str(Path(loop.source).resolve()) if loop.source else "",
            current=loop.initial,
            context=context,
            started_at=now_iso(),
            max_steps=loop.max_steps,
        )
    state.pid, state.pid_start = os.getpid(), process_start_time(os.getpid())
    if resume is not None:  # name this process at once: `status`/`stop` must see it alive
        store.save_state(state.to_json())
    history = RunRecorder(None, warn=err)
    history.write(lambda h: h.record_run_start(state.run_id, loop.name, started_at=now_iso()))
    previous = _install_stop_handlers(stop)
    try:
        result = run(loop, state, runtime)
    finally:
        _restore_handlers(previous)
        progress.close()
        actions.close()
        store.close()
    history.write(lambda h: h.record_run_end(result))
    return result


def build_context(loop: Loop, options: RunOptions) -> dict[str, Any]:
    """`context` defaults ← parameter defaults ← `--context K=V` ← INPUT as `context.input`.

    Command-line values are strings; a value for a declared parameter is converted to the
    parameter's type (`--context n=3` is the integer 3 when `n` is an integer parameter).
    """
    from engine.run.subloop import SubloopError, check_caller_keys, coerce

    context = dict(loop.context)
    for name, param in loop.parameters.items():
        if param.has_default and name not in context:
            context[name] = param.default
    given: dict[str, str] = {}
    for item in options.context:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--context {item!r} is not KEY=VALUE", hint="write it as --context name=value"
            )
        given[key.strip()] = value
    if options.input is not None:
        given["input"] = options.input
    check_caller_keys(loop, given)
    for key, value in given.items():
        if not (_is_text(value) and _is_text(key)):
            where = "INPUT" if key == "input" and value == options.input else "--context"
            where += "" if where == "INPUT" or not _is_text(key) else f" {key}"
            raise UsageError(
                f"{where} is not valid UTF-8 text", hint="pass text (loops interpolate text)"
            )
    for key, value in given.items():
        declared = loop.parameters.get(key)
        if declared is None:
            context[key] = value
            continue
        try:
            context[key] = coerce(declared, value, loop.name)
        except SubloopError as exc:
            raise UsageError(exc.message, hint=f"fix --context {key}=...") from None
    missing = [n for n, p in loop.parameters.items() if p.required and n not in context]
    if missing:
        raise UsageError(
            f"loop {loop.name!r} requires parameter {missing[0]!r}",
            hint=f"pass --context {missing[0]}=VALUE",
        )
    return context


def _is_text(value: str) -> bool:
    """False for command-line bytes that are not UTF-8 (Python keeps them as lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _child_resolver(loop: Loop) -> Callable[[str], Loop | None] | None:
    """For lint: find `loop:` children exactly as the run will (only when there are any)."""
    if not any(s.is_subloop for s in loop.states.values()):
        return None
    from engine.load.project import project_root
    from engine.run.subloop import load_child, resolve_child

    root = project_root()

    def resolve(ref: str) -> Loop | None:
        return load_child(resolve_child(ref, loop.source, root))

    return resolve


def _llm_loops(loop: Loop) -> list[Loop]:
    """The loops of this run that call an LLM: `loop` and the sub-loops it names literally, so
    a child's judge without credentials stops the run before its first step, not halfway."""
    family = [loop]
    if any(s.is_subloop for s in loop.states.values()):
        from engine.load.project import project_root
        from engine.run.subloop import static_family

        family = static_family(loop, project_root())
    return [member for member in family if member.uses_llm()]


def _llm_preflight(top: Loop, loops: list[Loop], replay_dir: Path | None) -> None:
    """Stop with every LLM problem of the run's loops (a child's named as such), each once."""
    from engine.llm import llm_preflight

    problems: list[str] = []
    for member in loops:
        found = llm_preflight(member, replay=replay_dir is not None, replay_from=replay_dir)
        if member is not top:
            found = [f"child loop {member.name!r}: {problem}" for problem in found]
        problems += [problem for problem in found if problem not in problems]
    if problems:
        for problem in problems[1:]:
            err(f"error: {problem}")
        raise PreflightError(problems[0], hint="fix the LLM settings, or use --replay RUN")


def _replay_dir(replay: str | None) -> Path | None:
    """`--replay RUN`: a run id under .loops/runs/, or a run directory path."""
    if replay is None:
        return None
    from engine.run.runstore import runs_root

    for candidate in (runs_root() / replay, Path(replay)):
        if candidate.is_dir():
            return candidate
    raise UsageError(
        f"no run {replay!r} to replay", hint="pass a run id from .loops/runs/ or a run directory"
    )


def _install_stop_handlers(stop: Any) -> dict[int, Any]:
    """SIGTERM / SIGINT stop the run gracefully: the action's group is killed, state is saved."""

    def handle(signum: int, frame: FrameType | None) -> None:
        stop.request(f"stopped by {signal.Signals(signum).name}")

    previous: dict[int, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, handle)
    return previous


def _restore_handlers(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _refuse(options: RunOptions, exc: LoopError, started: float) -> int:
    """A run that never started: say why (stderr), and with --json print the result object."""
    if isinstance(exc, LoadError):
        for diagnostic in exc.diagnostics:
            err(diagnostic.render())
        message = _load_message(exc.diagnostics)
    else:
        err(exc.render())
        message = exc.message
    if options.json:
        refusal: dict[str, Any] = {
            "run_id": None,
            "loop": options.loop_ref,
            "final_state": None,
            "outcome": "error",
            "terminated_by": "error",
            "steps": 0,
            "duration_ms": int((time.monotonic() - started) * 1000),
            "cost_usd": 0.0,
            "error": message,
            "outputs": {},
        }
        print(json.dumps(refusal))
    return 2


def _load_message(diagnostics: list[Diagnostic]) -> str:
    if not diagnostics:
        return "the loop could not be loaded"
    first = diagnostics[0]
    more = f" (and {_count(len(diagnostics) - 1, 'more problem')})" if len(diagnostics) > 1 else ""
    return f"{first.location()}: {first.message}{more}"


def _report(result: RunResult, options: RunOptions) -> None:
    """The result on stdout: JSON, or a short human summary."""
    if options.json:
        print(json.dumps(result.to_json()))
        return
    seconds = result.duration_ms / 1000
    steps = _count(result.steps, "step")
    cost = f", ${result.cost_usd:.4f}" if result.cost_usd else ""
    if result.terminated_by == "terminal":
        mark = "✔" if result.outcome == "success" else "✘"
        line = f"{mark} {result.outcome}: {result.loop} reached {result.final_state!r}"
    elif result.outcome == "error":
        line = f"✘ error: {result.error}"
    else:
        line = (
            f"… inconclusive ({result.terminated_by}): {result.loop} stopped "
            f"in {result.final_state!r}"
        )
    out(f"{line} after {steps} ({seconds:.1f}s{cost})")
    from engine.run.runstore import runs_root

    print(f"  run {result.run_id}: {os.path.relpath(runs_root() / result.run_id)}/")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
