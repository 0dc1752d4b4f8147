"""Helpers every command shares: error guard, stderr console, loop lookup."""

from __future__ import annotations

import math
import os
import sys
import traceback
from pathlib import Path

import typer

from engine.load.resources import builtin_loops_dir
from engine.model.errors import LoopError, UsageError
from engine.model.terminal import printable


def debug_enabled() -> bool:
    return "--debug" in sys.argv or os.environ.get("LL_DEBUG") == "1"


def run_guarded(app: typer.Typer) -> int:
    """Run a typer app; map our errors to one sentence and exit 2, never a bare traceback."""
    if "--debug" in sys.argv:
        sys.argv.remove("--debug")
        os.environ["LL_DEBUG"] = "1"
    try:
        result = app(standalone_mode=False)
    except LoopError as exc:
        if debug_enabled():
            traceback.print_exc()
        print(exc.render(), file=sys.stderr)  # render() shows control characters as escapes
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int | None) else 2
    except Exception as exc:  # a bug: say so plainly
        if debug_enabled():
            traceback.print_exc()
        name = type(exc).__name__
        if _is_click_usage_error(exc):  # already shown with its usage line
            return 2
        err(
            f"internal error: {name}: {exc}\n  hint: this is a bug in ll-loop; "
            "re-run with --debug for the traceback and report it"
        )
        return 2
    return int(result or 0) if isinstance(result, int) else 0


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


def finite(value: float | None) -> float | None:
    """typer callback for a float option: click's range check lets `nan` and `inf` through,
    and neither is a usable number of seconds (a usage error, never "no limit")."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def err(message: str) -> None:
    """Progress and diagnostics go to stderr; stdout carries only results. Control characters
    are shown, not sent (`engine.model.terminal`): a message may quote what an action printed."""
    print(printable(message), file=sys.stderr, flush=True)


def out(text: str) -> None:
    """A command's human-readable result on stdout, control characters shown, not sent."""
    print(printable(text))


def project_loops_dir(cwd: Path | None = None) -> Path:
    """`.loops/` at the root of the project `cwd` (default: the working directory) is in."""
    from engine.load.project import loops_dir, project_root

    return loops_dir(project_root(cwd))


def resolve_loop(ref: str, cwd: Path | None = None) -> Path:
    """A loop reference is a path, else `.loops/NAME.yaml`, else a built-in loop NAME."""
    candidate = Path(ref)
    if candidate.suffix in {".yaml", ".yml"} or os.sep in ref or candidate.exists():
        if candidate.is_file():
            return candidate
        raise UsageError(
            f"no loop file at {ref}",
            hint="pass an existing .yaml path, or a loop name from `ll-loop list`",
        )
    for folder in (project_loops_dir(cwd), builtin_loops_dir()):
        for suffix in (".yaml", ".yml"):
            path = folder / f"{ref}{suffix}"
            if path.is_file():
                return path
    raise UsageError(
        f"no loop named {ref!r} in .loops/ or the built-ins",
        hint="run `ll-loop list` to see the loops available here",
    )
