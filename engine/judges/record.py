"""The outputs record: everything judges may look at for one piece of work (pure, no IO).

A plain dict, as agent_eval's judges expect (`outputs["stdout"]`, `outputs["main_content"]`):
`stdout`, `stderr`, `exit_code`, `duration_s`, `files` ({path: text}), `modified_files`, and for
an agent CLI that streams JSON events `conversation`, `tool_calls` ({name, input}), `events`,
`token_usage`, `cost_usd`, `num_turns`; for each output directory `<dir>_content` and
`<dir>_file` (its first file). The `format_*` functions render it for LLM judge templates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

OutputsRecord = dict[str, Any]

# What an LLM template shows of one file and of a whole listing (a judge reads a summary,
# not a repository).
FILE_CHARS = 20_000
LISTING_CHARS = 100_000
TRACE_KEYS = ("conversation", "tool_calls", "events", "token_usage", "cost_usd", "num_turns")


def build_record(
    *,
    stdout: str = "",
    stderr: str = "",
    exit_code: int | None = 0,
    duration_s: float = 0.0,
    trace: Mapping[str, Any] | None = None,
    files: Mapping[str, Any] | None = None,
    modified_files: Sequence[str] = (),
    output_dirs: Mapping[str, Sequence[str]] | None = None,
    cost_usd: float | None = 0.0,
    untraced_agent: bool = False,
) -> OutputsRecord:
    """An outputs record. `output_dirs` maps a directory (as configured) to the relative paths
    of its files in `files`, in order: each gives `<name>_content` and `<name>_file`.
    `cost_usd` is what the work cost when no agent trace says (a prompt answered through the
    SDK): a `cost_budget` judge must see it. None (in the trace or here) is a cost nobody
    reported (an agent CLI's plain output): the record says null, not $0. `untraced_agent`:
    an agent CLI whose output was no event stream, so its `num_turns` and `tool_calls` are
    null (not known), where work that is no agent's took 0 turns and called no tool."""
    trace = trace or {}
    cost = trace.get("cost_usd", cost_usd)
    turns = trace.get("num_turns", None if untraced_agent else 0)
    record: OutputsRecord = {
        "stdout": stdout,
        "stderr": stderr,
        "exit_code": exit_code,
        "duration_s": round(duration_s, 3),
        "files": dict(files or {}),
        "modified_files": list(modified_files),
        "conversation": str(trace.get("conversation") or ""),
        "tool_calls": None if untraced_agent else list(trace.get("tool_calls") or ()),
        "events": list(trace.get("events") or ()),
        "token_usage": dict(trace.get("token_usage") or {}),
        "cost_usd": None if cost is None else float(cost or cost_usd or 0.0),
        "num_turns": None if turns is None else int(turns),
    }
    for directory, paths in (output_dirs or {}).items():
        key = dir_field_key(directory)
        first = next((p for p in paths if isinstance(record["files"].get(p), str)), None)
        record[f"{key}_content"] = record["files"][first] if first else ""
        record[f"{key}_file"] = first or ""
    return record


def dir_field_key(directory: str) -> str:
    """The `<key>` of the `<key>_content` / `<key>_file` fields an output directory gives
    (`out/main-docs/` → `main_docs`)."""
    return PurePosixPath(directory.rstrip("/")).name.replace("-", "_").replace(".", "_")


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit:,} more characters not shown ...]"


def format_outputs(record: Mapping[str, Any]) -> str:
    """`{{ outputs }}`: the files, then stdout, stderr and the exit code, as plain text."""
    parts: list[str] = []
    files = record.get("files") or {}
    for path in sorted(files):
        text = files[path]
        body = text if isinstance(text, str) else "(binary file)"
        parts.append(f"--- file: {path}\n{_clip(body, FILE_CHARS)}")
    stdout = str(record.get("stdout") or "")
    if stdout.strip():
        parts.append(f"--- stdout\n{_clip(stdout, LISTING_CHARS)}")
    stderr = str(record.get("stderr") or "")
    if stderr.strip():
        parts.append(f"--- stderr\n{_clip(stderr, FILE_CHARS)}")
    if record.get("exit_code") not in (None, 0):
        parts.append(f"--- exit code: {record.get('exit_code')}")
    listing = "\n".join(parts) if parts else "(no output)"
    return _clip(listing, LISTING_CHARS)


def outputs_material(record: Mapping[str, Any]) -> list[str]:
    """What of `{{ outputs }}` is the work's own text (a quote must come from one of these):
    each file's text and stdout and stderr as shown, without our labels and placeholders, so
    "--- stdout" or "(no output)" is never evidence."""
    files = record.get("files") or {}
    parts = [files[path][:FILE_CHARS] for path in sorted(files) if isinstance(files[path], str)]
    parts.append(str(record.get("stdout") or "")[:LISTING_CHARS])
    parts.append(str(record.get("stderr") or "")[:FILE_CHARS])
    return [part for part in parts if part.strip()]


def format_tool_trace(record: Mapping[str, Any]) -> str:
    """`{{ tool_trace }}`: the tool calls in order, one line each."""
    if record.get("tool_calls", []) is None:
        return "(tool calls not recorded)"  # not "none": nobody knows
    calls = record.get("tool_calls") or []
    if not calls:
        return "(no tool calls)"
    lines = []
    for number, call in enumerate(calls, 1):
        name = call.get("name", "?") if isinstance(call, Mapping) else "?"
        given = call.get("input", {}) if isinstance(call, Mapping) else call
        shown = json.dumps(given, ensure_ascii=False, default=str)
        lines.append(f"{number}. {name} {shown[:500]}")
    return _clip("\n".join(lines), LISTING_CHARS)


def format_evidence(record: Mapping[str, Any]) -> str:
    """`{{ evidence }}`: facts a judge can verify: tools used, files changed, turns, cost."""
    counts: dict[str, int] = {}
    for call in record.get("tool_calls") or []:
        if isinstance(call, Mapping):
            name = str(call.get("name", "?"))
            counts[name] = counts.get(name, 0) + 1
    tools = ", ".join(f"{name} x{n}" for name, n in counts.items()) or "none"
    if record.get("tool_calls", []) is None:
        tools = "not recorded"
    modified = ", ".join(record.get("modified_files") or []) or "none"
    lines = [
        f"tool calls: {tools}",
        f"files modified: {modified}",
        f"exit code: {record.get('exit_code')}",
    ]
    if record.get("num_turns"):
        lines.append(f"turns: {record['num_turns']}")
    if record.get("cost_usd"):
        lines.append(f"agent cost: ${float(record['cost_usd']):.4f}")
    return "\n".join(lines)


def format_mapping(value: Mapping[str, Any]) -> str:
    """`{{ inputs }}` / `{{ annotations }}`: one `key: value` line each (values as JSON)."""
    if not value:
        return "(none)"
    return "\n".join(
        f"{key}: {item if isinstance(item, str) else json.dumps(item, default=str)}"
        for key, item in value.items()
    )
