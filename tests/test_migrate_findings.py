"""`ll-loop migrate` on the cases a tester found wrong: each test writes little-loops files in
tmp_path, runs the command line, and checks what the report and the written files say."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

from engine.load.loader import load_loop_file
from tests.cli import ll_loop
from tests.loopback_server import LoopbackServer, verdict_reply


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def migrate(cwd: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = ll_loop(cwd, "migrate", *args, "--format", "json")
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def files(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {Path(f["source"]).name: f for f in report["files"]}


def notes(item: dict[str, Any], kind: str) -> dict[str, str]:
    return {n["where"]: n["message"] for n in item["notes"] if n["kind"] == kind}


# --- 1. an mcp_tool gate keeps its verdicts -----------------------------------------------------

_GATE = """
name: gate
initial: check_mcp
states:
  check_mcp:
    action_type: mcp_tool
    action: playwright/screenshot
    params: {url: "http://localhost:3000"}
    route:
      success: done
      tool_error: fix
      not_found: done
      timeout: fix
  fix:
    action: "true"
    next: check_mcp
  done: {terminal: true}
"""


def test_an_mcp_gate_routes_each_mcp_result_verdict_where_little_loops_did(tmp_path: Path) -> None:
    write(tmp_path, "gate.yaml", _GATE)
    code, report = migrate(tmp_path, "gate.yaml")
    item = files(report)["gate.yaml"]
    assert code == 0 and item["status"] == "converted"
    assert not notes(item, "dropped")  # no route called "never applied"
    state = load_loop_file(tmp_path / "gate.ll.yaml").states["check_mcp"]
    assert state.evaluate is not None and state.evaluate.type == "classify"
    assert state.targets() == {
        "success": "done",
        "tool_error": "fix",
        "not_found": "done",
        "timeout": "fix",
        "error": "fix",  # a broken call was tool_error to little-loops
    }
    assert "unrouted" not in (tmp_path / "gate.ll.yaml").read_text()
    simulated = ll_loop(
        tmp_path, "simulate", "gate.ll.yaml", "--verdict", "check_mcp=timeout,success", "--json"
    )
    path = [(s["state"], s["verdict"]) for s in simulated.json["path"]]
    assert path == [("check_mcp", "timeout"), ("fix", "yes"), ("check_mcp", "success")]


def test_an_mcp_gate_says_which_of_its_routes_never_applied_in_little_loops(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        "gate.yaml",
        _GATE.replace(
            "    route:\n      success: done\n      tool_error: fix\n      not_found: done\n"
            "      timeout: fix\n",
            "    on_yes: done\n    on_tool_error: fix\n",
        ),
    )
    _, report = migrate(tmp_path, "gate.yaml")
    dropped = notes(files(report)["gate.yaml"], "dropped")
    assert "mcp_result never produces 'yes'" in dropped["states.check_mcp.on_yes"]
    routes = load_loop_file(tmp_path / "gate.ll.yaml").states["check_mcp"].targets()
    assert routes["tool_error"] == "fix" and routes["success"] == "unrouted"


# --- 13. an output path that is a directory ------------------------------------------------------


def test_an_mcp_action_without_a_server_is_a_blocker(tmp_path: Path) -> None:
    write(tmp_path, "gate.yaml", _GATE.replace("playwright/screenshot", "github__list_issues"))
    code, report = migrate(tmp_path, "gate.yaml")
    item = files(report)["gate.yaml"]
    assert code == 1 and item["status"] == "blocked"
    assert any("mcp_tool needs action: SERVER/TOOL" in b for b in item["blockers"])


# --- 2. migrate never converts its own output again ---------------------------------------------

_SIMPLE = """
name: simple
initial: check
context: {run_dir: ""}
states:
  check:
    action: test -d ${context.run_dir}
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_a_directory_migrated_twice_skips_the_files_migrate_wrote(tmp_path: Path) -> None:
    loops = tmp_path / "loops"
    write(loops, "simple.yaml", _SIMPLE)
    migrate(tmp_path, "loops")
    _, report = migrate(tmp_path, "loops")
    assert not list(loops.glob("*.ll.ll.yaml"))
    output = files(report)["simple.ll.yaml"]
    assert output["status"] == "skipped" and "not converted again" in output["reason"]


def test_a_file_migrate_wrote_is_not_converted_again_when_named(tmp_path: Path) -> None:
    write(tmp_path, "plain.yaml", _SIMPLE.replace("${context.run_dir}", "/tmp"))
    migrate(tmp_path, "plain.yaml")
    code, report = migrate(tmp_path, "plain.ll.yaml")
    output = files(report)["plain.ll.yaml"]
    assert code == 0 and output["status"] == "skipped" and "not converted again" in output["reason"]
    assert not list(tmp_path.glob("*.ll.ll.yaml"))


def test_a_file_that_is_already_an_ll_loop_loop_is_left_alone(tmp_path: Path) -> None:
    write(tmp_path, "simple.yaml", _SIMPLE)
    migrate(tmp_path, "simple.yaml")
    (tmp_path / "again.yaml").write_text((tmp_path / "simple.ll.yaml").read_text())
    code, report = migrate(tmp_path, "again.yaml")
    item = files(report)["again.yaml"]
    assert code == 0 and item["status"] == "skipped"
    assert item["reason"].startswith("already an ll-loop loop")
    assert not (tmp_path / "again.ll.yaml").exists()


# --- 3. max_retries counted consecutive re-entries in little-loops ------------------------------

_RETRY = """
name: retry
initial: check
states:
  check:
    action: "false"
    on_yes: done
    on_no: {on_no}
    on_error: fix
    max_retries: 1
    on_retry_exhausted: gave_up
  fix:
    action: "true"
    next: check
  done: {{terminal: true}}
  gave_up: {{terminal: true}}
"""


def test_retries_a_state_never_spends_in_little_loops_are_dropped(tmp_path: Path) -> None:
    write(tmp_path, "retry.yaml", _RETRY.format(on_no="fix"))
    _, report = migrate(tmp_path, "retry.yaml")
    assert (
        "never routes to itself"
        in notes(files(report)["retry.yaml"], "dropped")["states.check.max_retries"]
    )
    # little-loops: check, fix, check, fix, check ... never gave_up; the converted loop agrees
    ran = ll_loop(
        tmp_path, "simulate", "retry.ll.yaml", "--verdict", "check=no,no,no,yes", "--json"
    )
    assert [s["state"] for s in ran.json["path"]][-1] == "check"
    assert ran.json["final_state"] == "done"


def test_retries_also_counted_along_another_cycle_are_a_changed_note(tmp_path: Path) -> None:
    write(tmp_path, "retry.yaml", _RETRY.format(on_no="$current"))
    _, report = migrate(tmp_path, "retry.yaml")
    changed = notes(files(report)["retry.yaml"], "changed")["states.check.max_retries"]
    assert "consecutive re-entries" in changed and "from fix" in changed
    assert load_loop_file(tmp_path / "retry.ll.yaml").states["check"].max_retries == 1


# --- 4. ${loop.elapsed} has no equivalent: it blocks, pointing at its line -----------------------


