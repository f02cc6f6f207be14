"""The ``/move`` requests of a logged match, rebuilt exactly from its log.

A log keeps no request bodies (a match's requests add up to megabytes), but it holds all
they are made of: the deal seeds, every move, and the per-turn figures the runner folds into
the next request (the seat's time bank after its turn, its latency, the strikes).  Replaying
the log with the engine and feeding :func:`referee.wire.protocol.move_request` what
:mod:`referee.runner.match` fed it gives back, byte for byte once encoded, the body each seat
was sent: ``tests/referee/runner/test_requests.py`` compares them with what bots received.
That is how an arena shows a bot's owner the exact input that broke their bot.

The log is trusted to be well-formed (verify an untrusted one first with
:func:`referee.runner.log.verify`); one that does not replay raises ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from referee.game import numbering
from referee.game.cards import CardError, parse_move
from referee.game.rules import RuleSet
from referee.game.state import Deal
from referee.wire.protocol import move_request

from .log import logged_context
from .match import FORFEITED

Turn = tuple[int, int]
"""(deal index, turn index), both 0-based, as in the log."""


def move_requests(
    doc: dict[str, Any], *, seat: int | None = None, turns: Collection[Turn] | None = None
) -> Iterator[tuple[int, int, int, dict[str, Any]]]:
    """``(deal, turn, seat, request)`` for every turn of the log at which a seat was called
    (a forfeited seat's turns were not), in match order; only ``seat``'s turns and only
    ``turns`` when given (replay stops after the last deal holding one of them)."""
    try:
        yield from _replay(doc, seat, turns)
    except (KeyError, TypeError, IndexError, CardError) as exc:
        raise ValueError(f"the log does not replay: {type(exc).__name__}: {exc}") from None


def _replay(
    doc: dict[str, Any], only_seat: int | None, turns: Collection[Turn] | None
) -> Iterator[tuple[int, int, int, dict[str, Any]]]:
    rules = RuleSet.from_options(doc["rules"]["name"], doc["rules"]["options"])
    n = rules.players
    limits = doc["limits"]
    last_deal = max((d for d, _ in turns), default=-1) if turns is not None else None
    bank: list[int] = [int(limits["time_bank_ms"])] * n
    last_latency: list[int | None] = [None] * n
    strikes = [0] * n
    totals = [0] * n
    for d in doc["deals"]:
        index = d["index"]
        if last_deal is not None and index > last_deal:
            return
        deal = Deal.new(rules, d["seed"], logged_context(d))
        for t in d["turns"]:
            seat = deal.to_move
            if seat != t["seat"] or t["turn"] != len(deal.log):
                raise ValueError(f"{numbering.where(deal=index, turn=len(deal.log))}: the "
                                 "log's seat or turn differs from the replay")
            legal = deal.legal_moves()
            if t["fault"] != FORFEITED:
                if (only_seat is None or seat == only_seat) and (
                        turns is None or (index, t["turn"]) in turns):
                    yield index, t["turn"], seat, move_request(
                        deal, seat, match_id=doc["match_id"], turn=t["turn"], scores=totals,
                        deadline_ms=limits["deadline_ms"], time_bank_ms=bank[seat],
                        last_latency_ms=last_latency[seat], legal=legal,
                        deals=doc["deals_planned"], strikes=strikes)
                last_latency[seat] = round(t["latency_ms"])
                if t["fault"] is not None:
                    strikes[seat] += 1
            bank[seat] = int(t["bank_ms"])
            deal.push(parse_move(t["move"]))
        totals = list(d["totals"])


def move_request_at(doc: dict[str, Any], deal: int, turn: int) -> dict[str, Any] | None:
    """The request sent at ``turn`` of ``deal``, both 0-based indices (None: nobody was
    called then)."""
    for _, _, _, request in move_requests(doc, turns={(deal, turn)}):
        return request
    return None


__all__ = ["Turn", "move_request_at", "move_requests"]
