"""The rule registry: each rule is a small pure function registered under a stable code.

A rule yields `Finding`s (what and where, in loop terms); `lint_loop` turns them into
positioned `Diagnostic`s, applies suppressions and sorts. Rules never see files or positions,
so each one is testable on a `Loop` built in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from engine.model.errors import Severity

PathKey = tuple[str | int, ...]


class PositionLookup(Protocol):
    """What lint needs from the loader's positions: (line, column) of a YAML path."""

    def of(self, path: PathKey) -> tuple[int, int]: ...

    def value_of(self, path: PathKey) -> tuple[int, int]:
        """Where the value at `path` starts (its key's position when unknown)."""
        ...

    @property
    def text(self) -> str:
        """The source text the positions refer to ("" when unknown)."""
        ...


@dataclass(frozen=True)
class Finding:
    """One problem a rule found: a sentence, the YAML path it is about, and how to fix it."""

    message: str
    path: PathKey = ()
    hint: str = ""
    # Text inside the value at `path` the finding is really about (e.g. a `<FILL: ...>` marker):
    # `lint_loop` places the diagnostic on it in the loop's file when it can find it there.
    needle: str = ""
    # Which occurrence of `needle` in the value (0 = first); None: the k-th finding with the same
    # needle goes to the k-th occurrence.
    occurrence: int | None = None

    @property
    def state(self) -> str | None:
        """The state this finding is about (for state-level suppressions), if any."""
        if len(self.path) >= 2 and self.path[0] == "states":
            return str(self.path[1])
        return None


Check = Callable[[Any], Iterable[Finding]]  # LintContext (a loop) or SuiteContext (a suite)


@dataclass(frozen=True)
class Rule:
    """A registered rule: stable `code`, default `severity`, kebab-case `name`, the check, and
    the files it checks (`loop`, `suite`: a rule about judges checks both)."""

    code: str
    severity: Severity
    name: str
    summary: str
    check: Check
    targets: tuple[str, ...] = ("loop",)


_RULES: dict[str, Rule] = {}
RULES: Mapping[str, Rule] = MappingProxyType(_RULES)


def rule(
    code: str, severity: Severity, name: str, *, targets: tuple[str, ...] = ("loop",)
) -> Callable[[Check], Check]:
    """Register the decorated function as rule `code`; its docstring's first line is the summary."""

    def register(check: Check) -> Check:
        if code in _RULES:
            raise ValueError(f"lint rule {code} registered twice")
        summary = (check.__doc__ or name).strip().splitlines()[0]
        _RULES[code] = Rule(code, severity, name, summary, check, targets)
        return check

    return register


def find_rule(key: str) -> Rule | None:
    """A rule by its code (`LL003`, `MR-8`) or its name (`trap-state`), case-insensitive."""
    wanted = key.strip().lower()
    for item in _RULES.values():
        if wanted in (item.code.lower(), item.name):
            return item
    return None
