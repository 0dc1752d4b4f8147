"""How much interpolation costs a step, against naive `str.replace` + `shlex.quote` in the same run.

Run: `.venv/bin/python bench/bench_interpolate.py`. Prints microseconds per render and ratios.
The engine pays this once per state execution; a bash spawn costs ~1-3 ms, so anything in the
low microseconds is noise next to it.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Callable

from engine.shell.interpolate import render_shell, render_text

NS = {
    "context": {"msg": 'it\'s a "test" with $(danger)', "n": 3},
    "captured": {"t": {"output": "5 passed\n2 failed", "exit_code": 1}},
}
SHELL = 'echo "${context.msg}" && printf %s ${captured.t.output} | grep -c passed > "$HOME/x"'
PLAIN = "pytest -q tests/ && echo done"


def per_call_us(function: Callable[[], object], rounds: int = 20000) -> float:
    function()
    start = time.perf_counter()
    for _ in range(rounds):
        function()
    return (time.perf_counter() - start) / rounds * 1e6


def naive() -> str:
    """The reference system's way: paste shell-quoted values with str.replace (no contexts)."""
    text = SHELL.replace("${context.msg}", shlex.quote(NS["context"]["msg"]))  # type: ignore[index]
    return text.replace("${captured.t.output}", shlex.quote("5 passed\n2 failed"))


def main() -> None:
    baseline = per_call_us(naive)
    rows = [
        ("render_shell, 2 expressions", per_call_us(lambda: render_shell(SHELL, NS))),
        ("render_text, 2 expressions", per_call_us(lambda: render_text(SHELL, NS))),
        ("render_shell, no ${ at all", per_call_us(lambda: render_shell(PLAIN, NS))),
    ]
    print(f"baseline str.replace+shlex.quote: {baseline:8.2f} us/render")
    for name, micros in rows:
        print(f"{name:34s}: {micros:8.2f} us/render  ({micros / baseline:6.2f}x baseline)")
    code = (
        "import time,sys,json,re,dataclasses,enum;t=time.perf_counter();"
        "import engine.shell.interpolate;"
    )
    code += "print((time.perf_counter()-t)*1000, 'jinja2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    millis, jinja = out.stdout.split()
    print(
        f"import engine.shell.interpolate (stdlib preloaded): {float(millis):.1f} ms "
        f"(jinja2: {jinja})"
    )


if __name__ == "__main__":
    main()
