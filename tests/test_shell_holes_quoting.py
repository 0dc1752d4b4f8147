"""Holes a hostile tester found on the quoting side of shell actions, each checked in real bash.

A value must stay one literal piece next to the script's own text (`$HOME` before it, braces,
`~` or `>` around it), must not reach a program as an option, and a negative integer must stay
one number in arithmetic.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.model.errors import InterpolationError
from engine.shell.interpolate import ValueTypes, render_shell
from lint import lint_loop
from tests.lint_helpers import make_loop
from tests.shellquote_helpers import run_bash

MARKER = "PX"


NO_TYPES = ValueTypes()


def render(template: str, types: ValueTypes = NO_TYPES, **context: Any) -> str:
    return render_shell(template, {"context": context}, types)


def refused(template: str, **context: Any) -> str:
    with pytest.raises(InterpolationError) as caught:
        render(template, **context)
    return caught.value.reason


# --- A: a value right after `$NAME` or a lone `$` -------------------------------------------


@pytest.mark.parametrize("value", ["_dir", "it's", "9", "x y"])
def test_value_after_a_variable_does_not_join_its_name_in_double_quotes(value: str) -> None:
    script = render('A=[; echo "$A${context.s}]"', s=value)
    assert run_bash(script).stdout == f"[{value}]\n"


@pytest.mark.parametrize("value", ["_dir", "it's", "9"])
def test_value_after_a_variable_does_not_join_its_name_unquoted(value: str) -> None:
    script = render("A=[; printf '%s\\n' $A${context.s}]", s=value)
    assert run_bash(script).stdout == f"[{value}]\n"


def test_integer_after_a_variable_in_arithmetic_stays_apart() -> None:
    types = ValueTypes(integers=frozenset({"n"}))
    script = render("i=1; let x=$i${context.n}; echo $x", types, n=3)
    assert script == 'i=1; let x=$i""3; echo $x'
    assert run_bash(script).stdout == "13\n"


def test_value_after_a_variable_in_a_heredoc_is_refused_when_it_would_join() -> None:
    template = "cat <<EOF\n$HOME${context.s}\nEOF"
    reason = refused(template, s="_dir")
    assert reason.startswith("the value '_dir' would join the variable name of `$HOME`")
    assert "write `${HOME}` (with braces)" in reason
    assert run_bash(render(template, s="/sub")).stdout.endswith("/sub\n")


def test_a_lone_dollar_cannot_be_written_before_a_value() -> None:
    # `$${` is the escape of a literal `${`: no template puts a bare `$` right before a value
    assert render('echo "$${context.x}"', x="(touch PX)") == 'echo "${context.x}"'


AFTER_RAW = [
    "echo ${context.a | raw}${context.b}",
    'echo "${context.a | raw}${context.b}"',
    "cat <<EOF\n${context.a | raw}${context.b}\nEOF",
]


@pytest.mark.parametrize("template", AFTER_RAW)
@pytest.mark.parametrize("value", ["(touch PX)", "{x:-$(touch PX)}", "'\\x41'"])
def test_value_after_a_lone_dollar_is_refused(template: str, value: str) -> None:
    with pytest.raises(InterpolationError) as caught:
        render(template, a="$", b=value)
    assert caught.value.expression == "context.b"
    assert caught.value.reason.startswith("the value would follow a lone `$`")


# --- B: bare values expanded by bash ----------------------------------------------------------


def test_value_inside_braces_is_not_brace_expanded() -> None:
    ran = run_bash(render("for f in x{${context.a},.orig}; do echo $f; done", a=".bak,/etc/passwd"))
    assert ran.stdout == "x.bak,/etc/passwd\nx.orig\n"
    assert run_bash(render("echo n{${context.a}}", a="1..5")).stdout == "n{1..5}\n"


def test_value_after_a_tilde_is_not_a_user_name() -> None:
    assert run_bash(render("echo ~${context.u}", u="root")).stdout == "~root\n"


def test_number_before_a_redirection_is_not_a_file_descriptor() -> None:
    ran = run_bash(render("echo ${context.n}>count.txt; cat count.txt", n=2))
    assert ran.stdout == "2\n"
    assert render("echo ${context.n}>count.txt", n=2) == "echo '2'>count.txt"


def test_shell_filter_word_is_quoted_like_any_value_unquoted() -> None:
    assert run_bash(render("echo ~${context.u | shell}", u="root")).stdout == "~root\n"


# --- C: values read as options ----------------------------------------------------------------


def test_git_option_in_a_value_is_refused() -> None:
    reason = refused("git log --oneline ${context.ref}", ref="--output=/tmp/PX")
    assert reason == (
        "the value '--output=/tmp/PX' starts with `-`, so `git` would read it as an option "
        "(line 1, column 19 of the action); write `--` before the operands "
        "(`git ... -- ${context.ref}`), or prefix a path with `./`"
    )


@pytest.mark.parametrize(
    "template, value",
    [
        ("tar -xf some.tar -C out ${context.v}", f"--to-command=touch {MARKER}"),
        ("tar -cf x.tar --checkpoint=1 ${context.v} f", f"--checkpoint-action=exec=touch {MARKER}"),
        ('ls "${context.v}"', "-la"),
        ("env A=1 timeout 5 tar -tf x.tar ${context.v}", "--to-command=x"),
        ("echo $(git log ${context.v})", "--output=x"),
    ],
)
def test_option_shaped_values_are_refused_at_the_start_of_an_argument(
    template: str, value: str
) -> None:
    assert "would read it as an option" in refused(template, v=value)


@pytest.mark.parametrize(
    "template",
    [
        "echo a | sed -e s/a/b/ ${context.a}${context.v}",
        'tar -cf x.tar --checkpoint=1 "${context.a}${context.v}" f',
        "git log $EMPTY${context.v}",
    ],
)
def test_an_option_after_a_value_or_variable_that_may_be_empty_is_refused(template: str) -> None:
    """With `a` empty, `${a}${v}` is `v` alone: tar ran a `--checkpoint-action=exec=` (hunt6)."""
    value = f"--checkpoint-action=exec=touch {MARKER}"
    assert "would read it as an option" in refused(template, a="", v=value)


@pytest.mark.parametrize(
    ("template", "value"),
    [
        (
            "echo ${context.v} | xargs tar -cf x.tar --checkpoint=1 f",
            '"--checkpoint-action=exec=x"',
        ),
        ("printf '%s\\n' ${context.v} | xargs -d '\\n' tar -cf x.tar f", "--to-command=x"),
        ("xargs -a <(echo ${context.v}) git log", "a --output=x"),
        ("sudo xargs ls <<< ${context.v}", "-la"),
        ("echo ${context.v} | xargs -d , ls", "a,-la"),
        ("printf '%s\\0' ${context.v} | xargs -0 ls", "-la"),
        ("xargs -d '\\n' ls <<< ${context.v}", "a\n-la"),
        # another program may change the text on its way: any `-` with a delimiter
        ("echo ${context.v} | tr , '\\n' | xargs -d '\\n' ls", "a,b-la"),
        ("echo -e ${context.v} | xargs -d '\\n' ls", "x-y"),
        ("printf '%b\\n' ${context.v} | xargs -d '\\n' ls", "x-y"),
        # a word written at run time (`$o`, which may be -e) or `--` before printf's format
        ("o=-e; echo $o ${context.v} | xargs -d '\\n' ls", "x-y"),
        ("printf -- '%b\\n' ${context.v} | xargs -d '\\n' ls", "x-y"),
    ],
)
def test_a_value_xargs_would_pass_on_as_an_option_is_refused(template: str, value: str) -> None:
    """xargs splits its input into the command's arguments, quotes and all: a value
    `"--checkpoint-action=exec=touch CANARY"` piped into `xargs tar ...` ran it (hunt6)."""
    assert "a piece starting with `-` would be an option" in refused(template, v=value)


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ("xargs -rd, tar -cf x.tar --checkpoint=1 f", "a,--checkpoint-action=exec=touch PX"),
        ("xargs --delim=, tar -cf x.tar --checkpoint=1 f", "a,--checkpoint-action=exec=touch PX"),
        ("xargs -r0d, tar -cf x.tar --checkpoint=1 f", "a,--checkpoint-action=exec=touch PX"),
        (
            "xargs -rI echo tar -cf x.tar --checkpoint=1 f echo",
            "x\n--checkpoint-action=exec=touch PX",
        ),
    ],
)
def test_xargs_options_are_read_as_its_getopt_reads_them(template: str, value: str) -> None:
    """`xargs -rd,` is `-r -d ,` and `--delim=,` is `--delimiter=,`: read as unknown words they
    left xargs splitting at blanks, so `a,--checkpoint-action=exec=...` passed and tar ran it;
    `-rI echo` took `echo` (the -I string) for xargs's command, which reads no options."""
    script = f"touch f; echo ${{context.v}} | {template}"
    assert "a piece starting with `-` would be an option" in refused(script, v=value)


