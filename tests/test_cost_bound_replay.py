"""The static cost bound holds for real runs: random loops with prompt states, sampled judges and
rubric reviewers run through the real CLI against the loopback server, answered adversarially
(every answer as long as `max_tokens` allows, every request billed at the most input the bound
allows, random malformed answers that force the retry, random verdicts), then run again with
`--replay` of the recorded answers. Neither run may make more calls, or spend more (at the
loop's prices, replayed tokens included), than `ll-loop show --cost` promised."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.llm.costs import OVERHEAD_TOKENS, loop_cost, request_chars
from engine.llm.prices import PriceTable
from engine.load.loader import load_loop_file
from tests.loopback_server import LoopbackServer, Reply, message
from tests.run_helpers import ll_loop

MODELS = ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-1", "some-new-model")
_BLOCK = re.compile(r"<(judged_text_[0-9a-f]{12})>\n(.*)\n</\1>", re.DOTALL)


def random_loop(rng: random.Random) -> dict[str, Any]:
    """A valid loop: 2-5 working states (shell, prompt, judged shell, rubric-reviewed prompt),
    routed anywhere, every default route to the success terminal so lint lets it run."""
    names = [f"s{i}" for i in range(rng.randint(2, 5))]
    anywhere = [*names, "done", "failed"]
    states: dict[str, Any] = {}
    for name in names:
        kind = rng.choice(["shell", "prompt", "judged", "rubric", "prompt-judged"])
        state: dict[str, Any] = {"timeout": 30}
        if kind in ("prompt", "rubric", "prompt-judged"):
            state["action_type"] = "prompt"
            state["action"] = (
                f"Write one line about {name}; earlier: ${{prev.output | default('')}}"
            )
        else:
            state["action"] = f"echo 'report of {name}: {rng.randint(0, 99)} checks passed'"
        if kind in ("judged", "prompt-judged"):
            state["evaluate"] = {
                "type": "llm_structured",
                "prompt": "Did the checks pass? Quote the line verbatim.",
                "samples": rng.randint(1, 3),
                "model": rng.choice(MODELS),
            }
        elif kind == "rubric":
            state["evaluate"] = {
                "type": "llm_structured",
                "prompt": "Review the line.",
                "dimensions": [
                    {"name": "clarity", "description": "Clear.", "weight": 0.6},
                    {"name": "brevity", "description": "Short.", "weight": 0.4},
                ],
                "reviewers": rng.randint(1, 3),
            }
        if kind == "prompt" or (kind == "shell" and rng.random() < 0.5):
            state["next"] = rng.choice(anywhere)
            state["on_error"] = "done"
        else:
            state["route"] = {
                "yes": rng.choice(anywhere),
                "no": rng.choice(anywhere),
                "_": "done",
            }
        states[name] = state
    states["done"] = {"terminal": True}
    states["failed"] = {"terminal": True, "failure": True}
    loop: dict[str, Any] = {
        "name": "random-cost",
        "initial": names[0],
        "scope": ["."],
        "max_steps": rng.randint(2, 9),
        "llm": {"model": rng.choice(MODELS), "max_tokens": rng.choice([64, 512, 2048])},
        "states": states,
    }
    if rng.random() < 0.3:
        loop["max_cost_usd"] = rng.choice([0.01, 0.1, 1.0])
    return loop


class Adversary:
    """Answers every request at the bound's own worst case, with random verdicts."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def __call__(self, request: dict[str, Any]) -> Reply:
        usage = {
            "input_tokens": request_chars(request) + OVERHEAD_TOKENS,
            "output_tokens": int(request["max_tokens"]),
        }
        tools = request.get("tools") or []
        if not tools:
            content = [{"type": "text", "text": f"answer {self.rng.randint(0, 9)}"}]
        elif self.rng.random() < 0.25:  # malformed: no tool call, so the judge asks again
            content = [{"type": "text", "text": "I would rather not use the tool."}]
        else:
            content = [{"type": "tool_use", "id": "toolu_x", "name": tools[0]["name"],
                        "input": self._answer(request, tools[0])}]  # fmt: skip
        body = message(content, model=request["model"], **usage)
        return Reply(body=body)

    def _answer(self, request: dict[str, Any], tool: dict[str, Any]) -> dict[str, Any]:
        if tool["name"] == "submit_scores":
            return {"clarity": self.rng.randint(1, 5), "brevity": self.rng.randint(1, 5),
                    "reason": "scored"}  # fmt: skip
        found = _BLOCK.search(request["messages"][0]["content"])
        quote = found.group(2).splitlines()[0][:40] if found and found.group(2) else ""
        verdict = self.rng.choice(["yes", "yes", "no", "partial", "cannot_judge"])
        return {"verdict": verdict, "confidence": self.rng.choice([0.9, 0.3]), "reason": "r",
                "evidence": quote}  # fmt: skip


def spent(events: list[dict[str, Any]], prices: PriceTable) -> tuple[int, float]:
    """(calls, dollars at list price) of a run's `llm_call` events, replayed ones included."""
    calls = [e for e in events if e.get("event") == "llm_call"]
    dollars = sum(
        prices.cost(str(e["model"]), int(e["input_tokens"]), int(e["output_tokens"])) for e in calls
    )
    return len(calls), dollars


def events_of(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("seed", range(8))
def test_random_loops_never_spend_more_than_the_bound(
    seed: int, loopback: LoopbackServer, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    loopback.default = Adversary(rng)
    path = tmp_path / "loop.yaml"
    path.write_text(yaml.safe_dump(random_loop(rng), sort_keys=False))
    prices = PriceTable()
    bound = loop_cost(load_loop_file(path), prices=prices)
    assert bound.bounded and bound.calls is not None and bound.usd is not None

    live = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--quiet")
    assert live.code in (0, 1, 3), live.stderr
    run_id = live.json["run_id"]
    live_calls, live_usd = spent(events_of(tmp_path / ".loops" / "runs" / run_id), prices)
    assert live_calls <= bound.calls
    first = load_loop_file(path).initial
    if first in bound.steps and bound.steps[first].calls:
        assert live_calls > 0  # the run did reach the model: the check is not vacuous
    assert live.json["cost_usd"] <= bound.usd + 1e-12
    assert live_usd <= bound.usd + 1e-12

    replayed = ll_loop(tmp_path, "run", "loop.yaml", "--json", "--quiet", "--replay", run_id)
    assert replayed.code in (0, 1, 3), replayed.stderr
    replay_events = events_of(tmp_path / ".loops" / "runs" / replayed.json["run_id"])
    assert all(e["source"] == "replay" for e in replay_events if e["event"] == "llm_call")
    replay_calls, replay_usd = spent(replay_events, prices)
    assert replay_calls <= bound.calls
    # a replayed answer counts the cost recorded for it, so the replay is the run again,
    # max_cost_usd included: same bound, same end, same calls, same dollars
    assert replay_usd <= bound.usd + 1e-12
    assert replayed.json["cost_usd"] == pytest.approx(live.json["cost_usd"])
    for key in ("final_state", "terminated_by", "steps"):
        assert replayed.json[key] == live.json[key]
    assert replay_calls == live_calls
