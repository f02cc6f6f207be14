"""The move generator against the brute-force reference (tests/referee/game/reference.py).

For every preset, every single-option variant (``OPTION_VARIANTS``) and hypothesis-drawn
combinations of options: the set of plays ``leading_plays`` / ``beating_plays`` produce equals
the set of subsets of the hand the reference accepts, the lists hold no duplicates, and every
generated play is a subset of the hand that ``classify`` accepts and ``beats`` lets onto the
table.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee import RuleSet, beats, classify, mask_text, parse_mask, tables_for
from referee.game.cards import cards_of
from referee.game.compiled import KIND_PAIR_RUN, KIND_RUN, KIND_SF_PLUS_TWO
from referee.game.movegen import beating_plays, leading_plays
from referee.game.rules import FiveKind
from tests.tiers import examples

from .reference import (
    Classified,
    Kind,
    as_mask,
    reference_beats_classified,
    reference_classify,
    reference_legal,
    reference_plays,
)
from .strategies import ALL_RULESETS, biased_deck, pick_table, rulesets, stable_rng


def _texts(masks: set[int]) -> list[str]:
    return sorted(mask_text(m) for m in masks)


def check_position(
    rules: RuleSet,
    hand: list[int],
    table: list[int] | None,
    hand_plays: dict[frozenset[int], Classified] | None = None,
    twos_low: bool = False,
) -> None:
    """Engine == reference for one hand and one table (None: leading).

    ``hand_plays`` may pass ``reference_plays(hand, rules, twos_low)`` in, computed once per
    hand.  ``twos_low``: the tables of a deal where a bomb was dealt (twos_low_after_bomb).
    """
    t = tables_for(rules, twos_low=True) if twos_low else tables_for(rules)
    h = as_mask(hand)
    if hand_plays is None:
        expected = {as_mask(p) for p in reference_legal(hand, table, rules, twos_low)}
    else:
        tc = None if table is None else reference_classify(table, rules, twos_low)
        expected = {
            as_mask(p)
            for p, c in hand_plays.items()
            if reference_beats_classified(rules, c, tc, twos_low)
        }
    if table is None:
        tp = None
        got = leading_plays(h, t)
    else:
        tp = classify(as_mask(table), t)
        assert tp is not None, f"engine does not classify the table {mask_text(as_mask(table))}"
        got = beating_plays(h, t, tp.kind, tp.key)
    low = " (twos low)" if twos_low else ""
    where = f"{rules.name}{low}: hand {mask_text(h)}, table {table and mask_text(as_mask(table))}"
    assert len(got) == len(set(got)), f"duplicates in {where}"
    extra, missing = set(got) - expected, expected - set(got)
    assert not extra and not missing, (
        f"{where}\n  generated but not legal: {_texts(extra)[:8]}\n"
        f"  legal but not generated: {_texts(missing)[:8]}"
    )
    for m in got:
        assert m and m & ~h == 0, f"{mask_text(m)} is not a subset of the hand in {where}"
        p = classify(m, t)
        assert p is not None, f"{mask_text(m)} does not classify in {where}"
        assert beats(p, tp, t), f"{mask_text(m)} does not beat the table in {where}"


def engine_kind(kind: Kind) -> int:
    """The engine's kind code of a reference kind."""
    if isinstance(kind, int):
        return kind
    name, n = kind
    return {"sf+2": KIND_SF_PLUS_TWO, "run": KIND_RUN + n, "pairs": KIND_PAIR_RUN + n}[name]


def check_classify_agrees(rules: RuleSet, cards: list[int], twos_low: bool = False) -> None:
    """classify and the reference agree on whether cards are a play, its kind and its type."""
    t = tables_for(rules, twos_low=True) if twos_low else tables_for(rules)
    p = classify(as_mask(cards), t)
    r = reference_classify(cards, rules, twos_low)
    text = mask_text(as_mask(cards))
    assert (p is None) == (r is None), f"{rules.name}: {text}: engine {p}, reference {r}"
    if p is not None and r is not None:
        assert p.kind == engine_kind(r[0]), f"{rules.name}: {text}"
        if r[2] is not None:
            assert rules.five_card_order[p.level] is r[2], f"{rules.name}: {text}"


def check_hand(
    rng: random.Random, rules: RuleSet, hand: list[int], tables: int, twos_low: bool = False
) -> None:
    """Leading and ``tables`` random table plays (drawn from other biased cards)."""
    hand_plays = reference_plays(hand, rules, twos_low)
    check_position(rules, hand, None, hand_plays, twos_low)
    held = set(hand)
    for _ in range(tables):
        other = [c for c in biased_deck(rng) if c not in held][:12]
        table = pick_table(rng, other, rules, twos_low)
        if table is not None:
            check_position(rules, hand, table, hand_plays, twos_low)


