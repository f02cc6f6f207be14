"""Classify a set of cards as a play under a rule set, and compare plays.

:func:`classify` is the independent check of what the move generator produces: the arena uses
it to validate a bot's answer given as cards, and the tests use it to check every generated play.
"""

from __future__ import annotations

from dataclasses import dataclass

from .bits import (
    lowest_rank,
    lowest_suit,
    rank_counts,
    ranks_exactly_paired,
    ranks_held,
    ranks_paired,
    ranks_quadrupled,
    ranks_tripled,
    top_rank,
)
from .cards import Mask, mask_text
from .compiled import KIND_PAIR_RUN, KIND_RUN, KIND_SF_PLUS_TWO, Tables, five_key, five_level
from .movegen import dragon_key, sf_plus_two_key
from .rules import FiveCompare, FourCard

KIND_NAMES = {
    1: "single",
    2: "pair",
    3: "triple",
    4: "four",
    5: "five",
    13: "dragon",
    KIND_SF_PLUS_TWO: "straight-flush-plus-two",
}


def kind_name(kind: int) -> str:
    if KIND_PAIR_RUN < kind < KIND_RUN:
        return f"run-of-{kind - KIND_PAIR_RUN}-pairs"
    if kind > KIND_RUN:
        return f"sequence-of-{kind - KIND_RUN}"
    return KIND_NAMES[kind]


@dataclass(frozen=True, slots=True)
class Play:
    """A classified play: its cards, size (``kind``), comparison key, and five-card type level
    (``level``, -1 for other sizes)."""

    mask: int
    kind: int
    key: int
    level: int = -1

    def describe(self, t: Tables) -> str:
        if self.kind == 5:
            name = t.rules.five_card_order[self.level].value
        elif self.kind == 4:
            name = "four-of-a-kind" if self.key >= 64 else "two-pairs"
        else:
            name = kind_name(self.kind)
        return f"{name} {mask_text(self.mask)}"


def classify(mask: Mask, t: Tables) -> Play | None:
    """The play that ``mask`` makes under the rule set of ``t``, or None if it is no play."""
    found = kind_key_level(mask, t)
    return None if found is None else Play(mask, *found)


def kind_key_level(mask: Mask, t: Tables) -> tuple[int, int, int] | None:
    """``(kind, key, level)`` of the play ``mask`` makes, or None: :func:`classify` without
    building a :class:`Play` (the deal calls this once per play made)."""
    n = mask.bit_count()
    if n == 1:
        return 1, t.power[mask.bit_length() - 1], -1
    if n == 2:
        key = t.pair_key.get(mask)
        return None if key is None else (2, key, -1)
    if n == 3 and mask in t.triple_key:
        return (3, t.triple_key[mask], -1) if t.triples_on else None
    cnt = rank_counts(mask)
    ge1 = ranks_held(cnt)
    distinct = ge1.bit_count()
    if n == 4 and (t.four_card is not FourCard.NONE or t.chop):
        if distinct == 1:
            return 4, 64 + t.rv[top_rank(ge1)], -1
        ge2 = ranks_paired(cnt)
        if t.four_card is FourCard.QUADS_AND_TWO_PAIRS and distinct == 2 and ge2 == ge1:
            hi, _lo = _two_ranks(ge1, t)
            return 4, _pair_key(mask & (15 << (hi << 2)), hi, t), -1
    if n == 5:
        key = _five(mask, t, cnt, ge1, distinct)
        if key < 0:
            return None
        if t.five_compare is FiveCompare.HIGHEST_CARD:
            return 5, t.top_power(mask), five_level(key)
        return 5, key, five_level(key)
    if n == 13 and t.dragon_play and distinct == 13:
        return 13, dragon_key(mask, t), -1
    rare = _rare(mask, n, t, cnt, ge1, distinct)
    return None if rare is None else (rare.kind, rare.key, rare.level)


