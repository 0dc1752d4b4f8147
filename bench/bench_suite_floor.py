"""The floor under issue 18's benchmark (b): what the per-case work alone costs, with no engine.

Benchmark (b) (bench_suite.py) holds `ll-harness suite` to 1.3x of 2,000 bare `bash -c` spawns
over 2 threads. This measures, against the same bare run in the same process, a program that does
only what a suite case must do and nothing else — no schema, no events, no output caps, no
timeouts, no progress, no resume bookkeeping — in the cheapest shape we know for CPython:

- `jobs` forked worker processes (no GIL shared between them, nothing pickled), each with
- its own check process (`python -S`, JSON lines over pipes): inline Python judges run outside
  the engine's process, as the product's safety model requires (a hung or hostile check is
  killed, not waited on; it never sees the engine's memory);
- per case: read and parse the case's `input.yaml` (the C YAML loader), make the case's own
  workspace and write `input.yaml` into it, spawn `bash -c 'echo N'` there in its own session
  with stdout and stderr on pipes, read both, judge (the check in the check process, the exit
  code inline), remove the workspace, send the result line to the driver;
- the driver writes a `history.db` row per case x judge, committing every 256 rows.

Also with the first judge inline (what a builtin judge costs), and with check requests batched
16 cases to a request (the least IPC a separate check process allows); and the start-up of a
real `ll-harness suite` process (a 1-case run of the same suite), which the bare run does not
pay. A ratio here is a floor: the engine can only add to it.

`python bench/bench_suite_floor.py`.
"""

from __future__ import annotations

import json
import os
import select
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import precompile  # noqa: E402
from bench.bench_suite import (  # noqa: E402
    PAIRS,
    SHELL_CASES,
    SHELL_JOBS,
    SHELL_SUITE,
    bare_spawns,
    make_project,
    run_cli,
)

