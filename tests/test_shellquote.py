"""Context-aware shell quoting, one rule per test, each checked by running real bash.

A value is quoted for exactly the position it sits in; where no quoting is provably safe the
render is refused with an InterpolationError that says why.
"""

from __future__ import annotations

import pytest

from engine.model.errors import InterpolationError
from engine.shell.interpolate import render_shell
from engine.shell.quoting import Context, is_safe, quote, shell_quote
from tests.shellquote_helpers import run_bash, run_rendered

NASTY = 'it\'s "$(touch CANARY)" `touch CANARY` \\ $HOME *'


def refusal(template: str, value: object) -> str:
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": value}})
    assert caught.value.expression == "context.v"
    return caught.value.reason


# --- the quoting per position ----------------------------------------------------------------


def test_unquoted_value_becomes_one_single_quoted_word() -> None:
    assert render_shell("echo ${context.v}", {"context": {"v": "a b"}}) == "echo 'a b'"
    ran = run_rendered("printf '[%s]' ${context.v}", "a  b *")
    assert ran.stdout == "[a  b *]"


def test_empty_unquoted_value_is_still_one_argument() -> None:
    assert render_shell("f ${context.v}", {"context": {"v": ""}}) == "f ''"
    assert run_rendered("printf '[%s]' ${context.v} x", "").stdout == "[][x]"


def test_double_quoted_value_escapes_backslash_quote_dollar_backtick() -> None:
    rendered = render_shell('echo "${context.v}"', {"context": {"v": 'a\\"$`b'}})
    assert rendered == 'echo "a\\\\\\"\\$\\`b"'
    assert run_rendered('printf %s "<${context.v}>"', NASTY).stdout == f"<{NASTY}>"


def test_single_quoted_value_closes_and_reopens_around_quotes() -> None:
    assert render_shell("echo '${context.v}'", {"context": {"v": "it's"}}) == "echo 'it'\"'\"'s'"
    assert run_rendered("printf %s 'x${context.v}y'", NASTY).stdout == f"x{NASTY}y"


def test_integers_go_in_bare_so_arithmetic_works() -> None:
    ns = {"context": {"v": 41}}
    assert run_bash(render_shell("echo $(( ${context.v} + 1 ))", ns)).stdout == "42\n"
    assert run_bash(render_shell("(( ${context.v} > 3 )) && echo big", ns)).stdout == "big\n"
    # text is refused in arithmetic, however plain it looks: a name would be evaluated too
    assert "arithmetic" in refusal("echo $(( ${context.v} + 1 ))", "41")
    assert is_safe("a-b_c.d/e:f=g@h%i+j,k")
    assert not is_safe("") and not is_safe("a b") and not is_safe("é")


def test_non_numbers_in_arithmetic_are_refused() -> None:
    assert "arithmetic" in refusal("echo $(( ${context.v} + 1 ))", "a[$(touch CANARY)]")


@pytest.mark.parametrize(
    "template",
    [
        "[[ ${context.v} -gt 3 ]] && echo big",
        '[[ "${context.v}" -eq 3 ]]',
        "[[ '${context.v}' -lt 3 ]]",
        "let x=${context.v}",
        "declare -i n=${context.v}",
        "arr[${context.v}]=1",
        'arr["${context.v}"]=1',
    ],
)
def test_positions_bash_evaluates_as_arithmetic_are_restricted(template: str) -> None:
    # Bash runs `cmd` in `a[$(cmd)]` here even from a quoted string, so only integers pass.
    assert "arithmetic" in refusal(template, "a[$(touch CANARY)]")
    assert "arithmetic" in refusal(template, "5")
    assert run_bash(render_shell(template, {"context": {"v": 5}})).created == []


def test_string_comparison_in_double_brackets_takes_any_value() -> None:
    template = '[[ "${context.v}" == *passed* ]] && echo ok'
    assert run_rendered(template, "3 passed; $(touch CANARY)").stdout == "ok\n"


