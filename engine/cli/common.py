"""Helpers every command shares: error guard, stderr console, loop lookup."""

from __future__ import annotations

import atexit
import codecs
import contextlib
import errno
import inspect
import json
import math
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any, NoReturn, TextIO

import typer

from engine.load.locate import loops_dir, resolve_loop
from engine.model.errors import Diagnostic, LoopError, UsageError
from engine.model.terminal import printable

__all__ = [
    "err",
    "examples",
    "finite",
    "out",
    "project_loops_dir",
    "resolve_loop",
    "run_guarded",
    "version_option",
]


_debug = False  # `--debug` was given to the command being run
INTERRUPTED = 130  # the exit code of a command ended by Ctrl-C (128 + SIGINT), as shells use


def debug_enabled() -> bool:
    return _debug or "--debug" in sys.argv or os.environ.get("LL_DEBUG") == "1"


def run_console(app: typer.Typer, prog_name: str) -> NoReturn:
    """A console entry point: run `app` guarded, then leave with `os._exit` once the exit
    handlers have run (a check's process, a Ray cluster, a process pool) and stdout and stderr
    are flushed. Every file a command writes is closed by then; the interpreter's teardown of
    the modules it imported cost ~15-25 ms of every command, and a thread stuck in a judge (in
    C code, where it cannot be interrupted) would be waited for forever on the way out."""
    fill_closed_standard_descriptors()
    keep_descriptors_private()
    escape_what_cannot_be_encoded()
    outlive_the_reader()
    code = run_guarded(app, prog_name)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    lost = getattr(sys.stdout, "lost", None)
    if lost is not None:  # the command's result did not reach stdout: say so, and fail
        err(
            f"error: could not write the output to stdout: {lost.strerror or lost}\n  hint: "
            "free space where stdout goes, or send it elsewhere; what the command did is done"
        )
        code = 2  # an error, whatever the command had found: its answer did not arrive
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
    os._exit(code)


def run_guarded(app: typer.Typer, prog_name: str | None = None) -> int:
    """Run a typer app; map our errors to one sentence and exit 2, never a bare traceback.

    `prog_name` names the program in usage lines and completion scripts (by default click
    guesses it from how Python was started)."""
    global _debug
    _debug = "--debug" in sys.argv
    if _debug:
        sys.argv.remove("--debug")
    _one_line_summaries(app)
    try:
        result = app(standalone_mode=False, prog_name=prog_name)
    except LoopError as exc:
        if debug_enabled():
            traceback.print_exc()
        print(exc.render(), file=sys.stderr)  # render() shows control characters as escapes
        if prog_name == "ll-loop":
            _error_as_json(exc.message, exc.hint, exc.exit_code, code=exc.code)
            if command_of_argv() == "validate" and _asks_for_json(sys.argv[1:]):
                _validate_report(Diagnostic(exc.code, "error", exc.message, hint=exc.hint))
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return INTERRUPTED
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int | None) else 2
    except Exception as exc:  # a bug: say so plainly
        if debug_enabled():
            traceback.print_exc()
        storage = _storage_problem(exc)
        if storage is not None:
            err(storage)
            return 2
        gone = _working_directory_gone(exc)
        if gone is not None:
            err(gone.render())
            if prog_name == "ll-loop":
                _crash_as_json(gone.message, gone.hint, code=gone.code)
            else:
                _harness_refusal_as_json(gone)
            return 2
        name = type(exc).__name__
        if _is_click_usage_error(exc):  # already shown with its usage line
            if prog_name == "ll-loop":
                _refusal_as_json(exc)
            else:
                _harness_refusal_as_json(exc)
            return 2
        hint = "this is a bug in ll-loop; re-run with --debug for the traceback and report it"
        err(f"internal error: {name}: {exc}\n  hint: {hint}")
        if prog_name == "ll-loop":  # `run --json` prints its object for a crash too
            _crash_as_json(f"internal error: {name}: {exc}", hint)
        return 2
    code = int(result or 0) if isinstance(result, int) else 0
    if code == INTERRUPTED:  # Ctrl-C: typer turns it into this exit code before we see it
        print("interrupted", file=sys.stderr)
    return code


# The file system refused a write: the machine's state, not a bug of ours.
_STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})


def _storage_problem(exc: Exception) -> str | None:
    """One sentence for a write the file system refused (a full disk, a quota, a read-only
    mount), which had been reported as an internal error of ll-loop. What a run had written
    stays (its events and state.json up to its last step), so it resumes once there is room."""
    if not isinstance(exc, OSError) or exc.errno not in _STORAGE_ERRNOS:
        return None
    where = f" ({exc.filename})" if exc.filename else ""
    return (
        f"error: cannot write: {exc.strerror}{where}\n  hint: free space (or fix the file "
        "system), then continue an interrupted run with `ll-loop resume RUN` (`ll-loop status` "
        "lists it)"
    )


