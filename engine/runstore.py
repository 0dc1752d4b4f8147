"""The run directory `.loops/runs/<run_id>/` (IO): state.json, events.jsonl, outputs/, artifacts/.

`state.json` is replaced atomically (temp file + `os.replace`) at every state boundary, so a crash
leaves either the previous or the next boundary, never half a file. `events.jsonl` is appended
one JSON object per line and flushed per event; nothing is accumulated in memory, so a run of
100,000 steps costs no more memory than a run of ten. `llm.jsonl` belongs to the LLM layer.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

RUNS_DIR = Path(".loops") / "runs"
# Events after which the log is flushed at once: the run may block (an action, an LLM call) or end.
_FLUSH_AFTER = frozenset({"loop_start", "action_start", "llm_call", "loop_complete", "loop_resume"})


def new_run_id() -> str:
    """Sortable by start time and unique: `20261130-122301-a1b2c3` (UTC)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def runs_root(cwd: Path | None = None) -> Path:
    return (cwd or Path.cwd()) / RUNS_DIR


class RunStore:
    """One run's directory; also the `Recorder` the interpreter emits events to."""

    def __init__(self, directory: Path, run_id: str) -> None:
        self.run_id = run_id
        self.dir = directory
        self.outputs_dir = directory / "outputs"
        self.artifacts_dir = directory / "artifacts"
        self.state_path = directory / "state.json"
        self.events_path = directory / "events.jsonl"
        self._events: IO[str] | None = None
        self._dumps = json.JSONEncoder(
            ensure_ascii=False, separators=(",", ":"), default=_jsonable
        ).encode

    @classmethod
    def create(cls, root: Path, run_id: str | None = None) -> RunStore:
        """Make a fresh run directory under `root` (normally `.loops/runs`)."""
        run_id = run_id or new_run_id()
        store = cls(root / run_id, run_id)
        store.artifacts_dir.mkdir(parents=True, exist_ok=False)
        store.outputs_dir.mkdir()
        return store

    @classmethod
    def open(cls, root: Path, run_id: str) -> RunStore:
        """An existing run directory (to resume it or read it)."""
        return cls(root / run_id, run_id)

    def emit(self, event: str, **fields: Any) -> None:
        """Append one event line. Lines are flushed before anything that can block or end the
        run (an action starting, the end) and at every state boundary (`save_state`), so the
        log on disk is never behind state.json; no fsync."""
        if self._events is None:
            self._events = self.events_path.open("a", encoding="utf-8")
        record = {"ts": now_iso(), "event": event, "run_id": self.run_id, **fields}
        self._events.write(self._dumps(record) + "\n")
        if event in _FLUSH_AFTER:
            self._events.flush()

    def flush(self) -> None:
        if self._events is not None:
            self._events.flush()

    def save_state(self, data: dict[str, Any]) -> None:
        """Flush the events, then replace state.json atomically."""
        self.flush()
        temp = self.state_path.with_name("state.json.tmp")
        temp.write_text(self._dumps(data), encoding="utf-8")
        os.replace(temp, self.state_path)

    def load_state(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.state_path.read_text(encoding="utf-8"))
        return data

    def write_output(self, name: str, text: str) -> Path:
        """Keep a whole output (too big for memory copies) in `outputs/`; returns its path."""
        path = self.outputs_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def close(self) -> None:
        if self._events is not None:
            self._events.close()
            self._events = None


def _jsonable(value: Any) -> Any:
    """JSON for the odd non-JSON value (tuples are lists already; sets, paths, mappings)."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if hasattr(value, "items"):
        return dict(value.items())
    return str(value)
