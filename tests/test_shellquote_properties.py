"""Property: whatever a value contains, a shell action prints exactly it and runs nothing else.

Every example is rendered with `render_shell` and run by a real `bash -c` in an empty temporary
directory; the canary values try to create files there, so "nothing else ran" is checked by the
directory still being empty.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.model.errors import InterpolationError
from tests.shellquote_helpers import CANARY_VALUES, run_rendered

# fmt: off
FRAGMENTS = [
    "'", '"', "`", "$", "\\", "\n", " ", "\t", "*", "?", "[a]", "{a,b}", "~", "#", ";", "&",
    "|", ">", "<", "(", ")", "$(touch CANARY)", "`touch CANARY`", "; touch CANARY", "${x}",
    "$((1+1))", "EOF", "\nEOF\n", "!", "%", "\r", "é", "日本", "\\n", "$'", "'\\''", "-",
]
# fmt: on

# Any string bash can carry: arbitrary unicode text (no NUL, no lone surrogates) mixed with
# the fragments that matter to a shell parser.
values = st.one_of(
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
    st.lists(
        st.one_of(
            st.sampled_from(FRAGMENTS),
            st.text(
                st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=4
            ),
        ),
        max_size=12,
    ).map("".join),
)

# CI runs a fixed set of 150 examples per property; `LL_QUOTE_EXAMPLES=5000` fuzzes deeper,
# with fresh random examples each time.
_DEEP = int(os.environ.get("LL_QUOTE_EXAMPLES", "0"))
checks = settings(
    max_examples=_DEEP or 150,
    deadline=None,
    derandomize=not _DEEP,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def with_canaries(test):  # type: ignore[no-untyped-def]
    """Always run the hand-picked injection attempts in addition to the generated values."""
    for value in CANARY_VALUES:
        test = example(value)(test)
    return test


def assert_prints(template: str, value: str, expected: str) -> None:
    ran = run_rendered(template, value)
    assert ran.created == [], f"the value ran a command: {value!r} -> {ran.created}"
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == expected


@checks
@given(values)
@with_canaries
def test_unquoted_position_prints_the_value(value: str) -> None:
    assert_prints("printf '%s' ${context.v}", value, value)


@checks
@given(values)
@with_canaries
def test_double_quoted_position_prints_the_value(value: str) -> None:
    assert_prints("printf '%s' \"${context.v}\"", value, value)


@checks
@given(values)
@with_canaries
def test_single_quoted_position_prints_the_value(value: str) -> None:
    assert_prints("printf '%s' '${context.v}'", value, value)


@checks
@given(values)
@with_canaries
def test_command_substitution_inside_double_quotes_prints_the_value(value: str) -> None:
    template = "printf '%s' \"pre $(printf '%s' ${context.v}) post\""
    # $(...) drops trailing newlines: that is bash, not the quoting.
    assert_prints(template, value, "pre " + value.rstrip("\n") + " post")


@checks
@given(values)
@with_canaries
def test_ansi_c_quoted_position_prints_the_value(value: str) -> None:
    assert_prints("printf '%s' $'<${context.v}>'", value, f"<{value}>")


def _heredoc_property(template: str, value: str) -> None:
    ends_early = "EOF" in value.split("\n")
    try:
        rendered_ok = True
        ran = run_rendered(template, value)
    except InterpolationError as refused:
        rendered_ok = False
        assert ends_early, f"refused a harmless value {value!r}: {refused}"
        assert "end it early" in refused.message
    if rendered_ok:
        assert not ends_early, f"a delimiter line was let through: {value!r}"
        assert ran.created == [], f"the value ran a command: {value!r} -> {ran.created}"
        assert ran.stdout == value + "\n"


@checks
@given(values)
@with_canaries
@example("EOF")
@example("a\nEOF\ntouch CANARY")
def test_heredoc_body_prints_the_value(value: str) -> None:
    _heredoc_property("cat <<EOF\n${context.v}\nEOF\n", value)


@checks
@given(values)
@with_canaries
@example("EOF")
def test_quoted_heredoc_body_prints_the_value(value: str) -> None:
    _heredoc_property("cat <<'EOF'\n${context.v}\nEOF\n", value)


@checks
@given(values)
@with_canaries
def test_heredoc_inside_command_substitution_prints_the_value(value: str) -> None:
    template = 'x="$(cat <<EOF\n${context.v}\nEOF\n)"; printf \'%s\' "$x"'
    try:
        ran = run_rendered(template, value)
    except InterpolationError:
        # Inside $(...) bash also ends the heredoc at a line `EOF )`: lines starting with the
        # delimiter are refused there.
        assert any(line.startswith("EOF") for line in value.split("\n"))
        return
    assert ran.created == []
    assert ran.stdout == value.rstrip("\n")


@pytest.mark.parametrize("value", CANARY_VALUES)
def test_text_in_a_comment_is_refused(value: str) -> None:
    # a newline in the value would end the comment (also after a line continuation)
    for template in ["# note: ${context.v}\nprintf done", "echo a \\\n# ${context.v}\ntrue"]:
        with pytest.raises(InterpolationError, match="comment"):
            run_rendered(template, value)


# --- nested structures: interpolation never changes a command's structure ----------------------
# A generated shell program is built from printers of the value and wrappers around them
# (command substitution, subshells, groups, pipes, case, if, heredocs, comments). Its exact
# output is known for any value, so a value that changed the structure would show up as a wrong
# output, a syntax error or a canary file.

Program = tuple[str, Callable[[str], str]]

_leaves: list[Program] = [
    ("printf '%s' ${context.v}", lambda v: v),
    ("printf '%s' \"${context.v}\"", lambda v: v),
    ("printf '%s' '${context.v}'", lambda v: v),
    ("printf '%s' $'${context.v}'", lambda v: v),
    ("printf '%s' \"[${context.v}]\"x'${context.v}'", lambda v: f"[{v}]x{v}"),
]


def _wrap(inner: Program, shape: str) -> Program:
    # Commands are joined by newlines: bash 5.2 drops a `;` following a heredoc in `$(...)`.
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
        "and": (f"true && {code}", out),
        "procsub": (f"cat <( {code}\n)", out),
        "heredoc": (f"cat <<{eof}\n$( {code}\nprintf .)\n{eof}\n", lambda v: out(v) + ".\n"),
        "twice": (f"{code}\n{code}", lambda v: out(v) + out(v)),
        # Decoys: text that a naive scanner would take for the end of a construct.
        "decoy-comment": (f"# ) \" ' ` $( <<X\n{code}", out),
        "decoy-case": (f"case b in a) echo 'esac';; b) {code}\n;; esac", out),
        "decoy-quotes": (f": ')' \")\" \\) '\"' \\' $')\\''\n{code}", out),
        "decoy-arith": (f": $(( (1+2) * 3 ))\n(( 1 )) && {code}", out),
        "decoy-param": (f': "${{X:-)}}" ${{X:-\'}}\'}} "${{#X}}"\n{code}', out),
        "decoy-backtick": (f": `echo ')'`\n{code}", out),
        "quoted-heredoc-first": (
            f"cat <<'Q{eof}'\n) \" ' $(\nQ{eof}\n{code}",
            lambda v: ") \" ' $(\n" + out(v),
        ),
        "function": (f"f() {{ {code}\n}}\nf", out),
        "for": (f"for i in 1\ndo {code}\ndone", out),
        "test": (f"[[ a == a && 1 -lt 2 ]] && {code}", out),
        "herestring": (f'cat <<< "$( {code}\nprintf .)"', lambda v: out(v) + ".\n"),
    }
    return shapes[shape]


_SHAPES = ["subst", "subst-in-dq", "subshell", "group", "pipe", "if", "case", "and",
           "procsub", "heredoc", "twice", "decoy-comment", "decoy-case", "decoy-quotes",
           "decoy-arith", "decoy-param", "decoy-backtick", "quoted-heredoc-first", "function",
           "for", "test", "herestring"]  # fmt: skip

programs = st.recursive(
    st.sampled_from(_leaves),
    lambda inner: st.builds(_wrap, inner, st.sampled_from(_SHAPES)),
    max_leaves=4,
)


@checks
@given(programs, values)
@example(("printf '%s' ${context.v}", lambda v: v), "$(touch CANARY)")
def test_nested_programs_print_exactly_and_run_nothing_else(program: Program, value: str) -> None:
    template, expected = program
    try:
        ran = run_rendered(template, value)
    except InterpolationError as refused:
        try:
            run_rendered(template, "v")
        except InterpolationError:
            # The template's own refusal, whatever the value: failing closed where the safety
            # model cannot prove a place safe (a program tree-sitter-bash misreads, a function
            # whose input it cannot follow) is not a value changing the command.
            return
        # The only refusal a value can earn here: putting the heredoc's delimiter on a line.
        assert "EOF" in value and "end it early" in refused.message, refused.message
        return
    assert ran.created == [], f"{template!r} with {value!r} ran a command"
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == expected(value), template
