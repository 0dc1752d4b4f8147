"""Quoting that holds when bash reads the action in a GBK or Big5 locale.

Bash reads its script in the locale's encoding. In GBK and Big5 a byte 0x81-0xFE starts a
two-byte character whose second byte may be a backslash, so the UTF-8 bytes of `中` (E4 B8 AD)
swallow the backslash written after them (AD 5C is one character): `"中\\$(cmd)"` runs cmd.
Each case here ran a command in such a locale before values were kept apart from the escapes
written next to them; now each value comes back byte for byte, in that locale and in UTF-8.
The locales are compiled with localedef into a temporary LOCPATH (nothing is installed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine.model.errors import InterpolationError
from engine.shell.interpolate import render_shell

LOCALES = {"zh_CN.GBK": ("zh_CN", "GBK"), "zh_TW.BIG5": ("zh_TW", "BIG5")}
TOUCH = "$(touch CANARY)"


@pytest.fixture(scope="module")
def locpath(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the compiled GBK and Big5 locales (skips where localedef or the
    locale sources are missing)."""
    folder = tmp_path_factory.mktemp("locales")
    if shutil.which("localedef") is None:
        pytest.skip("localedef is not installed")
    for name, (source, charmap) in LOCALES.items():
        subprocess.run(
            ["localedef", "-i", source, "-f", charmap, str(folder / name)],
            capture_output=True,
            check=False,
        )
        if not (folder / name).is_dir():
            pytest.skip(f"localedef could not compile {name}")
    return folder


