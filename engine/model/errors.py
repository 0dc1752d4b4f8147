"""One diagnostic type and one exception family, so callers catch one thing.

Every user-facing problem is a `Diagnostic`: a stable code, a severity, one sentence, where it
is (file, JSON-pointer-like path, line, column) and a hint. Exceptions carry diagnostics; the
CLI renders them and never shows a traceback unless `--debug`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from engine.model.terminal import printable

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Diagnostic:
    """A single finding about a loop file, positioned for editors and CI."""

    code: str
    severity: Severity
    message: str
    file: str = ""
    path: str = ""
    line: int = 0
    column: int = 0
    hint: str = ""

    def location(self) -> str:
        """`file:line:col`, omitting the parts that are unknown. A newline or tab in the file's
        name is shown as `\\n` / `\\t`: the diagnostic is one line an editor or a CI log reads
        as one finding (a second line could start `::error`, a GitHub Actions command)."""
        where = (self.file or "<loop>").replace("\n", "\\n").replace("\t", "\\t")
        if self.line:
            where += f":{self.line}"
            if self.column:
                where += f":{self.column}"
        return where

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "hint": self.hint,
        }

    def render(self) -> str:
        """One line for a terminal: `file:line:col: severity CODE message (hint)`."""
        text = f"{self.location()}: {self.severity} {self.code} {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return printable(text)


class LoopError(Exception):
    """Base of every error ll-loop raises on purpose; `code` is stable, `hint` helps."""

    code = "E000"
    exit_code = 2
    outcome = "error"  # what `run --json` reports for a run refused with this error
    terminated_by = "error"
    loop_name: str | None = None  # the loop's name, when it had loaded before the refusal

    def __init__(self, message: str, *, hint: str = "", code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if code is not None:
            self.code = code

    def render(self) -> str:
        text = f"error: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return printable(text)


@dataclass
class LoadError(LoopError):
    """The loop could not be loaded; `diagnostics` says exactly where and why."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        first = diagnostics[0] if diagnostics else None
        message = f"{first.location()}: {first.message}" if first else "invalid loop"
        super().__init__(message, hint=first.hint if first else "", code="LOAD")
        self.diagnostics = diagnostics

    def render(self) -> str:
        """Every diagnostic, each with its `file:line:col` and hint: a command that let the
        error reach the CLI's guard (`ll-harness loop|suite`) showed the first one only, so a
        loop with three errors took three tries to fix."""
        if not self.diagnostics:
            return super().render()
        return "\n".join(diagnostic.render() for diagnostic in self.diagnostics)


class UsageError(LoopError):
    """The command line asked for something that does not exist or does not fit."""

    code = "USAGE"


class InterpolationError(LoopError):
    """An `${...}` expression could not be parsed or evaluated (missing value, bad syntax)."""

    code = "INTERP"

    def __init__(self, expression: str, reason: str) -> None:
        if expression.strip() == "context.input" and reason.startswith("missing value"):
            # the run's INPUT, which `ll-loop run LOOP` without one leaves unset
            reason += "; it is the run's INPUT: pass it as `ll-loop run LOOP INPUT`"
        super().__init__(f"cannot interpolate ${{{expression}}}: {reason}")
        self.expression = expression
        self.reason = reason


class LockConflict(LoopError):
    """Another live run holds an overlapping scope."""

    code = "LOCK"


class StoppedWaiting(LoopError):
    """A run waiting in the lock queue was stopped (`ll-loop stop`, SIGTERM, Ctrl-C): it never
    started, and like any stopped run it is inconclusive."""

    code = "STOPPED"
    exit_code = 3
    outcome = "inconclusive"
    terminated_by = "stopped"

    def __init__(self, message: str, *, hint: str = "", by: str = "") -> None:
        super().__init__(message, hint=hint)
        self.by = by  # what stopped it: a signal's name, or `ll-loop stop`


class PreflightError(LoopError):
    """A run cannot start: missing credentials, runner, or a feature not available."""

    code = "PREFLIGHT"
