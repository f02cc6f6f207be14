"""Tournaments driven by the database: create, start, and the idempotent ``advance`` step.

``advance(app, tournament_id)`` looks only at stored rows and does whatever is due, in one
transaction holding the tournament's row lock (``SELECT ... FOR UPDATE`` on PostgreSQL; on
SQLite every write transaction is ``BEGIN IMMEDIATE`` and so exclusive):

1. if no round is being played, open the next one (round robin: scheduled at the start;
   Swiss: paired from the standings; knockout: the players who went through), or finish the
   tournament after the last round;
2. make sure every table of the round has its match rows (one per rotation with duplicate
   play) - creating only the missing ones, so a second call creates nothing;
3. once every match of the round is ``finished`` or ``failed``, store each table's result
   (and, in a knockout, who goes through), close the round and go back to 1.

Pairing a Swiss round is the one step that computes for a while (standings, then a local
search over the tables): it never runs under the row lock.  When the locked step finds that
a Swiss round must be opened, it commits what it did and returns; the pairing is computed
from the committed rows in a transaction of its own (no lock), stamped with the
tournament's ``version``, and the next locked step opens the round with it only if the
version is still the same (otherwise something changed meanwhile, and the pairing is
computed again; after ``PAIRING_ATTEMPTS`` it is computed under the lock, so the step always
ends).

New matches are enqueued after the commit.  If that enqueue is lost (Redis down, the process
killed in between), the match stays ``queued`` in the database and the reconciler enqueues
it.  ``advance`` is called by the worker right after it finishes a tournament match, by the
clock every ``TOURNAMENT_ADVANCE_INTERVAL_S`` (so a worker that died between finishing a
match and advancing costs a few seconds, not the tournament), by ``start`` and by
``arena tournament advance``.  Nothing lives in memory between calls: after a crash, a
Redis flush or a restart, the next call resumes exactly where the database says.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from arena.core.families import family_of, storable_ruleset
from arena.core.models import Bot, Match, MatchSeat, Rating, utcnow
from arena.core.storage import get_db
from arena.core.tournament_models import (
    FORMATS,
    Tournament,
    TournamentEntrant,
    TournamentMatch,
    TournamentRound,
    TournamentTable,
)
from arena.notify import events
from arena.play.matches import create_match, enqueue_match, seat_endpoints
from referee.runner.match import Limits

from . import schedule, scoring

log = logging.getLogger(__name__)

DONE_MATCH = ("finished", "failed")
PAIRING_ATTEMPTS = 3
"""Swiss pairings computed outside the lock before one is computed under it (see above)."""


class TournamentError(ValueError):
    """Something about the request makes no tournament (the API answers 400/409)."""

    def __init__(self, message: str, code: str = "bad_tournament") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Pairing:
    """A Swiss round computed outside the lock from the rows of ``version``."""

    version: int
    number: int
    round: schedule.Round


@dataclass
class AdvanceReport:
    opened_rounds: list[int] = field(default_factory=list)
    closed_rounds: list[int] = field(default_factory=list)
    new_matches: list[int] = field(default_factory=list)
    finished: bool = False

    def __str__(self) -> str:
        return (f"opened rounds {self.opened_rounds}, closed rounds {self.closed_rounds}, "
                f"{len(self.new_matches)} new match(es)"
                + (", tournament finished" if self.finished else ""))


def derived_seed(base: int, *parts: object) -> int:
    text = ":".join(["tournament", str(base), *map(str, parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 2


# --- creating and starting -------------------------------------------------------------------


def create_tournament(
    s: Session,
    *,
    name: str,
    format: str,
    ruleset: str,
    bots: Sequence[Bot],
    deals: int,
    limits: Limits,
    duplicate: bool = False,
    advance: int | None = None,
    rounds: int | None = None,
    cycles: int = 1,
    rated: bool = True,
    seed: int | None = None,
) -> Tournament:
    """Add a tournament in state ``created`` with its entrants (not started)."""
    if format not in FORMATS:
        raise TournamentError(f"format must be one of {', '.join(FORMATS)}", "bad_format")
    try:
        rules = storable_ruleset(ruleset)
    except ValueError as exc:
        raise TournamentError(str(exc), "unknown_ruleset") from None
    seats = rules.players
    ids = [b.id for b in bots]
    if len(set(ids)) != len(ids):
        raise TournamentError("a bot may enter a tournament only once", "duplicate_bot")
    for b in bots:
        if b.check_state != "passed":
            raise TournamentError(f"bot {b.id} ({b.name}) has not passed its health check "
                                  "yet", "bot_not_ready")
    endpoints = seat_endpoints(bots)
    if len(set(endpoints)) != len(endpoints):
        raise TournamentError("two entrants are called at the same endpoint; one endpoint "
                              "may enter a tournament once", "duplicate_endpoint")
    if len(bots) < seats:
        raise TournamentError(f"{rules.name} needs at least {seats} entrants, got {len(bots)}",
                              "too_few_entrants")
    if advance is None:
        advance = max(1, seats // 2)  # the top half of each table: 2 of 4, 1 of 2 or 3
    if format == "knockout" and not 1 <= advance < seats:
        raise TournamentError(f"advance must be between 1 and {seats - 1}", "bad_advance")
    if format == "swiss" and rounds is None:
        rounds = schedule.swiss_rounds_default(len(bots), seats)
    if format == "knockout":
        rounds = len(schedule.knockout_sizes(len(bots), seats, advance))
    t = Tournament(
        name=name,
        format=format,
        state="created",
        ruleset=rules.name,
        family=family_of(rules.name),
        seats=seats,
        deals=deals,
        limits=limits.to_json(),
        duplicate=duplicate,
        advance=advance,
        rounds=rounds,
        cycles=cycles,
        rated=rated,
        seed=secrets.randbits(62) if seed is None else seed,
        current_round=0,
        version=0,
        created_at=utcnow(),
        error="",
    )
    s.add(t)
    s.flush()
    for b in bots:
        s.add(TournamentEntrant(tournament_id=t.id, bot_id=b.id))
    s.flush()
    return t


def _lock(s: Session, tournament_id: int) -> Tournament | None:
    return s.scalars(
        select(Tournament).where(Tournament.id == tournament_id)
        .with_for_update().execution_options(populate_existing=True)
    ).first()


def seed_entrants(s: Session, t: Tournament, initial: float) -> None:
    """Seeds by Elo in the tournament's family (unrated bots at ``initial``), ties by bot id."""
    entrants = s.scalars(select(TournamentEntrant)
                         .where(TournamentEntrant.tournament_id == t.id)).all()
    ratings = {r.bot_id: r.rating for r in s.scalars(
        select(Rating).where(Rating.family == t.family,
                             Rating.bot_id.in_([e.bot_id for e in entrants])))}
    for e in entrants:
        e.rating = ratings.get(e.bot_id, initial)
    for i, e in enumerate(sorted(entrants, key=lambda e: (-(e.rating or 0.0), e.bot_id)), 1):
        e.seed = i


