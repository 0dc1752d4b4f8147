"""`ll-harness`: measure a command, a prompt, a loop, a skill, an MCP tool call or a batch of
DSL tasks (thin CLI).

Each command parses its options, builds a subject, calls `engine.harness`, and renders. The
exit code is the contract: 0 PASS, 1 FAIL, 2 ERROR or refusal, 3 ABSTAIN / INCONCLUSIVE.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.cli import command_of
from engine.cli.common import (
    err,
    examples,
    finite,
    is_text,
    out,
    resolve_loop,
    run_console,
    version_option,
)
from engine.load.locate import refuse_other_kind
from engine.load.project import project_root
from engine.model.errors import LoopError, UsageError

if TYPE_CHECKING:  # the harness is imported only when a command runs
    from engine.harness.session import Options
    from engine.harness.subjects import Subject

app = typer.Typer(
    name="ll-harness",
    help="Measure whether something works: exit-code and semantic gates, N samples, "
    "Wilson intervals, baselines and history.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _group(version: Annotated[bool, version_option("ll-harness")] = False) -> None:
    """Measure whether something works: exit-code and semantic gates, N samples, Wilson
    intervals, baselines and history."""


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


ExitCodeOpt = Annotated[
    int | None,
    typer.Option(
        "--exit-code", min=0, max=255, help="Gate: the subject's exit code must equal N (0-255)."
    ),
]
SemanticOpt = Annotated[
    str | None,
    typer.Option("--semantic", help="Gate: an LLM judge must answer yes to this criterion."),
]
JudgeModelOpt = Annotated[
    str | None, typer.Option("--judge-model", help="Model of the --semantic judge.")
]
SamplesOpt = Annotated[
    int | None,
    typer.Option("--samples", help="Samples to run (default 3 for stochastic subjects, else 1)."),
]
TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout",
        min=0,
        callback=finite,
        help="Seconds one sample may take (an overrun is an error; 0: no limit).",
    ),
]
OutputOpt = Annotated[
    OutputFormat, typer.Option("--output", "--format", "-f", help="text or json.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="The same as --output json.")]
MeasureOpt = Annotated[
    bool, typer.Option("--measure-baseline", help="Record this run as the incumbent's baseline.")
]
CompareOpt = Annotated[
    bool, typer.Option("--compare-baseline", help="Report the delta against a measured baseline.")
]
BaselineOfOpt = Annotated[
    str | None,
    typer.Option("--baseline-of", help="Attempt or invocation id of the incumbent (cmd/prompt)."),
]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Subject model.")]
RunnerOpt = Annotated[
    str | None, typer.Option("--runner", help="Prompt runner: anthropic or cmd:<command>.")
]
RetryOfOpt = Annotated[
    int | None,
    typer.Option("--retry-of", help="Attempt id of a timed-out sample this run replaces."),
]
IssueIdOpt = Annotated[
    str | None,
    typer.Option(
        "--issue-id",
        help="The issue this measures: its pre-patch evidence bundle (.loops/evidence/ID/), "
        "when there is one, is added to the report read-only (prepatch_evidence).",
    ),
]


def _judge(semantic: str | None, judge_model: str | None) -> str | None:
    """The --semantic judge's model, resolved only when there is a semantic gate."""
    if semantic is None:
        return None
    from engine.llm.settings import judge_model as resolve_judge

    return resolve_judge(None, None, None, judge_model)


def _sample_timeout(timeout: float) -> float | None:
    """--timeout 0 means no limit on a sample (negative, nan and inf are usage errors)."""
    return timeout if timeout > 0 else None


# The options every measuring command shares, declared once: `measured` adds them to a command,
# which receives them built into the session's `Options`, with the output format and issue id.
_SHARED: tuple[tuple[str, Any, Any], ...] = (
    ("exit_code", ExitCodeOpt, None),
    ("semantic", SemanticOpt, None),
    ("judge_model", JudgeModelOpt, None),
    ("samples", SamplesOpt, None),
    ("timeout", TimeoutOpt, 300.0),
    ("output", OutputOpt, OutputFormat.text),
    ("as_json", JsonOpt, False),
    ("measure_baseline", MeasureOpt, False),
    ("compare_baseline", CompareOpt, False),
    ("baseline_of", BaselineOfOpt, None),
    ("retry_of", RetryOfOpt, None),
    ("issue_id", IssueIdOpt, None),
)
_PASSED = ("options", "output", "issue_id")  # what the command itself receives


