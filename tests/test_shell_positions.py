"""The shapes of issue 11, one regression each: refused at validate time (LL034 with the line and
column of the `${...}`) and at run time; typed values allowed; values exported to the action;
`${...}` in a `cmd:` runner interpolated and linted like an action."""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest

from engine.cli.validate_cmd import check_file
from engine.model.errors import InterpolationError
from engine.shell.interpolate import ValueTypes, env_name, render_shell, shell_env
from tests.run_helpers import run_yaml
from tests.shellquote_helpers import run_bash

HOSTILE = "a[$(touch CANARY)]"

# Each shape from the issue, with the line and column its `${...}` has in the action below.
ISSUE_SHAPES = [
    "for((i=0;i<${context.v};i++)); do :; done",
    "if((${context.v}>1)); then :; fi",
    "while((i<${context.v})); do i=$((i+1)); done",
    "echo building \\\n# ticket: ${context.v}\ntrue",
    "declare -i n; n=${context.v}",
    "builtin let x=${context.v}",
    "command let x=${context.v}",
    "x=1 let y=${context.v}",
    "declare -ai x=( ${context.v} )",
    '[ -v "a[${context.v}]" ]',
    'printf -v "${context.v}" %s x',
    'read -r "${context.v}" <<< x',
    "declare -n ref=${context.v}",
    'eval "echo ${context.v}"',
    "trap 'echo ${context.v}' EXIT",
    'bash -c "echo ${context.v}"',
    "alias ll=${context.v}",
]


def loop_yaml(action: str, parameter_type: str = "string") -> str:
    body = textwrap.indent(action, " " * 6)
    return (
        "name: shape\ninitial: go\nscope: ['.']\n"
        f"parameters:\n  v:\n    type: {parameter_type}\n    default: '1'\n"
        f"states:\n  go:\n    action: |\n{body}\n    next: done\n    on_error: failed\n"
        "  done:\n    terminal: true\n  failed:\n    terminal: true\n    failure: true\n"
    )


def expected_position(action: str) -> tuple[int, int]:
    """Line and column of `${context.v}` in the loop file `loop_yaml(action)` writes."""
    before = action[: action.index("${context.v}")]
    line_in_action = before.count("\n")
    column = len(before) - (before.rfind("\n") + 1) + 1
    return 11 + line_in_action, 6 + column  # the block scalar starts on line 11, indented 6


@pytest.mark.parametrize("action", ISSUE_SHAPES)
def test_issue_shape_is_an_lint_error_with_line_and_column(action: str, tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(loop_yaml(action))
    found = [d for d in check_file(path) if d.code == "LL034"]
    assert len(found) == 1, [d.message for d in check_file(path)]
    assert (found[0].line, found[0].column) == expected_position(action)
    assert found[0].severity == "error"


@pytest.mark.parametrize("action", ISSUE_SHAPES)
def test_issue_shape_is_refused_at_run_time(action: str) -> None:
    with pytest.raises(InterpolationError) as refused:
        render_shell(action, {"context": {"v": HOSTILE}})
    line, column = expected_position(action)
    assert f"line {line - 10}, column {column - 6} of the action" in refused.value.reason


def test_run_refuses_before_the_first_step_and_names_the_position(tmp_path: Path) -> None:
    ran = run_yaml(tmp_path, loop_yaml(ISSUE_SHAPES[0]), "--context", f"v={HOSTILE}")
    assert ran.code == 2
    assert "LL034" in ran.stderr
    assert not (tmp_path / "CANARY").exists()


def test_a_value_reached_dynamically_is_an_error_verdict_naming_it(tmp_path: Path) -> None:
    # `| integer` passes lint; the capture turns out not to be an integer: error, not a crash.
    ran = run_yaml(
        tmp_path,
        """
        name: dynamic
        initial: produce
        scope: ['.']
        states:
          produce:
            action: printf '%s' 'a[$(touch CANARY)]'
            capture: out
            next: use
          use:
            action: echo $(( ${captured.out.output | integer} + 1 ))
            next: done
            on_error: failed
          done:
            terminal: true
          failed:
            terminal: true
            failure: true
        """,
    )
    assert ran.json["final_state"] == "failed", ran.stdout
    assert ("use", "error") in ran.verdicts()
    detail = next(e for e in ran.events() if e["event"] == "evaluate" and e["state"] == "use")
    assert "is not an integer" in str(detail["details"])
    assert not (tmp_path / "CANARY").exists()


def test_integer_parameter_is_allowed_in_arithmetic_end_to_end(tmp_path: Path) -> None:
    text = loop_yaml('for ((i = 0; i < ${context.v}; i++)); do printf "%s" "$i"; done', "integer")
    assert [d.code for d in check_file(_write(tmp_path, text))] == []
    ran = run_yaml(tmp_path, text, "--context", "v=3")
    assert ran.json["outcome"] == "success", ran.stderr
    # a declared integer given text is refused before anything runs
    ran = run_yaml(tmp_path, text, "--context", f"v={HOSTILE}")
    assert ran.code == 2 and not (tmp_path / "CANARY").exists()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "loop.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "expression", ["loop.steps", "state.step", "state.retries", "context.v | integer"]
)
def test_typed_integers_are_allowed_in_arithmetic(expression: str, tmp_path: Path) -> None:
    action = f"echo $(( ${{{expression}}} + 1 ))"
    assert "LL034" not in [d.code for d in check_file(_write(tmp_path, loop_yaml(action)))]


