"""Agent traces: a prompt state run through an agent CLI that streams JSON events (a real
process: a small fake agent written by the test prints the `claude -p --output-format
stream-json --verbose` shape) gives judges its conversation, tool calls, turns, tokens and cost,
and the cost counts toward `max_cost_usd`."""

from __future__ import annotations

import io
import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from engine.judges.record import build_record, format_evidence, format_tool_trace
from engine.llm.agent_trace import parse_agent_stream
from engine.model.ports import Event
from engine.runtime.progress import Progress
from tests.loopback_server import LoopbackServer, tool_reply
from tests.run_helpers import ll_loop, run_yaml

EVENTS: list[dict[str, Any]] = [
    {"type": "system", "subtype": "init", "session_id": "s1", "tools": ["Bash", "Edit"]},
    {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I will fix the parser."},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Edit",
                    "input": {"file_path": "src/fix.py"},
                },
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
        "parent_tool_use_id": None,
    },
    {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
        "parent_tool_use_id": None,
    },
    {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "(sub-agent notes)"},
                {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pytest -q"}},
            ],
        },
        "parent_tool_use_id": "t1",
    },
    {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "Done: tests pass."}],
        },
        "parent_tool_use_id": None,
    },
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 3,
        "result": "Done: tests pass.",
        "total_cost_usd": 0.0123,
        "usage": {"input_tokens": 120, "output_tokens": 40},
    },
]

AGENT = """\
import json, pathlib, sys
prompt = sys.stdin.read()
pathlib.Path("src").mkdir(exist_ok=True)
pathlib.Path("src/fix.py").write_text("print('fixed')\\n")
for event in json.loads(pathlib.Path(sys.argv[1]).read_text()):
    print(json.dumps(event), flush=True)
"""

LOOP = """\
name: agent
initial: work
scope: ["src"]
{extra}
states:
  work:
    action_type: prompt
    action: Fix the parser bug.
    runner: "cmd:python3 agent.py events.json"
    timeout: 30
    evaluate:
      type: assessment
      judges:
{judges}
    on_yes: done
    on_no: failed
    on_error: broken
  done: {{terminal: true}}
  failed: {{terminal: true, failure: true}}
  broken: {{terminal: true, failure: true}}
"""

TRACE_JUDGES = """\
- {name: edited, builtin: tool_called, arguments: {name: Edit}}
- {name: ran_tests, builtin: tool_called, arguments: {name: Bash, input_pattern: pytest}}
- {name: few_turns, builtin: max_turns, arguments: {max_turns: 5}}
- {name: cheap, builtin: cost_budget, arguments: {max_cost_usd: 0.05}}
- name: changed_the_fix
  check: |
    return outputs["modified_files"] == ["src/fix.py"], str(outputs["modified_files"])
- name: answered
  check: |
    ok = outputs["stdout"] == "Done: tests pass." and outputs["num_turns"] == 3
    return ok, outputs["conversation"]
"""


def write_agent(cwd: Path, events: list[dict[str, Any]] = EVENTS) -> None:
    (cwd / "agent.py").write_text(AGENT)
    (cwd / "events.json").write_text(json.dumps(events))


def loop(judges: str, extra: str = "") -> str:
    return LOOP.format(judges=textwrap.indent(judges, " " * 8), extra=extra)


def test_the_stream_becomes_a_trace_and_the_answer() -> None:
    stdout = "\n".join(json.dumps(e) for e in EVENTS)
    agent = parse_agent_stream(stdout)
    assert agent is not None
    assert agent.text == "Done: tests pass."
    trace = agent.trace
    assert trace["conversation"] == "I will fix the parser.\nDone: tests pass."
    assert trace["tool_calls"] == [
        {"name": "Edit", "input": {"file_path": "src/fix.py"}},
        {"name": "Bash", "input": {"command": "pytest -q"}},
    ]
    assert (trace["num_turns"], trace["cost_usd"]) == (3, 0.0123)
    assert trace["token_usage"] == {"input_tokens": 120, "output_tokens": 40}
    assert len(trace["events"]) == len(EVENTS)