def fill_closed_standard_descriptors() -> None:
    """Point a closed stdin, stdout or stderr (`ll-loop run LOOP 2>&-`, a daemon's child) at
    /dev/null, and give Python a stream for it.

    Python leaves sys.stderr None for a closed descriptor 2: the progress line's isatty() was an
    internal error, printed on stdout ahead of a `--json` result (`print(file=None)` writes to
    stdout), and flushing a None stdout on the way out a traceback with exit 1. A closed number
    would also be the next one `open` returns: a write meant for stderr would land in the file
    a run opened there. Console entry points only.
    """
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if null == fd:  # the lowest free number: `fd` itself when the ones below it are open
            os.set_inheritable(fd, True)  # a child gets its 0-2 (dup2 below makes it so)
        else:
            os.dup2(null, fd)
            os.close(null)
        if getattr(sys, name) is None:
            mode = "r" if fd == 0 else "w"
            setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))  # noqa: SIM115


def _working_directory_gone(exc: Exception) -> UsageError | None:
    """The working directory was removed (or moved) under the shell that runs us, as `git
    checkout` or `rm -rf build` do to a terminal left in it: every path resolved from it fails
    with a bare ENOENT, which read as an internal error of ll-loop."""
    if not isinstance(exc, FileNotFoundError):
        return None
    try:
        os.getcwd()
    except FileNotFoundError:
        return UsageError(
            "the working directory no longer exists (it was removed or moved)",
            hint='cd to the project (`cd "$PWD"` if it was made again), then run the command again',
        )
    return None


def escape_what_cannot_be_encoded() -> None:
    """A character stdout's encoding lacks is shown as an escape (`\\u2714`), as `printable`
    and Python's stderr show them, instead of ending the command: a ✔ in a GBK or Latin-1
    locale made a run that succeeded an internal error at its summary line, and in a UTF-8
    locale (whose errors are strict) a file name that is not UTF-8 (its byte is a lone
    surrogate in Python) an internal error, or a traceback when the error object itself could
    not be printed. A stream with surrogateescape (the C locale) keeps writing such a name as
    its own bytes, the name `ls` shows; only what it cannot encode otherwise is escaped."""
    stream = sys.stdout
    errors = getattr(stream, "errors", None)
    if errors in ("strict", "surrogateescape") and hasattr(stream, "reconfigure"):
        if errors == "surrogateescape":
            codecs.register_error(_OWN_BYTES_ELSE_ESCAPED, _own_bytes_else_escaped)
        with contextlib.suppress(OSError, ValueError):
            stream.reconfigure(
                errors="backslashreplace" if errors == "strict" else _OWN_BYTES_ELSE_ESCAPED
            )


_OWN_BYTES_ELSE_ESCAPED = "ll_loop_surrogateescape_else_backslashreplace"


