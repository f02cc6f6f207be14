"""The rarer conventions: seven-card straight flushes, chops, other sequence lengths, twos low
after a dealt bomb, card exchanges, the spare-card trade, out-of-turn bombs, team play.

Each case cites the rule text it follows (files in shared/rules/).
"""

from __future__ import annotations

import random

import pytest

from referee import (
    PASS,
    Deal,
    DealContext,
    DoesNotBeatError,
    beats,
    classify,
    find_ruleset,
    parse_mask,
    tables_for,
)
from referee.game.compiled import KIND_PAIR_RUN, KIND_RUN, KIND_SF_PLUS_TWO
from referee.game.movegen import beating_plays, leading_plays
from referee.game.outcome import Termination
from referee.game.rules import RuleSet

from .positions import complete, options, play_out, rigged_deal, texts


def play(text: str, rules: RuleSet):  # type: ignore[no-untyped-def]
    p = classify(parse_mask(text), tables_for(rules))
    assert p is not None, text
    return p


# --- 000 'Two extra cards with a straight flush' (Todd Latta) -----------------------------
LATTA = find_ruleset(
    "standard",
    straight_flush_plus_two=True,
    five_card_order=["straight", "flush", "full-house", "four-of-a-kind"],
    bomb_kinds=["four-of-a-kind"],
    bomb_targets=[1, 2, 3],
)


def test_straight_flush_needs_two_extra_cards() -> None:
    t = tables_for(LATTA)
    sf = classify(parse_mask("3H 4H 5H 6H 7H"), t)
    assert sf is not None and sf.kind == 5  # only a flush now: no straight-flush type
    assert LATTA.five_card_order[sf.level].value == "flush"
    seven = play("3H 4H 5H 6H 7H 9C KD", LATTA)
    assert seven.kind == KIND_SF_PLUS_TWO


def test_seven_card_play_beats_anything_and_only_a_higher_one_beats_it() -> None:
    t = tables_for(LATTA)
    seven = play("3H 4H 5H 6H 7H 9C KD", LATTA)
    for table in ("2S", "2H 2S", "AC AD AH", "KC KD KH KS 3D", "9C 9D 9H 4C 4D"):
        assert beats(seven, play(table, LATTA), t), table
    higher = play("4S 5S 6S 7S 8S 3C 3D", LATTA)
    assert beats(higher, seven, t) and not beats(seven, higher, t)
    # Four of a kind + 1 beats singles, pairs, triples and five-card hands, not the seven.
    quads = play("KC KD KH KS 3D", LATTA)
    assert beats(quads, play("2S", LATTA), t)
    assert not beats(quads, seven, t)


def test_seven_card_plays_are_generated_and_answer_every_play() -> None:
    t = tables_for(LATTA)
    hand = parse_mask("3H 4H 5H 6H 7H 8H 9C")
    leads = leading_plays(hand, t)
    sevens = [m for m in leads if m.bit_count() == 7]
    assert sevens == [hand]  # one seven-card set, holding two straight flushes: listed once
    assert classify(hand, t).key == play("4H 5H 6H 7H 8H 3C 4C", LATTA).key  # the best SF counts
    answers = beating_plays(hand, t, 1, t.power[51])  # the two of spades
    assert hand in answers


# --- 000 wiki var. 1: smack-down ---------------------------------------------------------
CHOP = find_ruleset("standard", chop=True)


def test_two_of_spades_is_chopped_by_quads_or_three_pairs_in_a_row() -> None:
    t = tables_for(CHOP)
    hand = parse_mask("4C 4D 5C 5D 6C 6H 7C 7D 7H 7S 9D")
    two_spades = play("2S", CHOP)
    answers = texts(beating_plays(hand, t, two_spades.kind, two_spades.key))
    assert (
        options("7C 7D 7H 7S", "4C 4D 5C 5D 6C 6H", "5C 5D 6C 6H 7C 7D", "4C 4D 5C 5D 6C 6H 7C 7D")
        <= answers
    )
    assert options("5C 5D 6C 6H 7C 7H") <= answers
    # The two of hearts is not 'the big two': no chop.
    two_hearts = play("2H", CHOP)
    assert all(m.bit_count() == 1 for m in beating_plays(hand, t, 1, two_hearts.key))
    # Chops are not leads.
    assert all(m.bit_count() <= 5 for m in leading_plays(hand, t))


