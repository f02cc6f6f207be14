"""No other seat's hidden cards ever cross ``observation``.

Every card text anywhere in a seat's observation must be in that seat's own hand, on the
table or in the history (played in public), in its own draws, or the face-up spare card.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee import Deal, DealContext, RuleSet, find_ruleset, preset_names
from referee.game.cards import card_text, iter_cards
from referee.game.view import DealView, observation
from referee.wire.protocol import move_request
from tests.tiers import examples

CARDS = frozenset(r + s for r in "3456789TJQKA2" for s in "DCHS")
_STRING = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"')
"""A string in JSON text: its body between the quotes."""


def card_strings(obj: Any) -> set[str]:
    """Every string in a JSON value, keys included, that spells a card (ids like "3D-3S"
    split).  The value is serialised once and its strings read off the text: a recursive
    walk building a set per node made this checker most of the suite's slowest tests."""
    strings = set(_STRING.findall(json.dumps(obj)))
    return {part for text in strings for part in text.split("-") if part in CARDS}


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
        seen = card_strings(obs)
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


@settings(max_examples=examples(60), deadline=None)
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


DEALS_PER_VARIANT = examples(15, floor=5)
"""Chained deals per variant (the second on has exchanges): 15 in `make check`, 5 in `make
test` (each deal checks every seat at every turn; 15 were half a minute)."""


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
        for i in range(DEALS_PER_VARIANT):
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


# --- incremental requests ---------------------------------------------------------------------

_STD = find_ruleset("standard")
_THREE = find_ruleset("three-player")
INCREMENTAL_CASES: dict[str, tuple[RuleSet, int, str | None]] = {
    # name: (rules, seed of the first deal and of the policy, what the deals must exercise)
    "standard": (_STD, 0, None),
    "heads-up": (find_ruleset("heads-up"), 0, None),
    "house-003": (find_ruleset("house-003"), 0, None),  # a ghost hand
    "pusoy-dos": (find_ruleset("pusoy-dos"), 0, None),
    "president": (find_ruleset("president"), 0, "exchanges"),  # seen by two seats only
    "president-choice": (
        find_ruleset("president").with_options(name="pc", exchange="president-choice"),
        0,
        "decisions",
    ),
    "three-player-stock": (find_ruleset("three-player-stock"), 0, "draws"),
    "reshuffled-stock": (
        find_ruleset("three-player-stock").with_options(
            name="rs", stock_empty="reshuffle-discards"
        ),
        0,
        "reshuffled",
    ),
    "spare-trade": (
        _THREE.with_options(name="st", leftover="set-aside", spare_trade=True),
        0,
        "decisions",
    ),
    "loser-to-winner": (_THREE.with_options(name="lw", exchange="loser-to-winner"), 0, "decisions"),
    "bombs-out-of-turn": (find_ruleset("bu-bu-gao-sheng"), 80, "offers"),
    "teams": (find_ruleset("teams"), 10, "shoot-out"),
}


def exercised(deal: Deal) -> set[str]:
    """Which of the rarer parts of an observation the deal has right now."""
    out = set()
    if deal.phase == 1:
        out.add("decisions")
    if deal.phase == 2:
        out.add("offers")
    if deal.exchanges:
        out.add("exchanges")
    drawn = sum(d.bit_count() for _s, _m, d in deal.log)
    if drawn:
        out.add("draws")
    if drawn > 52 - sum(h.bit_count() for h in deal.dealt):
        out.add("reshuffled")  # more cards drawn than the stock held
    if deal.shootouts:
        out.add("shoot-out")
    return out


def plain_history(deal: Deal, viewer: int) -> tuple[list[Any], list[Any], list[Any]]:
    """History, draws and own draws computed from the whole log, the obvious way (what every
    request carried before the view kept them between turns)."""
    from referee.game.view import decision_json, turn_json

    history = [
        decision_json(i, viewer, deal) if i < deal.play_start else turn_json(s, m, deal)
        for i, (s, m, _) in enumerate(deal.log)
    ]
    draws = [
        {"turn": i, "seat": s, "count": d.bit_count()} for i, (s, _m, d) in enumerate(deal.log) if d
    ]
    own = [
        {
            "turn": i,
            "cards": [card_text(c) for c in sorted(iter_cards(d), key=deal.t.order.__getitem__)],
        }
        for i, (s, _m, d) in enumerate(deal.log)
        if s == viewer and d
    ]
    return history, draws, own


