"""Run a match: several deals between players, under deadlines, strikes and a time bank.

:func:`run_match` is the only place in the referee that looks at a clock, and only through
the players' measured latencies.  Everything else about a match is determined by
``(rule set, seed, moves)``: each deal's seed is derived from the match seed
(:func:`deal_seed`), each deal learns the previous winner and loser (:class:`DealContext`), so a
log of the moves replays exactly (:func:`referee.runner.log.verify`).

Time and faults (see ``docs/protocol.md``):

* **Deadline and time bank.**  Every seat has a per-move deadline and a time bank, like
  Kaggle's overage time.  A call may run for ``deadline + bank left``; whatever it takes beyond
  the deadline is drawn from the bank (whether the answer was good or not).  Once the bank is
  empty, the hard limit is the per-move deadline.
* **Faults cost one turn.**  No answer in time, a connection or HTTP error, a body that is not
  a JSON object, an unknown move id, cards not in hand, an illegal play, an answer for another
  turn: the seat plays the *default move* (pass where allowed, otherwise its lowest legal
  play) and gets a strike with the reason.  The match goes on.
* **Forfeit.**  When a seat's strikes reach ``max_strikes`` it forfeits: the bot is not called
  again in this match, its seat plays default moves to the end, and it ranks below every seat
  that did not forfeit.
* ``GET /``, ``/start`` and ``/end`` failures are noted in the record but are not strikes:
  a bot that is down will collect strikes on its moves anyway, and a bot that only fumbles
  the courtesy calls still plays a fair game.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from referee.game import numbering
from referee.game.cards import iter_cards
from referee.game.combos import classify
from referee.game.movegen import leading_plays
from referee.game.outcome import Outcome
from referee.game.rules import RuleSet
from referee.game.state import PASS, Deal, DealContext
from referee.game.view import DealView
from referee.wire.players import Player, Reply
from referee.wire.protocol import (
    MAX_SAY,
    check_description,
    end_request,
    judge_answer,
    move_request,
    start_request,
)

from .faults import BAD_DESCRIPTION, FORFEITED, plain_fault


@dataclass(frozen=True)
class Limits:
    """Time and fault limits of a match (the same for every seat)."""

    deadline_ms: int = 1000
    """Per-move deadline: an answer within it never touches the time bank."""
    time_bank_ms: int = 10_000
    """Per-seat overage for the whole match; time beyond the deadline is drawn from it."""
    max_strikes: int | None = 10
    """A seat forfeits when its strikes reach this number (None: never)."""
    call_deadline_ms: int = 5000
    """Deadline of ``GET /``, ``/start`` and ``/end`` (no time bank)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "deadline_ms": self.deadline_ms,
            "time_bank_ms": self.time_bank_ms,
            "max_strikes": self.max_strikes,
            "call_deadline_ms": self.call_deadline_ms,
        }


@dataclass(frozen=True)
class BotIdentity:
    """Who sat at a seat: the caller's ``player`` label and the bot's own description
    (``GET /``).  Never the bot's URL: a URL is its owner's secret (:mod:`referee.wire.redact`)."""

    seat: int
    name: str
    author: str = ""
    version: str = ""
    player: str | None = None
    """The caller's id for the seat's player (:attr:`referee.wire.players.Player.label`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "player": self.player,
            "name": self.name,
            "author": self.author,
            "version": self.version,
        }


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn as played.  ``fault`` is None when the bot's own answer was played."""

    deal: int
    turn: int
    seat: int
    legal: int
    """How many legal moves the seat had."""
    move: int
    """The cards played (0: pass); the default move when ``fault`` is set."""
    latency_ms: float | None
    """How long the bot took (None when it was not called: forfeited)."""
    fault: str | None
    detail: str
    say: str | None
    bank_ms: int
    """Time bank left after this turn."""


@dataclass(frozen=True, slots=True)
class Strike:
    seat: int
    deal: int
    turn: int
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class Forfeit:
    seat: int
    deal: int
    turn: int
    """The turn of the strike that made the seat forfeit."""


