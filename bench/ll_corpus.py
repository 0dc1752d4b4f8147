"""Build the corpus `bench_migrate` measures from a little-loops checkout (never committed).

    python -m bench.ll_corpus LITTLE_LOOPS_CHECKOUT OUT_DIR

Sources: `builtins/` (its built-in loops directory, with `lib/` and `oracles/`), `project/` (its
own `.loops/*.yaml`), `fixtures/` (its test fixtures, layout kept so references resolve) and
`docs/` (every YAML block in its docs that is a whole loop: `name` plus `states`, `flow` or
`from`). With `LL_REFERENCE_PYTHON` naming a Python that can import `little_loops`, each file is
checked with little-loops' own `load_and_validate` and `manifest.json` records which ones it
accepts; without it every file is listed as accepted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

_BLOCK = re.compile(r"^```ya?ml[^\n]*\n(.*?)^```", re.M | re.S)
_CHECK = r"""
import json, sys
from pathlib import Path
from little_loops.fsm.validation import ValidationSeverity, load_and_validate
out = []
for path in sys.argv[1:]:
    try:
        _, found = load_and_validate(Path(path), raise_on_error=False)
        errors = [str(v) for v in found if v.severity == ValidationSeverity.ERROR]
    except Exception as exc:
        errors = [f"{type(exc).__name__}: {exc}"]
    out.append(errors[:3])
print(json.dumps(out))
"""


def build(source: Path, out: Path) -> list[dict[str, object]]:
    """Copy the corpus into `out` and return its manifest."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    found: list[tuple[str, Path]] = []
    shutil.copytree(source / "scripts/little_loops/loops", out / "builtins")
    for path in sorted((out / "builtins").glob("*.yaml")):
        found.append(("builtins", path))
    for path in sorted((out / "builtins" / "oracles").glob("*.yaml")):
        found.append(("builtins", path))
    (out / "project").mkdir()
    for path in sorted((source / ".loops").glob("*.yaml")):
        found.append(("project", Path(shutil.copy(path, out / "project" / path.name))))
    fixtures = source / "scripts/tests/fixtures"
    for path in sorted(fixtures.rglob("*.yaml")):
        dest = out / "fixtures" / path.relative_to(fixtures)
        dest.parent.mkdir(parents=True, exist_ok=True)
        found.append(("fixtures", Path(shutil.copy(path, dest))))
    (out / "docs").mkdir()
    for doc in sorted((source / "docs").rglob("*.md")):
        text = doc.read_text(encoding="utf-8", errors="replace")
        for index, match in enumerate(_BLOCK.finditer(text)):
            try:
                data = yaml.safe_load(match.group(1))
            except yaml.YAMLError:
                continue
            if isinstance(data, dict) and "name" in data and {"states", "flow", "from"} & set(data):
                stem = doc.relative_to(source / "docs").as_posix().replace("/", "__")[:-3]
                dest = out / "docs" / f"{stem}--{index:02d}.yaml"
                dest.write_text(match.group(1), encoding="utf-8")
                found.append(("docs", dest))
    verdicts = _reference_check([p for _, p in found])
    manifest: list[dict[str, object]] = [
        {"source": s, "path": p.relative_to(out).as_posix(), "accepted": not errors,
         "errors": errors}
        for (s, p), errors in zip(found, verdicts, strict=True)
    ]  # fmt: skip
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def _reference_check(paths: list[Path]) -> list[list[str]]:
    python = os.environ.get("LL_REFERENCE_PYTHON")
    if not python:
        print("LL_REFERENCE_PYTHON not set: every file is listed as accepted", file=sys.stderr)
        return [[] for _ in paths]
    done = subprocess.run(
        [python, "-c", _CHECK, *map(str, paths)], capture_output=True, text=True, check=True
    )
    result: list[list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    manifest = build(Path(argv[0]), Path(argv[1]))
    for source in ("builtins", "project", "fixtures", "docs"):
        rows = [m for m in manifest if m["source"] == source]
        accepted = sum(1 for m in rows if m["accepted"])
        print(f"{source:9} {accepted} of {len(rows)} accepted by little-loops")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
