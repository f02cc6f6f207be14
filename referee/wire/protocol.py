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

from referee.game.cards import CardError, move_id, parse_move
from referee.game.compiled import MAX_COMPILED_RULE_SETS, RuleSetMemo
from referee.game.rules import RuleSet
from referee.game.state import Deal
from referee.game.view import DealView, legal_moves_json, wire_bytes
from referee.wire.text import text_problem

PROTOCOL_VERSION = 1
MAX_SAY = 140
"""Longest ``say`` text kept in the log (longer ones are cut)."""
SAY_DROPPED = "say dropped: it "
"""How the detail of a played turn begins when its ``say`` broke the text rule
(:mod:`referee.wire.text`): the move stands, the say is not kept."""


class AnswerFault(StrEnum):
    """Why an answer to ``/move`` was not accepted (each costs the bot its turn)."""

    NOT_AN_OBJECT = "not_an_object"
    NO_MOVE = "no_move"
    """Neither ``move`` nor ``cards`` given, or of the wrong type."""
    WRONG_TURN = "wrong_turn"
    """The answer echoes a ``turn`` other than the one asked."""
    UNKNOWN_MOVE = "unknown_move"
    """A move id that is not in ``legal_moves``."""
    MALFORMED_CARDS = "malformed_cards"
    NOT_IN_HAND = "not_in_hand"
    ILLEGAL = "illegal"
    """Cards held, but not a legal play now (not a combination, too low, rule forbids)."""


def _rules_json(rules: RuleSet) -> dict[str, Any]:
    return {"name": rules.name, "options": rules.options()}


rules_json = RuleSetMemo(_rules_json, MAX_COMPILED_RULE_SETS)
"""``{"name", "options"}`` of a rule set, as sent in every request.

Built once per rule set and remembered (building it walks ~40 options, which would cost more
than the rest of a move request): the same dict is shared by every request, so a receiver must
not modify it."""


class MoveRequest(dict[str, Any]):
    """The body of ``POST /move``: a plain dict that writes its own JSON text.

    :meth:`encoded` is the body as the wire writes it
    (:data:`referee.game.view.WIRE_JSON`).  A sender that needs it faster gives its
    :class:`~referee.wire.httpbot.BotClient` an ``encoder`` of its own (the arena's worker
    does: orjson writes the same bytes in a sixth of the time).
    Requests share parts (the rule set's dict, the history's entries): a receiver must not
    modify one.
    """

    __slots__ = ()

    def encoded(self) -> bytes:
        """The UTF-8 JSON body: ``WIRE_JSON.encode(request)``."""
        return wire_bytes(self)


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
    deals: int = 1,
    strikes: list[int] | None = None,
    view: DealView | None = None,
) -> MoveRequest:
    """The body of ``POST /move`` for ``seat``: its observation plus match facts.

    ``turn`` is the index of this turn in the deal (``len(history)``), ``deals`` the number
    of deals in the match, ``strikes`` every seat's strike count so far.  ``view``: the deal's
    :class:`~referee.game.view.DealView`, kept by the caller from turn to turn (the match runner
    does) so that the history is built once per turn instead of once per request.
    """
    obs = (view or DealView(deal)).observe(seat, with_legal_moves=False)
    obs["legal_moves"] = legal_moves_json(deal, legal)
    rules = rules_json(deal.rules)
    body = {
        "protocol": PROTOCOL_VERSION,
        "type": "move",
        "match_id": match_id,
        "deal_id": deal_id(match_id, deal.context.index),
        "deals": deals,
        "turn": turn,
        "rules": rules,
        "scores": list(scores),
        "strikes": list(strikes) if strikes is not None else [0] * deal.rules.players,
        "deadline_ms": deadline_ms,
        "time_bank_ms": time_bank_ms,
        "last_latency_ms": last_latency_ms,
        **obs,
    }
    return MoveRequest(body)


def deal_id(match_id: str, index: int) -> str:
    """The id of deal ``index`` (0-based) of a match: ``"<match_id>/<index>"``."""
    return f"{match_id}/{index}"


MAX_NAME = 64
"""Longest bot ``name``/``author``/``version`` accepted from ``GET /``."""


def check_description(data: Any) -> str | None:
    """Why a ``GET /`` answer is not a valid bot description, or None when it is."""
    if not isinstance(data, dict):
        return "the answer must be a JSON object"
    if data.get("protocol") != PROTOCOL_VERSION or isinstance(data.get("protocol"), bool):
        return f"'protocol' must be {PROTOCOL_VERSION}, got {data.get('protocol')!r:.40}"
    for key in ("name", "author", "version"):
        value = data.get(key)
        if not isinstance(value, str):
            return f"{key!r} must be a string"
        if len(value) > MAX_NAME:
            return f"{key!r} is longer than {MAX_NAME} characters"
        problem = text_problem(value)
        if problem is not None:  # kept in the log and shown: the arena's rule for text
            return f"{key!r} {problem}"
    if not data["name"].strip():
        return "'name' must not be empty"
    return None