def test_xargs_bundled_options_keep_their_delimiter_for_plain_values() -> None:
    ran = run_bash(render("echo ${context.v} | xargs -rd, touch", v="x-1,y-2"))
    assert (ran.returncode, ran.created) == (0, ["x-1", "y-2\n"]), ran.stderr


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ("echo ${context.v} | xargs -n1 basename", "a/b c-d"),
        ("printf '%s\\n' ${context.v} | xargs rm -f --", "-rf"),
        ("echo ${context.v} | xargs -d , echo", "a,-n"),
    ],
)
def test_xargs_input_without_options_or_after_dashdash_renders(template: str, value: str) -> None:
    assert run_bash(render(template, v=value)).returncode == 0


@pytest.mark.parametrize(
    ("template", "value", "made"),
    [
        ("echo ${context.v} | xargs -d '\\n' touch", "2024-01-01.log", ["2024-01-01.log"]),
        ("printf '%s\\n' ${context.v} | xargs -d '\\n' touch", "a-b\nc-d", ["a-b", "c-d"]),
        ("xargs -d , touch <<< ${context.v}", "x-1,y-2", ["x-1", "y-2\n"]),
        ("printf '%s\\0' ${context.v} | xargs -0 touch", "name -with", ["name -with"]),
        ("echo ${context.v} | xargs touch", "fix - urgent", ["fix", "urgent"]),  # `-`: stdout
    ],
)
def test_xargs_pieces_that_start_with_no_dash_render(
    template: str, value: str, made: list[str]
) -> None:
    """With `-d X` or `-0`, xargs's pieces are what lies between the delimiters: where it reads
    the value as it is, a `-` inside a piece (a date, a name) is no option, nor is a lone `-`
    between blanks; the files it names are made, and nothing else."""
    ran = run_bash(render(template, v=value))
    assert (ran.returncode, ran.created) == (0, made), ran.stderr


