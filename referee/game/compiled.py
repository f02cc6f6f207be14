"""A rule set compiled into lookup tables for the move generator and the classifier.

Every rule set, the standard one included, goes through this one compilation: there is no
second, standard-only fast path.  Speed comes from doing rule-dependent work once per rule set
(suit ranks, per-rank tables of pairs and triples with their keys, sequence windows as bit
patterns) so that the per-hand work is bit arithmetic and table look-ups.

Bit layout reminder: a card is ``rank * 4 + suit``, so the four cards of rank ``r`` are the
nibble ``(hand >> 4*r) & 15`` and a "rank pattern" has bit ``4*r`` set for each rank ``r``.

Keys: every play has a *kind* (its size: 1, 2, 3, 4, 5 or 13) and an integer *key*; within a
kind a play beats another when its key is greater (five-card keys put the type level above the
inner rank, see :data:`TYPE_SHIFT`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache, partial
from itertools import combinations
from typing import Generic, TypeVar

from .bits import ONES, TWO_OF_SPADES, TWO_RANK_BIT, TWOS
from .cards import Mask
from .rules import (
    FinalRestriction,
    FiveKind,
    FlushCompare,
    FourCard,
    RuleSet,
)
from .straights import StraightOrder

T = TypeVar("T")

TYPE_SHIFT = 60
"""Five-card keys are ``type_level << TYPE_SHIFT | inner`` (:func:`five_key`)."""


def five_key(level: int, inner: int) -> int:
    """The key of a five-card play: its type level above its inner key (``inner`` is below
    ``1 << TYPE_SHIFT``), so keys of a higher type are greater whatever the inner key."""
    return level << TYPE_SHIFT | inner


def five_level(key: int) -> int:
    """The type level of a five-card key (:func:`five_key`)."""
    return key >> TYPE_SHIFT

KIND_SF_PLUS_TWO = 7
"""Kind code of a straight flush with two extra cards (``straight_flush_plus_two``)."""
KIND_PAIR_RUN = 100
"""Kind code base of a run of pairs used to chop a two (``chop``): base + number of pairs."""
KIND_RUN = 200
"""Kind code base of a sequence of another length (``straight_lengths``): base + length."""


Factor = tuple[int, int, list[tuple[int, ...]]]
"""Some ranks of a sequence window: ``(shift, mask, table)``, see :meth:`Tables._factors`."""
OtherRanks = tuple[
    int, int, list[tuple[int, ...]], int, int, list[tuple[int, ...]], tuple[Factor, ...]
]
"""The four ranks of a window besides the tie-break rank: two factors flattened, then any
further factors (none for windows whose other ranks are two pairs of adjacent ranks)."""
WindowRecord = tuple[int, int, int, list[tuple[tuple[int, int], ...]], OtherRanks]
"""A sequence window for the generator: ``(pattern, straight key base (-1 when plain
straights are no play), shift of the tie-break rank, its cards per nibble each with the key of
a straight it breaks the tie of, the other ranks)``.  The tie-break card alone decides the key
of a straight, so a window's plays come out grouped by key."""


def _rank_tables() -> tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]]:
    """Ranks and one-rank patterns of all 8192 rank patterns, each entry built from the entry
    without its top rank (cheap enough to build at import)."""
    patterns: list[int] = [0]
    ranks: list[tuple[int, ...]] = [()]
    bits: list[tuple[int, ...]] = [()]
    for sub in range(1, 1 << 13):
        r = sub.bit_length() - 1
        prev = sub ^ (1 << r)
        patterns.append(patterns[prev] | 1 << (4 * r))
        ranks.append((*ranks[prev], r))
        bits.append((*bits[prev], 1 << (4 * r)))
    return dict(zip(patterns, ranks, strict=True)), dict(zip(patterns, bits, strict=True))


RANK_LIST, RANK_BITS = _rank_tables()
"""Ranks, and one-rank patterns (bit 4r), of every rank pattern (bit 4r per rank): look-ups
instead of bit loops per hand."""


