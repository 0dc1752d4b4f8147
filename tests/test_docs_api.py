"""docs/api.md is executed: its Python examples run as doctests, so the page cannot drift.

They run in a fresh directory holding the guide's `count-to-three` loop as
`.loops/count-to-three.yaml` (the page says so).
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


def guide_loop() -> str:
    """The `count-to-three` loop of docs/guide.md (its first YAML block)."""
    text = (DOCS / "guide.md").read_text(encoding="utf-8")
    match = re.search(r"```yaml\n(name: count-to-three\n.*?)```", text, re.S)
    assert match, "docs/guide.md has no count-to-three loop"
    return match.group(1)


def python_blocks(markdown: str) -> str:
    """The text of every ```python block, everything else blanked: line numbers stay those of
    the page, and a closing fence never reads as expected output."""
    lines, inside = [], False
    for line in markdown.splitlines():
        fence = line.strip().startswith("```")
        if fence:
            inside = line.strip() == "```python" if not inside else False
        lines.append(line if inside and not fence else "")
    return "\n".join(lines) + "\n"


def test_api_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "count-to-three.yaml").write_text(guide_loop())
    monkeypatch.chdir(tmp_path)
    page = DOCS / "api.md"
    test = doctest.DocTestParser().get_doctest(
        python_blocks(page.read_text(encoding="utf-8")), {}, "docs/api.md", str(page), 0
    )
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 20
    assert result.failed == 0, f"{result.failed} example(s) of docs/api.md failed (see above)"
