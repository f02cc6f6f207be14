"""A slow, independent brute-force reference for Big Two combinations, written from the texts.

Nothing here imports ``referee.game.combos``, ``referee.game.movegen`` or
``referee.game.compiled``: the reference reads the option enums from :mod:`referee.game.rules`,
the sequence windows (pure data) from :mod:`referee.game.straights` and card text from
:mod:`referee.game.cards`, and decides everything else itself by sorting and counting ranks.
It is deliberately simple and slow: :func:`reference_legal` looks at *every* subset of 1 to 5
cards of the hand (and every 13-card subset when ``dragon_play`` is on).

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
  aces'; 000 wiki var. 9; 002 var. 3).  Five ranks in one suit are a straight flush when they
  are a sequence of the straight-flush order (``straight_flushes``, else the straight order),
  and a flush otherwise (002:37 '2-A-K-Q-J of a suit is therefore not valid and is only as good
  as a flush').
* Flushes: suit first then cards top-down (000 standard), top card then suit (000 Hong Kong),
  or all cards top-down then suit (000 'as in Poker').
* Full house and triple-with-junk: the triple's rank; quads: the quad's rank (000; wiki var. 7).
* Two pair junk / sisters: 'rank is determined by the highest pair', tie broken by the
  higher suit in that pair, as for pairs (000 wiki var. 6, 7).
* ``five_card_compare``: by type then inside the type (000), same type only (000 wiki var. 30),
  or the highest card alone (000 wiki var. 31).
* Bombs: a five-card hand of a bomb type beats any play whose size is a bomb target
  (000 'Honour hands beat all combinations'; 000 wiki var. 22, 25; 001); with five-card hands
  as a target, it beats any five-card hand of a type that is not a bomb type (000 Da Lao Er),
  and bombs compare among themselves as usual.
* Dragon: thirteen cards 3..2, only on a lead, ties by the suit of the two (000 wiki var. 15).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import combinations

from referee.game.rules import FiveCompare, FiveKind, FlushCompare, FourCard, RuleSet
from referee.game.straights import find_straight_order

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


class UnsupportedOptionError(NotImplementedError):
    """The rule set uses an option this reference does not model."""


# Options that change what a play is, which this reference does not model: a rule set with any
# of them away from its default is refused rather than checked wrongly.  (Empty: every option
# is modelled; kept so that a new option is added here until it is.)
UNMODELLED: dict[str, object] = {}

Kind = int | tuple[str, int]
"""1, 2, 3, 4, 5, 13 for the ordinary sizes; ``("sf+2", 7)`` for a straight flush with two
extra cards, ``("run", n)`` for a sequence of another length, ``("pairs", n)`` for a run of n
pairs (a chop)."""
SF_PLUS_TWO: Kind = ("sf+2", 7)

Classified = tuple[Kind, tuple[int, ...], FiveKind | None]


class _Ref:
    """What the reference needs from a rule set, recomputed from the options."""

    def __init__(self, rules: RuleSet, twos_low: bool = False) -> None:
        for option, default in UNMODELLED.items():
            if getattr(rules, option, default) != default:
                raise UnsupportedOptionError(option)
        self.rules = rules
        self.ties = rules.suits_break_ties
        self.suit_rank = [rules.suit_order.index(s) for s in "DCHS"]
        # 000 wiki (four-of-a-kind): 'when a bomb was dealt, it immediately makes the 2s to be
        # the lowest cards in the game' -- rank values for such a deal.
        self.twos_low = twos_low
        self.value = [(r + 1) % 13 if twos_low else r for r in range(13)]
        self.order = list(rules.five_card_order)
        self.level = {k: i for i, k in enumerate(self.order)}
        # window ranks -> (level, tie-break rank)
        self.windows: dict[frozenset[int], tuple[int, int]] = {}
        for ranks, level, tb in find_straight_order(rules.straights).windows:
            key = frozenset(RANK_CHARS.index(ch) for ch in ranks)
            self.windows[key] = (level, RANK_CHARS.index(tb))
        # the same for runs within one suit (002:37 straight flushes 'twos rank low')
        self.suited_windows: dict[frozenset[int], tuple[int, int]] = {}
        sf_name = getattr(rules, "straight_flushes", None) or rules.straights
        for ranks, level, tb in find_straight_order(sf_name).windows:
            key = frozenset(RANK_CHARS.index(ch) for ch in ranks)
            self.suited_windows[key] = (level, RANK_CHARS.index(tb))
        self.run_lengths = frozenset(getattr(rules, "straight_lengths", frozenset()))
        self.chop = bool(getattr(rules, "chop", False))
        self.sf_plus_two = bool(getattr(rules, "straight_flush_plus_two", False))
        # the card no single beats: the 'big 2' a chop may smack down (000 wiki var. 1)
        self.top_single_key = max(self.card_key(c) for c in range(52))

    def rank_value(self, c: int) -> int:
        return self.value[_rank(c)]

    # single-card strength, used by singles, pairs and the highest-card comparison
    def card_key(self, c: int) -> tuple[int, ...]:
        if self.ties:
            return (self.rank_value(c), self.suit_rank[_suit(c)])
        return (self.rank_value(c),)

    def pair_key(self, pair: list[int]) -> tuple[int, ...]:
        v = self.rank_value(pair[0])
        if self.ties:
            return (v, max(self.suit_rank[_suit(c)] for c in pair))
        return (v,)

    def five_type(self, cards: list[int], ranks: list[int] | None = None) -> FiveKind | None:
        if ranks is None:
            ranks = [_rank(c) for c in cards]
        allowed = self.level
        distinct = frozenset(ranks)
        if len(distinct) == 5:
            suited = len({c & 3 for c in cards}) == 1
            if suited and distinct in self.suited_windows:
                if FiveKind.ROYAL_FLUSH in allowed and set(ranks) == set(range(TEN, ACE + 1)):
                    return FiveKind.ROYAL_FLUSH
                if FiveKind.STRAIGHT_FLUSH in allowed:
                    return FiveKind.STRAIGHT_FLUSH
                options = [k for k in (FiveKind.FLUSH, FiveKind.STRAIGHT) if k in allowed]
                if not options:
                    return None
                return max(options, key=lambda k: allowed[k])
            if not suited and distinct in self.windows:
                return FiveKind.STRAIGHT if FiveKind.STRAIGHT in allowed else None
            if suited:
                return FiveKind.FLUSH if FiveKind.FLUSH in allowed else None
            return None
        counts = Counter(ranks)
        shape = sorted(counts.values(), reverse=True)
        if shape == [4, 1]:
            return FiveKind.FOUR_OF_A_KIND if FiveKind.FOUR_OF_A_KIND in allowed else None
        if shape == [3, 2]:
            return FiveKind.FULL_HOUSE if FiveKind.FULL_HOUSE in allowed else None
        if shape == [3, 1, 1]:
            return FiveKind.TRIPLE_JUNK if FiveKind.TRIPLE_JUNK in allowed else None
        if shape == [2, 2, 1]:
            lo, hi = sorted(self.value[r] for r, n in counts.items() if n == 2)
            if FiveKind.SISTERS in allowed:
                return FiveKind.SISTERS if hi == lo + 1 else None
            if FiveKind.TWO_PAIR in allowed:
                return FiveKind.TWO_PAIR
        return None

    def five_inner(self, kind: FiveKind, cards: list[int]) -> tuple[int, ...]:
        ranks = [_rank(c) for c in cards]
        counts = Counter(ranks)
        if kind in (FiveKind.STRAIGHT, FiveKind.STRAIGHT_FLUSH, FiveKind.ROYAL_FLUSH):
            windows = self.windows if kind is FiveKind.STRAIGHT else self.suited_windows
            level, tb = windows[frozenset(ranks)]
            if not self.ties:
                return (level,)
            (tb_card,) = [c for c in cards if _rank(c) == tb]
            return (level, self.suit_rank[_suit(tb_card)])
        if kind is FiveKind.FLUSH:
            desc = tuple(sorted((self.value[r] for r in ranks), reverse=True))
            s = (self.suit_rank[_suit(cards[0])],) if self.ties else ()
            fc = self.rules.flush_compare
            if fc is FlushCompare.SUIT_FIRST:
                return s + desc
            if fc is FlushCompare.TOP_CARD:
                return (desc[0], *s)
            return desc + s  # POKER
        if kind in (FiveKind.FULL_HOUSE, FiveKind.TRIPLE_JUNK):
            return (next(self.value[r] for r, n in counts.items() if n == 3),)
        if kind is FiveKind.FOUR_OF_A_KIND:
            return (next(self.value[r] for r, n in counts.items() if n == 4),)
        # two pair / sisters: the higher pair decides
        return self.higher_pair_key(cards)

    def higher_pair_key(self, cards: list[int]) -> tuple[int, ...]:
        counts = Counter(_rank(c) for c in cards)
        hi = max((r for r, n in counts.items() if n == 2), key=lambda r: self.value[r])
        return self.pair_key([c for c in cards if _rank(c) == hi])

    def sf_plus_two_key(self, cards: list[int]) -> tuple[int, ...] | None:
        """000 'a straight flush is played with any two extra cards': the best straight flush
        among the seven cards decides (as straight flushes compare: sequence, then suit)."""
        best: tuple[int, ...] | None = None
        for suit in range(4):
            ranks = frozenset(_rank(c) for c in cards if _suit(c) == suit)
            for window, (level, _tb) in self.suited_windows.items():
                if window <= ranks:
                    key = (level, self.suit_rank[suit]) if self.ties else (level,)
                    if best is None or key > best:
                        best = key
        return best

    def classify(self, cards: list[int]) -> Classified | None:
        n = len(cards)
        if n == 0 or len(set(cards)) != n:
            return None
        ranks = [c >> 2 for c in cards]
        one_rank = len(set(ranks)) == 1
        rules = self.rules
        if n == 1:
            return (1, self.card_key(cards[0]), None)
        if n == 2:
            return (2, self.pair_key(cards), None) if one_rank else None
        if n == 3 and one_rank:
            return (3, (self.value[ranks[0]],), None) if rules.triples else None
        if n == 4 and one_rank and (rules.four_card is not FourCard.NONE or self.chop):
            return (4, (1, self.value[ranks[0]]), None)
        if (
            n == 4
            and rules.four_card is FourCard.QUADS_AND_TWO_PAIRS
            and sorted(Counter(ranks).values()) == [2, 2]
        ):
            return (4, (0, *self.higher_pair_key(cards)), None)
        if n == 5:
            kind = self.five_type(cards, ranks)
            if kind is None:
                return None
            if rules.five_card_compare is FiveCompare.HIGHEST_CARD:
                top = max(cards, key=lambda c: (self.rank_value(c), self.suit_rank[_suit(c)]))
                return (5, self.card_key(top), kind)
            return (5, (self.level[kind], *self.five_inner(kind, cards)), kind)
        if n == 13 and rules.dragon_play and sorted(ranks) == list(range(13)):
            (two,) = [c for c in cards if _rank(c) == 12]
            return (13, (self.suit_rank[_suit(two)],) if self.ties else (), None)
        if n == 7 and self.sf_plus_two:
            key = self.sf_plus_two_key(cards)
            if key is not None:
                return (SF_PLUS_TWO, key, None)
        distinct = sorted(set(ranks))
        # 000 wiki var. 8 'straights longer than five cards, or even as short as three': n
        # consecutive ranks from three to ace, compared by the top card
        if (
            n in self.run_lengths
            and len(distinct) == n
            and distinct == list(range(distinct[0], distinct[0] + n))
            and distinct[-1] <= ACE
        ):
            top = max(cards, key=_rank)
            return (("run", n), self.card_key(top), None)
        # 000 wiki var. 1: a run of at least three pairs (threes to aces) may chop a single 2
        if (
            self.chop
            and n >= 6
            and n % 2 == 0
            and all(k == 2 for k in Counter(ranks).values())
            and len(distinct) == n // 2
            and distinct == list(range(distinct[0], distinct[0] + n // 2))
            and distinct[-1] <= ACE
        ):
            top = distinct[-1]
            return (("pairs", n // 2), self.pair_key([c for c in cards if _rank(c) == top]), None)
        return None

    def leads(self, c: Classified) -> bool:
        """Whether a play may be led (a chop only answers a single two)."""
        kind = c[0]
        if isinstance(kind, tuple) and kind[0] == "pairs":
            return False
        return not (kind == 4 and self.rules.four_card is FourCard.NONE)

    def beats(self, a: Classified | None, b: Classified | None) -> bool:
        if a is None:
            return False
        if b is None:
            return self.leads(a)
        kind_a, key_a, five_a = a
        kind_b, key_b, five_b = b
        bombs = self.rules.bomb_kinds
        if kind_a == SF_PLUS_TWO and kind_b != SF_PLUS_TWO:
            # 000 'a straight flush plus two is only beaten by a higher straight flush plus
            # two' and beats 'any single card or other combination'
            return True
        if self.chop and kind_b == 1 and key_b == self.top_single_key and _is_chop(kind_a, key_a):
            return True  # 000 wiki var. 1: a smack-down on the single 'big 2'
        if kind_a == kind_b:
            # a bomb on a five-card hand of another, non-bomb type (000:106 'Four of a kind or
            # a straight flush can be played out of turn to beat any combination')
            if (
                kind_a == 5
                and 5 in self.rules.bomb_targets
                and five_a in bombs
                and five_b not in bombs
            ):
                return True
            if (
                kind_a == 5
                and self.rules.five_card_compare is FiveCompare.SAME_TYPE_ONLY
                and five_a is not five_b
            ):
                return False
            return key_a > key_b
        return kind_a == 5 and five_a in bombs and kind_b in self.rules.bomb_targets


def _is_chop(kind: Kind, key: tuple[int, ...]) -> bool:
    """Four of a kind alone, or a run of pairs (000 wiki var. 1 'smack-down')."""
    if kind == 4:
        return key[0] == 1
    return isinstance(kind, tuple) and kind[0] == "pairs"


_CACHE: dict[tuple[RuleSet, bool], _Ref] = {}


def _ref(rules: RuleSet, twos_low: bool = False) -> _Ref:
    r = _CACHE.get((rules, twos_low))
    if r is None:
        r = _CACHE[rules, twos_low] = _Ref(rules, twos_low)
    return r


def reference_classify(
    cards: Iterable[int] | int, rules: RuleSet, twos_low: bool = False
) -> Classified | None:
    """``(kind, key, five_type)`` of a set of cards, or None if it is no play.

    ``kind`` is the number of cards (or a tuple for the rarer plays, see :data:`Kind`); keys of
    the same kind compare as tuples (for five-card hands under ``same-type-only`` only keys of
    the same ``five_type`` are comparable).  ``twos_low``: a deal in which a four of a kind
    was dealt under ``twos_low_after_bomb``.
    """
    return _ref(rules, twos_low).classify(_as_cards(cards))


def reference_beats(
    a: Iterable[int] | int,
    b: Iterable[int] | int | None,
    rules: RuleSet,
    twos_low: bool = False,
) -> bool:
    """Whether the cards ``a`` may be played on ``b`` (None: an empty table)."""
    r = _ref(rules, twos_low)
    ca = r.classify(_as_cards(a))
    if b is None:
        return ca is not None and r.leads(ca)
    cb = r.classify(_as_cards(b))
    assert cb is not None, "the table must hold a play"
    return r.beats(ca, cb)


def reference_plays(
    hand: Iterable[int] | int, rules: RuleSet, twos_low: bool = False
) -> dict[frozenset[int], Classified]:
    """Every subset of the hand that is a play, with its classification: all subsets of 1 to
    5 cards, and of the other sizes the rule set has plays of (13 for dragons, 7 for straight
    flushes with two, the extra sequence lengths, 6, 8, ... for runs of pairs)."""
    r = _ref(rules, twos_low)
    cards = _as_cards(hand)
    sizes = {1, 2, 3, 4, 5}
    if rules.dragon_play:
        sizes.add(13)
    if r.sf_plus_two:
        sizes.add(7)
    sizes |= r.run_lengths
    if r.chop:
        sizes |= set(range(6, 25, 2))
    out: dict[frozenset[int], Classified] = {}
    for k in sorted(sizes):
        if k > len(cards):
            break
        if k > 5 and not _may_hold(r, cards, k):
            continue
        for sub in combinations(cards, k):
            c = r.classify(list(sub))
            if c is not None:
                out[frozenset(sub)] = c
    return out


def _may_hold(r: _Ref, cards: list[int], k: int) -> bool:
    """Cheap necessary condition for a play of ``k`` > 5 cards in ``cards`` (only to skip
    hopeless subset sizes; every subset of a size that passes is still enumerated)."""
    counts = Counter(_rank(c) for c in cards)
    if k == 13:
        return len(counts) == 13
    if k == 7 and r.sf_plus_two:
        return True
    if k in r.run_lengths:
        return len([x for x in counts if x <= ACE]) >= k
    # a run of k/2 pairs
    return len([x for x, m in counts.items() if m >= 2 and x <= ACE]) >= k // 2


def reference_legal(
    hand: Iterable[int] | int,
    table: Iterable[int] | int | None,
    rules: RuleSet,
    twos_low: bool = False,
) -> set[frozenset[int]]:
    """Every play of ``hand`` allowed on ``table`` (None: leading), as sets of cards."""
    r = _ref(rules, twos_low)
    plays = reference_plays(hand, rules, twos_low)
    tb = None if table is None else r.classify(_as_cards(table))
    assert table is None or tb is not None, "the table must hold a play"
    return {p for p, c in plays.items() if r.beats(c, tb)}


def as_mask(cards: Iterable[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def reference_beats_classified(
    rules: RuleSet, a: Classified | None, b: Classified | None, twos_low: bool = False
) -> bool:
    """:func:`reference_beats` on two results of :func:`reference_classify` (b None: lead)."""
    return _ref(rules, twos_low).beats(a, b)