@dataclass(frozen=True, slots=True)
class Standing:
    rank: int
    """1 is best; seats that tie on every key share a rank (1, 2, 2, 4)."""
    seat: int
    name: str
    score: int
    wins: int
    strikes: int
    forfeited: bool


@dataclass(frozen=True, slots=True)
class LatencyStats:
    """A seat's ``/move`` latencies (every call, answered or not), in milliseconds."""

    seat: int
    calls: int
    p50_ms: float | None
    p95_ms: float | None
    max_ms: float | None


@dataclass(frozen=True, slots=True)
class CallNote:
    """A failed ``GET /``, ``/start`` or ``/end`` call (noted, not a strike)."""

    seat: int
    call: str
    fault: str
    detail: str
    latency_ms: float


@dataclass
class DealRecord:
    index: int
    seed: int
    previous_winner: int | None
    previous_loser: int | None
    hands: list[int]
    """The hands as dealt (after any spare card)."""
    previous_order: tuple[int, ...] = ()
    """The previous deal's finishing order (the president exchange's places)."""
    turns: list[TurnRecord] = field(default_factory=list)
    outcome: Outcome | None = None
    loser: int | None = None
    totals: list[int] = field(default_factory=list)
    """Match totals after this deal."""


@dataclass
class MatchRecord:
    """Everything that happened in a match; :mod:`referee.runner.log` writes it as a log."""

    match_id: str
    rules: RuleSet
    seed: int
    deals_planned: int
    limits: Limits
    seats: list[BotIdentity]
    deals: list[DealRecord] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    standings: list[Standing] = field(default_factory=list)
    strikes: list[Strike] = field(default_factory=list)
    forfeits: list[Forfeit] = field(default_factory=list)
    latency: list[LatencyStats] = field(default_factory=list)
    notes: list[CallNote] = field(default_factory=list)

    def winner(self) -> int | None:
        """The seat ranked first alone, or None on a shared first place."""
        firsts = [s for s in self.standings if s.rank == 1]
        return firsts[0].seat if len(firsts) == 1 else None


# --- pure helpers (also used by log verification) ------------------------------------------


def deal_seed(match_seed: int, index: int) -> int:
    """The seed of deal ``index``: the first 8 bytes of SHA-256 of ``"bigtwo:<seed>:<index>"``
    as a big-endian integer (stable across Python versions and platforms)."""
    digest = hashlib.sha256(f"bigtwo:{match_seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def play_order_key(move: int, deal: Deal) -> tuple[int, list[int]]:
    """Sort key from the lowest play to the highest: fewer cards first, then the rule set's
    card order from the top card down (the order of ``legal_moves`` on the wire)."""
    order = deal.t.order
    return move.bit_count(), sorted((order[c] for c in iter_cards(move)), reverse=True)


def default_move(deal: Deal, legal: Sequence[int]) -> int:
    """What a seat plays when its bot fails: pass where allowed, otherwise the lowest play."""
    if PASS in legal:
        return PASS
    return min(legal, key=lambda m: play_order_key(m, deal))


def find_loser(deal: Deal) -> int | None:
    """The loser of a finished deal, for rules where the loser leads next.

    The seat (other than the winner) with most cards left; ties go to the seat whose largest
    possible play is smallest (fewest cards), then weakest (lowest comparison key of the best
    play of that size), then to the lowest seat number.
    """
    out = deal.outcome
    winner = out.winner if out is not None else None
    seats = [s for s in range(deal.rules.players) if s != winner]
    if not seats:
        return None
    most = max(deal.hands[s].bit_count() for s in seats)
    tied = [s for s in seats if deal.hands[s].bit_count() == most]
    if len(tied) == 1:
        return tied[0]

    def strength(seat: int) -> tuple[int, int, int]:
        plays = leading_plays(deal.hands[seat], deal.t)
        if not plays:
            return (0, -1, seat)
        size = max(m.bit_count() for m in plays)
        keys = [p.key for m in plays if m.bit_count() == size and (p := classify(m, deal.t))]
        return (size, max(keys, default=-1), seat)

    return min(tied, key=strength)


def standings(
    seats: Sequence[BotIdentity],
    totals: Sequence[int],
    wins: Sequence[int],
    strikes: Sequence[int],
    forfeited: set[int],
) -> list[Standing]:
    """Rank seats: non-forfeited before forfeited, then by total score (higher first), then by
    deals won.  Seats equal on all three share a rank; the list is in rank order, then seat."""

    def key(s: int) -> tuple[bool, int, int]:
        return (s in forfeited, -totals[s], -wins[s])

    order = sorted(range(len(totals)), key=lambda s: (key(s), s))
    out: list[Standing] = []
    for i, s in enumerate(order):
        rank = out[-1].rank if out and key(order[i - 1]) == key(s) else i + 1
        out.append(Standing(rank, s, seats[s].name, totals[s], wins[s], strikes[s], s in forfeited))
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1) of a non-empty sequence."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def latency_stats(seat: int, values: Sequence[float]) -> LatencyStats:
    """Summary of a seat's ``/move`` latencies in ms (as recorded in the turns)."""
    if not values:
        return LatencyStats(seat, 0, None, None, None)
    return LatencyStats(
        seat,
        len(values),
        round(percentile(values, 0.50), 3),
        round(percentile(values, 0.95), 3),
        round(max(values), 3),
    )


