"""Positions the bash grammar misread or the engine did not classify, each once reproduced with
a value that created a file: every one is now refused (at run time, and by lint as LL034 with
its line), the value creates nothing, and the safe forms next to them still render and run."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from engine.cli.validate_cmd import check_file
from engine.model.errors import InterpolationError
from engine.shell.interpolate import NO_TYPES, ValueTypes, render_shell
from tests.run_helpers import run_yaml
from tests.shellquote_helpers import run_bash

TOUCH = "$(touch CANARY)"
SUBSCRIPT = "z[$(touch CANARY)]"


def attempt(template: str, values: dict[str, Any], types: ValueTypes = NO_TYPES) -> str:
    """The refusal's reason; a template that renders is run, and must not create the canary
    (the test then fails on the missing refusal, showing what the value did)."""
    try:
        script = render_shell(template, {"context": values}, types)
    except InterpolationError as refused:
        return refused.reason
    created = run_bash(script).created
    return f"rendered and ran (created {created}): {script!r}"


def runs(template: str, values: dict[str, Any], types: ValueTypes = NO_TYPES) -> str:
    """The output of a template that must render and run cleanly."""
    ran = run_bash(render_shell(template, {"context": values}, types))
    assert (ran.returncode, ran.created) == (0, []), ran.stderr
    return ran.stdout


# (template, values, what the refusal says)
HOLES = {
    "heredoc-backticks": (
        "cat <<EOF\nuser: `echo ${context.x}`\nEOF",
        {"x": TOUCH},
        "here-document body that holds a backtick",
    ),
    "heredoc-backticks-in-quotes": (
        'cat <<EOF\nuser: "`echo ${context.x}`"\nEOF',
        {"x": TOUCH},
        "here-document body that holds a backtick",
    ),
    "heredoc-arithmetic": (
        "cat <<EOF\ntotal: $(( 1 + ${context.x} ))\nEOF",
        {"x": SUBSCRIPT},
        "inside `$(( ))` or `$[ ]` in a here-document body",
    ),
    "heredoc-old-arithmetic": (
        "cat <<EOF\ntotal: $[ 1 + ${context.x} ]\nEOF",
        {"x": "'" + SUBSCRIPT + "'"},
        "inside `$(( ))` or `$[ ]` in a here-document body",
    ),
    "heredoc-arithmetic-unspaced": (
        "cat <<EOF\nsum=$((1+${context.x}))\nEOF",
        {"x": SUBSCRIPT},
        "inside `$(( ))` or `$[ ]` in a here-document body",
    ),
    "ansi-c-ending-in-backslash": (
        "echo $'\\\\'${context.x}' it'\\''s'",
        {"x": "a\ntouch CANARY\n"},
        "the $'...' string at line 1, column 6 ends elsewhere for bash",
    ),
    "printf-option-slot": (
        "printf ${context.a} ${context.b} hello",
        {"a": "-v", "b": SUBSCRIPT},
        "the first operand of `printf`, which still reads options there",
    ),
    "test-option-slot": (
        "test ${context.a} ${context.b}",
        {"a": "-v", "b": SUBSCRIPT},
        "a word of `test` / `[` that is not the operand of an operator",
    ),
    "bracket-option-slot": (
        "[ ${context.a} ${context.b} ] && echo set",
        {"a": "-v", "b": SUBSCRIPT},
        "a word of `test` / `[` that is not the operand of an operator",
    ),
    "integer-read": (
        "declare -i count=0; read -r count <<< ${context.x}",
        {"x": SUBSCRIPT},
        "declares an integer variable (`declare -i` at line 1)",
    ),
    "integer-for": (
        "declare -i total=0; for total in ${context.x}; do :; done",
        {"x": SUBSCRIPT},
        "declares an integer variable (`declare -i` at line 1)",
    ),
    "integer-printf-v": (
        "declare -i n; printf -v n '%s' ${context.x}",
        {"x": SUBSCRIPT},
        "declares an integer variable (`declare -i` at line 1)",
    ),
    "integer-mapfile": (
        "declare -i n; mapfile -t n <<< ${context.x}",
        {"x": SUBSCRIPT},
        "declares an integer variable (`declare -i` at line 1)",
    ),
    "integer-local-in-function": (
        "f() {\n  local -i n\n  read -r n <<< ${context.x}\n}\nf",
        {"x": SUBSCRIPT},
        "declares an integer variable (`local -i` at line 2)",
    ),
    "declare-run-time-flags": (
        "f=i; declare -$f n; n=${context.x}",
        {"x": SUBSCRIPT},
        "declares an integer variable (`declare` with run-time flags at line 1)",
    ),
    "random-seeded-from-a-value": (  # RANDOM is integer: its assignment is arithmetic
        "RANDOM=${context.x}\necho $((RANDOM % 6))",
        {"x": SUBSCRIPT},
        "writes to `RANDOM` (line 1), which bash evaluates as arithmetic",
    ),
    "optind-read": (
        "read -r OPTIND <<< ${context.x}",
        {"x": SUBSCRIPT},
        "writes to `OPTIND` (line 1), which bash evaluates as arithmetic",
    ),
    "srandom-printf-v": (
        "printf -vSRANDOM %s ${context.x}",
        {"x": SUBSCRIPT},
        "writes to `SRANDOM` (line 1), which bash evaluates as arithmetic",
    ),
    "ps4-expanded-by-xtrace": (
        'PS4="+ ${context.x} "\nset -x\ntrue',
        {"x": TOUCH},
        "writes to `PS4` (line 1), whose text bash expands",
    ),
    "bash-env-expanded-by-a-child": (
        "export BASH_ENV=${context.x}\nbash -c true",
        {"x": TOUCH},
        "writes to `BASH_ENV` (line 1), whose text bash expands",
    ),
    "sed-script-in-an-option-word": (  # `-e"${...}"` is a second script, not a file
        'echo a | sed -es/a/b/ -e"${context.x}"',
        {"x": "1e touch CANARY"},
        "an option of `sed` (the value is part of the option word `-e...`)",
    ),
    "option-word-after-an-empty-value": (  # `${a}-e${x}` is `-e...` when a is empty
        "echo a | sed -es/a/b/ ${context.a}-e${context.x}",
        {"a": "", "x": "1e touch CANARY"},
        "an option of `sed` (the value is part of the option word `-e...`)",
    ),
    "perl-code-in-an-option-word": (
        "perl -e'print 1;' -e${context.x}",
        {"x": 'system("touch CANARY")'},
        "an option of `perl` (the value is part of the option word `-e...`)",
    ),
    "mail-message": (  # an interactive bash expands MAILPATH's messages, $(...) included
        "echo x > mbox\nexport MAILCHECK=0 MAILPATH=${context.x}\n"
        "bash -i <<'EOF' >/dev/null 2>&1\nsleep 1.1; echo y >> mbox\ntrue\ntrue\nEOF",
        {"x": "./mbox?$(touch CANARY)"},
        "writes to `MAILPATH` (line 2), whose text bash expands",
    ),
    "history-then-fc": (  # `fc -s` runs the last command of the history list
        "history -s ${context.x}\nfc -s",
        {"x": "touch CANARY"},
        "an argument of `history`, which adds commands (`-s`, `-r FILE`) that `fc` runs",
    ),
    "history-expansion": (  # `!!` in a value becomes the line before it, quotes and all
        'set -o history; set -H\necho ${context.a}\necho "${context.x}"',
        {"a": 'a"; touch CANARY; "', "x": "!!"},
        "turns on history expansion (`set -H` at line 1)",
    ),
    "history-expansion-by-shopt": (  # `shopt -o` sets the options of `set -o`
        'set -o history; shopt -so histexpand\necho ${context.a}\necho "${context.x}"',
        {"a": 'a"; touch CANARY; "', "x": "!!"},
        "turns on history expansion (`shopt -so histexpand` at line 1)",
    ),
    "history-expansion-in-eval": (  # eval's literal code turns it on as surely
        "set -o history; eval 'set -H'\necho ${context.a}\necho \"${context.x}\"",
        {"a": 'a"; touch CANARY; "', "x": "!!"},
        "turns on history expansion (`set -H` at line 1 (in the `eval` at line 1)",
    ),
    "history-expansion-by-command-p": (  # `command -p set` is `set`
        'set -o history; command -p set -H\necho ${context.a}\necho "${context.x}"',
        {"a": 'a"; touch CANARY; "', "x": "!!"},
        "turns on history expansion (`set -H` at line 1)",
    ),
    "alias-for-eval": (  # aliases are expanded once the script turns them on
        "shopt -s expand_aliases\nalias e=eval\ne ${context.x}",
        {"x": "touch CANARY"},
        "turns on alias expansion (`shopt` at line 1)",
    ),
    "posix-mode-named-at-run-time": (  # `set -o` with a word known only when it runs
        "m=$(echo cG9zaXg= | base64 -d); set -o $m\nalias e=eval\ne ${context.x}",
        {"x": "touch CANARY"},
        "turns on alias expansion (`set` at line 1)",
    ),
    "alias-in-posix-mode": (  # POSIX mode expands aliases too
        "set -o posix\nalias e=eval\ne ${context.x}",
        {"x": "touch CANARY"},
        "turns on alias expansion (`set` at line 1)",
    ),
    "declare-value-written-as-a-list": (  # declare parses "(...)" as an array assignment
        'declare -a a="(${context.x})"',
        {"x": TOUCH},
        "inside a `declare` value written as `(...)`",
    ),
    "function-argument": (
        'run() { eval "$1"; }\nrun ${context.x}',
        {"x": "touch CANARY"},
        "an argument of `run`, a function this script defines: ll-loop does not follow values "
        "into functions",
    ),
    "function-defined-by-eval": (  # the function is as real as one written out
        "eval 'run() { eval \"$1\"; }'\nrun ${context.x}",
        {"x": "touch CANARY"},
        "an argument of `run`, a function this script defines",
    ),
    "aliases-turned-on-by-eval": (
        "eval 'shopt -s expand_aliases'\nalias e=eval\ne ${context.x}",
        {"x": "touch CANARY"},
        "turns on alias expansion (`shopt` at line 1 (in the `eval` at line 1))",
    ),
    "function-from-a-sourced-substitution": (
        "source <(echo 'run() { eval \"$1\"; }')\nrun ${context.x}",
        {"x": "touch CANARY"},
        "runs code the engine cannot read (`source` at line 1)",
    ),
    "command-not-found-handler": (
        'command_not_found_handle() { eval "$2"; }\nnosuchcommand ${context.x}',
        {"x": "touch CANARY"},
        "runs code the engine cannot read (a `command_not_found_handle` function)",
    ),
    "backslash-line-in-a-quoted-heredoc": (  # bash: the body is `\`, then EOF ends it
        "cat <<'EOF'\n\\\nEOF\n${context.x}\nEOF",
        {"x": TOUCH},
        "the here-document body at line 2 starts or ends elsewhere for bash",
    ),
    "backslash-line-before-a-heredoc-delimiter": (  # bash joins `\` + newline + `EOF`: `EOF`
        "cat <<EOF\n\\\nEOF\n${context.x}\nEOF",
        {"x": "\ntouch CANARY\n"},
        "the here-document body at line 2 starts or ends elsewhere for bash",
    ),
    "duplicating-redirect-target": (  # `>&WORD` with no number: bash expands WORD again
        'echo building >& "${context.x}"',
        {"x": "log" + TOUCH},
        "the target of `>&`, which bash expands a second time",
    ),
    "duplicating-redirect-after-a-number": (
        "echo hi 1>&1${context.x}",
        {"x": SUBSCRIPT},
        "the target of `>&`, which bash expands a second time",
    ),
    "shell-behind-taskset": (  # taskset, strace, unshare... run the rest as a command
        'taskset -c 0 bash -c "${context.x}"',
        {"x": "touch CANARY"},
        "the command string of `bash -c`",
    ),
    "shell-behind-an-unlisted-runner": (  # a code word is code whichever program runs it
        "nice-wrapper --fast sh -c ${context.x}",
        {"x": "touch CANARY"},
        "the command string of `sh -c`, which runs as code, which `nice-wrapper` may run",
    ),
    "exported-function-in-a-child-shell": (  # the child shell runs the script's function
        'run() { eval "$1"; }; export -f run\nbash -c \'run "$1"\' _ ${context.x}',
        {"x": "touch CANARY"},
        "passed to a shell that inherits the functions this script exports (`export -f` at line 1)",
    ),
    "double-negation": (  # tree-sitter-bash reads the second `!` as a command name
        "! ! eval ${context.x}",
        {"x": TOUCH},
        "an argument of `eval`",
    ),
    "wrapped-function-argument": (
        'run() { eval "$1"; }\ntime run ${context.x}',
        {"x": "touch CANARY"},
        "ll-loop does not follow values into functions",
    ),
    "quote-in-a-pattern": (  # the deep fuzzer: the grammar's `==` pattern swallows a quote
        "echo == echo ' ] ${context.x}",
        {"x": "\ntouch CANARY\n"},
        "the grammar reads a pattern at line 1, column 9 where bash has plain words",
    ),
    "heredoc-in-a-pattern": (  # the soak: the grammar's `==` pattern swallows a `<<-EOF`
        "echo == <<-EOF\n ] ${context.x}",
        {"x": "$(touch CANARY)"},
        "the grammar reads a pattern at line 1, column 9 where bash has plain words",
    ),
    "newline-after-a-plain-==": (  # the soak: the grammar's `==` reads past the newline
        "echo == \n eval ${context.x}",
        {"x": TOUCH},
        "the grammar reads on past the end of the command at line 1, column 6",
    ),
    "operators-in-a-bracket-pattern": (
        "[ a == @(b|c) ] ; echo ${context.x}",
        {"x": TOUCH},
        "several words or operators to bash (inside [ ], as in any command)",
    ),
}


@pytest.mark.parametrize("name", HOLES)
def test_the_hole_is_refused_and_the_value_runs_nothing(name: str) -> None:
    template, values, reason = HOLES[name]
    assert reason in attempt(template, values)


def test_the_unspaced_heredoc_arithmetic_is_not_called_a_command_name() -> None:
    template, values, _ = HOLES["heredoc-arithmetic-unspaced"]
    assert "command name" not in attempt(template, values)


def test_the_bracket_test_is_refused_for_its_words_not_as_unparsable() -> None:
    template, values, _ = HOLES["bracket-option-slot"]
    assert "cannot parse" not in attempt(template, values)


@pytest.mark.parametrize(
    "template",
    [
        "shopt -s extglob\n[[ x == @(a|') ]] ; echo ${context.x}",
        "shopt -s extglob\ncase x in +(a|b)' ) echo ;; esac; echo ${context.x}",
    ],
)
def test_an_extglob_pattern_that_leaves_a_quote_open_is_refused(template: str) -> None:
    """The grammar's extglob token swallows a quote as its `==` pattern does; no value placed
    after one was seen to run (bash finds the script broken), but the positions are not bash's."""
    assert "leaves a quote open" in attempt(template, {"x": "x ]]\ntouch CANARY\n#"})


