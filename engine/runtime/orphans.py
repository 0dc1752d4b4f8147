"""Actions a killed run left running, found by their environment (IO: reads `/proc`).

`kill -9` of `ll-loop run` cannot take its action with it: the action leads a process group of
its own and runs on. Resume ends such actions before it runs the state again, `stop` ends them,
`status` lists them, and a scope lock stays held while one runs (it is still changing files).
"""

from __future__ import annotations

import os
from pathlib import Path


def orphaned_actions(run_id: str, proc: Path = Path("/proc")) -> list[int]:
    """Process groups of actions the dead run `run_id` left running (SIGKILL cannot take them).

    An action leads its own process group, with `LL_RUN_ID=<run_id>` in the environment it was
    started with; run ids are unique, so nothing outside the run matches. Sub-loop actions
    carry their top-level run's id. Its command line says nothing: bash replaces itself with a
    script's last command (`pytest -q` runs as `pytest`), so a program an action detached into
    a group of its own matches too (docs/runs.md says how to start one that must outlive it).
    """
    wanted = f"LL_RUN_ID={run_id}".encode()
    own = os.getpgrp()  # never our own group (a resume started from inside that action)
    groups: list[int] = []
    try:
        entries = list(os.scandir(proc))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        try:
            environ = Path(entry.path, "environ").read_bytes().split(b"\0")
            leads = os.getpgid(pid) == pid
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if pid == own or not leads:
            continue
        if wanted in environ:
            groups.append(pid)
    return sorted(groups)
