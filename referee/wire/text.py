"""The rule for text a bot sends, and the safe form of text that breaks it.

Everything a bot sends is kept somewhere a reader later encodes: its ``say`` and the names of
its ``GET /`` description in the match log (served as JSON, JSON Lines, zips and pages), its
raw answer for its owner (``arena.bots.calls``).  A JSON string may legally hold NUL
(``"\\u0000"``) or half of a UTF-16 surrogate pair (``"\\ud800"``); neither can be written as
UTF-8 (the surrogate) or stored in a PostgreSQL text column (NUL), so one such string used to
make every download of the match answer 500.

One rule, the arena's rule for API bodies too (``arena.web.errors``): a text is valid when it
has no NUL and no lone surrogate (:func:`text_problem`).  The protocol checks every string it
keeps from a bot against it once, where the answer is judged (:mod:`referee.wire.protocol`),
and what is kept for debugging as it came (a raw body) is stored in :func:`printable` form:
each offending character written as its backslash escape, so nothing is lost and every
reader can encode it.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SUSPECT = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
"""In JSON text written with ``ensure_ascii`` (every stored document): the escapes of NUL
and of surrogates (a valid pair too, which only costs the slower path)."""


def text_problem(value: str) -> str | None:
    """Why ``value`` breaks the text rule (``"holds NUL"``...), or None when it is valid."""
    if "\x00" in value:
        return "holds a NUL character"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "holds a lone UTF-16 surrogate"
    return None


def printable(value: str) -> str:
    """``value`` with each NUL written ``\\x00`` and each lone surrogate ``\\udXXX`` (Python's
    ``backslashreplace``): a string every encoder and database takes.  A valid text comes back
    as it is."""
    if text_problem(value) is None:
        return value
    value = value.replace("\x00", "\\x00")
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def printable_bytes(raw: bytes) -> str:
    """Raw bytes (a bot's answer body) as text: UTF-8, with each byte that is not UTF-8
    written ``\\xNN`` and each NUL ``\\x00``."""
    return printable(raw.decode("utf-8", "backslashreplace"))


def printable_tree(value: Any) -> Any:
    """A decoded JSON document with every string (keys too) in :func:`printable` form: the
    repair applied when a document stored before the rule is read back."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, list):
        return [printable_tree(v) for v in value]
    if isinstance(value, dict):
        return {printable(k): printable_tree(v) for k, v in value.items()}
    return value


def stored_json(raw: bytes) -> Any:
    """A stored JSON document (``ensure_ascii`` text, such as a match log), decoded, with
    the repair of :func:`printable_tree` when it may hold a string stored before the rule:
    a document without such escapes (nearly all) is returned as parsed."""
    doc = json.loads(raw)
    return printable_tree(doc) if _SUSPECT.search(raw) else doc


def stored_json_bytes(raw: bytes) -> bytes:
    """A stored JSON document (compact ``ensure_ascii`` text) to hand out as it is, with the
    repair of :func:`stored_json` when it may need it (then written again the same way; a
    document that needed none comes out byte for byte)."""
    if not _SUSPECT.search(raw):
        return raw
    return json.dumps(stored_json(raw), separators=(",", ":")).encode()


def encodable_json(text: str) -> str:
    """JSON text written with ``ensure_ascii=False``, with each lone surrogate written as its
    ``\\udXXX`` escape: the same JSON value, and a text that encodes to UTF-8.  (A surrogate in
    JSON text can only be inside a string, where its six-character escape means the same.)"""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


__all__ = ["encodable_json", "printable", "printable_bytes", "printable_tree", "stored_json",
           "stored_json_bytes",
           "text_problem"]
