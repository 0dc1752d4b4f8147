"""The loaded loop: frozen, typed, no dicts of unknown shape after loading.

`engine.load.loader` builds these from YAML that already passed the JSON Schema; everything
downstream (graph, lint, interpreter, show) reads only these types. Field names follow the YAML
keys, except `with_` (a Python keyword) and `routes` (the `on_<verdict>` shorthands gathered in
one mapping).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from engine.model.judges import Judge

ActionType = Literal["shell", "prompt"]

EMPTY: Mapping[str, Any] = MappingProxyType({})

# The closed verdict set of every evaluator type (docs/format.md, "Evaluators"). `classify` is
# open: its set is the evaluator's declared `verdicts` plus "error".
VERDICTS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "exit_code": frozenset({"yes", "no", "error"}),
        "output_contains": frozenset({"yes", "no", "error"}),
        "output_numeric": frozenset({"yes", "no", "error"}),
        "output_json": frozenset({"yes", "no", "error"}),
        "convergence": frozenset({"target", "progress", "stall", "error"}),
        "llm_structured": frozenset({"yes", "no", "partial", "blocked", "cannot_judge", "error"}),
        "assessment": frozenset({"yes", "no", "error"}),
        "diff_stall": frozenset({"progress", "stall", "error"}),
    }
)
# A rubric judge (llm_structured with dimensions) compares a score with a threshold: it never
# answers partial, blocked or cannot_judge.
RUBRIC_VERDICTS = frozenset({"yes", "no", "error"})

# Where an unrouted verdict falls back to when no `route` table is used (docs/format.md, "Routing").
FALLBACKS: Mapping[str, str] = MappingProxyType(
    {"partial": "no", "blocked": "no", "cannot_judge": "error"}
)

# A sub-loop state yields these verdicts (plus any `on_terminal` names routed first).
SUBLOOP_VERDICTS = frozenset({"yes", "no", "error"})
# `captured.<name>` of a sub-loop state (engine.runtime.subloop.capture_of): no `output` there
SUBLOOP_CAPTURE_FIELDS = frozenset(
    {"terminal", "outcome", "terminated_by", "steps", "outputs", "events", "events_path"}
)

CURRENT = "$current"

# Interpolation roots fixed for a whole run: the only ones a `scope` entry may use (it is
# resolved before the first step, when no capture or `prev` exists yet).
RUN_LEVEL_ROOTS = frozenset({"run", "context", "param", "env"})


def _empty() -> Mapping[str, Any]:
    """The shared read-only empty mapping (a dataclass default must come from a factory)."""
    return EMPTY


@dataclass(frozen=True, slots=True)
class Suppression:
    """A lint rule switched off on purpose, with the reason the author gave."""

    code: str
    reason: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class Parameter:
    """One entry of a loop's caller contract (`parameters:`)."""

    name: str
    type: Literal["string", "integer", "number", "boolean", "array", "object", "any", "command"] = (
        "any"
    )
    """`command`: a caller-supplied shell command line (code by contract; docs/format.md)."""
    required: bool = False
    default: Any = None
    has_default: bool = False
    description: str = ""
    enum: tuple[Any, ...] | None = None


@dataclass(frozen=True, slots=True)
class LlmConfig:
    """Loop-wide LLM settings; each field may be overridden per state or per evaluator."""

    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    timeout: float | None = None
    runner: str | None = None
    cache: bool = False


@dataclass(frozen=True, slots=True)
class Dimension:
    """A rubric dimension for Polpo-style multi-reviewer scoring."""

    name: str
    description: str
    weight: float
    rubric: Mapping[str, str] = field(default_factory=_empty)  # "1".."5" -> what it means


