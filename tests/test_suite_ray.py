"""`ll-harness suite --executor ray` on a real local Ray cluster (started here, torn down after):
the same per-judge results as the local executor; a Ray worker killed with SIGKILL mid-case
loses and duplicates nothing; a driver killed with SIGKILL resumes; `resources:` and `--jobs`
bound what runs at once; one 429 with retry-after pauses every worker's LLM calls; and without
Ray installed the flag says how to install it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.runtime.history import open_history
from engine.suites.driver import SuiteOptions, run_suite
from engine.suites.result import SuiteResult
from tests.harness_helpers import REPO
from tests.loopback_server import LoopbackServer, Reply, error_reply, tool_reply
from tests.ray_helpers import LocalCluster, free_port
from tests.suite_helpers import dataset, db_rows, suite_json, write

WORDS = """\
name: words
dataset: cases
isolation: copy
resources: {cpus: 1, memory_mb: 64}
subject:
  command: printf '%s\\n' ${inputs.text} | wc -w
judges:
  - name: counted
    check: return int(outputs["stdout"]) == annotations["words"], outputs["stdout"].strip()
  - name: exit
    builtin: exit_code
  - name: density
    check: return annotations["words"] / len(inputs["text"]), "words per character"
    score_range: [0, 1]
  - name: even_only
    if: "annotations['words'] % 2 == 0"
    check: return len(inputs["text"]) > 3, "long enough"
thresholds:
  counted: {min_pass_rate: 0.5}
"""
# One xdist worker takes every test here (`--dist loadgroup`), so one cluster serves them all.
pytestmark = pytest.mark.xdist_group("ray")

TEXTS = ["one", "two words", "three little words", "a b c d", "x", "five of them are here"]


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    """One 2-CPU cluster for every test of this module; this process is its driver too.

    Session-scoped: pytest-xdist keeps the module's tests on one worker (`xdist_group`) but may
    run other modules' tests between them, and a module-scoped cluster was then started twice
    (about 10 s each)."""
    started = LocalCluster(cpus=2).start()
    saved = {name: os.environ.get(name) for name in started.env}
    # This process and the drivers it starts join with these (read when `ray` is imported).
    os.environ.update(started.env)
    import ray

    from engine.suites.ray_executor import runtime_env

    try:
        ray.init(
            address=started.address,
            runtime_env=runtime_env(),
            log_to_driver=False,
            logging_level="ERROR",
        )
        yield started
    finally:
        ray.shutdown()
        started.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    assert started.pids() == [], "the cluster left processes running"


def words_project(root: Path, texts: list[str] = TEXTS) -> Path:
    cases = {
        # every third case's annotation is wrong, so `counted` fails there
        f"c{i}": {"input": {"text": t}, "annotations": {"words": len(t.split()) + (i % 3 == 2)}}
        for i, t in enumerate(texts)
    }
    dataset(root, cases)
    return write(root / "s.suite.yaml", WORDS)


def run(root: Path, **options: Any) -> SuiteResult:
    with open_history(root) as history:
        return run_suite(root / "s.suite.yaml", SuiteOptions(**options), history=history, cwd=root)


def judged(result: SuiteResult) -> list[tuple[Any, ...]]:
    return sorted(
        (j.case_id, j.arm, j.judge, j.status, j.value, j.passed, j.rationale)
        for j in result.judgements
    )


def summaries(result: SuiteResult) -> list[dict[str, Any]]:
    return [s.to_json() for s in result.summaries]


def test_ray_gives_the_local_executors_per_judge_results(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    local_root, ray_root = tmp_path / "local", tmp_path / "ray"
    for root in (local_root, ray_root):
        words_project(root)
    local = run(local_root, jobs=2)
    remote = run(ray_root, executor="ray", jobs=2)
    assert judged(remote) == judged(local)
    assert summaries(remote) == summaries(local)
    assert remote.verdict == local.verdict
    counted = next(s for s in remote.summaries if s.name == "counted").to_json()
    assert counted["pass_rate"]["k"] == 4  # 2 of the 6 annotations are wrong
    rows = db_rows(ray_root, "SELECT case_id, count(*) FROM suite_cases GROUP BY case_id")
    assert sorted(rows) == [(f"c{i}", 1) for i in range(len(TEXTS))]


SLEEPY = """\
name: sleepy
dataset: cases
isolation: copy
resources: {{cpus: {cpus}}}
subject:
  command: |
    echo "$PPID" > "$LL_SUITE_DIR/pids/$LL_CASE_ID.$$"
    echo "start $(date +%s.%N)" >> "$LL_SUITE_DIR/spans/$LL_CASE_ID.$$"
    sleep {sleep}
    echo "end $(date +%s.%N)" >> "$LL_SUITE_DIR/spans/$LL_CASE_ID.$$"
    echo ${{inputs.n}}
