"""The judge engine without a model: builtins, inline checks, module judges, conditions, and
bad input that becomes that judge's error (one sentence with the judge and its file line),
never a crash and never a pass. Commands run for real through the loop's action runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from engine.judges import (
    JudgeEnv,
    JudgeResult,
    all_builtins,
    assess,
    build_record,
    compile_judge,
    find_builtin,
    run_judge,
    verdict_of,
)
from engine.model.ports import ActionResult
from engine.runtime.actions import ActionRunner
from tests.judges_helpers import judge_of, judges_of
from tests.run_helpers import run_yaml

LL_LOOP = Path(sys.executable).with_name("ll-loop")
RECORD = build_record(
    stdout='{"status": "ok", "items": [1, 2, 3]}\n',
    exit_code=0,
    trace={
        "tool_calls": [{"name": "Bash", "input": {"command": "pytest -q"}}, {"name": "Read"}],
        "num_turns": 4,
        "cost_usd": 0.02,
    },
)


class Commands:
    """A `CommandPort` running bash in a directory with the loop's own action runner."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    def run_command(self, command: str, *, timeout: float | None, label: str) -> ActionResult:
        runner = ActionRunner(cwd=self.cwd, env=dict(os.environ))
        try:
            return runner.run_shell(command, state=label, timeout=timeout)
        finally:
            runner.close()


def run(entry: str, record: dict[str, Any] = RECORD, **env: Any) -> JudgeResult:
    return run_judge(judge_of(entry), record, JudgeEnv(**env))


@pytest.mark.parametrize(
    ("entry", "value"),
    [
        ('builtin: regex\narguments: {pattern: \'"status": "ok"\'}', True),
        ("builtin: regex\narguments: {pattern: ERROR, negate: true}", True),
        ("builtin: output_contains\narguments: {pattern: missing}", False),
        ("builtin: output_json\narguments: {path: .items.2, target: 3}", True),
        ("builtin: output_json\narguments: {path: .items.0, operator: gt, target: 5}", False),
        ("builtin: exit_code", True),
        ("builtin: cost_budget\narguments: {max_cost_usd: 0.01}", False),
        ("builtin: agent/cost_budget\narguments: {max_cost_usd: 1}", True),
        ("builtin: max_turns\narguments: {max_turns: 4}", True),
        ("builtin: tool_called\narguments: {name: Bash, input_pattern: pytest}", True),
        ("builtin: tool_called\narguments: {name: 'mcp__*'}", False),
        ("builtin: tool_called\narguments: {name: Write, negate: true}", True),
        (
            "builtin: json_schema\narguments: {schema: {type: object, required: [status]}}",
            True,
        ),
        (
            "builtin: json_schema\narguments: {schema: {type: object, required: [owner]}}",
            False,
        ),
    ],
)
def test_deterministic_builtins(entry: str, value: bool) -> None:
    result = run(f"name: b\n{entry}")
    assert (result.status, result.value, result.passed) == ("ok", value, value), result.error


def test_output_numeric_and_classify_judge_any_field() -> None:
    record = build_record(stdout="41\n", stderr="ready\n")
    numeric = run("name: n\nbuiltin: output_numeric\narguments: {operator: gt, target: 40}", record)
    assert numeric.value is True
    classify = run(
        "name: c\nbuiltin: classify\narguments: {verdicts: [ready, busy], field: stderr}", record
    )
    assert classify.value is True and "ready" in classify.rationale


def test_file_exists_is_relative_to_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "index.js").write_text("x")
    [judge] = judges_of(
        "type: assessment\nexpectations:\n  - {type: file_exists, paths: [dist/index.js, a.d.ts]}"
    )
    result = run_judge(judge, RECORD, JudgeEnv(workspace=tmp_path))
    assert (result.value, result.rationale) == (False, "missing: a.d.ts")


