"""Table-driven combination and comparison cases taken from the rule texts.

Every case names its source: ``000:63`` is line 63 of
``shared/rules/000_011bf6f415061e38.txt`` (likewise 001, 002, 003).  Where a text's suit
symbols were lost in extraction, suits are chosen so that the stated outcome is the only one
the text allows.  Each case is checked three ways: ``classify``/``beats``, the move generator
(the beating play is generated from a hand holding exactly those cards), and the independent
reference in tests/referee/game/reference.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from referee import (
    CardSet,
    MalformedCardError,
    RuleSet,
    beats,
    card_text,
    classify,
    find_ruleset,
    mask_text,
    parse_card,
    parse_mask,
    tables_for,
)
from referee.game.cards import card_symbol, cards_of
from referee.game.movegen import beating_plays, leading_plays
from referee.game.rules import FiveKind

from .reference import reference_beats, reference_classify
from .strategies import OPTION_VARIANTS


def rs(name: str = "standard", **kw: object) -> RuleSet:
    """A preset, a single-option variant from strategies.OPTION_VARIANTS, or overrides."""
    base = OPTION_VARIANTS[name] if name in OPTION_VARIANTS else find_ruleset(name)
    return base.with_options(**kw) if kw else base


@dataclass(frozen=True)
class Case:
    src: str
    rules: RuleSet
    a: str
    b: str | None
    """None: the case is about whether ``a`` is a play at all."""
    expected: bool
    low: bool = False
    """In a deal where twos are lowest (``twos_low_after_bomb`` and a bomb was dealt)."""

    @property
    def id(self) -> str:
        if self.low:
            return "twos low: " + Case(self.src, self.rules, self.a, self.b, self.expected).id
        b = "lead" if self.b is None else self.b
        verb = ">" if self.expected else "!>"
        if self.b is None:
            verb = "is a play" if self.expected else "is no play"
            return f"{self.src} {self.rules.name}: {self.a} {verb}"
        return f"{self.src} {self.rules.name}: {self.a} {verb} {b}"


def chain(src: str, rules: RuleSet, *plays: str) -> list[Case]:
    """``plays[0] > plays[1] > ...``: every earlier play beats every later one and no later
    play beats an earlier one (same size, so no bombs involved)."""
    out = []
    for i, hi in enumerate(plays):
        for lo in plays[i + 1 :]:
            out.append(Case(src, rules, hi, lo, True))
            out.append(Case(src, rules, lo, hi, False))
    return out


def valid(src: str, rules: RuleSet, *plays: str) -> list[Case]:
    return [Case(src, rules, p, None, True) for p in plays]


def invalid(src: str, rules: RuleSet, *plays: str) -> list[Case]:
    return [Case(src, rules, p, None, False) for p in plays]


def no_beat(src: str, rules: RuleSet, a: str, b: str) -> list[Case]:
    return [Case(src, rules, a, b, False)]


STD = rs("standard")
CASES: list[Case] = [
    # --- singles, pairs, triples (000 'Playable Combinations'; 001; 002) ---------------------
    *chain("000:36", STD, "2S", "2H", "2C", "2D", "AS", "KS", "3S", "3H", "3C", "3D"),
    *chain("000:307", STD, "AS", "AH", "KH"),
    *chain("002:29", STD, "AD", "KS"),
    *chain("000:52 9-9 with the spade beats 9-9 with the heart", STD, "9S 9C", "9H 9D"),
    *chain("000:52 Q-Q beats J-J", STD, "QD QC", "JS JH"),
    *chain("000:308", STD, "KS KC", "KH KD"),
    *chain("000:52 twos highest, threes lowest", STD, "2D 2C", "AS AH", "3S 3H"),
    *chain("000:56 triples", STD, "2D 2C 2H", "AS AH AC", "4D 4C 4H", "3S 3H 3C"),
    *chain("001:22 the two of spades is never beaten", STD, "2S", "2H"),
    *invalid("000:75 no playing four equal cards alone", STD, "7S 7H 7C 7D"),
    *invalid("000:75 no 'two pair' combination", STD, "7S 7H 4C 4D 9S"),
    *invalid("000:75 a triple may not carry extra cards", STD, "7S 7H 7C 4D 9S", "7S 7H 7C 4D"),
    *invalid("000:48 four types of play", STD, "3D 4D", "3D 3C 4D", "3D 4C 5H 6S 7D 8C"),
    # 000:72: a play is only beaten by a play with the same number of cards
    *no_beat("000:72 a triple does not beat a pair", STD, "2D 2C 2H", "3D 3C"),
    *no_beat("000:72 a straight does not beat a triple", STD, "TS JD QC KH AS", "3D 3C 3H"),
    *no_beat("000:72 a pair does not beat a single", STD, "2S 2H", "3D"),
    *no_beat("000:72 four-of-a-kind does not beat a single", STD, "2S 2H 2C 2D 3D", "4D"),
    # --- five-card hands (000:58-72; 001:22-26; 002:33-38) -----------------------------------
    *chain(
        "000:62 K-Q-J-10-9 > Q-J-10-9-8 > Q-J-10-9-8 (suit of the top card)",
        STD,
        "KH QD JC TS 9D",
        "QS JD TC 9C 8H",
        "QH JS TD 9H 8C",
    ),
    *chain(
        "000:62 the highest straight is A-K-Q-J-10 with the ace of spades",
        STD,
        "AS KD QD JD TD",
        "AH KS QS JS TS",
        "KC QH JH TH 9H",
    ),
    *chain(
        "000:62 5-4-3-2-A is beaten by 6-5-4-3-2 and 7-6-5-4-3",
        STD,
        "7D 6D 5D 4D 3H",
        "6C 5C 4C 3C 2D",
        "5S 4S 3S 2S AH",
    ),
    *invalid(
        "000:62 ace only at an end: 3-2-A-K-Q, 2-A-K-Q-J",
        STD,
        "3D 2C AH KS QD",
        "2D AC KH QS JD",
    ),
    *invalid("001:26 K-A-2-3-4 and J-Q-K-A-2 are no sequence", STD, "KD AC 2H 3S 4D"),
    *chain(
        "000:63 9-7-6-5-3 > 2-J-9-6-4 > A-K-Q-10-7 (flush: suit first)",
        STD,
        "9S 7S 6S 5S 3S",
        "2H JH 9H 6H 4H",
        "AH KH QH TH 7H",
        "AD KD QD TD 7D",
    ),
    *chain(
        "000:374 K-Q-J-10-8 spades > A-K-Q-J-9 diamonds", STD, "KS QS JS TS 8S", "AD KD QD JD 9D"
    ),
    *chain("002:34 spade 3-4-5-6-8 > heart A-K-Q-10-8", STD, "3S 4S 5S 6S 8S", "AH KH QH TH 8H"),
    *chain("000:64 9-9-9-4-4 > 8-8-8-K-K", STD, "9S 9H 9C 4D 4C", "8S 8H 8C KD KC"),
    *chain("002:36 four 4s with a 6 > four 3s with a K", STD, "4S 4H 4C 4D 6S", "3S 3H 3C 3D KS"),
    *chain("002:40 3-3-3-3-5 > 2-2-2-A-A", STD, "3S 3H 3C 3D 5S", "2S 2H 2C AS AH"),
    *chain(
        "000:66 royal flush in spades is the best five-card hand; same rank: higher suit",
        STD,
        "AS KS QS JS TS",
        "AH KH QH JH TH",
        "KS QS JS TS 9S",
        "KH QH JH TH 9H",
    ),
    *chain(
        "000:72 five-card types: straight < flush < full house < quads < straight flush",
        STD,
        "7C 6C 5C 4C 3C",
        "9D 9C 9H 9S 4D",
        "2S 2H 2C AS AH",
        "3H 4H 5H 6H 8H",
        "AD KD QD JD TS",
    ),
    *chain(
        "002:37 2-A-K-Q-J of one suit is no straight flush, only a flush",
        STD,
        "5S 5H 5C 4D 4C",
        "2H AH KH QH JH",
        "TS JD QC KD AS",
    ),
    *chain(
        "003:41 the lowest five-card hand: a run with the 7 of diamonds high",
        rs("house-003"),
        "3D 4C 5H 6S 7C",
        "3C 4D 5D 6D 7D",
    ),
    *chain(
        "003:51 the highest: straight flush, two of spades high",
        rs("house-003"),
        "JS QS KS AS 2S",
        "JH QH KH AH 2H",
        "TS JS QS KS AS",
    ),
    *invalid(
        "003:40 a 2 or Ace cannot be a low card in a straight",
        rs("house-003"),
        "AS 2D 3C 4H 5S",
        "2D 3C 4H 5S 6D",
    ),
    *invalid(
        "003:36-43 four cards, two pair, three of a kind: illegal",
        rs("house-003"),
        "7S 7H 7C 7D",
        "7S 7H 4C 4D 9S",
        "7S 7H 7C 4D 9S",
    ),
    *chain(
        "003:45 flush: high card, then suit",
        rs("house-003"),
        "2D 3D 5D 6D 8D",
        "AS 3S 5S 6S 8S",
        "AH KH JH 9H 8H",
    ),
    # --- suit orders (000:126-128; 000:379, 396; 002:88) ------------------------------------
    *chain(
        "000:126 Pusoy Dos: diamonds > hearts > spades > clubs",
        rs("pusoy-dos"),
        "3D",
        "3H",
        "3S",
        "3C",
    ),
    *chain(
        "000:128 Taiwan: spades > hearts > diamonds > clubs", rs("taiwan"), "3S", "3H", "3D", "3C"
    ),
    *chain(
        "000:396 Hawaii penning: diamonds > hearts > spades > clubs",
        rs("hawaii-penning"),
        "9D",
        "9H",
        "9S",
        "9C",
    ),
    *chain(
        "002:88 'Viet style' clubs < diamonds < spades < hearts",
        rs("suits-CDSH"),
        "5H",
        "5S",
        "5D",
        "5C",
    ),
    *chain("000:126 Pusoy Dos pairs by the higher suit", rs("pusoy-dos"), "KD KC", "KH KS"),
    *chain(
        "000:126 Pusoy Dos flushes by suit first",
        rs("pusoy-dos"),
        "3D 4D 5D 6D 8D",
        "AH KH QH TH 8H",
        "AS KS QS TS 8S",
        "AC KC QC TC 8C",
    ),
    *chain(
        "000:126 Pusoy Dos straights by the suit of the top card",
        rs("pusoy-dos"),
        "3S 4S 5S 6S 7D",
        "3D 4D 5D 6D 7H",
    ),
    # --- suits do not break ties (000:380, 391) ----------------------------------------------
    *no_beat("000:380 a 3 does not beat another 3", rs("poker-style"), "3S", "3D"),
    *no_beat(
        "000:380 an 8-high straight does not beat another",
        rs("poker-style"),
        "4S 5D 6D 7D 8S",
        "4D 5S 6S 7S 8D",
    ),
    *no_beat("000:391 equal pairs never beat", rs("poker-style"), "KS KC", "KH KD"),
    *no_beat(
        "000:391 won exactly, not by a tie-breaker of suit",
        rs("poker-style"),
        "AS QS JS TS 9S",
        "AH QH JH TH 9H",
    ),
    *chain(
        "000:391 full house of twos above full house of aces",
        rs("poker-style"),
        "2S 2H 2C 3D 3C",
        "AS AH AC KD KC",
    ),
    *chain("000:380 ranks still count without suits", rs("poker-style"), "4D", "3S"),
    *chain("000:380 no suits: pairs by rank", rs("no-suit-ties"), "4D 4C", "3S 3H"),
    *no_beat(
        "000:380 no suits: same-rank straights never beat (ace-low A2345)",
        rs("no-suit-ties"),
        "AS 2S 3S 4S 5D",
        "AD 2D 3D 4D 5S",
    ),
    *no_beat(
        "000:380 no suits: top-card flushes with the same top rank never beat",
        rs("no-suit-ties-top-card"),
        "AS KS QS JS 9S",
        "AD 3D 4D 5D 7D",
    ),
    *chain(
        "000:380 no suits, suit-first flushes fall back to their ranks",
        rs("no-suit-ties"),
        "AD 3D 4D 5D 7D",
        "KS QS JS 9S 8S",
    ),
    # --- triples and flushes removed (000:154; Singapore) -----------------------------------
    *invalid("000:154 no triples", rs("singapore"), "3D 3C 3H", "2S 2H 2C"),
    *invalid("000:154 no flushes", rs("singapore"), "3D 4D 5D 6D 8D", "AS KS QS JS 9S"),
    *valid(
        "000:154 straights, full houses, quads, straight flushes remain",
        rs("singapore"),
        "3D 4C 5H 6S 7D",
        "3D 3C 3H 4D 4C",
        "3D 3C 3H 3S 4D",
        "3D 4D 5D 6D 7D",
    ),
    *chain(
        "000:154 no flushes: the order is straight < full house < quads < straight flush",
        rs("singapore"),
        "3S 4S 5S 6S 7S",
        "2S 2H 2C 2D 3D",
        "5H 5C 5D 4D 4C",
        "TS JD QC KH AS",
    ),
    *invalid("000:106 Da Lao Er: no flushes", rs("bu-bu-gao-sheng"), "3D 4D 5D 6D 8D"),
    *invalid("000:154 (variant) no triples only", rs("no-triples"), "3D 3C 3H"),
    *valid(
        "000:154 (variant) full houses still allowed without triples",
        rs("no-triples"),
        "3D 3C 3H 4D 4C",
    ),
    # --- five-card compare (000:106 Da Lao Er, 000:398 var. 30, 000:399 var. 31) ----------------
    *no_beat(
        "000:106 a full house cannot be used to beat a straight",
        rs("bu-bu-gao-sheng"),
        "3D 3C 3H 4D 4C",
        "3S 4S 5H 6S 7S",
    ),
    *no_beat(
        "000:398 no poker rules: a full house is not played over a straight",
        rs("five-same-type-only"),
        "3D 3C 3H 4D 4C",
        "3S 4S 5H 6S 7S",
    ),
    *chain(
        "000:398 no poker rules: same type still compares",
        rs("five-same-type-only"),
        "8S 9H TD JC QC",
        "3S 4S 5H 6S 7S",
    ),
    *chain(
        "000:399 4-5-6-7-8 can be played on top of 7-7-7-6-6",
        rs("five-highest-card"),
        "4D 5S 6C 7S 8D",
        "7D 7C 7H 6D 6H",
    ),
    *chain(
        "000:399 highest card: a straight flush under a higher straight",
        rs("five-highest-card"),
        "TD JS QC KC AS",
        "9H TH JH QH KH",
    ),
    # --- straight orders (000:130-140; 000:367-373; 001:42; 002:77-83; 003:40) ----------------
    *chain(
        "000:132 A-2-3-4-5 highest",
        rs("straights-a2345-high"),
        "AS 2D 3D 4D 5D",
        "TS JD QD KD AD",
        "3S 4S 5S 6S 7D",
        "2H 3C 4C 5C 6C",
    ),
    *chain(
        "000:132 2-3-4-5-6 highest, beating A-2-3-4-5, which beats A-K-Q-J-10",
        rs("straights-23456-high"),
        "2S 3D 4D 5D 6D",
        "AS 2H 3S 4S 5S",
        "TS JD QD KD AD",
        "3C 4H 5H 6H 7D",
    ),
    *chain(
        "000:368 Malaysian: suit of the 2 breaks ties",
        rs("straights-23456-high"),
        "AD 2S 3D 4D 5D",
        "AS 2H 3S 4S 5S",
    ),
    *chain(
        "000:132 2-3-4-5-6 highest but A-2-3-4-5 lowest",
        rs("straights-23456-high-a2345-low"),
        "2S 3D 4D 5D 6D",
        "TS JD QD KD AD",
        "3S 4S 5S 6S 7D",
        "AS 2H 3S 4S 5S",
    ),
    *invalid("000:134 A-2-3-4-5 not allowed", rs("straights-no-a2345"), "AS 2D 3D 4D 5D"),
    *chain(
        "000:134 no A2345: 2-3-4-5-6 lowest",
        rs("straights-no-a2345"),
        "3S 4S 5S 6S 7D",
        "2S 3D 4D 5D 6D",
    ),
    *chain(
        "000:134 twos high: 2-A-K-Q-J highest, 6-5-4-3-2 lowest",
        rs("straights-two-high"),
        "JS QD KD AD 2D",
        "TS JD QD KD AD",
        "3S 4S 5S 6S 7D",
        "2S 3D 4D 5D 6D",
    ),
    *chain(
        "000:136 6-5-4-3-2 second highest, between 2-A-K-Q-J and A-K-Q-J-10",
        rs("straights-descending"),
        "JS QD KD AD 2D",
        "2S 3D 4D 5D 6D",
        "TS JD QD KD AD",
        "9S TD JD QD KD",
        "3S 4S 5S 6S 7D",
    ),
    *chain(
        "000:138 twos high and never next to a three: 2-A-K-Q-J highest, 7-6-5-4-3 lowest",
        rs("hong-kong-two-high"),
        "JS QD KD AD 2D",
        "TS JD QD KD AD",
        "3S 4S 5S 6S 7D",
    ),
    *invalid(
        "000:138 twos never consecutive with threes",
        rs("hong-kong-two-high"),
        "AS 2D 3D 4D 5D",
        "2S 3D 4D 5D 6D",
    ),
    *chain(
        "000:140 Indonesia: straights with a two beat all others, ranked by the suit of the two",
        rs("indonesia"),
        "AD 2S 3D 4D 5D",
        "2H 3S 4S 5S 6S",
        "AH 2D 3S 4S 5C",
        "TS JD QD KD AS",
    ),
    *chain(
        "000:236 Hong Kong: A2345, then 23456, TJQKA ... 34567",
        rs("hong-kong"),
        "AS 2D 3D 4D 5D",
        "2S 3C 4C 5C 6C",
        "TS JD QD KD AD",
        "3S 4S 5S 6S 7D",
    ),
    *chain(
        "000:370 Hong Kong: the suit of the 2 breaks ties in A-2-3-4-5",
        rs("hong-kong"),
        "AD 2S 3D 4D 5C",
        "AS 2H 3S 4S 5S",
    ),
    *chain(
        "000:62 (standard) the suit of the top card breaks ties in A-2-3-4-5",
        STD,
        "AS 2H 3S 4S 5S",
        "AD 2S 3D 4D 5C",
    ),
    *invalid("000:236 Hong Kong: J-Q-K-A-2 is no straight", rs("hong-kong"), "JS QD KD AD 2D"),
    *chain(
        "000:370 Singapore / Hong Kong order",
        rs("singapore"),
        "AS 2D 3D 4D 5D",
        "2S 3C 4C 5C 6C",
        "TS JD QD KD AD",
    ),
    *chain(
        "000:371 2-3-4-5-6 < 3-4-5-6-7 ... < 10-J-Q-K-A < A-2-3-4-5 (suit of A)",
        rs("straights-a2345-high"),
        "AS 2D 3D 4D 5D",
        "AH 2S 3S 4S 5S",
    ),
    *chain(
        "000:372 ... 9-10-J-Q-K < A-2-3-4-5 (suit of A) < 10-J-Q-K-A",
        rs("straights-a2345-below-broadway"),
        "TD JD QD KD AC",
        "AS 2D 3D 4D 5D",
        "AH 2S 3S 4S 5S",
        "9S TS JS QS KD",
        "2S 3D 4D 5D 6D",
    ),
    *chain(
        "000:373 Vietnamese: 3-4-5-6-7 ... 10-J-Q-K-A",
        rs("straights-no-two"),
        "TS JD QD KD AD",
        "3S 4S 5S 6S 7D",
    ),
    *invalid(
        "000:373 Vietnamese: no sequence with a two",
        rs("straights-no-two"),
        "AS 2D 3D 4D 5D",
        "2S 3D 4D 5D 6D",
        "JS QD KD AD 2D",
    ),
    *valid(
        "002:83 round-the-corner sequences when allowed",
        rs("straights-wraparound"),
        "JS QD KD AD 2D",
        "3S 2D AD KD QD",
        "4S 3D 2D AD KD",
    ),
    *chain(
        "002:82 descending comparison of round-the-corner sequences",
        rs("straights-wraparound"),
        "JS QD KD AD 2D",
        "QS KD AD 2D 3D",
        "TS JD QD KD AD",
    ),
    *chain(
        "002:37 straight flushes rank as straights (hong-kong)",
        rs("hong-kong"),
        "AH 2H 3H 4H 5H",
        "TS JS QS KS AS",
    ),
    # --- flush comparison (000:142-146; 000:374; 002:84-85) ------------------------------------
    *chain(
        "000:144 2-J-7-5-3 > A-J-10-7-6 > A-K-J-9-8 (flush by top card)",
        rs("flush-top-card"),
        "2D JD 7D 5D 3D",
        "AS JS TS 7S 6S",
        "AH KH JH 9H 8H",
    ),
    *chain(
        "002:84 A-6-5-4-3 of diamonds > K-Q-J-10-8 in spades",
        rs("hong-kong"),
        "AD 6D 5D 4D 3D",
        "KS QS JS TS 8S",
    ),
    *chain(
        "000:146 A-K-J-9-8 > A-J-10-7-6 (poker: the king beats the jack)",
        rs("flush-poker"),
        "AD KD JD 9D 8D",
        "AS JS TS 7S 6S",
    ),
    *chain(
        "002:85 A-Q-J-10-9 clubs > A-Q-J-10-8 spades",
        rs("flush-poker"),
        "AC QC JC TC 9C",
        "AS QS JS TS 8S",
    ),
    *chain(
        "000:146 poker flush: all five equal ranks -> suit of the top card",
        rs("flush-poker"),
        "AS QS JS TS 8S",
        "AH QH JH TH 8H",
    ),
    *no_beat(
        "000:391 poker-style flushes with equal ranks never beat",
        rs("poker-style"),
        "AS QS JS TS 8S",
        "AH QH JH TH 8H",
    ),
    # --- royal flush, quads, straight flush (000:150) -----------------------------------------
    *chain(
        "000:150 A-K-Q-J-10 > 2-2-2-2-6 > 3-3-3-3-8 > K-Q-J-10-9",
        rs("royal-only-beats-quads"),
        "AS KS QS JS TS",
        "2S 2H 2C 2D 6C",
        "3S 3H 3C 3D 8C",
        "KH QH JH TH 9H",
        "3C 3D 3H 4D 4C",
    ),
    # --- straight over flush (000:395) --------------------------------------------------------
    *chain(
        "000:395 a straight higher than a flush",
        rs("straight-over-flush"),
        "3S 4D 5D 6D 7D",
        "AS KS QS JS 9S",
    ),
    # --- four cards (000:158; 000:356-358; 002:73) --------------------------------------------
    *chain("000:158 quads alone beat lower quads", rs("four-quads"), "4S 4H 4C 4D", "3S 3H 3C 3D"),
    *no_beat("000:158 quads alone beat nothing else", rs("four-quads"), "2S 2H 2C 2D", "3D 3C"),
    *no_beat(
        "000:158 a five-card hand does not beat four cards",
        rs("four-quads"),
        "AS KS QS JS TS",
        "3S 3H 3C 3D",
    ),
    *invalid("000:357 quads alone without two pairs", rs("four-quads"), "7S 7H 4C 4D"),
    *valid("000:158 quads plus a card still a five-card play", rs("four-quads"), "3S 3H 3C 3D 4D"),
    *chain(
        "000:358 two pairs or four alone; four of a kind beats two pairs",
        rs("four-quads-and-two-pairs"),
        "3S 3H 3C 3D",
        "2S 2H AS AH",
        "2D 2C 3S 3H",
        "KS KH 4S 4H",
    ),
    *invalid(
        "000:358 four cards need two pairs or quads", rs("four-quads-and-two-pairs"), "3S 3H 3C 4D"
    ),
    # --- extra five-card types (000:359-364; 002:74-76) ---------------------------------------
    *chain(
        "000:359 two pair junk: by the highest pair, below the straight",
        rs("two-pair"),
        "3D 4C 5H 6S 7D",
        "KS KH 5S 5H 3S",
        "QS QH JS JH AS",
    ),
    *chain(
        "000:359 two pair junk: equal high pairs by suit",
        rs("two-pair"),
        "KS KD 4S 4H 3S",
        "KH KC QS QH AS",
    ),
    *chain(
        "000:360 three-of-a-kind poker hand, below the straight",
        rs("three-of-a-kind"),
        "3D 4C 5H 6S 7D",
        "8S 8H 8C 3S 4H",
        "7S 7H 7C AS 2H",
    ),
    *chain(
        "000:364 sisters 3-K-K-A-A > 9-J-J-Q-Q", rs("sisters"), "3D KS KH AS AH", "9D JS JH QS QH"
    ),
    *chain(
        "002:76 sisters A-A-K-K-3 > Q-Q-J-J-9, below a straight",
        rs("sisters"),
        "3S 4D 5D 6D 7D",
        "AD AC KD KC 3D",
        "QD QC JD JC 9S",
    ),
    *invalid("000:362 sisters need consecutive pairs", rs("sisters"), "9D 9C JD JC 3S"),
    *invalid("000:359 no two pair junk in the standard game", STD, "KS KH 5S 5H 3S"),
    # --- bombs (000:162; 001:41; 000:390, 393) ------------------------------------------------
    *[
        Case("001:41 honour hands beat a single, a pair or a triple", rs("lukang"), bomb, t, True)
        for bomb in ("3S 3H 3C 3D 4D", "3H 4H 5H 6H 7H")
        for t in ("2S", "2S 2H", "2S 2H 2C")
    ],
    *no_beat("000:162 only honour hands are bombs", rs("lukang"), "3D 3C 3H 4D 4C", "4S"),
    *no_beat("000:162 a flush is no bomb", rs("lukang"), "3D 5D 7D 9D JD", "4S"),
    *chain(
        "000:162 a bomb on the table is beaten as a five-card hand",
        rs("lukang"),
        "4H 5H 6H 7H 8H",
        "3S 3H 3C 3D 4D",
    ),
    *[
        Case(
            "000:390 quads and straight flushes on a pair or a single",
            rs("bombs-honour-12"),
            b,
            t,
            ok,
        )
        for b in ("3S 3H 3C 3D 4D", "3H 4H 5H 6H 7H")
        for t, ok in (("2S", True), ("2S 2H", True), ("2S 2H 2C", False))
    ],
    *[
        Case("000:393 quads beat all combinations lacking quads", rs("bombs-quads-12"), b, t, ok)
        for b, t, ok in (
            ("3S 3H 3C 3D 4D", "2S", True),
            ("3S 3H 3C 3D 4D", "2S 2H", True),
            ("3H 4H 5H 6H 7H", "2S", False),
        )
    ],
    # --- dragon play (000:382; 002:90) -----------------------------------------------------------
    *chain(
        "000:382 a dragon, the suit of its 2 breaks ties",
        rs("dragon-3p"),
        "3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD 2S",
        "3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS 2H",
    ),
    *no_beat(
        "000:382 a dragon only beats a dragon",
        rs("dragon-3p"),
        "3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD 2S",
        "4C",
    ),
    *no_beat(
        "000:380 a dragon with no suit ranking never beats another",
        rs("dragon-3p-no-ties"),
        "3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD 2S",
        "3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS 2H",
    ),
    *invalid(
        "000:382 no dragon play in the standard game", STD, "3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD 2S"
    ),
    *invalid(
        "000:382 thirteen cards of all ranks only",
        rs("dragon-3p"),
        "3D 3C 5D 6D 7D 8D 9D TD JD QD KD AD 2S",
    ),
]


def low(cases: list[Case]) -> list[Case]:
    """The same cases in a deal where twos are lowest."""
    return [Case(c.src, c.rules, c.a, c.b, c.expected, low=True) for c in cases]


LOW = rs("twos-low-after-bomb")
CASES += low(
    [
        *chain("000:315 twos lowest, the 2D lowest of all", LOW, "3D", "2S", "2H", "2C", "2D"),
        *chain("000:315 twos lowest: aces on top", LOW, "AD", "KS", "3D"),
        *chain("000:315 pairs of twos lowest", LOW, "3D 3C", "2S 2H"),
        *chain("000:315 triples of twos lowest", LOW, "3D 3C 3H", "2S 2H 2C"),
        *chain("000:315 full house of twos lowest", LOW, "3D 3C 3H 4D 4C", "2S 2H 2C KD KC"),
        *chain("000:315 four twos lowest", LOW, "3D 3C 3H 3S 4D", "2D 2C 2H 2S 5D"),
        *chain(
            "000:315 flush by its top card: the two no longer tops it",
            LOW,
            "AS 5S 6S 8S 9S",
            "2D JD 7D 5D 3D",
        ),
        *chain("000:315 sequences keep their order", LOW, "3S 4D 5D 6D 7D", "2S 3C 4C 5C 6C"),
        *chain(
            "000:359 two pair junk by its highest pair: K-K-2-2 > Q-Q-J-J",
            LOW,
            "KS KH 2S 2H 3D",
            "QS QH JS JH AS",
        ),
        *chain(
            "000:358 two pairs (four cards) by the higher pair: K-K-2-2 > Q-Q-J-J",
            LOW,
            "KS KH 2S 2H",
            "QS QH JS JH",
        ),
        *chain(
            "000:399 highest card: kings over a seven",
            rs("twos-low-highest-card"),
            "2S 2H 2C KD KC",
            "3D 4C 5H 6S 7D",
        ),
        *valid(
            "000:362 sisters are consecutive pairs: 2-2-3-3 when twos are lowest",
            rs("twos-low-sisters-poker"),
            "2C 2S 3D 3S 8H",
        ),
        *invalid(
            "000:362 A-A-2-2 are not consecutive when twos are lowest",
            rs("twos-low-sisters-poker"),
            "AS AH 2D 2C 9H",
        ),
    ]
)
CASES += [
    *chain("000:315 without a dealt bomb twos stay high", LOW, "2D", "AS"),
]

# --- bombs against bombs in Bu Bu Gao Sheng; 002's straight-flush order ----------------------
BBGS = rs("bu-bu-gao-sheng")
SF002 = rs("standard", straights="hong-kong", straight_flushes="ace-low")
CASES += [
    *[
        Case("000:106 'Four of a kind or a straight flush ... beat any combination'", BBGS, a, b,
             True)
        for a, b in (
            ("5C 5D 5H 5S 3D", "9S TD JC QH KH"),
            ("5C 5D 5H 5S 3D", "2D 2C 2H 4D 4C"),
            ("3H 4H 5H 6H 7H", "9S TD JC QH KH"),
        )
    ],
    # the preset's reading (docs/rules.md): between bombs, only a higher one of the same type
    *chain("000:106 a higher four of a kind beats four of a kind", BBGS, "9C 9D 9H 9S 3D",
           "5C 5D 5H 5S 4D"),
    *no_beat("000:106 read as same type between bombs", BBGS, "3H 4H 5H 6H 7H", "5C 5D 5H 5S 3D"),
    *no_beat("000:106 read as same type between bombs", BBGS, "5C 5D 5H 5S 3D", "3H 4H 5H 6H 7H"),
    *chain("002:33 straights: A-2-3-4-5 highest, then 2-3-4-5-6, 7-6-5-4-3 lowest", SF002,
           "AD 2C 3H 4S 5D", "2D 3C 4H 5S 6D", "TD JC QH KS AD", "3D 4C 5H 6S 7D"),
    *chain("002:37-38 straight flushes: twos low, the royal flush highest", SF002,
           "TS JS QS KS AS", "9H TH JH QH KH", "2D 3D 4D 5D 6D", "AC 2C 3C 4C 5C"),
    *chain("002:37 2-A-K-Q-J of a suit 'is only as good as a flush'", SF002,
           "AC 2C 3C 4C 5C", "JS QS KS AS 2S", "TD JC QH KS AD"),
]

# --- the rarer conventions: smack-down, straight flush plus two, other sequence lengths -------
CHOP = rs("smack-down")
LATTA = rs("todd-latta")
RUNS = rs("runs-3-4")
CASES += [
    *[
        Case("000:354 a smack-down defeats the single 2S", CHOP, chop, "2S", True)
        for chop in ("4C 4D 4H 4S", "4C 4D 5C 5D 6C 6H", "8C 8D 9C 9D TC TH JC JD")
    ],
    *no_beat("000:354 only the 2S as a single", CHOP, "4C 4D 4H 4S", "2H"),
    *no_beat("000:354 only the 2S as a single", CHOP, "4C 4D 5C 5D 6C 6H", "2S 2H"),
    *no_beat("000:354 quads plus a card is no smack-down", CHOP, "4C 4D 4H 4S 9D", "2S"),
    *chain("000:354 smack-back with higher quads", CHOP, "5C 5D 5H 5S", "4C 4D 4H 4S"),
    *chain(
        "000:354 smack-back with a higher run of pairs of equal length",
        CHOP,
        "5C 5D 6C 6D 7C 7H",
        "4C 4D 5S 5H 6S 6H",
    ),
    *no_beat(
        "000:354 runs of pairs of another length",
        CHOP,
        "8C 8D 9C 9D TC TH JC JD",
        "4C 4D 5S 5H 6S 6H",
    ),
    *no_beat(
        "000:354 quads do not answer a run of pairs", CHOP, "AC AD AH AS", "4C 4D 5S 5H 6S 6H"
    ),
    *invalid("000:354 runs of pairs stop at the ace", CHOP, "KC KD AC AD 2C 2D"),
    *invalid("000:354 at least three pairs", CHOP, "4C 4D 5S 5H"),
    *[
        Case(
            "000:166 a straight flush plus two beats any single or other combination",
            LATTA,
            "3H 4H 5H 6H 7H 9C KD",
            t,
            True,
        )
        for t in ("2S", "2S 2H", "KC KD KH KS 3D", "9C 9D 9H 4C 4D", "9S TS JS QS KD")
    ],
    *chain(
        "000:166 only a higher straight flush plus two beats it",
        LATTA,
        "4S 5S 6S 7S 8S 3C 3D",
        "3H 4H 5H 6H 7H 9C KD",
    ),
    *no_beat(
        "000:166 four of a kind plus a card does not beat it",
        LATTA,
        "KC KD KH KS 3D",
        "3H 4H 5H 6H 7H 9C KD",
    ),
    Case("000:166 four of a kind plus a card beats a single", LATTA, "KC KD KH KS 3D", "2S", True),
    *invalid("000:166 seven cards without a straight flush", LATTA, "3H 4H 5H 6H 8H 9C KD"),
    *chain("000:366 sequences of three", RUNS, "QS KD AH", "4D 5C 6H", "3S 4D 5S", "3C 4H 5D"),
    *chain("000:366 sequences of four", RUNS, "JS QD KC AH", "3D 4C 5H 6S"),
    *invalid("000:366 a two is not in a sequence", RUNS, "KS AD 2H", "2S 3D 4C"),
    *no_beat("000:366 only a sequence of the same length", RUNS, "JS QD KC AH", "3D 4C 5H"),
    *no_beat("000:366 a sequence of three is no triple", RUNS, "QS KD AH", "3D 3C 3H"),
]


def _tables(case: Case):  # type: ignore[no-untyped-def]
    return tables_for(case.rules, twos_low=True) if case.low else tables_for(case.rules)


def _engine_result(case: Case) -> bool:
    t = _tables(case)
    a = classify(parse_mask(case.a), t)
    if case.b is None:
        return a is not None
    b = classify(parse_mask(case.b), t)
    assert b is not None, f"the table {case.b} is not a play under {case.rules.name}"
    return a is not None and beats(a, b, t)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule_text_case(case: Case) -> None:
    assert _engine_result(case) is case.expected
    # the reference agrees with the text too (it is what the generator tests trust)
    a = parse_mask(case.a)
    if case.b is None:
        assert (reference_classify(a, case.rules, case.low) is not None) is case.expected
    else:
        got = reference_beats(a, parse_mask(case.b), case.rules, case.low)
        assert got is case.expected


GENERATOR_CASES = [c for c in CASES if c.b is None or not parse_mask(c.a) & parse_mask(c.b)]


@pytest.mark.parametrize("case", GENERATOR_CASES, ids=lambda c: c.id)
def test_rule_text_case_through_the_generator(case: Case) -> None:
    """A hand holding exactly the cards of ``a`` offers ``a`` exactly when the text says."""
    t = _tables(case)
    hand = parse_mask(case.a)
    if case.b is None:
        got = hand in leading_plays(hand, t)
    else:
        b = classify(parse_mask(case.b), t)
        assert b is not None
        got = hand in beating_plays(hand, t, b.kind, b.key)
    assert got is case.expected


def test_chops_are_no_leads() -> None:
    """000:354 a smack-down 'can be played to defeat the big 2 only when the 2S is played as
    a single': four cards alone and runs of pairs are never led."""
    t = tables_for(CHOP)
    hand = parse_mask("4C 4D 4H 4S 5C 5D 6C 6H 9S")
    assert all(m.bit_count() not in (4, 6) for m in leading_plays(hand, t))
    two = classify(parse_mask("2S"), t)
    assert two is not None
    answers = beating_plays(hand, t, two.kind, two.key)
    assert parse_mask("4C 4D 4H 4S") in answers and parse_mask("4C 4D 5C 5D 6C 6H") in answers


