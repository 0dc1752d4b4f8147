"""The other subjects and executors: a loop run as a child with the case's inputs bound to its
parameters, a prompt through the SDK (loopback server), and cases run in worker processes (the
executor boundary: picklable specs in, picklable outcomes out)."""

from __future__ import annotations

import pickle
from pathlib import Path

from engine.load.dataset import load_cases
from engine.load.suite import load_suite_file
from engine.model.ports import refused_before_first_step, run_json
from engine.runtime.history import open_history
from engine.suites.casework import run_case
from engine.suites.driver import SuiteOptions, run_suite
from engine.suites.executor import LocalExecutor
from engine.suites.spec import CaseSpec, RunSettings
from tests.loopback_server import LoopbackServer, text_reply
from tests.suite_helpers import by_judge, dataset, suite, suite_json, write

CHILD = """\
name: greet
initial: greet
scope: ["."]
parameters:
  who: {type: string, required: true}
  times: {type: integer, default: 1}
outputs:
  greeting: ${captured.greet.output}
states:
  greet:
    action: for i in $(seq ${context.times}); do echo "hello ${context.who}"; done
    capture: greet
    next: done
  done: {terminal: true}
"""


def test_a_loop_subject_runs_as_a_child_with_inputs_bound_to_its_parameters(
    tmp_path: Path,
) -> None:
    write(tmp_path / "greet.yaml", CHILD)
    dataset(
        tmp_path,
        {
            "bound": {"input": {"who": "ada", "times": 2, "unused": "x"}},
            "missing": {"input": {"times": 1}},  # `who` is required: the child refuses
        },
    )
    write(
        tmp_path / "loop.suite.yaml",
        """\
        name: loops
        dataset: cases
        subject:
          loop: greet.yaml
        judges:
          - name: greeted_twice
            check: |
              greeting = outputs["loop_outputs"]["greeting"]
              return greeting == "hello ada\\nhello ada", repr(greeting)
          - name: run_succeeded
            check: return outputs["run"]["outcome"] == "success", outputs["run"]["outcome"]
          - name: evented
            check: return any(e["event"] == "loop_complete" for e in outputs["events"]), "events"
        """,
    )
    code, data, err = suite_json(tmp_path, "loop.suite.yaml")
    assert code == 0, err
    judges = by_judge(data)
    for name in ("greeted_twice", "run_succeeded", "evented"):
        assert (judges[name]["scored"], judges[name]["pass_rate"]["k"]) == (1, 1), data
    runs = {c["case"]: c for c in data["case_runs"]}
    assert runs["missing"]["status"] == "error"
    assert "requires parameter 'who'" in runs["missing"]["error"]
    assert "the loop run was refused before its first step" in runs["missing"]["error"]


def test_a_loop_subject_named_is_found_in_the_projects_loops_from_a_copy_workspace(
    tmp_path: Path,
) -> None:
    """`loop: greet` was looked up in the case's workspace, whose `.loops/` a `copy` workspace
    does not have: every case errored "no loop named 'greet' next to the parent loop", where
    `ll-loop run greet` in the project runs `.loops/greet.yaml`."""
    write(tmp_path / ".loops" / "greet.yaml", CHILD)
    write(
        tmp_path / "suites" / "loop.suite.yaml",
        """\
        name: loops
        cases: [{id: a, input: {who: ada}}]
        isolation: copy
        subject:
          loop: greet
        judges:
          - name: greeted
            check: return outputs["loop_outputs"]["greeting"] == "hello ada", "greeting"
        """,
    )
    code, data, err = suite_json(tmp_path, "suites/loop.suite.yaml")
    assert code == 0, err
    assert by_judge(data)["greeted"]["pass_rate"]["k"] == 1, data["case_runs"]
    write(
        tmp_path / "suites" / "typo.suite.yaml",
        """\
        name: typo
        cases: [{id: a, input: {who: ada}}]
        isolation: copy
        subject:
          loop: greeet
        judges:
          - {name: ok, builtin: exit_code}
        """,
    )
    code, _, err = suite(tmp_path, "suites/typo.suite.yaml")  # lint looks where the run does
    assert code == 2 and "LL095 subject runs loop 'greeet'" in err, err


