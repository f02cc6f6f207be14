"""Whole-deal properties under random legal play (hypothesis).

For every preset and a set of variants of the options that change the flow of play: random
seeds, random match contexts and random legal moves played through the checked
:meth:`Deal.play` until the deal ends.  Every turn: the 52 cards are all accounted for exactly
once, the seat to move holds cards and may move (strict pass: it has not passed in this
trick), the turn passes in the direction of play, every offered move is a play of the hand
that beats the table.  At the end: the deal ended within a bound of turns, replaying
``(rule set, seed, context, moves)`` reproduces it exactly, and the scores follow the
schedule (recomputed here from the cards left) and are zero-sum where the settlement is.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from referee import PASS, PRESETS, Deal, DealContext, RuleSet, beats, classify, find_ruleset
from referee.game.outcome import Termination
from referee.game.rules import (
    AssistReading,
    CardValues,
    Direction,
    Exchange,
    FinalRestriction,
    InstantWin,
    LastCardDuty,
    LaterLead,
    Leftover,
    PassDraw,
    PassRule,
    PenaltySchedule,
    Redeal,
    Settlement,
    ShortHandedTiers,
    StockEmpty,
)
from tests.tiers import examples

from .reference import as_mask, reference_beats_classified, reference_classify, reference_legal

FULL = (1 << 52) - 1
STD = find_ruleset("standard")


def _variants() -> dict[str, RuleSet]:
    v: dict[str, RuleSet] = {}

    def add(name: str, base: RuleSet = STD, **kw: object) -> None:
        v[name] = base.with_options(name=name, **kw)

    add("strict", pass_rule=PassRule.TRICK)
    add("ends-trick", pass_rule=PassRule.ENDS_TRICK)
    add("3p", players=3)
    add("2p", players=2)
    add("2p-17", players=2, cards_per_player=17, leftover=Leftover.SET_ASIDE)
    add("3p-ghost", players=3, leftover=Leftover.GHOST_HAND)
    add("3p-remove-lowest", players=3, leftover=Leftover.REMOVE_LOWEST)
    add("3p-lowest-diamond", players=3, leftover=Leftover.TO_HOLDER_OF_LOWEST_DIAMOND)
    add("3p-2s", players=3, leftover=Leftover.TO_HOLDER_OF_TWO_OF_SPADES)
    add(
        "3p-stock-play-size",
        players=3,
        cards_per_player=13,
        leftover=Leftover.STOCK,
        pass_draw=PassDraw.PLAY_SIZE,
    )
    add(
        "2p-stock",
        players=2,
        cards_per_player=13,
        leftover=Leftover.STOCK,
        pass_draw=PassDraw.ONE,
    )
    add(
        "forbidden-finals",
        forbidden_final=frozenset(FinalRestriction),
        pass_rule=PassRule.TRICK,
    )
    add("duty", last_card_duty=LastCardDuty.HIGHEST_SINGLE)
    add("duty-no-pass", last_card_duty=LastCardDuty.HIGHEST_SINGLE_NO_PASS, players=3)
    add("duty-hand", last_card_duty=LastCardDuty.HIGHEST_HAND)
    add(
        "duty-hand-bombs-strict",
        PRESETS["lukang"],
        last_card_duty=LastCardDuty.HIGHEST_HAND,
        pass_rule=PassRule.TRICK,
    )
    add("duty-hand-same-type", PRESETS["bu-bu-gao-sheng"], last_card_duty=LastCardDuty.HIGHEST_HAND)
    add("duty-hand-no-suits", suits_break_ties=False, last_card_duty=LastCardDuty.HIGHEST_HAND)
    add(
        "assist-precautions",
        penalty=PenaltySchedule(assist_penalty=True, assist_reading=AssistReading.PRECAUTIONS),
    )
    add("play-to-end", play_to_end=True, settlement=Settlement.PLACES)
    add(
        "play-to-end-strict-finals",
        play_to_end=True,
        pass_rule=PassRule.TRICK,
        forbidden_final=frozenset({FinalRestriction.ANY_TWO}),
    )
    add("alternate", direction=Direction.ALTERNATE, later_leads=LaterLead.LOSER)
    add("threes", triple_threes_force=True)
    add(
        "instant",
        instant_wins=frozenset({InstantWin.DRAGON, InstantWin.FOUR_TWOS, InstantWin.SIX_PAIRS}),
    )
    add("draw-twos", instant_wins=frozenset({InstantWin.FOUR_TWOS_DRAW}))
    add("redeal", redeal=frozenset(Redeal))
    add("pairwise-difference", settlement=Settlement.PAIRWISE_DIFFERENCE)
    add("loser-pays", settlement=Settlement.LOSER_PAYS)
    add("lukang-strict", PRESETS["lukang"], pass_rule=PassRule.TRICK)
    add(
        "quads-4",
        four_card="quads-and-two-pairs",
        bomb_kinds=["straight-flush"],
        bomb_targets=[1, 2, 3, 4],
    )
    add("dragon-3p", players=3, dragon_play=True)
    add("3p-loser-to-winner", players=3, exchange=Exchange.LOSER_TO_WINNER)
    add("3p-spare-trade", players=3, leftover=Leftover.SET_ASIDE, spare_trade=True)
    add("president-choice", PRESETS["president"], exchange=Exchange.PRESIDENT_CHOICE)
    add("chop-strict", PRESETS["smack-down"], pass_rule=PassRule.TRICK)
    add("twos-low", twos_low_after_bomb=True, opening_must_include=False)
    # options that interact with bombs, strict passes, playing to the end and duties
    add("bomb-takes-trick", PRESETS["lukang"], bomb_takes_trick=True)
    add(
        "bomb-takes-trick-out-of-turn-strict",
        PRESETS["bu-bu-gao-sheng"],
        bomb_takes_trick=True,
        pass_rule=PassRule.TRICK,
    )
    add(
        "bomb-takes-trick-duty-to-end",
        PRESETS["lukang"],
        bomb_takes_trick=True,
        last_card_duty=LastCardDuty.HIGHEST_SINGLE,
        play_to_end=True,
        settlement=Settlement.FINISHING_ORDER,
    )
    add("follow-president-strict", PRESETS["president"], pass_rule=PassRule.TRICK)
    add(
        "follow-president-bombs-duty",
        PRESETS["president"],
        bomb_kinds=["four-of-a-kind", "straight-flush"],
        bomb_targets=[1, 2, 3],
        bomb_takes_trick=True,
        last_card_duty=LastCardDuty.HIGHEST_SINGLE,
    )
    add("duty-strict", last_card_duty=LastCardDuty.HIGHEST_SINGLE, pass_rule=PassRule.TRICK)
    add("sf-order-002", straights="hong-kong", straight_flushes="ace-low")
    add("3p-dead-hand-house", PRESETS["house-003"], players=3)
    return v


STATE_VARIANTS = _variants()
RULESETS = {**PRESETS, **STATE_VARIANTS}
ZERO_SUM = {
    Settlement.WINNER_COLLECTS,
    Settlement.PAIRWISE,
    Settlement.PAIRWISE_DIFFERENCE,
    Settlement.LOSER_PAYS,
    Settlement.TEAMS,
}


def _played(d: Deal) -> int:
    m = 0
    for t in d.history:
        m |= t.move
    return m


def check_cards(d: Deal, reshuffles: bool) -> None:
    """Hands, the cards played (the finished tricks and the trick in play), the cards set
    aside and the stock hold the 52 cards, each exactly once."""
    stock = 0
    for c in d.stock:
        assert not stock >> c & 1, "a card twice in the stock"
        stock |= 1 << c
    played = d.discards | d.trick_cards
    parts = [*d.hands, d.set_aside, stock, d.discards, d.trick_cards]
    seen = 0
    for p in parts:
        assert not seen & p, "a card in two places"
        seen |= p
    assert seen == FULL, "cards missing"
    if not reshuffles and d.rules.exchange is Exchange.NONE and not d.rules.spare_trade:
        assert played == _played(d), "the piles are not the cards played"


def _highest(d: Deal, h: int) -> int:
    return 1 << max((c for c in range(52) if h >> c & 1), key=lambda c: d.t.order[c])


def check_duties(d: Deal, seat: int, table: object, legal: list[int]) -> None:
    """The turn duties, checked from the outside: before a one-card player on a single the
    highest card is the only single and no pass while it beats (000:180); a seat that can beat
    the President's last play may not pass (002:100)."""
    rules = d.rules
    h = d.hands[seat]
    plays = [m for m in legal if m != PASS]
    if rules.last_card_duty is LastCardDuty.HIGHEST_HAND:
        check_highest_hand(d, seat, table, legal)
    elif rules.last_card_duty is not LastCardDuty.NONE and (table is None or d.table_kind == 1):
        nxt = d.next_seat_any(seat)
        if nxt != seat and d.hands[nxt].bit_count() == 1:
            top = _highest(d, h)
            assert all(m == top for m in plays if m.bit_count() == 1), "a single below the top"
            if table is not None and d.t.power[top.bit_length() - 1] > d.table_key:
                assert PASS not in legal, "a pass before a last card while the top card beats"
    if (
        rules.follow_president
        and table is not None
        and d.finished
        and d.table_seat == d.finished[0]
        and plays
    ):
        assert PASS not in legal, "a pass on the President's last play by a seat that can beat it"