def start(app: Flask, tournament_id: int) -> AdvanceReport:
    """Seed the entrants, schedule what can be scheduled, and play the first round."""
    with get_db(app).begin() as s:
        t = _lock(s, tournament_id)
        if t is None:
            raise TournamentError(f"no tournament {tournament_id}", "not_found")
        if t.state != "created":
            raise TournamentError(f"tournament {tournament_id} is {t.state}", "not_startable")
        seed_entrants(s, t, float(app.config["ELO_INITIAL"]))
        s.flush()
        if t.format == "round_robin":
            players = [e.bot_id for e in sorted(t.entrants, key=lambda e: e.seed or 0)]
            rounds = schedule.round_robin(players, t.seats, cycles=t.cycles, rounds=t.rounds,
                                          seed=derived_seed(t.seed, "schedule"))
            for number, rnd in enumerate(rounds, 1):
                _add_round(s, t, number, rnd, state="pending")
            t.rounds = len(rounds)
        t.state = "running"
        t.started_at = utcnow()
        t.version += 1
        tell(app, s, t, "tournament.starting")
    return advance(app, tournament_id)


def tell(app: Flask, s: Session, t: Tournament, kind: str) -> None:
    """Tell the owners of the entrants (``tournament.starting`` or ``.finished``) once the
    caller's transaction commits: each owner hears about its own bots in it."""
    entrants = s.scalars(select(TournamentEntrant.bot_id)
                         .where(TournamentEntrant.tournament_id == t.id)).all()
    events.emit(app, s, kind, bot_ids=entrants, data={"tournament": {
        "id": t.id, "name": t.name, "format": t.format, "ruleset": t.ruleset,
        "state": t.state}})


