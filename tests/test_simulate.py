"""`ll-loop simulate`: walk a loop with scripted verdicts, no actions run — and agree with a real
`ll-loop run` whenever the scripted verdicts are what the real actions produce."""

from __future__ import annotations

import json
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.graph.simulate import parse_overrides, simulate
from engine.load.loader import load_loop_text
from engine.model.errors import UsageError
from tests.lint_cli_helpers import ll_loop

FIX = """\
name: fix-until-green
initial: check
scope: ["src/"]
max_steps: 20
states:
  check:
    action: make test
    on_yes: done
    on_no: fix
    on_error: failed
    max_retries: 2
    on_retry_exhausted: failed
  fix:
    action: make fix
    next: check
    on_error: failed
  done:
    terminal: true
  failed:
    terminal: true
    failure: true
"""


def path_of(text: str, scenario: str = "all-yes", **kw: object) -> list[tuple[str, str, str]]:
    sim = simulate(load_loop_text(text), scenario, **kw)  # type: ignore[arg-type]
    return [(s.state, s.verdict, s.target or "") for s in sim.steps]


def test_scenarios() -> None:
    loop = load_loop_text(FIX)
    assert path_of(FIX) == [("check", "yes", "done")]
    first_no = simulate(loop, "first-no")
    assert [(s.state, s.verdict, s.note) for s in first_no.steps] == [
        ("check", "no", ""),
        ("fix", "yes", "↺ retry 1/2"),
        ("check", "yes", ""),
    ]
    assert (first_no.final_state, first_no.outcome, first_no.exit_code) == ("done", "success", 0)
    errors = simulate(loop, "all-error")
    assert (errors.final_state, errors.outcome, errors.exit_code) == ("failed", "failure", 1)


def test_retries_are_counted_on_the_back_edge_and_exhaust() -> None:
    sim = simulate(load_loop_text(FIX), "all-no")
    assert [s.state for s in sim.steps] == ["check", "fix"] * 3
    assert sim.steps[-1].note == "retries of 'check' exhausted (2)"
    assert (sim.final_state, sim.terminated_by, sim.exit_code) == ("failed", "terminal", 1)


def test_budget_ends_inconclusive_and_runs_on_max_steps() -> None:
    text = FIX.replace("max_steps: 20", "max_steps: 3\non_max_steps: report").replace(
        "  done:", "  report:\n    action: echo out of steps\n  done:"
    )
    sim = simulate(load_loop_text(text), "first-no", max_steps=2)
    assert (sim.terminated_by, sim.outcome, sim.exit_code) == ("max_steps", "inconclusive", 3)
    assert sim.on_max_steps_ran == "report" and len(sim.steps) == 2


def test_terminal_reached_on_the_last_permitted_step_is_success() -> None:
    sim = simulate(load_loop_text(FIX), "first-no", max_steps=3)
    assert (sim.final_state, sim.outcome, len(sim.steps)) == ("done", "success", 3)


def test_unrouted_verdict_ends_with_error_exit_2() -> None:
    text = FIX.replace("    on_error: failed\n    max_retries", "    max_retries")
    sim = simulate(load_loop_text(text), "all-error")
    assert (sim.terminated_by, sim.exit_code) == ("error", 2)
    assert sim.reason == "verdict 'error' of state 'check' is not routed"


def test_overrides_per_visit_and_usage_errors() -> None:
    loop = load_loop_text(FIX)
    overrides = parse_overrides(loop, ["check=no,no,yes"])
    sim = simulate(loop, "all-yes", overrides)
    assert [s.verdict for s in sim.steps if s.state == "check"] == ["no", "no", "yes"]
    with pytest.raises(UsageError, match="can never produce verdict 'partial'"):
        parse_overrides(loop, ["check=partial"])
    with pytest.raises(UsageError, match=r"did you mean 'check'\?"):
        parse_overrides(loop, ["chek=no"])
    with pytest.raises(UsageError, match="unknown scenario"):
        simulate(loop, "sometimes")


def test_convergence_and_classify_scenarios() -> None:
    text = textwrap.dedent(
        """\
        name: tune
        initial: measure
        scope: ["."]
        states:
          measure:
            action: ./size.sh
            evaluate: {type: convergence, target: 10}
            on_target: sort
            on_progress: measure
            on_stall: failed
            on_error: failed
          sort:
            action: ./triage.sh
            evaluate: {type: classify, verdicts: [bug, feature, question]}
            on_bug: failed
            on_feature: done
            on_question: done
            on_error: failed
          done: {terminal: true}
          failed: {terminal: true, failure: true}
        """
    )
    assert path_of(text, "all-yes") == [("measure", "target", "sort"), ("sort", "bug", "failed")]
    assert path_of(text, "all-no") == [("measure", "stall", "failed")]


