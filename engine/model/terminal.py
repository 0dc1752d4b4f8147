"""Text that is safe to show on a terminal.

Action output, loop names, file names and LLM answers reach our progress lines, tables and
error messages. A terminal obeys the control characters in them: an escape sequence can recolour
the screen, rewrite the window title, move the cursor over earlier lines, or (with some
terminals) answer back into the input. So every piece of text we print for a person goes through
`printable`, which shows those characters as visible escapes (`\\x1b`) instead of sending them.
JSON output needs nothing: `json.dumps` escapes control characters itself.
"""

from __future__ import annotations

_KEPT = {"\n", "\t"}
_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]  # C0, DEL, C1
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]  # embeddings, overrides, isolates
_TABLE = {
    code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    for code in (*_CONTROLS, *_BIDI)
    if chr(code) not in _KEPT
}


def printable(text: str) -> str:
    """`text` with control characters (all but newline and tab), DEL, C1 controls and bidi
    overrides replaced by visible escapes; other text is returned unchanged."""
    return text.translate(_TABLE)


def one_line(text: str) -> str:
    """`printable(text)` with its line breaks shown as `\\n` (and tabs as `\\t`): for a line
    that must stay one, like a run's summary quoting an error that spans lines."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def redraws_in_place(stream: object) -> bool:
    """A live line, rewritten in place with `\\r\\x1b[K`, suits `stream`: a terminal, and not
    one that says it cannot erase a line (`TERM=dumb`: an Emacs shell buffer, some CI
    consoles), where the escape codes showed as text."""
    import os

    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"
