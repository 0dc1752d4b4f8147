"""The public Python API: everything `ll-loop` does, as functions with typed results.

    >>> import engine
    >>> result = engine.run("count.yaml")            # doctest: +SKIP
    >>> result.outcome, result.steps                  # doctest: +SKIP
    ('success', 7)

`run` does what `ll-loop run` does — schema and lint (sub-loops included), credentials for LLM
states, the scope lock, the run directory, history, LLM services, sub-loops — and writes nothing
to `os.environ`: the run's variables go to its actions only. A run that cannot start raises a
`LoopError` (`RunRefused` for lint errors, `LoadError` for a file that does not load,
`LockConflict`, `PreflightError`, `UsageError`); a run that starts returns a `RunResult`, however
it ends. The CLI commands are thin wrappers over these functions (docs/api.md).

Importing this module is cheap: the loader, lint, the runtime and the LLM layer are imported by
the function that needs them.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from engine.model.errors import (
    Diagnostic,
    LoadError,
    LockConflict,
    LoopError,
    PreflightError,
    StoppedWaiting,
    UsageError,
)
from engine.model.loop import Loop
from engine.model.timefmt import counted

if TYPE_CHECKING:
    from engine._results import HistoryEntry, RunStatus, StopResult
    from engine.load.yaml_positions import Positions
    from engine.model.ports import Event, RunResult
    from engine.model.suite import Case, Suite  # imported when a suite runs: not every run's cost
    from engine.runtime.locks import Lease, Record
    from engine.runtime.resume import RunSnapshot
    from engine.runtime.session import Launch
    from engine.suites.driver import SuiteInterrupted, SuiteRefusal
    from engine.suites.progress import SuiteProgress
    from engine.suites.result import SuiteResult
    from engine.suites.spec import CaseOutcome

__all__ = [
    "Diagnostic",
    "Event",
    "HistoryEntry",
    "LoadError",
    "LockConflict",
    "LoopError",
    "PreflightError",
    "RunRefused",
    "RunResult",
    "RunStatus",
    "StopResult",
    "StoppedWaiting",
    "SuiteInterrupted",
    "SuiteRefusal",
    "SuiteResult",
    "UsageError",
    "events",
    "history",
    "iter_events",
    "resume",
    "run",
    "status",
    "stop",
    "suite",
    "validate",
]

PathLike = str | os.PathLike[str]
EventCallback = Callable[["Event"], None]
DiagnosticCallback = Callable[[Diagnostic], None]


class RunRefused(LoopError):
    """The run did not start: lint found errors (`diagnostics` lists them)."""

    code = "REFUSED"

    def __init__(self, message: str, *, hint: str = "", diagnostics: tuple[Diagnostic, ...] = ()):
        super().__init__(message, hint=hint)
        self.diagnostics = diagnostics


class LlmPreflightError(PreflightError):
    """The run's LLM states cannot work (no key, no runner…): every problem, each one sentence."""

    def __init__(self, problems: tuple[str, ...], *, replaying: bool = False) -> None:
        super().__init__(problems[0], hint=_preflight_hint(problems[0], replaying))
        self.problems = problems


def _preflight_hint(problem: str, replaying: bool) -> str:
    """The hint for the first problem. "or use --replay RUN" was said of every problem: to a run
    already replaying, and of a missing agent CLI (a replay runs `cmd:` agents again)."""
    if problem.startswith("cannot replay"):
        return "replay a run that made this loop's LLM calls (its directory holds llm.jsonl)"
    if "runner" in problem:
        return "fix the runner: a cmd: agent runs again in a replay too"
    return "fix the LLM settings" if replaying else "fix the LLM settings, or use --replay RUN"


# --- validate ----------------------------------------------------------------------------------


def validate(path: PathLike, *, cwd: PathLike | None = None) -> list[Diagnostic]:
    """Schema and lint diagnostics of a loop file (a path, or a name in `.loops/` or the
    built-ins), in file order; `[]` when it is clean. A YAML or schema problem is a diagnostic
    too. Raises `UsageError` when `path` names no loop."""
    from engine.load.locate import resolve_loop

    _arguments(path=path)
    where = _Where.of(cwd)
    return _check_file(resolve_loop(str(path), where.base), where)


def _check_file(path: Path, where: _Where, max_steps: int | None = None) -> list[Diagnostic]:
    """Load-time diagnostics, or (when the loop loads) every lint diagnostic; a suite file
    (`*.suite.yaml`, or a file with `subject:` and no `states:`) is checked as a suite, a
    fragment library (`fragments:` and no `name:`, `initial:` or `states:`) as a library, and
    the project's `.loops/config.yaml` as scaffold-eval reads it."""
    from engine.load.fragments import check_library_file
    from engine.load.loader import check_loop_file
    from engine.load.locate import file_kind

    kind = file_kind(path)
    if kind == "suite":
        return _check_suite(path, where)
    if kind == "library":
        return check_library_file(path)
    if kind == "config":
        return _check_config(path)
    loop, positions, problems = check_loop_file(path)
    if loop is None:
        return problems
    return _lint_budgeted(loop, positions, where, max_steps)[1]


def _check_config(path: Path) -> list[Diagnostic]:
    """`.loops/config.yaml` read as scaffold-eval reads it: its refusal, else nothing to say."""
    from engine.scaffold.proofs import load_learning_tests

    try:
        load_learning_tests(path.parent.parent)
    except UsageError as exc:  # ".loops/config.yaml[:LINE]: what is wrong"
        place, _, said = exc.message.partition(": ")
        line = place.rpartition(":")[2]
        return [
            Diagnostic(
                "USAGE",
                "error",
                said or exc.message,
                file=str(path),
                line=int(line) if line.isdigit() else 0,
                hint=exc.hint,
            )
        ]
    return _config_keys(path)


_CONFIG_KEYS: dict[tuple[str, ...], frozenset[str]] = {
    (): frozenset({"learning_tests"}),
    ("learning_tests",): frozenset({"enabled", "command"}),
}


def _config_keys(path: Path) -> list[Diagnostic]:
    """The keys of `.loops/config.yaml` scaffold-eval does not read (`learning_test:`,
    `comand:`), and a top level that is no mapping: it ignores them, so a typo would leave its
    setting off unsaid. Warnings: a newer ll-loop's key must not fail an older one's CI."""
    from engine.load.spelling import did_you_mean_hint
    from engine.load.yaml_positions import read_yaml_file

    data, positions = read_yaml_file(path, str(path))  # it parsed just now: no YamlProblems
    if data is None:  # empty: the defaults
        return []
    if not isinstance(data, dict):
        return [
            Diagnostic(
                "F004",
                "warning",
                "the project config is not a mapping of keys: scaffold-eval reads no settings",
                file=str(path),
                line=1,
                hint="write `learning_tests: {enabled: true}`, or remove the file",
            )
        ]
    found = []
    for where, known in _CONFIG_KEYS.items():
        section = data.get(where[0]) if where else data
        if not isinstance(section, dict):
            continue
        for key in section:
            if key in known:
                continue
            line, column = positions.of((*where, key))
            inside = f" under {where[0]}" if where else ""
            found.append(
                Diagnostic(
                    "F012",
                    "warning",
                    f"{key!r}{inside} is no setting scaffold-eval reads: it is ignored"
                    + did_you_mean_hint(str(key), known),
                    file=str(path),
                    path=".".join(map(str, (*where, key))),
                    line=line,
                    column=column,
                    hint=f"keys allowed here: {', '.join(sorted(known))}",
                )
            )
    return found