def test_every_case_source_names_a_text() -> None:
    for case in CASES:
        assert case.src[:3] in {"000", "001", "002", "003"}, case.src


# --- five-card types (what each hand *is*) --------------------------------------------------
TYPE_CASES = [
    ("000:62", STD, "3D 4C 5H 6S 7D", FiveKind.STRAIGHT),
    ("000:63", STD, "3D 5D 7D 9D JD", FiveKind.FLUSH),
    ("000:64", STD, "3D 3C 3H 4D 4C", FiveKind.FULL_HOUSE),
    ("000:65", STD, "3D 3C 3H 3S 4D", FiveKind.FOUR_OF_A_KIND),
    ("000:66", STD, "3D 4D 5D 6D 7D", FiveKind.STRAIGHT_FLUSH),
    ("000:66", STD, "AS KS QS JS TS", FiveKind.STRAIGHT_FLUSH),
    ("002:37", STD, "2S AS KS QS JS", FiveKind.FLUSH),
    ("000:150", rs("royal-only-beats-quads"), "AS KS QS JS TS", FiveKind.ROYAL_FLUSH),
    ("000:150", rs("royal-only-beats-quads"), "KS QS JS TS 9S", FiveKind.STRAIGHT_FLUSH),
    ("000:359", rs("two-pair"), "KS KH 5S 5H 3S", FiveKind.TWO_PAIR),
    ("000:362", rs("sisters"), "9D JS JH QS QH", FiveKind.SISTERS),
    ("000:360", rs("three-of-a-kind"), "8S 8H 8C 3S 4H", FiveKind.TRIPLE_JUNK),
    ("000:154", rs("singapore"), "3D 4D 5D 6D 7D", FiveKind.STRAIGHT_FLUSH),
]


