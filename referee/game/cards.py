"""Cards as small ints and hands as 52-bit sets.

A card is ``rank * 4 + suit``: ranks run 3,4,...,K,A,2 (index 0..12) and suits are the physical
suits D, C, H, S (index 0..3).  The *physical* suit index never changes; rule sets that rank the
suits differently (Pusoy Dos, Taiwan, ...) do so through their own tables in
:mod:`referee.game.combos`, so a card's identity and its text never depend on the rules in force.

Hands, plays and any other group of cards are plain ``int`` bit masks (bit ``c`` set means card
``c`` is in the set).  Ints make set algebra one machine-level operation each; :class:`CardSet`
wraps one for readable code and text round-trips where speed does not matter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeAlias

Card: TypeAlias = int
"""A card, 0..51 (``rank * 4 + suit``)."""

Mask: TypeAlias = int
"""A set of cards as a 52-bit int."""

RANKS = "3456789TJQKA2"
"""Rank letters, lowest first, in Big Two's natural order (the two is highest)."""

SUITS = "DCHS"
"""Physical suit letters by suit index (diamonds, clubs, hearts, spades)."""

SUIT_SYMBOLS = "\u2666\u2663\u2665\u2660"
"""Unicode suit symbols by suit index, for display."""

FULL_DECK: Mask = (1 << 52) - 1

RANK_OF_CHAR = {c: i for i, c in enumerate(RANKS)}
SUIT_OF_CHAR = {c: i for i, c in enumerate(SUITS)}
SUIT_OF_CHAR.update({s: i for i, s in enumerate(SUIT_SYMBOLS)})
SUIT_OF_CHAR.update({"\u2662": 0, "\u2667": 1, "\u2661": 2, "\u2664": 3})  # outline symbols


class CardError(ValueError):
    """Base class of every error about cards and plays; ``cause`` names which rule was broken."""

    cause = "card"


class MalformedCardError(CardError):
    """The text is not a card (``"3D"``, ``"10S"``, ``"th"``, ``"2\u2660"`` are cards)."""

    cause = "malformed"


class CardNotInHandError(CardError):
    """A play names a card that the player does not hold."""

    cause = "not_in_hand"


class NotACombinationError(CardError):
    """The cards do not form any combination that the rule set allows."""

    cause = "not_a_combination"


class DoesNotBeatError(CardError):
    """The combination is valid but may not be played now (too low, wrong size, rule forbids)."""

    cause = "does_not_beat"


def card(rank: int, suit: int) -> Card:
    """Build a card from rank index (0 = three .. 12 = two) and physical suit index."""
    return rank * 4 + suit


def rank_of(c: Card) -> int:
    return c >> 2


def suit_of(c: Card) -> int:
    return c & 3


def parse_card(text: str) -> Card:
    """Parse ``"3D"``, ``"10s"``, ``"Th"``, ``"2\u2660"``; raise :class:`MalformedCardError`."""
    if not isinstance(text, str):
        raise MalformedCardError(f"a card must be a string, not {type(text).__name__}")
    t = text.strip()
    if len(t) < 2:
        raise MalformedCardError(f"not a card: {text!r}")
    rank_text, suit_text = t[:-1].upper(), t[-1]
    if rank_text == "10":
        rank_text = "T"
    rank = RANK_OF_CHAR.get(rank_text) if len(rank_text) == 1 else None
    suit = SUIT_OF_CHAR.get(suit_text.upper(), SUIT_OF_CHAR.get(suit_text))
    if rank is None or suit is None:
        raise MalformedCardError(f"not a card: {text!r}")
    return rank * 4 + suit


def card_text(c: Card) -> str:
    """``"3D"``-style text of a card (``T`` for ten)."""
    return RANKS[c >> 2] + SUITS[c & 3]


def card_symbol(c: Card) -> str:
    """Display text with a Unicode suit symbol, e.g. ``"10\u2660"``."""
    r = RANKS[c >> 2]
    return ("10" if r == "T" else r) + SUIT_SYMBOLS[c & 3]


def iter_cards(mask: Mask) -> Iterator[Card]:
    """Cards of a mask, lowest index first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def cards_of(mask: Mask) -> list[Card]:
    """Cards of a mask as a list, lowest index first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def mask_of(cards: Iterable[Card]) -> Mask:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def parse_mask(cards: Iterable[str] | str) -> Mask:
    """Parse cards given as a list of texts or one space/comma separated string.

    Duplicates are an error: a play names each card once.
    """
    items = cards.replace(",", " ").split() if isinstance(cards, str) else list(cards)
    m = 0
    for item in items:
        c = parse_card(item)
        if m >> c & 1:
            raise MalformedCardError(f"card {card_text(c)} named twice")
        m |= 1 << c
    return m


def mask_text(mask: Mask) -> str:
    """Canonical text of a set of cards: texts in card order, space separated."""
    return " ".join(card_text(c) for c in iter_cards(mask))


def mask_texts(mask: Mask) -> list[str]:
    return [card_text(c) for c in iter_cards(mask)]


def popcount(mask: Mask) -> int:
    return mask.bit_count()


class CardSet:
    """An immutable, readable wrapper over a card mask (like python-chess's ``SquareSet``)."""

    __slots__ = ("mask",)

    def __init__(self, cards: Mask | Iterable[Card] | str = 0) -> None:
        if isinstance(cards, int):
            if cards < 0 or cards > FULL_DECK:
                raise ValueError("a card mask has 52 bits")
            self.mask: Mask = cards
        elif isinstance(cards, str):
            self.mask = parse_mask(cards)
        else:
            self.mask = mask_of(cards)

    def __iter__(self) -> Iterator[Card]:
        return iter_cards(self.mask)

    def __len__(self) -> int:
        return self.mask.bit_count()

    def __contains__(self, c: object) -> bool:
        return isinstance(c, int) and 0 <= c < 52 and bool(self.mask >> c & 1)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CardSet):
            return self.mask == other.mask
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.mask)

    def __or__(self, other: CardSet) -> CardSet:
        return CardSet(self.mask | other.mask)

    def __and__(self, other: CardSet) -> CardSet:
        return CardSet(self.mask & other.mask)

    def __sub__(self, other: CardSet) -> CardSet:
        return CardSet(self.mask & ~other.mask)

    def __bool__(self) -> bool:
        return bool(self.mask)

    def __str__(self) -> str:
        return mask_text(self.mask)

    def __repr__(self) -> str:
        return f"CardSet({mask_text(self.mask)!r})"

    def texts(self) -> list[str]:
        return mask_texts(self.mask)

    def symbols(self) -> str:
        return " ".join(card_symbol(c) for c in iter_cards(self.mask))


PASS_TEXT = "pass"


def move_id(move: Mask) -> str:
    """Stable id of a move: card texts in card order joined by ``-`` (``"3D-3S"``), or
    ``"pass"``.  The same cards always get the same id, whatever the rules or the turn."""
    if not move:
        return PASS_TEXT
    return "-".join(card_text(c) for c in iter_cards(move))


def parse_move(text: str | Iterable[str]) -> Mask:
    """Parse a move id, a space/comma/dash separated card list, a list of card texts, or
    ``"pass"`` (0).  Raises :class:`MalformedCardError`."""
    if isinstance(text, str):
        t = text.strip()
        if t.lower() == PASS_TEXT:
            return 0
        return parse_mask(t.replace("-", " "))
    return parse_mask(list(text))
