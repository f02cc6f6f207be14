"""No card that is still hidden ever crosses the spectator's view (:mod:`referee.game.spectator`).

Every card text anywhere in a spectator's event must have been played in public (a play,
not a decision such as an exchange) or be the face-up spare card.  The deals cover every
preset and the variants with hidden sets: ghost hands, set-aside cards, a stock with draws,
a face-down spare, exchanges and team shoot-outs.
"""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from referee import Deal, DealContext, find_ruleset, preset_names
from referee.game.cards import card_text, iter_cards
from referee.game.spectator import deal_started, turn_played
from tests.referee.game.test_view import card_strings, texts
from tests.tiers import examples

VARIANTS = [
    find_ruleset("standard", players=3, leftover="ghost-hand"),
    find_ruleset("standard", players=2, cards_per_player=13, leftover="set-aside"),
    find_ruleset("three-player-stock"),
    find_ruleset("standard", players=3, spare_face_up=False),
    find_ruleset("standard", players=3, leftover="set-aside", spare_trade=True),
    find_ruleset("standard", players=3, exchange="loser-to-winner"),
    find_ruleset("standard", play_to_end=True, exchange="president-choice"),
    find_ruleset("standard", settlement="teams"),
]


def public_cards(deal: Deal) -> set[str]:
    """The cards a spectator has seen by now: public plays and the face-up spare."""
    seen: set[str] = set()
    for i, (_seat, move, _drew) in enumerate(deal.log):
        if i >= deal.play_start and deal.phase != 1:
            seen |= texts(move)
    if deal.spare and deal.rules.spare_face_up:
        seen |= texts(deal.spare)
    return seen


def watch(deal: Deal, chooser: random.Random) -> int:
    """Play ``deal`` out at random, checking each spectator event; the number of events."""
    events = 1
    event = json.loads(json.dumps(deal_started(deal)))
    assert not card_strings(event) - public_cards(deal)
    while not deal.over:
        moves = deal.legal_moves()
        deal.push(moves[chooser.randrange(len(moves))])
        event = json.loads(json.dumps(turn_played(deal, len(deal.log) - 1, 1.5, None, 900)))
        leaked = card_strings(event) - public_cards(deal)
        assert not leaked, f"turn {len(deal.log) - 1} showed {sorted(leaked)}"
        assert event["card_counts"] == [h.bit_count() for h in deal.hands]
        events += 1
    return events


@settings(max_examples=examples(60), deadline=None)
@given(name=st.sampled_from(preset_names()), seed=st.integers(0, 2**32),
       chooser=st.randoms(use_true_random=False))
def test_no_hidden_card_crosses_the_spectator_view(name: str, seed: int,
                                                   chooser: random.Random) -> None:
    watch(Deal.new(find_ruleset(name), seed), chooser)


def test_hidden_sets_stay_hidden_from_spectators() -> None:
    rng = random.Random(11)
    decisions = 0
    for rules in VARIANTS:
        ctx = DealContext(0)
        for i in range(12):
            deal = Deal.new(rules, rng.getrandbits(32), ctx)
            watch(deal, rng)
            decisions += deal.play_start
            out = deal.outcome
            assert out is not None
            loser = max(range(rules.players), key=lambda s: out.cards_left[s])
            ctx = DealContext(i + 1, out.winner, loser, out.finish_order)
    assert decisions > 0  # the exchanges were exercised


def test_a_decision_shows_how_many_cards_not_which() -> None:
    rules = find_ruleset("standard", players=3, exchange="loser-to-winner")
    deal = Deal.new(rules, 5, DealContext(1, 0, 2))
    assert deal.phase == 1
    giver = deal.to_move
    deal.push(deal.legal_moves()[0])
    event = turn_played(deal, 0, 3.0, None, 1000)
    assert event["decision"] is True and event["seat"] == giver
    assert event["cards"] == [] and event["count"] >= 1


def test_the_checker_catches_a_leak() -> None:
    deal = Deal.new(find_ruleset("standard"), 3)
    event = deal_started(deal)
    event["table"] = [card_text(next(iter_cards(deal.hands[1])))]
    assert card_strings(event) - public_cards(deal)