# --- integers still go where the holes were; the safe forms beside them are untouched ---------


@pytest.mark.parametrize(
    ("template", "output"),
    [
        ("cat <<EOF\ntotal: $(( 1 + ${context.n} ))\nEOF", "total: 4\n"),
        ("cat <<EOF\nsum: $[ ${context.n} * 2 ]\nEOF", "sum: 6\n"),
        ("cat <<EOF\nuser: `echo ${context.n}`\nEOF", "user: 3\n"),
        ("declare -i count=0; read -r count <<< ${context.n}; echo $count", "3\n"),
        ("RANDOM=${context.n}; echo $(( RANDOM == RANDOM ))", "0\n"),
        ("exec 3>&1; echo hi >&${context.n}", "hi\n"),
        ('run() { echo "$1"; }\nrun ${context.n}', "3\n"),
    ],
)
def test_an_integer_is_still_admitted(template: str, output: str) -> None:
    assert runs(template, {"n": 3}) == output


@pytest.mark.parametrize(
    ("template", "output"),
    [
        ("cat <<EOF\nsum: $((1 + 2))\nname: ${context.v}\nEOF", "sum: 3\nname: -v $(x)\n"),
        ("cat <<'EOF'\n`x` ${context.v}\nEOF", "`x` -v $(x)\n"),
        ("echo $'it\\'s' [${context.v}]", "it's [-v $(x)]\n"),
        ("printf '%s\\n' ${context.v}", "-v $(x)\n"),
        ("! ! printf '%s\\n' ${context.v}", "-v $(x)\n"),
        ("[[ a == a ]] && [[ 'a b' =~ ^'a b'$ ]] && printf %s ${context.v}", "-v $(x)"),
        ("printf -- ${context.v}", "-v $(x)"),
        ('[ -n "${context.v}" ] && echo set', "set\n"),
        ('[ "${context.v}" = x ] || echo differs', "differs\n"),
        ('[ x != "${context.v}" ] && [ ! -z "${context.v}" ] && echo both', "both\n"),
        ('if [ "${context.v}" ]; then echo nonempty; fi', "nonempty\n"),
        ('test -z "${context.v}" || echo full', "full\n"),
        ('declare -r x="${context.v}"; echo "$x"', "-v $(x)\n"),
        ('f() { local x="${context.v}"; echo "$x"; }; f', "-v $(x)\n"),
        ("greet() { printf 'hi %s\\n' \"${context.v}\"; }\ngreet", "hi -v $(x)\n"),
        ('greet() { printf \'hi %s\\n\' "$1"; }\ngreet "$LL_CONTEXT_v"', "hi \n"),
        (
            'n=$((RANDOM % 1)); OPTIND=1; shift $((OPTIND - 1)); printf %s "$n${context.v}"',
            "0-v $(x)",
        ),
        ('python3 -c "import sys; print(sys.argv[1])" --name=${context.v}', "--name=-v $(x)\n"),
        ('grep -e"${context.v}" /dev/null || echo none', "none\n"),
        ("shopt -s extglob; shopt -q expand_aliases || printf %s ${context.v}", "-v $(x)"),
        ("eval 'x=1'; source /dev/null; printf %s ${context.v}", "-v $(x)"),
        ("printf %s ${context.v} 2>&1 >/dev/null; echo ok >&1", "ok\n"),
        ("set +o posix; printf %s ${context.v}", "-v $(x)"),
        # bash's evaluating variables given the script's own text
        ("ENV=prod printf %s ${context.v}", "-v $(x)"),
        ("export PS4='+ ' BASH_ENV=./none.sh; export ENV; printf %s ${context.v}", "-v $(x)"),
    ],
)
def test_safe_forms_beside_the_holes_still_render(template: str, output: str) -> None:
    assert runs(template, {"v": "-v $(x)"}) == output


