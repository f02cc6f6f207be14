"""Who moves next: the deal's table of following seats always equals a fresh computation,
and the next seat skips exactly the seats without cards or shut out of the trick."""

from __future__ import annotations

import random

import pytest

from referee import Deal, DealContext, find_ruleset, preset_names
from referee.game.state import following_holders, next_in_turn


def _slow_next(turn: tuple[int, ...], hands: list[int], locked: int, seat: int) -> int:
    s = seat
    for _ in range(len(turn)):
        s = turn[s]
        if hands[s] and not locked >> s & 1:
            return s
    return seat


def test_next_in_turn_against_a_walk_round_the_table() -> None:
    turns = [(1, 2, 3, 0), (3, 0, 1, 2), (1, 2, 0), (1, 0)]
    for turn in turns:
        n = len(turn)
        for held in range(1 << n):
            hands = [1 if held >> s & 1 else 0 for s in range(n)]
            following = following_holders(turn, hands)
            for locked in range(1 << n):
                if locked & ~held:
                    continue  # only seats holding cards are ever shut out
                for seat in range(n):
                    want = _slow_next(turn, hands, locked, seat)
                    assert next_in_turn(following, locked, seat) == want


@pytest.mark.parametrize("name", preset_names())
def test_the_following_table_tracks_every_deal(name: str) -> None:
    rules = find_ruleset(name)
    for seed in range(12):
        pick = random.Random(seed)
        ctx = DealContext(index=seed % 2, previous_winner=0, previous_loser=1,
                          previous_order=tuple(range(rules.players)))
        d = Deal.new(rules, seed, ctx)
        while not d.over:
            assert d._following == following_holders(d._turn, d.hands)
            seat = d.to_move
            assert d.next_seat(seat) == _slow_next(d._turn, d.hands, d.locked, seat)
            moves = d.legal_moves()
            d.push(moves[pick.randrange(len(moves))])
