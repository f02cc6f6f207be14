"""Bot wire protocol, version 1: the messages the referee sends and the answers it accepts.

A bot is a small web server (Battlesnake's shape): ``GET /`` describes it, the referee POSTs
``/start`` once per match, ``/move`` on every turn of the bot's seat, and ``/end`` at the end.
The full description, JSON Schemas and a real example are in ``docs/protocol.md`` and
``referee/schemas/``.  This module builds requests and judges answers; it does no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .cards import CardError, move_id, parse_move
from .rules import RuleSet
from .state import Deal
from .view import legal_moves_json, observation

PROTOCOL_VERSION = 1
MAX_SAY = 140
"""Longest ``say`` text kept in the log (longer ones are cut)."""


class AnswerFault(StrEnum):
    """Why an answer to ``/move`` was not accepted (each costs the bot its turn)."""

    NOT_AN_OBJECT = "not-an-object"
    NO_MOVE = "no-move"
    """Neither ``move`` nor ``cards`` given, or of the wrong type."""
    WRONG_TURN = "wrong-turn"
    """The answer echoes a ``turn`` other than the one asked."""
    UNKNOWN_MOVE = "unknown-move"
    """A move id that is not in ``legal_moves``."""
    MALFORMED_CARDS = "malformed-cards"
    NOT_IN_HAND = "not-in-hand"
    ILLEGAL = "illegal"
    """Cards held, but not a legal play now (not a combination, too low, rule forbids)."""


def rules_json(rules: RuleSet) -> dict[str, Any]:
    return {"name": rules.name, "options": rules.options()}


def move_request(
    deal: Deal,
    seat: int,
    *,
    match_id: str,
    turn: int,
    scores: list[int],
    deadline_ms: int,
    time_bank_ms: int,
    last_latency_ms: int | None,
    legal: list[int] | None = None,
) -> dict[str, Any]:
    """The body of ``POST /move`` for ``seat``: its observation plus match facts."""
    obs = observation(deal, seat, with_legal_moves=False)
    obs["legal_moves"] = legal_moves_json(deal, legal)
    return {
        "protocol": PROTOCOL_VERSION,
        "match_id": match_id,
        "deal_id": f"{match_id}/{deal.context.index}",
        "turn": turn,
        "rules": rules_json(deal.rules),
        "scores": list(scores),
        "deadline_ms": deadline_ms,
        "time_bank_ms": time_bank_ms,
        "last_latency_ms": last_latency_ms,
        **obs,
    }


@dataclass(frozen=True)
class Answer:
    """A judged answer: the move (or None with the fault that voided it) and the bot's say."""

    move: int | None
    fault: AnswerFault | None
    detail: str
    say: str | None


def judge_answer(data: Any, turn: int, legal: list[int], hand: int) -> Answer:
    """Accept ``{"move": id}`` or ``{"cards": [...]}`` (and an optional ``say``)."""
    if not isinstance(data, dict):
        return Answer(None, AnswerFault.NOT_AN_OBJECT, "the answer must be a JSON object", None)
    say = data.get("say")
    say = say[:MAX_SAY] if isinstance(say, str) else None
    if "turn" in data and data["turn"] != turn:
        return Answer(None, AnswerFault.WRONG_TURN, f"answered turn {data['turn']!r}", say)
    raw = data.get("move", data.get("cards"))
    if isinstance(raw, str):
        ids = {move_id(m): m for m in legal}
        if raw in ids:
            return Answer(ids[raw], None, "", say)
        if "move" in data:
            return Answer(None, AnswerFault.UNKNOWN_MOVE, f"no legal move has id {raw!r}", say)
    if not isinstance(raw, (str, list)) or (
        isinstance(raw, list) and not all(isinstance(x, str) for x in raw)
    ):
        return Answer(None, AnswerFault.NO_MOVE, "give 'move' (an id) or 'cards' (a list)", say)
    try:
        mask = parse_move(raw)
    except CardError as e:
        return Answer(None, AnswerFault.MALFORMED_CARDS, str(e), say)
    if mask & ~hand:
        return Answer(None, AnswerFault.NOT_IN_HAND, "cards not in hand", say)
    if mask not in legal:
        return Answer(None, AnswerFault.ILLEGAL, "not a legal play now", say)
    return Answer(mask, None, "", say)
