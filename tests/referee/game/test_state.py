"""The deal state machine: dealing, who opens, passing, duties, restrictions, instant ends.

Positions are dealt through the engine's own dealing code with a rigged shuffle
(tests/referee/game/positions.py), then played with the checked :meth:`Deal.play`.  Sources are
lines of ``shared/rules/00N_*.txt`` (``000:176`` = file 000, line 176).
"""

from __future__ import annotations

import random

import pytest

from referee import (
    PASS,
    CardNotInHandError,
    Deal,
    DealContext,
    DoesNotBeatError,
    NotACombinationError,
    RuleSet,
    card_text,
    find_ruleset,
    mask_text,
    parse_mask,
    tables_for,
)
from referee.game.movegen import leading_plays
from referee.game.outcome import Termination
from referee.game.rules import (
    Direction,
    FinalRestriction,
    InstantWin,
    LastCardDuty,
    LaterLead,
    Leftover,
    PassDraw,
    PassRule,
    Redeal,
    StockEmpty,
)

from .positions import complete, options, play_out, rigged_deal, texts

FULL = (1 << 52) - 1
STD = find_ruleset("standard")


def small(rules: RuleSet, k: int, **kw: object) -> RuleSet:
    """``rules`` with ``k`` cards each and the rest set aside, the winner leading later deals
    (so :data:`LEAD` lets a chosen seat lead anything)."""
    return rules.with_options(
        cards_per_player=k, leftover=Leftover.SET_ASIDE, later_leads=LaterLead.WINNER, **kw
    )


def lead(seat: int) -> DealContext:
    """Context of a later deal won by ``seat``: it leads anything."""
    return DealContext(index=1, previous_winner=seat)


def all_cards(d: Deal) -> int:
    m = d.set_aside | d.discards | d.trick_cards
    for c in d.stock:
        m |= 1 << c
    for h in d.hands:
        assert not m & h
        m |= h
    return m


# --- dealing -----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_four_players_get_thirteen_each(seed: int) -> None:
    """000:96 'everyone will have a hand of 13 cards'."""
    d = Deal.new(STD, seed)
    assert [h.bit_count() for h in d.hands] == [13, 13, 13, 13]
    assert all_cards(d) == FULL
    assert d.set_aside == 0 and d.stock == [] and d.spare == 0
    assert d.dealt == d.hands


@pytest.mark.parametrize("seed", range(20))
def test_three_players_seventeen_and_the_spare_to_the_lowest(seed: int) -> None:
    """000:244 / 001:45: seventeen each, the last card to the holder of the three of diamonds,
    or to the holder of the three of clubs if it is itself the three of diamonds."""
    d = Deal.new(STD.with_options(players=3), seed)
    sizes = sorted(h.bit_count() for h in d.hands)
    assert sizes == [17, 17, 18]
    assert all_cards(d) == FULL and d.set_aside == 0
    assert d.spare.bit_count() == 1
    holder = d.spare_to
    assert d.hands[holder] & d.spare and d.hands[holder].bit_count() == 18
    want = parse_mask("3C") if d.spare == parse_mask("3D") else parse_mask("3D")
    assert d.hands[holder] & want


THREE_HANDS = [
    "3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC 2C 4S 5S 6S 7S",
    "4D 5D 6D 7D 8D 9D TD JD QD KD AD 2D 8S 9S TS JS QS",
    "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH 2H 3S KS AS 2S",
]


