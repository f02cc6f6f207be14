"""The shuffle is ours (referee.game.shuffling and .twister) and deals what it always dealt.

Every stored deal was made by CPython's ``random.Random.shuffle`` on ``random.Random(seed)``;
these tests hold the written-out algorithm to it draw for draw (same permutation, same
generator state after) for many seeds and list lengths, and the pure-Python twister to the C
one word for word, so the fallback deals the same cards as well.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee import Deal, find_ruleset
from referee.game.shuffling import (
    _batched_shuffle,
    deal_random,
    shuffle,
    shuffled_bits,
    word_shuffle,
)
from referee.game.twister import KNOWN_WORDS, MersenneTwister, init_by_array, key_of
from tests.tiers import examples

LENGTHS = (0, 1, 2, 3, 13, 39, 51, 52, 64, 100, 255, 256, 300)
SEEDS = [*range(200), 2**32 - 1, 2**32, 2**63, 2**64 - 1, 7339852785675241625, 10**40]


def cpython(seed: int, n: int) -> tuple[list[int], int]:
    """What CPython's stock shuffle makes of ``range(n)``, and the generator's next draw."""
    rng = random.Random(seed)
    x = list(range(n))
    rng.shuffle(x)
    return x, rng.getrandbits(64)


def test_key_of_cuts_the_seed_into_words_least_significant_first() -> None:
    assert key_of(0) == [0]
    assert key_of(5) == [5]
    assert key_of(2**32) == [0, 1]
    assert key_of(2**64 - 1) == [2**32 - 1, 2**32 - 1]
    assert key_of(-7) == [7]  # as random.seed: the absolute value
    assert init_by_array([0])[0] == 0x80000000


@pytest.mark.parametrize("seed", [0, 1, 2**32, 2**64 - 1, 10**40])
def test_the_twister_is_word_for_word_the_c_generator(seed: int) -> None:
    ours, stock = MersenneTwister(seed), random.Random(seed)
    assert [ours.word() for _ in range(1500)] == [stock.getrandbits(32) for _ in range(1500)]
    assert ours.getrandbits(77) == stock.getrandbits(77)
    assert ours.random() == stock.random()
    assert ours.getrandbits(0) == stock.getrandbits(0) == 0
    state = ours.getstate()
    a = ours.getrandbits(64)
    ours.setstate(state)
    assert ours.getrandbits(64) == a == stock.getrandbits(64)


def test_the_known_words_are_the_twisters() -> None:
    for seed, words in KNOWN_WORDS.items():
        tw = MersenneTwister(seed)
        assert tuple(tw.word() for _ in words) == words


def test_deals_use_the_c_generator_on_this_python() -> None:
    """On CPython the stock generator passes the known-answer check (the fast path is taken)."""
    assert type(deal_random(7)) is random.Random


@pytest.mark.parametrize("n", LENGTHS)
def test_the_written_out_shuffle_is_cpythons(n: int) -> None:
    for seed in SEEDS:
        rng = random.Random(seed)
        x = list(range(n))
        word_shuffle(rng.getrandbits, x)
        assert (x, rng.getrandbits(64)) == cpython(seed, n), seed


@pytest.mark.parametrize("n", [k for k in LENGTHS if k <= 255])
def test_the_batched_shuffle_is_the_written_out_one(n: int) -> None:
    for seed in SEEDS:
        a, b = random.Random(seed), random.Random(seed)
        x, y = list(range(n)), list(range(n))
        _batched_shuffle(a.getrandbits, x)
        word_shuffle(b.getrandbits, y)
        assert (x, a.getrandbits(64)) == (y, b.getrandbits(64)), seed


@pytest.mark.parametrize("n", LENGTHS)
def test_every_path_of_shuffle_gives_cpythons_permutation(n: int) -> None:
    """Stock generator (batched, or one word at a time past 255 items) and the twister."""
    for seed in SEEDS[:40]:
        want = cpython(seed, n)
        for rng in (random.Random(seed), MersenneTwister(seed)):
            x = list(range(n))
            shuffle(rng, x)
            assert (x, rng.getrandbits(64)) == want, (seed, type(rng))
        if n <= 52:  # cards
            bits = shuffled_bits(random.Random(seed), list(range(n)))
            assert bits == [1 << c for c in want[0]]


@settings(max_examples=examples(300), deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**200), n=st.integers(min_value=0, max_value=60))
def test_any_seed_shuffles_as_cpython(seed: int, n: int) -> None:
    rng = random.Random(seed)
    x = list(range(n))
    shuffle(rng, x)
    assert (x, rng.getrandbits(64)) == cpython(seed, n)


@pytest.mark.parametrize("name", ["standard", "three-player-stock", "heads-up", "house-003"])
def test_the_twister_fallback_deals_the_same_cards(name: str) -> None:
    """What a Python whose own generator failed the check would deal (referee.game.twister)."""
    rules = find_ruleset(name)
    for seed in [0, 1, 2, 2**64 - 1]:
        a, b = Deal.new(rules, seed), Deal.new(rules, MersenneTwister(seed))
        assert (a.dealt, a.stock, a.set_aside) == (b.dealt, b.stock, b.set_aside)
