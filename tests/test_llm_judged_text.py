"""A judge sees at most `LL_JUDGE_MAX_CHARS` (default 100,000) characters of the judged text.

Longer texts keep their head (~20%) and tail (~80%) around one marker line; the prompt says the
text was shortened, evidence is checked against what was shown, and the details say what
happened. Everything goes through the real SDK to the loopback Messages API.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from engine.llm import create_llm_services
from engine.model.loop import Dimension, Evaluate, Loop, State
from engine.model.ports import Verdict
from tests.loopback_server import LoopbackServer, MemoryRecorder, tool_reply, verdict_reply
from tests.run_helpers import run_yaml

DEFAULT_LIMIT = 100_000
MARKER = re.compile(
    r"^\[\.\.\. ([\d,]+) characters omitted by ll-loop: the judged text was longer than "
    r"([\d,]+) characters \.\.\.\]$",
    re.MULTILINE,
)
BLOCK = re.compile(r"<(judged_text_[0-9a-f]{12})>\n(.*)\n</\1>$", re.DOTALL)
SPEC = Evaluate(type="llm_structured", prompt="Did every test pass? Quote the summary line.")


@pytest.fixture(autouse=True)
def no_limit_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from the default limit, whatever the outer environment sets."""
    monkeypatch.delenv("LL_JUDGE_MAX_CHARS", raising=False)


def build_log(chars: int) -> str:
    """A test log of about `chars` characters: a header, numbered middle lines, a summary."""
    head = "BUILD START: compiling 412 modules\n"
    tail = "SUMMARY: 1234 tests, 1234 passed, 0 failed\n"
    lines, size, i = [], len(head) + len(tail), 0
    while size < chars:
        line = f"middle line {i:07d}: test_case_{i} ... ok\n"
        lines.append(line)
        size += len(line)
        i += 1
    return head + "".join(lines) + tail


def judge(text: str, tmp_path: Path, spec: Evaluate = SPEC) -> Verdict:
    state = State(name="check", action="make test", evaluate=spec, routes={"yes": "d", "no": "d"})
    loop = Loop(name="t", initial="check", states={"check": state, "d": State("d", terminal=True)})
    services = create_llm_services(loop, run_dir=tmp_path / "run", recorder=MemoryRecorder())
    return services.judge(spec, text, state=state, loop=loop)


def sent_block(loopback: LoopbackServer, index: int = -1) -> tuple[str, str]:
    """The user message of a received request, and the text inside its judged block."""
    content = loopback.requests[index].body["messages"][0]["content"]
    match = BLOCK.search(content)
    assert match is not None, content[-500:]
    tag = match.group(1)
    assert content.split(f"<{tag}>\n", 1)[1].count(f"</{tag}>") == 1  # only the real end
    return content, match.group(2)


def head_and_tail(block: str) -> tuple[str, str]:
    """The shown head and tail of a shortened block (the marker line removed)."""
    match = MARKER.search(block)
    assert match is not None
    return block[: match.start()], block[match.end() + 1 :]


