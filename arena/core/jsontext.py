"""JSON text written by a fast encoder: indented for people to read, compact for machines.

With ``indent`` the standard library's ``json.dumps`` leaves its C encoder for a pure-Python
one: indenting a calls page's requests took 1.5 ms of its ~12, and the three indented
documents of a tournament archive (tournament, standings, bracket) more than half of the
download's time.  orjson writes the same text (2-space indent) in a fraction of that, but
for a NaN or an infinity, which it writes as ``null`` as everything else the arena serves
does; what it refuses is left to the standard library.

The compact text of what a worker writes at every turn and every match (live events, the
match log, the kept calls) is orjson's too: the standard library's C encoder took ~6 us a
turn event, ~440 us a deal's revealed replay and ~240 us a match log, orjson a tenth of
that, on threads whose every microsecond another match's deadline may wait behind.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def indented_json(value: Any) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``'s text, written by orjson; a NaN or
    an infinity is written as ``null``, as the API (:mod:`arena.web.jsonprovider`) and
    :func:`compact_json` write it (JSON has neither: the archive's documents are the API's
    answers, and the calls page shows a request as it was sent).  A value orjson refuses
    (a string with a lone surrogate, a key that is not a string, an integer past 64 bits)
    is written by the standard library (a NaN in such a value stays json's ``NaN``).

    (Until 2026-12-08 a NaN was json's ``NaN`` here too: finding one took a second walk of
    the value by json's encoder, a tenth of a tournament archive's time.)"""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value, indent=2, ensure_ascii=False)


def compact_json(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON (no blanks), written by orjson; a NaN or an infinity
    is written as ``null`` (JSON has neither: json's ``NaN`` would make a reader's
    ``JSON.parse`` fail).  A value orjson refuses (a string with a lone surrogate, a key
    that is not a string, an integer past 64 bits) is written by the standard library
    instead, with every character beyond ASCII escaped, so its text is still UTF-8 (a NaN
    in such a value stays json's ``NaN``)."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value, separators=(",", ":")).encode("ascii")


__all__ = ["compact_json", "indented_json"]