def measured(*, timeout: float) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Give a command the shared measurement options (`timeout` is its default --timeout).

    The command declares its own arguments plus `options: Options`, `output: OutputFormat` and
    `issue_id: str | None`; typer sees its own arguments followed by the shared options."""

    def decorate(command: Callable[..., int]) -> Callable[..., int]:
        own = [
            p.replace(annotation=eval(p.annotation, command.__globals__))
            if isinstance(p.annotation, str)
            else p
            for p in inspect.signature(command).parameters.values()
            if p.name not in _PASSED  # filled in by the wrapper
        ]
        shared = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=kind,
                default=timeout if name == "timeout" else default,
            )
            for name, kind, default in _SHARED
        ]

        @functools.wraps(command)
        def wrapper(**values: Any) -> int:
            given = {name: values.pop(name) for name, _, _ in _SHARED}
            output, issue_id = given.pop("output"), given.pop("issue_id")
            output = OutputFormat.json if given.pop("as_json") else output
            problem = _not_text({**values, **given, "issue_id": issue_id}, params)
            if problem is not None:
                return _emit(output, problem.throw)
            return command(**values, options=_options(**given), output=output, issue_id=issue_id)

        params = own + shared
        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params} | {"return": int}
        return wrapper

    return decorate


@dataclasses.dataclass(frozen=True)
class _Refused:
    error: UsageError

    def throw(self) -> tuple[str, dict[str, Any], int]:
        raise self.error


def _not_text(values: dict[str, Any], params: list[inspect.Parameter]) -> _Refused | None:
    """A refusal for the first argument that is not UTF-8 text (Python keeps such command-line
    bytes as lone surrogates): `ll-harness prompt $'hi \\xff'` hashed the prompt and died with
    an internal error."""
    for param in params:
        value = values.get(param.name)
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and not is_text(text):
                return _Refused(
                    UsageError(
                        f"{_label(param)} is not valid UTF-8 text",
                        hint="pass text: what is measured is hashed and recorded as text",
                    )
                )
    return None


def _label(param: inspect.Parameter) -> str:
    """How the command line spells a parameter: `--semantic` for an option, `PROMPT` else."""
    for info in getattr(param.annotation, "__metadata__", ()):
        if isinstance(info, typer.models.OptionInfo):
            given = [d for d in info.param_decls or () if d.startswith("--")]
            return given[0] if given else "--" + param.name.replace("_", "-")
    return param.name.upper()


def _options(
    *,
    exit_code: int | None,
    semantic: str | None,
    judge_model: str | None,
    samples: int | None,
    timeout: float,
    measure_baseline: bool,
    compare_baseline: bool,
    baseline_of: str | None,
    retry_of: int | None,
) -> Options:
    from engine.harness.grading import Gates
    from engine.harness.session import Options

    return Options(
        gates=Gates(
            exit_code=exit_code, semantic=semantic, judge_model=_judge(semantic, judge_model)
        ),
        samples=samples,
        timeout=_sample_timeout(timeout),
        measure_baseline=measure_baseline,
        compare_baseline=compare_baseline,
        baseline_of=baseline_of,
        retry_of=retry_of,
    )


def _emit(
    output: OutputFormat,
    build: Callable[[], tuple[str, dict[str, Any], int]],
    issue_id: str | None = None,
) -> int:
    """Print what `build` returns; under --output json a refusal is still one JSON object.

    With `issue_id`, the issue's pre-patch evidence bundle (if any) is added to the report."""
    try:
        if issue_id is not None:
            from engine.harness.evidence import check_issue_id

            check_issue_id(issue_id)
        text, data, code = build()
        if issue_id is not None:
            text, data = _with_evidence(text, data, issue_id)
    except LoopError as exc:
        if output is OutputFormat.json:
            _print_refusal(exc)
        raise
    if output is OutputFormat.json:
        print(json.dumps(data, indent=2))
    else:
        out(text)  # quotes what the subject printed: control characters shown, not sent
    return code


