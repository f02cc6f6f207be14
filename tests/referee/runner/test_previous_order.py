"""The president exchange in a real match: each deal is dealt with the previous deal's
finishing order, the log records it, and verify, the request rebuild and old logs agree."""

from __future__ import annotations

import copy
from typing import Any

from referee import find_ruleset
from referee.game.state import Deal, DealContext
from referee.runner import log as mlog
from referee.runner.match import Limits, run_match
from referee.runner.requests import move_requests
from referee.wire.players import LocalPlayer, Player

PRESIDENT = find_ruleset("president")


def play(ruleset: Any, seed: int, deals: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A match of first-legal local players; its log and every move request they received."""
    received: list[dict[str, Any]] = []

    def first(request: dict[str, Any]) -> dict[str, Any]:
        received.append(copy.deepcopy(request))
        return {"move": request["legal_moves"][0]["id"]}

    players: list[Player] = [LocalPlayer(first) for _ in range(ruleset.players)]
    rec = run_match(ruleset, players, seed=seed, deals=deals,
                    limits=Limits(deadline_ms=60_000, time_bank_ms=0))
    return mlog.to_document(rec), received


def test_the_exchange_happens_from_the_second_deal() -> None:
    doc, _ = play(PRESIDENT, seed=5, deals=3)
    first, second = doc["deals"][0], doc["deals"][1]
    assert first["previous_order"] == []
    assert second["previous_order"] == first["outcome"]["finish_order"]
    assert len(second["previous_order"]) == PRESIDENT.players
    # Dealt with the order, the second deal's hands after the exchange are not the dealt ones.
    with_order = Deal.new(PRESIDENT, second["seed"], mlog.logged_context(second))
    without = Deal.new(PRESIDENT, second["seed"], DealContext(1, second["previous_winner"],
                                                              second["previous_loser"]))
    assert with_order.dealt == without.dealt
    assert with_order.hands != without.hands
    assert mlog.verify(doc).ok


def test_verify_checks_the_stated_order() -> None:
    doc, _ = play(PRESIDENT, seed=6, deals=2)
    bad = copy.deepcopy(doc)
    bad["deals"][1]["previous_order"] = list(reversed(bad["deals"][1]["previous_order"]))
    verdict = mlog.verify(bad)
    assert not verdict.ok and "previous finishing order" in verdict.problem
    stripped = copy.deepcopy(doc)
    del stripped["deals"][1]["previous_order"]  # as if dealt without it: the replay diverges
    assert not mlog.verify(stripped).ok


def test_a_log_written_before_the_order_was_recorded_still_verifies() -> None:
    doc, _ = play(find_ruleset("standard"), seed=7, deals=3)
    for d in doc["deals"]:
        del d["previous_order"]
    assert mlog.verify(doc).ok
    lines = mlog.dumps(doc, lines=True)
    assert '"previous_order"' not in lines
    assert mlog.verify(mlog.loads(lines)).ok


def test_jsonl_keeps_the_order_and_rebuilt_requests_match_what_bots_got() -> None:
    doc, received = play(PRESIDENT, seed=8, deals=3)
    again = mlog.loads(mlog.dumps(doc, lines=True))
    assert [d["previous_order"] for d in again["deals"]] == [
        d["previous_order"] for d in doc["deals"]
    ]
    rebuilt = [request for _, _, _, request in move_requests(again)]
    assert rebuilt == received
