"""MT19937, the Mersenne Twister, written out: the bit source every deal is shuffled from.

A deal's seed is an MT19937 key (Matsumoto and Nishimura's ``init_by_array``), and the shuffle
(:mod:`referee.game.shuffling`) reads the generator's 32-bit outputs.  CPython's ``random.Random``
is the same generator seeded the same way, and much faster, so deals use it — but only after
:func:`stock_is_mt19937` has compared it with this module's words for known seeds.  Should a
Python ever seed or draw differently, :func:`referee.game.shuffling.deal_random` falls back to
:class:`MersenneTwister`, and every stored seed keeps dealing the same cards (slower).

This module is also the specification: docs/logs.md ("How a seed deals") describes the same
steps, so another implementation can reproduce a stored log's deals.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

_N, _M = 624, 397
_MASK = 0xFFFFFFFF
_UPPER, _LOWER, _MATRIX = 0x80000000, 0x7FFFFFFF, 0x9908B0DF


def key_of(seed: int) -> list[int]:
    """The ``init_by_array`` key of a seed: ``abs(seed)`` cut into 32-bit words, least
    significant first (``[0]`` for 0), as CPython's ``random.seed(int)`` does."""
    n = abs(seed)
    key = []
    while True:
        key.append(n & _MASK)
        n >>= 32
        if not n:
            return key


def init_by_array(key: Sequence[int]) -> list[int]:
    """The 624-word state after seeding with ``key`` (the reference ``init_by_array``)."""
    mt = [19650218]
    for i in range(1, _N):
        mt.append((1812433253 * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i) & _MASK)
    i, j = 1, 0
    for _ in range(max(_N, len(key))):
        prev = mt[i - 1]
        mt[i] = ((mt[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + key[j] + j) & _MASK
        i, j = i + 1, j + 1
        if i >= _N:
            mt[0], i = mt[_N - 1], 1
        if j >= len(key):
            j = 0
    for _ in range(_N - 1):
        prev = mt[i - 1]
        mt[i] = ((mt[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - i) & _MASK
        i += 1
        if i >= _N:
            mt[0], i = mt[_N - 1], 1
    mt[0] = _UPPER  # the top bit set: the state is never all zero
    return mt


def _twist(mt: list[int]) -> None:
    """Regenerate all 624 words in place (the reference ``genrand_int32`` refill)."""
    for k in range(_N):
        y = (mt[k] & _UPPER) | (mt[(k + 1) % _N] & _LOWER)
        mt[k] = mt[(k + _M) % _N] ^ (y >> 1) ^ (_MATRIX if y & 1 else 0)


def _temper(y: int) -> int:
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    return y ^ (y >> 18)


class MersenneTwister(random.Random):
    """MT19937 in pure Python, word for word what ``random.Random(seed)`` gives on CPython.

    ``getrandbits(k)`` is the next ``ceil(k / 32)`` words, least significant first, the last
    one cut to its top bits; ``random()`` is CPython's ``(a >> 5, b >> 6)`` double.  Only the
    fallback of :func:`referee.game.shuffling.deal_random`: a deal costs ~3 ms with it, 0.1 ms
    with the C one (seeding and the first twist of 624 words are most of it).
    """

    def __init__(self, seed: int = 0) -> None:
        self._mt: list[int] = []
        self._index = _N
        super().__init__(seed)

    def seed(self, a: object = 0, version: int = 2) -> None:
        if not isinstance(a, int):
            raise TypeError("a deal's generator is seeded with an int")
        self._mt = init_by_array(key_of(a))
        self._index = _N
        self.gauss_next = None

    def word(self) -> int:
        """The next 32-bit output."""
        if self._index >= _N:
            _twist(self._mt)
            self._index = 0
        y = self._mt[self._index]
        self._index += 1
        return _temper(y)

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        out, shift = 0, 0
        while k > 0:
            w = self.word()
            if k < 32:
                w >>= 32 - k
            out |= w << shift
            shift += 32
            k -= 32
        return out

    def random(self) -> float:
        a, b = self.word() >> 5, self.word() >> 6
        return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)

    def getstate(self) -> tuple[int, tuple[int, ...], None]:  # type: ignore[override]
        return (3, (*self._mt, self._index), None)

    def setstate(self, state: tuple[int, tuple[int, ...], None]) -> None:  # type: ignore[override]
        *mt, index = state[1]
        self._mt, self._index = list(mt), index


KNOWN_WORDS = {
    0: (3626764237, 1654615998, 3255389356, 3823568514),
    2**64 - 1: (93740670, 1068495656, 1452108352, 2657516307),
}
"""The first outputs of MT19937 for a one-word and a two-word key (computed by this module;
``tests/referee/game/test_shuffling.py`` checks them against :class:`MersenneTwister`)."""


def stock_is_mt19937() -> bool:
    """Whether this Python's ``random.Random(seed)`` gives MT19937's words for ``seed``, one
    at a time through ``getrandbits(32)``, for the seeds of :data:`KNOWN_WORDS`."""
    for seed, words in KNOWN_WORDS.items():
        rng = random.Random(seed)
        if tuple(rng.getrandbits(32) for _ in words) != words:
            return False
    return True