def _print_refusal(exc: LoopError) -> None:
    """A refusal (or a stop) as the JSON object `--json` / `--output json` prints on stdout."""
    print(
        json.dumps(
            {
                "result": "ERROR" if exc.exit_code == 2 else "INCONCLUSIVE",
                "exit_code": exc.exit_code,
                "error": exc.message,
                "hint": exc.hint or None,
                "refused": exc.exit_code == 2,  # else stopped: samples may have run
            }
        )
    )


def _with_evidence(text: str, data: dict[str, Any], issue_id: str) -> tuple[str, dict[str, Any]]:
    """The report with the issue's pre-patch evidence: a JSON block and one text line."""
    from engine.harness.evidence import evidence_line, prepatch_evidence

    block = prepatch_evidence(Path.cwd(), issue_id)
    data = {**data, "issue_id": issue_id}
    if block is not None:
        data["prepatch_evidence"] = block
    return f"{text}\n{evidence_line(block, issue_id)}", data


def _evaluate(
    subject_factory: Callable[[Path], Subject],
    options: Options,
    output: OutputFormat,
    issue_id: str | None = None,
) -> int:
    from engine.harness.render import report_json, report_text
    from engine.harness.session import check_options, evaluate
    from engine.runtime.history import open_history

    def build() -> tuple[str, dict[str, Any], int]:
        check_options(options)
        cwd = Path.cwd()
        subject = subject_factory(cwd)
        with open_history(project_root(cwd)) as history:
            report = evaluate(subject, options, history, cwd)
        for note in report.notes:
            err(f"warning: {note}")
        return report_text(report), report_json(report), report.exit_code

    return _emit(output, build, issue_id)


@app.command(
    "cmd",
    epilog=examples("ll-harness cmd 'pytest -q' --exit-code 0 --samples 5"),
)
@measured(timeout=300.0)
def cmd_command(
    command: Annotated[str, typer.Argument(help="The shell command to measure (run with bash).")],
    options: Options,
    output: OutputFormat,
    issue_id: str | None,
) -> int:
    """Measure a shell command (deterministic: one sample by default)."""
    from engine.harness.subjects import cmd_subject

    return _evaluate(lambda cwd: cmd_subject(command, cwd=cwd), options, output, issue_id)


@app.command(
    "prompt",
    epilog=examples("ll-harness prompt 'Name three primes' --semantic 'lists three primes'"),
)
@measured(timeout=300.0)
def prompt_command(
    prompt: Annotated[str, typer.Argument(help="The prompt text to send.")],
    options: Options,
    output: OutputFormat,
    issue_id: str | None,
    model: ModelOpt = None,
    runner: RunnerOpt = None,
) -> int:
    """Measure a raw prompt (stochastic: three samples by default)."""
    from engine.harness.subjects import prompt_subject

    return _evaluate(
        lambda _cwd: prompt_subject(prompt, model=model, prompt_runner=runner),
        options,
        output,
        issue_id,
    )


@app.command(
    "loop",
    epilog=examples("ll-harness loop fix-until-green-demo --exit-code 0 --samples 3"),
)
@measured(timeout=1800.0)
def loop_command(
    loop: Annotated[str, typer.Argument(help="Loop name or path, as for `ll-loop run`.")],
    options: Options,
    output: OutputFormat,
    issue_id: str | None,
    input_text: Annotated[str | None, typer.Argument(metavar="[INPUT]", help="Loop input.")] = None,
    context: Annotated[
        list[str] | None, typer.Option("--context", help="K=V passed to the run (repeatable).")
    ] = None,
) -> int:
    """Measure a whole loop run (stochastic when it has LLM states: three samples by default)."""
    from engine.harness.subjects import loop_subject

    pairs = _context_pairs(context or [])
    return _evaluate(
        lambda cwd: loop_subject(
            refuse_other_kind(resolve_loop(loop, cwd), loop),
            input_text=input_text,
            context=pairs,
            cwd=cwd,
        ),
        options,
        output,
        issue_id,
    )


