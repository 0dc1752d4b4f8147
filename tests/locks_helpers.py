"""A lock holder as a real process, for the scope-lock tests.

`python tests/locks_helpers.py ROOT RUN_ID [--scope P]... [--queue] [--timeout S] [--hold S]
[--until FILE] [--log FILE] [--nested SCOPE]` acquires the scope, appends `begin`/`end` markers to
FILE, holds for S seconds (and until FILE exists, with --until: no race with a slow machine), and
exits 0, or 2 printing the `LockConflict` message. With `--nested`, while
holding it starts itself again as a child with the lease in its environment and the given scope.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.model.errors import LockConflict
from engine.runtime.locks import acquire_scope


def _mark(log: str | None, kind: str, run_id: str, paths: tuple[str, ...]) -> None:
    if log is None:
        return
    line = json.dumps({"kind": kind, "run": run_id, "paths": list(paths), "t": time.time()})
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("run_id")
    parser.add_argument("--scope", action="append")
    parser.add_argument("--queue", action="store_true")
    parser.add_argument("--timeout", type=float)
    parser.add_argument("--hold", type=float, default=0.0)
    parser.add_argument("--until")
    parser.add_argument("--log")
    parser.add_argument("--nested", action="append")
    args = parser.parse_args()
    try:
        lease = acquire_scope(
            Path(args.root), args.run_id, args.scope, queue=args.queue, timeout=args.timeout
        )
    except LockConflict as exc:
        print(exc.message, flush=True)
        return 2
    with lease:
        print(f"acquired {lease.holder}", flush=True)
        _mark(args.log, "begin", args.run_id, lease.paths)
        time.sleep(args.hold)
        while args.until and not Path(args.until).exists():
            time.sleep(0.02)
        code = 0
        if args.nested:
            child = [sys.executable, __file__, args.root, args.run_id + "-child"]
            for path in args.nested:
                child += ["--scope", path]
            done = subprocess.run(
                child,
                env={**os.environ, **lease.env()},
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            print(f"child {done.returncode} {done.stdout.strip()}", flush=True)
            code = done.returncode
        _mark(args.log, "end", args.run_id, lease.paths)
    return code


if __name__ == "__main__":
    sys.exit(main())
