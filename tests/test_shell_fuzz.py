"""Differential fuzzing of shell interpolation against real bash.

Templates are generated over every grammar position the engine knows (value positions,
arithmetic, names, code, comments), wrapped in generated nesting (substitutions, pipes, case,
functions, here-documents...), and rendered with hostile payloads. Each result either is
refused with an `InterpolationError`, or runs in a real `bash -c` in an empty directory where:
no canary file appears, and the output is exactly what the template prints for that value (the
command's structure did not change). A second fuzzer throws generated token soup at the grammar:
whatever it lets through must never run a payload.

CI runs a fixed set of examples; `LL_QUOTE_EXAMPLES=5000` fuzzes deeper with fresh examples,
and `-m slow` runs the long soak.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.model.errors import InterpolationError
from engine.shell.interpolate import ValueTypes, render_shell
from tests.shellquote_helpers import CANARY_VALUES, run_bash

_DEEP = int(os.environ.get("LL_QUOTE_EXAMPLES", "0"))


def checks(examples: int) -> settings:
    return settings(
        max_examples=_DEEP or examples,
        deadline=None,
        derandomize=not _DEEP,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


HOSTILE = [
    *CANARY_VALUES,
    "a[$(touch CANARY)]",
    "x[`touch CANARY`]",
    "$((1+$(touch CANARY)))",
    "-v",
    "-c",
    "--",
    "*",
    "?[a]*",
    "{a,b}",
    "~root",
    "esac; touch CANARY #",
    "done; touch CANARY",
    ")\ntouch CANARY\n(",
    "EOF\ntouch CANARY",
    "'\\''; touch CANARY; '",
    "\\\ntouch CANARY",
    "\x01\x02\x7f\x1b[31m\xff",
    "x" * 20000,
    "a\rb\x0bc\x0cd",
]
_FRAGMENTS = [*HOSTILE, "'", '"', "`", "$", "\\", "\n", " ", "\t", "#", ";", "&", "|", "(", ")",
              "[", "]", "{", "}", "<", ">", "!", "=", "$(", "${", "é", "日本"]  # fmt: skip
_TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)))
payloads = st.one_of(
    st.sampled_from(HOSTILE),
    _TEXT,
    st.lists(st.one_of(st.sampled_from(_FRAGMENTS), _TEXT.map(lambda t: t[:4])), max_size=10).map(
        "".join
    ),
    st.binary(max_size=64).map(lambda b: b.replace(b"\x00", b"").decode("latin-1")),
)

Printer = Callable[[str], str]

# --- positions where bash only expands the value: it prints back exactly ---------------------
# `{v}` stands for ${context.v}; the function gives the exact output for a value.
VALUE_POSITIONS: dict[str, tuple[str, Printer]] = {
    "word": ("printf '%s' {v}", lambda v: v),
    "double-quoted": ('printf "%s" "{v}"', lambda v: v),
    "single-quoted": ("printf '%s' '{v}'", lambda v: v),
    "ansi-c": ("printf '%s' $'{v}'", lambda v: v),
    "locale": ('printf "%s" $"{v}"', lambda v: v),
    "concatenated": ("printf '%s' a{v}'b'\"c\"", lambda v: f"a{v}bc"),
    "assignment": ('x={v}; printf "%s" "$x"', lambda v: v),
    "assignment-quoted": ('x="<{v}>"; printf "%s" "$x"', lambda v: f"<{v}>"),
    "append": ('x=a; x+={v}; printf "%s" "$x"', lambda v: "a" + v),
    "export": ('export X={v}; printf "%s" "$X"', lambda v: v),
    "local": ('f() {{ local x={v}; printf "%s" "$x"; }}; f', lambda v: v),
    "declare": ('declare -r x={v}; printf "%s" "$x"', lambda v: v),
    "array": ('a=({v} z); printf "%s" "${{a[0]}}"', lambda v: v),
    "here-string": ("cat <<< {v}", lambda v: v + "\n"),
    "substitution": ("printf '%s' \"$(printf '%s' {v}; printf .)\"", lambda v: v + "."),
    "process-substitution": ("cat <(printf '%s' {v})", lambda v: v),
    "case-subject": ("case {v} in *) printf ok;; esac", lambda v: "ok"),
    "case-pattern": ('x={v}; case "$x" in {v}) printf ok;; *) printf no;; esac', lambda v: "ok"),
    "double-bracket": ('x={v}; [[ "$x" == {v} ]] && printf ok', lambda v: "ok"),
    "regex": ('x={v}; [[ "$x" =~ {v} ]] && printf ok', lambda v: "ok"),
    "test": ('x={v}; [ "$x" = {v} ] && printf ok', lambda v: "ok"),
    "test-unary": ("[ -n {v} ] || [ -z {v} ]; printf ok", lambda v: "ok"),
    "for-in": ("for i in {v}; do printf '%s' \"$i\"; done", lambda v: v),
    "if": ("if true; then printf '%s' {v}; fi", lambda v: v),
    "pipeline": ("printf '%s' {v} | cat", lambda v: v),
    "env-wrapper": ("env X=1 printf '%s' {v}", lambda v: v),
    "python-argv": (
        "python3 -c 'import sys; sys.stdout.write(sys.argv[1])' {v}",
        lambda v: v,
    ),
    "awk-assignment": ("awk -v x={v} 'BEGIN {{ printf \"%s\", (length(x) >= 0) }}'", lambda v: "1"),
    "bash-c-argument": ('bash -c \'printf "%s" "$1"\' _ {v}', lambda v: v),
}

# --- positions where bash evaluates text: text is refused, an integer is fine -------------------
EVALUATED_POSITIONS: dict[str, str] = {
    "arithmetic": "echo $(( {v} + 1 ))",
    "arithmetic-command": "(( {v} > 1 )); true",
    "for-c-style": "for((i=0;i<{v};i++)); do :; done",
    "for-c-style-spaced": "for (( i = 0; i < {v}; i++ )); do :; done",
    "if-arithmetic": "if(({v}>1)); then :; fi",
    "while-arithmetic": "while((i<{v})); do i=$((i+1)); done",
    "old-arithmetic": "echo $[{v}+1]",
    "let": "let x={v}",
    "builtin-let": "builtin let x={v}",
    "command-let": "command let x={v}",
    "prefixed-let": "x=1 let y={v}",
    "declare-i": "declare -i n={v}",
    "declare-i-later": "declare -i n; n={v}",
    "declare-ai": "declare -ai x=( {v} )",
    "local-ri": "f() {{ local -ri n={v}; }}; f",
    "subscript": "a[{v}]=1",
    "subscript-quoted": 'a["{v}"]=1',
    "subscript-in-array": "a=([{v}]=1)",
    "subscript-reference": 'echo "${{a[{v}]}}"',
    "double-bracket-eq": "[[ {v} -eq 3 ]]",
    "double-bracket-gt": '[[ "{v}" -gt 3 ]]',
    "test-v": '[ -v "a[{v}]" ]',
    "double-bracket-v": '[[ -v "a[{v}]" ]]',
    "test-command-v": 'test -v "a[{v}]"',
    "printf-v": 'printf -v "{v}" %s x',
    "read": 'read -r "{v}" <<< x',
    "read-array": "read -ra {v} <<< x",
    "declare-name": 'declare "{v}=1"',
    "declare-n": "declare -n r={v}",
    "unset": "unset {v}",
    "mapfile": "mapfile {v} < /dev/null",
    "eval": 'eval "echo {v}"',
    "eval-quoted": "eval 'echo {v}'",
    "builtin-eval": "builtin eval {v}",
    "command-eval": "command eval {v}",
    "prefixed-eval": "x=1 eval {v}",
    "trap": "trap 'echo {v}' EXIT",
    "trap-double": 'trap "echo {v}" EXIT',
    "alias": "alias a={v}",
    "source": "source {v}",
    "dot": ". {v}",
    "bash-c": 'bash -c "{v}"',
    "bash-c-inner": "bash -c 'echo {v}'",
    "sh-c": "sh -c {v}",
    "zsh-c": "zsh -c {v} 2>/dev/null; true",
    "bash-ec": 'bash -ec "echo {v}"',
    "env-bash-c": 'env A=1 bash -c "{v}"',
    "xargs-sh-c": "echo | xargs sh -c {v}",
    "timeout-sh-c": "timeout 5 sh -c {v}",
    "sudo-like-wrapper": "nohup sh -c {v} >/dev/null 2>&1",
    "exec": "exec {v}",
    "command-name": "{v} --version",
    "quoted-command-name": '"{v}" --version',
    "ssh": "ssh -o BatchMode=yes localhost {v} 2>/dev/null; true",
    "python-c": "python3 -c {v}",
    "perl-e": "perl -e {v}",
    "awk-program": "awk {v} /dev/null",
    "sed-script": "sed -e {v} /dev/null",
    "find-exec": "find . -maxdepth 0 -exec {v} ';'",
    "comment": "# note {v}\ntrue",
    "continued-comment": "echo building \\\n# ticket: {v}\ntrue",
    "bash-expansion": 'echo "${{X:-{v}}}"',
    "substring-offset": 'x=abc; echo "${{x:{v}}}"',
    "backslash": "echo \\{v}",
    "heredoc-delimiter": "cat <<{v}\nx\n{v}\n",
    "function-arg": 'f() {{ printf "%s" "$1"; }}; f {v}',
    # hunt6: bash's own evaluating variables, aliases, unseen functions, `>&`, option words
    "random-seed": "RANDOM={v}",
    "optind-read": "read -r OPTIND <<< {v}",
    "ps4": "PS4={v}; set -x; true",
    "bash-env": "BASH_ENV={v} bash -c true",
    "alias-expansion": "shopt -s expand_aliases\nalias e=echo\ne {v}",
    "eval-defined-function": "eval 'f() {{ :; }}'\nf {v}",
    "sourced-substitution": "source <(echo)\necho {v}",
    "duplicating-redirect": "echo hi >&{v} 2>/dev/null; true",
    "sed-option-word": "sed -es/a/b/ -e{v} /dev/null",
    "declare-written-list": 'declare -a a="({v})"',
}

TYPES = ValueTypes(commands=frozenset({"cmd"}))


def _template(pattern: str) -> str:
    return pattern.replace("{v}", "${context.v}").replace("{{", "{").replace("}}", "}")


Program = tuple[str, Printer]


def _wrap(inner: Program, shape: str) -> Program:
    """Nest a program in one more construct; its output is known for any value."""
    code, out = inner
    eof = f"EOF{code.count('<<EOF')}"
    shapes: dict[str, Program] = {
        "subst": (f"x=$( {code}\nprintf .)\nprintf '%s' \"${{x%.}}\"", out),
        "subst-in-dq": (f"printf '%s' \"<$( {code}\nprintf .)>\"", lambda v: f"<{out(v)}.>"),
        "subshell": (f"( {code}\n)", out),
        "group": (f"{{ {code}\n}}", out),
        "pipe": (f"{{ {code}\n}} | cat", out),
        "if": (f"if true\nthen {code}\nfi", out),
        "case": (f"case a in a) {code}\n;; esac", out),
        "function": (f"f() {{ {code}\n}}\nf", out),
        "for": (f"for i in 1\ndo {code}\ndone", out),
        "procsub": (f"cat <( {code}\n)", out),
        "heredoc": (f"cat <<{eof}\n$( {code}\nprintf .)\n{eof}\n", lambda v: out(v) + ".\n"),
        "and": (f"true && {code}", out),
        "decoy-quotes": (f": ')' \")\" \\) '\"' \\'\n{code}", out),
        "decoy-comment": (f"# ) \" ' ` $( <<X\n{code}", out),
    }
    return shapes[shape]


_SHAPES = ["subst", "subst-in-dq", "subshell", "group", "pipe", "if", "case", "function", "for",
           "procsub", "heredoc", "and", "decoy-quotes", "decoy-comment"]  # fmt: skip


def _programs(leaves: list[Program]) -> st.SearchStrategy[Program]:
    return st.recursive(
        st.sampled_from(leaves),
        lambda inner: st.builds(_wrap, inner, st.sampled_from(_SHAPES)),
        max_leaves=3,
    )


_VALUE_LEAVES = [(_template(t), f) for t, f in VALUE_POSITIONS.values()]
_EVALUATED_LEAVES: list[Program] = [
    (_template(t), lambda v: "") for t in EVALUATED_POSITIONS.values()
]


def _render(template: str, value: object) -> str:
    return render_shell(template, {"context": {"v": value}}, TYPES)


@checks(200)
@given(_programs(_VALUE_LEAVES), payloads)
@example((_template(VALUE_POSITIONS["word"][0]), VALUE_POSITIONS["word"][1]), "$(touch CANARY)")
def test_value_positions_print_exactly_and_run_nothing_else(program: Program, value: str) -> None:
    template, expected = program
    try:
        script = _render(template, value)
    except InterpolationError as refused:
        try:
            _render(template, "v")
        except InterpolationError:
            return  # the template's own refusal, whatever the value: failing closed, no hole
        # What a value can earn in a value position: putting a delimiter line into a
        # here-document, a plain-only spot (backticks, a long value), or starting an
        # argument word with `-` (an option to the program) — never silence.
        option = value.startswith("-") and "as an option" in refused.reason
        assert "end it early" in refused.reason or "EOF" in value or option, refused.reason
        return
    ran = run_bash(script)
    assert ran.created == [], f"{template!r} with {value!r} ran a command"
    assert ran.returncode == 0, (template, value, ran.stderr)
    assert ran.stdout == expected(value), template


@checks(200)
@given(_programs(_EVALUATED_LEAVES), payloads)
def test_evaluated_positions_refuse_text(program: Program, value: str) -> None:
    template, _ = program
    with pytest.raises(InterpolationError):
        _render(template, value)


@pytest.mark.parametrize("name", sorted(EVALUATED_POSITIONS))
def test_each_evaluated_position_refuses_every_hostile_text(name: str) -> None:
    template = _template(EVALUATED_POSITIONS[name])
    for value in HOSTILE:
        with pytest.raises(InterpolationError):
            _render(template, value)


@pytest.mark.parametrize("name", sorted(EVALUATED_POSITIONS))
def test_each_evaluated_position_takes_an_integer_and_runs_nothing(name: str) -> None:
    template = _template(EVALUATED_POSITIONS[name])
    try:
        script = _render(template, 3)
    except InterpolationError as refused:
        # Where no value at all can go (a delimiter, after a backslash) even 3 is refused.
        assert name in ("backslash", "heredoc-delimiter"), refused.reason
        return
    assert run_bash(script).created == []


# --- token soup: whatever the grammar lets through never runs a payload ---------------------------

_TOKENS = ["echo", "printf '%s'", "cat", "x=", "a[1]=", "$x", '"', "'", "$(", ")", "`", "(", "{",
           "}", ";", ";;", "&&", "||", "|", "\n", " ", "#", "\\", "\\\n", "<<EOF\n", "\nEOF\n",
           "<<'EOF'\n", "<<-EOF\n", "<<<", "case a in", "a)", "esac", "if true; then", "fi",
           "for i in 1; do", "done", "[[", "]]", "-eq", "==", "=~", "[", "]", "((", "))", "$((",
           "let", "declare -i", "eval", "bash -c", "trap", "printf -v", "read", "$'", "$\"",
           "${X:-", "${", "!", "=", ">", "<", ":", "true", "f()", "local", "export",
           ">&", "RANDOM=", "PS4=", "declare -a a=", "xargs tar -cf x", "mapfile -C eval",
           "shopt -s expand_aliases", "alias e=eval", "bash /dev/stdin", "sed -e",
           "perl -ne print"]  # fmt: skip
_HOLE = "${context.v}"
soup = st.lists(st.sampled_from([*_TOKENS, _HOLE, _HOLE, _HOLE]), min_size=1, max_size=14).map(
    " ".join
)
_SOUP_PAYLOADS = [
    "$(touch CANARY)",
    "`touch CANARY`",
    "a[$(touch CANARY)]",
    "'; touch CANARY; '",
    '"; touch CANARY; "',
    "\ntouch CANARY\n",
    "\nEOF\ntouch CANARY\n",
    "esac; touch CANARY;",
    ") ; touch CANARY ; (",
    "\\'$(touch CANARY)",
]


def _soup_check(template: str, value: str) -> None:
    if _HOLE not in template:
        template += " " + _HOLE
    try:
        script = _render(template, value)
    except InterpolationError:
        return
    if run_bash(_render(template, "benign"), timeout=5).created:
        return  # the template itself writes files (`> x`): nothing to compare
    ran = run_bash(script, timeout=5)
    assert "CANARY" not in ran.created, f"{template!r} with {value!r} ran the payload"


@checks(300)
@given(soup, st.sampled_from(_SOUP_PAYLOADS))
@example("printf %s \"$(case b in a) echo esac;; b) printf %s \"${context.v}\";; esac)\"",
         "$(touch CANARY)")  # fmt: skip
@example("cat <<EOF\na\\\nEOF\necho ${context.v}\nEOF\n", "$(touch CANARY)")
@example("echo == echo ' ]", "\ntouch CANARY\n")  # the grammar's `==` pattern held a quote
@example("echo == <<-EOF\n ]", "$(touch CANARY)")  # ... and a here-document's start (soak)
@example("echo == \n eval", "$(touch CANARY)")  # ... and read past the newline (soak)
def test_generated_templates_never_run_a_payload(template: str, value: str) -> None:
    _soup_check(template, value)


@pytest.mark.slow
@settings(max_examples=20000, deadline=None, database=None)
@given(soup, st.sampled_from(_SOUP_PAYLOADS))
def test_soak_generated_templates_never_run_a_payload(template: str, value: str) -> None:
    _soup_check(template, value)