def cancel(app: Flask, tournament_id: int) -> None:
    with get_db(app).begin() as s:
        t = _lock(s, tournament_id)
        if t is None:
            raise TournamentError(f"no tournament {tournament_id}", "not_found")
        if t.state in ("finished", "cancelled"):
            raise TournamentError(f"tournament {tournament_id} is {t.state}", "not_cancellable")
        t.state = "cancelled"
        t.finished_at = utcnow()
        t.version += 1
        tell(app, s, t, "tournament.finished")


def _add_round(s: Session, t: Tournament, number: int, rnd: schedule.Round, *, state: str,
               target: int | None = None) -> TournamentRound:
    row = TournamentRound(tournament_id=t.id, number=number, state=state,
                          byes={"bots": list(rnd.byes)}, target=target)
    s.add(row)
    s.flush()
    for i, table in enumerate(rnd.tables, 1):
        s.add(TournamentTable(tournament_id=t.id, round_id=row.id, number=i,
                              bots={"bots": list(table)},
                              seed=derived_seed(t.seed, number, i), state="pending"))
    s.flush()
    return row


# --- advance ---------------------------------------------------------------------------------


def advance(app: Flask, tournament_id: int) -> AdvanceReport:
    """Do whatever is due for the tournament (see the module docstring).  Idempotent."""
    report = AdvanceReport()
    pairing: Pairing | None = None
    for attempt in range(PAIRING_ATTEMPTS + 1):
        with get_db(app).begin() as s:
            t = _lock(s, tournament_id)
            if t is None or t.state != "running":
                break
            changed, needs = _advance_locked(s, t, report, pairing,
                                             pair_locked=attempt == PAIRING_ATTEMPTS)
            if changed:
                t.version += 1
            if t.state == "finished":  # in this transaction: the lock held it "running"
                tell(app, s, t, "tournament.finished")
        if needs is None:
            break
        pairing = plan_pairing(app, tournament_id, needs)
        if pairing is None:
            break
    for match_id in report.new_matches:
        enqueue_match(app, match_id)
    if report.opened_rounds or report.closed_rounds or report.finished:
        log.info("tournament %s: %s", tournament_id, report)
    return report


def plan_pairing(app: Flask, tournament_id: int, number: int) -> Pairing | None:
    """Pair Swiss round ``number`` from the committed rows, without locking anything."""
    with get_db(app).sessions() as s:
        t = s.get(Tournament, tournament_id)
        if t is None or t.state != "running" or t.current_round + 1 != number:
            return None
        rnd = _pair_swiss(s, t)
        version = t.version
        s.rollback()
    return Pairing(version, number, rnd)


def _pair_swiss(s: Session, t: Tournament) -> schedule.Round:
    history = _history(s, t)
    order = [x.bot for x in compute_standings(s, t)]
    return schedule.swiss_round(order, t.seats, met=history.met, byes=history.byes,
                                seat_history=history.seats)


