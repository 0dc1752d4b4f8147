"""The run directory on disk: state.json swaps, the event log, timestamps.

(engine/runtime/runstore.py)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engine.runtime.runstore import RunStore, new_run_id, now_iso, read_state


def test_state_json_holds_exactly_the_last_boundary_when_it_shrinks(tmp_path: Path) -> None:
    """The temp file is rewritten in place; a shorter state must not keep the longer tail."""
    store = RunStore.create(tmp_path)
    boundaries: list[dict[str, Any]] = [
        {"steps": 1, "prev": {"output": "x" * 5000}},
        {"steps": 2, "prev": {"output": "short"}},
        {"steps": 3, "prev": {"output": "y" * 300}},
        {"steps": 4, "prev": None},
    ]
    for data in boundaries:
        store.save_state(data)
        assert json.loads(store.state_path.read_text(encoding="utf-8")) == data
        assert store.load_state() == data
    store.close()
    assert read_state(store.state_path) == boundaries[-1]


def test_a_closed_run_leaves_no_temp_file(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path)
    for step in range(3):
        store.save_state({"steps": step})
    store.emit("loop_complete", step=3)
    store.close()
    names = sorted(p.name for p in store.dir.iterdir())
    assert names == ["artifacts", "events.jsonl", "outputs", "state.json"]


def test_a_reopened_run_writes_over_a_stale_temp_file(tmp_path: Path) -> None:
    """A run killed between write and swap leaves a torn temp; the resumed store copes."""
    store = RunStore.create(tmp_path)
    store.save_state({"steps": 1})
    (store.dir / "state.json.tmp").write_text('{"steps": 2, "torn', encoding="utf-8")
    again = RunStore.open(tmp_path, store.run_id)
    again.save_state({"steps": 2})
    assert again.load_state() == {"steps": 2}


def test_events_are_on_disk_before_the_run_waits_and_at_every_boundary(tmp_path: Path) -> None:
    """Lines are written where the run may wait (an action starts, a flush before a judge that
    may wait) and at a state boundary: a reader sees them before any wait, and a killed run
    loses none it waited on."""
    store = RunStore.create(tmp_path)

    def on_disk() -> list[dict[str, object]]:
        if not store.events_path.exists():
            return []
        text = store.events_path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines()]

    store.emit("state_enter", depth=0, step=1, state="tick")
    assert on_disk() == []
    store.emit("action_start", depth=0, step=1, state="tick", action="true")
    assert [e["event"] for e in on_disk()] == ["state_enter", "action_start"]
    assert on_disk()[0]["run_id"] == store.run_id
    store.emit("action_complete", depth=0, step=1, state="tick", exit_code=0)
    assert len(on_disk()) == 2  # judged in microseconds: written with the boundary
    store.flush()  # what the interpreter calls before an evaluator that may wait
    assert len(on_disk()) == 3
    store.emit("evaluate", depth=0, step=1, state="tick", verdict="yes")
    store.emit("route", depth=0, step=1, state="tick", verdict="yes", target="done", note="é\n")
    assert len(on_disk()) == 3
    store.save_state({"current": "done"})
    assert [e["event"] for e in on_disk()][3:] == ["evaluate", "route"]
    assert on_disk()[4]["note"] == "é\n"
    store.emit("loop_complete", depth=0, step=1)
    store.close()
    assert on_disk()[-1]["event"] == "loop_complete"


def test_read_state_refuses_what_is_not_a_state(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError):
        read_state(path)
    path.write_text('{"steps": 1', encoding="utf-8")
    with pytest.raises(ValueError):
        read_state(path)
    with pytest.raises(OSError):
        read_state(tmp_path / "missing.json")


def test_timestamps_are_utc_milliseconds_and_track_the_clock() -> None:
    before = datetime.now(UTC)
    stamps = [now_iso() for _ in range(3)]
    time.sleep(1.05)  # across a second boundary: the cached part must move on
    stamps.append(now_iso())
    after = datetime.now(UTC)
    for stamp in stamps:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= parsed <= after
    assert stamps == sorted(stamps)
    assert stamps[-1][:19] != stamps[0][:19]


def test_run_ids_sort_by_time_and_do_not_collide() -> None:
    ids = {new_run_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", run_id) for run_id in ids)


def test_events_from_many_threads_are_each_written_once(tmp_path: Path) -> None:
    """Judge and model-call threads emit while others flush: no line is lost or doubled."""
    store = RunStore.create(tmp_path)
    threads, per_thread = 8, 300

    def emit_many(n: int) -> None:
        for i in range(per_thread):
            store.emit("judge" if i % 3 == 0 else "note", depth=0, thread=n, i=i)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        workers = [threading.Thread(target=emit_many, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    store.close()
    lines = store.events_path.read_text(encoding="utf-8").splitlines()
    seen = sorted((e["thread"], e["i"]) for e in map(json.loads, lines))
    assert seen == [(n, i) for n in range(threads) for i in range(per_thread)]


def test_state_json_is_whole_after_every_boundary_and_no_descriptor_outlives_the_store(
    tmp_path: Path,
) -> None:
    """The two files' descriptors stay open between boundaries and trade places at each swap;
    content that shrinks is cut, content that grows is not left with a tail of the older one."""
    store = RunStore.create(tmp_path)
    for step, pad in enumerate([50, 5, 500, 0, 80, 3, 3, 900]):
        data = {"steps": step, "pad": "x" * pad}
        store.save_state(data)
        assert store.load_state() == data
    held = [link for link in _links() if link.startswith(str(store.dir))]
    assert len(held) == 2  # state.json and the temp, open for the next boundary
    store.close()
    assert not [link for link in _links() if link.startswith(str(store.dir))]
    assert sorted(p.name for p in store.dir.iterdir()) == ["artifacts", "outputs", "state.json"]


def _links() -> list[str]:
    """What this process's descriptors point at."""
    links = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
    return links
