"""A match's calls to its bots, counted for Prometheus: outcomes, latency, deadline overshoot,
time bank.

The referee measures every call (``Reply.latency_s``) and holds it to the deadline it was
given; it does not know Prometheus and never will (``referee/`` imports only the standard
library).  So the arena watches from outside, the way :mod:`arena.bots.calls` keeps answers
for owners: :class:`CallMeter` wraps each seat's player, and sees each call's deadline and
reply, and then each turn as the runner judged it (``on_turn``).

* **Deadline overshoot**: a call that timed out returned ``latency_s - deadline_s`` after
  its deadline, where ``deadline_s`` is what the runner allowed it (the per-move deadline
  plus what was left of the seat's time bank, or the courtesy call's deadline).  That gap is
  the referee's lateness in noticing (a busy interpreter, a loaded machine), the figure
  ``bench/concurrency.py`` measures from the logs (p99 6-10 ms at 100-140 matches in one
  process); here it is measured on every timeout of every match.
* **Outcomes** of moves come from the turn (the runner's verdict: a well-formed answer with
  an illegal move is ``illegal``, not ``ok``); of ``GET /``, ``/start`` and ``/end`` from the
  reply.  Labels are the call, the outcome class (:data:`OUTCOME_CLASSES`) and the fault's
  code: a few fixed values each, never the bot.
* **Time bank**: what each move drew from its seat's bank (its time past the per-move
  deadline), and seats whose bank ran out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arena.core import metrics
from referee.runner.faults import FAULTS
from referee.runner.match import FORFEITED, Limits, MatchRecord, TurnRecord
from referee.wire.httpbot import Fault
from referee.wire.players import Player, Reply

TIMEOUT = Fault.TIMEOUT.value

OUTCOME_CLASSES: dict[str, str] = {
    TIMEOUT: "timeout",
    **dict.fromkeys(
        (Fault.CONNECTION, Fault.TLS, Fault.PROTOCOL, Fault.DNS, Fault.REFUSED_ADDRESS,
         Fault.BAD_URL), "no_answer"),
    **dict.fromkeys((Fault.HTTP_STATUS, Fault.REDIRECT, Fault.BODY_TOO_LARGE), "http_error"),
    **dict.fromkeys(
        (Fault.NOT_JSON, Fault.BAD_SHAPE, "not_an_object", "no_move", "malformed_cards",
         "bad_description", "exception"), "malformed"),
    **dict.fromkeys(("wrong_turn", "unknown_move", "not_in_hand", "illegal"), "illegal"),
}
"""The ``outcome`` label of a failed call: a small, fixed set of classes to alert on (the
``fault`` label names the exact fault); a fault not listed is ``failed``."""


def outcome_labels(fault: str | None) -> tuple[str, str]:
    """``(outcome, fault)`` labels of a call: its verdict and its fault's code (``none``
    when it was fine; ``other`` for a code this table does not know, so a new fault can
    never add values beyond the known ones)."""
    if fault is None:
        return "ok", "none"
    known = fault in FAULTS
    return OUTCOME_CLASSES.get(fault, "failed"), fault if known else "other"


_CHILDREN: dict[tuple[int, tuple[str, ...]], Any] = {}
"""Each metric's child for a set of label values, looked up once: ``labels()`` takes a lock
and builds a key on every call, and a worker records a few calls per move.  Bounded: the
labels come from the fixed sets above."""


def child(metric: Any, *labels: str) -> Any:
    """``metric.labels(*labels)``, remembered (the metrics live as long as the process)."""
    key = (id(metric), labels)
    found = _CHILDREN.get(key)
    if found is None:
        found = _CHILDREN[key] = metric.labels(*labels)
    return found


def observe_call(call: str, reply: Reply, deadline_s: float, *, count: bool) -> None:
    """Record one call's latency, its overshoot if it timed out, and (``count``) its
    outcome."""
    child(metrics.BOT_CALL_SECONDS, call).observe(reply.latency_s)
    if reply.fault == TIMEOUT:
        child(metrics.DEADLINE_OVERSHOOT, call).observe(max(0.0, reply.latency_s - deadline_s))
    if count:
        child(metrics.BOT_CALLS, call, *outcome_labels(reply.fault)).inc()


class _Metered(Player):
    """A seat's player, its calls observed on the way back."""

    def __init__(self, inner: Player) -> None:
        self.inner = inner
        self.label = inner.label

    def scrub(self, text: str) -> str:
        return self.inner.scrub(text)

    def describe(self, deadline_s: float) -> Reply:
        reply = self.inner.describe(deadline_s)
        observe_call("describe", reply, deadline_s, count=True)
        return reply

    def start(self, info: dict[str, Any], deadline_s: float) -> Reply:
        reply = self.inner.start(info, deadline_s)
        observe_call("start", reply, deadline_s, count=True)
        return reply

    def move(self, request: dict[str, Any], deadline_s: float) -> Reply:
        reply = self.inner.move(request, deadline_s)
        observe_call("move", reply, deadline_s, count=False)  # counted as judged: on_turn
        return reply

    def end(self, info: dict[str, Any], deadline_s: float) -> Reply:
        reply = self.inner.end(info, deadline_s)
        observe_call("end", reply, deadline_s, count=True)
        return reply

    def close(self) -> None:
        self.inner.close()


class CallMeter:
    """The metrics of one match's calls (one per match: it tracks each seat's bank)."""

    def __init__(self, limits: Limits) -> None:
        self.full_bank = limits.time_bank_ms
        self.bank: dict[int, int] = {}
        """Each seat's bank after its last turn (as the runner reported it)."""

    def wrap(self, players: Sequence[Player]) -> list[Player]:
        """The players to seat instead of ``players``."""
        return [_Metered(p) for p in players]

    def on_turn(self, turn: TurnRecord) -> None:
        if turn.fault == FORFEITED or turn.latency_ms is None:
            return  # the bot was not called
        child(metrics.BOT_CALLS, "move", *outcome_labels(turn.fault)).inc()
        before = self.bank.get(turn.seat, self.full_bank)
        self.bank[turn.seat] = turn.bank_ms
        if turn.bank_ms < before:
            metrics.TIME_BANK_DRAW.observe((before - turn.bank_ms) / 1000)
            if turn.bank_ms <= 0:
                metrics.TIME_BANK_EMPTIED.inc()

    def finished(self, record: MatchRecord) -> None:
        if record.forfeits:
            metrics.BOT_FORFEITS.inc(len(record.forfeits))