def test_test_script_and_metric_run_real_commands_in_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "cov.txt").write_text("coverage report\n87.5\n")
    block = """
    type: assessment
    expectations:
      - {type: test, command: "test -f cov.txt"}
      - {type: script, command: "echo linting\\nexit 3"}
    metrics:
      - {name: coverage, command: "cat cov.txt", threshold: 80}
      - {name: speed, command: "echo 12", threshold: 20}
    """
    env = JudgeEnv(workspace=tmp_path, commands=Commands(tmp_path))
    test, script, coverage, speed = assess(judges_of(block), RECORD, env).results
    assert (test.value, test.passed) == (True, True)
    assert (script.value, script.rationale) == (False, "exit code 3; output ends: linting")
    assert (coverage.value, coverage.passed, coverage.rationale) == (
        87.5,
        True,
        "87.5 >= threshold 80",
    )
    assert (speed.value, speed.passed) == (12.0, False)


def test_a_script_fails_when_any_of_its_lines_fails(tmp_path: Path) -> None:
    """Polpo's `pnpm lint\\npnpm typecheck` is two checks: a failing lint followed by a passing
    typecheck must not pass (bash alone exits with its last line's status)."""
    (tmp_path / "index.d.ts").write_text("x")
    block = """
    type: assessment
    expectations:
      - {type: script, command: "test -s index.js\\ntest -s index.d.ts"}
      - {type: script, command: "test -s index.d.ts\\nif false; then exit 4; fi\\nfalse || true"}
    """
    env = JudgeEnv(workspace=tmp_path, commands=Commands(tmp_path))
    first, second = assess(judges_of(block), RECORD, env).results
    assert (first.value, first.rationale) == (False, "exit code 1")
    assert second.value is True  # conditions and || are not failures of the script


def test_a_failing_metric_command_says_what_it_printed(tmp_path: Path) -> None:
    """Its error ended 'exited with code 1: ' when the command wrote nothing to stderr."""
    block = """
    type: assessment
    metrics:
      - {name: quiet, command: "echo 90; exit 1", threshold: 1}
      - {name: loud, command: "echo 90; echo no coverage file >&2; exit 2", threshold: 1}
      - {name: silent, command: "exit 3", threshold: 1}
    """
    env = JudgeEnv(workspace=tmp_path, commands=Commands(tmp_path))
    quiet, loud, silent = assess(judges_of(block), RECORD, env).results
    assert str(quiet.error).endswith("the metric command exited with code 1; its output ends: 90")
    assert str(loud.error).endswith("exited with code 2; its stderr ends: no coverage file")
    assert str(silent.error).endswith("the metric command exited with code 3 and printed nothing")


def test_a_metric_that_prints_no_number_is_an_error(tmp_path: Path) -> None:
    [judge] = judges_of("type: assessment\nmetrics:\n  - {command: 'echo n/a', threshold: 1}")
    result = run_judge(judge, RECORD, JudgeEnv(workspace=tmp_path, commands=Commands(tmp_path)))
    assert result.status == "error" and result.passed is None
    assert (
        result.error
        == "judge 'metric' at judges.yaml:10: the metric command printed 'n/a', not a number"
    )


def test_a_command_that_times_out_is_an_error(tmp_path: Path) -> None:
    [judge] = judges_of(
        "type: assessment\nexpectations:\n  - {type: test, command: 'sleep 5', timeout: 0.2}"
    )
    started = time.monotonic()
    result = run_judge(judge, RECORD, JudgeEnv(workspace=tmp_path, commands=Commands(tmp_path)))
    assert result.status == "error" and "did not finish" in str(result.error)
    assert time.monotonic() - started < 4


def test_check_snippets_see_outputs_and_arguments_as_names() -> None:
    entry = """
    name: enough
    arguments: {minimum: 3}
    check: |
      items = json.loads(outputs["stdout"])["items"]
      return len(items) >= minimum, f"{len(items)} items, wanted {arguments['minimum']}"
    """
    result = run(textwrap.dedent(entry).replace("check: |\n", "check: |\n  import json\n", 1))
    assert (result.value, result.rationale) == (True, "3 items, wanted 3")