@pytest.mark.parametrize(
    ("rules", "spare", "to_seat", "src"),
    [
        (STD, "3D", 0, "001:45 the spare is the 3D: to the holder of the 3C"),
        (STD, "4D", 1, "000:244 the holder of the 3D takes the spare"),
        (find_ruleset("taiwan"), "4D", 0, "000:128 Taiwan: to the holder of the 3C, not the 3D"),
        (find_ruleset("pusoy-dos"), "3D", 0, "Pusoy Dos: 3C lowest"),
        (
            STD.with_options(leftover=Leftover.TO_HOLDER_OF_LOWEST_DIAMOND),
            "3D",
            1,
            "000:375 to the holder of the lowest diamond (4D)",
        ),
        (
            STD.with_options(leftover=Leftover.TO_HOLDER_OF_TWO_OF_SPADES),
            "3D",
            2,
            "000:385 to whoever holds the two of spades",
        ),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_spare_card(rules: RuleSet, spare: str, to_seat: int, src: str) -> None:
    rules = rules.with_options(players=3)
    hands = list(THREE_HANDS)
    if spare != "3D":  # swap the chosen spare into the rest
        hands = [h.replace(spare, "3D") for h in hands]
    d = rigged_deal(rules, hands, rest=spare)
    assert d.spare == parse_mask(spare)
    assert d.spare_to == to_seat
    assert d.hands[to_seat] == parse_mask(hands[to_seat]) | parse_mask(spare)
    assert all_cards(d) == FULL


def test_taiwan_spare_three_of_clubs_goes_to_the_three_of_diamonds() -> None:
    """000:128 Taiwan: clubs lowest, so the next lowest after 3C is 3D."""
    rules = find_ruleset("taiwan", players=3)
    hands = [h.replace("3C", "3D") for h in THREE_HANDS]
    d = rigged_deal(rules, hands, rest="3C")
    assert d.spare_to == 0 and d.hands[0] & parse_mask("3D")
    # the spare 3C is now in seat 0's hand: it is the lowest card in play and opens
    assert d.to_move == 0 and d.opening_card == parse_mask("3C")


def test_ghost_hand() -> None:
    """000:386 / 003:22: three players dealt thirteen each as if four; the fourth is dead;
    the lowest card dealt opens (here the 3C, the 3D being in the ghost hand)."""
    rules = find_ruleset("house-003", players=3)
    d = rigged_deal(
        rules,
        [
            "3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC 2C",
            "4D 5D 6D 7D 8D 9D TD JD QD KD AD 2D 3H",
            "3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS 2S",
        ],
    )
    assert [h.bit_count() for h in d.hands] == [13, 13, 13]
    assert d.set_aside == parse_mask("3D 4H 5H 6H 7H 8H 9H TH JH QH KH AH 2H")
    assert all_cards(d) == FULL
    assert d.to_move == 0 and d.opening_card == parse_mask("3C")
    assert all(m & parse_mask("3C") for m in d.legal_moves())


@pytest.mark.parametrize("seed", range(10))
def test_set_aside_seventeen_each(seed: int) -> None:
    """003:23 'Deal 17 cards in turn to each of three players, do not use the remaining card'."""
    d = Deal.new(STD.with_options(players=3, leftover=Leftover.SET_ASIDE), seed)
    assert [h.bit_count() for h in d.hands] == [17, 17, 17]
    assert d.set_aside.bit_count() == 1
    assert all_cards(d) == FULL
    lowest = min(range(52), key=lambda c: (not any(h >> c & 1 for h in d.hands), c))
    assert d.opening_card == 1 << lowest


@pytest.mark.parametrize(
    ("players", "each", "aside"),
    [(2, 17, 18), (2, 21, 10), (2, 13, 26)],
)
def test_two_player_deals_set_the_rest_aside(players: int, each: int, aside: int) -> None:
    """000:250 two players: 17, 21 or 13 each, the rest set aside; lowest dealt card opens."""
    rules = STD.with_options(players=players, cards_per_player=each, leftover=Leftover.SET_ASIDE)
    for seed in range(10):
        d = Deal.new(rules, seed)
        assert [h.bit_count() for h in d.hands] == [each] * players
        assert d.set_aside.bit_count() == aside
        assert all_cards(d) == FULL
        in_hands = d.hands[0] | d.hands[1]
        lowest = (in_hands & -in_hands).bit_length() - 1
        assert d.opening_card == 1 << lowest
        assert d.hands[d.to_move] >> lowest & 1


def test_remove_lowest_sets_cards_aside() -> None:
    """000:375 'the lowest cards are consciously removed': with three players the 3D is out
    of the deal, recorded as set aside, and the 3C opens."""
    rules = STD.with_options(players=3, leftover=Leftover.REMOVE_LOWEST)
    for seed in range(10):
        d = Deal.new(rules, seed)
        assert [h.bit_count() for h in d.hands] == [17, 17, 17]
        assert d.set_aside == parse_mask("3D")
        assert all_cards(d) == FULL
        assert d.opening_card == parse_mask("3C")


def test_remove_lowest_two_players() -> None:
    rules = STD.with_options(players=2, cards_per_player=13, leftover=Leftover.REMOVE_LOWEST)
    d = Deal.new(rules, 3)
    removed = (1 << 26) - 1  # 3D .. 9S, the 26 lowest cards
    assert d.set_aside == removed
    assert (d.hands[0] | d.hands[1]) == FULL & ~removed
    assert d.opening_card == parse_mask("9H")


@pytest.mark.parametrize("seed", range(10))
def test_stock_deal(seed: int) -> None:
    """000:246 three players with thirteen each; the rest is a stock."""
    d = Deal.new(find_ruleset("three-player-stock"), seed)
    assert [h.bit_count() for h in d.hands] == [13, 13, 13]
    assert len(d.stock) == 13 and len(set(d.stock)) == 13
    assert all_cards(d) == FULL


# --- opening -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "card"),
    [("standard", "3D"), ("taiwan", "3C"), ("pusoy-dos", "3C"), ("hawaii-penning", "3C")],
)
def test_opening_play_includes_the_lowest_card(name: str, card: str) -> None:
    """000:100 the holder of the 3D must play it; 000:126-128 the 3C under Pusoy Dos / Taiwan."""
    rules = find_ruleset(name)
    c = parse_mask(card)
    for seed in range(15):
        d = Deal.new(rules, seed)
        assert d.hands[d.to_move] & c
        moves = d.legal_moves()
        assert PASS not in moves
        assert moves and all(m & c for m in moves)
        expected = {m for m in leading_plays(d.hands[d.to_move], tables_for(rules)) if m & c}
        assert set(moves) == expected
        other = next(m for m in leading_plays(d.hands[d.to_move], tables_for(rules)) if not m & c)
        with pytest.raises(DoesNotBeatError) as e:
            d.play(other)
        assert card in str(e.value)


def test_opening_need_not_include_the_lowest_card() -> None:
    """000:116 'this lowest card does not have to be included in the first play'."""
    rules = STD.with_options(opening_must_include=False)
    for seed in range(10):
        d = Deal.new(rules, seed)
        assert d.hands[d.to_move] & parse_mask("3D")
        assert set(d.legal_moves()) == set(leading_plays(d.hands[d.to_move], tables_for(rules)))


@pytest.mark.parametrize(
    ("rules", "ctx", "opens"),
    [
        (STD, DealContext(5, previous_winner=2, previous_loser=1), "lowest"),
        (STD.with_options(later_leads="winner"), DealContext(5, 2, 1), 2),
        (STD.with_options(later_leads="winner"), DealContext(0, 2, 1), "lowest"),
        (STD.with_options(later_leads="winner"), DealContext(5, None, None), "lowest"),
        (STD.with_options(later_leads="loser"), DealContext(5, 2, 1), 1),
        (STD.with_options(later_leads="loser"), DealContext(5, 2, None), 2),
        (find_ruleset("indonesia"), DealContext(10, 2, 1), "lowest"),
        (find_ruleset("indonesia"), DealContext(11, 2, 1), 2),
        (find_ruleset("indonesia"), DealContext(19, 3, 1), 3),
        (find_ruleset("indonesia"), DealContext(20, 2, 1), "lowest"),
        (find_ruleset("hong-kong"), DealContext(1, 3, 0), 3),
    ],
    ids=[
        "001:18 lowest card opens every deal",
        "000:114 winner leads later deals",
        "first deal of a session: lowest card",
        "no previous winner: lowest card",
        "000:120 the loser leads",
        "loser unknown: the winner",
        "000:122 Indonesia: deal 10 opens a round with the 3",
        "000:122 Indonesia: deal 11 is led by the winner",
        "000:122 Indonesia: deal 19 is led by the winner",
        "000:122 Indonesia: deal 20 opens a round with the 3",
        "000:236 Hong Kong: the winner begins later deals",
    ],
)
def test_who_opens(rules: RuleSet, ctx: DealContext, opens: int | str) -> None:
    for seed in range(5):
        d = Deal.new(rules, seed, ctx)
        moves = d.legal_moves()
        if opens == "lowest":
            assert d.hands[d.to_move] & parse_mask("3D")
            assert d.opening_card == parse_mask("3D")
            assert all(m & parse_mask("3D") for m in moves)
        else:
            assert d.to_move == opens
            assert d.opening_card == 0
            assert set(moves) == set(leading_plays(d.hands[opens], tables_for(rules)))


# --- turn order --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rules", "index", "step"),
    [
        (STD, 0, 1),
        (STD.with_options(direction=Direction.CLOCKWISE), 0, -1),
        (find_ruleset("indonesia"), 0, -1),
        (find_ruleset("house-003"), 0, -1),
        (STD.with_options(direction=Direction.ALTERNATE), 0, 1),
        (STD.with_options(direction=Direction.ALTERNATE), 1, -1),
        (STD.with_options(direction=Direction.ALTERNATE), 2, 1),
    ],
)
def test_direction(rules: RuleSet, index: int, step: int) -> None:
    """000:110 clockwise play; 'alternate hands anticlockwise and clockwise'."""
    for seed in range(5):
        d = Deal.new(rules, seed, DealContext(index, None, None))
        n = rules.players
        for _ in range(8):
            if d.over:
                break
            seat = d.to_move
            moves = [m for m in d.legal_moves() if m]
            d.play(min(moves, key=lambda m: (m.bit_count(), m)))
            if not d.over and d.table is not None:
                assert d.to_move == (seat + step) % n


