"""Schema diagnostics: each kind of mistake gets a stable code, a position and a useful sentence."""

from __future__ import annotations

import pytest

from engine.load.loader import check_loop_text
from engine.load.suggest import UNSUPPORTED
from tests.load_helpers import MINIMAL, one, problems


def test_missing_required_top_level_keys_are_all_reported() -> None:
    found = problems("description: nothing else\n")
    assert sorted(d.message for d in found) == [
        "the loop is missing the required key 'initial'",
        "the loop is missing the required key 'name'",
        "the loop is missing the required key 'states'",
    ]
    assert {d.code for d in found} == {"F010"}
    assert all(d.hint for d in found)


def test_missing_evaluate_type_lists_the_types() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a:
            action: "true"
            evaluate: {pattern: ok}
            on_yes: a
        """,
        "F010",
    )
    assert d.message == "states.a.evaluate is missing the required key 'type'"
    assert (d.line, d.column) == (6, 5)
    assert "output_contains" in d.hint
    assert "diff_stall" in d.hint and "assessment" in d.hint  # every type, from the schema


def test_wrong_type_names_path_expected_type_and_value() -> None:
    d = one(
        """\
        name: x
        initial: check
        states:
          check:
            action: make test
            timeout: abc
            next: check
        """,
        "F011",
    )
    assert d.message == "states.check.timeout must be a number, got string 'abc'"
    assert (d.line, d.column) == (6, 14)
    assert d.path == "states.check.timeout"


def test_boolean_written_as_yes_gets_a_hint() -> None:
    d = one(MINIMAL.replace("terminal: true", "terminal: yes"), "F011")
    assert "true or false" in d.message
    assert "true or false" in d.hint


def test_empty_states_mapping() -> None:
    d = one("name: x\ninitial: a\nstates:\n", "F011")
    assert d.message == "states must be a mapping, got nothing (null)"
    assert d.line == 3


def test_unknown_key_suggests_the_closest_key_valid_at_that_place() -> None:
    d = one(MINIMAL.replace('action: "true"', 'action: "true"\n    timout: 5'), "F012")
    assert d.message == "unknown key 'timout' in states.start"
    assert d.hint == "did you mean 'timeout'?"
    assert (d.line, d.column) == (6, 5)


def test_unknown_top_level_key_suggests_only_top_level_keys() -> None:
    d = one(MINIMAL + "defualt_timeout: 5\n", "F012")
    assert d.hint == "did you mean 'default_timeout'?"
    d = one(MINIMAL + "capture: x\n", "F012")  # a state key, not valid at the top
    assert "capture" not in d.hint.replace("'capture'", "")


def test_unknown_key_without_a_close_match_lists_the_keys() -> None:
    d = one(MINIMAL + "llm: {zzz: 1}\n", "F012")
    assert d.message == "unknown key 'zzz' in llm"
    assert "model" in d.hint and "runner" in d.hint


def test_key_of_another_evaluator_type_is_refused_with_its_allowed_keys() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a:
            action: "true"
            evaluate: {type: exit_code, pattern: ok}
            on_yes: a
        """,
        "F012",
    )
    assert (
        d.message
        == "'pattern' does not belong in an evaluate of type exit_code (states.a.evaluate)"
    )
    assert d.hint == "keys allowed here: type"


