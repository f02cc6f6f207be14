"""What to fix, for each way a bot's answer can fail: the conformance kit's and the replay's.

The referee's own words for a fault (:func:`referee.runner.faults.plain_fault`) say what
happened, the same sentence the arena shows on match pages; the texts here add what the bot's
author should change, in the protocol's terms.  A fault code the kit does not know still gets
a sentence (:func:`fix_for` never fails), so a newer referee cannot break an older kit.
"""

from __future__ import annotations

from referee.runner.faults import BAD_DESCRIPTION
from referee.wire.httpbot import Fault
from referee.wire.protocol import AnswerFault

_FIXES: dict[str, str] = {
    Fault.TIMEOUT.value: "answer sooner: the whole call (connect, TLS, read, think, write) must "
                         "end within the deadline; think less per move, or stop thinking when a "
                         "budget runs out (deadline_ms and time_bank_ms are in every request)",
    Fault.CONNECTION.value: "make sure the bot runs and listens at this URL, answers every "
                            "request it reads, and does not close a connection before its "
                            "answer is complete",
    Fault.TLS.value: "serve a certificate a browser accepts for this host name (Let's Encrypt "
                     "or a platform's HTTPS), with its whole chain",
    Fault.PROTOCOL.value: "answer valid HTTP/1.1: a status line, headers, and a body framed by "
                          "Content-Length (or chunked); a web framework does this for you",
    Fault.DNS.value: "check the host name in the URL (it does not resolve)",
    Fault.REFUSED_ADDRESS.value: "the arena calls public addresses only; to check a bot on this "
                                 "machine or your network, run the kit with --allow-private",
    Fault.BAD_URL.value: "give the URL as http://host:port/path or https://host/path",
    Fault.BODY_TOO_LARGE.value: "keep the answer under 64 KiB: {\"move\": id} is all it takes",
    Fault.NOT_JSON.value: "answer strict JSON in UTF-8 (no NaN or Infinity, no duplicate keys, "
                          "no trailing text), e.g. {\"move\": \"3D\"}",
    Fault.BAD_SHAPE.value: "answer a JSON object, e.g. {\"move\": \"3D\"}",
    Fault.REDIRECT.value: "answer the request itself: the arena never follows a redirect, so "
                          "register the final URL (https:// rather than http://, the trailing "
                          "slash as your server wants it)",
    AnswerFault.NOT_AN_OBJECT.value: "answer a JSON object, e.g. {\"move\": \"3D\"}",
    AnswerFault.NO_MOVE.value: "answer {\"move\": <one of legal_moves[].id>} (or {\"cards\": "
                               "[...]} with the cards of one legal move)",
    AnswerFault.WRONG_TURN.value: "echo the request's own \"turn\" in the answer, or leave "
                                  "\"turn\" out",
    AnswerFault.UNKNOWN_MOVE.value: "answer one of the ids listed in this request's "
                                    "legal_moves (read them from each request: never build an "
                                    "id yourself)",
    AnswerFault.MALFORMED_CARDS.value: "write cards as the request does: a rank of "
                                       "3456789TJQKA2 and a suit of DCHS (\"TS\", not \"10S\")",
    AnswerFault.NOT_IN_HAND.value: "play only cards from this request's \"hand\" (pick from "
                                   "legal_moves to be safe)",
    AnswerFault.ILLEGAL.value: "pick from legal_moves: it lists every legal move, pass "
                               "included when passing is allowed",
    BAD_DESCRIPTION: "answer GET / with {\"protocol\": 1, \"name\": ..., \"author\": ..., "
                     "\"version\": ...} (strings of at most 64 characters, a non-empty name)",
}

_STATUS_FIXES: dict[int, str] = {
    400: "the bot refused the request as malformed: accept every field the protocol sends and "
         "ignore the ones you do not know",
    401: "the bot refused the request's signature: if it was started with a secret, run the "
         "kit with --secret and the same secret",
    403: "the bot (or a proxy, a firewall, a platform's access rule) refused the request: let "
         "the arena's requests through",
    404: "serve this path: the arena appends /, /start, /move and /end to the URL you register",
    405: "accept this method on this path: GET for /, POST for /start, /move and /end",
    413: "accept request bodies up to 1 MiB (a late-deal request carries the whole history)",
    415: "accept Content-Type: application/json",
}


def fix_for(fault: str | None, status: int | None = None) -> str:
    """What to change for ``fault`` (the referee's fault code), given the HTTP ``status``."""
    if fault is None:
        return ""
    if fault == Fault.HTTP_STATUS.value:
        if status is not None and status in _STATUS_FIXES:
            return _STATUS_FIXES[status]
        if status is not None and status >= 500:
            return ("the bot crashed or failed on this request: look at its log for this "
                    "request (the kit's --json output holds the request), and answer a legal "
                    "move even when your strategy fails")
        return "answer HTTP 200 with a JSON object"
    return _FIXES.get(fault, "see docs/protocol.md, \"Faults, strikes and forfeits\"")


PHASE_HINTS: dict[str, str] = {
    "decision-give": "In phase \"decision\" with decision.kind \"give\" the legal moves are the "
                     "sets of cards the bot may give to seat decision.to: answer one of their "
                     "ids as for a play.",
    "decision-trade": "In phase \"decision\" with decision.kind \"trade\" the legal moves are "
                      "trading your lowest card for the spare, or \"pass\": answer one of "
                      "their ids.",
    "out-of-turn": "In phase \"out-of-turn\" the bot may bomb out of turn: answer a bomb from "
                   "legal_moves, or \"pass\".",
}
"""A sentence added to the fix of a failed move whose request had an unusual phase."""


__all__ = ["PHASE_HINTS", "fix_for"]