def test_passing_gives_up_only_that_turn() -> None:
    """000:104 example: South leads a 4, East a jack, North passes, West an ace, South and
    East pass, and North may now play the 2 held back before."""
    south, east, north, west = 0, 1, 2, 3
    d = rigged_deal(
        small(STD, 2),
        ["4D 5D", "JD 6D", "2S 7D", "AD 8D"],
        ctx=lead(south),
    )
    play_out(
        d,
        [
            (south, "4D"),
            (east, "JD"),
            (north, None),
            (west, "AD"),
            (south, None),
            (east, None),
        ],
    )
    assert d.to_move == north
    assert texts(d.legal_moves()) == options("2S", "")
    d.play(parse_mask("2S"))
    assert d.table is not None and d.table.mask == parse_mask("2S")


def test_trick_ends_when_everyone_else_passed() -> None:
    d = rigged_deal(small(STD, 3), ["4D 5D 6D", "7D 8D 9D", "TD JD QD", "KD AD 2D"], ctx=lead(0))
    play_out(d, [(0, "4D"), (1, "7D"), (2, None), (3, None), (0, None)])
    assert d.table is None and d.to_move == 1
    assert d.discards == parse_mask("4D 7D")
    assert texts(d.legal_moves()) == options("8D", "9D")


STRICT = small(STD, 6, pass_rule=PassRule.TRICK)


def test_strict_pass_example() -> None:
    """000:176 'No Play after a Pass': you hold 3-3-8-8-10-10 and lead 3-3; the second player
    (2-2 and no other pairs) passes, as do the others; you play 8-8, the player with 2-2 may
    not play, and you win with your 10-10."""
    d = rigged_deal(
        STRICT,
        ["3D 3C 8D 8C TD TC", "2S 2H 4D 5C 6H 7S", "4C 5D 6D 7D 9S JS", "4H 5H 6S 7H 9H JH"],
        ctx=lead(0),
    )
    play_out(d, [(0, "3D 3C")])
    assert texts(d.legal_moves()) == options("2S 2H", "")
    play_out(d, [(1, None), (2, None), (3, None)])
    # everyone else has passed: you may beat your own play
    assert d.to_move == 0 and d.table is not None and d.table.mask == parse_mask("3D 3C")
    assert texts(d.legal_moves()) == options("8D 8C", "TD TC", "")
    play_out(d, [(0, "8D 8C")])
    assert d.to_move == 0, "the player with 2-2 has passed and may not play"
    play_out(d, [(0, "TD TC")])
    assert d.over and d.outcome is not None and d.outcome.winner == 0
    assert [t.seat for t in d.history] == [0, 1, 2, 3, 0, 0]


def test_without_strict_pass_the_twos_come_back() -> None:
    d = rigged_deal(
        small(STD, 6),
        ["3D 3C 8D 8C TD TC", "2S 2H 4D 5C 6H 7S", "4C 5D 6D 7D 9S JS", "4H 5H 6S 7H 9H JH"],
        ctx=lead(0),
    )
    play_out(d, [(0, "3D 3C"), (1, None), (2, None), (3, None)])
    assert d.table is None and d.to_move == 0
    play_out(d, [(0, "8D 8C")])
    assert d.to_move == 1 and parse_mask("2S 2H") in d.legal_moves()


def test_strict_pass_owner_passing_ends_the_trick() -> None:
    d = rigged_deal(
        STRICT,
        ["3D 3C 8D 8C TD TC", "2S 2H 4D 5C 6H 7S", "4C 5D 6D 7D 9S JS", "4H 5H 6S 7H 9H JH"],
        ctx=lead(0),
    )
    play_out(d, [(0, "3D 3C"), (1, None), (2, None), (3, None), (0, None)])
    assert d.table is None and d.to_move == 0
    assert "4D" not in texts(d.legal_moves())
    play_out(d, [(0, "8D")])
    assert d.to_move == 1 and "2S" in texts(d.legal_moves()), "a new trick: all may play"


def test_strict_pass_skips_passed_seats_mid_trick() -> None:
    """000:381 'disallows a player from playing any further cards to a trick after he passes':
    seat 1 passes, seat 2 beats, seat 3 passes, seat 0 plays; the turn skips seat 1."""
    d = rigged_deal(
        small(STD, 4, pass_rule=PassRule.TRICK),
        ["4D 9D KD 5S", "5D TD AD 6S", "6D JD 2D 7S", "7D QD 8S 9S"],
        ctx=lead(0),
    )
    play_out(d, [(0, "4D"), (1, None), (2, "6D"), (3, None), (0, "9D")])
    assert d.to_move == 2, "seat 1 passed earlier in this trick"
    play_out(d, [(2, "JD")])
    assert d.to_move == 0
    play_out(d, [(0, None)])
    # only the owner is left in the trick
    assert d.to_move == 2 and d.table is not None
    play_out(d, [(2, None)])
    assert d.table is None and d.to_move == 2


def test_first_pass_ends_the_trick() -> None:
    """000:322 'some variations have when 1 player has passed the trick is over'."""
    d = rigged_deal(
        small(STD, 3, pass_rule=PassRule.ENDS_TRICK),
        ["4D 5D 6D", "7D 8D 9D", "TD JD QD", "KD AD 2D"],
        ctx=lead(0),
    )
    play_out(d, [(0, "4D"), (1, "7D"), (2, None)])
    assert d.table is None and d.to_move == 1


# --- last card duty ----------------------------------------------------------------------------
def _duty_deal(duty: LastCardDuty, direction: Direction) -> tuple[Deal, int, int, int]:
    """Three players, five cards each.  N goes down to one card; D must then answer a single
    with N next in turn, and later lead with N next in turn."""
    rules = small(STD, 5, last_card_duty=duty, direction=direction, players=3)
    d_seat = 0
    n_seat, o_seat = (1, 2) if direction is Direction.ANTICLOCKWISE else (2, 1)
    hands = [""] * 3
    hands[d_seat] = "AS KS 6S 7D 7C"
    hands[n_seat] = "4D 4C 5D 5C 9H"
    hands[o_seat] = "8D 8C 3S 3H JH"
    d = rigged_deal(rules, hands, ctx=lead(n_seat))
    play_out(
        d,
        [
            (n_seat, "4D 4C"),
            (o_seat, None),
            (d_seat, None),
            (n_seat, "5D 5C"),
            (o_seat, "8D 8C"),
            (d_seat, None),
            (n_seat, None),
            (o_seat, "3S"),
        ],
    )
    return d, d_seat, n_seat, o_seat


@pytest.mark.parametrize("direction", [Direction.ANTICLOCKWISE, Direction.CLOCKWISE])
def test_last_card_duty_highest_single(direction: Direction) -> None:
    """000:180 'if you are playing immediately before a player who has only one card you must
    play your highest single card or a combination of more than one card': on a single, the
    highest card and no pass (the audit found the pass still allowed)."""
    d, d_seat, n_seat, o_seat = _duty_deal(LastCardDuty.HIGHEST_SINGLE, direction)
    assert d.to_move == d_seat and d.hands[n_seat].bit_count() == 1
    assert texts(d.legal_moves()) == options("AS")
    with pytest.raises(DoesNotBeatError) as e:
        d.play(parse_mask("6S"))
    assert e.value.cause == "does_not_beat"
    with pytest.raises(DoesNotBeatError, match="highest single"):
        d.play(PASS)
    play_out(d, [(d_seat, "AS"), (n_seat, None), (o_seat, None)])
    # leading: the highest single or any combination of more cards
    assert d.to_move == d_seat and d.table is None
    assert texts(d.legal_moves()) == options("KS", "7D 7C")


