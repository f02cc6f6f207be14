"""Generate every play a hand can make, on an empty table or against a play on the table.

The generator enumerates plays by structure (ranks with two or more cards give pairs, rank
windows that are all present give sequences, a suit with five or more cards gives flushes, ...)
so that it never looks at a subset that cannot be a play.  Each structure produces disjoint
plays, so the lists are duplicate-free by construction; the tests check that against a slow
brute-force enumeration over all subsets.

Plays are card masks (ints).  Keys follow :mod:`referee.compiled`.
"""

from __future__ import annotations

from itertools import combinations

from .compiled import ONES, TYPE_SHIFT, Tables, rank_counts
from .rules import FiveCompare, FourCard

NO_LIMIT = 1 << 256
"""Upper key bound meaning "no upper bound"."""


def _bits(m: int) -> list[int]:
    out = []
    while m:
        low = m & -m
        out.append(low)
        m ^= low
    return out


def _ranks(g: int) -> list[int]:
    """Ranks whose indicator bit (bit 4r) is set in ``g``."""
    out = []
    while g:
        low = g & -g
        out.append(low.bit_length() >> 2)
        g ^= low
    return out


def five_card_plays(
    h: int,
    t: Tables,
    cnt: int,
    kmin: int = -1,
    kmax: int = NO_LIMIT,
    only: frozenset[int] | None = None,
) -> list[int]:
    """Five-card plays of hand ``h`` whose key lies in ``(kmin, kmax]``.

    ``cnt`` is ``rank_counts(h)``.  ``only`` restricts to the given type levels (bombs).
    ``kmin = -1`` (leading) skips key computation wherever a whole type qualifies.
    """
    out: list[int] = []
    shift = TYPE_SHIFT

    def wanted(lv: int) -> bool:
        return (
            lv >= 0
            and (only is None or lv in only)
            and ((lv + 1) << shift) > kmin + 1
            and (lv << shift) <= kmax
        )

    def whole(lv: int) -> bool:
        # Every play of this type qualifies: no per-play key needed.
        return (lv << shift) > kmin and ((lv + 1) << shift) - 1 <= kmax

    ge1 = (cnt | cnt >> 1 | cnt >> 2) & ONES
    ge2 = ((cnt >> 1) | (cnt >> 2)) & ONES
    ge3 = ((cnt & (cnt >> 1)) | (cnt >> 2)) & ONES
    singles = t.singles
    sm = t.suit_masks

    # Sequences (straights, straight flushes, royal flushes).
    lv_s = t.lv_straight
    want_s = wanted(lv_s)
    want_ss = any(wanted(lv) for lv in set(t.same_suit_level.values()))
    if want_s or want_ss:
        for pattern, _level, _tb, rk in t.windows:
            if ge1 & pattern != pattern:
                continue
            r0, r1, r2, r3, r4 = rk
            combos = [
                a | b | c | d | e
                for a in singles[r0 << 4 | (h >> (r0 << 2)) & 15]
                for b in singles[r1 << 4 | (h >> (r1 << 2)) & 15]
                for c in singles[r2 << 4 | (h >> (r2 << 2)) & 15]
                for d in singles[r3 << 4 | (h >> (r3 << 2)) & 15]
                for e in singles[r4 << 4 | (h >> (r4 << 2)) & 15]
            ]
            ss_lv = t.same_suit_level[pattern]
            if kmin < 0 and kmax == NO_LIMIT and only is None and lv_s >= 0 and ss_lv >= 0:
                out += combos
                continue
            for m in combos:
                s = (m & -m).bit_length() - 1 & 3
                if m & sm[s] == m:
                    lv = ss_lv
                    if not wanted(lv):
                        continue
                    if whole(lv):
                        out.append(m)
                        continue
                    if t.same_suit_is_flush[pattern]:
                        inner = t.flush_inner(pattern, s)
                    else:
                        inner = t.straight_inner(m, pattern)
                else:
                    if not want_s:
                        continue
                    if whole(lv_s):
                        out.append(m)
                        continue
                    lv = lv_s
                    inner = t.straight_inner(m, pattern)
                key = lv << shift | inner
                if kmin < key <= kmax:
                    out.append(m)

    # Flushes (sequences in one suit were produced above).
    lv_f = t.lv_flush
    if wanted(lv_f):
        all_f = whole(lv_f)
        win = t.window_of
        for s in range(4):
            suited = h & sm[s]
            if suited.bit_count() < 5:
                continue
            fl = [a | b | c | d | e for a, b, c, d, e in combinations(_bits(suited), 5)]
            if all_f:
                out += [m for m in fl if m >> s not in win]
            else:
                base = lv_f << shift
                fi = t.flush_inner
                out += [
                    m for m in fl if m >> s not in win and kmin < (base | fi(m >> s, s)) <= kmax
                ]

    pairs = t.pair_masks
    triples = t.triples
    # Full houses: a triple and a pair of another rank.
    lv_fh = t.lv_full
    if ge3 and wanted(lv_fh):
        pr = [(r, pairs[r << 4 | (h >> (r << 2)) & 15]) for r in _ranks(ge2)]
        base = lv_fh << shift
        for r in _ranks(ge3):
            key = base | r
            if not kmin < key <= kmax:
                continue
            for tm in triples[r << 4 | (h >> (r << 2)) & 15]:
                for r2, ps in pr:
                    if r2 != r:
                        out += [tm | p for p in ps]

    # Four of a kind with any fifth card.
    lv_q = t.lv_quads
    ge4 = (cnt >> 2) & ONES
    if ge4 and wanted(lv_q):
        base = lv_q << shift
        for r in _ranks(ge4):
            if kmin < (base | r) <= kmax:
                q = 15 << (r << 2)
                out += [q | c for c in _bits(h & ~q)]

    # Two pairs and an odd card ("two pair junk"), or consecutive pairs ("sisters").
    for lv, consecutive in ((t.lv_twopair, False), (t.lv_sisters, True)):
        if lv < 0 or not wanted(lv):
            continue
        base = lv << shift
        prk = _ranks(ge2)
        for i, lo in enumerate(prk):
            for hi in prk[i + 1 :]:
                if consecutive and hi != lo + 1:
                    continue
                junk = _bits(h & ~(15 << (lo << 2)) & ~(15 << (hi << 2)))
                for ph, kh in t.pairs[hi << 4 | (h >> (hi << 2)) & 15]:
                    if not kmin < (base | kh) <= kmax:
                        continue
                    for pl in pairs[lo << 4 | (h >> (lo << 2)) & 15]:
                        two = ph | pl
                        out += [two | j for j in junk]

    # Three of a kind with two unmatched cards.
    lv_tj = t.lv_triplejunk
    if ge3 and wanted(lv_tj):
        base = lv_tj << shift
        for r in _ranks(ge3):
            if not kmin < (base | r) <= kmax:
                continue
            rest = h & ~(15 << (r << 2))
            others = _bits(rest)
            for tm in triples[r << 4 | (h >> (r << 2)) & 15]:
                out += [
                    tm | a | b
                    for i, a in enumerate(others)
                    for b in others[i + 1 :]
                    if (a.bit_length() - 1) >> 2 != (b.bit_length() - 1) >> 2
                ]

    return out