def test_bad_enum_value_lists_allowed_values_and_suggests() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a:
            action: "true"
            evaluate: {type: output_numeric, operator: gte, target: 3}
            on_yes: a
        """,
        "F014",
    )
    assert "must be one of eq, ne, lt, le, gt, ge; got string 'gte'" in d.message
    assert d.hint == "did you mean 'ge'?"
    assert (d.line, d.column) == (6, 48)


def test_out_of_range_values() -> None:
    found = problems(MINIMAL + "max_steps: 0\ntimeout: -1\nmax_cost_usd: 0\n")
    assert [(d.code, d.message) for d in found] == [
        ("F015", "max_steps must be at least 1, got 0"),
        ("F015", "timeout must be greater than 0, got -1"),
        ("F015", "max_cost_usd must be greater than 0, got 0"),
    ]


def test_a_timeout_too_long_to_measure_is_refused_where_it_is_written() -> None:
    """`timeout: 1e308` passed the schema and crashed the run with an internal OverflowError
    (the action runner's poll wait became an infinite number of milliseconds)."""
    found = problems(MINIMAL + "default_timeout: 31536000\ntimeout: 1e308\n")
    assert [(d.code, d.message, d.line) for d in found] == [
        ("F015", "timeout must be at most 31536000, got 1e+308", 10)
    ]
    assert "365 days" in found[0].hint


def test_min_confidence_is_a_probability() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a:
            action: cat out
            evaluate: {type: llm_structured, prompt: ok?, min_confidence: 1.5}
            on_yes: a
        """,
        "F015",
    )
    assert d.message == "states.a.evaluate.min_confidence must be at most 1, got 1.5"


def test_bad_names_are_format_errors() -> None:
    found = problems(MINIMAL + "context: {2fast: 1}\n")
    assert [(d.code, d.line) for d in found] == [("F016", 9)]
    assert "letters, digits and _" in found[0].hint


def test_blank_suppression_reason_is_refused() -> None:
    d = one(MINIMAL + 'lint: {suppress: [{code: scope, reason: "  "}]}\n', "F016")
    assert d.path == "lint.suppress[0].reason"
    assert "why" in d.hint


def test_suppression_without_reason_is_refused() -> None:
    d = one(MINIMAL + "lint: {suppress: [{code: scope}]}\n", "F010")
    assert d.message == "lint.suppress[0] is missing the required key 'reason'"


def test_invalid_regex_is_reported_at_the_pattern() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a:
            action: "true"
            evaluate: {type: output_contains, pattern: "(unclosed"}
            on_yes: a
        """,
        "F016",
    )
    assert "not a valid regular expression" in d.message
    assert d.line == 6


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(?:a{3000}){3000}", "its counted repeats spell out more than 50,000 characters"),
        ("a{99999999999}", "the repetition number is too large"),
        ("(" * 5000 + ")" * 5000, "it nests too deeply"),
    ],
)
def test_a_regex_too_large_to_compile_is_refused_at_the_pattern(pattern: str, reason: str) -> None:
    """Compiled with the `regex` library, (?:a{3000}){3000} took 2.4 GB and four seconds at
    load (more nested, the machine's memory); with `re`, a{99999999999} and 5,000 nested groups
    raised OverflowError and RecursionError out of the loader."""
    d = one(
        f"""\
        name: x
        initial: a
        states:
          a:
            action: "true"
            evaluate: {{type: output_contains, pattern: '{pattern}'}}
            on_yes: a
        """,
        "F016",
    )
    assert "not a valid regular expression" in d.message
    assert reason in d.message
    assert d.line == 6


def test_duplicate_classify_verdicts() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a:
            action: "true"
            evaluate: {type: classify, verdicts: [red, red]}
            on_red: a
        """,
        "F018",
    )
    assert "more than once" in d.message


def test_route_table_and_shorthands_do_not_mix() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a:
            action: "true"
            route: {"yes": a, _: a}
            on_no: a
        """,
        "F017",
    )
    assert d.message.startswith("states.a.on_no is not allowed here: a route table")
    assert "route: {no: STATE}" in d.hint
    assert (d.line, d.column) == (7, 5)


def test_action_and_subloop_do_not_mix() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a: {action: "true", loop: child, on_yes: a}
        """,
        "F017",
    )
    assert "an action or a sub-loop, not both" in d.message


def test_a_subloop_state_takes_no_evaluate() -> None:
    """The child's outcome is the verdict and the evaluator never ran: lint and simulate took
    its verdicts (`target`...), and the run ended on an unrouted `yes`, or passed a check the
    child's output failed."""
    d = one(
        """\
        name: x
        initial: a
        states:
          a:
            loop: child
            evaluate: {type: output_contains, pattern: READY}
            on_yes: a
        """,
        "F017",
    )
    assert "an evaluate block would never run" in d.message


