"""Record, replay, cache and cost accounting, through the real SDK and real files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from engine.llm import create_llm_services, llm_preflight
from engine.llm.prices import PriceTable, load_prices
from engine.model.errors import PreflightError
from engine.model.loop import Dimension, Evaluate, LlmConfig, Loop, State
from engine.model.ports import LlmServices, Verdict
from tests.cli import ll_loop
from tests.loopback_server import (
    LoopbackServer,
    MemoryRecorder,
    error_reply,
    text_reply,
    tool_reply,
    verdict_reply,
)
from tests.run_helpers import write_loop

TEXT = "lint: 0 problems"
QUOTE = "0 problems"


def make(samples: int = 1, model: str = "claude-haiku-4-5") -> tuple[Loop, State, Evaluate]:
    spec = Evaluate(type="llm_structured", prompt="Is lint clean?", samples=samples)
    state = State(name="check", action="lint", evaluate=spec, routes={"yes": "d", "no": "d"})
    loop = Loop(
        name="t",
        initial="check",
        llm=LlmConfig(model=model),
        states={"check": state, "d": State("d", terminal=True)},
    )
    return loop, state, spec


def services(
    run_dir: Path, recorder: MemoryRecorder | None = None, **kwargs: Any
) -> tuple[LlmServices, Loop, State, Evaluate]:
    loop, state, spec = make(kwargs.pop("samples", 1))
    made = create_llm_services(
        loop, run_dir=run_dir, recorder=recorder or MemoryRecorder(), **kwargs
    )
    return made, loop, state, spec


def judge_once(run_dir: Path, text: str = TEXT, **kwargs: Any) -> tuple[Verdict, LlmServices]:
    made, loop, state, spec = services(run_dir, **kwargs)
    return made.judge(spec, text, state=state, loop=loop), made


def log_entries(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "llm.jsonl").read_text().splitlines()]


def test_every_call_is_logged_with_request_and_response(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(error_reply(500), verdict_reply("yes", evidence=QUOTE))
    judge_once(tmp_path / "r1")
    [entry] = log_entries(tmp_path / "r1")
    assert entry["status"] == "ok"
    assert entry["attempts"] == 2
    content = entry["request"]["messages"][0]["content"]
    assert re.search(rf"<(judged_text_[0-9a-f]{{12}})>\n{TEXT}\n</\1>$", content)
    assert entry["response"]["content"][0]["name"] == "submit_verdict"
    assert len(entry["hash"]) == 64 and entry["sample"] == 0


def test_replay_serves_from_the_log_without_http(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(
        verdict_reply("yes", evidence=QUOTE),
        verdict_reply("no"),
        verdict_reply("yes", evidence=QUOTE),
    )
    first, recorded = judge_once(tmp_path / "r1", samples=3)
    served = len(loopback.requests)
    recorder = MemoryRecorder()
    again, made = judge_once(
        tmp_path / "r2", samples=3, replay_from=tmp_path / "r1", recorder=recorder
    )
    assert len(loopback.requests) == served  # the server received nothing
    assert again.name == first.name == "yes"
    assert [s["verdict"] for s in again.details["samples"]] == [
        s["verdict"] for s in first.details["samples"]
    ]
    assert {c["source"] for c in recorder.of("llm_call")} == {"replay"}
    assert recorded.cost_usd > 0
    assert made.cost_usd == pytest.approx(recorded.cost_usd)  # the costs recorded then
    assert len(log_entries(tmp_path / "r2")) == 3  # the replayed run has its own log


def test_replay_serves_repeated_requests_in_recorded_order(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(verdict_reply("no"), verdict_reply("yes", evidence=QUOTE))
    made, loop, state, spec = services(tmp_path / "r1")
    recorded = [made.judge(spec, TEXT, state=state, loop=loop).name for _ in range(2)]
    replayed_services, *_ = services(tmp_path / "r2", replay_from=tmp_path / "r1")
    replayed = [replayed_services.judge(spec, TEXT, state=state, loop=loop).name for _ in range(2)]
    assert recorded == replayed == ["no", "yes"]


def test_replay_miss_is_an_error_verdict_not_a_live_call(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.push(verdict_reply("yes", evidence=QUOTE))
    judge_once(tmp_path / "r1")
    loopback.default = verdict_reply("yes", evidence="changed")
    verdict, _ = judge_once(tmp_path / "r2", text="lint: changed", replay_from=tmp_path / "r1")
    assert verdict.name == "error"
    assert "replay miss" in verdict.details["error"]
    assert "'check'" in verdict.details["error"]
    assert len(loopback.requests) == 1


def test_replay_of_a_run_without_log_fails_before_any_step(tmp_path: Path) -> None:
    loop, _, _ = make()
    (tmp_path / "old").mkdir()
    with pytest.raises(PreflightError, match=r"llm\.jsonl does not exist"):
        create_llm_services(
            loop, run_dir=tmp_path / "new", recorder=MemoryRecorder(), replay_from=tmp_path / "old"
        )
    [problem] = llm_preflight(loop, replay=True, replay_from=tmp_path / "old")
    assert "llm.jsonl does not exist" in problem


def test_replay_skips_a_torn_last_line_and_refuses_bytes_that_are_not_utf8(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A crash can cut the log's last call short: the calls before it still replay. A log
    with bytes that are not UTF-8 is one sentence (it was an internal error)."""
    loopback.push(verdict_reply("yes", evidence=QUOTE))
    judge_once(tmp_path / "r1")
    log = tmp_path / "r1" / "llm.jsonl"
    whole = log.read_bytes()
    log.write_bytes(whole + whole[: len(whole) // 2])
    verdict, _ = judge_once(tmp_path / "r2", replay_from=tmp_path / "r1")
    assert verdict.name == "yes"
    assert len(loopback.requests) == 1

    log.write_bytes(b"\xff\xfe\n" + whole)
    loop, _, _ = make()
    with pytest.raises(PreflightError, match=r"llm\.jsonl:1 is not JSON"):
        create_llm_services(
            loop, run_dir=tmp_path / "r3", recorder=MemoryRecorder(), replay_from=tmp_path / "r1"
        )


def test_cache_serves_identical_requests_and_never_errors(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_LLM_CACHE_DIR", str(tmp_path / "cache"))
    loopback.push(error_reply(400), verdict_reply("yes", evidence=QUOTE))
    assert judge_once(tmp_path / "r1", cache=True)[0].name == "error"
    assert not list((tmp_path / "cache").glob("*.json"))
    assert judge_once(tmp_path / "r2", cache=True)[0].name == "yes"  # the error was not cached
    assert len(loopback.requests) == 2
    recorder = MemoryRecorder()
    verdict, made = judge_once(tmp_path / "r3", cache=True, recorder=recorder)
    assert verdict.name == "yes"
    assert len(loopback.requests) == 2  # served from the cache
    assert recorder.of("llm_call")[0]["source"] == "cache"
    assert made.cost_usd == 0.0


def test_invalid_answers_are_not_cached(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_LLM_CACHE_DIR", str(tmp_path / "cache"))
    loopback.push(text_reply("no tool"), verdict_reply("no"))
    assert judge_once(tmp_path / "r1", cache=True)[0].name == "no"
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1
    assert judge_once(tmp_path / "r2", cache=True)[0].name == "no"
    assert len(loopback.requests) == 2


def test_loop_llm_cache_switches_the_cache_on(loopback: LoopbackServer, tmp_path: Path) -> None:
    run_dir = tmp_path / ".loops" / "runs" / "run-1"
    loop, state, spec = make()
    loop = Loop(
        name=loop.name,
        initial=loop.initial,
        states=loop.states,
        llm=LlmConfig(model="claude-haiku-4-5", cache=True),
    )
    loopback.push(verdict_reply("no"))
    create_llm_services(loop, run_dir=run_dir, recorder=MemoryRecorder()).judge(
        spec, TEXT, state=state, loop=loop
    )
    assert len(list((tmp_path / ".loops" / "llm-cache").glob("*.json"))) == 1


def test_cost_per_call_state_and_run(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(
        verdict_reply("no", input_tokens=1000, output_tokens=500),
        verdict_reply("no", input_tokens=2000, output_tokens=100),
    )
    recorder = MemoryRecorder()
    made, loop, state, spec = services(tmp_path / "r1", recorder, samples=2)
    verdict = made.judge(spec, TEXT, state=state, loop=loop)
    expected = (3000 * 1.0 + 600 * 5.0) / 1e6  # claude-haiku-4-5: $1 / $5 per million tokens
    assert made.cost_usd == pytest.approx(expected)
    assert verdict.details["cost_usd"] == pytest.approx(expected)
    assert verdict.details["input_tokens"] == 3000
    calls = recorder.of("llm_call")
    assert sum(c["cost_usd"] for c in calls) == pytest.approx(expected)
    assert {c["state"] for c in calls} == {"check"}
    assert set(calls[0]) >= {
        "model",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "latency_ms",
        "request_hash",
        "attempt",
        "status",
    }
    assert made.cost_by_state() == {"check": pytest.approx(expected)}  # type: ignore[attr-defined]
    assert calls[-1]["state_cost_usd"] == calls[-1]["run_cost_usd"] == pytest.approx(expected)


def test_price_table_lookup() -> None:
    table = PriceTable()
    assert table.price_for("claude-haiku-4-5-20251001").input == 1.0
    assert table.price_for("claude-sonnet-9").output == 15.0  # family
    assert table.price_for("some-other-model") == table.default


def test_price_override_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {"claude-haiku-4-5": {"input": 2, "output": 4}, "default": {"input": 9, "output": 9}}
        )
    )
    monkeypatch.setenv("LL_PRICES", str(prices))
    table = load_prices()
    assert table.cost("claude-haiku-4-5", 1_000_000, 1_000_000) == 6.0
    assert table.cost("mystery", 1_000_000, 0) == 9.0
    prices.write_text('{"claude-x": {"input": "cheap"}}')
    with pytest.raises(PreflightError, match="needs 'input' and 'output' as numbers ≥ 0"):
        load_prices()


@pytest.mark.parametrize("price", ["-3", "NaN", "Infinity", "1e400", "true"])
def test_a_price_that_is_not_a_price_stops_the_run_in_preflight(
    loopback: LoopbackServer, tmp_path: Path, price: str
) -> None:
    """A negative price made the run's cost negative (under any `max_cost_usd`); NaN and
    infinity were printed by `run --json` as text that is not JSON and could not be written to
    history.db; `true` was priced as 1."""
    write_loop(tmp_path, PROMPT_LOOP)
    (tmp_path / ".loops").mkdir(exist_ok=True)
    (tmp_path / ".loops" / "prices.json").write_text(
        f'{{"claude-sonnet-4-6": {{"input": {price}, "output": 15}}}}'
    )
    loopback.default = text_reply("hello")
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json")
    assert ran.code == 2, ran.stdout
    assert "entry 'claude-sonnet-4-6' needs 'input' and 'output' as numbers ≥ 0" in ran.stderr
    assert json.loads(ran.stdout)["steps"] == 0
    assert not loopback.requests


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (b'{"claude-x": {"input": 1,\n "output": 2,}}', "prices.json:2:14: not valid JSON: "),
        (b"[" * 100_000 + b"]" * 100_000, "prices.json:1:1: not usable JSON: the JSON nests"),
    ],
)
def test_a_price_table_that_is_not_json_is_refused_at_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: bytes, said: str
) -> None:
    """JSON nested past Python's recursion limit was an internal error (RecursionError); a
    syntax error gave Python's "line 2 column 14 (char 40)" after the file name."""
    prices = tmp_path / "prices.json"
    prices.write_bytes(text)
    monkeypatch.setenv("LL_PRICES", str(prices))
    with pytest.raises(PreflightError) as refused:
        load_prices()
    assert refused.value.message.startswith(f"cannot read price table {tmp_path}/{said}")
    prices.write_bytes(b'\xef\xbb\xbf{"claude-x": {"input": 1, "output": 2}}')  # a BOM: read past
    assert load_prices().price_for("claude-x").output == 2.0