def start_request(
    *,
    match_id: str,
    seat: int,
    rules: RuleSet,
    deals: int,
    seats: list[dict[str, Any]],
    limits: dict[str, Any],
) -> dict[str, Any]:
    """The body of ``POST /start``: who plays where, under which rules and limits.

    ``seats`` are the public identities (``seat``, ``name``, ``author``, ``version``);
    ``limits`` holds ``deadline_ms``, ``time_bank_ms`` and ``max_strikes``.
    """
    return {
        "protocol": PROTOCOL_VERSION,
        "type": "start",
        "match_id": match_id,
        "seat": seat,
        "players": rules.players,
        "deals": deals,
        "rules": rules_json(rules),
        "seats": seats,
        **limits,
    }


def end_request(
    *,
    match_id: str,
    seat: int,
    scores: list[int],
    standings: list[dict[str, Any]],
    deals: list[dict[str, Any]],
    strikes: list[int],
    forfeited: list[int],
) -> dict[str, Any]:
    """The body of ``POST /end``: the final scores, standings and every deal's outcome."""
    return {
        "protocol": PROTOCOL_VERSION,
        "type": "end",
        "match_id": match_id,
        "seat": seat,
        "scores": list(scores),
        "standings": standings,
        "deals": deals,
        "strikes": list(strikes),
        "forfeited": list(forfeited),
    }


@dataclass(frozen=True)
class Answer:
    """A judged answer: the move (or None with the fault that voided it) and the bot's say."""

    move: int | None
    fault: AnswerFault | None
    detail: str
    say: str | None


def judge_answer(data: Any, turn: int, legal: list[int], hand: int) -> Answer:
    """Accept ``{"move": id}`` or ``{"cards": [...]}`` (and an optional ``say``).

    The texts of an answer a bot controls are checked here, once: a ``say`` that breaks the
    text rule (:mod:`referee.wire.text`) is dropped (:func:`_say`); every other string the
    bot sent reaches a detail only through ``repr``, which escapes NUL and surrogates."""
    if not isinstance(data, dict):
        return Answer(None, AnswerFault.NOT_AN_OBJECT, "the answer must be a JSON object", None)
    say, dropped = _say(data.get("say"))
    if "turn" in data and data["turn"] != turn:
        # Both values quoted as the JSON they are (indices), not as the turn people count.
        return Answer(None, AnswerFault.WRONG_TURN,
                      f"answered \"turn\": {data['turn']!r:.40}; the request's \"turn\" is "
                      f"{turn}", say)
    raw = data.get("move", data.get("cards"))
    if isinstance(raw, str):
        chosen = _legal_move_with_id(raw, legal)
        if chosen is not None:
            return Answer(chosen, None, dropped, say)
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
    return Answer(mask, None, dropped, say)


def _legal_move_with_id(raw: str, legal: list[int]) -> int | None:
    """The legal move whose id is ``raw``, or None.

    An id names its cards (:func:`~referee.game.cards.move_id`, which parsing inverts), so the
    answer is parsed once and its own id compared, instead of naming every legal move at every
    turn to look it up."""
    try:
        move = parse_move(raw)
    except CardError:
        return None
    return move if move in legal and move_id(move) == raw else None


def _say(value: Any) -> tuple[str | None, str]:
    """The ``say`` to keep (its first ``MAX_SAY`` characters), and why it was dropped when it
    was: a say holding NUL or a lone surrogate is not kept, but costs the bot nothing (the say
    is a courtesy; the move stands).  The reason becomes the detail of a turn whose move was
    played (a refused move's detail says why the move was refused)."""
    if not isinstance(value, str):
        return None, ""
    problem = text_problem(value)
    if problem is not None:
        return None, SAY_DROPPED + problem
    return value[:MAX_SAY], ""


def example_exchange() -> tuple[dict[str, Any], dict[str, Any]]:
    """A real ``/move`` request and a valid answer (the example in ``docs/protocol.md``).

    Standard rules, seed 7, after three turns of the first deal; the answer plays the first
    (lowest) legal move.
    """
    from referee.game.presets import find_ruleset

    deal = Deal.new(find_ruleset("standard"), 7)
    for _ in range(3):
        deal.push(deal.legal_moves()[0])
    seat = deal.to_move
    request = move_request(
        deal,
        seat,
        match_id="m-example",
        turn=len(deal.log),
        scores=[0, 0, 0, 0],
        deadline_ms=1000,
        time_bank_ms=9850,
        last_latency_ms=37,
        deals=8,
        strikes=[0, 0, 1, 0],
    )
    choice = request["legal_moves"][0]["id"]
    return request, {"move": choice, "turn": request["turn"], "say": "low and steady"}