@pytest.mark.parametrize(
    "template",
    [
        "env -u test tar -cf x.tar --checkpoint=1 f ${context.v}",
        "sudo -u echo tar -cf x.tar --checkpoint=1 f ${context.v}",
    ],
)
def test_a_wrapper_option_argument_is_not_taken_for_the_program(template: str) -> None:
    """`env -u test tar ...`: `test` is the variable `-u` unsets; read as the program (which
    takes no options) it let tar's `--checkpoint-action=exec=` through (hunt6)."""
    reason = refused(template, v=f"--checkpoint-action=exec=touch {MARKER}")
    assert "`tar` would read it as an option" in reason


def test_a_wrapper_option_argument_is_not_taken_for_the_program_either_way() -> None:
    assert run_bash(render("nice -n 10 printf %s ${context.v}", v="-x")).stdout == "-x"


def test_tar_option_does_not_run_when_written_after_dashdash() -> None:
    script = render(
        "touch f; tar -cf x.tar f; mkdir out; tar -xf x.tar -C out -- ${context.v}; true",
        v=f"--to-command=touch {MARKER}",
    )
    ran = run_bash(script)
    assert MARKER not in ran.created and "x.tar" in ran.created


def test_echo_refusal_suggests_printf() -> None:
    reason = refused("echo ${context.x}", x="-n")
    assert "`echo` would read it as an option" in reason
    assert reason.endswith("echo has no `--`: write printf '%s\\n' ${context.x} instead")
    assert run_bash(render("printf '%s\\n' ${context.x}", x="-n")).stdout == "-n\n"


@pytest.mark.parametrize(
    "template",
    [
        "git log -- ${context.v}",
        "ls ./${context.v}",
        "git clone --branch=${context.v} x",
        "echo a ${context.v}",
        "printf '%s' ${context.v}",
        "bash -c 'printf %s \"$1\"' _ ${context.v}",
        "python3 -c 'import sys; print(sys.argv[1])' ${context.v}",
        "x=${context.v}",
        "cat <<< ${context.v}",
        "env -- printf '%s' ${context.v}",
    ],
)
def test_dash_values_are_data_after_dashdash_inside_a_word_or_after_an_operand(
    template: str,
) -> None:
    render(template, v="--flag")