def test_project_prices_json_is_used(loopback: LoopbackServer, tmp_path: Path) -> None:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "prices.json").write_text(
        json.dumps({"claude-haiku-4-5": {"input": 1000, "output": 0}})
    )
    loopback.push(verdict_reply("no", input_tokens=1000, output_tokens=0))
    _, made = judge_once(tmp_path / ".loops" / "runs" / "run-1")
    assert made.cost_usd == pytest.approx(1.0)


def test_bound_views_tag_events_and_share_costs(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.push(
        verdict_reply("no", input_tokens=1000, output_tokens=0),
        verdict_reply("no", input_tokens=1000, output_tokens=0),
    )
    recorder = MemoryRecorder()
    made, loop, state, spec = services(tmp_path / "r1", recorder)
    made.judge(spec, TEXT, state=state, loop=loop)
    child = made.bind(depth=1, step=4)  # type: ignore[attr-defined]
    child.judge(spec, TEXT + " (child)", state=state, loop=loop)
    first, second = recorder.of("llm_call")
    assert (first["depth"], "step" in first) == (0, False)
    assert (second["depth"], second["step"]) == (1, 4)
    assert made.cost_usd == child.cost_usd == pytest.approx(2 * 1000 * 1.0 / 1e6)


def test_a_replay_refused_for_its_log_leaves_no_run_directory(tmp_path: Path) -> None:
    """The log is read once the run's directory exists: a refusal left an empty directory with
    no state.json behind, which `status` does not list and nothing ever removed."""
    write_loop(
        tmp_path,
        """
name: judged
initial: a
scope: ["."]
states:
  a:
    action: echo hi
    evaluate: {type: llm_structured, prompt: "Is it right? Quote it."}
    on_yes: done
    on_no: done
    on_error: done
  done: {terminal: true}
""",
    )
    old = tmp_path / ".loops" / "runs" / "old"
    old.mkdir(parents=True)
    (old / "llm.jsonl").write_text('{"x":\n')
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--replay", "old")
    assert ran.code == 2 and "llm.jsonl:1 is not JSON" in ran.stderr
    assert [p.name for p in (tmp_path / ".loops" / "runs").iterdir()] == ["old"]


PROMPT_LOOP = """
name: asked
initial: ask
scope: ["."]
states:
  ask:
    action_type: prompt
    action: "Say hello"
    timeout: 30
    next: done
  done: {terminal: true}
"""


def test_a_recorded_answer_that_is_not_a_messages_answer_is_refused_before_any_step(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """A hand-edited log whose `response.content` was not a list reached the prompt runner and
    ended `run --json` with an internal error (TypeError) and nothing on stdout."""
    write_loop(tmp_path, PROMPT_LOOP)
    loopback.push(text_reply("hello"))
    first = ll_loop(tmp_path, "run", "loop.yaml", "--json")
    assert first.code == 0, first.stderr
    run_dir = tmp_path / ".loops" / "runs" / json.loads(first.stdout)["run_id"]
    [entry] = log_entries(run_dir)
    entry["response"]["content"] = 5
    (run_dir / "llm.jsonl").write_text(json.dumps(entry) + "\n")
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--replay", str(run_dir))
    assert ran.code == 2, ran.stderr
    assert "llm.jsonl:1 records a response that is not a Messages API answer" in ran.stderr
    assert "internal error" not in ran.stderr
    assert json.loads(ran.stdout)["steps"] == 0
    assert len(loopback.requests) == 1


def test_a_cache_file_with_a_malformed_answer_is_a_miss(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_LLM_CACHE_DIR", str(tmp_path / "cache"))
    loopback.push(verdict_reply("yes", evidence=QUOTE), verdict_reply("no"))
    assert judge_once(tmp_path / "r1", cache=True)[0].name == "yes"
    [stored] = (tmp_path / "cache").glob("*.json")
    data = json.loads(stored.read_text())
    data["response"]["content"] = 5
    stored.write_text(json.dumps(data))
    verdict, _ = judge_once(tmp_path / "r2", cache=True)
    assert verdict.name == "no"  # asked again, not a crash
    assert len(loopback.requests) == 2


def test_a_replay_that_answers_only_some_samples_is_an_error_verdict(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """`samples: 3` became 5 after the recording: the three recorded `yes` outvoted the two
    misses and the replayed run passed on answers the edited loop never got."""
    loopback.default = verdict_reply("yes", evidence=QUOTE)
    assert judge_once(tmp_path / "r1", samples=3)[0].name == "yes"
    verdict, _ = judge_once(tmp_path / "r2", samples=5, replay_from=tmp_path / "r1")
    assert verdict.name == "error"
    assert verdict.details["error"].startswith("2 of 5 samples have no recorded answer")
    assert "replay miss" in verdict.details["error"]
    assert verdict.details["votes"] == {"yes": 3, "error": 2}  # every sample is still shown
    assert judge_once(tmp_path / "r3", samples=3, replay_from=tmp_path / "r1")[0].name == "yes"


def test_a_replay_that_answers_only_some_reviewers_is_an_error_verdict(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    dims = (Dimension("correctness", "Right?", 1.0),)
    state = State(name="review", action="diff", routes={"yes": "d", "no": "d"})
    loop = Loop(
        name="t", initial="review", states={"review": state, "d": State("d", terminal=True)}
    )
    loopback.default = tool_reply({"correctness": 5, "reason": "fine"})

    def review(run: str, reviewers: int, replay: Path | None = None) -> Verdict:
        spec = Evaluate(
            type="llm_structured", prompt="Review it.", dimensions=dims, reviewers=reviewers
        )
        made = create_llm_services(
            loop, run_dir=tmp_path / run, recorder=MemoryRecorder(), replay_from=replay
        )
        return made.judge(spec, "the patch", state=state, loop=loop)

    assert review("r1", 1).name == "yes"
    verdict = review("r2", 3, replay=tmp_path / "r1")  # one recorded reviewer was a fallback
    assert verdict.name == "error", verdict.details
    assert verdict.details["error"].startswith("2 of 3 reviewers have no recorded answer")


ASSESSED = """
name: assessed
initial: check
scope: ["."]
states:
  check:
    action: "echo 'all 40 tests passed'"
    evaluate:
      type: assessment
      judges:
        - {name: green, feedback_type: bool, samples: SAMPLES, prompt: "Did every test pass?"}
    on_yes: done
    on_no: failed
    on_error: broken
  done: {terminal: true}
  failed: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
"""


def test_a_replay_that_answers_only_some_samples_of_an_assessment_judge_is_its_error(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.default = tool_reply(
        {"passed": True, "confidence": 0.9, "reason": "ok", "evidence": "all 40 tests passed"}
    )
    write_loop(tmp_path, ASSESSED.replace("SAMPLES", "3"))
    first = ll_loop(tmp_path, "run", "loop.yaml", "--json")
    assert first.json["final_state"] == "done", first.stderr
    write_loop(tmp_path, ASSESSED.replace("SAMPLES", "5"))
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--replay", first.json["run_id"])
    assert ran.json["final_state"] == "broken", ran.stdout  # it passed on three recorded answers
    [judged] = [e for e in ran.events() if e["event"] == "evaluate"]
    green = judged["details"]["judges"]["green"]
    assert "2 of 5 calls have no recorded answer" in green["error"]
    assert len(loopback.requests) == 3


def test_a_replay_refused_for_its_log_is_not_told_to_use_replay(tmp_path: Path) -> None:
    """A run already replaying, refused because RUN has no llm.jsonl (here a directory of that
    name), was told "does not exist" and hinted "fix the LLM settings, or use --replay RUN"."""
    write_loop(tmp_path, PROMPT_LOOP)
    old = tmp_path / ".loops" / "runs" / "old"
    (old / "llm.jsonl").mkdir(parents=True)
    ran = ll_loop(tmp_path, "run", "loop.yaml", "--replay", "old")
    assert ran.code == 2
    assert "llm.jsonl is not a file" in ran.stderr
    assert "use --replay" not in ran.stderr
    assert "hint: replay a run that made this loop's LLM calls" in ran.stderr


def test_a_missing_agent_cli_is_not_told_to_use_replay(tmp_path: Path) -> None:
    """A replay runs `cmd:` agents again, so "or use --replay RUN" was no way out."""
    loop = PROMPT_LOOP.replace("timeout: 30", 'timeout: 30\n    runner: "cmd:no-such-agent-h5"')
    write_loop(tmp_path, loop)
    ran = ll_loop(tmp_path, "run", "loop.yaml")
    assert ran.code == 2 and "'no-such-agent-h5' is not an executable" in ran.stderr
    assert "use --replay" not in ran.stderr


SPENDING_LOOP = """
name: spend
initial: ask
scope: ["."]
max_steps: 10
max_cost_usd: 0.0025
llm: {model: claude-haiku-4-5}
states:
  ask:
    action_type: prompt
    action: "Say hello"
    timeout: 30
    next: check
  check:
    action: "exit 1"
    on_yes: done
    on_no: ask
  done: {terminal: true}
"""


def test_a_replay_of_a_run_that_ended_max_cost_ends_there_too(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Replayed answers cost $0, so the replay of a run that ended `max_cost` ran on past the
    step where the run had stopped (to max_steps): the replay did not reproduce the run. Each
    replayed answer now counts the cost recorded for it (nothing is spent)."""
    write_loop(tmp_path, SPENDING_LOOP)
    loopback.default = text_reply("hello", input_tokens=1000, output_tokens=200)
    live = ll_loop(tmp_path, "run", "loop.yaml", "--json")
    assert live.code == 3, live.stderr
    assert live.json["terminated_by"] == "max_cost"
    asked = len(loopback.requests)
    replayed = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--replay", live.json["run_id"])
    assert len(loopback.requests) == asked  # nothing was asked again
    for key in ("terminated_by", "final_state", "steps", "cost_usd"):
        assert replayed.json[key] == live.json[key], (key, replayed.stderr)
    run_dir = tmp_path / ".loops" / "runs" / replayed.json["run_id"]
    costs = [entry["cost_usd"] for entry in log_entries(run_dir)]
    assert costs and all(cost == pytest.approx(0.002) for cost in costs)


def test_a_cache_entry_that_is_a_fifo_is_a_miss_not_a_wait(tmp_path: Path) -> None:
    """A FIFO standing as an entry of `.loops/cache/` made a `--cache` run wait for a writer
    forever at that call: the cache read its files with a plain open. An entry that is not a
    regular file is a miss, as one that does not parse is."""
    import os
    import threading

    from engine.llm.calllog import ResponseCache

    os.mkfifo(tmp_path / "k.json")
    found: list[object] = []
    reader = threading.Thread(
        target=lambda: found.append(ResponseCache(tmp_path).get("k", {"a": 1})), daemon=True
    )
    reader.start()
    reader.join(10)
    waited = reader.is_alive()
    if waited:  # let the blocked reader go before failing
        os.close(os.open(tmp_path / "k.json", os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert not waited, "the cache waited for a writer of its FIFO entry"
    assert found == [None]