@app.command(
    "skill",
    epilog=examples("ll-harness skill my-skill 'some args' --semantic 'it did the task'"),
)
@measured(timeout=600.0)
def skill_command(
    name: Annotated[str, typer.Argument(help="The skill's name (as typed after `/`).")],
    options: Options,
    output: OutputFormat,
    issue_id: str | None,
    args: Annotated[
        str | None, typer.Argument(metavar="[ARGS]", help="Arguments typed after the name.")
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host", help="Host agent CLI (prompt on stdin); default $LL_HOST_CLI or `claude -p`."
        ),
    ] = None,
) -> int:
    """Measure a skill run through the host agent CLI (stochastic: three samples by default)."""
    from engine.harness.skill import skill_subject

    return _evaluate(
        lambda cwd: skill_subject(name, args, host=host, cwd=cwd), options, output, issue_id
    )


@app.command(
    "mcp",
    epilog=examples('ll-harness mcp files:read --args \'{"path": "README.md"}\' --exit-code 0'),
)
@measured(timeout=300.0)
def mcp_command(
    target: Annotated[str, typer.Argument(metavar="SERVER:TOOL", help="Server and tool.")],
    options: Options,
    output: OutputFormat,
    issue_id: str | None,
    args: Annotated[
        str | None, typer.Option("--args", help="The tool's arguments, a JSON object.")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="MCP servers file (default .mcp.json here)."),
    ] = None,
) -> int:
    """Measure one MCP tool call over stdio (deterministic: one sample by default)."""
    from engine.harness.mcp import mcp_subject

    return _evaluate(
        lambda cwd: mcp_subject(target, args, config=config, cwd=cwd, timeout=options.timeout),
        options,
        output,
        issue_id,
    )


@app.command("dsl", epilog=examples("ll-harness dsl tasks/ --jobs 4 --output json"))
def dsl_command(
    path: Annotated[str, typer.Argument(help="A task file, or a directory of *.yaml tasks.")],
    model: ModelOpt = None,
    runner: RunnerOpt = None,
    semantic: SemanticOpt = None,
    judge_model: JudgeModelOpt = None,
    samples: SamplesOpt = None,
    jobs: Annotated[int, typer.Option("--jobs", help="Tasks run concurrently.")] = 1,
    timeout: TimeoutOpt = 300.0,
    output: OutputOpt = OutputFormat.text,
    as_json: JsonOpt = False,
    retry_of: RetryOfOpt = None,
    issue_id: IssueIdOpt = None,
) -> int:
    """Run a batch of DSL task files and report the pass rate with a 95% Wilson interval."""
    from engine.harness.dsl import DslOptions, run_dsl
    from engine.harness.render_dsl import dsl_json, dsl_text
    from engine.runtime.history import open_history

    def build() -> tuple[str, dict[str, Any], int]:
        if not path.strip():  # Path("") would be the working directory: every *.yaml in it
            raise UsageError("the task path is empty", hint="pass a task .yaml file or a directory")
        if samples is not None and samples < 1:
            raise UsageError("--samples must be at least 1", hint="drop --samples (dsl runs 1)")
        if samples is not None and samples > 1:
            raise UsageError(
                "dsl does not take --samples > 1: the task set is already the sample",
                hint="add task files instead of resampling each task",
            )
        if jobs < 1:
            raise UsageError("--jobs must be at least 1", hint="pass --jobs 1 or more")
        texts = {"--model": model, "--runner": runner, "--semantic": semantic}
        texts |= {"--judge-model": judge_model, "--issue-id": issue_id}
        for label, text in texts.items():
            if text is not None and not is_text(text):
                raise UsageError(
                    f"{label} is not valid UTF-8 text",
                    hint="pass text: what is measured is hashed and recorded as text",
                )
        cwd = Path.cwd()
        options = DslOptions(
            model=model,
            runner=runner,
            semantic=semantic,
            judge_model=_judge(semantic, judge_model),
            jobs=jobs,
            timeout=_sample_timeout(timeout),
            retry_of=retry_of,
        )
        with open_history(project_root(cwd)) as history:
            report = run_dsl(Path(path), options, history, cwd)
        return dsl_text(report), dsl_json(report), report.exit_code

    return _emit(OutputFormat.json if as_json else output, build, issue_id)


