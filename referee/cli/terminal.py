"""Text from bots, made safe to print on a terminal.

Bot names, fault details and anything else a bot controls end up in what the command line
prints.  Raw, such text could drive the terminal: ANSI escape sequences that clear the screen,
rewrite the title or fake a line of the result table, a carriage return or newline that forges
a line, right-to-left overrides that reorder what is shown.  :func:`printable` escapes every
character that is not printable text (C0 and C1 controls, DEL, and Unicode format,
separator and bidirectional controls), the way ``repr`` would (``\\x1b``, ``\\u202e``);
every print site of the referee's CLI goes through :func:`echo`, which applies it.
"""

from __future__ import annotations

import sys
from typing import IO

__all__ = ["echo", "printable"]


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every non-printable character escaped (``"\\n"`` too, unless kept).

    Printable means ``str.isprintable()`` plus the plain space: controls, format characters
    (bidirectional overrides, zero-width joiners) and line/paragraph separators are escaped,
    so the result shows on one line exactly the characters it contains.
    """
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or (keep_newlines and ch == "\n"):
            out.append(ch)
        else:
            out.append(_escape(ch))
    return "".join(out)


def echo(text: str = "", *, file: IO[str] | None = None, keep_newlines: bool = True) -> None:
    """Print ``text`` with :func:`printable` applied (by default keeping its line breaks,
    for multi-line reports whose bot-controlled fields were escaped one by one)."""
    print(printable(text, keep_newlines=keep_newlines), file=file or sys.stdout)
