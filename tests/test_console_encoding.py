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


def _validate_name_in(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """`ll-loop validate` of a loop file whose name is not UTF-8 (the byte 0xe9)."""
    name = os.fsdecode(b"caf\xe9.yaml")
    (tmp_path / name).write_text("name: x\ninitial: a\nstates: {a: {terminal: true}}\n")
    (tmp_path / ".loops").mkdir(exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8")}
    return subprocess.run(
        [str(LL_LOOP), "validate", name],
        cwd=tmp_path,
        env={**base, "LL_CEILING_DIRECTORIES": str(tmp_path), **env},
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_a_c_locale_prints_a_file_names_own_bytes(tmp_path: Path) -> None:
    """In the C locale stdout's errors are surrogateescape: a file name that is not UTF-8 is
    printed as its own bytes, the name `ls` shows and a shell can be given back. Escaping every
    character the encoding lacks on both streams (for a ✔ in a Latin-1 terminal) replaced that
    too, undoing the rule that leaves the C locale's surrogateescape alone."""
    done = _validate_name_in(tmp_path, {"LC_ALL": "C"})
    assert done.returncode == 0, done.stderr
    assert b"caf\xe9.yaml:" in done.stdout, done.stdout


def test_an_ascii_surrogateescape_terminal_escapes_what_it_lacks_and_keeps_name_bytes(
    tmp_path: Path,
) -> None:
    """An ASCII stdout with surrogateescape (the C locale without UTF-8 coercion): a ✔ is
    shown escaped instead of ending the run, and a file name's own bytes are still its own."""
    write_loop(tmp_path, LOOP)
    (tmp_path / ".loops").mkdir()
    env = {**os.environ, "PYTHONIOENCODING": "ascii:surrogateescape"}
    ran = subprocess.run(
        [str(LL_LOOP), "run", "loop.yaml"],
        cwd=tmp_path,
        env={**env, "LL_CEILING_DIRECTORIES": str(tmp_path)},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert b"\\u2714 success: enc reached 'done'" in ran.stdout
    done = _validate_name_in(tmp_path, {"PYTHONIOENCODING": "ascii:surrogateescape"})
    assert done.returncode == 0, done.stderr
    assert b"caf\xe9.yaml:" in done.stdout, done.stdout