@pytest.mark.parametrize(
    ("src", "rules", "cards", "kind"), TYPE_CASES, ids=[f"{c[0]} {c[2]}" for c in TYPE_CASES]
)
def test_five_card_type(src: str, rules: RuleSet, cards: str, kind: FiveKind) -> None:
    p = classify(parse_mask(cards), tables_for(rules))
    assert p is not None and p.kind == 5
    assert rules.five_card_order[p.level] is kind
    ref = reference_classify(parse_mask(cards), rules)
    assert ref is not None and ref[2] is kind


# --- straight-order data matches the texts' lists ---------------------------------------------
# (lowest first; '=' joins sequences of one level) -- 000:130-140, 000:367-373, 002:77-83
STRAIGHT_LISTS = {
    "ace-low": "A2345 < 23456 < 34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK < TJQKA",
    "a2345-high": "23456 < 34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK < TJQKA < A2345",
    "23456-high": "34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK < TJQKA < A2345 < 23456",
    "hong-kong": "34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK < TJQKA < 23456 < A2345",
    "23456-high-a2345-low": "A2345 < 34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK"
    " < TJQKA < 23456",
    "no-a2345": "23456 < 34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK < TJQKA",
    "two-high": "23456 < 34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK < TJQKA < JQKA2",
    "descending": "34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK < TJQKA < 23456 < JQKA2",
    "two-high-no-wrap": "34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK < TJQKA < JQKA2",
    "indonesia": "34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK < TJQKA < A2345 = 23456",
    "a2345-below-broadway": "23456 < 34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK"
    " < A2345 < TJQKA",
    "no-two": "34567 < 45678 < 56789 < 6789T < 789TJ < 89TJQ < 9TJQK < TJQKA",
}


