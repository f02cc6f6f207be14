"""The shared bit tricks against plain counting, card by card."""

from __future__ import annotations

import random

from referee.game.bits import (
    ONES,
    card_bits,
    has_four_of_a_kind,
    lowest_rank,
    lowest_suit,
    rank_counts,
    rank_indices,
    ranks_exactly_paired,
    ranks_held,
    ranks_paired,
    ranks_quadrupled,
    ranks_tripled,
    top_rank,
)


def _count(hand: int, r: int) -> int:
    return sum(hand >> (4 * r + s) & 1 for s in range(4))


def _pattern(ranks: list[int]) -> int:
    return sum(1 << (4 * r) for r in ranks)


def _hands() -> list[int]:
    rng = random.Random(5)
    hands = [0, (1 << 52) - 1, 15, 15 << 48]
    for size in (1, 2, 5, 7, 13, 20, 39):
        hands += [sum(1 << c for c in rng.sample(range(52), size)) for _ in range(50)]
    # every count 0..4 at every rank, in one hand per count vector slice
    for k in range(5):
        hands.append(sum(((1 << k) - 1) << (4 * r) for r in range(13)))
    return hands


def test_rank_pattern_helpers_match_counting() -> None:
    for h in _hands():
        cnt = rank_counts(h)
        counts = [_count(h, r) for r in range(13)]
        assert [cnt >> (4 * r) & 15 for r in range(13)] == counts
        assert ranks_held(cnt) == _pattern([r for r, c in enumerate(counts) if c >= 1])
        assert ranks_paired(cnt) == _pattern([r for r, c in enumerate(counts) if c >= 2])
        assert ranks_tripled(cnt) == _pattern([r for r, c in enumerate(counts) if c >= 3])
        assert ranks_quadrupled(cnt) == _pattern([r for r, c in enumerate(counts) if c == 4])
        assert ranks_exactly_paired(cnt) == _pattern([r for r, c in enumerate(counts) if c == 2])
        assert has_four_of_a_kind(h) == (4 in counts)


def test_card_and_rank_lists() -> None:
    for h in _hands():
        assert card_bits(h) == [1 << c for c in range(52) if h >> c & 1]
        held = ranks_held(rank_counts(h))
        ranks = rank_indices(held)
        assert ranks == [r for r in range(13) if _count(h, r)]
        if h:
            assert top_rank(held) == ranks[-1]
            assert lowest_rank(held) == ranks[0]
            assert lowest_suit(h) == min(c for c in range(52) if h >> c & 1) % 4
    assert rank_indices(ONES) == list(range(13))
