"""The run-time traps ported loops carry (LL080-LL084): each fires on the trap, not beside it."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

from engine.load.loader import load_loop_with_positions
from lint import lint_loop
from tests import cli


def codes(text: str) -> list[tuple[str, str]]:
    loop, positions = load_loop_with_positions(text=textwrap.dedent(text), file="loop.yaml")
    return [(d.code, d.path) for d in lint_loop(loop, positions) if d.code.startswith("LL08")]


BASE = """\
name: t
initial: a
scope: ["."]
{top}
states:
  a:
{state}
    next: done
    on_error: done
  done:
    terminal: true
"""


def loop(state: str, top: str = "") -> str:
    return BASE.format(top=top, state=textwrap.indent(textwrap.dedent(state), "    "))


def test_undefined_context_is_reported_once_per_field_and_key() -> None:
    found = codes(loop('action: echo "${context.who} ${context.who} ${context.n}"'))
    assert found == [("LL080", "states.a.action"), ("LL080", "states.a.action")]


def test_undefined_context_in_scope_is_reported() -> None:
    """A scope entry is rendered before the first step: `${context.out_dir}` with no default
    refused the run ("missing value") although lint passed the loop."""
    scoped = 'scope: ["${context.out_dir}/", "${context.tmp | default(\'\')}"]'
    found = codes(loop("action: 'true'").replace('scope: ["."]', scoped))
    assert found == [("LL080", "scope.0")]


def test_provided_or_guarded_context_is_not_reported() -> None:
    top = "context: {who: me}\nparameters: {n: {type: integer}}"
    action = 'action: echo "${context.who} ${context.n} ${context.input} ${context.x | default(1)}"'
    assert codes(loop(action, top)) == []
    assert codes(loop('action: echo "${context.y:default=2} ${context.z?}"')) == []


def test_input_is_the_parameter_named_by_input_key() -> None:
    top = "input_key: issue\nparameters: {issue: {type: string}}"
    assert codes(loop('action: echo "${context.input}"', top)) == [("LL080", "states.a.action")]
    assert codes(loop('action: echo "${context.issue}"', top)) == []


def test_a_slash_command_in_a_shell_state_is_an_error() -> None:
    assert codes(loop("action: /ll:manage-issue fix")) == [("LL081", "states.a.action")]
    assert codes(loop("action: '  /review --all'")) == [("LL081", "states.a.action")]


def test_paths_and_prompts_are_not_slash_commands() -> None:
    assert codes(loop("action: /usr/bin/env true")) == []
    assert codes(loop("action: ./run.sh /review")) == []
    prompt = "action: /review the diff\naction_type: prompt\nrunner: 'cmd:claude -p'\ntimeout: 60"
    assert codes(loop(prompt)) == []


def test_an_evaluator_reading_its_own_capture_is_an_error() -> None:
    state = """\
    action: echo ok
    capture: out
    evaluate: {type: output_contains, pattern: ok, source: "${captured.out.stderr}"}
    on_yes: done
    on_no: done
    """
    text = loop(state).replace("    next: done\n", "", 1)
    assert codes(text) == [("LL082", "states.a.evaluate.source")]
    other = text.replace("captured.out.stderr", "captured.other.output | default('')")
    assert codes(other) == []
    # the subscript spelling reads the same capture (the rule looked for `captured.` only)
    subscript = text.replace("captured.out.stderr", "captured['out'].stderr")
    assert codes(subscript) == [("LL082", "states.a.evaluate.source")]


def test_scope_may_only_use_run_level_roots() -> None:
    top = "context: {d: x}"
    good = loop("action: 'true'", top).replace(
        'scope: ["."]', 'scope: ["${run.dir}", "${context.d}", "${env.HOME}/x", "${param.p?}"]'
    )
    assert codes(good) == []
    bad = loop("action: 'true'").replace('scope: ["."]', 'scope: [".", "${prev.output}"]')
    assert codes(bad) == [("LL083", "scope.1")]
    # the scope is locked with run.dir and run.id only: ${run.started_at} passed and the run
    # was refused before its first step ("missing value: 'started_at'")
    late = loop("action: 'true'").replace(
        'scope: ["."]', 'scope: ["${run.id}", "${run.started_at}"]'
    )
    assert codes(late) == [("LL083", "scope.1")]


def test_input_key_must_name_a_parameter_or_context_key() -> None:
    assert codes(loop("action: 'true'", "input_key: nope")) == [("LL084", "input_key")]
    assert codes(loop("action: 'true'", "input_key: k\ncontext: {k: ''}")) == []


def test_jinja_braces_in_a_shell_command_are_a_warning() -> None:
    """`{{ context.name }}` reached bash as text (`echo` printed the braces); `${{ ... }}`
    (GitHub Actions) is a bad substitution. Go templates (`{{ .Name }}`), names that are not
    ours and prompts are left alone."""
    top = "context: {name: ada}"
    action = """\
    action: |
      echo "hello {{ context.name }}" ${{ context.name }}
      echo {{ captured.a.output | trim }}
      docker inspect --format '{{ .State.Running }}' web
      echo '{{ item }}'
    """
    loop_, positions = load_loop_with_positions(
        text=textwrap.dedent(loop(action, top)), file="loop.yaml"
    )
    found = [
        (d.line, d.column, d.message) for d in lint_loop(loop_, positions) if d.code == "LL086"
    ]
    assert found == [
        (8, 19, "{{ context.name }} in this action is not interpolated: bash gets it as text"),
        (8, 39, "${{ context.name }} in this action is not interpolated: bash gets it as text"),
        (
            9,
            12,
            "{{ captured.a.output ...}} in this action is not interpolated: bash gets it as text",
        ),
    ]
    prompt = "action: Greet {{ context.name }}\naction_type: prompt\nrunner: 'cmd:x'\ntimeout: 9"
    assert codes(loop(prompt, top)) == []


def test_a_yaml_comment_inside_a_bash_quote_cuts_the_command() -> None:
    """`action: grep -c "TODO #42" notes.txt` ran `grep -c "TODO` (YAML dropped ` #42"...` as
    a comment) and the action failed with a bash syntax error; validate said nothing. A comment
    bash would drop as well, or a quoted YAML value, is fine."""

    def cut(action: str) -> list[tuple[int, int, str]]:
        text = textwrap.dedent(loop(action))
        loop_, positions = load_loop_with_positions(text=text, file="loop.yaml")
        found = lint_loop(loop_, positions)
        return [(d.line, d.column, d.message) for d in found if d.code == "LL087"]

    assert cut('action: grep -c "TODO #42" notes.txt  # count them') == [
        (
            7,
            27,
            "YAML read '#42\" notes.txt  # count them' as a comment, so the action bash gets "
            "ends at 'grep -c \"TODO' and does not parse (a quote is still open at its end)",
        )
    ]
    assert [c[:2] for c in cut("action: echo $(date #now)")] == [(7, 25)]
    assert cut("action: make test  # the fast ones") == []
    assert cut("action: 'grep -c \"TODO #42\" notes.txt'") == []
    assert cut('action: |\n  grep -c "TODO #42" notes.txt') == []
    # Without positions (a loop built in Python) the rule cannot know how the value was written.
    loop_, _ = load_loop_with_positions(text=textwrap.dedent(loop("action: a")), file="l.yaml")
    assert "LL087" not in [d.code for d in lint_loop(loop_)]


SYNTAX_LOOP = """\
name: syntax
initial: quote
scope: ["."]
states:
  quote:
    action: echo "unterminated
    next: branch
  branch:
    action: |
      echo start
      if true; then echo x
    next: fine
  fine:
    action: |
      # it's a comment with a quote
      for x in a b; do echo "$x"; done
      cat <<EOF
      it's in a here-document
      EOF
      echo "$${HOME}" && test -f x || true
    next: agent
  agent:
    action: do it
    action_type: prompt
    timeout: 5
    runner: 'cmd:my-agent --prompt "oops'
    next: done
  done:
    terminal: true