def test_smack_back_needs_a_higher_chop_of_the_same_shape() -> None:
    t = tables_for(CHOP)
    run3 = play("4C 4D 5C 5D 6C 6H", CHOP)
    assert run3.kind == KIND_PAIR_RUN + 3
    hand = parse_mask("8C 8D 9C 9D TC TD JC JD 3S 3H 3C 3D")
    answers = texts(beating_plays(hand, t, run3.kind, run3.key))
    assert answers == options("8C 8D 9C 9D TC TD", "9C 9D TC TD JC JD")
    quads = play("7C 7D 7H 7S", CHOP)
    assert options("3C 3D 3H 3S") & texts(beating_plays(hand, t, quads.kind, quads.key)) == set()
    assert texts(beating_plays(parse_mask("8C 8D 8H 8S"), t, quads.kind, quads.key)) == options(
        "8C 8D 8H 8S"
    )


# --- 000 wiki var. 8: sequences of other lengths -------------------------------------------
RUNS = find_ruleset("standard", straight_lengths=[3, 7])


def test_three_card_sequences_lead_and_are_beaten_only_by_higher_ones() -> None:
    t = tables_for(RUNS)
    hand = parse_mask("3D 4C 5H 5S 6D 9C 9D 9H")
    leads = texts(leading_plays(hand, t))
    assert options("3D 4C 5H", "3D 4C 5S", "4C 5H 6D", "4C 5S 6D") <= leads
    run = play("3C 4D 5D", RUNS)
    assert run.kind == KIND_RUN + 3
    answers = texts(beating_plays(hand, t, run.kind, run.key))
    assert answers == options("3D 4C 5H", "3D 4C 5S", "4C 5H 6D", "4C 5S 6D")
    assert not beats(play("9C 9D 9H", RUNS), run, t)  # a triple is another kind
    assert classify(parse_mask("QS KS AS 2S 3S"), t) is None or True  # 5 cards: normal rules
    assert classify(parse_mask("KD AD 2D"), t) is None  # twos are not in these runs


def test_seven_card_sequence() -> None:
    t = tables_for(RUNS)
    seq = play("5C 6C 7D 8C 9H TC JS", RUNS)
    assert seq.kind == KIND_RUN + 7
    assert beats(play("6D 7H 8D 9C TS JD QC", RUNS), seq, t)


# --- 000 wiki: twos become lowest when a four of a kind is dealt ---------------------------
def test_twos_are_lowest_in_a_deal_with_a_dealt_four_of_a_kind() -> None:
    rules = find_ruleset("standard", twos_low_after_bomb=True)
    hands = complete(["3C 3D 3H 3S 4D 5D 6D 7D 8D 9D TD JD QD", None, None, None])
    deal = rigged_deal(rules, hands)
    assert deal.t.twos_low
    low = deal.t
    assert low.power[parse_mask("3D").bit_length() - 1] > low.power[51]
    # The two of diamonds is now the lowest card, so its holder opens.
    holder = next(s for s, h in enumerate(deal.hands) if h & parse_mask("2D"))
    assert deal.to_move == holder
    assert all(m & parse_mask("2D") for m in deal.legal_moves())
    plain = rigged_deal(
        rules, complete(["3C 3D 3H 4S 4D 5D 6D 7D 8D 9D TD JD QD", None, None, None], mode="round")
    )
    assert not plain.t.twos_low


# --- exchanges (000 wiki and 002 'President'; 000 three-player game) ------------------------
def _finished_context(order: tuple[int, ...]) -> DealContext:
    return DealContext(1, order[0], order[-1], order)