def _check_suite(path: Path, where: _Where) -> list[Diagnostic]:
    from engine.load.suite import check_suite_file
    from lint import lint_suite

    suite, positions, problems = check_suite_file(path)
    if suite is None:
        return problems
    return lint_suite(
        suite, positions, resolve_loop=_subject_loops(suite, where), project_root=where.root
    )


def _subject_loops(suite: Suite, where: _Where) -> Callable[[str], Loop | None]:
    """How lint finds a loop subject: as the suite run does, next to the suite file, in the
    project's `.loops/`, or among the built-ins (loaded and linted like a sub-loop)."""
    from engine.runtime.subloop import resolve_child

    def resolver(ref: str) -> Loop | None:
        return load_child(resolve_child(ref, suite.source, where.root))

    return resolver


def _lint(loop: Loop, positions: Positions | None, where: _Where) -> list[Diagnostic]:
    from lint import lint_loop

    resolver = None
    if _has_subloops(loop):
        from engine.runtime.subloop import resolve_child

        def resolver(ref: str) -> Loop | None:
            return load_child(resolve_child(ref, loop.source, where.root))

    return lint_loop(loop, positions, resolve_loop=resolver)


def _lint_budgeted(
    loop: Loop, positions: Positions | None, where: _Where, max_steps: int | None
) -> tuple[Loop, list[Diagnostic]]:
    """The loop with the budget a run gives it (`--max-steps`, or the one a resumed run started
    with) and its lint findings: lint checks that budget, not the file's. A finding about
    `max_steps` then says where its value came from, since it points at the file's line."""
    if max_steps is None or max_steps == loop.max_steps:
        return loop, _lint(loop, positions, where)
    budgeted = replace(loop, max_steps=max_steps)
    note = f" (max_steps {max_steps} given for this run; the file says {loop.max_steps})"
    found = _lint(budgeted, positions, where)
    return budgeted, [
        replace(d, message=d.message + note) if d.path == "max_steps" else d for d in found
    ]


def validate_budgeted(
    path: PathLike, max_steps: int | None, *, cwd: PathLike | None = None
) -> list[Diagnostic]:
    """`validate`, with lint checking the budget `max_steps` gives a run (`simulate --max-steps`
    refuses what `run --max-steps` would)."""
    from engine.load.locate import resolve_loop

    where = _Where.of(cwd)
    return _check_file(resolve_loop(str(path), where.base), where, max_steps)


_children: dict[str, tuple[int, int, Loop]] = {}
"""Each child file's loop as last loaded, by path, with the mtime and size it was loaded at:
one entry per file (keyed by mtime too, a file edited between runs kept every version)."""
_CHILDREN_MAX = 256  # files; past it the oldest loaded is forgotten (temp files of a service)


def load_child(path: Path) -> Loop:
    """Load and lint a sub-loop file (cached by path, size and mtime); `SubloopError` when it
    is invalid. A child is held to the same bar as a top-level run: schema and lint errors
    refuse it. The runtime receives this as its child loader (docs/architecture.md)."""
    from engine.load.loader import load_loop_with_positions
    from engine.model.errors import LoadError
    from engine.runtime.subloop import SubloopError
    from lint import lint_loop

    stat = path.stat()
    key, version = str(path.resolve()), (stat.st_mtime_ns, stat.st_size)
    cached = _children.get(key)
    loop = cached[2] if cached is not None and cached[:2] == version else None
    if loop is None:
        try:
            loop, positions = load_loop_with_positions(path)
        except LoadError as exc:
            raise SubloopError(
                f"child loop is invalid: {exc.message}",
                hint=f"see `ll-loop validate {shlex.quote(str(path))}`",
            ) from None
        errors = [d for d in lint_loop(loop, positions) if d.severity == "error"]
        if errors:
            first = errors[0]
            raise SubloopError(
                f"child loop is invalid: {first.location()}: {first.code} {first.message}",
                hint=f"see `ll-loop validate {shlex.quote(str(path))}`",
            )
        _children.pop(key, None)
        _children[key] = (*version, loop)
        while len(_children) > _CHILDREN_MAX:
            del _children[next(iter(_children))]
    return loop


# --- run -------------------------------------------------------------------------------------


def run(
    path_or_loop: PathLike | Loop,
    *,
    context: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Any] | None = None,
    input: str | None = None,
    max_steps: int | None = None,
    replay: PathLike | None = None,
    cache: bool = False,
    lock: bool = True,
    queue: bool = False,
    queue_timeout: float | None = None,
    on_event: EventCallback | None = None,
    on_diagnostic: DiagnosticCallback | None = None,
    on_notice: Callable[[str], None] | None = None,
    cwd: PathLike | None = None,
    env: Mapping[str, str] | None = None,
    handle_signals: bool = True,
    strict_context: bool = False,
) -> RunResult:
    """Run a loop to its end, exactly as `ll-loop run` does; the `RunResult`.

    `path_or_loop` is a file path, a loop name (`.loops/NAME.yaml`, then the built-ins) or a
    loaded `Loop`. Values, later ones winning: the loop's `context` defaults, its parameters'
    defaults, `context` (any keys; a value for a declared parameter is converted to its type;
    with `strict_context`, as `ll-loop run --context` does, a loop that declares `parameters`
    takes no other keys than those and its `context:` names),
    `input` (as `context.input`, the CLI's INPUT), `inputs` (declared parameters only, like a
    sub-loop's `with:`). `replay` is a run id or run directory whose LLM log answers every LLM
    call. `lock=False` takes no scope lock; `queue` waits for overlapping runs (at most
    `queue_timeout` seconds, which implies `queue`). `on_event` gets every event as it is
    written to `events.jsonl`;
    `on_diagnostic` every lint finding before the first step; `on_notice` a sentence when the
    run starts waiting in the lock queue (whom it waits for). `cwd` is the working directory
    (default: the process's): actions run there, and `.loops/` is at the project root above it
    (docs/runs.md); `env` the run's environment (default: `os.environ`): its actions', and
    where its LLM calls find credentials, base URL and models (docs/llm.md).
    `handle_signals` lets SIGTERM/SIGINT stop the run gracefully (main thread only).
    """
    from engine.model.params import bind_context
    from engine.runtime.runstore import new_run_id

    _arguments(path_or_loop=path_or_loop, context=context, inputs=inputs, input=input)
    _arguments(replay=replay)
    _arguments(max_steps=max_steps, env=env, on_event=on_event, on_diagnostic=on_diagnostic)
    _arguments(cache=cache, lock=lock, queue=queue, queue_timeout=queue_timeout)
    _arguments(handle_signals=handle_signals, strict_context=strict_context, on_notice=on_notice)
    where = _Where.of(cwd)
    loop, positions = _load(path_or_loop, where)
    try:  # a refusal from here on names the loop as a result would (`loop_name`)
        if max_steps is not None and max_steps < 1:
            raise UsageError(f"max_steps must be at least 1, got {max_steps}")
        loop = _checked(loop, positions, where, str(path_or_loop), on_diagnostic, max_steps)
        values = bind_context(loop, context or {}, inputs or {}, input, strict=strict_context)
        replay_dir = _replay_dir(replay, where)
        launch = _launch(loop, values, where, env, replay_dir, cache, on_event, handle_signals)
        run_id = new_run_id()
        lease = _take_lock(
            launch,
            run_id,
            lock=lock,
            queue=queue or queue_timeout is not None,  # a time limit on waiting is a wish to wait
            timeout=queue_timeout,
            on_wait=on_notice,
        )
    except LoopError as exc:
        exc.loop_name = exc.loop_name or loop.name
        raise
    from engine.runtime.session import start_run

    with lease:
        return start_run(launch, run_id=run_id, lease_env=lease.env())


