"""`ll-loop run LOOP [INPUT]`: parse, call `engine.api.run`, render.

stdout carries only the result: one JSON object with `--json` (for every outcome, a refusal
before the first step included), else a short summary. Progress and diagnostics go to stderr.
Exit codes: 0 success · 1 failure terminal · 2 error · 3 inconclusive.

`resume` (runs_cmd) shares the rendering: `RunOutput`, `Display`, `report_result` and
`report_refusal` are public for that reason.

`register` imports typer and builds the command's annotations at definition time, so this
module has no `from __future__ import annotations`.
"""

import json
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from engine.cli.common import err, examples, finite, is_text
from engine.model.errors import Diagnostic, LoadError, LoopError, UsageError
from engine.model.ports import RunResult
from engine.model.timefmt import counted, duration

if TYPE_CHECKING:
    import typer

    from engine.runtime.progress import Progress


@dataclass(frozen=True)
class RunOutput:
    """How a run (or a resume) reports: `--json` and `--quiet`."""

    json: bool = False
    quiet: bool = False


def register(app: "typer.Typer") -> None:
    """Add `run` to `app`."""
    import typer

    @app.command(
        "run",
        epilog=examples(
            "ll-loop run fix-until-green-demo",
            'll-loop run my-loop "some input" --context target=5 --json',
        ),
    )
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
                metavar="[INPUT]",
                help="Input for the loop: ${context.input}, or the parameter named by input_key.",
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
                help="Wait for overlapping runs at most S seconds (implies --queue).",
            ),
        ] = None,
        no_lock: Annotated[
            bool, typer.Option("--no-lock", help="Do not take the scope lock.")
        ] = False,
    ) -> None:
        """Run a loop to its end. Exit 0 success, 1 failure, 2 error, 3 inconclusive."""
        output = RunOutput(json=json_output, quiet=quiet)
        started = time.monotonic()
        display = Display(output)
        try:
            values = parse_context(context or (), input)
            from engine.api import run

            result = run(
                loop,
                context=values,
                max_steps=max_steps,
                replay=replay,
                cache=cache,
                lock=not no_lock,
                queue=queue,
                queue_timeout=queue_timeout,
                on_event=display.progress,
                on_diagnostic=display.diagnostic,
                on_notice=None if output.quiet else err,
                strict_context=True,  # a --context key the loop's parameters lack is a typo
            )
        except LoopError as exc:
            raise typer.Exit(report_refusal(exc, output, started, loop=loop)) from None
        finally:
            display.close()
        report_result(result, output)
        raise typer.Exit(result.exit_code)


def parse_context(pairs: "tuple[str, ...] | list[str]", input: str | None) -> dict[str, Any]:
    """`--context K=V` pairs and INPUT as the API's `context` (INPUT is `context.input`).

    Command-line text that is not UTF-8 is refused here: loops interpolate text.
    """
    values: dict[str, Any] = {}
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--context {item!r} is not KEY=VALUE", hint="write it as --context name=value"
            )
        values[key.strip()] = value
    if input is not None:
        values["input"] = input
    for key, value in values.items():
        if not (is_text(value) and is_text(key)):
            where = "INPUT" if key == "input" and value == input else "--context"
            where += "" if where == "INPUT" or not is_text(key) else f" {key}"
            raise UsageError(
                f"{where} is not valid UTF-8 text", hint="pass text (loops interpolate text)"
            )
    return values


class Display:
    """What a run shows on stderr: lint findings before the first step, then progress."""

    def __init__(self, output: RunOutput) -> None:
        self.output = output
        self._progress: Progress | None = None
        if not output.quiet:
            from engine.cli.style import colour_allowed
            from engine.runtime import progress

            mode = progress.choose_mode(quiet=False, stream=sys.stderr)
            self._progress = progress.Progress(mode=mode, colour=colour_allowed(sys.stderr))

    @property
    def progress(self) -> "Progress | None":
        """The `on_event` listener (None with --quiet: events go straight to the run store)."""
        return self._progress

    def diagnostic(self, diagnostic: Diagnostic) -> None:
        """Errors always; warnings unless --quiet; infos never (validate --verbose shows them)."""
        if diagnostic.severity == "error" or (
            diagnostic.severity == "warning" and not self.output.quiet
        ):
            err(diagnostic.render())

    def close(self) -> None:
        if self._progress is not None:
            self._progress.close()