def test_an_expression_with_no_equivalent_blocks_and_names_state_and_line(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        "timed.yaml",
        """
        name: timed
        initial: work
        states:
          work:
            action: echo start
            next: report
          report:
            action: |
              echo one
              echo "took ${loop.elapsed}"
            next: done
          done: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "timed.yaml")
    item = files(report)["timed.yaml"]
    assert code == 1 and item["status"] == "blocked"
    blocker, invalid = item["blockers"]
    assert blocker.startswith(f"states.report: ${{loop.elapsed}} at {tmp_path / 'timed.yaml'}:10:")
    assert invalid == (  # validate too
        "LL030 states.report.action: 'loop' has no key 'elapsed' (did you mean 'elapsed_ms'?)"
    )


# --- 5. a boolean is pasted as little-loops pasted it: True / False -----------------------------


def test_boolean_context_defaults_keep_the_text_little_loops_pasted(tmp_path: Path) -> None:
    write(
        tmp_path,
        "flags.yaml",
        """
        name: flags
        initial: check
        scope: ["."]
        context: {strict: true, quiet: false}
        states:
          check:
            action: '[ "${context.strict}" = "True" ] && [ "${context.quiet}" != "false" ]'
            on_yes: done
            on_no: failed
          done: {terminal: true}
          failed: {terminal: true}
        """,
    )
    _, report = migrate(tmp_path, "flags.yaml")
    assert "'True'" in notes(files(report)["flags.yaml"], "changed")["context.strict"]
    ran = ll_loop(tmp_path, "run", "flags.ll.yaml", "--json")
    assert ran.json["final_state"] == "done", ran.stdout  # as in little-loops


# --- 6. a symbolic link never takes the output out of the directory given -----------------------


def test_a_linked_file_is_skipped_and_out_keeps_the_given_layout(tmp_path: Path) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    write(tree, "sub/a.yaml", _SIMPLE)
    write(outside, "far/away/ext.yaml", _SIMPLE.replace("simple", "ext"))
    (tree / "link.yaml").symlink_to(outside / "far" / "away" / "ext.yaml")
    code, report = migrate(tmp_path, "tree", "--out", "conv")
    link = files(report)["link.yaml"]
    assert code == 0 and link["status"] == "skipped" and "symbolic link" in link["reason"]
    assert not list(outside.rglob("*.ll.yaml"))
    written = sorted(str(p.relative_to(tmp_path / "conv")) for p in (tmp_path / "conv").rglob("*"))
    assert written == ["sub", "sub/a.yaml"]
    code, _ = migrate(tmp_path, "tree")
    assert not list(outside.rglob("*.ll.yaml")) and (tree / "sub" / "a.ll.yaml").is_file()


# --- 7. an output that exists already, exactly as it would be written, is unchanged -------------

_LIB = """
fragments:
  shell_exit:
    action_type: shell
    evaluate: {type: exit_code}
"""
_USER = """
name: user{n}
initial: check
import: [lib/common.yaml]
states:
  check:
    fragment: shell_exit
    action: "true"
    on_yes: done
    on_no: done
  done: {{terminal: true}}
"""


def test_an_identical_existing_output_is_unchanged_and_exits_0(tmp_path: Path) -> None:
    write(tmp_path, "lib/common.yaml", _LIB)
    write(tmp_path, "one.yaml", _USER.format(n=1))
    write(tmp_path, "two.yaml", _USER.format(n=2))
    assert migrate(tmp_path, "one.yaml")[0] == 0
    code, report = migrate(tmp_path, "two.yaml")  # lib/common.ll.yaml is there already
    assert code == 0 and files(report)["common.yaml"]["status"] == "unchanged"
    (tmp_path / "lib" / "common.ll.yaml").write_text("# edited\n")
    code, report = migrate(tmp_path, "two.yaml", "--force")
    assert code == 0 and files(report)["two.yaml"]["status"] == "unchanged"
    assert files(report)["common.yaml"]["status"] == "converted"
    text = ll_loop(tmp_path, "migrate", "one.yaml").stdout
    assert "unchanged" in text and text.rstrip().endswith("2 unchanged")


def test_the_help_and_the_guide_give_the_same_exit_codes() -> None:
    from tests.lint_cli_helpers import REPO

    help_text = " ".join(ll_loop(REPO, "migrate", "--help").stdout.split())
    guide = " ".join((REPO / "docs" / "migrating.md").read_text().split())
    sentence = help_text[help_text.index("Exit 0") : help_text.index("usage error.") + 12]
    assert sentence in guide


# --- 8. a from: parent is merged into its children, not failed ----------------------------------


def test_a_from_parent_in_the_directory_is_skipped_naming_its_children(tmp_path: Path) -> None:
    write(
        tmp_path,
        "loops/lib/base.yaml",
        """
        initial: check
        states:
          check: {action: "true", on_yes: done, on_no: done}
          done: {terminal: true}
        """,
    )
    write(tmp_path, "loops/child.yaml", "name: child\nfrom: lib/base\n")
    code, report = migrate(tmp_path, "loops")
    base = files(report)["base.yaml"]
    assert code == 0 and base["status"] == "skipped"
    assert base["reason"] == "a from: parent, merged into child"
    assert files(report)["child.yaml"]["status"] == "converted"


# --- 9, 12. what cannot be meant is a usage error (exit 2, one sentence) ------------------------


def test_out_naming_a_file_is_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path, "simple.yaml", _SIMPLE)
    (tmp_path / "taken").write_text("x")
    ran = ll_loop(tmp_path, "migrate", "simple.yaml", "--out", "taken")
    assert ran.code == 2 and "--out must be a directory" in ran.stderr
    assert not (tmp_path / "simple.ll.yaml").exists()


def test_a_directory_without_yaml_and_a_missing_search_directory_are_usage_errors(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty").mkdir()
    ran = ll_loop(tmp_path, "migrate", "empty")
    assert ran.code == 2 and "has no *.yaml or *.yml files" in ran.stderr
    write(tmp_path, "simple.yaml", _SIMPLE)
    ran = ll_loop(tmp_path, "migrate", "simple.yaml", "--search", str(tmp_path / "nowhere"))
    assert ran.code == 2 and "--search must name a directory" in ran.stderr


# --- 10. a fragment library is not claimed to validate on its own -------------------------------


def test_a_library_is_reported_as_a_library_without_a_validation_claim(tmp_path: Path) -> None:
    write(tmp_path, "lib/common.yaml", _LIB)
    write(tmp_path, "one.yaml", _USER.format(n=1))
    _, report = migrate(tmp_path, "one.yaml")
    library = files(report)["common.yaml"]
    assert library["role"] == "library" and library["valid"] is None
    assert files(report)["one.yaml"]["valid"] is True
    (tmp_path / "lib" / "common.ll.yaml").unlink()
    text = ll_loop(tmp_path, "migrate", "one.yaml", "--force").stdout
    assert "ok (library) " + str(tmp_path / "lib" / "common.yaml") in text


# --- 11. what a route table rewrite changed is in the report -----------------------------------


def test_route_table_rewrites_are_reported(tmp_path: Path) -> None:
    write(
        tmp_path,
        "routes.yaml",
        """
        name: routes
        initial: a
        states:
          a:
            action: "true"
            route: {"yes": done, _: b, _error: fix}
          b:
            action: "true"
            route: {"yes": done, _error: fix}
          fix: {action: "true", next: a}
          done: {terminal: true}
        """,
    )
    _, report = migrate(tmp_path, "routes.yaml")
    item = files(report)["routes.yaml"]
    assert "little-loops took `_` first" in notes(item, "dropped")["states.a.route._error"]
    assert "'no' → fix written out" in notes(item, "changed")["states.b.route.no"]
    text = ll_loop(tmp_path, "migrate", "routes.yaml", "--force", "--verbose").stdout
    assert "changed: states.b.route.no:" in text


# --- 12. a file that is no loop is reported with file:line and what to do ------------------------


def test_files_that_are_no_loops_say_where_and_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    (tmp_path / "binary.yaml").write_bytes(b"name: x\n\x00\x01")
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "latin.yaml").write_bytes(b"name: caf\xe9\n")
    code, report = migrate(tmp_path, "list.yaml", "binary.yaml", "empty.yaml", "latin.yaml")
    reasons = {name: item["reason"] for name, item in files(report).items()}
    assert code == 1 and all(f["status"] == "failed" for f in report["files"])
    assert reasons["list.yaml"] == (
        f"{tmp_path / 'list.yaml'}:1:1: its top level is a list, not a mapping, so it is not a "
        "loop; a little-loops loop is a mapping with name:, initial: and states: (or flow:)"
    )
    assert reasons["binary.yaml"].startswith(
        f"{tmp_path / 'binary.yaml'}:2:1: the file is binary, not YAML text"
    )  # validate's F002 wording
    assert reasons["empty.yaml"].startswith(f"{tmp_path / 'empty.yaml'}:1:1: the file is empty;")
    assert "not valid YAML" not in reasons["empty.yaml"]
    assert reasons["latin.yaml"].startswith(
        f"{tmp_path / 'latin.yaml'}:1:10: the file is not valid"
    )


# --- 13. an output path that is a directory -------------------------------------------------------

_ECHO = """
name: echo
initial: a
states:
  a:
    action: echo hi
    next: done
  done: {terminal: true}
"""


def test_an_output_path_that_is_a_directory_is_not_offered_to_force(tmp_path: Path) -> None:
    write(tmp_path, "echo.yaml", _ECHO)
    (tmp_path / "echo.ll.yaml").mkdir()
    for extra in ((), ("--force",)):
        code, report = migrate(tmp_path, "echo.yaml", *extra)
        item = files(report)["echo.yaml"]
        assert code == 1 and item["status"] == "failed"
        assert item["reason"] == (
            f"{tmp_path / 'echo.ll.yaml'} is a directory, so the converted file cannot be "
            "written there"
        )


# --- 14. an output_contains pattern that is no regular expression was plain text ----------------

_PLAIN_PATTERN = """
name: plain
initial: check
states:
  check:
    action: "echo 'found [ERROR here'"
    evaluate:
      type: output_contains
      pattern: "[ERROR"
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_a_pattern_that_is_no_regular_expression_still_matches_its_text(tmp_path: Path) -> None:
    write(tmp_path, "plain.yaml", _PLAIN_PATTERN)
    code, report = migrate(tmp_path, "plain.yaml")
    item = files(report)["plain.yaml"]
    assert code == 0 and item["status"] == "converted", item
    assert "matched it as plain text" in notes(item, "changed")["states.check.evaluate.pattern"]
    result = ll_loop(tmp_path, "run", "plain.ll.yaml", "--json", "--no-lock")
    assert json.loads(result.stdout)["final_state"] == "done", result.stdout


# --- 15. a caller reading a child's capture through the sub-loop state ---------------------------

_CHILD = """
name: child
initial: say
parameters:
  msg: {type: string, default: nothing}
states:
  say:
    action: "echo said ${context.msg}"
    capture: said
    next: done
  done: {terminal: true}
"""

_CALLER = """
name: caller
initial: run
states:
  run:
    loop: child
    with: {msg: hi}
    on_yes: after
    on_no: failed
  after:
    action: "echo 'after [${captured.run.said.output}]'"
    capture: after
    evaluate: {type: output_contains, pattern: "after \\\\[said hi\\\\]"}
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_a_caller_reads_its_childs_capture_as_little_loops_merged_it(tmp_path: Path) -> None:
    write(tmp_path, "child.yaml", _CHILD)
    write(tmp_path, "caller.yaml", _CALLER)
    code, report = migrate(tmp_path, "caller.yaml")
    assert code == 0, report
    caller, child = files(report)["caller.yaml"], files(report)["child.yaml"]
    assert "reads the child's output said" in notes(caller, "changed")["states.run"]
    assert "outputs.said" in notes(child, "changed")
    assert load_loop_file(tmp_path / "child.ll.yaml").outputs == {"said": "${captured.said.output}"}
    result = ll_loop(tmp_path, "run", "caller.ll.yaml", "--json", "--no-lock")
    assert json.loads(result.stdout)["final_state"] == "done", result.stdout + result.stderr


# --- 16. a capture name that is no identifier is renamed where it is read too --------------------

_HYPHEN = """
name: hyphen
initial: a
states:
  a:
    action: "echo hello"
    capture: my-cap
    next: b
  b:
    action: "echo got ${captured.my-cap.output}"
    next: done
  done: {terminal: true}
"""


def test_a_renamed_capture_is_read_under_its_new_name(tmp_path: Path) -> None:
    write(tmp_path, "hyphen.yaml", _HYPHEN)
    code, _ = migrate(tmp_path, "hyphen.yaml")
    loop = load_loop_file(tmp_path / "hyphen.ll.yaml")
    assert code == 0 and loop.states["a"].capture == "my_cap"
    assert loop.states["b"].action == "echo got ${captured.my_cap.output}"
    result = ll_loop(tmp_path, "run", "hyphen.ll.yaml", "--json", "--no-lock")
    assert json.loads(result.stdout)["final_state"] == "done", result.stdout + result.stderr


# --- 17. a sub-loop state without on_no ended the run when the child failed ----------------------

_FAILING_CHILD = """
name: fails
initial: bad
states:
  bad:
    action: "false"
    next: done
  done: {terminal: true}
  failed: {terminal: true}
"""

_ONLY_YES = """
name: only-yes
initial: run
states:
  run:
    loop: fails
    on_yes: done
  done: {terminal: true}
"""


def test_a_sub_loop_state_without_on_no_routes_the_childs_failure_to_unrouted(
    tmp_path: Path,
) -> None:
    write(tmp_path, "fails.yaml", _FAILING_CHILD)
    write(tmp_path, "only-yes.yaml", _ONLY_YES)
    code, report = migrate(tmp_path, "only-yes.yaml")
    item = files(report)["only-yes.yaml"]
    assert code == 0 and item["status"] == "converted", item
    assert "verdict 'no' had no route" in notes(item, "changed")["states.run"]
    loop = load_loop_file(tmp_path / "only-yes.ll.yaml")
    assert loop.states["run"].routes["no"] == "unrouted" and loop.states["unrouted"].failure


# --- 18. a name that cannot be found says where it is written and what to do -------------------


def test_names_not_found_say_file_line_and_search(tmp_path: Path) -> None:
    write(tmp_path, "orphan.yaml", "name: orphan\nfrom: base-check\ninitial: a\n")
    write(tmp_path, "caller.yaml", _ONLY_YES.replace("loop: fails", "loop: nowhere"))
    write(tmp_path, "nothing.yaml", "foo: bar\n")
    code, report = migrate(tmp_path, "orphan.yaml", "caller.yaml", "nothing.yaml")
    assert code == 1
    found = files(report)
    hint = "; give the directory that holds it with --search DIR, or give its file to migrate"
    assert found["orphan.yaml"]["reason"] == (
        f"{tmp_path / 'orphan.yaml'}:2:1: from: 'base-check' not found next to the loop or "
        "under the directories given" + hint
    )
    assert found["caller.yaml"]["blockers"][0] == (
        f"states.run.loop: {tmp_path / 'caller.yaml'}:5:5: sub-loop 'nowhere' not found next "
        "to the loop or under the directories given" + hint
    )
    assert found["nothing.yaml"]["reason"] == (
        f"{tmp_path / 'nothing.yaml'}:1:1: not a little-loops loop: it has no name:, initial:, "
        "states: (or flow:); a little-loops loop is a mapping with name:, initial: and states: "
        "(or flow:)"
    )


# --- 19. convergence `previous` reading the state's own capture compared a value with itself ----

_OWN_PREVIOUS = """
name: own-previous
initial: measure
states:
  measure:
    action: "echo 4"
    capture: m
    evaluate:
      type: convergence
      target: 10
      direction: maximize
      previous: "${captured.m.output}"
    route:
      target: done
      progress: measure
      stall: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_a_previous_reading_its_own_capture_says_little_loops_compared_it_with_itself(
    tmp_path: Path,
) -> None:
    write(tmp_path, "own-previous.yaml", _OWN_PREVIOUS)
    code, report = migrate(tmp_path, "own-previous.yaml")
    item = files(report)["own-previous.yaml"]
    assert code == 0, item
    assert (
        "compared the value with itself"
        in (notes(item, "changed")["states.measure.evaluate.previous"])
    )


def test_a_second_run_with_out_inside_the_directory_does_not_convert_its_own_output(
    tmp_path: Path,
) -> None:
    write(tmp_path, "loops/echo.yaml", _ECHO)
    assert migrate(tmp_path, "loops", "--out", "loops/converted")[0] == 0
    code, report = migrate(tmp_path, "loops", "--out", "loops/converted")
    statuses = {
        str(Path(f["source"]).relative_to(tmp_path)): (f["status"], f["reason"])
        for f in report["files"]
    }
    assert code == 0
    assert statuses == {
        "loops/echo.yaml": ("unchanged", ""),
        "loops/converted/echo.yaml": (
            "skipped",
            "under --out, where migrate writes: not converted again",
        ),
    }
    assert not (tmp_path / "loops/converted/converted").exists()


# --- 20. two sub-loops of one name from outside the directory given ------------------------------


def test_two_children_of_one_name_get_two_outputs_under_out(tmp_path: Path) -> None:
    for folder in ("B", "C"):
        write(tmp_path, f"{folder}/child.yaml", _ECHO.replace("echo hi", f"echo {folder}"))
    write(
        tmp_path,
        "A/par.yaml",
        """
        name: par
        initial: a
        states:
          a:
            loop: ../B/child
            on_yes: b
          b:
            loop: ../C/child
            on_yes: done
          done: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "A/par.yaml", "--out", "o")
    outputs = sorted(f["output"] for f in report["files"])
    assert code == 0 and len(set(outputs)) == 3, outputs
    par = load_loop_file(tmp_path / "o/par.yaml")
    runs = [par.states[s].loop for s in ("a", "b")]
    assert len(set(runs)) == 2, runs
    texts = {(tmp_path / "o" / f"{ref}").with_suffix(".yaml").read_text() for ref in runs}
    assert any("echo B" in t for t in texts) and any("echo C" in t for t in texts)


# --- 21. convergence without previous: never stalled in little-loops ----------------------------

_NO_PREVIOUS = """
name: no-previous
initial: measure
states:
  measure:
    action: |
      n=$(cat count 2>/dev/null || echo 0); n=$((n + 1)); echo $n > count
      if [ $n -ge 3 ]; then echo 5; else echo 1; fi
    evaluate:
      type: convergence
      target: 5
      direction: maximize
    route:
      target: done
      progress: measure
      stall: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_convergence_without_previous_goes_where_progress_went(tmp_path: Path) -> None:
    write(tmp_path, "no-previous.yaml", _NO_PREVIOUS)
    code, report = migrate(tmp_path, "no-previous.yaml")
    item = files(report)["no-previous.yaml"]
    assert code == 0, item
    assert "never stall" in notes(item, "changed")["states.measure.evaluate"]
    result = ll_loop(tmp_path, "run", "no-previous.ll.yaml", "--json", "--no-lock")
    assert json.loads(result.stdout)["final_state"] == "done", result.stdout + result.stderr


# --- 22. a sub-loop state's capture held the child's events in little-loops ---------------------

_EVENTS_READER = '''
name: events-reader
initial: run
states:
  run:
    loop: child
    capture: events
    on_yes: check
    on_no: check
  check:
    action: "printf '%s' \\"${captured.events.output}\\" | grep -q 'said nothing'"
    on_yes: parse
    on_no: done
  parse:
    action_type: shell
    action: |
      python3 << 'PYEOF'
      import json
      subloop_out = """${captured.events.output}"""
      output_summary = ''
      terminal_state = 'none'
      for line in subloop_out.strip().split('\\n'):
          try:
              event = json.loads(line)
              if event.get('type') == 'output' and event.get('text'):
                  output_summary = event['text'][:500]
              if event.get('type') == 'terminal':
                  terminal_state = event.get('state', 'done')
          except Exception:
              pass
      print(f'{terminal_state}|{output_summary.strip()}')
      PYEOF
    capture: parsed
    next: report
  report:
    action: "echo '${captured.events.output?}' > events.txt"
    next: done
  done: {terminal: true}
'''


def test_a_sub_loop_states_capture_output_becomes_its_events(tmp_path: Path) -> None:
    """little-loops stored the child's event stream (JSONL) in a sub-loop state's capture; the
    converted loop reads ll-loop's, `${captured.C.events}`, and the Python reading it reads
    ll-loop's event fields: run, it finds the child's output and terminal."""
    write(tmp_path, "child.yaml", _CHILD)
    write(tmp_path, "events-reader.yaml", _EVENTS_READER)
    code, report = migrate(tmp_path, "events-reader.yaml", "--out", "out")
    item = files(report)["events-reader.yaml"]
    assert code == 0 and item["status"] == "converted" and item["valid"], item
    assert not notes(item, "blocker")
    changed = [n["message"] for n in item["notes"] if n["kind"] == "changed"]
    at_check = [m for m in changed if m.startswith("${captured.events.output} at ")]
    assert at_check and f"{tmp_path / 'events-reader.yaml'}:10: " in at_check[0]
    assert "as `events` (JSONL" in at_check[0] and "`event` (little-loops: `type`)" in at_check[0]
    assert any("`type == 'terminal'` and its `state`" in m for m in changed)
    written = (tmp_path / "out" / "events-reader.yaml").read_text()
    assert "${captured.events.events}" in written and ".output" not in written
    assert "${captured.events.events?}" in written
    assert "event.get('event') == 'action_complete' and event.get('output')" in written
    done = ll_loop(tmp_path / "out", "run", "events-reader.yaml", "--json", "-q")
    assert json.loads(done.stdout)["final_state"] == "done", done.stderr
    state = load_state(tmp_path / "out")
    assert state["captured"]["parsed"]["output"] == "done|said nothing"
    events = (tmp_path / "out" / "events.txt").read_text().splitlines()
    assert json.loads(events[-1])["event"] == "loop_complete"


def test_a_child_log_pasted_where_bash_expands_it_is_read_from_its_file(tmp_path: Path) -> None:
    """The child's log pasted raw into a heredoc bash expands (`python3 << PYEOF`, unquoted)
    ran the `$(...)` of any output of the child as a command of the parent, and lost its
    backslashes; where bash expands it, the converted action reads the log from its file
    (`$(cat "$LL_CAPTURED_C__events_path")`, whose text bash does not expand again)."""
    said = "echo said ${context.msg} '$(touch PWNED) a\\\\b'"  # a\\b in YAML's "...": a\b
    child = _CHILD.replace("echo said ${context.msg}", said)
    write(tmp_path, "child.yaml", child)
    write(tmp_path, "events-reader.yaml", _EVENTS_READER.replace("<< 'PYEOF'", "<< PYEOF"))
    code, report = migrate(tmp_path, "events-reader.yaml", "--out", "out")
    item = files(report)["events-reader.yaml"]
    assert code == 0 and item["status"] == "converted" and item["valid"], item
    written = (tmp_path / "out" / "events-reader.yaml").read_text()
    assert 'r"""$(cat "$LL_CAPTURED_events__events_path")"""' in written, written
    assert "| raw" not in written
    done = ll_loop(tmp_path / "out", "run", "events-reader.yaml", "--json", "-q")
    assert json.loads(done.stdout)["final_state"] == "done", done.stderr
    assert not (tmp_path / "out" / "PWNED").exists()
    parsed = load_state(tmp_path / "out")["captured"]["parsed"]["output"]
    assert parsed == "done|said nothing $(touch PWNED) a\\b"


def load_state(project: Path) -> dict[str, Any]:
    """The state.json of the one run in `project`."""
    (run,) = (project / ".loops" / "runs").iterdir()
    state: dict[str, Any] = json.loads((run / "state.json").read_text())
    return state


# --- 23. a symbolic link that leads nowhere is named as such ------------------------------------


def test_a_dangling_or_circular_link_is_not_called_missing(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    result = ll_loop(tmp_path, "migrate", "a.yaml")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "a.yaml is a symbolic link that leads nowhere" in result.stderr
    assert "no such file" not in result.stderr


# --- 24. classify tokens that differ only in case -----------------------------------------------

_CASE_TOKENS = """
name: case-tokens
initial: a
states:
  a:
    action: "echo pass"
    evaluate: {type: classify}
    route:
      pass: done
      PASS: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_classify_tokens_that_differ_only_in_case_are_a_blocker(tmp_path: Path) -> None:
    write(tmp_path, "case-tokens.yaml", _CASE_TOKENS)
    code, report = migrate(tmp_path, "case-tokens.yaml")
    item = files(report)["case-tokens.yaml"]
    assert code == 1 and item["status"] == "blocked", item
    assert notes(item, "blocker")["states.a"].startswith(
        "classify tokens 'pass' and 'PASS' are one verdict here (pass)"
    )


# --- 25. output_contains error_patterns: little-loops' error verdict ----------------------------

_ERROR_PATTERNS = """
name: error-patterns
initial: a
states:
  a:
    action: "echo 'PLAN_AUTH_FAILURE (x+y)'"
    evaluate:
      type: output_contains
      pattern: LIMIT_EXCEEDED
      error_patterns: ["AUTH_FAILURE (x+y)"]
    on_yes: failed
    on_no: failed
    on_error: abort
  abort:
    action: "echo aborting"
    next: done
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_error_patterns_still_send_their_output_where_error_went(tmp_path: Path) -> None:
    write(tmp_path, "error-patterns.yaml", _ERROR_PATTERNS)
    code, report = migrate(tmp_path, "error-patterns.yaml")
    item = files(report)["error-patterns.yaml"]
    assert code == 0 and item["status"] == "converted", item
    assert "a_error_patterns" in notes(item, "changed")["states.a.evaluate.error_patterns"]
    result = ll_loop(tmp_path, "run", "error-patterns.ll.yaml", "--json", "--no-lock")
    assert json.loads(result.stdout)["final_state"] == "done", result.stdout + result.stderr
    other = _ERROR_PATTERNS.replace("PLAN_AUTH_FAILURE (x+y)", "plan retry")
    write(tmp_path, "error-patterns.yaml", other)
    migrate(tmp_path, "error-patterns.yaml", "--force")
    result = ll_loop(tmp_path, "run", "error-patterns.ll.yaml", "--json", "--no-lock")
    assert json.loads(result.stdout)["final_state"] == "failed", result.stdout + result.stderr


# --- 26. a sub-loop state's on_timeout: the child cut off by its budget --------------------------

_SPIN = """
name: spin
initial: s
max_steps: 2
states:
  s:
    action: "echo spin"
    evaluate: {type: output_contains, pattern: never}
    on_yes: done
    on_no: s
  done: {terminal: true}
"""

_ON_TIMEOUT = """
name: on-timeout
initial: run
states:
  run:
    loop: spin
    on_yes: failed
    on_no: failed
    on_timeout: timed
  timed:
    action: "echo timed"
    next: done
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_a_sub_loop_cut_off_by_its_budget_still_goes_to_on_timeout(tmp_path: Path) -> None:
    write(tmp_path, "spin.yaml", _SPIN)
    write(tmp_path, "on-timeout.yaml", _ON_TIMEOUT)
    code, report = migrate(tmp_path, "on-timeout.yaml")
    item = files(report)["on-timeout.yaml"]
    assert code == 0 and item["status"] == "converted", item
    assert "still goes to timed" in notes(item, "changed")["states.run.on_timeout"]
    result = ll_loop(tmp_path, "run", "on-timeout.ll.yaml", "--json", "--no-lock")
    assert json.loads(result.stdout)["final_state"] == "done", result.stdout + result.stderr


# --- 27. state names ll-loop cannot take ---------------------------------------------------------

_ODD_NAMES = """
name: odd-names
initial: check
states:
  check:
    action: "echo hi"
    on_yes: "step two"
    on_no: "1st"
  "step two":
    action: "echo two"
    next: done
  "1st":
    action: "echo first"
    next: done
  done: {terminal: true}
"""


def test_state_names_ll_loop_cannot_take_are_renamed_with_their_routes(tmp_path: Path) -> None:
    write(tmp_path, "odd-names.yaml", _ODD_NAMES)
    code, report = migrate(tmp_path, "odd-names.yaml")
    item = files(report)["odd-names.yaml"]
    assert code == 0 and item["status"] == "converted", item
    assert "renamed from 'step two'" in notes(item, "changed")["states.step_two"]
    loop = load_loop_file(tmp_path / "odd-names.ll.yaml")
    assert loop.states["check"].routes == {"yes": "step_two", "no": "s_1st"}


# --- retryable_exit_codes: a failure with another exit code skips the retries ---------------------

_RETRYABLE = """
name: work
initial: do_work
max_iterations: 20
context:
  code: 3
states:
  do_work:
    action: "{action}"
    timeout: 1
    capture: work_result
    next: done
    on_error: do_work
    max_retries: 2
    retryable_exit_codes: [124, 75]
    on_retry_exhausted: gave_up
  done: {{terminal: true}}
  gave_up: {{terminal: true}}
"""


def _work_runs(cwd: Path, code: int) -> tuple[str, int]:
    """The converted loop run with `context.code`: its final state and how often do_work ran."""
    ran = ll_loop(cwd, "run", "out/work.yaml", "--context", f"code={code}", "--json", "--quiet")
    result = json.loads(ran.stdout)
    run_dir = next(p for p in (cwd / ".loops" / "runs").iterdir() if p.name == result["run_id"])
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    entered = [e for e in events if e["event"] == "state_enter" and e["state"] == "do_work"]
    return result["final_state"], len(entered)


def test_retryable_exit_codes_send_other_failures_past_the_retries(tmp_path: Path) -> None:
    """little-loops: a failed action whose exit code is not listed goes to on_retry_exhausted
    at once; a listed one (or a timeout, exit 124) is retried max_retries times first. The
    converted loop, run for real, takes the same route for each code."""
    (tmp_path / ".loops").mkdir()
    action = "if [ ${context.code} = 124 ]; then sleep 5; fi; exit ${context.code}"
    write(tmp_path, "work.yaml", _RETRYABLE.format(action=action))
    code, report = migrate(tmp_path, "work.yaml", "--out", "out")
    assert code == 0, report
    item = files(report)["work.yaml"]
    assert "states.do_work.retryable_exit_codes" not in notes(item, "dropped")
    assert (
        "goes to gave_up at once" in notes(item, "changed")["states.do_work.retryable_exit_codes"]
    )

    def little_loops(exit_code: int) -> tuple[str, int]:  # the reference's rule, run by hand
        if exit_code == 0:
            return "done", 1
        if exit_code not in (124, 75):
            return "gave_up", 1
        return "gave_up", 1 + 2  # the first run and its 2 retries

    for exit_code in (0, 3, 2, 75, 124):
        assert _work_runs(tmp_path, exit_code) == little_loops(exit_code), exit_code


def test_retryable_exit_codes_without_on_retry_exhausted_change_nothing(tmp_path: Path) -> None:
    text = _RETRYABLE.format(action="exit 3").replace("    on_retry_exhausted: gave_up\n", "")
    write(tmp_path, "work.yaml", text.replace("    max_retries: 2\n", ""))
    _, report = migrate(tmp_path, "work.yaml", "--out", "out")
    item = files(report)["work.yaml"]
    assert "nothing changes" in notes(item, "dropped")["states.do_work.retryable_exit_codes"]
    assert "do_work_exit_code" not in (tmp_path / "out" / "work.yaml").read_text()


# --- output_numeric with key: the number of the last key=<number> is judged ---------------------

_NUMERIC_KEY = """
name: num
initial: measure
max_iterations: 10
context:
  out: ""
states:
  measure:
    action: 'echo "${context.out}"'
    evaluate:
      type: output_numeric
      key: score
      operator: ge
      target: 3.5
    on_yes: good
    on_no: bad
    on_error: broken
  good: {terminal: true}
  bad: {terminal: true}
  broken: {terminal: true}
"""


def test_output_numeric_key_takes_the_route_little_loops_took(tmp_path: Path) -> None:
    """The converted loop, run for real, ends where little-loops' rule (the last
    `score\\s*=\\s*<number>` in the output, compared ge 3.5; none found: error) sends each
    output."""
    import re

    (tmp_path / ".loops").mkdir()
    write(tmp_path, "num.yaml", _NUMERIC_KEY)
    code, report = migrate(tmp_path, "num.yaml", "--out", "out")
    assert code == 0, report
    item = files(report)["num.yaml"]
    assert "states.measure.evaluate.key" in notes(item, "changed")
    assert not notes(item, "blocker")

    def little_loops(output: str) -> str:  # evaluate_output_numeric with key, by hand
        found = re.findall(r"score\s*=\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)", output)
        if not found:
            return "broken"
        return "good" if float(found[-1]) >= 3.5 else "bad"

    outputs = [
        "score=5",
        "score=1",
        "no number here",
        "score=2 later score = 4.0",
        "total_score=9",
        "score=-3",
        "score=1e1",
        "score: 7",
        "score=.5",
    ]
    for output in outputs:
        ran = ll_loop(tmp_path, "run", "out/num.yaml", "--context", f"out={output}", "--json")
        assert json.loads(ran.stdout)["final_state"] == little_loops(output), output


def test_elapsed_ms_is_kept_as_ll_loops_own(tmp_path: Path) -> None:
    """little-loops' `${loop.elapsed_ms}` (arithmetic over a run's time budget) means the same
    in ll-loop: the converted loop keeps it and is valid."""
    write(
        tmp_path,
        "budget.yaml",
        """
        name: budget
        initial: check
        states:
          check:
            action: |
              ELAPSED_S=$(( ${loop.elapsed_ms} / 1000 ))
              echo "$ELAPSED_S"
            next: done
          done: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "budget.yaml")
    item = files(report)["budget.yaml"]
    assert code == 0 and item["status"] == "converted" and item["valid"], item
    assert "${loop.elapsed_ms}" in (tmp_path / "budget.ll.yaml").read_text()


