"""Scoring, table-driven from the rule texts.

End positions are either played out through the checked :meth:`Deal.play` on rigged deals
(tests/referee/game/positions.py) or, where a deal would need dozens of scripted turns to reach
them, built by hand: a real deal's hands and final play are replaced and
:func:`referee.game.scoring.settle` scores it.  Sources: ``000:336`` = line 336 of
``shared/rules/000_011bf6f415061e38.txt`` (likewise 001, 002, 003).
"""

from __future__ import annotations

import pytest

from referee import PRESETS, Deal, DealContext, RuleSet, find_ruleset, parse_mask
from referee.game.outcome import Outcome, Termination
from referee.game.rules import (
    AssistReading,
    CardValues,
    LaterLead,
    Leftover,
    PenaltySchedule,
    Settlement,
    ShortHandedTiers,
)
from referee.game.scoring import settle

from .positions import play_out, rigged_deal

STD = find_ruleset("standard")

# Hands of a given size without twos, quads or straight flushes ("plain").
PLAIN = [
    "3D 5C 7H 9S JD KC 4H 6S 8D TC QH AS 3C",
    "4D 6C 8H TS QD AC 5H 7S 9D JC KH 3S 4C",
    "5D 7C 9H JS KD 3H 6H 8S TD QC AH 4S 6D",
]


def plain(seat: int, n: int) -> str:
    return " ".join(PLAIN[seat % 3].split()[:n])


def _set_log(deal: Deal, turns: list[tuple[int, int, int]]) -> None:
    if hasattr(deal, "log"):
        deal.log = list(turns)  # type: ignore[attr-defined]
    else:  # pragma: no cover - older engines kept Turn objects
        from referee import Turn

        deal.history = [Turn(*t) for t in turns]  # type: ignore[misc]


def settled(
    rules: RuleSet,
    left: list[str],
    winner: int,
    last: str,
    *,
    starter: int | None = None,
    trick_winners: list[tuple[int, str]] | None = None,
    finished: list[int] | None = None,
) -> Outcome:
    """Score an end position: seat ``s`` holds ``left[s]``, the winner went out with ``last``."""
    d = Deal.new(rules, 0)
    d.hands = [parse_mask(h) for h in left]
    assert d.hands[winner] == 0
    _set_log(d, [(winner, parse_mask(last), 0)])
    d.starter = winner if starter is None else starter
    tw = trick_winners if trick_winners is not None else [(winner, last)]
    d.trick_winners = [(s, parse_mask(m)) for s, m in tw]
    d.finished = (
        finished
        if finished is not None
        else [winner] + [s for s in range(rules.players) if s != winner]
    )
    return settle(d, Termination.PLAYED_OUT, winner, "")


# --- the standard schedule -----------------------------------------------------------------------
def test_standard_example() -> None:
    """000:336 'North player wins, and East, West, and South respectively still had 3, 11, and
    8 cards left, then East would score -3, West would score -22, South would score -8, and
    North would score +33.'  Seats: North 0, East 1, West 2, South 3."""
    o = settled(STD, ["", plain(1, 3), plain(2, 11), plain(0, 8)], 0, "5S")
    assert o.penalties == (0, 3, 22, 8)
    assert o.scores == (33, -3, -22, -8)
    assert o.winner == 0 and o.cards_left == (0, 3, 11, 8)


@pytest.mark.parametrize(
    ("cards", "penalty"),
    [(1, 1), (9, 9), (10, 20), (11, 22), (12, 24), (13, 39)],
)
def test_standard_tiers(cards: int, penalty: int) -> None:
    """000:92 one point per card with 9 or fewer, two per card with 10-12, three per card
    (39) with all 13; 001:35 the same table."""
    o = settled(STD, ["", plain(1, cards), plain(2, 1), plain(0, 1)], 0, "5S")
    assert o.penalties[1] == penalty
    assert o.scores == (penalty + 2, -penalty, -1, -1)


def test_unused_power_and_special_finish() -> None:
    """000:338 'North players wins with a 2 as a last discard, and East, West, and South
    respectively still had 3, 9, and 8 cards left with the West had an unused Straight Flush
    and South left with an unused 2, then East would score -6, West would score -36, South
    would score -32, and North would score +74.'"""
    rules = STD.with_options(
        penalty=PenaltySchedule(unused_power_doubles=True, special_finish_doubles=True)
    )
    east = "3D 5C 7H"
    west = "4H 5H 6H 7H 8H 9S JD KC 3C"  # a straight flush 4-8 of hearts
    south = "2D 4D 6C 8S TD QC AD 5S"  # an unused two
    o = settled(rules, ["", east, west, south], 0, "2C")
    assert o.penalties == (0, 6, 36, 32)
    assert o.scores == (74, -6, -36, -32)