@pytest.mark.parametrize("name", sorted(STRAIGHT_LISTS))
def test_straight_order_lists(name: str) -> None:
    from referee.game.straights import find_straight_order

    assert find_straight_order(name).describe() == STRAIGHT_LISTS[name]


def test_wraparound_has_every_corner_sequence() -> None:
    from referee.game.straights import find_straight_order

    got = {w for w, _, _ in find_straight_order("wraparound").windows}
    ranks = "3456789TJQKA2" * 2
    assert got == {ranks[i : i + 5] for i in range(13)}


# --- card text ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "rank", "suit"),
    [
        ("3D", "3", "D"),
        ("3d", "3", "D"),
        ("10S", "T", "S"),
        ("10s", "T", "S"),
        ("ts", "T", "S"),
        ("Th", "T", "H"),
        ("2\u2660", "2", "S"),
        ("2\u2664", "2", "S"),
        ("a\u2665", "A", "H"),
        ("Q\u2663", "Q", "C"),
        ("k\u2666", "K", "D"),
        (" jc ", "J", "C"),
    ],
)
def test_parse_card(text: str, rank: str, suit: str) -> None:
    c = parse_card(text)
    assert c == "3456789TJQKA2".index(rank) * 4 + "DCHS".index(suit)
    assert card_text(c) == rank + suit


