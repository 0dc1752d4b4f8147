"""The files behind record, replay and cache: `llm.jsonl` of a run and `.loops/llm-cache/`.

Every call is keyed by `request_hash(request, sample)`: sha256 of the canonical JSON of the full
request plus the sample index, so the N samples of one judge are N distinct keys. Replay serves a
key's recorded answers in the order they were recorded (the k-th call with a key gets the k-th
entry); the cache keeps only successful answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from engine.load.bounded import read_capped
from engine.load.project import UnsafePath, ensure_dir, loops_dir, open_file
from engine.model.errors import PreflightError

LOG_NAME = "llm.jsonl"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_hash(request: Mapping[str, Any], sample: int) -> str:
    """The identity of a call: the full request and which sample it is."""
    payload = canonical_json({"request": request, "sample": sample})
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CallLog:
    """Appends one JSON line per call to `<run_dir>/llm.jsonl` (thread-safe, flushed per line)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOG_NAME
        self._lock = threading.Lock()

    def append(self, entry: Mapping[str, Any]) -> None:
        line = canonical_json(entry) + "\n"
        with self._lock:
            ensure_dir(self.path.parent)
            fd = open_file(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            with os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace") as handle:
                handle.write(line)


def mark_abandoned(run_dir: Path, first: int) -> None:
    """Say in `<run_dir>/llm.jsonl` that its calls from position `first` on (all of them
    logged so far) belong to a state that a resume runs again: a replay of the run skips them,
    and replays the calls the run went on with. A position, not a count: a resume that died
    before the run went on is marked again with the same calls, and no others."""
    if (run_dir / LOG_NAME).is_file():  # a log someone removed is not started by a marker
        CallLog(run_dir).append({"ts": time.time(), "abandoned_from": first})


def spent_since(run_dir: Path, since: float) -> float:
    """What the calls in `<run_dir>/llm.jsonl` logged after `since` (a `time.time()`) cost.

    A resumed run continues from its last state boundary, but the calls the killed session
    made after it were billed all the same (the state that runs again makes them anew); this
    is their cost. The log is in call order, so it is read from its end back to the first
    entry at or before `since`: a long run's log is not read whole.
    """
    try:
        handle = (run_dir / LOG_NAME).open("rb")
    except OSError:
        return 0.0
    total = 0.0
    with handle:
        for line in _lines_from_end(handle):
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line torn by the crash
            if not isinstance(entry, dict):
                continue
            ts, cost = _number(entry.get("ts")), _number(entry.get("cost_usd"))
            if ts is not None and ts <= since:
                break
            if cost is not None and 0 <= cost < float("inf"):
                total += cost
    return total


def _number(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (booleans included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _lines_from_end(handle: BinaryIO, block: int = 1 << 20) -> Iterator[bytes]:
    """The non-empty lines of a file, last first, read in blocks from its end."""
    position = handle.seek(0, os.SEEK_END)
    rest = b""
    while position > 0:
        size = min(block, position)
        position -= size
        handle.seek(position)
        lines = (handle.read(size) + rest).split(b"\n")
        rest = lines[0]  # may continue in the block before
        yield from (line for line in reversed(lines[1:]) if line)
    if rest:
        yield rest


def is_answer(body: Any) -> bool:
    """True for the shape every reader of an answer relies on: an object whose `content` is a
    list. A log or cache file edited by hand can hold anything, and a bad shape crashed the
    reader (`content: 5`)."""
    return isinstance(body, dict) and isinstance(body.get("content"), list)


def _read_calls(path: Path) -> list[dict[str, Any]]:
    """The calls of an LLM log in the order they were made, without those a resume marked
    abandoned (`mark_abandoned`: positions among all the calls of the log) and a last line the
    crash cut short; `PreflightError` for a line in the middle that is not JSON."""
    calls: list[dict[str, Any]] = []
    abandoned: set[int] = set()
    lines = path.read_bytes().split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)  # bytes that are not UTF-8 are a ValueError too
        except ValueError as exc:
            if number == len(lines):  # no newline after it: a line the crash cut short
                break
            raise PreflightError(f"cannot replay: {path}:{number} is not JSON ({exc})") from exc
        if not isinstance(entry, dict):
            continue
        first = entry.get("abandoned_from")  # `mark_abandoned`: their state ran again
        if type(first) is int and first >= 0:
            abandoned.update(range(first, len(calls)))
        elif isinstance(entry.get("hash"), str):
            response = entry.get("response")
            if response is not None and not is_answer(response):
                raise PreflightError(
                    f"cannot replay: {path}:{number} records a response that is not a "
                    "Messages API answer (its `content` is not a list)",
                    hint="record the run again, or restore the line from the original log",
                )
            calls.append(entry)
    return [entry for position, entry in enumerate(calls) if position not in abandoned]


class ReplayLog:
    """The recorded calls of an earlier run, served by request hash in recorded order."""

    def __init__(self, entries: Mapping[str, deque[dict[str, Any]]], source: Path) -> None:
        self._entries = entries
        self.source = source
        self._lock = threading.Lock()

    @classmethod
    def load(cls, run_dir: Path) -> ReplayLog:
        """Read `<run_dir>/llm.jsonl`; a missing or unreadable log is a `PreflightError`."""
        path = run_dir / LOG_NAME
        if not path.is_file():
            raise PreflightError(
                f"cannot replay: {path} does not exist",
                hint="pass the run directory (or id) of a run that made LLM calls",
            )
        entries: dict[str, deque[dict[str, Any]]] = {}
        for entry in _read_calls(path):
            entries.setdefault(entry["hash"], deque()).append(entry)
        return cls(entries, path)

    def skip_replayed(self, run_dir: Path) -> None:
        """Take, in order, the answers the run in `run_dir` has already replayed from this log
        (a resumed replay): its next call gets the answer after them, not the first again.
        Taking from a hash with no answers left is a no-op, as the miss it replays was."""
        path = run_dir / LOG_NAME
        if not path.is_file():
            return  # nothing replayed yet
        for entry in _read_calls(path):
            if entry.get("source") == "replay":
                self.take(entry["hash"])

    def take(self, key: str) -> dict[str, Any] | None:
        """The next recorded entry for `key`, or None when the log has no (more) answers for it."""
        with self._lock:
            queue = self._entries.get(key)
            return queue.popleft() if queue else None


MAX_CACHE_ENTRY_BYTES = 64 * 1024 * 1024
"""A cached answer is far smaller; a larger entry is a miss, not read into memory."""


class ResponseCache:
    """Successful answers on disk, one file per request hash; errors are never stored."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def get(self, key: str, request: Mapping[str, Any]) -> dict[str, Any] | None:
        path = self.directory / f"{key}.json"
        try:  # not a regular file (a FIFO would block the run) or not JSON: a miss
            stored = json.loads(read_capped(path, MAX_CACHE_ENTRY_BYTES).decode("utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(stored, dict) or stored.get("request") != json.loads(
            canonical_json(request)
        ):
            return None
        response = stored.get("response")
        return response if is_answer(response) else None

    def put(self, key: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        """Store an answer atomically; a cache that cannot be written is skipped, not fatal."""
        path = self.directory / f"{key}.json"
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            ensure_dir(self.directory)
            fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(canonical_json({"request": request, "response": response}))
            os.replace(tmp, path)
        except (OSError, UnsafePath):
            tmp.unlink(missing_ok=True)


def cache_dir(run_dir: Path | None) -> Path:
    """`LL_LLM_CACHE_DIR`, else the `.loops/llm-cache/` next to `.loops/runs/<id>/`, else cwd's."""
    env = os.environ.get("LL_LLM_CACHE_DIR", "").strip()
    if env:
        return Path(env)
    if run_dir is not None and run_dir.parent.name == "runs" and run_dir.parent.parent.name:
        return run_dir.parent.parent / "llm-cache"
    return loops_dir() / "llm-cache"