@pytest.mark.parametrize(
    ("last", "left", "penalty"),
    [
        ("2C", "3D 5C 7H", 6),  # finishing with a two
        ("9D 9C 9H 9S 3S", "3D 5C 7H", 6),  # four of a kind
        ("4C 5C 6C 7C 8C", "3D 5C 7H"[:2] + " 5D 7H", 6),  # straight flush
        ("AS 2H 3D 4D 5D", "6D 8C 9H", 6),  # a sequence with a two: 'discarding a 2'
        ("KC KD", "3D 5C 7H", 3),  # nothing special
        ("3D", "4S 5C 7H", 3),
        ("7S", "4S 4C 4H 4D", 8),  # unused quads
        ("7S", "2S 5C", 4),  # unused two
        ("7S", "9H TH JH QH KH", 10),  # unused straight flush
        ("7S", "9H TH JH QH AH", 5),  # a flush only
    ],
)
def test_power_doubling(last: str, left: str, penalty: int) -> None:
    """000:338 'Any unused 2's, or a Four-of-a-kinds or Straight Flushes also doubles the points
    paid to the winner. If the winner ends the game by discarding a 2, a four-of-a-kind, or a
    Straight flush, the base points will also be doubled'."""
    rules = STD.with_options(
        penalty=PenaltySchedule(unused_power_doubles=True, special_finish_doubles=True)
    )
    o = settled(rules, ["", left, "", ""], 0, last)
    assert o.penalties[1] == penalty


@pytest.mark.parametrize(
    ("last", "double"),
    [("2S", True), ("2S 2H", True), ("2S 2H 2C", True), ("AS 2D 3C 4H 5S", False), ("AS", False)],
)
def test_finishing_twos_double(last: str, double: bool) -> None:
    """000:204 'if the winner's last play consists entirely of twos (a single two, a pair of
    twos or even three twos), the penalties for the other players are doubled'."""
    rules = STD.with_options(penalty=PenaltySchedule(finishing_twos_double=True))
    o = settled(rules, ["", "3D 5C 7H", "4D", ""], 0, last)
    assert o.penalties == ((0, 6, 2, 0) if double else (0, 3, 1, 0))


def test_finish_doubles_do_not_stack() -> None:
    """000:338 '... will also be doubled, but does not stack regardless of an ending hand'."""
    rules = STD.with_options(
        penalty=PenaltySchedule(finishing_twos_double=True, special_finish_doubles=True)
    )
    o = settled(rules, ["", "3D 5C 7H", "", ""], 0, "2S 2H")
    assert o.penalties[1] == 6


@pytest.mark.parametrize(
    ("cards", "penalty"),
    [(7, 7), (8, 16), (9, 18), (10, 30), (12, 36), (13, 52)],
)
def test_steeper_penalties(cards: int, penalty: int) -> None:
    """000:196 / 001:43 'double score if you are left with 8 or 9 cards, triple with 10-12 and
    quadruple with 13 cards'."""
    o = settled(find_ruleset("steep"), ["", plain(1, cards), "", ""], 0, "5S")
    assert o.penalties == (0, penalty, 0, 0)


@pytest.mark.parametrize(
    ("cards", "twos", "penalty"),
    [(9, 2, 72), (9, 0, 18), (8, 1, 32), (10, 0, 40), (11, 0, 44), (7, 3, 56)],
)
def test_twos_double(cards: int, twos: int, penalty: int) -> None:
    """000:198 'Some reckon double penalty points for any hand with 8 or more cards ... a
    further double for 10 or more cards (i.e. 40 points for 10 cards, 44 for 11) ... double the
    penalty yet again for each two ... nine cards at the end including two twos you would lose
    9 x 2 x 2 x 2 = 72 points.'"""
    rules = STD.with_options(penalty=PenaltySchedule(tiers=((8, 2), (10, 4)), twos_double=True))
    hand = " ".join(["2D", "2C", "2H"][:twos] + plain(1, cards - twos).split())
    o = settled(rules, ["", hand, "", ""], 0, "5S")
    assert o.penalties[1] == penalty


def test_flat_with_twos_doubling() -> None:
    """000:340 'deduct one point per remaining card, ... double the count for each unused
    2's'."""
    rules = STD.with_options(penalty=PenaltySchedule(tiers=(), twos_double=True))
    o = settled(rules, ["", "2D 3C 4H 5S 6D", plain(2, 13), ""], 0, "5C")
    assert o.penalties == (0, 10, 13, 0)


def test_flat() -> None:
    """000:202 'simply paying one point per card, without doubling'."""
    rules = STD.with_options(penalty=PenaltySchedule(tiers=(), tiers_three_players=None))
    o = settled(rules, ["", plain(1, 13), plain(2, 10), plain(0, 4)], 0, "5S")
    assert o.penalties == (0, 13, 10, 4)
    assert o.scores == (27, -13, -10, -4)