@pytest.mark.parametrize(
    "text",
    ["", " ", "3", "10", "D3", "1D", "11S", "3X", "3 D", "0S", "ZZ", "\u26603", "22S", "3DD"],
)
def test_parse_card_rejects(text: str) -> None:
    with pytest.raises(MalformedCardError) as e:
        parse_card(text)
    assert e.value.cause == "malformed"


@pytest.mark.parametrize("bad", [None, 3, b"3D"])
def test_parse_card_rejects_non_strings(bad: object) -> None:
    with pytest.raises(MalformedCardError):
        parse_card(bad)  # type: ignore[arg-type]


def test_every_card_round_trips() -> None:
    assert [card_text(c) for c in range(4)] == ["3D", "3C", "3H", "3S"]
    assert card_text(51) == "2S" and card_text(32) == "JD"
    for c in range(52):
        assert parse_card(card_text(c)) == c
        assert parse_card(card_text(c).lower()) == c
        assert parse_card(card_symbol(c)) == c
    assert card_symbol(parse_card("TS")) == "10\u2660"


def test_mask_text_round_trips() -> None:
    m = parse_mask("2s, 10h 3d  ah")
    assert mask_text(m) == "3D TH AH 2S"
    assert parse_mask(mask_text(m)) == m
    assert parse_mask(["3D", "TH"]) == parse_mask("3D TH")
    assert parse_mask("") == 0
    assert cards_of(parse_mask("3D 2S")) == [0, 51]
    cs = CardSet("AH 3D")
    assert str(cs) == "3D AH" and len(cs) == 2 and 0 in cs and CardSet(cs.mask) == cs