def test_last_card_duty_no_pass() -> None:
    """003:54 'A player to the right of a player with only one card must play their highest
    hand, if they can play anything' (house-003 plays clockwise)."""
    d, d_seat, _, _ = _duty_deal(LastCardDuty.HIGHEST_SINGLE_NO_PASS, Direction.CLOCKWISE)
    assert d.to_move == d_seat
    assert texts(d.legal_moves()) == options("AS")


def test_last_card_duty_passes_when_the_highest_card_does_not_beat() -> None:
    """000:180 binds a player who can play: with nothing that beats the single, a pass."""
    rules = small(STD, 5, last_card_duty=LastCardDuty.HIGHEST_SINGLE, players=3)
    d = rigged_deal(rules, ["9S KS 6S 7D 7C", "4D 4C 5D 5C 9H", "8D 8C 3S 3H AH"], ctx=lead(1))
    play_out(d, [(1, "4D 4C"), (2, None), (0, None), (1, "5D 5C"), (2, "8D 8C"), (0, None)])
    play_out(d, [(1, None), (2, "AH")])
    assert d.to_move == 0 and d.hands[1].bit_count() == 1
    assert texts(d.legal_moves()) == options("")


def test_last_card_duty_not_for_the_other_neighbour() -> None:
    """The duty binds only the player immediately before the one-card player: O, whose next
    seat is D, leads freely although N holds one card."""
    rules = small(STD, 5, last_card_duty=LastCardDuty.HIGHEST_SINGLE, players=3)
    d = rigged_deal(rules, ["AS KS 6S 7D 7C", "4D 4C 5D 5C 9H", "8D 8C 3S 3H JH"], ctx=lead(1))
    play_out(d, [(1, "4D 4C"), (2, None), (0, None), (1, "5D 5C"), (2, "8D 8C")])
    play_out(d, [(0, None), (1, None)])
    assert d.to_move == 2 and d.table is None and d.hands[1].bit_count() == 1
    assert texts(d.legal_moves()) == options("3S", "3H", "JH", "3S 3H")


def test_no_last_card_duty_in_the_standard_game() -> None:
    d, d_seat, _, _ = _duty_deal(LastCardDuty.NONE, Direction.ANTICLOCKWISE)
    assert d.to_move == d_seat
    assert texts(d.legal_moves()) == options("AS", "KS", "6S", "7D", "7C", "")


def test_last_card_duty_does_not_touch_pairs() -> None:
    rules = small(STD, 5, last_card_duty=LastCardDuty.HIGHEST_SINGLE_NO_PASS, players=3)
    d = rigged_deal(rules, ["AS KS 6S 7D 7C", "4D 4C 5D 5C 9H", "8D 8C 3S 3H JH"], ctx=lead(1))
    play_out(d, [(1, "4D 4C"), (2, None), (0, None), (1, "5D 5C"), (2, None)])
    assert d.hands[1].bit_count() == 1
    assert texts(d.legal_moves()) == options("7D 7C", "")


# --- 003:54 for every size of play: last_card_duty=highest-hand ---------------------------------
def _pair_duty_deal(duty: LastCardDuty) -> Deal:
    """N (seat 1) leads two pairs and holds one card; O passes; D (seat 0, before N) answers
    a pair holding TS TD and KS KH."""
    rules = small(STD, 5, last_card_duty=duty, players=3)
    d = rigged_deal(rules, ["TS TD KS KH 6C", "4D 4C 5D 5C 9H", "8D 8C 3S 3H JH"], ctx=lead(1))
    play_out(d, [(1, "4D 4C"), (2, None), (0, None), (1, "5D 5C"), (2, None)])
    assert d.to_move == 0 and d.hands[1].bit_count() == 1
    return d


def test_highest_hand_on_a_pair() -> None:
    """003:54 'A player to the right of a player with only one card must play their highest
    hand, if they can play anything': on a pair, the highest pair and no pass (the issue 17
    audit: the player before a one-card player could play lower or pass)."""
    d = _pair_duty_deal(LastCardDuty.HIGHEST_HAND)
    assert texts(d.legal_moves()) == options("KS KH")
    with pytest.raises(DoesNotBeatError, match="highest play of that size"):
        d.play(parse_mask("TS TD"))
    with pytest.raises(DoesNotBeatError, match="highest play when they can play"):
        d.play(PASS)
    # Leading: any size, but the highest play of that size (003:52 hands compare only within
    # one size): the top single and the top pair.
    play_out(d, [(0, "KS KH"), (1, None), (2, None)])
    assert d.to_move == 0 and d.table is None
    assert texts(d.legal_moves()) == options("TS", "TS TD")


@pytest.mark.parametrize(
    "duty", [LastCardDuty.HIGHEST_SINGLE, LastCardDuty.HIGHEST_SINGLE_NO_PASS]
)
def test_the_singles_readings_leave_pairs_free(duty: LastCardDuty) -> None:
    """000:180 'your highest single card or a combination of more than one card', and the
    singles-only reading of 003:54 kept for old logs: a pair is answered freely."""
    d = _pair_duty_deal(duty)
    assert texts(d.legal_moves()) == options("TS TD", "KS KH", "")
    play_out(d, [(0, "TS TD"), (1, None), (2, None)])
    assert texts(d.legal_moves()) == options("KS", "KS KH")  # singles: only the highest


def test_highest_hand_on_a_five_card_hand() -> None:
    """On a straight, the highest five-card hand the player holds: a full house over a flush
    (003:44-46 'Flush ... Higher than a Run', 'Full House ... Higher than a Flush')."""
    rules = small(STD, 8, last_card_duty=LastCardDuty.HIGHEST_HAND, players=3)
    d = rigged_deal(
        rules,
        [
            "3H 5H 9H TH QH QS QD TD",
            "3D 3C 4D 5C 6H 7S 8S 2D",
            "9S TS JS QC KD AD AC 2C",
        ],
        ctx=lead(1),
    )
    play_out(d, [(1, "3D 3C"), (2, None), (0, None), (1, "4D 5C 6H 7S 8S"), (2, None)])
    assert d.to_move == 0 and d.hands[1].bit_count() == 1
    assert texts(d.legal_moves()) == options("QS QH QD TH TD")
    free = rigged_deal(
        rules.with_options(last_card_duty=LastCardDuty.NONE),
        ["3H 5H 9H TH QH QS QD TD", "3D 3C 4D 5C 6H 7S 8S 2D", "9S TS JS QC KD AD AC 2C"],
        ctx=lead(1),
    )
    play_out(free, [(1, "3D 3C"), (2, None), (0, None), (1, "4D 5C 6H 7S 8S"), (2, None)])
    assert texts(free.legal_moves()) == options("QS QH QD TH TD", "3H 5H 9H TH QH", "")