def _rare(mask: Mask, n: int, t: Tables, cnt: int, ge1: int, distinct: int) -> Play | None:
    """Plays that exist only under the rarer options (seven-card straight flushes, runs of
    pairs for chopping, sequences of other lengths)."""
    if n == 7 and t.sf_plus_two:
        key = sf_plus_two_key(mask, t)
        if key >= 0:
            return Play(mask, KIND_SF_PLUS_TWO, key)
    if n in t.run_lengths and distinct == n and not ge1 & (1 << 48):
        lo = lowest_rank(ge1)
        if ge1 == sum(1 << (4 * r) for r in range(lo, lo + n)):
            return Play(mask, KIND_RUN + n, t.top_power(mask))
    if t.chop and n >= 6 and n % 2 == 0 and distinct == n // 2 and not ge1 & (1 << 48):
        exact2 = ranks_exactly_paired(cnt)
        lo = lowest_rank(ge1)
        if exact2 == ge1 and ge1 == sum(1 << (4 * r) for r in range(lo, lo + n // 2)):
            top = lo + n // 2 - 1
            return Play(mask, KIND_PAIR_RUN + n // 2, _pair_key(mask & (15 << (top << 2)), top, t))
    return None


def _two_ranks(pattern: int, t: Tables) -> tuple[int, int]:
    """The two ranks of a two-rank pattern, higher first in this deal's rank order (with
    ``twos_low_after_bomb`` the two can be the lower one)."""
    a = top_rank(pattern)
    b = top_rank(pattern & ~(1 << (a << 2)))
    return (a, b) if t.rv[a] > t.rv[b] else (b, a)


def _pair_key(pair: Mask, r: int, t: Tables) -> int:
    for m, k in t.pairs[r << 4 | (pair >> (r << 2)) & 15]:
        if m == pair:
            return k
    raise AssertionError("not a pair")


def _five(mask: Mask, t: Tables, cnt: int, ge1: int, distinct: int) -> int:
    """The key (:func:`~referee.game.compiled.five_key`) of a five-card hand, or -1."""
    if distinct == 5:
        s = lowest_suit(mask)
        suited = mask & t.suit_masks[s] == mask
        if suited and ge1 in t.suited_window_of:
            return t.same_suit_key(ge1, s)
        if not suited and ge1 in t.window_of:
            return t.straight_key(mask, ge1) if t.lv_straight >= 0 else -1
        if suited:
            return t.flush_key(ge1, s) if t.lv_flush >= 0 else -1
        return -1
    ge2 = ranks_paired(cnt)
    ge3 = ranks_tripled(cnt)
    ge4 = ranks_quadrupled(cnt)
    if ge4:
        return five_key(t.lv_quads, t.rv[top_rank(ge4)]) if t.lv_quads >= 0 else -1
    if ge3:
        level = t.lv_full if distinct == 2 else t.lv_triplejunk
        return five_key(level, t.rv[top_rank(ge3)]) if level >= 0 else -1
    if distinct == 3 and ge2.bit_count() == 2:
        hi, lo = _two_ranks(ge2, t)
        key = _pair_key(mask & (15 << (hi << 2)), hi, t)
        if t.lv_sisters >= 0 and t.rv[hi] == t.rv[lo] + 1:
            return five_key(t.lv_sisters, key)
        if t.lv_twopair >= 0:
            return five_key(t.lv_twopair, key)
    return -1


def beats(play: Play, table: Play | None, t: Tables) -> bool:
    """Whether ``play`` may be played on ``table`` (None: an empty table, anything goes)."""
    if table is None:
        return True
    if play.kind == table.kind:
        if (
            play.kind == 5
            and 5 in t.bomb_targets
            and play.level in t.bomb_levels
            and table.level not in t.bomb_levels
        ):
            return True
        if play.kind == 5 and t.five_compare is FiveCompare.SAME_TYPE_ONLY:
            return play.level == table.level and play.key > table.key
        return play.key > table.key
    if play.kind == KIND_SF_PLUS_TWO and t.sf_plus_two:
        return True
    if (
        t.chop
        and table.kind == 1
        and table.key == t.max_power
        and ((play.kind == 4 and play.key >= 64) or KIND_PAIR_RUN < play.kind < KIND_RUN)
    ):
        return True
    return play.kind == 5 and table.kind in t.bomb_targets and play.level in t.bomb_levels