def reference_top(plays: list[int], rules: RuleSet) -> set[int]:
    """The plays that no other play of the same size beats, by the reference's comparison."""
    found = [(m, reference_classify(m, rules)) for m in plays]
    by_kind: dict[object, list[tuple[int, Any]]] = {}
    for m, c in found:
        assert c is not None
        by_kind.setdefault(c[0], []).append((m, c))
    top: set[int] = set()
    for group in by_kind.values():
        group.sort(key=lambda mc: mc[1][1], reverse=True)
        # candidates: not beaten by an earlier candidate; then checked against the whole group
        cands: list[tuple[int, Any]] = []
        for m, c in group:
            if not any(reference_beats_classified(rules, q, c) for _, q in cands):
                cands.append((m, c))
        top |= {
            m
            for m, c in cands
            if not any(reference_beats_classified(rules, q, c) for _, q in group)
        }
    return top


def check_highest_hand(d: Deal, seat: int, table: Any, legal: list[int]) -> None:
    """003:54 'A player to the right of a player with only one card must play their highest
    hand, if they can play anything', checked against the reference: the plays offered are
    exactly the hand's plays (allowed on the table) that no other of the same size beats, and
    no pass while there is one."""
    rules = d.rules
    if d.opening_card or rules.forbidden_final or rules.twos_low_after_bomb:
        return  # the reference knows neither the opening card nor the last-play bans
    nxt = d.next_seat_any(seat)
    if nxt == seat or d.hands[nxt].bit_count() != 1:
        return
    allowed = [as_mask(p) for p in reference_legal(d.hands[seat], table and table.mask, rules)]
    top = reference_top(allowed, rules)
    assert {m for m in legal if m != PASS} == top, "not the highest play of each size"
    if table is not None and top:
        assert PASS not in legal, "a pass before a last card by a seat that can play"