AGREE = """\
name: agree
initial: check
scope: ["."]
max_steps: MAX
states:
  check:
    action: "CHECK"
    on_yes: done
    on_no: fix
    on_error: failed
    max_retries: 3
    on_retry_exhausted: failed
  fix:
    action: "FIX"
    next: check
    on_error: failed
  done:
    terminal: true
  failed:
    terminal: true
    failure: true
"""
ACTION = {"yes": "true", "no": "false", "error": "exit 2"}


@pytest.mark.parametrize(
    ("check", "fix", "max_steps"),
    [
        ("yes", "yes", 20),
        ("no", "yes", 20),
        ("no", "error", 20),
        ("error", "yes", 20),
        ("no", "yes", 5),
        ("no", "yes", 1),
    ],
)
def test_simulate_agrees_with_a_real_run(
    check: str, fix: str, max_steps: int, tmp_path: Path
) -> None:
    text = (
        AGREE.replace("CHECK", ACTION[check])
        .replace("FIX", ACTION[fix])
        .replace("MAX", str(max_steps))
    )
    (tmp_path / "agree.yaml").write_text(text)
    real = ll_loop("run", "agree.yaml", "--json", cwd=tmp_path)
    sim = ll_loop(
        "simulate",
        "agree.yaml",
        "--json",
        "-v",
        f"check={check}",
        "-v",
        f"fix={fix}",
        cwd=tmp_path,
    )
    assert real.stdout and sim.stdout, real.stderr + sim.stderr
    ran, walked = json.loads(real.stdout), json.loads(sim.stdout)
    for key in ("final_state", "outcome", "terminated_by", "steps"):
        assert ran[key] == walked[key], (key, ran, walked)
    assert real.returncode == sim.returncode


