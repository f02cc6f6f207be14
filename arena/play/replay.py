"""Replay frames of a match log for the web viewer: every turn replayed with the engine.

The browser gets, per deal, the hands as dealt and for every turn who moved, what, how fast,
any fault, and the state after it (every hand, the play to beat, who played it).  The engine
computes the states (exchanges, stock draws and out-of-turn bombs included), so the viewer
needs no rules of its own and shows exactly what the referee saw.
"""

from __future__ import annotations

from typing import Any

from referee.game.cards import mask_texts, parse_move
from referee.game.rules import RuleSet
from referee.game.state import Deal
from referee.runner.faults import plain_fault
from referee.runner.log import logged_context


def replay_frames(doc: dict[str, Any], bot_ids: list[int] | None = None,
                  names: list[str] | None = None) -> dict[str, Any]:
    """The viewer's data for a match log document (raises ValueError on a broken log).
    ``names``: the arena's names of the seats' bots (the log has what the bots call
    themselves, which need not be unique)."""
    try:
        rules = RuleSet.from_options(doc["rules"]["name"], doc["rules"]["options"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a match log: {exc}") from None
    n = rules.players
    seats = []
    for s in doc["seats"]:
        seats.append({"seat": s["seat"], "name": names[s["seat"]] if names else s["name"],
                      "described_as": s["name"], "author": s.get("author", ""),
                      "version": s.get("version", ""),
                      "bot_id": bot_ids[s["seat"]] if bot_ids else None})
    deals = [deal_frames(rules, d) for d in doc["deals"]]
    result = doc.get("result") or {}
    return {
        "match_id": doc.get("match_id"),
        "ruleset": doc["rules"]["name"],
        "players": n,
        "seats": seats,
        "deals": deals,
        "totals": result.get("totals"),
        "standings": result.get("standings"),
    }


def deal_frames(rules: RuleSet, d: dict[str, Any]) -> dict[str, Any]:
    """The viewer's data for one deal of a log (``referee.runner.log.deal_json``): the hands as
    dealt, and every turn with the state after it."""
    deal = Deal.new(rules, d["seed"], logged_context(d))
    named: dict[int, list[str]] = {}

    def texts(mask: int) -> list[str]:
        """``mask_texts``, each set named once per deal: a turn changes one hand, and every
        turn lists all of them (the worker builds these frames at each deal's end)."""
        found = named.get(mask)
        if found is None:
            found = named[mask] = mask_texts(mask)
        return found

    start_hands = [texts(h) for h in deal.hands]
    turns = []
    for t in d["turns"]:
        if deal.outcome is not None:
            break
        move = parse_move(t["move"])
        seat = deal.to_move
        deal.push(move)
        turns.append({
            "turn": t["turn"],
            "seat": seat,
            "cards": texts(move),
            "legal": t["legal"],
            "latency_ms": t["latency_ms"],
            "fault": t["fault"],
            "detail": plain_fault(t["fault"], t["detail"]),
            "say": t["say"],
            "bank_ms": t["bank_ms"],
            "hands": [texts(h) for h in deal.hands],
            "table": texts(deal.table_mask) if deal.table_kind else [],
            "table_seat": deal.table_seat if deal.table_kind else None,
        })
    outcome = d.get("outcome") or {}
    return {
        "index": d["index"],
        "hands": start_hands,
        "turns": turns,
        "scores": outcome.get("scores"),
        "winner": outcome.get("winner"),
        "termination": outcome.get("termination"),
        "totals": d.get("totals"),
    }