judges:
  - name: echoed
    check: return outputs["stdout"].strip() == str(inputs["n"]), outputs["stdout"].strip()
thresholds:
  echoed: {{min_pass_rate: 0.5}}
"""


def sleepy_project(root: Path, cases: int, *, sleep: float, cpus: float = 1) -> Path:
    dataset(root, {f"c{i:02d}": {"input": {"n": i}} for i in range(cases)})
    (root / "pids").mkdir()
    (root / "spans").mkdir()
    return write(root / "s.suite.yaml", SLEEPY.format(cpus=cpus, sleep=sleep))


def spans(root: Path) -> list[tuple[float, float]]:
    found = []
    for path in (root / "spans").iterdir():
        lines = dict(line.split() for line in path.read_text().splitlines())
        if "end" in lines:
            found.append((float(lines["start"]), float(lines["end"])))
    return sorted(found)


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def test_a_ray_worker_killed_mid_case_loses_and_duplicates_nothing(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    cases = 6
    sleepy_project(tmp_path, cases, sleep=2)
    outcome: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: outcome.update(result=run(tmp_path, executor="ray", jobs=2))
    )
    runner.start()
    deadline = time.monotonic() + 120
    while not list((tmp_path / "pids").iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    first = next(iter((tmp_path / "pids").iterdir()))
    victim_case = first.name.split(".")[0]
    worker = int(first.read_text())
    cmdline = Path(f"/proc/{worker}/cmdline").read_bytes()
    assert b"ray" in cmdline, cmdline  # a Ray worker process (its title is ray::...)
    os.kill(worker, signal.SIGKILL)  # mid-case: its subject sleeps 2 s
    runner.join(timeout=300)
    assert not runner.is_alive()
    result: SuiteResult = outcome["result"]
    attempts = Counter(p.name.split(".")[0] for p in (tmp_path / "pids").iterdir())
    assert attempts[victim_case] >= 2, "the killed case was not run again"
    # every other case ran once: the one sent to the killed worker behind the victim had not
    # started, and the cases that had finished there were not run (or recorded) again
    assert [n for case, n in attempts.items() if case != victim_case] == [1] * (cases - 1)
    rows = db_rows(tmp_path, "SELECT case_id, count(*) FROM suite_cases GROUP BY case_id")
    assert sorted(rows) == [(f"c{i:02d}", 1) for i in range(cases)]
    judgements = db_rows(tmp_path, "SELECT case_id, status, passed FROM suite_judgements")
    assert sorted(judgements) == [(f"c{i:02d}", "ok", 1) for i in range(cases)]
    assert result.verdict.value == "PASS"


KILLER = """\
name: killer
dataset: cases
isolation: copy
subject:
  command: |
    echo "$PPID" > "$LL_SUITE_DIR/pids/$LL_CASE_ID.$$"
    if [ ${inputs.n} = 0 ]; then kill -9 "$PPID"; exit 1; fi
    echo ${inputs.n}
judges:
  - name: echoed
    check: return outputs["stdout"].strip() == str(inputs["n"]), outputs["stdout"].strip()
"""


def test_a_case_that_kills_its_worker_every_time_is_errored_and_spares_the_next_one(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    # One actor (--jobs 1) holds c00, which kills its worker each time, with c01 sent behind
    # it: Ray may spend c01's retries along with c00's (c01 was then errored without running),
    # but c01 is not errored; c00 is errored after a bounded number of tries. A case behind it
    # may run twice: a call the restarted worker finished before c00 killed it again can lose
    # its reply and be retried (Ray runs a call at least once); it is recorded once.
    from engine.suites.ray_executor import MAX_RETRIES

    cases = 4
    dataset(tmp_path, {f"c{i:02d}": {"input": {"n": i}} for i in range(cases)})
    (tmp_path / "pids").mkdir()
    write(tmp_path / "s.suite.yaml", KILLER)
    result = run(tmp_path, executor="ray", jobs=1)
    attempts = Counter(p.name.split(".")[0] for p in (tmp_path / "pids").iterdir())
    # Ray's attempts, then one alone on the actor: bounded, and then the case is errored
    assert attempts["c00"] == MAX_RETRIES + 2
    assert all(attempts[f"c{i:02d}"] in (1, 2) for i in range(1, cases)), attempts
    rows = db_rows(tmp_path, "SELECT case_id, status, error FROM suite_cases ORDER BY case_id")
    assert [(case, status) for case, status, _ in rows] == [("c00", "error")] + [
        (f"c{i:02d}", "ok") for i in range(1, cases)
    ]
    assert "the executor could not run the case" in rows[0][2]
    echoed = next(s for s in result.summaries if s.name == "echoed").to_json()
    assert echoed["pass_rate"]["k"] == cases - 1


ONCE_KILLER = """\
name: once
dataset: cases
isolation: copy
subject:
  command: |
    echo "$PPID" > "$LL_SUITE_DIR/pids/$LL_CASE_ID.$$"
    if [ ${inputs.n} = 40 ] && mkdir "$LL_SUITE_DIR/killed" 2>/dev/null; then
      kill -9 "$PPID"; exit 1
    fi
    echo ${inputs.n}
