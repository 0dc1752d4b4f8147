"""End to end: the installed `ll-loop run` in a temp directory, real bash, real files.

Each test reads like the docs: a loop, the command, and what comes out (exit code, the one JSON
object on stdout, the run directory).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import cli
from tests.run_helpers import LL_LOOP, ll_loop, run_yaml, write_loop

RESULT_KEYS = {
    "run_id",
    "loop",
    "final_state",
    "outcome",
    "terminated_by",
    "steps",
    "duration_ms",
    "cost_usd",
    "error",
    "outputs",
}


# --- evaluators ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "evaluate", "verdict"),
    [
        ("exit 0", "{type: exit_code}", "yes"),
        ("exit 1", "{type: exit_code}", "no"),
        ("echo 'build OK'", "{type: output_contains, pattern: 'O[K]'}", "yes"),
        ("echo 'build OK'", "{type: output_contains, pattern: FAIL}", "no"),
        ("echo 'build OK'", "{type: output_contains, pattern: FAIL, negate: true}", "yes"),
        ("echo ' 4.5 '", "{type: output_numeric, operator: lt, target: 5}", "yes"),
        ("echo 7", "{type: output_numeric, operator: le, target: 5}", "no"),
        (
            'echo \'{"a": {"b": [3, 9]}}\'',
            "{type: output_json, path: .a.b.1, operator: eq, target: 9}",
            "yes",
        ),
        (
            "echo '{\"ok\": false}'",
            "{type: output_json, path: .ok, operator: eq, target: true}",
            "no",
        ),
        ("echo 0.98", "{type: convergence, target: 1.0, tolerance: 0.05}", "target"),
        ("echo 3", "{type: convergence, target: 0}", "progress"),
        ("echo 3", "{type: convergence, target: 0, previous: '2'}", "stall"),
        (
            "echo 9",
            "{type: convergence, target: 10, direction: maximize, previous: '8'}",
            "progress",
        ),
        (
            "printf 'thinking\\napprove\\n\\n'",
            "{type: classify, verdicts: [approve, reject]}",
            "approve",
        ),
        (
            "printf 'reject\\nmaybe\\n'",
            "{type: classify, verdicts: [approve, reject], line: first}",
            "reject",
        ),
        ("echo maybe", "{type: classify, verdicts: [approve, reject]}", "error"),
        ("echo 'not json'", "{type: output_json, path: .a, operator: eq, target: 1}", "error"),
        ("echo '{}'", "{type: output_json, path: .missing, operator: eq, target: 1}", "error"),
        ("echo OK; exit 3", "{type: output_contains, pattern: OK}", "error"),
        ("echo OK; exit 3", "{type: output_contains, pattern: OK, ignore_exit_code: true}", "yes"),
        ("exit 7", "{type: exit_code}", "error"),
    ],
)
def test_each_evaluator_gives_its_verdict(
    tmp_path: Path, action: str, evaluate: str, verdict: str
) -> None:
    ran = run_yaml(
        tmp_path,
        f"""
        name: judge
        initial: probe
        scope: ["."]
        states:
          probe:
            action: {json.dumps(action)}
            evaluate: {evaluate}
            route: {{{verdict}: seen, _: other, _error: other}}
          seen: {{terminal: true}}
          other: {{terminal: true, failure: true}}
        """,
    )
    assert ran.verdicts() == [("probe", verdict)], ran.stderr
    assert (ran.code, ran.json["final_state"]) == (0, "seen")


def test_an_interpolated_json_target_keeps_its_type(tmp_path: Path) -> None:
    """`target: ${context.want}` with want = 2 is the number 2: rendered to the text "2" it
    never equalled the document's 2, so the check answered `no` to a matching value."""
    (tmp_path / "doc.json").write_text('{"n": 2, "ok": true, "names": ["a", "b"], "s": "2"}')
    ran = run_yaml(
        tmp_path,
        """
        name: typed
        initial: count
        scope: ["."]
        context: {want: 2, flag: true, names: [a, b]}
        states:
          count:
            action: cat doc.json
            evaluate: {type: output_json, path: .n, operator: eq, target: "${context.want}"}
            route: {yes: ok, _: other}
          ok:
            action: cat doc.json
            evaluate: {type: output_json, path: .ok, operator: eq, target: "${context.flag}"}
            route: {yes: names, _: other}
          names:
            action: cat doc.json
            evaluate: {type: output_json, path: .names, operator: eq, target: "${context.names}"}
            route: {yes: text, _: other}
          text:
            action: cat doc.json
            evaluate: {type: output_json, path: .s, operator: eq, target: "${context.want}"}
            route: {no: seen, _: other}
          seen: {terminal: true}
          other: {terminal: true, failure: true}
        """,
    )
    assert ran.verdicts() == [("count", "yes"), ("ok", "yes"), ("names", "yes"), ("text", "no")]
    assert (ran.code, ran.json["final_state"]) == (0, "seen"), ran.stderr


@pytest.mark.parametrize("document", ['{"n": NaN}', '{"n": -Infinity}', '{"n": 1e999}'])
def test_a_json_output_beyond_json_is_an_error_and_the_log_stays_strict_json(
    tmp_path: Path, document: str
) -> None:
    """Python's json reads `NaN`, `Infinity` and `1e999` (as infinity): `.n eq 1` answered `no`
    and the evaluate event and state.json carried a bare `NaN` that jq refuses."""
    (tmp_path / "doc.json").write_text(document)
    ran = run_yaml(
        tmp_path,
        """
        name: strict
        initial: read
        scope: ["."]
        states:
          read:
            action: cat doc.json
            evaluate: {type: output_json, path: .n, operator: eq, target: 1}
            route: {error: done, _: other}
          done: {terminal: true}
          other: {terminal: true, failure: true}
        """,
    )
    assert ran.verdicts() == [("read", "error")], ran.stderr

    def refuse(name: str) -> None:
        raise ValueError(f"{name} in a strict JSON file")

    run_dir = next((tmp_path / ".loops" / "runs").iterdir())
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        json.loads(line, parse_constant=refuse)
    json.loads((run_dir / "state.json").read_text(), parse_constant=refuse)


