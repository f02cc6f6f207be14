"""The shuffle every deal is dealt from, written out here so that no Python upgrade changes it.

A stored match log is replayed from its deal seeds, so the permutation a seed gives must
never change.  The algorithm (docs/logs.md, "How a seed deals", says the same in prose):

1. The generator is MT19937 seeded with ``init_by_array(key)``, the key being the seed cut
   into 32-bit words, least significant first (:mod:`referee.game.twister`).
2. A list ``x`` of ``n`` items is shuffled by Fisher-Yates from the top down: for ``i`` from
   ``n - 1`` down to 1, with ``b = (i + 1).bit_length()``, draw 32-bit words ``w`` until
   ``j = w >> (32 - b)`` is below ``i + 1``; swap ``x[i]`` and ``x[j]``.

That is, draw for draw, what CPython 3.11+'s ``random.Random.shuffle`` does through its private
``_randbelow``; the deals of every stored log were made by it.  This module no longer calls
either: it reads words through the public ``getrandbits`` only, from ``random.Random`` when
:func:`referee.game.twister.stock_is_mt19937` finds it to be that generator, or else from the
pure-Python :class:`~referee.game.twister.MersenneTwister` (see :func:`deal_random`).

One exception: a ``random.Random`` subclass with its own ``shuffle`` (the tests' rigged deck,
``tests/referee/positions.py``) has it called, so a test can put the deck in any order.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from .twister import MersenneTwister, stock_is_mt19937

_STOCK_SHUFFLE = random.Random.shuffle
_STOCK_GETRANDBITS = random.Random.getrandbits

_MAX = 255
"""Longest list the batched path handles (every accepted draw fits in a word's top byte)."""
_DROP = [8 - (i + 1).bit_length() for i in range(_MAX)]
"""``_DROP[i]``: low bits of a word's top byte that the draw for position ``i`` ignores."""
_LIMIT = [(i + 1) << _DROP[i] for i in range(_MAX)]
"""``_LIMIT[i]``: the draw for position ``i`` accepts a word whose top byte is below this."""

_ALL = list(range(52))
_BITS = tuple(1 << c for c in _ALL)


def deal_random(seed: int) -> random.Random:
    """The generator a deal with this seed is shuffled from (MT19937 keyed by the seed).

    ``random.Random(seed)`` when this Python's is that generator (it is on every CPython to
    date, and a deal is ~30 times faster with it), else the pure-Python twister: the same words.
    """
    return random.Random(seed) if _STOCK_IS_MT19937 else MersenneTwister(seed)


def shuffled(rng: random.Random, cards: list[int]) -> list[int]:
    """A uniformly random permutation of ``cards`` drawn from ``rng`` (see the module doc)."""
    deck = list(cards)
    shuffle(rng, deck)
    return deck


def shuffled_bits(rng: random.Random, cards: list[int]) -> list[int]:
    """``[1 << c for c in shuffled(rng, cards)]``, with the same draws from ``rng``.

    The fast path permutes the card bits themselves: building 52 two-digit ints after the
    shuffle costs about as much as the shuffle.
    """
    if _batches(rng) and len(cards) <= _MAX:
        deck = list(_BITS) if cards == _ALL else [_BITS[c] for c in cards]
        _batched_shuffle(rng.getrandbits, deck)
        return deck
    return [1 << c for c in shuffled(rng, cards)]


def shuffle(rng: random.Random, x: list[int]) -> None:
    """Shuffle ``x`` in place by the algorithm of the module doc, drawing from ``rng``."""
    if type(rng).shuffle is not _STOCK_SHUFFLE:
        rng.shuffle(x)  # a subclass's own shuffle: the tests' rigged deck
    elif _batches(rng) and len(x) <= _MAX:
        _batched_shuffle(rng.getrandbits, x)
    else:
        word_shuffle(rng.getrandbits, x)


def word_shuffle(getrandbits: Callable[[int], int], x: list[int]) -> None:
    """The algorithm as specified, one 32-bit word (``getrandbits(32)``) per draw."""
    for i in range(len(x) - 1, 0, -1):
        n = i + 1
        drop = 32 - n.bit_length()
        j = getrandbits(32) >> drop
        while j >= n:
            j = getrandbits(32) >> drop
        x[i], x[j] = x[j], x[i]


def _batches(rng: random.Random) -> bool:
    """Whether ``rng`` shuffles by the algorithm here and its ``getrandbits(32 * m)`` is its
    next ``m`` words, least significant first (the C generator, checked at import)."""
    cls = type(rng)
    return (
        _BATCHED_WORDS_FAITHFUL
        and cls.getrandbits is _STOCK_GETRANDBITS
        and cls.shuffle is _STOCK_SHUFFLE
    )


def _batched_shuffle(getrandbits: Callable[[int], int], x: list[int]) -> None:
    """:func:`word_shuffle` with the words drawn in batches, several times faster.

    ``getrandbits(32 * m)`` is the next ``m`` words, least significant first, so byte
    ``4w + 3`` of its little-endian bytes is the top byte of word ``w``; every accepted draw
    for a list of at most 255 items lies in that byte.  A batch is exactly as long as the
    number of positions left, each of which takes at least one word, so no word is drawn that
    :func:`word_shuffle` would not draw (and a batch is used up exactly when the last position
    is done).
    """
    drop, limit = _DROP, _LIMIT
    i = len(x) - 1
    while i > 0:
        for top in getrandbits(32 * i).to_bytes(4 * i, "little")[3::4]:
            if top < limit[i]:
                j = top >> drop[i]
                x[i], x[j] = x[j], x[i]
                i -= 1


def _batched_words_faithful() -> bool:
    """Whether ``random.Random``'s wide ``getrandbits`` is its words, least significant first."""
    one, wide = random.Random(2024), random.Random(2024)
    words = [one.getrandbits(32) for _ in range(40)]
    return wide.getrandbits(32 * 40) == sum(w << (32 * k) for k, w in enumerate(words))


_STOCK_IS_MT19937 = stock_is_mt19937()
_BATCHED_WORDS_FAITHFUL = _STOCK_IS_MT19937 and _batched_words_faithful()
