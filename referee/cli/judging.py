"""One ``/move`` call judged as a match would judge it: the verdict the kit and the replay share.

A match judges an answer with the deal in hand (:func:`referee.wire.protocol.judge_answer`
given the legal moves and the seat's hand).  Every request carries both, exactly: its
``legal_moves`` are the engine's legal moves (each id is the move's cards) and its ``hand`` is
the seat's hand.  So the verdict is the same from the request alone, which is all the
conformance kit has for a sample and all an owner's calls export holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from referee.game.cards import CardError, move_id, parse_mask, parse_move
from referee.runner.faults import plain_fault
from referee.wire.httpbot import CallResult
from referee.wire.protocol import judge_answer

from .advice import fix_for


@dataclass(frozen=True)
class MoveVerdict:
    """``fault`` None: the answer is legal and ``move`` is its id.  Otherwise the fault code,
    the referee's sentence for it (``words``) and what to fix."""

    fault: str | None
    words: str
    fix: str
    move: str | None
    status: int | None
    latency_ms: float

    @property
    def ok(self) -> bool:
        return self.fault is None


class RequestError(ValueError):
    """A request whose ``legal_moves`` or ``hand`` cannot be read (not one the referee sent)."""


def legal_and_hand(request: Mapping[str, Any]) -> tuple[list[int], int]:
    """The legal moves (as card masks) and the hand of a ``/move`` request."""
    try:
        legal = [parse_move(m["id"]) for m in request["legal_moves"]]
        hand = parse_mask(request["hand"])
    except (CardError, KeyError, TypeError) as exc:
        raise RequestError(f"not a /move request the referee sends: {exc}") from None
    return legal, hand


def judge_call(result: CallResult, request: Mapping[str, Any]) -> MoveVerdict:
    """The verdict on ``result``, the bot's answer to ``request``."""
    latency_ms = round(result.latency_s * 1000, 3)
    if not result.ok or result.fault is not None:
        fault = result.fault.value if result.fault is not None else "connection"
        return MoveVerdict(fault, plain_fault(fault, result.detail, result.status),
                           fix_for(fault, result.status), None, result.status, latency_ms)
    legal, hand = legal_and_hand(request)
    answer = judge_answer(result.data, request["turn"], legal, hand)
    if answer.fault is not None or answer.move is None:
        fault = answer.fault.value if answer.fault is not None else "no_move"
        return MoveVerdict(fault, plain_fault(fault, answer.detail), fix_for(fault),
                           None, result.status, latency_ms)
    return MoveVerdict(None, "", "", move_id(answer.move), result.status, latency_ms)


__all__ = ["MoveVerdict", "RequestError", "judge_call", "legal_and_hand"]