@pytest.mark.parametrize("text", ["3D 3d", "3D 3C 3D", ["TS", "10s"], "3D XX"])
def test_parse_mask_rejects(text: str | list[str]) -> None:
    with pytest.raises(MalformedCardError):
        parse_mask(text)


# --- 002: straight flushes in their own order -------------------------------------------------
def test_002_straight_flushes_rank_twos_low_with_the_royal_on_top() -> None:
    """002:33 straights: 'Twos rank high in straights ... The highest straight is A-2-3-4-5 and
    the lowest is 7-6-5-4-3'; 002:37 straight flush: 'Ranked as for straights, twos rank low
    ... 2-A-K-Q-J of a suit is therefore not valid and is only as good as a flush'; 002:38
    'Royal Flush: A-K-Q-J-10 with the same suit is known as the highest combination'."""
    r = rs("standard", straights="hong-kong", straight_flushes="ace-low")
    t = tables_for(r)

    def p(text: str):  # type: ignore[no-untyped-def]
        found = classify(parse_mask(text), t)
        assert found is not None, text
        return found

    # straights: A-2-3-4-5 on top, 7-6-5-4-3 lowest
    assert beats(p("AD 2C 3H 4S 5D"), p("TD JC QH KS AD"), t)
    assert beats(p("2D 3C 4H 5S 6D"), p("TD JC QH KS AD"), t)
    assert beats(p("4D 5C 6H 7S 8D"), p("3D 4C 5H 6S 7S"), t)
    # straight flushes: A-2-3-4-5 lowest, the royal flush highest
    royal, low, mid = p("TS JS QS KS AS"), p("AH 2H 3H 4H 5H"), p("5C 6C 7C 8C 9C")
    assert {royal.level, low.level, mid.level} == {r.five_card_order.index(FiveKind.STRAIGHT_FLUSH)}
    assert beats(royal, mid, t) and beats(mid, low, t) and not beats(low, mid, t)
    assert beats(p("2D 3D 4D 5D 6D"), low, t)
    # J-Q-K-A-2 in one suit is no sequence: a flush
    flush = p("JH QH KH AH 2H")
    assert r.five_card_order[flush.level] is FiveKind.FLUSH
    # with one order for both, the A-2-3-4-5 straight flush would be on top
    same = tables_for(rs("standard", straights="hong-kong"))
    top = classify(parse_mask("AH 2H 3H 4H 5H"), same)
    royal_same = classify(parse_mask("TS JS QS KS AS"), same)
    assert top is not None and royal_same is not None and beats(top, royal_same, same)


