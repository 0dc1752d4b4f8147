"""Fragments: `import:` of a library and `fragment:` in a state, merged at load with `with:`."""

from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.load.fragments import bind_parameters, merge
from engine.load.loader import check_loop_file
from tests.lint_cli_helpers import ll_loop
from tests.properties import examples

LIBRARY = """\
description: shared checks
fragments:
  shell_exit:
    description: the exit code decides
    action_type: shell
    evaluate:
      type: exit_code
  counter:
    parameters:
      key: {type: string, required: true}
      limit: {type: integer, default: 3}
    action: |
      n=$(cat "count-${param.key}" 2>/dev/null || echo 0); n=$((n + 1))
      echo "$n" > "count-${param.key}"; echo "$n"
    evaluate:
      type: output_numeric
      operator: le
      target: "${param.limit}"
  threshold:
    evaluate:
      type: output_numeric
      operator: ge
"""


def write(tmp_path: Path, loop: str, library: str = LIBRARY) -> Path:
    (tmp_path / "lib").mkdir(exist_ok=True)
    (tmp_path / "lib" / "checks.yaml").write_text(library)
    path = tmp_path / "loop.yaml"
    path.write_text(textwrap.dedent(loop))
    return path


def test_a_state_gets_the_fragment_under_its_own_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: lint-then-count
        initial: lint
        import: [lib/checks.yaml]
        states:
          lint:
            fragment: shell_exit
            action: "true"
            on_yes: count
            on_no: done
          count:
            fragment: counter
            with: {key: tries}
            on_yes: lint
            on_no: done
          done:
            terminal: true
        """,
    )
    loop, _, problems = check_loop_file(path)
    assert problems == [] and loop is not None
    lint = loop.states["lint"]
    assert (lint.action, lint.action_type) == ("true", "shell")
    assert lint.evaluate is not None and lint.evaluate.type == "exit_code"
    count = loop.states["count"]
    assert count.action is not None and 'count-tries"' in count.action
    assert count.evaluate is not None and count.evaluate.target == "3"  # the declared default
    assert count.with_ == {}  # consumed by the fragment, not passed to a sub-loop


def test_the_state_wins_and_nested_mappings_merge(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: nested
        initial: size
        import: [lib/checks.yaml]
        states:
          size:
            fragment: threshold
            action: echo 12
            evaluate: {target: 10, operator: gt}
            on_yes: done
            on_no: done
          done:
            terminal: true
        """,
    )
    loop, _, problems = check_loop_file(path)
    assert problems == [] and loop is not None
    spec = loop.states["size"].evaluate
    assert spec is not None
    assert (spec.type, spec.operator, spec.target) == ("output_numeric", "gt", 10)


def test_a_problem_in_merged_keys_names_the_use_site_and_the_fragment_line(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        """\
        name: missing-target
        initial: size
        import: [lib/checks.yaml]
        states:
          size:
            fragment: threshold
            action: echo 12
            on_yes: done
            on_no: done
          done:
            terminal: true
        """,
    )
    _, _, problems = check_loop_file(path)
    [problem] = problems
    assert (problem.code, problem.line) == ("F010", 6)  # the state's `fragment:` line
    assert "missing the required key 'target'" in problem.message
    assert "fragment 'threshold' at" in problem.message
    assert "checks.yaml:20" in problem.message  # where `evaluate:` sits in the library


def test_bindings_are_checked_against_the_declared_parameters(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: bad-bindings
        initial: count
        import: [lib/checks.yaml]
        states:
          count:
            fragment: counter
            with: {limt: 5}
            on_yes: done
            on_no: done
          done:
            terminal: true
        """,
    )
    _, _, problems = check_loop_file(path)
    messages = sorted(p.message for p in problems)
    assert {p.code for p in problems} == {"F032"}
    assert any("binds 'limt', which fragment 'counter'" in m for m in messages)
    assert any("does not bind 'key'" in m and "requires" in m for m in messages)


def test_unknown_fragment_and_missing_library_are_load_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: unknown
        initial: a
        import: [lib/checks.yaml, lib/nope.yaml]
        states:
          a:
            fragment: shell_exitt
            action: "true"
            next: done
          done:
            terminal: true
        """,
    )
    _, _, problems = check_loop_file(path)
    codes = {p.code: p for p in problems}
    assert set(codes) == {"F030", "F031"}
    assert "lib/nope.yaml" in codes["F030"].message and codes["F030"].line == 3
    assert "shell_exit" in codes["F031"].hint


