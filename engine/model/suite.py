"""The loaded suite: a dataset of cases, a subject, judges and thresholds (frozen, typed).

`engine.load.suite` builds these from a `*.suite.yaml` that passed `schemas/suite.schema.json`;
lint, the suite runner and the reports read only these types. Cases of a dataset directory are
read separately (`engine.load.dataset`), so a suite loads without touching its dataset.
See docs/suites.md for what each field means.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.model.judges import Judge
from engine.model.loop import EMPTY, Suppression

SubjectKind = Literal["command", "prompt", "agent", "loop"]
Isolation = Literal["auto", "worktree", "copy", "none"]
Gate = Literal["min_pass_rate", "min_mean", "min_win_rate"]
Arm = Literal["subject", "baseline"]

DEFAULT_SUBJECT_TIMEOUT = 600.0
DEFAULT_HOOK_TIMEOUT = 300.0
PAIRWISE_NAME = "pairwise"


def _empty() -> Mapping[str, Any]:
    return EMPTY


@dataclass(frozen=True, slots=True)
class Subject:
    """What runs once per case. Only the fields of its `kind` matter."""

    kind: SubjectKind
    command: str | None = None
    prompt: str | None = None
    agent: str | None = None
    loop: str | None = None
    with_: Mapping[str, Any] | None = None  # None: bind the inputs the loop's parameters name
    model: str | None = None
    runner: str | None = None
    timeout: float | None = DEFAULT_SUBJECT_TIMEOUT  # None: no limit
    line: int = 0

    @property
    def uses_llm(self) -> bool:
        """A prompt through the SDK (an agent or a `cmd:` runner is its own process)."""
        return self.kind == "prompt" and not (self.runner or "").startswith("cmd:")

    def templates(self) -> dict[str, str]:
        """The interpolated texts of this subject, by YAML key (for lint)."""
        found = {
            key: value
            for key, value in (("command", self.command), ("prompt", self.prompt))
            if value is not None
        }
        return found

    def describe(self) -> str:
        """One line for reports: `command: pytest -q`, `loop: fix-until-green`, ..."""
        shown = {
            "command": self.command,
            "prompt": self.prompt,
            "agent": self.agent,
            "loop": self.loop,
        }[self.kind]
        text = " ".join(str(shown).split())
        return f"{self.kind}: {text if len(text) <= 60 else text[:57] + '...'}"


@dataclass(frozen=True, slots=True)
class Hook:
    """A `before_each` command: run in the workspace before the subject."""

    name: str
    command: str
    timeout: float = DEFAULT_HOOK_TIMEOUT
    line: int = 0


@dataclass(frozen=True, slots=True)
class Traces:
    """Which traces of the subject join the record."""

    events: bool = True
    metrics: bool = True
    stdout: bool = True
    stderr: bool = True


@dataclass(frozen=True, slots=True)
class Pairwise:
    """The LLM judge comparing the subject's and the baseline's work on one case."""

    name: str
    prompt: str
    samples: int | None = None  # None: the suite's samples
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    line: int = 0


@dataclass(frozen=True, slots=True)
class Threshold:
    """One gate: `judge`'s aggregate (`gate`) must reach `value`."""

    judge: str
    gate: Gate
    value: float
    line: int = 0


@dataclass(frozen=True, slots=True)
class Resources:
    """What one case asks of a Ray worker node (`resources:`); local executors ignore it."""

    cpus: float = 1.0
    memory_mb: int | None = None


@dataclass(frozen=True, slots=True)
class InlineCase:
    """A case written in the suite file (`cases:`)."""

    id: str
    inputs: Mapping[str, Any] = field(default_factory=_empty)
    annotations: Mapping[str, Any] = field(default_factory=_empty)
    line: int = 0


@dataclass(frozen=True, slots=True)
class Suite:
    """One suite file, loaded and checked."""

    name: str
    subject: Subject
    judges: tuple[Judge, ...]
    source: str = ""  # the suite file's path ("" for text)
    description: str = ""
    dataset: str | None = None  # as written, relative to the suite file
    cases: tuple[InlineCase, ...] = ()
    baseline_subject: Subject | None = None
    workspace: tuple[str, ...] = ()
    isolation: Isolation = "auto"
    before_each: tuple[Hook, ...] = ()
    output_paths: tuple[str, ...] = ()
    traces: Traces = field(default_factory=Traces)
    pairwise: Pairwise | None = None
    samples: int | None = None
    judge_model: str | None = None
    subject_model: str | None = None
    thresholds: tuple[Threshold, ...] = ()
    lint: tuple[Suppression, ...] = ()
    resources: Resources = field(default_factory=Resources)
    dataset_line: int = 0  # where `dataset:` and each `workspace:` path are written, for refusals
    workspace_lines: tuple[int, ...] = ()

    def judge_names(self) -> list[str]:
        """Every judge that can be gated, the pairwise one last."""
        names = [j.name for j in self.judges]
        if self.pairwise is not None:
            names.append(self.pairwise.name)
        return names

    def threshold_of(self, judge: str) -> Threshold | None:
        return next((t for t in self.thresholds if t.judge == judge), None)

    @property
    def uses_llm(self) -> bool:
        subjects = [self.subject, *([self.baseline_subject] if self.baseline_subject else [])]
        return (
            self.pairwise is not None
            or any(j.uses_llm for j in self.judges)
            or any(s.uses_llm for s in subjects)
        )


@dataclass(frozen=True, slots=True)
class Case:
    """One case as a suite runs it: plain data (it crosses process boundaries).

    `folder` is the dataset folder whose files (all but annotations) are copied into the case's
    workspace; `problem` says why the case cannot run (no input.yaml, an unreadable file): it is
    then recorded as errored for every judge, and the suite goes on. `key` hashes the inputs and
    annotations, so a baseline's case is matched only when it is the same case. A case only
    listed (`loaded` False) is read by the worker that runs it, so thousands of cases are read
    in parallel rather than before the first one starts.
    """

    id: str
    inputs: dict[str, Any]
    annotations: dict[str, Any]
    key: str
    source: str = ""
    folder: str | None = None
    problem: str | None = None
    files: tuple[str, ...] = ()  # the folder's files copied into the workspace (not annotations)
    input_text: str | None = None  # input.yaml as read (written into the workspace as is)
    loaded: bool = True  # False: only listed; its files are read where the case runs
