"""Where the ace and the two may sit in a sequence, and how sequences rank.

This is the most argued-over rule in Big Two (see ``docs/rules.md``).  A :class:`StraightOrder`
is plain data: the list of five-rank windows that count as sequences, each with a *level*
(higher level beats lower) and the rank whose card breaks ties between two sequences of the same
level (by that card's suit).  Two windows may share a level: under the Indonesian rule every
sequence that contains a two ranks by the suit of its two alone.

Straight flushes use the order of straights unless the rule set names another
(``straight_flushes``: 002 ranks straight flushes with twos low under straights with A2345 on
top).
"""

from __future__ import annotations

from dataclasses import dataclass

from .cards import RANK_OF_CHAR, RANKS

Window = tuple[str, int, str]
"""``(ranks, level, tiebreak_rank)``: e.g. ``("A2345", 0, "5")``."""

_NATURAL_WINDOWS = tuple(RANKS[i : i + 5] for i in range(8))  # 34567 .. TJQKA


@dataclass(frozen=True)
class StraightOrder:
    """A named order of five-card sequences."""

    name: str
    windows: tuple[Window, ...]
    source: str
    description: str

    def window_masks(self) -> list[tuple[int, int, int]]:
        """``(rank_mask, level, tiebreak_rank_index)`` per window; rank_mask has bit r per rank."""
        out = []
        for ranks, level, tb in self.windows:
            rm = 0
            for ch in ranks:
                rm |= 1 << RANK_OF_CHAR[ch]
            out.append((rm, level, RANK_OF_CHAR[tb]))
        return out

    def describe(self) -> str:
        """Human-readable order, lowest first, e.g. ``A2345 < 23456 < ... < TJQKA``."""
        levels: dict[int, list[str]] = {}
        for ranks, level, _ in self.windows:
            levels.setdefault(level, []).append(ranks)
        return " < ".join(" = ".join(levels[lv]) for lv in sorted(levels))


def _ordered(
    name: str, windows: list[str], tiebreaks: dict[str, str], source: str, description: str
) -> StraightOrder:
    """Windows listed lowest first, one level each; tiebreak defaults to the top of the run."""
    return StraightOrder(
        name,
        tuple((w, i, tiebreaks.get(w, w[-1])) for i, w in enumerate(windows)),
        source,
        description,
    )


def _descending(name: str, windows: list[str], source: str, description: str) -> StraightOrder:
    """Rank windows by comparing their cards in descending natural rank (2 high).

    Pagat: "you compare the cards in descending order of their normal rank, so 2AKQJ beats 26543
    because ace beats 6, and 26543 beats AKQJT because 2 beats ace."  Ties break on the suit of
    the highest natural card.
    """

    def desc(w: str) -> list[int]:
        return sorted((RANK_OF_CHAR[c] for c in w), reverse=True)

    ordered = sorted(windows, key=desc)
    return StraightOrder(
        name,
        tuple((w, i, RANKS[desc(w)[0]]) for i, w in enumerate(ordered)),
        source,
        description,
    )


NAT = list(_NATURAL_WINDOWS)
_WRAP = [(RANKS * 2)[i : i + 5] for i in range(13)]

