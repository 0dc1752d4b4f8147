"""The browser side of the report tests: Chromium from the OS through Playwright, and the checks
every report must pass (no console errors or network requests, one node per state, the
highlighted path equal to the events)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.load.loader import load_loop_file

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def open_browser() -> Iterator[Any]:
    """A Chromium page with a fresh profile; fails (not skips) when the browser is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright is missing: pip install -e '.[report-test]' (make test does)")
    if not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None:
        pytest.fail(
            f"Chromium is missing at {CHROMIUM}: apt-get install -y chromium (.ci/run does)"
        )
    with sync_playwright() as driver, tempfile.TemporaryDirectory() as profile:
        context = driver.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=BROWSER_ARGS,
            viewport={"width": 1200, "height": 900},
            # its crash reports and dconf cache go to the profile, not the tester's HOME
            env={
                **os.environ,
                "HOME": profile,
                "XDG_CONFIG_HOME": profile,
                "XDG_CACHE_HOME": profile,
            },
        )
        try:
            yield context.new_page()
        finally:
            context.close()


def expected_path(events: list[dict[str, Any]]) -> tuple[Counter[str], Counter[tuple[str, str]]]:
    """Visits and transitions of the top run, straight from its events."""
    visits: Counter[str] = Counter()
    moves: Counter[tuple[str, str]] = Counter()
    for event in events:
        if event.get("depth"):
            continue
        kind = event["event"]
        # a route moves along its edge; an exhausted retry moves on along `retry_exhausted`
        moved = (kind == "route" and event.get("target")) or (
            kind == "retry" and event.get("exhausted")
        )
        if kind == "state_enter":
            visits[event["state"]] += 1
        elif moved:
            moves[(event["state"], event["target"])] += 1
        elif event["event"] == "loop_complete" and event["terminated_by"] == "terminal":
            visits[event["final_state"]] += 1
    return visits, moves


def load_offline(page: Any, report: Path) -> None:
    """Open `report`: it must get ready with no console error and fetch nothing."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: None if r.url.startswith(("file:", "data:"))
            else problems.append(f"network request: {r.url}"))  # fmt: skip
    page.goto(report.as_uri())
    page.wait_for_selector("body[data-ready=yes]")
    assert problems == []


def check_report(page: Any, report: Path, loop_file: Path, run_dir: Path) -> None:
    """Load `report` offline and check it against the loop and the run's events."""
    load_offline(page, report)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    visits, moves = expected_path(events)
    states = list(load_loop_file(loop_file).states)
    drawn = page.eval_on_selector_all(
        "svg.graph .node", "nodes => nodes.map(n => [n.dataset.state, +n.dataset.visits])"
    )
    assert sorted(name for name, _ in drawn) == sorted(states)
    assert {name: count for name, count in drawn if count} == dict(visits)
    taken = page.eval_on_selector_all(
        "svg.graph .edge.taken",
        "edges => edges.map(e => [e.dataset.source, e.dataset.target, +e.dataset.count])",
    )
    assert {(s, t): c for s, t, c in taken} == dict(moves)
    untaken = page.eval_on_selector_all(
        "svg.graph .edge:not(.taken)", "edges => edges.map(e => +e.dataset.count)"
    )
    assert set(untaken) <= {0}
