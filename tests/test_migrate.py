"""`ll-loop migrate`: little-loops loops in (tests/data/migrate, written for these tests), valid
ll-loop loops out, with a per-file report of what could not be kept."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.load.loader import load_loop_file
from engine.migrate.expressions import Rewriter
from engine.migrate.keys import table
from engine.migrate.routes import UNROUTED, plan_routes
from tests.lint_cli_helpers import REPO, ll_loop
from tests.properties import examples

DATA = Path(__file__).parent / "data" / "migrate"
LOOPS = ["fix-lint.yaml", "release.yaml", "polish.yaml", "smoke.yaml", "coverage.yaml"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    shutil.copytree(DATA, tmp_path / "loops")
    return tmp_path / "loops"


def migrate(work: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = ll_loop("migrate", *args, "--format", "json", cwd=work)
    assert result.stderr == "" or "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {Path(f["source"]).name: f for f in report["files"]}


def test_every_loop_and_what_it_uses_is_converted_and_validated(work: Path) -> None:
    code, report = migrate(work, *LOOPS)
    files = by_name(report)
    assert code == 1  # coverage.yaml is blocked
    assert set(files) == {*LOOPS, "check-version.yaml", "steps.yaml"}  # sub-loop and library
    assert {n: f["status"] for n, f in files.items()} == {
        **{n: "converted" for n in LOOPS if n != "coverage.yaml"},
        "coverage.yaml": "blocked",
        "check-version.yaml": "converted",
        "steps.yaml": "converted",
    }
    for name, item in files.items():
        assert item["output"].endswith(".ll.yaml") and Path(item["output"]).is_file(), name
        if item["role"] == "loop" and name != "coverage.yaml":
            assert item["diagnostics"] == [] or all(
                d["severity"] != "error" for d in item["diagnostics"]
            )


def test_keys_are_renamed_and_the_fragments_stay_fragments(work: Path) -> None:
    migrate(work, "fix-lint.yaml")
    text = (work / "fix-lint.ll.yaml").read_text()
    assert text.startswith("# Lint, let an agent fix")  # the header comment is kept
    assert "import:\n- lib/steps.ll.yaml" in text
    loop = load_loop_file(work / "fix-lint.ll.yaml")
    assert loop.max_steps == 9  # 3 passes x 3 working states
    assert loop.input_key == "target" and loop.parameters["target"].required
    assert loop.scope == ("${run.dir}", "${context.target}")
    lint, fix, count = (loop.states[n] for n in ("lint", "fix", "count"))
    assert dict(lint.routes) == {"yes": "done", "no": "fix"}  # on_success / on_failure
    assert lint.evaluate is not None and lint.evaluate.type == "exit_code"  # from the fragment
    assert fix.action_type == "prompt" and fix.action == "/ll:fix-lint ${context.target}"
    assert loop.llm.runner == "cmd:claude --dangerously-skip-permissions -p"
    assert count.action is not None and "${run.dir}/fix-lint" in count.action  # bound at load
    assert loop.states["failed"].failure  # a terminal little-loops treats as failed by name
    written = (work / "fix-lint.ll.yaml").read_text()
    assert "fragment: exit_gate" in written and "fragment: counter" in written
    assert "with_rate_limits" not in written  # nothing of it has an equivalent


def test_the_report_says_what_was_not_kept_and_why(work: Path) -> None:
    _, report = migrate(work, "fix-lint.yaml", "coverage.yaml")
    notes = {
        (n["kind"], n["where"]): n["message"] for n in by_name(report)["fix-lint.yaml"]["notes"]
    }
    assert "another session" in notes[("dropped", "on_handoff")]
    assert ("dropped", "visibility") in notes
    assert "rate-limit" in notes[("dropped", "states.fix.on_rate_limit_exhausted")]
    coverage = by_name(report)["coverage.yaml"]
    assert coverage["status"] == "blocked"
    assert coverage["blockers"] == [
        "states.measure.evaluate.type: evaluator action_stall has no equivalent in ll-loop"
    ]


def test_the_text_report_lists_each_file(work: Path) -> None:
    result = ll_loop("migrate", "coverage.yaml", cwd=work)
    assert result.returncode == 1
    assert re.search(r"^BLOCKED +\S*coverage\.yaml → \S*coverage\.ll\.yaml$", result.stdout, re.M)
    assert "blocker: states.measure.evaluate.type" in result.stdout
    assert result.stdout.rstrip().endswith("1 file(s): 1 blocked")


def test_it_never_overwrites_without_force(work: Path) -> None:
    assert migrate(work, "smoke.yaml")[0] == 0
    (work / "smoke.ll.yaml").write_text("# edited by hand\n")
    code, report = migrate(work, "smoke.yaml")
    assert code == 1 and by_name(report)["smoke.yaml"]["status"] == "skipped"
    assert (work / "smoke.ll.yaml").read_text() == "# edited by hand\n"
    assert migrate(work, "smoke.yaml", "--force")[0] == 0
    assert "name: smoke" in (work / "smoke.ll.yaml").read_text()


def test_out_keeps_the_layout_and_the_names(work: Path, tmp_path: Path) -> None:
    out = tmp_path / "converted"
    code, _ = migrate(work, "release.yaml", "fix-lint.yaml", "--out", str(out))
    assert code == 0
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.yaml")) == [
        "check-version.yaml", "fix-lint.yaml", "lib/steps.yaml", "release.yaml",
    ]  # fmt: skip
    assert "loop: check-version\n" in (out / "release.yaml").read_text()
    assert "- lib/steps.yaml" in (out / "fix-lint.yaml").read_text()


def test_a_converted_parent_passes_its_directory_and_context_to_the_child(work: Path) -> None:
    migrate(work, "release.yaml")
    child = load_loop_file(work / "check-version.ll.yaml")
    assert set(child.parameters) == {"run_dir", "version"}
    result = ll_loop("run", "release.ll.yaml", "--json", cwd=work)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["final_state"] == "done"  # SHIP, printed in capitals, routed as `ship`
    artifacts = work / ".loops" / "runs" / outcome["run_id"] / "artifacts"
    assert (artifacts / "verdict.txt").read_text() == "SHIP\n"  # written by the child
    assert (artifacts / "log.txt").read_text() == "prepared\n"


def test_a_score_plateau_is_checked_as_little_loops_checked_it(work: Path) -> None:
    migrate(work, "polish.yaml")
    result = ll_loop("run", "polish.ll.yaml", "--json", cwd=work)
    assert result.returncode == 0, result.stderr
    # scores 5, 5, 5: fewer than two is progress; then two rounds without beating the best
    assert json.loads(result.stdout)["steps"] == 6


def test_from_and_flow_are_resolved_and_commands_stay_commands(work: Path) -> None:
    migrate(work, "smoke.yaml")
    loop = load_loop_file(work / "smoke.ll.yaml")
    assert list(loop.states) == ["build", "test", "report", "done"]
    assert dict(loop.context) == {"build_cmd": "true", "test_cmd": "true"}  # from base-check
    assert loop.states["test"].action == "${context.test_cmd | raw} --quick"
    result = ll_loop("run", "smoke.ll.yaml", "--json", cwd=work)
    assert result.returncode == 0 and json.loads(result.stdout)["final_state"] == "done"


def test_simulate_takes_the_path_the_original_documents(work: Path) -> None:
    migrate(work, "fix-lint.yaml")
    # lint fails once, the agent fixes, the counter allows another round, lint passes
    result = ll_loop("simulate", "fix-lint.ll.yaml", "--verdict", "lint=no,yes", "--json", cwd=work)
    assert result.returncode == 0, result.stderr
    path = [(s["state"], s["verdict"]) for s in json.loads(result.stdout)["path"]]
    assert path == [("lint", "no"), ("fix", "yes"), ("count", "yes"), ("lint", "yes")]


# --- the parts ----------------------------------------------------------------------------------


def test_routes_follow_little_loops_where_ll_loop_would_fall_back_elsewhere() -> None:
    # `no` fell back to on_error in little-loops
    plan = plan_routes(["yes", "no", "error"], {"yes": "a", "error": "e"}, None, str)
    assert plan.shorthand == {"yes": "a", "error": "e", "no": "e"}
    # `_` came before `_error`: the error route never applied
    plan = plan_routes(["yes", "no", "error"], {}, {"yes": "a", "_": "d", "_error": "e"}, str)
    assert plan.table == {"_": "d", "yes": "a"}
    # a verdict nobody routed goes to the failure terminal the caller adds
    plan = plan_routes(["target", "progress", "stall", "error"], {"target": "t"}, None, str)
    assert plan.unrouted == ["progress", "stall"]
    assert plan.shorthand["stall"] == UNROUTED
    # partial keeps ll-loop's fallback to on_no (little-loops dead-ended there)
    llm = ["yes", "no", "partial", "blocked", "cannot_judge", "error"]
    plan = plan_routes(llm, {"yes": "a", "no": "b", "error": "e"}, None, str)
    assert plan.unrouted == [] and "partial" not in plan.shorthand


def test_expressions_are_rewritten_for_ll_loop() -> None:
    rewrite = Rewriter()
    assert rewrite.text("${context.run_dir}/x ${state.iteration}") == "${run.dir}/x ${state.step}"
    assert rewrite.text("${context.run_dir:default=.}") == "${run.dir}"
    assert rewrite.text("${loop.started_at:0:19}") == "${run.started_at[0:19]}"
    child = Rewriter(run_dir="${context.run_dir | default(run.dir)}")
    assert child.text("${context.run_dir}") == "${context.run_dir | default(run.dir)}"


def test_raw_is_added_only_where_a_value_was_code() -> None:
    rewrite = Rewriter(defaults={"args": "-q -x", "name": "a"})
    script = '${context.cmd} "${context.name}" ${context.name}\nx=${context.cmd}; ${context.args}'
    # the command and what it is given were code to little-loops; an assignment is a value
    assert rewrite.shell(script) == (
        '${context.cmd | raw} "${context.name | raw}" ${context.name | raw}\n'
        "x=${context.cmd}; ${context.args | raw}"
    )
    assert rewrite.shell('ls "${context.name}" ${context.name}') == (
        'ls "${context.name}" ${context.name}'  # a known command's arguments stay quoted
    )
    assert rewrite.shell("echo '${context.cmd}' <<EOF\n${context.cmd}\nEOF\n") == (
        "echo '${context.cmd}' <<EOF\n${context.cmd}\nEOF\n"
    )


def test_docs_migrating_lists_every_key() -> None:
    doc = (REPO / "docs" / "migrating.md").read_text()
    missing = [f"{k.place}.{k.key}" for k in table() if f"`{k.key}`" not in doc]
    assert missing == []


# --- whatever a file says, migrate reports on it: it never crashes -----------------------------

_ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
_KEYS = st.sampled_from(
    ["action", "action_type", "evaluate", "route", "on_yes", "on_success", "next", "loop",
     "with", "terminal", "fragment", "capture", "context_passthrough", "timeout", "type"]
)  # fmt: skip
_STATE = st.dictionaries(_KEYS, _ANY | st.sampled_from(["a", "b", "/ll:x", "slash_command"]))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    states=st.dictionaries(st.sampled_from(["a", "b", "c"]), _STATE, min_size=1, max_size=3),
    top=st.dictionaries(
        st.sampled_from(["import", "from", "flow", "input_key", "parameters", "scope", "llm"]),
        _ANY,
        max_size=3,
    ),
)
def test_migrate_reports_on_anything(states: dict[str, Any], top: dict[str, Any]) -> None:
    from engine.cli.validate_cmd import check_file
    from engine.migrate import migrate as run_migrate

    data = {"name": "fuzz", "initial": "a", **top, "states": states}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.yaml"
        path.write_text(yaml.safe_dump(data))
        report = run_migrate([path], out=Path(tmp) / "out", validate=check_file)
    assert report.files and report.files[0].source == str(path)
    assert all(f.status in ("converted", "blocked", "skipped", "failed") for f in report.files)


def test_values_pasted_into_code_arithmetic_and_comments_keep_working(work: Path) -> None:
    code, report = migrate(work, "paste.yaml")
    assert code == 0, report
    action = load_loop_file(work / "paste.ll.yaml").states["compute"].action or ""
    assert "# greets $${context.name}" in action  # a comment: literal text
    assert "print('hello ${context.name | raw}')" in action  # python code: pasted, as before
    assert "$(( ${context.n | default(1) | integer} + 1 ))" in action  # a number
    assert '${context.test_cmd | raw} "${context.name | raw}"' in action  # pasted, as before
    result = ll_loop("run", "paste.ll.yaml", "--json", cwd=work)
    assert result.returncode == 0, result.stderr
    run = work / ".loops" / "runs" / json.loads(result.stdout)["run_id"]
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    [done] = [e for e in events if e["event"] == "action_complete"]
    assert done["output"] == "hello world\nsum=3\n"
