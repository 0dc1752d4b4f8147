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

from engine.load.project import size_text
from engine.load.yaml_positions import MAX_YAML_BYTES, Positions, YamlProblems, decode, parse_yaml
from engine.model.errors import Diagnostic

__all__ = ["MAX_YAML_BYTES", "FileRefused", "read_capped", "read_limited", "read_yaml_limited"]
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)


def _problem(code: str, message: str, file: str, hint: str) -> YamlProblems:
    return YamlProblems([Diagnostic(code, "error", message, file, "", 1, 1, hint)])


class FileRefused(ValueError):
    """A file `read_capped` would not read: not a regular file, or larger than the limit
    (`size`: the bytes found so far)."""

    def __init__(self, reason: str, size: int | None = None) -> None:
        super().__init__(reason)
        self.size = size


def read_capped(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; `FileRefused` (one
    sentence) for a file that is not regular (`/dev/zero`, a FIFO) or is larger; `OSError`
    when it cannot be opened or read. The limit holds while reading too (a growing file)."""
    fd = os.open(path, _READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused("it is not a regular file")
        if info.st_size > limit:
            raise _too_large(info.st_size, limit)
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > limit:
                raise _too_large(size, limit)
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_limited(path: str | Path, file: str, limit: int = MAX_YAML_BYTES) -> str:
    """The text of `path`, at most `limit` bytes; anything else is `YamlProblems`."""
    try:
        data = read_capped(path, limit)
    except FileRefused as refused:
        if refused.size is not None:
            raise _too_big(refused.size, limit, file) from None
        raise _problem("F000", f"cannot read the file: {refused}", file, "check the path") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise _problem("F000", f"cannot read the file: {reason}", file, "check the path") from None
    return decode(data, file)


def _too_large(size: int, limit: int) -> FileRefused:
    return FileRefused(
        f"it is too large to read ({size_text(size)}; the limit is {size_text(limit)})", size
    )


def _too_big(size: int, limit: int, file: str) -> YamlProblems:
    return _problem(
        "F000",
        f"the file is too large to read ({size_text(size)}; the limit is {size_text(limit)})",
        file,
        "keep inputs small; put large data in a file the subject reads, and name its path",
    )


def read_yaml_limited(
    path: Path, file: str | None = None, limit: int = MAX_YAML_BYTES
) -> tuple[Any, Positions]:
    """Read and parse a YAML file under the size limit (`file` names it in diagnostics)."""
    name = str(path) if file is None else file
    return parse_yaml(read_limited(path, name, limit), name)
