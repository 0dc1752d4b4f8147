"""The loaded judge: one model for the three spellings a loop (or a suite) may use.

agent_eval `judges:` (kind inferred from the fields), Polpo `expectations:` (`type: test | script |
file_exists | llm_review`) and Polpo `metrics:` are all normalised at load into `Judge`, so the
engine, lint and reports see one shape. The kinds:

- `builtin`: a registered judge (`builtin` names it, `arguments` are its keyword arguments);
  Polpo's test, script and file_exists and every metric become builtins too;
- `check`: an inline Python snippet returning `(value, rationale)`;
- `llm`: a Jinja2 template judged by a model (`prompt`, `prompt_file` or `llm_rubric`);
- `callable`: `module` + `function`, imported from the project root;
- `review`: Polpo's `llm_review` (criteria, weighted dimensions, several reviewers).

See docs/judges.md for what each field means.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.model.loop import EMPTY, Dimension

JudgeKind = Literal["builtin", "check", "llm", "callable", "review"]
Spelling = Literal["judges", "expectations", "metrics"]
Feedback = Literal["bool", "score"]

# Polpo's four default review dimensions, used when an llm_review names none.
DEFAULT_DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("correctness", "The result does what was asked, without errors.", 0.35),
    Dimension("completeness", "Every part of the task is done; nothing is missing.", 0.30),
    Dimension("code_quality", "The work is clear, idiomatic and maintainable.", 0.20),
    Dimension("edge_cases", "Unusual inputs and failure cases are handled.", 0.15),
)

# The judges that talk to a model; a loop using one needs LLM services and credentials.
LLM_BUILTINS = frozenset({"llm_structured"})


def _empty() -> Mapping[str, Any]:
    return EMPTY


@dataclass(frozen=True, slots=True)
class Judge:
    """One judge, whatever spelling it was written in. Only the fields of its kind matter."""

    name: str
    kind: JudgeKind
    spelling: Spelling = "judges"
    file: str = ""  # the loop (or suite) file it was written in, for messages
    line: int = 0
    description: str = ""
    condition: str | None = None  # `if:`
    # builtin / check / callable
    builtin: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=_empty)
    check: str | None = None
    check_line: int = 0  # the file line of the snippet's first line
    module: str | None = None
    function: str | None = None
    timeout: float | None = None
    # llm
    prompt: str | None = None
    prompt_file: str | None = None  # as written; resolved against `base_dir`
    llm_rubric: str | None = None
    base_dir: str = ""  # the directory of the file the judge was written in
    feedback: Feedback = "score"
    score_range: tuple[float, float] | None = None  # None: the kind's default
    threshold: float | None = None
    samples: int | None = None  # None: not set (the suite's `samples`, else 1)
    min_confidence: float = 0.5
    model: str | None = None
    reasoning: str | int | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    # review
    criteria: str | None = None
    dimensions: tuple[Dimension, ...] = ()
    generate_dimensions: bool = False
    reviewers: int = 3
    explore: bool | None = None  # None: explore when the work changed files

    @property
    def where(self) -> str:
        """`file:line` of the judge, for one-sentence errors."""
        where = self.file or "<loop>"
        return f"{where}:{self.line}" if self.line else where

    @property
    def uses_llm(self) -> bool:
        return self.kind in ("llm", "review") or (
            self.kind == "builtin" and self.builtin in LLM_BUILTINS
        )

    def known_prompt_file(self) -> Path | None:
        """The `prompt_file` as the run will read it, when that is known before the run (it
        reads no `${...}`): relative paths are the judge file's directory's."""
        if self.prompt_file is None or "${" in self.prompt_file:
            return None
        return Path(self.base_dir or ".") / self.prompt_file

    def value_range(self) -> tuple[float, float]:
        """`score_range`, else [1, 5] for model-scored judges and [0, 1] for the others."""
        if self.score_range is not None:
            return self.score_range
        return (1.0, 5.0) if self.kind in ("llm", "review") else (0.0, 1.0)

    def pass_mark(self) -> float:
        """Where a number passes: `threshold`, else the middle of the range."""
        if self.threshold is not None:
            return self.threshold
        low, high = self.value_range()
        return (low + high) / 2