@cache
def _complete_windows(patterns: tuple[int, ...]) -> dict[int, tuple[int, ...]]:
    """For every rank pattern, the indices of the window patterns it contains (filled by
    walking the supersets of each window)."""
    found: dict[int, list[int]] = {p: [] for p in RANK_LIST}
    for i, w in enumerate(patterns):
        others = ONES ^ w
        sub = others
        while True:
            found[w | sub].append(i)
            if not sub:
                break
            sub = (sub - 1) & others
    shared: dict[tuple[int, ...], tuple[int, ...]] = {}
    return {p: shared.setdefault(tuple(ix), tuple(ix)) for p, ix in found.items()}


def _windows(order: StraightOrder) -> list[tuple[int, int, int, tuple[int, ...]]]:
    """The sequence windows of a straight order: ``(rank pattern, level, tie-break rank,
    ranks)``."""
    out = []
    for rm, level, tb in order.window_masks():
        ranks = tuple(r for r in range(13) if rm >> r & 1)
        out.append((sum(1 << (4 * r) for r in ranks), level, tb, ranks))
    return out


class Tables:
    """Lookup tables for one rule set.  Build with :func:`tables_for` (one per rule set).

    The tables come in groups, each built by one method below and read by one part of the
    engine: the card order (every module), the plays inside one rank (the generator's leads
    and the classifier of pairs and triples), the five-card types, the sequence windows
    (straights and straight flushes), the byte tables of the generator's fast paths, the
    flush keys, the rarer plays, the bombs and the bans on a last play.
    """

    def __init__(self, rules: RuleSet, twos_low: bool = False) -> None:
        self.rules = rules
        self.twos_low = twos_low
        self._card_order(rules, twos_low)
        self._one_rank_plays(rules)
        self._five_card_types(rules)
        self._sequences(rules)
        self._byte_tables(rules)
        self._flush_keys()
        self._rarer_plays(rules)
        self._bombs(rules)
        self._last_plays(rules)
        self.card_texts: dict[int, tuple[str, ...]] = {}
        """Card texts of card sets in this rule set's order, filled by
        :func:`referee.game.view.cards_json` (requests repeat the same sets turn after turn)."""
        self.move_keys: dict[int, tuple[tuple[int, list[int]], str]] = {}
        """Each legal move's place in the wire's order and its id, filled by
        :func:`referee.game.view.legal_moves_json` (a hand's plays repeat turn after turn)."""

    def _card_order(self, rules: RuleSet, twos_low: bool) -> None:
        """Rank values, suit ranks, and the order and power of every card."""
        # Rank values: natural order 3..2, or with twos lowest (``twos_low_after_bomb``).
        rv = [(r + 1) % 13 for r in range(13)] if twos_low else list(range(13))
        self.rv = rv
        suit_rank = [rules.suit_order.index(s) for s in "DCHS"]
        self.suit_rank = suit_rank
        ties = rules.suits_break_ties
        # Total order of cards (used to find the lowest card, sort, and break nothing else).
        self.order = [rv[c >> 2] * 4 + suit_rank[c & 3] for c in range(52)]
        # Power decides whether one single beats another; equal power never beats.
        self.power = [rv[c >> 2] * 4 + (suit_rank[c & 3] if ties else 0) for c in range(52)]
        # above[p]: the cards whose power is greater than p (a single of power p is beaten
        # by exactly these).
        self.above = [sum(1 << d for d in range(52) if self.power[d] > p) for p in range(52)]
        # Cards sorted by total order, lowest first (for "lowest card dealt").
        self.by_order = sorted(range(52), key=lambda c: self.order[c])
        self.suit_masks = [ONES << s for s in range(4)]
        self.max_power = max(self.power)
        self.top_single = max(range(52), key=lambda c: self.order[c])
        """The card no single beats; a single of it may be chopped (``chop``)."""
        self.rank_of_value = [rv.index(v) for v in range(13)]
        self.ranks_above = [
            sum(15 << (4 * r) for r in range(13) if rv[r] > v) for v in range(13)
        ]
        """Per rank value v: the cards of the ranks above it."""
        self.other_ranks = [((1 << 52) - 1) ^ (15 << (4 * r)) for r in range(13)]
        """Per rank: every card of the other ranks."""
        self.rank_list = RANK_LIST
        self.rank_bits = RANK_BITS
        # Suit index of a one-card nibble.
        self.nibble_suit = {1: 0, 2: 1, 4: 2, 8: 3}

    def _one_rank_plays(self, rules: RuleSet) -> None:
        """Per (rank, nibble of the hand in that rank): its singles, pairs (mask, key) and
        triples (mask), and every pair and triple with its key."""
        rv, suit_rank, ties = self.rv, self.suit_rank, rules.suits_break_ties
        self.singles: list[tuple[int, ...]] = []
        self.pairs: list[tuple[tuple[int, int], ...]] = []
        self.pair_masks: list[tuple[int, ...]] = []
        self.triples: list[tuple[int, ...]] = []
        for r in range(13):
            for n in range(16):
                suits = [s for s in range(4) if n >> s & 1]
                sh = 4 * r
                self.singles.append(tuple(1 << (sh + s) for s in suits))
                prs = []
                for i, a in enumerate(suits):
                    for b in suits[i + 1 :]:
                        top = max(suit_rank[a], suit_rank[b]) if ties else 0
                        prs.append(((1 << (sh + a)) | (1 << (sh + b)), rv[r] * 4 + top))
                self.pairs.append(tuple(prs))
                self.pair_masks.append(tuple(m for m, _ in prs))
                self.triples.append(
                    tuple(sum(1 << (sh + s) for s in t) for t in combinations(suits, 3))
                )
        # Classifying a play of two or three cards is one dict look-up.
        self.pair_key = {m: k for r in range(13) for m, k in self.pairs[r << 4 | 15]}
        self.triple_key = {m: rv[r] for r in range(13) for m in self.triples[r << 4 | 15]}
        self.better_pairs = [
            [
                tuple(m for m, k in self.pairs[self.rank_of_value[key >> 2] << 4 | n] if k > key)
                for n in range(16)
            ]
            for key in range(52)
        ]
        """Per pair key and nibble of that pair's rank: the pairs of the nibble that beat it."""
        self.triples_on = rules.triples
        self.four_card = rules.four_card
        self.two_pair_fours = rules.four_card is FourCard.QUADS_AND_TWO_PAIRS

    def _five_card_types(self, rules: RuleSet) -> None:
        """The level of each five-card type the rule set lists (-1: not a play)."""
        order = rules.five_card_order
        self.five_levels = {k: i for i, k in enumerate(order)}
        lv = self.five_levels
        self.lv_straight = lv.get(FiveKind.STRAIGHT, -1)
        self.lv_flush = lv.get(FiveKind.FLUSH, -1)
        self.lv_full = lv.get(FiveKind.FULL_HOUSE, -1)
        self.lv_quads = lv.get(FiveKind.FOUR_OF_A_KIND, -1)
        self.lv_sflush = lv.get(FiveKind.STRAIGHT_FLUSH, -1)
        self.lv_royal = lv.get(FiveKind.ROYAL_FLUSH, -1)
        self.lv_twopair = lv.get(FiveKind.TWO_PAIR, -1)
        self.lv_sisters = lv.get(FiveKind.SISTERS, -1)
        self.lv_triplejunk = lv.get(FiveKind.TRIPLE_JUNK, -1)
        self.any_five = bool(order)
        self.five_compare = rules.five_card_compare
        self.flush_compare = rules.flush_compare
        self.extra_five_levels = frozenset(
            lv for lv in (self.lv_twopair, self.lv_sisters, self.lv_triplejunk) if lv >= 0
        )

    def _sequences(self, rules: RuleSet) -> None:
        """Sequence windows as rank patterns (straights, and straight flushes when they follow
        another order)."""
        self.windows = _windows(rules.straight_order)
        self.window_of = {w[0]: w for w in self.windows}
        # Sequences within one suit follow their own order when ``straight_flushes`` names
        # another (002: twos low in straight flushes, A2345 highest in straights); otherwise
        # the suited tables are the straight ones.
        self.sf_split = rules.straight_flush_order.name != rules.straight_order.name
        self.suited_windows = (
            _windows(rules.straight_flush_order) if self.sf_split else self.windows
        )
        self.suited_window_of = {w[0]: w for w in self.suited_windows}
        """Five ranks that make a straight flush when held in one suit."""
        self._same_suit_levels()
        self._window_indexes()

    def _same_suit_levels(self) -> None:
        """The level of a sequence held in one suit, per straight-flush window."""
        # A valid sequence in one suit is a straight flush (or royal flush when that type is
        # listed); with no straight-flush type it counts as the best allowed of flush/straight.
        self.royal_pattern = royal_pattern = sum(1 << (4 * r) for r in range(7, 12))
        self.same_suit_level: dict[int, int] = {}
        self.same_suit_is_flush: dict[int, bool] = {}
        for pattern, *_ in self.suited_windows:
            if pattern == royal_pattern and self.lv_royal >= 0:
                lvl, as_flush = self.lv_royal, False
            elif self.lv_sflush >= 0:
                lvl, as_flush = self.lv_sflush, False
            elif self.lv_flush > self.lv_straight:
                lvl, as_flush = self.lv_flush, True
            else:
                lvl, as_flush = self.lv_straight, False
            self.same_suit_level[pattern] = lvl
            self.same_suit_is_flush[pattern] = as_flush
        lvls = set(self.same_suit_level.values())
        self.seq_all = self.lv_straight >= 0 and all(lv >= 0 for lv in lvls)
        self.seq_levels = frozenset(lv for lv in lvls if lv >= 0)
        self.seq_any = self.lv_straight >= 0 or bool(self.seq_levels)

    def _window_indexes(self) -> None:
        """Per rank pattern, the windows it completes."""
        # The windows each rank pattern completes: one dict look-up instead of a scan of every
        # window per hand (see WindowRecord).
        records = [self._window_record(*w) for w in self.windows]
        complete = _complete_windows(tuple(w[0] for w in self.windows))
        by_ix = {ix: tuple(records[i] for i in ix) for ix in set(complete.values())}
        self.windows_in: dict[int, tuple[WindowRecord, ...]] = {
            p: by_ix[ix] for p, ix in complete.items()
        }
        suited = [w[0] for w in self.suited_windows]
        sf_complete = _complete_windows(tuple(suited)) if self.sf_split else complete
        sf_by_ix = {ix: tuple(suited[i] for i in ix) for ix in set(sf_complete.values())}
        self.suited_windows_in: dict[int, tuple[int, ...]] = {
            p: sf_by_ix[ix] for p, ix in sf_complete.items()
        }
        """Per rank pattern of one suit: the patterns of the straight-flush windows it
        completes."""

    def _byte_tables(self, rules: RuleSet) -> None:
        """Per byte of a hand (two ranks): the tables of the generator's fast paths, which
        read seven entries instead of looping over cards."""
        # Leading plays that live inside one rank (singles, pairs, triples, four-card quads).
        self.small_chunks: list[tuple[tuple[int, ...], ...]] = []
        for i in range(7):
            chunk = []
            for byte in range(256):
                plays: list[int] = []
                ranks = [(r, (byte >> (4 * j)) & 15) for j, r in enumerate((2 * i, 2 * i + 1))]
                ranks = [(r, n) for r, n in ranks if r <= 12]
                for r, n in ranks:
                    plays += self.singles[r << 4 | n]
                for r, n in ranks:
                    plays += self.pair_masks[r << 4 | n]
                    if rules.triples:
                        plays += self.triples[r << 4 | n]
                    if rules.four_card is not FourCard.NONE and n == 15:
                        plays.append(15 << (4 * r))
                chunk.append(tuple(plays))
            self.small_chunks.append(tuple(chunk))
        # The pairs of each byte: the pairs that beat a pair are the byte look-ups of the
        # hand's higher ranks (ranks_above), plus the pairs of the same rank with a better top
        # suit (better_pairs).
        self.pair_chunks = [
            tuple(
                tuple(
                    p
                    for r in (2 * i, 2 * i + 1)
                    if r < 13
                    for p in self.pair_masks[r << 4 | (byte >> (4 * (r - 2 * i))) & 15]
                )
                for byte in range(256)
            )
            for i in range(7)
        ]
        # The single cards of each byte of a mask, pre-shifted: splits a mask into cards with
        # seven look-ups (faster than a bit loop once a mask holds more than a few cards).
        self.bit_chunks = [
            tuple(tuple(1 << (8 * i + b) for b in range(8) if byte >> b & 1) for byte in range(256))
            for i in range(7)
        ]

    def _flush_keys(self) -> None:
        """Flush keys are linear in the rank pattern unless twos are low or only the top card
        counts: key = flush_base[suit] + pattern * flush_scale (see :meth:`flush_key`)."""
        ties = self.rules.suits_break_ties
        self.flush_linear = not self.twos_low and self.flush_compare is not FlushCompare.TOP_CARD
        suit_first = self.flush_compare is FlushCompare.SUIT_FIRST
        self.flush_scale = 1 if suit_first else 4
        self.flush_base = [
            five_key(self.lv_flush, (self.suit_rank[s] if ties else 0) << (52 if suit_first else 0))
            for s in range(4)
        ]

    def _rarer_plays(self, rules: RuleSet) -> None:
        """Dragons, seven-card straight flushes, chops and sequences of other lengths."""
        self.dragon_play = rules.dragon_play
        self.sf_plus_two = rules.straight_flush_plus_two
        self.chop = rules.chop
        self.run_lengths = tuple(sorted(rules.straight_lengths))
        self.runs: dict[int, list[tuple[int, tuple[int, ...]]]] = {
            n: [
                (sum(1 << (4 * r) for r in range(lo, lo + n)), tuple(range(lo, lo + n)))
                for lo in range(12 - n + 1)
            ]
            for n in set(self.run_lengths) | {3, 4, 5, 6}
        }
        """Rank windows of n consecutive ranks from three to ace: (pattern, ranks)."""
        self.rare_leads = self.dragon_play or self.sf_plus_two or bool(self.run_lengths)
        """Leads beyond one-rank plays, two pairs and five-card plays exist."""
        self.plain_singles = not (1 in rules.bomb_targets or self.chop or self.sf_plus_two)
        """Answers to a single are just higher singles (no bombs, chops or seven-card plays)."""

    def _bombs(self, rules: RuleSet) -> None:
        """Which five-card types bomb which smaller plays."""
        self.bomb_levels = frozenset(self.five_levels[k] for k in rules.bomb_kinds)
        self.bomb_targets = rules.bomb_targets
        floor = min(self.bomb_levels, default=-1)
        top = len(rules.five_card_order)
        self.bomb_floor = floor if self.bomb_levels == set(range(floor, top)) else -1
        """The lowest bomb level when the bomb types are exactly the top levels, else -1."""
        self.extra_answers = bool(
            self.bomb_targets or self.chop or self.sf_plus_two or self.run_lengths
        )
        """Answers beyond same-size plays exist (bombs, chops, seven-card plays, sequences of
        other lengths)."""

    def _last_plays(self, rules: RuleSet) -> None:
        """Plays that may not empty a hand (``forbidden_final``)."""
        ff = rules.forbidden_final
        self.forbid_single_two = FinalRestriction.SINGLE_TWO in ff
        self.forbid_single_2s = FinalRestriction.SINGLE_TWO_OF_SPADES in ff
        self.forbid_pair_twos = FinalRestriction.PAIR_OF_TWOS in ff
        self.forbid_any_2s = FinalRestriction.ANY_TWO_OF_SPADES in ff
        self.forbid_any_two = FinalRestriction.ANY_TWO in ff
        self.any_final_rule = bool(ff)

    def _window_record(
        self, pattern: int, level: int, tb: int, ranks: tuple[int, ...]
    ) -> WindowRecord:
        """The generator's record of one sequence window (see :data:`WindowRecord`)."""
        base = five_key(self.lv_straight, level * 4) if self.lv_straight >= 0 else -1
        return (
            pattern,
            base,
            4 * tb,
            self._keyed_singles(tb, max(base, 0)),
            self._factors([r for r in ranks if r != tb]),
        )

    def _keyed_singles(self, r: int, base: int) -> list[tuple[tuple[int, int], ...]]:
        """Per nibble of rank ``r``: its cards, each with the key of a straight whose tie-break
        card it is (``base`` plus the card's suit rank when suits break ties)."""
        add = self.suit_rank if self.rules.suits_break_ties else [0, 0, 0, 0]
        return [
            tuple((1 << (4 * r + s), base + add[s]) for s in range(4) if n >> s & 1)
            for n in range(16)
        ]

    def _factors(self, ranks: list[int]) -> OtherRanks:
        """The four ranks split into factors of one rank or two adjacent ranks: a factor
        ``(shift, mask, table)`` gives ``table[(hand >> shift) & mask]``, the one-card-per-rank
        choices of the hand in those ranks as card masks (OR-ed)."""
        out: list[Factor] = []
        rs = sorted(ranks)
        while rs:
            r = rs.pop(0)
            if rs and rs[0] == r + 1:
                rs.pop(0)
                out.append((4 * r, 255, self._pair_of_ranks(r)))
            else:
                out.append((4 * r, 15, list(self.singles[16 * r : 16 * r + 16])))
        (s1, m1, t1), (s2, m2, t2), *more = out
        return s1, m1, t1, s2, m2, t2, tuple(more)

    def _pair_of_ranks(self, r: int) -> list[tuple[int, ...]]:
        """Per byte of ranks ``r`` and ``r + 1``: one card of each, OR-ed, every way."""
        sg = self.singles
        return [
            tuple(a | b for a in sg[16 * r + (v & 15)] for b in sg[16 * (r + 1) + (v >> 4)])
            for v in range(256)
        ]

    # --- keys -------------------------------------------------------------------------
    def straight_inner(self, mask: Mask, pattern: int) -> int:
        """Inner key of a sequence: its level, then the suit of its tie-break card."""
        _, level, tb, _ = self.window_of[pattern]
        if not self.rules.suits_break_ties:
            return level * 4
        return level * 4 + self.suit_rank[self.nibble_suit[(mask >> (4 * tb)) & 15]]

    def suited_inner(self, pattern: int, suit: int) -> int:
        """Inner key of a straight flush: its level in the straight-flush order, then its suit."""
        level = self.suited_window_of[pattern][1]
        return level * 4 + (self.suit_rank[suit] if self.rules.suits_break_ties else 0)

    def flush_inner(self, pattern: int, suit: int) -> int:
        sr = self.suit_rank[suit] if self.rules.suits_break_ties else 0
        if self.twos_low:  # the two's bit moves below the three's
            pattern = ((pattern & ~TWO_RANK_BIT) << 4) | (pattern >> 48 & 1)
        fc = self.flush_compare
        if fc is FlushCompare.SUIT_FIRST:
            return (sr << 52) | pattern
        if fc is FlushCompare.TOP_CARD:
            return ((pattern.bit_length() - 1) >> 2) * 4 + sr
        return pattern * 4 + sr  # POKER

    def flush_key(self, pattern: int, suit: int) -> int:
        """Key of the flush of rank pattern ``pattern`` in ``suit``."""
        if self.flush_linear:
            return self.flush_base[suit] + pattern * self.flush_scale
        return five_key(self.lv_flush, self.flush_inner(pattern, suit))

    def same_suit_key(self, pattern: int, suit: int) -> int:
        """Key of the sequence window ``pattern`` held in one suit (a straight flush, or the
        flush or straight it counts as); -1 when the rule set has no such play."""
        level = self.same_suit_level[pattern]
        if level < 0:
            return -1
        if self.same_suit_is_flush[pattern]:
            return five_key(level, self.flush_inner(pattern, suit))
        return five_key(level, self.suited_inner(pattern, suit))

    def straight_key(self, mask: Mask, pattern: int) -> int:
        """Key of the straight ``mask`` in window ``pattern`` (when straights are a play)."""
        return five_key(self.lv_straight, self.straight_inner(mask, pattern))

    def top_power(self, mask: Mask) -> int:
        """Power of the highest card of a play (for ``five_card_compare=highest-card``)."""
        best = -1
        power = self.power
        while mask:
            low = mask & -mask
            p = power[low.bit_length() - 1]
            if p > best:
                best = p
            mask ^= low
        return best

    def is_forbidden_final(self, move: Mask) -> bool:
        """Whether ``move`` may not be the play that empties a hand."""
        n = move.bit_count()
        if self.forbid_any_two and move & TWOS:
            return True
        if self.forbid_any_2s and move & TWO_OF_SPADES:
            return True
        if n == 1:
            if self.forbid_single_two and move & TWOS:
                return True
            if self.forbid_single_2s and move == TWO_OF_SPADES:
                return True
        return n == 2 and self.forbid_pair_twos and move & TWOS == move


