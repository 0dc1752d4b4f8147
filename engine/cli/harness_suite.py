"""Where `ll-harness suite`'s report goes: text, JSON or the HTML page, on stdout or `--out FILE`.

An HTML page is not for a terminal: `--output html` needs `--out FILE` unless stdout is a pipe
or a file (then the page goes there, as a report always does). `--out` is checked before the
suite runs, so a bad target costs nothing, and written with `O_NOFOLLOW` (never through a link).
A refusal writes no file; under `--output json` without `--out` it is one JSON object on stdout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cli.common import out, write_report
from engine.load.project import refuse_links
from engine.model.errors import LoopError, UsageError

if TYPE_CHECKING:
    from engine.suites.result import SuiteResult


def check_target(target: Path | None, output: str) -> None:
    """Refuse, before anything runs, a report that could not be delivered."""
    if target is None:
        if output == "html" and sys.stdout.isatty():
            raise UsageError(
                "--output html writes a page, not terminal text: name its file with --out",
                hint="ll-harness suite FILE --output html --out suite-report.html "
                "(or redirect stdout to a file)",
            )
        return
    refuse_links(target)
    if target.is_dir():
        raise UsageError(f"--out {target} is a directory", hint="give the report's file name")
    if not target.parent.is_dir():
        raise UsageError(
            f"--out {target}: the directory {target.parent} does not exist",
            hint="create it first, or write the report elsewhere",
        )


def deliver(run: Callable[[], SuiteResult], output: str, target: Path | None) -> int:
    """Run the suite, render its report and put it where it goes; the verdict's exit code."""
    try:
        result = run()
    except LoopError as exc:
        if output == "json" and target is None:
            refusal = {  # the shape of docs/harness.md: a stop (exit 3) ran cases, unlike a refusal
                "result": "ERROR" if exc.exit_code == 2 else "INCONCLUSIVE",
                "exit_code": exc.exit_code,
                "error": exc.message,
                "hint": exc.hint or None,
                "refused": exc.exit_code == 2,
            }
            print(json.dumps(refusal))
        raise
    report = render(result, output)
    if target is None:
        if output == "text":
            out(report)  # quotes what the cases printed: control characters shown, not sent
        else:
            sys.stdout.write(report)
            sys.stdout.flush()
        return result.exit_code
    if output == "text":
        from engine.model.terminal import printable

        report = printable(report) + "\n"
    write_report(target, report)
    return result.exit_code


def render(result: SuiteResult, output: str) -> str:
    """The report as text, JSON or the self-contained HTML page."""
    if output == "html":
        from engine.load.project import project_root
        from engine.report.suite_page import suite_html
        from engine.runtime.history import open_history
        from engine.suites.trends import judge_trends

        with open_history(project_root(Path.cwd())) as history:
            trends = judge_trends(history, result.suite, result.run_id)
        return suite_html(result, trends)
    from engine.suites import suite_json, suite_text

    if output == "json":
        return json.dumps(suite_json(result), indent=2) + "\n"
    return suite_text(result)