def test_ansi_c_string_escapes_backslash_and_quote() -> None:
    assert run_rendered("printf %s $'${context.v}'", "a\\nb'c").stdout == "a\\nb'c"


def test_locale_string_is_double_quoted() -> None:
    assert run_rendered('printf %s $"${context.v}"', NASTY).stdout == NASTY


def test_text_in_a_comment_is_refused_an_integer_is_not() -> None:
    assert "comment" in refusal("# ${context.v}\nprintf done", "x\ntouch CANARY")
    assert "comment" in refusal("echo building \\\n# ticket: ${context.v}\ntrue", "x")
    ran = run_bash(render_shell("# ${context.v}\nprintf done", {"context": {"v": 7}}))
    assert (ran.stdout, ran.created) == ("done", [])


def test_hash_inside_a_word_is_not_a_comment() -> None:
    assert run_rendered("printf %s a#${context.v}", "b c").stdout == "a#b c"


# --- nesting ---------------------------------------------------------------------------------


def test_command_substitution_is_a_new_context_even_inside_double_quotes() -> None:
    template = "printf %s \"[$(printf %s '${context.v}')]\""
    assert run_rendered(template, NASTY).stdout == f"[{NASTY}]"


def test_nested_command_substitutions() -> None:
    template = 'printf %s "$(echo "$(printf %s ${context.v})")"'
    assert run_rendered(template, NASTY).stdout == NASTY


def test_case_patterns_inside_command_substitution_do_not_close_it() -> None:
    template = 'x=$(case a in a) printf %s ${context.v};; esac); printf %s "$x"'
    assert run_rendered(template, NASTY).stdout == NASTY


def test_process_substitution_and_subshells() -> None:
    assert run_rendered("cat <(printf %s ${context.v})", NASTY).stdout == NASTY
    assert run_rendered('(printf %s "${context.v}")', NASTY).stdout == NASTY


def test_backticks_take_only_plain_values() -> None:
    assert run_rendered("echo `echo ${context.v}`", "ok-1").stdout == "ok-1\n"
    assert "use $(...) instead of backticks" in refusal("echo `echo ${context.v}`", "a b")
    assert "backticks" in refusal('echo "`echo "${context.v}"`"', "$(touch CANARY)")


def test_inside_a_bash_expansion_only_integers() -> None:
    ns = {"context": {"v": 12}}
    assert run_bash(render_shell("printf %s ${X:-${context.v}}", ns)).stdout == "12"
    assert "assign the value to a variable" in refusal('echo "${X:-${context.v}}"', "a b")
    assert "assign the value to a variable" in refusal('echo "${X:-${context.v}}"', "dflt")


def test_backslash_before_an_expression_is_refused() -> None:
    for template in ["echo \\${context.v}", 'echo "\\${context.v}"']:
        assert "backslash" in refusal(template, "$x")
    refusal("cat <<E\n\\${context.v}\nE", "$x")  # the grammar cannot place it: refused


def test_backslash_escaped_quotes_do_not_confuse_the_scanner() -> None:
    template = "printf %s \\' ${context.v} \"\\\"\" '\\'"
    assert run_rendered(template, NASTY).stdout == f"'{NASTY}\"\\"


# --- here-documents --------------------------------------------------------------------------


def test_unquoted_heredoc_escapes_expansions_but_keeps_quotes() -> None:
    rendered = render_shell("cat <<EOF\n${context.v}\nEOF", {"context": {"v": "'\"$x`\\"}})
    assert rendered == "cat <<EOF\n'\"\\$x\\`\\\\\nEOF"
    assert run_rendered("cat <<EOF\n<${context.v}>\nEOF\n", NASTY).stdout == f"<{NASTY}>\n"


@pytest.mark.parametrize("operator", ["<<'EOF'", '<<"EOF"', "<<\\EOF", "<<E'O'F"])
def test_quoted_heredoc_inserts_verbatim(operator: str) -> None:
    assert run_rendered(f"cat {operator}\n${{context.v}}\nEOF\n", NASTY).stdout == NASTY + "\n"


