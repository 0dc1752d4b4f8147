"""What judges may use besides the outputs record: IO ports, defaults, and the case's facts.

The judge engine does no IO of its own beyond reading the workspace: commands (test, script,
metric) go through a `CommandPort`, model calls through a `MessagesPort` (both in
`engine.model.ports`), and `${...}` interpolation through `render`, so a loop, a suite or a test
wires them as it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engine.model.judges import Judge
from engine.model.loop import EMPTY
from engine.model.ports import ActionResult, CommandPort, MessagesPort

if TYPE_CHECKING:
    from engine.judges.record import OutputsRecord
    from engine.judges.result import JudgeResult

RenderMode = Literal["text", "shell"]
# (template, mode) -> the text with every `${...}` interpolated; raises when it cannot.
Render = Callable[[str, RenderMode], str]


def _empty() -> Mapping[str, Any]:
    return EMPTY


@dataclass(frozen=True)
class JudgeEnv:
    """The IO and defaults of one assessment.

    `workspace` is where commands run, relative paths resolve and reviewers explore;
    `project_root` is where `module` judges are imported from (default: the workspace).
    `model`, `reasoning`, `max_tokens` and `temperature` are the defaults of LLM judges
    (a judge's own setting wins); `samples` overrides every LLM judge's `samples` (a suite's
    `--samples`), `default_samples` is that of an LLM judge that sets none (a suite's `samples`).
    `on_result` hears each judge's result as it finishes (events, progress); `stopped` says
    the run was stopped, so no judge makes another model call (its result would not be used).
    """

    workspace: Path = field(default_factory=Path.cwd)
    commands: CommandPort | None = None
    messages: MessagesPort | None = None
    render: Render | None = None
    # a template's value: a lone `${...}` keeps its type (None: as `render` gives it)
    typed: Callable[[str], Any] | None = None
    model: str | None = None
    reasoning: str | int | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    annotations: Mapping[str, Any] = field(default_factory=_empty)
    inputs: Mapping[str, Any] = field(default_factory=_empty)
    project_root: Path | None = None
    samples: int | None = None
    default_samples: int | None = None
    on_result: Callable[[JudgeResult], None] | None = None
    stopped: Callable[[], bool] | None = None

    @property
    def import_root(self) -> Path:
        return self.project_root or self.workspace


@dataclass(frozen=True)
class JudgeContext:
    """What one judge's code receives: the judge, the record, and the environment."""

    judge: Judge
    outputs: OutputsRecord
    env: JudgeEnv

    @property
    def samples(self) -> int:
        return self.samples_of(self.judge.samples)

    def samples_of(self, own: int | None) -> int:
        """How many answers an LLM judge asks for: the invocation's `--samples`, else the
        judge's own setting (`own`), else the suite's `samples`, else 1. The more specific
        setting wins over the file-wide one, as a judge's `model` wins over `models.judge`."""
        return max(1, self.env.samples or own or self.env.default_samples or 1)

    def render(self, text: str, mode: RenderMode = "text") -> str:
        """`text` with its `${...}` interpolated (unchanged without a renderer)."""
        if self.env.render is None or "${" not in text:
            return text
        return self.env.render(text, mode)

    def typed(self, text: str) -> Any:
        """`text` interpolated, a lone `${...}` keeping its value's type (a JSON target)."""
        if self.env.typed is None or "${" not in text:
            return self.render(text)
        return self.env.typed(text)

    def run_command(self, command: str) -> ActionResult:
        """Run `command` (interpolated for the shell) in the workspace; JudgeError without a
        command runner."""
        from engine.judges.result import JudgeError

        if self.env.commands is None:
            raise JudgeError("cannot run commands here (no command runner was given)")
        script = self.render(command, "shell")
        return self.env.commands.run_command(
            script, timeout=self.judge.timeout, label=self.judge.name
        )

    def path(self, given: str) -> Path:
        """A path from the judge's arguments, relative to the workspace."""
        path = Path(self.render(given))
        return path if path.is_absolute() else self.env.workspace / path