def test_long_text_is_sent_as_head_marker_and_tail(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    text = build_log(1_000_000)
    loopback.push(verdict_reply("no"))
    verdict = judge(text, tmp_path)
    content, block = sent_block(loopback)
    markers = MARKER.findall(block)
    assert len(markers) == 1
    omitted, limit = (int(n.replace(",", "")) for n in markers[0])
    head, tail = head_and_tail(block)
    assert limit == DEFAULT_LIMIT
    assert text.startswith(head) and text.endswith(tail)
    assert head.startswith("BUILD START") and tail.endswith(
        "SUMMARY: 1234 tests, 1234 passed, 0 failed\n"
    )
    assert len(head) + len(tail) <= DEFAULT_LIMIT
    assert len(head) + len(tail) + omitted == len(text)
    assert 0.15 * DEFAULT_LIMIT < len(head) <= 0.2 * DEFAULT_LIMIT  # ~20% head
    assert 0.75 * DEFAULT_LIMIT < len(tail) <= 0.8 * DEFAULT_LIMIT  # ~80% tail
    assert "middle line 0020000" not in content  # from the omitted middle
    assert len(content) < DEFAULT_LIMIT + 3_000  # the limit plus marker and prompt overhead
    assert "so it was shortened" in content and "omitted middle" in content
    assert verdict.details["judged_chars"] == len(text)
    assert verdict.details["judged_text_truncated"] is True
    assert verdict.details["judged_chars_shown"] == len(head) + len(tail)
    assert verdict.details["judged_chars_limit"] == DEFAULT_LIMIT


def test_cuts_fall_on_line_boundaries(loopback: LoopbackServer, tmp_path: Path) -> None:
    text = build_log(300_000)
    loopback.push(verdict_reply("no"))
    judge(text, tmp_path)
    head, tail = head_and_tail(sent_block(loopback)[1])
    assert head.endswith("\n")
    assert tail.startswith("middle line ")


def test_evidence_from_the_omitted_middle_is_rejected(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    text = build_log(500_000)
    middle = "middle line 0005000: test_case_5000 ... ok"
    assert middle in text
    loopback.push(verdict_reply("yes", evidence=middle))
    verdict = judge(text, tmp_path)
    assert verdict.name == "no"
    assert verdict.details["samples"][0]["answered"] == "yes"
    check = verdict.details["evidence_check"]
    assert check.startswith("yes rejected:") and "as shortened for the judge" in check


def test_evidence_from_the_kept_tail_is_accepted(loopback: LoopbackServer, tmp_path: Path) -> None:
    text = build_log(500_000)
    loopback.push(verdict_reply("yes", evidence="SUMMARY: 1234 tests, 1234 passed, 0 failed"))
    verdict = judge(text, tmp_path)
    assert verdict.name == "yes"
    assert verdict.details["evidence_check"] == "verbatim quote found in the judged text"


def test_evidence_spanning_the_omission_marker_is_rejected(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    text = build_log(500_000)
    loopback.push(verdict_reply("no"))
    judge(text, tmp_path)
    block = sent_block(loopback)[1]
    head, tail = head_and_tail(block)
    last_shown, first_after = head.splitlines()[-1], tail.splitlines()[0]
    first_hidden = text[len(head) :].splitlines()[0]
    marker = MARKER.search(block)
    assert marker is not None
    quotes = {
        # copied from what the judge saw, marker line included
        f"{last_shown}\n{marker.group(0)}\n{first_after}": "as shortened for the judge",
        # what the judge saw on both sides, the marker line dropped
        f"{last_shown}\n{first_after}": "runs across the omission marker",
        # the real text running on past the cut, into what was not shown
        f"{last_shown}\n{first_hidden}": "as shortened for the judge",
        # the marker is ll-loop's, not part of the judged text
        "characters omitted by ll-loop": "as shortened for the judge",
    }
    for quote, why in quotes.items():
        loopback.push(verdict_reply("yes", evidence=quote))
        verdict = judge(text, tmp_path)
        assert verdict.name == "no", quote
        assert why in verdict.details["evidence_check"], quote
    loopback.push(verdict_reply("yes", evidence=f"{last_shown}\n{marker.group(0)}"))
    assert judge(text, tmp_path).name == "no"


def test_ellipsis_may_skip_from_head_to_tail(loopback: LoopbackServer, tmp_path: Path) -> None:
    """`...` skips text, the omission included: each fragment was shown, in this order."""
    text = build_log(500_000)
    loopback.push(verdict_reply("yes", evidence="BUILD START ... SUMMARY: 1234 tests"))
    assert judge(text, tmp_path).name == "yes"
    loopback.push(verdict_reply("yes", evidence="SUMMARY: 1234 tests ... BUILD START"))
    assert "out of order" in judge(text, tmp_path).details["evidence_check"]


def test_env_var_sets_the_limit(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_JUDGE_MAX_CHARS", "5000")
    text = build_log(20_000)
    loopback.push(verdict_reply("no"))
    verdict = judge(text, tmp_path)
    head, tail = head_and_tail(sent_block(loopback)[1])
    assert len(head) + len(tail) <= 5000
    assert tail.endswith("SUMMARY: 1234 tests, 1234 passed, 0 failed\n")
    assert verdict.details["judged_chars_limit"] == 5000
    assert verdict.details["judged_chars_shown"] == len(head) + len(tail)


@pytest.mark.parametrize("value", ["lots", "0", "-5", "2.5", "1e4", "  "])
def test_invalid_env_value_falls_back_to_the_default(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("LL_JUDGE_MAX_CHARS", value)
    fits = build_log(60_000)  # under the default limit, over any of these values read literally
    loopback.push(verdict_reply("no"), verdict_reply("no"))
    assert "judged_text_truncated" not in judge(fits, tmp_path).details
    assert sent_block(loopback)[1] == fits
    verdict = judge(build_log(150_000), tmp_path)
    assert verdict.details["judged_chars_limit"] == DEFAULT_LIMIT


def test_short_text_is_sent_unchanged(loopback: LoopbackServer, tmp_path: Path) -> None:
    text = "Ran 12 tests.\nAll 12 tests passed.\n"
    loopback.push(verdict_reply("yes", evidence="All 12 tests passed."))
    verdict = judge(text, tmp_path)
    tag = f"judged_text_{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    content = loopback.requests[0].body["messages"][0]["content"]
    assert content == (
        "Did every test pass? Quote the summary line.\n\n"
        f"The judged text is everything between <{tag}> and </{tag}>.\n<{tag}>\n{text}\n</{tag}>"
    )
    assert verdict.name == "yes"
    assert verdict.details["judged_chars"] == len(text)
    assert "judged_text_truncated" not in verdict.details
    assert "judged_chars_shown" not in verdict.details


def test_text_exactly_at_the_limit_is_whole_one_more_is_cut(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_JUDGE_MAX_CHARS", "1000")
    text = build_log(1_200)[:1000]
    loopback.push(verdict_reply("no"), verdict_reply("no"))
    whole = judge(text, tmp_path)
    assert sent_block(loopback)[1] == text
    assert "judged_text_truncated" not in whole.details
    cut = judge(text + "x", tmp_path)
    assert MARKER.search(sent_block(loopback)[1]) is not None
    assert cut.details["judged_text_truncated"] is True


def test_rubric_judge_is_shortened_too(loopback: LoopbackServer, tmp_path: Path) -> None:
    spec = Evaluate(
        type="llm_structured",
        prompt="Review the log.",
        dimensions=(Dimension("clarity", "Is it clear?", 1.0),),
        reviewers=1,
    )
    text = build_log(400_000)
    loopback.push(tool_reply({"clarity": 4, "reason": "r"}))
    verdict = judge(text, tmp_path, spec)
    assert verdict.name == "yes"
    content, block = sent_block(loopback)
    head, tail = head_and_tail(block)
    assert len(head) + len(tail) <= DEFAULT_LIMIT
    assert tail.endswith("SUMMARY: 1234 tests, 1234 passed, 0 failed\n")
    assert "so it was shortened" in content
    assert verdict.details["judged_chars"] == len(text)
    assert verdict.details["judged_text_truncated"] is True


LOUD = """
name: loud
initial: build
states:
  build:
    action: "seq 1 150000; echo 'SUMMARY: all 150000 numbers printed'"
    evaluate:
      type: llm_structured
      prompt: "Were all numbers printed? Quote the summary line."
    on_yes: done
    on_no: failed
    on_error: broken
  done: {terminal: true}
  failed: {terminal: true, failure: true}
  broken: {terminal: true, failure: true}
"""


def test_a_run_judges_a_huge_action_output_within_the_limit(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed `ll-loop run` (inheriting LL_JUDGE_MAX_CHARS) shortens a ~0.9 MB output."""
    monkeypatch.setenv("LL_JUDGE_MAX_CHARS", "20000")
    loopback.push(verdict_reply("yes", evidence="SUMMARY: all 150000 numbers printed"))
    ran = run_yaml(tmp_path, LOUD)
    assert ran.code == 0, ran.stderr
    head, tail = head_and_tail(sent_block(loopback)[1])
    assert head.startswith("1\n2\n3\n") and tail.endswith("SUMMARY: all 150000 numbers printed\n")
    assert len(head) + len(tail) <= 20_000
    [evaluate] = [e for e in ran.events() if e["event"] == "evaluate"]
    assert evaluate["details"]["judged_text_truncated"] is True
    assert evaluate["details"]["judged_chars_limit"] == 20_000
    assert evaluate["details"]["judged_chars"] > 900_000


def test_an_invalid_limit_stops_a_run_in_preflight(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like every LL_LLM_* number: a typo must not silently judge with another limit."""
    monkeypatch.setenv("LL_JUDGE_MAX_CHARS", "100k")
    loop = """
name: limited
initial: check
scope: ["."]
states:
  check:
    action: "echo 'All 3 checks passed'"
    evaluate: {type: llm_structured, prompt: "Did every check pass? Quote it."}
    on_yes: done
    on_no: done
    on_error: done
  done: {terminal: true}
"""
    ran = run_yaml(tmp_path, loop)
    assert ran.code == 2, ran.stderr
    assert "LL_JUDGE_MAX_CHARS='100k' is not a whole number >= 1" in ran.json["error"]
    assert loopback.requests == []
