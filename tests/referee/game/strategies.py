"""Shared generators for the referee tests: rule-set variants, hypothesis strategies, hands.

``OPTION_VARIANTS`` derives one rule set per value of every option that affects what a play is
or how plays compare, so that deterministic tests touch each value at least once whatever
hypothesis happens to draw.
"""

from __future__ import annotations

import random
import zlib

from hypothesis import strategies as st

from referee import PRESETS, RuleSet, find_ruleset
from referee.game.rules import STANDARD_FIVE_ORDER, FiveCompare, FiveKind, FlushCompare, FourCard
from referee.game.straights import STRAIGHT_ORDERS

from .reference import reference_plays

S, F, FH, Q, SF = STANDARD_FIVE_ORDER
ROYAL, TWO_PAIR, SISTERS, TRIPLE_JUNK = (
    FiveKind.ROYAL_FLUSH,
    FiveKind.TWO_PAIR,
    FiveKind.SISTERS,
    FiveKind.TRIPLE_JUNK,
)


def _variants() -> dict[str, RuleSet]:
    std = find_ruleset("standard")
    v: dict[str, RuleSet] = {}

    def add(name: str, **kw: object) -> None:
        v[name] = std.with_options(name=name, **kw)

    for so in ("DCHS", "CDHS", "CSHD", "CDSH", "SHCD"):
        add(f"suits-{so}", suit_order=so)
    add("no-suit-ties", suits_break_ties=False)
    add("no-suit-ties-top-card", suits_break_ties=False, flush_compare=FlushCompare.TOP_CARD)
    add("no-triples", triples=False)
    add("no-flush", five_card_order=(S, FH, Q, SF))
    add("straight-over-flush", five_card_order=(F, S, FH, Q, SF))
    add("royal-only-beats-quads", five_card_order=(S, F, FH, SF, Q, ROYAL))
    add("two-pair", five_card_order=(TWO_PAIR, S, F, FH, Q, SF))
    add("sisters", five_card_order=(SISTERS, S, F, FH, Q, SF))
    add("three-of-a-kind", five_card_order=(TRIPLE_JUNK, S, F, FH, Q, SF))
    add("all-extra", five_card_order=(TRIPLE_JUNK, TWO_PAIR, S, F, FH, Q, SF, ROYAL))
    add("no-straight-flush-type", five_card_order=(S, F, FH, Q))
    add("no-straight-flush-straight-high", five_card_order=(F, S, FH, Q))
    add("only-straights", five_card_order=(S,))
    add("no-five", five_card_order=())
    for fc in FiveCompare:
        add(f"five-{fc.value}", five_card_compare=fc)
    add("same-type-no-flush", five_card_order=(S, FH, Q, SF), five_card_compare="same-type-only")
    for name in STRAIGHT_ORDERS:
        add(f"straights-{name}", straights=name)
    for fl in FlushCompare:
        add(f"flush-{fl.value}", flush_compare=fl)
    for fourc in FourCard:
        add(f"four-{fourc.value}", four_card=fourc)
    add(
        "bombs-honour-123",
        bomb_kinds=frozenset({Q, SF}),
        bomb_targets=frozenset({1, 2, 3}),
    )
    add("bombs-honour-12", bomb_kinds=frozenset({Q, SF}), bomb_targets=frozenset({1, 2}))
    add("bombs-quads-12", bomb_kinds=frozenset({Q}), bomb_targets=frozenset({1, 2}))
    add(
        "bombs-on-fours",
        four_card=FourCard.QUADS_AND_TWO_PAIRS,
        bomb_kinds=frozenset({SF}),
        bomb_targets=frozenset({4}),
    )
    add("dragon-3p", dragon_play=True, players=3)
    # the rarer conventions (000 Todd Latta; 000 wiki var. 1, 8 and 'four-of-a-kind')
    add(
        "sf-plus-two",
        straight_flush_plus_two=True,
        five_card_order=(S, F, FH, Q),
        bomb_kinds=frozenset({Q}),
        bomb_targets=frozenset({1, 2, 3, 5}),
    )
    add("chop", chop=True)
    add("chop-quads", chop=True, four_card=FourCard.QUADS, suit_order="CSHD")
    add("chop-no-ties", chop=True, suits_break_ties=False)
    add("runs-3-4", straight_lengths=frozenset({3, 4}))
    add("runs-6-7-12", straight_lengths=frozenset({6, 7, 12}), four_card=FourCard.QUADS)
    add("bombs-on-fives", bomb_kinds=frozenset({Q, SF}), bomb_targets=frozenset({1, 5}))
    add(
        "bombs-on-fives-same-type",
        five_card_order=(S, FH, Q, SF),
        five_card_compare=FiveCompare.SAME_TYPE_ONLY,
        bomb_kinds=frozenset({Q}),
        bomb_targets=frozenset({2, 5}),
    )
    add(
        "twos-low-after-bomb",
        twos_low_after_bomb=True,
        five_card_order=(TWO_PAIR, S, F, FH, Q, SF),
        four_card=FourCard.QUADS_AND_TWO_PAIRS,
        flush_compare=FlushCompare.TOP_CARD,
    )
    add(
        "twos-low-sisters-poker",
        twos_low_after_bomb=True,
        five_card_order=(SISTERS, TRIPLE_JUNK, S, F, FH, Q, SF),
        flush_compare=FlushCompare.POKER,
    )
    add("twos-low-highest-card", twos_low_after_bomb=True, five_card_compare="highest-card")
    add("dragon-3p-no-ties", dragon_play=True, players=3, suits_break_ties=False)
    # straight flushes in their own sequence order (002:33, 002:37-38)
    add("sf-order-002", straights="hong-kong", straight_flushes="ace-low")
    add(
        "sf-order-two-high-bombs",
        straights="two-high-no-wrap",
        straight_flushes="no-two",
        bomb_kinds=frozenset({SF}),
        bomb_targets=frozenset({1, 2, 5}),
        flush_compare=FlushCompare.TOP_CARD,
    )
    add(
        "sf-order-royal-no-ties",
        straights="a2345-high",
        straight_flushes="wraparound",
        five_card_order=(S, F, FH, SF, Q, ROYAL),
        suits_break_ties=False,
    )
    add(
        "sf-order-plus-two",
        straights="ace-low",
        straight_flushes="two-high",
        five_card_order=(S, F, FH, Q, SF),
        twos_low_after_bomb=True,
    )
    return v