HAND_SIZES = [13, 13, 7, 16]

FIXED_HANDS = [
    # straight flushes, quads, a flush, full houses
    "3D 4D 5D 6D 7D 8D 3C 3H 3S 9S TS JS QS",
    # a royal flush, a 9-K straight flush, four twos, pairs for two-pair/sisters
    "9H TH JH QH KH AH 2H 2D 2C 2S 5C 5D 6S",
    # A2345 and 23456 in spades, J-Q-K-A-2 and wrap-round windows, consecutive pairs
    "AS 2S 3S 4S 5S 6S 4D 4C 4H 7C 7D 8C 8D JC QC KC",
    # seventeen cards with every rank: dragons, and Q-K-A-2-3 style sequences
    "3D 4C 5H 6S 7D 8C 9H TS JD QC KH AS 2D 2S 3C 4D 5S",
    # five pairs in a row (runs of pairs for chopping), long sequences
    "5C 5D 6C 6D 7C 7H 8S 8H 9D 9C TH JH QH",
]
FIXED_TABLES = [
    None,
    "6C",
    "2H",
    "9C 9D",
    "KD KS",
    "TC TD TS",
    "6C 6D 6H 6S",
    "9C 9D TC TD",
    "8S 9D TC JC QH",
    "9C 8C 6C 5C 3C",
    "6H 6C 6S 9S 9C",
    "7S 7H 7C 7D 9C",
    "5H 6H 7H 8H 9H",
    "3H 4S 5C 6H 7C 8S 9D TD JS QD KS AC 2C",
]


@pytest.mark.parametrize("name", sorted(ALL_RULESETS))
def test_generator_matches_reference(name: str) -> None:
    rules = ALL_RULESETS[name]
    for twos_low in (False, True) if rules.twos_low_after_bomb else (False,):
        rng = stable_rng("movegen", name, twos_low)
        for size in HAND_SIZES:
            check_hand(rng, rules, biased_deck(rng)[:size], 4, twos_low)
        for text in FIXED_HANDS:
            hand = cards_of(parse_mask(text))
            plays = reference_plays(hand, rules, twos_low)
            for table_text in FIXED_TABLES:
                table = None if table_text is None else cards_of(parse_mask(table_text))
                if table is not None and (
                    set(table) & set(hand) or reference_classify(table, rules, twos_low) is None
                ):
                    continue
                check_position(rules, hand, table, plays, twos_low)


@pytest.mark.parametrize("name", sorted(ALL_RULESETS))
def test_classify_matches_reference_on_random_subsets(name: str) -> None:
    rules = ALL_RULESETS[name]
    rng = stable_rng("classify", name)
    sizes = [1, 2, 2, 3, 3, 4, 4, 5, 5, 5, 6, 7, 8, 13]
    for i in range(300):
        deck = biased_deck(rng)
        check_classify_agrees(rules, deck[: rng.choice(sizes)], rules.twos_low_after_bomb and i % 2)


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rulesets(), data=st.data())
def test_generator_matches_reference_random_rules(rules: RuleSet, data: st.DataObject) -> None:
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    size = data.draw(st.sampled_from([5, 8, 13, 13, 13, 17]), label="hand size")
    twos_low = rules.twos_low_after_bomb and data.draw(st.booleans(), label="twos low")
    rng = stable_rng("hypothesis", seed)
    deck = biased_deck(rng)
    hand = deck[:size]
    check_hand(rng, rules, hand, 3, twos_low)
    for k in (2, 3, 4, 5, 6, 7, 8):
        check_classify_agrees(rules, hand[:k], twos_low)
    check_classify_agrees(rules, deck[size : size + 13], twos_low)


def test_reference_sees_every_size() -> None:
    """Guard against a vacuous comparison: the fixtures really produce 4-card plays, every
    five-card type and dragons."""
    seen: set[object] = set()
    for name in ("all-extra", "four-quads-and-two-pairs", "dragon-3p", "sisters"):
        rules = ALL_RULESETS[name]
        for text in FIXED_HANDS:
            for _p, (kind, _key, five) in reference_plays(
                cards_of(parse_mask(text)), rules
            ).items():
                seen.add(kind)
                seen.add(five)
    assert {1, 2, 3, 4, 5, 13} <= seen
    assert set(FiveKind) <= seen
    rare: set[object] = set()
    for name in ("sf-plus-two", "chop", "runs-3-4", "runs-6-7-12"):
        for text in FIXED_HANDS:
            rare |= {
                c[0]
                for c in reference_plays(cards_of(parse_mask(text)), ALL_RULESETS[name]).values()
            }
    assert {
        ("sf+2", 7),
        ("pairs", 3),
        ("pairs", 4),
        ("run", 3),
        ("run", 4),
        ("run", 6),
        ("run", 7),
        ("run", 12),
    } <= rare