def test_highest_hand_passes_when_nothing_beats() -> None:
    """'if they can play anything': with no pair above the table, the pass stays."""
    rules = small(STD, 5, last_card_duty=LastCardDuty.HIGHEST_HAND, players=3)
    d = rigged_deal(rules, ["AS KS 6S 7D 8C", "4D 4C 5D 5C 9H", "8D 3C 3S 3H JH"], ctx=lead(1))
    play_out(d, [(1, "4D 4C"), (2, None), (0, None), (1, "5D 5C"), (2, None)])
    assert d.to_move == 0 and texts(d.legal_moves()) == options("")


def test_house_003_plays_the_highest_hand_duty() -> None:
    assert find_ruleset("house-003").last_card_duty is LastCardDuty.HIGHEST_HAND


# --- forbidden last plays ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("restriction", "last", "allowed", "src"),
    [
        (FinalRestriction.SINGLE_TWO, "2D", False, "000:236 no single 2 as the last card"),
        (FinalRestriction.SINGLE_TWO, "2S", False, "000:403 none of the 2s"),
        (FinalRestriction.SINGLE_TWO, "AS", True, "an ace is fine"),
        (FinalRestriction.SINGLE_TWO, "2D 2C", True, "a pair of twos is fine"),
        (FinalRestriction.SINGLE_TWO_OF_SPADES, "2S", False, "000:184 not the two of spades"),
        (FinalRestriction.SINGLE_TWO_OF_SPADES, "2H", True, "000:184 other twos are fine"),
        (FinalRestriction.SINGLE_TWO_OF_SPADES, "2S 2H", True, "000:392 single only"),
        (FinalRestriction.PAIR_OF_TWOS, "2S 2H", False, "000:328 no double two"),
        (FinalRestriction.PAIR_OF_TWOS, "2S", True, "000:328 single twos are another rule"),
        (FinalRestriction.ANY_TWO_OF_SPADES, "2S", False, "000:392 nothing with the 2S"),
        (FinalRestriction.ANY_TWO_OF_SPADES, "2S 2H", False, "000:392 nothing with the 2S"),
        (FinalRestriction.ANY_TWO_OF_SPADES, "AH 2S 3S 4D 5D", False, "000:392 a straight"),
        (FinalRestriction.ANY_TWO_OF_SPADES, "2D 2C", True, "000:392 other twos are fine"),
        (FinalRestriction.ANY_TWO, "2D", False, "no two at all"),
        (FinalRestriction.ANY_TWO, "2D 2C 2H", False, "no two at all"),
        (FinalRestriction.ANY_TWO, "AS AD", True, "aces are fine"),
    ],
    ids=lambda x: x if isinstance(x, str) and " " in x and len(x) > 12 else None,
)
def test_forbidden_final_play(
    restriction: FinalRestriction, last: str, allowed: bool, src: str
) -> None:
    k = parse_mask(last).bit_count() + 1
    rules = small(STD, k, players=3, forbidden_final=frozenset({restriction}))
    junk = ["5C 6C 7C 8C 9C 5H", "6H 7H 8H 9H TH JH"]
    hands = [last + " 3D", *(j.split()[:k] for j in junk)]
    hands = [h if isinstance(h, str) else " ".join(h) for h in hands]
    d = rigged_deal(rules, hands, ctx=lead(0))
    play_out(d, [(0, "3D"), (1, None), (2, None)])
    assert d.to_move == 0 and d.table is None
    assert (parse_mask(last) in d.legal_moves()) is allowed
    # without the restriction the same play ends the deal
    free = rigged_deal(small(STD, k, players=3), hands, ctx=lead(0))
    play_out(free, [(0, "3D"), (1, None), (2, None)])
    assert parse_mask(last) in free.legal_moves()


def test_single_two_cannot_answer_as_the_last_card() -> None:
    """Hong Kong (000:236): holding only a 2, you cannot beat a single with it; you pass."""
    d = rigged_deal(
        small(find_ruleset("hong-kong"), 2, players=3), ["2D 4H", "5H 9C", "6H TC"], ctx=lead(0)
    )
    play_out(d, [(0, "4H"), (1, "5H"), (2, "6H")])
    assert d.hands[0] == parse_mask("2D")
    assert d.legal_moves() == [PASS]
    with pytest.raises(DoesNotBeatError):
        d.play(parse_mask("2D"))


def test_stalemate_when_nobody_may_lead() -> None:
    """Every remaining player holds only a forbidden last play: the deal ends without score."""
    rules = small(STD, 2, players=2, forbidden_final=frozenset({FinalRestriction.SINGLE_TWO}))
    d = rigged_deal(rules, ["3D 2D", "4C 2C"], ctx=lead(0))
    play_out(d, [(0, "3D"), (1, "4C"), (0, None)])
    assert d.to_move == 1 and d.table is None
    assert d.legal_moves() == [PASS]
    play_out(d, [(1, None)])
    assert d.to_move == 0 and d.legal_moves() == [PASS]
    play_out(d, [(0, None)])
    assert d.over and d.outcome is not None
    assert d.outcome.termination is Termination.STALEMATE
    assert d.outcome.scores == (0, 0)


# --- three threes ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("follower", "forced"),
    [
        ("2D 2C 2H 5S", True),
        ("2D 2C 2H 2S", True),
        ("KD KC KH 2S", False),
    ],
)
def test_triple_threes_force(follower: str, forced: bool) -> None:
    """000:355 'If a player leads off with three 3s, the following player is required to play
    three 2's if no other play is possible.'"""
    rules = small(STD, 4, players=3, triple_threes_force=True)
    d = rigged_deal(rules, ["3D 3C 3H 9S", follower, "6D 6C 6H 7S"], ctx=lead(0))
    play_out(d, [(0, "3D 3C 3H")])
    moves = d.legal_moves()
    assert (PASS not in moves) is forced
    assert moves != []
    # without the rule a pass is always allowed
    free = rigged_deal(
        small(STD, 4, players=3), ["3D 3C 3H 9S", follower, "6D 6C 6H 7S"], ctx=lead(0)
    )
    play_out(free, [(0, "3D 3C 3H")])
    assert PASS in free.legal_moves()


def test_triple_threes_force_only_the_next_player() -> None:
    rules = small(STD, 4, players=3, triple_threes_force=True)
    d = rigged_deal(rules, ["3D 3C 3H 9S", "4D 5C 6S 7D", "2D 2C 2H 5S"], ctx=lead(0))
    play_out(d, [(0, "3D 3C 3H"), (1, None)])
    assert d.to_move == 2 and PASS in d.legal_moves()


