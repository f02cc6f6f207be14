"""Build deals with chosen hands through the engine's own dealing code.

:func:`rigged_deal` hands :meth:`Deal.new` a ``random.Random`` whose first shuffle puts the
deck in an order that deals exactly the requested hands.  The order is found by a probe deal:
the same rule set dealt from an unshuffled deck tells which deck position lands in which hand
(or in the stock / the ghost hand), whatever dealing scheme the engine uses.  Every later
shuffle (redeals, reshuffled stocks) is an ordinary seeded shuffle.  Nothing here touches the
deal's internal fields, so the tests keep working while the engine's internals change.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from referee import PASS, Deal, DealContext, RuleSet, mask_text, parse_mask
from referee.game.cards import cards_of
from referee.game.rules import Leftover, PassDraw


class RiggedRandom(random.Random):
    """``shuffle`` puts the first list it is given into ``order``; later shuffles are random."""

    def __init__(self, order: Sequence[int] | None, seed: int = 0) -> None:
        super().__init__(seed)
        self.order = list(order) if order is not None else None
        self.first_input: list[int] | None = None

    def shuffle(self, x: list[int]) -> None:  # type: ignore[override]
        if self.first_input is None:
            self.first_input = list(x)
            if self.order is not None:
                assert sorted(self.order) == sorted(x), "the rigged order must permute the deck"
                x[:] = self.order
            return
        super().shuffle(x)


def _mask(cards: str | int | Sequence[int]) -> int:
    if isinstance(cards, int):
        return cards
    if isinstance(cards, str):
        return parse_mask(cards)
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def _slots(rules: RuleSet, ctx: DealContext | None) -> tuple[list[int], list[tuple[str, int]]]:
    """Deck order given to the shuffle, and where each position ends up."""
    probe_leftover = rules.leftover
    if rules.leftover not in (Leftover.GHOST_HAND, Leftover.REMOVE_LOWEST):
        probe_leftover = Leftover.STOCK
    probe_rules = rules.with_options(
        name="probe",
        redeal=frozenset(),
        instant_wins=frozenset(),
        leftover=probe_leftover,
        pass_draw=PassDraw.NONE,
    )
    rng = RiggedRandom(None)
    probe = Deal.new(probe_rules, rng, ctx)
    assert rng.first_input is not None
    where: list[tuple[str, int]] = []
    for c in rng.first_input:
        seat = next((s for s, h in enumerate(probe.hands) if h >> c & 1), None)
        if seat is not None:
            where.append(("hand", seat))
        elif c in probe.stock:
            where.append(("rest", probe.stock.index(c)))
        else:
            where.append(("ghost", 0))
    return rng.first_input, where


def rigged_deal(
    rules: RuleSet,
    hands: Sequence[str | int],
    rest: str | Sequence[int] | None = None,
    ctx: DealContext | None = None,
    seed: int = 0,
) -> Deal:
    """A deal in which seat ``s`` is dealt ``hands[s]`` (text or mask).

    ``rest`` lists the undealt cards in stock order (the *last* one is drawn first) or, for
    three players, the spare card; by default the undealt cards in card order.  Cards of a
    ghost hand are whatever is left after the hands and ``rest``.
    """
    deck, where = _slots(rules, ctx)
    want = [_mask(h) for h in hands]
    assert len(want) == rules.players
    per_seat: list[list[int]] = [[] for _ in want]
    for kind, s in where:
        if kind == "hand":
            per_seat[s].append(0)
    for s, w in enumerate(want):
        assert w.bit_count() == len(per_seat[s]), (
            f"seat {s} must be dealt {len(per_seat[s])} cards, not {w.bit_count()}"
        )
    used = 0
    for w in want:
        assert not used & w, "hands overlap"
        used |= w
    free = [c for c in deck if not used >> c & 1]
    n_rest = sum(1 for kind, _ in where if kind == "rest")
    if rest is None:
        rest_cards = sorted(free)[:n_rest]
    else:
        rest_cards = cards_of(_mask(rest)) if isinstance(rest, str) else list(rest)
    assert len(rest_cards) == n_rest, f"{n_rest} undealt cards, not {len(rest_cards)}"
    assert not _mask(rest_cards) & used
    ghost = [c for c in free if c not in rest_cards]
    hand_cards = [cards_of(w) for w in want]
    order = []
    for kind, s in where:
        if kind == "hand":
            order.append(hand_cards[s].pop())
        elif kind == "rest":
            order.append(rest_cards[s])
        else:
            order.append(ghost.pop())
    return Deal.new(rules, RiggedRandom(order, seed), ctx)


def play_out(deal: Deal, moves: Sequence[tuple[int, str | None]]) -> None:
    """Play ``(seat, cards or None for a pass)`` turns through the checked :meth:`Deal.play`,
    asserting that each seat is the one to move."""
    for seat, text in moves:
        assert deal.to_move == seat, f"seat {deal.to_move} is to move, not {seat}"
        deal.play(PASS if text is None else parse_mask(text))


def texts(moves: list[int]) -> set[str]:
    """Legal moves as canonical text ('' for a pass)."""
    return {mask_text(m) for m in moves}


def options(*moves: str) -> set[str]:
    """Canonical text of moves written by hand ('' for a pass), to compare with :func:`texts`."""
    return {mask_text(parse_mask(m)) for m in moves}


def complete(hands: Sequence[str | None], size: int = 13, mode: str = "blocks") -> list[str]:
    """Fill the ``None`` seats with the cards nobody was given, lowest first: in blocks of
    ``size`` consecutive cards (``mode="blocks"``: many pairs and triples, never a dragon) or
    one card at a time round the empty seats (``mode="round"``: a spread of ranks)."""
    used = 0
    for h in hands:
        if h is not None:
            used |= parse_mask(h)
    free = [c for c in range(52) if not used >> c & 1]
    empty = [s for s, h in enumerate(hands) if h is None]
    fill: dict[int, list[int]] = {s: [] for s in empty}
    for i, c in enumerate(free[: size * len(empty)]):
        s = empty[i // size] if mode == "blocks" else empty[i % len(empty)]
        fill[s].append(c)
    return [h if h is not None else mask_text(_mask(fill[s])) for s, h in enumerate(hands)]