def step_of(rules: RuleSet, index: int) -> int:
    if rules.direction is Direction.CLOCKWISE:
        return -1
    if rules.direction is Direction.ALTERNATE and index % 2 == 1:
        return -1
    return 1


def play_randomly(
    rules: RuleSet, seed: int, ctx: DealContext, policy: int
) -> tuple[Deal, list[int]]:
    d = Deal.new(rules, seed, ctx)
    rng = random.Random(policy)
    n = rules.players
    step = step_of(rules, ctx.index)
    strict = rules.pass_rule is PassRule.TRICK
    reshuffles = rules.stock_empty is StockEmpty.RESHUFFLE_DISCARDS
    bound = (52 + 1) * (2 * n + 1)
    passed: set[int] = set()
    moves: list[int] = []
    check_cards(d, reshuffles)
    while not d.over:
        assert len(moves) < bound, f"no end after {bound} turns"
        seat = d.to_move
        h = d.hands[seat]
        assert h, "the seat to move holds no cards"
        phase = getattr(d, "phase", 0)  # 1: a decision before play, 2: an out-of-turn offer
        shootout = bool(getattr(d, "shootouts", None))
        table = d.table
        if strict and table is not None and phase == 0:
            assert seat not in passed, "a seat that passed is offered a move in the same trick"
        legal = d.legal_moves()
        assert legal, "no legal move"
        assert len(legal) == len(set(legal)), "duplicate legal moves"
        t = d.t
        if phase == 0:
            if table is None and PASS in legal:
                assert legal == [PASS], "a pass on the lead is only offered when nothing else is"
            for m in legal:
                if m == PASS:
                    continue
                assert m & ~h == 0
                p = classify(m, t)
                assert p is not None and beats(p, table, t)
        else:
            assert all(m & ~h == 0 for m in legal)
        if phase == 0:
            check_duties(d, seat, table, legal)
        m = rng.choice(legal)
        d.play(m)
        moves.append(m)
        if (
            rules.bomb_takes_trick
            and not d.over
            and table is not None
            and table.kind != 5
            and m.bit_count() == 5
        ):
            # 001:41 the bomb 'takes the round outright': its player leads (or, out of cards,
            # the next seat does)
            assert d.table is None, "a bomb on a smaller play did not end the trick"
            assert d.to_move == seat or not d.hands[seat]
            passed.clear()
            continue
        if not shootout and not getattr(d, "shootouts", None):
            check_cards(d, reshuffles)
        if d.over:
            break
        if phase or getattr(d, "phase", 0):
            continue  # decisions and out-of-turn offers follow their own order
        if d.table is None:
            passed.clear()
        elif m == PASS:
            passed.add(seat)
        else:
            # the turn passes on in the direction of play to the next seat holding cards
            # (under strict pass: that has not passed in this trick; if there is none, the
            # owner may beat their own play)
            s = seat
            for _ in range(n):
                s = (s + step) % n
                if d.hands[s] and not (strict and s in passed):
                    break
            assert d.to_move == s, f"seat {d.to_move} moves after {seat}, expected {s}"
    return d, moves