def _round(s: Session, t: Tournament, number: int) -> TournamentRound | None:
    return s.scalars(select(TournamentRound).where(
        TournamentRound.tournament_id == t.id, TournamentRound.number == number)).first()


def _advance_locked(s: Session, t: Tournament, report: AdvanceReport,
                    pairing: Pairing | None, *, pair_locked: bool) -> tuple[bool, int | None]:
    """The locked part of :func:`advance`: returns (whether anything changed, the number of
    a Swiss round to pair outside the lock first, or None)."""
    changed = False
    planned = t.rounds or 0
    for _ in range(planned + 2):
        rnd = _round(s, t, t.current_round) if t.current_round else None
        if rnd is None or rnd.state == "done":
            number = t.current_round + 1
            if number > planned:
                _finish(s, t)
                report.finished = True
                return True, None
            nxt = _round(s, t, number)
            if nxt is None and t.format == "swiss":
                # The version is bumped by the caller when this step changed anything, so
                # a pairing of the same version saw exactly these rows.
                fresh = (pairing is not None and pairing.number == number
                         and pairing.version == t.version and not changed)
                if fresh:
                    assert pairing is not None
                    nxt = _add_round(s, t, number, pairing.round, state="playing")
                elif pair_locked:
                    nxt = _add_round(s, t, number, _pair_swiss(s, t), state="playing")
                else:
                    return changed, number
            if nxt is None:
                nxt = _open_round(s, t, number)
            nxt.state = "playing"
            nxt.started_at = utcnow()
            t.current_round = number
            report.opened_rounds.append(number)
            rnd, changed = nxt, True
        if _ensure_matches(s, t, rnd, report):
            changed = True
        if not _round_complete(s, rnd):
            return changed, None
        _close_round(s, t, rnd)
        report.closed_rounds.append(rnd.number)
        changed = True
    return changed, None  # pragma: no cover - the loop always returns


def _open_round(s: Session, t: Tournament, number: int) -> TournamentRound:
    seeds = seed_map(s, t)
    history = _history(s, t)
    if t.format == "knockout":
        sizes = schedule.knockout_sizes(len(seeds), t.seats, t.advance)
        if number == 1:
            players = sorted(seeds, key=lambda b: seeds[b])
        else:
            prev = _round(s, t, number - 1)
            assert prev is not None and prev.advanced is not None
            players = sorted(prev.advanced["bots"], key=lambda b: seeds[b])
        target = sizes[number] if number < len(sizes) else None
        rnd = schedule.knockout_round(players, t.seats, t.advance, target or 1,
                                      seat_history=history.seats)
        return _add_round(s, t, number, rnd, state="playing", target=target)
    raise RuntimeError(f"round {number} of round robin {t.id} was not scheduled")


def _ensure_matches(s: Session, t: Tournament, rnd: TournamentRound,
                    report: AdvanceReport) -> bool:
    created = False
    limits = Limits(**t.limits)
    for table in rnd.tables:
        have = {link.rotation for link in table.links}
        seatings = schedule.rotations(table.bots["bots"], t.duplicate)
        for rotation, seating in enumerate(seatings):
            if rotation in have:
                continue
            bots = [s.get(Bot, b) for b in seating]
            match = create_match(s, bots=[b for b in bots if b is not None], ruleset=t.ruleset,
                                 deals=t.deals, limits=limits, kind="tournament",
                                 seed=table.seed, rated=t.rated)
            s.add(TournamentMatch(match_id=match.id, table_id=table.id, tournament_id=t.id,
                                  rotation=rotation))
            report.new_matches.append(match.id)
            created = True
        if table.state == "pending":
            table.state = "playing"
            created = True
    if created:
        s.flush()
        s.expire(rnd)
    return created