def test_with_needs_loop() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a: {action: "true", with: {x: 1}, next: a}
        """,
        "F017",
    )
    assert d.message == "states.a.with needs loop in the same state"
    assert "sub-loop" in d.hint


def test_max_retries_needs_somewhere_to_go() -> None:
    d = one(MINIMAL.replace("next: done", "next: done\n    max_retries: 2"), "F017")
    assert "on_retry_exhausted" in d.message


def test_failure_only_on_terminal_states() -> None:
    d = one(MINIMAL.replace("next: done", "next: done\n    failure: true"), "F010")
    assert "terminal" in d.message
    assert "failure" in d.hint


def test_llm_judge_needs_prompt_or_dimensions() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a:
            action: cat out
            evaluate: {type: llm_structured, samples: 3}
            on_yes: a
        """,
        "F010",
    )
    assert d.message == "states.a.evaluate needs prompt or dimensions"


@pytest.mark.parametrize(("place", "key"), sorted(UNSUPPORTED))
def test_every_reference_key_gets_a_not_supported_hint(place: str, key: str) -> None:
    snippets = {
        "loop": MINIMAL + f"{key}: 1\n",
        "state": MINIMAL.replace("next: done", f"next: done\n    {key}: 1"),
        "evaluate": MINIMAL.replace(
            "next: done", f"next: done\n    evaluate: {{type: llm_structured, prompt: p, {key}: 1}}"
        ),
        "expectation": MINIMAL.replace(
            "next: done",
            "next: done\n    evaluate: {type: assessment, expectations: "
            f"[{{type: script, command: 'true', {key}: 1}}]}}",
        ),
        "judge": MINIMAL.replace(
            "next: done",
            "next: done\n    evaluate: {type: assessment, judges: "
            f"[{{name: j, check: x, {key}: 1}}]}}",
        ),
    }
    d = one(snippets[place], "F013")
    assert d.message == UNSUPPORTED[(place, key)].message
    assert d.hint == UNSUPPORTED[(place, key)].hint
    assert d.line > 0 and d.column > 0


def test_max_iterations_explains_what_a_step_is() -> None:
    d = one(MINIMAL + "max_iterations: 5\n", "F013")
    assert d.message == "max_iterations is not supported: use max_steps"
    assert "non-terminal states" in d.hint
    assert (d.line, d.column) == (9, 1)


def test_on_success_points_to_on_yes() -> None:
    d = one(MINIMAL.replace("next: done", "on_success: done"), "F013")
    assert "use on_yes" in d.message


def test_all_errors_are_reported_sorted_by_line() -> None:
    found = problems(
        """\
        name: many
        initial: a
        max_iterations: 3
        states:
          a:
            action: "true"
            timeout: soon
            evaluator: exit_code
            on_yes: b
          b:
            terminal: maybe
        flow: [a, b]
        """
    )
    assert [(d.code, d.line) for d in found] == [
        ("F013", 3),
        ("F011", 7),
        ("F013", 8),
        ("F011", 11),
        ("F013", 12),
    ]
    assert all(d.file == "loop.yaml" and d.line and d.column for d in found)


def test_a_route_inside_evaluate_is_pointed_one_level_up() -> None:
    d = one(
        """\
        name: x
        initial: a
        states:
          a:
            action: "true"
            evaluate:
              type: exit_code
              on_yes: a
        """,
        "F012",
    )
    assert d.message == "unknown key 'on_yes' in states.a.evaluate"
    assert d.hint == "'on_yes' belongs to the state: move it out of evaluate: one level up"
    assert (d.line, d.column) == (8, 7)


def test_an_evaluator_field_beside_evaluate_is_pointed_into_it() -> None:
    d = one(MINIMAL.replace('action: "true"', 'action: "true"\n    negate: true'), "F012")
    assert d.hint == "'negate' belongs in the state's evaluate: block"