def test_multiplier_only_for_the_starter() -> None:
    """000:194 'the double score for having 10 or more cards at the end applies only to the
    starter - the person who played the first card of the deal'."""
    rules = STD.with_options(penalty=PenaltySchedule(multiplier_only_for_starter=True))
    o = settled(rules, ["", plain(1, 10), plain(2, 10), plain(0, 13)], 0, "5S", starter=1)
    assert o.penalties == (0, 20, 10, 13)


@pytest.mark.parametrize(
    ("values", "penalty"),
    [
        (CardValues.FLAT, 6),
        (CardValues.HONOURS, 13),
        (CardValues.PIP, 54),
        (CardValues.TWOS_FIVE, 10),
    ],
)
def test_card_values(values: CardValues, penalty: int) -> None:
    """000:206 '... numeral cards 2-10 score 1 point each; jacks, queens and kings 2 points;
    aces 3 points; and twos 4 points each.  Some count 1 point for a three, 2 for a four ...
    11 points for a king, 12 for an ace and 13 for a two'; 000:230 Indonesia: 3..A 1, twos 5."""
    rules = STD.with_options(penalty=PenaltySchedule(card_values=values))
    # 3D(1/1/1/1) TC(1/8/1) JH(2/9/1) KS(2/11/1) AD(3/12/1) 2C(4/13/5)
    o = settled(rules, ["", "3D TC JH KS AD 2C", "", ""], 0, "5S")
    assert o.penalties[1] == penalty


def test_card_values_doubled_from_ten_cards() -> None:
    """000:206 'These penalty points are doubled for a player who has 10 or more cards.'"""
    rules = STD.with_options(penalty=PenaltySchedule(tiers=((10, 2),), card_values=CardValues.PIP))
    hand = "3D 3C 3H 3S 4D 4C 4H 4S 5D 2C"  # 4*1 + 4*2 + 3 + 13 = 28 points, 10 cards
    o = settled(rules, ["", hand, "", ""], 0, "5S")
    assert o.penalties[1] == 56


# --- house rules of 003 ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cards", "penalty"),
    [(6, 6), (7, 14), (11, 22), (12, 36), (13, 39)],
)
def test_house_four_players(cards: int, penalty: int) -> None:
    """003:59 'Players holding 7-11 cards must double their points (for 14-22 points). Players
    holding 12-13 cards must triple their points (for 36-39 points).'  Penalty points only."""
    o = settled(find_ruleset("house-003"), ["", plain(1, cards), "", ""], 0, "5S")
    assert o.penalties == (0, penalty, 0, 0)
    assert o.scores == (0, -penalty, 0, 0)