"""


def test_a_shell_command_bash_cannot_parse_is_reported_at_its_line(tmp_path: Path) -> None:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "syntax.yaml").write_text(SYNTAX_LOOP)
    for script in ('echo "unterminated', "echo start\nif true; then echo x\n"):
        assert subprocess.run(["bash", "-n", "-c", script], capture_output=True).returncode == 2
    ran = cli.ll_loop(tmp_path, "validate", "syntax", "--format", "json")
    found = [d for d in json.loads(ran.stdout)["loops"][0]["diagnostics"] if d["code"] == "LL088"]
    assert [(d["line"], d["path"], d["severity"]) for d in found] == [
        (6, "states.quote.action", "warning"),
        (11, "states.branch.action", "warning"),
        (26, "states.agent.runner", "warning"),
    ]
    assert "the quote opened at line 1, column 6 is never closed" in found[0]["message"]
    assert "the `if` at line 2, column 1 has no `fi`" in found[1]["message"]
    assert "runner command" in found[2]["message"]


def test_a_command_yaml_cut_at_a_comment_is_ll087s_alone(tmp_path: Path) -> None:
    """`action: grep "TODO #42" notes.txt` got both LL087 (YAML cut it at ` #`: quote the value)
    and LL088 (added beside it) saying bash cannot parse it, hint "fix the shell syntax", which
    is not the fix: the shell syntax is right, the YAML is not. One finding now: LL087's."""
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "cut.yaml").write_text(
        SYNTAX_LOOP.replace('echo "unterminated', 'grep "TODO #42" notes.txt')
    )
    ran = cli.ll_loop(tmp_path, "validate", "cut", "--format", "json")
    found = json.loads(ran.stdout)["loops"][0]["diagnostics"]
    at_cut = [d["code"] for d in found if d["path"] == "states.quote.action"]
    assert at_cut == ["LL087"]
    assert [d["path"] for d in found if d["code"] == "LL088"] == [
        "states.branch.action",
        "states.agent.runner",
    ]