def test_a_number_passes_at_threshold_or_the_range_midpoint() -> None:
    middle = run("name: s\ncheck: return 0.5, 'half'")
    assert (middle.value, middle.passed, middle.score_range) == (0.5, True, (0.0, 1.0))
    low = run("name: s\ncheck: return 0.49\n")
    assert low.passed is False
    strict = run("name: s\ncheck: return 7\nscore_range: [0, 10]\nthreshold: 8")
    assert (strict.value, strict.passed) == (7.0, False)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "name: bad\ncheck: |\n  x = 1\n  return outputs['missing']\n",
            "judge 'bad' at judges.yaml:13: raised KeyError: 'missing'",
        ),
        (
            "name: bad\ncheck: return 'yes', 'it is'\n",
            "judge 'bad' at judges.yaml:10: returned 'yes' (str), not a bool or a number",
        ),
        (
            "name: bad\ncheck: return float('nan')\n",
            "judge 'bad' at judges.yaml:10: returned nan, not a finite number",
        ),
        (
            "name: bad\ncheck: return 10**400, 'big'\n",
            "judge 'bad' at judges.yaml:10: returned an integer of about 401 digits, too large "
            "for a score (a score is a float, at most about 1.8e+308)",
        ),
        (
            "name: bad\ncheck: return 11\nscore_range: [0, 10]\n",
            "judge 'bad' at judges.yaml:10: returned 11, outside its score_range [0, 10]",
        ),
        (
            "name: bad\ncheck: return 1, 2, 3\n",
            "judge 'bad' at judges.yaml:10: returned a tuple of 3 items, not (value, rationale)",
        ),
        (
            "name: bad\nmodule: no_such_package.checks\nfunction: check\n",
            "judge 'bad' at judges.yaml:10: cannot import module 'no_such_package.checks'",
        ),
        (
            "name: bad\nbuiltin: no_such_builtin\n",
            "judge 'bad' at judges.yaml:10: there is no builtin judge 'no_such_builtin'",
        ),
        (
            "name: bad\nbuiltin: regex\narguments: {patern: x}\n",
            "judge 'bad' at judges.yaml:10: builtin 'regex' needs the argument 'pattern'",
        ),
        (
            "name: bad\nif: len(outputs) > 0\ncheck: return True\n",
            "judge 'bad' at judges.yaml:10: its if: expression is refused (only a value's methods "
            "may be called",
        ),
        (
            "name: bad\nif: outputs['nowhere'] > 0\ncheck: return True\n",
            "judge 'bad' at judges.yaml:10: its if: expression failed (KeyError: 'nowhere')",
        ),
        (
            "name: bad\nbuiltin: regex\narguments: {pattern: x, field: nowhere}\n",
            "judge 'bad' at judges.yaml:10: the outputs record has no field 'nowhere'",
        ),
        (  # an empty pattern matched any output, an empty one included
            "name: bad\nbuiltin: regex\narguments: {pattern: ''}\n",
            "judge 'bad' at judges.yaml:10: the argument 'pattern' of builtin 'regex' is empty",
        ),
        (  # '0 matching call(s)' passed: at least 0 calls always holds
            "name: bad\nbuiltin: tool_called\narguments: {name: Bash, min_count: 0}\n",
            "judge 'bad' at judges.yaml:10: min_count must be at least 1, not 0",
        ),
        (  # 'all 0 expected key(s) match' passed any answer object
            "name: bad\nbuiltin: expected_answer\narguments: {expected: {}}\n",
            "judge 'bad' at judges.yaml:10: the expected mapping is empty",
        ),
    ],
)
def test_bad_input_is_that_judges_error_naming_it_and_its_line(entry: str, message: str) -> None:
    result = run(entry)
    assert result.status == "error" and result.passed is None and result.value is None
    assert str(result.error).startswith(message), result.error


