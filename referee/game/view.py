"""What one seat may see: the single function through which state reaches a player.

Everything a bot receives is built here, so the guarantee "no other seat's hidden cards ever
cross" is one function to audit and one property to test (``tests/referee/game/test_view.py``).
Hidden information in a deal: other seats' hands, set-aside cards and ghost hands, the stock,
cards another seat drew, and the spare card when it is dealt face down.
"""

from __future__ import annotations

import json
from typing import Any

from .cards import Mask, card_text, iter_cards, move_id
from .combos import Play, kind_name
from .state import PASS, Deal

_CACHE_MAX = 1 << 16
"""Card sets remembered per rule set's tables (``Tables.card_texts``, cleared when full):
requests repeat the same sets turn after turn (every earlier play in ``history``, the hand,
the legal moves), and sorting and naming cards was most of the referee's CPU per move."""


def cards_json(mask: Mask, deal: Deal) -> list[str]:
    """Card texts sorted low to high in the rule set's order (how a player sorts a hand).

    A fresh list every time (callers may keep or change it); the sorting is remembered.
    """
    cache = deal.t.card_texts
    texts = cache.get(mask)
    if texts is None:
        order = deal.t.order
        texts = tuple(card_text(c) for c in sorted(iter_cards(mask), key=order.__getitem__))
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[mask] = texts
    return list(texts)


def play_json(play: Play, deal: Deal) -> dict[str, Any]:
    kind = kind_name(play.kind)
    out: dict[str, Any] = {"cards": cards_json(play.mask, deal), "kind": kind}
    if play.kind == 5 and play.level >= 0:
        out["type"] = deal.rules.five_card_order[play.level].value
    elif play.kind == 4:
        out["type"] = "four-of-a-kind" if play.key >= 64 else "two-pairs"
    return out


def turn_json(seat: int, move: Mask, deal: Deal) -> dict[str, Any]:
    if move == PASS:
        return {"seat": seat, "pass": True}
    return {"seat": seat, "cards": cards_json(move, deal)}


def decision_json(i: int, viewer: int, deal: Deal) -> dict[str, Any]:
    """A decision turn before play; its cards are shown only to the seats they passed between."""
    seat, move, _ = deal.log[i]
    out: dict[str, Any] = {"seat": seat, "decision": True}
    if seat == viewer or any(g == seat and r == viewer and c == move for g, r, c in deal.exchanges):
        out["cards"] = cards_json(move, deal)
    return out


def legal_moves_json(deal: Deal, moves: list[int] | None = None) -> list[dict[str, Any]]:
    """The legal moves with their stable ids, lowest plays first, pass last."""
    ms = deal.legal_moves() if moves is None else moves
    known = deal.t.move_keys
    plays = []
    for m in ms:
        if m == PASS:
            continue
        found = known.get(m)
        if found is None:  # fewer cards first, then the rule set's order from the top card
            order = deal.t.order
            key = (m.bit_count(), sorted((order[c] for c in iter_cards(m)), reverse=True))
            if len(known) >= _CACHE_MAX:
                known.clear()
            found = known[m] = (key, move_id(m))
        plays.append((found[0], found[1], m))
    plays.sort(key=_first)
    out = [{"id": mid, "cards": cards_json(m, deal)} for _, mid, m in plays]
    if PASS in ms:
        out.append({"id": "pass", "cards": []})
    return out


def _first(item: tuple[Any, ...]) -> Any:
    return item[0]


