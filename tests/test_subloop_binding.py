"""Sub-loop pure parts: parameter binding, verdicts, routing on the child's terminal, lookup."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from engine.model.loop import Loop, Parameter, State
from engine.model.ports import RunResult
from engine.runtime.subloop import (
    SubloopError,
    SubloopOutcome,
    bind_parameters,
    capture_of,
    clamp_timeout,
    resolve_child,
    route_subloop,
    verdict_of,
)


def child(**params: Parameter) -> Loop:
    return Loop(
        name="child",
        initial="done",
        states=MappingProxyType({"done": State("done", terminal=True)}),
        context=MappingProxyType({"mode": "fast", "n": 0}),
        parameters=MappingProxyType(params),
    )


def result(terminated_by: Any, outcome: Any, terminal: str | None = None) -> RunResult:
    return RunResult(
        run_id="r-1",
        loop="child",
        final_state=terminal,
        outcome=outcome,
        terminated_by=terminated_by,
        steps=4,
        duration_ms=10,
        outputs=MappingProxyType({"answer": 42}),
        terminal=terminal,
    )


def test_binding_applies_defaults_over_context_and_values_over_defaults() -> None:
    loop = child(
        n=Parameter("n", type="integer", has_default=True, default=3),
        label=Parameter("label", type="string", required=True),
    )
    assert bind_parameters(loop, {"label": "x"}) == {"mode": "fast", "n": 3, "label": "x"}
    assert bind_parameters(loop, {"label": "x", "n": 7})["n"] == 7


def test_input_is_the_childs_input_without_a_declaration() -> None:
    bound = bind_parameters(child(), {"input": "hello"})
    assert bound == {"mode": "fast", "n": 0, "input": "hello"}
    declared = child(input=Parameter("input", type="integer"))
    assert bind_parameters(declared, {"input": "3"})["input"] == 3  # declared: typed as usual
    with pytest.raises(SubloopError, match="no parameter 'inputs'"):
        bind_parameters(child(), {"inputs": "x"})


@pytest.mark.parametrize(
    ("kind", "given", "expected"),
    [
        ("integer", "12", 12),
        ("integer", 5.0, 5),
        ("number", "2.5", 2.5),
        ("boolean", "true", True),
        ("boolean", False, False),
        ("array", "[1, 2]", [1, 2]),
        ("object", '{"a": 1}', {"a": 1}),
        ("string", "007", "007"),
        ("any", {"k": [1]}, {"k": [1]}),
    ],
)
def test_values_are_coerced_to_the_declared_type(kind: Any, given: Any, expected: Any) -> None:
    loop = child(p=Parameter("p", type=kind))
    assert bind_parameters(loop, {"p": given})["p"] == expected


@pytest.mark.parametrize(
    ("kind", "given"),
    [
        ("integer", "twelve"),
        ("integer", True),
        ("integer", 2.5),
        ("number", "x"),
        ("boolean", "yes please"),
        ("array", "{}"),
        ("string", 3),
        ("object", [1]),
    ],
)
def test_values_of_the_wrong_type_are_refused_with_the_parameter_named(
    kind: Any, given: Any
) -> None:
    loop = child(p=Parameter("p", type=kind))
    with pytest.raises(SubloopError, match=r"parameter 'p' of loop 'child' must be"):
        bind_parameters(loop, {"p": given})


def test_missing_required_unknown_and_enum_violations_are_clear() -> None:
    loop = child(
        level=Parameter("level", type="string", required=True, enum=("low", "high")),
    )
    with pytest.raises(SubloopError, match="requires parameter 'level'"):
        bind_parameters(loop, {})
    with pytest.raises(SubloopError, match=r"has no parameter 'levle' \(declared: level\)"):
        bind_parameters(loop, {"levle": "low"})
    with pytest.raises(SubloopError, match='must be one of "low", "high", got "mid"'):
        bind_parameters(loop, {"level": "mid"})


def test_verdicts_follow_how_the_child_ended() -> None:
    assert verdict_of(result("terminal", "success", "done")).name == "yes"
    assert verdict_of(result("terminal", "failure", "blocked")).name == "no"
    assert verdict_of(result("max_steps", "inconclusive")).name == "no"
    assert verdict_of(result("timeout", "inconclusive")).name == "no"
    assert verdict_of(result("error", "error")).name == "error"
    assert verdict_of(result("stopped", "inconclusive")).name == "error"


def test_capture_has_terminal_outcome_terminated_by_steps_and_outputs() -> None:
    assert capture_of(result("terminal", "failure", "blocked")) == {
        "terminal": "blocked",
        "outcome": "failure",
        "terminated_by": "terminal",
        "steps": 4,
        "outputs": {"answer": 42},
    }


def test_on_terminal_routes_on_the_child_terminal_name_before_the_verdict() -> None:
    state = State(
        "call",
        loop="child",
        routes=MappingProxyType({"yes": "ok", "no": "retry", "error": "broken"}),
        on_terminal=MappingProxyType({"blocked": "escalate", "again": "$current"}),
    )
    blocked = result("terminal", "failure", "blocked")
    outcome = SubloopOutcome(verdict_of(blocked), capture_of(blocked), terminal="blocked")
    assert route_subloop(state, outcome) == "escalate"
    other = result("terminal", "failure", "gave_up")
    assert route_subloop(state, SubloopOutcome(verdict_of(other), {}, terminal="gave_up")) == (
        "retry"
    )
    again = result("terminal", "success", "again")
    assert route_subloop(state, SubloopOutcome(verdict_of(again), {}, terminal="again")) == "call"


def test_timeout_is_clamped_to_what_the_parent_has_left() -> None:
    assert clamp_timeout(None, None) is None
    assert clamp_timeout(30.0, None) == 30.0
    assert clamp_timeout(None, 5.0) == 5.0
    assert clamp_timeout(30.0, 5.0) == 5.0
    assert clamp_timeout(2.0, 5.0) == 2.0
    assert clamp_timeout(2.0, -1.0) == 0.0


def test_child_lookup_order_parent_dir_then_dot_loops(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".loops").mkdir(parents=True)
    (project / "flows").mkdir()
    parent = project / "flows" / "parent.yaml"
    parent.write_text("name: parent\n")
    (project / ".loops" / "shared.yaml").write_text("name: shared\n")
    (project / "flows" / "local.yaml").write_text("name: local\n")
    (project / ".loops" / "local.yaml").write_text("name: other\n")
    assert resolve_child("local", str(parent), project) == project / "flows" / "local.yaml"
    assert resolve_child("shared", str(parent), project) == project / ".loops" / "shared.yaml"
    assert resolve_child("../.loops/shared.yaml", str(parent), project).resolve() == (
        project / ".loops" / "shared.yaml"
    )
    with pytest.raises(SubloopError, match="no loop named 'nope'"):
        resolve_child("nope", str(parent), project)
    with pytest.raises(SubloopError, match="no loop file at"):
        resolve_child("sub/missing.yaml", str(parent), project)


def test_a_loop_path_that_is_not_a_file_is_said_to_be_what_it_is(tmp_path: Path) -> None:
    """`loop: child.yaml` where child.yaml is a directory or a FIFO said "no loop file at
    …/child.yaml", so the author looked for a missing file, as `ll-loop run DIR` once did."""
    import os

    parent = tmp_path / "parent.yaml"
    parent.write_text("name: parent\n")
    (tmp_path / "folder.yaml").mkdir()
    os.mkfifo(tmp_path / "pipe.yaml")
    with pytest.raises(SubloopError, match=r"folder\.yaml is a directory, not a loop file"):
        resolve_child("folder.yaml", str(parent), tmp_path)
    with pytest.raises(SubloopError, match=r"pipe\.yaml is a pipe \(FIFO\), not a loop file"):
        resolve_child("pipe.yaml", str(parent), tmp_path)
    with pytest.raises(SubloopError, match="no loop file at"):
        resolve_child("gone.yaml", str(parent), tmp_path)