def test_integer_filter_fails_loudly() -> None:
    ns = {"context": {"v": "12", "w": "1e3", "b": True}}
    assert render_shell("echo $(( ${context.v | integer} ))", ns) == "echo $(( 12 ))"
    for name in ("w", "b"):
        with pytest.raises(InterpolationError, match="not an integer"):
            render_shell(f"echo ${{context.{name} | integer}}", ns)


def test_command_parameter_may_sit_where_code_runs(tmp_path: Path) -> None:
    action = 'bash -c "${context.v}"'
    assert "LL034" in [d.code for d in check_file(_write(tmp_path, loop_yaml(action)))]
    text = loop_yaml(action, "command")
    assert [d.code for d in check_file(_write(tmp_path, text))] == []
    types = ValueTypes(commands=frozenset({"v"}))
    script = render_shell(action, {"context": {"v": "printf '%s' \"a b\" > out"}}, types)
    ran = run_bash(script + " && cat out && rm out")
    assert ran.stdout == "a b"
    # a command is still text in arithmetic
    with pytest.raises(InterpolationError, match="arithmetic"):
        render_shell("echo $(( ${context.v} ))", {"context": {"v": "1"}}, types)


def test_a_capture_evaluated_through_a_variable_is_a_warning(tmp_path: Path) -> None:
    action = "n=${context.v}\necho $((n + 1))"
    found = [d for d in check_file(_write(tmp_path, loop_yaml(action))) if d.code == "LL035"]
    assert [(d.severity, d.line, d.column) for d in found] == [("warning", 11, 9)]
    typed = loop_yaml(action, "integer")
    assert "LL035" not in [d.code for d in check_file(_write(tmp_path, typed))]


@pytest.mark.parametrize(
    ("action", "where"),
    [
        ('eval "echo $LL_CONTEXT_v"', (11, 19)),
        ("echo $((LL_CONTEXT_v + 1))", (11, 15)),
        ('run() { echo "$1"; }\nrun "$LL_CONTEXT_v"', (12, 13)),
    ],
)
def test_an_exported_value_evaluated_by_name_is_a_warning(
    action: str, where: tuple[int, int], tmp_path: Path
) -> None:
    """The script reads the value through its variable (which the run now exports), then hands
    it where bash evaluates it: the same boundary as `n=${...}` then `$((n + 1))`."""
    found = [d for d in check_file(_write(tmp_path, loop_yaml(action))) if d.code == "LL035"]
    assert [(d.severity, d.line, d.column) for d in found] == [("warning", *where)]
    assert "$LL_CONTEXT_v` holds the value of ${context.v}" in found[0].message
    if "((" in action:
        typed = loop_yaml(action, "integer")
        assert "LL035" not in [d.code for d in check_file(_write(tmp_path, typed))]


def test_an_exported_value_read_as_data_is_not_reported(tmp_path: Path) -> None:
    action = 'bash -c \'printf "%s\\n" "$LL_CONTEXT_v"\'\necho "$LL_CONTEXT_v" "$LL_RUN_ID"'
    assert [d.code for d in check_file(_write(tmp_path, loop_yaml(action)))] == []


# --- values as environment variables -----------------------------------------------------------


