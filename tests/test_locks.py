"""Scope locks: overlap, fail-fast, FIFO queueing, reaping, pid reuse, lease inheritance.

Holders are real processes (`tests/locks_helpers.py`) sharing a real `.loops/locks/` registry.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.model.errors import LockConflict
from engine.runtime.locks import (
    LEASE_ENV,
    PATHS_ENV,
    Record,
    Registry,
    acquire_scope,
    holders,
    overlap,
    process_alive,
    process_start_time,
    scope_paths,
    within,
)
from tests.runs_helpers import wait_until

HELPER = Path(__file__).with_name("locks_helpers.py")


def start(root: Path, run_id: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HELPER), str(root), run_id, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


wait_for = functools.partial(wait_until, timeout=30.0, every=0.02)


def registered(root: Path, run_id: str, *, holding: bool | None = None) -> bool:
    return any(
        r.run_id == run_id and (holding is None or r.holding == holding)
        for r in Registry(root).records()
    )


# --- pure parts ------------------------------------------------------------------------------


def test_scope_paths_resolve_against_root_and_default_to_the_root(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    assert scope_paths(tmp_path, None) == (str(root),)
    assert scope_paths(tmp_path, []) == (str(root),)
    assert scope_paths(tmp_path, ["src/../src/a", "docs/"]) == (
        str(root / "docs"),
        str(root / "src" / "a"),
    )


def test_overlap_is_same_path_or_containment_not_a_shared_prefix() -> None:
    assert overlap(["/p/src"], ["/p/src"]) == "/p/src"
    assert overlap(["/p/src"], ["/p/src/a"]) == "/p/src/a"
    assert overlap(["/p/src/a/b"], ["/p"]) == "/p/src/a/b"
    assert overlap(["/p/src"], ["/p/srcx"]) is None
    assert overlap(["/p/a", "/p/b"], ["/p/c"]) is None
    assert within(["/p/src/a", "/p/src"], ["/p/src"])
    assert not within(["/p/src", "/p/docs"], ["/p/src"])


def test_start_time_identifies_this_process() -> None:
    me = process_start_time(os.getpid())
    assert me is not None
    assert process_alive(os.getpid(), me)
    assert not process_alive(os.getpid(), me + 1)  # same pid, another process: a recycled pid


# --- one process -------------------------------------------------------------------------------


def test_lease_releases_on_exit_and_on_exception(tmp_path: Path) -> None:
    with acquire_scope(tmp_path, "r1", ["src"]) as lease:
        assert registered(tmp_path, "r1", holding=True)
        assert lease.env()[LEASE_ENV] == "r1"
        assert json.loads(lease.env()[PATHS_ENV]) == [str(tmp_path.resolve() / "src")]
    assert not registered(tmp_path, "r1")
    with pytest.raises(RuntimeError), acquire_scope(tmp_path, "r2", ["src"]):
        raise RuntimeError("boom")
    assert not registered(tmp_path, "r2")


def test_disjoint_scopes_do_not_conflict(tmp_path: Path) -> None:
    with acquire_scope(tmp_path, "a", ["src"]), acquire_scope(tmp_path, "b", ["docs"]):
        assert {r.run_id for r in holders(tmp_path)} == {"a", "b"}


def test_a_recycled_pid_is_not_a_live_holder(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    me = process_start_time(os.getpid())
    assert me is not None
    fake = Record(
        run_id="ghost",
        pid=os.getpid(),  # alive, but not the process that took the lock
        start_time=me - 100,
        paths=(str(tmp_path.resolve()),),
        ticket=1,
        holding=True,
        queued_at=time.time(),
    )
    (registry.dir / fake.filename).write_text(json.dumps(fake.to_json()))  # not ours: no flock
    with acquire_scope(tmp_path, "fresh", None):
        assert [r.run_id for r in holders(tmp_path)] == ["fresh"]
    assert not (registry.dir / fake.filename).exists()


def test_a_holder_whose_pid_this_process_cannot_see_still_holds(tmp_path: Path) -> None:
    # A holder in another pid namespace (a container sharing the project) or hidden by
    # /proc's hidepid: its pid looked gone, its record was reaped and its paths taken while it
    # still ran. The record's flock, which the kernel drops with the holder, says it lives.
    holder = start(tmp_path, "elsewhere", "--scope", "src", "--hold", "60")
    try:
        wait_for(lambda: registered(tmp_path, "elsewhere", holding=True))
        dead = subprocess.Popen(["true"])  # a pid that no longer exists
        dead.wait()
        (path,) = Registry(tmp_path).dir.glob("0*.json")
        seen = {**json.loads(path.read_text()), "pid": dead.pid, "start_time": None}
        with open(path, "r+") as f:  # in place: the holder's flock is on this file
            f.write(json.dumps(seen))
            f.truncate()
        with pytest.raises(LockConflict, match="locked by run elsewhere "):
            acquire_scope(tmp_path, "next", ["src/app.py"])
        assert registered(tmp_path, "elsewhere", holding=True)
        # with one of its actions running, it is not reported as killed
        action = subprocess.Popen(
            ["sleep", "60"], env={**os.environ, "LL_RUN_ID": "elsewhere"}, start_new_session=True
        )
        try:
            with pytest.raises(LockConflict) as refused:
                acquire_scope(tmp_path, "next", ["src/app.py"])
            assert "killed" not in refused.value.message
            assert f"(pid {dead.pid}, held)" in refused.value.message
        finally:
            action.kill()
            action.wait()
    finally:
        holder.kill()
        holder.wait()
    with acquire_scope(tmp_path, "next", ["src/app.py"]):  # gone for real: reaped
        assert [r.run_id for r in holders(tmp_path)] == ["next"]


# --- real processes ---------------------------------------------------------------------------


def test_conflict_fails_fast_naming_holder_pid_and_path(tmp_path: Path) -> None:
    holder = start(tmp_path, "holder-1", "--scope", "src", "--hold", "30")
    try:
        wait_for(lambda: registered(tmp_path, "holder-1", holding=True))
        began = time.monotonic()
        with pytest.raises(LockConflict) as caught:
            acquire_scope(tmp_path, "second", ["src/engine"])
        assert time.monotonic() - began < 2.0
        message = caught.value.message
        assert "holder-1" in message
        assert f"pid {holder.pid}" in message
        assert str(tmp_path.resolve() / "src" / "engine") in message
        assert caught.value.exit_code == 2
        assert not registered(tmp_path, "second")  # a refused run leaves no record behind
    finally:
        holder.kill()
        holder.wait()


def test_an_unscoped_run_locks_the_whole_repository(tmp_path: Path) -> None:
    holder = start(tmp_path, "everything", "--hold", "30")
    try:
        wait_for(lambda: registered(tmp_path, "everything", holding=True))
        with pytest.raises(LockConflict, match="everything"):
            acquire_scope(tmp_path, "narrow", ["deep/inside/x.txt"])
    finally:
        holder.kill()
        holder.wait()


def test_a_sigkilled_holder_is_reaped(tmp_path: Path) -> None:
    holder = start(tmp_path, "doomed", "--scope", "src", "--hold", "60")
    wait_for(lambda: registered(tmp_path, "doomed", holding=True))
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert registered(tmp_path, "doomed")  # its record is still on disk...
    with acquire_scope(tmp_path, "next", ["src"]):  # ...but it holds nothing
        assert [r.run_id for r in holders(tmp_path)] == ["next"]
    assert not registered(tmp_path, "doomed")


def test_queue_times_out_with_a_clear_message(tmp_path: Path) -> None:
    holder = start(tmp_path, "slow", "--scope", "src", "--hold", "30")
    try:
        wait_for(lambda: registered(tmp_path, "slow", holding=True))
        began = time.monotonic()
        with pytest.raises(LockConflict, match=r"gave up after 0\.5s .* slow"):
            acquire_scope(tmp_path, "waiter", ["src"], queue=True, timeout=0.5)
        assert 0.5 <= time.monotonic() - began < 3.0
        assert not registered(tmp_path, "waiter")
    finally:
        holder.kill()
        holder.wait()


def test_queue_is_fifo_and_an_earlier_waiter_blocks_a_later_one(tmp_path: Path) -> None:
    log, release = tmp_path / "marks.jsonl", tmp_path / "release"
    first = start(tmp_path, "h", "--scope", "a", "--until", str(release), "--log", str(log))
    wait_for(lambda: registered(tmp_path, "h", holding=True))
    # w1 needs a (held) and b (free); w2 needs only b. FIFO: w2 must not overtake w1.
    w1 = start(tmp_path, "w1", "--scope", "a", "--scope", "b", "--queue", "--log", str(log))
    wait_for(lambda: registered(tmp_path, "w1", holding=False))
    w2 = start(tmp_path, "w2", "--scope", "b", "--queue", "--log", str(log))
    wait_for(lambda: registered(tmp_path, "w2"))
    w3 = start(tmp_path, "w3", "--scope", "a", "--queue", "--log", str(log))
    wait_for(lambda: registered(tmp_path, "w3"))
    release.touch()  # only now, with every waiter in line (a busy machine starts them slowly)
    for proc in (first, w1, w2, w3):
        assert proc.wait(timeout=30) == 0, proc.stdout.read() if proc.stdout else ""
    order = [
        m["run"] for m in map(json.loads, log.read_text().splitlines()) if m["kind"] == "begin"
    ]
    assert order.index("w1") < order.index("w2")
    assert order.index("w1") < order.index("w3")


def test_a_waiter_outlives_the_registry_being_cleared_by_hand(tmp_path: Path) -> None:
    # `rm -rf .loops/locks` while a run waits in the queue: the waiter's next look opened
    # .registry.lock in the missing directory and died of FileNotFoundError (an internal error).
    release = tmp_path / "release"
    holder = start(tmp_path, "h", "--scope", "src", "--until", str(release))
    wait_for(lambda: registered(tmp_path, "h", holding=True))
    waiter = start(tmp_path, "w", "--scope", "src", "--queue", "--until", str(release))
    try:
        wait_for(lambda: registered(tmp_path, "w", holding=False))
        locks = tmp_path / ".loops" / "locks"
        shutil.rmtree(locks)

        def holds() -> bool:  # read by hand: `Registry` would make the directory again
            records = [json.loads(p.read_text()) for p in locks.glob("0*.json")]
            return any(r["run_id"] == "w" and r["holding"] for r in records)

        # its record is written back: it holds src now, and a third run is refused
        wait_for(holds)
        with pytest.raises(LockConflict, match="locked by run w "):
            acquire_scope(tmp_path, "third", ["src"])
    finally:
        release.touch()
        for proc in (holder, waiter):
            out, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err
    assert out.startswith("acquired w")


def test_a_lease_released_after_the_registry_was_cleared_spares_the_new_holder(
    tmp_path: Path,
) -> None:
    # Cleared by hand, the registry hands out ticket 1 again; the first run's release removed
    # 000000000001.json, the second run's lock, and a third run then took the same paths.
    first = acquire_scope(tmp_path, "first", ["src"])
    shutil.rmtree(tmp_path / ".loops" / "locks")
    second = acquire_scope(tmp_path, "second", ["src"])
    assert first.record is not None and second.record is not None
    assert second.record.filename == first.record.filename
    first.release()
    assert [r.run_id for r in holders(tmp_path)] == ["second"]
    with pytest.raises(LockConflict, match="locked by run second "):
        acquire_scope(tmp_path, "third", ["src"])
    second.release()
    assert holders(tmp_path) == []


def test_eight_queued_runs_over_overlapping_scopes_never_share_a_path(tmp_path: Path) -> None:
    log = tmp_path / "marks.jsonl"
    scopes = [["."], ["src"], ["src/a"], ["docs"], ["src/a", "docs"], ["src/b"], ["tests"], ["src"]]
    procs = []
    for i, scope in enumerate(scopes):
        args = [arg for path in scope for arg in ("--scope", path)]
        procs.append(
            start(tmp_path, f"run{i}", *args, "--queue", "--hold", "0.15", "--log", str(log))
        )
    for proc in procs:
        assert proc.wait(timeout=60) == 0, proc.stdout.read() if proc.stdout else ""
    marks = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(m["run"] for m in marks if m["kind"] == "begin") == [f"run{i}" for i in range(8)]
    active: dict[str, list[str]] = {}
    for mark in marks:
        if mark["kind"] == "begin":
            for run, paths in active.items():
                assert overlap(mark["paths"], paths) is None, f"{mark['run']} ran with {run}"
            active[mark["run"]] = mark["paths"]
        else:
            del active[mark["run"]]
    assert not active
    assert holders(tmp_path) == []


def test_a_nested_run_inside_the_lease_inherits_it(tmp_path: Path) -> None:
    parent = start(tmp_path, "parent", "--scope", "src", "--nested", "src/engine")
    out, _ = parent.communicate(timeout=30)
    assert parent.returncode == 0, out
    assert "child 0 acquired parent" in out  # the child ran under the parent's lease
    assert holders(tmp_path) == []  # and the parent released it once, at its own end


def test_an_inherited_lease_keeps_its_paths_when_the_parent_lets_go_first(tmp_path: Path) -> None:
    """A nested run that outlives its parent (started in the background) ran on with no lock
    once the parent released: another run took its paths. Its own paths stay held until it
    ends; the rest of the parent's lease is free."""
    parent = acquire_scope(tmp_path, "parent", ["src"])
    child = acquire_scope(tmp_path, "child", ["src/engine"], env=parent.env())
    assert child.inherited_from == "parent"
    grandchild = acquire_scope(tmp_path, "grandchild", ["src/engine/x"], env=child.env())
    assert grandchild.inherited_from == "parent"
    parent.release()
    with pytest.raises(LockConflict, match=r"locked by run (child|grandchild)"):
        acquire_scope(tmp_path, "other", ["src/engine"])
    with pytest.raises(LockConflict, match="held by a run under its parent's lease, run child"):
        acquire_scope(tmp_path, "wide", ["src"], env=child.env(), queue=True)  # not for ever
    with acquire_scope(tmp_path, "beside", ["src/docs"]):
        pass  # what the nested runs do not hold is free again
    late = acquire_scope(tmp_path, "late", ["src/engine/y"], env=child.env())
    assert late.inherited_from == "parent"  # the child's lease still covers its paths
    for lease in (late, grandchild, child):
        lease.release()
    with acquire_scope(tmp_path, "other", ["src/engine"]):
        pass
    assert holders(tmp_path) == []


def test_a_nested_run_outside_the_lease_fails_fast_naming_its_parent(tmp_path: Path) -> None:
    parent = start(tmp_path, "parent", "--scope", "src", "--nested", ".")
    out, _ = parent.communicate(timeout=30)
    assert "child 2" in out
    assert "held by this run's parent, run parent" in out


def test_a_stale_lease_in_the_environment_is_not_inherited(tmp_path: Path) -> None:
    env = {LEASE_ENV: "gone", PATHS_ENV: json.dumps([str(tmp_path.resolve())])}
    with acquire_scope(tmp_path, "real", ["src"], env=env) as lease:
        assert lease.inherited_from is None
        assert registered(tmp_path, "real", holding=True)
