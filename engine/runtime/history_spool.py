"""Writes `.loops/history.db` could not take, kept on disk until it can (IO).

A finished run, a graded harness sample or a suite's cases must not lose their rows because
another process held the database past the busy timeout (a long `sqlite3` session, a suite
writing). Such a write is kept as one JSON file in `.loops/history-spool/`; the next process
that opens the history (`open_history`: any `ll-loop` or `ll-harness` command that reads or
writes it) writes it and removes the file. Each kept write is idempotent — a run is keyed by
its id, an attempt by its invocation, sample and time, a suite's rows by their unique keys — so
a file written twice (two processes draining at once, a kill between the commit and the unlink)
still gives one row.

The names sort by when the write was kept (`<ns>-<pid>-<n>-<kind>.json`), so a run's start is
written before its end. A file is complete before it has its name (written under a temporary
one, then renamed; removed when the disk refuses it).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.load.bounded import FileRefused, read_capped
from engine.load.project import ensure_dir, open_file

SPOOL_DIR = "history-spool"
MAX_KEPT_BYTES = 256 * 1024 * 1024  # a kept write is a run's or a case's rows, never this much
_SUFFIX = ".json"
_count = itertools.count()  # two writes kept in one nanosecond by one process keep their order


def spool_dir(db: Path) -> Path:
    """The directory beside the database `db` where its waiting writes are kept."""
    return db.with_name(SPOOL_DIR)


def keep(db: Path, write: Mapping[str, Any]) -> Path:
    """Keep `write` (a JSON object with its `kind`) durably until `db` can take it; its file."""
    directory = ensure_dir(spool_dir(db))
    name = f"{time.time_ns():020d}-{os.getpid()}-{next(_count):06d}-{write['kind']}{_SUFFIX}"
    temporary = directory / f".{name}.tmp"
    data = json.dumps(write, ensure_ascii=False, separators=(",", ":")).encode()
    fd = open_file(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        target = directory / name
        os.rename(temporary, target)
    except BaseException:  # a full disk: no half-written file left behind per refused write
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return target


def waiting(db: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The writes kept for `db`, oldest first. A file that does not read as a kept write (not
    ours, damaged) is left where it is for a person to look at, and skipped."""
    try:
        names = sorted(
            entry.name
            for entry in os.scandir(spool_dir(db))
            if entry.name.endswith(_SUFFIX)
            and not entry.name.startswith(".")
            and entry.is_file(follow_symlinks=False)  # a FIFO here would hang every opener
        )
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        path = spool_dir(db) / name
        try:
            write = json.loads(read_capped(path, MAX_KEPT_BYTES))
        except FileNotFoundError:  # another process wrote it meanwhile
            continue
        except (OSError, FileRefused, ValueError, UnicodeDecodeError):
            continue
        if isinstance(write, dict) and isinstance(write.get("kind"), str):
            found.append((path, write))
    return found
