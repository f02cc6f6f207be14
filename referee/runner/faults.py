"""A bot's fault in a match, in words: one code, one name and one sentence per fault, for
every reader.

:data:`FAULTS` is the one table: each fault's stable *code* (``not_json``, ``http_status``:
for programs, as the log's and the API's ``reason``/``fault`` fields hold it), its *name* in
a few plain words (``not JSON``, ``HTTP error status``: what every page, the API's ``name``
fields, every command and docs/protocol.md call it) and its *sentence*.  A surface shows the
name and the detail (:func:`plain_fault`), never a second wording of its own.

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
from dataclasses import dataclass
from typing import Any, Final

from referee.wire.httpbot import Fault
from referee.wire.players import EXCEPTION
from referee.wire.protocol import AnswerFault

FORFEITED: Final = "forfeited"
"""The ``fault`` of a turn played by the referee for a seat that has forfeited (no strike)."""
BAD_DESCRIPTION: Final = "bad_description"
"""The ``fault`` of a ``GET /`` note whose answer was not a valid description."""


@dataclass(frozen=True)
class FaultKind:
    """One way a call can fail: its stable ``code`` (for programs: logs, the API's
    ``reason``/``fault`` fields), its ``name`` (a few plain words, what every page, command
    and doc calls it) and its ``text`` (the sentence that says what happened, when the fault
    needs nothing from its detail to say it)."""

    code: str
    name: str
    text: str


FAULTS: dict[str, FaultKind] = {k.code: k for k in (
    FaultKind(Fault.TIMEOUT.value, "timeout",
              "no complete answer in time (within the deadline and what was left of the time "
              "bank)"),
    FaultKind(Fault.CONNECTION.value, "connection failed",
              "no HTTP answer: the connection was refused, reset or closed before the answer "
              "was complete"),
    FaultKind(Fault.TLS.value, "TLS failure",
              "no HTTP answer: the TLS handshake or the certificate check failed"),
    FaultKind(Fault.PROTOCOL.value, "not valid HTTP",
              "the answer is not valid HTTP/1.1 (malformed status line, headers or body "
              "framing)"),
    FaultKind(Fault.DNS.value, "unknown host name",
              "the bot URL's host name does not resolve"),
    FaultKind(Fault.REFUSED_ADDRESS.value, "address not allowed",
              "the bot URL names an address the arena does not call (private, loopback or "
              "reserved)"),
    FaultKind(Fault.BAD_URL.value, "bad URL",
              "the bot URL cannot be called (not a valid http:// or https:// URL)"),
    FaultKind(Fault.HTTP_STATUS.value, "HTTP error status",
              "answered an HTTP status other than 2xx; a 200 with a JSON object is expected"),
    FaultKind(Fault.REDIRECT.value, "redirect",
              "answered a redirect, which the arena never follows"),
    FaultKind(Fault.BODY_TOO_LARGE.value, "answer too large",
              "the answer is larger than the arena accepts"),
    FaultKind(Fault.NOT_JSON.value, "not JSON",
              "the answer is not JSON (strict JSON in UTF-8 is expected)"),
    FaultKind(Fault.BAD_SHAPE.value, "not a JSON object",
              "the answer is JSON but not an object"),
    # The same fault seen by the answer's judge (an in-process bot's answer; an HTTP bot's
    # is caught first as bad_shape): the same name.
    FaultKind(AnswerFault.NOT_AN_OBJECT.value, "not a JSON object",
              "the answer is not a JSON object"),
    FaultKind(AnswerFault.NO_MOVE.value, "no move", "the answer names no move"),
    FaultKind(AnswerFault.WRONG_TURN.value, "wrong turn",
              "the answer is for another turn than the one asked"),
    FaultKind(AnswerFault.UNKNOWN_MOVE.value, "unknown move id",
              "the answer's move id is not one of the request's legal_moves"),
    FaultKind(AnswerFault.MALFORMED_CARDS.value, "malformed cards",
              "the answer's cards are not written as the protocol says (\"3D\", \"TS\", ...)"),
    FaultKind(AnswerFault.NOT_IN_HAND.value, "cards not in hand",
              "the answer plays cards the bot does not hold"),
    FaultKind(AnswerFault.ILLEGAL.value, "illegal play",
              "the answer's cards are not a legal play now"),
    FaultKind(EXCEPTION, "exception", "the bot's code raised an exception"),
    FaultKind(BAD_DESCRIPTION, "bad description",
              "the answer to GET / is not a valid description"),
)}
"""Every fault, defined once: the code, the name and the sentence every reader is shown
(pages, the JSON API's ``name`` fields, the command line, docs/protocol.md's table, which a
test keeps equal to this one)."""

_ANSWER = frozenset(f.value for f in AnswerFault) | {EXCEPTION, BAD_DESCRIPTION}
ANSWER_TEXTS: dict[str, str] = {c: k.text for c, k in FAULTS.items() if c in _ANSWER}
"""Each refused answer in the bot author's words; a detail (the referee's own words about the
answer) is kept beside it."""
TRANSPORT_TEXTS: dict[str, str] = {
    c: k.text for c, k in FAULTS.items()
    if c not in _ANSWER and c not in (Fault.HTTP_STATUS.value, Fault.REDIRECT.value)}
"""Faults whose sentence needs nothing from the detail."""


def fault_name(fault: str | None) -> str:
    """The plain-words name of a fault code (``""`` for none or a forfeited seat's turn; an
    unknown code, from a newer referee, reads as its words)."""
    if fault is None or fault == "" or fault == FORFEITED:
        return ""
    kind = FAULTS.get(fault)
    return kind.name if kind is not None else fault.replace("_", " ")


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
            return FAULTS[fault].text
        return f"answered HTTP {code}; a 200 with a JSON object is expected"
    if fault == Fault.REDIRECT.value:
        code = _status(status, detail)
        shown = f" (HTTP {code})" if code is not None else ""
        return f"answered a redirect{shown}, which the arena never follows"
    if fault in ANSWER_TEXTS:  # EXCEPTION: an in-process bot's own exception, its words
        return _with_words(ANSWER_TEXTS[fault], detail)
    return f"the answer was refused ({fault.replace('_', ' ')})"


def fault_line(fault: str | None, detail: str = "", status: int | None = None) -> str:
    """A fault in one line, as the command line prints it: its name and its sentence
    (``not JSON: the answer is not JSON (...)``); empty for none."""
    name = fault_name(fault)
    return f"{name}: {plain_fault(fault, detail, status)}" if name else ""


def plain_items(items: Iterable[Mapping[str, Any]], key: str = "reason", *,
                with_name: bool = False) -> list[dict[str, Any]]:
    """Copies of stored strikes (``key="reason"``), notes or turns (``key="fault"``) with each
    ``detail`` put in words by :func:`plain_fault` (what was stored before the referee did
    that itself reads like what it stores now), and with ``with_name`` the fault's ``name``
    (:func:`fault_name`; not in a log, whose format does not change)."""
    out = []
    for item in items:
        copy = dict(item)
        fault = copy.get(key)
        if isinstance(fault, str) and isinstance(copy.get("detail"), str):
            copy["detail"] = plain_fault(fault, copy["detail"])
        if with_name:
            copy["name"] = fault_name(fault if isinstance(fault, str) else None)
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


__all__ = ["ANSWER_TEXTS", "BAD_DESCRIPTION", "FAULTS", "FORFEITED", "TRANSPORT_TEXTS",
           "FaultKind", "fault_line", "fault_name", "plain_fault", "plain_items", "plain_log"]