def _load(path_or_loop: PathLike | Loop, where: _Where) -> tuple[Loop, Positions | None]:
    if isinstance(path_or_loop, Loop):
        return path_or_loop, None
    from engine.load.loader import load_loop_with_positions
    from engine.load.locate import refuse_other_kind, resolve_loop

    found = resolve_loop(str(path_or_loop), where.base)
    return load_loop_with_positions(refuse_other_kind(found, str(path_or_loop)))


def _checked(
    loop: Loop,
    positions: Positions | None,
    where: _Where,
    ref: str,
    on_diagnostic: DiagnosticCallback | None,
    max_steps: int | None = None,
) -> Loop:
    """Lint (children included) and the LLM preflight; raise when the run must not start. The
    loop comes back with the budget the run was given (`max_steps`), which is what lint checks."""
    loop, diagnostics = _lint_budgeted(loop, positions, where, max_steps)
    if on_diagnostic is not None:
        for diagnostic in diagnostics:
            on_diagnostic(diagnostic)
    errors = tuple(d for d in diagnostics if d.severity == "error")
    if errors:
        where_text = loop.source or loop.name
        raise RunRefused(
            f"{counted(len(errors), 'lint error')} in {where_text}; the run did not start",
            hint=f"fix it, or see `ll-loop validate {shlex.quote(str(ref))}`",
            diagnostics=errors,
        )
    return loop


def _launch(
    loop: Loop,
    values: Mapping[str, Any],
    where: _Where,
    env: Mapping[str, str] | None,
    replay_dir: Path | None,
    cache: bool,
    on_event: EventCallback | None,
    handle_signals: bool,
) -> Launch:
    """The run's `Launch`, after the LLM preflight of every loop it will run."""
    from engine.load.project import refuse_links
    from engine.runtime.environment import check_numbers
    from engine.runtime.runstore import runs_root
    from engine.runtime.session import Launch

    if loop.source and not os.path.isabs(loop.source):
        # A sub-loop named at run time is found beside this file: a path relative to the
        # working directory of now would name another file once the program changes directory.
        loop = replace(loop, source=os.path.abspath(loop.source))
    launch = Launch(
        loop=loop,
        context=values,
        root=where.root,
        workdir=where.workdir,
        env=dict(os.environ if env is None else env),
        load_child=load_child if _has_subloops(loop) else None,
        replay_from=replay_dir,
        cache=cache,
        on_event=on_event,
        handle_signals=handle_signals,
    )
    check_numbers(launch.env)  # a bad LL_MAX_OUTPUT_BYTES (...) refuses the run before it starts
    refuse_links(runs_root(where.root))  # as does a planted .loops/ or .loops/runs link
    _llm_preflight(launch)
    return launch


def _llm_preflight(launch: Launch) -> None:
    """Stop with every LLM problem of the run's loops (a child's named as such), each once: a
    child's judge without credentials stops the run before its first step, not halfway."""
    family = [launch.loop]
    problems: list[str] = []
    if launch.load_child is not None:
        from engine.runtime.subloop import chooses_child_at_run_time, static_family

        family = static_family(launch.loop, launch.root, launch.load_child)
        if launch.replay_from is not None and any(map(chooses_child_at_run_time, family)):
            from engine.llm.preflight import replay_log_problem  # a child chosen then may call

            missing = replay_log_problem(launch.replay_from)
            problems += [missing] if missing else []
    family = [member for member in family if member.uses_llm()]
    if not family and not problems:
        return
    from engine.llm import llm_preflight

    replaying = launch.replay_from is not None
    for member in family:
        found = llm_preflight(
            member, replay=replaying, replay_from=launch.replay_from, environ=launch.env
        )
        if member is not launch.loop:
            found = [f"child loop {member.name!r}: {problem}" for problem in found]
        problems += [problem for problem in found if problem not in problems]
    if problems:
        raise LlmPreflightError(tuple(problems), replaying=launch.replay_from is not None)


def _replay_dir(replay: PathLike | None, where: _Where) -> Path | None:
    """A run id (or a unique prefix of one, as every RUN argument takes) under `.loops/runs/`,
    or a run directory path (any directory: a run copied from elsewhere replays too)."""
    if replay is None:
        return None
    from engine.runtime.resume import find_run_dir

    text, path = str(replay), where.path(replay)
    if os.sep not in text and text not in {".", ".."}:
        try:
            return find_run_dir(text, where.root)
        except UsageError as exc:
            if not text.strip() or "ambiguous" in exc.message or not path.is_dir():
                raise UsageError(f"cannot replay: {exc.message}", hint=exc.hint) from None
    if path.is_dir():
        return path
    raise UsageError(
        f"no run directory at {text} to replay",
        hint="pass a run id (or its first digits) from .loops/runs/, or a run directory",
    )


def _take_lock(
    launch: Launch,
    run_id: str,
    *,
    lock: bool,
    queue: bool,
    timeout: float | None,
    on_wait: Callable[[str], None] | None = None,
    resumed: str | None = None,
) -> Lease:
    """Hold the loop's `scope` for this run: fail fast on an overlapping live run
    (`LockConflict`), or wait in line with `queue`; `lock=False` holds nothing. An `ll-loop run`
    started by one of this run's actions inherits the lease through its environment.
    `resumed`: the status of the run a resume continues, for what a stopped wait says."""
    from engine.runtime.locks import acquire_scope, no_lock
    from engine.runtime.scope import run_scope
    from engine.runtime.session import listening_runs

    if not lock:
        return no_lock(launch.root, run_id)
    scope = run_scope(launch.loop, run_id, launch.context, root=launch.root, env=launch.env)
    signals = launch.takes_signals()
    try:
        with _stop_while_queued(queue and signals):
            return acquire_scope(
                launch.root,
                run_id,
                scope,
                queue=queue,
                timeout=timeout,
                env=launch.env,
                loop=launch.loop.name,
                signals=signals,
                on_wait=on_wait,
                callers=listening_runs(),
            )
    except StoppedWaiting as exc:
        if resumed is None:
            raise
        # "the run never started" is wrong of a run that ran and stays resumable.
        raise StoppedWaiting(
            f"stopped by {exc.by} while waiting for the scope lock; the resume never started, "
            f"and run {run_id} stays {resumed}",
            hint=f"resume it again when you want it: `ll-loop resume {run_id} --queue`",
            by=exc.by,
        ) from None