def _seventeen(seat: int, n: int) -> str:
    """``n`` (up to 18) cards for ``seat``, disjoint from the other seats' cards."""
    cards = [c for c in range(52) if c % 3 == seat % 3]
    assert n <= len(cards)
    return " ".join("3456789TJQKA2"[c // 4] + "DCHS"[c % 4] for c in cards[:n])


@pytest.mark.parametrize(
    ("cards", "penalty"),
    [(10, 10), (11, 22), (15, 30), (16, 48), (17, 51)],
)
def test_house_three_players_seventeen_each(cards: int, penalty: int) -> None:
    """003:60 'Three Players: Players holding 11-15 cards must double their points (for 22-30
    points). Players holding 16-17 cards must triple their points (for 48-51 points).'"""
    rules = find_ruleset("house-003", players=3, leftover=Leftover.SET_ASIDE)
    assert rules.hand_size() == 17
    o = settled(rules, ["", _seventeen(1, cards), ""], 0, "5S")
    assert o.penalties == (0, penalty, 0)


@pytest.mark.parametrize(
    ("cards", "penalty"), [(6, 6), (7, 7), (10, 10), (11, 22), (12, 24), (13, 26)]
)
def test_house_three_players_dead_hand(cards: int, penalty: int) -> None:
    """003:19 deals three players 13 cards each and a dead hand; 003:60 'Three Players:
    Players holding 11-15 cards must double their points' applies to them as written: the
    preset's ``penalty.short_handed_tiers=player-count``, so a player who never played pays
    13 x 2 = 26 (the issue 17 audit: before, 39 by the four-player table)."""
    rules = find_ruleset("house-003", players=3)
    assert rules.leftover is Leftover.GHOST_HAND and rules.hand_size() == 13
    assert rules.penalty.short_handed_tiers is ShortHandedTiers.PLAYER_COUNT
    o = settled(rules, ["", plain(1, cards), ""], 0, "5S")
    assert o.penalties == (0, penalty, 0)


@pytest.mark.parametrize(("cards", "penalty"), [(6, 6), (7, 14), (11, 22), (12, 36), (13, 39)])
def test_house_three_players_dead_hand_paying_as_four(cards: int, penalty: int) -> None:
    """The other reading, by name: a dead-hand deal's 13-card hands are four-player hands and
    pay by 003:59 ('7-11 cards must double', '12-13 cards must triple'), as 000:246 pays more
    than 13 cards as 13: ``penalty.short_handed_tiers=bigger-hands``."""
    rules = find_ruleset("house-003+players=3,penalty.short_handed_tiers=bigger-hands")
    o = settled(rules, ["", plain(1, cards), ""], 0, "5S")
    assert o.penalties == (0, penalty, 0)
    four_players = settled(find_ruleset("house-003"), ["", plain(1, 13), "", ""], 0, "5S")
    assert four_players.penalties[1] == 39


def test_player_count_tiers_leave_four_players_and_other_presets_alone() -> None:
    """``player-count`` changes nothing for four players, nor for a rule set without
    short-handed steps; ``bigger-hands`` stays the default of every other preset."""
    four = find_ruleset("house-003")
    assert four.penalty_tiers() == ((7, 2), (12, 3))
    stock = find_ruleset("three-player-stock", **{"penalty.short_handed_tiers": "player-count"})
    assert stock.penalty_tiers() == stock.penalty.tiers  # tiers_three_players=None
    wiki13 = STD.with_options(players=3, cards_per_player=13, leftover=Leftover.SET_ASIDE)
    assert wiki13.penalty_tiers() == ((10, 2), (13, 3))
    by_count = find_ruleset(
        "standard+players=3,cards_per_player=13,leftover=set-aside,"
        "penalty.short_handed_tiers=player-count"
    )
    assert by_count.penalty_tiers() == ((12, 2), (17, 3))
    others = [r for n, r in PRESETS.items() if n != "house-003"]
    assert all(r.penalty.short_handed_tiers is ShortHandedTiers.BIGGER_HANDS for r in others)


@pytest.mark.parametrize(
    ("cards", "penalty"),
    [(11, 11), (12, 24), (16, 32), (17, 51), (18, 54)],
)
def test_three_player_wiki_schedule(cards: int, penalty: int) -> None:
    """000:340 'for a three-player game, a player with 17 cards remaining is deducted triple
    points. A player with more than 11 cards and less than 17 cards remaining is deducted double
    points.'  (The spare card can leave one player with 18.)"""
    rules = STD.with_options(players=3)
    o = settled(rules, ["", _seventeen(0, cards), ""], 0, "5S")
    assert o.penalties == (0, penalty, 0)


def test_three_player_stock_more_than_thirteen() -> None:
    """000:248 'the payment per card at the end from a player holding more than 13 cards is the
    same as from a player with 13 cards, usually 3 points per card'."""
    rules = find_ruleset("three-player-stock")
    o = settled(rules, ["", _seventeen(1, 15), plain(2, 13)], 0, "5S")
    assert o.penalties == (0, 45, 39)


def test_bu_bu_gao_sheng_schedule() -> None:
    """000:106 'the others score 1 per card if they have 10 or fewer cards, or 2 per card if
    they have 11 or more'."""
    rules = find_ruleset("bu-bu-gao-sheng")
    o = settled(rules, ["", plain(1, 10), plain(2, 11), plain(0, 13)], 0, "5S")
    assert o.penalties == (0, 10, 22, 26)


# --- settlements ------------------------------------------------------------------------------
def test_pairwise_settlement() -> None:
    """000:94 'each pair of players settles up according to the difference between their
    scores'; 001:35 'each paying everyone with a smaller penalty the difference'."""
    rules = STD.with_options(settlement=Settlement.PAIRWISE)
    o = settled(rules, ["", plain(1, 3), plain(2, 11), plain(0, 8)], 0, "5S")
    assert o.penalties == (0, 3, 22, 8)
    # winner: 3 + 22 + 8; East: -3 + 19 + 5; West: -22 - 19 - 14; South: -8 + 14 - 5
    assert o.scores == (33, 21, -55, 1)


def test_steep_preset_settles_pairwise() -> None:
    o = settled(find_ruleset("steep"), ["", plain(1, 8), plain(2, 13), plain(0, 2)], 0, "5S")
    assert o.penalties == (0, 16, 52, 2)
    # each seat: the sum over the others of (their penalty - mine)
    assert o.scores == (70, -16 + 36 - 14, -52 - 36 - 50, -2 + 14 + 50)
    assert sum(o.scores) == 0


def test_pairwise_difference_kam() -> None:
    """000:200 Anthony Kam: 'playing with double payments for 9-11 cards, a player with 10 cards
    would pay 20 stakes to the winner, but only 8 stakes to a player with two cards (because
    10-2 is less than 9)'."""
    rules = STD.with_options(
        settlement=Settlement.PAIRWISE_DIFFERENCE,
        penalty=PenaltySchedule(tiers=((9, 2), (12, 3))),
    )
    o = settled(rules, ["", plain(1, 10), plain(2, 2), plain(0, 5)], 0, "5S")
    # seat 1 (10 cards): -20 to the winner, -8 to seat 2, -5 to seat 3
    # seat 2 (2 cards): -2 to the winner, +8 from seat 1, +3 from seat 3
    # seat 3 (5 cards): -5 to the winner, +5 from seat 1, -3 to seat 2
    assert o.scores == (27, -33, 9, -3)


@pytest.mark.parametrize(
    ("last", "points"),
    [
        ("7S", 1),
        ("2S", 2),
        ("2S 2H", 4),
        ("2S 2H 2C", 8),
        ("2S 2H 2C 2D 3S", 16),
        ("AS 2D 3C 4H 5S", 2),
    ],
)
def test_pusoy_dos(last: str, points: int) -> None:
    """000:212 'The winner normally scores 1 point and the others score nothing ... if your last
    play includes a deuce you score 2 points; if it contains two deuces you score 4 points, if it
    includes three deuces you score 8 points, and ... all four deuces you would score 16'."""
    o = settled(find_ruleset("pusoy-dos"), ["", plain(1, 5), plain(2, 13), ""], 0, last)
    assert o.scores == (points, 0, 0, 0)


@pytest.mark.parametrize(
    ("players", "order", "scores"),
    [(4, [2, 0, 3, 1], (3, 0, 5, 1)), (3, [1, 2, 0], (0, 5, 3))],
)
def test_places(players: int, order: list[int], scores: tuple[int, ...]) -> None:
    """000:217 'When playing the version [of Pusoy Dos, 000:215] that goes on until only one
    player has cards left, the person who runs out of cards first wins five points, the second
    player wins 3 points, the third wins 1 points and the last one gets no points'."""
    rules = find_ruleset("pusoy-dos", players=players, play_to_end=True, settlement="places")
    left = [""] * players
    left[order[-1]] = "5S"
    o = settled(rules, left, order[0], "2D", finished=order)
    assert o.finish_order == tuple(order)
    assert o.scores == scores


# --- Taiwan: one loser pays --------------------------------------------------------------
TAIWAN = STD.with_options(settlement=Settlement.LOSER_PAYS, loser_stake=10)


@pytest.mark.parametrize(
    ("left", "loser", "why"),
    [
        (
            ["", "5S 5H 5C 5D 3S", "6H 7H 8H 9H TH", "2S"],
            2,
            "the highest honour hand: a straight flush beats quads",
        ),
        (["", "5S 5H 5C 5D 3S", "3C 4C", "2S 2H"], 1, "an honour hand before any two"),
        (["", "KS QS", "AS 3C", "2D 4D"], 3, "no honours: the highest two or ace"),
        (["", "KS QS", "AH 3C", "AS 4D"], 3, "no honours, no twos: the highest ace"),
        (["", "KS QS 3D", "KH 3C", "KD 4D 5D 6D"], 3, "no honours, twos or aces: most cards"),
        (["", "KS 3D", "KH 3C", "QD 4D"], 1, "a tie for most cards: the highest card"),
    ],
)
def test_taiwan_loser_pays(left: list[str], loser: int, why: str) -> None:
    """000:208 (Jonathan Dushoff) the winner is paid a fixed amount by the loser only: the holder
    of the highest honour combination, else of the highest two or ace, else of most cards, else
    (a tie for most cards) of the highest card."""
    o = settled(TAIWAN, left, 0, "7S")
    expected = [0, 0, 0, 0]
    expected[0], expected[loser] = 10, -10
    assert o.scores == tuple(expected), why


# --- Indonesia ---------------------------------------------------------------------------------
INDONESIA = find_ruleset("indonesia")


def test_indonesian_losers() -> None:
    """000:228-232: each card 3..A left scores 1, each two 5; 11 or 12 cards double, all 13
    triple; the winner finishing with normal cards scores -5 (scores here are minus points)."""
    left = [
        "",
        "2D 3C 4H 5S 6D",  # 4 + 5
        plain(2, 11),  # 11 x 2
        " ".join(["2C", "2H", *plain(0, 11).split()]),  # (11 + 10) x 3
    ]
    o = settled(INDONESIA, left, 0, "7S")
    assert o.penalties == (0, 9, 22, 63)
    assert o.scores == (5, -9, -22, -63)


@pytest.mark.parametrize(("last", "winner_points"), [("7S", -5), ("2S", -10), ("2S 2H", -20)])
def test_indonesian_finish_with_twos(last: str, winner_points: int) -> None:
    """000:230 'Each two used in the combination that ends the game is valued as -10; for
    example if you end the game with a pair of twos, then you get -20.'"""
    o = settled(INDONESIA, ["", "3C", "", ""], 0, last)
    assert o.scores[0] == -winner_points


def test_indonesian_special_combinations() -> None:
    """000:220-226: four of a kind -20, straight flush -40, four twos -80 when played and not
    beaten; worth nothing if beaten; doubled when it ends the play."""
    tricks = [
        (1, "9S 9H 9C 9D 3S"),  # unbeaten quads: -20 for seat 1
        (2, "3H 4H 5H 6H 7H"),  # unbeaten straight flush: -40 for seat 2
        (3, "2S 2H 2C 2D 4S"),  # unbeaten four twos: -80 for seat 3
        (1, "5C 6C 7C"),  # nothing special
        (0, "8D 9D TD JD QD"),  # the winner's final straight flush: -40 x 2
    ]
    o = settled(
        INDONESIA,
        ["", "3C", "4C 5D", ""],
        0,
        "8D 9D TD JD QD",
        trick_winners=tricks,
    )
    assert o.penalties == (0, 1, 2, 0)
    assert o.scores == (80 + 5, 20 - 1, 40 - 2, 80)


# --- assistance ----------------------------------------------------------------------------------
ASSIST = STD.with_options(
    penalty=PenaltySchedule(assist_penalty=True),
    players=3,
    cards_per_player=2,
    leftover=Leftover.SET_ASIDE,
    later_leads=LaterLead.WINNER,
)


def _assist_game(a_hand: str, b_last: str = "JH") -> Outcome:
    d = rigged_deal(ASSIST, [a_hand, "4C " + b_last, "5C 6C"], ctx=DealContext(1, 1))
    play_out(d, [(1, "4C"), (2, "5C"), (0, "9H"), (1, b_last)])
    assert d.outcome is not None and d.outcome.winner == 1
    return d.outcome


def test_assist_penalty() -> None:
    """000:344 'If Player B won a game by playing her or his last card ... after Player A has
    played theirs and Player A could have prevented this from happening by playing a higher
    card, s/he is deemed to have assisted Player B ... Player A to be deducted the total points
    that the other two losers have lost on top of her or his own'."""
    o = _assist_game("9H AS")
    assert o.penalties == (2, 0, 0)
    assert o.scores == (-2, 2, 0)


def test_no_assist_when_nothing_higher_was_held() -> None:
    o = _assist_game("9H TH")
    assert o.penalties == (1, 0, 1)
    assert o.scores == (-1, 2, -1)


def test_no_assist_without_the_rule() -> None:
    rules = ASSIST.with_options(penalty=PenaltySchedule())
    d = rigged_deal(rules, ["9H AS", "4C JH", "5C 6C"], ctx=DealContext(1, 1))
    play_out(d, [(1, "4C"), (2, "5C"), (0, "9H"), (1, "JH")])
    assert d.outcome is not None and d.outcome.scores == (-1, 2, -1)


def test_no_assist_when_the_winner_leads() -> None:
    """The winner's last single was a lead: nobody played before it in its trick."""
    d = rigged_deal(ASSIST, ["9H AS", "4C JH", "5C 6C"], ctx=DealContext(1, 1))
    play_out(d, [(1, "4C"), (2, None), (0, None), (1, "JH")])
    assert d.outcome is not None
    assert d.outcome.penalties == (2, 0, 2) and d.outcome.scores == (-2, 4, -2)


def test_no_assist_for_a_pair() -> None:
    """000:344 'the case of more than one card played is excluded'."""
    rules = ASSIST.with_options(cards_per_player=4)
    d = rigged_deal(rules, ["9H 9D AS AH", "4C 4D JH JD", "5C 5D 8C TC"], ctx=DealContext(1, 1))
    play_out(d, [(1, "4C 4D"), (2, "5C 5D"), (0, "9H 9D"), (1, "JH JD")])
    assert d.outcome is not None and d.outcome.winner == 1
    assert d.outcome.penalties == (2, 0, 2)


# --- assistance on a lead: 000's money rule (assist_reading=precautions) --------------------------
PRECAUTIONS = ASSIST.with_options(
    cards_per_player=5,
    penalty=PenaltySchedule(assist_penalty=True, assist_reading=AssistReading.PRECAUTIONS),
)


def _lead_game(rules: RuleSet, a_hand: str, a_lead: str) -> Outcome:
    """B (seat 1) goes down to JH; A (seat 0, just before B) wins a trick with 9H 9D and leads
    ``a_lead``; B goes out with JH."""
    d = rigged_deal(
        rules,
        ["9H 9D " + a_hand, "4C 4D 5H 5D JH", "8D 8C 3S 3H TC"],
        ctx=DealContext(1, 1),
    )
    play_out(
        d,
        [
            (1, "4C 4D"),
            (2, None),
            (0, None),
            (1, "5H 5D"),
            (2, None),
            (0, "9H 9D"),
            (1, None),
            (2, None),
            (0, a_lead),
            (1, "JH"),
        ],
    )
    assert d.outcome is not None and d.outcome.winner == 1
    return d.outcome


@pytest.mark.parametrize("a_lead", ["6D", "7S"])
def test_money_rule_charges_a_single_led_while_holding_a_combination(a_lead: str) -> None:
    """000:95-100 'If it is your turn to lead, you should lead a combination more than one card
    if possible ... If you ignore these precautions, and as a result the person after you wins
    by playing their single card, you have to pay the losses of all three players': A leads a
    single holding 7S 7C, even its highest card (7S); B goes out with JH."""
    o = _lead_game(PRECAUTIONS, "7S 7C 6D", a_lead)
    assert o.penalties == (2 + 5, 0, 0)
    assert o.scores == (-7, 7, 0)
    assert "seat 0 assisted" in o.detail
    # The encyclopedia's reading (000:344, 002:65) charges only a higher single held: A held
    # nothing above JH, so everyone pays their own.
    plain_reading = PRECAUTIONS.with_options(penalty=PenaltySchedule(assist_penalty=True))
    o = _lead_game(plain_reading, "7S 7C 6D", a_lead)
    assert o.penalties == (2, 0, 5)


def test_money_rule_no_charge_for_the_highest_single_without_a_combination() -> None:
    """000:98 'otherwise you should lead your highest card': A, with no combination, leads its
    highest card 7S; B's JH wins anyway, so nobody assisted."""
    o = _lead_game(PRECAUTIONS, "7S 6C 4S", "7S")
    assert o.penalties == (2, 0, 5)


def test_money_rule_a_lower_single_led_is_charged_only_when_the_highest_would_stop_it() -> None:
    """A leads 4S instead of its highest card: with 7S the win was not 'a result' of it (7S
    loses to JH too); with AS it was, and both readings charge it (000:344 'could have
    prevented this from happening by playing a higher card')."""
    assert _lead_game(PRECAUTIONS, "7S 6C 4S", "4S").penalties == (2, 0, 5)
    assert _lead_game(PRECAUTIONS, "AS 6C 4S", "4S").penalties == (7, 0, 0)
    higher = PRECAUTIONS.with_options(penalty=PenaltySchedule(assist_penalty=True))
    assert _lead_game(higher, "AS 6C 4S", "4S").penalties == (7, 0, 0)


def test_assist_reading_needs_the_assistance_penalty() -> None:
    with pytest.raises(ValueError, match=r"assist_reading needs penalty\.assist_penalty"):
        find_ruleset("standard+penalty.assist_reading=precautions")
    r = find_ruleset("standard+penalty.assist_penalty=true,penalty.assist_reading=precautions")
    assert r.penalty.assist_reading is AssistReading.PRECAUTIONS
    assert find_ruleset(r.name).options() == r.options()


def test_money_rule_charges_a_superset_of_the_encyclopedia_reading() -> None:
    """Whole deals played the same way under both readings: whoever the encyclopedia's reading
    charges, the money rule charges too; and some deals charge only under the money rule (the
    two readings do differ in play, not only in hand-made positions)."""
    base = STD.with_options(players=3, cards_per_player=9, leftover=Leftover.SET_ASIDE)
    higher = base.with_options(penalty=PenaltySchedule(assist_penalty=True))
    money = base.with_options(
        penalty=PenaltySchedule(assist_penalty=True, assist_reading=AssistReading.PRECAUTIONS)
    )
    only_money = 0
    for seed in range(300):
        d = Deal.new(higher, seed)
        again = Deal.new(money, seed)
        turn = 0
        while not d.over:
            moves = d.legal_moves()
            plays = [m for m in moves if m] or moves
            # lead singles often, so that one-card players meet single leads
            m = min(plays, key=lambda x: (x.bit_count() != 1, (turn * 7919 + seed) % 13))
            m = m if turn % 3 else moves[(turn * 31 + seed) % len(moves)]
            d.push(m)
            again.push(m)
            turn += 1
        a, b = d.outcome, again.outcome
        assert a is not None and b is not None
        if "assisted" in a.detail:
            assert b.detail == a.detail and b.penalties == a.penalties
        elif "assisted" in b.detail:
            only_money += 1
    assert only_money > 0


# --- played out end to end ----------------------------------------------------------------------
def test_played_out_deal_scores_what_is_left() -> None:
    rules = STD.with_options(cards_per_player=3, leftover=Leftover.SET_ASIDE, players=3)
    d = rigged_deal(rules, ["3D 4D 5D", "6C 7C 8C", "9H TH JH"])
    play_out(
        d,
        [
            (0, "3D"),
            (1, "6C"),
            (2, "9H"),
            (0, None),
            (1, None),
            (2, "TH"),
            (0, None),
            (1, None),
            (2, "JH"),
        ],
    )
    assert d.outcome is not None
    assert d.outcome.termination is Termination.PLAYED_OUT and d.outcome.winner == 2
    assert d.outcome.cards_left == (2, 2, 0)
    assert d.outcome.penalties == (2, 2, 0)
    assert d.outcome.scores == (-2, -2, 4)
    assert d.outcome.finish_order[0] == 2


def test_assist_charges_the_player_before_the_winner_who_passed() -> None:
    """The audit's case: seat 3 plays 5D, seat 0 passes holding 2S, seat 1 (one card) wins
    with 9D.  000:95-100 'if the person playing after you has only one card left ... If single
    cards are being played, you should play your highest card ... If you ignore these
    precautions, and as a result the person after you wins by playing their single card, you
    have to pay the losses of all three players'; 000:344 'Player A could have prevented this
    from happening by playing a higher card'.  Player A is seat 0, not seat 3 (built by hand:
    with equal hands seat 3 cannot lead twice while seat 1 sheds all but one card)."""
    rules = STD.with_options(penalty=PenaltySchedule(assist_penalty=True))
    d = Deal.new(rules, 0)
    d.hands = [parse_mask("2S 4C 6H"), 0, parse_mask("3C 7C 8C TC"), parse_mask("KD")]
    _set_log(d, [(3, parse_mask("5D"), 0), (0, 0, 0), (1, parse_mask("9D"), 0)])
    o = settle(d, Termination.PLAYED_OUT, 1, "")
    assert o.penalties == (3 + 4 + 1, 0, 0, 0)
    assert o.scores == (-8, 8, 0, 0)
    assert "seat 0 assisted" in o.detail


def test_assist_is_the_seat_before_the_winner_even_when_an_earlier_one_held_more() -> None:
    """Played out: seat 2 plays 5C holding AC, seat 0 passes holding AS, seat 1 wins with JH.
    Seat 0 is 'the person playing before' the winner (000:95-100): it pays, not seat 2."""
    d = rigged_deal(ASSIST, ["9H AS", "4C JH", "5C AC"], ctx=DealContext(1, 1))
    play_out(d, [(1, "4C"), (2, "5C"), (0, None), (1, "JH")])
    assert d.outcome is not None and d.outcome.winner == 1
    assert d.outcome.penalties == (2 + 1, 0, 0)


def test_no_assist_when_the_seat_before_held_nothing_higher() -> None:
    """Only the player before the winner is liable (000:95-100): seat 2 held AC, seat 0 did
    not hold anything above JH, so nobody assisted."""
    d = rigged_deal(ASSIST, ["9H TH", "4C JH", "5C AC"], ctx=DealContext(1, 1))
    play_out(d, [(1, "4C"), (2, "5C"), (0, None), (1, "JH")])
    assert d.outcome is not None
    assert d.outcome.penalties == (2, 0, 1)


def test_assist_does_not_apply_when_scoring_by_ranks() -> None:
    """002:69 'If the scoring system is by ranks ... then this rule doesn't apply!'"""
    with pytest.raises(ValueError, match="assistance penalty does not apply"):
        find_ruleset("president", penalty=PenaltySchedule(assist_penalty=True))


# --- three players: Pagat's schedule and the encyclopedia's ---------------------------------
@pytest.mark.parametrize(
    ("preset", "cards", "penalty"),
    [
        ("three-player", 11, 22),  # 000:246 more than 13 pays as 13; 10-12 double as in 000:93
        ("three-player", 16, 48),
        ("three-player", 17, 51),
        ("three-player", 9, 9),
        ("three-player-wiki", 11, 11),  # 002:61 / 000:340 'more than 11 and less than 17'
        ("three-player-wiki", 16, 32),
        ("three-player-wiki", 17, 51),
        ("three-player-wiki", 12, 24),
    ],
)
def test_three_player_schedules_by_name(preset: str, cards: int, penalty: int) -> None:
    """The audit's figures: 16 cards pay 48 (Pagat, 000:246) or 32 (002:61); 11 cards 22 or
    11.  Both are presets, and `standard+players=3` is the encyclopedia's."""
    rules = find_ruleset(preset)
    assert rules.players == 3 and rules.hand_size() == 17
    o = settled(rules, ["", _seventeen(1, cards), ""], 0, "5S")
    assert o.penalties == (0, penalty, 0)
    plain = find_ruleset("standard", players=3)
    assert plain.options() == find_ruleset("three-player-wiki").options()


# --- scoring by finishing order ---------------------------------------------------------------
@pytest.mark.parametrize("preset", ["president", "hawaii-penning"])
def test_finishing_order_is_the_result(preset: str) -> None:
    """000:409 / 002:100 (President) and 000:396 (penning) give titles or places and no points;
    000 wiki var. 32 'players are ranked according to the order they got rid of their cards'.
    The 5/3/1/0 points of 000:217 belong to Pusoy Dos and are not applied."""
    rules = find_ruleset(preset)
    assert rules.settlement is Settlement.FINISHING_ORDER
    o = settled(rules, ["", "", "5S", ""], 3, "2D", finished=[3, 1, 0, 2])
    assert o.scores == (1, 2, 0, 3)


def test_every_settlement_has_its_scoring_function() -> None:
    """The settlements are a table of small functions: none may be missing from it."""
    from referee.game.scoring import _SETTLEMENTS

    assert set(_SETTLEMENTS) == set(Settlement)