# --- the runner ------------------------------------------------------------------------------

TurnHook = Callable[[TurnRecord], None]


class MatchWatcher(Protocol):
    """Follows a match as it is played (a live broadcast): told of each deal's start, each
    turn and each deal's end, with the engine's state, from which it takes what it may show
    (a spectator's view: :mod:`referee.game.spectator`).  Like ``on_turn``, whatever it raises
    propagates and ends the match, so a watcher that must never stop a match catches its own
    errors."""

    def deal_started(self, record: DealRecord, deal: Deal) -> None: ...

    def turn_played(self, turn: TurnRecord, deal: Deal) -> None: ...

    def deal_ended(self, record: DealRecord, deal: Deal) -> None: ...


def _scrubbed(player: Player, reply: Reply) -> Reply:
    """``reply`` with its detail passed through ``player.scrub``, the one door through which a
    player's texts enter the record, so no URL reaches a log whatever the player is.

    Nothing around a player's call is caught: players report bot faults as data, so an
    exception out of one is a bug, or not about the bot at all (a queue's job timeout), and
    it propagates."""
    if not reply.detail:
        return reply
    return Reply(reply.data, reply.latency_s, reply.fault, player.scrub(reply.detail), reply.body,
                 reply.status)


class _Match:
    """The mutable state of a running match (one instance per :func:`run_match`)."""

    def __init__(
        self,
        rules: RuleSet,
        players: Sequence[Player],
        seed: int,
        deals: int,
        limits: Limits,
        match_id: str,
        on_turn: TurnHook | None,
        watcher: MatchWatcher | None = None,
    ) -> None:
        n = rules.players
        if len(players) != n:
            raise ValueError(f"{rules.name} needs {n} players, got {len(players)}")
        if deals < 1:
            raise ValueError("a match needs at least one deal")
        self.rules, self.players, self.limits, self.on_turn = rules, players, limits, on_turn
        self.watcher = watcher
        self.bank: list[float] = [float(limits.time_bank_ms)] * n
        self.last_latency: list[int | None] = [None] * n
        self.strike_count = [0] * n
        self.forfeited: set[int] = set()
        self.wins = [0] * n
        self.latencies: list[list[float]] = [[] for _ in range(n)]
        self.record = MatchRecord(match_id, rules, seed, deals, limits, [], totals=[0] * n)

    # --- courtesy calls ----------------------------------------------------------------
    def _note(self, seat: int, call: str, reply: Reply) -> None:
        fault = reply.fault or ""
        self.record.notes.append(
            CallNote(seat, call, fault, plain_fault(fault, reply.detail, reply.status),
                     round(reply.latency_s * 1e3, 3))
        )

    def identify(self) -> None:
        deadline = self.limits.call_deadline_ms / 1000
        for seat, player in enumerate(self.players):
            reply = _scrubbed(player, player.describe(deadline))
            problem = None if not reply.ok else check_description(reply.data)
            if reply.ok and problem is None and reply.data is not None:
                d = reply.data
                self.record.seats.append(
                    BotIdentity(seat, d["name"], d["author"], d["version"], player.label)
                )
                continue
            if reply.ok:
                reply = Reply(None, reply.latency_s, BAD_DESCRIPTION, problem or "")
            self._note(seat, "describe", reply)
            # A name for people: numbered as they count (referee.game.numbering).
            self.record.seats.append(BotIdentity(seat, numbering.where(seat=seat),
                                                 player=player.label))

    def start(self) -> None:
        rec, deadline = self.record, self.limits.call_deadline_ms / 1000
        seats = [{k: v for k, v in s.to_json().items() if k != "player"} for s in rec.seats]
        limits = {
            "deadline_ms": self.limits.deadline_ms,
            "time_bank_ms": self.limits.time_bank_ms,
            "max_strikes": self.limits.max_strikes,
        }
        for seat, player in enumerate(self.players):
            body = start_request(
                match_id=rec.match_id,
                seat=seat,
                rules=self.rules,
                deals=rec.deals_planned,
                seats=seats,
                limits=limits,
            )
            reply = _scrubbed(player, player.start(body, deadline))
            if not reply.ok:
                self._note(seat, "start", reply)

    def end(self) -> None:
        rec, deadline = self.record, self.limits.call_deadline_ms / 1000
        table = [
            {
                "rank": s.rank,
                "seat": s.seat,
                "name": s.name,
                "score": s.score,
                "forfeited": s.forfeited,
            }
            for s in rec.standings
        ]
        outcomes = [d.outcome.to_json() for d in rec.deals if d.outcome is not None]
        for seat, player in enumerate(self.players):
            body = end_request(
                match_id=rec.match_id,
                seat=seat,
                scores=rec.totals,
                standings=table,
                deals=outcomes,
                strikes=self.strike_count,
                forfeited=sorted(self.forfeited),
            )
            reply = _scrubbed(player, player.end(body, deadline))
            if not reply.ok:
                self._note(seat, "end", reply)

    # --- deals -------------------------------------------------------------------------
    def play_deal(
        self,
        index: int,
        prev_winner: int | None,
        prev_loser: int | None,
        prev_order: tuple[int, ...] = (),
    ) -> Deal:
        rec = self.record
        seed = deal_seed(rec.seed, index)
        context = DealContext(index, prev_winner, prev_loser, prev_order)
        deal = Deal.new(self.rules, seed, context)
        drec = DealRecord(index, seed, prev_winner, prev_loser, list(deal.dealt), prev_order)
        rec.deals.append(drec)
        view = DealView(deal)  # what every request of this deal shares (see DealView)
        watcher = self.watcher
        if watcher is not None:
            watcher.deal_started(drec, deal)
        while deal.outcome is None:
            turn = self.play_turn(deal, index, view)
            drec.turns.append(turn)
            if watcher is not None:
                watcher.turn_played(turn, deal)
            if self.on_turn is not None:
                self.on_turn(turn)
        out = deal.outcome
        for s, v in enumerate(out.scores):
            rec.totals[s] += v
        if out.winner is not None:
            self.wins[out.winner] += 1
        drec.outcome, drec.loser, drec.totals = out, find_loser(deal), list(rec.totals)
        if watcher is not None:
            watcher.deal_ended(drec, deal)
        return deal

    def play_turn(self, deal: Deal, index: int, view: DealView) -> TurnRecord:
        seat = deal.to_move
        legal = deal.legal_moves()
        turn = len(deal.log)
        if seat in self.forfeited:
            move = default_move(deal, legal)
            deal.push(move)
            return TurnRecord(
                index, turn, seat, len(legal), move, None, FORFEITED, "", None, int(self.bank[seat])
            )
        limits, rec = self.limits, self.record
        request = move_request(
            deal,
            seat,
            match_id=rec.match_id,
            turn=turn,
            scores=rec.totals,
            deadline_ms=limits.deadline_ms,
            time_bank_ms=int(self.bank[seat]),
            last_latency_ms=self.last_latency[seat],
            legal=legal,
            deals=rec.deals_planned,
            strikes=self.strike_count,
            view=view,
        )
        deadline_s = (limits.deadline_ms + self.bank[seat]) / 1000
        player = self.players[seat]
        reply = _scrubbed(player, player.move(request, deadline_s))
        latency_ms = round(reply.latency_s * 1000, 3)
        self.latencies[seat].append(latency_ms)
        self.last_latency[seat] = round(latency_ms)
        over = latency_ms - limits.deadline_ms
        if over > 0:
            self.bank[seat] = max(0.0, self.bank[seat] - over)
        say: str | None = None
        fault, detail = reply.fault, reply.detail
        move = PASS
        if fault is None:
            answer = judge_answer(reply.data, turn, legal, deal.hands[seat])
            say, detail = answer.say, answer.detail  # a played move's detail: a dropped say
            if answer.fault is not None:
                fault = answer.fault.value
            elif answer.move is not None:
                move = answer.move
        if fault is not None:
            # The record keeps the fault's code and its sentence, never the caller's own
            # texts (exception names, addresses): see referee.runner.faults.
            detail = plain_fault(fault, detail, reply.status)
            move = default_move(deal, legal)
            self.strike(seat, index, turn, fault, detail)
        deal.push(move)
        return TurnRecord(
            index,
            turn,
            seat,
            len(legal),
            move,
            latency_ms,
            fault,
            detail[:300],
            say[:MAX_SAY] if say else say,
            int(self.bank[seat]),
        )

    def strike(self, seat: int, deal: int, turn: int, reason: str, detail: str) -> None:
        self.record.strikes.append(Strike(seat, deal, turn, reason, detail[:300]))
        self.strike_count[seat] += 1
        cap = self.limits.max_strikes
        if cap is not None and self.strike_count[seat] >= cap and seat not in self.forfeited:
            self.forfeited.add(seat)
            self.record.forfeits.append(Forfeit(seat, deal, turn))

    def run(self) -> MatchRecord:
        rec = self.record
        self.identify()
        self.start()
        winner: int | None = None
        loser: int | None = None
        order: tuple[int, ...] = ()
        for i in range(rec.deals_planned):
            deal = self.play_deal(i, winner, loser, order)
            assert deal.outcome is not None
            winner, loser = deal.outcome.winner, rec.deals[-1].loser
            order = deal.outcome.finish_order
        rec.standings = standings(
            rec.seats, rec.totals, self.wins, self.strike_count, self.forfeited
        )
        rec.latency = [latency_stats(s, v) for s, v in enumerate(self.latencies)]
        self.end()
        return rec