OPTION_VARIANTS = _variants()
ALL_RULESETS: dict[str, RuleSet] = {**PRESETS, **OPTION_VARIANTS}


@st.composite
def rulesets(draw: st.DrawFn) -> RuleSet:
    """Random combinations of every option that affects combinations and comparisons.

    Combinations :class:`RuleSet` refuses are rejected (only playable rule sets are kept).
    """
    kinds = draw(st.permutations(list(FiveKind)))
    keep = draw(st.lists(st.booleans(), min_size=len(kinds), max_size=len(kinds)))
    five = tuple(k for k, b in zip(kinds, keep, strict=True) if b)
    bomb_kinds: frozenset[FiveKind] = frozenset()
    bomb_targets: frozenset[int] = frozenset()
    if five and draw(st.integers(0, 3)) == 0:
        bomb_kinds = draw(st.frozensets(st.sampled_from(five), min_size=1))
        bomb_targets = draw(st.frozensets(st.sampled_from([1, 2, 3, 4, 5]), min_size=1))
    options = {
        "suit_order": "".join(draw(st.permutations("DCHS"))),
        "suits_break_ties": draw(st.booleans()),
        "triples": draw(st.booleans()),
        "five_card_order": five,
        "five_card_compare": draw(st.sampled_from(list(FiveCompare))),
        "straights": draw(st.sampled_from(sorted(STRAIGHT_ORDERS))),
        "flush_compare": draw(st.sampled_from(list(FlushCompare))),
        "four_card": draw(st.sampled_from(list(FourCard))),
        "bomb_kinds": bomb_kinds,
        "bomb_targets": bomb_targets,
        "dragon_play": draw(st.booleans()),
        "players": draw(st.sampled_from([3, 4])),
        "chop": draw(st.integers(0, 4)) == 0,
        "straight_flush_plus_two": draw(st.integers(0, 4)) == 0,
        "straight_lengths": draw(
            st.frozensets(st.sampled_from([3, 4, 6, 7, 8, 12]), max_size=2)
            if draw(st.integers(0, 4)) == 0
            else st.just(frozenset())
        ),
        "twos_low_after_bomb": draw(st.integers(0, 3)) == 0,
        "straight_flushes": (
            draw(st.sampled_from(sorted(STRAIGHT_ORDERS))) if draw(st.integers(0, 3)) == 0 else None
        ),
    }
    try:
        return RuleSet(name="hypothesis", **options)  # type: ignore[arg-type]
    except ValueError:
        from hypothesis import reject

        reject()


def stable_rng(*parts: object) -> random.Random:
    """A Random seeded from text, stable across runs and Python versions."""
    return random.Random(zlib.crc32(repr(parts).encode()))


def biased_deck(rng: random.Random) -> list[int]:
    """A shuffled deck, often with a few ranks or two suits moved to the front so that the
    hands dealt from it are rich in pairs, quads, sequences and flushes."""
    deck = list(range(52))
    rng.shuffle(deck)
    mode = rng.random()
    if mode < 0.35:
        start = rng.randrange(13)
        ranks = {(start + i) % 13 for i in range(rng.choice([4, 5, 6, 7]))}
        deck.sort(key=lambda c: c // 4 not in ranks)
    elif mode < 0.6:
        suits = set(rng.sample(range(4), 2))
        deck.sort(key=lambda c: c % 4 not in suits)
    return deck


def pick_table(
    rng: random.Random, other: list[int], rules: RuleSet, twos_low: bool = False
) -> list[int] | None:
    """A play the ``other`` cards can make, choosing the size first so that every size the
    rule set has is exercised; None when the cards make no play."""
    plays = reference_plays(other, rules, twos_low)
    if not plays:
        return None
    by_kind: dict[int, list[frozenset[int]]] = {}
    for p, c in plays.items():
        by_kind.setdefault(c[0], []).append(p)
    kind = rng.choice(sorted(by_kind, key=repr))
    choices = sorted(by_kind[kind], key=sorted)
    return sorted(rng.choice(choices))