def test_a_judge_still_reads_the_output_of_an_action_that_failed(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """little-loops' llm_structured is exit-code aware: a shell check that exits 1 is still
    judged (only a timeout is `error`), so `cat` of a missing report went where the judge's
    `no` went. Converted without `ignore_exit_code`, ll-loop made it `error` unjudged."""
    write(
        tmp_path,
        "judged.yaml",
        """
        name: judged
        initial: check
        states:
          check:
            action: "echo partial report; cat missing-report.md"
            evaluate:
              type: llm_structured
              prompt: "Is the report complete?"
            on_yes: done
            on_no: revise
            on_error: broken
          revise: {terminal: true}
          done: {terminal: true}
          broken: {terminal: true, failure: true}
        """,
    )
    code, report = migrate(tmp_path, "judged.yaml")
    assert code == 0, report
    loopback.push(verdict_reply("no", evidence="partial report"))
    ran = ll_loop(tmp_path, "run", "judged.ll.yaml", "--json")
    assert ran.json["final_state"] == "revise", ran.stderr
    assert len(loopback.requests) == 1


_ABSTAINS = """
name: abstains
initial: check
states:
  check:
    action: "echo run >> runs.txt; echo checked"
    evaluate:
      type: llm_structured
      prompt: "Did the check pass?"
    on_yes: done
    on_no: done
    on_error: broken
  done: {terminal: true}
  broken: {terminal: true, failure: true}
"""


def test_an_unrouted_cannot_judge_reruns_the_state_twice_in_a_row_then_takes_on_error(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """little-loops held a state whose judge said cannot_judge with no route of its own: it
    re-ran the state, twice in a row at most, then took on_error (executor.py
    _route_abstention_hold). Converted, ll-loop sent the first cannot_judge to on_error."""
    write(tmp_path, "abstains.yaml", _ABSTAINS)
    code, report = migrate(tmp_path, "abstains.yaml")
    assert code == 0, report
    loopback.push(verdict_reply("cannot_judge"))
    loopback.push(verdict_reply("cannot_judge"))
    loopback.push(verdict_reply("yes", evidence="checked"))
    ran = ll_loop(tmp_path, "run", "abstains.ll.yaml", "--json")
    assert ran.json["final_state"] == "done", ran.stderr
    assert (tmp_path / "runs.txt").read_text() == "run\n" * 3
    # three in a row: the third goes to on_error, as little-loops' hold cap of 2
    (tmp_path / "runs.txt").unlink()
    loopback.default = lambda body: verdict_reply("cannot_judge")(body)
    ran = ll_loop(tmp_path, "run", "abstains.ll.yaml", "--json")
    assert ran.json["final_state"] == "broken", ran.stderr
    assert (tmp_path / "runs.txt").read_text() == "run\n" * 3


def test_a_harbor_scorer_gives_little_loops_verdicts(tmp_path: Path) -> None:
    """harbor_scorer (little-loops evaluators.py evaluate_harbor_scorer) was a blocker, though
    its rule is plain: a non-zero exit is no, a timeout error, exit 0 with a float printed yes,
    any other output error. The converted loop takes each of those routes."""
    write(
        tmp_path,
        "bench.yaml",
        """
        name: bench
        initial: score
        context:
          out: "0.85"
          code: "0"
          pause: "0"
        states:
          score:
            action: 'sleep ${context.pause}; printf "%s\\n" "${context.out}"; exit ${context.code}'
            timeout: 2
            capture: benchmark
            evaluate: {type: harbor_scorer}
            on_yes: passed
            on_no: failed_run
            on_error: broken
          passed: {terminal: true}
          failed_run: {terminal: true}
          broken: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "bench.yaml")
    item = files(report)["bench.yaml"]
    assert code == 0 and item["status"] == "converted" and item["valid"], item

    def little_loops(out: str, exit_code: int) -> str:
        if exit_code == 124:
            return "broken"
        if exit_code != 0:
            return "failed_run"
        try:
            float(out.strip())
        except ValueError:
            return "broken"
        return "passed"

    cases = [("0.85", 0), (" 1e-3 ", 0), ("nan", 0), ("1_000", 0), ("score: 1", 0), ("", 0)]
    cases += [("0.85", 1), ("0.85", 3), ("0.85", 124)]
    for out, exit_code in cases:
        ran = ll_loop(
            tmp_path, "run", "bench.ll.yaml", "--json",
            "--context", f"out={out}", "--context", f"code={exit_code}",
        )  # fmt: skip
        assert ran.json["final_state"] == little_loops(out, exit_code), (out, exit_code)
    ran = ll_loop(tmp_path, "run", "bench.ll.yaml", "--json", "--context", "pause=5")
    assert ran.json["final_state"] == "broken"  # timed out: error, as in little-loops


def test_passthrough_leaves_the_childs_own_context_values_alone(tmp_path: Path) -> None:
    """little-loops' context_passthrough built the child's context as the caller's context,
    then its captures, then the child's own `context:` on top (executor.py
    `{**self.fsm.context, **captured_as_context, **child_fsm.context}`): a key the child
    sets itself keeps the child's value. The converted caller bound it through `with:`, so the
    caller's value replaced the child's."""
    write(
        tmp_path,
        "parent.yaml",
        """
        name: parent
        initial: run
        context:
          level: "0.6"
          who: parent
        states:
          run:
            loop: child
            context_passthrough: true
            on_yes: done
            on_no: done
          done: {terminal: true}
        """,
    )
    write(
        tmp_path,
        "child.yaml",
        """
        name: child
        initial: show
        context:
          level: "90"
        states:
          show:
            action: 'echo "${context.level} ${context.who}" > seen.txt'
            next: done
          done: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "parent.yaml")
    assert code == 0, report
    ran = ll_loop(tmp_path, "run", "parent.ll.yaml", "--json")
    assert ran.json["final_state"] == "done", ran.stderr
    assert (tmp_path / "seen.txt").read_text() == "90 parent\n"


def test_passthrough_beside_with_passes_nothing_more(tmp_path: Path) -> None:
    """little-loops took `with:` and ignored context_passthrough when a state had both
    (executor.py `if state.with_: ... elif state.context_passthrough:`); the converter
    still bound what the child reads from the caller's context."""
    write(
        tmp_path,
        "parent.yaml",
        """
        name: parent
        initial: run
        context:
          who: parent
        states:
          run:
            loop: child
            with: {level: "1"}
            context_passthrough: true
            on_yes: done
            on_no: done
          done: {terminal: true}
        """,
    )
    write(
        tmp_path,
        "child.yaml",
        """
        name: child
        initial: show
        states:
          show:
            action: 'echo "${context.level} ${context.who:default=nobody}" > seen.txt'
            next: done
          done: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "parent.yaml")
    assert code == 0, report
    assert (
        "with:" in notes(files(report)["parent.yaml"], "dropped")["states.run.context_passthrough"]
    )
    ran = ll_loop(tmp_path, "run", "parent.ll.yaml", "--json")
    assert ran.json["final_state"] == "done", ran.stderr
    assert (tmp_path / "seen.txt").read_text() == "1 nobody\n"


def test_the_confidence_thresholds_little_loops_seeded_keep_their_defaults(
    tmp_path: Path,
) -> None:
    """little-loops' runner put readiness_threshold and outcome_threshold in every loop's
    context (cli/loop/_helpers.py seed_confidence_thresholds: ll-config.json, else 85 and 65);
    loops such as autodev read them without declaring them, so the converted loop had no
    value there and the state failed."""
    write(
        tmp_path,
        "gate.yaml",
        """
        name: gate
        initial: check
        states:
          check:
            action: 'echo "${context.readiness_threshold}/${context.outcome_threshold}" > t.txt'
            next: done
          done: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "gate.yaml")
    assert code == 0, report
    ran = ll_loop(tmp_path, "run", "gate.ll.yaml", "--json")
    assert ran.json["final_state"] == "done", ran.stderr
    assert (tmp_path / "t.txt").read_text() == "85/65\n"
    ran = ll_loop(tmp_path, "run", "gate.ll.yaml", "--json", "--context", "outcome_threshold=70")
    assert (tmp_path / "t.txt").read_text() == "85/70\n"


def test_diff_stall_still_judges_the_tree_after_a_failed_action(tmp_path: Path) -> None:
    """little-loops' diff_stall is exit-code aware (evaluators.py, the exempt set of
    evaluate()): an agent step that exited non-zero but changed files was still `progress`.
    ll-loop answered `error` for the failed action, so the converted state took on_error (here
    a failure) instead of going on."""
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "work.txt").write_text("one\n")
    subprocess.run(["git", "add", "work.txt"], cwd=tmp_path, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"],
        cwd=tmp_path,
        check=True,
    )
    write(
        tmp_path,
        "refactor.yaml",
        """
        name: refactor
        initial: step
        states:
          step:
            action: "echo two >> work.txt; exit 1"
            evaluate: {type: diff_stall, max_stall: 1}
            on_yes: done
            on_no: stuck
            on_error: broken
          done: {terminal: true}
          stuck: {terminal: true, failure: true}
          broken: {terminal: true, failure: true}
        """,
    )
    code, report = migrate(tmp_path, "refactor.yaml")
    assert code == 0, report
    ran = ll_loop(tmp_path, "run", "refactor.ll.yaml", "--json")
    assert ran.json["final_state"] == "done", ran.stderr