def run_match(
    ruleset: RuleSet,
    seats: Sequence[Player],
    seed: int,
    deals: int,
    limits: Limits | None = None,
    *,
    match_id: str | None = None,
    on_turn: TurnHook | None = None,
    watcher: MatchWatcher | None = None,
) -> MatchRecord:
    """Play ``deals`` deals of ``ruleset`` between ``seats`` (one player per seat, in order).

    ``seed`` determines every deal (see :func:`deal_seed`); ``on_turn`` is called after each
    turn (progress display, streaming, a lease heartbeat) and may abort the match by raising:
    the exception propagates.  Players report what a bot does as faults (data), never as
    exceptions, so nothing is caught here: an exception out of a player is a bug in the
    player or an exception that is not about the bot at all (a queue's job timeout raised by
    its signal handler, ``KeyboardInterrupt``), and it propagates.  The players are not
    closed.  ``watcher`` follows the match deal by deal and turn by turn
    (:class:`MatchWatcher`).
    """
    mid = match_id if match_id is not None else f"match-{seed}"
    return _Match(ruleset, seats, seed, deals, limits or Limits(), mid, on_turn,
                  watcher).run()


__all__ = [
    "FORFEITED",
    "BotIdentity",
    "CallNote",
    "DealRecord",
    "Forfeit",
    "LatencyStats",
    "Limits",
    "MatchRecord",
    "MatchWatcher",
    "Standing",
    "Strike",
    "TurnRecord",
    "deal_seed",
    "default_move",
    "find_loser",
    "run_match",
    "standings",
]