@pytest.mark.parametrize(
    "template, value",
    [
        ("perl -ne print ${context.v}", f"touch {MARKER}|"),
        ("perl -pe1 ./${context.v}", f"x; touch {MARKER} |"),
        ("sudo -u root perl -e 'print while <>' -- \"${context.v}\"", f" touch {MARKER}|"),
        ("perl ./count.pl ${context.v}", f">{MARKER}"),
    ],
)
def test_a_value_perl_would_open_as_a_command_or_for_writing_is_refused(
    template: str, value: str
) -> None:
    """perl's `<>` (`-n`, `-p`) opens each argument with two-argument `open`, which reads a
    mode from the name: `cmd|` ran cmd (hunt6), `>f` truncates f."""
    assert "`perl` may open this argument with a mode read from its text" in refused(
        template, v=value
    )


def test_a_plain_path_still_reaches_perl() -> None:
    ran = run_bash(render("printf 'a\\n' > 'in put'; perl -ne print ${context.v}", v="in put"))
    assert (ran.returncode, ran.stdout) == (0, "a\n")


@pytest.mark.parametrize(
    "template",
    [
        "declare -a a=${context.v}",
        'typeset -A m="${context.v}"',
        "declare -a a+=${context.v}",
        'a=(1); declare a="${context.v}"',
        'f() { local -a a="${context.v}"; }; f',
        'declare -a a="${context.v} (x)"',
        'declare -a a="${context.v}$b"',
    ],
)
def test_a_value_declare_would_parse_as_an_array_assignment_is_refused(template: str) -> None:
    """`declare -a a="($(cmd))"` ran cmd (hunt6): given an array, declare parses a value that
    reads `(...)` as an array assignment and expands it again, quoted or not."""
    reason = refused(template, v=f"($(touch {MARKER}))")
    assert "could parse as an array assignment and expand again" in reason


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ("declare -a a=x${context.v}", f"($(touch {MARKER}))"),
        ("a=${context.v}", f"($(touch {MARKER}))"),
        ('declare -a a="${context.v}"', f"($(touch {MARKER})) is not closed"),
        ('f() { local -a a="${context.v} x"; }; f', f"($(touch {MARKER}))"),
    ],
)
def test_a_parenthesised_value_after_text_or_outside_declare_is_data(
    template: str, value: str
) -> None:
    ran = run_bash(render(template, v=value))
    assert (ran.returncode, ran.created) == (0, [])


@pytest.mark.parametrize(
    "template",
    [
        'f() { local x=${context.v}; printf %s "$x"; }; f',
        'f() { local t="(${context.v})" n=1; printf %s "${t:-none}"; }; f',
        'f() { local x="${context.v}"; printf %s "${x}"; }; g() { f; }; g',
        'f() { for i in 1 2; do local x=${context.v}; done; printf %s "$x"; }; f',
    ],
)
def test_a_parenthesised_value_of_a_new_local_scalar_is_data(template: str) -> None:
    """`local x=...` makes a new variable, an array only if this function made one of that name
    before (or `localvar_inherit` hands it down): where the script names `x` nowhere else, a
    title like `(draft)` is just text, and `($(cmd))` runs nothing."""
    for value in ("(draft)", f"($(touch {MARKER}))"):
        ran = run_bash(render(template, v=value))
        assert (ran.returncode, ran.created) == (0, []), ran.stderr
        assert value in ran.stdout


@pytest.mark.parametrize(
    "template",
    [
        'f() { local -a x; local x="${context.v}"; }; f',
        'f() { local x; x[1]=2; local x="${context.v}"; }; f',
        "f() { for i in 1 2; do local x=${context.v}; x[1]=a; done; }; f",
        "shopt -s localvar_inherit; x=(1); f() { local x=${context.v}; }; f",
        'f() { local x=${context.v}; eval "$1"; }; f',
    ],
)
def test_a_local_that_may_already_be_an_array_still_refuses_it(template: str) -> None:
    reason = refused(template, v=f"($(touch {MARKER}))")
    assert "could parse as an array assignment and expand again" in reason
    forced = run_bash(template.replace("${context.v}", f"'($(touch {MARKER}))'"))
    if "eval" not in template:
        assert MARKER in forced.created  # this one does run the value


@pytest.mark.parametrize("value", [-3, "-3", "-2.5"])
def test_negative_numbers_are_not_options(value: object) -> None:
    script = render("expr 5 + ${context.v}", v=value)
    assert script == f"expr 5 + '{value}'"
    if value != "-2.5":
        assert run_bash(script).stdout == "2\n"


def test_raw_is_the_opt_out() -> None:
    assert render("echo ${context.x | raw}", x="-n x") == "echo -n x"


# --- D: negative integers in arithmetic -----------------------------------------------------


