"""`ll-loop validate` accepts suite files: schema and load problems and lint findings, with
file:line:col and codes, in every format; judge rules check a suite's judges too."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from engine.cli.validate_cmd import check_file
from engine.judges import JudgeEnv, compile_judges, run_judge
from engine.load.suite import load_suite_file
from tests.harness_helpers import harness
from tests.lint_cli_helpers import ll_loop
from tests.suite_helpers import suite, write

SUITE = """\
name: checked
cases:
  - id: a
    input: {text: hi}
  - id: b
    input: {other: x}
subject:
  command: echo ${inputs.text}
before_each:
  - echo ${inputs.text | raw}
judges:
  - name: typo
    builtin: exitcode
  - name: cond
    if: "annotations.get('x' "
    check: return True, "ok"
  - name: scored
    prompt: "Score it. {{ outputs }}"
    feedback_type: bool
thresholds:
  scored: {min_mean: 2}
lint:
  suppress:
    - {code: LL999, reason: "no such rule"}
"""


def test_suite_lint_findings_are_positioned(tmp_path: Path) -> None:
    path = write(tmp_path / "checked.suite.yaml", SUITE)
    found = {(d.code, d.line) for d in check_file(path)}
    assert found == {
        ("LL090", 8),  # subject.command reads inputs.text; case b lacks it
        ("LL090", 10),  # so does the hook
        ("LL092", 10),  # ... raw
        ("LL073", 13),  # no builtin 'exitcode'
        ("LL070", 15),  # the if: does not parse
        ("LL091", 21),  # a bool judge's mean cannot reach 2
        ("LL050", 24),  # unknown suppression
    }


def test_a_rate_gate_of_one_can_never_pass(tmp_path: Path) -> None:
    text = SUITE.replace("min_mean: 2", "min_mean: 1").replace(
        "thresholds:\n", "thresholds:\n  typo: {min_pass_rate: 1.0}\n"
    )
    path = write(tmp_path / "checked.suite.yaml", text)
    found = {(d.code, d.line): d for d in check_file(path) if d.code == "LL091"}
    assert set(found) == {("LL091", 21), ("LL091", 22)}  # min_pass_rate 1; a bool's mean 1
    assert "min_pass_rate is 1: a rate's 95% interval ends below 1" in found["LL091", 21].message
    fixed = text.replace("min_pass_rate: 1.0", "min_pass_rate: 0.95")
    write(path, fixed.replace("min_mean: 1", "min_mean: 0.9"))
    assert not [d for d in check_file(path) if d.code == "LL091"]
    write(path, SUITE)  # a bool judge's min_mean of 2 is past its range, as before
    [past] = [d for d in check_file(path) if d.code == "LL091"]
    assert "gives values from 0 to 1: it can never pass" in past.message


def test_a_gate_at_the_bottom_can_never_fail(tmp_path: Path) -> None:
    """min_pass_rate 0 PASSed a suite whose every case failed (0/2 [0.00, 0.66] is at or above
    0): a gate that cannot fail gates nothing, and the suite is refused like one that cannot
    pass."""
    text = SUITE.replace("min_mean: 2", "min_mean: 0").replace(
        "thresholds:\n", "thresholds:\n  typo: {min_pass_rate: 0}\n"
    )
    path = write(tmp_path / "checked.suite.yaml", text)
    found = {(d.code, d.line): d for d in check_file(path) if d.code == "LL091"}
    assert set(found) == {("LL091", 21), ("LL091", 22)}  # a rate of 0; a bool's mean of 0
    assert "passes even when every case fails" in found["LL091", 21].message
    assert "passes even when every case fails" in found["LL091", 22].message
    scored = SUITE.replace("    feedback_type: bool\n", "").replace("min_mean: 2", "min_mean: 1")
    write(path, scored)  # a 1-5 judge's min_mean of 1: every mean is at least 1
    [low] = [d for d in check_file(path) if d.code == "LL091"]
    assert "gives values from 1 to 5: every mean is at least that" in low.message
    write(path, scored.replace("min_mean: 1", "min_mean: 1.5"))
    assert not [d for d in check_file(path) if d.code == "LL091"]


def test_a_suite_with_a_gate_that_cannot_fail_is_refused(tmp_path: Path) -> None:
    write(
        tmp_path / "z.suite.yaml",
        """\
        name: z
        cases: [{id: a, input: {x: 1}}, {id: b, input: {x: 2}}]
        subject: {command: "exit 1"}
        judges:
          - {name: ok, builtin: exit_code}
        thresholds:
          ok: {min_pass_rate: 0}
        """,
    )
    code, out, err = suite(tmp_path, "z.suite.yaml")
    assert code == 2 and out == "", out
    assert "LL091" in err and "passes even when every case fails" in err


def test_validate_reports_suites_and_loops_alike(tmp_path: Path) -> None:
    write(tmp_path / "checked.suite.yaml", SUITE)
    write(tmp_path / "broken.yaml", "name: x\nsubject: {command: a}\ncases: []\n")
    done = ll_loop(
        "validate", "checked.suite.yaml", "broken.yaml", "--format", "json", cwd=tmp_path
    )
    assert done.returncode == 1
    reports = {r["path"]: r for r in json.loads(done.stdout)["loops"]}
    assert not reports["checked.suite.yaml"]["valid"]
    broken = [(d["code"], d["line"]) for d in reports["broken.yaml"]["diagnostics"]]
    assert ("F015", 3) in broken and ("F055", 1) in broken
    done = ll_loop("validate", "checked.suite.yaml", cwd=tmp_path)
    assert "checked.suite.yaml:13:5: error LL073" in done.stdout


def test_a_clean_suite_validates(tmp_path: Path) -> None:
    fixed = SUITE.replace("{other: x}", "{text: x}").replace(" | raw", "")
    fixed = fixed.replace("exitcode", "exit_code").replace("'x' ", "'x')")
    fixed = fixed.replace("min_mean: 2", "min_mean: 0.5").replace("LL999", "LL090")
    write(tmp_path / "clean.suite.yaml", fixed)
    done = ll_loop("validate", "--strict", "clean.suite.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_case_text_where_bash_runs_code_is_an_error(tmp_path: Path) -> None:
    path = write(
        tmp_path / "code.suite.yaml",
        """\
        name: code
        cases: [{input: {snippet: "print(1)"}}]
        subject:
          command: python3 -c ${inputs.snippet}
        before_each:
          - eval ${inputs.snippet}
        judges:
          - {name: ran, builtin: exit_code}
        """,
    )
    found = [(d.code, d.line) for d in check_file(path) if d.severity == "error"]
    assert found == [("LL034", 4), ("LL034", 6)]


def test_a_suite_with_lint_errors_is_refused_before_any_case_runs(tmp_path: Path) -> None:
    """As `ll-loop run` refuses a loop: a misspelt builtin would otherwise run every case's
    subject and error the judge on each."""
    ran = tmp_path / "ran"
    write(
        tmp_path / "typo.suite.yaml",
        f"""\
        name: typo
        cases: [{{input: {{text: hi}}}}, {{input: {{text: ho}}}}]
        subject:
          command: touch {ran}
        judges:
          - name: ok
            builtin: exit_cod
          - name: cond
            if: "annotations.get('x' "
            check: return True, "ok"
        """,
    )
    code, out, err = suite(tmp_path, "typo.suite.yaml")
    assert code == 2, out + err
    message, hint = err.splitlines()
    assert message == (
        "error: typo.suite.yaml:7:5: LL073 judge 'ok' names builtin 'exit_cod', which does not "
        "exist (did you mean 'exit_code'?); the suite did not run"
    )
    assert hint.endswith("`ll-loop validate typo.suite.yaml` lists all 2")
    assert not ran.exists()


def test_a_suite_expression_with_a_wrong_root_is_an_error(tmp_path: Path) -> None:
    """`${input.text}` is not one of ours, so a run leaves it as written (bash says "bad
    substitution", a model reads it as text); `${context.x}` is ours but a case has no
    context, so every case errors. Both are found where they are written."""
    path = write(
        tmp_path / "roots.suite.yaml",
        """\
        name: roots
        cases: [{id: a, input: {text: hi}, annotations: {expected: hi}}]
        subject:
          command: echo ${input.text} ${inptus.text}
        baseline_subject:
          prompt: "Say ${context.greeting}, ${context.name | default('you')}"
        before_each:
          - echo ${inputs.text | nope(}
        judges:
          - name: matches
            builtin: regex
            arguments: {pattern: "${annotation.expected}"}
          - name: judged
            prompt: |
              Was the answer to ${inputs.text} right?
              It should be ${annotations.expected
        pairwise: {prompt: "Which is better?"}
        """,
    )
    found = {(d.code, d.line, d.column): d.message for d in check_file(path)}
    assert set(found) == {
        ("LL030", 4, 17),
        ("LL030", 4, 31),
        ("LL030", 6, 16),  # ${context.greeting}; the guarded ${context.name} is not reported
        ("LL030", 8, 10),
        ("LL030", 12, 27),
        ("LL033", 14, 5),
    }
    assert found["LL030", 4, 17] == (
        "expression root 'input' is not a namespace (did you mean 'inputs'?): ${input...} is "
        "left as written, not replaced by the case's value"
    )
    assert "(did you mean 'annotations'?)" in found["LL030", 12, 27]
    assert found["LL030", 6, 16].startswith("${context.greeting} reads 'context', which a suite")
    assert "does not parse" in found["LL030", 8, 10]


def test_a_judge_prompt_that_is_not_a_template_is_found_at_its_line(tmp_path: Path) -> None:
    """A judge's Jinja prompt that does not parse, uses an unknown filter or a variable the
    judge does not have made that judge an error on every case, found only at run time."""
    write(tmp_path / "prompts" / "tone.j2", "Judge the tone.\n{% for x in outputs %}\n{{ x }}\n")
    path = write(
        tmp_path / "templates.suite.yaml",
        """\
        name: templates
        cases: [{id: a, input: {text: hi}}]
        subject:
          command: echo ${inputs.text}
        judges:
          - name: braces
            prompt: "Score {{ outputs } 1-5 for ${inputs.text}"
          - name: filter
            prompt: |
              Score 1-5 the answer to ${inputs.text}.
              {{ outputs | uppper }}
          - name: variable
            feedback_type: bool
            llm_rubric: "Is {{ output }} polite?"
          - name: tone
            prompt_file: prompts/tone.j2
          - name: fine
            prompt: "{% if inputs.text %}Score {{ outputs | upper }} 1-5{% endif %}"
        """,
    )
    found = {(d.line, d.column): d.message for d in check_file(path) if d.code == "LL074"}
    assert found == {
        (7, 14): "judge 'braces': its template does not parse (template line 1): unexpected '}'",
        (11, 7): "judge 'filter': its template does not compile: No filter named 'uppper'. "
        "(did you mean 'upper'?)",
        (14, 18): "judge 'variable': its template uses the variable 'output', which does not "
        "exist (did you mean 'outputs'?) (known: outputs, conversation, tool_trace, evidence, "
        "inputs, annotations, arguments)",
        (16, 5): "judge 'tone': its template does not parse (template line 3): Unexpected end "
        "of template. Jinja was looking for the following tags: 'endfor' or 'else'. The "
        "innermost block that needs to be closed is 'for'. "
        f"(in {tmp_path / 'prompts' / 'tone.j2'}, line 3)",
    }


def test_a_prompt_file_that_never_ends_is_not_read_by_validate(tmp_path: Path) -> None:
    """LL074 read a `prompt_file` whole: at /dev/zero `ll-loop validate` grew without end
    (the run reads it bounded, and so does lint now); LL072 says it is no file."""
    path = write(
        tmp_path / "zero.suite.yaml",
        """\
        name: zero
        cases: [{id: a, input: {text: hi}}]
        subject:
          command: echo ${inputs.text}
        judges:
          - name: endless
            prompt_file: /dev/zero
        """,
    )
    found = [(d.code, d.message) for d in check_file(path) if d.code in ("LL072", "LL074")]
    assert found == [
        ("LL072", "the prompt_file of judge 'endless' does not exist: /dev/zero"),
    ]


def test_a_dataset_the_run_would_refuse_is_found_by_validate(tmp_path: Path) -> None:
    """`dataset:` is resolved against the suite file's directory, as the run does; a missing
    directory, a file, or a directory without case folders refused the run only."""
    suites = tmp_path / "suites"
    text = """\
        name: data
        dataset: {where}
        subject:
          command: echo ${{inputs.text}}
        judges:
          - {{name: ok, builtin: exit_code}}
        """
    (suites / "empty" / ".hidden").mkdir(parents=True)
    write(suites / "a-file", "")
    write(suites / "cases" / "one" / "input.yaml", "text: hi\n")
    found = {}
    for where in ("cases", "missing", "a-file", "empty"):
        path = write(suites / f"{where}.suite.yaml", text.format(where=where))
        found[where] = [(d.code, d.line, d.message) for d in check_file(path)]
    assert found["cases"] == []
    assert found["missing"] == [
        ("LL093", 2, f"the dataset 'missing' ({suites / 'missing'}) does not exist")
    ]
    assert "is not a directory" in found["a-file"][0][2]
    assert "holds no case folder" in found["empty"][0][2]


def test_jinja_braces_in_a_suite_command_are_a_warning(tmp_path: Path) -> None:
    path = write(
        tmp_path / "braces.suite.yaml",
        """\
        name: braces
        cases: [{input: {text: hi}}]
        subject:
          command: ./count.sh {{ inputs.text }}
        judges:
          - {name: ok, builtin: exit_code}
        """,
    )
    [found] = [d for d in check_file(path) if d.code == "LL086"]
    assert (found.line, found.column, found.severity) == (4, 23, "warning")
    assert found.hint.startswith("write ${inputs.text}:")


def test_a_yaml_comment_cutting_a_suite_command_is_an_error(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cut.suite.yaml",
        """\
        name: cut
        cases: [{input: {text: hi}}]
        subject:
          command: grep -c "issue #${inputs.text}" notes.txt
        before_each:
          - sed -i 's/ #.*//' notes.txt
          - make setup  # a comment bash would drop too
        judges:
          - {name: ok, builtin: exit_code}
        """,
    )
    found = [(d.line, d.column) for d in check_file(path) if d.code == "LL087"]
    assert found == [(4, 27), (6, 16)]


def test_an_output_path_outside_the_workspace_is_an_error(tmp_path: Path) -> None:
    """The run reads only files inside the case's workspace and passed over these without a
    word: the judges never saw them."""
    path = write(
        tmp_path / "outside.suite.yaml",
        """\
        name: outside
        cases: [{input: {text: hi}}]
        subject:
          command: echo hi
        outputs:
          paths: [out, ../report.json, /tmp/result.json, out/../../x, ./out/../out]
        judges:
          - {name: ok, builtin: exit_code}
        """,
    )
    found = [(d.line, d.column, d.path) for d in check_file(path) if d.code == "LL094"]
    assert found == [
        (6, 16, "outputs.paths.1"),
        (6, 32, "outputs.paths.2"),
        (6, 50, "outputs.paths.3"),
    ]


CHILD = """\
name: child
initial: go
scope: ["."]
parameters:
  text: {type: string, required: true}
  times: {type: integer, default: 1}
states:
  go:
    action: echo ${context.text}
    next: done
    on_error: done
  done:
    terminal: true
"""


def test_a_loop_subject_that_would_be_refused_is_found_by_validate(tmp_path: Path) -> None:
    """A misspelt loop file, a `with:` name the loop does not declare, a missing required
    parameter: each errored every case at run time ("no loop file", "declares no parameter")."""
    write(tmp_path / "child.yaml", CHILD)
    text = textwrap.dedent(
        """\
        name: looped
        cases: [{id: a, input: {text: hi}}, {id: b, input: {other: x}}]
        subject:
          loop: LOOP
        judges:
          - {name: ok, builtin: exit_code}
        """
    )

    def found(loop: str) -> list[tuple[int, int, str]]:
        path = write(tmp_path / "looped.suite.yaml", text.replace("LOOP", loop))
        return [(d.line, d.column, d.message) for d in check_file(path) if d.code == "LL095"]

    assert found("chlid.yaml") == [
        (
            4,
            3,
            "subject runs loop 'chlid.yaml', which cannot be found or loaded: no loop file at "
            f"{tmp_path / 'chlid.yaml'}",
        )
    ]
    assert found("child.yaml\n  with: {txt: '${inputs.text}', times: many}") == [
        (5, 3, "subject.with does not pass required parameter 'text' of loop 'child'"),
        (
            5,
            10,
            "loop 'child' has no parameter 'txt' (did you mean 'text'?); it takes 'text' and "
            "'times': the run refuses it",
        ),
        (5, 33, "parameter 'times' of loop 'child' must be an integer, got \"many\""),
    ]
    # Without with:, the run passes the inputs the loop declares: case b has no text, and
    # errors alone (the other cases run), so that is LL090's warning.
    assert found("child.yaml") == []
    path = write(tmp_path / "looped.suite.yaml", text.replace("LOOP", "child.yaml"))
    [lacking] = [d for d in check_file(path) if d.code == "LL090"]
    assert (lacking.line, lacking.severity, lacking.message) == (
        4,
        "warning",
        "loop 'child' requires parameter 'text', and 1 of 2 cases have no input 'text' (b): "
        "they will error",
    )
    assert found("child.yaml\n  with: {text: '${inputs.text | default(1)}', times: 2}") == []


def test_an_expression_where_a_suite_does_not_interpolate_is_an_error(tmp_path: Path) -> None:
    """`agent:` is run as written: `${inputs.model}` there was a bad substitution in bash, and
    the agent failed on every case; its value is in the environment as $LL_INPUTS_model."""
    path = write(
        tmp_path / "agent.suite.yaml",
        """\
        name: agent
        cases: [{input: {text: hi, model: m}}]
        subject:
          agent: claude -p --model ${inputs.model}
          prompt: "${inputs.text}"
        judges:
          - {name: ok, builtin: exit_code}
        """,
    )
    [found] = [d for d in check_file(path) if d.code == "LL030"]
    assert (found.line, found.column) == (4, 28)
    assert found.message == (
        "subject.agent is not interpolated, so ${inputs.model} reaches bash as written (a bad "
        "substitution)"
    )
    assert found.hint == 'read the value from the environment instead: "$LL_INPUTS_model"'


def test_a_judge_reading_a_key_some_cases_lack_is_a_warning(tmp_path: Path) -> None:
    """`${annotations.expected}` in a judge's argument errored that judge on each case without
    the key ("missing value"); a judge whose `if:` may skip those cases is left alone."""
    path = write(
        tmp_path / "judged.suite.yaml",
        """\
        name: judged
        cases:
          - {id: a, input: {text: hi}, annotations: {expected: hi}}
          - {id: b, input: {text: ho}}
        subject:
          command: echo ${inputs.text}
        judges:
          - {name: rx, builtin: regex, arguments: {pattern: "${annotations.expected}"}}
          - name: guarded
            if: "'expected' in annotations"
            builtin: regex
            arguments: {pattern: "${annotations.expected}"}
        """,
    )
    found = [(d.line, d.path, d.message) for d in check_file(path) if d.code == "LL090"]
    assert found == [
        (
            8,
            "judges.0.arguments.pattern",
            "${annotations.expected} is missing from 1 of 2 cases (b): they will error",
        )
    ]


def test_a_case_variable_the_subject_never_gets_is_a_warning(tmp_path: Path) -> None:
    """`$LL_ANNOTATIONS_expected` was always empty in the subject (annotations are the answers,
    never exported to it) and `$LL_INPUTS_txt` empty in every case without `txt`: the command
    ran on with an empty value. A variable with a default of its own is left alone."""
    path = write(
        tmp_path / "vars.suite.yaml",
        """\
        name: vars
        cases: [{id: a, input: {text: hi}, annotations: {expected: hi}}]
        subject:
          command: echo "$LL_ANNOTATIONS_expected ${LL_INPUTS_txt} $LL_INPUTS_text ${LL_INPUTS_n-0}"
        judges:
          - {name: ok, builtin: exit_code}
        """,
    )
    found = [(d.column, d.message) for d in check_file(path) if d.code == "LL090"]
    assert found == [
        (
            18,
            "$LL_ANNOTATIONS_expected is always empty here: a case's annotations are not "
            "exported to the subject or its hooks (they hold the answers)",
        ),
        (
            43,
            "$LL_INPUTS_txt is empty in 1 of 1 cases (a): they have no input 'txt' (did you "
            "mean 'text'?)",
        ),
    ]


def test_an_if_the_guard_cannot_see_through_is_refused_when_validated(tmp_path: Path) -> None:
    """A condition that could run inside C out of its time limit's reach (`x.__pow__(n)`, a
    method called through a list) or walk out of its values (`().__class__`) is an LL070 error
    saying what a condition may not do, not a judge that freezes the run."""
    judges = {
        "dunder": "inputs['text'].__len__() > 0",
        "indirect": "[inputs['text'].center][0](3) != ''",
        "walk": "().__class__ is not None",
        "spec": "f\"{inputs['text']:>{inputs['text'].count('h')}}\" != ''",
    }
    entries = "".join(
        f"  - name: {name}\n    if: {json.dumps(condition)}\n    check: return True\n"
        for name, condition in judges.items()
    )
    text = SUITE.split("judges:\n")[0] + "judges:\n" + entries
    path = write(tmp_path / "guarded.suite.yaml", text)
    found = [d for d in check_file(path) if d.code == "LL070"]
    assert len(found) == len(judges)
    assert all("uses what a condition may not" in d.message for d in found), found
    assert all(d.severity == "error" for d in found)


def test_a_module_judge_is_looked_for_where_the_suite_imports_it(tmp_path: Path) -> None:
    """From a folder inside the project, `ll-harness suite` imports `module` judges from the
    project root; validate must look there too, not claim the run will fail."""
    (tmp_path / ".loops").mkdir()
    write(tmp_path / "evals" / "__init__.py", "")
    write(tmp_path / "evals" / "j.py", "def ok(outputs):\n    return True, 'ok'\n")
    write(
        tmp_path / "s.suite.yaml",
        """\
        name: s
        cases: [{input: {n: 1}}]
        subject: {command: echo hi}
        judges: [{name: mod, module: evals.j, function: ok}]
        """,
    )
    (tmp_path / "sub").mkdir()
    done = ll_loop("validate", "--strict", "../s.suite.yaml", cwd=tmp_path / "sub")
    assert done.returncode == 0 and "LL071" not in done.stdout, done.stdout
    ran = harness(tmp_path / "sub", "suite", "../s.suite.yaml", "--quiet")
    assert ran.returncode == 0 and "pass rate 1/1" in ran.stdout, ran.stdout + ran.stderr
    write(tmp_path / "t.suite.yaml", (tmp_path / "s.suite.yaml").read_text().replace("j,", "k,"))
    done = ll_loop("validate", "../t.suite.yaml", cwd=tmp_path / "sub")
    assert "LL071" in done.stdout and f"under {tmp_path} nor installed" in done.stdout


def test_a_judge_template_that_includes_another_is_refused_by_validate_and_the_run(
    tmp_path: Path,
) -> None:
    """A judge's template is one text (there is no loader): `{% include %}`, `{% extends %}`
    and `{% import %}` passed validate, then made the judge's error on every case Jinja's
    'no loader for this environment specified'."""
    write(tmp_path / "shared.md", "Be strict.\n")
    write(tmp_path / "inc.md", "Quote evidence.\n{% include 'shared.md' %}\n")
    path = write(
        tmp_path / "inc.suite.yaml",
        """\
        name: inc
        cases: [{id: a, input: {text: hi}}]
        subject: {command: echo hi}
        judges:
          - {name: inc, prompt_file: inc.md}
          - {name: ext, prompt: "{% extends 'shared.md' %}"}
          - {name: imp, prompt: "{% from 'shared.md' import x %}Quote {{ outputs }}"}
        """,
    )
    found = {d.line: d.message for d in check_file(path) if d.code == "LL074"}
    assert set(found) == {5, 6, 7}, found
    assert found[6] == (
        "judge 'ext': its template uses {% extends %} (template line 1), but a judge's "
        "template is one text: there is nothing to extend"
    )
    assert "{% include %} (template line 2)" in found[5] and "{% import %}" in found[7]
    judge = compile_judges(load_suite_file(path).judges)[0]
    result = run_judge(judge, {"stdout": "hi"}, JudgeEnv(workspace=tmp_path))
    assert result.status == "error" and "{% include %} (template line 2)" in str(result.error)
