"""How much of a little-loops corpus `ll-loop migrate` turns into valid ll-loop loops.

Give the corpus with `LL_MIGRATE_CORPUS=DIR` (or as the first argument); without one this
benchmark says so and skips. A corpus is a directory with one folder per source — `builtins/`,
`project/`, `fixtures/`, `docs/` (any other folder counts as a source too) — holding
little-loops loops, and optionally `manifest.json`: a list of `{"source", "path",
"accepted"}` (path relative to the corpus) naming the files little-loops itself accepts. Only
those are measured; without a manifest every loop-shaped YAML file is. `python -m
bench.ll_corpus` builds such a corpus from a little-loops checkout.

Per source it prints: files little-loops accepts; how many `ll-loop validate` accepts as they
are (before); how many `ll-loop migrate` turns into loops that validate with no errors (after),
and how many of those also carry no blocker note; then, for every file that did not convert,
what blocked it.

With `LL_REFERENCE_PYTHON` pointing at a Python that can import `little_loops`, it also checks
that each converted loop that needs no agent (no prompt, no LLM judge, no sub-loop) takes the
same path under `ll-loop simulate` as under little-loops' own simulator, given the verdicts
little-loops' simulator produced (scenarios all-pass, all-fail, first-fail).

Run: `LL_MIGRATE_CORPUS=DIR .venv/bin/python -m bench migrate`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

SOURCES = ("builtins", "project", "fixtures", "docs")


def corpus_dir(argv: list[str]) -> Path | None:
    """The corpus: the first argument, else `LL_MIGRATE_CORPUS`; None when neither is a dir."""
    for given in (*argv[:1], os.environ.get("LL_MIGRATE_CORPUS", "")):
        if given and Path(given).is_dir():
            return Path(given)
    return None


def accepted_files(corpus: Path) -> dict[str, list[Path]]:
    """source -> the files little-loops accepts (the manifest, else every loop-shaped file)."""
    import yaml

    manifest = corpus / "manifest.json"
    found: dict[str, list[Path]] = defaultdict(list)
    if manifest.is_file():
        for entry in json.loads(manifest.read_text()):
            if entry.get("accepted", True):
                found[entry["source"]].append(corpus / entry["path"])
        return dict(found)
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        for path in sorted(folder.rglob("*.yaml")):
            try:
                data = yaml.safe_load(path.read_text())
            except (yaml.YAMLError, UnicodeDecodeError):
                continue
            if isinstance(data, dict) and "name" in data and ("states" in data or "flow" in data):
                found[folder.name].append(path)
    return dict(found)


def main(argv: list[str] | None = None) -> None:
    corpus = corpus_dir(argv or [])
    if corpus is None:
        print("skipped: no corpus (set LL_MIGRATE_CORPUS=DIR, see bench/bench_migrate.py)")
        return
    from engine.cli.validate_cmd import check_file
    from engine.migrate import migrate

    files = accepted_files(corpus)
    order = [s for s in SOURCES if s in files] + sorted(set(files) - set(SOURCES))
    totals = [0, 0, 0, 0]
    blocked: list[tuple[str, str]] = []
    converted: dict[Path, Path] = {}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'source':10} {'accepted':>8} {'before':>12} {'after':>12} {'clean':>12}")
        for source in order:
            paths = files[source]
            before = sum(1 for p in paths if not _errors(check_file(p)))
            search = [corpus / "builtins"] if (corpus / "builtins").is_dir() else []
            report = migrate(paths, out=Path(tmp) / source, force=True, validate=check_file,
                             search=search)  # fmt: skip
            by_source = {Path(f.source): f for f in report.files}
            after = clean = 0
            for path in paths:
                item = by_source.get(path.resolve())
                valid = item is not None and item.output and not item.errors
                valid = bool(valid) and item is not None and item.status != "failed"
                after += valid
                clean += item is not None and item.status == "converted"
                if item is not None and item.status == "converted" and item.output:
                    converted[path.resolve()] = Path(item.output)
                if item is None or item.status != "converted":
                    why = item.blockers[0] if item is not None and item.blockers else "not written"
                    if item is not None and item.reason:
                        why = item.reason
                    blocked.append((str(path.relative_to(corpus)), why))
            n = len(paths)
            totals = [totals[0] + n, totals[1] + before, totals[2] + after, totals[3] + clean]
            print(f"{source:10} {n:8} {_ratio(before, n):>12} {_ratio(after, n):>12} "
                  f"{_ratio(clean, n):>12}")  # fmt: skip
        n = totals[0]
        print(f"{'all':10} {n:8} {_ratio(totals[1], n):>12} {_ratio(totals[2], n):>12} "
              f"{_ratio(totals[3], n):>12}")  # fmt: skip
        print(f"after/before: {totals[2] / max(totals[1], 1):.1f}x")
        if blocked:
            print("not converted cleanly:")
            for where, why in blocked:
                print(f"  {where}: {why}")
        reference = os.environ.get("LL_REFERENCE_PYTHON")
        if reference:
            _compare_simulations(reference, converted)


def _errors(diagnostics: list[Any]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


def _ratio(count: int, total: int) -> str:
    return f"{count} ({100 * count / total:.0f}%)" if total else "0"


# --- little-loops' simulator vs ours ------------------------------------------------------------

_REFERENCE = r"""
import json, sys, contextlib, io
from pathlib import Path
from little_loops.fsm.validation import load_and_validate
from little_loops.fsm.executor import FSMExecutor, SimulationActionRunner
path, scenario = Path(sys.argv[1]), sys.argv[2]
fsm, _ = load_and_validate(path, raise_on_error=False)
fsm.max_steps = min(fsm.max_steps, 20)
fsm.context.setdefault("run_dir", "/tmp/ll-sim/")
steps = []
def on_event(event):
    kind = event.get("event")
    if kind == "state_enter":
        steps.append({"state": event.get("state"), "verdict": None, "to": None})
    elif kind == "evaluate" and steps:
        steps[-1]["verdict"] = event.get("verdict")
    elif kind == "route" and steps and event.get("to"):
        steps[-1]["to"] = event.get("to")
