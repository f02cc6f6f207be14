"""No other seat's hidden cards ever cross ``observation``.

Every card text anywhere in a seat's observation must be in that seat's own hand, on the
table or in the history (played in public), in its own draws, or the face-up spare card.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from referee import Deal, DealContext, find_ruleset, preset_names
from referee.game.cards import card_text, iter_cards
from referee.game.view import observation
from referee.wire.protocol import move_request

CARD = re.compile(r"^(?:[3-9TJQKA2])[DCHS]$")


def card_strings(obj: Any) -> set[str]:
    """Every string in a JSON value that spells a card (ids like "3D-3S" split)."""
    out: set[str] = set()
    if isinstance(obj, str):
        for part in obj.split("-"):
            if CARD.match(part):
                out.add(part)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out |= card_strings(k) | card_strings(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= card_strings(v)
    return out


def texts(mask: int) -> set[str]:
    return {card_text(c) for c in iter_cards(mask)}


def allowed_for(deal: Deal, seat: int) -> set[str]:
    allowed = texts(deal.hands[seat])
    for s, move, drew in deal.log:
        allowed |= texts(move)
        if s == seat:
            allowed |= texts(drew)
    if deal.spare and (deal.rules.spare_face_up or deal.spare_to == seat):
        allowed |= texts(deal.spare)
    for giver, receiver, cards in deal.exchanges:
        if seat in (giver, receiver):
            allowed |= texts(cards)
    return allowed


def check_all_seats(deal: Deal) -> None:
    for seat in range(deal.rules.players):
        obs = observation(deal, seat)
        seen = card_strings(json.loads(json.dumps(obs)))
        leaked = seen - allowed_for(deal, seat)
        assert not leaked, f"seat {seat} saw {sorted(leaked)}"
        if deal.to_move == seat and not deal.over:
            req = move_request(
                deal,
                seat,
                match_id="m",
                turn=len(deal.log),
                scores=[0] * 4,
                deadline_ms=1000,
                time_bank_ms=0,
                last_latency_ms=None,
            )
            leaked = card_strings(req) - allowed_for(deal, seat)
            assert not leaked, f"request to seat {seat} leaked {sorted(leaked)}"


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(preset_names()),
    seed=st.integers(0, 2**32),
    chooser=st.randoms(use_true_random=False),
)
def test_no_hidden_card_crosses_observation(name: str, seed: int, chooser: random.Random) -> None:
    deal = Deal.new(find_ruleset(name), seed)
    check_all_seats(deal)
    while not deal.over:
        moves = deal.legal_moves()
        deal.push(moves[chooser.randrange(len(moves))])
        check_all_seats(deal)


def test_hidden_sets_stay_hidden_in_short_handed_games() -> None:
    # Ghost hand, set-aside cards, a stock with draws, a face-down spare.
    variants = [
        find_ruleset("standard", players=3, leftover="ghost-hand"),
        find_ruleset("standard", players=2, cards_per_player=13, leftover="set-aside"),
        find_ruleset("three-player-stock"),
        find_ruleset("standard", players=3, spare_face_up=False),
        find_ruleset("standard", players=3, leftover="set-aside", spare_trade=True),
        find_ruleset("standard", players=3, exchange="loser-to-winner"),
        find_ruleset("standard", play_to_end=True, exchange="president-choice"),
        find_ruleset("standard", settlement="teams"),
    ]
    rng = random.Random(7)
    for rules in variants:
        ctx = DealContext(0)
        for i in range(15):
            deal = Deal.new(rules, rng.getrandbits(32), ctx)
            while not deal.over:
                check_all_seats(deal)
                moves = deal.legal_moves()
                deal.push(moves[rng.randrange(len(moves))])
            out = deal.outcome
            assert out is not None
            loser = max(range(rules.players), key=lambda s: out.cards_left[s])
            ctx = DealContext(i + 1, out.winner, loser, out.finish_order)


def test_checker_catches_a_leak() -> None:
    """The checker itself must fail when a hidden card is shown."""
    deal = Deal.new(find_ruleset("standard"), 3)
    other = (deal.to_move + 1) % 4
    obs = observation(deal, deal.to_move)
    obs["hand"] = obs["hand"] + [card_text(next(iter_cards(deal.hands[other])))]
    leaked = card_strings(obs) - allowed_for(deal, deal.to_move)
    assert leaked
