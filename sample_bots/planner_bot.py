"""Planner bot: plans its hand as a set of plays and spends its control cards with care.

    python -m sample_bots.planner_bot --port 8003

How it thinks (every decision is a fresh look at the request; the bot keeps no state):

1. **Card counting.**  The cards not yet seen (``unseen``) are the pack minus its own hand
   minus every card in ``history``.  A combination is a *winner* when no combination that can
   be built from the unseen cards beats it (the two of spades, the last ace, the highest
   pair...), otherwise a *loser*.
2. **Planning.**  The hand is split into plays (five-card hands, triples, pairs, singles, and
   four-card plays where the rules allow them) minimising a cost: every play costs
   ``per_play``, every loser adds ``loser`` plus a little for being low, every winner earns
   ``-winner`` (a winner regains the lead, which is worth a loser played for free).  Five-card
   hands are searched (the ``max_fives`` most useful ones, at most three per hand); what is
   left splits rank by rank, each rank on its own.
3. **Leading.**  If the rest of the hand can be played out (at most one loser left), lead the
   winners and keep the loser for last (a "big ending" with a multi-card play when possible);
   otherwise dump the lowest loser first ("dump the trash"), bigger plays before smaller ones
   (they shed more and fewer opponents can follow).  When an opponent holds one card,
   lead multi-card plays, and if only singles remain lead the highest; with an opponent on two
   cards, avoid leading pairs they could beat.
4. **Following.**  Every listed play is scored by what the rest of the hand is worth after it
   (the best plan of the whole hand minus the best plan of what is left; shedding on someone
   else's trick is free) plus the lead a winner takes.  The bot plays its lowest planned play
   that beats the table, passes rather than break its plan, keeps winners (twos, aces) in hand
   early on unless it is close to going out, and accepts more damage when an opponent is about
   to go out or its own hand is above a penalty threshold ("get under the threshold").  With
   an opponent on one card it answers a single with its highest single.
5. **Legality.**  The bot learns everything from ``rules.options`` (suit order, straights,
   five-card types, triples, four-card plays, bombs, forbidden last plays, penalty tiers) and
   only ever answers an id from ``legal_moves``; anything its own model misjudges falls back
   to scoring the listed moves.

The bot never imports the referee: it would run unchanged against any implementation of the
protocol.  Decisions take well under a millisecond on average in four-player games and a few
milliseconds at worst (the planning search is bounded by ``max_nodes`` and ``budget_s``; 26-card
two-player hands stay under about 35 ms).  The weights in :class:`Params` were tuned with
``bench/bot_ladder.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from sample_bots.sdk import RANKS, Cards, rule_options, run

NAME = "planner"

# --------------------------------------------------------------------------- rule model

_NAT = ["34567", "45678", "56789", "6789T", "789TJ", "89TJQ", "9TJQK", "TJQKA"]
_DEFAULT_FIVE = ["straight", "flush", "full-house", "four-of-a-kind", "straight-flush"]
_RANK = {ch: i for i, ch in enumerate(RANKS)}

Window = tuple[tuple[int, ...], int, int]
"""(ranks, level, tie-break rank) of one sequence window."""


def _ordered(windows: list[str], tb: dict[str, str] | None = None) -> list[Window]:
    tb = tb or {}
    return [
        (tuple(_RANK[c] for c in w), i, _RANK[tb.get(w, w[-1])]) for i, w in enumerate(windows)
    ]


def _descending(windows: list[str]) -> list[Window]:
    def desc(w: str) -> list[int]:
        return sorted((_RANK[c] for c in w), reverse=True)

    ranked = sorted(windows, key=desc)
    return [(tuple(_RANK[c] for c in w), i, desc(w)[0]) for i, w in enumerate(ranked)]


_WRAP = [(RANKS * 2)[i : i + 5] for i in range(13)]
STRAIGHTS: dict[str, list[Window]] = {
    "ace-low": _ordered(["A2345", "23456", *_NAT]),
    "a2345-high": _ordered(["23456", *_NAT, "A2345"], {"A2345": "A"}),
    "23456-high": _ordered([*_NAT, "A2345", "23456"], {"A2345": "2", "23456": "2"}),
    "hong-kong": _ordered([*_NAT, "23456", "A2345"], {"A2345": "2", "23456": "2"}),
    "23456-high-a2345-low": _ordered(["A2345", *_NAT, "23456"], {"23456": "2"}),
    "no-a2345": _ordered(["23456", *_NAT]),
    "two-high": _ordered(["23456", *_NAT, "JQKA2"], {"JQKA2": "2"}),
    "descending": _descending(["23456", *_NAT, "JQKA2"]),
    "two-high-no-wrap": _ordered([*_NAT, "JQKA2"], {"JQKA2": "2"}),
    "indonesia": [*_ordered(_NAT), ((11, 12, 0, 1, 2), 8, 12), ((12, 0, 1, 2, 3), 8, 12)],
    "a2345-below-broadway": _ordered(["23456", *_NAT[:-1], "A2345", "TJQKA"], {"A2345": "A"}),
    "no-two": _ordered(_NAT),
    "wraparound": _descending(_WRAP),
}
STRAIGHT_ALIASES = {
    "standard": "ace-low",
    "malaysia": "23456-high",
    "singapore": "hong-kong",
    "vietnam": "no-two",
    "jqka2-high": "two-high-no-wrap",
}
"""Sequence orders by the names ``rules.options.straights`` uses (unknown names: natural
sequences 3-4-5-6-7 ... 10-J-Q-K-A only; ``legal_moves`` stays the authority)."""


class Rules:
    """What the bot needs from ``rules.options``, with the standard values as defaults."""

    def __init__(self, request: dict[str, Any]) -> None:
        o = rule_options(request)
        self.cards = Cards(o.get("suit_order", "DCHS"))
        self.ties = bool(o.get("suits_break_ties", True))
        self.triples = bool(o.get("triples", True))
        order = [str(x) for x in o.get("five_card_order", _DEFAULT_FIVE)]
        self.levels = {k: i for i, k in enumerate(order)}
        self.n_levels = max(1, len(order))
        self.five_compare = o.get("five_card_compare", "by-type")
        self.flush_compare = o.get("flush_compare", "suit-first")
        self.quads4 = o.get("four_card", "none") != "none"
        name = str(o.get("straights", "ace-low"))
        self.windows = STRAIGHTS.get(STRAIGHT_ALIASES.get(name, name)) or _ordered(_NAT)
        self.window_patterns = {frozenset(w[0]): w for w in self.windows}
        self.bomb_levels = {self.levels[k] for k in o.get("bomb_kinds", ()) if k in self.levels}
        self.bomb_targets = {int(x) for x in o.get("bomb_targets", ())}
        self.forbidden_final = {str(x) for x in o.get("forbidden_final", ())}
        self.pass_draws = o.get("pass_draw", "none") != "none"
        players = int(request.get("players") or o.get("players") or 4)
        penalty = o.get("penalty")
        pen: dict[str, Any] = penalty if isinstance(penalty, dict) else {}
        tiers = pen.get("tiers") or [[10, 2], [13, 3]]
        if players == 3 and pen.get("tiers_three_players"):
            tiers = pen["tiers_three_players"]
        if players == 2 and pen.get("tiers_two_players"):
            tiers = pen["tiers_two_players"]
        self.thresholds = sorted(int(t[0]) for t in tiers)
        self.flat_scoring = o.get("settlement") in (
            "pusoy-dos", "loser-pays", "places", "finishing-order"
        )
        lv = self.levels
        self.lv_straight = lv.get("straight", -1)
        self.lv_flush = lv.get("flush", -1)
        self.lv_sflush = lv.get("straight-flush", -1)
        self.lv_royal = lv.get("royal-flush", -1)
        self.lv_full = lv.get("full-house", -1)
        self.lv_quads = lv.get("four-of-a-kind", -1)
        self.lv_twopair = lv.get("two-pair", -1)
        self.lv_sisters = lv.get("sisters", -1)
        self.lv_tjunk = lv.get("three-of-a-kind", -1)

    def power(self, c: int) -> int:
        return c if self.ties else c & ~3

    def is_forbidden_final(self, mask: int, size: int) -> bool:
        ff = self.forbidden_final
        if not ff:
            return False
        twos = mask >> 48
        if "any-2" in ff and twos:
            return True
        if "any-2S" in ff and mask >> 51 & 1:
            return True
        if size == 1 and twos and ("single-2" in ff or ("single-2S" in ff and mask >> 51 & 1)):
            return True
        return size == 2 and "pair-of-2s" in ff and mask >> 48 << 48 == mask


_RULES_CACHE: dict[str, Rules] = {}


def rules_for(request: dict[str, Any]) -> Rules:
    key = json.dumps(request.get("rules"), sort_keys=True)
    r = _RULES_CACHE.get(key)
    if r is None:
        if len(_RULES_CACHE) > 64:
            _RULES_CACHE.clear()
        r = _RULES_CACHE[key] = Rules(request)
    return r


# --------------------------------------------------------------------------- combinations


def bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def nibble(mask: int, r: int) -> int:
    return (mask >> (4 * r)) & 15


def top_suit(nib: int) -> int:
    return nib.bit_length() - 1


@dataclass(frozen=True, slots=True)
class Combo:
    """A play: its cards (bit set of card ints), size, comparison key and five-card level."""

    mask: int
    size: int
    key: tuple[int, ...]
    level: int = -1


def classify(mask: int, rules: Rules) -> Combo | None:
    """The combination ``mask`` makes under the rules, or None (the bot's own model)."""
    cs = bits(mask)
    n = len(cs)
    ranks = sorted({c >> 2 for c in cs})
    if n == 1:
        return Combo(mask, 1, (rules.power(cs[0]),))
    if n in (2, 3, 4) and len(ranks) == 1:
        r = ranks[0]
        if n == 2:
            return Combo(mask, 2, (r * 4 + (top_suit(nibble(mask, r)) if rules.ties else 0),))
        if n == 3:
            return Combo(mask, 3, (r,)) if rules.triples else None
        return Combo(mask, 4, (64 + r,)) if rules.quads4 else None
    if n == 5:
        return _five(mask, cs, ranks, rules)
    if n == 13 and len(ranks) == 13:
        return Combo(mask, 13, (rules.power(max(cs)),))
    return None


def _five(mask: int, cs: list[int], ranks: list[int], rules: Rules) -> Combo | None:
    level, inner = _five_type(mask, cs, ranks, rules)
    if level < 0:
        return None
    if rules.five_compare == "highest-card":
        return Combo(mask, 5, (rules.power(max(cs)),), level)
    return Combo(mask, 5, (level, *inner), level)


def _five_type(
    mask: int,
    cs: list[int],
    ranks: list[int],
    rules: Rules,
) -> tuple[int, tuple[int, ...]]:
    suits = {c & 3 for c in cs}
    if len(ranks) == 5:
        w = rules.window_patterns.get(frozenset(ranks))
        suited = len(suits) == 1
        if w is not None:
            tb = w[2]
            inner = (w[1], top_suit(nibble(mask, tb)) if rules.ties else 0)
            if suited:
                if rules.lv_royal >= 0 and ranks == [7, 8, 9, 10, 11]:
                    return rules.lv_royal, inner
                if rules.lv_sflush >= 0:
                    return rules.lv_sflush, inner
                if rules.lv_flush > rules.lv_straight:
                    return rules.lv_flush, _flush_inner(ranks, cs[0] & 3, rules)
            return rules.lv_straight, inner
        if suited:
            return rules.lv_flush, _flush_inner(ranks, cs[0] & 3, rules)
        return -1, ()
    counts: dict[int, int] = {}
    for c in cs:
        counts[c >> 2] = counts.get(c >> 2, 0) + 1
    by_count = sorted(counts.items(), key=lambda kv: (-kv[1], -kv[0]))
    top_r, top_n = by_count[0]
    if top_n == 4:
        return rules.lv_quads, (top_r,)
    if top_n == 3:
        if len(counts) == 2:
            return rules.lv_full, (top_r,)
        return rules.lv_tjunk, (top_r,)
    if top_n == 2 and len(counts) == 3:
        hi, lo = by_count[0][0], by_count[1][0]
        key = (hi * 4 + (top_suit(nibble(mask, hi)) if rules.ties else 0),)
        if rules.lv_sisters >= 0 and hi == lo + 1:
            return rules.lv_sisters, key
        return rules.lv_twopair, key
    return -1, ()


def _flush_inner(ranks: list[int], suit: int, rules: Rules) -> tuple[int, ...]:
    sr = suit if rules.ties else 0
    desc = sorted(ranks, reverse=True)
    if rules.flush_compare == "top-card":
        return (desc[0] * 4 + sr,)
    if rules.flush_compare == "poker":
        return (*desc, sr)
    return (sr, *desc)


def beats(a: Combo, b: Combo, rules: Rules) -> bool:
    if a.size == b.size:
        if a.size == 5 and rules.five_compare == "same-type-only" and a.level != b.level:
            return False
        return a.key > b.key
    return a.size == 5 and b.size in rules.bomb_targets and a.level in rules.bomb_levels


def five_card_combos(hand: int, rules: Rules) -> list[Combo]:
    """Five-card combinations in ``hand`` worth planning with (kickers: the lowest card of a
    rank that is not otherwise needed; pairs of a full house: the lowest two)."""
    if not rules.levels:
        return []
    by_rank = [bits(hand & (15 << (4 * r))) for r in range(13)]
    out: dict[int, Combo] = {}

    def add(mask: int) -> None:
        if mask not in out:
            c = classify(mask, rules)
            if c is not None and c.size == 5:
                out[mask] = c

    if rules.lv_straight >= 0 or rules.lv_sflush >= 0 or rules.lv_royal >= 0:
        for ranks, _lv, _tb in rules.windows:
            lists = [by_rank[r] for r in ranks]
            if not all(lists):
                continue
            total = 1
            for lst in lists:
                total *= len(lst)
            if total <= 48:
                for pick in _product(lists):
                    add(sum(1 << c for c in pick))
            else:  # many choices: one per suit (straight flushes) and the lowest/highest mix
                for s in range(4):
                    if all(any(c & 3 == s for c in lst) for lst in lists):
                        add(sum(1 << (r * 4 + s) for r in ranks))
                add(sum(1 << lst[0] for lst in lists))
                add(sum(1 << lst[-1] for lst in lists))
    if rules.lv_flush >= 0:
        for s in range(4):
            suited = [c for c in bits(hand) if c & 3 == s]
            if len(suited) >= 5:
                picks: Iterable[tuple[int, ...]] = combinations(suited, 5)
                if len(suited) > 8:  # cap: the lowest five, plus windows of five
                    picks = [tuple(suited[i : i + 5]) for i in range(len(suited) - 4)]
                for pick in picks:
                    add(sum(1 << c for c in pick))
    if rules.lv_full >= 0 or rules.lv_tjunk >= 0 or rules.lv_quads >= 0:
        for r in range(13):
            lst = by_rank[r]
            if len(lst) >= 3:
                for trip in combinations(lst, 3):
                    tmask = sum(1 << c for c in trip)
                    for r2 in range(13):
                        if r2 != r and len(by_rank[r2]) >= 2 and rules.lv_full >= 0:
                            add(tmask | 1 << by_rank[r2][0] | 1 << by_rank[r2][1])
                    if rules.lv_tjunk >= 0:
                        lows = [by_rank[r2][0] for r2 in range(13) if r2 != r and by_rank[r2]]
                        for a, b in combinations(lows[:4], 2):
                            add(tmask | 1 << a | 1 << b)
            if len(lst) == 4 and rules.lv_quads >= 0:
                qmask = sum(1 << c for c in lst)
                for r2 in range(13):
                    if r2 != r and by_rank[r2]:
                        add(qmask | 1 << by_rank[r2][0])
    if rules.lv_twopair >= 0 or rules.lv_sisters >= 0:
        pairs = [r for r in range(13) if len(by_rank[r]) >= 2]
        for a, b in combinations(pairs, 2):
            pm = sum(1 << c for c in by_rank[a][:2] + by_rank[b][:2])
            for r3 in range(13):
                if r3 not in (a, b) and by_rank[r3]:
                    add(pm | 1 << by_rank[r3][0])
                    break
    return list(out.values())


def _product(lists: list[list[int]]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for lst in lists:
        out = [(*p, c) for p in out for c in lst]
    return out


# --------------------------------------------------------------------------- what is out


class Unseen:
    """The cards this seat has not seen: a bound on what opponents can hold."""

    def __init__(self, mask: int, rules: Rules) -> None:
        self.mask = mask
        self.rules = rules
        self.nibs = [nibble(mask, r) for r in range(13)]
        self.counts = [n.bit_count() for n in self.nibs]
        self._best5: dict[int, tuple[int, ...] | None] = {}
        self._bomb: bool | None = None

    def higher_singles(self, c: int) -> int:
        p = self.rules.power(c)
        return (self.mask >> (p + 4 if not self.rules.ties else c + 1)).bit_count() if p < 51 else 0

    def beatable(self, combo: Combo) -> bool:
        return self.threats(combo) > 0

    def threats(self, combo: Combo) -> int:
        """How many unseen combinations (counted roughly: cards, ranks, types) beat ``combo``;
        0 means it is a winner."""
        rules = self.rules
        size = combo.size
        if size in rules.bomb_targets and self.can_bomb():
            return 1 + self._threats(combo)
        return self._threats(combo)

    def _threats(self, combo: Combo) -> int:
        rules = self.rules
        size = combo.size
        if size == 1:
            return self.higher_singles(combo.mask.bit_length() - 1)
        if size == 2:
            k = combo.key[0]
            n = 0
            for r in range(k >> 2, 13):
                top = top_suit(self.nibs[r]) if rules.ties else 0
                if self.counts[r] >= 2 and r * 4 + top > k:
                    n += 1
            return n
        if size == 3:
            return sum(1 for r in range(combo.key[0] + 1, 13) if self.counts[r] >= 3)
        if size == 4:
            return sum(1 for r in range(combo.key[0] - 64 + 1, 13) if self.counts[r] == 4)
        if size == 5:
            if rules.five_compare == "highest-card":
                if self.mask.bit_count() < 5:
                    return 0
                return self.higher_singles(combo.mask.bit_length() - 1)
            levels = (
                [combo.level]
                if rules.five_compare == "same-type-only"
                else range(combo.level, rules.n_levels)
            )
            n = 0
            for lv in levels:
                best = self.best_five(lv)
                if best is not None and (lv > combo.level or best > combo.key[1:]):
                    n += 1 if lv == combo.level else 2
            return n
        return 0

    def can_bomb(self) -> bool:
        if self._bomb is None:
            self._bomb = any(self.best_five(lv) is not None for lv in self.rules.bomb_levels)
        return self._bomb

    def best_five(self, level: int) -> tuple[int, ...] | None:
        """Inner key of the best unseen five-card hand of ``level`` (None: none possible)."""
        if level not in self._best5:
            self._best5[level] = self._compute_best_five(level)
        return self._best5[level]

    def _compute_best_five(self, level: int) -> tuple[int, ...] | None:
        rules, nibs, counts = self.rules, self.nibs, self.counts
        total = self.mask.bit_count()
        if total < 5:
            return None
        best: tuple[int, ...] | None = None

        def better(k: tuple[int, ...]) -> None:
            nonlocal best
            if best is None or k > best:
                best = k

        if level in (rules.lv_straight, rules.lv_sflush, rules.lv_royal):
            suited_only = level != rules.lv_straight
            for ranks, wl, tb in rules.windows:
                if level == rules.lv_royal and ranks != (7, 8, 9, 10, 11):
                    continue
                common = 15
                for r in ranks:
                    common &= nibs[r]
                if suited_only:
                    if common:
                        better((wl, top_suit(common) if rules.ties else 0))
                elif all(nibs[r] for r in ranks):
                    better((wl, top_suit(nibs[tb]) if rules.ties else 0))
        if level == rules.lv_flush:
            for s in range(4):
                held = [r for r in range(13) if nibs[r] >> s & 1]
                if len(held) >= 5:
                    better(_flush_inner(held[-5:], s, rules))
        if level == rules.lv_full:
            for r in range(12, -1, -1):
                if counts[r] >= 3 and any(counts[q] >= 2 for q in range(13) if q != r):
                    better((r,))
                    break
        if level == rules.lv_tjunk:
            for r in range(12, -1, -1):
                if counts[r] >= 3 and total - counts[r] >= 2:
                    better((r,))
                    break
        if level == rules.lv_quads:
            for r in range(12, -1, -1):
                if counts[r] == 4 and total > 4:
                    better((r,))
                    break
        if level in (rules.lv_twopair, rules.lv_sisters):
            prs = [r for r in range(13) if counts[r] >= 2]
            for hi in reversed(prs):
                lows = [q for q in prs if q < hi and (level != rules.lv_sisters or q == hi - 1)]
                if lows and total >= 5:
                    better((hi * 4 + (top_suit(nibs[hi]) if rules.ties else 0),))
                    break
        return best


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class Params:
    """Weights of the planning cost and the following policy (tuned with bench/bot_ladder.py)."""

    per_play: float = 1.0
    loser: float = 1.0
    lowness: float = 0.3
    """Extra cost of a loser for being low (a low loser is harder to get rid of)."""
    winner: float = 0.5
    """Credit for a winner: it regains the lead."""
    control_decay: float = 0.0
    """A play that only ``n`` unseen plays beat counts as ``control_decay ** n`` of a winner
    (0: only sure winners count)."""
    break_tolerance: float = 0.35
    """Largest plan damage accepted to beat a play in ordinary circumstances."""
    danger_tolerance: float = 1.5
    """Extra damage accepted when an opponent is about to go out (twice that on two cards)."""
    own_weight: float = 0.0
    """How much of a play's own planned cost counts against playing it now (0: shedding on
    someone else's trick is free)."""
    lead_value: float = 0.5
    """Worth of taking the lead with a winner."""
    keep_winners_above: int = 6
    """Keep winners in hand while every opponent holds more than this many cards..."""
    keep_winners_losers: int = 2
    """... and the plan still has more than this many losers."""
    danger: int = 3
    """An opponent with this many cards or fewer is about to go out: play to stop them."""
    two_card_care: bool = True
    """With an opponent on two cards, do not lead a pair that can be beaten."""
    lead_size_bonus: float = 0.3
    """When leading a loser, prefer bigger plays by this much strength per extra card."""
    pressure_opp: int = 6
    """Above a penalty threshold, shed hard once an opponent holds this many cards or fewer."""
    pressure_tolerance: float = 1.0
    """Extra plan damage accepted under that pressure."""
    pressure_size: float = 0.3
    """Under that pressure, worth of each card a play sheds (leading and following)."""
    max_fives: int = 40
    """Five-card hands searched at most (the most useful ones; matters for big hands)."""
    max_exact: int = 60
    """Listed moves evaluated with a full plan of the rest (lowest first; the others get an
    estimate); matters only for long lists, e.g. answering a five with 26 cards."""
    max_nodes: int = 1000
    """Planning search nodes per decision (a 13-card hand needs a few dozen, 26 cards thousands)."""
    budget_s: float = 0.03
    """Wall-clock cap of the planning search, whatever the node count."""


class Planner:
    """One decision's worth of planning: combo costs, five-card search, and plan memo."""

    def __init__(self, rules: Rules, unseen: Unseen, params: Params) -> None:
        self.rules = rules
        self.unseen = unseen
        self.prm = params
        self._cost: dict[int, tuple[float, bool]] = {}
        self._rank_memo: dict[int, tuple[float, tuple[int, ...]]] = {}
        self._memo: dict[int, tuple[float, tuple[int, ...]]] = {}
        self.fives: list[Combo] = []
        self.deadline = time.perf_counter() + params.budget_s
        self.nodes = 0

    def set_fives(self, fives: list[Combo], hand: int) -> None:
        """The five-card hands to search, best first, at most ``max_fives`` of them (ranked by
        how much each one alone improves the plan without fives)."""
        if len(fives) > self.prm.max_fives:

            def gain(f: Combo) -> float:
                # Only the ranks the five touches change in the plan without fives.
                d = self.cost_of(f)[0]
                for r in {c >> 2 for c in bits(f.mask)}:
                    d += self.rank_plan(r, nibble(hand & ~f.mask, r))[0]
                    d -= self.rank_plan(r, nibble(hand, r))[0]
                return d

            fives = sorted(fives, key=gain)[: self.prm.max_fives]
        self.fives = fives

    def out_of_time(self) -> bool:
        """The search budget is spent: a node count (deterministic, so replays and the
        ladder repeat exactly) with a wall-clock cap for slow machines."""
        return self.nodes >= self.prm.max_nodes or time.perf_counter() >= self.deadline

    # -- combo cost -------------------------------------------------------------------
    def strength(self, c: Combo) -> float:
        """0 (lowest) .. 1 (highest) within its size, for ordering and tie-breaks."""
        top = c.mask.bit_length() - 1
        if c.size == 5:
            return (c.level + (top >> 2) / 13) / self.rules.n_levels
        return top / 51

    def winner(self, c: Combo) -> bool:
        return not self.unseen.beatable(c)

    def cost_of(self, c: Combo) -> tuple[float, bool]:
        got = self._cost.get(c.mask)
        if got is None:
            prm = self.prm
            threats = self.unseen.threats(c)
            # q: a rough chance that the play holds the trick (1 for a winner).
            q = prm.control_decay**threats
            cost = (
                prm.per_play
                - prm.winner * q
                + (prm.loser + prm.lowness * (1 - self.strength(c))) * (1 - q)
            )
            got = self._cost[c.mask] = (cost, threats == 0)
        return got

    def combo(self, mask: int) -> Combo | None:
        return classify(mask, self.rules)

    # -- rest of the hand, rank by rank ---------------------------------------------------
    def rank_plan(self, r: int, nib: int) -> tuple[float, tuple[int, ...]]:
        key = r << 4 | nib
        got = self._rank_memo.get(key)
        if got is not None:
            return got
        cards = [r * 4 + s for s in range(4) if nib >> s & 1]
        best: tuple[float, tuple[int, ...]] = (float("inf"), ())
        for groups in _partitions(cards):
            total, masks = 0.0, []
            ok = True
            for g in groups:
                m = sum(1 << c for c in g)
                c = self.combo(m)
                if c is None:
                    ok = False
                    break
                total += self.cost_of(c)[0]
                masks.append(m)
            if ok and total < best[0]:
                best = (total, tuple(masks))
        self._rank_memo[key] = best
        return best

    def rest_plan(self, mask: int) -> tuple[float, tuple[int, ...]]:
        total = 0.0
        plays: list[int] = []
        for r in range(13):
            nib = nibble(mask, r)
            if nib:
                c, ms = self.rank_plan(r, nib)
                total += c
                plays.extend(ms)
        return total, tuple(plays)

    # -- whole plan ---------------------------------------------------------------------------
    def plan(self, mask: int) -> tuple[float, tuple[int, ...]]:
        """Cheapest split of ``mask`` into plays: (cost, play masks)."""
        got = self._memo.get(mask)
        if got is not None:
            return got
        best = self.rest_plan(mask)
        if mask.bit_count() >= 5 and not self.out_of_time():
            self.nodes += 1
            low = mask & -mask
            for f in self.fives:
                if f.mask & mask != f.mask:
                    continue
                # Canonical order: the five holding the lowest card of mask goes first, or
                # that card stays out of every five (then it is planned with the rest).
                if not f.mask & low:
                    continue
                sub_cost, sub = self.plan(mask & ~f.mask)
                total = self.cost_of(f)[0] + sub_cost
                if total < best[0]:
                    best = (total, (f.mask, *sub))
            rest_low = mask & ~low
            if rest_low.bit_count() >= 5:
                # Plans where the lowest card is not in a five: plan it apart.
                c_low, ms_low = self._without_low(mask, low)
                if c_low < best[0]:
                    best = (c_low, ms_low)
        self._memo[mask] = best
        return best

    def _without_low(self, mask: int, low: int) -> tuple[float, tuple[int, ...]]:
        """Best plan in which the card ``low`` is in no five-card hand."""
        r = (low.bit_length() - 1) >> 2
        rank_cards = mask & (15 << (4 * r))
        others = mask & ~rank_cards
        # The rank of the lowest card is planned as small plays; the rest recursively, but
        # fives there may not use cards of this rank (keeps the search canonical and small).
        c_rank, ms_rank = self.rank_plan(r, nibble(mask, r))
        c_rest, ms_rest = self.plan(others)
        return c_rank + c_rest, ms_rank + ms_rest


def _partitions(cards: list[int]) -> list[list[list[int]]]:
    """Every way to split ``cards`` (at most four) into groups."""
    if not cards:
        return [[]]
    first, rest = cards[0], cards[1:]
    out = []
    for part in _partitions(rest):
        out.append([[first], *part])
        for i in range(len(part)):
            out.append([*part[:i], [first, *part[i]], *part[i + 1 :]])
    return out


# --------------------------------------------------------------------------- decisions


class Decision:
    """Everything about one ``/move`` request, parsed once."""

    def __init__(self, request: dict[str, Any], params: Params) -> None:
        self.request = request
        self.rules = rules = rules_for(request)
        cards = rules.cards
        self.seat = int(request.get("seat", 0))
        self.hand = cards.mask(request.get("hand", ()))
        seen = self.hand
        for t in request.get("history", ()):
            seen |= cards.mask(t.get("cards", ()))
        self.unseen = Unseen(((1 << 52) - 1) & ~seen, rules)
        counts = list(request.get("card_counts", ()))
        self.opp_counts = [
            n for s, n in enumerate(counts) if s != self.seat and isinstance(n, int) and n > 0
        ]
        self.min_opp = min(self.opp_counts, default=13)
        self.exact_left = params.max_exact
        self.moves: list[tuple[str, int]] = []
        self.pass_id: str | None = None
        for m in request["legal_moves"]:
            if m.get("cards"):
                self.moves.append((m["id"], cards.mask(m["cards"])))
            else:
                self.pass_id = m["id"]
        # Lowest plays first (whatever order the list came in): they get exact evaluation.
        # (Bit sets compare like their cards listed high to low.)
        self.moves.sort(key=lambda x: (x[1].bit_count(), x[1]))
        self.by_mask = {mask: mid for mid, mask in self.moves}
        table = request.get("table")
        self.table = table if isinstance(table, dict) and table.get("cards") else None
        self.planner = Planner(rules, self.unseen, params)
        self.planner.set_fives(five_card_combos(self.hand, rules), self.hand)
        self.prm = params
        self._pressure: bool | None = None

    # -- helpers ----------------------------------------------------------------------------
    def combo(self, mask: int) -> Combo | None:
        return classify(mask, self.rules)

    def plan_of(self, mask: int) -> tuple[float, list[Combo]]:
        cost, masks = self.planner.plan(mask)
        combos = [c for c in (self.combo(m) for m in masks) if c is not None]
        return cost, combos

    def winners_losers(self, combos: list[Combo]) -> tuple[list[Combo], list[Combo]]:
        w = [c for c in combos if self.planner.cost_of(c)[1]]
        ls = [c for c in combos if not self.planner.cost_of(c)[1]]
        return w, ls

    def after(self, mask: int, base: float, plan: list[Combo], own: float) -> float:
        """Plan cost of the hand without ``mask`` (exact for a planned play; estimated as one
        extra loser once the search budget is spent)."""
        if any(c.mask == mask for c in plan):
            return base - own
        if self.planner.out_of_time() or self.exact_left <= 0:
            return base - own + self.prm.per_play + self.prm.loser
        self.exact_left -= 1
        return self.planner.plan(self.hand & ~mask)[0]

    def move_cost(self, mask: int, base: float, plan: list[Combo]) -> float:
        """Plan damage of playing ``mask`` now: its cost plus the plan of the rest."""
        c = self.combo(mask)
        own = self.planner.cost_of(c)[0] if c is not None else self.prm.per_play + self.prm.loser
        return own + self.after(mask, base, plan, own)

    # -- choice -----------------------------------------------------------------------------
    def choose(self) -> str:
        if not self.moves:
            return self.pass_id or self.request["legal_moves"][0]["id"]
        for mid, mask in self.moves:
            if mask == self.hand:
                return mid  # going out
        if self.table is None:
            return self.lead()
        if self.pass_id is not None and self.table.get("seat") == self.seat:
            return self.pass_id  # everyone else is shut out: passing takes the lead
        return self.follow()

    def lead(self) -> str:
        base, plan = self.plan_of(self.hand)
        winners, losers = self.winners_losers(plan)
        legal = [c for c in plan if c.mask in self.by_mask]
        if not legal:
            # None of the plan's plays is allowed (opening card, duties, a rule the model
            # misses): score every listed play by the plan it leaves.
            scored = sorted(
                (self.move_cost(mask, base, plan) - 0.01 * mask.bit_count(), mask)
                for _, mask in self.moves
            )
            return self.by_mask[scored[0][1]]
        rules = self.rules
        # Can go out: lead winners first and keep the one loser for the end.
        if len(losers) <= 1:
            finals = [c for c in legal if not rules.is_forbidden_final(c.mask, c.size)]
            firsts = [c for c in legal if c not in finals]
            if firsts:  # a play that may not be the last goes first
                return self.by_mask[max(firsts, key=self._lead_key_high).mask]
            legal_w = [c for c in legal if c in winners]
            if legal_w and (losers or len(plan) > 1):
                return self.by_mask[max(legal_w, key=lambda c: (c.size, -self._str(c))).mask]
            return self.by_mask[min(legal, key=self._str).mask]
        # An opponent about to go out: multi-card plays, else the highest single.
        if self.min_opp == 1:
            multi = [c for c in legal if c.size > 1]
            if multi:
                return self.by_mask[min(multi, key=self._lead_key_low).mask]
            singles = [(mid, mask) for mid, mask in self.moves if mask.bit_count() == 1]
            if singles:
                return max(singles, key=lambda x: x[1])[0]
        pool = [c for c in legal if c in losers] or legal
        if self.min_opp == 2 and self.prm.two_card_care:
            safer = [c for c in pool if c.size != 2 or not self.unseen.beatable(c)]
            pool = safer or pool
        return self.by_mask[min(pool, key=self._lead_key_low).mask]

    def _str(self, c: Combo) -> float:
        return self.planner.strength(c)

    def _lead_key_low(self, c: Combo) -> float:
        bonus = self.prm.lead_size_bonus + (self.prm.pressure_size if self.pressure() else 0.0)
        return self._str(c) - bonus * (c.size - 1)

    def pressure(self) -> bool:
        """Holding enough cards to pay a multiplied penalty while an opponent gets close to
        going out ("get under the threshold")."""
        if self._pressure is None:
            n = self.hand.bit_count()
            self._pressure = (
                not self.rules.flat_scoring
                and any(n >= t for t in self.rules.thresholds)
                and self.min_opp <= self.prm.pressure_opp
            )
        return self._pressure

    def _lead_key_high(self, c: Combo) -> tuple[int, float]:
        return (c.size, self._str(c))

    def follow(self) -> str:
        prm, rules = self.prm, self.rules
        base, plan = self.plan_of(self.hand)
        winners, losers = self.winners_losers(plan)
        pressure = self.pressure()
        scored = []
        for mid, mask in self.moves:
            c = self.combo(mask)
            if c is None:  # the model does not know this play: judge by its size only
                c = Combo(mask, mask.bit_count(), (0,))
                own, win = prm.per_play + prm.loser, False
            else:
                own, win = self.planner.cost_of(c)
            after = self.after(mask, base, plan, own)
            # What playing it now gains over passing: the plan gets cheaper by what this
            # play would have cost later (minus a share for plays that were not planned),
            # and a winner takes the lead.
            gain = base - after - prm.own_weight * own + (prm.lead_value if win else 0.0)
            if pressure:
                gain += prm.pressure_size * c.size
            scored.append((gain, c, mid, win))
        if not scored:
            return self.pass_id or self.request["legal_moves"][0]["id"]
        table_size = len(self.table.get("cards", ())) if self.table is not None else 0
        danger = self.min_opp <= prm.danger
        # Stop a single from going out: answer a single with the highest single.
        if self.min_opp == 1 and table_size == 1:
            singles = [x for x in scored if x[1].size == 1]
            if singles:
                return max(singles, key=lambda x: x[1].mask)[2]
        scored.sort(key=lambda x: (-x[0], self._str(x[1])))
        gain, c, mid, is_winner = scored[0]
        if self.pass_id is None:
            return mid
        # Close to going out: win the trick when what is left can be played out.
        _, after_plan = self.plan_of(self.hand & ~c.mask)
        if is_winner and len(self.winners_losers(after_plan)[1]) <= 1:
            return mid
        tolerance = prm.break_tolerance
        if danger:
            tolerance += prm.danger_tolerance * (2 if self.min_opp <= 2 else 1)
        if pressure:
            tolerance += prm.pressure_tolerance
        if rules.pass_draws and self.request.get("stock_count"):
            tolerance += 0.5
        if gain < -tolerance:
            return self.pass_id
        if is_winner and not danger:
            # Keep control cards early, unless they are plentiful.
            keep = (
                self.min_opp > prm.keep_winners_above
                and len(losers) > prm.keep_winners_losers
                and len(losers) > len(winners)
            )
            if keep:
                return self.pass_id
        return mid


def make_choose(params: Params | None = None) -> Any:
    """A ``choose`` function with the given weights."""
    p = params or Params()

    def choose(request: dict[str, Any]) -> str:
        return Decision(request, p).choose()

    return choose


choose = make_choose()


if __name__ == "__main__":
    run(choose, name=NAME, author="Big Two Arena samples", version="1")
