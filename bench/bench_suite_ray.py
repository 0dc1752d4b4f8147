"""The Ray executor against the local one (issue 14), measured in the same run.

1,000 cases, a shell subject (`echo`) and two deterministic judges, `--jobs 2`, through the real
`ll-harness suite` both times: first with the local thread executor, then with
`--executor ray --address ADDR` on a local Ray cluster of 2 CPUs started here beforehand (as a
real cluster would already be running; its own start-up is printed apart). Both runs wait until
the fresh cluster has gone quiet (its agents finish starting up for a few seconds after
`ray start` returns, which would otherwise take CPU from whichever run comes first). The Ray
wall includes everything the user waits for: joining the cluster, shipping our code, starting
workers.

Checks: the same per-judge results (aggregates, and every case x judge row of history.db), and
the Ray wall within 1.3x of the local one. The cluster is torn down at the end.

`python -m bench suite_ray` (or `python bench/bench_suite_ray.py`) runs it; `LL_BENCH_RAY_CASES=N`
changes the case count.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import precompile  # noqa: E402
from bench.bench_suite import harness_argv, make_project  # noqa: E402
from tests.ray_helpers import LocalCluster  # noqa: E402

CASES = int(os.environ.get("LL_BENCH_RAY_CASES", "1000"))
JOBS = 2
BUDGET = 1.3

SUITE = """\
name: bench-ray
dataset: cases
isolation: copy
subject:
  command: echo ${inputs.n}
judges:
  - name: echoed
    check: return outputs["stdout"].strip() == str(inputs["n"]), "echo"
  - name: exit
    builtin: exit_code
  - name: odd
    check: return inputs["n"] % 2 == 1, "parity"
thresholds:
  echoed: {min_pass_rate: 0.99}
"""


def run_cli(folder: Path, env: dict[str, str], *args: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    done = subprocess.run(
        harness_argv("suite", "s.suite.yaml", "--quiet", "--output", "json", *args),
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"ll-harness suite {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}"
        )
    return wall, json.loads(done.stdout)


def judge_rows(folder: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(folder / ".loops" / "history.db") as db:
        return sorted(
            db.execute(
                "SELECT case_id, arm, judge, status, value, passed, rationale, sample_index "
                "FROM suite_judgements"
            ).fetchall()
        )


def per_judge(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Each judge's aggregate as reported (counts, rate and interval, gate, verdict)."""
    return list(data["judges"])


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU the processes have used so far."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def wait_quiet(cluster: LocalCluster, *, limit: float = 30.0) -> float:
    """Seconds until the cluster's processes use under 10% of a CPU over half a second."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        before = cpu_seconds(cluster.pids())
        time.sleep(0.5)
        if cpu_seconds(cluster.pids()) - before < 0.05:
            break
    return time.perf_counter() - started


def main() -> None:
    precompile()
    with tempfile.TemporaryDirectory() as tmp:
        local_dir = make_project(Path(tmp) / "local", SUITE, CASES)
        ray_dir = make_project(Path(tmp) / "ray", SUITE, CASES)
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        up = time.perf_counter()
        cluster = LocalCluster(cpus=JOBS).start()
        up = time.perf_counter() - up
        try:
            quiet = wait_quiet(cluster)
            local_wall, local = run_cli(local_dir, env, "--jobs", str(JOBS))
            ray_wall, remote = run_cli(
                ray_dir,
                env | cluster.env,
                "--executor",
                "ray",
                "--address",
                cluster.address,
                "--jobs",
                str(JOBS),
            )
        finally:
            cluster.stop()
        left = cluster.pids()
        same = per_judge(remote) == per_judge(local) and judge_rows(ray_dir) == judge_rows(
            local_dir
        )
    ratio = ray_wall / local_wall
    ok = same and ratio <= BUDGET and not left
    print(
        f"{CASES} cases, shell subject, 3 judges, --jobs {JOBS}: local threads {local_wall:.2f} s, "
        f"Ray (2-CPU local cluster, joined with --address) {ray_wall:.2f} s: {ratio:.2f}x "
        f"(budget {BUDGET}x); per-judge results {'identical' if same else 'DIFFER'}; "
        f"cluster start-up {up:.1f} s + {quiet:.1f} s to go quiet (not counted); "
        f"{'no' if not left else len(left)} Ray processes left "
        f"{'OK' if ok else 'OVER BUDGET' if same and not left else 'FAILED'}"
    )


if __name__ == "__main__":
    main()
