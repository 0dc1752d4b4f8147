"""What a migration did, per file: notes about keys not kept, blockers, the written file's
validation. Rendered as text for people and as JSON (`--format json`) for scripts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from engine.model.errors import Diagnostic

Kind = Literal["dropped", "changed", "blocker"]
Status = Literal["converted", "unchanged", "blocked", "skipped", "failed"]


@dataclass(frozen=True)
class Note:
    """One thing the converter could not keep as it was, or changed on purpose, and why."""

    kind: Kind
    where: str  # `states.fix.on_handoff`, `the loop`, ...
    message: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "message": self.message}


@dataclass
class FileReport:
    """One input file: where it went, what was lost on the way, and whether the result loads."""

    source: str
    output: str = ""
    role: str = "loop"  # loop | library
    status: Status = "converted"
    notes: list[Note] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    reason: str = ""  # why a file was skipped or failed
    counted: bool = True  # False: skipped on purpose (not a file to convert), exit code unaffected

    def note(self, kind: Kind, where: str, message: str) -> None:
        if not any(n.where == where and n.message == message for n in self.notes):
            self.notes.append(Note(kind, where, message))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def blockers(self) -> list[str]:
        """What keeps the written loop from validating: blocker notes, then its errors."""
        found = [f"{n.where}: {n.message}" for n in self.notes if n.kind == "blocker"]
        found += [f"{d.code} {d.path or 'the loop'}: {d.message}" for d in self.errors]
        return found

    @property
    def valid(self) -> bool | None:
        """Whether the written file validates; None for a library, which `ll-loop validate`
        checks only through a loop that imports it."""
        if self.role == "library":
            return None
        return bool(self.output) and not self.errors and self.status != "failed"

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "output": self.output,
            "role": self.role,
            "status": self.status,
            "valid": self.valid,
            "reason": self.reason,
            "notes": [n.to_json() for n in self.notes],
            "diagnostics": [{"file": d.file, **d.to_json()} for d in self.diagnostics],
            "blockers": self.blockers,
        }


@dataclass
class MigrationReport:
    """Every file of one `ll-loop migrate` call."""

    files: list[FileReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every file converted cleanly, or was left alone on purpose."""
        return all(f.status in ("converted", "unchanged") or not f.counted for f in self.files)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for item in self.files:
            out[item.status] = out.get(item.status, 0) + 1
        return out

    def to_json(self) -> dict[str, object]:
        return {"files": [f.to_json() for f in self.files], "summary": self.counts()}

    def render(self, *, verbose: bool = False) -> str:
        """The text report: one block per file, notes and blockers indented under it."""
        lines: list[str] = []
        for item in self.files:
            head = f"{item.source} → {item.output}" if item.output else item.source
            label = {
                "converted": "ok",
                "unchanged": "unchanged",
                "blocked": "BLOCKED",
                "skipped": "skipped",
                "failed": "FAILED",
            }[item.status]
            if item.role == "library" and item.status in ("converted", "unchanged"):
                label += " (library)"
            lines.append(f"{label:9} {head}")
            if item.reason:
                lines.append(f"          {item.reason}")
            for note in item.notes:
                if note.kind == "changed" and not verbose:
                    continue
                lines.append(f"          {note.kind}: {note.where}: {note.message}")
            for diagnostic in item.errors:
                lines.append(f"          error: {diagnostic.render()}")
        counts = self.counts()
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        lines.append(f"{len(self.files)} file(s): {summary}")
        return "\n".join(lines)
