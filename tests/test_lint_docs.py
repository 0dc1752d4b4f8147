"""docs/lint-rules.md is executable: every rule's failing example raises exactly that rule's
code, its fixed example does not (and has no errors at all), and every rule is documented."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from engine.cli.validate_cmd import check_file
from lint import RULES

DOC = Path(__file__).resolve().parents[1] / "docs" / "lint-rules.md"
_SECTION = re.compile(r"^## (\S+) (\S+)\n(.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)
_BLOCK = re.compile(r"^```yaml (failing|fixed|child)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def sections() -> dict[str, tuple[str, str, dict[str, list[str]]]]:
    """code -> (name, body, {"failing": [...], "fixed": [...], "child": [...]})."""
    found = {}
    for code, name, body in _SECTION.findall(DOC.read_text()):
        blocks: dict[str, list[str]] = {"failing": [], "fixed": [], "child": []}
        for kind, text in _BLOCK.findall(body):
            blocks[kind].append(text)
        found[code] = (name, body, blocks)
    return found


SECTIONS = sections()


def test_every_registered_rule_has_a_section_with_both_examples() -> None:
    missing = sorted(set(RULES) - set(SECTIONS))
    assert not missing, f"rules without a section in docs/lint-rules.md: {missing}"
    for code, item in RULES.items():
        name, body, blocks = SECTIONS[code]
        assert name == item.name, code
        assert body.lstrip().startswith(f"**{item.severity}"), f"{code}: severity not stated first"
        assert len(blocks["failing"]) == 1 and len(blocks["fixed"]) == 1, code


def test_every_documented_code_is_a_rule() -> None:
    assert set(SECTIONS) <= set(RULES)


def diagnostics_of(text: str, children: list[str], tmp_path: Path) -> Iterator[tuple[str, str]]:
    for child in children:
        (tmp_path / f"{yaml.safe_load(child)['name']}.yaml").write_text(child)
    path = tmp_path / "example.yaml"
    path.write_text(text)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for d in check_file(path):
            yield d.code, d.severity
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("code", sorted(SECTIONS))
def test_failing_example_raises_the_code_and_fixed_example_does_not(
    code: str, tmp_path: Path
) -> None:
    _, _, blocks = SECTIONS[code]
    failing = list(diagnostics_of(blocks["failing"][0], blocks["child"], tmp_path))
    assert code in [c for c, _ in failing], f"failing example of {code} gave {failing}"
    assert not any(c.startswith("F") for c, _ in failing), "the example must load"
    fixed = list(diagnostics_of(blocks["fixed"][0], blocks["child"], tmp_path))
    assert code not in [c for c, _ in fixed], fixed
    assert [c for c, s in fixed if s == "error"] == [], f"fixed example of {code}: {fixed}"
