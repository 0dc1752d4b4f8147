"""Prompt actions through runners (`anthropic`, `cmd:<command>`) and the LLM preflight."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from engine.llm import create_llm_services, judge_text, llm_preflight, run_prompt_text
from engine.llm.preflight import runner_problem
from engine.model.loop import Evaluate, LlmConfig, Loop, State
from engine.model.ports import ActionResult
from tests.loopback_server import LoopbackServer, MemoryRecorder, Reply, error_reply, message
from tests.runs_helpers import running, wait_until


def prompt_loop(
    *,
    runner: str | None = None,
    loop_runner: str | None = None,
    model: str | None = None,
    loop_model: str | None = None,
) -> tuple[Loop, State]:
    state = State(
        name="ask", action="Say hi", action_type="prompt", runner=runner, model=model, next="done"
    )
    loop = Loop(
        name="t",
        initial="ask",
        llm=LlmConfig(runner=loop_runner, model=loop_model),
        states={"ask": state, "done": State("done", terminal=True)},
    )
    return loop, state


def run(
    loop: Loop,
    state: State,
    tmp_path: Path,
    prompt: str = "Say hi",
    timeout: float | None = None,
    recorder: MemoryRecorder | None = None,
) -> ActionResult:
    services = create_llm_services(loop, run_dir=tmp_path, recorder=recorder or MemoryRecorder())
    return services.run_prompt(prompt, state=state, loop=loop, timeout=timeout)


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "agent.sh"
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_anthropic_runner_joins_text_blocks(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(
        Reply(
            body=message(
                [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world"}],
                input_tokens=1_000_000,
                output_tokens=0,
            )
        )
    )
    recorder = MemoryRecorder()
    loop, state = prompt_loop(loop_model="claude-haiku-4-5")
    result = run(loop, state, tmp_path, prompt="Greet me", recorder=recorder)
    assert result.output == "Hello, world"
    assert result.exit_code == 0 and not result.crashed
    assert result.cost_usd == pytest.approx(1.0)
    body = loopback.requests[0].body
    assert body["messages"] == [{"role": "user", "content": "Greet me"}]
    assert "tools" not in body
    [call] = recorder.of("llm_call")
    assert call["purpose"] == "prompt" and call["state"] == "ask"


def test_anthropic_runner_failure_is_a_crash_never_judged(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = error_reply(401)
    loop, state = prompt_loop()
    result = run(loop, state, tmp_path)
    assert result.crashed
    assert "HTTP 401" in (result.spawn_error or "")


def test_anthropic_runner_timeout_bounds_retries(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.default = Reply(hang=5)
    loop, state = prompt_loop()
    # Imported before the clock starts: the SDK's import (about a second) was timed when this
    # was the first test of its process to call a model, and took it past the bound.
    import anthropic  # noqa: F401

    started = time.monotonic()
    result = run(loop, state, tmp_path, timeout=0.5)
    assert time.monotonic() - started < 2.0  # the 0.5 s timeout, not the server's 5 s hang
    assert result.timed_out and result.crashed


@pytest.mark.parametrize(
    ("state_model", "loop_model", "env", "expected"),
    [
        ("s", "l", {"LL_MODEL": "m"}, "s"),
        (None, "l", {"LL_MODEL": "m"}, "l"),
        (None, None, {"LL_MODEL": "m", "LL_JUDGE_MODEL": "j"}, "m"),
        (None, None, {"LL_JUDGE_MODEL": "j"}, "claude-sonnet-4-6"),
    ],
)
def test_prompt_model_precedence(
    loopback: LoopbackServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    state_model: str | None,
    loop_model: str | None,
    env: dict[str, str],
    expected: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    loopback.push(Reply(body=message([{"type": "text", "text": "ok"}])))
    loop, state = prompt_loop(model=state_model, loop_model=loop_model)
    run(loop, state, tmp_path)
    assert loopback.requests[0].body["model"] == expected


def test_cmd_runner_gets_the_prompt_on_stdin(tmp_path: Path) -> None:
    agent = script(tmp_path, 'echo "agent saw: $(cat)"\necho "to stderr" >&2\n')
    loop, state = prompt_loop(runner=f"cmd:{agent} --flag")
    result = run(loop, state, tmp_path, prompt="fix the 'bug' in $HOME")
    assert result.output == "agent saw: fix the 'bug' in $HOME\n"
    assert result.stderr == "to stderr\n"
    assert result.exit_code == 0


def test_cmd_runner_exit_code_is_kept(tmp_path: Path) -> None:
    agent = script(tmp_path, "cat >/dev/null; exit 3\n")
    loop, state = prompt_loop(runner=f"cmd:{agent}")
    result = run(loop, state, tmp_path)
    assert result.exit_code == 3 and not result.crashed


def test_cmd_runner_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    agent = script(tmp_path, f"sleep 30 &\necho $! > {pid_file}\nwait\n")
    loop, state = prompt_loop(runner=f"cmd:{agent}")
    started = time.monotonic()
    result = run(loop, state, tmp_path, timeout=0.5)
    assert result.timed_out and result.crashed
    assert time.monotonic() - started < 5
    child = int(pid_file.read_text())
    wait_until(lambda: not running(child), timeout=3)


@pytest.mark.parametrize(
    ("state_runner", "loop_runner", "env", "expected"),
    [
        ("cmd:echo state", "cmd:echo loop", "cmd:echo env", "state"),
        (None, "cmd:echo loop", "cmd:echo env", "loop"),
        (None, None, "cmd:echo env", "env"),
    ],
)
def test_runner_precedence(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    state_runner: str | None,
    loop_runner: str | None,
    env: str,
    expected: str,
) -> None:
    monkeypatch.setenv("LL_PROMPT_RUNNER", env)
    loop, state = prompt_loop(runner=state_runner, loop_runner=loop_runner)
    assert run(loop, state, tmp_path).output == f"{expected}\n"


def test_unknown_runner_cannot_start(tmp_path: Path) -> None:
    loop, state = prompt_loop(runner="openai")
    result = run(loop, state, tmp_path)
    assert result.crashed
    assert "unknown prompt runner 'openai'" in (result.spawn_error or "")


def test_run_prompt_text_standalone(tmp_path: Path) -> None:
    agent = script(tmp_path, "tr a-z A-Z\n")
    result = run_prompt_text("shout", runner=f"cmd:{agent}")
    assert result.output == "SHOUT"


# -- preflight ------------------------------------------------------------------------------


def judge_loop() -> Loop:
    spec = Evaluate(type="llm_structured", prompt="ok?")
    check = State(name="check", action="true", evaluate=spec, routes={"yes": "d", "no": "d"})
    return Loop(name="t", initial="check", states={"check": check, "d": State("d", terminal=True)})


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_PROFILE",
        "LL_PROMPT_RUNNER",
        "LL_PRICES",
    ):
        monkeypatch.delenv(name, raising=False)


def test_preflight_without_credentials_names_what_to_set(no_credentials: None) -> None:
    [problem] = llm_preflight(judge_loop())
    assert "'check'" in problem
    assert "ANTHROPIC_API_KEY" in problem


def test_preflight_with_credentials_is_clean(
    no_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token")
    assert llm_preflight(judge_loop()) == []


def test_preflight_replay_needs_no_credentials(no_credentials: None, tmp_path: Path) -> None:
    (tmp_path / "llm.jsonl").write_text("")
    assert llm_preflight(judge_loop(), replay=True, replay_from=tmp_path) == []


def test_preflight_ignores_loops_without_llm_states(no_credentials: None) -> None:
    loop = Loop(
        name="t",
        initial="a",
        states={"a": State("a", action="true", next="b"), "b": State("b", terminal=True)},
    )
    assert llm_preflight(loop) == []


def test_preflight_cmd_runner_must_be_on_path(no_credentials: None) -> None:
    loop, _ = prompt_loop(runner="cmd:no-such-agent-cli -p")
    [problem] = llm_preflight(loop)
    assert "'no-such-agent-cli' is not an executable on PATH" in problem


@pytest.mark.parametrize(
    "runner",
    [
        "cmd:exit 1",
        "cmd:cd /tmp && cat",
        "cmd:FOO=1 cat",
        "cmd:{ cat; }",
        "cmd:$HOME/agent -p",
        "cmd:cat $'it\\'s'",  # bash's ANSI-C quoting, which Python's shlex cannot read
    ],
)
def test_preflight_reads_a_cmd_runner_as_bash_runs_it(runner: str) -> None:
    """`bash -c` runs the runner's command line: a builtin, a keyword, an assignment before
    the program or an expansion is not "a program missing from PATH"."""
    assert runner_problem(runner) is None
    assert "'no-such' is not an executable on PATH" in str(runner_problem("cmd:FOO=1 no-such"))
    assert "is not a valid command line" in str(runner_problem('cmd:cat "unclosed'))


def test_a_runner_in_bash_s_own_quoting_is_still_looked_for_on_path() -> None:
    """A line shlex cannot split but bash reads (7ceca49) was passed whole, so a program
    missing from PATH was found only when the prompt ran (exit 127), as it is for no other
    line."""
    problem = runner_problem("cmd:no-such-agent-cli --append $'it\\'s'")
    assert "'no-such-agent-cli' is not an executable on PATH" in str(problem)
    assert runner_problem("cmd:FOO=$'a\\'b' cat $'it\\'s'") is None


def test_preflight_cmd_runner_needs_no_credentials(no_credentials: None) -> None:
    loop, _ = prompt_loop(runner="cmd:cat")
    assert llm_preflight(loop) == []


def test_preflight_unknown_runner(no_credentials: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    loop, _ = prompt_loop(loop_runner="gpt")
    [problem] = llm_preflight(loop)
    assert "unknown prompt runner 'gpt'" in problem


def test_preflight_reports_a_bad_price_file(
    no_credentials: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    (tmp_path / "p.json").write_text("[1, 2]")
    monkeypatch.setenv("LL_PRICES", str(tmp_path / "p.json"))
    [problem] = llm_preflight(judge_loop())
    assert "is not a JSON object" in problem


def test_two_states_without_credentials_are_named_together(no_credentials: None) -> None:
    spec = Evaluate(type="llm_structured", prompt="ok?")
    states = {
        "a": State("a", action="Do it", action_type="prompt", next="b"),
        "b": State("b", action="true", evaluate=spec, routes={"yes": "d", "no": "d"}),
        "d": State("d", terminal=True),
    }
    [problem] = llm_preflight(Loop(name="t", initial="a", states=states))
    assert problem.startswith("states 'a', 'b' call the Anthropic API but no credentials are set")


def test_judging_without_credentials_is_an_error_verdict(
    loopback: LoopbackServer, no_credentials: None, tmp_path: Path
) -> None:
    verdict = judge_text("ok?", "text", run_dir=tmp_path)
    assert verdict.name == "error"
    assert loopback.requests == []


@pytest.mark.parametrize(
    ("stop_reason", "exit_code", "note"),
    [("end_turn", 0, ""), ("max_tokens", 0, "cut off at max_tokens"), ("refusal", 1, "refused")],
)
def test_anthropic_runner_reports_how_the_answer_stopped(
    loopback: LoopbackServer, tmp_path: Path, stop_reason: str, exit_code: int, note: str
) -> None:
    loopback.push(
        Reply(body=message([{"type": "text", "text": "partial"}], stop_reason=stop_reason))
    )
    loop, state = prompt_loop()
    result = run(loop, state, tmp_path)
    assert result.exit_code == exit_code
    assert note in result.stderr and (note or result.stderr == "")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LL_LLM_TIMEOUT", "soon"),
        ("LL_LLM_TIMEOUT", "0"),
        ("LL_LLM_MAX_ATTEMPTS", "2.5"),
        ("LL_LLM_MAX_WAIT", "-1"),
    ],
)
def test_preflight_rejects_bad_retry_settings(
    no_credentials: None, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv(name, value)
    [problem] = llm_preflight(judge_loop())
    assert problem.startswith(f"{name}={value!r} is not")