@pytest.mark.parametrize("stdout", ["plain answer", '{"type": "x"}\nnot json', "[1, 2]", ""])
def test_plain_output_is_not_a_trace(stdout: str) -> None:
    assert parse_agent_stream(stdout) is None


def test_trace_judges_see_the_agents_run_end_to_end(tmp_path: Path) -> None:
    write_agent(tmp_path)
    ran = run_yaml(tmp_path, loop(TRACE_JUDGES))
    assert ran.code == 0, (ran.stderr, [e for e in ran.events() if e["event"] == "judge"])
    assert ran.json["final_state"] == "done"
    assert ran.json["cost_usd"] == pytest.approx(0.0123)
    captured = ran.state()["captured"]["work"]
    assert captured["output"] == "Done: tests pass."
    assert captured["num_turns"] == 3
    assert [c["name"] for c in captured["tool_calls"]] == ["Edit", "Bash"]
    assert all(j["passed"] for j in captured["judges"].values())


def test_modified_files_come_from_git_in_a_work_tree(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "0")
    write_agent(tmp_path)
    judges = """\
- name: changed_the_fix
  check: |
    return outputs["modified_files"] == ["src/fix.py"], str(outputs["modified_files"])
"""
    ran = run_yaml(tmp_path, loop(judges))
    assert ran.code == 0, ran.state()["captured"]["work"]["judges"]


def test_the_agents_cost_counts_toward_max_cost_usd(tmp_path: Path) -> None:
    write_agent(tmp_path)
    text = loop(TRACE_JUDGES, extra="max_cost_usd: 0.01").replace("on_yes: done", "on_yes: more")
    text += "  more: {action: echo more, next: done}\n"
    ran = run_yaml(tmp_path, text)
    assert ran.json["terminated_by"] == "max_cost", ran.stderr
    assert (ran.json["steps"], ran.code) == (1, 3)
    assert ran.json["cost_usd"] == pytest.approx(0.0123)


@pytest.mark.parametrize("reported", ["-5", "NaN", "Infinity", "1e400"])
def test_a_cost_that_is_no_cost_counts_as_unknown(reported: str) -> None:
    """An agent's negative cost lowered the run's spend under `max_cost_usd`; NaN and
    infinity reached `run --json` as text no JSON reader accepts; `num_turns: 1e400` crashed."""
    fields = f'"total_cost_usd": {reported}, "num_turns": {reported}'
    line = f'{{"type": "result", "result": "ok", {fields}}}'
    agent = parse_agent_stream(line)
    assert agent is not None
    assert (agent.trace["cost_usd"], agent.trace["num_turns"]) == (None, None)  # not known
    assert (agent.cost_usd, agent.cost_known) == (0.0, False)  # 0 in the run's accounting


def test_an_agents_negative_cost_does_not_lift_the_budget(tmp_path: Path) -> None:
    """An agent reporting -$1 and one reporting $0.0123, in turn: the run's cost is the real
    spend and the budget stops it after the second (it ran to `max_steps` on -$2.96)."""
    write_agent(tmp_path, [{**EVENTS[-1], "total_cost_usd": -1.0}])
    (tmp_path / "real.json").write_text(json.dumps(EVENTS))
    text = """\
name: agents
initial: cheat
scope: ["src"]
max_cost_usd: 0.01
max_steps: 6
states:
  cheat:
    action_type: prompt
    action: Fix it.
    runner: "cmd:python3 agent.py events.json"
    timeout: 30
    next: real
  real:
    action_type: prompt
    action: Fix it again.
    runner: "cmd:python3 agent.py real.json"
    timeout: 30
    next: check
  check:
    action: "exit 1"
    on_yes: done
    on_no: cheat
  done: {terminal: true}
"""
    ran = run_yaml(tmp_path, text)
    assert ran.json["terminated_by"] == "max_cost", ran.stdout + ran.stderr
    assert ran.json["cost_usd"] == pytest.approx(0.0123)
    assert ran.json["steps"] == 2


