"""Scoring a finished deal: penalties for cards left, then a settlement into scores.

Penalties follow :class:`~referee.game.rules.PenaltySchedule` (card values, count tiers, the
doubling conventions); :class:`~referee.game.rules.Settlement` turns them into each seat's
score for the deal (higher is better).  Kept apart from the state machine so each convention
is one small function.

Scoring reads a finished deal through :class:`FinishedDeal`, the few fields it needs, rather
than importing :class:`~referee.game.state.Deal`: the state machine calls :func:`settle`, so
importing it back would make the two modules one cycle that can only be read together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

from .bits import TWOS, has_four_of_a_kind, lowest_suit
from .cards import Mask
from .compiled import Tables
from .movegen import five_card_keyed, leading_plays
from .outcome import Outcome, Termination
from .rules import AssistReading, CardValues, PenaltySchedule, RuleSet, Settlement


class FinishedDeal(Protocol):
    """What scoring reads of a deal (:class:`referee.game.state.Deal` has these fields)."""

    @property
    def rules(self) -> RuleSet: ...
    @property
    def t(self) -> Tables: ...
    @property
    def hands(self) -> Sequence[int]:
        """Cards each seat still holds."""
    @property
    def log(self) -> Sequence[tuple[int, int, int]]:
        """Every turn as ``(seat, move, drew)``."""
    @property
    def step(self) -> int:
        """Turn direction: 1 or -1."""
    @property
    def starter(self) -> int: ...
    @property
    def trick_start(self) -> int: ...
    @property
    def play_start(self) -> int: ...
    @property
    def finished(self) -> Sequence[int]: ...
    @property
    def trick_winners(self) -> Sequence[tuple[int, int]]: ...


_HONOURS = [1] * 8 + [2, 2, 2, 3, 4]  # 3..10 one, J Q K two, A three, 2 four
_PIP = list(range(1, 14))
_TWOS_FIVE = [1] * 12 + [5]


def card_points(hand: Mask, values: CardValues) -> int:
    """Value of a hand's cards before multipliers."""
    if values is CardValues.FLAT:
        return hand.bit_count()
    table = {CardValues.HONOURS: _HONOURS, CardValues.PIP: _PIP}.get(values, _TWOS_FIVE)
    return sum(((hand >> (4 * r)) & 15).bit_count() * table[r] for r in range(13))


def tier_multiplier(cards: int, tiers: tuple[tuple[int, int], ...]) -> int:
    mult = 1
    for at_least, m in tiers:
        if cards >= at_least:
            mult = m
    return mult


def holds_power(hand: Mask, deal: FinishedDeal) -> bool:
    """A two, four of a kind, or a straight flush in hand (for ``unused_power_doubles``)."""
    if hand & TWOS:
        return True
    if has_four_of_a_kind(hand):
        return True
    t = deal.t
    for s in range(4):
        suited = hand & t.suit_masks[s]
        for pattern in t.suited_window_of:
            if (suited >> s) & pattern == pattern:
                return True
    return False


def penalty_of(deal: FinishedDeal, seat: int) -> int:
    """Penalty points of one losing seat."""
    sched: PenaltySchedule = deal.rules.penalty
    hand = deal.hands[seat]
    n = hand.bit_count()
    if n == 0:
        return 0
    base = card_points(hand, sched.card_values)
    tiers = deal.rules.penalty_tiers()
    mult = tier_multiplier(n, tiers)
    if sched.multiplier_only_for_starter and seat != deal.starter:
        mult = 1
    if sched.twos_double:
        mult *= 2 ** (hand & TWOS).bit_count()
    if sched.unused_power_doubles and holds_power(hand, deal):
        mult *= 2
    return base * mult


def _final_play(deal: FinishedDeal) -> int:
    for _seat, move, _drew in reversed(deal.log):
        if move:
            return move
    return 0


def _finish_multiplier(deal: FinishedDeal) -> int:
    sched = deal.rules.penalty
    last = _final_play(deal)
    if not last:
        return 1
    if sched.finishing_twos_double and last & TWOS == last:
        return 2
    if sched.special_finish_doubles and (
        last & TWOS or has_four_of_a_kind(last) or _is_straight_flush(last, deal)
    ):
        return 2
    return 1


def _is_straight_flush(m: Mask, deal: FinishedDeal) -> bool:
    if m.bit_count() != 5:
        return False
    s = lowest_suit(m)
    return m & deal.t.suit_masks[s] == m and (m >> s) in deal.t.suited_window_of


