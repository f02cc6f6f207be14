"""The end of a deal as data: how it ended, who won, and every seat's penalty and score."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Termination(StrEnum):
    PLAYED_OUT = "played-out"
    """A player emptied their hand (or, with play to the end, all but one did)."""
    INSTANT_WIN = "instant-win"
    """A dealt hand won at once (dragon, four twos, six pairs)."""
    INSTANT_LOSS = "instant-loss"
    """A dealt hand lost at once (Malta's six pairs holding a pair of threes)."""
    DRAW = "draw"
    """The deal was declared void (four twos as a draw)."""
    STALEMATE = "stalemate"
    """Nobody still holding cards may lead anything (every last play forbidden); no score."""


@dataclass(frozen=True)
class Outcome:
    """Result of one deal.  ``scores`` are the seats' points for the deal, higher is better."""

    termination: Termination
    winner: int | None
    finish_order: tuple[int, ...]
    cards_left: tuple[int, ...]
    penalties: tuple[int, ...]
    scores: tuple[int, ...]
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "termination": self.termination.value,
            "winner": self.winner,
            "finish_order": list(self.finish_order),
            "cards_left": list(self.cards_left),
            "penalties": list(self.penalties),
            "scores": list(self.scores),
            "detail": self.detail,
        }