WIRE_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""The encoding of every request on the wire (``referee.wire.httpbot.BotClient.call``'s)."""


def wire_bytes(payload: Any) -> bytes:
    """A request body as the wire writes it: :data:`WIRE_JSON`'s compact UTF-8 JSON, strict
    (a NaN or an infinity raises ``ValueError``: the caller's error, not the bot's)."""
    return WIRE_JSON.encode(payload).encode("utf-8")

_DECISION: dict[str, Any] = {}
"""Placeholder in :attr:`DealView._turns` for a decision (never shown: see ``observe``)."""


class DealView:
    """The parts of every seat's observation that only grow, kept from turn to turn of a deal.

    A request carries the whole history of the deal; building it afresh every turn was most
    of the referee's CPU per move.  A deal's log only ever grows by appending, so each
    turn's entry and the draws are built once, when first seen; every later observation
    reuses them.  (Encoding the request whole is a few microseconds:
    :meth:`referee.wire.protocol.MoveRequest.encoded`.)  The entries are shared between the
    requests of a deal, so a receiver must not modify a request.  Decisions before play are
    rebuilt every time (they are few, and what they show depends on the viewer).

    ``observation(deal, seat)`` without a view builds one from scratch, through the same code
    in one step instead of many (``tests/referee/game/test_view.py`` compares the two, bytes
    included, over whole matches).
    """

    __slots__ = ("_draws", "_own", "_seen", "_turns", "deal")

    def __init__(self, deal: Deal) -> None:
        self.deal = deal
        self._seen = 0
        """Log entries folded in so far."""
        self._turns: list[dict[str, Any]] = []
        """Per log entry: its history entry (``_DECISION`` for a decision: rebuilt per viewer)."""
        self._draws: list[dict[str, Any]] = []
        self._own: dict[int, list[dict[str, Any]]] = {}
        """Per seat: the entries of its own draws."""

    def _catch_up(self) -> None:
        deal = self.deal
        log, play_start = deal.log, deal.play_start
        for i in range(self._seen, len(log)):
            seat, move, drew = log[i]
            # A decision stays one: play_start only grows while every entry is a decision.
            self._turns.append(_DECISION if i < play_start else turn_json(seat, move, deal))
            if drew:
                self._draws.append({"turn": i, "seat": seat, "count": drew.bit_count()})
                self._own.setdefault(seat, []).append({"turn": i, "cards": cards_json(drew, deal)})
        self._seen = len(log)

    def observe(self, seat: int, *, with_legal_moves: bool = True) -> dict[str, Any]:
        """:func:`observation` of ``seat`` now."""
        deal = self.deal
        if self._seen < len(deal.log):
            self._catch_up()
        play_start, trick_start = deal.play_start, deal.trick_start
        head = [decision_json(i, seat, deal) for i in range(play_start)]
        history = head + self._turns[play_start:]
        trick = history[trick_start:]
        own_draws, draws = list(self._own.get(seat, [])), list(self._draws)
        return _observation(deal, seat, history, trick, draws, own_draws, with_legal_moves)


def observation(
    deal: Deal, seat: int, *, with_legal_moves: bool = True, view: DealView | None = None
) -> dict[str, Any]:
    """Everything ``seat`` may know about ``deal`` now, as JSON-ready data.

    ``view``: the deal's :class:`DealView`, to reuse what earlier turns built.
    """
    return (view or DealView(deal)).observe(seat, with_legal_moves=with_legal_moves)


def _observation(
    deal: Deal,
    seat: int,
    history: list[dict[str, Any]],
    trick: list[dict[str, Any]],
    draws: list[dict[str, Any]],
    own_draws: list[dict[str, Any]],
    with_legal_moves: bool,
) -> dict[str, Any]:
    n = deal.rules.players
    table = deal.table
    obs: dict[str, Any] = {
        "seat": seat,
        "players": n,
        "deal_index": deal.context.index,
        "hand": cards_json(deal.hands[seat], deal),
        "card_counts": [h.bit_count() for h in deal.hands],
        "to_move": None if deal.over else deal.to_move,
        "table": None if table is None else {**play_json(table, deal), "seat": deal.table_seat},
        "trick": trick,
        "history": history,
        "passed": [s for s in range(n) if deal.locked >> s & 1],
        "finished": list(deal.finished),
        # Only the opener is told which card its first play must contain.
        "must_include": None
        if not deal.opening_card or seat != deal.to_move
        else card_text(deal.opening_card.bit_length() - 1),
        "stock_count": len(deal.stock),
        "draws": draws,
        "own_draws": own_draws,
        "starter": None if deal.starter < 0 else deal.starter,
    }
    if deal.spare and (deal.rules.spare_face_up or deal.spare_to == seat):
        obs["spare"] = {"cards": cards_json(deal.spare, deal), "seat": deal.spare_to}
    obs["phase"] = ("play", "decision", "out-of-turn")[deal.phase]
    if deal.phase == 1 and deal.to_move == seat:
        d = deal.decisions[0]
        obs["decision"] = (
            {"kind": "give", "cards": d.number, "to": d.to}
            if d.kind == "give"
            else {"kind": "trade", "card": cards_json(deal.legal_moves()[0], deal)}
        )
    mine = [
        {"from": g, "to": r, "cards": cards_json(c, deal)}
        for g, r, c in deal.exchanges
        if seat in (g, r)
    ]
    if mine:
        obs["exchanges"] = mine
    if deal.shootouts:
        obs["shootouts"] = len(deal.shootouts)
    if with_legal_moves and not deal.over and deal.to_move == seat:
        obs["legal_moves"] = legal_moves_json(deal)
    if deal.outcome is not None:
        obs["outcome"] = deal.outcome.to_json()
    return obs


__all__ = [
    "WIRE_JSON",
    "DealView",
    "cards_json",
    "legal_moves_json",
    "move_id",
    "observation",
    "play_json",
    "wire_bytes",
]