def test_president_exchange_is_automatic() -> None:
    rules = find_ruleset("standard", play_to_end=True, exchange="president", settlement="places")
    deal = Deal.new(rules, 11, _finished_context((2, 0, 3, 1)))
    order = deal.t.order
    dealt = deal.dealt

    def extreme(mask: int, k: int, high: bool) -> int:
        cards = sorted((c for c in range(52) if mask >> c & 1), key=order.__getitem__, reverse=high)
        return sum(1 << c for c in cards[:k])

    got = {(g, r): c for g, r, c in deal.exchanges}
    assert got[(1, 2)] == extreme(dealt[1], 2, True)  # scum gives his two highest
    assert got[(2, 1)] == extreme(dealt[2], 2, False)  # president gives his two lowest
    assert got[(3, 0)] == extreme(dealt[3], 1, True)
    assert got[(0, 3)] == extreme(dealt[0], 1, False)
    assert [h.bit_count() for h in deal.hands] == [13] * 4
    assert deal.phase == 0


def test_president_choice_asks_the_president_after_receiving() -> None:
    rules = find_ruleset(
        "standard", play_to_end=True, exchange="president-choice", settlement="places"
    )
    deal = Deal.new(rules, 5, _finished_context((2, 0, 3, 1)))
    assert deal.phase == 1 and deal.to_move == 2
    assert deal.hands[2].bit_count() == 15  # received two before choosing
    moves = deal.legal_moves()
    assert len(moves) == 15 * 14 // 2 and PASS not in moves
    give = moves[7]
    deal.play(give)
    assert deal.to_move == 0 and deal.hands[0].bit_count() == 14
    deal.play(deal.legal_moves()[0])
    assert deal.phase == 0 and [h.bit_count() for h in deal.hands] == [13] * 4
    assert deal.hands[1] & give == give
    assert deal.play_start == 2


def test_loser_gives_highest_card_and_winner_chooses_one_back() -> None:
    rules = find_ruleset("standard", players=3, exchange="loser-to-winner")
    deal = Deal.new(rules, 3, DealContext(1, previous_winner=0, previous_loser=2))
    assert deal.phase == 1 and deal.to_move == 0
    ((g, r, c),) = deal.exchanges
    assert (g, r) == (2, 0) and c.bit_length() - 1 == max(
        (x for x in range(52) if deal.dealt[2] >> x & 1), key=deal.t.order.__getitem__
    )
    assert all(m.bit_count() == 1 for m in deal.legal_moves())
    back = deal.legal_moves()[0]
    deal.play(back)
    assert deal.phase == 0
    assert [h.bit_count() for h in deal.hands] == [h.bit_count() for h in deal.dealt]
    assert deal.hands[2] & back and deal.hands[0] & c


def test_spare_trade_and_the_next_lowest_card_opens() -> None:
    rules = find_ruleset("standard", players=3, leftover="set-aside", spare_trade=True)
    deal = next(d for d in (Deal.new(rules, s) for s in range(50)) if d.set_aside != 1)
    holder = next(s for s, h in enumerate(deal.hands) if h & 1)  # the three of diamonds
    assert deal.phase == 1 and deal.to_move == holder
    assert texts(deal.legal_moves()) == options("3D", "")
    spare = deal.set_aside
    deal.play(parse_mask("3D"))
    assert deal.hands[holder] & spare and deal.set_aside == parse_mask("3D")
    # The three of diamonds is out of play: the holder of the three of clubs opens with it.
    opener = next(s for s, h in enumerate(deal.hands) if h & parse_mask("3C"))
    assert deal.phase == 0 and deal.to_move == opener
    assert all(m & parse_mask("3C") for m in deal.legal_moves())
    kept = next(d for d in (Deal.new(rules, s) for s in range(50)) if d.set_aside != 1)
    kept.play(PASS)
    assert kept.phase == 0 and kept.hands[kept.to_move] & 1


# --- 000: bombs out of turn (Da Lao Er) -------------------------------------------------------
def test_bombs_are_offered_out_of_turn() -> None:
    rules = find_ruleset(
        "standard",
        bombs_out_of_turn=True,
        bomb_kinds=["four-of-a-kind", "straight-flush"],
        bomb_targets=[1, 2, 3],
    )
    hands = complete(
        [
            "3D 4D 5S 6S 8D TD JD QS KS AD 2D 3S 4S",
            None,
            "9C 9D 9H 9S 6H 7H 8H TH JH QH KH AH 2H",
            None,
        ],
        mode="round",
    )
    deal = rigged_deal(rules, hands)
    play_out(deal, [(0, "3D")])
    # Seat 2 holds four nines: asked before seat 1's ordinary turn.
    assert deal.phase == 2 and deal.to_move == 2
    offer = texts(deal.legal_moves())
    assert "" in offer and all(len(o.split()) == 5 for o in offer if o)
    deal.play(PASS)
    assert deal.phase == 0 and deal.to_move == 1
    deal2 = rigged_deal(rules, hands)
    play_out(deal2, [(0, "3D")])
    bomb = next(m for m in deal2.legal_moves() if m)
    deal2.play(bomb)
    assert deal2.table_seat == 2 and deal2.to_move == 3 and deal2.table_kind == 5