judges:
  - name: echoed
    check: return outputs["stdout"].strip() == str(inputs["n"]), outputs["stdout"].strip()
"""


def test_a_worker_killed_mid_batch_runs_the_batch_again_and_records_each_case_once(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    # Short cases travel in batches; c40 kills its worker the first time it runs. Ray runs
    # that call again: its cases that had already run there (their outcomes never left the
    # dead worker) run a second time, and every case is recorded exactly once.
    cases = 60
    dataset(tmp_path, {f"c{i:02d}": {"input": {"n": i}} for i in range(cases)})
    (tmp_path / "pids").mkdir()
    write(tmp_path / "s.suite.yaml", ONCE_KILLER)
    result = run(tmp_path, executor="ray", jobs=1)
    attempts = Counter(p.name.split(".")[0] for p in (tmp_path / "pids").iterdir())
    assert attempts["c40"] == 2
    assert set(attempts) == {f"c{i:02d}" for i in range(cases)}
    assert max(attempts.values()) == 2
    rows = db_rows(
        tmp_path, "SELECT case_id, count(*), min(status) FROM suite_cases GROUP BY case_id"
    )
    assert sorted(rows) == [(f"c{i:02d}", 1, "ok") for i in range(cases)]
    echoed = next(s for s in result.summaries if s.name == "echoed").to_json()
    assert echoed["pass_rate"]["k"] == cases


def test_jobs_and_resources_bound_how_many_cases_run_at_once(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    one_job, two_cpus = tmp_path / "jobs", tmp_path / "cpus"
    sleepy_project(one_job, 3, sleep=0.6, cpus=1)
    sleepy_project(two_cpus, 3, sleep=0.6, cpus=2)
    run(one_job, executor="ray", jobs=1)  # the cluster could run 2; --jobs says 1
    run(two_cpus, executor="ray", jobs=2)  # --jobs says 2; a case takes both CPUs
    for root in (one_job, two_cpus):
        assert len(spans(root)) == 3
        assert most_at_once(spans(root)) == 1, root.name


def test_a_driver_killed_with_sigkill_resumes_on_the_cluster(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    cases = 10
    sleepy_project(tmp_path, cases, sleep=0.4)
    argv = [
        sys.executable,
        "-c",
        "from engine.cli.harness_cmd import main; main()",
        "suite",
        "s.suite.yaml",
        "--executor",
        "ray",
        "--address",
        cluster.address,
        "--jobs",
        "2",
        "--quiet",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    driver = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and driver.poll() is None:
        if recorded(tmp_path) >= 3:
            break
        time.sleep(0.05)
    assert driver.poll() is None, driver.stderr.read() if driver.stderr else ""
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=30)
    if driver.stderr:
        driver.stderr.close()
    before = recorded(tmp_path)
    assert 3 <= before < cases
    run_id = db_rows(tmp_path, "SELECT run_id FROM suite_runs")[0][0]
    code, data, err = suite_json(
        tmp_path,
        "s.suite.yaml",
        "--executor",
        "ray",
        "--address",
        cluster.address,
        "--resume",
        run_id,
        timeout=300,
    )
    assert code == 0, err
    assert data["run_id"] == run_id
    rows = db_rows(tmp_path, "SELECT case_id, count(*) FROM suite_cases GROUP BY case_id")
    assert sorted(rows) == [(f"c{i:02d}", 1) for i in range(cases)]
    echoed = next(j for j in data["judges"] if j["judge"] == "echoed")
    assert echoed["pass_rate"]["k"] == cases


def recorded(root: Path) -> int:
    try:
        return int(db_rows(root, "SELECT count(*) FROM suite_cases")[0][0])
    except Exception:  # the database or its tables are not there yet
        return 0


SCORED = """\
name: scored
dataset: cases
isolation: copy
subject:
  command: sleep 0.15; echo ${inputs.n}
judges:
  - name: quality
    prompt: "Rate this answer: {{ outputs.stdout }}"
