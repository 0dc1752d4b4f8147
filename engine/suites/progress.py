"""What a suite shows on stderr while it runs (terminal IO; stdout carries only the report).

On a TTY one live line, rewritten in place: cases done / total, the running pass rate (or mean)
of the first judges, errors, cost and an ETA. Otherwise plain lines: one per case for small
suites, else one every 5% (and at least every 10 s), so a CI log stays readable. `quiet`: none.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Literal, TextIO

from engine.model.terminal import redraws_in_place
from engine.model.timefmt import counted, duration
from engine.suites.spec import CaseOutcome, JudgeOutcome

Mode = Literal["live", "lines", "quiet"]
EVERY_CASE_UP_TO = 50
LINE_SECONDS = 10.0
SHOWN_JUDGES = 3
_REFRESH = 0.25


def choose_mode(*, quiet: bool, stream: TextIO) -> Mode:
    if quiet:
        return "quiet"
    return "live" if redraws_in_place(stream) else "lines"


class SuiteProgress:
    """Fed one `CaseOutcome` at a time by the driver (a single thread)."""

    def __init__(
        self,
        *,
        suite: str,
        run_id: str,
        total: int,
        done_before: int = 0,
        mode: Mode = "lines",
        cost: Callable[[], float] = lambda: 0.0,
        stream: TextIO = sys.stderr,
    ) -> None:
        self.suite, self.run_id, self.total, self.mode = suite, run_id, total, mode
        self.done = done_before
        self.before = done_before
        self.errors = 0
        self.cost = cost
        self.stream = stream
        self.started = time.monotonic()
        self.last_line = self.started
        self.last_step = -1
        self.tallies: dict[str, list[float]] = {}  # judge -> [sum of values, count]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def start(self, resumed: int = 0) -> None:
        if self.mode == "quiet":
            return
        note = f" (resuming: {resumed} done)" if resumed else ""
        if self.mode == "lines":
            total = counted(self.total, "case")
            self._write(f"suite {self.suite}: run {self.run_id}, {total}{note}\n")
        else:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def update(self, outcome: CaseOutcome) -> None:
        with self._lock:
            self.done += 1
            arm = outcome.arm("subject")
            if arm is not None and arm.status == "error":
                self.errors += 1
            for judge in arm.judges if arm is not None else ():
                if judge.status == "ok" and judge.value is not None:
                    tally = self.tallies.setdefault(judge.name, [0.0, 0.0])
                    tally[0] += judge.value
                    tally[1] += 1
        if self.mode == "lines":
            self._plain(outcome)
        elif self.mode == "live":
            self._redraw()

    def close(self) -> None:
        self._stop.set()
        if self.mode == "live":
            with self._lock:
                self._put("\r\x1b[K")

    # -----------------------------------------------------------------------------------------

    def _plain(self, outcome: CaseOutcome) -> None:
        now = time.monotonic()
        step = int(self.done * 20 / max(1, self.total))
        small = self.total <= EVERY_CASE_UP_TO
        if not (small or step != self.last_step or now - self.last_line >= LINE_SECONDS):
            return
        self.last_step, self.last_line = step, now
        arm = outcome.arm("subject")
        if small and arm is not None:
            passed = sum(1 for j in arm.judges if j.passed)
            scored = sum(1 for j in arm.judges if j.status == "ok")
            unscored = [
                (sum(1 for j in arm.judges if j.status in statuses), word)
                for statuses, word in ((("error", "abstain"), "errored"), (("skipped",), "skipped"))
            ]
            detail = (
                f"error: {arm.error}"
                if arm.status == "error"
                else f"{passed}/{scored} judges passed"
                + "".join(f", {n} {word}" for n, word in unscored if n)
            )
            if outcome.pairwise is not None and arm.status != "error":
                compared = _pairwise_word(outcome.pairwise)
                detail = compared if not arm.judges else f"{detail}, {compared}"
            self._write(f"  case {self.done}/{self.total}  {outcome.case_id}  {detail}\n")
        else:
            self._write(f"  {self._status()}\n")

    def _status(self) -> str:
        parts = [f"{self.done}/{counted(self.total, 'case')}"]
        for name, (total, count) in list(self.tallies.items())[:SHOWN_JUDGES]:
            if count:
                parts.append(f"{name} {total / count:.2f}")
        if self.errors:
            parts.append(f"{self.errors} errored")
        cost = self.cost()
        if cost:
            parts.append(f"${cost:.4f}")
        parts.append(self._eta())
        return " · ".join(parts)

    def _eta(self) -> str:
        elapsed = time.monotonic() - self.started
        fresh = self.done - self.before
        left = self.total - self.done
        if fresh <= 0 or left <= 0:
            return duration(elapsed)
        return f"{duration(elapsed)}, ETA {duration(elapsed / fresh * left)}"

    def _tick(self) -> None:
        while not self._stop.wait(_REFRESH):
            self._redraw()

    def _redraw(self) -> None:
        if self._stop.is_set():
            return
        with self._lock:
            self._put(f"\r\x1b[K⟳ {self.suite} · {self._status()}")

    def _write(self, text: str) -> None:
        with self._lock:
            self._put(text)

    def _put(self, text: str) -> None:
        """Write to the stream; a closed one (a pipe whose reader left) silences the display
        instead of ending the suite."""
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.mode = "quiet"
            self._stop.set()


def _pairwise_word(judge: JudgeOutcome) -> str:
    """How the pairwise comparison of one case went: `preference: win` (tie, loss, error)."""
    if judge.status != "ok" or judge.value is None:
        return f"{judge.name}: {judge.status}"
    word = {1.0: "win", 0.5: "tie", 0.0: "loss"}.get(judge.value, f"{judge.value:g}")
    return f"{judge.name}: {word}"
