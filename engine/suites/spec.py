"""What crosses the executor boundary: a case to run, and what came of it (plain, picklable).

The driver turns each case into a `CaseSpec` and hands it to an `Executor`; a worker (a thread
here, another process, or a Ray task) calls `run_case(spec)` and sends back a `CaseOutcome`.
Everything in both is plain data — dataclasses of strings, numbers, tuples and dicts (the
loaded `Suite` included: its read-only mappings pickle as dicts) — so a spec can be pickled to
any worker and an outcome back. Workers never touch `history.db` or the report: the driver
alone writes them, from the outcomes it receives.
"""

from __future__ import annotations

import copyreg
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from engine.model.suite import Case, Suite

if TYPE_CHECKING:
    from engine.llm.client import RateGate


def read_only(data: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    """Rebuild a read-only mapping on the unpickling side."""
    return MappingProxyType(data)


def _reduce_proxy(
    proxy: MappingProxyType[Any, Any],
) -> tuple[Any, tuple[dict[Any, Any]]]:
    return read_only, (dict(proxy),)


# The loaded model freezes its mappings as MappingProxyType, which pickle refuses by default; a
# proxy is rebuilt from a copy of its dict on the other side.
copyreg.pickle(MappingProxyType, _reduce_proxy)  # type: ignore[arg-type]


@dataclass(frozen=True)
class RunSettings:
    """What every case of one suite run shares."""

    run_id: str
    suite: Suite
    project_root: str
    scratch_root: str  # the run's workspaces live under here (outside the project)
    run_dir: str  # .loops/suites/<run_id>: the LLM call log ("" when nothing is recorded)
    conditions_fp: str
    cwd: str = ""  # where the suite was started: the workspace of `isolation: none`
    samples: int | None = None  # --samples: every LLM judge's samples
    keep_workspaces: bool = False
    subject_hashes: Mapping[str, str] = field(default_factory=dict)  # arm -> content hash
    llm_gate: RateGate | None = None  # shared LLM admission across workers (the Ray limiter)
    keep_records: bool = True  # every case's outputs record (else only failing cases')


@dataclass(frozen=True)
class CaseSpec:
    """One case to run. `baseline_record` is the outputs record (compressed JSON) a measured
    baseline kept for this case, when the pairwise judge compares against it; `baseline_gap`
    says why there is none when it should (the pairwise judge errors with it)."""

    settings: RunSettings
    case: Case
    index: int
    baseline_record: bytes | None = None
    baseline_gap: str | None = None


@dataclass(frozen=True)
class SampleAnswer:
    """One sample of a sampled (LLM) judge: its own outcome and value."""

    status: str  # pass | fail | abstain | error | score
    value: float | None = None
    reason: str = ""
    confidence: float | None = None


@dataclass(frozen=True)
class JudgeOutcome:
    """One judge on one case (its samples reduced), as plain data."""

    name: str
    kind: str
    status: str  # ok | skipped | error | abstain
    value: float | None = None
    is_bool: bool | None = None
    passed: bool | None = None
    rationale: str = ""
    evidence: str = ""
    error: str | None = None
    score_range: tuple[float, float] | None = None
    duration_ms: int = 0
    cost_usd: float = 0.0
    samples: tuple[SampleAnswer, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)  # JSON values only

    @property
    def scored(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class ArmOutcome:
    """How the subject (or the baseline subject) ran on one case, and its judges."""

    arm: str  # subject | baseline
    status: str  # ok | error
    judges: tuple[JudgeOutcome, ...]
    error: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    duration_ms: int = 0
    cost_usd: float = 0.0  # the subject's own (agent, prompt or loop) spend
    stdout: str = ""
    stderr: str = ""
    workspace: str | None = None  # kept with --keep-workspaces
    record: bytes | None = None  # the outputs record, compressed JSON
    cost_known: bool = True  # False: its agent reported no cost (not in cost_usd)


@dataclass(frozen=True)
class CaseOutcome:
    """Everything one case produced; `pairwise` compares the two arms (or the baseline's)."""

    case_id: str
    case_key: str
    index: int
    arms: tuple[ArmOutcome, ...]
    pairwise: JudgeOutcome | None = None
    duration_ms: int = 0

    @property
    def cost_usd(self) -> float:
        judged = sum(j.cost_usd for arm in self.arms for j in arm.judges)
        paired = self.pairwise.cost_usd if self.pairwise is not None else 0.0
        return judged + paired + sum(arm.cost_usd for arm in self.arms)

    def arm(self, name: str) -> ArmOutcome | None:
        return next((a for a in self.arms if a.arm == name), None)