def test_a_dir_content_field_nobody_asked_for_says_where_it_comes_from(tmp_path: Path) -> None:
    """agent_eval's judges read `outputs["main_content"]`; here that field exists only for a
    directory the assessment's `outputs:` (a suite's `outputs.paths`) lists. Without it the
    check said `raised KeyError: 'main_content'` and nothing of where the field comes from."""
    (tmp_path / "evals_pkg_c").mkdir()
    (tmp_path / "evals_pkg_c" / "__init__.py").write_text("")
    (tmp_path / "evals_pkg_c" / "checks.py").write_text(
        "def schema(outputs):\n    return outputs['main_file'].endswith('.md'), 'markdown'\n"
    )
    check = run('name: c\ncheck: return len(outputs["main_content"]) > 9, "long"')
    called = run("name: m\nmodule: evals_pkg_c.checks\nfunction: schema", project_root=tmp_path)
    for result, field in ((check, "main_content"), (called, "main_file")):
        assert result.status == "error", result
        assert f"KeyError: '{field}' (the outputs record has no field '{field}': " in str(
            result.error
        )
        assert "list the directory `main` in the assessment's `outputs:`" in str(result.error)
    plain = run('name: c\ncheck: return annotations["words"] > 1, "words"')
    assert str(plain.error).endswith("raised KeyError: 'words'"), plain.error  # not a record field


def test_module_judges_import_from_the_project_root(tmp_path: Path) -> None:
    package = tmp_path / "evals_pkg_a"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "checks.py").write_text(
        "def has_status(outputs, key):\n    return key in outputs['stdout'], f'looked for {key}'\n"
    )
    result = run(
        "name: m\nmodule: evals_pkg_a.checks\nfunction: has_status\narguments: {key: status}",
        project_root=tmp_path,
    )
    assert (result.value, result.rationale) == (True, "looked for status")
    missing = run("name: m\nmodule: evals_pkg_a.checks\nfunction: nope", project_root=tmp_path)
    assert "module 'evals_pkg_a.checks' has no function 'nope'" in str(missing.error)


def test_if_false_skips_and_if_sees_annotations_without_builtins() -> None:
    entry = "name: q\nif: \"not annotations.get('skip', False)\"\ncheck: return False"
    skipped = run(entry, annotations={"skip": True})
    assert (skipped.status, skipped.passed, skipped.skipped) == ("skipped", None, True)
    ran = run(entry, annotations={})
    assert ran.status == "ok" and ran.passed is False


def test_a_pattern_that_renders_empty_is_no_pass() -> None:
    """`pattern: ${context.p}` with p empty matched any output (the empty one included), so
    `output_contains` and `regex` passed whatever the work printed."""
    for builtin in ("output_contains", "regex"):
        entry = f"name: q\nbuiltin: {builtin}\narguments: {{pattern: '${{context.p}}'}}"
        result = run(entry, render=lambda template, mode: template.replace("${context.p}", ""))
        assert result.status == "error", (builtin, result)
        assert "the pattern '${context.p}' is empty" in str(result.error)


def test_an_empty_expected_annotation_is_no_pass() -> None:
    """A case annotated `expected: {}` passed `expected_answer` on any JSON object the work
    printed ('all 0 expected key(s) match'): nothing was compared."""
    result = run("name: q\nbuiltin: expected_answer\n", annotations={"expected": {}})
    assert result.status == "error" and "the expected mapping is empty" in str(result.error)


def test_the_verdict_is_yes_no_or_error() -> None:
    ok = JudgeResult("a", "ok", True, True)
    failed = JudgeResult("b", "ok", 0.2, False)
    broken = JudgeResult("c", "error", error="x")
    skipped = JudgeResult("d", "skipped")
    assert verdict_of([ok, skipped]) == "yes"
    assert verdict_of([ok, failed, broken]) == "no"
    assert verdict_of([ok, broken, skipped]) == "error"
    assert verdict_of([skipped]) == "error"  # nothing was judged: no yes


