"""JSON files people write by hand (`.mcp.json`, `.loops/prices.json`): one reader, so a file
that is not usable JSON is one sentence with its `file:line:column`.

A UTF-8 byte order mark (what some Windows editors save) is read past, as RFC 8259 allows;
`json.loads` refused it with "Unexpected UTF-8 BOM (decode using utf-8-sig)". UTF-16 text and
bytes that are not UTF-8 are named as such, and JSON nested past Python's recursion limit is a
`ValueError` like any other bad JSON (`engine.model.jsontext`), not an internal error. Only a
regular file of at most 10 MiB is read: a FIFO or `/dev/zero` is refused, never waited on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.load.bounded import FileRefused, read_capped
from engine.model import jsontext

MAX_JSON_BYTES = 10 * 1024 * 1024
"""A configuration written by hand is far smaller; past this it is not read into memory."""


class JsonFileError(ValueError):
    """`path:line:column: reason`; `location` and `reason` apart for callers that word it."""

    def __init__(self, path: Path, line: int, column: int, reason: str) -> None:
        self.location = f"{path}:{line}:{column}"
        self.reason = reason
        super().__init__(f"{self.location}: {reason}")


def read_json_file(path: Path) -> Any:
    """The JSON value in the file at `path`; `OSError` when it cannot be read, `JsonFileError`
    when what it holds is not JSON."""
    try:
        raw = read_capped(path, MAX_JSON_BYTES)
    except FileRefused as refused:  # a FIFO, a device, a huge file: never waited on or read
        raise JsonFileError(path, 1, 1, f"cannot read the file: {refused}") from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise JsonFileError(path, 1, 1, "the file is UTF-16 text; save it as UTF-8")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        byte = raw[exc.start]
        raise JsonFileError(path, line, column, f"not UTF-8 text (byte 0x{byte:02x})") from None
    try:
        return jsontext.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonFileError(path, exc.lineno, exc.colno, f"not valid JSON: {exc.msg}") from None
    except ValueError as exc:  # nested too deeply
        raise JsonFileError(path, 1, 1, f"not usable JSON: {exc}") from None