def test_env_names_are_collision_free() -> None:
    assert env_name("context.score_cmd") == "LL_CONTEXT_score_cmd"
    assert env_name("captured.t.output") == "LL_CAPTURED_t__output"
    assert env_name("captured.t_output") == "LL_CAPTURED_t_output"
    assert env_name("captured.a__b.c") is None  # would read like captured.a.b.c
    assert env_name("context._x") is None and env_name("context.x_") is None
    assert env_name("context") is None and env_name("HOME.x") is None


def test_every_interpolated_value_is_exported() -> None:
    ns = {"context": {"v": "it's $(x)", "n": 3}, "captured": {"t": {"output": "ok"}}}
    template = "echo ${context.v} ${context.n | integer} ${captured.t.output | default('')}"
    assert shell_env(template, ns) == {
        "LL_CONTEXT_v": "it's $(x)",
        "LL_CONTEXT_n": "3",
        "LL_CAPTURED_t__output": "ok",
    }


def test_the_action_reads_its_values_from_the_environment(tmp_path: Path) -> None:
    hostile = 'it\'s "$(touch CANARY)"'
    ran = run_yaml(
        tmp_path,
        """
        name: env
        initial: show
        scope: ['.']
        parameters:
          v: {type: string}
        states:
          show:
            action: |
              test -n "${context.v}"
              bash -c 'printf "%s" "$LL_CONTEXT_v" > seen'
            next: done
          done:
            terminal: true
        """,
        "--context",
        f"v={hostile}",
    )
    assert ran.json["outcome"] == "success", ran.stderr
    assert (tmp_path / "seen").read_text() == hostile
    assert not (tmp_path / "CANARY").exists()
    assert "LL_CONTEXT_v" not in os.environ


def test_a_value_the_script_only_names_is_exported_too(tmp_path: Path) -> None:
    """The refusal's advice (`use "$LL_CONTEXT_v" in the script instead`) works on its own: the
    script need not also interpolate the value somewhere for its variable to be set."""
    hostile = 'it\'s "$(touch CANARY)"'
    ran = run_yaml(
        tmp_path,
        """
        name: env
        initial: make
        scope: ['.']
        parameters:
          v: {type: string}
        states:
          make:
            action: printf 'a\\nb\\n'
            capture: t
            next: show
          show:
            action: |
              bash -c 'printf "%s" "$LL_CONTEXT_v" > seen'
              bash -c 'printf "%s\\n" "$LL_CAPTURED_t__output" | wc -l' > lines
              printf '[%s]' "${LL_CONTEXT_missing-unset}" "$LL_RUN_ID" > other
            next: done
          done:
            terminal: true
        """,
        "--context",
        f"v={hostile}",
    )
    assert ran.json["outcome"] == "success", ran.stderr
    assert (tmp_path / "seen").read_text() == hostile
    assert (tmp_path / "lines").read_text().strip() == "2"
    assert (tmp_path / "other").read_text() == f"[unset][{ran.json['run_id']}]"
    assert not (tmp_path / "CANARY").exists()


# --- `${...}` in a cmd: runner ------------------------------------------------------------------


def test_runner_command_line_is_interpolated_with_the_same_safety(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.write_text('#!/bin/sh\nprintf "%s|" "$@"; cat\n')
    agent.chmod(agent.stat().st_mode | stat.S_IEXEC)
    text = f"""
        name: runner
        initial: ask
        scope: ['.']
        parameters:
          model: {{type: string, default: "m1; touch CANARY"}}
        llm:
          runner: "cmd:{agent} --model ${{context.model}}"
        states:
          ask:
            action: hello
            action_type: prompt
            timeout: 20
            capture: said
            next: done
          done:
            terminal: true
        outputs:
          said: ${{captured.said.output}}
        """
    ran = run_yaml(tmp_path, text)
    assert ran.json["outcome"] == "success", ran.stderr
    said = next(e for e in ran.events() if e["event"] == "action_complete")["output"]
    assert said == "--model|m1; touch CANARY|hello"
    assert not (tmp_path / "CANARY").exists()


def test_runner_command_line_is_linted_like_an_action(tmp_path: Path) -> None:
    text = loop_yaml("echo hi").replace(
        "states:", "llm:\n  runner: 'cmd:agent --x $((${context.v}))'\nstates:", 1
    )
    found = [d for d in check_file(_write(tmp_path, text)) if d.code == "LL034"]
    assert len(found) == 1 and "runner command" in found[0].message
    assert found[0].line == 9