def test_a_suited_run_of_the_straight_order_only_is_a_flush() -> None:
    """002:37 '2-A-K-Q-J of a suit is therefore not valid and is only as good as a flush': with
    straights that allow J-Q-K-A-2 and straight flushes that do not, the suited run is a flush
    and the generator lists it once, as a flush."""
    r = rs("standard", straights="two-high-no-wrap", straight_flushes="ace-low")
    t = tables_for(r)
    hand = parse_mask("JH QH KH AH 2H 3C")
    fives = [m for m in leading_plays(hand, t) if m.bit_count() == 5]
    assert fives == [parse_mask("JH QH KH AH 2H")]
    found = classify(fives[0], t)
    assert found is not None and r.five_card_order[found.level] is FiveKind.FLUSH
    mixed = classify(parse_mask("JH QH KH AH 2C"), t)
    assert mixed is not None and r.five_card_order[mixed.level] is FiveKind.STRAIGHT
    assert reference_classify(parse_mask("JH QH KH AH 2H"), r)[2] is FiveKind.FLUSH  # type: ignore[index]


def test_straight_flushes_need_a_straight_flush_type() -> None:
    with pytest.raises(ValueError, match="straight_flushes needs straight-flush"):
        rs("standard", straight_flushes="ace-low", five_card_order=["straight", "flush"])
    # A royal flush alone is one run in every order: the option would order nothing but
    # the straights that happen to lie in one suit (found by hypothesis: a suited A2345
    # under straights=23456-high ranked by the straight-flush order).
    with pytest.raises(ValueError, match="straight_flushes needs straight-flush"):
        rs("standard", straights="23456-high", straight_flushes="23456-high-a2345-low",
           five_card_order=["royal-flush", "straight"])
