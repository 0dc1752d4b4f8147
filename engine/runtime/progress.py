"""What a run shows on stderr while it works (terminal IO), fed by the run's events.

`Progress` listens to a run's events (`on_event`) and updates the display: on a TTY one live
line (state, step n/max, elapsed, cost) rewritten in place; otherwise one plain line per routed
step; with `--quiet` (or `--json` on a pipe) nothing. stdout is never touched. Colour only when
the caller allows it (a terminal, and no `NO_COLOR`).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Literal, TextIO

from engine.model.ports import Event
from engine.model.terminal import printable, redraws_in_place
from engine.model.timefmt import duration

Mode = Literal["live", "lines", "quiet"]

_REFRESH_SECONDS = 0.2
_BOLD, _DIM, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"


def choose_mode(*, quiet: bool, stream: TextIO) -> Mode:
    if quiet:
        return "quiet"
    return "live" if redraws_in_place(stream) else "lines"


class Progress:
    """The display of one run; only top-level (depth 0) events are shown."""

    def __init__(self, *, mode: Mode, colour: bool = False, stream: TextIO | None = None) -> None:
        self.mode = mode
        self.colour = colour
        self.stream = sys.stderr if stream is None else stream  # the one current at the call
        self.run_id = ""
        self.loop = ""
        self.max_steps = 0
        self.state = ""
        self.step = 0
        self.cost = 0.0  # spent by earlier sessions of a resumed run
        self.session_cost = 0.0  # the LLM services' total in this session
        self.agent_cost = 0.0  # what agent CLIs reported spending in this session
        self.output = ""  # the last action's output (preview), shown with its route
        self.output_cut = False  # `output` is a tail whose first line was cut at its start
        self.uncosted: set[str] = set()  # states whose agent CLI reported no cost (told once)
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None
        self._done = threading.Event()

    def __call__(self, event: Event) -> None:
        fields = event.fields
        if event.event == "llm_call":  # children's calls count too: one bill per run
            self.session_cost = float(fields.get("run_cost_usd") or self.session_cost)
        elif event.event == "action_complete":  # an agent CLI's own spend (no llm_call)
            self.agent_cost += float(fields.get("agent_cost_usd") or 0.0)
            if fields.get("agent_cost_known") is False and self.mode != "quiet":
                self._uncosted(str(fields.get("state", "")))
        if self.mode == "quiet" or event.depth != 0:
            return
        name = event.event
        if name in ("loop_start", "loop_resume"):
            self.run_id = event.run_id
            self.loop = str(fields.get("loop", ""))
            self.max_steps = int(fields.get("max_steps") or 0)
            self.step = int(fields.get("step") or 0)
            self.cost = float(fields.get("cost_usd") or 0.0)
            if self.mode == "live":
                self._start_ticker()
            elif name == "loop_start":
                self._line(f"run {self.run_id}: loop {self.loop}")
            else:
                where = fields.get("state", "")
                self._line(f"run {self.run_id}: loop {self.loop}, resumed at {where}")
        elif name == "state_enter":
            self.state, self.step = str(fields.get("state", "")), int(fields.get("step", 0))
            if self.mode == "live":
                self._redraw()
        elif name == "action_complete":
            # the output's own end when the preview (its start) does not reach it; that tail
            # starts anywhere in a line, so its first line is only the end of one
            tail = fields.get("output_tail")
            self.output = str(tail or fields.get("output") or "")
            self.output_cut = bool(tail)
        elif name == "route" and self.mode == "lines":
            target = fields.get("target") or (
                "(loop timeout)" if fields.get("timeout") else "(no route)"
            )
            verdict = str(fields.get("verdict"))
            note = _last_line(self.output, skip=verdict, cut=self.output_cut)
            self.output, self.output_cut = "", False
            self._line(
                f"  step {fields.get('step')}/{self.max_steps}  {fields.get('state')} "
                f"→ {verdict} → {target}" + (f"   · {note}" if note else "")
            )
        elif name == "retry" and self.mode == "lines" and fields.get("exhausted"):
            self._line(f"  retries of {fields.get('state')} exhausted")
        elif name == "loop_complete":
            self.close()

    def _uncosted(self, state: str) -> None:
        """Say once per state that an agent's spend is in no total (a sub-loop's too: the
        run's `max_cost_usd` cannot see it either)."""
        if state in self.uncosted:
            return
        self.uncosted.add(state)
        note = (
            f"  note: state {state}: the agent reported no cost (no stream-json result with "
            "total_cost_usd); its spend is not in the run's cost nor checked by max_cost_usd"
        )
        with self._lock:
            if self.mode == "live":
                self.stream.write("\r\x1b[K")
            self._line(note)

    def close(self) -> None:
        """Stop the live line and clear it, so the summary starts on a clean line."""
        if self._done.is_set():
            return
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
        elapsed = duration(time.monotonic() - self.started)
        state = printable(self.state)  # names come from the loop file: shown, not obeyed
        state = f"{_BOLD}{state}{_RESET}" if self.colour else state
        cost = self.cost + self.session_cost + self.agent_cost
        rest = f"step {self.step}/{self.max_steps} · {elapsed} · ${cost:.4f}"
        if self.colour:
            rest = f"{_DIM}{rest}{_RESET}"
        text = f"⟳ {printable(self.loop)} · {state} · {rest}"
        with self._lock:
            self.stream.write("\r\x1b[K" + text)
            self.stream.flush()

    def _line(self, text: str) -> None:
        self.stream.write(printable(text) + "\n")
        self.stream.flush()


def _last_line(output: str, *, skip: str, cut: bool = False) -> str:
    """The last meaningful output line (not the bare verdict a classify state printed). With
    `cut`, the output's first line lacks its start: it is quoted by its end, after `...`."""
    first = output.splitlines()[0].strip() if output.strip() else ""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if lines and lines[-1] == skip:
        lines.pop()
    if not lines:
        return ""
    line = lines[-1]
    if cut and len(lines) == 1 and line == first:
        return "..." + line[-69:]
    return line if len(line) <= 72 else line[:69] + "..."