def _assistant(deal: FinishedDeal, winner: int) -> int | None:
    """The seat that let the winner go out with a single it could have stopped (if any).

    Player A is the player before the winner in turn order: 'if the person playing after you
    has only one card left ... If you ignore these precautions, and as a result the person
    after you wins by playing their single card, you have to pay' (000:95-100).  A assisted
    when the winner's last play was a single on a trick of singles in which A had a turn, and
    at its last such turn A held a single higher than the winner's card -- whether A then led
    or played a lower single or passed (000:344 'Player A could have prevented this from
    happening by playing a higher card'; 002:65).  Under ``assist_reading=precautions``
    (000:95-100) A also assisted when that turn was a lead of a single while A held a
    combination of more than one card it could have led.  A winner who led its last card was
    assisted by nobody.
    """
    log = deal.log
    if not log or log[-1][0] != winner or log[-1][1].bit_count() != 1:
        return None
    before = _seat_before(deal, winner)
    if before is None:
        return None
    # The turns of the trick the winner finished, before its last play.
    start = max(deal.trick_start, deal.play_start)
    trick = log[start:-1]
    if any(move and move.bit_count() != 1 for _seat, move, _drew in trick):
        return None  # not a trick of singles
    for i in range(len(trick) - 1, -1, -1):
        seat, move, drew = trick[i]
        if seat != before:
            continue
        held = (deal.hands[seat] | move) & ~drew  # what the seat held at that turn
        if _beats_single(held, log[-1][1], deal.t):
            return seat
        led = bool(move) and not any(m for _s, m, _d in trick[:i])
        if led and _failed_to_lead_a_combination(deal, held):
            return seat
        return None
    return None


def _beats_single(held: Mask, last: Mask, t: Tables) -> bool:
    """Whether ``held`` has a single higher than the single ``last``."""
    power = t.power
    lp = power[last.bit_length() - 1]
    m = held
    while m:
        low = m & -m
        if power[low.bit_length() - 1] > lp:
            return True
        m ^= low
    return False


def _failed_to_lead_a_combination(deal: FinishedDeal, held: Mask) -> bool:
    """000:98 'If it is your turn to lead, you should lead a combination more than one card if
    possible' (``assist_reading=precautions`` only): ``held`` could have led one."""
    if deal.rules.penalty.assist_reading is not AssistReading.PRECAUTIONS:
        return False
    return any(m & (m - 1) for m in leading_plays(held, deal.t))


def _seat_before(deal: FinishedDeal, winner: int) -> int | None:
    """The seat whose turn comes just before the winner's among the seats still holding cards
    (the winner's own hand is empty now, so it is looked for directly)."""
    n = deal.rules.players
    s = winner
    for _ in range(n - 1):
        s = (s - deal.step) % n
        if deal.hands[s]:
            return s
    return None


def settle(deal: FinishedDeal, how: Termination, winner: int | None, detail: str) -> Outcome:
    """Score the deal in its final state."""
    rules = deal.rules
    n = rules.players
    cards = tuple(h.bit_count() for h in deal.hands)
    order = tuple(deal.finished) if deal.finished else ((winner,) if winner is not None else ())
    if how in (Termination.DRAW, Termination.STALEMATE):
        return Outcome(how, None, order, cards, (0,) * n, (0,) * n, detail)
    if how is Termination.INSTANT_LOSS:
        # The loser pays every other seat as if it had lost with a full hand.
        assert winner is not None
        loser = winner
        pen = [0] * n
        pen[loser] = penalty_of(deal, loser)
        scores = [pen[loser] if s != loser else -pen[loser] * (n - 1) for s in range(n)]
        return Outcome(how, None, (), cards, tuple(pen), tuple(scores), detail)
    assert winner is not None
    pens = [0 if s == winner else penalty_of(deal, s) for s in range(n)]
    fm = _finish_multiplier(deal) if how is Termination.PLAYED_OUT else 1
    pens = [p * fm for p in pens]
    st = rules.settlement
    if rules.penalty.assist_penalty and how is Termination.PLAYED_OUT:
        a = _assistant(deal, winner)
        if a is not None:
            total = sum(pens)
            pens = [0] * n
            pens[a] = total
            detail = (detail + f"; seat {a} assisted the winner").lstrip("; ")
    scores = _settle_scores(deal, st, winner, pens, cards, order)
    return Outcome(how, winner, order, cards, tuple(pens), tuple(scores), detail)


class _Finish(NamedTuple):
    """What every settlement may read: the deal, its winner, the penalties (after any
    multiplier and assistance), the cards left and the finishing order."""

    deal: FinishedDeal
    winner: int
    pens: list[int]
    cards: tuple[int, ...]
    order: tuple[int, ...]


def _settle_scores(
    deal: FinishedDeal,
    st: Settlement,
    winner: int,
    pens: list[int],
    cards: tuple[int, ...],
    order: tuple[int, ...],
) -> list[int]:
    """Each seat's score for the deal under settlement ``st`` (one small function each)."""
    rule = _SETTLEMENTS.get(st)
    if rule is None:
        raise AssertionError(f"unknown settlement {st}")
    return rule(_Finish(deal, winner, pens, cards, order))


def _winner_collects(f: _Finish) -> list[int]:
    pens = f.pens
    return [sum(pens) if s == f.winner else -pens[s] for s in range(len(pens))]


def _pairwise(f: _Finish) -> list[int]:
    pens, n = f.pens, len(f.pens)
    return [sum(pens[j] - pens[i] for j in range(n)) for i in range(n)]