def expected_penalty(rules: RuleSet, hand: int) -> int:
    """Penalty recomputed from the schedule's data (card counts, values, tiers)."""
    sched = rules.penalty
    n = hand.bit_count()
    if sched.card_values is CardValues.FLAT:
        base = n
    else:
        values = {
            CardValues.HONOURS: [1] * 8 + [2, 2, 2, 3, 4],
            CardValues.PIP: list(range(1, 14)),
            CardValues.TWOS_FIVE: [1] * 12 + [5],
        }[sched.card_values]
        base = sum(values[c // 4] for c in range(52) if hand >> c & 1)
    # The short-handed schedules are for hands of more than 13 cards (000:340); thirteen-card
    # hands pay by the four-player steps (000:246) unless they go by the number of players
    # (003:60, short_handed_tiers=player-count).
    short = {3: sched.tiers_three_players, 2: sched.tiers_two_players}.get(rules.players)
    by_count = sched.short_handed_tiers is ShortHandedTiers.PLAYER_COUNT
    tiers = short if short is not None and (rules.hand_size() > 13 or by_count) else sched.tiers
    mult = 1
    for at_least, m in tiers:
        if n >= at_least:
            mult = m
    return base * mult


def check_outcome(d: Deal) -> None:
    o = d.outcome
    assert o is not None
    rules = d.rules
    n = rules.players
    assert o.cards_left == tuple(h.bit_count() for h in d.hands)
    if o.termination in (Termination.DRAW, Termination.STALEMATE):
        assert o.scores == (0,) * n and o.winner is None
        return
    if rules.settlement in ZERO_SUM or o.termination is Termination.INSTANT_LOSS:
        assert sum(o.scores) == 0, o
    if o.termination is Termination.INSTANT_LOSS:
        return
    w = o.winner
    assert w is not None
    if o.termination is Termination.PLAYED_OUT:
        assert d.hands[w] == 0
        if not rules.play_to_end:
            assert d.history[-1].seat == w and d.history[-1].move
        assert o.finish_order[0] == w and sorted(o.finish_order) == list(range(n))
    sched = rules.penalty
    simple = not (
        sched.twos_double
        or sched.unused_power_doubles
        or sched.special_finish_doubles
        or sched.finishing_twos_double
        or sched.multiplier_only_for_starter
        or sched.assist_penalty
    )
    if not simple:
        return
    pens = [0 if s == w else expected_penalty(rules, d.hands[s]) for s in range(n)]
    st = rules.settlement
    if st in (
        Settlement.WINNER_COLLECTS,
        Settlement.PAIRWISE,
        Settlement.PENALTY_ONLY,
        Settlement.INDONESIA,
    ):
        assert o.penalties == tuple(pens), (o, pens)
    if st is Settlement.WINNER_COLLECTS:
        assert o.scores == tuple(sum(pens) if s == w else -pens[s] for s in range(n))
    elif st is Settlement.PAIRWISE:
        assert o.scores == tuple(sum(pens[j] - pens[i] for j in range(n)) for i in range(n))
    elif st is Settlement.PENALTY_ONLY:
        assert o.scores == tuple(-p for p in pens)
    elif st is Settlement.PUSOY_DOS:
        last = d.history[-1].move if o.termination is Termination.PLAYED_OUT else 0
        twos = (last >> 48).bit_count()
        assert o.scores == tuple(2**twos if s == w else 0 for s in range(n))
    elif st is Settlement.PLACES:
        points = [5, 3, 1, 0] if n == 4 else [5, 3, 0] if n == 3 else [5, 0]
        assert o.scores == tuple(points[o.finish_order.index(s)] for s in range(n))
    elif st is Settlement.TEAMS:
        # partners sit opposite; the team holding fewer cards wins (ties were shot out)
        mine = sum(o.cards_left[s] for s in range(n) if s % 2 == w % 2)
        theirs = sum(o.cards_left[s] for s in range(n) if s % 2 != w % 2)
        assert mine != theirs
        won = w % 2 if mine < theirs else 1 - w % 2
        assert o.scores == tuple(1 if s % 2 == won else -1 for s in range(n))
    elif st is Settlement.LOSER_PAYS:
        assert sorted(o.scores) == sorted([rules.loser_stake, -rules.loser_stake] + [0] * (n - 2))
        assert o.scores[w] == rules.loser_stake


@st.composite
def contexts(draw: st.DrawFn, players: int) -> DealContext:
    seat = st.one_of(st.none(), st.integers(0, players - 1))
    order = draw(st.permutations(range(players)))
    return DealContext(
        index=draw(st.integers(0, 21)),
        previous_winner=draw(seat),
        previous_loser=draw(seat),
        previous_order=tuple(order) if draw(st.booleans()) else (),
    )


@settings(max_examples=examples(300), deadline=None)
@given(
    name=st.sampled_from(sorted(RULESETS)),
    seed=st.integers(0, 2**32 - 1),
    policy=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_random_deal(name: str, seed: int, policy: int, data: st.DataObject) -> None:
    rules = RULESETS[name]
    ctx = data.draw(contexts(rules.players), label="context")
    d, moves = play_randomly(rules, seed, ctx, policy)
    check_outcome(d)
    # replay from (rule set, seed, context, moves)
    again = Deal.new(rules, seed, ctx)
    assert again.dealt == d.dealt
    for m in moves:
        again.push(m)
    assert again.hands == d.hands
    assert again.history == d.history
    assert again.outcome == d.outcome
    # and from the rule set's options, as a log would carry them
    rebuilt = RuleSet.from_options(rules.name, rules.options())
    assert rebuilt.options() == rules.options()
    third = Deal.new(rebuilt, seed, ctx)
    for m in moves:
        third.play(m)
    assert third.outcome == d.outcome


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), policy=st.integers(0, 2**32 - 1))
def test_reshuffled_stock_keeps_every_card(seed: int, policy: int) -> None:
    """With a reshuffled stock a deal may go on for long; cards stay conserved meanwhile."""
    rules = STD.with_options(
        players=3,
        cards_per_player=13,
        leftover=Leftover.STOCK,
        pass_draw=PassDraw.ONE,
        stock_empty=StockEmpty.RESHUFFLE_DISCARDS,
    )
    d = Deal.new(rules, seed)
    rng = random.Random(policy)
    for _ in range(400):
        if d.over:
            check_outcome(d)
            break
        legal = d.legal_moves()
        # prefer plays so that the deal tends to end
        plays = [m for m in legal if m] or legal
        d.play(rng.choice(plays if rng.random() < 0.7 else legal))
        check_cards(d, reshuffles=True)


def test_rulesets_cover_every_flow_option() -> None:
    seen = {
        (f, str(getattr(r, f)))
        for r in RULESETS.values()
        for f in ("pass_rule", "pass_draw", "leftover", "direction", "last_card_duty", "settlement")
    }
    for enum, field in (
        (PassRule, "pass_rule"),
        (PassDraw, "pass_draw"),
        (Leftover, "leftover"),
        (Direction, "direction"),
        (LastCardDuty, "last_card_duty"),
    ):
        for value in enum:
            assert (field, str(value)) in seen, (field, value)


# Rule sets whose turns offer exactly the plays of the hand that beat the table (no duties, no
# forbidden last plays, no decisions or out-of-turn offers): the state's list must equal the
# reference's, whatever the deal has cached about the hands.
PLAIN_FLOW = sorted(
    name
    for name, r in RULESETS.items()
    if r.last_card_duty is LastCardDuty.NONE
    and not r.forbidden_final
    and not r.triple_threes_force
    and r.exchange is Exchange.NONE
    and not r.spare_trade
    and not r.bombs_out_of_turn
)


@settings(max_examples=examples(40), deadline=None)
@given(
    name=st.sampled_from(PLAIN_FLOW),
    seed=st.integers(0, 2**32 - 1),
    policy=st.integers(0, 2**32 - 1),
)
def test_offered_plays_equal_the_reference(name: str, seed: int, policy: int) -> None:
    rules = RULESETS[name]
    d = Deal.new(rules, seed)
    rng = random.Random(policy)
    turn = 0
    while not d.over:
        legal = d.legal_moves()
        if turn % 3 == 0:
            h = d.hands[d.to_move]
            table = d.table
            low = bool(getattr(d.t, "twos_low", False))
            expected = {
                as_mask(p)
                for p in reference_legal(h, None if table is None else table.mask, rules, low)
            }
            if d.opening_card:
                expected = {m for m in expected if m & d.opening_card}
            assert set(legal) - {PASS} == expected, (name, turn)
        d.push(rng.choice(legal))
        turn += 1
