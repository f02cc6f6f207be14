"""The pure schedulers and scoring of arena.tournaments: balance, repeats, advancement, byes."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections import Counter

import pytest

from arena.tournaments.schedule import (
    Finish,
    Round,
    advancers,
    assign_seats,
    balance_seats,
    knockout_round,
    knockout_sizes,
    pair_counts,
    rotations,
    round_robin,
    seat_counts,
    snake,
    swiss_round,
    swiss_rounds_default,
)
from arena.tournaments.scoring import SeatResult, TableLine, standings, table_result

# --- round robin ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(4, 21))
def test_round_robin_everyone_meets_everyone_with_balanced_byes_and_seats(n: int) -> None:
    players = list(range(101, 101 + n))
    rounds = round_robin(players, 4, seed=n)
    met = pair_counts(rounds)
    assert all(met[frozenset(p)] >= 1 for p in itertools.combinations(players, 2))
    for r in rounds:
        assert len(r.tables) == n // 4 and len(r.byes) == n % 4
        assert sorted(r.players() + r.byes) == players  # everyone once per round
    byes = Counter(b for r in rounds for b in r.byes)
    assert max(byes[p] for p in players) - min(byes[p] for p in players) <= 1
    seats = seat_counts(rounds, 4)
    for counts in seats.values():  # exactly equitable: g // 4 or g // 4 + 1 in every seat
        assert max(counts) - min(counts) <= 1


@pytest.mark.parametrize(("n", "best"), [(4, 1), (8, 3), (16, 5), (12, 5), (13, 7)])
def test_round_robin_is_short(n: int, best: int) -> None:
    """Known sizes: 8 players cover every pair in 3 rounds, 16 in 5 (a resolvable design)."""
    assert len(round_robin(list(range(n)), 4, seed=1)) <= best


def test_round_robin_meetings_are_even_when_the_numbers_allow() -> None:
    # 16 players in 5 rounds: every pair exactly once (the affine plane of order 4).
    met = pair_counts(round_robin(list(range(16)), 4, seed=1))
    assert set(met.values()) == {1} and len(met) == 120
    # Five players, one bye a round: in five rounds everyone sits out once, and every pair
    # meets exactly three times.
    rounds = round_robin(list(range(5)), 4, rounds=5, seed=2)
    assert sorted(b for r in rounds for b in r.byes) == [0, 1, 2, 3, 4]
    assert set(pair_counts(rounds).values()) == {3}


def test_round_robin_cycles_and_fixed_rounds() -> None:
    rounds = round_robin(list(range(8)), 4, cycles=2, seed=3)
    assert min(pair_counts(rounds).values()) >= 2
    assert len(round_robin(list(range(8)), 4, rounds=7, seed=3)) == 7


def test_round_robin_is_reproducible_from_its_seed() -> None:
    a = round_robin(list(range(11)), 4, seed=42)
    b = round_robin(list(range(11)), 4, seed=42)
    assert [(r.tables, r.byes) for r in a] == [(r.tables, r.byes) for r in b]


def test_round_robin_refuses_too_few_or_repeated_players() -> None:
    with pytest.raises(ValueError):
        round_robin([1, 2, 3], 4)
    with pytest.raises(ValueError):
        round_robin([1, 1, 2, 3], 4)


def test_round_robin_heads_up_is_a_plain_round_robin() -> None:
    rounds = round_robin(list(range(6)), 2, seed=1)
    met = pair_counts(rounds)
    assert len(rounds) == 5 and set(met.values()) == {1}  # the circle method's optimum
    for counts in seat_counts(rounds, 2).values():
        assert max(counts) - min(counts) <= 1


# --- seats ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_balance_seats_is_exactly_equitable_on_random_schedules(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(4, 14)
    seats = rng.choice([2, 3, 4])
    rounds = []
    for _ in range(rng.randint(1, 12)):
        ps = list(range(n))
        rng.shuffle(ps)
        k = n // seats
        rounds.append(Round([tuple(ps[i * seats:(i + 1) * seats]) for i in range(k)],
                            ps[k * seats:]))
    balanced = balance_seats(rounds, seats)
    for before, after in zip(rounds, balanced, strict=True):  # same tables, other seats
        assert [sorted(t) for t in before.tables] == [sorted(t) for t in after.tables]
    games = Counter(p for r in rounds for t in r.tables for p in t)
    for p, counts in seat_counts(balanced, seats).items():
        assert sum(counts) == games[p]
        assert all(c in (games[p] // seats, -(-games[p] // seats)) for c in counts)


def test_assign_seats_prefers_the_least_used_seats() -> None:
    counts = {1: [3, 0, 0, 0], 2: [0, 3, 0, 0], 3: [0, 0, 3, 0], 4: [0, 0, 0, 3]}
    seated = assign_seats([1, 2, 3, 4], counts)
    assert all(counts[p][s] == 0 for s, p in enumerate(seated))


# --- Swiss ------------------------------------------------------------------------------------


def test_swiss_groups_neighbours_in_the_standings() -> None:
    r = swiss_round(list(range(1, 13)), 4)
    assert [sorted(t) for t in r.tables] == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    assert r.byes == []


@pytest.mark.parametrize("seed", range(5))
def test_swiss_avoids_repeats_when_it_can(seed: int) -> None:
    # Sixteen players, four tables of four: a second and a third round without any repeat
    # exist whatever the first two were (one player from each earlier table).
    rng = random.Random(seed)
    players = list(range(16))
    met: Counter[frozenset[int]] = Counter()
    for _ in range(3):
        rng.shuffle(players)  # any standings
        r = swiss_round(players, 4, met=met)
        new = [frozenset(p) for t in r.tables for p in itertools.combinations(t, 2)]
        assert all(met[p] == 0 for p in new)
        met.update(new)


@pytest.mark.parametrize(("n", "repeats"), [(8, 4), (12, 3)])
def test_swiss_minimises_repeats_when_it_cannot_avoid_them(n: int, repeats: int) -> None:
    # Fewer tables than seats: some players of every new table shared a first-round table.
    # The fewest repeated pairs: each table takes its players as evenly as possible from
    # the first round's tables.
    first = swiss_round(list(range(n)), 4)
    met = pair_counts([first])
    second = swiss_round(list(range(n)), 4, met=met)
    again = [met[frozenset(p)] for t in second.tables for p in itertools.combinations(t, 2)]
    assert sum(again) == repeats


def test_swiss_byes_go_to_the_lowest_ranked_without_one() -> None:
    r = swiss_round(list(range(1, 11)), 4)  # ten players: two sit out
    assert r.byes == [9, 10]
    r = swiss_round(list(range(1, 11)), 4, byes={10: 1, 9: 1})
    assert r.byes == [7, 8]


def test_swiss_seats_balance_over_rounds() -> None:
    history: dict[int, list[int]] = {}
    players = list(range(8))
    for _ in range(8):
        r = swiss_round(players, 4, seat_history=history)
        for t in r.tables:
            for s, p in enumerate(t):
                history.setdefault(p, [0] * 4)[s] += 1
        players = players[1:] + players[:1]
    assert all(max(c) - min(c) <= 1 for c in history.values())


def test_swiss_default_rounds() -> None:
    assert swiss_rounds_default(4, 4) == 1
    assert swiss_rounds_default(16, 4) == 3
    assert swiss_rounds_default(64, 4) == 4
    assert swiss_rounds_default(16, 2) == 5


# --- knockout ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "k", "sizes"), [
    (4, 2, [4]), (8, 2, [8, 4]), (16, 2, [16, 8, 4]), (10, 2, [10, 8, 4]),
    (5, 2, [5, 4]), (17, 2, [17, 16, 8, 4]), (16, 1, [16, 4]), (12, 3, [12, 8, 4]),
])
def test_knockout_sizes(n: int, k: int, sizes: list[int]) -> None:
    assert knockout_sizes(n, 4, k) == sizes


def test_heads_up_bracket_sizes_are_powers_of_two() -> None:
    assert knockout_sizes(10, 2, 1) == [10, 8, 4, 2]
    assert knockout_sizes(16, 2, 1) == [16, 8, 4, 2]
    assert knockout_sizes(2, 2, 1) == [2]


def test_knockout_round_gives_byes_to_top_seeds_and_snake_seeds_tables() -> None:
    players = list(range(1, 11))  # seeds 1..10, best first
    r = knockout_round(players, 4, 2, 8)
    assert r.byes == [1, 2, 3, 4, 5, 6] and [sorted(t) for t in r.tables] == [[7, 8, 9, 10]]
    r = knockout_round(list(range(1, 17)), 4, 2, 8)
    assert r.byes == [] and len(r.tables) == 4
    tops = [min(t) for t in r.tables]
    assert sorted(tops) == [1, 2, 3, 4]  # the top four seeds at four different tables
    assert sorted(sum(t) for t in r.tables) == [34, 34, 34, 34]  # snake: balanced tables


def test_heads_up_first_round_is_one_against_last() -> None:
    r = knockout_round(list(range(1, 11)), 2, 1, 8)
    assert r.byes == [1, 2, 3, 4, 5, 6]
    assert sorted(tuple(sorted(t)) for t in r.tables) == [(7, 10), (8, 9)]
    r = knockout_round(list(range(1, 9)), 2, 1, 4)
    assert sorted(tuple(sorted(t)) for t in r.tables) == [(1, 8), (2, 7), (3, 6), (4, 5)]


def test_snake() -> None:
    assert snake([1, 2, 3, 4, 5, 6, 7, 8], 2) == [[1, 4, 5, 8], [2, 3, 6, 7]]


def _finishes(table: list[int], keys: list[float] | None = None) -> list[Finish]:
    keys = keys or [0.0] * len(table)
    return [Finish(p, i + 1, (keys[i],)) for i, p in enumerate(table)]


def test_advancers_top_k_per_table_plus_byes() -> None:
    tables = [_finishes([11, 12, 13, 14]), _finishes([21, 22, 23, 24])]
    assert sorted(advancers(tables, [1, 2], 6, 2)) == [1, 2, 11, 12, 21, 22]


def test_advancers_best_third_places_fill_and_worst_seconds_drop() -> None:
    # Nine players: one table of four and five byes, eight places: the third place fills.
    assert sorted(advancers([_finishes([11, 12, 13, 14])], [1, 2, 3, 4, 5], 8, 2)) == \
        [1, 2, 3, 4, 5, 11, 12, 13]
    # Three tables, eight places, no byes: six go through as top two, two more are the
    # best third places by key.
    tables = [_finishes([11, 12, 13, 14], [9, 8, 7, 6]), _finishes([21, 22, 23, 24],
              [9, 7, 1, 0]), _finishes([31, 32, 33, 34], [9, 8.5, 5, 4])]
    chosen = advancers(tables, [], 8, 2)
    assert sorted(chosen) == [11, 12, 13, 21, 22, 31, 32, 33]
    # Too many: of the second places only the best stay.
    assert sorted(advancers(tables, [], 4, 2)) == [11, 21, 31, 32]


def test_rotations_put_every_player_in_every_seat_once() -> None:
    rots = rotations([5, 6, 7, 8], True)
    assert len(rots) == 4
    for seat in range(4):
        assert sorted(r[seat] for r in rots) == [5, 6, 7, 8]
    assert rotations([5, 6, 7, 8], False) == [(5, 6, 7, 8)]
    assert rotations([1, 2], True) == [(1, 2), (2, 1)]


# --- scoring ----------------------------------------------------------------------------------


def _seat(bot: int, seat: int, rank: int, score: int, wins: int = 0, strikes: int = 0,
          forfeited: bool = False) -> SeatResult:
    return SeatResult(bot, seat, rank, score, wins, strikes, forfeited)


def test_duplicate_score_compares_with_the_same_cards() -> None:
    # Two rotations of a heads-up table: hand 0 scores +5 for whoever holds it, except that
    # bot 1 makes +7 of it.  The luck of hand 0 cancels; the skill difference remains.
    matches = [[_seat(1, 0, 1, 7), _seat(2, 1, 2, -7)],
               [_seat(2, 0, 1, 5), _seat(1, 1, 2, -5)]]
    lines = table_result([1, 2], matches, duplicate=True, seed_of={1: 2, 2: 1})
    assert [x.bot for x in lines] == [1, 2]
    assert lines[0].score == pytest.approx(4.0) and lines[1].score == pytest.approx(-4.0)
    assert [x.points for x in lines] == [1.0, 0.0]


def test_single_match_keeps_the_referee_ranks_and_splits_ties_by_strikes_then_seed() -> None:
    m = [_seat(1, 0, 1, 10), _seat(2, 1, 2, 0, strikes=1), _seat(3, 2, 2, 0),
         _seat(4, 3, 4, -10)]
    lines = table_result([1, 2, 3, 4], [m], duplicate=False, seed_of={1: 1, 2: 2, 3: 3, 4: 4})
    assert [x.bot for x in lines] == [1, 3, 2, 4]
    assert [x.points for x in lines] == [3.0, 2.0, 1.0, 0.0]
    m = [_seat(1, 0, 1, 10), _seat(2, 1, 2, 0), _seat(3, 2, 2, 0), _seat(4, 3, 4, -10)]
    lines = table_result([1, 2, 3, 4], [m], duplicate=False, seed_of={1: 1, 2: 3, 3: 2, 4: 4})
    assert [x.bot for x in lines] == [1, 3, 2, 4]  # level: seed order, shared points
    assert [x.points for x in lines] == [3.0, 1.5, 1.5, 0.0]


def test_a_table_whose_matches_all_failed_is_level_in_seed_order() -> None:
    lines = table_result([5, 6, 7, 8], [], duplicate=True, seed_of={5: 4, 6: 3, 7: 2, 8: 1})
    assert [x.bot for x in lines] == [8, 7, 6, 5]
    assert all(math.isclose(x.points, 1.5) for x in lines)


def _line(bot: int, place: int, points: float, score: float, wins: int = 0) -> TableLine:
    return TableLine(bot, place, points, score, int(score), wins, 0, 0, 1)


def test_standings_tie_breaks_in_order() -> None:
    seeds = {1: 4, 2: 3, 3: 2, 4: 1, 5: 5}
    tables = [
        [_line(1, 1, 3, 10), _line(2, 2, 2, 5), _line(3, 3, 1, 0), _line(4, 4, 0, -15)],
        [_line(2, 1, 3, 10), _line(1, 2, 2, 5), _line(5, 3, 1, 0), _line(4, 4, 0, -15)],
    ]
    rows = standings(seeds, tables, [3, 5], 4)
    # 1 and 2 are level on points (5) and score (15): Buchholz (opponents' points) decides.
    by = {r.bot: r for r in rows}
    assert by[1].points == by[2].points == 5 and by[1].score == by[2].score == 15
    assert by[3].points == by[5].points == 2.5  # a bye is worth the average, 1.5
    assert [r.bot for r in rows][:2] == sorted([1, 2], key=lambda b: -by[b].buchholz) or \
        by[1].buchholz == by[2].buchholz
    assert [r.rank for r in rows] == [1, 2, 3, 4, 5]
    keys = [r.sort_key() for r in rows]
    assert keys == sorted(keys)
    # Equal on everything: the better seed first.
    rows = standings({1: 2, 2: 1}, [], [], 4)
    assert [r.bot for r in rows] == [2, 1]


@pytest.mark.parametrize("seed", range(3))
def test_swiss_pairs_256_entrants_without_repeats_round_after_round(seed: int) -> None:
    # 64 tables: repeat-free rounds exist for many rounds; the search must find them with
    # its windowed and repeat-driven swaps, deterministically.
    rng = random.Random(seed)
    players = list(range(1000, 1256))
    met: Counter[frozenset[int]] = Counter()
    for _ in range(4):
        rng.shuffle(players)
        r = swiss_round(players, 4, met=met)
        assert r == swiss_round(players, 4, met=met)  # same standings, same round
        seated = sorted(p for t in r.tables for p in t)
        assert seated == sorted(players) and r.byes == []
        new = [frozenset(p) for t in r.tables for p in itertools.combinations(t, 2)]
        assert all(met[p] == 0 for p in new)
        pos = {p: i for i, p in enumerate(players)}
        spread = [max(pos[p] for p in t) - min(pos[p] for p in t) for t in r.tables]
        assert statistics.median(spread) <= 8  # tables of neighbours in the standings
        met.update(new)


def test_swiss_moves_a_player_to_a_far_table_when_only_that_avoids_a_repeat() -> None:
    # 40 players, 10 tables: player 1 has met everyone of the first six tables' groups, so
    # only a table at least six tables away can take it without a repeat.
    players = list(range(40))
    met = Counter({frozenset((1, x)): 1 for x in range(24) if x != 1})
    r = swiss_round(players, 4, met=met)
    new = [frozenset(p) for t in r.tables for p in itertools.combinations(t, 2)]
    assert all(met[p] == 0 for p in new)
    table_of_1 = next(t for t in r.tables if 1 in t)
    assert min(p for p in table_of_1 if p != 1) >= 24  # with players from the far end