def test_json_details_say_why(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: why
        initial: probe
        scope: ["."]
        states:
          probe:
            action: echo 4.2
            evaluate: {type: output_numeric, operator: ge, target: 5}
            on_yes: done
            on_no: done
          done: {terminal: true}
        """,
    )
    evaluate = next(e for e in ran.events() if e["event"] == "evaluate")
    assert evaluate["details"] == {"value": 4.2, "operator": "ge", "target": 5.0}


# --- termination order -----------------------------------------------------------------------

COUNTDOWN = """
name: countdown
initial: work
scope: ["."]
max_steps: {max_steps}
{extra}
states:
  work:
    action: 'n=$(cat n 2>/dev/null || echo 0); echo $((n + 1)) > n; [ $((n + 1)) -ge 3 ]'
    on_yes: done
    on_no: $current
  report:
    action: echo reporting > report.txt
    next: done
  done: {{terminal: true}}
"""


def test_terminal_reached_on_the_last_permitted_step_is_success(tmp_path: Path) -> None:
    ran = run_yaml(tmp_path, COUNTDOWN.format(max_steps=3, extra=""))
    assert (ran.code, ran.json["outcome"], ran.json["terminated_by"]) == (0, "success", "terminal")
    assert ran.json["steps"] == 3


def test_budget_exhausted_is_inconclusive(tmp_path: Path) -> None:
    ran = run_yaml(tmp_path, COUNTDOWN.format(max_steps=2, extra=""))
    assert ran.code == 3
    assert ran.json["terminated_by"] == "max_steps"
    assert ran.json["outcome"] == "inconclusive"
    assert not (tmp_path / "report.txt").exists()


def test_on_max_steps_runs_once_then_the_run_ends_max_steps(tmp_path: Path) -> None:
    ran = run_yaml(tmp_path, COUNTDOWN.format(max_steps=2, extra="on_max_steps: report"))
    assert (tmp_path / "report.txt").read_text() == "reporting\n"
    assert (ran.code, ran.json["terminated_by"], ran.json["final_state"]) == (
        3,
        "max_steps",
        "report",
    )
    assert ran.json["steps"] == 2  # on_max_steps does not count as a step


def test_max_steps_flag_overrides_the_loop(tmp_path: Path) -> None:
    ran = run_yaml(tmp_path, COUNTDOWN.format(max_steps=10, extra=""), "--max-steps", "1")
    assert (ran.code, ran.json["steps"], ran.json["terminated_by"]) == (3, 1, "max_steps")


CHAIN = """
name: chain
initial: first
scope: ["."]
max_steps: {max_steps}
states:
  first:
    action: echo one
    next: second
  second:
    action: echo two
    next: done
  done: {{terminal: true}}
"""


def test_lint_checks_the_budget_the_run_will_have(tmp_path: Path) -> None:
    """`run --max-steps 5` of a file whose `max_steps: 1` is too short for its two-step path was
    refused by LL006 ("raise max_steps to at least 2"): lint checked the file's budget, not the
    one given for the run. Lint now checks the budget the run will have, both ways: a budget the
    flag makes too short is refused, and the message says where it came from."""
    short = run_yaml(tmp_path, CHAIN.format(max_steps=1), "--max-steps", "5")
    assert (short.code, short.json["outcome"], short.json["steps"]) == (0, "success", 2)
    assert "LL006" not in short.stderr
    refused = run_yaml(tmp_path, CHAIN.format(max_steps=5), "--max-steps", "1")
    assert (refused.code, refused.json["steps"]) == (2, 0), refused.stderr
    assert "the run did not start" in refused.json["error"]
    assert "max_steps 1 given for this run; the file says 5" in refused.stderr
    simulated = ll_loop(tmp_path, "simulate", "loop.yaml", "--max-steps", "1")
    assert simulated.code == 2 and "given for this run; the file says 5" in simulated.stderr
    write_loop(tmp_path, CHAIN.format(max_steps=1))
    walked = ll_loop(tmp_path, "simulate", "loop.yaml", "--max-steps", "2")
    assert walked.code == 0, walked.stderr


def test_a_suite_or_a_fragment_library_given_as_the_loop_is_named_for_what_it_is(
    tmp_path: Path,
) -> None:
    """`ll-loop run nightly.suite.yaml` (or `show`, `simulate`, `ll-harness loop`; or a fragment
    library) loaded the file as a loop: three F010 "missing the required key" errors and an F012
    for every suite key, none saying that the file is a suite. One sentence now says what the
    file is and what runs it, exit 2 before anything starts."""
    write_loop(tmp_path, "subject:\n  cmd: echo hi\ncases: [{id: a}]\n", "nightly.suite.yaml")
    write_loop(tmp_path, "fragments:\n  ok:\n    action: 'true'\n", "lib.yaml")
    for name, what in (("nightly.suite.yaml", "a suite file"), ("lib.yaml", "a fragment library")):
        ran = ll_loop(tmp_path, "run", name, "--json")
        assert (ran.code, ran.json["steps"]) == (2, 0)
        assert ran.json["error"].startswith(f"{name} is {what}")
        assert ran.json["error"].endswith(", not a loop")
        assert "F010" not in ran.stderr and "F012" not in ran.stderr
        for command in ("show", "simulate"):
            looked = ll_loop(tmp_path, command, name)
            assert looked.code == 2 and f"error: {name} is {what}" in looked.stderr
            assert "F010" not in looked.stderr
    assert (
        "ll-harness suite nightly.suite.yaml"
        in ll_loop(tmp_path, "run", "nightly.suite.yaml").stderr
    )
    assert not (tmp_path / ".loops" / "runs").exists() or not any(
        (tmp_path / ".loops" / "runs").iterdir()
    )
    measured = cli.ll_harness(tmp_path, "loop", "nightly.suite.yaml", "--exit-code", "0")
    assert measured.code == 2, measured.stderr
    assert "nightly.suite.yaml is a suite file, not a loop" in measured.stderr


def test_a_suite_whose_subject_comes_after_200_kb_of_cases_is_still_a_suite(
    tmp_path: Path,
) -> None:
    """A suite not named `*.suite.yaml` was told from a loop by its first 200 KB only: with
    300 KB of inline cases before `subject:`, `ll-loop validate` and `run` loaded it as a loop
    (F010 missing `initial`, `states`; F012 for `cases`). A head with neither `states:` nor
    `subject:` is now read on, up to the size any YAML file may have."""
    cases = "".join(
        f"  - input: {{text: 'case {i} padded to be long enough'}}\n" for i in range(6000)
    )
    body = f"name: big\ncases:\n{cases}subject:\n  command: echo hi\n"
    judges = "judges:\n  - name: ok\n    builtin: exit_code\n"
    write_loop(tmp_path, body + judges, "big.yaml")
    assert (tmp_path / "big.yaml").stat().st_size > 250_000
    ran = ll_loop(tmp_path, "run", "big.yaml")
    assert ran.code == 2 and "error: big.yaml is a suite file, not a loop" in ran.stderr, ran.stderr
    checked = ll_loop(tmp_path, "validate", "big.yaml")
    assert "F010" not in checked.stdout + checked.stderr, checked.stdout


def test_loop_timeout_ends_inconclusive(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: slow
        initial: wait
        scope: ["."]
        timeout: 1
        states:
          wait:
            action: sleep 0.3
            on_yes: $current
            on_no: done
          done: {terminal: true}
        """,
    )
    assert (ran.code, ran.json["terminated_by"], ran.json["outcome"]) == (
        3,
        "timeout",
        "inconclusive",
    )
    assert 2 <= ran.json["steps"] <= 5


