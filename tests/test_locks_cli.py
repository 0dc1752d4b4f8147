"""Scope locks through the real `ll-loop run`: queueing, fail-fast, nesting, --no-lock."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.runtime.locks import overlap
from tests.runs_helpers import ll_loop, result_of, spawn, wait_until, write


def marker_loop(name: str, scope: list[str], hold: float = 0.2) -> str:
    """A loop whose one action appends `begin`/`end` markers to the shared `marks.log`."""
    return f"""
    name: {name}
    initial: work
    scope: {json.dumps(scope)}
    states:
      work:
        action: |
          echo "begin {name}" >> marks.log
          sleep {hold}
          echo "end {name}" >> marks.log
        next: done
      done: {{terminal: true}}
    """


HOLDER = """
name: holder
initial: hold
scope: [src]
states:
  hold:
    action: "touch holding; while [ ! -f go ]; do sleep 0.05; done"
    next: done
  done: {terminal: true}
"""


def test_eight_queued_runs_never_hold_one_path_at_the_same_time(tmp_path: Path) -> None:
    scopes = [
        ["area"],
        ["area/a"],
        ["area/a/deep"],
        ["area/b"],
        ["area/b", "area/c"],
        ["area/c"],
        ["elsewhere"],
        ["area/a"],
    ]
    for i, scope in enumerate(scopes):
        write(tmp_path / f"w{i}.yaml", marker_loop(f"w{i}", scope))
    procs = [spawn(tmp_path, "run", f"w{i}.yaml", "--queue", "--json", "-q") for i in range(8)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert json.loads(out)["final_state"] == "done"
    root = tmp_path.resolve()
    paths = {f"w{i}": [str(root / p) for p in scope] for i, scope in enumerate(scopes)}
    active: set[str] = set()
    begun = []
    for line in (tmp_path / "marks.log").read_text().splitlines():
        kind, name = line.split()
        if kind == "begin":
            for other in active:
                assert overlap(paths[name], paths[other]) is None, f"{name} ran beside {other}"
            active.add(name)
            begun.append(name)
        else:
            active.remove(name)
    assert sorted(begun) == sorted(paths)
    assert not list((tmp_path / ".loops" / "locks").glob("*.json"))  # all released


def test_a_conflicting_run_fails_fast_naming_the_holder(tmp_path: Path) -> None:
    write(tmp_path / "holder.yaml", HOLDER)
    write(tmp_path / "second.yaml", marker_loop("second", ["src/engine"]))
    holder = spawn(tmp_path, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        holder_id = next((tmp_path / ".loops" / "runs").iterdir()).name
        began = time.monotonic()
        done = ll_loop(tmp_path, "run", "second.yaml", "--json", "-q")
        assert time.monotonic() - began < 5
        assert done.returncode == 2
        refusal = result_of(done)
        assert refusal["outcome"] == "error" and refusal["steps"] == 0
        assert holder_id in refusal["error"]
        assert f"pid {holder.pid}" in refusal["error"]
        assert str(tmp_path.resolve() / "src" / "engine") in refusal["error"]
        assert "--queue" in done.stderr  # the hint says what to do
        assert not (tmp_path / "marks.log").exists()  # not a single step ran
        timed = ll_loop(tmp_path, "run", "second.yaml", "--queue", "--queue-timeout", "0.5")
        assert timed.returncode == 2 and "gave up after 0.5s" in timed.stderr
        free = ll_loop(tmp_path, "run", "second.yaml", "--no-lock", "--json", "-q")
        assert result_of(free)["final_state"] == "done"
    finally:
        (tmp_path / "go").touch()
        holder.communicate(timeout=15)
    assert holder.returncode == 0


def test_a_nested_run_inherits_its_parents_lease(tmp_path: Path) -> None:
    write(tmp_path / "inner.yaml", marker_loop("inner", ["src/engine"], hold=0))
    write(tmp_path / "outside.yaml", marker_loop("outside", ["docs"], hold=0))
    write(
        tmp_path / "outer.yaml",
        """
        name: outer
        initial: nest
        scope: [src]
        states:
          nest:
            action: "ll-loop run inner.yaml --json -q"
            capture: inner
            evaluate: {type: output_json, path: .final_state, operator: eq, target: done}
            on_yes: done
            on_no: failed
            on_error: failed
          done: {terminal: true}
          failed: {terminal: true, failure: true}
        """,
    )
    env = {"PATH": f"{_bin_dir()}:{os.environ['PATH']}"}
    done = ll_loop(tmp_path, "run", "outer.yaml", "--json", "-q", env=env, timeout=60)
    assert result_of(done)["final_state"] == "done", done.stderr
    assert (tmp_path / "marks.log").read_text().split() == ["begin", "inner", "end", "inner"]
    # a nested run whose scope is not inside the parent's takes its own lock (docs is free)
    outer2 = (tmp_path / "outer.yaml").read_text().replace("inner.yaml", "outside.yaml")
    write(tmp_path / "outer2.yaml", outer2.replace("name: outer", "name: outer2"))
    done = ll_loop(tmp_path, "run", "outer2.yaml", "--json", "-q", env=env, timeout=60)
    assert result_of(done)["final_state"] == "done", done.stderr


def test_a_backgrounded_nested_run_keeps_its_paths_after_its_parent_ends(tmp_path: Path) -> None:
    """`ll-loop run inner.yaml &` in an action inherited the parent's lease and recorded
    nothing: once the parent ended, another run took the same paths while the nested run was
    still changing them. The nested run now holds its own paths under the lease until it ends."""
    write(
        tmp_path / "inner.yaml",
        """
        name: inner
        initial: work
        scope: [src/engine]
        states:
          work:
            action: "touch started; while [ ! -e go ]; do sleep 0.05; done"
            timeout: 30
            next: done
          done: {terminal: true}
        """,
    )
    write(tmp_path / "other.yaml", marker_loop("other", ["src"], hold=0))
    write(
        tmp_path / "outer.yaml",
        """
        name: outer
        initial: nest
        scope: [src]
        states:
          nest:
            action: |
              ll-loop run inner.yaml --json -q > inner.json 2>&1 &
              while [ ! -e started ]; do sleep 0.05; done
            timeout: 30
            next: done
          done: {terminal: true}
        """,
    )
    env = {"PATH": f"{_bin_dir()}:{os.environ['PATH']}"}
    try:
        done = ll_loop(tmp_path, "run", "outer.yaml", "--json", "-q", env=env, timeout=60)
        assert result_of(done)["final_state"] == "done", done.stderr
        refused = ll_loop(tmp_path, "run", "other.yaml", "--json", "-q")
        assert refused.returncode == 2, refused.stdout
        assert "is locked by run" in refused.stderr
        assert not (tmp_path / "marks.log").exists()
    finally:
        (tmp_path / "go").touch()
    wait_until(lambda: bool((tmp_path / "inner.json").read_text().strip()), timeout=30)
    assert json.loads((tmp_path / "inner.json").read_text())["final_state"] == "done"
    free = ll_loop(tmp_path, "run", "other.yaml", "--json", "-q")
    assert result_of(free)["final_state"] == "done", free.stderr


def test_an_agent_cli_of_a_prompt_state_passes_the_lease_to_its_nested_run(
    tmp_path: Path,
) -> None:
    # A `cmd:` runner is an action too: an agent that runs `ll-loop run` (here with --queue,
    # which waited for its own parent forever) runs under the parent's lock.
    write(tmp_path / "inner.yaml", marker_loop("inner", ["src/engine"], hold=0))
    (tmp_path / "agent.sh").write_text(
        "cat > /dev/null\nexec ll-loop run inner.yaml --queue --json -q\n"
    )
    write(
        tmp_path / "outer.yaml",
        """
        name: outer
        initial: agent
        scope: [src]
        states:
          agent:
            action_type: prompt
            action: "run the inner loop"
            runner: "cmd:bash agent.sh"
            timeout: 30
            capture: inner
            evaluate: {type: output_json, path: .final_state, operator: eq, target: done}
            on_yes: done
            on_no: failed
            on_error: failed
          done: {terminal: true}
          failed: {terminal: true, failure: true}
        """,
    )
    env = {"PATH": f"{_bin_dir()}:{os.environ['PATH']}"}
    done = ll_loop(tmp_path, "run", "outer.yaml", "--json", "-q", env=env, timeout=60)
    assert result_of(done)["final_state"] == "done", done.stderr
    assert result_of(done)["duration_ms"] < 20_000  # not the prompt's 30 s timeout
    assert (tmp_path / "marks.log").read_text().split() == ["begin", "inner", "end", "inner"]


def test_a_nested_run_reaching_outside_its_parents_lease_fails_fast(tmp_path: Path) -> None:
    write(tmp_path / "wide.yaml", marker_loop("wide", ["."], hold=0))
    write(
        tmp_path / "outer.yaml",
        """
        name: outer
        initial: nest
        scope: [src]
        states:
          nest:
            action: "ll-loop run wide.yaml --json -q"
            capture: inner
            evaluate: {type: exit_code}
            on_yes: done
            on_no: failed
            on_error: failed
          done: {terminal: true}
          failed: {terminal: true, failure: true}
        """,
    )
    env = {"PATH": f"{_bin_dir()}:{os.environ['PATH']}"}
    began = time.monotonic()
    done = ll_loop(tmp_path, "run", "outer.yaml", "--json", "-q", env=env, timeout=60)
    assert time.monotonic() - began < 20  # no deadlock
    result = result_of(done)
    assert result["final_state"] == "failed"
    run_id = result["run_id"]
    state = json.loads((tmp_path / ".loops" / "runs" / run_id / "state.json").read_text())
    inner = json.loads(state["captured"]["inner"]["output"])
    assert "held by this run's parent" in inner["error"]


def test_a_nested_queued_run_does_not_wait_behind_a_run_waiting_for_its_parent(
    tmp_path: Path,
) -> None:
    # outer holds src; wide (src + docs) queues behind it; then outer's action starts
    # `ll-loop run docs.yaml --queue`. docs is free, but the nested run queued behind wide,
    # which waits for outer, which waits for the nested run: it waited for ever.
    write(tmp_path / "docs.yaml", marker_loop("docs", ["docs"], hold=0))
    write(tmp_path / "wide.yaml", marker_loop("wide", ["src", "docs"], hold=0))
    write(
        tmp_path / "outer.yaml",
        """
        name: outer
        initial: nest
        scope: [src]
        states:
          nest:
            action: |
              touch holding
              while [ ! -f go ]; do sleep 0.05; done
              timeout 20 ll-loop run docs.yaml --queue --json -q
            evaluate: {type: exit_code}
            on_yes: done
            on_no: failed
            on_error: failed
          done: {terminal: true}
          failed: {terminal: true, failure: true}
        """,
    )
    env = {"PATH": f"{_bin_dir()}:{os.environ['PATH']}"}
    outer = spawn(tmp_path, "run", "outer.yaml", "--json", "-q", env=env)
    wide = None
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        wide = spawn(tmp_path, "run", "wide.yaml", "--queue", "--json", "-q")
        wait_until(lambda: "queued" in ll_loop(tmp_path, "status").stdout)
        (tmp_path / "go").touch()
        out, err = outer.communicate(timeout=60)
        assert result_of(subprocess.CompletedProcess([], 0, out, err))["final_state"] == "done"
        out, err = wide.communicate(timeout=60)
        assert wide.returncode == 0, err
        marks = (tmp_path / "marks.log").read_text().split()
        assert marks == ["begin", "docs", "end", "docs", "begin", "wide", "end", "wide"]
    finally:
        (tmp_path / "go").touch()
        for proc in (outer, wide):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()


def test_a_hangup_while_queued_is_a_stop(tmp_path: Path) -> None:
    """SIGHUP (the terminal closed) killed a run waiting in the queue outright, with no JSON
    object; it ends the wait as SIGTERM and Ctrl-C do."""
    write(tmp_path / "holder.yaml", HOLDER)
    write(tmp_path / "second.yaml", marker_loop("second", ["src"]))
    holder = spawn(tmp_path, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        command = ["run", "second.yaml", "--queue", "--json", "-q"]
        waiter = subprocess.Popen(
            [str(Path(sys.executable).with_name("ll-loop")), *command],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # as from a terminal, even when the tests run under nohup
            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
        )

        def queued() -> bool:
            runs = json.loads(ll_loop(tmp_path, "status", "--json").stdout)["runs"]
            return any(r["status"] == "queued" for r in runs)

        wait_until(queued)
        waiter.send_signal(signal.SIGHUP)
        out, _ = waiter.communicate(timeout=15)
        assert waiter.returncode == 3
        refusal = json.loads(out)
        assert refusal["terminated_by"] == "stopped"
        assert "stopped by SIGHUP while waiting for the scope lock" in refusal["error"]
    finally:
        (tmp_path / "go").touch()
        holder.communicate(timeout=15)


def _bin_dir() -> str:
    """Where `ll-loop` is, so an action can call it."""
    return str(Path(sys.executable).parent)


def test_status_lists_queued_runs_and_stop_removes_them(tmp_path: Path) -> None:
    write(tmp_path / "holder.yaml", HOLDER)
    write(tmp_path / "second.yaml", marker_loop("second", ["src"]))
    holder = spawn(tmp_path, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        waiter = spawn(tmp_path, "run", "second.yaml", "--queue", "--json", "-q")

        def queued() -> list[dict[str, object]]:
            runs = json.loads(ll_loop(tmp_path, "status", "--json").stdout)["runs"]
            return [r for r in runs if r["status"] == "queued"]

        wait_until(lambda: bool(queued()))
        entry = queued()[0]
        assert entry["pid"] == waiter.pid
        assert entry["waiting_for"] == [str(tmp_path.resolve() / "src")]
        assert entry["loop"] == "second"  # named while it waits (it has no run directory yet)
        table = ll_loop(tmp_path, "status").stdout
        assert "queued" in table and "second" in table
        stopped = ll_loop(tmp_path, "stop", str(entry["run_id"]))
        assert stopped.returncode == 0 and "had not started" in stopped.stdout
        out, _ = waiter.communicate(timeout=15)
        assert waiter.returncode == 3  # stopped: inconclusive, and still one JSON object
        refusal = json.loads(out)
        assert (refusal["outcome"], refusal["terminated_by"]) == ("inconclusive", "stopped")
        assert "while waiting for the scope lock" in refusal["error"]
        assert not queued()
        assert not (tmp_path / "marks.log").exists()
    finally:
        (tmp_path / "go").touch()
        holder.communicate(timeout=15)


def test_ctrl_c_while_queued_reports_a_stopped_run(tmp_path: Path) -> None:
    write(tmp_path / "holder.yaml", HOLDER)
    write(tmp_path / "second.yaml", marker_loop("second", ["src"]))
    holder = spawn(tmp_path, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        waiter = spawn(tmp_path, "run", "second.yaml", "--queue", "--json", "-q")
        wait_until(lambda: "queued" in ll_loop(tmp_path, "status").stdout)
        waiter.send_signal(signal.SIGINT)
        out, err = waiter.communicate(timeout=15)
        assert waiter.returncode == 3, err
        assert result_of(subprocess.CompletedProcess([], 3, out, err))["error"].startswith(
            "stopped by SIGINT while waiting"
        )
        assert "Traceback" not in err
        assert not (tmp_path / "marks.log").exists()
    finally:
        (tmp_path / "go").touch()
        holder.communicate(timeout=15)


ORPHANING = """
name: orphaning
initial: hold
scope: [src]
states:
  hold:
    action: "echo $$ > action.pid; touch holding; while [ ! -f go ]; do sleep 0.05; done"
    next: done
  done: {terminal: true}
