"""A slow, independent brute-force reference for Big Two combinations, written from the texts.

Nothing here imports ``referee.combos``, ``referee.movegen`` or ``referee.compiled``: the
reference reads the option enums from :mod:`referee.rules`, the sequence windows (pure data)
from :mod:`referee.straights` and card text from :mod:`referee.cards`, and decides everything
else itself by sorting and counting ranks.  It is deliberately simple and slow:
:func:`reference_legal` looks at *every* subset of 1 to 5 cards of the hand (and every
13-card subset when ``dragon_play`` is on).

Sources (``/work/shared/rules``): 000 = Pagat-style compilation plus the encyclopedia text,
001 = modern summary, 002 = older encyclopedia article, 003 = one group's house rules.

Conventions, each from a text:

* Singles: rank, then suit (000 'Single cards'); with ``suits_break_ties`` off an equal rank
  never beats (000 wiki var. 13).
* Pairs: rank, then the higher suit in the pair (000 'Pairs').  Triples: rank (000).
* Four cards (000 'Playing quads without an odd card'; 000 wiki var. 5): quads beat only lower
  quads; with two pairs allowed, any quads beat any two pairs and two pairs compare by their
  higher pair (rank, then its higher suit).
* Five cards: a hand has exactly one *type*, the most specific definition it meets
  (002: a straight is 'not all of the same suit', a flush 'not in sequence'): a suited
  sequence is a royal flush (T-J-Q-K-A, only when ROYAL_FLUSH is listed) or a straight flush.
  When no straight-flush type is listed, a suited sequence counts as whichever of flush and
  straight ranks higher in the order (the engine's documented convention; no text covers an
  order without straight flushes).
* Sequences and their tie-break card come from the named straight order (000 'Use of twos and
  aces'; 000 wiki var. 9; 002 var. 3).
* Flushes: suit first then cards top-down (000 standard), top card then suit (000 Hong Kong),
  or all cards top-down then suit (000 'as in Poker').
* Full house and triple-with-junk: the triple's rank; quads: the quad's rank (000; wiki var. 7).
* Two pair junk / sisters: 'rank is determined by the highest pair', tie broken by the
  higher suit in that pair, as for pairs (000 wiki var. 6, 7).
* ``five_card_compare``: by type then inside the type (000), same type only (000 wiki var. 30),
  or the highest card alone (000 wiki var. 31).
* Bombs: a five-card hand of a bomb type beats any play whose size is a bomb target
  (000 'Honour hands beat all combinations'; 000 wiki var. 22, 25; 001).
* Dragon: thirteen cards 3..2, only on a lead, ties by the suit of the two (000 wiki var. 15).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import combinations

from referee.rules import FiveCompare, FiveKind, FlushCompare, FourCard, RuleSet
from referee.straights import find_straight_order

RANK_CHARS = "3456789TJQKA2"
TEN, ACE = RANK_CHARS.index("T"), RANK_CHARS.index("A")


def _rank(c: int) -> int:
    return c // 4


def _suit(c: int) -> int:
    return c % 4


def _as_cards(cards: Iterable[int] | int) -> list[int]:
    if isinstance(cards, int):
        return [c for c in range(52) if cards >> c & 1]
    return sorted(cards)


class _Ref:
    """What the reference needs from a rule set, recomputed from the options."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.ties = rules.suits_break_ties
        self.suit_rank = [rules.suit_order.index(s) for s in "DCHS"]
        self.order = list(rules.five_card_order)
        self.level = {k: i for i, k in enumerate(self.order)}
        # window ranks -> (level, tie-break rank)
        self.windows: dict[frozenset[int], tuple[int, int]] = {}
        for ranks, level, tb in find_straight_order(rules.straights).windows:
            key = frozenset(RANK_CHARS.index(ch) for ch in ranks)
            self.windows[key] = (level, RANK_CHARS.index(tb))

    # single-card strength, used by singles, pairs and the highest-card comparison
    def card_key(self, c: int) -> tuple[int, ...]:
        if self.ties:
            return (_rank(c), self.suit_rank[_suit(c)])
        return (_rank(c),)

    def pair_key(self, pair: list[int]) -> tuple[int, ...]:
        r = _rank(pair[0])
        if self.ties:
            return (r, max(self.suit_rank[_suit(c)] for c in pair))
        return (r,)

    def five_type(self, cards: list[int]) -> FiveKind | None:
        ranks = [_rank(c) for c in cards]
        counts = Counter(ranks)
        shape = sorted(counts.values(), reverse=True)
        allowed = self.level
        if shape == [1, 1, 1, 1, 1]:
            suited = len({_suit(c) for c in cards}) == 1
            seq = frozenset(ranks) in self.windows
            if seq and suited:
                if FiveKind.ROYAL_FLUSH in allowed and set(ranks) == set(range(TEN, ACE + 1)):
                    return FiveKind.ROYAL_FLUSH
                if FiveKind.STRAIGHT_FLUSH in allowed:
                    return FiveKind.STRAIGHT_FLUSH
                options = [k for k in (FiveKind.FLUSH, FiveKind.STRAIGHT) if k in allowed]
                if not options:
                    return None
                return max(options, key=lambda k: allowed[k])
            if seq:
                return FiveKind.STRAIGHT if FiveKind.STRAIGHT in allowed else None
            if suited:
                return FiveKind.FLUSH if FiveKind.FLUSH in allowed else None
            return None
        if shape == [4, 1]:
            return FiveKind.FOUR_OF_A_KIND if FiveKind.FOUR_OF_A_KIND in allowed else None
        if shape == [3, 2]:
            return FiveKind.FULL_HOUSE if FiveKind.FULL_HOUSE in allowed else None
        if shape == [3, 1, 1]:
            return FiveKind.TRIPLE_JUNK if FiveKind.TRIPLE_JUNK in allowed else None
        if shape == [2, 2, 1]:
            lo, hi = sorted(r for r, n in counts.items() if n == 2)
            if FiveKind.SISTERS in allowed:
                return FiveKind.SISTERS if hi == lo + 1 else None
            if FiveKind.TWO_PAIR in allowed:
                return FiveKind.TWO_PAIR
        return None

    def five_inner(self, kind: FiveKind, cards: list[int]) -> tuple[int, ...]:
        ranks = [_rank(c) for c in cards]
        counts = Counter(ranks)
        if kind in (FiveKind.STRAIGHT, FiveKind.STRAIGHT_FLUSH, FiveKind.ROYAL_FLUSH):
            level, tb = self.windows[frozenset(ranks)]
            if not self.ties:
                return (level,)
            (tb_card,) = [c for c in cards if _rank(c) == tb]
            return (level, self.suit_rank[_suit(tb_card)])
        if kind is FiveKind.FLUSH:
            desc = tuple(sorted(ranks, reverse=True))
            s = (self.suit_rank[_suit(cards[0])],) if self.ties else ()
            fc = self.rules.flush_compare
            if fc is FlushCompare.SUIT_FIRST:
                return s + desc
            if fc is FlushCompare.TOP_CARD:
                return (desc[0], *s)
            return desc + s  # POKER
        if kind in (FiveKind.FULL_HOUSE, FiveKind.TRIPLE_JUNK):
            return (next(r for r, n in counts.items() if n == 3),)
        if kind is FiveKind.FOUR_OF_A_KIND:
            return (next(r for r, n in counts.items() if n == 4),)
        # two pair / sisters: the higher pair decides
        hi = max(r for r, n in counts.items() if n == 2)
        return self.pair_key([c for c in cards if _rank(c) == hi])

    def classify(self, cards: list[int]) -> tuple[int, tuple[int, ...], FiveKind | None] | None:
        n = len(cards)
        if n == 0 or len(set(cards)) != n:
            return None
        ranks = [_rank(c) for c in cards]
        one_rank = len(set(ranks)) == 1
        if n == 1:
            return (1, self.card_key(cards[0]), None)
        if n == 2:
            return (2, self.pair_key(cards), None) if one_rank else None
        if n == 3:
            return (3, (ranks[0],), None) if one_rank and self.rules.triples else None
        if n == 4:
            fc = self.rules.four_card
            if fc is FourCard.NONE:
                return None
            if one_rank:
                return (4, (1, ranks[0]), None)
            counts = Counter(ranks)
            if fc is FourCard.QUADS_AND_TWO_PAIRS and sorted(counts.values()) == [2, 2]:
                hi = max(counts)
                return (4, (0, *self.pair_key([c for c in cards if _rank(c) == hi])), None)
            return None
        if n == 5:
            kind = self.five_type(cards)
            if kind is None:
                return None
            if self.rules.five_card_compare is FiveCompare.HIGHEST_CARD:
                top = max(cards, key=lambda c: (_rank(c), self.suit_rank[_suit(c)]))
                return (5, self.card_key(top), kind)
            return (5, (self.level[kind], *self.five_inner(kind, cards)), kind)
        if n == 13 and self.rules.dragon_play and sorted(ranks) == list(range(13)):
            (two,) = [c for c in cards if _rank(c) == 12]
            return (13, (self.suit_rank[_suit(two)],) if self.ties else (), None)
        return None

    def beats(
        self,
        a: tuple[int, tuple[int, ...], FiveKind | None] | None,
        b: tuple[int, tuple[int, ...], FiveKind | None] | None,
    ) -> bool:
        if a is None:
            return False
        if b is None:
            return True
        kind_a, key_a, five_a = a
        kind_b, key_b, five_b = b
        if kind_a == kind_b:
            if (
                kind_a == 5
                and self.rules.five_card_compare is FiveCompare.SAME_TYPE_ONLY
                and five_a is not five_b
            ):
                return False
            return key_a > key_b
        return kind_a == 5 and five_a in self.rules.bomb_kinds and kind_b in self.rules.bomb_targets