class RuleSetMemo(Generic[T]):
    """What ``build`` computes from a rule set, remembered for the ``maxsize`` rule sets used
    most recently (equal rule sets share one value).

    A value is found by the rule set's identity first: one dict look-up, because a deal is
    created far more often than a rule set and hashing a frozen rule set of ~40 options costs
    more than dealing a hand.  On a miss it is found by equality, else built; the oldest value
    is dropped beyond ``maxsize``.  The rule set itself is never touched (it is frozen data that
    callers hash, compare and share).  The identity index holds a reference to each rule set it
    names, so an id is never reused while it is listed; it is emptied when it outgrows four
    entries per value (many equal rule sets created one by one), and refills on use.
    """

    def __init__(self, build: Callable[[RuleSet], T], maxsize: int) -> None:
        self._build = build
        self.maxsize = maxsize
        self._by_value: dict[RuleSet, T] = {}  # oldest first
        self._by_id: dict[int, tuple[RuleSet, T]] = {}
        self._lock = threading.Lock()

    def __call__(self, rules: RuleSet) -> T:
        hit = self._by_id.get(id(rules))
        if hit is not None and hit[0] is rules:
            return hit[1]
        return self._miss(rules)

    def _miss(self, rules: RuleSet) -> T:
        with self._lock:
            by_value = self._by_value
            if rules in by_value:
                value = by_value.pop(rules)  # re-inserted below as the newest
            else:
                value = self._build(rules)
                if len(by_value) >= self.maxsize:
                    oldest = by_value.pop(next(iter(by_value)))
                    self._by_id = {k: e for k, e in self._by_id.items() if e[1] is not oldest}
            by_value[rules] = value
            if len(self._by_id) >= 4 * self.maxsize:
                self._by_id = {}
            self._by_id[id(rules)] = (rules, value)
            return value

    def __len__(self) -> int:
        return len(self._by_value)


MAX_COMPILED_RULE_SETS = 32
"""How many rule sets keep their compiled tables (about 2 MiB each): more than the presets,
so a ladder that plays every preset compiles each once."""

_TABLES = RuleSetMemo(Tables, MAX_COMPILED_RULE_SETS)
_TABLES_TWOS_LOW = RuleSetMemo(partial(Tables, twos_low=True), MAX_COMPILED_RULE_SETS)


def tables_for(rules: RuleSet, twos_low: bool = False) -> Tables:
    """Compiled tables of a rule set (``twos_low``: the variant with twos lowest), shared by
    equal rule sets; see :class:`RuleSetMemo` for how long they are kept."""
    return _TABLES_TWOS_LOW(rules) if twos_low else _TABLES(rules)


__all__ = [
    "MAX_COMPILED_RULE_SETS",
    "TYPE_SHIFT",
    "RuleSetMemo",
    "Tables",
    "five_key",
    "five_level",
    "tables_for",
]
