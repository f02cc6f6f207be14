"""Shuffling that replays ``random.Random.shuffle`` exactly, several times faster.

A deal is replayed from its seed, so the permutation a seed gives must never change: the fast
path here reproduces the stock shuffle draw for draw (same cards, same generator state after).
It is taken only for a ``random.Random`` whose ``shuffle`` and bit source are the stock ones
(a subclass overriding either, like the tests' rigged deck, has its own ``shuffle`` called)
and only if the import-time self-check finds the replica faithful on this Python.
"""

from __future__ import annotations

import random

_STOCK_SHUFFLE = random.Random.shuffle
_STOCK_RANDBELOW = getattr(random.Random, "_randbelow", None)
"""Private, but it is the draw ``shuffle`` makes: a subclass overriding it changes the result."""
_STOCK_GETRANDBITS = random.Random.getrandbits

_MAX = 255
"""Longest list the replica handles (every draw's accepted bits fit in a word's top byte)."""
_DROP = [8 - (i + 1).bit_length() for i in range(_MAX)]
"""``_DROP[i]``: low bits of a word's top byte that ``randbelow(i + 1)`` ignores."""
_LIMIT = [(i + 1) << _DROP[i] for i in range(_MAX)]
"""``_LIMIT[i]``: ``randbelow(i + 1)`` accepts a word whose top byte is below this."""

_ALL = list(range(52))
_BITS = tuple(1 << c for c in _ALL)


def shuffled(rng: random.Random, cards: list[int]) -> list[int]:
    """A uniformly random permutation of ``cards`` drawn from ``rng`` (Fisher-Yates)."""
    deck = list(cards)
    shuffle(rng, deck)
    return deck


def shuffled_bits(rng: random.Random, cards: list[int]) -> list[int]:
    """``[1 << c for c in shuffled(rng, cards)]``, with the same draws from ``rng``.

    The fast path permutes the card bits themselves: building 52 two-digit ints after the
    shuffle costs about as much as the shuffle.
    """
    if _is_stock(rng) and len(cards) <= _MAX:
        deck = list(_BITS) if cards == _ALL else [_BITS[c] for c in cards]
        _replica_shuffle(rng, deck)
        return deck
    return [1 << c for c in shuffled(rng, cards)]


def shuffle(rng: random.Random, x: list[int]) -> None:
    """``rng.shuffle(x)``, bit for bit."""
    if _is_stock(rng) and len(x) <= _MAX:
        _replica_shuffle(rng, x)
    else:
        rng.shuffle(x)


def _is_stock(rng: random.Random) -> bool:
    """Whether ``rng.shuffle`` is the stock algorithm on the stock bit source."""
    cls = type(rng)
    return (
        _REPLICA_FAITHFUL
        and cls.shuffle is _STOCK_SHUFFLE
        and getattr(cls, "_randbelow", None) is _STOCK_RANDBELOW
        and cls.getrandbits is _STOCK_GETRANDBITS
    )


def _replica_shuffle(rng: random.Random, x: list[int]) -> None:
    """``random.Random.shuffle`` (CPython 3.11+) with its per-card draws batched.

    The stock shuffle swaps ``x[i]`` with ``x[randbelow(i + 1)]`` for ``i`` from the top down;
    each ``randbelow(n)`` is a Python call that takes the top ``n.bit_length()`` bits of one
    32-bit word of the Mersenne twister per try and retries while they are ``>= n``.  Here the
    words come in batches: ``getrandbits(32 * m)`` is the next ``m`` words, least significant
    first, so byte ``4w + 3`` of its little-endian bytes is the top byte of word ``w``.  A batch
    is exactly as long as the number of positions left, each of which takes at least one word,
    so no word is drawn that the stock shuffle would not draw (and a batch is used up exactly
    when the last position is done).
    """
    drop, limit = _DROP, _LIMIT
    getrandbits = rng.getrandbits
    i = len(x) - 1
    while i > 0:
        for top in getrandbits(32 * i).to_bytes(4 * i, "little")[3::4]:
            if top < limit[i]:
                j = top >> drop[i]
                x[i], x[j] = x[j], x[i]
                i -= 1


def _replica_is_faithful() -> bool:
    """Whether :func:`_replica_shuffle` matches this Python's ``random.Random.shuffle``."""
    for seed in (0, 2024):
        stock, replica = random.Random(seed), random.Random(seed)
        a, b = list(range(52)), list(range(52))
        stock.shuffle(a)
        _replica_shuffle(replica, b)
        if a != b or stock.getrandbits(64) != replica.getrandbits(64):
            return False
    return True


_REPLICA_FAITHFUL = _replica_is_faithful()
