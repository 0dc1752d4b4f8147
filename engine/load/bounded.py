"""Read a YAML file with a size limit, so a huge (or endless) file is refused, not loaded.

A suite reads files it did not write (a dataset's `input.yaml` and `annotations.yaml`, perhaps
generated); a 100 MB file there must cost one sentence, not 100 MB of memory and a minute of
parsing. The limit is checked before reading and again while reading (a file that grows, or a
FIFO, cannot get past it). The text then goes through the one YAML reader (`parse_yaml`), which
refuses alias bombs, deep nesting and tags.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from engine.load.yaml_positions import Positions, YamlProblems, decode, parse_yaml
from engine.model.errors import Diagnostic

MAX_YAML_BYTES = 10 * 1024 * 1024
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)


def _problem(code: str, message: str, file: str, hint: str) -> YamlProblems:
    return YamlProblems([Diagnostic(code, "error", message, file, "", 1, 1, hint)])


def read_limited(path: Path, file: str, limit: int = MAX_YAML_BYTES) -> str:
    """The text of `path`, at most `limit` bytes; anything else is `YamlProblems`."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise _problem("F000", f"cannot read the file: {reason}", file, "check the path") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _problem(
                "F000", "cannot read the file: it is not a regular file", file, "check the path"
            )
        if info.st_size > limit:
            raise _too_big(info.st_size, limit, file)
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise _too_big(size, limit, file)
            chunks.append(chunk)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise _problem("F000", f"cannot read the file: {reason}", file, "check the path") from None
    finally:
        os.close(fd)
    return decode(b"".join(chunks), file)


def _too_big(size: int, limit: int, file: str) -> YamlProblems:
    return _problem(
        "F000",
        f"the file is too large to read ({_mb(size)}; the limit is {_mb(limit)})",
        file,
        "keep inputs small; put large data in a file the subject reads, and name its path",
    )


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB" if size >= 1024 * 1024 else f"{size:,} bytes"


def read_yaml_limited(
    path: Path, file: str | None = None, limit: int = MAX_YAML_BYTES
) -> tuple[Any, Positions]:
    """Read and parse a YAML file under the size limit (`file` names it in diagnostics)."""
    name = str(path) if file is None else file
    return parse_yaml(read_limited(path, name, limit), name)