def test_triple_threes_force_not_after_other_triples() -> None:
    rules = small(STD, 4, players=3, triple_threes_force=True)
    d = rigged_deal(rules, ["4D 4C 4H 9S", "2D 2C 2H 5S", "6D 6C 6H 7S"], ctx=lead(0))
    play_out(d, [(0, "4D 4C 4H")])
    assert PASS in d.legal_moves()


# --- stock and drawing -------------------------------------------------------------------------
STOCK_HANDS = [
    "3D 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "4D 5D 6D 7D 8D 9D TD JD QD KD AD 2D 2C",
    "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH 2H",
]
STOCK = "3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS 2S"


def test_pass_draws_one() -> None:
    """000:246 'Anyone who passes must draw a card from the undealt stock'."""
    d = rigged_deal(find_ruleset("three-player-stock"), STOCK_HANDS, rest=STOCK)
    assert d.to_move == 0
    play_out(d, [(0, "3D"), (1, None)])
    last = d.history[-1]
    assert last.seat == 1 and last.move == PASS and last.drew == parse_mask("2S")
    assert d.hands[1] == parse_mask(STOCK_HANDS[1]) | parse_mask("2S")
    assert len(d.stock) == 12
    assert all_cards(d) == FULL


def test_pass_draws_the_size_of_the_play() -> None:
    """000:246 'you draw not one card but the number of cards you would have had to play'."""
    rules = find_ruleset("three-player-stock", pass_draw=PassDraw.PLAY_SIZE)
    d = rigged_deal(rules, STOCK_HANDS, rest=STOCK)
    play_out(d, [(0, "3D 3C"), (1, None)])
    assert d.history[-1].drew == parse_mask("AS 2S")
    play_out(d, [(2, None)])
    assert d.history[-1].drew == parse_mask("QS KS")
    assert len(d.stock) == 9 and all_cards(d) == FULL


def test_no_draw_on_a_lead_pass() -> None:
    """Drawing is the price of declining to beat a play; a leader with no allowed lead (here
    only a forbidden last single 2) passes the lead on without drawing."""
    rules = STD.with_options(
        players=3,
        cards_per_player=2,
        leftover=Leftover.STOCK,
        pass_draw=PassDraw.ONE,
        forbidden_final=frozenset({FinalRestriction.SINGLE_TWO}),
    )
    d = rigged_deal(rules, ["3D 2D", "4C 5C", "6C 7C"])
    play_out(d, [(0, "3D"), (1, None), (2, None)])
    assert [t.drew.bit_count() for t in d.history] == [0, 1, 1]
    assert d.table is None and d.to_move == 0
    assert d.legal_moves() == [PASS]
    stock = list(d.stock)
    play_out(d, [(0, None)])
    assert d.history[-1].drew == 0 and d.stock == stock
    assert d.to_move == 1 and d.hands[0] == parse_mask("2D")
    assert all_cards(d) == FULL


def _short_stock(empty: StockEmpty) -> Deal:
    rules = STD.with_options(
        players=3,
        cards_per_player=17,
        leftover=Leftover.STOCK,
        pass_draw=PassDraw.ONE,
        stock_empty=empty,
    )
    return rigged_deal(
        rules,
        [
            "3D 4C 5C 6C 7C 8C 9C TC JC QC KC AC 2C 4S 5S 6S 7S",
            "4D 5D 6D 7D 8D 9D TD JD QD KD AD 2D 8S 9S TS JS QS",
            "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH 2H 3S KS AS 2S",
        ],
        rest="3C",
    )


def test_empty_stock_no_draw() -> None:
    """000:246 'When the stock is used up, play can continue without drawing'."""
    d = _short_stock(StockEmpty.NO_DRAW)
    play_out(d, [(0, "3D"), (1, None), (2, None)])
    assert [t.drew for t in d.history] == [0, parse_mask("3C"), 0]
    play_out(d, [(0, "4C"), (1, None)])
    assert d.history[-1].drew == 0
    assert all_cards(d) == FULL


def test_empty_stock_reshuffles_discards() -> None:
    """000:246 'in some groups the played cards that have been set aside are shuffled and used
    as a new stock'."""
    d = _short_stock(StockEmpty.RESHUFFLE_DISCARDS)
    play_out(d, [(0, "3D"), (1, None), (2, None)])
    assert d.history[-1].drew == 0, "the trick in play is not yet set aside"
    assert d.discards == parse_mask("3D")
    play_out(d, [(0, "4C"), (1, None)])
    assert d.history[-1].drew == parse_mask("3D")
    assert d.discards == 0 and d.stock == []
    assert all_cards(d) == FULL


# --- instant wins and redeals ------------------------------------------------------------------
DRAGON = "3D 4C 5H 6S 7D 8C 9H TS JD QC KH AS 2D"
WITH_DRAGON = complete([None, DRAGON, None, None])


def test_dragon_wins_at_once() -> None:
    """000:170 / 001:44 a dragon wins the deal; each other player scores as though they lost
    without playing any cards (39 penalty points)."""
    d = rigged_deal(find_ruleset("hong-kong"), WITH_DRAGON)
    assert d.over and d.outcome is not None
    o = d.outcome
    assert o.termination is Termination.INSTANT_WIN and o.winner == 1
    assert o.penalties == (39, 0, 39, 39)
    assert o.scores == (-39, 117, -39, -39)
    assert d.legal_moves() == [] and d.history == []


def test_dragon_is_no_instant_win_without_the_rule() -> None:
    d = rigged_deal(STD, WITH_DRAGON)
    assert not d.over and d.legal_moves()


FOUR_TWOS = complete(["2D 2C 2H 2S 3C 4C 5C 6C 7C 8C 9C TC JC", None, None, None])


def test_four_twos_win() -> None:
    """000:388 'owning 4 Twos is also a condition for Immediate Win'."""
    rules = STD.with_options(instant_wins=frozenset({InstantWin.FOUR_TWOS}))
    d = rigged_deal(rules, FOUR_TWOS[1:2] + FOUR_TWOS[:1] + FOUR_TWOS[2:])
    assert d.outcome is not None and d.outcome.termination is Termination.INSTANT_WIN
    assert d.outcome.winner == 1 and d.outcome.scores == (-39, 117, -39, -39)


def test_four_twos_draw() -> None:
    """000:388 'some variations said that it's an automatic draw when 1 player has all 4
    twos'."""
    rules = STD.with_options(instant_wins=frozenset({InstantWin.FOUR_TWOS_DRAW}))
    d = rigged_deal(rules, FOUR_TWOS)
    assert d.outcome is not None and d.outcome.termination is Termination.DRAW
    assert d.outcome.winner is None and d.outcome.scores == (0, 0, 0, 0)


def test_four_twos_no_instant_end_without_the_rule() -> None:
    assert not rigged_deal(STD, FOUR_TWOS).over


def test_six_pairs_wins_in_malta() -> None:
    """000:383 Malta: six pairs and any single card dealt wins at once."""
    hand = "4D 4C 5D 5C 6D 6C 7D 7C 8D 8C 9D 9C KS"
    d = rigged_deal(find_ruleset("malta"), complete([None, hand, None, None]))
    assert d.outcome is not None and d.outcome.termination is Termination.INSTANT_WIN
    assert d.outcome.winner == 1 and d.outcome.scores == (-39, 117, -39, -39)