STRAIGHT_ORDERS: dict[str, StraightOrder] = {
    o.name: o
    for o in [
        _ordered(
            "ace-low",
            ["A2345", "23456", *NAT],
            {},
            "000:62 (Pagat, standard game); 001:26; 002 var. 3, second list ('A-K-Q-J-10 > "
            "K-Q-J-10-9 > 6-5-4-3-2 > ... > 5-4-3-2-A', read as this order with its '...' out "
            "of place: taken literally it would put 6-5-4-3-2 just below K-Q-J-10-9, an order no "
            "text describes); shared/rules/README.md",
            "A-2-3-4-5 lowest, then 2-3-4-5-6, 3-4-5-6-7 ... 10-J-Q-K-A highest; "
            "ace only at an end.",
        ),
        _ordered(
            "a2345-high",
            ["23456", *NAT, "A2345"],
            {"A2345": "A"},
            "000:132 (Pagat: 'A-2-3-4-5 is the highest'); 000 wiki var. 9 (suit of A); 001:42 "
            "('some crown A-2-3-4-5'); 002 var. 3 (third list)",
            "2-3-4-5-6 lowest ... 10-J-Q-K-A, then A-2-3-4-5 highest "
            "(suit of the ace breaks ties).",
        ),
        _ordered(
            "23456-high",
            [*NAT, "A2345", "23456"],
            {"A2345": "2", "23456": "2"},
            "000:132 (Pagat: '2-3-4-5-6 is highest, beating A-2-3-4-5, which beats A-K-Q-J-10'); "
            "000 wiki var. 9 (Malaysian); 001:42 ('some tables crown 2-3-4-5-6 with A-2-3-4-5 "
            "second')",
            "3-4-5-6-7 lowest ... 10-J-Q-K-A < A-2-3-4-5 < 2-3-4-5-6 (suit of the two).",
        ),
        _ordered(
            "hong-kong",
            [*NAT, "23456", "A2345"],
            {"A2345": "2", "23456": "2"},
            "000:236 (Pagat, Ivan Ip's Hong Kong rules); 000:312 and wiki var. 9 "
            "(Singapore/Hong Kong); 001:42 (one account of Hong Kong play); 002:33 (the "
            "article's own straights: 'Twos rank high in straights ... The highest straight is "
            "A-2-3-4-5 and the lowest is 7-6-5-4-3')",
            "3-4-5-6-7 lowest ... 10-J-Q-K-A < 2-3-4-5-6 < A-2-3-4-5 (suit of the two); "
            "J-Q-K-A-2 is no sequence.",
        ),
        _ordered(
            "23456-high-a2345-low",
            ["A2345", *NAT, "23456"],
            {"23456": "2"},
            "000:132 (Pagat: '2-3-4-5-6 is highest, but A-2-3-4-5 is lowest')",
            "A-2-3-4-5 lowest, 3-4-5-6-7 ... 10-J-Q-K-A, then 2-3-4-5-6 highest.",
        ),
        _ordered(
            "no-a2345",
            ["23456", *NAT],
            {},
            "000:134 (Pagat: 'Some do not allow A-2-3-4-5'); 001:42 ('some refuse A-2-3-4-5 as "
            "a sequence at all')",
            "A-2-3-4-5 is no sequence; 2-3-4-5-6 lowest ... 10-J-Q-K-A highest.",
        ),
        _ordered(
            "two-high",
            ["23456", *NAT, "JQKA2"],
            {"JQKA2": "2"},
            "000:134 (Pagat: 'twos rank high ... 2-A-K-Q-J is the highest and 6-5-4-3-2 is "
            "lowest')",
            "6-5-4-3-2 lowest ... 10-J-Q-K-A < J-Q-K-A-2 highest.",
        ),
        _descending(
            "descending",
            ["23456", *NAT, "JQKA2"],
            "000:136 (Pagat: 6-5-4-3-2 second highest, compare in descending order); 001:42 "
            "('J-Q-K-A-2 over 2-3-4-5-6 over 10-J-Q-K-A'); 002 var. 3 (first list)",
            "3-4-5-6-7 ... 10-J-Q-K-A < 6-5-4-3-2 < 2-A-K-Q-J: compare cards in descending "
            "natural rank.",
        ),
        _ordered(
            "two-high-no-wrap",
            [*NAT, "JQKA2"],
            {"JQKA2": "2"},
            "000:138 (Pagat: Karl Boehnker, most common in Hong Kong); 000 wiki var. 9 "
            "(Indonesian variant); 001:42 ('the commonest Hong Kong version'); 003:40 ('a 2 or "
            "Ace cannot be played as a low card')",
            "Twos rank high and are never consecutive with a three: 3-4-5-6-7 lowest ... "
            "10-J-Q-K-A < J-Q-K-A-2.",
        ),
        StraightOrder(
            "indonesia",
            (*((w, i, w[-1]) for i, w in enumerate(NAT)), ("A2345", 8, "2"), ("23456", 8, "2")),
            "000:140 (Pagat: Indonesia, straights containing a two beat all others, ranked by the "
            "suit of the two); 001:42 ('Indonesian play'); 002 var. 3 (fifth list, "
            "'5-4-3-2-A = 6-5-4-3-2')",
            "3-4-5-6-7 ... 10-J-Q-K-A < {A-2-3-4-5, 2-3-4-5-6}, the two-bearing sequences "
            "compared by the suit of their two only.",
        ),
        _ordered(
            "a2345-below-broadway",
            ["23456", *NAT[:-1], "A2345", "TJQKA"],
            {"A2345": "A"},
            "000 wiki var. 9 (fifth list); 002 var. 3 (fourth list, 'A-K-Q-J-10 > A-2-3-4-5 > "
            "K-Q-J-10-9')",
            "2-3-4-5-6 lowest ... 9-10-J-Q-K < A-2-3-4-5 (suit of the ace) < 10-J-Q-K-A.",
        ),
        _ordered(
            "no-two",
            NAT,
            {},
            "000 wiki var. 9 (Vietnamese variant)",
            "Only 3-4-5-6-7 ... 10-J-Q-K-A; no sequence holds a two.",
        ),
        _descending(
            "wraparound",
            _WRAP,
            "002 var. 3 (sixth entry, 'Sometimes the straights 2-A-K-Q-J, 3-2-A-K-Q and "
            "4-3-2-A-K are not allowed', so elsewhere they are)",
            "Any five ranks in a row going round the corner (Q-K-A-2-3 counts), compared in "
            "descending natural rank.",
        ),
    ]
}

STRAIGHT_ORDER_ALIASES = {
    "standard": "ace-low",
    "malaysia": "23456-high",
    "singapore": "hong-kong",
    "vietnam": "no-two",
    "jqka2-high": "two-high-no-wrap",
}


def find_straight_order(name: str) -> StraightOrder:
    key = STRAIGHT_ORDER_ALIASES.get(name, name)
    try:
        return STRAIGHT_ORDERS[key]
    except KeyError:
        known = ", ".join(sorted(STRAIGHT_ORDERS))
        raise ValueError(f"unknown straight order {name!r}; known: {known}") from None
