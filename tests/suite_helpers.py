"""Helpers for the suite tests: write a suite and its dataset, run `ll-harness suite` for real."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

from tests.harness_helpers import harness


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def dataset(root: Path, cases: dict[str, dict[str, Any]], name: str = "cases") -> Path:
    """One folder per case: `{id: {"input": {...}, "annotations": {...}}}`."""
    folder = root / name
    for case_id, parts in cases.items():
        (folder / case_id).mkdir(parents=True, exist_ok=True)
        if "input" in parts:
            (folder / case_id / "input.yaml").write_text(json.dumps(parts["input"]))
        if "annotations" in parts:
            (folder / case_id / "annotations.yaml").write_text(json.dumps(parts["annotations"]))
    return folder


def own_project(cwd: Path) -> Path:
    """Make `cwd` a project of its own (`.loops/`), so its history is not found in an ancestor
    (a `/tmp/.loops` left by anyone would otherwise collect every test's rows)."""
    (cwd / ".loops").mkdir(exist_ok=True)
    return cwd


def suite(cwd: Path, *args: str, timeout: float = 180) -> tuple[int, str, str]:
    done = harness(own_project(cwd), "suite", *args, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def suite_json(cwd: Path, *args: str, timeout: float = 180) -> tuple[int, dict[str, Any], str]:
    code, out, err = suite(cwd, *args, "--output", "json", timeout=timeout)
    try:
        return code, json.loads(out), err
    except ValueError:
        raise AssertionError(f"not JSON (exit {code}):\n{out}\n{err}") from None


def db_rows(root: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(root / ".loops" / "history.db") as db:
        return list(db.execute(sql, params).fetchall())


def by_judge(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {j["judge"]: j for j in data["judges"]}


def leftovers(run_id: str) -> list[Path]:
    """The run's workspace roots that still exist (none, once it finished)."""
    from engine.suites.workspace import scratch_roots

    return [root for root in scratch_roots(run_id) if root.exists()]


def recorded(root: Path) -> int:
    """Case rows committed so far (0 while the database or its tables do not exist yet)."""
    if not (root / ".loops" / "history.db").exists():
        return 0
    try:
        with sqlite3.connect(root / ".loops" / "history.db", timeout=5) as db:
            return int(db.execute("SELECT count(*) FROM suite_cases").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
