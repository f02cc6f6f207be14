"""Generate every play a hand can make, on an empty table or against a play on the table.

The generator enumerates plays by structure (ranks with two or more cards give pairs, rank
windows that are all present give sequences, a suit with five or more cards gives flushes, ...)
so it never looks at a subset that cannot be a play.  Each structure produces disjoint plays,
so the lists are duplicate-free by construction; the tests check that against a slow
brute-force enumeration over all subsets.

Plays are card masks (ints); keys follow :mod:`referee.game.compiled`.  Two entry points serve
both the stateless case and a deal that keeps, per seat, the keyed five-card plays of the hand
it was dealt: a play of a smaller hand is a play of the bigger one, so that list filtered by
"is a subset of the hand now" is the complete list for the hand now (``fives=`` arguments).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence, Set
from itertools import combinations

from .bits import (
    ONES,
    card_bits,
    lowest_suit,
    rank_counts,
    rank_indices,
    ranks_held,
    ranks_paired,
    ranks_quadrupled,
    ranks_tripled,
)
from .cards import Mask
from .compiled import (
    KIND_PAIR_RUN,
    KIND_RUN,
    KIND_SF_PLUS_TWO,
    OtherRanks,
    Tables,
    WindowRecord,
    five_key,
    five_level,
)
from .rules import FiveCompare, FourCard

Keyed = list[tuple[int, Mask]]
"""Five-card plays as ``(key, mask)`` pairs sorted by key."""

_TOP = 1 << 256
_NO_PATTERNS: frozenset[int] = frozenset()


# --- five-card structures (each returns disjoint groups of plays) ---------------------------
#
# A hand is first split into its four suit patterns ``h >> s & ONES`` (bit 4r: the hand holds
# rank r in suit s).  Their OR is the ranks present, their sum the per-rank counts, and dict
# look-ups keyed by rank patterns (``Tables.rank_list``, ``Tables.windows_in``) stand in for bit
# loops.  Every Python operation costs a few hundred machine instructions whatever it does, so
# these functions are written to do few of them per hand.


def _long_suits(suits: tuple[int, int, int, int]) -> list[tuple[int, int, int]]:
    """``(suit, rank pattern, count)`` of the suits with five cards or more (flushes and
    straight flushes live only there)."""
    a, b, c, d = suits
    out = []  # unrolled: a loop over the suits costs more than the work
    if (k := a.bit_count()) >= 5:
        out.append((0, a, k))
    if (k := b.bit_count()) >= 5:
        out.append((1, b, k))
    if (k := c.bit_count()) >= 5:
        out.append((2, c, k))
    if (k := d.bit_count()) >= 5:
        out.append((3, d, k))
    return out


def _other_ranks(h: Mask, others: OtherRanks) -> tuple[Sequence[int], Sequence[int]]:
    """How ``h`` covers a window's ranks other than the tie-break rank, as two factors: every
    way is one choice of the first OR-ed with one of the second (no list of the ways is built:
    callers fold the factors into the comprehension that makes the plays)."""
    s1, m1, t1, s2, m2, t2, more = others
    second: Sequence[int] = t2[(h >> s2) & m2]
    for sh, mask, table in more:  # windows whose other ranks are not two adjacent pairs
        second = [x | c for x in second for c in table[(h >> sh) & mask]]
    return t1[(h >> s1) & m1], second


def _window_plays(h: Mask, w: WindowRecord) -> list[Mask]:
    """The sequences of one window that ``h`` completes."""
    _, _, tbs, tb_cards, others = w
    first, second = _other_ranks(h, others)
    return [card | b | c for card, _ in tb_cards[(h >> tbs) & 15] for b in first for c in second]


def _same_suit_windows(t: Tables, long_suits: list[tuple[int, int, int]]) -> set[int]:
    """Patterns of the windows the hand completes within one suit (straight flushes)."""
    wi = t.windows_in
    return {w[0] for _, p, _ in long_suits for w in wi[p]}


def _flush_patterns(t: Tables, p: int, k: int) -> list[int]:
    """Rank patterns of the flushes in a suit holding the ``k`` ranks of ``p`` (k > 5): its
    five-rank subsets that are not a straight flush."""
    rb = t.rank_bits[p]
    if k == 6:
        fl = [p ^ b for b in rb]
    elif k == 7:
        fl = [p ^ a ^ b for a, b in combinations(rb, 2)]
    else:
        fl = [a | b | c | d | e for a, b, c, d, e in combinations(rb, 5)]
    win = t.suited_window_of
    return [m for m in fl if m not in win]


def _full_houses(h: Mask, t: Tables, ge3: int) -> list[tuple[int, tuple[int, ...], list[int]]]:
    """``(rank, triples, pairs)``: each triple of the rank with each pair of another rank is a
    full house (the pairs by byte look-ups over the hand without the triple's rank)."""
    out = []
    pc, tr = t.pair_chunks, t.triples
    for r in t.rank_list[ge3]:
        b0, b1, b2, b3, b4, b5, b6 = (h & t.other_ranks[r]).to_bytes(7, "little")
        prs = [*pc[0][b0], *pc[1][b1], *pc[2][b2], *pc[3][b3], *pc[4][b4], *pc[5][b5], *pc[6][b6]]
        if prs:
            out.append((r, tr[r << 4 | (h >> (r << 2)) & 15], prs))
    return out


def _quads(h: Mask, t: Tables, ge4: int) -> list[tuple[int, list[int]]]:
    """``(rank, plays)``: four of a kind with any fifth card."""
    out = []
    for r in t.rank_list[ge4]:
        q = 15 << (r << 2)
        out.append((r, [q | c for c in single_cards(h ^ q, t)]))
    return out


def single_cards(m: Mask, t: Tables) -> list[Mask]:
    """The single-card masks of ``m``, lowest first: bit tricks for up to three cards, byte
    look-ups for more (the bytes of ``m`` index per-byte tables of pre-shifted cards)."""
    n = m.bit_count()
    if n > 3:
        bc = t.bit_chunks
        b0, b1, b2, b3, b4, b5, b6 = m.to_bytes(7, "little")
        return [*bc[0][b0], *bc[1][b1], *bc[2][b2], *bc[3][b3], *bc[4][b4], *bc[5][b5], *bc[6][b6]]
    if n < 2:
        return [m] if m else []
    low = m & -m  # the lowest card
    rest = m ^ low
    if n == 2:
        return [low, rest]
    mid = rest & -rest
    return [low, mid, rest ^ mid]


def _extras(h: Mask, t: Tables, cnt: int) -> Keyed:
    """Keyed two-pair, sisters and three-of-a-kind hands (rare house rules)."""
    out: Keyed = []
    ge2 = ranks_paired(cnt)
    ge3 = ranks_tripled(cnt)
    for lv, consecutive in ((t.lv_twopair, False), (t.lv_sisters, True)):
        if lv < 0:
            continue
        base = five_key(lv, 0)
        prk = sorted(rank_indices(ge2), key=t.rv.__getitem__)  # low to high in this deal's order
        for i, lo in enumerate(prk):
            for hi in prk[i + 1 :]:
                if consecutive and t.rv[hi] != t.rv[lo] + 1:
                    continue
                junk = card_bits(h & ~(15 << (lo << 2)) & ~(15 << (hi << 2)))
                for ph, kh in t.pairs[hi << 4 | (h >> (hi << 2)) & 15]:
                    for pl in t.pair_masks[lo << 4 | (h >> (lo << 2)) & 15]:
                        out += [(base | kh, ph | pl | j) for j in junk]
    if t.lv_triplejunk >= 0:
        base = five_key(t.lv_triplejunk, 0)
        for r in rank_indices(ge3):
            others = card_bits(h & ~(15 << (r << 2)))
            pairs_of_junk = [
                a | b
                for i, a in enumerate(others)
                for b in others[i + 1 :]
                if (a.bit_length() - 1) >> 2 != (b.bit_length() - 1) >> 2
            ]
            for tm in t.triples[r << 4 | (h >> (r << 2)) & 15]:
                out += [(base | t.rv[r], tm | j) for j in pairs_of_junk]
    return out


def five_card_keyed(h: Mask, t: Tables) -> Keyed:
    """All five-card plays of ``h`` as ``(key, mask)``, sorted by key.

    The key is :func:`~referee.game.compiled.five_key` whatever ``five_card_compare`` says;
    callers comparing by highest card use :meth:`Tables.top_power` instead.
    """
    out = _five_card_plays(h, t)
    out.sort()
    return out


def _five_card_plays(h: Mask, t: Tables) -> Keyed:
    """All five-card plays of ``h`` as ``(key, mask)``, grouped by structure (sequences,
    flushes, full houses, four of a kind, the rarer types), unsorted."""
    if not t.any_five or h.bit_count() < 5:
        return []
    suits = a, b, c, d = h & ONES, h >> 1 & ONES, h >> 2 & ONES, h >> 3 & ONES
    long_suits = _long_suits(suits)
    out: Keyed = []
    wins = t.windows_in[a | b | c | d]
    if t.sf_split:
        _keyed_split_sequences(h, t, wins, long_suits, out)
    elif wins and t.seq_any:
        _keyed_sequences(h, t, wins, long_suits, out)
    if long_suits and t.lv_flush >= 0:
        _keyed_flushes(t, long_suits, out)
    cnt = a + b + c + d
    ge3 = ranks_tripled(cnt)
    if ge3:
        rv = t.rv
        if t.lv_full >= 0:
            base = five_key(t.lv_full, 0)
            for r, trs, prs in _full_houses(h, t, ge3):
                key = base | rv[r]
                out += [(key, x | y) for x in trs for y in prs]
        ge4 = ranks_quadrupled(cnt)
        if ge4 and t.lv_quads >= 0:
            base = five_key(t.lv_quads, 0)
            for r, plays in _quads(h, t, ge4):
                key = base | rv[r]
                out += [(key, m) for m in plays]
    if t.extra_five_levels:
        out += _extras(h, t, cnt)
    return out


def _keyed_sequences(
    h: Mask,
    t: Tables,
    wins: tuple[WindowRecord, ...],
    long_suits: list[tuple[int, int, int]],
    out: Keyed,
) -> None:
    """Append the keyed sequences of ``h`` in windows ``wins`` (the windows its ranks complete:
    straights and same-suit sequences) to ``out``."""
    same_suit: Set[int] = _NO_PATTERNS
    for _, p, _ in long_suits:
        if t.windows_in[p]:  # a sequence within one suit (rare)
            same_suit = _same_suit_windows(t, long_suits)
            break
    for w in wins:
        pattern, base, tbs, tb_cards, others = w
        if pattern in same_suit:
            out += _keyed_same_suit_window(t, pattern, _window_plays(h, w))
        elif base >= 0:
            s1, m1, t1, s2, m2, t2, more = others
            if more:
                first, second = _other_ranks(h, others)
            else:  # what _other_ranks does, inline for the usual two factors
                first, second = t1[(h >> s1) & m1], t2[(h >> s2) & m2]
            tb = tb_cards[(h >> tbs) & 15]
            out += [(k, card | b | c) for card, k in tb for b in first for c in second]


def _keyed_split_sequences(
    h: Mask,
    t: Tables,
    wins: tuple[WindowRecord, ...],
    long_suits: list[tuple[int, int, int]],
    out: Keyed,
) -> None:
    """Append keyed straights and straight flushes when straight flushes follow their own
    sequence order (``straight_flushes``): straights come from the straight windows without
    their one-suit plays, straight flushes from the straight-flush windows of each long suit
    (a one-suit run that is no straight flush is a flush, listed by the flush generator)."""
    if t.lv_straight >= 0:
        suited = {w[0] for _, p, _ in long_suits for w in t.windows_in[p]}
        sm = t.suit_masks
        for w in wins:
            plays = _window_plays(h, w)
            if w[0] in suited:
                plays = [m for m in plays if m & sm[lowest_suit(m)] != m]
            out += [(t.straight_key(m, w[0]), m) for m in plays]
    for s, p, _ in long_suits:
        for pattern in t.suited_windows_in[p]:
            key = t.same_suit_key(pattern, s)
            if key >= 0:
                out.append((key, pattern << s))


def _keyed_same_suit_window(t: Tables, pattern: int, plays: list[int]) -> Keyed:
    """Keys of a window's plays when some of them lie in one suit (rare: checked per play)."""
    out: Keyed = []
    sm = t.suit_masks
    straights = t.lv_straight >= 0
    for m in plays:
        s = lowest_suit(m)
        if m & sm[s] == m:
            key = t.same_suit_key(pattern, s)
            if key >= 0:
                out.append((key, m))
        elif straights:
            out.append((t.straight_key(m, pattern), m))
    return out


def _keyed_flushes(t: Tables, long_suits: list[tuple[int, int, int]], out: Keyed) -> None:
    """Append the keyed flushes to ``out``."""
    for s, p, k in long_suits:
        if k == 5:  # the usual case: the suit is the flush, unless it is a sequence
            if p not in t.suited_window_of:
                out.append((t.flush_key(p, s), p << s))
            continue
        key = t.flush_key
        out += [(key(f, s), f << s) for f in _flush_patterns(t, p, k)]


def select_fives(keyed: Keyed, h: Mask, t: Tables, key: int) -> list[Mask]:
    """Plays from ``keyed`` that lie in hand ``h`` and beat a five-card play of ``key``."""
    fc = t.five_compare
    if fc is FiveCompare.HIGHEST_CARD:
        return [m for _, m in keyed if m & h == m and t.top_power(m) > key]
    i = bisect_right(keyed, (key, _TOP))
    if fc is FiveCompare.SAME_TYPE_ONLY:
        limit = five_key(five_level(key) + 1, 0)
        return [m for k, m in keyed[i:] if k < limit and m & h == m]
    return [m for _, m in keyed[i:] if m & h == m]


def keyed_bombs(keyed: Keyed, h: Mask, t: Tables) -> Keyed:
    """``(key, mask)`` of the plays from ``keyed`` in hand ``h`` whose type may bomb."""
    if t.bomb_floor >= 0:
        # The bomb types are the top levels: their plays end the key-sorted list.
        i = bisect_left(keyed, (five_key(t.bomb_floor, 0),))
        return [(k, m) for k, m in keyed[i:] if m & h == m] if i < len(keyed) else []
    lv = t.bomb_levels
    return [(k, m) for k, m in keyed if five_level(k) in lv and m & h == m]


def bombs(keyed: Keyed, h: Mask, t: Tables) -> list[Mask]:
    """Plays from ``keyed`` in hand ``h`` whose type may bomb a smaller play."""
    return [m for _, m in keyed_bombs(keyed, h, t)]


# --- other sizes ------------------------------------------------------------------------------


def dragon_plays(h: Mask, t: Tables, kmin: int = -1) -> list[Mask]:
    """Thirteen-card sequences 3..2 (``dragon_play``); key = suit rank of the two."""
    cnt = rank_counts(h)
    if ranks_held(cnt) != ONES:
        return []
    plays = [0]
    for r in range(13):
        opts = t.singles[r << 4 | (h >> (r << 2)) & 15]
        plays = [p | o for p in plays for o in opts]
    if kmin < 0:
        return plays
    return [p for p in plays if dragon_key(p, t) > kmin]


def dragon_key(m: Mask, t: Tables) -> int:
    if not t.rules.suits_break_ties:
        return 0
    return t.suit_rank[t.nibble_suit[(m >> 48) & 15]]


def _four_card_plays(h: Mask, t: Tables, cnt: int, kmin: int) -> list[Mask]:
    """Four-card plays: quads (key 64 + rank) and, if allowed, two pairs (key of high pair)."""
    out = [15 << (r << 2) for r in rank_indices(ranks_quadrupled(cnt)) if 64 + t.rv[r] > kmin]
    if t.four_card is FourCard.QUADS_AND_TWO_PAIRS:
        out += _two_pairs(h, t, cnt, kmin)
    return out


def _two_pairs(h: Mask, t: Tables, cnt: int, kmin: int) -> list[Mask]:
    """Two pairs as a four-card play, keyed by the higher pair."""
    out = []
    prk = sorted(rank_indices(ranks_paired(cnt)), key=t.rv.__getitem__)
    for i, lo in enumerate(prk):
        low_pairs = t.pair_masks[lo << 4 | (h >> (lo << 2)) & 15]
        for hi in prk[i + 1 :]:
            for ph, kh in t.pairs[hi << 4 | (h >> (hi << 2)) & 15]:
                if kh > kmin:
                    out += [ph | pl for pl in low_pairs]
    return out


def _beating_pairs(h: Mask, t: Tables, key: int) -> list[Mask]:
    """Pairs that beat a pair of ``key``: the same rank's pairs with a higher key, then every
    pair of a higher rank (byte look-ups over the hand's cards of higher ranks)."""
    v = key >> 2  # rank value of the pair on the table
    same = t.better_pairs[key][(h >> (t.rank_of_value[v] << 2)) & 15]
    pc = t.pair_chunks
    b0, b1, b2, b3, b4, b5, b6 = (h & t.ranks_above[v]).to_bytes(7, "little")
    out = [*same, *pc[0][b0], *pc[1][b1], *pc[2][b2], *pc[3][b3], *pc[4][b4], *pc[5][b5]]
    out += pc[6][b6]
    return out


# --- rarer plays: seven-card straight flushes, chops, sequences of other lengths ---------


def sf_plus_two(h: Mask, t: Tables) -> dict[int, int]:
    """``{mask: key}`` of straight flushes with two extra cards; a seven-card set holding
    more than one straight flush takes the key of the best."""
    out: dict[int, int] = {}
    if h.bit_count() < 7:
        return out
    for s in (0, 1, 2, 3):
        for pattern in t.suited_windows_in[(h >> s) & ONES]:  # the windows complete in suit s
            sf = pattern << s
            key = t.suited_inner(pattern, s)
            for a, b in combinations(card_bits(h & ~sf), 2):
                m = sf | a | b
                if out.get(m, -1) < key:
                    out[m] = key
    return out


def sf_plus_two_key(m: Mask, t: Tables) -> int:
    """Key of a seven-card play, or -1 if it holds no straight flush."""
    best = -1
    for pattern, _level, _tb, _rk in t.suited_windows:
        for s in (0, 1, 2, 3):
            if (m >> s) & pattern == pattern:
                best = max(best, t.suited_inner(pattern, s))
    return best


def pair_runs(h: Mask, t: Tables) -> list[tuple[int, int, int]]:
    """``(kind, key, mask)`` of runs of three or more consecutive pairs, threes to aces."""
    out: list[tuple[int, int, int]] = []
    cnt = rank_counts(h)
    ge2 = ranks_paired(cnt)
    pairs_by_rank = {r: t.pairs[r << 4 | (h >> (r << 2)) & 15] for r in rank_indices(ge2) if r < 12}
    for lo in range(12):
        runs: list[tuple[int, int]] = [(0, 0)]
        r = lo
        while r in pairs_by_rank:
            runs = [(m | pm, pk) for m, _ in runs for pm, pk in pairs_by_rank[r]]
            n = r - lo + 1
            if n >= 3:
                out += [(KIND_PAIR_RUN + n, k, m) for m, k in runs]
            r += 1
    return out


def sequence_runs(h: Mask, t: Tables, n: int) -> list[tuple[int, int]]:
    """``(key, mask)`` of sequences of ``n`` consecutive ranks, threes to aces (key: the power
    of the top card)."""
    out = []
    cnt = rank_counts(h)
    ge1 = ranks_held(cnt)
    sg = t.singles
    power = t.power
    for pattern, ranks in t.runs[n]:
        if ge1 & pattern != pattern:
            continue
        plays = [0]
        for r in ranks:
            opts = sg[r << 4 | (h >> (r << 2)) & 15]
            plays = [p | o for p in plays for o in opts]
        top = ranks[-1] << 2
        out += [(power[(p >> top & 15).bit_length() - 1 + top], p) for p in plays]
    return out


def _rare_leads(h: Mask, t: Tables) -> list[Mask]:
    out: list[int] = []
    if t.sf_plus_two:
        out += sf_plus_two(h, t)
    for n in t.run_lengths:
        out += [m for _, m in sequence_runs(h, t, n)]
    return out


def _rare_answers(h: Mask, t: Tables, kind: int, key: int) -> list[Mask]:
    """Answers that exist only under the rarer options (added to the ordinary answers)."""
    out: list[int] = []
    if t.chop:
        if kind == 1 and key == t.max_power:
            cnt = rank_counts(h)
            out += [15 << (r << 2) for r in rank_indices(ranks_quadrupled(cnt))]
            out += [m for _, _, m in pair_runs(h, t)]
        elif KIND_PAIR_RUN < kind < KIND_RUN:
            out += [m for k2, k, m in pair_runs(h, t) if k2 == kind and k > key]
    if kind >= KIND_RUN:
        out += [m for k, m in sequence_runs(h, t, kind - KIND_RUN) if k > key]
    if t.sf_plus_two:
        if kind == KIND_SF_PLUS_TWO:
            out += [m for m, k in sf_plus_two(h, t).items() if k > key]
        else:
            out += sf_plus_two(h, t)
    return out


# --- entry points ---------------------------------------------------------------------------


def leading_plays(h: Mask, t: Tables, fives: Keyed | None = None) -> list[Mask]:
    """Every play allowed on an empty table.

    ``fives``: keyed five-card plays of a superset of ``h`` (a deal's per-seat list).
    """
    c = t.small_chunks
    # The bytes of the hand index the per-byte tables (cheaper than shifting the hand).
    b0, b1, b2, b3, b4, b5, b6 = h.to_bytes(7, "little")
    out = [*c[0][b0], *c[1][b1], *c[2][b2], *c[3][b3], *c[4][b4], *c[5][b5], *c[6][b6]]
    if t.two_pair_fours:
        out += _two_pairs(h, t, rank_counts(h), -1)
    if fives is None:  # a lead needs no key order: the plays as generated
        out += [m for _, m in _five_card_plays(h, t)]
    elif fives:
        out += [m for _, m in fives if m & h == m]
    if t.rare_leads:
        if t.dragon_play and h.bit_count() >= 13:
            out += dragon_plays(h, t)
        if t.sf_plus_two or t.run_lengths:
            out = list(dict.fromkeys(out + _rare_leads(h, t)))
    return out


def beating_plays(
    h: Mask, t: Tables, kind: int, key: int, fives: Keyed | None = None
) -> list[Mask]:
    """Every play that beats a play of ``kind`` (its size) and ``key`` on the table."""
    if kind == 1:
        out = single_cards(h & t.above[key], t)
    elif kind == 5:
        if fives is None:
            fives = five_card_keyed(h, t)
        out = select_fives(fives, h, t, key)
        if t.extra_answers:
            if 5 in t.bomb_targets and five_level(key) not in t.bomb_levels:
                out = list(dict.fromkeys(out + bombs(fives, h, t)))
            if t.sf_plus_two:
                out += sf_plus_two(h, t)
        return out
    elif kind == 2:
        out = _beating_pairs(h, t, key)
    elif kind == 3:
        out = []
        if t.triples_on:
            cnt = rank_counts(h)
            for r in rank_indices(ranks_tripled(cnt)):
                if t.rv[r] > key:
                    out += t.triples[r << 4 | (h >> (r << 2)) & 15]
    elif kind == 4:
        out = _four_card_plays(h, t, rank_counts(h), key)
    elif kind == 13:
        out = dragon_plays(h, t, key)
    elif kind == KIND_SF_PLUS_TWO or kind > KIND_PAIR_RUN:
        out = []
    else:
        raise ValueError(f"no play is of kind {kind}")
    if not t.extra_answers:
        return out
    if kind in t.bomb_targets and h.bit_count() >= 5:
        out += bombs(fives if fives is not None else five_card_keyed(h, t), h, t)
    if t.chop or t.sf_plus_two or kind >= KIND_RUN:
        out = list(dict.fromkeys(out + _rare_answers(h, t, kind, key)))
    return out