"""
RETRY_AFTER = 3.0


def test_one_429_with_retry_after_pauses_every_worker(
    cluster: LocalCluster, loopback: LoopbackServer, tmp_path: Path
) -> None:
    cases = 16  # enough that the other worker still has cases to judge during the pause
    dataset(tmp_path, {f"c{i:02d}": {"input": {"n": i}} for i in range(cases)})
    write(tmp_path / "s.suite.yaml", SCORED)
    answer = tool_reply({"score": 4, "reason": "fine", "evidence": ""}, delay=0.05)
    limited: list[float] = []

    def script(request: dict[str, Any]) -> Reply:
        if len(loopback.requests) == 3:  # the third call, while the other worker keeps asking
            limited.append(time.monotonic())
            return error_reply(429, retry_after=RETRY_AFTER)
        return answer(request)

    loopback.default = script
    result = run(tmp_path, executor="ray", jobs=2)
    quality = next(s for s in result.summaries if s.name == "quality")
    assert len(quality.scored) == cases
    assert len(loopback.requests) == cases + 1  # the limited call was sent once more
    # Once the pause reached the limiter (a moment after the 429; a request admitted just before
    # may still be on its way), no worker sent anything until retry-after had passed; without
    # the shared limiter the other worker goes on judging its cases.
    after = [r.started - limited[0] for r in loopback.requests if r.started > limited[0]]
    quiet = [t for t in after if 1.0 < t < RETRY_AFTER - 0.1]
    assert quiet == [], sorted(round(t, 2) for t in after)
    assert sum(t >= RETRY_AFTER - 0.1 for t in after) >= 3


PROGRAM_RUNNING_A_SUITE = """\
import json, os, signal, sys
from pathlib import Path
import ray  # what importing it does (a sys.path entry, RAY_CLIENT_MODE) is not the executor's
from engine.runtime.history import open_history
from engine.suites.driver import SuiteOptions, run_suite

root = Path.cwd()
def state():
    ray_env = {n: v for n, v in os.environ.items() if n.startswith("RAY_")}
    return signal.getsignal(signal.SIGTERM), os.environ.get("PYTHONBREAKPOINT"), ray_env

before = state()
options = SuiteOptions(executor="ray", address=sys.argv[1], jobs=1)
with open_history(root) as history:
    result = run_suite(root / "s.suite.yaml", options, history=history, cwd=root)
after = state()
print(json.dumps({"verdict": result.verdict, "same": [b == a for b, a in zip(before, after)]}))
"""


def test_a_program_that_ran_a_suite_on_ray_keeps_its_signal_handler_and_environment(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """The executor that started Ray (joined the cluster) for a program's suite shut it down,
    but Ray's SIGTERM handler (a `sys.exit` in the main thread) stayed in the program for good,
    and, for a Ray it started, `PYTHONBREAKPOINT` (Ray's debugger) and `RAY_*` variables."""
    words_project(tmp_path, TEXTS[:2])
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM_RUNNING_A_SUITE, cluster.address],
        cwd=tmp_path,
        env={**env, **{k: v for k, v in cluster.env.items() if k != "RAY_ADDRESS"}},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["same"] == [True, True, True], said


def test_without_ray_the_flag_says_how_to_install_it(tmp_path: Path) -> None:
    words_project(tmp_path)
    blocked = (
        "import sys; sys.modules['ray'] = None; from engine.cli.harness_cmd import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked, "suite", "s.suite.yaml", "--executor", "ray"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "error: --executor ray needs Ray, which is not installed here: pip install 'll-loop[ray]'"
    ]
    assert done.stdout == ""
    history = tmp_path / ".loops" / "history.db"
    assert not history.exists() or db_rows(tmp_path, "SELECT count(*) FROM suite_runs") == [(0,)]


@pytest.mark.parametrize("form", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}"])
def test_an_address_where_nothing_listens_is_refused_at_once(tmp_path: Path, form: str) -> None:
    """`--address` naming no cluster (a typo, a stopped head) left `ray.init` retrying for
    minutes, Ray's connection warnings scrolling on stderr; nothing listening there is now one
    sentence, before any case runs. The refusal also left an unfinished suite run in history
    (its row was written before the executor was made): it now comes first."""
    words_project(tmp_path)
    address = form.format(port=free_port())
    harness = str(Path(sys.executable).with_name("ll-harness"))
    started = time.monotonic()
    done = subprocess.run(
        [harness, "suite", "s.suite.yaml", "--executor", "ray", "--address", address],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert time.monotonic() - started < 60
    said, hint = done.stderr.strip().splitlines()[-2:]  # after the run's first line
    assert said == f"error: could not connect to the Ray cluster at {address}: Connection refused"
    assert hint == "  hint: start one with `ray start --head`, or check --address / RAY_ADDRESS"
    # Refused before the run: no unfinished suite run left in history (nor its directory), and
    # no "suite s: run ID, N cases" announcing a run that never was.
    assert done.stderr.strip().splitlines() == [said, hint]
    history = tmp_path / ".loops" / "history.db"
    assert not history.exists() or db_rows(tmp_path, "SELECT count(*) FROM suite_runs") == [(0,)]
    runs = tmp_path / ".loops" / "suites"
    assert not runs.exists() or list(runs.iterdir()) == []