# --- lint reports each hole at its line --------------------------------------------------------


def loop_yaml(action: str) -> str:
    body = textwrap.indent(action, " " * 6)
    parameters = "".join(f"  {p}:\n    type: string\n    default: '1'\n" for p in "abxv")
    return (
        f"name: hole\ninitial: go\nscope: ['.']\nparameters:\n{parameters}"
        f"states:\n  go:\n    action: |\n{body}\n    next: done\n    on_error: failed\n"
        "  done:\n    terminal: true\n  failed:\n    terminal: true\n    failure: true\n"
    )


_WHOLE_SCRIPT = {
    "ansi-c-ending-in-backslash",
    "quote-in-a-pattern",
    "heredoc-in-a-pattern",
    "newline-after-a-plain-==",
    "operators-in-a-bracket-pattern",
    "backslash-line-in-a-quoted-heredoc",
    "backslash-line-before-a-heredoc-delimiter",
}
_ACTION_LINE = 20  # the block scalar of `loop_yaml` starts on this line


def findings(tmp_path: Path, action: str, code: str) -> list[tuple[int, str]]:
    path = tmp_path / "loop.yaml"
    path.write_text(loop_yaml(action))
    return [(d.line or 0, d.message) for d in check_file(path) if d.code == code]


@pytest.mark.parametrize("name", HOLES)
def test_lint_reports_the_hole_as_ll034_at_its_line(name: str, tmp_path: Path) -> None:
    template, _, reason = HOLES[name]
    found = findings(tmp_path, template, "LL034")
    assert found, name
    first = template.index("${context.")
    if name in _WHOLE_SCRIPT:  # every `${...}` refused: reported at the `action:` key
        assert found[0][0] == _ACTION_LINE - 1
    else:
        assert found[0][0] == _ACTION_LINE + template.count("\n", 0, first)
    assert reason in found[0][1]


def test_lint_warns_of_a_variable_passed_to_a_function(tmp_path: Path) -> None:
    action = 'x=${context.x}\nrun() { eval "$1"; }\nrun "$x"'
    found = findings(tmp_path, action, "LL035")
    assert len(found) == 1
    line, message = found[0]
    assert line == _ACTION_LINE
    assert "passes as an argument of `run`, a function this script defines (line 3" in message
    assert "does not follow values into functions" in message


def test_ll_loop_run_refuses_before_anything_runs(tmp_path: Path) -> None:
    template, values, _ = HOLES["heredoc-backticks"]
    ran = run_yaml(tmp_path, loop_yaml(template), "--context", f"x={values['x']}")
    assert ran.code == 2
    assert "LL034" in ran.stderr and "backtick" in ran.stderr
    assert not (tmp_path / "CANARY").exists()
