"""Real ``/move`` requests of every shape the arena sends, for the conformance kit.

A bot that only ever saw standard four-player deals may choke on the first request of a house
rule: a decision before play (give cards to another seat, trade a card for the spare), an
out-of-turn bomb offer, a two- or three-player deal, a request with ``exchanges``, ``spare``,
``own_draws`` or ``shootouts`` in it.  The kit does not write such requests by hand: it plays
real deals of every preset with the engine (seeded, random legal moves), and builds each
request with :func:`referee.wire.protocol.move_request`, the function the match runner calls,
so every request is one the arena could send.  Of each deal it keeps the first request of
every shape (:func:`shape_tags`), and a deal's second deal is dealt with the first one's
winner, loser and finishing order, so the exchanges that happen "from the second deal" do.

Everything is deterministic: the same version of the engine picks the same requests.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from dataclasses import dataclass

from referee.game.presets import find_ruleset, preset_names
from referee.game.rules import RuleSet
from referee.game.state import PASS, Deal, DealContext
from referee.game.view import DealView
from referee.runner.match import Limits, find_loser
from referee.wire.protocol import MoveRequest, move_request

VARIANTS: tuple[str, ...] = (
    "president+exchange=president-choice",
    "three-player+exchange=loser-to-winner",
    "three-player+leftover=set-aside,spare_trade=true",
)
"""Rule sets beyond the presets whose requests have shapes no preset produces: the
President's own choice of cards to give, the three-player loser-to-winner exchange, the spare
card trade."""

LONG_HISTORY_TURNS = 120
"""Turns of history the large-history check's request has at least (a long deal of four
players; the longest in thousands of random deals are about 150)."""

MAX_DEALS_SEARCHED = 24
"""Deals played at most per rule set while a shape its rules allow is still missing."""

TAG_WORDS: dict[str, str] = {
    "lead": "the opening lead",
    "follow": "answering a play (pass allowed)",
    "decision-give": "a decision before play: give cards",
    "decision-trade": "a decision before play: trade for the spare card",
    "out-of-turn": "an out-of-turn bomb offer",
    "exchanges": "after cards were exchanged",
    "spare": "with a spare card",
    "own-draws": "after drawing from the stock",
    "shootouts": "in a team shoot-out",
}
"""Each shape in words, in the order a check names them."""


@dataclass(frozen=True)
class Sample:
    """One request the kit sends: the rule set it comes from, the shapes it stands for
    (:data:`TAG_WORDS` keys), and the request itself (its ``encoded()`` is the body)."""

    rules: str
    players: int
    tags: tuple[str, ...]
    request: MoveRequest

    def words(self) -> str:
        return ", ".join(TAG_WORDS[t] for t in self.tags)


def shape_tags(request: MoveRequest) -> set[str]:
    """The shapes a request shows (see :data:`TAG_WORDS`)."""
    tags: set[str] = set()
    phase = request.get("phase")
    if phase == "decision":
        tags.add(f"decision-{request['decision']['kind']}")
    elif phase == "out-of-turn":
        tags.add("out-of-turn")
    elif request.get("table") is None:
        tags.add("lead")
    elif any(m["id"] == "pass" for m in request["legal_moves"]):
        tags.add("follow")
    if request.get("exchanges"):
        tags.add("exchanges")
    if request.get("spare"):
        tags.add("spare")
    if request.get("own_draws"):
        tags.add("own-draws")
    if request.get("shootouts"):
        tags.add("shootouts")
    return tags


def wanted_tags(rules: RuleSet) -> set[str]:
    """The shapes a rule set can produce and the search insists on (within its budget)."""
    want = {"lead", "follow"}
    if rules.bombs_out_of_turn:
        want.add("out-of-turn")
    if rules.spare_trade:
        want.add("decision-trade")
    if rules.exchange.value in ("president-choice", "loser-to-winner"):
        want.add("decision-give")
    if rules.exchange.value != "none":
        want.add("exchanges")
    return want


def _requests_of_deal(
    rules: RuleSet, seed: int, context: DealContext, rng: random.Random, match_id: str,
    limits: Limits,
) -> Iterator[tuple[Deal, MoveRequest]]:
    """Every request of one deal played with random legal moves (the deal is over after)."""
    deal = Deal.new(rules, seed, context)
    view = DealView(deal)
    scores = [0] * rules.players
    while deal.outcome is None:
        legal = deal.legal_moves()
        seat = deal.to_move
        yield deal, move_request(
            deal, seat, match_id=match_id, turn=len(deal.log), scores=scores,
            deadline_ms=limits.deadline_ms, time_bank_ms=limits.time_bank_ms,
            last_latency_ms=None if len(deal.log) < rules.players else 12, legal=legal,
            deals=2, strikes=[0] * rules.players, view=view)
        deal.push(rng.choice(legal))


def samples_for(rules: RuleSet, limits: Limits | None = None) -> list[Sample]:
    """The first request of every shape ``rules`` produced (see the module docstring)."""
    limits = limits or Limits()
    want = wanted_tags(rules)
    seen: set[str] = set()
    out: list[Sample] = []
    rng = random.Random(f"conformance:{rules.name}")
    played = 0
    pair = 0
    while played < MAX_DEALS_SEARCHED and not want <= seen:
        match_id = f"m-conformance{pair:04d}"
        context = DealContext(0, None, None)
        for index in (0, 1):
            seed = rng.getrandbits(62)
            last: Deal | None = None
            for deal, request in _requests_of_deal(rules, seed, context, rng, match_id, limits):
                last = deal
                new = shape_tags(request) - seen
                if new:
                    seen |= new
                    tags = tuple(t for t in TAG_WORDS if t in new)
                    out.append(Sample(rules.name, rules.players, tags, request))
            played += 1
            assert last is not None and last.outcome is not None
            out_ = last.outcome
            context = DealContext(index + 1, out_.winner, find_loser(last),
                                  tuple(out_.finish_order))
        pair += 1
    return out


@functools.lru_cache(maxsize=4)
def all_samples(limits: Limits | None = None) -> tuple[Sample, ...]:
    """:func:`samples_for` every preset, then every rule set of :data:`VARIANTS` (remembered:
    the samples are never modified, and building them plays a few hundred deals)."""
    names = [*preset_names(), *VARIANTS]
    return tuple(s for name in names for s in samples_for(find_ruleset(name), limits))


def long_history(limits: Limits | None = None, deals: int = 8,
                 turns: int = LONG_HISTORY_TURNS) -> MoveRequest:
    """A late request with a long history: the last turn of the last deal of a standard match
    of ``deals`` deals, a deal of at least ``turns`` turns (players who pass often and play
    single cards otherwise make the longest deals; the longest of the deals tried when none
    reaches it), with scores and a strike so far."""
    limits = limits or Limits()
    rules = find_ruleset("standard")
    rng = random.Random("conformance:history")
    best: MoveRequest | None = None
    for _ in range(MAX_DEALS_SEARCHED):
        deal = Deal.new(rules, rng.getrandbits(62), DealContext(deals - 1, None, None))
        view = DealView(deal)
        last: MoveRequest | None = None
        while deal.outcome is None:
            legal = deal.legal_moves()
            last = move_request(
                deal, deal.to_move, match_id="m-conformance-history", turn=len(deal.log),
                scores=[41, -12, -17, -12], deadline_ms=limits.deadline_ms,
                time_bank_ms=limits.time_bank_ms, last_latency_ms=9, legal=legal, deals=deals,
                strikes=[0, 1, 0, 0], view=view)
            singles = [m for m in legal if m.bit_count() == 1]
            if PASS in legal and rng.random() < 0.6:
                deal.push(PASS)
            else:
                deal.push(rng.choice(singles or legal))
        assert last is not None
        if best is None or len(last["history"]) > len(best["history"]):
            best = last
        if len(best["history"]) >= turns:
            break
    assert best is not None
    return best


__all__ = ["TAG_WORDS", "VARIANTS", "Sample", "all_samples", "long_history", "samples_for",
           "shape_tags", "wanted_tags"]
