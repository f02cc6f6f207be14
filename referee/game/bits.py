"""The bit tricks on hands that the generator, the classifier, the deal and scoring share.

A card is ``rank * 4 + suit`` (:mod:`referee.game.cards`), so the four cards of rank ``r`` are
the nibble ``(hand >> 4*r) & 15``.  A *rank pattern* has bit ``4*r`` set for each rank ``r``
(:data:`ONES` is the pattern of all thirteen ranks), and :func:`rank_counts` turns a hand into
per-rank card counts, one per nibble.  From those counts one mask and shift tell which ranks a
hand holds once, twice, three or four times; the helpers below name those formulas, so each is
written (and checked) once instead of inline at every place that needs it.

Everything here is a few integer operations: cheap enough for the move generator's inner
functions, which call them once per hand, not once per play.
"""

from __future__ import annotations

from .cards import Mask

ONES = int("1" * 13, 16)
"""Bit 4r set for every rank r: the rank pattern of the whole pack."""
M1 = int("5" * 13, 16)
"""Bits 0 and 2 of every nibble (the first step of a per-nibble popcount)."""
M2 = int("3" * 13, 16)
"""Bits 0 and 1 of every nibble (the second step)."""
TWOS = 15 << 48
"""The four twos."""
TWO_OF_SPADES = 1 << 51
TWO_RANK_BIT = 1 << 48
"""The two's bit in a rank pattern."""


def rank_counts(hand: Mask) -> int:
    """Per-nibble popcount: nibble r of the result is how many cards of rank r the hand has."""
    x = hand - ((hand >> 1) & M1)
    return (x & M2) + ((x >> 2) & M2)


# The helpers below read a result of rank_counts: a count of 1..4 per nibble (bits 0-2).


def ranks_held(counts: int) -> int:
    """Rank pattern of the ranks with at least one card."""
    return (counts | counts >> 1 | counts >> 2) & ONES


def ranks_paired(counts: int) -> int:
    """Rank pattern of the ranks with at least two cards (count 2, 3 or 4)."""
    return ((counts >> 1) | (counts >> 2)) & ONES


def ranks_tripled(counts: int) -> int:
    """Rank pattern of the ranks with at least three cards (count 3 or 4)."""
    return ((counts & (counts >> 1)) | (counts >> 2)) & ONES


def ranks_quadrupled(counts: int) -> int:
    """Rank pattern of the ranks with all four cards."""
    return (counts >> 2) & ONES


def ranks_exactly_paired(counts: int) -> int:
    """Rank pattern of the ranks with exactly two cards."""
    return (counts >> 1) & ~counts & ~(counts >> 2) & ONES


def has_four_of_a_kind(hand: Mask) -> bool:
    """Whether the hand holds all four cards of some rank."""
    return bool((rank_counts(hand) >> 2) & ONES)


def card_bits(m: Mask) -> list[Mask]:
    """The single-card masks of ``m``, lowest first."""
    out = []
    while m:
        low = m & -m
        out.append(low)
        m ^= low
    return out


def rank_indices(pattern: int) -> list[int]:
    """Ranks whose indicator bit (bit 4r) is set in a rank pattern, lowest first."""
    out = []
    while pattern:
        low = pattern & -pattern
        out.append(low.bit_length() >> 2)
        pattern ^= low
    return out


def top_rank(pattern: int) -> int:
    """The highest rank of a non-empty rank pattern."""
    return pattern.bit_length() >> 2


def lowest_rank(pattern: int) -> int:
    """The lowest rank of a non-empty rank pattern."""
    return (pattern & -pattern).bit_length() >> 2


def lowest_suit(m: Mask) -> int:
    """The suit of the lowest card of a non-empty mask (a flush's suit)."""
    return (m & -m).bit_length() - 1 & 3