class SuiteOutput(StrEnum):
    text = "text"
    json = "json"
    html = "html"


class SuiteExecutor(StrEnum):
    threads = "threads"
    processes = "processes"
    ray = "ray"


@app.command(
    "suite",
    epilog=examples(
        "ll-harness suite evals/answers.suite.yaml --jobs 8",
        "ll-harness suite evals/answers.suite.yaml --output json --cases 'hard-*'",
        "ll-harness suite evals/answers.suite.yaml --resume 20260101-120000-a1b2c3",
        "ll-harness suite evals/answers.suite.yaml --output html --out answers.html",
    ),
)
def suite_command(
    path: Annotated[str, typer.Argument(help="A suite file (*.suite.yaml).")],
    samples: Annotated[
        int | None, typer.Option("--samples", help="Samples of every LLM judge per case.")
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", help="Cases run at once (default: CPUs; 8 with LLM work)."),
    ] = None,
    cases: Annotated[
        str | None, typer.Option("--cases", help="Only the cases whose id matches this glob.")
    ] = None,
    output: Annotated[
        SuiteOutput,
        typer.Option(
            "--output", "--format", "-f", help="text, json or html (one self-contained page)."
        ),
    ] = SuiteOutput.text,
    as_json: JsonOpt = False,
    report_file: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write the report to this file instead of stdout (never "
            "through a link); --output html needs it when stdout is a terminal.",
        ),
    ] = None,
    measure_baseline: MeasureOpt = False,
    compare_baseline: CompareOpt = False,
    baseline_of: Annotated[
        str | None,
        typer.Option(
            "--baseline-of",
            help="The suite run to compare with (default: the last --measure-baseline run).",
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option("--resume", help="Continue an interrupted run: only what is missing runs."),
    ] = None,
    keep_workspaces: Annotated[
        bool, typer.Option("--keep-workspaces", help="Keep each case's workspace.")
    ] = False,
    executor: Annotated[
        SuiteExecutor,
        typer.Option("--executor", help="Where cases run: threads, processes or ray."),
    ] = SuiteExecutor.threads,
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            help="--executor ray: the cluster to join (default: "
            "RAY_ADDRESS, else a Ray instance started for the run).",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
) -> int:
    """Run a suite: every case through the subject, every judge on each case's outputs, the
    per-judge aggregates with 95% intervals, gated by the suite's thresholds."""
    from engine.api import suite as run_suite
    from engine.cli.harness_suite import check_target, deliver
    from engine.suites import SuiteResult
    from engine.suites.driver import command_line_spelling
    from engine.suites.progress import SuiteProgress, choose_mode

    output = SuiteOutput.json if as_json else output
    mode = choose_mode(
        quiet=quiet or (output is SuiteOutput.json and not sys.stderr.isatty()), stream=sys.stderr
    )

    def progress(**kwargs: Any) -> SuiteProgress:
        return SuiteProgress(mode=mode, stream=sys.stderr, **kwargs)  # the one the mode is for

    def run() -> SuiteResult:
        check_target(report_file, output.value)
        with command_line_spelling():  # refusals name --flags, not engine.suite's arguments
            return run_suite(
                path,
                samples=samples,
                jobs=jobs,
                cases=cases,
                measure_baseline=measure_baseline,
                compare_baseline=compare_baseline,
                baseline_of=baseline_of,
                resume=resume,
                keep_workspaces=keep_workspaces,
                executor=executor.value,
                address=address,
                progress=progress,
            )

    return deliver(run, output.value, report_file)


class HistoryRunner(StrEnum):
    cmd = "cmd"
    prompt = "prompt"
    loop = "loop"
    skill = "skill"
    mcp = "mcp"
    dsl = "dsl"