def dragon_plays(h: int, t: Tables, kmin: int = -1) -> list[int]:
    """Thirteen-card sequences 3..2 (``dragon_play``); key = suit rank of the two."""
    cnt = rank_counts(h)
    if (cnt | cnt >> 1 | cnt >> 2) & ONES != ONES:
        return []
    plays = [0]
    for r in range(13):
        opts = t.singles[r << 4 | (h >> (r << 2)) & 15]
        plays = [p | o for p in plays for o in opts]
    if kmin < 0:
        return plays
    return [p for p in plays if dragon_key(p, t) > kmin]


def dragon_key(m: int, t: Tables) -> int:
    if not t.rules.suits_break_ties:
        return 0
    return t.suit_rank[t.nibble_suit[(m >> 48) & 15]]


def leading_plays(h: int, t: Tables) -> list[int]:
    """Every play allowed on an empty table."""
    c = t.small_chunks
    out = [
        *c[0][h & 255],
        *c[1][h >> 8 & 255],
        *c[2][h >> 16 & 255],
        *c[3][h >> 24 & 255],
        *c[4][h >> 32 & 255],
        *c[5][h >> 40 & 255],
        *c[6][h >> 48],
    ]
    if t.four_card is FourCard.QUADS_AND_TWO_PAIRS:
        out += [
            m
            for m in _four_card_plays(h, t, rank_counts(h), -1)
            if m.bit_count() == 4 and m not in out
        ]
    if t.any_five and h.bit_count() >= 5:
        out += five_card_leads(h, t)
    if t.dragon_play and h.bit_count() >= 13:
        out += dragon_plays(h, t)
    return out