def report_refusal(
    exc: LoopError,
    output: RunOutput,
    started: float,
    *,
    loop: str | None,
    run: dict[str, Any] | None = None,
) -> int:
    """A run that never started: why (stderr), and with --json the result object on stdout.

    `run` overrides fields of that object (a resume knows its run id, state and steps)."""
    from engine.api import LlmPreflightError

    if isinstance(exc, LoadError):
        for diagnostic in exc.diagnostics:
            err(diagnostic.render())
        message = _load_message(exc.diagnostics)
    else:
        if isinstance(exc, LlmPreflightError):
            for problem in exc.problems[1:]:
                err(f"error: {problem}")
        err(exc.render())
        message = exc.message
    if output.json:
        refusal = refusal_object(
            message,
            loop=exc.loop_name or loop,
            duration_ms=int((time.monotonic() - started) * 1000),
            outcome=exc.outcome,
            terminated_by=exc.terminated_by,
        )
        print(json.dumps({**refusal, **(run or {})}))
    return exc.exit_code


def refusal_object(
    message: str,
    *,
    loop: str | None,
    duration_ms: int = 0,
    outcome: str = "error",
    terminated_by: str = "error",
) -> dict[str, Any]:
    """The `--json` result of a run that never started: the fields of every result, `error`
    saying why."""
    return {
        "run_id": None,
        "loop": loop,
        "final_state": None,
        "outcome": outcome,
        "terminated_by": terminated_by,
        "steps": 0,
        "duration_ms": duration_ms,
        "cost_usd": 0.0,
        "error": message,
        "outputs": {},
    }


def _load_message(diagnostics: list[Diagnostic]) -> str:
    if not diagnostics:
        return "the loop could not be loaded"
    first = diagnostics[0]
    more = f" (and {counted(len(diagnostics) - 1, 'more problem')})" if len(diagnostics) > 1 else ""
    return f"{first.location()}: {first.message}{more}"


def report_result(result: RunResult, output: RunOutput) -> None:
    """The result on stdout: JSON, or a short human summary."""
    if output.json:
        print(json.dumps(result.to_json()))
        return
    from engine.cli.style import paint
    from engine.model.terminal import one_line
    from engine.runtime.runstore import runs_root

    steps = counted(result.steps, "step")
    cost = f", ${result.cost_usd:.4f}" if result.cost_usd or result.cost_unknown_in else ""
    cost += " + unknown" if result.cost_unknown_in else ""  # an agent reported no cost
    # Names and the error may quote the loop file or an action: shown, never obeyed, and on
    # the one line of the summary (an error quoting a multi-line expression broke it in two).
    loop, error = one_line(result.loop), one_line(str(result.error))
    final = one_line(repr(result.final_state))
    if result.terminated_by == "terminal":
        ok = result.outcome == "success"
        mark = paint("✔" if ok else "✘", "green" if ok else "red", sys.stdout)
        line = f"{mark} {result.outcome}: {loop} reached {final}"
    elif result.outcome == "error":
        line = f"{paint('✘', 'red', sys.stdout)} error: {error}"
    else:
        line = (
            f"{paint('…', 'yellow', sys.stdout)} inconclusive ({result.terminated_by}): "
            f"{loop} stopped in {final}"
        )
    print(f"{line} after {steps} ({duration(result.duration_ms / 1000)}{cost})")
    print(f"  run {result.run_id}: {os.path.relpath(runs_root() / result.run_id)}/")