@app.command("history", epilog=examples("ll-harness history 'pytest -q' --last 20"))
def history_command(
    target: Annotated[
        str | None,
        typer.Argument(help="A target as recorded (command text, loop name…)."),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only attempts on or after this date (UTC).")
    ] = None,
    semantic: Annotated[
        str | None, typer.Option("--semantic", help="Only attempts judged by this criterion.")
    ] = None,
    runner: Annotated[
        HistoryRunner | None,
        typer.Option(
            "--runner",
            help="Only attempts of this runner (a shell command and a prompt of the same text "
            "are two subjects).",
        ),
    ] = None,
    last: Annotated[
        int, typer.Option("--last", min=0, help="How many recent attempts to list.")
    ] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    stability: Annotated[
        bool,
        typer.Option(
            "--stability",
            help="Per judge: flip rate, abstention rate, and a flag on judges that never "
            "discriminate (TARGET optional: a loop name or harness target).",
        ),
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write the history as one HTML page to this file."),
    ] = None,
) -> int:
    """Pass and abstention rates of a target over its authoritative attempts, with intervals."""
    try:
        return _history(target, since, semantic, runner, last, as_json, stability, html)
    except LoopError as exc:
        if as_json:  # as every other command asked for JSON: its refusal object on stdout
            _print_refusal(exc)
        raise


def _history(
    target: str | None,
    since: str | None,
    semantic: str | None,
    runner: HistoryRunner | None,
    last: int,
    as_json: bool,
    stability: bool,
    html: Path | None,
) -> int:
    for label, text in (("TARGET", target), ("--semantic", semantic)):
        if text is not None and not is_text(text):
            raise UsageError(
                f"{label} is not valid UTF-8 text", hint="targets are recorded as text"
            )
    since_value = _check_date(since) if since is not None else None
    if html is not None:
        from engine.cli.harness_history import write_history_html

        write_history_html(target, html)
    if stability:
        from engine.cli.harness_history import print_stability

        return print_stability(target, since_value, as_json)
    if target is None:
        raise UsageError("history needs a TARGET", hint="or pass --stability for every judge")
    from engine.harness.history_report import summarize_counts
    from engine.harness.render import history_text
    from engine.runtime.history import history_path, open_history

    cwd = Path.cwd()
    if not history_path(project_root(cwd)).exists():
        raise UsageError(
            f"no history database at {history_path(project_root(cwd))}",
            hint="run ll-harness or ll-loop from this directory first",
        )
    # Counted in SQL, and only the rows listed read: a target measured in CI for months has
    # hundreds of thousands of attempts (reading them all took 5 s and 300 MB per 100,000).
    runner_value = runner and runner.value
    with open_history(project_root(cwd)) as history:
        groups = history.attempt_counts(
            target, since=since_value, runner=runner_value, semantic=semantic
        )
        latest = history.attempts(
            target, since=since_value, runner=runner_value, semantic=semantic, limit=last
        )
        known = history.targets() if not groups else []
    summary = summarize_counts(target, groups, latest, since_value)
    if as_json:
        print(json.dumps(summary.to_json(last), indent=2))
    else:
        from engine.load.spelling import did_you_mean_hint

        # a target never recorded at all is most often a typo of one that was
        guess = did_you_mean_hint(target, known) if target not in known else ""
        out(history_text(summary, last, guess))
    return 0


def _check_date(value: str) -> str:
    """`--since` as the recorded times are written (`2026-11-30T14:43:52.123Z`, UTC), so that
    comparing the strings compares the instants: a date means its midnight, a time without an
    offset is UTC, one with an offset is converted (`20261130` and `2026-11-30 14:00` too)."""
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        moment = moment.astimezone(UTC)  # OverflowError: past year 9999 or before year 1
    except (ValueError, OverflowError):
        raise UsageError(
            f"--since {value!r} is not a date", hint="use YYYY-MM-DD or an ISO timestamp (UTC)"
        ) from None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _context_pairs(items: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--context {item!r} is not K=V", hint="write --context name=value")
        pairs[key] = value
    return pairs


def _app_for(command: str | None) -> typer.Typer:
    """The app with only `command` registered when it names one: click builds the parameters
    of every registered command on each call (~5 ms for all of them). Help, completion and
    unknown words get the whole app."""
    chosen = [c for c in app.registered_commands if c.name == command]
    if not chosen:
        return app
    only = typer.Typer()
    only.info, only.registered_callback = app.info, app.registered_callback
    only.registered_commands = chosen
    return only


def main() -> None:
    """Console entry point for `ll-harness`; it ends the process (`run_console`)."""
    run_console(_app_for(command_of(sys.argv[1:])), "ll-harness")
