"""A bot's fault in a match, in words: one stable sentence per fault, for every reader.

A strike's ``reason`` (the fault code: :class:`referee.wire.httpbot.Fault`,
:class:`referee.wire.protocol.AnswerFault`, ...) is for programs; its ``detail`` is for people:
the bot's author on the match page, in the match API, in the replay and the log.  The texts the
HTTP caller produces while it classifies a failure are neither: ``ConnectionResetError: [Errno
104] Connection reset by peer`` names a Python class, ``cannot connect to h: [Errno 111] ...``
a host, and they change with the library and the platform.  So the runner records, for every
fault, the sentence :func:`plain_fault` makes of it (the stable ``reason`` code stays beside
it), and the arena passes what it stored before through the same function when it shows it.

The sentences say what the bot did wrong in the protocol's terms (late, no HTTP answer, HTTP
status N, not JSON, not a legal move) and never carry an exception's text, an address or a
URL.  The only specifics kept are the HTTP status and, for a refused ``/move`` answer, the
referee's own words about it (``no legal move has id 'x'``): both are facts about the answer,
not about the referee's insides.  (An in-process bot's exception keeps its text: there the
function is the bot, and its exception its author's own; the arena seats HTTP bots only.)

:func:`plain_fault` is idempotent: a detail that already is its fault's sentence comes back
unchanged, so a reader may apply it to any detail, stored before this module or after.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from referee.wire.httpbot import Fault
from referee.wire.players import EXCEPTION
from referee.wire.protocol import AnswerFault

FORFEITED: Final = "forfeited"
"""The ``fault`` of a turn played by the referee for a seat that has forfeited (no strike)."""
BAD_DESCRIPTION: Final = "bad_description"
"""The ``fault`` of a ``GET /`` note whose answer was not a valid description."""

ANSWER_TEXTS: dict[str, str] = {
    AnswerFault.NOT_AN_OBJECT.value: "the answer is not a JSON object",
    AnswerFault.NO_MOVE.value: "the answer names no move",
    AnswerFault.WRONG_TURN.value: "the answer is for another turn than the one asked",
    AnswerFault.UNKNOWN_MOVE.value: "the answer's move id is not one of the request's "
                                    "legal_moves",
    AnswerFault.MALFORMED_CARDS.value: "the answer's cards are not written as the protocol "
                                       "says (\"3D\", \"TS\", ...)",
    AnswerFault.NOT_IN_HAND.value: "the answer plays cards the bot does not hold",
    AnswerFault.ILLEGAL.value: "the answer's cards are not a legal play now",
}
"""Each refused ``/move`` answer in the bot author's words (the protocol's fault codes,
:class:`referee.wire.protocol.AnswerFault`, are for logs and programs)."""

TRANSPORT_TEXTS: dict[str, str] = {
    Fault.TIMEOUT.value: "no complete answer in time (within the deadline and what was left "
                         "of the time bank)",
    Fault.CONNECTION.value: "no HTTP answer: the connection was refused, reset or closed "
                            "before the answer was complete",
    Fault.TLS.value: "no HTTP answer: the TLS handshake or the certificate check failed",
    Fault.PROTOCOL.value: "the answer is not valid HTTP/1.1 (malformed status line, headers "
                          "or body framing)",
    Fault.DNS.value: "the bot URL's host name does not resolve",
    Fault.REFUSED_ADDRESS.value: "the bot URL names an address the arena does not call "
                                 "(private, loopback or reserved)",
    Fault.BAD_URL.value: "the bot URL cannot be called (not a valid http:// or https:// URL)",
    Fault.BODY_TOO_LARGE.value: "the answer is larger than the arena accepts",
    Fault.NOT_JSON.value: "the answer is not JSON (strict JSON in UTF-8 is expected)",
    Fault.BAD_SHAPE.value: "the answer is JSON but not an object",
}
"""Faults whose sentence needs nothing from the detail."""

_STATUS = re.compile(r"\bHTTP (\d{3})\b")


def _status(status: int | None, detail: str) -> int | None:
    """The HTTP status: given, or read from a detail the caller wrote (``HTTP 500``)."""
    if status is not None:
        return status
    found = _STATUS.search(detail)
    return int(found.group(1)) if found else None


def _with_words(sentence: str, detail: str) -> str:
    """``sentence (the referee's words)``; a detail that already is that comes back as is."""
    if not detail or detail.startswith(sentence):
        return detail or sentence
    return f"{sentence} ({detail[:160]})"


def plain_fault(fault: str | None, detail: str = "", status: int | None = None) -> str:
    """The sentence shown for ``fault`` (empty when there is none, or for a forfeited seat's
    turn, which is no fault of the call).  ``detail`` is the text the fault was reported with
    (only an HTTP status and the referee's own words about a refused answer are kept from it);
    ``status`` the HTTP status of the answer, when known."""
    if fault is None or fault == "" or fault == FORFEITED:
        return ""
    if fault in TRANSPORT_TEXTS:
        return TRANSPORT_TEXTS[fault]
    if fault == Fault.HTTP_STATUS.value:
        code = _status(status, detail)
        if code is None:
            return "answered an HTTP status other than 2xx; a 200 with a JSON object is expected"
        return f"answered HTTP {code}; a 200 with a JSON object is expected"
    if fault == Fault.REDIRECT.value:
        code = _status(status, detail)
        shown = f" (HTTP {code})" if code is not None else ""
        return f"answered a redirect{shown}, which the arena never follows"
    if fault in ANSWER_TEXTS:
        return _with_words(ANSWER_TEXTS[fault], detail)
    if fault == EXCEPTION:  # an in-process bot (tests, demos): its own exception, its words
        return _with_words("the bot's code raised an exception", detail)
    if fault == BAD_DESCRIPTION:
        return _with_words("the answer to GET / is not a valid description", detail)
    return f"the answer was refused ({fault.replace('_', ' ')})"


def plain_items(items: Iterable[Mapping[str, Any]], key: str = "reason") -> list[dict[str, Any]]:
    """Copies of stored strikes (``key="reason"``), notes or turns (``key="fault"``) with each
    ``detail`` put in words by :func:`plain_fault` (what was stored before the referee did
    that itself reads like what it stores now)."""
    out = []
    for item in items:
        copy = dict(item)
        fault = copy.get(key)
        if isinstance(fault, str) and isinstance(copy.get("detail"), str):
            copy["detail"] = plain_fault(fault, copy["detail"])
        out.append(copy)
    return out


def plain_log(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A log document (any version, :mod:`referee.runner.log`) whose turn, strike and note
    details are in words.  Only details change, which ``verify`` does not compare, so a log
    that verified still does."""
    out = dict(doc)
    out["deals"] = [
        {**d, "turns": plain_items(d.get("turns") or [], "fault")} if isinstance(d, dict) else d
        for d in doc.get("deals") or []
    ]
    result = doc.get("result")
    if isinstance(result, dict):
        out["result"] = {**result,
                         "strikes": plain_items(result.get("strikes") or [], "reason"),
                         "notes": plain_items(result.get("notes") or [], "fault")}
    return out


__all__ = ["ANSWER_TEXTS", "BAD_DESCRIPTION", "FORFEITED", "TRANSPORT_TEXTS", "plain_fault",
           "plain_items", "plain_log"]