def _penalty_only(f: _Finish) -> list[int]:
    return [-p for p in f.pens]


def _pairwise_difference(f: _Finish) -> list[int]:
    """Every pair settles by the difference in card counts, the multiplier chosen by it."""
    tiers = f.deal.rules.penalty.tiers
    cards = f.cards
    n = len(f.pens)
    out = [0] * n
    for i in range(n):
        for j in range(n):
            d = cards[i] - cards[j]
            if d > 0:
                out[i] -= d * tier_multiplier(d, tiers)
            elif d < 0:
                out[i] += -d * tier_multiplier(-d, tiers)
    return out


def _pusoy_dos(f: _Finish) -> list[int]:
    last = _final_play(f.deal)
    return [2 ** (last & TWOS).bit_count() if s == f.winner else 0 for s in range(len(f.pens))]


def _finishing_order(f: _Finish) -> list[int]:
    n = len(f.pens)
    out = [0] * n
    for place, s in enumerate(f.order):
        out[s] = n - 1 - place
    return out


def _places(f: _Finish) -> list[int]:
    n = len(f.pens)
    points = [*[5, 3, 1][: n - 1], 0]
    out = [0] * n
    for place, s in enumerate(f.order):
        out[s] = points[place] if place < len(points) else 0
    return out


def _loser_pays(f: _Finish) -> list[int]:
    loser = _taiwan_loser(f.deal, f.winner)
    stake = f.deal.rules.loser_stake
    return [
        stake if s == f.winner else (-stake if s == loser else 0) for s in range(len(f.pens))
    ]


def _teams(f: _Finish) -> list[int]:
    """The winner's team wins when it holds fewer cards in total (ties were played off)."""
    n, cards, winner = len(f.pens), f.cards, f.winner
    mine = sum(cards[s] for s in range(n) if s % 2 == winner % 2)
    theirs = sum(cards[s] for s in range(n) if s % 2 != winner % 2)
    won = winner % 2 if mine < theirs else 1 - winner % 2
    return [1 if s % 2 == won else -1 for s in range(n)]


def _indonesia(f: _Finish) -> list[int]:
    return [-p for p in _indonesia_points(f.deal, f.winner, f.pens)]


_SETTLEMENTS: dict[Settlement, Callable[[_Finish], list[int]]] = {
    Settlement.WINNER_COLLECTS: _winner_collects,
    Settlement.PAIRWISE: _pairwise,
    Settlement.PENALTY_ONLY: _penalty_only,
    Settlement.PAIRWISE_DIFFERENCE: _pairwise_difference,
    Settlement.PUSOY_DOS: _pusoy_dos,
    Settlement.FINISHING_ORDER: _finishing_order,
    Settlement.PLACES: _places,
    Settlement.LOSER_PAYS: _loser_pays,
    Settlement.TEAMS: _teams,
    Settlement.INDONESIA: _indonesia,
}
"""The scores of each settlement (:class:`~referee.game.rules.Settlement`)."""


def _taiwan_loser(deal: FinishedDeal, winner: int) -> int:
    """Taiwan: highest honour hand, else highest two or ace, else most cards, else highest card."""
    t = deal.t
    seats = [s for s in range(deal.rules.players) if s != winner]
    honours: list[tuple[int, int]] = []
    for s in seats:
        h = deal.hands[s]
        for key, m in five_card_keyed(h, t):
            if has_four_of_a_kind(m) or _is_straight_flush(m, deal):
                honours.append((key, s))
    if honours:
        return max(honours)[1]
    order = t.order
    high = [
        (max(order[c] for c in range(44, 52) if deal.hands[s] >> c & 1), s)
        for s in seats
        if deal.hands[s] & (0xFF << 44)
    ]
    if high:
        return max(high)[1]
    most = max(deal.hands[s].bit_count() for s in seats)
    tied = [s for s in seats if deal.hands[s].bit_count() == most]
    if len(tied) == 1:
        return tied[0]
    return max((max(order[c] for c in range(52) if deal.hands[s] >> c & 1), s) for s in tied)[1]


def _indonesia_points(deal: FinishedDeal, winner: int, pens: list[int]) -> list[int]:
    """Indonesian scoring (lower is better): bonuses for unbeaten specials, winner's finish."""
    n = deal.rules.players
    pts = list(pens)
    last = _final_play(deal)
    for i, (seat, m) in enumerate(deal.trick_winners):
        bonus = _special_value(m, deal)
        if bonus:
            final = i == len(deal.trick_winners) - 1 and seat == winner and m == last
            pts[seat] -= bonus * (2 if final else 1)
    twos = (last & TWOS).bit_count()
    pts[winner] -= 10 * twos if twos else 5
    return pts[:n]


def _special_value(m: Mask, deal: FinishedDeal) -> int:
    if m.bit_count() != 5:
        return 0
    if m & TWOS == TWOS:
        return 80
    if _is_straight_flush(m, deal):
        return 40
    if has_four_of_a_kind(m):
        return 20
    return 0