_CACHE: dict[RuleSet, _Ref] = {}


def _ref(rules: RuleSet) -> _Ref:
    r = _CACHE.get(rules)
    if r is None:
        r = _CACHE[rules] = _Ref(rules)
    return r


def reference_classify(
    cards: Iterable[int] | int, rules: RuleSet
) -> tuple[int, tuple[int, ...], FiveKind | None] | None:
    """``(kind, key, five_type)`` of a set of cards, or None if it is no play.

    ``kind`` is the number of cards; keys of the same kind compare as tuples (for five-card
    hands under ``same-type-only`` only keys of the same ``five_type`` are comparable).
    """
    return _ref(rules).classify(_as_cards(cards))


def reference_beats(a: Iterable[int] | int, b: Iterable[int] | int | None, rules: RuleSet) -> bool:
    """Whether the cards ``a`` may be played on ``b`` (None: an empty table)."""
    r = _ref(rules)
    ca = r.classify(_as_cards(a))
    if b is None:
        return ca is not None
    cb = r.classify(_as_cards(b))
    assert cb is not None, "the table must hold a play"
    return r.beats(ca, cb)


def reference_plays(hand: Iterable[int] | int, rules: RuleSet) -> dict[frozenset[int], tuple]:
    """Every subset of the hand that is a play, with its classification (all of 1..5 cards,
    and of 13 cards when dragon_play is on)."""
    r = _ref(rules)
    cards = _as_cards(hand)
    sizes = [1, 2, 3, 4, 5]
    if rules.dragon_play:
        sizes.append(13)
    out: dict[frozenset[int], tuple] = {}
    for k in sizes:
        for sub in combinations(cards, k):
            c = r.classify(list(sub))
            if c is not None:
                out[frozenset(sub)] = c
    return out


def reference_legal(
    hand: Iterable[int] | int, table: Iterable[int] | int | None, rules: RuleSet
) -> set[frozenset[int]]:
    """Every play of ``hand`` allowed on ``table`` (None: leading), as sets of cards."""
    r = _ref(rules)
    plays = reference_plays(hand, rules)
    if table is None:
        return set(plays)
    tb = r.classify(_as_cards(table))
    assert tb is not None, "the table must hold a play"
    return {p for p, c in plays.items() if r.beats(c, tb)}


def as_mask(cards: Iterable[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def reference_beats_classified(rules: RuleSet, a: tuple | None, b: tuple | None) -> bool:
    """:func:`reference_beats` on two results of :func:`reference_classify`."""
    return _ref(rules).beats(a, b)
