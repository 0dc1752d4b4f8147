"""Property: whatever a value contains, a shell action prints exactly it and runs nothing else.

Every example is rendered with `render_shell` and run by a real `bash -c` in an empty temporary
directory; the canary values try to create files there, so "nothing else ran" is checked by the
directory still being empty.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.errors import InterpolationError
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

checks = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
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
        assert "EOF" in value.split("\n")
        return
    assert ran.created == []
    assert ran.stdout == value.rstrip("\n")


@pytest.mark.parametrize("value", CANARY_VALUES)
def test_value_in_a_comment_runs_nothing(value: str) -> None:
    ran = run_rendered("# note: ${context.v}\nprintf done", value)
    assert ran.created == []
    assert ran.stdout == "done"