def _round_complete(s: Session, rnd: TournamentRound) -> bool:
    pending = s.scalar(
        select(func.count()).select_from(TournamentMatch)
        .join(Match, Match.id == TournamentMatch.match_id)
        .join(TournamentTable, TournamentTable.id == TournamentMatch.table_id)
        .where(TournamentTable.round_id == rnd.id, Match.state.not_in(DONE_MATCH))
    )
    return not pending


def entrant_seed(bot_id: int, seed: int | None) -> int:
    """An entrant's seed as pairing and tie-breaks read it: an unseeded one (None) after
    every seeded one, by bot id."""
    return seed or 10**6 + bot_id


def seed_map(s: Session, t: Tournament) -> dict[int, int]:
    rows = s.execute(select(TournamentEntrant.bot_id, TournamentEntrant.seed)
                     .where(TournamentEntrant.tournament_id == t.id)).all()
    return {b: entrant_seed(b, seed) for b, seed in rows}


def table_lines(s: Session, t: Tournament, table: Any,
                seeds: dict[int, int], *,
                seats_of: Mapping[int, Sequence[Any]] | None = None,
                ) -> list[scoring.TableLine]:
    """The table's result from its finished matches; ``seats_of`` (match id -> seats in
    seat order) saves a query per match when the caller loaded them all at once.
    ``table``: a ``TournamentTable``, or what the bracket reads of one
    (:class:`arena.tournaments.present.TableView`: ``bots`` and ``links``, each with its
    ``match``'s ``id`` and ``state``)."""
    matches: list[list[scoring.SeatResult]] = []
    for link in table.links:
        m = link.match
        if m.state != "finished":
            continue
        if seats_of is not None and m.id in seats_of:
            seats = seats_of[m.id]
        else:
            seats = s.scalars(select(MatchSeat).where(MatchSeat.match_id == m.id)
                              .order_by(MatchSeat.seat)).all()
        matches.append([scoring.SeatResult(x.bot_id, x.seat, x.rank or 0, x.score or 0,
                                           x.wins or 0, x.strikes or 0, bool(x.forfeited))
                        for x in seats])
    return scoring.table_result(table.bots["bots"], matches, duplicate=t.duplicate,
                                seed_of=seeds)


def _close_round(s: Session, t: Tournament, rnd: TournamentRound) -> None:
    seeds = seed_map(s, t)
    finishes = []
    for table in rnd.tables:
        lines = table_lines(s, t, table, seeds)
        table.result = {"lines": [x.to_json() for x in lines]}
        table.state = "done"
        finishes.append([schedule.Finish(x.bot, x.place,
                                         (x.score, float(x.wins), -float(x.strikes),
                                          -float(seeds[x.bot])))
                         for x in lines])
    if t.format == "knockout" and rnd.target is not None:
        chosen = schedule.advancers(finishes, rnd.byes["bots"], rnd.target, t.advance)
        rnd.advanced = {"bots": sorted(chosen, key=lambda b: seeds[b])}
    rnd.state = "done"
    rnd.finished_at = utcnow()


def _finish(s: Session, t: Tournament) -> None:
    t.state = "finished"
    t.finished_at = utcnow()
    t.standings = {"items": [x.to_json() for x in compute_standings(s, t)]}


# --- reading ---------------------------------------------------------------------------------


@dataclass
class History:
    met: Counter[frozenset[int]]
    byes: Counter[int]
    seats: dict[int, list[int]]


def _history(s: Session, t: Tournament) -> History:
    met: Counter[frozenset[int]] = Counter()
    byes: Counter[int] = Counter()
    seats: dict[int, list[int]] = {}
    for rnd in s.scalars(select(TournamentRound).where(TournamentRound.tournament_id == t.id)
                         .options(selectinload(TournamentRound.tables))
                         .order_by(TournamentRound.number)):
        if rnd.state == "pending":
            continue
        for b in rnd.byes["bots"]:
            byes[b] += 1
        for table in rnd.tables:
            bots = table.bots["bots"]
            for i, a in enumerate(bots):
                seats.setdefault(a, [0] * t.seats)[i] += 1
                for b in bots[i + 1:]:
                    met[frozenset((a, b))] += 1
    return History(met, byes, seats)


