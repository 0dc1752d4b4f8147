"""Benign shell actions render and run byte for byte as they did before the bash grammar.

`tests/data/shell/benign_corpus.recorded.json` holds each action of `benign_corpus.yaml` as the
hand-written scanner rendered it and what bash printed; the grammar must give the same bytes,
and bash the same output (loops, here-documents, `[[ ]]`, `case`, pipelines, functions, arrays,
process substitution, here-strings, arithmetic on integer-typed values).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.shell.interpolate import ValueTypes, render_shell
from tests.shellquote_helpers import run_bash

DATA = Path(__file__).parent / "data" / "shell"
RECORDED: list[dict[str, str]] = json.loads(
    (DATA / "benign_corpus.recorded.json").read_text(encoding="utf-8")
)
NS: dict[str, Any] = {
    "context": {
        "v": 'it\'s "$(touch CANARY)" `x` \\ * a  b',
        "n": 3,
        "name": "hello",
        "path": "/tmp/a dir/f",
        "lines": "line one\nline two",
    },
    "loop": {"steps": 4},
    "state": {"retries": 0},
}
TYPES = ValueTypes(integers=frozenset({"n"}))


@pytest.mark.parametrize("case", RECORDED, ids=[c["template"][:40] for c in RECORDED])
def test_benign_action_renders_and_runs_as_before(case: dict[str, str]) -> None:
    rendered = render_shell(case["template"], NS, TYPES)
    assert rendered == case["rendered"]
    ran = run_bash(rendered)
    assert (ran.returncode, ran.created) == (0, []), ran.stderr
    assert ran.stdout == case["stdout"]


def test_the_corpus_is_recorded_whole() -> None:
    import yaml

    templates = yaml.safe_load((DATA / "benign_corpus.yaml").read_text(encoding="utf-8"))
    assert [c["template"] for c in RECORDED] == templates