def test_llm_judges_read_the_conversation_and_tool_trace(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    write_agent(tmp_path)
    loopback.push(tool_reply({"score": 5, "reason": "ran tests", "evidence": "Done: tests pass."}))
    judges = """\
- name: process
  prompt: |
    Did the agent test its fix? Quote the evidence.
    Tools: {{ tool_trace }}
    Said: {{ conversation }}
    Facts: {{ evidence }}
"""
    ran = run_yaml(tmp_path, loop(judges))
    assert ran.code == 0, ran.stderr
    content = loopback.requests[0].body["messages"][0]["content"]
    assert '1. Edit {"file_path": "src/fix.py"}' in content
    assert '2. Bash {"command": "pytest -q"}' in content
    assert "Said: I will fix the parser.\nDone: tests pass." in content
    assert "files modified: src/fix.py" in content


def test_events_of_other_types_keep_the_trace_and_its_cost(tmp_path: Path) -> None:
    """`claude -p --include-partial-messages` adds `stream_event` lines: the stream was read as
    plain text, so the output was the raw JSON and the agent's $0.0123 counted as 0 toward
    `max_cost_usd` (the run took its next step)."""
    partial = {"type": "stream_event", "event": {"type": "message_start"}, "session_id": "s1"}
    write_agent(tmp_path, [EVENTS[0], partial, *EVENTS[1:]])
    text = loop(TRACE_JUDGES, extra="max_cost_usd: 0.01").replace("on_yes: done", "on_yes: more")
    text += "  more: {action: echo more, next: done}\n"
    ran = run_yaml(tmp_path, text)
    assert ran.json["terminated_by"] == "max_cost", ran.stderr
    assert ran.json["cost_usd"] == pytest.approx(0.0123)
    assert ran.state()["captured"]["work"]["output"] == "Done: tests pass."


def test_a_stream_torn_by_the_agents_end_is_still_its_trace(tmp_path: Path) -> None:
    """An agent that reported its result and then died mid-line (or was killed mid-event): the
    torn last line made the whole stream plain text, and the spend it reported counted as 0."""
    (tmp_path / "agent.py").write_text(
        AGENT.replace("print(json.dumps(event), flush=True)", "print(json.dumps(event))")
        + 'sys.stdout.write(\'{"type": "assistant", "mess\')\nsys.exit(3)\n'
    )
    (tmp_path / "events.json").write_text(json.dumps(EVENTS))
    text = loop(TRACE_JUDGES, extra="max_cost_usd: 0.01")
    text = text.replace("on_error: broken", "on_error: more")
    text += "  more: {action: echo more, next: done}\n"
    ran = run_yaml(tmp_path, text)
    assert ran.json["terminated_by"] == "max_cost", ran.stderr
    assert ran.json["cost_usd"] == pytest.approx(0.0123)
    completed = [e for e in ran.events() if e["event"] == "action_complete"]
    assert completed[0]["exit_code"] == 3


def test_only_the_last_line_may_be_torn() -> None:
    lines = [json.dumps(e) for e in EVENTS]
    assert parse_agent_stream("\n".join([*lines, '{"type": "resu'])) is not None
    assert parse_agent_stream('{"type": "resu') is None
    assert parse_agent_stream("\n".join([*lines, "Done, bye."])) is None  # text, not torn
    assert parse_agent_stream("\n".join(["Hello.", *lines])) is None  # text first


def test_a_malformed_line_mid_stream_skips_only_itself(tmp_path: Path) -> None:
    """One line that is not JSON between two events made the whole stream plain text: the
    output was the raw JSON, and the agent's $0.0123 counted as 0 toward `max_cost_usd`."""
    lines = [json.dumps(e) for e in EVENTS]
    agent = parse_agent_stream("\n".join([lines[0], "not json", '{"type": "assis', *lines[1:]]))
    assert agent is not None and agent.skipped == 2
    assert agent.cost_usd == pytest.approx(0.0123)
    assert parse_agent_stream("\n".join([lines[0], "a", "b", lines[-1]])) is None  # mostly text
    (tmp_path / "agent.py").write_text(
        AGENT.replace("print(json.dumps(event), flush=True)",
                      "print(json.dumps(event), flush=True)\n    if event['type'] == 'user':"
                      " print('{oops', flush=True)")
    )  # fmt: skip
    (tmp_path / "events.json").write_text(json.dumps(EVENTS))
    text = loop(TRACE_JUDGES, extra="max_cost_usd: 0.01").replace("on_yes: done", "on_yes: more")
    text += "  more: {action: echo more, next: done}\n"
    ran = run_yaml(tmp_path, text)
    assert ran.json["terminated_by"] == "max_cost", ran.stderr
    assert ran.json["cost_usd"] == pytest.approx(0.0123)
    work = ran.state()["captured"]["work"]
    assert work["output"] == "Done: tests pass."
    assert work["stderr"].endswith(
        "ll-loop: 1 line(s) of the agent's event stream were not JSON events and were skipped"
    )


def test_several_results_cost_the_largest_running_total() -> None:
    """A CLI serving a session prints a result per turn; claude's `total_cost_usd` is the
    running total of the process. Only the last result counted: one without a cost lost the
    session's spend (it counted $0)."""
    turn = {"type": "result", "subtype": "success", "result": "one", "num_turns": 1}
    events = [
        EVENTS[1],
        {**turn, "total_cost_usd": 0.01},
        EVENTS[4],
        {**turn, "total_cost_usd": 0.03, "result": "two"},
        {**turn, "result": "three"},  # no cost reported
    ]
    agent = parse_agent_stream("\n".join(json.dumps(e) for e in events))
    assert agent is not None
    assert agent.cost_usd == pytest.approx(0.03)  # not 0, and not 0.04
    assert agent.text == "three"


def test_explain_counts_the_agents_cost_in_its_state(tmp_path: Path) -> None:
    """The agent's $0.0123 was in the run's cost but in no event: `explain` showed a run of
    $0.0123 with no cost by state, and the progress line $0."""
    write_agent(tmp_path)
    ran = run_yaml(tmp_path, loop(TRACE_JUDGES))
    assert ran.json["cost_usd"] == pytest.approx(0.0123)
    completed = [e for e in ran.events() if e["event"] == "action_complete"]
    assert completed[0]["agent_cost_usd"] == pytest.approx(0.0123)
    explained = ll_loop(tmp_path, "explain", ran.json["run_id"])
    assert "cost by state: work $0.0123" in explained.stdout, explained.stdout
    assert "(0 calls)" not in explained.stdout


@pytest.mark.parametrize(
    "command",
    [
        "AGENT_MODEL=fast python3 agent.py events.json",
        "cd . && python3 agent.py events.json",
        "exec python3 agent.py events.json",
    ],
)
def test_a_runner_may_start_with_an_assignment_or_a_shell_builtin(
    tmp_path: Path, command: str
) -> None:
    """bash runs these command lines, but the preflight refused them (exit 2): 'AGENT_MODEL=fast'
    (or 'cd', 'exec') is not an executable on PATH."""
    write_agent(tmp_path)
    text = loop(TRACE_JUDGES).replace("cmd:python3 agent.py events.json", f"cmd:{command}")
    ran = run_yaml(tmp_path, text)
    assert ran.code == 0, ran.stderr
    assert ran.json["cost_usd"] == pytest.approx(0.0123)


def test_a_missing_agent_after_an_assignment_is_still_refused(tmp_path: Path) -> None:
    write_agent(tmp_path)
    text = loop(TRACE_JUDGES).replace("cmd:python3", "cmd:AGENT_MODEL=fast no-such-agent-h5")
    ran = run_yaml(tmp_path, text)
    assert ran.code == 2
    assert "'no-such-agent-h5' is not an executable on PATH" in ran.stderr


def test_an_agent_that_reports_a_failed_run_has_failed_whatever_its_exit_code(
    tmp_path: Path,
) -> None:
    """A `result` event with `is_error: true` (out of turns) from a CLI that exited 0 (a wrapper
    losing `claude -p`'s status 1): the state was judged and routed as a success."""
    failed = {
        **EVENTS[-1],
        "subtype": "error_max_turns",
        "is_error": True,
        "errors": ["Reached maximum number of turns (3)"],
    }
    del failed["result"]
    write_agent(tmp_path, [*EVENTS[:-1], failed])
    ran = run_yaml(tmp_path, loop(TRACE_JUDGES))
    assert (ran.code, ran.json["final_state"]) == (1, "broken"), ran.stderr
    assert ran.json["cost_usd"] == pytest.approx(0.0123)
    completed = [e for e in ran.events() if e["event"] == "action_complete"]
    assert completed[0]["exit_code"] == 1
    assert completed[0]["stderr"] == (
        "the agent reported a failed run: error_max_turns: Reached maximum number of turns (3)"
    )


def test_a_line_separator_inside_an_event_does_not_end_the_line() -> None:
    """A tool result holding U+2028 or U+0085 (written raw, as Node's JSON.stringify does): the
    event was split in two by `str.splitlines`, and the stream read as plain text, cost 0."""
    said = {"type": "text", "text": "a\u2028b\x85c"}
    events = [{**EVENTS[1], "message": {"content": [said]}}, EVENTS[-1]]
    agent = parse_agent_stream("\n".join(json.dumps(e, ensure_ascii=False) for e in events))
    assert agent is not None
    assert agent.trace["conversation"] == "a\u2028b\x85c"
    assert agent.cost_usd == pytest.approx(0.0123)


def test_the_live_line_counts_an_agents_spend() -> None:
    """The live progress line summed the `llm_call` events only: an agent's $0.25 showed $0."""
    stream = io.StringIO()
    progress = Progress(mode="live", stream=stream)
    progress(Event("loop_start", "r", {"loop": "agent", "max_steps": 5}))
    progress(Event("action_complete", "r", {"state": "work", "agent_cost_usd": 0.25}))
    progress(Event("action_complete", "r", {"state": "b", "depth": 1, "agent_cost_usd": 0.5}))
    progress._redraw()
    progress._done.set()
    assert "$0.7500" in stream.getvalue()


def test_explain_does_not_show_an_unknown_agent_cost_as_zero(tmp_path: Path) -> None:
    """An agent that printed plain text reported no cost, and `explain` showed the run as
    '$0.0000' with nothing more (the run's stderr said so once, the explanation never): the
    dollars are a lower bound, and it now says whose spend they leave out."""
    (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('Done.')\n")
    text = loop("- {name: said, check: return True}\n")
    ran = run_yaml(tmp_path, text, "--no-lock")
    assert ran.json["final_state"] == "done", ran.stderr
    explained = ll_loop(tmp_path, "explain", ran.json["run_id"])
    head = explained.stdout.splitlines()[0]
    assert head.endswith("$0.0000 + unknown"), explained.stdout
    assert "cost: the agent of state work reported no cost" in explained.stdout
    data = json.loads(ll_loop(tmp_path, "explain", ran.json["run_id"], "--format", "json").stdout)
    assert data["cost_unknown_in"] == ["work"]
    reported = ll_loop(tmp_path, "report", ran.json["run_id"], "--html", "-o", "r.html")
    assert reported.code == 0, reported.stderr
    html = (tmp_path / "r.html").read_text()
    assert "$0.0000 + unknown" in html
    assert "the agent of state work reported no cost" in html
    write_agent(tmp_path)  # a stream with its cost: nothing unknown
    ran = run_yaml(tmp_path, loop(TRACE_JUDGES))
    data = json.loads(ll_loop(tmp_path, "explain", ran.json["run_id"], "--format", "json").stdout)
    assert data["cost_unknown_in"] == [], data


def test_run_and_status_do_not_show_an_unknown_agent_cost_as_zero(tmp_path: Path) -> None:
    """`run --json` and `status` said `cost_usd: 0.0` / `$0.0000` for a run whose agent reported
    no cost, where `explain` says "+ unknown": a script reading the JSON took the spend for
    nothing. They now name the states whose spend is unknown (a child's as "state > inner")."""
    (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('Done.')\n")
    ran = run_yaml(tmp_path, loop("- {name: said, check: return True}\n"), "--no-lock")
    assert ran.json["final_state"] == "done", ran.stderr
    assert ran.json["cost_unknown_in"] == ["work"] and ran.json["cost_usd"] == 0.0
    run_id = ran.json["run_id"]
    status = json.loads(ll_loop(tmp_path, "status", run_id, "--json").stdout)
    assert status["cost_unknown_in"] == ["work"], status
    detail = ll_loop(tmp_path, "status", run_id).stdout
    assert "$0.0000 + unknown (the agent of state work reported no cost)" in detail, detail
    table = ll_loop(tmp_path, "status", "--all").stdout
    assert "$0.0000 + unknown" in table, table
    text = ll_loop(tmp_path, "run", "loop.yaml", "--no-lock")  # the summary line, too
    assert "after 1 step (" in text.stdout and "s, $0.0000 + unknown)" in text.stdout, text
    past = json.loads(ll_loop(tmp_path, "history", "--json").stdout)["runs"]
    assert [r.get("cost_unknown_in") for r in past] == [["work"], ["work"]], past
    assert "$0.0000 + unknown" in ll_loop(tmp_path, "history").stdout
    (tmp_path / "child.yaml").write_text((tmp_path / "loop.yaml").read_text())
    parent = """\
name: parent
initial: call
scope: ["src"]
states:
  call: {loop: child.yaml, on_yes: done, on_no: failed, on_error: failed}
  done: {terminal: true}
  failed: {terminal: true, failure: true}
"""
    nested = run_yaml(tmp_path, parent, "--no-lock")
    assert nested.json["final_state"] == "done", nested.stderr
    assert nested.json["cost_unknown_in"] == ["call > work"]
    write_agent(tmp_path)  # a stream with its cost: nothing unknown, the JSON as before
    known = run_yaml(tmp_path, loop(TRACE_JUDGES))
    assert "cost_unknown_in" not in known.json and known.json["cost_usd"] > 0, known.json
    status = json.loads(ll_loop(tmp_path, "status", known.json["run_id"], "--json").stdout)
    assert "cost_unknown_in" not in status
    past = json.loads(ll_loop(tmp_path, "history", "agent", "--json").stdout)["runs"]
    assert "cost_unknown_in" not in past[0] and past[0]["cost_usd"] > 0, past[0]


@pytest.mark.parametrize(
    "events",
    [
        None,  # plain text output: no stream at all
        [EVENTS[1], {k: v for k, v in EVENTS[-1].items() if k != "total_cost_usd"}],
        [EVENTS[1], {**EVENTS[-1], "total_cost_usd": -1}],  # not a cost
    ],
)
def test_an_unknown_agent_cost_does_not_pass_a_cost_budget(
    tmp_path: Path, events: list[dict[str, Any]] | None
) -> None:
    """An agent that reported no cost passed `cost_budget` as $0.0000 of its budget: the judge
    cannot know, so it is an error of that judge (not a pass), and the run says that the
    agent's spend is not in its cost."""
    if events is None:
        (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('Done.')\n")
        (tmp_path / "events.json").write_text("[]")
    else:
        write_agent(tmp_path, events)
    judges = "- {name: cheap, builtin: cost_budget, arguments: {max_cost_usd: 0.05}}\n"
    ran = run_yaml(tmp_path, loop(judges, extra="max_cost_usd: 1"), "--no-lock")
    assert ran.json["final_state"] == "broken", ran.stderr
    cheap = ran.state()["captured"]["work"]["judges"]["cheap"]
    assert cheap["passed"] is None or cheap["passed"] is False, cheap
    assert "cost is not known" in str(cheap), cheap
    assert "state work: the agent reported no cost" in ran.stderr
    [completed] = [e for e in ran.events() if e["event"] == "action_complete"]
    assert completed["agent_cost_known"] is False


@pytest.mark.parametrize(
    "events",
    [
        None,  # plain text output: no stream at all
        [{k: v for k, v in EVENTS[-1].items() if k != "num_turns"}],  # a result, no turns
    ],
)
def test_unknown_agent_turns_do_not_pass_max_turns(
    tmp_path: Path, events: list[dict[str, Any]] | None
) -> None:
    """An agent whose turns nobody reported (plain output; a stream whose only event is a
    `result` without `num_turns`) had `num_turns: 0` in its record, so `max_turns` passed it
    as '0 turn(s), at most 1 allowed': unknown turns are an error of that judge, as an unknown
    cost is of `cost_budget`."""
    if events is None:
        (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('Done.')\n")
        (tmp_path / "events.json").write_text("[]")
    else:
        write_agent(tmp_path, events)
    judges = (
        "- {name: few, builtin: max_turns, arguments: {max_turns: 1}}\n"
        "- {name: seen, check: \"return outputs['num_turns'] is None, 'no turns'\"}\n"
    )
    ran = run_yaml(tmp_path, loop(judges), "--no-lock")
    assert ran.json["final_state"] == "broken", ran.stderr
    judged = ran.state()["captured"]["work"]["judges"]
    assert judged["seen"]["passed"] is True, judged
    assert judged["few"]["passed"] is None, judged
    assert "turns are not known" in str(judged["few"]), judged


def test_unknown_agent_tool_calls_do_not_pass_a_negated_tool_called(tmp_path: Path) -> None:
    """An agent that printed plain text (no stream of its tool_use events) had `tool_calls: []`
    in its record, so `tool_called: {name: Bash, negate: true}` passed it as '0 matching
    call(s) ... (tools called: none)': calls nobody recorded are not 'none called'. The record
    now says null and the judge is an error; a stream without tool_use still passes it."""
    (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('Done.')\n")
    (tmp_path / "events.json").write_text("[]")
    judges = (
        "- {name: no_shell, builtin: tool_called, arguments: {name: Bash, negate: true}}\n"
        "- {name: seen, check: \"return outputs['tool_calls'] is None, 'unknown'\"}\n"
    )
    ran = run_yaml(tmp_path, loop(judges), "--no-lock")
    assert ran.json["final_state"] == "broken", ran.stderr
    judged = ran.state()["captured"]["work"]["judges"]
    assert judged["seen"]["passed"] is True, judged
    assert judged["no_shell"]["passed"] is None, judged
    assert "the agent's tool calls are not known" in str(judged["no_shell"]), judged
    untraced = build_record(stdout="Done.", cost_usd=None, untraced_agent=True)
    assert format_tool_trace(untraced) == "(tool calls not recorded)"  # what an LLM judge reads
    assert "tool calls: not recorded" in format_evidence(untraced)
    write_agent(tmp_path, [EVENTS[-2], EVENTS[-1]])  # a stream: no tool_use in it
    judges = "- {name: no_shell, builtin: tool_called, arguments: {name: Bash, negate: true}}\n"
    ran = run_yaml(tmp_path, loop(judges), "--no-lock")
    assert ran.json["final_state"] == "done", ran.stderr