def test_negative_integer_in_arithmetic_is_parenthesised() -> None:
    types = ValueTypes(integers=frozenset({"n"}))
    template = 'i=10; echo "diff=$(( i-${context.n} ))"; echo "i=$i"'
    script = render(template, types, n="-3")
    assert script == 'i=10; echo "diff=$(( i-(-3) ))"; echo "i=$i"'
    assert run_bash(script).stdout == "diff=13\ni=10\n"


@pytest.mark.parametrize(
    "template, n, out",
    [
        ("echo $((-${context.n}))", -3, "3"),
        ("a=(1 2 3); echo ${a[${context.n}]}", -1, "3"),
        ("[[ 1 -gt ${context.n} ]] && echo yes", -3, "yes"),
        ("echo $(( 2 * ${context.n} ))", -3, "-6"),
        ("let x=${context.n}; echo $x", -3, "-3"),
    ],
)
def test_negative_integer_works_in_every_arithmetic_spot(template: str, n: int, out: str) -> None:
    ran = run_bash(render(template, ValueTypes(integers=frozenset({"n"})), n=n))
    assert (ran.stdout, ran.returncode) == (out + "\n", 0), ran.stderr


# --- E: `| shell` inside `$(...)` inside a here-document ----------------------------------------


def test_shell_filter_keeps_backslash_newline_inside_heredoc_substitution() -> None:
    template = "cat <<EOF\n$(printf '%s|' ${context.x | shell})\nEOF"
    ran = run_bash(render(template, x="a\\\nb"))
    assert ran.stdout == "a\\\nb|\n"
    plain = run_bash(render(template.replace(" | shell", ""), x="a\\\nb"))
    assert plain.stdout == ran.stdout


# --- C (lint) and F: what validate says before a run ------------------------------------------


def findings(code: str, action: str, **top: Any) -> list[str]:
    loop = make_loop({"a": {"action": action, "next": "done"}, "done": {"terminal": True}}, **top)
    return [d.message for d in lint_loop(loop) if d.code == code]


def test_lint_warns_where_a_value_could_be_an_option() -> None:
    [message] = findings("LL037", "git log --oneline ${context.ref}")
    assert message.startswith("${context.ref} starts an argument of `git` (line 1, column 19")
    safe = ["git log -- ${context.ref}", "echo ${context.ref}", "printf %s ${context.ref}",
            "ls ./${context.ref}", "cp ${run.dir}/a b", "tail -n ${context.ref | raw}"]  # fmt: skip
    for action in safe:
        assert findings("LL037", action) == [], action


@pytest.mark.parametrize("root", ["context.x", "captured.t.output", "env.HOME", "prev.output"])
def test_raw_warns_for_every_value_a_caller_or_program_sets(root: str) -> None:
    [message] = findings("LL032", f"echo ${{{root} | raw}}")
    assert "raw into a shell command" in message


def test_raw_of_the_loop_s_own_values_is_not_reported() -> None:
    assert findings("LL032", "echo ${loop.name | raw} ${state.name | raw}") == []


# --- quotes inside an array assignment within `$(...)` ------------------------------------------


def test_single_quote_in_an_array_inside_a_substitution_stays_data() -> None:
    # bash 5.2 misparses `'\''` inside `a=(...)` within `$(...)`; `'"'"'` it reads right
    template = 'printf \'%s\' "<$( a=(${context.v} z); printf "%s" "${a[0]}"\nprintf .)>"'
    ran = run_bash(render(template, v="'; touch PX; '"))
    assert (ran.stdout, ran.created) == ("<'; touch PX; '.>", [])


@pytest.mark.parametrize(
    "template",
    [
        "o=-e; echo $o ${context.v} | xargs -d '\\n' tar -cf x.tar --checkpoint=1 f",
        "printf -- '%b\\n' ${context.v} | xargs -d '\\n' tar -cf x.tar --checkpoint=1 f",
    ],
)
def test_text_another_word_may_change_on_its_way_to_xargs_is_refused(template: str) -> None:
    """`echo $o` with o=-e, and `printf -- '%b'`, turn the value's `\\x0a` into a newline, so a
    piece starting with `-` reached tar after all: the value ran `touch PX` (checked)."""
    value = "a\\x0a--checkpoint-action=exec=touch PX"
    assert run_bash("touch f; " + template.replace("${context.v}", f"'{value}'")).created == [
        "PX",
        "f",
        "x.tar",
    ]
    assert "a piece starting with `-` would be an option" in refused(template, v=value)
