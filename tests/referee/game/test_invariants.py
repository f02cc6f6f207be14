"""Invariants the fast path relies on, property-tested.

* **Generator key == classifier key.**  The move generator hands out five-card plays with their
  comparison keys already computed (``five_card_keyed``, ``keyed_bombs``, ``sf_plus_two``),
  and the deal takes the table's key from there instead of classifying the play again
  (``Deal._classified``).  Every such key must be the one :func:`referee.classify` (the
  independent check) gives, and every generated play must be a play that beats the table.
* **The per-seat index is a fresh computation.**  A deal keeps, per seat, the keyed five-card
  plays of the hand that seat held when first needed, and filters it by "still in the hand"
  (a play of a smaller hand is a play of the bigger one).  After any sequence of moves the
  filtered index must equal what ``five_card_keyed`` computes for the hand from scratch.

These read the deal's private index (``Deal._fives``): it is the thing under test.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from referee import PASS, Deal, RuleSet, Tables, beats, classify, tables_for
from referee.game.compiled import TYPE_SHIFT
from referee.game.movegen import (
    beating_plays,
    five_card_keyed,
    keyed_bombs,
    leading_plays,
    sf_plus_two,
)
from referee.game.rules import FiveCompare
from tests.tiers import examples

from .strategies import ALL_RULESETS, biased_deck

NAMES = sorted(ALL_RULESETS)


def tables_of(rules: RuleSet, twos_low: bool) -> Tables:
    return tables_for(rules, twos_low=twos_low and rules.twos_low_after_bomb)


def check_five_key(m: int, key: int, t: Tables) -> None:
    """``key`` (the generator's, ``level << TYPE_SHIFT | inner``) is what classify says."""
    p = classify(m, t)
    assert p is not None and p.kind == 5, f"{m:x} is no five-card play"
    assert p.level == key >> TYPE_SHIFT, (f"{m:x}", p, key)
    if t.five_compare is FiveCompare.HIGHEST_CARD:
        assert p.key == t.top_power(m), (f"{m:x}", p, key)  # compared by the top card only
    else:
        assert p.key == key, (f"{m:x}", p, key)


@settings(max_examples=examples(250), deadline=None)
@given(
    name=st.sampled_from(NAMES),
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(5, 17),
    twos_low=st.booleans(),
)
def test_generated_keys_are_the_classifiers(
    name: str, seed: int, size: int, twos_low: bool
) -> None:
    rules = ALL_RULESETS[name]
    t = tables_of(rules, twos_low)
    rng = random.Random(seed)
    deck = biased_deck(rng)
    h = sum(1 << c for c in deck[:size])
    keyed = five_card_keyed(h, t)
    assert keyed == sorted(keyed) and len({m for _, m in keyed}) == len(keyed)
    for k, m in keyed:
        assert m & h == m
        check_five_key(m, k, t)
    for k, m in keyed_bombs(keyed, h, t):
        check_five_key(m, k, t)
        assert k >> TYPE_SHIFT in t.bomb_levels
    for m, k in (sf_plus_two(h, t) if t.sf_plus_two else {}).items():
        p = classify(m, t)
        assert p is not None and p.key == k, (f"{m:x}", p, k)
    leads = leading_plays(h, t)
    assert len(set(leads)) == len(leads)
    for m in leads:
        assert classify(m, t) is not None, f"{m:x} leads but is no play"
    # Answers to a play the other cards can make: each one classifies and beats it.
    other = sum(1 << c for c in deck[size : size + 13])
    tables = leading_plays(other, t)
    if not tables:
        return
    table = classify(rng.choice(tables), t)
    assert table is not None
    answers = beating_plays(h, t, table.kind, table.key)
    assert len(set(answers)) == len(answers)
    for m in answers:
        p = classify(m, t)
        assert p is not None and beats(p, table, t), (f"{m:x}", p, table)


def check_index(d: Deal) -> None:
    """Every seat's remembered five-card plays, filtered by its hand, are computed afresh."""
    for seat, kept in enumerate(d._fives):
        if kept is None:
            continue
        h = d.hands[seat]
        if h.bit_count() < 5:
            continue  # the deal does not consult the index then (Deal._fives_of)
        assert [x for x in kept if x[1] & h == x[1]] == five_card_keyed(h, d.t), seat


@settings(max_examples=examples(80), deadline=None)
@given(
    name=st.sampled_from(NAMES),
    seed=st.integers(0, 2**64 - 1),
    policy=st.integers(0, 2**32 - 1),
)
def test_the_per_seat_index_equals_a_fresh_computation(name: str, seed: int, policy: int) -> None:
    d = Deal.new(ALL_RULESETS[name], seed)
    rng = random.Random(policy)
    turns = 0
    while not d.over and turns < 400:
        legal = d.legal_moves()
        # Bias towards big plays now and then, so that hands shrink by five-card plays too.
        move = max(legal, key=int.bit_count) if rng.random() < 0.3 else rng.choice(legal)
        d.push(move)
        turns += 1
        if move != PASS and move.bit_count() > 1 and d.table_mask == move and d.table_kind:
            # The key the deal took for the table (from its index, for five cards) is
            # the classifier's.
            assert d.table == classify(move, d.t), (f"{move:x}", d.table)
        check_index(d)