def wire(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


@pytest.mark.parametrize("name", sorted(INCREMENTAL_CASES))
def test_incremental_requests_are_byte_identical_to_fresh_ones(name: str) -> None:
    """Over two-deal matches: every seat's request each turn, built with the deal's view
    kept from turn to turn, equals one built from scratch, as data and as bytes on the wire."""
    rules, seed, feature = INCREMENTAL_CASES[name]
    rng = random.Random(seed)
    winner = loser = None
    order: tuple[int, ...] = ()
    seen: set[str] = set()
    for index in range(2):
        deal = Deal.new(rules, seed + index, DealContext(index, winner, loser, order))
        view = DealView(deal)
        while not deal.over:
            seen |= exercised(deal)
            legal = deal.legal_moves()
            for seat in range(rules.players):
                facts: dict[str, Any] = {
                    "match_id": "m-1",
                    "turn": len(deal.log),
                    "scores": [0] * rules.players,
                    "deadline_ms": 1000,
                    "time_bank_ms": 500,
                    "last_latency_ms": None,
                    "deals": 3,
                    "legal": legal if seat == deal.to_move else [],
                }
                kept = move_request(deal, seat, view=view, **facts)
                fresh = move_request(deal, seat, **facts)
                assert kept == fresh
                assert kept.encoded() == fresh.encoded() == wire(fresh)
                history, draws, own = plain_history(deal, seat)
                assert (kept["history"], kept["draws"], kept["own_draws"]) == (history, draws, own)
                assert kept["trick"] == history[deal.trick_start :]
            deal.push(rng.choice(legal))
        # the end of the deal as every seat sees it, too
        seen |= exercised(deal)
        for seat in range(rules.players):
            assert observation(deal, seat, view=view) == observation(deal, seat)
        assert deal.outcome is not None
        winner = deal.outcome.winner
        loser = max(range(rules.players), key=lambda s: deal.hands[s].bit_count())
        order = tuple(deal.outcome.finish_order)
    assert feature is None or feature in seen, f"the deals never had {feature}"


def test_a_replaced_field_is_encoded_afresh() -> None:
    """A kept text is used only while its very object is the field's value."""
    deal = Deal.new(_STD, 3)
    view = DealView(deal)
    for _ in range(6):
        deal.push(deal.legal_moves()[0])
    req = move_request(
        deal,
        deal.to_move,
        match_id="m",
        turn=6,
        scores=[0] * 4,
        deadline_ms=1,
        time_bank_ms=0,
        last_latency_ms=None,
        view=view,
    )
    assert len(req["history"]) == 6
    req["history"] = []
    req["rules"] = {"name": "x"}
    assert req.encoded() == wire(req)
    assert json.loads(req.encoded())["history"] == []


def test_a_request_encoded_later_still_says_what_it_said_when_built() -> None:
    """Texts are made when a request is first encoded; the deal may have moved on by then."""
    rules = find_ruleset("three-player-stock")
    deal = Deal.new(rules, 5)
    view = DealView(deal)
    early = []
    for turn in range(40):
        if deal.over:
            break
        early.append(
            move_request(
                deal,
                (deal.to_move + 1) % 3,
                match_id="m",
                turn=turn,
                scores=[0] * 3,
                deadline_ms=1,
                time_bank_ms=0,
                last_latency_ms=None,
                legal=[],
                view=view,
            )
        )
        deal.push(deal.legal_moves()[-1])
    assert any(r["draws"] for r in early)
    for req in reversed(early):  # the newest first: the older ones reuse its texts
        assert req.encoded() == wire(req)