@dataclass(frozen=True, slots=True)
class Evaluate:
    """An `evaluate:` block; only the fields of its `type` are meaningful (schema-enforced)."""

    type: str
    source: str | None = None
    ignore_exit_code: bool = False
    # output_contains
    pattern: str | None = None
    negate: bool = False
    # output_numeric / output_json / convergence
    operator: str | None = None
    target: Any = None
    path: str | None = None
    tolerance: float = 0.0
    direction: Literal["minimize", "maximize"] = "minimize"
    previous: str | None = None
    # convergence / diff_stall: consecutive checks without progress before `stall`
    max_stall: int = 1
    scope: tuple[str, ...] = ()  # diff_stall: the paths whose `git diff --stat` is watched
    # classify
    verdicts: tuple[str, ...] = ()
    line: Literal["first", "last"] = "last"
    # llm_structured
    prompt: str | None = None
    model: str | None = None
    samples: int = 1
    min_confidence: float = 0.5
    dimensions: tuple[Dimension, ...] = ()
    reviewers: int = 3
    threshold: float = 3.0
    max_tokens: int | None = None
    temperature: float | None = None
    implicit: bool = False  # True when defaulted on a prompt state without `evaluate:`
    # assessment (see engine.model.judges)
    judges: tuple[Judge, ...] = ()
    concurrency: int | None = None
    reasoning: str | int | None = None
    annotations: Mapping[str, Any] = field(default_factory=_empty)
    outputs: tuple[str, ...] = ()

    def verdict_set(self) -> frozenset[str]:
        """The closed set of verdicts this evaluator can produce."""
        if self.type == "classify":
            return frozenset(self.verdicts) | {"error"}
        if self.type == "llm_structured" and self.dimensions:
            return RUBRIC_VERDICTS
        return VERDICTS[self.type]


@dataclass(frozen=True, slots=True)
class State:
    """One state of the machine; `routes` holds the `on_<verdict>` shorthands."""

    name: str
    line: int = 0
    column: int = 0
    description: str = ""
    action: str | None = None
    action_type: ActionType = "shell"
    timeout: float | None = None
    evaluate: Evaluate | None = None
    next: str | None = None
    routes: Mapping[str, str] = field(default_factory=_empty)
    route: Mapping[str, str] | None = None
    terminal: bool = False
    failure: bool = False
    capture: str | None = None
    loop: str | None = None
    with_: Mapping[str, Any] = field(default_factory=_empty)
    on_terminal: Mapping[str, str] = field(default_factory=_empty)
    max_retries: int | None = None
    on_retry_exhausted: str | None = None
    model: str | None = None
    runner: str | None = None
    lint: tuple[Suppression, ...] = ()

    @property
    def is_subloop(self) -> bool:
        return self.loop is not None

    @property
    def capture_name(self) -> str | None:
        """Where the state's result is captured: `capture:`, else its own name for a sub-loop
        or an assessment (which always capture), else nowhere."""
        stores = self.is_subloop or (
            self.evaluate is not None and self.evaluate.type == "assessment"
        )
        return self.capture or (self.name if stores else None)

    @property
    def retry_exhausted_target(self) -> str | None:
        """`on_retry_exhausted` with `$current` resolved to this state (None: unset)."""
        target = self.on_retry_exhausted
        return self.name if target == CURRENT else target

    def targets(self) -> dict[str, str]:
        """Every outgoing edge label → target state name, `$current` resolved to this state."""
        edges: dict[str, str] = {}
        if self.next is not None:
            edges["next"] = self.next
        for verdict, target in (self.route or self.routes).items():
            edges[verdict] = target
        for name, target in self.on_terminal.items():
            edges[f"terminal:{name}"] = target
        if self.on_retry_exhausted is not None:
            edges["retry_exhausted"] = self.on_retry_exhausted
        return {k: (self.name if v == CURRENT else v) for k, v in edges.items()}


@dataclass(frozen=True, slots=True)
class Loop:
    """A whole loop file, validated and typed. `states` keeps file order."""

    name: str
    initial: str
    states: Mapping[str, State]
    description: str = ""
    max_steps: int = 50
    on_max_steps: str | None = None
    timeout: float | None = None
    default_timeout: float | None = None
    scope: tuple[str, ...] | None = None
    context: Mapping[str, Any] = field(default_factory=_empty)
    parameters: Mapping[str, Parameter] = field(default_factory=_empty)
    outputs: Mapping[str, str] = field(default_factory=_empty)
    llm: LlmConfig = field(default_factory=LlmConfig)
    max_cost_usd: float | None = None
    category: str | None = None
    labels: tuple[str, ...] = ()
    lint: tuple[Suppression, ...] = ()
    input_key: str | None = None  # the parameter the positional INPUT binds to (None: `input`)
    source: str = ""  # path of the file it came from ("" when loaded from text)

    def terminals(self) -> list[State]:
        return [s for s in self.states.values() if s.terminal]

    def uses_llm(self) -> bool:
        """True when any state needs an LLM: a prompt action, an llm_structured judge, or an
        assessment with an LLM judge."""
        return any(
            s.action_type == "prompt"
            or (s.evaluate is not None and s.evaluate.type == "llm_structured")
            or (s.evaluate is not None and any(j.uses_llm for j in s.evaluate.judges))
            for s in self.states.values()
        )