def test_simulate_command_text(tmp_path: Path) -> None:
    (tmp_path / "fix.yaml").write_text(FIX)
    result = ll_loop("simulate", "fix.yaml", "--scenario", "first-no", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "simulate fix-until-green (scenario first-no, max_steps 20)"
    assert "fix    yes  → check  ↺ retry 1/2" in lines[2]
    assert lines[-1].startswith("ended: terminal — reached terminal 'done' (success); 3 of 20")
    bad = ll_loop("simulate", "fix.yaml", "--verdict", "check=maybe", cwd=tmp_path)
    assert bad.returncode == 2 and "can never produce verdict 'maybe'" in bad.stderr


@st.composite
def shell_loops(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A random loop of shell states whose actions fix their verdicts (true → yes, false → no
    or, on a `next:` step, error; exit 2 → error), and the matching --verdict overrides."""
    n = draw(st.integers(min_value=1, max_value=6))
    names = [f"s{i}" for i in range(n)] + ["ok", "bad"]
    lines = ["name: random", "initial: s0", 'scope: ["."]']
    lines.append(f"max_steps: {draw(st.integers(min_value=1, max_value=12))}")
    lines.append("states:")
    overrides = []
    for name in names[:n]:
        target = st.sampled_from(names)
        action = draw(st.sampled_from(["true", "false", "exit 2"]))
        lines += [f"  {name}:", f'    action: "{action}"']
        if draw(st.booleans()):
            lines += [f"    next: {draw(target)}", f"    on_error: {draw(target)}"]
            verdict = "yes" if action == "true" else "error"
        else:
            lines += [f"    on_{v}: {draw(target)}" for v in ("yes", "no", "error")]
            verdict = {"true": "yes", "false": "no", "exit 2": "error"}[action]
        overrides.append(f"{name}={verdict}")
    lines += ["  ok:", "    terminal: true", "  bad:", "    terminal: true", "    failure: true"]
    return "\n".join(lines) + "\n", overrides


@settings(max_examples=8, deadline=None)
@given(shell_loops())
def test_simulate_agrees_with_real_runs_of_random_loops(case: tuple[str, list[str]]) -> None:
    text, overrides = case
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "loop.yaml").write_text(text)
        real = ll_loop("run", "loop.yaml", "--json", cwd=Path(tmp))
        ran = json.loads(real.stdout)
        if ran["steps"] == 0 and ran["error"]:
            return  # refused before the first step (lint errors): nothing to compare
        args = [a for o in overrides for a in ("-v", o)]
        walked = json.loads(ll_loop("simulate", "loop.yaml", "--json", *args, cwd=Path(tmp)).stdout)
    for key in ("final_state", "outcome", "terminated_by", "steps"):
        assert ran[key] == walked[key], (key, text, ran, walked)


def test_sub_loop_child_terminal_override_routes_by_on_terminal() -> None:
    text = textwrap.dedent(
        """\
        name: parent
        initial: call
        scope: ["."]
        states:
          call:
            loop: child
            on_terminal: {blocked: escalate}
            on_yes: done
            on_no: failed
            on_error: failed
          escalate:
            action: ./page.sh
            next: failed
            on_error: failed
          done: {terminal: true}
          failed: {terminal: true, failure: true}
        """
    )
    loop = load_loop_text(text)
    sim = simulate(loop, "all-yes", parse_overrides(loop, ["call=terminal:blocked"]))
    assert [(s.state, s.verdict, s.target) for s in sim.steps] == [
        ("call", "terminal:blocked", "escalate"),
        ("escalate", "yes", "failed"),
    ]
    with pytest.raises(UsageError, match="can never produce verdict 'terminal:stuck'"):
        parse_overrides(loop, ["call=terminal:stuck"])


CYCLE = """\
name: cycle
initial: a
scope: ["."]
max_steps: MAX
states:
  a:
    action: "true"
    on_yes: b
    on_no: done
    on_error: done
  b:
    action: "false"
    on_yes: done
    on_no: c
    on_error: done
  c:
    action: "true"
    next: a
    on_error: done
  done:
    terminal: true
"""


def test_a_cycle_with_a_huge_budget_is_walked_at_once() -> None:
    # a → b → c → a ... for 10^8 steps: the budget runs out where step 10^8 + 1 would run.
    loop = load_loop_text(CYCLE.replace("MAX", str(10**8)))
    sim = simulate(loop, overrides={"b": ["no"]})
    assert (sim.terminated_by, sim.steps_used) == ("max_steps", 10**8)
    assert sim.final_state == "abc"[10**8 % 3]
    assert len(sim.steps) <= 250 and sim.skipped == 10**8 - len(sim.steps)


def test_a_long_chain_of_states_is_walked_in_linear_time() -> None:
    """Each step compared its configuration by sorting every visited state's count: 3,000
    states in a row took 10 s (quadratic); the count's generation makes the step O(1)."""
    n = 3000
    states = "".join(f"  s{i}:\n    action: 'true'\n    on_yes: s{i + 1}\n" for i in range(n))
    loop = load_loop_text(
        f"name: chain\ninitial: s0\nmax_steps: {n + 5}\nstates:\n{states}"
        f"  s{n}:\n    terminal: true\n"
    )
    started = time.monotonic()
    sim = simulate(loop)
    assert (sim.terminated_by, sim.final_state, sim.steps_used) == ("terminal", f"s{n}", n)
    assert time.monotonic() - started < 2.0


def test_a_cycle_walked_at_once_agrees_with_a_real_run(tmp_path: Path) -> None:
    (tmp_path / "cycle.yaml").write_text(CYCLE.replace("MAX", "301"))
    real = json.loads(ll_loop("run", "cycle.yaml", "--json", cwd=tmp_path).stdout)
    walked = ll_loop("simulate", "cycle.yaml", "--json", "-v", "b=no", cwd=tmp_path).json
    assert walked["skipped_steps"] > 0
    for key in ("final_state", "outcome", "terminated_by", "steps"):
        assert real[key] == walked[key], (key, real, walked)


def test_simulate_refuses_what_run_refuses(tmp_path: Path) -> None:
    """A loop with a lint error never starts under `run` (exit 2): simulate does not walk it to
    a success either."""
    (tmp_path / "bad.yaml").write_text(
        'name: bad\ninitial: add\nscope: ["."]\ncontext: {n: "1"}\nstates:\n'
        '  add:\n    action: "echo $(( ${context.n} + 1 ))"\n    next: done\n'
        "  done: {terminal: true}\n"
    )
    real = ll_loop("run", "bad.yaml", cwd=tmp_path)
    sim = ll_loop("simulate", "bad.yaml", cwd=tmp_path)
    assert real.returncode == sim.returncode == 2
    assert "LL034" in real.stderr and "LL034" in sim.stderr
    assert "ended:" not in sim.stdout
