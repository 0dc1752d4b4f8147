"""What a rule about a suite file looks at: the suite, its positions, its cases (read once)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from engine.model.errors import LoopError
from engine.model.judges import Judge
from engine.model.loop import Loop
from lint._context import LoopResolver
from lint._judges import strings_of_judge
from lint._paths import strings_in
from lint._registry import PathKey, PositionLookup

if TYPE_CHECKING:  # a suite's lint imports them; a loop's need not pay for it
    from engine.model.suite import Case, Suite

# The YAML list each judge spelling is written in, at the top of a suite file.
_SPELLINGS = ("judges", "expectations", "metrics")


@dataclass(frozen=True)
class SuiteContext:
    """The suite under lint, and its cases when they can be read (a lint never fails on data)."""

    suite: Suite
    positions: PositionLookup | None = None  # where each node sits in the file (LL087)
    resolve_loop: LoopResolver | None = None  # finds a loop subject (LL095)
    project_root: Path | None = None  # where `workspace:` paths are (LL096); None: unknown
    read: Sequence[Case] | None = None  # every case, already read by the caller

    @cached_property
    def cases(self) -> list[Case]:
        """The cases that could be read (a broken one is the run's to report)."""
        from engine.load.dataset import load_cases

        try:
            every = load_cases(self.suite) if self.read is None else self.read
        except LoopError:
            return []
        return [c for c in every if c.problem is None]

    def shell_templates(self) -> Iterator[tuple[PathKey, str, str]]:
        """Every bash script of the suite with a `${...}`: (path, script, what it is)."""
        suite = self.suite
        for key, subject in (
            ("subject", suite.subject),
            ("baseline_subject", suite.baseline_subject),
        ):
            if subject is not None and subject.command is not None:
                yield (key, "command"), subject.command, "subject command"
        for index, hook in enumerate(suite.before_each):
            yield ("before_each", index), hook.command, "hook"
        for judge, path in self.judges():
            command = judge.arguments.get("command") if judge.kind == "builtin" else None
            if isinstance(command, str):
                at = (*path, "command") if judge.spelling != "judges" else (*path, "arguments")
                yield at, command, "judge command"

    def subject_loop(self, ref: str) -> tuple[Loop | None, str]:
        """The loop a subject's `loop:` names and, when it cannot be loaded, why."""
        if self.resolve_loop is None:
            return None, "no resolver"
        try:
            return self.resolve_loop(ref), ""
        except LoopError as exc:
            return None, exc.message

    def templates(self) -> Iterator[tuple[PathKey, str]]:
        """Every string of the suite a run interpolates (`${inputs.x}`), with its YAML path:
        the subjects' command, prompt and `with:` values, the hooks, the judges' strings."""
        suite = self.suite
        for key, subject in (
            ("subject", suite.subject),
            ("baseline_subject", suite.baseline_subject),
        ):
            if subject is None:
                continue
            for name, text in subject.templates().items():
                yield (key, name), text
            yield from strings_in(dict(subject.with_ or {}), (key, "with"))
        for index, hook in enumerate(suite.before_each):
            yield ("before_each", index), hook.command
        for judge, path in self.judges():
            yield from strings_of_judge(judge, path)

    def judges(self) -> Iterator[tuple[Judge, PathKey]]:
        """Each judge with the YAML path of its entry."""
        seen = dict.fromkeys(_SPELLINGS, 0)
        for judge in self.suite.judges:
            index = seen[judge.spelling]
            seen[judge.spelling] = index + 1
            yield judge, (judge.spelling, index)
