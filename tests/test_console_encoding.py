"""A terminal whose encoding lacks a character ll-loop prints.

In a GBK or Latin-1 locale `ll-loop run` printed its steps and then ended with 'internal
error: UnicodeEncodeError: ... '\\u2714'' at the summary line, the run done but reported as a
crash (found running an action in zh_CN.GBK). Such a character is now shown escaped, as the
step lines already showed theirs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.run_helpers import LL_LOOP, write_loop

LOOP = """\
name: enc
initial: go
scope: ["."]
states:
  go:
    action: echo hi
    next: done
  done:
    terminal: true
"""


def test_a_run_in_a_latin1_terminal_ends_with_its_summary(tmp_path: Path) -> None:
    write_loop(tmp_path, LOOP)
    (tmp_path / ".loops").mkdir()
    env = {**os.environ, "PYTHONIOENCODING": "latin-1", "LL_CEILING_DIRECTORIES": str(tmp_path)}
    ran = subprocess.run(
        [str(LL_LOOP), "run", "loop.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    out, err = ran.stdout.decode("latin-1"), ran.stderr.decode("latin-1")
    assert ran.returncode == 0, err
    assert "internal error" not in err
    assert "\\u2714 success: enc reached 'done'" in out
