"""What a run shows on stderr while it works (terminal IO), fed by the run's events.

`Progress` is a `Recorder` that passes every event on to the run store and updates the display:
on a TTY one live line (state, step n/max, elapsed, cost) rewritten in place; otherwise one plain
line per routed step; with `--quiet` (or `--json` on a pipe) nothing. stdout is never touched.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, TextIO

from engine.model.ports import Recorder
from engine.model.terminal import printable

Mode = Literal["live", "lines", "quiet"]

_REFRESH_SECONDS = 0.2


def choose_mode(*, quiet: bool, stream: TextIO) -> Mode:
    if quiet:
        return "quiet"
    return "live" if stream.isatty() else "lines"


class Progress:
    """A tee in front of the run's recorder; only top-level (depth 0) events are displayed."""

    def __init__(
        self,
        inner: Recorder,
        *,
        run_id: str,
        mode: Mode,
        max_steps: int,
        cost: Callable[[], float] = lambda: 0.0,
        stream: TextIO = sys.stderr,
    ) -> None:
        self.inner = inner
        self.run_id = run_id
        self.mode = mode
        self.max_steps = max_steps
        self.cost = cost
        self.stream = stream
        self.loop = ""
        self.state = ""
        self.step = 0
        self.output = ""  # the last action's output (preview), shown with its route
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None
        self._done = threading.Event()

    def emit(self, event: str, **fields: Any) -> None:
        self.inner.emit(event, **fields)
        if self.mode == "quiet" or fields.get("depth", 0) != 0:
            return
        if event == "loop_start":
            self.loop = str(fields.get("loop", ""))
            if self.mode == "lines":
                self._line(f"run {self.run_id}: loop {self.loop}")
            else:
                self._start_ticker()
        elif event == "state_enter":
            self.state, self.step = str(fields.get("state", "")), int(fields.get("step", 0))
            if self.mode == "live":
                self._redraw()
        elif event == "action_complete":
            self.output = str(fields.get("output") or "")
        elif event == "route" and self.mode == "lines":
            target = fields.get("target") or (
                "(loop timeout)" if fields.get("timeout") else "(no route)"
            )
            verdict = str(fields.get("verdict"))
            note = _last_line(self.output, skip=verdict)
            self.output = ""
            self._line(
                f"  step {fields.get('step')}/{self.max_steps}  {fields.get('state')} "
                f"→ {verdict} → {target}" + (f"   · {note}" if note else "")
            )
        elif event == "retry" and self.mode == "lines" and fields.get("exhausted"):
            self._line(f"  retries of {fields.get('state')} exhausted")
        elif event == "loop_complete":
            self.close()

    def close(self) -> None:
        """Stop the live line and clear it, so the summary starts on a clean line."""
        self._done.set()
        if self.mode == "live":
            with self._lock:
                self.stream.write("\r\x1b[K")
                self.stream.flush()

    def _start_ticker(self) -> None:
        """Keep elapsed time moving while a long action runs (TTY only)."""
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._done.wait(_REFRESH_SECONDS):
            self._redraw()

    def _redraw(self) -> None:
        if self._done.is_set():
            return
        elapsed = time.monotonic() - self.started
        text = (
            f"⟳ {self.loop} · {self.state} · step {self.step}/{self.max_steps} · "
            f"{_duration(elapsed)} · ${self.cost():.4f}"
        )
        with self._lock:
            self.stream.write("\r\x1b[K" + printable(text))
            self.stream.flush()

    def _line(self, text: str) -> None:
        self.stream.write(printable(text) + "\n")
        self.stream.flush()


def _last_line(output: str, *, skip: str) -> str:
    """The last meaningful output line (not the bare verdict a classify state printed)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if lines and lines[-1] == skip:
        lines.pop()
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= 72 else line[:69] + "..."


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