def test_a_child_runs_json_result_is_read_whole_first_then_from_its_last_line() -> None:
    whole = '{\n  "outcome": "success",\n  "events": [\n    {"step": 1}\n  ]\n}'
    assert run_json(whole) == {"outcome": "success", "events": [{"step": 1}]}
    assert run_json('printed first\n{"outcome": "error", "steps": 0}\n') == {
        "outcome": "error",
        "steps": 0,
    }
    assert run_json("no json here\n[1, 2]") is None
    assert refused_before_first_step({"outcome": "error", "steps": 0, "error": "E"}) == (
        "the loop run was refused before its first step: E"
    )
    assert refused_before_first_step({"outcome": "error", "steps": 3}) is None


def test_with_binds_rendered_values_keeping_a_lone_expression_typed(tmp_path: Path) -> None:
    write(tmp_path / "greet.yaml", CHILD)
    dataset(tmp_path, {"a": {"input": {"name": "bob", "n": 3}}})
    write(
        tmp_path / "loop.suite.yaml",
        """\
        name: loops
        dataset: cases
        subject:
          loop: greet.yaml
          with: {who: "dr ${inputs.name}", times: "${inputs.n}"}
        judges:
          - name: three
            check: |
              return outputs["loop_outputs"]["greeting"].count("hello dr bob") == 3, "count"
        """,
    )
    _code, data, _err = suite_json(tmp_path, "loop.suite.yaml")
    assert by_judge(data)["three"]["pass_rate"]["k"] == 1, data["results"]