def run_in(locale: str, locpath: Path, script: str, cwd: Path) -> tuple[bytes, list[str]]:
    """Run `bash -c script` in `locale`; its stdout and the files it created."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LOCPATH": str(locpath)}
    env["LC_ALL"] = locale
    cwd.mkdir()
    done = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, timeout=20, check=False
    )
    return done.stdout, sorted(os.listdir(cwd))


# (template, context): `printf '%s|'` prints each value as bash received it
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "double-quoted, escape after a wide character": (
        "printf '%s|' \"${context.v}\"",
        {"v": "中" + TOUCH},
    ),
    "double-quoted, quote after a wide character": (
        "printf '%s|' \"${context.v}\"\nprintf '%s|' \"x\"",
        {"v": '中"\ntouch CANARY\n: "'},
    ),
    "double-quoted, after the script's wide character": (
        "printf '%s|' \"中${context.v}\"",
        {"v": TOUCH},
    ),
    "double-quoted, before the script's escaped quote": (
        'printf \'%s|\' "${context.a}\\" ${context.b}"',
        {"a": "中", "b": "x\ntouch CANARY\n: "},
    ),
    "two values, the second starting with an escape": (
        "printf '%s|' \"${context.a}${context.b}\"",
        {"a": "中", "b": TOUCH},
    ),
    "here-document body": (
        "cat <<EOF\n${context.v}|\nEOF",
        {"v": "中" + TOUCH},
    ),
    "$'...' string": (
        "printf '%s|' $'${context.v}'\nprintf '%s|' $'x'",
        {"v": "中'\ntouch CANARY\n: '"},
    ),
    "a byte kept by surrogateescape": (
        "printf '%s|' \"${context.v}\"",
        {"v": "\udcad" + TOUCH},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("locale", sorted(LOCALES))
def test_a_value_stays_itself_in_a_multibyte_locale(
    name: str, locale: str, locpath: Path, tmp_path: Path
) -> None:
    template, context = CASES[name]
    script = render_shell(template, {"context": context})
    wide, created = run_in(locale, locpath, script, tmp_path / "wide")
    assert created == [], f"{script!r} ran a value's command in {locale}"
    utf8, created = run_in("C.UTF-8", locpath, script, tmp_path / "utf8")
    assert created == []
    assert wide == utf8
    for value in context.values():
        assert value.encode("utf-8", "surrogateescape") in utf8


def test_a_script_whose_own_escape_follows_a_wide_character_takes_no_text(
    locpath: Path, tmp_path: Path
) -> None:
    """`"中\\" ${...}"`: in GBK bash's string ends at the `"` the grammar reads as escaped, so
    the value the grammar places inside the string is outside it for bash. Such a script is
    refused as one the grammar reads unlike bash; the same bytes with a blank between them,
    in '...', or in a comment are read alike and take the value."""
    template = 'printf "%s|" "中\\" ${context.v}"'
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": "x\ntouch CANARY\n: "}})
    assert "right after a non-ASCII character at line 1, column 16" in caught.value.reason
    # what bash in GBK makes of that script: the second line runs
    _, created = run_in(
        "zh_CN.GBK", locpath, 'printf "%s|" "中\\" x\ntouch CANARY\n: "', tmp_path / "a"
    )
    assert created == ["CANARY"]
    safe_forms = (
        'printf "%s|" "中 \\" ${context.v}"',
        "printf '中\\' ${context.v}",
        "printf %s ${context.v} # 中\\",
        "cat <<'E'\n中\\\nE\nprintf %s ${context.v}",
    )
    for safe in safe_forms:
        script = render_shell(safe, {"context": {"v": "x\ntouch CANARY\n: "}})
        _, created = run_in("zh_CN.GBK", locpath, script, tmp_path / str(len(safe)))
        assert created == []


def test_a_pipe_right_after_a_wide_character_takes_no_text(locpath: Path, tmp_path: Path) -> None:
    """`eval 中| cat ${...}`: in GBK the `|` is part of the character, so the value is not
    cat's argument but eval's (checked: it ran). Refused like the backslash above."""
    with pytest.raises(InterpolationError) as caught:
        render_shell("eval 中| cat ${context.v}", {"context": {"v": "x; touch CANARY"}})
    assert "`|` right after a non-ASCII character at line 1, column 7" in caught.value.reason
    _, created = run_in("zh_CN.GBK", locpath, "eval 中| cat 'x; touch CANARY'", tmp_path / "a")
    assert created == ["CANARY"]
    script = render_shell("eval 中 | cat ${context.v}", {"context": {"v": "x; touch CANARY"}})
    _, created = run_in("zh_CN.GBK", locpath, script, tmp_path / "b")
    assert created == []


CONTEXTS = (
    "printf '%s|' ${context.v}",
    "printf '%s|' \"${context.v}\"",
    "printf '%s|' \"中${context.v}中\"",
    "printf '%s|' $'${context.v}'",
    "printf '%s|' '${context.v}'",
    "x=${context.v}; printf '%s|' \"$x\"",
    "printf '%s|' \"$(printf '%s' \"${context.v}\")\"",
    "cat <<EOF\n${context.v}|\nEOF",
    "cat <<EOF\n中${context.v}中|$(printf '%s' \"${context.v}\")|\nEOF",
)
WIDE = ("中", "é", "表", "\udcad", "\udc81")
SPECIAL = ('"', "$(touch CANARY)", "`touch CANARY`", "\\", "'", "\\\n", "\\\\")


@pytest.mark.parametrize("template", CONTEXTS)
def test_every_context_keeps_wide_characters_apart_from_escapes(
    template: str, locpath: Path, tmp_path: Path
) -> None:
    """Each value: a wide character (or a byte kept by surrogateescape) before and after each
    character bash escapes, in every quoting context; GBK reads back what UTF-8 does."""
    values = [w + s + w for w in WIDE for s in SPECIAL] + [s + w for w in WIDE for s in SPECIAL]
    script = "\n".join(render_shell(template, {"context": {"v": v}}) for v in values)
    wide, created = run_in("zh_CN.GBK", locpath, script, tmp_path / "wide")
    assert created == []
    utf8, created = run_in("C.UTF-8", locpath, script, tmp_path / "utf8")
    assert created == []
    assert wide == utf8


def test_a_closing_brace_right_after_a_wide_character_takes_no_text(
    locpath: Path, tmp_path: Path
) -> None:
    """`"${X:-中}" ${...} "}"`: in GBK the `}` is part of the character, so the script's own
    `${X:-` runs on to the last `}` and the value, single-quoted for the grammar, lies inside
    its nested double quotes for bash, where `$(...)` runs (checked: it ran). Refused like the
    backslash above; a `}` ending a plain word or in text, and a blank before it, are alike."""
    with pytest.raises(InterpolationError) as caught:
        render_shell('printf "%s|" "${X:-中}" ${context.v} "}"', {"context": {"v": TOUCH}})
    assert "right after a non-ASCII character at line 1, column 21" in caught.value.reason
    _, created = run_in(
        "zh_CN.GBK", locpath, 'printf "%s|" "${X:-中}" \'$(touch CANARY)\' "}"', tmp_path / "a"
    )
    assert created == ["CANARY"]
    for n, safe in enumerate(
        (
            'printf "%s|" "${X:-中 }" ${context.v} "}"',
            'printf "%s|" "中}" ${context.v} "}"',
            'printf "%s|" 中} ${context.v} "}"',
        )
    ):
        script = render_shell(safe, {"context": {"v": TOUCH}})
        _, created = run_in("zh_CN.GBK", locpath, script, tmp_path / f"s{n}")
        assert created == []