"""


def _killed_while_acting(root: Path) -> str:
    """`ll-loop run orphaning.yaml` SIGKILLed while its action runs (the action runs on, in a
    group of its own, until `go` exists); the run id. Writes `second.yaml` beside it."""
    write(root / "orphaning.yaml", ORPHANING)
    write(root / "second.yaml", marker_loop("second", ["src/engine"], hold=0))
    killed = spawn(root, "run", "orphaning.yaml", "--json", "-q")
    wait_until(lambda: (root / "holding").exists())
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=15)
    return next((root / ".loops" / "runs").iterdir()).name


def test_a_killed_run_keeps_its_scope_while_its_action_still_runs(tmp_path: Path) -> None:
    """kill -9 of ll-loop leaves its action changing the scope's files: an overlapping run is
    refused until `stop` ends the action; `resume` of the killed run itself is not."""
    try:
        run_id = _killed_while_acting(tmp_path)
        group = int((tmp_path / "action.pid").read_text())
        refused = ll_loop(tmp_path, "run", "second.yaml", "--json", "-q")
        assert refused.returncode == 2
        error = result_of(refused)["error"]
        assert run_id in error and f"process group {group}, still runs" in error
        assert not (tmp_path / "marks.log").exists()
        resumed = spawn(tmp_path, "resume", run_id, "--json", "-q")
        wait_until(lambda: (tmp_path / "action.pid").read_text().strip() != str(group))
        (tmp_path / "go").touch()  # the state runs again, its old action ended by the resume
        out, err = resumed.communicate(timeout=30)
        assert resumed.returncode == 0, err
        assert json.loads(out)["final_state"] == "done"
        after = ll_loop(tmp_path, "run", "second.yaml", "--json", "-q")
        assert after.returncode == 0 and result_of(after)["final_state"] == "done"
    finally:
        (tmp_path / "go").touch()
        with contextlib.suppress(OSError, ValueError):  # no action started: nothing to end
            os.killpg(int((tmp_path / "action.pid").read_text()), signal.SIGKILL)


def test_stop_of_a_killed_run_ends_its_action_and_frees_its_scope(tmp_path: Path) -> None:
    try:
        run_id = _killed_while_acting(tmp_path)
        assert ll_loop(tmp_path, "run", "second.yaml", "--json", "-q").returncode == 2
        stopped = ll_loop(tmp_path, "stop", run_id)
        assert stopped.returncode == 0, stopped.stderr
        after = ll_loop(tmp_path, "run", "second.yaml", "--json", "-q")
        assert after.returncode == 0, after.stderr
    finally:
        (tmp_path / "go").touch()
        with contextlib.suppress(OSError, ValueError):  # no action started: nothing to end
            os.killpg(int((tmp_path / "action.pid").read_text()), signal.SIGKILL)


def test_a_scope_through_a_link_loop_is_refused_in_one_sentence(tmp_path: Path) -> None:
    # `scope: [loopy/]` where loopy -> loop1 -> loopy: resolving it raised RuntimeError, an
    # internal error ("this is a bug in ll-loop").
    (tmp_path / "loopy").symlink_to("loop1")
    (tmp_path / "loop1").symlink_to("loopy")
    write(tmp_path / "w.yaml", marker_loop("w", ["loopy/"], hold=0))
    done = ll_loop(tmp_path, "run", "w.yaml", "-q")
    assert done.returncode == 2, done.stderr
    assert "scope path 'loopy/' cannot be locked: a symbolic link loop" in done.stderr
    assert "bug" not in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "marks.log").exists()


def test_a_sub_loop_holds_the_paths_of_its_scope_outside_its_parents(tmp_path: Path) -> None:
    # A sub-loop ran under its parent's lock only: a child with scope [docs] under a parent
    # holding [src] wrote docs/ while another run held docs/, and a run started meanwhile on
    # docs/ was let in beside it.
    write(
        tmp_path / "child.yaml",
        """
        name: child
        initial: w
        scope: [docs]
        states:
          w:
            action: "touch child-in; while [ ! -f go ]; do sleep 0.05; done; echo c >> marks.log"
            next: done
          done: {terminal: true}
        """,
    )
    write(
        tmp_path / "parent.yaml",
        """
        name: parent
        initial: sub
        scope: [src]
        states:
          sub:
            loop: child.yaml
            on_yes: done
            on_no: failed
            on_error: failed
          done: {terminal: true}
          failed: {terminal: true, failure: true}
        """,
    )
    write(tmp_path / "docs.yaml", marker_loop("docs", ["docs/guide"], hold=0))
    parent = spawn(tmp_path, "run", "parent.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "child-in").exists())
        refused = ll_loop(tmp_path, "run", "docs.yaml", "-q")
        assert refused.returncode == 2, refused.stdout
        assert "docs/guide is locked by run" in refused.stderr
        (tmp_path / "go").touch()
        out, err = parent.communicate(timeout=60)
        assert parent.returncode == 0, err
        assert result_of(subprocess.CompletedProcess([], 0, out, err))["final_state"] == "done"
        assert ll_loop(tmp_path, "run", "docs.yaml", "-q").returncode == 0  # released
    finally:
        (tmp_path / "go").touch()
        if parent.poll() is None:
            parent.kill()
            parent.communicate()
    # and a child whose paths another run holds does not start: its state's error route
    (tmp_path / "marks.log").unlink()
    write(tmp_path / "holder.yaml", HOLDER.replace("scope: [src]", "scope: [docs]"))
    (tmp_path / "go").unlink()
    holder = spawn(tmp_path, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        done = ll_loop(tmp_path, "run", "parent.yaml", "--json", "-q")
        assert result_of(done)["final_state"] == "failed"
        assert not (tmp_path / "marks.log").exists()
    finally:
        (tmp_path / "go").touch()
        holder.communicate(timeout=15)


def test_a_lock_registry_this_user_cannot_write_is_one_sentence_and_status_still_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # .loops/locks made by `sudo ll-loop run` (or on a read-only mount): opening
    # .registry.lock failed with EACCES, and run and status both said "internal error:
    # PermissionError ... this is a bug in ll-loop" (EROFS: "free space", "resume RUN").
    import errno

    from engine.runtime import locks

    write(tmp_path / "w.yaml", marker_loop("w", ["src"], hold=0))
    assert ll_loop(tmp_path, "run", "w.yaml", "-q").returncode == 0  # the registry exists
    real_open = locks.open_file
    for code in (errno.EACCES, errno.EROFS):

        def refuse(path: Path, flags: int, *args: int, code: int = code) -> int:
            if str(path).endswith(".registry.lock"):
                raise OSError(code, os.strerror(code), str(path))
            return real_open(path, flags, *args)

        monkeypatch.setattr(locks, "open_file", refuse)
        done = ll_loop(tmp_path, "run", "w.yaml", "--json", "-q")
        assert done.returncode == 2, done.stderr
        error = result_of(done)["error"]
        assert error.startswith("cannot take the scope lock: the lock registry "), error
        assert "not writable" in error
        assert "bug" not in done.stderr and "free space" not in done.stderr
        status = ll_loop(tmp_path, "status")
        assert status.returncode == 0, status.stderr
    assert ll_loop(tmp_path, "run", "w.yaml", "--no-lock", "-q").returncode == 0


def test_a_queued_run_says_whom_it_waits_for(tmp_path: Path) -> None:
    """`ll-loop run --queue` printed nothing while it waited for the lock: a run that looked
    hung. It says once whom it waits for (not with --quiet), then runs when the holder ends."""
    write(tmp_path / "holder.yaml", HOLDER)
    write(tmp_path / "second.yaml", marker_loop("second", ["src"]))
    holder = spawn(tmp_path, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        waiter = spawn(tmp_path, "run", "second.yaml", "--queue")
        assert waiter.stderr is not None
        said, _, _ = select.select([waiter.stderr], [], [], 30)
        assert said, "the queued run said nothing"
        line = waiter.stderr.readline()
        assert line.startswith(f"waiting for scope path {tmp_path.resolve() / 'src'}, locked by")
        assert f"(pid {holder.pid}, held)" in line
        assert waiter.poll() is None and not (tmp_path / "marks.log").exists()
        (tmp_path / "go").touch()
        waiter.communicate(timeout=30)
        assert waiter.returncode == 0
    finally:
        (tmp_path / "go").touch()
        holder.communicate(timeout=15)


def test_a_queue_timeout_alone_waits_for_the_lock(tmp_path: Path) -> None:
    """`--queue-timeout 1` without `--queue` was ignored: the run failed at once, as if no wait
    had been asked for. A time limit on waiting implies waiting."""
    write(tmp_path / "holder.yaml", HOLDER)
    write(tmp_path / "second.yaml", marker_loop("second", ["src"]))
    holder = spawn(tmp_path, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        started = time.monotonic()
        done = ll_loop(tmp_path, "run", "second.yaml", "--queue-timeout", "1", "--json", "-q")
        assert time.monotonic() - started >= 1
        assert done.returncode == 2
        assert result_of(done)["error"].startswith("gave up after 1s waiting for scope path")
    finally:
        (tmp_path / "go").touch()
        holder.communicate(timeout=15)


def test_a_queued_resume_is_shown_queued_and_its_stop_leaves_the_run_resumable(
    tmp_path: Path,
) -> None:
    """`resume --queue` waiting for the scope lock showed its run as `running` (its waiter's
    pid taken for the run's, elapsed counted from the first start); `stop` said the run "had
    not started" and the resume "the run never started", of a run that had; `stop --json` of
    a queued run printed no JSON at all."""
    write(tmp_path / "holder.yaml", HOLDER)
    write(tmp_path / "second.yaml", marker_loop("second", ["src"], hold=30))
    first = spawn(tmp_path, "run", "second.yaml", "--json", "-q")
    wait_until(lambda: (tmp_path / "marks.log").exists())
    assert ll_loop(tmp_path, "stop", "2").returncode == 0
    first.communicate(timeout=15)
    run_id = next((tmp_path / ".loops" / "runs").iterdir()).name
    holder = spawn(tmp_path, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        resume = spawn(tmp_path, "resume", run_id, "--queue", "--json", "-q")

        def shown() -> dict[str, object]:
            found = json.loads(ll_loop(tmp_path, "status", run_id, "--json").stdout)
            assert isinstance(found, dict)
            return found

        wait_until(lambda: shown()["status"] == "queued")
        entry = shown()
        assert entry["pid"] == resume.pid and entry["elapsed_ms"] < 5000
        assert entry["waiting_for"] == [str(tmp_path.resolve() / "src")]
        stopped = ll_loop(tmp_path, "stop", run_id, "--json")
        assert stopped.returncode == 0, stopped.stderr
        after = json.loads(stopped.stdout)
        assert (after["was"], after["status"], after["stopped"]) == ("queued", "stopped", True)
        out, _ = resume.communicate(timeout=15)
        assert resume.returncode == 3
        error = json.loads(out)["error"]
        assert error.endswith(f"the resume never started, and run {run_id} stays stopped")
        assert error.startswith("stopped by SIGTERM while waiting for the scope lock")  # `stop`'s
        assert shown()["status"] == "stopped"
    finally:
        (tmp_path / "go").touch()
        holder.communicate(timeout=15)


def test_stop_refuses_a_prefix_that_names_a_queued_run_and_others(tmp_path: Path) -> None:
    """`stop 2026` stopped the one queued run, though the prefix names every run: `status`
    refuses it as ambiguous, and so must `stop`, which ends what it names."""
    write(tmp_path / "holder.yaml", HOLDER)
    write(tmp_path / "second.yaml", marker_loop("second", ["src"]))
    holder = spawn(tmp_path, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        waiter = spawn(tmp_path, "run", "second.yaml", "--queue", "--json", "-q")
        wait_until(lambda: "queued" in ll_loop(tmp_path, "status").stdout)
        refused = ll_loop(tmp_path, "stop", "20")
        assert refused.returncode == 2 and "run id '20' is ambiguous" in refused.stderr
        assert waiter.poll() is None  # still waiting
        runs = json.loads(ll_loop(tmp_path, "status", "--json").stdout)["runs"]
        [queued] = [r["run_id"] for r in runs if r["status"] == "queued"]
        assert ll_loop(tmp_path, "stop", queued[:-2]).returncode == 0
        waiter.communicate(timeout=15)
        assert waiter.returncode == 3
    finally:
        (tmp_path / "go").touch()
        holder.communicate(timeout=15)


def test_status_of_a_queued_run_shows_it_rather_than_no_such_run(tmp_path: Path) -> None:
    """`status` listed a queued run, and `status RUN` (and `resume RUN`) of it said "no run
    RUN" (it has no directory until it starts)."""
    write(tmp_path / "holder.yaml", HOLDER)
    write(tmp_path / "second.yaml", marker_loop("second", ["src"]))
    holder = spawn(tmp_path, "run", "holder.yaml", "--json", "-q")
    try:
        wait_until(lambda: (tmp_path / "holding").exists())
        waiter = spawn(tmp_path, "run", "second.yaml", "--queue", "--json", "-q")
        wait_until(lambda: "queued" in ll_loop(tmp_path, "status").stdout)
        runs = json.loads(ll_loop(tmp_path, "status", "--json").stdout)["runs"]
        [queued] = [r["run_id"] for r in runs if r["status"] == "queued"]
        one = json.loads(ll_loop(tmp_path, "status", queued, "--json").stdout)
        assert (one["status"], one["pid"], one["loop"]) == ("queued", waiter.pid, "second")
        assert one["waiting_for"] == [str(tmp_path.resolve() / "src")]
        text = ll_loop(tmp_path, "status", queued)
        assert text.returncode == 0 and "it has not started" in text.stdout
        # `resume` of it said "no run RUN" too: it is refused as queued, and still waits
        resumed = ll_loop(tmp_path, "resume", queued)
        assert resumed.returncode == 2 and "no run" not in resumed.stderr
        assert f"error: run {queued} is queued (waiting for the scope lock)" in resumed.stderr
        assert waiter.poll() is None
        assert ll_loop(tmp_path, "stop", queued).returncode == 0
        waiter.communicate(timeout=15)
    finally:
        (tmp_path / "go").touch()
        holder.communicate(timeout=15)