def test_an_apostrophe_in_a_comment_or_here_document_is_not_the_syntax_error(
    tmp_path: Path,
) -> None:
    """LL088 named "the quote opened at line 1 ... is never closed" for the `'` of `# don't` or
    of a here-document's `it's`, which bash does not read as a quote, instead of the `if` that
    has no `fi`: its quote scan knows neither comments nor here-documents."""
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "apos.yaml").write_text(
        "name: apos\ninitial: a\nscope: ['.']\nstates:\n"
        "  a:\n    action: |\n      # don't build twice\n      if true; then make\n"
        "    next: b\n"
        "  b:\n    action: |\n      cat <<EOF\n      it's here\n      EOF\n"
        "      if true; then make\n    next: done\n"
        "  done:\n    terminal: true\n"
    )
    for script in ("# don't build twice\nif true; then make\n",):
        assert subprocess.run(["bash", "-n", "-c", script], capture_output=True).returncode == 2
    ran = cli.ll_loop(tmp_path, "validate", "apos", "--format", "json")
    found = [d for d in json.loads(ran.stdout)["loops"][0]["diagnostics"] if d["code"] == "LL088"]
    assert [(d["path"], d["line"]) for d in found] == [
        ("states.a.action", 8),
        ("states.b.action", 15),
    ]
    assert "the `if` at line 2, column 1 has no `fi`" in found[0]["message"]
    assert "the `if` at line 4, column 1 has no `fi`" in found[1]["message"]
    assert not any("quote" in d["message"] for d in found)


def test_a_syntax_error_on_a_repeated_line_is_reported_at_that_line(tmp_path: Path) -> None:
    """LL088 looked for the failing line's text from the top of the value, so a `for` without
    `done` on line 4 of a block that also starts with the same `for` line was reported at the
    first one (line 7 of the file, not 10)."""
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "twice.yaml").write_text(
        "name: twice\ninitial: a\nscope: ['.']\nstates:\n  a:\n    action: |\n"
        '      for x in a b; do\n        echo "$x"\n      done\n'
        '      for x in a b; do\n        echo "$x"\n'
        "    next: done\n  done:\n    terminal: true\n"
    )
    ran = cli.ll_loop(tmp_path, "validate", "twice", "--format", "json")
    found = [d for d in json.loads(ran.stdout)["loops"][0]["diagnostics"] if d["code"] == "LL088"]
    assert [(d["line"], d["column"]) for d in found] == [(10, 7)]
    assert "at line 4" in found[0]["message"]


def test_a_cut_command_after_a_syntax_error_is_still_ll087s_alone(tmp_path: Path) -> None:
    """The YAML lines LL088 reads to leave a cut command to LL087 must not be replaced by a
    script's lines once one command has been reported."""
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "order.yaml").write_text(
        "name: order\ninitial: a\nscope: ['.']\nstates:\n"
        "  a:\n    action: |\n      if true; then echo x\n    next: b\n"
        '  b:\n    action: grep "TODO #42" notes.txt\n    next: done\n'
        "  done:\n    terminal: true\n"
    )
    ran = cli.ll_loop(tmp_path, "validate", "order", "--format", "json")
    found = json.loads(ran.stdout)["loops"][0]["diagnostics"]
    assert [(d["code"], d["path"]) for d in found if d["code"] in ("LL087", "LL088")] == [
        ("LL088", "states.a.action"),
        ("LL087", "states.b.action"),
    ]


def test_a_command_ending_in_an_operator_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    """`action: make test ||` (or `echo a &&`, `a |`) made validate and run end in "internal
    error: IndexError": LL088 named the opener of the node missing its end, and the command
    the grammar misses after `||` has no text at all."""
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "dangling.yaml").write_text(
        "name: dangling\ninitial: a\nscope: ['.']\nstates:\n"
        '  a:\n    action: "true ||"\n    next: b\n'
        "  b:\n    action: |\n      echo a &&\n    next: done\n"
        "  done:\n    terminal: true\n"
    )
    ran = cli.ll_loop(tmp_path, "validate", "dangling", "--format", "json")
    assert ran.code == 0 and "internal error" not in ran.stderr, ran.stderr
    found = [d for d in json.loads(ran.stdout)["loops"][0]["diagnostics"] if d["code"] == "LL088"]
    assert [(d["path"], d["line"]) for d in found] == [
        ("states.a.action", 6),
        ("states.b.action", 10),
    ]
    assert "missing `word` at line 1, column 8" in found[0]["message"]
    run = cli.ll_loop(tmp_path, "run", "dangling")
    assert "internal error" not in run.stderr, run.stderr
    assert run.code == 2, run.stdout + run.stderr  # the action's exit 2: no route from error