# --- actions that fail -----------------------------------------------------------------------


def test_state_timeout_kills_the_process_group_and_is_an_error_never_judged(
    tmp_path: Path,
) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: hang
        initial: hang
        scope: ["."]
        states:
          hang:
            action: 'sleep 300 & echo $! > child.pid; echo OK; wait'
            timeout: 0.5
            evaluate: {type: output_contains, pattern: OK}
            on_yes: done
            on_no: done
            on_error: timed_out
          done: {terminal: true}
          timed_out: {terminal: true, failure: true}
        """,
    )
    assert (ran.code, ran.json["final_state"]) == (1, "timed_out")
    evaluate = next(e for e in ran.events() if e["event"] == "evaluate")
    assert evaluate["verdict"] == "error" and evaluate["details"]["timed_out"] is True
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.1)
    assert not _alive(child), "the backgrounded sleep outlived the timed-out action"


def test_next_never_advances_on_failure(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: chain
        initial: build
        scope: ["."]
        states:
          build:
            action: exit 2
            next: deploy
          deploy:
            action: touch deployed
            next: done
          done: {terminal: true}
        """,
    )
    assert ran.code == 2
    assert ran.json["terminated_by"] == "error"
    assert "'build'" in ran.json["error"] and "exited with code 2" in ran.json["error"]
    assert not (tmp_path / "deployed").exists()


def test_next_failure_goes_to_on_error_when_set(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: chain
        initial: build
        scope: ["."]
        states:
          build:
            action: exit 2
            next: done
            on_error: cleanup
          cleanup:
            action: touch cleaned
            next: failed
          done: {terminal: true}
          failed: {terminal: true, failure: true}
        """,
    )
    assert (ran.code, ran.json["final_state"]) == (1, "failed")
    assert (tmp_path / "cleaned").exists()


def test_unspawnable_or_killed_action_is_an_error(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: killed
        initial: die
        scope: ["."]
        states:
          die:
            action: kill -9 $$
            on_yes: done
            on_no: done
            on_error: crashed
          done: {terminal: true}
          crashed: {terminal: true, failure: true}
        """,
    )
    assert ran.json["final_state"] == "crashed"
    evaluate = next(e for e in ran.events() if e["event"] == "evaluate")
    assert evaluate["details"]["signal"] == 9


# --- routing ---------------------------------------------------------------------------------


def test_unrouted_verdict_ends_the_run_with_exit_2(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: unrouted
        initial: pick
        scope: ["."]
        states:
          pick:
            action: echo maybe
            evaluate: {type: classify, verdicts: [yes_please, maybe]}
            route: {yes_please: done, _error: done}
          done: {terminal: true}
        lint:
          suppress:
            - {code: LL007, reason: this test needs an unrouted verdict at run time}
        """,
    )
    assert (ran.code, ran.json["terminated_by"]) == (2, "error"), ran.stderr
    assert "'pick'" in ran.json["error"] and "'maybe'" in ran.json["error"]


def test_current_routes_back_to_the_same_state(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: again
        initial: poll
        scope: ["."]
        states:
          poll:
            action: 'echo x >> polls; [ $(wc -l < polls) -ge 3 ]'
            on_yes: done
            on_no: $current
          done: {terminal: true}
        """,
    )
    assert ran.verdicts() == [("poll", "no"), ("poll", "no"), ("poll", "yes")]
    assert ran.code == 0