# --- 000 wiki and 002: team play ----------------------------------------------------------------
def test_team_with_fewer_cards_wins_even_if_its_player_did_not_go_out() -> None:
    # Mike 4, Dave 5 against Lionel 10 and Brendan who goes out: 9 < 10, so Mike and Dave win.
    rules = find_ruleset("standard", settlement="teams")
    deal = Deal.new(rules, 1)
    deal.hands = [
        parse_mask(h)
        for h in ("3C 3D 3H 3S", "4C 4D 4H 4S 5C 5D 5H 5S 6C 6D", "7C 7D 7H 7S 8C", "")
    ]
    from referee.game.scoring import settle

    out = settle(deal, Termination.PLAYED_OUT, 3, "")
    assert out.scores == (1, -1, 1, -1)


def test_team_tie_goes_to_a_five_card_shootout() -> None:
    rules = find_ruleset("standard", settlement="teams")
    rng = random.Random(3)
    seen = 0
    for seed in range(400):
        deal = Deal.new(rules, seed)
        while not deal.over:
            moves = deal.legal_moves()
            deal.push(moves[rng.randrange(len(moves))])
        assert deal.outcome is not None and sorted(deal.outcome.scores) == [-1, -1, 1, 1]
        if deal.shootouts:
            seen += 1
            assert all(h.bit_count() == 5 for h in deal.shootouts[0])
    assert seen > 0