SKIPPING_LOOP = """\
name: skip
initial: work
scope: ["."]
states:
  work:
    action: {action}
    evaluate:
      type: assessment
      judges:
        - name: says_ok
          if: "outputs['stdout'].strip() != ''"
          check: return "ok" in outputs["stdout"], "ok"
    on_yes: done
    on_no: failed
    on_error: broken
  done: {{terminal: true}}
  failed: {{terminal: true, failure: true}}
  broken: {{terminal: true, failure: true}}
"""


def test_an_assessment_whose_every_judge_was_skipped_is_no_yes(tmp_path: Path) -> None:
    """An action that printed nothing, judged only by a judge whose `if:` wants output, went
    to on_yes ('0 of 0 judge(s) passed, 1 skipped'): a run reached success on no judgement.
    Nothing judged is an error naming why; one judge that ran still decides."""
    ran = run_yaml(tmp_path, SKIPPING_LOOP.format(action="echo"), "--no-lock")
    assert ran.json["final_state"] == "broken", ran.stderr
    [judged] = [e for e in ran.events() if e["event"] == "evaluate"]
    assert judged["verdict"] == "error", judged
    assert "no judge ran" in judged["details"]["reason"], judged
    ran = run_yaml(tmp_path, SKIPPING_LOOP.format(action="echo ok"), "--no-lock")
    assert ran.json["final_state"] == "done", ran.stderr


def test_assessment_lists_failing_judges_lowest_first() -> None:
    block = """
    type: assessment
    judges:
      - {name: ok, check: "return True, 'fine'"}
      - {name: weak, check: "return 0.4, 'thin'"}
      - {name: bad, check: "return False, 'broken'"}
      - {name: crash, check: "return 1/0"}
    """
    assessment = assess(judges_of(block), RECORD)
    assert assessment.verdict == "no"
    assert [r.name for r in assessment.failing()] == ["crash", "bad", "weak"]
    details = assessment.details()
    assert details["failing"] == ["crash", "bad", "weak"]
    assert details["judges"]["weak"]["value"] == 0.4
    assert details["feedback"].splitlines()[1] == "- bad: failed: broken"
    assert details["reason"] == "1 of 4 judge(s) passed; could not run: crash; failing: bad, weak"


def test_judges_that_could_not_run_are_not_called_failing() -> None:
    """An `error` verdict (nothing failed, something could not run) once read `failing: crash`
    in explain's first sentence, as if the judge had judged the work bad."""
    block = """
    type: assessment
    judges:
      - {name: ok, check: "return True, 'fine'"}
      - {name: never, if: "False", check: "return False, 'no'"}
      - {name: crash, check: "return 1/0"}
    """
    assessment = assess(judges_of(block), RECORD)
    assert assessment.verdict == "error"
    assert assessment.reason() == "1 of 2 judge(s) passed, 1 skipped; could not run: crash"


def test_judges_run_concurrently(tmp_path: Path) -> None:
    block = "type: assessment\nexpectations:\n" + "".join(
        f"  - {{type: test, name: t{i}, command: 'sleep 0.5'}}\n" for i in range(4)
    )
    env = JudgeEnv(workspace=tmp_path, commands=Commands(tmp_path))
    started = time.monotonic()
    assert assess(judges_of(block), RECORD, env).verdict == "yes"
    assert time.monotonic() - started < 1.5
    started = time.monotonic()
    assess(judges_of(block), RECORD, env, concurrency=1)
    assert time.monotonic() - started >= 2.0


def test_compiled_checks_run_many_times_without_recompiling() -> None:
    compiled = compile_judge(judge_of("name: c\ncheck: return len(outputs['stdout']) > 3"))
    results = [run_judge(compiled, RECORD) for _ in range(1000)]
    assert all(r.value is True for r in results)