def test_a_state_key_at_the_top_is_pointed_into_a_state() -> None:
    d = one(MINIMAL + "action: make\n", "F012")
    assert d.hint == "'action' belongs inside a state: indent it under states: NAME:"


def test_evaluate_written_as_a_word_gets_the_mapping_form() -> None:
    d = one(MINIMAL.replace("next: done", "evaluate: exit_code\n    on_yes: done"), "F011")
    assert d.message == "states.start.evaluate must be a mapping, got string 'exit_code'"
    assert d.hint == "write evaluate: {type: exit_code}"


def test_states_written_as_a_list_gets_a_hint() -> None:
    d = one("name: x\ninitial: a\nstates:\n  - name: a\n    action: t\n", "F011")
    assert d.message == "states must be a mapping, got a list"
    assert "not a list" in d.hint


def test_a_quoted_cost_is_not_called_seconds() -> None:
    d = one(MINIMAL + 'max_cost_usd: "2"\n', "F011")
    assert d.hint == "write a plain number without quotes"


@pytest.mark.parametrize("spelling", ["on-yes", "onYes", "On_Yes", "ON_YES"])
def test_a_route_in_another_spelling_gets_the_snake_case_route(spelling: str) -> None:
    d = one(MINIMAL.replace("next: done", f"{spelling}: done"), "F012")
    assert d.message == f"unknown key '{spelling}' in states.start"
    assert d.hint == "did you mean 'on_yes'? routes are written on_<verdict>, in lowercase with _"


def test_an_action_written_as_a_list_gets_the_block_form() -> None:
    d = one(MINIMAL.replace('action: "true"', "action:\n      - make\n      - make test"), "F011")
    assert d.message == "states.start.action must be a string, got a list"
    assert d.hint == "write the commands as one text block: action: |, then one command per line"


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (
            '{type: integer, default: "two"}',
            "the default of parameter 'n' of loop 'minimal' must be an integer, got \"two\"",
        ),
        (
            "{type: string, enum: [low, high], default: medium}",
            "the default of parameter 'n' of loop 'minimal' must be one of \"low\", \"high\", "
            'got "medium"',
        ),
    ],
)
def test_a_default_the_parameter_would_refuse_is_refused(declared: str, message: str) -> None:
    """A caller's --context n=two is refused, so the default must fit the same rules."""
    d = one(MINIMAL + f"parameters:\n  n: {declared}\n", "F014")
    assert (d.message, d.path, d.line) == (message, "parameters.n.default", 10)
    assert d.hint == "write a default the parameter accepts, or change its type or enum"
    loop, _, found = check_loop_text(MINIMAL + 'parameters:\n  n: {type: integer, default: "3"}\n')
    assert loop is not None and not found


@pytest.mark.parametrize(
    "declared",
    ["{type: null, default: low}", "{type: [a], default: low}", "{enum: 5, default: low}"],
)
def test_a_default_beside_a_type_or_enum_the_schema_refuses_is_not_a_crash(declared: str) -> None:
    """The default's check ran on a type or enum the schema had refused: `type: null` was a
    KeyError out of the loader (the fuzzer's find)."""
    loop, _, found = check_loop_text(MINIMAL + f"parameters:\n  n: {declared}\n")
    paths = [d.path for d in found]
    assert loop is None and paths in (["parameters.n.type"], ["parameters.n.enum"]), paths


def test_a_misspelt_required_key_is_told_once_as_the_unknown_key() -> None:
    """`patern:` is the mistake; "missing the required key 'pattern'" above it would be the one
    line a refused run or a LoadError's message shows, without the "did you mean"."""
    text = MINIMAL.replace(
        "next: done", "evaluate: {type: output_contains, patern: ok}\n    on_yes: done"
    )
    found = problems(text)
    assert [(d.code, d.message, d.hint) for d in found] == [
        ("F012", "unknown key 'patern' in states.start.evaluate", "did you mean 'pattern'?")
    ]
    found = problems(text.replace("patern: ok", "negate: true"))  # nothing misspelt: still said
    assert [d.code for d in found] == ["F010"]
