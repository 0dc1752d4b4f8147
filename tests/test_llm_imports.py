"""The SDK import (over a second) is paid only by runs that call a model (docs/architecture.md,
"Where IO lives")."""

from __future__ import annotations

import subprocess
import sys


def modules_after(code: str) -> set[str]:
    """The top-level modules a fresh interpreter has imported after running `code`."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


def test_engine_llm_and_interpreter_do_not_import_anthropic() -> None:
    loaded = modules_after("import engine.llm, engine.llm.services, engine.runtime.interpreter")
    assert "engine" in loaded
    assert "anthropic" not in loaded


def test_building_services_and_preflight_do_not_import_anthropic() -> None:
    code = (
        "from pathlib import Path\n"
        "from engine.llm import create_llm_services, llm_preflight\n"
        "from engine.model.loop import Evaluate, Loop, State\n"
        "spec = Evaluate(type='llm_structured', prompt='ok?')\n"
        "s = State('s', action='true', evaluate=spec, routes={'yes': 'd'})\n"
        "loop = Loop(name='t', initial='s', states={'s': s, 'd': State('d', terminal=True)})\n"
        "llm_preflight(loop)\n"
        "class R:\n    def emit(self, event, **fields): pass\n"
        "create_llm_services(loop, run_dir=Path('unused'), recorder=R())\n"
    )
    assert "anthropic" not in modules_after(code)