def test_a_prompt_subject_goes_through_the_sdk(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.default = text_reply("Paris is the capital.")
    write(
        tmp_path / "p.suite.yaml",
        """\
        name: prompts
        cases:
          - id: france
            input: {country: France}
        subject:
          prompt: "What is the capital of ${inputs.country}? Ignore {{ this }}."
          model: subject-model
        judges:
          - name: paris
            builtin: regex
            arguments: {pattern: Paris}
        """,
    )
    code, data, err = suite_json(tmp_path, "p.suite.yaml")
    assert code == 0, err
    assert by_judge(data)["paris"]["pass_rate"]["k"] == 1
    [request] = loopback.requests
    assert request.body["model"] == "subject-model"
    assert request.body["messages"][0]["content"] == (
        "What is the capital of France? Ignore {{ this }}."
    )
    assert data["cost_usd"] > 0


SHELL_SUITE = """\
name: procs
cases:
  - {id: a, input: {n: 1}}
  - {id: b, input: {n: 2}}
  - {id: c, input: {n: 3}}
subject:
  command: echo $(( ${inputs.n} * 2 ))
judges:
  - name: doubled
    check: return int(outputs["stdout"]) == 2 * inputs["n"], outputs["stdout"]
"""


def test_case_specs_and_outcomes_cross_process_boundaries(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.suite.yaml",
        SHELL_SUITE.replace("$(( ${inputs.n} * 2 ))", "${inputs.n}${inputs.n}"),
    )
    suite = load_suite_file(path)
    settings = RunSettings(
        run_id="pickled",
        suite=suite,
        project_root=str(tmp_path),
        scratch_root=str(tmp_path / "scratch"),
        run_dir=str(tmp_path / "run"),
        conditions_fp="x",
    )
    spec = CaseSpec(settings, load_cases(suite)[0], 0)
    copy = pickle.loads(pickle.dumps(spec))
    assert copy.settings.suite.judges == suite.judges
    outcome = run_case(copy)
    assert pickle.loads(pickle.dumps(outcome)) == outcome
    assert outcome.arms[0].stdout == "11\n"


def test_the_process_executor_runs_a_suite(tmp_path: Path) -> None:
    write(
        tmp_path / "s.suite.yaml",
        SHELL_SUITE.replace(
            "echo $(( ${inputs.n} * 2 ))", "echo $(( 2 * $(cat input.yaml | tr -dc 0-9) ))"
        ),
    )
    seen: list[str] = []
    result = run_suite(
        tmp_path / "s.suite.yaml",
        SuiteOptions(record=False),
        history=None,
        cwd=tmp_path,
        executor=LocalExecutor(2, processes=True),
        on_case=lambda outcome: seen.append(outcome.case_id),
    )
    assert sorted(seen) == ["a", "b", "c"]
    summary = result.summary("doubled")
    assert summary is not None and summary.pass_rate.k == 3, result.judgements


def test_the_public_api_runs_a_suite_and_records_it(tmp_path: Path) -> None:
    import engine

    write(tmp_path / "s.suite.yaml", SHELL_SUITE)
    (tmp_path / ".loops").mkdir()
    heard: list[str] = []
    result = engine.suite(
        "s.suite.yaml", jobs=2, cwd=tmp_path, on_case=lambda o: heard.append(o.case_id)
    )
    assert isinstance(result, engine.SuiteResult)
    assert sorted(heard) == ["a", "b", "c"] and result.exit_code == 0
    summary = result.summary("doubled")
    assert summary is not None and summary.pass_rate.k == 3
    assert (tmp_path / ".loops" / "history.db").exists()


def test_judges_of_a_metric_turned_off_say_so_instead_of_passing(tmp_path: Path) -> None:
    """`traces: {metrics: false}` left cost_usd and num_turns at 0, so `cost_budget` and
    `max_turns` passed whatever the agent spent, and `exit_code` said 'exited with code None'."""
    agent = Path(__file__).resolve().parent.parent / "examples/suites/agent_eval/fake_agent.py"
    write(
        tmp_path / "t.suite.yaml",
        f"""\
        name: t
        cases: [{{input: {{q: x}}}}]
        subject: {{agent: python3 {agent}, prompt: hi}}
        outputs: {{traces: {{metrics: false}}}}
        judges:
          - {{name: budget, builtin: cost_budget, arguments: {{max_cost_usd: 0.001}}}}
          - {{name: turns, builtin: max_turns, arguments: {{max_turns: 1}}}}
          - {{name: exits, builtin: exit_code}}
          - {{name: seen, check: "return outputs['cost_usd'] is None, 'no cost'"}}
        """,
    )
    _, data, err = suite_json(tmp_path, "t.suite.yaml")
    found = {r["judge"]: (r["status"], r["error"] or r["rationale"]) for r in data["results"]}
    assert [r["value"] for r in data["results"] if r["judge"] == "seen"] == [True], err
    for name, field in (("budget", "cost_usd"), ("turns", "num_turns"), ("exits", "exit_code")):
        status, why = found[name]
        assert status == "error", found
        assert why.endswith(f"the record has no {field} (the suite's traces.metrics is off)")
    text = (tmp_path / "t.suite.yaml").read_text().replace("metrics: false", "events: false")
    text = text.replace(
        "builtin: exit_code}", "builtin: tool_called, arguments: {name: rm, negate: true}}"
    )
    write(tmp_path / "t.suite.yaml", text)
    _, data, err = suite_json(tmp_path, "t.suite.yaml")
    [negated] = [r for r in data["results"] if r["judge"] == "exits"]
    assert negated["status"] == "error", err  # "rm was never called" is not known
    assert negated["error"].endswith(
        "the record has no tool_calls (the suite's traces.events is off)"
    )


def test_an_agent_that_reports_no_cost_errs_the_cost_budget_instead_of_passing(
    tmp_path: Path,
) -> None:
    """An agent subject printing plain text had `cost_usd: 0` in its record, so `cost_budget`
    passed it ($0.0000 of the budget): an unknown cost is not $0."""
    (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('Done.')\n")
    write(
        tmp_path / "t.suite.yaml",
        f"""\
        name: t
        cases: [{{input: {{q: x}}}}]
        subject: {{agent: python3 {tmp_path / "agent.py"}, prompt: hi}}
        judges:
          - {{name: budget, builtin: cost_budget, arguments: {{max_cost_usd: 0.001}}}}
          - {{name: seen, check: "return outputs['cost_usd'] is None, 'no cost'"}}
        """,
    )
    _, data, err = suite_json(tmp_path, "t.suite.yaml")
    found = {r["judge"]: r for r in data["results"]}
    assert found["seen"]["value"] is True, err
    assert found["budget"]["status"] == "error", found
    assert "the work's cost is not known" in found["budget"]["error"]


def test_a_case_whose_agent_reported_no_cost_says_so(tmp_path: Path) -> None:
    """The case JSON of an agent subject that reported no cost said `cost_usd: 0.0` and nothing
    more (and so did the suite's total): a spend of nothing, to a script. The case run, the
    suite and its history row now say the cost is not known."""
    (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('Done.')\n")
    write(
        tmp_path / "t.suite.yaml",
        f"""\
        name: t
        cases: [{{input: {{q: x}}}}, {{input: {{q: y}}}}]
        subject: {{agent: python3 {tmp_path / "agent.py"}, prompt: hi}}
        judges:
          - {{name: said, check: "return True, 'ok'"}}
        """,
    )
    _, data, err = suite_json(tmp_path, "t.suite.yaml")
    runs = data["case_runs"]
    assert [(c["cost_usd"], c["cost_known"]) for c in runs] == [(0.0, False)] * 2, err
    assert (data["cost_usd"], data["cost_known"]) == (0.0, False)
    with open_history(tmp_path) as history:
        stored = history.suite_cases(data["run_id"])
    assert [c.cost_known for c in stored] == [False, False]
    write(
        tmp_path / "k.suite.yaml",
        """\
        name: k
        cases: [{input: {q: x}}]
        subject: {command: echo hi}
        judges:
          - {name: said, check: "return True, 'ok'"}
        """,
    )
    _, known, _ = suite_json(tmp_path, "k.suite.yaml")
    assert "cost_known" not in known and "cost_known" not in known["case_runs"][0], known


def test_an_agent_that_reports_no_turns_errs_max_turns_instead_of_passing(
    tmp_path: Path,
) -> None:
    """An agent subject printing plain text had `num_turns: 0` in its record, so `max_turns`
    passed it ('0 turn(s)'): unknown turns are not 0."""
    (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('Done.')\n")
    write(
        tmp_path / "t.suite.yaml",
        f"""\
        name: t
        cases: [{{input: {{q: x}}}}]
        subject: {{agent: python3 {tmp_path / "agent.py"}, prompt: hi}}
        judges:
          - {{name: turns, builtin: max_turns, arguments: {{max_turns: 1}}}}
        """,
    )
    _, data, err = suite_json(tmp_path, "t.suite.yaml")
    [turns] = data["results"]
    assert turns["status"] == "error", turns
    assert "the agent's turns are not known" in turns["error"], err


def test_an_agent_that_reports_no_tool_calls_errs_a_negated_tool_called(tmp_path: Path) -> None:
    """An agent subject printing plain text had `tool_calls: []`, so 'rm was never called'
    (`tool_called` with `negate: true`) passed on calls nobody recorded."""
    (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('Done.')\n")
    write(
        tmp_path / "t.suite.yaml",
        f"""\
        name: t
        cases: [{{input: {{q: x}}}}]
        subject: {{agent: python3 {tmp_path / "agent.py"}, prompt: hi}}
        judges:
          - {{name: no_rm, builtin: tool_called, arguments: {{name: rm, negate: true}}}}
        """,
    )
    _, data, err = suite_json(tmp_path, "t.suite.yaml")
    [no_rm] = data["results"]
    assert no_rm["status"] == "error", no_rm
    assert "the agent's tool calls are not known" in no_rm["error"], err


def test_judges_read_a_subjects_whole_output_past_the_in_memory_mebibyte(tmp_path: Path) -> None:
    """A command subject that printed 2 MB and then 'FAILED tests' passed an
    `output_contains: {pattern: FAILED, negate: true}` judge: the record's stdout was the first
    MiB the runner keeps in memory (the rest spilled to a file), so the failure at the end was
    never read. A loop's evaluator reads a spilled output back whole; so now does a suite."""
    write(
        tmp_path / "t.suite.yaml",
        """\
        name: t
        cases: [{input: {q: x}}]
        subject: {command: "python3 -c \\"print('x' * 2000000); print('FAILED tests')\\""}
        judges:
          - {name: no_fail, builtin: output_contains, arguments: {pattern: FAILED, negate: true}}
          - {name: whole, check: "return len(outputs['stdout']) > 2000000, 'length'"}
        """,
    )
    _, data, err = suite_json(tmp_path, "t.suite.yaml")
    found = {r["judge"]: r for r in data["results"]}
    assert found["whole"]["value"] is True, err
    assert found["no_fail"]["value"] is False, found["no_fail"]


METRIC_PRINTS = "python3 -c \\\"import sys; sys.stdout.write('0.9\\\\n' * 300000 + '0.1\\\\n')\\\""


def test_a_metric_reads_the_last_line_of_its_commands_whole_output(tmp_path: Path) -> None:
    """A metric command that printed 1.2 MB of per-item scores and then its result, 0.1, passed
    `threshold: 0.5` as 0.9: the judge read the first MiB kept in memory, whose last line was
    an item's score. It now reads the whole output, in a suite as in a loop."""
    write(
        tmp_path / "t.suite.yaml",
        f"""\
        name: t
        cases: [{{input: {{q: x}}}}]
        subject: {{command: "true"}}
        judges:
          - {{name: m, builtin: metric, arguments: {{command: "{METRIC_PRINTS}", threshold: 0.5}}}}
        """,
    )
    _, data, err = suite_json(tmp_path, "t.suite.yaml")
    [m] = data["results"]
    assert (m["status"], m["value"]) == ("ok", 0.1), (m, err)


SCORER = """\
name: scorer
initial: score
scope: ["."]
parameters:
  score_cmd: {type: command, default: "true"}
states:
  score:
    action: bash -c "${context.score_cmd}"
    on_yes: done
    on_no: done
  done: {terminal: true}
"""


def test_a_cases_text_is_never_bound_to_a_loop_subjects_command_parameter(
    tmp_path: Path,
) -> None:
    """A case's input bound to a parameter the loop declares `type: command` (by name, or
    through `with:`) ran as a command line: the case text `touch CANARY` ran, where the suite
    guide promises that a case's text never becomes code. `ll-harness suite` now refuses such a
    suite before any case (LL095), and a run that does not lint first (the Python API) errors
    the case without starting the loop; a command written in the suite's own `with:` runs."""
    write(tmp_path / "scorer.yaml", SCORER)
    canary = tmp_path / "CANARY"
    evil = {"score_cmd": f"touch {canary}", "cmd": f"touch {canary}"}
    dataset(tmp_path, {"evil": {"input": evil}})
    body = """\
        name: s
        dataset: cases
        isolation: copy
        subject:
          loop: scorer.yaml
        WITH
        judges:
          - {name: ok, builtin: exit_code}
        """
    for with_ in (
        "",
        "  with: {score_cmd: '${inputs.cmd}'}",
        "  with: {score_cmd: 'x ${inputs.cmd}'}",
    ):
        write(tmp_path / "s.suite.yaml", body.replace("WITH", with_))
        code, _, err = suite(tmp_path, "s.suite.yaml")
        assert code == 2 and "LL095" in err, (with_, err)
        assert "a `type: command` parameter of loop 'scorer'" in err
        result = run_suite(tmp_path / "s.suite.yaml", SuiteOptions(record=False), cwd=tmp_path)
        assert not canary.exists(), with_
        (case,) = [c for c in result.cases if c.case_id == "evil"]
        assert case.error is not None and "`type: command` parameter" in case.error, with_
    written = f"touch {tmp_path / 'WRITTEN'}"
    write(tmp_path / "s.suite.yaml", body.replace("WITH", f"  with: {{score_cmd: '{written}'}}"))
    code, _, err = suite(tmp_path, "s.suite.yaml")
    assert code == 0 and (tmp_path / "WRITTEN").exists(), err