def test_local_fragments_override_imported_ones(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: local
        initial: a
        import: [lib/checks.yaml]
        fragments:
          shell_exit:
            evaluate: {type: output_contains, pattern: ok}
        states:
          a:
            fragment: shell_exit
            action: echo ok
            on_yes: done
            on_no: done
          done:
            terminal: true
        """,
    )
    loop, _, problems = check_loop_file(path)
    assert problems == [] and loop is not None
    spec = loop.states["a"].evaluate
    assert spec is not None and spec.type == "output_contains"


def test_a_fragment_without_parameters_leaves_with_to_a_sub_loop(tmp_path: Path) -> None:
    (tmp_path / "child.yaml").write_text(
        "name: child\ninitial: d\nparameters: {n: {type: integer}}\n"
        "states:\n  d:\n    terminal: true\n"
    )
    path = write(
        tmp_path,
        """\
        name: parent
        initial: call
        fragments:
          quiet: {description: no parameters, timeout: 5}
        states:
          call:
            fragment: quiet
            loop: child
            with: {n: 2}
            on_yes: done
            on_no: done
          done:
            terminal: true
        """,
    )
    loop, _, problems = check_loop_file(path)
    assert problems == [] and loop is not None
    assert loop.states["call"].with_ == {"n": 2}


def test_bind_parameters_writes_values_in_and_leaves_the_rest() -> None:
    body = {"action": "run ${param.cmd} ${param.other} $${param.cmd}", "n": "${param.n}"}
    bound, problems = bind_parameters(body, {"cmd": "make test", "n": 3})
    assert bound == {"action": "run make test ${param.other} $${param.cmd}", "n": "3"}
    assert problems == []
    renamed, problems = bind_parameters({"a": "${param.d | upper}"}, {"d": "${context.dir}"})
    assert renamed == {"a": "${context.dir | upper}"} and problems == []
    _, problems = bind_parameters({"a": "${param.d | upper}"}, {"d": "literal text"})
    assert problems and "not one ${...} path" in problems[0]


def test_merge_replaces_lists_and_scalars_and_merges_mappings() -> None:
    base = {"evaluate": {"type": "x", "verdicts": ["a", "b"]}, "timeout": 5}
    merged = merge(base, {"evaluate": {"verdicts": ["c"]}, "timeout": 9})
    assert merged == {"evaluate": {"type": "x", "verdicts": ["c"]}, "timeout": 9}
    assert base["evaluate"]["verdicts"] == ["a", "b"]  # the fragment itself is untouched


def test_a_loop_with_fragments_runs_from_the_cli(tmp_path: Path) -> None:
    write(
        tmp_path,
        """\
        name: count-to-three
        initial: count
        scope: ["."]
        max_steps: 10
        import: [lib/checks.yaml]
        states:
          count:
            fragment: counter
            with: {key: runs, limit: 2}
            on_yes: $current
            on_no: done
            on_error: failed
          done:
            terminal: true
          failed:
            terminal: true
            failure: true
        """,
    )
    result = ll_loop("run", "loop.yaml", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert '"steps": 3' in result.stdout  # 1, 2 are <= 2; 3 is not
    assert (tmp_path / "count-runs").read_text().strip() == "3"


def test_a_lint_finding_in_a_fragment_names_both_lines(tmp_path: Path) -> None:
    library = "fragments:\n  agent_fix:\n    action: /ll:manage-issue fix\n"
    path = write(
        tmp_path,
        """\
        name: slash
        initial: fix
        scope: ["."]
        import: [lib/checks.yaml]
        states:
          fix:
            fragment: agent_fix
            next: done
          done:
            terminal: true
        """,
        library,
    )
    result = ll_loop("validate", str(path), cwd=tmp_path)
    assert result.returncode == 1
    [line] = [x for x in result.stdout.splitlines() if "LL081" in x]
    assert line.startswith(f"{path}:7:5: error LL081")  # the state's `fragment:` key
    assert "(from fragment 'agent_fix' at lib/checks.yaml:3)" in line


# --- whatever a fragment-using loop says, the loader answers with diagnostics, never a crash --

_ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_NAME = st.sampled_from(["shell_exit", "counter", "threshold", "nope", ""]) | st.text(max_size=6)
_IMPORT = st.sampled_from(["lib/checks.yaml", "lib/none.yaml", "~nosuchuser/x", "a" * 5000])


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    imports=st.lists(_IMPORT | st.text(max_size=10), max_size=3) | _ANY,
    fragment=_NAME | _ANY,
    bindings=_ANY,
    local=_ANY,
)
def test_fragment_loops_load_or_diagnose(
    imports: Any, fragment: Any, bindings: Any, local: Any
) -> None:
    data = {
        "name": "fuzz",
        "initial": "a",
        "import": imports,
        "fragments": local,
        "states": {
            "a": {"fragment": fragment, "with": bindings, "action": "echo", "next": "b"},
            "b": {"terminal": True},
        },
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), yaml.safe_dump(data))
        loop, _, found = check_loop_file(path)
    assert (loop is None) == bool(found)
    assert all(d.code.startswith("F") and d.line >= 1 for d in found)