def test_retries_count_along_back_edges_and_reset_on_a_fresh_entry(tmp_path: Path) -> None:
    # discover → execute → check → execute is a retry; discover → execute starts fresh.
    # Item 1 fails check twice then passes (2 retries); item 2 fails three times: the third
    # failing check would be its third retry, over max_retries 2 → on_retry_exhausted.
    ran = run_yaml(
        tmp_path,
        """
        name: harness
        initial: discover
        scope: ["."]
        max_steps: 40
        states:
          discover:
            action: |
              n=$(( $(cat item 2>/dev/null || echo 0) + 1 )); echo $n > item
              rm -f tries; [ $n -le 2 ]
            on_yes: execute
            on_no: done
          execute:
            action: 'echo x >> tries'
            next: check
            max_retries: 2
            on_retry_exhausted: gave_up
          check:
            action: '[ "$(cat item)" = 1 ] && [ $(wc -l < tries) -ge 3 ]'
            on_yes: discover
            on_no: execute
          done: {terminal: true}
          gave_up: {terminal: true, failure: true}
        """,
    )
    assert (ran.code, ran.json["final_state"]) == (1, "gave_up"), ran.stderr
    retries = [(e["retries"], e["exhausted"]) for e in ran.events() if e["event"] == "retry"]
    assert retries == [(1, False), (2, False), (1, False), (2, False), (3, True)]
    assert (tmp_path / "item").read_text() == "2\n"


def test_a_crash_still_prints_the_json_object(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug inside `run --json` (the KeyError of `on_retry_exhausted: $current`) printed its
    sentence on stderr and nothing on stdout, where a script waits for the one result object.
    The command here is a stand-in that fails as a bug would; the guard is ll-loop's own."""
    import typer

    from engine.cli.common import run_guarded

    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """ll-loop (its commands are subcommands)."""

    @app.command()
    def run(loop: str, json: bool = False) -> None:
        raise KeyError("$current")

    monkeypatch.setattr(sys, "argv", ["ll-loop", "run", "loop.yaml", "--json"])
    assert run_guarded(app, "ll-loop") == 2
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert set(result) == RESULT_KEYS
    assert result["error"] == "internal error: KeyError: '$current'"
    assert "internal error: KeyError" in err


def test_retries_exhausted_into_current_re_enter_the_state(tmp_path: Path) -> None:
    """`on_retry_exhausted: $current` was taken as a state named "$current": the run crashed
    with an internal error (KeyError), printing no JSON object and leaving state.json at a
    state that does not exist. It re-enters the state, as `$current` does everywhere else."""
    loop = """
        name: again
        initial: try
        max_steps: 4
        scope: ["."]
        states:
          try:
            action: exit 1
            on_yes: done
            on_no: $current
            max_retries: 1
            on_retry_exhausted: $current
          done: {terminal: true}
        """
    ran = run_yaml(tmp_path, loop)
    assert (ran.code, ran.json["terminated_by"], ran.json["final_state"]) == (3, "max_steps", "try")
    exhausted = [e["target"] for e in ran.events() if e["event"] == "retry" and e["exhausted"]]
    assert exhausted and set(exhausted) == {"try"}
    simulated = ll_loop(tmp_path, "simulate", "loop.yaml", "-s", "all-no", "--json")
    assert json.loads(simulated.stdout)["terminated_by"] == "max_steps", simulated.stderr


def test_partial_falls_back_to_on_no(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: partial
        initial: grade
        scope: ["."]
        states:
          grade:
            action: echo partial
            evaluate: {type: classify, verdicts: ["yes", "no", partial]}
            on_yes: done
            on_no: redo
            on_error: redo
          redo:
            action: 'true'
            next: done
          done: {terminal: true}
        """,
    )
    assert ran.code == 0, ran.stderr
    route = next(e for e in ran.events() if e["event"] == "route")
    assert (route["verdict"], route["target"]) == ("partial", "redo")


# --- captures, context, interpolation --------------------------------------------------------


def test_captures_hold_the_result_and_render_as_json(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: capture
        initial: measure
        scope: ["."]
        states:
          measure:
            action: echo 42
            capture: m
            evaluate: {type: output_numeric, operator: gt, target: 40}
            on_yes: show
            on_no: show
          show:
            action: |
              printf '%s' '${captured.m | tojson}' > capture.json
              echo "${captured.m.output}" > value.txt
              echo "${prev.state}:${prev.verdict}" > prev.txt
            next: done
          done: {terminal: true}
        """,
    )
    assert ran.code == 0, ran.stderr

    capture = json.loads((tmp_path / "capture.json").read_text())
    assert capture["output"] == "42" and capture["exit_code"] == 0
    assert capture["verdict"] == "yes" and capture["details"]["value"] == 42.0
    assert set(capture) >= {"output", "stderr", "exit_code", "duration_ms", "timed_out"}
    assert (tmp_path / "value.txt").read_text() == "42\n"
    assert (tmp_path / "prev.txt").read_text() == "measure:yes\n"
    assert ran.state()["captured"]["m"]["output"] == "42"


def test_missing_interpolation_value_is_an_error_verdict_that_routes(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: missing
        initial: use
        scope: ["."]
        states:
          use:
            action: echo "${context.nope}" > used
            next: done
            on_error: handled
          done: {terminal: true}
          handled: {terminal: true, failure: true}
        """,
    )
    assert (ran.code, ran.json["final_state"]) == (1, "handled"), ran.stderr
    evaluate = next(e for e in ran.events() if e["event"] == "evaluate")
    assert evaluate["verdict"] == "error" and "context.nope" in evaluate["details"]["expression"]
    assert not (tmp_path / "used").exists()


def test_context_flag_and_input_reach_the_action_verbatim(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: ctx
        initial: say
        scope: ["."]
        context: {greeting: hello, n: 1}
        parameters:
          n: {type: integer}
        states:
          say:
            action: |
              printf '%s|%s|%s' "${context.greeting}" "${context.input}" \
                '${context.n | tojson}' > out
              echo "$LL_STATE $LL_RUN_ID" > env
            next: done
          done: {terminal: true}
        """,
        'it\'s "$(rm -rf /)"',
        "--context",
        "greeting=hi there",
        "--context",
        "n=7",
    )
    assert ran.code == 0, ran.stderr
    assert (tmp_path / "out").read_text() == 'hi there|it\'s "$(rm -rf /)"|7'
    assert (tmp_path / "env").read_text() == f"say {ran.json['run_id']}\n"


def test_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    """On the command line they are refused (one sentence, exit 2); from the environment they
    reach the action as the same bytes, and the run's records escape them instead of crashing."""
    loop = """
        name: raw-bytes
        initial: say
        scope: ["."]
        states:
          say:
            action: 'printf "%s" "${env.RAW}" > out'
            next: done
          done: {terminal: true}
        """
    bad = os.fsdecode(b"a\xffb")  # how Python hands such an argument over
    refused = run_yaml(tmp_path, loop, "--context", f"x={bad}")
    assert refused.code == 2
    assert refused.json["error"] == "--context x is not valid UTF-8 text"
    assert "internal error" not in refused.stderr
    assert run_yaml(tmp_path, loop, bad).json["error"] == "INPUT is not valid UTF-8 text"
    keyed = run_yaml(tmp_path, loop, "--context", f"{bad}=x")
    assert (keyed.code, keyed.json["error"]) == (2, "--context is not valid UTF-8 text")

    write_loop(tmp_path, loop)
    env = {**os.environ, "RAW": bad}
    done = subprocess.run(
        [str(LL_LOOP), "run", "loop.yaml", "--json"], cwd=tmp_path, env=env, capture_output=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out").read_bytes() == b"a\xffb"
    run_dir = sorted((tmp_path / ".loops" / "runs").iterdir())[-1]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    [start] = [e for e in events if e["event"] == "action_start"]
    assert "a\udcffb" in start["action"]


def test_help_lists_every_command_wherever_the_flag_is(tmp_path: Path) -> None:
    """`main` registers only the command it runs; help must still show them all."""
    for args in (["--help"], ["--help", "run"], []):
        shown = ll_loop(tmp_path, *args).stdout
        for command in ("run", "resume", "validate", "simulate", "install", "scaffold-verify"):
            assert f" {command} " in shown, (args, command)
    only_run = ll_loop(tmp_path, "run", "--help")
    assert only_run.code == 0 and "--max-steps" in only_run.stdout


def test_run_dir_is_the_artifacts_folder(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: artifacts
        initial: write
        scope: ["."]
        states:
          write:
            action: echo made > "${run.dir}/made.txt"
            next: done
          done: {terminal: true}
        """,
    )
    assert (ran.run_dir / "artifacts" / "made.txt").read_text() == "made\n"


# --- --json for every outcome ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "code", "outcome", "terminated_by"),
    [
        ("exit 0", 0, "success", "terminal"),
        ("exit 1", 1, "failure", "terminal"),
        ("exit 5", 2, "error", "error"),
    ],
)
def test_json_result_for_each_outcome(
    tmp_path: Path, action: str, code: int, outcome: str, terminated_by: str
) -> None:
    ran = run_yaml(
        tmp_path,
        f"""
        name: outcome
        initial: go
        scope: ["."]
        states:
          go:
            action: {action}
            on_yes: good
            on_no: bad
          good: {{terminal: true}}
          bad: {{terminal: true, failure: true}}
        """,
    )
    assert set(ran.json) == RESULT_KEYS
    assert (ran.code, ran.json["outcome"], ran.json["terminated_by"]) == (
        code,
        outcome,
        terminated_by,
    )
    assert ran.stdout.count("\n") == 1  # exactly one JSON object on stdout


def test_refusal_before_the_first_step_still_prints_json(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: broken
        initial: start
        states:
          start:
            action: 'true'
            on_yes: nowhere
        """,
    )
    assert ran.code == 2
    assert set(ran.json) == RESULT_KEYS
    assert ran.json["outputs"] == {}
    assert ran.json["run_id"] is None and ran.json["outcome"] == "error"
    assert ran.json["loop"] == "broken"  # its name, as in every result, once it has loaded
    assert ran.json["error"]
    assert "nowhere" in ran.stderr
    assert not (tmp_path / ".loops" / "runs").exists()


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (
            ["run", "loop.yaml", "--json", "--max-steps", "0"],
            "'--max-steps': 0 is not in the range",
        ),
        (["run", "loop.yaml", "--json", "--queue-timeout", "nan"], "nan is not a finite number"),
        (["run", "loop.yaml", "--jsn", "--json"], "No such option: --jsn"),
        (["resume", "--json"], "Missing argument"),
    ],
)
def test_a_command_line_that_does_not_parse_still_prints_the_json_refusal(
    tmp_path: Path, args: list[str], why: str
) -> None:
    write_loop(tmp_path, "name: x\ninitial: s\nstates:\n  s: {terminal: true}\n")
    ran = ll_loop(tmp_path, *args)
    assert ran.code == 2
    assert set(ran.json) == RESULT_KEYS and ran.json["outcome"] == "error"
    assert why in ran.json["error"]
    assert why in ran.stderr  # the usage error is still shown to a person