def knockout_key(r: scoring.Standing) -> tuple[Any, ...]:
    """A knockout's order, from the row's own published keys: the round reached (later
    first), the place in it (not placed yet first: still in), table score, seed, bot id."""
    return (-(r.round_reached or 0), r.place_in_round or 0, -r.score, r.seed, r.bot)


def compute_standings(s: Session, t: Tournament, rounds: Sequence[Any] | None = None, *,
                      seeds: dict[int, int] | None = None) -> list[scoring.Standing]:
    """Standings from the rounds closed so far (see :mod:`arena.tournaments.scoring`).  For
    a knockout: players still in first, then by the round they went out in, their place
    there and their table score.  ``rounds``: every round of the tournament in number order,
    with its ``tables``, already read (a reader passes them as columns,
    :func:`arena.tournaments.present.load_rounds`); else loaded here as ORM objects, which
    is what the writers, which change rounds in the same session, need.  ``seeds``: the
    tournament's :func:`seed_map`, when the caller read it already."""
    if seeds is None:
        seeds = seed_map(s, t)
    if rounds is None:
        rounds = s.scalars(select(TournamentRound).where(TournamentRound.tournament_id == t.id)
                           .options(selectinload(TournamentRound.tables))
                           .order_by(TournamentRound.number)).all()
    lines: list[list[scoring.TableLine]] = []
    byes: list[int] = []
    last: dict[int, tuple[int, int]] = dict.fromkeys(seeds, (0, 0))
    for rnd in rounds:
        if rnd.state == "pending":
            continue
        for b in rnd.byes["bots"]:
            last[b] = (rnd.number, 0)
        for table in rnd.tables:
            for b in table.bots["bots"]:
                last[b] = (rnd.number, 0)
        if rnd.state != "done":
            continue
        byes += rnd.byes["bots"]
        for table in rnd.tables:
            if table.result is None:
                continue
            tl = [scoring.TableLine.from_json(x) for x in table.result["lines"]]
            lines.append(tl)
            for x in tl:
                last[x.bot] = (rnd.number, x.place)
    out = scoring.standings(seeds, lines, byes, t.seats)
    if t.format == "knockout":
        for r in out:
            r.round_reached, place = last[r.bot]
            r.place_in_round = place or None  # 0: not placed yet (playing, or a bye)
        out.sort(key=knockout_key)
        for i, r in enumerate(out, 1):
            r.rank = i
    return out


def on_match_done(app: Flask, match_id: int) -> None:
    """Advance the tournament a match belongs to, if any (never raises: the clock retries)."""
    try:
        with get_db(app).begin() as s:
            tid = s.scalar(select(TournamentMatch.tournament_id)
                           .where(TournamentMatch.match_id == match_id))
    except Exception:
        log.exception("advancing the tournament of match %s failed; the clock will retry",
                      match_id)
        return
    on_tournament_match_done(app, tid, match_id)


def on_tournament_match_done(app: Flask, tournament_id: int | None, match_id: int) -> None:
    """:func:`on_match_done` when the caller knows the match's tournament already (None:
    it has none; the job that played it looked it up once)."""
    if tournament_id is None:
        return
    try:
        advance(app, tournament_id)
    except Exception:
        log.exception("advancing the tournament of match %s failed; the clock will retry",
                      match_id)


def advance_all(app: Flask) -> list[int]:
    """Advance every running tournament (the clock's duty); returns their ids."""
    with get_db(app).begin() as s:
        ids = list(s.scalars(select(Tournament.id).where(Tournament.state == "running")
                             .order_by(Tournament.id)))
    for tid in ids:
        try:
            advance(app, tid)
        except Exception:
            log.exception("advancing tournament %s failed", tid)
    return ids