CHECKER = """\
import json, sys
for line in sys.stdin:
    cases = json.loads(line)
    answers = [c["stdout"].strip() == str(c["inputs"]["n"]) for c in cases]
    sys.stdout.write(json.dumps(answers) + "\\n")
    sys.stdout.flush()
"""

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Checker:
    """A check process: a list of (stdout, inputs) in, a list of verdicts out."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-S", "-c", CHECKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def judge(self, cases: list[dict[str, object]]) -> list[bool]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(cases) + "\n")
        self.process.stdin.flush()
        answers: list[bool] = json.loads(self.process.stdout.readline())
        return answers

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def _read_all(out_fd: int, err_fd: int) -> tuple[bytes, bytes]:
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    open_fds = set(chunks)
    while open_fds:
        for fd, _ in poller.poll():
            data = os.read(fd, 65536)
            if data:
                chunks[fd].append(data)
            else:
                poller.unregister(fd)
                open_fds.discard(fd)
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd])


def _subject(dataset: str, workspaces: str, name: str) -> dict[str, object]:
    """One case up to its judges: its inputs, workspace, spawn and outputs, in the cheapest
    calls there are (plain `os` calls on str paths, no pathlib; stdin from /dev/null)."""
    fd = os.open(os.path.join(dataset, name, "input.yaml"), os.O_RDONLY)
    raw = os.read(fd, 1 << 16)
    os.close(fd)
    inputs = yaml.load(raw, Loader=Loader)
    workspace = os.path.join(workspaces, name)
    os.mkdir(workspace)
    fd = os.open(os.path.join(workspace, "input.yaml"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.write(fd, raw)
    os.close(fd)
    out_read, out_write = os.pipe2(os.O_CLOEXEC)
    err_read, err_write = os.pipe2(os.O_CLOEXEC)
    process = subprocess.Popen(
        ["bash", "-c", f"echo {inputs['n']}"],
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        stdout=out_write,
        stderr=err_write,
        start_new_session=True,
    )
    os.close(out_write)
    os.close(err_write)
    out, err = _read_all(out_read, err_read)
    os.close(out_read)
    os.close(err_read)
    code = process.wait()
    with os.scandir(workspace) as entries:  # a flat workspace, as the engine removes one
        for entry in entries:
            os.unlink(entry.path)
    os.rmdir(workspace)
    return {"case": name, "inputs": inputs, "stdout": out.decode(), "stderr": err, "exit": code}


def _numeric_eq(stdout: object, inputs: object) -> bool:
    """`output_numeric` with `eq` against `${inputs.n}`, inline."""
    assert isinstance(inputs, dict)
    return float(str(stdout)) == float(inputs["n"])


def _worker(names: list[str], dataset: str, workspaces: str, batch: int, out_fd: int) -> None:
    """Batch 0: the first judge inline (a builtin's floor); else in the check process."""
    checker = _Checker() if batch else None
    pending: list[dict[str, object]] = []
    for position, name in enumerate(names, 1):
        pending.append(_subject(dataset, workspaces, name))
        if len(pending) < batch and position < len(names):
            continue
        if checker is None:
            verdicts = [_numeric_eq(c["stdout"], c["inputs"]) for c in pending]
        else:
            verdicts = checker.judge(
                [{"stdout": c["stdout"], "inputs": c["inputs"]} for c in pending]
            )
        lines = [
            json.dumps({"case": c["case"], "echoed": ok, "exit": c["exit"] == 0})
            for c, ok in zip(pending, verdicts, strict=True)
        ]
        os.write(out_fd, ("\n".join(lines) + "\n").encode())
        pending = []
    if checker is not None:
        checker.close()


def floor_run(dataset: Path, jobs: int, batch: int) -> float:
    """Wall seconds of the minimal suite over every case in `dataset` (see the docstring)."""
    names = sorted(os.listdir(dataset))
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        db = sqlite3.connect(Path(tmp) / "history.db")
        db.execute("CREATE TABLE rows (run TEXT, name TEXT, judge TEXT, passed INTEGER)")
        workspaces = Path(tmp) / "workspaces"
        workspaces.mkdir()
        children: list[int] = []
        reads: dict[int, bytes] = {}
        for worker in range(jobs):
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # a worker: its share of the cases, then gone
                os.close(read_fd)
                try:
                    _worker(names[worker::jobs], str(dataset), str(workspaces), batch, write_fd)
                finally:
                    os._exit(0)
            os.close(write_fd)
            children.append(pid)
            reads[read_fd] = b""
        rows: list[tuple[str, str, str, int]] = []
        done = 0
        while reads:
            ready, _, _ = select.select(list(reads), [], [])
            for fd in ready:
                data = os.read(fd, 65536)
                if not data:
                    del reads[fd]
                    os.close(fd)
                    continue
                *lines, reads[fd] = (reads[fd] + data).split(b"\n")
                for line in lines:
                    result = json.loads(line)
                    done += 1
                    for judge in ("echoed", "exit"):
                        rows.append(("run", result["case"], judge, int(result[judge])))
                if len(rows) >= 256:
                    db.executemany("INSERT INTO rows VALUES (?, ?, ?, ?)", rows)
                    db.commit()
                    rows = []
        db.executemany("INSERT INTO rows VALUES (?, ?, ?, ?)", rows)
        db.commit()
        db.close()
        for pid in children:
            os.waitpid(pid, 0)
        wall = time.perf_counter() - started
    assert done == len(names), f"{done} of {len(names)} cases came back"
    return wall


def main() -> None:
    precompile()
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_project(Path(tmp), SHELL_SUITE, SHELL_CASES)
        dataset = folder / "cases"
        runs: list[tuple[float, float, float, float, float]] = []
        for _ in range(PAIRS):
            bare = bare_spawns(SHELL_CASES, SHELL_JOBS)
            inline = floor_run(dataset, SHELL_JOBS, batch=0)
            single = floor_run(dataset, SHELL_JOBS, batch=1)
            batched = floor_run(dataset, SHELL_JOBS, batch=16)
            start_up, _, _ = run_cli(folder, "--cases", "c00000")
            runs.append((bare, inline, single, batched, start_up))
    bare, inline, single, batched, start_up = sorted(runs, key=lambda r: r[1] / r[0])[PAIRS // 2]
    extra = start_up / bare
    print(
        f"(b) floor: {SHELL_CASES} cases over {SHELL_JOBS} forked workers, no engine (median of "
        f"{PAIRS}), against bare spawns {bare:.2f} s; ll-harness start-up (a 1-case run) "
        f"{start_up:.2f} s = +{extra:.2f}x on top of each:\n"
        f"    judges inline (builtins) {inline:.2f} s = {inline / bare:.2f}x, "
        f"{inline / bare + extra:.2f}x with start-up\n"
        f"    a check request per case {single:.2f} s = {single / bare:.2f}x, "
        f"{single / bare + extra:.2f}x with start-up\n"
        f"    check requests batched 16 to one {batched:.2f} s = {batched / bare:.2f}x, "
        f"{batched / bare + extra:.2f}x with start-up\n"
        f"    (the budget of benchmark (b) is 1.3x; the engine can only add to these)"
    )


if __name__ == "__main__":
    main()