def test_invalid_yaml_and_missing_loop_are_refusals(tmp_path: Path) -> None:
    write_loop(tmp_path, "name: [unclosed\n")
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json")
    assert ran.code == 2 and ran.json["error"] and "Traceback" not in ran.stderr
    assert ran.json["loop"] == "loop.yaml"  # no name to give: what was typed
    ran = ll_loop(tmp_path, "run", "no-such-loop", "--json")
    assert ran.code == 2 and "no-such-loop" in ran.json["error"]


def test_the_progress_line_quotes_the_last_line_of_a_long_output_not_of_its_preview(
    tmp_path: Path,
) -> None:
    """The event keeps the first 2,000 characters of an action's output; the progress line
    quoted the last line of that preview, a fragment cut mid-word (harness-optimize's `measure`
    showed `· A le`). It quotes the output's real last line."""
    write_loop(
        tmp_path,
        """
name: long
initial: s
states:
  s:
    action: |
      for i in $(seq 100); do echo "line $i of a long listing: abcdefghijklmnopqrstuvwxyz"; done
      echo "measured: 3 of 3 samples passed"
    next: done
  done: {terminal: true}
""",
    )
    ran = ll_loop(tmp_path, "run", "loop.yaml")
    assert ran.code == 0, ran.stderr
    [line] = [x for x in ran.stderr.splitlines() if "step 1/" in x]
    assert line.endswith("· measured: 3 of 3 samples passed"), line