def test_six_pairs_with_threes_loses_in_malta() -> None:
    """000:383 'if the dragon contains a pair of 3s it is called a dragun bla-bajd and the
    player immediately loses'."""
    hand = "3D 3C 5D 5C 6D 6C 7D 7C 8D 8C 9D 9C KS"
    d = rigged_deal(find_ruleset("malta"), complete([None, hand, None, None]))
    assert d.outcome is not None and d.outcome.termination is Termination.INSTANT_LOSS
    assert d.outcome.winner is None
    assert d.outcome.scores == (39, -117, 39, 39)


@pytest.mark.parametrize(
    "hand",
    [
        "4D 4C 4H 5C 6D 6C 7D 7C 8D 8C 9D 9C KS",  # a triple: five pairs
        "4D 4C 5D 5C 6D 6C 7D 7C 8D 8C 9D KS AS",  # five pairs
    ],
)
def test_not_six_pairs(hand: str) -> None:
    d = rigged_deal(find_ruleset("malta"), complete([None, hand, None, None]))
    assert not d.over


WEAK = "3D 4D 5D 6D 7D 8D 9D TD 3C 4C 5C 6C JS"  # one point (000:332 J=1 Q=2 K=3 A=4 2=5)
THREE_POINTS = "3D 4D 5D 6D 7D 8D 9D TD 3C 4C 5C 6C KS"
NOT_WEAK = "3D 4D 5D 6D 7D 8D 9D TD 3C 4C 5C 6C AS"  # four points, and no face card


@pytest.mark.parametrize(
    ("redeal", "hand", "again"),
    [
        (Redeal.WEAK_HAND, WEAK, True),
        (Redeal.WEAK_HAND, THREE_POINTS, True),
        (Redeal.WEAK_HAND, NOT_WEAK, False),
        (Redeal.NO_FACE_CARDS, NOT_WEAK, True),
        (Redeal.NO_FACE_CARDS, WEAK, False),
    ],
)
def test_redeal(redeal: Redeal, hand: str, again: bool) -> None:
    """000:332 a hand worth 3 points or less, or with no jack, queen or king, is thrown in."""
    rules = STD.with_options(redeal=frozenset({redeal}))
    d = rigged_deal(rules, complete([None, hand, None, None], mode="round"), seed=7)
    assert (d.redeals > 0) is again
    assert (d.hands[1] != parse_mask(hand)) is again
    assert d.dealt == d.hands
    assert all_cards(d) == FULL


def test_redeal_four_twos() -> None:
    """000:332 'if a player has four twos, it might be mandatory to have a reshuffle'."""
    rules = STD.with_options(redeal=frozenset({Redeal.FOUR_TWOS}))
    d = rigged_deal(rules, FOUR_TWOS, seed=3)
    twos = parse_mask("2D 2C 2H 2S")
    assert d.redeals > 0 and all(h & twos != twos for h in d.hands)


# --- play to the end ---------------------------------------------------------------------------
def test_play_to_end_finishing_order() -> None:
    """000:186 'the others continue to play ... If a player's last card is not beaten by any
    other player, the turn to start again passes to the next player in turn after the one who
    has just finished.'  Hawaii penning suits: clubs < spades < hearts < diamonds."""
    rules = find_ruleset("hawaii-penning").with_options(
        cards_per_player=2, leftover=Leftover.SET_ASIDE
    )
    d = rigged_deal(rules, ["3C 2D", "4C 5C", "6C 7C", "8C 9C"])
    assert d.to_move == 0 and d.opening_card == parse_mask("3C")
    play_out(d, [(0, "3C"), (1, "4C"), (2, "6C"), (3, "8C"), (0, "2D")])
    assert not d.over and d.hands[0] == 0
    play_out(d, [(1, None), (2, None), (3, None)])
    assert d.table is None and d.to_move == 1, "the lead passes to the next player in turn"
    play_out(d, [(1, "5C"), (2, None), (3, None)])
    assert d.to_move == 2
    play_out(d, [(2, "7C")])
    assert d.over and d.outcome is not None
    assert d.outcome.finish_order == (0, 1, 2, 3)
    # 000:396 gives penning no points: the finishing order is the result (000 wiki var. 32)
    assert d.outcome.scores == (3, 2, 1, 0)
    assert d.outcome.winner == 0


def test_play_to_end_skips_finished_seats() -> None:
    rules = find_ruleset("hawaii-penning").with_options(
        cards_per_player=2, leftover=Leftover.SET_ASIDE
    )
    d = rigged_deal(rules, ["3C 5C", "4C 2D", "6C 7C", "8C 9C"])
    play_out(d, [(0, "3C"), (1, "4C"), (2, None), (3, None), (0, "5C"), (1, "2D")])
    # seat 1 is out; seat 0 is out too (played 3C and 5C)
    assert d.hands[0] == 0 and d.hands[1] == 0
    play_out(d, [(2, None), (3, None)])
    assert d.to_move == 2
    for _ in range(4):
        if d.over:
            break
        assert d.to_move in (2, 3) and d.hands[d.to_move]
        d.play(d.legal_moves()[0])
    assert d.outcome is not None and d.outcome.finish_order[:2] == (0, 1)


# --- errors ------------------------------------------------------------------------------------
ERROR_HANDS = complete(["3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD 2D", None, None, None])


def test_play_error_names_missing_cards() -> None:
    d = rigged_deal(STD, ERROR_HANDS)  # seat 0 holds the diamonds
    assert d.to_move == 0
    with pytest.raises(CardNotInHandError) as e:
        d.play(parse_mask("3D 3C"))
    assert e.value.cause == "not_in_hand"
    assert str(e.value).endswith("not in hand: 3C")
    with pytest.raises(CardNotInHandError) as e:
        d.play(parse_mask("2S"))
    assert str(e.value).endswith("not in hand: 2S")


def test_play_errors_leave_the_deal_unchanged() -> None:
    d = rigged_deal(STD, ERROR_HANDS)
    assert d.to_move == 0 and d.hands[1] == parse_mask("3C 3H 3S 4C 4H 4S 5C 5H 5S 6C 6H 6S 7C")
    before = (list(d.hands), d.to_move, d.history)
    cases = [
        ("3D 4D 5D 6D", NotACombinationError, "not_a_combination"),
        ("3D 5D", NotACombinationError, "not_a_combination"),
        ("4D", DoesNotBeatError, "does_not_beat"),  # must include the 3D
        ("", DoesNotBeatError, "does_not_beat"),  # no pass on a lead
        ("3S", CardNotInHandError, "not_in_hand"),
    ]
    for text, err, cause in cases:
        with pytest.raises(err) as e:
            d.play(parse_mask(text))
        assert e.value.cause == cause, text
        assert (list(d.hands), d.to_move, d.history) == before
    play_out(d, [(0, "3D")])
    assert d.to_move == 1
    with pytest.raises(CardNotInHandError):
        d.play(parse_mask("3D"))
    with pytest.raises(NotACombinationError):
        d.play(parse_mask("3C 4C"))
    with pytest.raises(DoesNotBeatError) as e:
        d.play(parse_mask("4C 4H"))  # a pair on a single
    assert e.value.cause == "does_not_beat"
    d.play(parse_mask("3S"))
    assert d.to_move == 2
    with pytest.raises(CardNotInHandError):
        d.play(parse_mask("3H"))
    assert d.table is not None and d.table.mask == parse_mask("3S")


