"""Greedy bot: sheds as many cards as it can, as low as it can.

Among the legal plays it takes the one with the most cards, then the lowest in the rule set's
card order (compared highest card first, as Big Two compares plays); it passes only when no
play is listed.

    python -m sample_bots.greedy_bot --port 8002
"""

from __future__ import annotations

from typing import Any

from sample_bots.sdk import Cards, run

NAME = "greedy"


def choose(request: dict[str, Any]) -> str:
    cards = Cards.for_request(request)
    best_id: str | None = None
    best_key: tuple[int, list[int]] | None = None
    for m in request["legal_moves"]:
        if not m["cards"]:
            continue
        order = sorted((cards.card(c) for c in m["cards"]), reverse=True)
        key = (-len(order), order)
        if best_key is None or key < best_key:
            best_id, best_key = m["id"], key
    if best_id is None:
        return "pass"
    return best_id


if __name__ == "__main__":
    run(choose, name=NAME, author="Big Two Arena samples", version="1")