def test_every_evaluator_is_a_builtin() -> None:
    from engine.judges.evaluators import registered

    names = {b.name for b in all_builtins()}
    assert registered() <= names
    required = {"file_exists", "test", "script", "metric", "cost_budget", "max_turns"}
    assert required | {"tool_called", "regex", "json_schema", "llm_structured"} <= names


# ---------------------------------------------------------------------------------------------
# Third-party builtins: a real installed distribution (dist-info on the path) with an entry point

PLUGIN = '''
def word_count(outputs, min_words=1):
    """The stdout has at least min_words words."""
    count = len(outputs["stdout"].split())
    return count >= min_words, f"{count} words"
'''


def install_plugin(root: Path) -> dict[str, str]:
    (root / "wc_judges.py").write_text(PLUGIN)
    info = root / "wc_judges-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wc-judges\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[ll_loop.judges]\ntext/word_count = wc_judges:word_count\n"
    )
    return dict(os.environ, PYTHONPATH=str(root))


def test_a_plugin_builtin_is_listed_and_runs(tmp_path: Path) -> None:
    env = install_plugin(tmp_path)
    listed = subprocess.run(
        [str(LL_LOOP), "judges", "--json"], capture_output=True, text=True, env=env, check=True
    )
    entry = next(b for b in json.loads(listed.stdout) if b["name"] == "word_count")
    assert (entry["category"], entry["origin"]) == ("text", "wc-judges")
    assert entry["arguments"] == [
        {"name": "min_words", "type": "any", "required": False, "default": 1, "description": ""}
    ]
    loop = tmp_path / "loop.yaml"
    loop.write_text(
        textwrap.dedent(
            """\
            name: plugin
            initial: work
            scope: ["."]
            states:
              work:
                action: echo three little words
                evaluate:
                  type: assessment
                  judges:
                    - {name: wordy, builtin: text/word_count, arguments: {min_words: 3}}
                on_yes: done
                on_no: failed
              done: {terminal: true}
              failed: {terminal: true, failure: true}
            """
        )
    )
    ran = subprocess.run(
        [str(LL_LOOP), "run", "loop.yaml", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["final_state"] == "done"


def test_ll_loop_judges_lists_every_builtin_with_its_arguments() -> None:
    listed = subprocess.run([str(LL_LOOP), "judges"], capture_output=True, text=True, check=True)
    assert "commands/metric\n" in listed.stdout
    assert "      threshold (number, required): the passing minimum" in listed.stdout
    assert "Polpo expectations" in listed.stdout
    assert find_builtin("files/file_exists") is not None
    assert find_builtin("agent/file_exists") is None


# An author's pattern that backtracks without end: with `re`, (a|aa)+$ over sixty a's and a b
# ran for days inside C holding the GIL, past the run's timeout, its stop and a SIGTERM.
_BACKTRACKING = textwrap.dedent(
    """
    import json
    import engine.model.patterns as patterns
    from engine.judges import JudgeEnv, build_record, run_judge
    from engine.judges.evaluators import Judged, judge
    from engine.model.loop import Evaluate
    from engine.model.ports import ActionResult
    from tests.judges_helpers import judge_of

    patterns.PATTERN_SECONDS = 0.3
    text = "a" * 60 + "b"
    record = build_record(stdout=text, exit_code=0, trace={
        "tool_calls": [{"name": "Bash", "input": {"command": text}}]})
    verdict = judge(Evaluate(type="output_contains", pattern="(a|aa)+$"),
                    Judged(text, ActionResult(output=text, exit_code=0)))
    out = {"output_contains": [verdict.name, verdict.details["reason"]]}
    for entry in ("name: regex\\nbuiltin: regex\\narguments: {pattern: '(a|aa)+$'}",
                  "name: tool_called\\nbuiltin: tool_called\\n"
                  "arguments: {name: Bash, input_pattern: '(a|aa)+c'}"):
        result = run_judge(judge_of(entry), record, JudgeEnv())
        out[result.name] = [result.status, result.error]
    print(json.dumps(out))
    """
)


def test_a_backtracking_pattern_is_an_error_within_its_time_limit() -> None:
    """output_contains, the regex judge and tool_called's input_pattern stop a search that runs
    past the limit and say so in one sentence with a hint; a child runs them so that, were the
    search unbounded, this test would fail at its timeout instead of hanging the suite."""
    started = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-c", _BACKTRACKING],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert ran.returncode == 0, ran.stderr
    assert time.monotonic() - started < 30
    found = json.loads(ran.stdout)
    assert found["output_contains"][0] == "error"
    for _, message in found.values():
        assert "did not finish matching within 0.3 s" in message
        assert "simplify it" in message
    assert found["regex"][0] == found["tool_called"][0] == "error"


def test_ordinary_patterns_match_as_before() -> None:
    """The bounded search keeps `re`'s meaning: MULTILINE anchors, ignore_case, negate, groups,
    lookarounds, and an invalid pattern as that judge's error."""
    record = build_record(stdout="x\nOK 12\nnot ok\n", exit_code=0)
    cases: dict[str, bool | None] = {
        r"{pattern: '^OK \d+$'}": True,
        r"{pattern: '^ok', ignore_case: true}": True,
        r"{pattern: '(?<=not )ok$'}": True,
        r"{pattern: '^ok$', negate: true}": True,
        r"{pattern: 'OK (\d)\1'}": False,
        r"{pattern: '(unclosed'}": None,
    }
    for arguments, passed in cases.items():
        result = run(f"name: r\nbuiltin: regex\narguments: {arguments}", record)
        assert result.passed is passed, (arguments, result)
        assert result.errored is (passed is None)


_NEVER_ENDING = textwrap.dedent(
    """
    import json, sys
    import engine.judges.python_judges as python_judges
    from engine.judges import JudgeEnv, build_record, run_judge
    from tests.judges_helpers import judge_of

    python_judges.CONDITION_SECONDS = 0.3
    record = build_record(stdout="ok", exit_code=0)
    env = JudgeEnv(project_root=sys.argv[1])
    entries = {
        "module": "name: m\\nmodule: evals_pkg_spin.spin\\nfunction: forever\\ntimeout: 0.3",
        "condition": "name: c\\nbuiltin: exit_code\\n"
        "if: \\"[0 for a in 'x' * 100000 for b in 'x' * 100000] == []\\"",
    }
    print(json.dumps({k: run_judge(judge_of(e), record, env).error for k, e in entries.items()}))
    """
)


def test_a_module_judge_or_an_if_that_never_ends_is_that_judges_error(tmp_path: Path) -> None:
    """A module function and an `if:` had no time limit at all (a module judge could not even
    set `timeout:`), so `while True` in either hung the run or the suite for good. The function
    now runs within its `timeout:` (default 300 s) in a process of its own, as a check does; an
    `if:` within 5 s under the watchdog. A child runs them, so that without limits the test
    fails instead of hanging."""
    package = tmp_path / "evals_pkg_spin"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "spin.py").write_text("def forever(outputs):\n    while True:\n        pass\n")
    ran = subprocess.run(
        [sys.executable, "-c", _NEVER_ENDING, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    assert found["module"] == (
        "judge 'm' at judges.yaml:10: evals_pkg_spin.spin.forever did not finish within its "
        "time limit of 0.3 s (set the judge's timeout: to change it)"
    )
    assert found["condition"] == (
        "judge 'c' at judges.yaml:10: its if: expression failed "
        "(TimeoutError: it did not finish within 0.3 s)"
    )


def test_a_judges_huge_rationale_or_error_is_cut_where_it_is_made() -> None:
    """A check returning a 200 MB rationale wrote it whole into history.db (and every event and
    report naming the judge); so did an exception with a message that long."""
    long = run("name: big\ncheck: |\n  return True, 'x' * 1_000_000")
    assert long.passed is True
    assert long.rationale == "x" * 10_000 + "... [cut: 990,000 more characters]"
    raised = run("name: boom\ncheck: |\n  raise ValueError('y' * 1_000_000)")
    assert raised.errored
    assert str(raised.error).endswith("... [cut: 990,051 more characters]")
    assert len(str(raised.error)) < 10_100


_ENDLESS_FILES = textwrap.dedent(
    """
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    from engine.judges import JudgeEnv, run_judge
    from tests.judges_helpers import judge_of

    big = sys.argv[1]
    entries = {
        "zero": "name: s\\nbuiltin: json_schema\\narguments: {schema_file: /dev/zero}",
        "schema": f"name: s\\nbuiltin: json_schema\\narguments: {{schema_file: {big}}}",
        "prompt": f"name: p\\nprompt_file: {big}",
    }
    record = {"stdout": "{}"}
    found = {k: run_judge(judge_of(e), record, JudgeEnv()).error for k, e in entries.items()}
    print(json.dumps(found))
    """
)


def test_a_schema_or_prompt_file_that_never_ends_or_is_huge_is_refused(tmp_path: Path) -> None:
    """`schema_file: /dev/zero` grew the process by ~700 MB a second until the machine ran out
    of memory; a huge file was read whole. Both files are read like a dataset's YAML: a regular
    file of at most 10 MB. In a child with 2 GiB of address space, so that without the limit
    the test fails instead of the machine."""
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (11 * 1024 * 1024))
    ran = subprocess.run(
        [sys.executable, "-c", _ENDLESS_FILES, str(big)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    assert found["zero"].endswith(
        "cannot read the schema file '/dev/zero': it is not a regular file"
    )
    too_large = "it is too large to read (11.0 MB; the limit is 10.0 MB)"
    assert found["schema"].endswith(f"cannot read the schema file {str(big)!r}: {too_large}")
    assert found["prompt"].endswith(f"cannot read its prompt_file {str(big)!r}: {too_large}")


def test_a_metric_in_a_loop_reads_its_commands_whole_output(tmp_path: Path) -> None:
    """A metric command printing 1.2 MB of item scores and then its result (0.1) passed a 0.5
    threshold as 0.9, the last line of the first MiB the runner keeps in memory."""
    (tmp_path / "scores.py").write_text(
        "import sys\nsys.stdout.write('0.9\\n' * 300000 + '0.1\\n')\n"
    )
    text = SKIPPING_LOOP.format(action="echo ok").replace(
        """        - name: says_ok
          if: "outputs['stdout'].strip() != ''"
          check: return "ok" in outputs["stdout"], "ok"
""",
        """        - name: says_ok
          builtin: metric
          arguments: {command: python3 scores.py, threshold: 0.5}
""",
    )
    ran = run_yaml(tmp_path, text, "--no-lock")
    assert ran.json["final_state"] == "failed", ran.stderr
    judged = ran.state()["captured"]["work"]["judges"]["says_ok"]
    assert judged["value"] == 0.1, judged


def test_an_assessment_reads_the_actions_whole_stderr(tmp_path: Path) -> None:
    """An action whose stderr began with a Traceback and then printed 1.2 MB of noise passed a
    `regex: {pattern: Traceback, field: stderr, negate: true}` judge: the record's stderr was
    the last MiB the runner keeps in memory."""
    (tmp_path / "noisy.py").write_text(
        "import sys\nsys.stderr.write('Traceback (most recent call last)\\n' + 'x' * 1200000)\n"
    )
    text = SKIPPING_LOOP.format(action="python3 noisy.py").replace(
        """        - name: says_ok
          if: "outputs['stdout'].strip() != ''"
          check: return "ok" in outputs["stdout"], "ok"
""",
        """        - name: says_ok
          builtin: regex
          arguments: {pattern: Traceback, field: stderr, negate: true}
""",
    )
    ran = run_yaml(tmp_path, text, "--no-lock")
    assert ran.json["final_state"] == "failed", ran.stderr