@pytest.mark.parametrize(
    "changes",
    [
        {"straight_flush_plus_two": True},  # still lists straight-flush
        {"straight_lengths": [5]},
        {"bombs_out_of_turn": True},
        {"exchange": "president"},
        {"exchange": "loser-to-winner"},
        {"spare_trade": True},
        {"settlement": "teams", "players": 3},
    ],
)
def test_inconsistent_options_are_refused(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        find_ruleset("standard", **changes)


def test_rule_set_names_round_trip() -> None:
    """A derived rule set's name names it: find_ruleset reads the name back."""
    r = find_ruleset(
        "standard", players=3, bomb_kinds=["four-of-a-kind"], bomb_targets=[1, 2],
        pass_rule="trick", spare_face_up=False, lowest_card_every=10,
    )
    again = find_ruleset(r.name)
    assert again.name == r.name
    assert again == r
    assert find_ruleset("house-003+players=3").players == 3
    with pytest.raises(ValueError):
        find_ruleset("standard+no_such_option=1")
    with pytest.raises(ValueError):
        find_ruleset("standard+players")


# --- 001:41 an honour hand 'takes the round outright' ---------------------------------------
def test_bomb_on_a_single_takes_the_trick_outright() -> None:
    """001:41 'An honour hand ... may be dropped on a single, a pair or a triple, ignoring the
    usual size-matching rule, and takes the round outright': nobody may answer it and its
    player leads next."""
    rules = find_ruleset(
        "lukang", cards_per_player=6, leftover="set-aside", later_leads="winner",
        bomb_takes_trick=True,
    )
    d = rigged_deal(
        rules,
        ["4D 3C 3H 5C 6C 7C", "9D 9H 9S 9C 3S KD", "TD TH TS TC 4C QD", "5D 6D 7D 8D JC JS"],
        ctx=DealContext(1, 0),
    )
    play_out(d, [(0, "4D"), (1, "9D 9H 9S 9C 3S")])
    assert d.table is None and d.to_move == 1, "the bomb took the trick; its player leads"
    assert not d.over


def test_without_the_rule_a_higher_bomb_may_answer() -> None:
    """000:162 (Lukang) lets an honour hand beat a single; the next player may then answer it
    with a higher five-card hand, as five-card hands answer each other (000:68)."""
    rules = find_ruleset("lukang", cards_per_player=6, leftover="set-aside", later_leads="winner")
    d = rigged_deal(
        rules,
        ["4D 3C 3H 5C 6C 7C", "9D 9H 9S 9C 3S KD", "TD TH TS TC 4C QD", "5D 6D 7D 8D JC JS"],
        ctx=DealContext(1, 0),
    )
    play_out(d, [(0, "4D"), (1, "9D 9H 9S 9C 3S")])
    assert d.to_move == 2 and d.table is not None
    assert options("TD TH TS TC 4C") <= texts(d.legal_moves())
    play_out(d, [(2, "TD TH TS TC 4C")])
    assert d.table is not None and d.to_move == 3


def test_a_bomb_on_a_five_card_hand_is_an_ordinary_answer() -> None:
    """The outright win is for a bomb 'dropped on a single, a pair or a triple' (001:41): a
    four of a kind on a straight is a five-card hand answering a five-card hand."""
    rules = find_ruleset(
        "lukang", cards_per_player=6, leftover="set-aside", later_leads="winner",
        bomb_takes_trick=True,
    )
    d = rigged_deal(
        rules,
        ["3D 4C 5H 6S 7D KC", "9D 9H 9S 9C 3S KD", "TD TH TS TC 4D QD", "5D 6D 7C 8D JC JS"],
        ctx=DealContext(1, 0),
    )
    play_out(d, [(0, "3D 4C 5H 6S 7D"), (1, "9D 9H 9S 9C 3S")])
    assert d.table is not None and d.to_move == 2
    assert options("TD TH TS TC 4D") <= texts(d.legal_moves())


def test_bomb_takes_trick_needs_bombs() -> None:
    with pytest.raises(ValueError, match="bomb_takes_trick needs bomb_kinds"):
        find_ruleset("standard", bomb_takes_trick=True)


# --- 002:100 the President's last play must be followed --------------------------------------
def _president(follow: bool, second: str = "4C TH"):  # type: ignore[no-untyped-def]
    """Two cards each: seat 0 goes out first with 9C (the President)."""
    rules = find_ruleset(
        "president", cards_per_player=2, leftover="set-aside", follow_president=follow
    )
    d = rigged_deal(rules, ["3D 9C", second, "6C JH", "5C 7C"])
    play_out(d, [(0, "3D"), (1, "4C"), (2, "6C"), (3, "7C"), (0, "9C")])
    assert d.hands[0] == 0 and not d.over
    return d


def test_players_must_follow_the_presidents_last_play() -> None:
    """002:100 'The players next to the new President must follow the President's last play if
    possible (singleton, pair, three of a kind, 5 cards)'."""
    d = _president(True)
    assert d.to_move == 1 and texts(d.legal_moves()) == options("TH")
    with pytest.raises(DoesNotBeatError, match="President"):
        d.play(PASS)
    play_out(d, [(1, "TH")])
    # once beaten, the table is no longer the President's play: passing is free again
    assert d.to_move == 2 and texts(d.legal_moves()) == options("JH", "")


def test_the_duty_passes_on_to_the_next_player_who_can_beat() -> None:
    """002:100 'The players next to the new President' (all of them): seat 1 cannot beat the
    9C and passes; seat 2 can, and must.  ('If no one can beat the President's last play, the
    player next to the President gains control.')"""
    d = _president(True, second="4C 8H")
    assert d.to_move == 1 and texts(d.legal_moves()) == options("")
    play_out(d, [(1, None)])
    assert d.to_move == 2 and texts(d.legal_moves()) == options("JH")


def test_000_president_may_decline_to_follow() -> None:
    """000:409 'The players next to the new President can follow ... If no one can follow the
    President's last play or choose not to do so even when able'."""
    d = _president(False)
    assert d.to_move == 1 and texts(d.legal_moves()) == options("TH", "")


def test_follow_president_needs_play_to_end() -> None:
    with pytest.raises(ValueError, match="follow_president needs play_to_end"):
        find_ruleset("standard", follow_president=True)