def test_push_and_play_agree() -> None:
    rng = random.Random(5)
    for seed in range(5):
        a, b = Deal.new(STD, seed), Deal.new(STD, seed)
        while not a.over:
            moves = a.legal_moves()
            assert moves == b.legal_moves()
            m = rng.choice(moves)
            a.push(m)
            b.play(m)
            assert a.hands == b.hands and a.to_move == b.to_move and a.history == b.history
        assert a.outcome == b.outcome


def test_no_moves_after_the_end() -> None:
    d = Deal.new(STD, 1)
    while not d.over:
        d.push(d.legal_moves()[0])
    assert d.legal_moves() == []
    with pytest.raises(DoesNotBeatError):
        d.play(PASS)
    assert card_text(0) == "3D" and mask_text(0) == ""


@pytest.mark.parametrize(("players", "each"), [(2, 13), (2, 17), (2, 21), (3, 13)])
def test_short_deals_do_not_hand_the_rest_to_one_player(players: int, each: int) -> None:
    """000:250 / 001:45 two-handed play deals 17, 21 or 13 each 'with the remainder always set
    aside unseen'; the spare-card convention (000:244; 002:44 'dealt out as far as they can go
    while retaining an equal number of cards for each player. Leftover cards ... are then given
    to the player holding the 3') is about the odd cards left when the pack is dealt out evenly,
    fewer than one per player.  A rule set dealing short hands must set the rest aside (or be
    refused), not give it all to one player."""
    try:
        rules = STD.with_options(players=players, cards_per_player=each)
    except ValueError:
        return  # refusing the combination is a fine answer too
    d = Deal.new(rules, 1)
    assert d.spare.bit_count() < players
    assert max(h.bit_count() for h in d.hands) < each + players


def _finished(hands: list[str]) -> Deal:
    """Three players; seat 2 goes out with three unbeaten singles, seats 0 and 1 keep theirs."""
    rules = small(STD, 3, players=3).with_options(later_leads=LaterLead.LOSER)
    d = rigged_deal(rules, hands, ctx=lead(2))
    play_out(d, [(2, "9S"), (0, None), (1, None), (2, "TS"), (0, None), (1, None), (2, "JS")])
    assert d.outcome is not None and d.outcome.winner == 2
    return d


@pytest.mark.parametrize(
    ("hands", "loser"),
    [
        (["5C 5D 8H", "3C 6H 7S", "9S TS JS"], 1),  # tie: a pair against singles only
        (["5C 5D 8H", "4C 4H 7S", "9S TS JS"], 1),  # tie: the weaker pair
        (["KC KD 8H", "4C 4H 7S", "9S TS JS"], 1),
        (["4C 4H 7S", "KC KD 8H", "9S TS JS"], 0),
        (["3C 6H 7S", "5C 5D 8H", "9S TS JS"], 0),
    ],
)
def test_the_loser_leads_next(hands: list[str], loser: int) -> None:
    """000:120 'the loser being the player who had most cards at the end of the play. If there
    is a tie for most cards, then those involved in the tie must expose their cards and each
    form the largest playable combination that they can from their cards. The next dealer and
    starter will be the player whose combination has the smallest number of cards, or in case
    of equality the weakest of these combinations.'"""
    from referee.runner.match import find_loser

    d = _finished(hands)
    assert find_loser(d) == loser
    rules = d.rules
    nxt = Deal.new(rules, 5, DealContext(1, previous_winner=2, previous_loser=loser))
    assert nxt.to_move == loser and nxt.opening_card == 0


def test_the_loser_holds_most_cards() -> None:
    rules = small(STD, 4, players=3).with_options(later_leads=LaterLead.LOSER)
    d = rigged_deal(rules, ["5C 5D 8H KH", "3C 6H 7S 8S", "9S TS JS 2S"], ctx=lead(2))
    play_out(
        d,
        [
            (2, "9S"),
            (0, "KH"),
            (1, None),
            (2, "2S"),
            (0, None),
            (1, None),
            (2, "TS"),
            (0, None),
            (1, None),
            (2, "JS"),
        ],
    )
    from referee.runner.match import find_loser

    assert d.outcome is not None and d.outcome.cards_left == (3, 4, 0)
    assert find_loser(d) == 1


def test_refusal_names_the_rule_that_applies() -> None:
    """Under the smack-down rule four cards alone only chop a single 2S (000:354); leading them
    is refused as not allowed now, and the refusal must not blame a last-card duty that is not
    in force (this rule set has none)."""
    rules = find_ruleset("smack-down", later_leads=LaterLead.WINNER)
    assert rules.last_card_duty is LastCardDuty.NONE
    hand = "3D 4C 4D 4H 4S 5C 6C 7C 8C 9C TC JC QC"
    d = rigged_deal(rules, complete([hand, None, None, None]), ctx=lead(0))
    with pytest.raises(DoesNotBeatError) as e:
        d.play(parse_mask("4C 4D 4H 4S"))
    assert e.value.cause == "does_not_beat"
    assert "last card" not in str(e.value) and "highest single" not in str(e.value)


@pytest.mark.parametrize(
    ("hand", "mode", "opener"),
    [
        ("2D 9C 9D 9H 9S 3C 4C 5C 6C 7C 8C TC JC", "round", "2D"),  # a four of a kind dealt
        ("2D 9C 9D 9H 8S 3C 4C 5C 6C 7C 8C TC JC", "round", "3D"),  # none anywhere
    ],
)
def test_twos_low_after_a_dealt_bomb_open_with_the_two_of_diamonds(
    hand: str, mode: str, opener: str
) -> None:
    """000:315 'when a bomb was dealt, it immediately makes the 2s to be the lowest cards in the
    game (with 2 of diamonds becoming the lowest)': the lowest card opens, so the 2D."""
    rules = STD.with_options(twos_low_after_bomb=True)
    d = rigged_deal(rules, complete([None, hand, None, None], mode=mode))
    assert d.opening_card == parse_mask(opener)
    assert d.hands[d.to_move] & parse_mask(opener)
    single = parse_mask("3C")
    moves = d.legal_moves()
    if opener == "2D":
        assert d.to_move == 1 and parse_mask("2D") in moves
        # and in this deal a three beats a two
        assert d.t.power[single.bit_length() - 1] > d.t.power[parse_mask("2S").bit_length() - 1]
    else:
        assert all(m & parse_mask("3D") for m in moves)
