"""What a spectator may see of a deal in progress: the one function pair to audit.

A seat's view is built in :mod:`referee.game.view`; this module is the same idea for someone
watching the table (a live match page).  A spectator sees what everyone at a real table
sees: who played what, who passed, how many cards each seat holds, the play to beat, the
face-up spare card, how many cards were drawn from the stock, and the timings.  It never
sees a hand, the stock, a set-aside card, a face-down spare, the cards drawn, or the cards
passed in an exchange (a spectator learns that seat 2 gave seat 0 two cards, not which).

What is *not* here on purpose, although it is in the log: the number of legal moves a seat
had (it narrows down the hand), a fault's ``detail`` (it may quote the cards a bot tried to
play) and the bot's ``say`` text (a bot may write anything, its hand included).  All of it is
revealed with the hands once the deal is over (``tests/referee/game/test_spectator.py`` proves
that no card still hidden crosses these functions).
"""

from __future__ import annotations

from typing import Any

from .state import PASS, Deal
from .view import cards_json


def _table(deal: Deal) -> dict[str, Any]:
    n = deal.rules.players
    out: dict[str, Any] = {
        "card_counts": [deal.hands[s].bit_count() for s in range(n)],
        "to_move": None if deal.over else deal.to_move,
        "table": cards_json(deal.table_mask, deal) if deal.table_kind else [],
        "table_seat": deal.table_seat if deal.table_kind else None,
        "stock_count": len(deal.stock),
        "finished": list(deal.finished),
    }
    if deal.spare and deal.rules.spare_face_up:
        out["spare"] = {"cards": cards_json(deal.spare, deal), "seat": deal.spare_to}
    return out


def deal_started(deal: Deal) -> dict[str, Any]:
    """The public state of a deal as dealt (no hand, only how many cards each seat got)."""
    return {"deal": deal.context.index, **_table(deal)}


def turn_played(deal: Deal, turn: int, latency_ms: float | None, fault: str | None,
                bank_ms: int) -> dict[str, Any]:
    """The public view of turn ``turn`` of ``deal``, just after it was pushed.

    ``fault`` is the reason a bot's answer was not played (public: the default move shows it
    anyway); the fault's detail, the bot's ``say`` and its legal-move count are not here (see
    the module docstring)."""
    seat, move, drew = deal.log[turn]
    decision = deal.phase == 1 or turn < deal.play_start
    out: dict[str, Any] = {"deal": deal.context.index, "turn": turn, "seat": seat}
    if decision:
        # A decision before play (an exchange, a trade, a set-aside card): that it happened
        # is public, its cards are not.
        out["decision"] = True
        out["cards"] = []
        out["count"] = move.bit_count()
    else:
        out["cards"] = [] if move == PASS else cards_json(move, deal)
    if drew:
        out["drew"] = drew.bit_count()
    out.update({"latency_ms": latency_ms, "fault": fault, "bank_ms": bank_ms, **_table(deal)})
    if deal.shootouts:
        out["shootouts"] = len(deal.shootouts)
    return out


__all__ = ["deal_started", "turn_played"]