def _own_bytes_else_escaped(exc: UnicodeError) -> tuple[str | bytes, int]:
    """surrogateescape where it applies (a byte decoded as U+DC80-U+DCFF is written back as
    itself), backslashreplace for every other character the encoding lacks."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    end = exc.start
    own = 0xDC80 <= ord(exc.object[exc.start]) <= 0xDCFF
    while end < exc.end and (0xDC80 <= ord(exc.object[end]) <= 0xDCFF) == own:
        end += 1  # the leading run of one kind; the encoder calls again for the rest
    if own:
        return bytes(ord(c) - 0xDC00 for c in exc.object[exc.start : end]), end
    run = UnicodeEncodeError(exc.encoding, exc.object, exc.start, end, exc.reason)
    return codecs.backslashreplace_errors(run)


def keep_descriptors_private() -> None:
    """Mark descriptors inherited from our parent (a CI runner's, a shell's) close-on-exec.

    Nothing a child sees changes: every child is started with the descriptors beyond 0-2
    closed (`Popen`'s close_fds). But with none left inheritable, actions can start through
    `posix_spawn`, which cannot close them (engine/runtime/actions.py). Console entry points
    only: a library caller's descriptors are its own business.
    """
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return
    for name in names:
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
                if os.get_inheritable(fd):
                    os.set_inheritable(fd, False)


# A write that finds the reader gone: a pipe whose reader closed (EPIPE), a terminal that was
# closed (EIO: its SIGHUP stops a run, which then still reports on the way out).
_READER_GONE = frozenset({errno.EPIPE, errno.EIO})


class _ReaderMayLeave:
    """stdout or stderr of a console command, going on when its reader has gone (`| head`, a
    closed terminal) or its file cannot take more (a full disk).

    A write to a pipe whose reader closed raises BrokenPipeError, which click turns into exit
    1: `ll-loop run LOOP | head -3` interrupted the run at its third line and reported a
    failure. A closed terminal's EIO did worse: the progress line's write ended the run its
    SIGHUP was stopping, before it saved its stop (it read as killed, with no history end).
    Now the stream's descriptor is pointed at /dev/null at the first such write and the
    command runs to its end with its own exit code; only what nobody reads is dropped.

    Any other failed write (ENOSPC: `2>log` on a full disk) is dropped the same way, so a
    progress line cannot end a run; it is kept in `lost`, and output lost from stdout (the
    command's result) is said on the way out, with exit 2 (`run_console`).
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.lost: OSError | None = None  # the first failed write that was not a reader leaving

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._cannot_write(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._cannot_write(exc)

    def _cannot_write(self, exc: OSError) -> None:
        if exc.errno not in _READER_GONE and self.lost is None:
            self.lost = exc
        self._reader_gone()

    def _reader_gone(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())
        finally:
            os.close(null)
        with contextlib.suppress(OSError):  # what was held for the pipe now goes to /dev/null
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def outlive_the_reader() -> None:
    """Wrap stdout and stderr so a closed pipe never ends a command (console entry points)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _ReaderMayLeave):
            setattr(sys, name, _ReaderMayLeave(stream))


def _one_line_summaries(app: typer.Typer) -> None:
    """Each command's summary in `--help` as one paragraph: typer's command list keeps the line
    breaks of a docstring's first paragraph, which broke the table mid-sentence."""
    for info in app.registered_commands:
        doc = info.callback.__doc__ if info.callback is not None else None
        if info.short_help is None and doc:
            first = inspect.cleandoc(doc).split("\n\n", 1)[0]
            info.short_help = " ".join(first.split())


def _refusal_as_json(exc: BaseException) -> None:
    """`ll-loop run|resume ... --json` prints its one result object for every outcome, and
    `validate --format json` its report, a command line that does not parse (`--max-steps 0`,
    a missing LOOP) included: scripts read stdout."""
    from engine.cli import command_of

    args = sys.argv[1:]
    command = command_of(args)
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    if command in {"run", "resume"} and "--json" in args:
        from engine.cli.run_cmd import refusal_object

        print(json.dumps(refusal_object(message, loop=None)))
    elif command == "validate" and ("--json" in args or _asks_for_json(args)):
        _validate_report(
            Diagnostic("USAGE", "error", message, hint="see `ll-loop validate --help`")
        )
    else:
        _error_as_json(message, f"see `ll-loop {command} --help`", 2, code="USAGE")


def command_of_argv() -> str | None:
    """The ll-loop subcommand this process runs, from its command line."""
    from engine.cli import command_of

    return command_of(sys.argv[1:])


def _crash_as_json(message: str, hint: str, *, code: str = "INTERNAL") -> None:
    """A bug (or what no command could go on from) ended the command: `run|resume --json` still
    prints its one result object (a script reading stdout got nothing), any other command asked
    for JSON its error object."""
    from engine.cli import command_of

    args = sys.argv[1:]
    if command_of(args) in {"run", "resume"} and "--json" in args:
        from engine.cli.run_cmd import refusal_object

        print(json.dumps(refusal_object(message, loop=None), ensure_ascii=False))
    elif command_of(args) == "validate" and ("--json" in args or _asks_for_json(args)):
        _validate_report(Diagnostic(code, "error", message, hint=hint))
    else:
        _error_as_json(message, hint, 2, code=code)


def _validate_report(diagnostic: Diagnostic) -> None:
    """`validate --format json` prints its `{"loops": [...]}` report whatever ends it: a
    script reading stdout got nothing when a bug (or an error of ours) ended the command."""
    from lint.report import LoopReport, render_json

    print(render_json([LoopReport("", (diagnostic,))]))


def _harness_refusal_as_json(exc: BaseException) -> None:
    """`ll-harness ... --output json` (or `--json`) prints its refusal object for a command line
    that does not parse too, as it does for every other refusal."""
    args = sys.argv[1:]
    if not ("--json" in args or _asks_for_json(args, "--output") or _asks_for_json(args)):
        return
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    refusal = {"result": "ERROR", "exit_code": 2, "error": message, "hint": None, "refused": True}
    print(json.dumps(refusal))


# Commands that print their own JSON for every outcome (a result object, a validate report).
_OWN_JSON = frozenset({"run", "resume", "validate"})


def _error_as_json(message: str, hint: str, exit_code: int, *, code: str) -> None:
    """Any other command asked for JSON (`--json`, `--format json`) that ends in an error prints
    `{"error", "hint", "code", "exit_code"}` on stdout, besides the sentence on stderr: a script
    reading stdout gets an object, not nothing."""
    from engine.cli import command_of

    args = sys.argv[1:]
    command = command_of(args)
    if command is None or command in _OWN_JSON or not ("--json" in args or _asks_for_json(args)):
        return
    payload = {"error": message, "hint": hint, "code": code, "exit_code": exit_code}
    print(json.dumps(payload, ensure_ascii=False))


def _asks_for_json(args: list[str], option: str = "--format") -> bool:
    """`--format json` or `--format=json` among `args` (and `-f json`, `-fjson` for --format;
    ll-harness names its option --output)."""
    names = {option, "-f"} if option == "--format" else {option}
    joined = {f"{option}=json"} | ({"-fjson"} if option == "--format" else set())
    pairs = zip(args, [*args[1:], ""], strict=True)
    return any((flag in names and value == "json") or flag in joined for flag, value in pairs)


def _is_click_usage_error(exc: BaseException) -> bool:
    """typer/click usage errors (unknown option, missing argument) are user errors."""
    show = getattr(exc, "show", None)
    if callable(show) and type(exc).__name__ in {
        "UsageError",
        "BadParameter",
        "MissingParameter",
        "NoSuchOption",
        "BadOptionUsage",
        "BadArgumentUsage",
        "NoArgsIsHelpError",
    }:
        show(file=sys.stderr)
        return True
    return False


def examples(*commands: str) -> str:
    """The epilog of a command's `--help`: example command lines, one paragraph each."""
    label = "Example:" if len(commands) == 1 else "Examples:"
    return label + "\n\n" + "\n\n".join(f"  {command}" for command in commands)


def version_option(program: str) -> typer.models.OptionInfo:
    """`--version`: print `<program> <version>` and exit (eager: before any command runs)."""

    def show(value: bool) -> None:
        if value:
            from engine import __version__

            print(f"{program} {__version__}")
            raise typer.Exit()

    option: typer.models.OptionInfo = typer.Option(
        "--version", callback=show, is_eager=True, help="Print the version and exit."
    )
    return option


def finite(value: float | None) -> float | None:
    """typer callback for a float option: click's range check lets `nan` and `inf` through,
    and neither is a usable number of seconds (a usage error, never "no limit")."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def is_text(value: str) -> bool:
    """False for command-line bytes that are not UTF-8 (Python keeps them as lone surrogates,
    which fail only later, when hashed, recorded or interpolated)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def err(message: str) -> None:
    """Progress and diagnostics go to stderr; stdout carries only results. Control characters
    are shown, not sent (`engine.model.terminal`): a message may quote what an action printed."""
    print(printable(message), file=sys.stderr, flush=True)


def write_report(target: Path, text: str, *, flag: str = "--out") -> None:
    """Write a report the user asked for at `target` (replacing it, never through a link) and
    say so on stderr; a file that cannot be written is a usage error. `flag` is the option that
    named the file, for the hint."""
    from engine.load.project import write_new_file

    if str(target) == "-":  # the usual spelling of stdout
        sys.stdout.write(text)
        return
    if target.is_dir():
        raise UsageError(
            f"cannot write {target}: it is a directory",
            hint=f"{flag} names the file to write, e.g. {flag} {target / 'report.html'}",
        )
    try:
        write_new_file(target, text.encode("utf-8"), replace=True)
    except OSError as exc:
        raise UsageError(
            f"cannot write {target}: {exc.strerror}",
            hint="check that its directory exists and is writable",
        ) from exc
    err(f"wrote {target} ({len(text) // 1024 + 1} KiB)")


def out(text: str) -> None:
    """A command's human-readable result on stdout, control characters shown, not sent."""
    print(printable(text))


def project_loops_dir(cwd: Path | None = None) -> Path:
    """`.loops/` at the root of the project `cwd` (default: the working directory) is in."""
    return loops_dir(cwd)


RunArgument = Annotated[
    str | None,
    typer.Argument(
        help="A run id (or unique prefix), or a run's directory (needed: without it, the "
        "error names this project's newest run)."
    ),
]
"""The RUN of `explain` and `report`: optional to typer, so that its absence is `which_run`'s
sentence rather than typer's "Missing argument"."""


def which_run(command: str) -> UsageError:
    """`explain` or `report` without RUN: one sentence whose hint names this project's newest
    run (by its id's time; its directory's mtime among runs of one second)."""
    runs = loops_dir() / "runs"
    try:
        found = [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except OSError:
        found = []
    usage = f"ll-loop {command} RUN" + (" --html" if command == "report" else "")
    if not found:
        return UsageError(
            f"say which run to {command}: this project has no runs yet",
            hint=f"start one with `ll-loop run LOOP`, then `{usage}`",
        )

    def newest(path: Path) -> tuple[str, float]:
        with contextlib.suppress(OSError):
            return path.name[:15], path.stat().st_mtime
        return path.name[:15], 0.0

    latest = max(found, key=newest).name
    spelled = usage.replace("RUN", latest)
    return UsageError(
        f"say which run to {command}",
        hint=f"the newest run of this project: `{spelled}`; `ll-loop history` lists the others",
    )