def five_card_leads(h: int, t: Tables) -> list[int]:
    """All five-card plays of ``h`` (no key filtering): the leading case, kept lean.

    Valid for every rule set: where sequences in one suit are not a play of their own
    (``seq_all`` false) it defers to the general :func:`five_card_plays`.
    """
    cnt = rank_counts(h)
    if not t.seq_all:
        return five_card_plays(h, t, cnt)
    out: list[int] = []
    ge1 = (cnt | cnt >> 1 | cnt >> 2) & ONES
    sg = t.singles
    for pattern, offs in t.window_offsets:
        if ge1 & pattern == pattern:
            (s0, b0), (s1, b1), (s2, b2), (s3, b3), (s4, b4) = offs
            out += [
                a | b | c | d | e
                for a in sg[b0 | (h >> s0) & 15]
                for b in sg[b1 | (h >> s1) & 15]
                for c in sg[b2 | (h >> s2) & 15]
                for d in sg[b3 | (h >> s3) & 15]
                for e in sg[b4 | (h >> s4) & 15]
            ]
    if t.lv_flush >= 0:
        win = t.window_of
        sm = t.suit_masks
        for s in (0, 1, 2, 3):
            suited = h & sm[s]
            if suited.bit_count() >= 5:
                out += [
                    m
                    for m in (a | b | c | d | e for a, b, c, d, e in combinations(_bits(suited), 5))
                    if m >> s not in win
                ]
    ge3 = ((cnt & (cnt >> 1)) | (cnt >> 2)) & ONES
    if ge3:
        if t.lv_full >= 0:
            ge2 = ((cnt >> 1) | (cnt >> 2)) & ONES
            pm = t.pair_masks
            tr = t.triples
            for r in _ranks(ge3):
                others = ge2 & ~(1 << (r << 2))
                if not others:
                    continue
                prs = [p for r2 in _ranks(others) for p in pm[r2 << 4 | (h >> (r2 << 2)) & 15]]
                for tm in tr[r << 4 | (h >> (r << 2)) & 15]:
                    out += [tm | p for p in prs]
        if t.lv_quads >= 0:
            ge4 = (cnt >> 2) & ONES
            for r in _ranks(ge4):
                q = 15 << (r << 2)
                out += [q | c for c in _bits(h & ~q)]
    if t.extra_five_levels and (ge3 or cnt & (cnt >> 1) & ONES or (cnt >> 1) & ONES):
        out += five_card_plays(h, t, cnt, only=t.extra_five_levels)
    return out


def _four_card_plays(h: int, t: Tables, cnt: int, kmin: int) -> list[int]:
    """Four-card plays: quads (key 64 + rank) and, if allowed, two pairs (key of high pair)."""
    out = []
    ge4 = (cnt >> 2) & ONES
    for r in _ranks(ge4):
        if 64 + r > kmin:
            out.append(15 << (r << 2))
    if t.four_card is FourCard.QUADS_AND_TWO_PAIRS:
        ge2 = ((cnt >> 1) | (cnt >> 2)) & ONES
        prk = _ranks(ge2)
        for i, lo in enumerate(prk):
            low_pairs = t.pair_masks[lo << 4 | (h >> (lo << 2)) & 15]
            for hi in prk[i + 1 :]:
                for ph, kh in t.pairs[hi << 4 | (h >> (hi << 2)) & 15]:
                    if kh > kmin:
                        out += [ph | pl for pl in low_pairs]
    return out


def beating_plays(h: int, t: Tables, kind: int, key: int) -> list[int]:
    """Every play that beats a play of ``kind`` (its size) and ``key`` on the table."""
    if kind == 1:
        out = _bits(h & t.above[key])
    elif kind == 2:
        out = []
        cnt = rank_counts(h)
        ge2 = ((cnt >> 1) | (cnt >> 2)) & ONES
        lo_rank = key >> 2
        pairs = t.pairs
        for r in _ranks(ge2):
            if r > lo_rank:
                out += t.pair_masks[r << 4 | (h >> (r << 2)) & 15]
            elif r == lo_rank:
                out += [m for m, k in pairs[r << 4 | (h >> (r << 2)) & 15] if k > key]
    elif kind == 3:
        out = []
        if t.triples_on:
            cnt = rank_counts(h)
            ge3 = ((cnt & (cnt >> 1)) | (cnt >> 2)) & ONES
            for r in _ranks(ge3):
                if r > key:
                    out += t.triples[r << 4 | (h >> (r << 2)) & 15]
    elif kind == 4:
        out = _four_card_plays(h, t, rank_counts(h), key)
    elif kind == 5:
        if h.bit_count() < 5:
            return []
        cnt = rank_counts(h)
        fc = t.five_compare
        if fc is FiveCompare.BY_TYPE:
            out = five_card_plays(h, t, cnt, key)
        elif fc is FiveCompare.SAME_TYPE_ONLY:
            lv = key >> TYPE_SHIFT
            out = five_card_plays(h, t, cnt, key, ((lv + 1) << TYPE_SHIFT) - 1)
        else:
            out = [m for m in five_card_plays(h, t, cnt) if t.top_power(m) > key]
        return out
    elif kind == 13:
        return dragon_plays(h, t, key)
    else:
        raise ValueError(f"no play has {kind} cards")
    if kind in t.bomb_targets and h.bit_count() >= 5:
        out += five_card_plays(h, t, rank_counts(h), only=t.bomb_levels)
    return out