@pytest.mark.parametrize("operator", ["<<EOF", "<<'EOF'", "<<-EOF", "<< EOF"])
def test_value_with_the_delimiter_line_is_refused(operator: str) -> None:
    assert "end it early" in refusal(f"cat {operator}\n${{context.v}}\nEOF\n", "x\nEOF\ny")


def test_value_that_completes_a_delimiter_line_is_refused() -> None:
    assert "end it early" in refusal("cat <<EOF\n${context.v}OF\nEOF\n", "\nE")
    # tree-sitter ends the body at `EOF${...}` where bash does not: refused, never guessed
    refusal("cat <<EOF\nEOF${context.v}\nEOF\n", "!")


def test_delimiter_after_a_line_continuation_is_refused() -> None:
    # `a\` + newline + `EOF` is the logical line `aEOF` in bash: the body goes on, where
    # tree-sitter ends it. The value would be quoted for the wrong place: refused.
    for template in ["cat <<EOF\na\\\nEOF\n${context.v}\nEOF\n",
                     "cat <<EOF\na\\\nEOF\necho ${context.v}\nEOF\n"]:  # fmt: skip
        assert "backslash" in refusal(template, NASTY)


def test_dash_heredoc_strips_template_tabs_but_refuses_value_tabs() -> None:
    template = "cat <<-EOF\n\tv: ${context.v}\n\tEOF\n"
    assert run_rendered(template, "x y").stdout == "v: x y\n"
    assert "<<- would strip" in refusal(template, "a\n\tb")
    # tree-sitter does not see `${...}` right after a leading tab: refused, never guessed
    refusal("cat <<-EOF\n\t${context.v}\n\tEOF\n", "x y")


def test_two_heredocs_on_one_line_are_beyond_the_grammar() -> None:
    template = "cat <<A; cat <<'B'\n${context.v}\nA\n${context.v}\nB\n"
    assert "cannot parse" in refusal(template, NASTY)


def test_command_substitution_inside_a_heredoc_body() -> None:
    template = "cat <<EOF\n[$(printf %s ${context.v})]\nEOF\n"
    assert run_rendered(template, NASTY).stdout == f"[{NASTY}]\n"


def test_heredoc_delimiter_cannot_be_interpolated() -> None:
    refusal("cat <<${context.v}\nx\nEND\n", "END")
    refusal("cat <<${context.v}\nx\nEND\n", 5)


def test_here_string_is_an_ordinary_word() -> None:
    assert run_rendered("cat <<< ${context.v}", NASTY).stdout == NASTY + "\n"


# --- opt-outs and impossible values ----------------------------------------------------------


def test_raw_opts_out_of_quoting() -> None:
    ns = {"context": {"cmd": "printf a; printf b"}}
    assert render_shell("${context.cmd | raw}", ns) == "printf a; printf b"
    assert run_bash(render_shell("${context.cmd | raw}", ns)).stdout == "ab"


def test_shell_filter_value_is_not_quoted_twice_unquoted_but_is_literal_in_quotes() -> None:
    assert run_rendered("printf %s ${context.v:shell}", NASTY).stdout == NASTY
    assert run_rendered('printf %s "${context.v | shell}"', "a b").stdout == "'a b'"


def test_nul_cannot_reach_bash() -> None:
    assert "NUL" in refusal("echo ${context.v}", "a\x00b")


def test_non_string_values_are_quoted_as_their_json() -> None:
    ns = {"context": {"v": {"k": "it's $(x)"}}}
    assert run_bash(render_shell("printf %s ${context.v}", ns)).stdout == '{"k": "it\'s $(x)"}'


def test_bash_expansions_in_shell_actions_are_untouched() -> None:
    template = 'a=(1 2); echo "${#a[@]} ${HOME:+set} ${x:-d}" $${context.v}'
    assert render_shell(template, {}) == template.replace("$${", "${")


# --- the grammar directly -------------------------------------------------------------------


