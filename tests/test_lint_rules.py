"""Each lint rule on loops built in Python: the mistake it catches, and silence on a good loop.
(The YAML examples of docs/lint-rules.md are checked by tests/test_lint_docs.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine.graph.simulate import SCENARIOS, simulate
from engine.load.loader import check_loop_text
from engine.model.loop import LlmConfig, Loop
from engine.shell.interpolate import FIXED_KEYS
from lint import RULES, lint_loop
from tests.lint_helpers import make_loop, random_loops
from tests.properties import examples

GOOD: dict[str, dict[str, Any]] = {
    "check": {
        "action": "make test",
        "on_yes": "done",
        "on_no": "fix",
        "on_error": "failed",
        "max_retries": 3,
        "on_retry_exhausted": "failed",
    },
    "fix": {"action": "make fix", "next": "check", "on_error": "failed"},
    "done": {"terminal": True},
    "failed": {"terminal": True, "failure": True},
}


def codes(loop: Loop, **kw: Any) -> list[str]:
    return [d.code for d in lint_loop(loop, **kw)]


def loop_of(states: dict[str, dict[str, Any]], **top: Any) -> Loop:
    top.setdefault("scope", ["."])
    return make_loop(states, **top)


def test_a_good_loop_is_clean() -> None:
    assert codes(loop_of(GOOD)) == []


def test_every_rule_has_a_code_severity_name_and_summary() -> None:
    for code, item in RULES.items():
        assert item.code == code
        assert item.severity in ("error", "warning", "info")
        assert item.name and item.summary.endswith(".")


def test_unknown_targets_everywhere_with_did_you_mean() -> None:
    loop = loop_of(
        {
            "check": {"action": "x", "on_yes": "dnoe", "on_no": "done", "on_error": "done"},
            "kid": {
                "loop": "child",
                "on_yes": "done",
                "on_no": "done",
                "on_error": "done",
                "on_terminal": {"blocked": "escalate"},
                "max_retries": 2,
                "on_retry_exhausted": "nope",
            },
            "done": {"terminal": True},
        },
        on_max_steps="summary",
    )
    found = [d for d in lint_loop(loop) if d.code == "LL001"]
    messages = " | ".join(d.message for d in found)
    assert len(found) == 4
    assert "'dnoe', which does not exist (did you mean 'done'?)" in messages
    assert {d.path for d in found} == {
        "on_max_steps",
        "states.check.on_yes",
        "states.kid.on_terminal.blocked",
        "states.kid.on_retry_exhausted",
    }
    assert "LL001" in codes(loop_of(GOOD, initial="chekc"))


def test_a_top_level_current_is_not_offered_as_a_fix() -> None:
    """`on_max_steps: $current` was refused as a state "which does not exist" with the hint
    "name one of the states ... (or `$current`)": the hint offered what it refused."""
    for key in ("on_max_steps", "initial"):
        found = [d for d in lint_loop(loop_of(GOOD, **{key: "$current"})) if d.code == "LL001"]
        assert [d.path for d in found] == [key]
        assert "cannot be `$current`" in found[0].message
        assert "$current" not in (found[0].hint or "")


def test_a_model_or_runner_nothing_reads_is_reported() -> None:
    """`model:` and `runner:` on a sub-loop or shell state were accepted and did nothing."""
    kid = {"loop": "child", "model": "m", "runner": "cmd:x", "on_yes": "done", "on_no": "done"}
    shell = {"action": "true", "model": "m", "next": "done"}
    judged = {
        "action": "cat out",
        "model": "m",
        "evaluate": {"type": "llm_structured", "prompt": "ok? quote the evidence"},
        "on_yes": "done",
        "on_no": "done",
        "on_error": "done",
    }
    prompt = {"action": "hi", "action_type": "prompt", "model": "m", "runner": "cmd:x"}
    loop = loop_of(
        {
            "kid": {**kid, "on_error": "shell"},
            "shell": {**shell, "next": "judged"},
            "judged": {**judged, "on_yes": "prompt"},
            "prompt": {**prompt, "timeout": 5, "next": "done"},
            "done": {"terminal": True},
        },
        initial="kid",
    )
    found = [d.path for d in lint_loop(loop) if d.code == "LL016"]
    # the prompt state's model is inert too: its cmd: runner is given no model (next test)
    assert found == [
        "states.kid.runner",
        "states.kid.model",
        "states.shell.model",
        "states.prompt.model",
    ]


def test_a_model_for_a_prompt_an_agent_cli_runs_is_reported() -> None:
    """`model:` on a prompt state whose runner is an agent CLI (`cmd:...`, the state's own or
    the loop's `llm.runner`) was accepted and did nothing: the command line gets the prompt on
    stdin and no model. With the API runner, or with an LLM judge in the state, it is read."""
    prompt = {"action": "hi", "action_type": "prompt", "model": "m", "timeout": 5, "next": "done"}
    states = {"draft": prompt, "done": {"terminal": True}}
    own = [d for d in lint_loop(loop_of({**states, "draft": {**prompt, "runner": "cmd:x"}}))]
    [found] = [d for d in own if d.code == "LL016"]
    assert found.path == "states.draft.model"
    assert "cmd:x" in found.message and "--model" in found.hint
    loop_wide = loop_of(states, llm=LlmConfig(runner="cmd:claude -p"))
    assert [d.path for d in lint_loop(loop_wide) if d.code == "LL016"] == ["states.draft.model"]
    api = {**prompt, "runner": "anthropic"}
    assert "LL016" not in codes(loop_of({**states, "draft": api}, llm=LlmConfig(runner="cmd:x")))
    judged = {
        **prompt,
        "runner": "cmd:x",
        "evaluate": {"type": "llm_structured", "prompt": "ok? quote the evidence"},
        "on_yes": "done",
        "on_no": "done",
        "on_error": "done",
    }
    del judged["next"]
    assert "LL016" not in codes(loop_of({**states, "draft": judged}))


def test_unreachable_state() -> None:
    loop = loop_of({**GOOD, "orphan": {"action": "x", "next": "done"}})
    found = [d for d in lint_loop(loop) if d.code == "LL002"]
    assert [d.path for d in found] == ["states.orphan"]


def test_on_max_steps_state_is_reachable_but_not_a_trap() -> None:
    loop = loop_of({**GOOD, "report": {"action": "echo out of budget"}}, on_max_steps="report")
    assert codes(loop) == []


def test_trap_state_and_inescapable_cycle() -> None:
    loop = loop_of(
        {
            "start": {"action": "x", "on_yes": "done", "on_no": "spin", "on_error": "sink"},
            "spin": {"action": "x", "on_yes": "$current", "on_no": "$current", "on_error": "spin"},
            "sink": {"action": "x", "next": "spin", "on_error": "spin"},
            "done": {"terminal": True},
        }
    )
    found = {d.code: d for d in lint_loop(loop)}
    assert found["LL004"].path == "states.spin"
    assert "routes every verdict back to itself" in found["LL004"].message
    assert found["LL003"].path == "states.sink"


def test_no_success_terminal_reachable() -> None:
    loop = loop_of(
        {
            "check": {"action": "x", "on_yes": "failed", "on_no": "failed", "on_error": "failed"},
            "done": {"terminal": True},
            "failed": {"terminal": True, "failure": True},
        }
    )
    assert sorted(codes(loop)) == ["LL002", "LL005"]


def test_max_steps_shorter_than_shortest_success_path() -> None:
    chain = {f"s{i}": {"action": "x", "next": f"s{i + 1}", "on_error": "failed"} for i in range(4)}
    chain["s4"] = {"terminal": True}
    chain["failed"] = {"terminal": True, "failure": True}
    assert codes(loop_of(chain, max_steps=4)) == []
    found = [d for d in lint_loop(loop_of(chain, max_steps=3)) if d.code == "LL006"]
    assert "max_steps is 3 but the shortest path from 's0' to a success terminal takes 4" in (
        found[0].message
    )


def test_unrouted_verdicts_come_from_closed_sets_and_fallbacks() -> None:
    judged = {
        "judge": {
            "action": "x",
            "evaluate": {"type": "llm_structured", "prompt": "Quote verbatim evidence."},
            "on_yes": "done",
            "on_no": "judge",
            "on_error": "done",
        },
        "done": {"terminal": True},
    }
    assert "LL007" not in codes(loop_of(judged))  # partial/blocked → on_no, cannot_judge → on_error
    del judged["judge"]["on_no"]
    found = [d for d in lint_loop(loop_of(judged)) if d.code == "LL007"]
    assert "'blocked', 'no' and 'partial'" in found[0].message
    conv = {
        "measure": {
            "action": "x",
            "evaluate": {"type": "convergence", "target": 0},
            "on_target": "done",
            "on_progress": "measure",
            "on_error": "done",
        },
        "done": {"terminal": True},
    }
    assert "'stall'" in next(d.message for d in lint_loop(loop_of(conv)) if d.code == "LL007")


def test_unrouted_error_is_only_info() -> None:
    loop = loop_of({"run": {"action": "x", "next": "done"}, "done": {"terminal": True}})
    found = lint_loop(loop)
    assert [(d.code, d.severity) for d in found] == [("LL008", "info")]


def test_retries_never_counted() -> None:
    """In check → fix → check the retry is the entry into check, so max_retries on fix is dead."""
    misplaced = {**GOOD, "fix": {**GOOD["fix"], "max_retries": 2, "on_retry_exhausted": "failed"}}
    assert codes(loop_of(misplaced)) == ["LL009"]
    loop = loop_of(
        {
            "start": {
                "action": "x",
                "next": "done",
                "on_error": "failed",
                "max_retries": 2,
                "on_retry_exhausted": "done",
            },
            "done": {"terminal": True},
            "failed": {"terminal": True, "failure": True},
        }
    )
    assert codes(loop) == ["LL009"]


def test_state_configuration_rules() -> None:
    loop = loop_of(
        {
            "a": {"action": "x", "next": "b", "on_no": "done", "on_error": "done"},
            "b": {
                "action": "x",
                "on_yes": "done",
                "on_no": "done",
                "on_error": "done",
                "on_yess": "done",
            },
            "c": {"action": "x", "route": {"yes": "done", "_": "done", "maybe": "done"}},
            "done": {"terminal": True, "action": "echo bye"},
            "failed": {"terminal": True},
        },
        initial="a",
    )
    found = {d.code: d for d in lint_loop(loop)}
    assert found["LL012"].path == "states.a.on_no"
    impossible = [d for d in lint_loop(loop) if d.code == "LL014"]
    assert [d.path for d in impossible] == ["states.b.on_yess", "states.c.route.maybe"]
    assert "(did you mean 'yes'?)" in impossible[0].message
    assert found["LL010"].path == "states.done.action"
    assert found["LL015"].path == "states.failed.terminal"


def test_a_terminal_with_a_capture_or_retries_is_dead_configuration() -> None:
    """A terminal's `on_retry_exhausted` could name no state at all and pass: a terminal has no
    edges, so LL001 never saw it, and only LL009 spoke, about the retry count."""
    loop = loop_of(
        {
            "a": {"action": "x", "next": "done", "on_error": "failed"},
            "failed": {"terminal": True, "failure": True},
            "done": {
                "terminal": True,
                "capture": "result",
                "max_retries": 2,
                "on_retry_exhausted": "nowhere",
            },
        }
    )
    [diag] = [d for d in lint_loop(loop) if d.code not in ("LL008",)]
    assert diag.code == "LL010" and diag.path == "states.done.capture"
    assert "has capture, max_retries, on_retry_exhausted, which never runs" in diag.message


@pytest.mark.parametrize(
    "name", ["failed", "error", "abort", "gave_up", "buildFailure", "give_up", "GiveUp", "time_out"]
)
def test_failure_sounding_names(name: str) -> None:
    # give_up (docs/format.md's own sub-loop example) and time_out passed: each part alone
    # is no failure word, the name as one word is
    loop = loop_of(
        {
            "s": {"action": "x", "on_yes": "ok", "on_no": name, "on_error": name},
            "ok": {"terminal": True},
            name: {"terminal": True},
        }
    )
    assert "LL015" in codes(loop)


def test_llm_rules() -> None:
    loop = make_loop(
        {
            "ask": {"action": "do it", "action_type": "prompt", "next": "judge"},
            "judge": {
                "action": "grade",
                "action_type": "prompt",
                "timeout": 60,
                "evaluate": {"type": "llm_structured", "prompt": "Is it good?"},
                "on_yes": "done",
                "on_error": "done",
            },
            "guess": {
                "action": "grade",
                "action_type": "prompt",
                "timeout": 60,
                "evaluate": {"type": "llm_structured", "implicit": True},
                "on_yes": "done",
                "on_no": "done",
                "on_error": "done",
            },
            "done": {"terminal": True},
        },
        initial="ask",
    )
    found = {d.code: d for d in lint_loop(loop)}
    assert found["scope"].severity == "warning"
    assert "repo-root lock" in found["scope"].message
    assert 'scope: ["."]' in found["scope"].hint
    assert found["MR-8"].path == "states.judge.evaluate.prompt"
    assert found["MR-4"].path == "states.judge.on_yes"
    assert found["LL021"].path == "states.ask.action_type"
    assert found["LL020"].path == "states.guess"


def test_a_rubric_judge_is_not_asked_for_a_verbatim_quote() -> None:
    """MR-8 told a rubric judge (`dimensions`: reviewers score 1-5, no evidence field, nothing
    appended to its prompt) to "end the prompt with: Provide a VERBATIM quote", which it never
    gives and nothing checks; a verdict judge without the keywords is still reported."""
    text = """\
name: review
initial: review
scope: ["."]
states:
  review:
    action: cat report.md
    evaluate:
      type: llm_structured
      prompt: Review the report for a staff engineer audience.
      dimensions:
        - {name: accuracy, description: claims match, weight: 1}
    on_yes: done
    on_no: done
    on_error: done
  done: {terminal: true}
"""
    rubric = "      dimensions:\n        - {name: accuracy, description: claims match, weight: 1}\n"
    verdict_judge = text.replace(rubric, "")
    assert verdict_judge != text
    for judge, expected in [(text, False), (verdict_judge, True)]:
        loop, _, found = check_loop_text(judge, "loop.yaml")
        assert loop is not None, found
        assert ("MR-8" in [d.code for d in lint_loop(loop)]) is expected


def test_a_judge_with_a_route_table_is_told_to_add_a_table_entry() -> None:
    """With a route table, MR-4 said "add `on_no:`", which the loader refuses there (F017)."""
    judge = {
        "action": "cat report.txt",
        "evaluate": {"type": "llm_structured", "prompt": "Actionable? Quote the evidence."},
        "route": {"yes": "done", "blocked": "done", "_error": "done"},
    }
    loop = loop_of({"judge": judge, "done": {"terminal": True}})
    [diag] = [d for d in lint_loop(loop) if d.code == "MR-4"]
    assert diag.path == "states.judge.route"
    assert "routes yes but neither no nor partial" in diag.message
    assert "on_" not in diag.hint and "`no:` entry" in diag.hint


def test_default_timeout_satisfies_prompt_timeout() -> None:
    loop = loop_of(
        {
            "ask": {"action": "x", "action_type": "prompt", "next": "done", "on_error": "failed"},
            "done": {"terminal": True},
            "failed": {"terminal": True, "failure": True},
        },
        default_timeout=60,
    )
    assert codes(loop) == []


def test_suppressions_loop_and_state_level_and_unknown_code() -> None:
    states = {**GOOD, "orphan": {"action": "x", "next": "done", "on_error": "done"}}
    assert "LL002" in codes(loop_of(states))
    assert codes(loop_of(states, lint=[{"code": "LL002", "reason": "kept for later"}])) == []
    by_name = {
        **states,
        "orphan": {**states["orphan"], "lint": [{"code": "unreachable-state", "reason": "x"}]},
    }
    assert codes(loop_of(by_name)) == []
    other = {**states, "orphan": {**states["orphan"], "lint": [{"code": "LL003", "reason": "x"}]}}
    assert codes(loop_of(other)) == ["LL002"]  # a state suppression only covers its own code
    typo = loop_of(GOOD, lint=[{"code": "LL0002", "reason": "x"}])
    found = lint_loop(typo)
    assert [d.code for d in found] == ["LL050"]
    assert "did you mean 'LL002'" in found[0].message


class FakePositions:
    text = ""

    def of(self, path: tuple[str | int, ...]) -> tuple[int, int]:
        return (len(path) * 10, 3)


def test_positions_come_from_the_loader_positions() -> None:
    loop = loop_of({**GOOD, "orphan": {"action": "x", "next": "done", "on_error": "done"}})
    [diag] = lint_loop(loop, FakePositions())
    assert (diag.line, diag.column) == (20, 3)


def test_an_expression_finding_points_at_the_expression_inside_a_block(tmp_path: Path) -> None:
    """LL030, LL031, LL032 and LL080 pointed at the `action:` key (`7:5`), not at the `${...}`
    they are about, which in a block scalar can be many lines further down. They now point at
    the expression itself, each at its own occurrence, and two rules about one expression both
    at it (LL060 already did this for placeholders)."""
    path = tmp_path / "block.yaml"
    path.write_text(
        "name: block\ninitial: a\nmax_steps: 5\nscope: [out]\nstates:\n  a:\n"
        "    action: |\n"  # line 7
        "      echo one\n"
        "      echo ${captured.zz.output:raw} and ${captured.zz.output:raw}\n"  # line 9
        "      echo ${nope.x}\n"  # line 10
        "      echo ${context.who | raw}\n"  # line 11
        "    next: done\n  done: {terminal: true}\n"
    )
    found = sorted(
        (d.code, d.line, d.column)
        for d in engine.validate(path)
        if d.code in ("LL030", "LL031", "LL032", "LL080")
    )
    assert found == [
        ("LL030", 9, 12),
        ("LL030", 9, 42),
        ("LL030", 10, 12),
        ("LL031", 9, 12),
        ("LL031", 9, 42),
        ("LL032", 11, 12),
        ("LL080", 11, 12),
    ]


def test_expressions_must_parse_and_use_known_roots() -> None:
    loop = loop_of(
        {
            "s": {
                "action": 'echo "${context.x | }" ${contxt.y} ${HOME} ${x:-d}',
                "next": "done",
                "on_error": "done",
            },
            "done": {"terminal": True},
        }
    )
    found = [d for d in lint_loop(loop) if d.code == "LL030"]
    messages = " | ".join(d.message for d in found)
    assert len(found) == 2, messages
    assert "${context.x | } does not parse" in messages
    assert "root 'contxt' is not a namespace (did you mean 'context'?)" in messages
    unclosed = loop_of(
        {
            "s": {"action": "echo ${context.x", "next": "done", "on_error": "failed"},
            "done": {"terminal": True},
            "failed": {"terminal": True, "failure": True},
        }
    )
    assert [d.code for d in lint_loop(unclosed)] == ["LL033"]  # not also a parse error


def test_unclosed_expression_has_its_own_code_and_names_the_start() -> None:
    long_action = "echo ${captured.tests.output | default('none')\n" + "echo more\n" * 20
    loop = loop_of(
        {
            "s": {"action": "echo ${context.x", "next": "t", "on_error": "done"},
            "t": {"action": long_action, "next": "done", "on_error": "done"},
            "u": {"action": "echo ${context.y} ${HOME} done}", "next": "done"},
            "done": {"terminal": True},
        }
    )
    found = [d for d in lint_loop(loop) if d.code == "LL033"]
    assert [(d.path, d.severity) for d in found] == [
        ("states.s.action", "error"),
        ("states.t.action", "error"),
    ]
    assert found[0].message == (
        "expression ${context.x is never closed with `}`: it runs to the end of the text"
    )
    assert found[1].message.startswith("expression ${captured.tests.output | default('none') echo ")
    assert "... is never closed" in found[1].message and len(found[1].message) < 140
    assert found[0].hint.startswith("close it with }")


def test_unknown_filter_is_a_bad_expression_and_suffixes_are_fine() -> None:
    action = (
        'echo "${context.x | nosuchfilter}" ${context.y:default=x} ${context.z?} '
        "${context.w:shell} ${context.v | default('') | tojsn}"
    )
    loop = loop_of(
        {
            "s": {"action": action, "next": "done", "on_error": "done"},
            "done": {"terminal": True},
        }
    )
    found = [d.message for d in lint_loop(loop) if d.code == "LL030"]
    assert found == [
        "expression ${context.x | nosuchfilter} does not parse: syntax error: No filter named "
        "'nosuchfilter'.",
        "expression ${context.v | default('') | tojsn} does not parse: syntax error: No filter "
        "named 'tojsn'. (did you mean 'tojson'?)",
    ]


CAPTURE_FLOW: dict[str, dict[str, Any]] = {
    "start": {"action": "x", "on_yes": "test", "on_no": "report", "on_error": "done"},
    "test": {"action": "make test", "capture": "tests", "next": "report", "on_error": "done"},
    "report": {"action": 'echo "${captured.tests.output}"', "next": "done", "on_error": "done"},
    "done": {"terminal": True},
}


def test_capture_read_where_it_may_be_unset() -> None:
    found = [d for d in lint_loop(loop_of(CAPTURE_FLOW)) if d.code == "LL031"]
    assert [d.path for d in found] == ["states.report.action"]
    assert "on some path from 'start' no state with `capture: tests` runs before it" in (
        found[0].message
    )


def test_a_misspelt_capture_gets_the_capture_meant() -> None:
    report = {**CAPTURE_FLOW["report"], "action": 'echo "${captured.test.output}"'}
    found = [d for d in lint_loop(loop_of({**CAPTURE_FLOW, "report": report})) if d.code == "LL031"]
    assert found[0].message == (
        "state 'report' reads ${captured.test.output}, but no state has `capture: test` "
        "(did you mean 'tests'?)"
    )


def test_a_dashed_state_name_read_with_dots_is_told_to_use_brackets() -> None:
    """A sub-loop state `run-child` without `capture:` fills `captured['run-child']`, but
    `${captured.run-child.terminal}` is `captured.run` minus `child.terminal`: LL031 said "no
    state has `capture: run`", and hinted to capture 'run'."""
    flow = {
        "run-child": {"loop": "child", "on_yes": "report", "on_no": "report", "on_error": "done"},
        "report": {
            "action": 'echo "${captured.run-child.terminal}"',
            "next": "done",
            "on_error": "done",
        },
        "done": {"terminal": True},
    }
    [found] = [d for d in lint_loop(loop_of(flow)) if d.code == "LL031"]
    assert "captured['run-child']" in found.message, found.message
    assert "capture: run`" not in found.message and "capture 'run'" not in found.hint
    bracketed = "echo ${captured['run-child'].terminal}"
    fixed = {**flow, "report": {**flow["report"], "action": bracketed}}
    assert "LL031" not in codes(loop_of(fixed))


SUBLOOP_FLOW: dict[str, dict[str, Any]] = {
    "start": {"action": "x", "on_yes": "kid", "on_no": "report", "on_error": "done"},
    "kid": {"loop": "child", "capture": "c", "on_yes": "report", "on_no": "report"},
    "report": {"action": 'echo "${captured.c.output}"', "next": "done", "on_error": "done"},
    "done": {"terminal": True},
}


def test_a_sub_loop_captures_missing_field_is_an_error_naming_events() -> None:
    """A sub-loop state's capture has no `output` (little-loops kept the child's event stream
    there): the read fails every run; the child's events are `events`."""
    dominated = {**SUBLOOP_FLOW, "start": {**SUBLOOP_FLOW["start"], "on_no": "kid"}}
    [found] = [d for d in lint_loop(loop_of(dominated)) if d.code == "LL089"]
    assert found.severity == "error" and found.path == "states.report.action"
    assert "'c' is a sub-loop state's capture, which has no 'output'" in found.message
    assert "${captured.c.events}" in found.hint
    for fine in (
        "${captured.c.events}",
        "${captured.c.events_path}",
        "${captured.c.outputs.summary}",
        "${captured.c.terminal}",
        "${captured.c.output | default('')}",
    ):
        report = {**dominated["report"], "action": f'echo "{fine}"'}
        assert "LL089" not in codes(loop_of({**dominated, "report": report})), fine
    # a capture an action stores too may have an `output`
    both = {**dominated, "start": {**dominated["start"], "capture": "c"}}
    assert "LL089" not in codes(loop_of(both))


def test_the_guard_hinted_for_a_sub_loop_capture_reads_a_field_it_has() -> None:
    """LL031 hinted `${captured.c.output | default('')}` for every capture: for a sub-loop
    state's, that guard is always its default."""
    events = {**SUBLOOP_FLOW["report"], "action": 'echo "${captured.c.events}"'}
    [found] = [
        d for d in lint_loop(loop_of({**SUBLOOP_FLOW, "report": events})) if d.code == "LL031"
    ]
    assert found.hint.endswith("${captured.c.events | default('')}"), found.hint
    [found] = [d for d in lint_loop(loop_of(SUBLOOP_FLOW)) if d.code == "LL031"]
    assert found.hint.endswith("${captured.c.terminal | default('')}"), found.hint


def test_capture_read_is_safe_when_dominated_or_defaulted() -> None:
    dominated = {**CAPTURE_FLOW, "start": {**CAPTURE_FLOW["start"], "on_no": "test"}}
    assert "LL031" not in codes(loop_of(dominated))
    for guarded in ("${captured.tests.output | default('none')}", "${captured.tests.output?}"):
        flow = {**CAPTURE_FLOW, "report": {**CAPTURE_FLOW["report"], "action": f"echo {guarded}"}}
        assert "LL031" not in codes(loop_of(flow)), guarded


def test_capture_set_by_either_of_two_alternative_states_is_safe() -> None:
    flow = {
        "start": {"action": "x", "on_yes": "left", "on_no": "right"},
        "left": {"action": "a", "capture": "out", "next": "report"},
        "right": {"action": "b", "capture": "out", "next": "report"},
        "report": {"action": "echo ${captured.out.output}", "next": "done"},
        "done": {"terminal": True},
    }
    assert "LL031" not in codes(loop_of(flow))
    leaky = {**flow, "start": {"action": "x", "on_yes": "left", "on_no": "report"}}
    assert "LL031" in codes(loop_of(leaky))  # one path skips both capturers


def test_a_state_reading_its_own_capture_is_unsafe_on_first_entry() -> None:
    loop = loop_of(
        {
            "poll": {
                "action": "echo ${captured.poll.output}",
                "capture": "poll",
                "on_yes": "done",
                "on_no": "poll",
                "on_error": "done",
            },
            "done": {"terminal": True},
        }
    )
    assert "LL031" in codes(loop)


def test_prev_read_by_the_initial_state_is_unset_on_the_first_step() -> None:
    """`${prev.output}` in the initial state was an `error` verdict on every run's first step
    (a child loop's too: it does not see its parent's output), and lint said nothing."""
    states = {
        "a": {
            "action": 'echo "last: ${prev.output}"',
            "evaluate": {"type": "convergence", "target": 0, "previous": "${prev.output}"},
            "on_target": "b",
            "on_progress": "a",
            "on_stall": "b",
            "on_error": "b",
        },
        "b": {"action": 'echo "${prev.output}"', "next": "done", "on_error": "done"},
        "done": {"terminal": True},
    }
    found = [d for d in lint_loop(loop_of(states)) if d.code == "LL031"]
    assert [d.path for d in found] == ["states.a.action"]  # not `previous:`, not state b
    assert "initial state 'a' reads ${prev.output}, but on the first step" in found[0].message
    guarded = {**states, "a": {**states["a"], "action": "echo \"${prev.output | default('')}\""}}
    assert "LL031" not in codes(loop_of(guarded))


def test_a_convergence_previous_may_read_its_own_capture_unset() -> None:
    """The pattern docs/format.md shows (`previous: ${captured.score.output}` on the state that
    captures `score`) was LL031, but the run takes a missing `previous:` as "none yet"."""
    states = {
        "score": {
            "action": "./score.sh",
            "capture": "score",
            "evaluate": {
                "type": "convergence",
                "target": 0.85,
                "previous": "${captured.score.output}",
            },
            "on_target": "done",
            "on_progress": "refine",
            "on_stall": "done",
            "on_error": "done",
        },
        "refine": {"action": "./refine.sh", "next": "score", "on_error": "done"},
        "done": {"terminal": True},
    }
    assert "LL031" not in codes(loop_of(states))


def test_raw_capture_in_shell() -> None:
    flow = {
        **CAPTURE_FLOW,
        "start": {**CAPTURE_FLOW["start"], "on_no": "test"},
        "report": {**CAPTURE_FLOW["report"], "action": "${captured.tests.output | raw}"},
    }
    found = [d for d in lint_loop(loop_of(flow)) if d.code == "LL032"]
    assert [d.path for d in found] == ["states.report.action"]


CHILD = make_loop(
    {
        "work": {"action": "x", "on_yes": "done", "on_no": "stuck"},
        "done": {"terminal": True},
        "stuck": {"terminal": True, "failure": True},
    },
    name="child",
    parameters={
        "target": {"type": "string", "required": True},
        "retries": {"type": "integer", "default": 2, "has_default": True},
    },
)


def resolver(ref: str) -> Loop | None:
    return CHILD if ref == "child" else None


def parent(**state: Any) -> Loop:
    body = {"loop": "child", "on_yes": "done", "on_no": "done", "on_error": "done", **state}
    return loop_of({"call": body, "done": {"terminal": True}})


def test_sub_loop_must_resolve() -> None:
    assert "LL040" not in codes(parent(with_={"target": "x"}), resolve_loop=resolver)
    found = [d for d in lint_loop(parent(loop="chld"), resolve_loop=resolver) if d.code == "LL040"]
    assert found[0].path == "states.call.loop"
    assert "LL040" not in codes(parent(loop="${context.which}"), resolve_loop=resolver)
    assert "LL040" not in codes(parent(loop="chld"))  # no resolver: not checked


def test_with_must_match_the_child_parameters() -> None:
    def messages(**with_: Any) -> list[str]:
        loop = parent(**{"with": with_})
        return [d.message for d in lint_loop(loop, resolve_loop=resolver) if d.code == "LL041"]

    assert messages(target="src/") == []
    assert messages(target="${context.t}", retries="${context.n}") == []
    assert messages() == ["state 'call' does not pass required parameter 'target' of loop 'child'"]
    [unknown] = messages(target="x", retires=3)
    assert "no parameter 'retires' (did you mean 'retries'?)" in unknown
    [typed] = messages(target="x", retries="three")
    assert "parameter 'retries' of loop 'child' must be an integer, got \"three\"" in typed
    assert messages(target="x", retries="3") == []  # text is coerced at run time, so here too
    [boolean] = messages(target="x", retries=True)
    assert "must be an integer, got true" in boolean


def test_on_terminal_names_must_be_child_terminals() -> None:
    loop = parent(**{"with": {"target": "x"}, "on_terminal": {"stuk": "done"}})
    found = [d for d in lint_loop(loop, resolve_loop=resolver) if d.code == "LL042"]
    assert "(did you mean 'stuck'?)" in found[0].message


@settings(max_examples=examples(300), deadline=None)
@given(random_loops(), st.sampled_from(sorted(SCENARIOS)))
def test_lint_proof_holds_for_every_simulated_run(loop: Loop, scenario: str) -> None:
    """Lint never crashes, and when it reports no unknown target (LL001) and no unrouted verdict
    (LL007, LL008), no simulated run of any scenario ends on an unrouted verdict."""
    found = lint_loop(loop)
    assert all(d.code in RULES for d in found)
    sim = simulate(loop, scenario)
    assert len(sim.steps) <= loop.max_steps
    if not {"LL001", "LL007", "LL008"} & {d.code for d in found}:
        assert sim.terminated_by != "error", (sim.reason, found)


def test_next_with_evaluate_says_which_part_is_dead() -> None:
    state = {
        "action": "x",
        "evaluate": {"type": "output_contains", "pattern": "ok"},
        "next": "done",
        "on_no": "done",
        "on_error": "done",
    }
    loop = loop_of({"s": state, "done": {"terminal": True}})
    [diag] = [d for d in lint_loop(loop) if d.code == "LL012"]
    assert diag.path == "states.s.next"
    assert diag.message.endswith("only stands in for on_yes")
    loop = loop_of({"s": {**state, "on_yes": "done"}, "done": {"terminal": True}})
    [diag] = [d for d in lint_loop(loop) if d.code == "LL012"]
    assert diag.message.endswith("which is also set, so `next` is dead")


def test_outputs_read_captures_set_on_every_path_to_a_terminal() -> None:
    states = {
        "lint": {"action": "x", "on_yes": "test", "on_no": "failed", "on_error": "failed"},
        "test": {"action": "x", "capture": "tests", "next": "done", "on_error": "failed"},
        "done": {"terminal": True},
        "failed": {"terminal": True, "failure": True},
    }
    unsafe = loop_of(states, outputs={"summary": "${captured.tests.output}"})
    [diag] = [d for d in lint_loop(unsafe) if d.code == "LL031"]
    assert diag.path == "outputs.summary"
    assert "terminal 'failed' can be reached before any state with `capture: tests`" in (
        diag.message
    )
    guarded = loop_of(states, outputs={"summary": "${captured.tests.output | default('')}"})
    assert "LL031" not in codes(guarded)
    only_done = {**states, "lint": {**states["lint"], "on_no": "test", "on_error": "test"}}
    only_done["test"] = {**states["test"], "on_error": "done"}
    assert "LL031" not in codes(loop_of(only_done, outputs={"s": "${captured.tests.output}"}))


def test_an_unknown_key_of_a_fixed_root_is_a_bad_expression() -> None:
    """`${loop.elapsed}` would fail at run time; lint names it (with a close key)."""
    action = 'echo "${loop.elapsed} ${loop.stpes} ${run.dir} ${state.retries} $${loop.x}"'
    loop = loop_of(
        {
            "s": {"action": action, "next": "done", "on_error": "done"},
            "done": {"terminal": True},
        }
    )
    found = [d.message for d in lint_loop(loop) if d.code == "LL030"]
    assert found == [
        "'loop' has no key 'elapsed' (did you mean 'elapsed_ms'?)",
        "'loop' has no key 'stpes' (did you mean 'steps'?)",
    ]


def test_bad_roots_and_keys_are_found_outside_the_states_fields_too() -> None:
    """A typo in `loop:`, `scope`, `outputs:` or `llm.runner` went unreported: the run then sent
    `loop:` to its error route, locked a path named `${contxt.out}/` and returned an output of
    `${contxt.who}` or null."""
    loop = loop_of(
        {
            "call": {"loop": "${contxt.job}", "on_yes": "done", "on_no": "done"},
            "done": {"terminal": True},
        },
        scope=["${contxt.out}/"],
        outputs={"greeting": "hello ${contxt.who}", "took": "${loop.timeout}"},
    )
    found = sorted((d.path, d.message) for d in lint_loop(loop) if d.code == "LL030")
    bad_root = "expression root 'contxt' is not a namespace (did you mean 'context'?)"
    assert found == [
        ("outputs.greeting", bad_root),
        ("outputs.took", "'loop' has no key 'timeout'"),
        ("scope.0", bad_root),
        ("states.call.loop", bad_root),
    ]


def test_a_param_the_loop_does_not_declare_is_a_bad_expression() -> None:
    """`${param.isue}` (a typo) or `${param.label}` (a context default, not a parameter) was an
    error verdict on every run: `param` holds only declared parameters."""
    action = (
        "echo \"${param.issue} ${param.isue} ${param.label} ${param['issue']}"
        " ${param.extra | default('')}\""
    )
    loop = loop_of(
        {
            "s": {"action": action, "next": "done", "on_error": "done"},
            "done": {"terminal": True},
        },
        parameters={"issue": {"type": "string", "required": True}},
        context={"label": "bug"},
    )
    found = [d for d in lint_loop(loop) if d.code == "LL030"]
    assert [d.message for d in found] == [
        "'param' has no key 'isue' (did you mean 'issue'?): it holds only the loop's declared "
        "parameters",
        "'param' has no key 'label': it holds only the loop's declared parameters",
    ]
    assert "read ${context.label} (declared: issue)" in found[1].hint


def test_an_expression_in_a_pattern_or_json_path_is_not_interpolated() -> None:
    """`pattern: "${context.expected}"` passed lint, and the run matched it as written: `no`
    although the output held the expected text."""
    routes = {"on_yes": "done", "on_no": "done", "on_error": "done"}
    loop = loop_of(
        {
            "grep": {
                "action": "make",
                "evaluate": {"type": "output_contains", "pattern": "ok: ${context.expected}"},
                **routes,
            },
            "json": {
                "action": "cat r.json",
                "evaluate": {"type": "output_json", "path": ".${captured.k.output}", "target": 1},
                **routes,
            },
            "literal": {
                "action": "make",
                "evaluate": {"type": "output_contains", "pattern": r"\${context\.x} ${HOME}"},
                **routes,
            },
            "done": {"terminal": True},
        },
        context={"expected": "BUILD SUCCESSFUL"},
    )
    found = [d for d in lint_loop(loop) if d.code.startswith("LL03")]
    assert [(d.code, d.path) for d in found] == [
        ("LL030", "states.grep.evaluate.pattern"),
        ("LL030", "states.json.evaluate.path"),
    ]
    assert "'${context.expected}' is taken as written" in found[0].message


def test_the_paths_a_diff_stall_watches_are_checked_like_any_interpolation() -> None:
    """diff_stall renders its `scope:` entries before each check (a missing value is `error`),
    but lint did not look at them."""
    loop = loop_of(
        {
            "check": {
                "action": "true",
                "evaluate": {
                    "type": "diff_stall",
                    "scope": ["${contxt.dir}/", "${captured.dir.output}"],
                },
                "on_progress": "done",
                "on_stall": "done",
                "on_error": "done",
            },
            "done": {"terminal": True},
        }
    )
    found = [(d.code, d.path) for d in lint_loop(loop) if d.code.startswith("LL03")]
    assert found == [
        ("LL030", "states.check.evaluate.scope.0"),
        ("LL031", "states.check.evaluate.scope.1"),
    ]


def test_the_fixed_roots_lint_knows_are_the_ones_a_run_fills_in(tmp_path: Path) -> None:
    (tmp_path / "keys.yaml").write_text(
        "name: keys\ninitial: s\nscope: [out.json]\nstates:\n"
        "  s:\n    action: \"echo '${state | tojson}${loop | tojson}${run | tojson}' > out.json\"\n"
        "    next: done\n  done: {terminal: true}\n"
    )
    engine.run("keys.yaml", cwd=tmp_path)
    text = (tmp_path / "out.json").read_text().replace("}{", "}\n{").splitlines()
    seen = [sorted(json.loads(part)) for part in text]
    assert seen == [sorted(FIXED_KEYS[root]) for root in ("state", "loop", "run")]


def test_a_glob_in_scope_is_named_with_the_directory_to_write_instead() -> None:
    done = {"done": {"terminal": True}}
    [finding] = [
        d for d in lint_loop(loop_of(done, scope=["src/*.py", "docs/"])) if d.code == "LL085"
    ]
    assert "'src/*.py' has glob characters" in finding.message and "src/" in finding.hint
    assert "LL085" not in codes(
        loop_of(done, scope=["src/", "${context.dir}"], context={"dir": "a"})
    )


def test_a_suite_root_in_a_loop_is_an_error() -> None:
    """`${inputs.text}` passed validate in a loop, and the state errored on every run ('inputs'
    is undefined): only a suite's case has inputs and annotations."""
    loop = loop_of(
        {
            "s": {
                "action": 'echo "${inputs.text}" "${annotations.x | default(1)}"',
                "next": "done",
                "on_error": "done",
            },
            "done": {"terminal": True},
        }
    )
    found = [d.message for d in lint_loop(loop) if d.code == "LL030"]
    assert found == [
        "${inputs.text} reads 'inputs', which only a suite's case has: in a loop it has no "
        "value, and the state errors"
    ]


def test_retry_exhausted_into_the_state_itself_by_name_or_current() -> None:
    """`on_retry_exhausted` back into the state restarts its count: the run went round until
    `max_steps` with `max_retries` silently meaningless."""
    for target in ("check", "$current"):
        states = {**GOOD, "check": {**GOOD["check"], "on_retry_exhausted": target}}
        found = [d for d in lint_loop(loop_of(states)) if d.code == "LL017"]
        assert [d.path for d in found] == ["states.check.on_retry_exhausted"], target
    assert "LL017" not in codes(loop_of(GOOD))


SELF = """\
name: rec
initial: INITIAL
scope: ["."]
states:
  check:
    action: test -s todo.txt
    on_yes: split
    on_no: done
    on_error: done
  split:
    loop: REF
    on_yes: done
    on_no: done
    on_error: done
  done:
    terminal: true
"""


@pytest.mark.parametrize("ref", ["rec", "rec.yaml", "./rec.yaml"])
def test_a_loop_that_always_calls_itself_is_warned_of(tmp_path: Path, ref: str) -> None:
    """Every run entering a state that runs the same loop recursed until the depth limit, and
    `validate` said nothing."""
    from engine.cli.validate_cmd import check_file

    path = tmp_path / "rec.yaml"
    path.write_text(SELF.replace("INITIAL", "split").replace("REF", ref))
    assert [d.code for d in check_file(path) if d.code == "LL044"] == ["LL044"]
    path.write_text(SELF.replace("INITIAL", "check").replace("REF", ref))  # may end first
    assert "LL044" not in [d.code for d in check_file(path)]


def test_every_ll030_finding_points_at_its_expression_inside_a_block(tmp_path: Path) -> None:
    """docs/lint-rules.md says an LL030 finding points at its `${...}`; the whole-environment
    refusal (e0eaadd), an unknown fixed key and an undeclared `param` key still pointed at the
    `action:` key (7:5) while the other LL030 findings of the same block pointed inside it."""
    path = tmp_path / "block.yaml"
    path.write_text(
        "name: block\ninitial: a\nmax_steps: 5\nscope: [out]\nstates:\n  a:\n"
        "    action: |\n"  # line 7
        "      echo one\n"
        "      echo ${env | tojson}\n"  # line 9
        "      echo ${loop.elapsed} ${loop.elapsed}\n"  # line 10
        "      echo ${param.nope}\n"  # line 11
        "    next: done\n  done: {terminal: true}\n"
    )
    found = sorted((d.line, d.column) for d in engine.validate(path) if d.code == "LL030")
    assert found == [(9, 12), (10, 12), (10, 28), (11, 12)]
