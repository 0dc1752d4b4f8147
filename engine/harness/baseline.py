"""Baselines and deltas: "this change improved things" must be a claim against a measured number.

The compare gate runs before the candidate does and refuses (exit 2, nothing run) when the
baseline is missing, partial, measured under other conditions or another input, or when the
subject is unchanged. A delta is a rate difference shown with both Wilson intervals; it never
decides the exit code, which still comes from the candidate's own banding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.harness.banding import Tally
from engine.harness.refusal import Refusal
from engine.harness.subjects import Subject
from engine.model.stats import Rate
from engine.runtime.history import Attempt, History
from engine.runtime.provenance import Provenance, head_content_hash

# Runners whose content is a file in the project: the incumbent is that file at git HEAD.
FILE_RUNNERS = ("loop", "skill")


@dataclass(frozen=True)
class Cell:
    """What a baseline is keyed on, apart from the conditions fingerprint."""

    runner: str
    target: str
    input_hash: str
    content_hash: str
    # `--baseline-of` names a measurement, and it was taken at one git HEAD: rows of the same
    # content measured at other commits are other measurements, not this baseline.
    named: bool = False
    git_head: str | None = None
    git_dirty: bool | None = None
    git_worktree: str | None = None

    def same_code(self, where: Provenance) -> bool:
        """Was the named measurement taken on the code the candidate runs on (same HEAD, same
        uncommitted changes)? Unknown git state (no repository, an unreadable tree) counts as
        the same: nothing shows that the code changed."""
        if not self.named or where.head is None or self.git_head is None or where.dirty is None:
            return True
        if where.head != self.git_head or bool(where.dirty) != bool(self.git_dirty):
            return False
        return (
            where.worktree is None
            or self.git_worktree is None
            or (where.worktree == self.git_worktree)
        )


def lookup_attempt(history: History, ref: str) -> Attempt | None:
    """An attempt id (digits) or an invocation id (its first sample)."""
    if ref.isdigit():
        return history.attempt(int(ref))
    rows = history.invocation(ref)
    return rows[0] if rows else None


def resolve_incumbent(history: History, subject: Subject, baseline_of: str | None) -> Cell:
    """The incumbent a candidate is compared with: `--baseline-of`, else the loop file at HEAD."""
    if baseline_of is not None:
        attempt = lookup_attempt(history, baseline_of)
        if attempt is None:
            raise Refusal(
                f"--baseline-of {baseline_of}: no such attempt or invocation in the history",
                hint="ids are printed by every ll-harness run; see `ll-harness history TARGET`",
            )
        if attempt.runner != subject.runner:
            raise Refusal(
                f"--baseline-of {baseline_of} is a {attempt.runner} measurement, "
                f"not a {subject.runner} one",
                hint="compare like with like: the same runner on both arms",
            )
        return Cell(
            attempt.runner,
            attempt.target,
            attempt.input_hash,
            attempt.target_content_hash,
            named=True,
            git_head=attempt.git_head,
            git_dirty=attempt.git_dirty,
            git_worktree=attempt.git_worktree,
        )
    if subject.runner in FILE_RUNNERS and subject.source_path is not None:
        committed = head_content_hash(subject.source_path)
        if committed is None:
            raise Refusal(
                f"cannot find {subject.source_path} at git HEAD to resolve the incumbent",
                hint="commit the incumbent first, or name it with --baseline-of ATTEMPT_ID",
            )
        return Cell(subject.runner, subject.target, subject.input_hash, committed)
    raise Refusal(
        f"--compare-baseline on a {subject.runner} subject needs --baseline-of ATTEMPT_ID",
        hint=f"a {subject.runner} target is its own text, so name the incumbent's attempt id",
    )


def baseline_rows(
    history: History,
    incumbent: Cell,
    subject: Subject,
    fingerprint: str,
    samples: int,
    where: Provenance,
) -> list[Attempt]:
    """The baseline's authoritative rows under these conditions, or a refusal saying why not.

    The same content is a delta when the named measurement ran on other code: `make test`
    measured before a commit or an edit is the incumbent of `make test` after it."""
    if incumbent.input_hash != subject.input_hash:
        raise Refusal(
            "the baseline was measured on another input than this run",
            hint="pass the same INPUT and --context values on both arms",
        )
    if incumbent.content_hash == subject.content_hash and incumbent.same_code(where):
        raise Refusal(
            "the subject is unchanged since the baseline (same content hash): there is no delta "
            "to measure",
            hint="edit the subject (or the code it runs) first, or use --measure-baseline to "
            "measure this content",
        )
    if subject.stochastic and samples < 2:
        raise Refusal(
            "a delta over one sample of a stochastic subject means nothing",
            hint="use --samples 3 or more on both arms",
        )
    cell = (incumbent.runner, incumbent.target, incumbent.input_hash, incumbent.content_hash)
    if not history.cell_attempts(*cell, limit=1):
        raise Refusal(
            f"no baseline is measured for {incumbent.target!r} at content "
            f"{incumbent.content_hash[:12]}",
            hint="run the incumbent with --measure-baseline (same flags) before changing it",
        )
    # A named one: its HEAD and its uncommitted changes too (a candidate measured later on the
    # same HEAD with an edit is not part of the baseline it was compared with).
    code = (incumbent.git_head, bool(incumbent.git_dirty), incumbent.git_worktree)
    same = history.cell_attempts(
        *cell, conditions_fp=fingerprint, code=code if incumbent.named else None
    )
    if not same:
        raise Refusal(
            "the baseline was measured under other conditions (gates, criterion, judge or "
            "subject model, timeout or sample count differ)",
            hint="re-measure the incumbent with --measure-baseline and exactly these flags",
        )
    graded = Tally.of(r.outcome for r in same).graded
    if graded < samples:
        raise Refusal(
            f"the baseline is partial: {graded} graded of the {samples} samples needed",
            hint="retry its timed-out attempts with --retry-of ID, or re-measure the baseline",
        )
    return same


def measured_baseline(
    history: History, subject: Subject, fingerprint: str, samples: int, where: Provenance
) -> list[Attempt]:
    """Rows already measured for this exact content and conditions at this git HEAD with the
    same uncommitted changes (reused, not re-run). Rows of another HEAD, or of other edits on
    it, are not this project's behaviour: a command's content is its text, so `grep -q ok f`
    measured before f changed would stand in for it forever. A dirty tree whose changes could
    not be fingerprinted, or in a repository whose dirtiness git could not tell (a corrupt
    index, a status past its time limit), reuses nothing."""
    if (where.dirty and where.worktree is None) or (where.head and where.dirty is None):
        return []
    same = history.cell_attempts(
        subject.runner,
        subject.target,
        subject.input_hash,
        subject.content_hash,
        conditions_fp=fingerprint,
        code=(where.head, bool(where.dirty), where.worktree),
    )
    return same if Tally.of(r.outcome for r in same).graded >= samples else []


@dataclass(frozen=True)
class Delta:
    """Candidate rate minus baseline rate, both with intervals; provenance flags, no verdict."""

    baseline: Rate
    candidate: Rate
    baseline_content_hash: str
    baseline_heads: tuple[str, ...]
    candidate_head: str | None

    @classmethod
    def of(cls, rows: Sequence[Attempt], candidate: Tally, candidate_head: str | None) -> Delta:
        heads = tuple(sorted({r.git_head for r in rows if r.git_head}))
        return cls(
            baseline=Tally.of(r.outcome for r in rows).pass_rate,
            candidate=candidate.pass_rate,
            baseline_content_hash=rows[0].target_content_hash if rows else "",
            baseline_heads=heads,
            candidate_head=candidate_head,
        )

    @property
    def difference(self) -> float | None:
        if self.baseline.value is None or self.candidate.value is None:
            return None
        return self.candidate.value - self.baseline.value

    @property
    def other_head(self) -> bool:
        """Provenance only: the baseline was measured at another commit than the candidate."""
        return self.candidate_head is not None and any(
            h != self.candidate_head for h in self.baseline_heads
        )

    @property
    def overlapping(self) -> bool:
        b_low, b_high = self.baseline.interval
        c_low, c_high = self.candidate.interval
        return b_low <= c_high and c_low <= b_high

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline.to_json(),
            "candidate": self.candidate.to_json(),
            "delta": self.difference,
            "intervals_overlap": self.overlapping,
            "baseline_content_hash": self.baseline_content_hash,
            "measured_at_other_head": self.other_head,
        }

    def render(self) -> str:
        diff = "n/a" if self.difference is None else f"{self.difference:+.2f}"
        text = (
            f"Delta     {diff}  (candidate {self.candidate.render()} vs baseline "
            f"{self.baseline.render()})"
        )
        if self.overlapping:
            text += "\n          the intervals overlap: this delta may be noise"
        if self.other_head:
            text += "\n          note: the baseline was measured at a different HEAD"
        return text


def check_retry(
    history: History,
    attempt_id: int,
    subject: Subject,
    fingerprint_at: Callable[[int], str],
    head: str | None = None,
) -> Attempt:
    """The attempt a `--retry-of` supersedes, if it may be retried; else a refusal.

    `fingerprint_at(n)` is this invocation's conditions fingerprint at sample count `n`: a retry
    runs one sample of an invocation that may have asked for several.
    """
    attempt = history.attempt(attempt_id)
    if attempt is None:
        raise Refusal(
            f"--retry-of {attempt_id}: no such attempt in the history",
            hint="see `ll-harness history TARGET` for attempt ids",
        )
    if attempt.superseded_by is not None:
        raise Refusal(
            f"attempt {attempt_id} was already superseded by attempt {attempt.superseded_by}",
            hint=f"if attempt {attempt.superseded_by} timed out too, retry that one",
        )
    if not attempt.timed_out:
        raise Refusal(
            f"attempt {attempt_id} did not time out (it ended {attempt.outcome}); only a "
            "timed-out attempt may be retried",
            hint="run a fresh measurement instead; a retry must not replace a real result",
        )
    same_cell = (attempt.runner, attempt.target, attempt.input_hash) == (
        subject.runner,
        subject.target,
        subject.input_hash,
    )
    if not same_cell:
        raise Refusal(
            f"attempt {attempt_id} measured another subject ({attempt.runner} {attempt.target!r})",
            hint="run the retry with the same runner, target and input as the attempt",
        )
    if attempt.target_content_hash != subject.content_hash:
        raise Refusal(
            f"the subject changed since attempt {attempt_id} (content hash differs)",
            hint="a changed subject needs a fresh measurement, not a retry",
        )
    if attempt.git_head is not None and head is not None and attempt.git_head != head:
        raise Refusal(
            f"the project is at another commit than attempt {attempt_id} "
            f"({attempt.git_head[:12]}, now {head[:12]}): a retry would join a measurement of "
            "other code",
            hint="check out that commit to retry, or run a fresh measurement at this one",
        )
    if fingerprint_at(attempt.samples_requested) != attempt.conditions_fp:
        raise Refusal(
            f"attempt {attempt_id} was measured under other conditions than this retry",
            hint="repeat the original flags (gates, criterion, models, timeout) exactly",
        )
    return attempt