def test_a_last_line_longer_than_the_output_s_tail_is_quoted_by_its_end(tmp_path: Path) -> None:
    """The event's `output_tail` is the output's last 200 characters: a last line longer than
    that starts in the middle of a word there, and the progress line quoted its first 69
    characters (`· ab cd ef gh...`, the fragment 0be31c0 meant to stop quoting). A line whose
    start is not known is quoted by its end, after `...`."""
    write_loop(
        tmp_path,
        """
name: long
initial: s
states:
  s:
    action: |
      for i in $(seq 100); do echo "line $i of a long listing: abcdefghijklmnopqrstuvwxyz"; done
      printf 'RESULT'; for i in $(seq 80); do printf ' w%02d' "$i"; done; echo ' END'
    next: done
  done: {terminal: true}
""",
    )
    ran = ll_loop(tmp_path, "run", "loop.yaml")
    assert ran.code == 0, ran.stderr
    [line] = [x for x in ran.stderr.splitlines() if "step 1/" in x]
    assert line.endswith(" w79 w80 END") and "· ..." in line, line


def test_a_suite_or_a_library_given_as_a_loop_says_what_it_is(tmp_path: Path) -> None:
    """`ll-loop run s.suite.yaml` listed seven schema errors of a loop (`missing the required
    key 'initial'`, `unknown key 'dataset'`...) and never said the file is a suite, nor how to
    run one; `ll-harness suite loop.yaml` did the same the other way round."""
    (tmp_path / "s.suite.yaml").write_text(
        "name: s\ndataset: cases\nsubject: {command: echo hi}\n"
        "judges:\n  - {name: ok, builtin: exit_code}\n"
    )
    (tmp_path / "frag.yaml").write_text("fragments:\n  f:\n    action: echo hi\n")
    write_loop(tmp_path, COUNTDOWN.format(max_steps=5, extra=""))
    for args, said, hint in (
        (("run", "s.suite.yaml"), "s.suite.yaml is a suite", "ll-harness suite s.suite.yaml"),
        (("show", "s.suite.yaml"), "s.suite.yaml is a suite", "ll-harness suite s.suite.yaml"),
        (("run", "frag.yaml"), "frag.yaml is a fragment library", "import:"),
    ):
        ran = ll_loop(tmp_path, *args)
        assert ran.code == 2, ran.stderr
        assert f"error: {said}" in ran.stderr and hint in ran.stderr, ran.stderr
        assert "F010" not in ran.stderr and "F012" not in ran.stderr, ran.stderr
    done = subprocess.run(
        [str(Path(LL_LOOP).with_name("ll-harness")), "suite", "loop.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "error: loop.yaml is a loop, not a suite" in done.stderr, done.stderr
    assert "ll-loop run loop.yaml" in done.stderr and "F010" not in done.stderr


def test_a_huge_loop_given_to_ll_harness_suite_is_not_read_whole(tmp_path: Path) -> None:
    """The loop-or-suite sniff of `ll-harness suite` read the whole file to look at its head
    (the one of `ll-loop run` reads 200 KB): a 3 GB file ran out of memory, an internal
    error, instead of being told it is a loop."""
    import resource

    huge = tmp_path / "huge.yaml"
    huge.write_text("name: x\ninitial: a\nstates:\n  a: {terminal: true}\n")
    os.truncate(huge, 3 * 1024**3)  # sparse: no disk, but a read of it takes 3 GB

    def small_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1024**3, 1024**3))

    done = subprocess.run(
        [str(Path(LL_LOOP).with_name("ll-harness")), "suite", "huge.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small_memory,
    )
    assert "error: huge.yaml is a loop, not a suite" in done.stderr, done.stderr
    assert done.returncode == 2 and "internal error" not in done.stderr


def test_the_refusal_hints_quote_a_path_with_a_space_in_both_directions(tmp_path: Path) -> None:
    """`ll-loop run` of a suite quoted its path in the hint (`ll-harness suite 'my s.suite.yaml'`)
    while `ll-harness suite` of a loop did not (`ll-loop run my loop.yaml`: two words to the
    shell): the two refusals, merged from two helpers, now quote alike."""
    (tmp_path / "my s.suite.yaml").write_text(
        "name: s\ndataset: cases\nsubject: {command: echo hi}\n"
        "judges:\n  - {name: ok, builtin: exit_code}\n"
    )
    (tmp_path / "my loop.yaml").write_text(COUNTDOWN.format(max_steps=5, extra=""))
    ran = ll_loop(tmp_path, "run", "my s.suite.yaml")
    assert "`ll-harness suite 'my s.suite.yaml'`" in ran.stderr, ran.stderr
    done = subprocess.run(
        [str(Path(LL_LOOP).with_name("ll-harness")), "suite", "my loop.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "`ll-loop run 'my loop.yaml'`" in done.stderr, done.stderr
    assert "`ll-harness loop 'my loop.yaml'`" in done.stderr, done.stderr


def test_human_summary_without_json(tmp_path: Path) -> None:
    write_loop(tmp_path, COUNTDOWN.format(max_steps=5, extra=""))
    ran = ll_loop(tmp_path, "run", "loop.yaml")
    assert ran.code == 0
    assert "success" in ran.stdout and "'done'" in ran.stdout
    assert "step 1/5" in ran.stderr  # plain progress lines when stderr is not a TTY
    quiet = ll_loop(tmp_path, "run", "loop.yaml", "--quiet")
    assert quiet.stderr == ""


def test_the_summary_of_an_error_with_line_breaks_stays_one_line(tmp_path: Path) -> None:
    """An error quoting a multi-line expression was printed with its line breaks raw: the
    summary's first line broke in two and the run's path line was no longer the second."""
    write_loop(
        tmp_path,
        """\
        name: multi
        initial: a
        scope: ["."]
        states:
          a:
            action: |
              echo "${context.missing |
                default(prev.nope)}"
            evaluate: {type: exit_code}
            on_yes: done
            on_no: done
          done: {terminal: true}
        """,
    )
    ran = ll_loop(tmp_path, "run", "loop.yaml")
    assert ran.code == 2, ran.stderr
    first, second = ran.stdout.splitlines()
    assert "cannot interpolate ${context.missing |\\n  default(prev.nope)}" in first, first
    assert " which has no route after 1 step (" in first
    assert second.startswith("  run ")


# --- stop ------------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=str)
def test_a_signal_stops_gracefully_and_writes_state(tmp_path: Path, sig: signal.Signals) -> None:
    """SIGHUP (the terminal closed) too: it killed ll-loop outright, printing nothing and leaving
    the action running in its own process group."""
    write_loop(
        tmp_path,
        """
        name: long
        initial: nap
        scope: ["."]
        states:
          nap:
            action: 'sleep 300 & echo $! > child.pid; wait'
            on_yes: done
            on_no: done
          done: {terminal: true}
        """,
    )
    proc = subprocess.Popen(
        [str(LL_LOOP), "run", "loop.yaml", "--json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal, even when the tests run under nohup
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 10
    while not (tmp_path / "child.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=10)

    result = json.loads(out)
    assert (proc.returncode, result["terminated_by"], result["outcome"]) == (
        3,
        "stopped",
        "inconclusive",
    )
    run_dir = next((tmp_path / ".loops" / "runs").iterdir())
    state = json.loads((run_dir / "state.json").read_text())
    assert (state["status"], state["current"], state["steps"]) == ("stopped", "nap", 0)
    assert not _alive(int((tmp_path / "child.pid").read_text()))


# --- built-ins -------------------------------------------------------------------------------


def test_demo_goes_green_from_an_empty_directory(tmp_path: Path) -> None:
    ran = ll_loop(tmp_path, "run", "fix-until-green-demo", "--json")
    assert (ran.code, ran.json["final_state"], ran.json["steps"]) == (0, "green", 6), ran.stderr


def test_list_shows_project_builtin_and_broken_loops(tmp_path: Path) -> None:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "broken.yaml").write_text("name: [\n")
    ran = ll_loop(tmp_path, "list", "--json")

    entries = {e["name"]: e for e in json.loads(ran.stdout)}
    assert ran.code == 0
    assert entries["broken"]["source"] == "project" and entries["broken"]["error"]
    assert entries["fix-until-green-demo"]["source"] == "builtin"
    assert "fix" in entries["fix-until-green-demo"]["description"]


def test_list_leaves_out_the_libraries_and_suites_kept_beside_the_loops(tmp_path: Path) -> None:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "checks.yaml").write_text("fragments:\n  gate: {next: done}\n")
    (tmp_path / ".loops" / "answers.suite.yaml").write_text("subject: {command: echo}\n")
    ran = ll_loop(tmp_path, "list", "--json")
    names = {e["name"] for e in json.loads(ran.stdout)}
    assert ran.code == 0
    assert not names & {"checks", "answers.suite"}, names


def test_install_over_a_directory_is_one_sentence_not_an_internal_error(tmp_path: Path) -> None:
    (tmp_path / ".loops" / "fix-until-green-demo.yaml").mkdir(parents=True)
    ran = ll_loop(tmp_path, "install", "fix-until-green-demo", "--force")
    assert ran.code == 2
    assert "is not a regular file (a FIFO, device or directory)" in ran.stderr
    assert "internal error" not in ran.stderr


def test_install_copies_a_builtin_and_refuses_to_overwrite(tmp_path: Path) -> None:
    assert ll_loop(tmp_path, "install", "fix-until-green-demo").code == 0
    assert (tmp_path / ".loops" / "fix-until-green-demo.yaml").is_file()
    again = ll_loop(tmp_path, "install", "fix-until-green-demo")
    assert again.code == 2 and "--force" in again.stderr
    assert ll_loop(tmp_path, "install", "fix-until-green-demo", "--force").code == 0
    typo = ll_loop(tmp_path, "install", "fix-until-clen")  # a typo says which one was meant
    assert typo.code == 2
    assert "no built-in loop named 'fix-until-clen' (did you mean 'fix-until-clean'?)" in (
        typo.stderr
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and ") Z" in stat.read_text())


def test_loop_timeout_clamps_a_long_state(tmp_path: Path) -> None:
    start = time.monotonic()
    ran = run_yaml(
        tmp_path,
        """
        name: clamp
        initial: hang
        scope: ["."]
        timeout: 0.7
        states:
          hang:
            action: sleep 60
            on_yes: done
            on_no: done
          done: {terminal: true}
        """,
    )
    assert (ran.code, ran.json["terminated_by"]) == (3, "timeout")
    assert time.monotonic() - start < 10


def test_live_progress_line_on_a_tty(tmp_path: Path) -> None:
    import pty

    write_loop(tmp_path, COUNTDOWN.format(max_steps=5, extra=""))
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(LL_LOOP), "run", "loop.yaml", "--json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
    )
    out, _ = proc.communicate(timeout=30)
    os.close(follower)
    screen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        screen += chunk
    os.close(leader)
    assert proc.returncode == 0 and json.loads(out)["outcome"] == "success"
    text = screen.decode()
    assert "\r\x1b[K" in text and "step 3/5" in text and "work" in text


def test_a_sub_loop_returns_its_terminal_and_outputs(tmp_path: Path) -> None:
    write_loop(
        tmp_path,
        """
        name: child
        initial: work
        scope: ["."]
        parameters:
          n: {type: integer, required: true}
        outputs:
          doubled: ${captured.calc.output}
        states:
          work:
            action: echo $(( ${context.n} * 2 ))
            capture: calc
            evaluate: {type: output_numeric, operator: gt, target: 5}
            on_yes: big
            on_no: blocked
          big: {terminal: true}
          blocked: {terminal: true, failure: true}
        """,
        name="child.yaml",
    )
    parent = """
        name: parent
        initial: call
        scope: ["."]
        states:
          call:
            loop: child.yaml
            with: {{n: {n}}}
            capture: kid
            on_terminal: {{blocked: escalate}}
            on_yes: show
            on_no: show
          show:
            action: echo "${{captured.kid.outputs.doubled}} ${{captured.kid.terminal}}" > out.txt
            next: done
          escalate:
            action: echo escalated > out.txt
            next: done
          done: {{terminal: true}}
        """
    ran = run_yaml(tmp_path, parent.format(n=4))
    assert (ran.code, ran.json["steps"]) == (0, 2), ran.stderr
    assert (tmp_path / "out.txt").read_text() == "8 big\n"
    assert {e["depth"] for e in ran.events()} == {0, 1}
    ran = run_yaml(tmp_path, parent.format(n=1))
    assert (tmp_path / "out.txt").read_text() == "escalated\n"


def test_json_result_carries_the_loops_outputs(tmp_path: Path) -> None:
    ran = run_yaml(
        tmp_path,
        """
        name: returns
        initial: work
        scope: ["."]
        outputs:
          answer: "${captured.work.output}"
          missing: "${captured.nothing.output}"
        states:
          work:
            action: echo forty-two
            capture: work
            next: done
          done: {terminal: true}
        """,
    )
    assert ran.code == 0
    assert ran.json["outputs"]["answer"] == "forty-two"
    assert ran.json["outputs"]["missing"] is None  # a failing output says so, not a crash


def test_an_output_that_is_not_a_finite_number_is_null_and_says_why(tmp_path: Path) -> None:
    """`run --json` printed `NaN` and `Infinity`, which no strict JSON reader accepts."""
    ran = run_yaml(
        tmp_path,
        """
        name: returns
        initial: work
        scope: ["."]
        outputs:
          ratio: "${captured.work.output | float}"
          huge: "${[1, {'x': 1e308 * 10}]}"
          fine: "${captured.work.output | length}"
        states:
          work:
            action: echo nan
            capture: work
            next: done
          done: {terminal: true}
        """,
    )
    assert ran.code == 0, ran.stderr
    strict = json.loads(ran.stdout, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
    assert strict["outputs"] == {"ratio": None, "huge": None, "fine": 3}
    errors = [e["error"] for e in ran.events() if e["event"] == "output_error"]
    assert len(errors) == 2 and all("not a finite number" in e for e in errors)


def test_every_event_is_on_disk_before_the_run_waits(tmp_path: Path) -> None:
    """A step's events are written together, but always before the run waits on anything: the
    judge of a state without an action, an action, and the judge of an action (after it ended)
    each find their step's events in the log while they run."""
    events = f"{tmp_path}/.loops/runs/*/events.jsonl"
    ran = run_yaml(
        tmp_path,
        f"""
        name: waits
        initial: look
        scope: ["."]
        states:
          look:
            evaluate:
              type: assessment
              judges:
                - name: seen
                  check: |
                    import glob
                    text = open(glob.glob({events!r})[0]).read()
                    return '"event":"state_enter"' in text, "its state_enter is on disk"
            on_yes: act
            on_no: failed
          act:
            action: grep -c '"event":"action_start"' {events}
            evaluate: {{type: output_numeric, operator: eq, target: 1}}
            on_yes: judged
            on_no: failed
          judged:
            action: echo judged
            evaluate:
              type: assessment
              judges:
                - name: seen
                  check: |
                    import glob
                    text = open(glob.glob({events!r})[0]).read()
                    ended = text.count('"event":"action_complete"')
                    return ended == 2, f"{{ended}} action_complete on disk"
            on_yes: done
            on_no: failed
          done: {{terminal: true}}
          failed: {{terminal: true, failure: true}}
        """,
    )
    assert ran.json["outcome"] == "success", ran.stdout + ran.stderr


AGENT_DELETED = """\
name: ag
initial: rm
scope: ["."]
llm:
  runner: "cmd:{runner}"
states:
  rm:
    action: rm -f agent.sh
    next: ask
  ask:
    action: say hi
    action_type: prompt
    timeout: 10
    next: done
    on_error: failed
  done:
    terminal: true
  failed:
    terminal: true
    failure: true
"""


@pytest.mark.parametrize("runner", ["./agent.sh", "agent.sh-gone-from-path"])
def test_an_agent_cli_gone_mid_run_spent_nothing(tmp_path: Path, runner: str) -> None:
    """An agent CLI deleted mid-run: bash exits 127 (`No such file or directory`, or `command
    not found` for a name on PATH) and the agent never ran, yet the run said "$0.0000 +
    unknown" and "the agent of state ask reported no cost". Its cost is known: nothing."""
    (tmp_path / ".loops").mkdir()
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\ncat >/dev/null\necho hello\n")
    agent.chmod(0o755)
    if runner != "./agent.sh":  # a name the preflight finds on PATH, gone when the state runs
        os.symlink(agent, tmp_path / runner)
    write_loop(tmp_path, AGENT_DELETED.format(runner=runner), "ag.yaml")
    if runner != "./agent.sh":
        text = (tmp_path / "ag.yaml").read_text().replace("rm -f agent.sh", f"rm -f {runner}")
        (tmp_path / "ag.yaml").write_text(text)
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    ran = cli.ll_loop(tmp_path, "run", "ag.yaml", env=env)
    assert ran.code == 1, ran.stderr
    said = ran.stdout + ran.stderr
    assert "unknown" not in said and "reported no cost" not in said, said
    run_id = said.split("  run ", 1)[1].split(":", 1)[0]
    explained = ll_loop(tmp_path, "explain", run_id).stdout
    assert "action exited with code 127" in explained, explained
    assert "+ unknown" not in explained and "reported no cost" not in explained, explained
