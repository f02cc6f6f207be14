"""What one seat may see: the single function through which state reaches a player.

Everything a bot receives is built here, so the guarantee "no other seat's hidden cards ever
cross" is one function to audit and one property to test (``tests/referee/game/test_view.py``).
Hidden information in a deal: other seats' hands, set-aside cards and ghost hands, the stock,
cards another seat drew, and the spare card when it is dealt face down.
"""

from __future__ import annotations

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


def _history(deal: Deal, viewer: int) -> list[dict[str, Any]]:
    log = deal.log
    return [
        decision_json(i, viewer, deal) if i < deal.play_start else turn_json(s, m, deal)
        for i, (s, m, _) in enumerate(log)
    ]


def legal_moves_json(deal: Deal, moves: list[int] | None = None) -> list[dict[str, Any]]:
    """The legal moves with their stable ids, lowest plays first, pass last."""
    ms = deal.legal_moves() if moves is None else moves
    order = deal.t.order
    plays = sorted(
        (m for m in ms if m != PASS),
        key=lambda m: (m.bit_count(), sorted((order[c] for c in iter_cards(m)), reverse=True)),
    )
    out = [{"id": move_id(m), "cards": cards_json(m, deal)} for m in plays]
    if PASS in ms:
        out.append({"id": "pass", "cards": []})
    return out


def observation(deal: Deal, seat: int, *, with_legal_moves: bool = True) -> dict[str, Any]:
    """Everything ``seat`` may know about ``deal`` now, as JSON-ready data."""
    n = deal.rules.players
    table = deal.table
    history = _history(deal, seat)
    own_draws = [
        {"turn": i, "cards": cards_json(d, deal)}
        for i, (s, _m, d) in enumerate(deal.log)
        if s == seat and d
    ]
    draws = [
        {"turn": i, "seat": s, "count": d.bit_count()} for i, (s, _m, d) in enumerate(deal.log) if d
    ]
    obs: dict[str, Any] = {
        "seat": seat,
        "players": n,
        "deal_index": deal.context.index,
        "hand": cards_json(deal.hands[seat], deal),
        "card_counts": [h.bit_count() for h in deal.hands],
        "to_move": None if deal.over else deal.to_move,
        "table": None if table is None else {**play_json(table, deal), "seat": deal.table_seat},
        "trick": history[deal.trick_start :],
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


__all__ = ["cards_json", "legal_moves_json", "move_id", "observation", "play_json"]