def test_layout_reports_each_hole_context_and_role() -> None:
    from engine.shell.commands import Role
    from engine.shell.grammar import layout

    literals = ["a ", ' "', "\" '", "' $'", "' $((", ")); eval ", "\n# ", "\ncat <<E\n", "\nE\n"]
    found = [(p.context, p.role) for p in layout(literals).positions]
    assert found == [
        (Context.UNQUOTED, Role.VALUE),
        (Context.DOUBLE, Role.VALUE),
        (Context.SINGLE, Role.VALUE),
        (Context.ANSI_C, Role.VALUE),
        (Context.UNQUOTED, Role.ARITHMETIC),
        (Context.UNQUOTED, Role.CODE),
        (Context.UNQUOTED, Role.COMMENT),
        (Context.HEREDOC, Role.VALUE),
    ]


def test_quote_and_shell_quote_are_pure_functions() -> None:
    assert quote("it's", Context.SINGLE) == "it'\"'\"'s"
    assert quote("", Context.UNQUOTED) == "''"
    assert shell_quote("plain") == "plain"
    assert shell_quote("a'b") == "'a'\\''b'"


def test_backslash_newline_inside_command_substitution_in_a_heredoc_survives() -> None:
    # Bash joins backslash-newlines of an unquoted heredoc body before it parses the `$(...)`.
    for template in [
        "cat <<EOF\n$(printf %s ${context.v})\nEOF\n",
        "cat <<EOF\n$(printf %s '${context.v}'\n)\nEOF\n",
    ]:
        for value in ["a\\\nb", "a\\", "it's\\\n'"]:
            assert run_rendered(template, value).stdout == value + "\n"


def test_esac_as_an_argument_is_refused_where_the_grammar_misreads_it() -> None:
    # tree-sitter ends the `case` at `echo esac`; bash reads `esac` as an argument. Rendering
    # would quote the value for the wrong place (this ran a canary before the check).
    template = 'printf %s "$(case b in a) echo esac;; b) printf %s "${context.v}";; esac)"'
    assert "esac" in refusal(template, "$(touch CANARY)")
    ok = 'printf %s "$(case b in a) echo x;; b) printf %s "${context.v}";; esac)"'
    assert run_rendered(ok, NASTY).stdout == NASTY


def test_heredoc_body_starts_after_the_line_not_inside_a_command_substitution() -> None:
    # Bash reads the body after the newline ending the `cat <<EOF` line, even when a `$(...)`
    # on that line spans lines itself.
    template = (
        'cat <<EOF; x=$(printf a\nprintf b); printf \'%s\' "[$x]" "${context.v}"\n'
        "${context.v}\nEOF\n"
    )
    refusal(template, NASTY)  # beyond the grammar: refused, never guessed


@pytest.mark.parametrize(
    "template",
    [
        'x=$(cat <<EOF\n${context.v}\nEOF\n); printf %s "$x"',
        'x="$(cat <<EOF\n${context.v}\nEOF\n)"; printf %s "$x"',
        "cat <(cat <<'EOF'\n${context.v}\nEOF\n)",
    ],
)
def test_inside_a_substitution_a_line_starting_with_the_delimiter_is_refused(
    template: str,
) -> None:
    # Bash 5 ends a heredoc inside $(...) at `EOF)` or `EOF )` and runs the rest of the line.
    for value in ["EOF) ; touch CANARY", "EOF\t)", "a\nEOF )", "EOF"]:
        assert "end it early" in refusal(template, value)
    assert run_rendered(template, "x EOF) ; touch CANARY").created == []


def test_heredoc_closed_by_delimiter_and_parenthesis_ends_where_bash_ends_it() -> None:
    template = "x=$(cat <<EOF\nhi\nEOF)\nprintf '%s' \"[$x]${context.v}\""
    assert run_rendered(template, NASTY).stdout == f"[hi]{NASTY}"
    template = "cat <(cat <<EOF\nhi\nEOF )\nprintf '%s' \"${context.v}\""
    assert run_rendered(template, NASTY).stdout == f"hi\n{NASTY}"