with contextlib.redirect_stdout(io.StringIO()):
    result = FSMExecutor(fsm, event_callback=on_event,
                         action_runner=SimulationActionRunner(scenario=scenario)).run()
print(json.dumps({"steps": steps, "terminated_by": result.terminated_by}))
"""

_SCENARIOS = ("all-pass", "all-fail", "first-fail")


def _agent_free(path: Path) -> bool:
    from engine.load.loader import load_loop_file
    from engine.model.errors import LoadError

    try:
        loop = load_loop_file(path)
    except LoadError:
        return False
    return not loop.uses_llm() and not any(s.is_subloop for s in loop.states.values())


def _compare_simulations(python: str, converted: dict[Path, Path]) -> None:
    """Same verdicts → same path: little-loops' simulated run replayed through ours."""
    from engine.graph.simulate import simulate
    from engine.load.loader import load_loop_file

    checked = same = 0
    loops: set[Path] = set()
    different: list[str] = []
    for original, ours in sorted(converted.items()):
        if not _agent_free(ours):
            continue
        loop = load_loop_file(ours)
        for scenario in _SCENARIOS:
            theirs = _reference_run(python, original, scenario)
            if theirs is None or not theirs["steps"]:
                continue
            checked += 1
            loops.add(original)
            overrides, path = _replay(loop, theirs["steps"])
            sim = simulate(loop, "all-yes", overrides, max_steps=len(path))
            walked = [s.state for s in sim.steps]
            if sim.final_state is not None and loop.states[sim.final_state].terminal:
                walked.append(sim.final_state)
            if walked[: len(path)] == path:
                same += 1
            else:
                different.append(f"{original.name} [{scenario}]: {path} vs {walked}")
    print(f"simulate: {same} of {checked} agent-free runs ({len(loops)} loops) take the same path")
    for line in different:
        print(f"  differs: {line}")


def _reference_run(python: str, path: Path, scenario: str) -> dict[str, Any] | None:
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run(
            [python, "-c", _REFERENCE, str(path), scenario],
            cwd=cwd, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    if done.returncode != 0:
        return None
    try:
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return result


def _replay(loop: Any, steps: list[dict[str, Any]]) -> tuple[dict[str, list[str]], list[str]]:
    """Our verdict for each visit of each state, and the states little-loops walked through."""
    overrides: dict[str, list[str]] = defaultdict(list)
    path: list[str] = []
    for step in steps:
        name = step["state"]
        path.append(name)
        state = loop.states.get(name)
        if state is None or state.terminal:
            break
        verdict = step["verdict"]
        if verdict is None:  # a next: step little-loops did not judge
            verdict = "yes" if step["to"] in (state.next, None) else "error"
        elif state.evaluate is not None and state.evaluate.type == "diff_stall":
            verdict = {"yes": "progress", "no": "stall"}.get(verdict, verdict)
        else:
            verdict = verdict.lower()
        overrides[name].append(verdict)
    return dict(overrides), path


if __name__ == "__main__":
    main(sys.argv[1:])