@contextmanager
def _stop_while_queued(
    handle: bool,
    doing: str = "waiting for the scope lock",
    after: str = "the run never started",
    hint: str = "run it again (with --queue to wait) when you want it",
) -> Iterator[None]:
    """SIGTERM (`ll-loop stop`) or SIGINT while waiting in the lock queue (or while a resume
    gets the run ready: `doing`): `StoppedWaiting`, so the refusal is reported like any other
    (`--json` included) instead of a silent kill.

    Only the main thread may install signal handlers."""
    import signal
    import threading

    if not handle or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stopped(signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        raise StoppedWaiting(f"stopped by {name} while {doing}; {after}", hint=hint, by=name)

    signals = [signal.SIGTERM, signal.SIGINT]
    if signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:  # a closed terminal, as in the run
        signals.append(signal.SIGHUP)
    previous = {sig: signal.signal(sig, stopped) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --- resume ----------------------------------------------------------------------------------


def resume(
    run_id: str,
    *,
    lock: bool = True,
    queue: bool = False,
    queue_timeout: float | None = None,
    on_event: EventCallback | None = None,
    on_diagnostic: DiagnosticCallback | None = None,
    on_notice: Callable[[str], None] | None = None,
    cwd: PathLike | None = None,
    env: Mapping[str, str] | None = None,
    handle_signals: bool = True,
) -> RunResult:
    """Continue an interrupted or stopped run (id or unique prefix) from its last boundary.

    The state that was running when the run died runs again from its start (its effects may
    happen twice: actions should be idempotent). Context, captures, step and retry counters are
    those of the last boundary. `on_notice` hears what the resume repaired on the way.
    """
    from engine.llm.calllog import LOG_NAME, mark_abandoned, spent_since
    from engine.model.params import bind_context
    from engine.runtime.interpreter import RunState
    from engine.runtime.resume import (
        abandoned_calls,
        end_orphaned_actions,
        find_run,
        find_run_dir,
        repair_log,
        restore_state,
        resuming,
        saved_state_problem,
    )
    from engine.runtime.runstore import RunStore, read_state, saved_at
    from engine.runtime.session import Resumed, start_run

    _arguments(run_id=run_id, env=env, on_event=on_event, on_diagnostic=on_diagnostic)
    _arguments(on_notice=on_notice, lock=lock, queue=queue, queue_timeout=queue_timeout)
    _arguments(handle_signals=handle_signals)
    where = _Where.of(cwd)
    notice = on_notice or (lambda _text: None)
    _refuse_queued(run_id, where.root)
    snapshot = find_run(run_id, where.root)
    _check_resumable(snapshot)
    # One process continues a run: a second resume is refused. A child run's directory names
    # its top-level run, which is the run to continue (a child has no log of its own).
    with resuming(find_run_dir(snapshot.run_id, where.root)):
        snapshot = find_run(snapshot.run_id, where.root)  # as the resume before us left it
        _check_resumable(snapshot)
        if restore_state(snapshot.dir):
            notice("state.json did not parse; resuming from the boundary before it")
        saved = read_state(snapshot.dir / "state.json")
        problem = saved_state_problem(saved)
        if problem is not None:
            raise UsageError(
                f"run {snapshot.run_id}'s state.json is damaged ({problem}); it cannot be resumed",
                hint=f"its events are still in {snapshot.dir / 'events.jsonl'}: "
                f"`ll-loop history {snapshot.run_id}` shows them; start the loop again",
            )
        if snapshot.loop_file and not os.path.isfile(snapshot.loop_file):
            raise UsageError(
                f"run {snapshot.run_id} cannot be resumed: its loop file {snapshot.loop_file} "
                "is gone (moved or deleted since the run started)",
                hint="put the loop file back at that path to resume the run, or start a new run",
            )
        loop, positions = _load(snapshot.loop_file or snapshot.loop, where)
        ref = snapshot.loop_file or snapshot.loop
        loop = _checked(loop, positions, where, ref, on_diagnostic, _original_budget(saved))
        bind_context(loop, saved.get("context", {}), {})  # the saved values still fit the loop
        if snapshot.current not in loop.states:
            raise UsageError(
                f"run {snapshot.run_id} stopped in state {snapshot.current!r}, which "
                f"{loop.source} no longer has",
                hint="restore the state in the loop file, or start a new run",
            )
        replay = saved.get("replay_from")  # a replayed run stays a replay: no live call on resume
        replay_dir = Path(replay) if isinstance(replay, str) and replay else None
        launch = _launch(loop, saved.get("context", {}), where, env, replay_dir,
                         saved.get("cache") is True, on_event, handle_signals)  # fmt: skip
        lease = _take_lock(
            launch,
            snapshot.run_id,
            lock=lock,
            queue=queue or queue_timeout is not None,
            timeout=queue_timeout,
            on_wait=notice,
            resumed=snapshot.status,
        )
        with lease:
            with _stop_while_queued(
                handle_signals,
                "getting the run ready to resume",
                f"the resume never started, and run {snapshot.run_id} stays {snapshot.status}",
                f"resume it again when you want it: `ll-loop resume {snapshot.run_id}`",
            ):  # ending what the run left running takes seconds: a stop then is said, not silent
                store = RunStore.open(snapshot.dir.parent, snapshot.run_id)
                dropped = repair_log(store.events_path)
                # A torn call glued to the next one appended would make the log unreplayable.
                repair_log(store.dir / LOG_NAME)
                # The state runs again: an action the killed run left must not run alongside.
                ended = end_orphaned_actions(snapshot.run_id)
                if ended:
                    notice(
                        f"ended {len(ended)} action(s) the interrupted run left running: {ended}"
                    )
                abandoned = abandoned_calls(store.events_path)  # replayed no more: made anew
                if abandoned:
                    mark_abandoned(store.dir, abandoned.start)
                state = RunState.from_json(store.load_state())
                state.status, state.result = "running", None
                if snapshot.status == "interrupted":  # killed: its time after the boundary is lost
                    state.killed_attempts += 1
                # The calls made after the boundary were billed though the state runs again.
                state.cost_usd += spent_since(
                    store.dir, saved_at(state.to_json(), store.state_path)
                )
                note = {
                    "previous_status": snapshot.status,
                    "repaired_bytes": dropped,
                    "ended_actions": ended,
                    "abandoned_calls": len(abandoned),
                }
                resumed = Resumed(store, state, note)
            return start_run(launch, run_id=snapshot.run_id, lease_env=lease.env(), resume=resumed)


def _refuse_queued(run_id: str, root: Path) -> None:
    """A new run waiting in the lock queue has no directory yet: `status` lists it as queued,
    and resuming it is refused as such rather than as "no run"."""
    from engine.runtime.runstore import runs_root

    waiting = _queued_named(run_id, root)
    if len(waiting) == 1 and not (runs_root(root) / waiting[0].run_id).is_dir():
        queued = waiting[0].run_id
        raise UsageError(
            f"run {queued} is queued (waiting for the scope lock) and has not started; "
            "there is nothing to resume",
            hint=f"it starts by itself when the lock is free; `ll-loop stop {queued}` takes "
            "it out of the queue",
        )


def _check_resumable(snapshot: RunSnapshot) -> None:
    if snapshot.status == "finished":
        result = snapshot.result or {}
        raise UsageError(
            f"run {snapshot.run_id} already finished ({result.get('outcome')}, "
            f"{result.get('terminated_by')} in state {snapshot.current!r}); there is nothing "
            "to resume",
            hint=f"start a new run with `ll-loop run "
            f"{shlex.quote(snapshot.loop_file or snapshot.loop)}`",
        )
    if snapshot.status == "running":
        raise UsageError(
            f"run {snapshot.run_id} is still running (pid {snapshot.pid})",
            hint=(  # `stop` never signals pid 1 (_unverified)
                _PID_1_HINT
                if snapshot.pid == 1 and snapshot.signals
                else f"stop it first with `ll-loop stop {snapshot.run_id}`"
            ),
        )


def _original_budget(saved: Mapping[str, Any]) -> int | None:
    """The `max_steps` the run started with (`run --max-steps` is not in the file)."""
    budget = saved.get("max_steps")
    if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 1:
        return budget
    return None


# --- status, stop, history, events -------------------------------------------------------------


@overload
def status(
    run_id: str, *, include_finished: bool = ..., cwd: PathLike | None = ...
) -> RunStatus: ...


@overload
def status(
    run_id: None = ..., *, include_finished: bool = ..., cwd: PathLike | None = ...
) -> list[RunStatus]: ...


def status(
    run_id: str | None = None, *, include_finished: bool = False, cwd: PathLike | None = None
) -> RunStatus | list[RunStatus]:
    """One run's status (id or unique prefix; the action groups a dead run left running
    included), or every live run — queued ones first — plus finished ones with
    `include_finished`."""
    from engine.runtime.orphans import orphaned_actions
    from engine.runtime.resume import find_run, list_runs, unreadable_runs
    from engine.runtime.runstore import runs_root

    _arguments(include_finished=include_finished)
    where = _Where.of(cwd)
    if run_id is not None:
        _arguments(run_id=run_id)
        waiting = _queued_named(run_id, where.root)
        if len(waiting) == 1 and not (runs_root(where.root) / waiting[0].run_id).is_dir():
            return waiting[0]  # a new run waiting (no directory yet): `status` lists it
        snapshot = find_run(run_id, where.root)
        # A dead run's actions may still be running (SIGKILL cannot take them along).
        left = orphaned_actions(snapshot.run_id) if snapshot.status == "interrupted" else []
        return _status_of(snapshot, tuple(left))
    every = list_runs(where.root)
    snapshots = [s for s in every if include_finished or s.status != "finished"]
    # A run directory without a readable state.json: its hints send the user here.
    read = {s.run_id for s in every}
    damaged = (
        [_damaged(d, why) for d, why in unreadable_runs(where.root, read)]
        if include_finished
        else []
    )
    queued = _queued(where.root, {*(s.run_id for s in snapshots), *(s.run_id for s in damaged)})
    listed: list[RunStatus] = [*(_status_of(s) for s in snapshots), *damaged]
    found = sorted(listed, key=lambda s: s.run_id)
    return [*queued, *reversed(found)]  # newest first: run ids sort by their start


def _damaged(directory: Path, problem: str) -> RunStatus:
    from engine._results import RunStatus

    return RunStatus(
        run_id=directory.name,
        status="damaged",
        run_dir=directory,
        error=problem,
    )


def _status_of(snapshot: RunSnapshot, orphaned: tuple[int, ...] = ()) -> RunStatus:
    from engine._results import RunStatus

    seen: dict[str, Any] = {  # what the run directory says, whatever the run's status
        "run_id": snapshot.run_id,
        "loop": snapshot.loop,
        "loop_file": snapshot.loop_file,
        "state": snapshot.current,
        "steps": snapshot.steps,
        "elapsed_s": snapshot.elapsed_s(),
        "started_at": snapshot.started_at,
        "run_dir": snapshot.dir,
        "cost_usd": snapshot.cost_usd,
        "cost_unknown_in": snapshot.cost_unknown_in,
        "killed_attempts": snapshot.killed_attempts,
    }
    waiting = snapshot.resume_queued
    if waiting is not None and snapshot.status in {"interrupted", "stopped"}:
        # `resume --queue` waits for the scope lock: the run is queued (for `stop` too), not
        # running, nor free to resume a second time.
        return _waiting(waiting, **seen)
    result = snapshot.result or {}
    return RunStatus(
        **seen,
        status=snapshot.status,
        pid=snapshot.pid,
        alive=snapshot.alive,
        outcome=result.get("outcome"),
        terminated_by=result.get("terminated_by"),
        error=result.get("error"),
        resumable=snapshot.resumable,
        orphaned_actions=orphaned,
    )


def _queued(root: Path, known: set[str]) -> list[RunStatus]:
    """Runs waiting with `queue` for a scope lock: they have no run directory yet."""
    if not (root / ".loops" / "locks").is_dir():
        return []
    import time

    from engine.runtime.locks import holders

    return [
        _waiting(
            record,
            run_id=record.run_id,
            loop=record.loop or None,
            elapsed_s=max(0.0, time.time() - record.queued_at),
        )
        for record in holders(root)
        if not record.holding and record.run_id not in known
    ]


def _waiting(record: Record, **seen: Any) -> RunStatus:
    """A run waiting in the lock queue (a new run, or a resume of a run directory `seen`
    describes): its waiter's process and the paths it waits for."""
    from engine._results import RunStatus

    return RunStatus(**seen, status="queued", pid=record.pid, alive=True, waiting_for=record.paths)


def stop(run_id: str, *, wait: float = 10.0, cwd: PathLike | None = None) -> StopResult:
    """Stop a run gracefully (SIGTERM; it stays resumable) and wait up to `wait` seconds for it
    to end. A run still waiting in the lock queue is simply ended; for a run that was killed,
    the actions it left running are ended. `UsageError` when there is nothing to stop."""
    import contextlib
    import signal
    import time

    from engine._results import StopResult
    from engine.runtime.locks import ask_to_stop_waiting, holders, process_alive
    from engine.runtime.orphans import orphaned_actions
    from engine.runtime.resume import end_orphaned_actions, find_run, read_run

    _arguments(run_id=run_id, wait=wait)
    where = _Where.of(cwd)
    waiting = _queued_named(run_id, where.root)
    if len(waiting) == 1 and waiting[0].pid is not None:
        if not ask_to_stop_waiting(where.root, waiting[0].run_id, wait):
            record = next((r for r in holders(where.root) if r.run_id == waiting[0].run_id), None)
            if waiting[0].pid <= 1:
                raise _not_signalled(waiting[0].run_id, "lock record", waiting[0].pid)
            if record is not None and _unverified(record.pid, record.start_time):
                raise _not_signalled(record.run_id, "lock record", record.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(waiting[0].pid, signal.SIGTERM)
            deadline = time.monotonic() + wait  # until it has left the queue
            while time.monotonic() < deadline and any(
                q.run_id == waiting[0].run_id for q in _queued(where.root, set())
            ):
                time.sleep(0.05)
        shown: RunStatus | None = None  # a run that never started has no directory
        with contextlib.suppress(LoopError):  # a queued resume: the run it would continue
            shown = _status_of(find_run(waiting[0].run_id, where.root))
        return StopResult(waiting[0].run_id, stopped=True, was="queued", status=shown)
    snapshot = find_run(run_id, where.root)
    if snapshot.status == "finished":
        raise UsageError(
            f"run {snapshot.run_id} has already finished; there is nothing to stop",
            hint=f"`ll-loop explain {snapshot.run_id}` says how it ended",
        )
    if not snapshot.alive or snapshot.pid is None:
        ended = end_orphaned_actions(snapshot.run_id)  # a killed run's action may still run
        if ended:
            was: Literal["interrupted", "stopped"] = (
                "stopped" if snapshot.status == "stopped" else "interrupted"
            )
            return StopResult(
                snapshot.run_id, True, was, _status_of(snapshot), ended_actions=tuple(ended)
            )
        raise UsageError(
            f"run {snapshot.run_id} is not running (status {snapshot.status}, its process is gone)",
            hint=f"continue it with `ll-loop resume {snapshot.run_id}`",
        )
    if snapshot.pid == os.getpid():  # a run of this process: stopped without a signal
        from engine.runtime.session import stop_in_process

        done = stop_in_process(snapshot.run_id, "stopped by engine.stop", wait)
        if done is None:
            raise UsageError(
                f"run {snapshot.run_id} is not running (status {snapshot.status}, "
                "this process no longer runs it)",
                hint=f"continue it with `ll-loop resume {snapshot.run_id}`",
            )
        after = read_run(snapshot.dir) or snapshot
        return StopResult(snapshot.run_id, done, "running", _status_of(after))
    if snapshot.signals and _unverified(snapshot.pid, snapshot.pid_start):
        raise _not_signalled(snapshot.run_id, "state.json", snapshot.pid)
    if snapshot.signals:
        with contextlib.suppress(ProcessLookupError):
            os.kill(snapshot.pid, signal.SIGTERM)
    else:  # a run in a thread of its process: a SIGTERM would kill the whole process
        from engine.runtime.session import STOP_REQUEST

        (snapshot.dir / STOP_REQUEST).touch()
    deadline, pid = time.monotonic() + wait, snapshot.pid

    def over() -> bool:
        """Its process is gone, or (a Python program lives on after its run) the run dropped
        its pid and its actions' groups are gone too."""
        if not process_alive(pid, snapshot.pid_start):
            return True
        now = read_run(snapshot.dir)
        return not (now is None or now.alive) and not orphaned_actions(snapshot.run_id)

    while time.monotonic() < deadline and not over():
        time.sleep(0.05)
    after = read_run(snapshot.dir) or snapshot
    return StopResult(snapshot.run_id, over(), "running", _status_of(after))


def _unverified(pid: int, start_time: int | None) -> bool:
    """Start times can be read here, but `pid`'s was not recorded: nothing tells the run's
    process from one that took its pid since (a hand-edited or copied state.json or lock
    record), so `stop` must not signal it. Nor pid 1 (or 0, or a negative one, which
    `kill` takes for process groups): init's start time is the same on every boot of a
    container image, so a state.json a repository ships could name it truly. A run can be
    pid 1 (a container's main process), and `_not_signalled` says how that one is stopped."""
    from engine.runtime.locks import process_start_time

    return pid <= 1 or (start_time is None and process_start_time(pid) is not None)


# A run is pid 1 when it is its container's main process (`docker run IMAGE ll-loop run ...`).
_PID_1_HINT = (
    "if the run is its container's main process, stop the container (`docker stop` sends it "
    "SIGTERM: the run stops at its boundary and can be resumed); a record naming pid 1 that no "
    "run of yours wrote can be removed with the run's directory"
)


def _not_signalled(run_id: str, where: str, pid: int) -> UsageError:
    if pid == 1:
        return UsageError(
            f"run {run_id}'s {where} names process 1, the first process of its system or "
            "container, which ll-loop never signals",
            hint=_PID_1_HINT,
        )
    if pid <= 0:
        return UsageError(
            f"run {run_id}'s {where} names process {pid}, which is no run's; it is not signalled",
            hint="the file was not written by ll-loop: remove the run's directory",
        )
    return UsageError(
        f"run {run_id}'s {where} names process {pid} without its start time, so it cannot be "
        "told from another process that has that pid; it is not signalled",
        hint=f"if `ps -p {pid}` shows the run, end it with `kill {pid}`",
    )


def _queued_named(prefix: str, root: Path) -> list[RunStatus]:
    """The queued runs `prefix` names (the one whose id it is, else those it starts); a prefix
    that names a queued run and other runs too is refused, as `status` refuses it: `stop 2026`
    stopped the one queued run whatever else the prefix named."""
    from engine.runtime.resume import ambiguous_run_id
    from engine.runtime.runstore import runs_root

    queued = _queued(root, set())
    waiting = [q for q in queued if q.run_id == prefix] or [
        q for q in queued if q.run_id.startswith(prefix)
    ]
    if not waiting or waiting[0].run_id == prefix:
        return waiting
    folder = runs_root(root)
    ids = {q.run_id for q in waiting}
    if folder.is_dir():
        ids |= {d.name for d in folder.iterdir() if d.name.startswith(prefix)}
    if len(ids) > 1:
        raise ambiguous_run_id(prefix, sorted(ids))
    return waiting


def history(
    loop: str | None = None, *, limit: int = 20, cwd: PathLike | None = None
) -> list[HistoryEntry]:
    """Past runs from `.loops/history.db`, newest first (of one loop when `loop` is given)."""
    from dataclasses import asdict

    from engine._results import HistoryEntry
    from engine.load.project import refuse_non_directory
    from engine.runtime.history import history_path, open_history
    from engine.runtime.resume import read_run
    from engine.runtime.runstore import runs_root

    _arguments(loop=loop, limit=limit)
    where = _Where.of(cwd)
    refuse_non_directory(history_path(where.root).parent)  # `.loops` a file: not "no runs"
    if not history_path(where.root).exists():
        return []
    with open_history(where.root) as db:
        rows = db.runs(loop, limit=limit)
    entries = []
    for row in rows:
        fields, live = asdict(row), "finished"
        fields["cost_unknown_in"] = _names_of(fields.get("cost_unknown_in"))
        if row.ended_at is None:  # its row has no end yet: the run directory says how far
            snapshot = read_run(runs_root(where.root) / row.run_id)
            live = snapshot.status if snapshot else "interrupted"
            if snapshot is not None:
                fields["steps"] = snapshot.steps
        entries.append(HistoryEntry(**fields, status=live))
    return entries


def _names_of(stored: str | None) -> tuple[str, ...]:
    """A JSON list of names as history.db stores it; () for NULL or anything else."""
    import json

    try:
        value = json.loads(stored) if stored else []
    except ValueError:
        return ()
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def events(run_id: str, *, cwd: PathLike | None = None) -> list[Event]:
    """Every event of one run (id or unique prefix) as written to its `events.jsonl`."""
    return list(iter_events(run_id, cwd=cwd))


def iter_events(run_id: str, *, cwd: PathLike | None = None) -> Iterator[Event]:
    """The events of one run, read from `events.jsonl` one at a time as they are consumed: a
    run of any length is walked in constant memory (`ll-loop history RUN` streams with it).
    The run is looked up at the call, before the first event is asked for."""
    from engine.runtime.resume import find_run_dir

    _arguments(run_id=run_id)
    directory = find_run_dir(run_id, _Where.of(cwd).root)
    session = sys.modules.get("engine.runtime.session")  # not imported: no run lives here
    if session is not None:
        session.flush_live(directory.name)  # a run of this process: its held lines too
    return _events_of(directory / "events.jsonl")


def _events_of(path: Path) -> Iterator[Event]:
    from engine.model.ports import Event
    from engine.runtime.resume import read_events

    for line in read_events(path):
        fields = {k: v for k, v in line.items() if k not in ("event", "run_id")}
        yield Event(str(line.get("event", "")), str(line.get("run_id", "")), fields)


# --- suites ------------------------------------------------------------------------------------


def suite(
    path: PathLike | Suite,
    *,
    samples: int | None = None,
    jobs: int | None = None,
    cases: str | None = None,
    measure_baseline: bool = False,
    compare_baseline: bool = False,
    baseline_of: str | None = None,
    resume: str | None = None,
    keep_workspaces: bool = False,
    executor: str = "threads",
    address: str | None = None,
    on_case: Callable[[CaseOutcome], None] | None = None,
    progress: Callable[..., SuiteProgress] | None = None,
    cwd: PathLike | None = None,
) -> SuiteResult:
    """Run a suite file (or a loaded `Suite`) as `ll-harness suite` does, and return its
    `SuiteResult`: per-judge aggregates with intervals, the verdict (`result.exit_code` is the
    command's), every case x judge x sample; everything recorded in the project's
    `.loops/history.db`. `on_case` hears each case's outcome as it finishes; `progress` makes
    the live display (the CLI's `SuiteProgress`); `address` is the Ray cluster for
    `executor="ray"`. Raises `LoadError`
    for a file that does not load, `SuiteRefusal` for what the command refuses (exit 2), and
    `SuiteInterrupted` on Ctrl-C (the run stays resumable with `resume=RUN_ID`)."""
    from engine.model.suite import Suite
    from engine.suites import SuiteOptions, run_suite

    if not isinstance(path, str | os.PathLike | Suite):
        raise UsageError(f"path must be a suite file's path or a Suite, not {type(path).__name__}")
    if isinstance(path, str) and not path.strip():  # `suite "$SUITE"` with SUITE unset
        raise UsageError(
            "the suite argument is empty", hint="pass a suite file's path (*.suite.yaml)"
        )
    _arguments(samples=samples, jobs=jobs, cases=cases, baseline_of=baseline_of, resume=resume)
    _arguments(executor=executor, address=address, on_case=on_case, progress=progress)
    _arguments(measure_baseline=measure_baseline, compare_baseline=compare_baseline)
    _arguments(keep_workspaces=keep_workspaces)
    where = _Where.of(cwd)
    target = path if isinstance(path, Suite) else where.path(path)
    if not isinstance(target, Suite):
        from engine.load.locate import refuse_a_loop_as_suite

        refuse_a_loop_as_suite(target, str(path))
    from engine.runtime.environment import check_numbers

    check_numbers()  # a bad LL_CHECK_MEMORY_BYTES (...) refuses the suite before its first case
    loaded, read = _refuse_lint_errors(target, where, resume, cases)
    options = SuiteOptions(
        samples=samples,
        jobs=jobs,
        cases=cases,
        measure_baseline=measure_baseline,
        compare_baseline=compare_baseline,
        baseline_of=baseline_of,
        resume=resume,
        keep_workspaces=keep_workspaces,
        executor=executor,
        address=address,
    )
    return run_suite(
        loaded or target,
        options,
        cwd=where.base or Path.cwd(),
        on_case=on_case,
        progress=progress,
        cases=read,
    )


_PER_CASE_RULES = frozenset({"LL034"})
"""Lint errors a suite still runs with: LL034 assumes every case value is text, but a case
whose value is a number passes where bash evaluates it, and the others error one by one."""


def _refuse_lint_errors(
    target: Path | Suite, where: _Where, resume: str | None = None, only: str | None = None
) -> tuple[Suite | None, list[Case] | None]:
    """Refuse a suite whose lint finds errors (an unknown builtin, an `if:` that does not
    parse, a gate that can never pass) before any case runs, as `ll-loop run` refuses a loop:
    otherwise every case pays for its subject and the mistake shows only in the report. Returns
    the suite as loaded and its cases as read for lint, for the run to use (a dataset of
    thousands of cases is read once, not twice; a resumed run's finished cases, and the cases
    a `--cases` glob (`only`) does not choose, are only listed, as nothing runs or lints them:
    `--cases 'x-1*'` on 20,000 cases read all 20,000 to run ten). A file that does not load,
    or a dataset that cannot be listed, is left to `run_suite`, which raises its error."""
    from engine.load.dataset import load_cases
    from engine.load.suite import check_suite_file
    from engine.model.suite import Suite
    from engine.suites import SuiteRefusal
    from lint import lint_suite

    if isinstance(target, Suite):
        suite: Suite | None = target
        positions: Positions | None = None
    else:
        suite, positions, _ = check_suite_file(target)
    if suite is None:
        return None, None
    try:
        cases: list[Case] | None = load_cases(suite, _finished_cases(where.root, resume), only)
    except LoopError:
        cases = None
    found = lint_suite(
        suite,
        positions,
        resolve_loop=_subject_loops(suite, where),
        project_root=where.root,
        cases=None if cases is None else [c for c in cases if c.loaded],
    )
    errors = [d for d in found if d.severity == "error" and d.code not in _PER_CASE_RULES]
    if not errors:
        return suite, cases
    first = errors[0]
    more = len(errors) - 1
    shown = shlex.quote(suite.source)
    listed = f"; `ll-loop validate {shown}` lists all {len(errors)}" if more else ""
    raise SuiteRefusal(
        f"{first.location()}: {first.code} {first.message}; the suite did not run",
        hint=(first.hint or "fix it") + listed,
    )


def _finished_cases(root: Path, resume: str | None) -> frozenset[str]:
    """The cases run `resume` (its id, or a unique prefix of it, as `run_suite` reads it)
    recorded; none when there is no such run to ask (`run_suite` then refuses the resume in its
    own words)."""
    import sqlite3

    from engine.runtime.history import history_path, open_history

    if resume is None or not history_path(root).is_file():
        return frozenset()
    try:
        with open_history(root) as history:
            named = history.suite_runs_named(resume)
            return history.suite_case_ids(named[0].run_id) if len(named) == 1 else frozenset()
    except (LoopError, sqlite3.Error):
        return frozenset()


# --- shared ------------------------------------------------------------------------------------


class _Where:
    """Where a call works: `base` resolves relative paths typed by the caller (None: the
    process's working directory, and paths stay as given in messages); `workdir` is where
    actions run; `root` is the project root above it, which holds `.loops/` (found as git finds
    `.git`: `engine.load.project`)."""

    __slots__ = ("base", "root", "workdir")

    def __init__(self, base: Path | None, root: Path, workdir: Path | None = None) -> None:
        self.base, self.root = base, root
        self.workdir = root if workdir is None else workdir

    @classmethod
    def of(cls, cwd: PathLike | None) -> _Where:
        from engine.load.project import project_root

        if cwd is not None and not isinstance(cwd, str | os.PathLike):
            raise UsageError(f"cwd must be a path, not {type(cwd).__name__}")
        if cwd is not None and not Path(cwd).is_dir():
            raise UsageError(
                f"cwd {str(cwd)!r} is not a directory",
                hint="give the project directory, or omit cwd",
            )
        base = None if cwd is None else Path(cwd)
        workdir = Path.cwd() if base is None else base.resolve()
        return cls(base, project_root(workdir), workdir)

    def path(self, value: PathLike) -> Path:
        path = Path(value)
        return path if self.base is None or path.is_absolute() else self.base / path


_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "path_or_loop": ((str, os.PathLike, Loop), "a path, a loop name or a Loop"),
    "path": ((str, os.PathLike), "a path or a loop name"),
    "run_id": ((str,), "a run id (or a unique prefix of one)"),
    "context": ((Mapping,), "a mapping of names to values"),
    "inputs": ((Mapping,), "a mapping of parameter names to values"),
    "input": ((str,), "a string"),
    "max_steps": ((int,), "a whole number"),
    "replay": ((str, os.PathLike), "a run id or a run directory"),
    "samples": ((int,), "a whole number"),
    "jobs": ((int,), "a whole number"),
    "cases": ((str,), "a glob of case ids"),
    "baseline_of": ((str,), "a suite run id"),
    "resume": ((str,), "a suite run id"),
    "executor": ((str,), "the name of an executor"),
    "address": ((str,), "a Ray cluster address"),
    "env": ((Mapping,), "a mapping of variable names to strings"),
    "loop": ((str,), "a loop name"),
    "limit": ((int,), "a whole number"),
}

# Checked as the commands' options are (`--queue-timeout`, `--wait`: finite, at least 0;
# `--limit`: at least 1): a string of seconds was a TypeError once a run waited in the queue.
_SECONDS = frozenset({"queue_timeout", "wait"})
_FLAGS = frozenset(
    {"cache", "lock", "queue", "handle_signals", "strict_context", "include_finished"}
    | {"measure_baseline", "compare_baseline", "keep_workspaces"}
)


_REQUIRED = frozenset({"path_or_loop", "path", "run_id"})


def _arguments(**named: Any) -> None:
    """Arguments of the wrong kind are a `UsageError` naming the argument, before anything is
    created (a `TypeError` deep inside a run would leave a half-started run behind)."""
    for name, value in named.items():
        if value is None and name not in _REQUIRED:
            continue
        if name in _FLAGS:
            if not isinstance(value, bool):
                raise UsageError(f"{name} must be True or False, not {type(value).__name__}")
            continue
        if name in _SECONDS:
            _seconds(name, value)
            continue
        if name.startswith("on_") or name == "progress":
            if not callable(value):
                raise UsageError(f"{name} must be a function, not {type(value).__name__}")
            continue
        kinds, what = _KINDS[name]
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise UsageError(f"{name} must be {what}, not {type(value).__name__}")
        if isinstance(value, Mapping) and name in {"context", "inputs"}:
            _names(name, value)
            for key, item in value.items():
                _json_data(f"{name}[{key!r}]", item)
        if name == "env" and not _all_strings(value):
            raise UsageError("env must map variable names to strings", hint="str() each value")
        if isinstance(value, Mapping) and name == "env":
            _env_names(value)
        if isinstance(value, int) and name == "limit" and value < 1:
            raise UsageError(f"limit must be at least 1, got {value}")


def _names(name: str, mapping: Mapping[Any, Any]) -> None:
    """Keys that are not names fail deep in binding (a bare TypeError) or in state.json."""
    for key in mapping:
        if not isinstance(key, str):
            raise UsageError(
                f"{name} keys must be names (strings), not {type(key).__name__}: {key!r}",
                hint="str() each key",
            )


_JSON_DEPTH = 100
"""How deep a context value may nest (a loop file's YAML nests at most 64 levels)."""


def _json_data(where: str, value: Any, depth: int = 0, top: str = "") -> None:
    """A run keeps its context in state.json and a resume reads it back: a value that is not
    JSON data was saved as its str() (a date came back as text, a set as a list), silently."""
    import math

    if depth > _JSON_DEPTH:
        raise UsageError(
            f"{top} nests more than {_JSON_DEPTH} levels deep, which a run cannot keep",
            hint="flatten it, or pass it as JSON text (json.dumps)",
        )
    if value is None or isinstance(value, str | bool):
        return
    if isinstance(value, int):
        try:
            str(value)  # state.json writes it in digits, which Python bounds
        except ValueError:
            raise UsageError(
                f"{where} is an integer of more than {sys.get_int_max_str_digits()} digits, "
                "which JSON text cannot hold here",
                hint="pass it as text: a string of its digits",
            ) from None
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError(
                f"{where} is {value}, a number that is not finite, which JSON cannot hold",
                hint="pass a finite number, or None",
            )
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _json_data(f"{where}[{index}]", item, depth + 1, top or where)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise UsageError(
                    f"{where} has a key that is not a string ({key!r}), which JSON cannot hold",
                    hint="str() each key",
                )
            _json_data(f"{where}[{key!r}]", item, depth + 1, top or where)
        return
    raise UsageError(
        f"{where} is a {type(value).__name__}, which a run cannot keep: its context is saved "
        "as JSON (state.json) and read back by a resume",
        hint="pass JSON data (text, numbers, True/False, None, lists and dicts of them): "
        "convert it first, e.g. str(value)",
    )


def _seconds(name: str, value: Any) -> None:
    import math

    if not isinstance(value, int | float) or isinstance(value, bool):
        raise UsageError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{name} must be a finite number of seconds, at least 0, got {value}")


def _env_names(env: Mapping[str, str]) -> None:
    """What no process environment can hold: the run would start and its first action fail
    to spawn ('illegal environment variable name'), leaving a run behind."""
    for key, value in env.items():
        if not key or "=" in key or "\0" in key:
            raise UsageError(
                f"env has a variable name no environment can hold: {key!r}",
                hint="a name is not empty and has no '=' or NUL character",
            )
        if "\0" in value:
            raise UsageError(f"env value of {key} holds a NUL character, which no environment can")


def _all_strings(mapping: Any) -> bool:
    return all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())


def _has_subloops(loop: Loop) -> bool:
    return any(s.is_subloop for s in loop.states.values())


_LAZY = {
    "Event": "engine.model.ports",
    "RunResult": "engine.model.ports",
    "HistoryEntry": "engine._results",
    "RunStatus": "engine._results",
    "StopResult": "engine._results",
    "SuiteResult": "engine.suites.result",
    "SuiteRefusal": "engine.suites.driver",
    "SuiteInterrupted": "engine.suites.driver",
}


def __getattr__(name: str) -> Any:
    """The result types, imported on first use (see `engine._results`)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'engine.api' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