def test_a_classify_token_with_a_hyphen_is_a_blocker(tmp_path: Path) -> None:
    """little-loops routed a classify line `needs-review` by the route key `needs-review`.
    Converted, the verdict is needs_review, and ll-loop's classify matches the line ignoring
    case only: the line was `error`, and the run took `_`. It is a blocker now."""
    write(
        tmp_path,
        "triage.yaml",
        """
        name: triage
        initial: sort
        states:
          sort:
            action: echo needs-review
            evaluate: {type: classify}
            route:
              needs-review: review
              done: done
              _: done
          review: {terminal: true}
          done: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "triage.yaml")
    item = files(report)["triage.yaml"]
    assert code == 1 and item["status"] == "blocked"
    assert any("'needs_review'" in b or "needs-review" in b for b in item["blockers"])


_AGENT = """\
import pathlib, sys
prompt = sys.stdin.read()
pathlib.Path("prompts.txt").open("a").write(prompt + "\\n=====\\n")
said = pathlib.Path("said.txt")
n = len(said.read_text().splitlines()) if said.exists() else 0
said.open("a").write("x\\n")
print("Looking at the output.")
print("RETRY" if n == 0 else "done")
"""


def test_a_judge_with_its_own_verdicts_is_asked_of_an_agent_and_routed(tmp_path: Path) -> None:
    """An llm_structured with its own `schema` verdict enum (little-loops routed each by
    on_<verdict>, evaluators.py evaluate_llm_structured with `schema`) was a blocker. It is now
    a prompt state asking for one of those verdicts on the last line, read by classify: the
    output is judged whatever the action's exit, and each verdict keeps its route."""
    write(
        tmp_path,
        "custom.yaml",
        """
        name: custom
        initial: build
        states:
          build:
            action: "echo built 42 parts; exit 1"
            evaluate:
              type: llm_structured
              prompt: "Were all parts built?"
              schema:
                properties:
                  verdict: {type: string, enum: [done, retry, hold]}
            on_done: final
            on_retry: build
          final: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "custom.yaml")
    item = files(report)["custom.yaml"]
    assert code == 0 and item["status"] == "converted", item
    (tmp_path / "agent.py").write_text(_AGENT)
    converted = tmp_path / "custom.ll.yaml"
    text = converted.read_text().replace(
        "cmd:claude --dangerously-skip-permissions -p", "cmd:python3 agent.py"
    )
    converted.write_text(text)
    ran = ll_loop(tmp_path, "run", "custom.ll.yaml", "--json")
    assert ran.json["final_state"] == "final", ran.stderr
    prompts = (tmp_path / "prompts.txt").read_text()
    assert prompts.count("Were all parts built?") == 2 and "built 42 parts" in prompts
    assert "done, retry, hold" in prompts
    assert load_loop_file(converted).states["build_judge"].targets()["hold"] == "unrouted"


def test_a_captures_failure_type_is_reported(tmp_path: Path) -> None:
    """little-loops' captures held failure_type, its classification of a failed action's
    output (executor.py, the capture block: transient, non_recoverable, infra_retry, real), which
    refine-to-ready-issue reads to tell an API fault from a defect. ll-loop has none: with `?`
    the read is always empty, without it an error; the report said nothing."""
    write(
        tmp_path,
        "classify.yaml",
        """
        name: classify
        initial: work
        states:
          work:
            action: "echo out; exit 3"
            capture: res
            next: sort
            on_error: sort
          sort:
            action: "printf '%s' '${captured.res.failure_type?}' > kind.txt"
            next: strict
          strict:
            action: "echo ${captured.res.failure_type}"
            next: done
          done: {terminal: true}
        """,
    )
    _, report = migrate(tmp_path, "classify.yaml")
    item = files(report)["classify.yaml"]
    assert "always its default" in notes(item, "changed")["states.sort"]
    assert any("states.strict" in b and "failure_type" in b for b in item["blockers"])


def test_current_in_a_route_moved_to_an_added_state_still_means_the_original(
    tmp_path: Path,
) -> None:
    """`$current` is the state that routes. Routes the converter moves to a state it adds
    (NAME_score, NAME_key, NAME_cannot_judge, ...) kept the word, which there names the added
    state: `on_no: $current` re-ran the check instead of the scorer."""
    write(
        tmp_path,
        "again.yaml",
        """
        name: again
        initial: score
        states:
          score:
            action: 'echo x >> runs.txt; [ "$(wc -l < runs.txt)" -ge 2 ] && echo 0.5 || exit 1'
            evaluate: {type: harbor_scorer}
            on_yes: passed
            on_no: $current
          passed: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "again.yaml")
    assert code == 0, report
    ran = ll_loop(tmp_path, "run", "again.ll.yaml", "--json")
    assert ran.json["final_state"] == "passed", ran.stderr
    assert (tmp_path / "runs.txt").read_text() == "x\nx\n"


def test_a_judges_low_confidence_does_not_change_its_verdict(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """little-loops' judge compared confidence with min_confidence only to add `_uncertain`
    under uncertain_suffix (evaluators.py evaluate_llm_structured); otherwise a `yes` at 0.2
    was `yes`. ll-loop makes an answer below min_confidence (0.5 unless written) cannot_judge,
    so the converted state held or took on_error instead."""
    write(
        tmp_path,
        "unsure.yaml",
        """
        name: unsure
        initial: check
        states:
          check:
            action: "echo all 3 checks passed"
            evaluate:
              type: llm_structured
              prompt: "Did the checks pass?"
              min_confidence: 0.7
            on_yes: done
            on_no: failed
            on_error: failed
          done: {terminal: true}
          failed: {terminal: true}
        """,
    )
    code, report = migrate(tmp_path, "unsure.yaml")
    assert code == 0, report
    loopback.push(verdict_reply("yes", confidence=0.2, evidence="all 3 checks passed"))
    ran = ll_loop(tmp_path, "run", "unsure.ll.yaml", "--json")
    assert ran.json["final_state"] == "done", ran.stderr
    assert len(loopback.requests) == 1


def test_force_never_writes_through_a_link_nor_waits_on_a_fifo(tmp_path: Path) -> None:
    """`--force` replaced an output that was a symbolic link by writing through it (a file
    elsewhere, here `victim.txt`, was overwritten with the converted loop), and an output that
    was a FIFO hung the command forever (opening it to write waits for a reader). Both are now
    the file's failure, with one sentence, as every other writer of ll-loop refuses them."""
    write(tmp_path, "echo.yaml", _ECHO)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (tmp_path / "echo.ll.yaml").symlink_to(victim)
    code, report = migrate(tmp_path, "echo.yaml", "--force")
    item = files(report)["echo.yaml"]
    assert victim.read_text() == "keep me\n"
    assert code == 1 and item["status"] == "failed", item
    assert "is a symbolic link" in item["reason"], item
    (tmp_path / "echo.ll.yaml").unlink()
    os.mkfifo(tmp_path / "echo.ll.yaml")
    ran = ll_loop(tmp_path, "migrate", "echo.yaml", "--force", "--format", "json", timeout=20)
    item = files(json.loads(ran.stdout))["echo.yaml"]
    assert ran.code == 1 and item["status"] == "failed", item
    assert "not a regular file" in item["reason"], item
