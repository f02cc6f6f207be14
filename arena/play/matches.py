"""Creating matches and handing them to the queue (never running them: see
:mod:`arena.jobs.bodies`).

A match row is committed first and enqueued second.  If the enqueue fails (Redis down), the
match stays ``queued`` in the database and the reconciler enqueues it later.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import hmac
import logging
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flask import Flask
from sqlalchemy import Integer, Select, String, bindparam, cast, select, update
from sqlalchemy.orm import Session

from arena.core.endpoints import endpoint_of
from arena.core.families import family_of
from arena.core.idlists import among, among_bound
from arena.core.models import Bot, Match, MatchResult, MatchSeat, utcnow
from arena.core.queue import get_queue
from arena.core.storage import get_db
from referee import find_ruleset
from referee.runner.health import wire_match_id as wire_id
from referee.runner.match import Limits

log = logging.getLogger(__name__)

PLAY_MATCH = "arena.jobs.bodies.play_match"


def default_limits(config: Mapping[str, Any]) -> Limits:
    return Limits(
        deadline_ms=int(config["MATCH_DEADLINE_MS"]),
        time_bank_ms=int(config["MATCH_TIME_BANK_MS"]),
        max_strikes=int(config["MATCH_MAX_STRIKES"]),
        call_deadline_ms=int(config["MATCH_CALL_DEADLINE_MS"]),
    )


def limits_of(match: Match) -> Limits:
    d = match.limits
    return Limits(
        deadline_ms=int(d["deadline_ms"]),
        time_bank_ms=int(d["time_bank_ms"]),
        max_strikes=None if d["max_strikes"] is None else int(d["max_strikes"]),
        call_deadline_ms=int(d["call_deadline_ms"]),
    )


def job_timeout(match: Match, config: Mapping[str, Any]) -> int:
    """Worst-case duration of a match, in whole seconds, plus a margin: every move of every
    deal takes the full deadline, every seat drains its time bank, and every courtesy call
    takes its full deadline."""
    lim = limits_of(match)
    seats = find_ruleset(match.ruleset).players
    moves = match.deals * int(config["MATCH_TURNS_PER_DEAL_BOUND"]) * lim.deadline_ms / 1000
    banks = seats * lim.time_bank_ms / 1000
    calls = 3 * seats * lim.call_deadline_ms / 1000
    return int(moves + banks + calls) + int(config["MATCH_JOB_TIMEOUT_MARGIN_S"])


class DuplicateEndpointError(ValueError):
    """Two seats of one match would call the same endpoint."""


def wire_match_id(config: Mapping[str, Any], match_id: int, attempt: int = 1) -> str:
    """The match id bots see (``m-`` and 16 hex digits): a keyed hash of the match number, so
    it has the same form as a health probe's random id and a bot cannot look it up in the
    public API while it plays.

    Each attempt has its own: a retried match deals new cards (:mod:`arena.play.reseed`) from
    turn 0 of deal 0 again, and bots may answer a repeated request (same ``match_id``,
    ``deal_id`` and ``turn``, docs/protocol.md) from memory, which would replay the first
    attempt's answers on the new hands.  A retry's id looks like any new match's."""
    key = str(config["SECRET_KEY"]).encode()
    name = f"arena-match:{match_id}" if attempt <= 1 else f"arena-match:{match_id}:{attempt}"
    digest = hmac.new(key, name.encode(), hashlib.sha256).digest()
    return wire_id(int.from_bytes(digest[:8], "big"))


def seat_endpoints(bots: Sequence[Bot]) -> list[str]:
    """The endpoint each bot would be called at (its newest version's URL)."""
    return [endpoint_of(b.versions[-1].url) or b.versions[-1].url for b in bots]


def create_match(
    s: Session,
    *,
    bots: Sequence[Bot],
    ruleset: str,
    deals: int,
    limits: Limits,
    kind: str,
    seed: int | None = None,
    rated: bool = True,
    flush: bool = True,
) -> Match:
    """Add a queued match with one seat per bot (in seat order) to the session.  ``flush``
    False: not written yet (no id), the caller flushes many at once (a ladder round: one
    statement for all its matches and one for their seats, not two a match)."""
    rules = find_ruleset(ruleset)
    if len(bots) != rules.players:
        raise ValueError(f"{rules.name} needs {rules.players} bots, got {len(bots)}")
    endpoints = seat_endpoints(bots)
    if len(set(endpoints)) != len(endpoints):
        raise DuplicateEndpointError("one endpoint may sit in one seat of a match only")
    now = utcnow()
    match = Match(
        kind=kind,
        state="queued",
        ruleset=rules.name,
        family=family_of(rules.name),
        deals=deals,
        seed=secrets.randbits(62) if seed is None else seed,
        limits=limits.to_json(),
        rated=rated,
        created_at=now,
        queued_at=now,
        attempts=0,
        enqueues=0,
        error="",
    )
    s.add(match)
    if not flush:
        match.seats = [MatchSeat(seat=seat, bot_id=bot.id, bot_version_id=bot.versions[-1].id)
                       for seat, bot in enumerate(bots)]
        return match
    s.flush()
    for seat, bot in enumerate(bots):
        current = bot.versions[-1]
        s.add(MatchSeat(match_id=match.id, seat=seat, bot_id=bot.id, bot_version_id=current.id))
    s.flush()
    return match


def enqueue_match(app: Flask, match_id: int, *, only_if: Any = None) -> str | None:
    """Give the match a new job id in the database, then put the job on the queue.

    ``only_if`` is an extra SQL condition for the id bump (the reconciler passes the
    condition it selected the match under, so two reconcilers never both enqueue).  Returns
    the job id, or None if the condition no longer held.  A Redis error is logged and
    swallowed: the match is safe in the database and will be enqueued by the reconciler.
    """
    db = get_db(app)
    with db.begin() as s:
        match = s.get(Match, match_id)
        if match is None:
            return None
        job_id = f"match-{match_id}-{match.enqueues + 1}"
        stmt = (
            update(Match)
            .where(Match.id == match_id, Match.enqueues == match.enqueues)
            .values(enqueues=Match.enqueues + 1, job_id=job_id, queued_at=utcnow())
        )
        if only_if is not None:
            stmt = stmt.where(only_if)
        if s.execute(stmt).rowcount != 1:  # type: ignore[attr-defined]
            return None
        timeout = job_timeout(match, app.config)
    try:
        get_queue(app).enqueue(
            PLAY_MATCH,
            match_id,
            job_id=job_id,
            timeout=timeout,
            retries=int(app.config["MATCH_JOB_RETRIES"]),
        )
    except Exception as exc:  # Redis down: the reconciler will enqueue it again
        log.warning("could not enqueue match %s: %s", match_id, exc)
        return None
    return job_id


def enqueue_new_matches(app: Flask, match_ids: Sequence[int]) -> list[str]:
    """:func:`enqueue_match` for many matches never enqueued yet (a ladder round's): their
    job ids given in one transaction, not one each (a round of hundreds of matches spent
    most of its time committing them one by one), then each job put on the queue.  A match
    enqueued meanwhile by someone else (the reconciler) is left to them.  Returns the job
    ids given; a Redis error is logged and swallowed as in :func:`enqueue_match`."""
    if not match_ids:
        return []
    with get_db(app).begin() as s:
        moved = s.execute(
            update(Match).where(Match.id.in_(match_ids), Match.enqueues == 0)
            .values(enqueues=1, job_id="match-" + cast(Match.id, String) + "-1",
                    queued_at=utcnow())
            .returning(Match.id).execution_options(synchronize_session=False)).scalars().all()
        matches = s.scalars(select(Match).where(Match.id.in_(moved)).order_by(Match.id)).all()
        jobs = [(m.id, f"match-{m.id}-1", job_timeout(m, app.config)) for m in matches]
    queue = get_queue(app)
    for match_id, job_id, timeout in jobs:
        try:
            queue.enqueue(PLAY_MATCH, match_id, job_id=job_id, timeout=timeout,
                          retries=int(app.config["MATCH_JOB_RETRIES"]))
        except Exception as exc:  # Redis down: the reconciler will enqueue it again
            log.warning("could not enqueue match %s: %s", match_id, exc)
    return [job_id for _, job_id, _ in jobs]


def lease_deadline(app: Flask) -> dt.datetime:
    return utcnow() + dt.timedelta(seconds=float(app.config["LEASE_S"]))


# --- the match list --------------------------------------------------------------------------

MATCH_STATES = ("queued", "running", "finished", "failed")
"""Every state a match can be in, in life-cycle order (see :mod:`arena.core.models`)."""


@dataclass(frozen=True)
class SeatLine:
    """One seat of a listed match (seat numbers as stored: from 0)."""

    seat: int
    bot_id: int
    name: str
    rank: int | None
    score: int | None
    strikes: int | None


@dataclass(frozen=True)
class MatchLine:
    """One row of the match list: the match's own columns and its seats."""

    id: int
    kind: str
    state: str
    ruleset: str
    rated: bool
    deals: int
    created_at: dt.datetime
    finished_at: dt.datetime | None
    seats: tuple[SeatLine, ...]

    @property
    def winner(self) -> SeatLine | None:
        ranked = [x for x in self.seats if x.rank is not None]
        return min(ranked, key=lambda x: (x.rank, x.seat)) if ranked else None


def find_matches(s: Session, *, bot_id: int | None = None, ruleset: str | None = None,
                 state: str | None = None, before: int | None = None,
                 limit: int = 50) -> tuple[list[MatchLine], bool]:
    """One page of matches, newest first, filtered by any of a bot, a rule set and a state,
    after the match id ``before`` (keyset: each page is one index range however deep, and
    matches created meanwhile never shift it); and whether an older page exists.

    Three statements whatever the page size: the ids, read from an index that leads with
    the most selective filter given (``ix_match_seats_bot_id_match_id`` for a bot, then
    ``ix_matches_ruleset_id``, then ``ix_matches_state_id``, else the primary key; the
    other filters are checked on the rows that range yields), then the matches' columns and
    their seats with the bots' names, by primary key."""
    if state is not None and state not in MATCH_STATES:
        raise ValueError(f"state must be one of {', '.join(MATCH_STATES)}")
    if bot_id is not None:
        id_col: Any = MatchSeat.match_id
        ids = select(id_col).where(MatchSeat.bot_id == bot_id)
        if ruleset is not None or state is not None:
            ids = ids.join(Match, Match.id == MatchSeat.match_id)
    else:
        id_col = Match.id
        ids = select(id_col)
    if ruleset is not None:
        ids = ids.where(Match.ruleset == ruleset)
    if state is not None:
        ids = ids.where(Match.state == state)
    if before is not None:
        ids = ids.where(id_col < before)
    found = list(s.scalars(ids.order_by(id_col.desc()).limit(limit + 1)))
    page = list(dict.fromkeys(found[:limit]))  # a bot sits once per match; be sure
    if not page:
        return [], False
    lines = {m.id: m for m in match_lines(s, s.execute(
        select(*MATCH_LINE_COLUMNS).where(among(s, Match.id, page))))}
    return [lines[i] for i in page if i in lines], len(found) > limit


MATCH_LINE_COLUMNS = (Match.id, Match.kind, Match.state, Match.ruleset, Match.rated,
                      Match.deals, Match.created_at, Match.finished_at)
"""What a :class:`MatchLine` reads of a match."""


def match_lines(s: Session, rows: Iterable[Any]) -> list[MatchLine]:
    """``rows`` (:data:`MATCH_LINE_COLUMNS`, in the order wanted) as :class:`MatchLine`\\ s,
    their seats with the bots' names read in one more statement: a list of matches without
    building ``Match``, ``MatchSeat`` and ``Bot`` objects (each bot's info document decoded)."""
    rows = list(rows)
    if not rows:
        return []
    seats: dict[int, list[SeatLine]] = {m.id: [] for m in rows}
    # The bot's name by a per-seat subquery, not a join: joined, PostgreSQL may plan a page's
    # 200 seats as a hash join over every bot (a sequential scan growing with the bots), as
    # it did for the JSON lists (arena.routes.matches._summary_statements).
    name = select(Bot.name).where(Bot.id == MatchSeat.bot_id).scalar_subquery().label("name")
    for row in s.execute(
            select(MatchSeat.match_id, MatchSeat.seat, MatchSeat.bot_id, name,
                   MatchSeat.rank, MatchSeat.score, MatchSeat.strikes)
            .where(among(s, MatchSeat.match_id, seats))
            .order_by(MatchSeat.match_id, MatchSeat.seat)):
        seats[row.match_id].append(SeatLine(row.seat, row.bot_id, row.name, row.rank,
                                            row.score, row.strikes))
    return [MatchLine(m.id, m.kind, m.state, m.ruleset, m.rated, m.deals, m.created_at,
                      m.finished_at, tuple(seats[m.id])) for m in rows]



@dataclass(frozen=True)
class BotSeatLine:
    """One of a bot's recent matches, seen from its seat (the bot page's table): the
    match's columns, the seat's, the strikes of the match's result (every seat's; none
    without a result) and the other seats' bots' names in seat order."""

    match_id: int
    kind: str
    state: str
    ruleset: str
    seat: int
    rank: int | None
    score: int | None
    strikes: int | None
    calls: int | None
    p50_ms: float | None
    p95_ms: float | None
    has_result: bool
    result_strikes: tuple[Any, ...]
    opponents: tuple[str, ...]


@functools.cache
def _recent_seats_statements(dialect: str) -> tuple[Select[*tuple[Any, ...]],
                                                    Select[*tuple[Any, ...]]]:
    """:func:`bot_recent_seats`' two statements, built once per dialect with the bot, the
    limit and the matches' ids bound at execution (``bot_id``, ``limit``, ``ids``): building
    them and their cache keys anew was a third of their cost."""
    bot_id = bindparam("bot_id", type_=Integer)
    seats = (select(MatchSeat.match_id, Match.kind, Match.state, Match.ruleset, MatchSeat.seat,
                    MatchSeat.rank, MatchSeat.score, MatchSeat.strikes, MatchSeat.calls,
                    MatchSeat.p50_ms, MatchSeat.p95_ms, MatchResult.id.label("result_id"),
                    MatchResult.totals["strikes"].label("result_strikes"))
             .join(Match, Match.id == MatchSeat.match_id)
             .outerjoin(MatchResult, MatchResult.match_id == MatchSeat.match_id)
             .where(MatchSeat.bot_id == bot_id)
             .order_by(MatchSeat.match_id.desc()).limit(bindparam("limit", type_=Integer)))
    others = (select(MatchSeat.match_id, Bot.name).join(Bot, Bot.id == MatchSeat.bot_id)
              .where(among_bound(dialect, MatchSeat.match_id, "ids"),
                     MatchSeat.bot_id != bot_id)
              .order_by(MatchSeat.match_id, MatchSeat.seat))
    return seats, others


def bot_recent_seats(s: Session, bot_id: int, limit: int) -> list[BotSeatLine]:
    """The bot's ``limit`` newest matches, newest first, as plain rows: two statements
    whatever ``limit`` (``ix_match_seats_bot_id_match_id`` read backwards, joined to the
    matches and results by primary key; then the other seats with their bots' names).

    Column queries, not ORM objects: the bot page built its 20 rows from matches, seats,
    bots and results as mapped objects (four statements, every column of each, the
    results' whole totals and the bots' info documents decoded): 15 ms of its 22 ms at
    10,000 bots / 1M matches.  Only the result's strikes are read (``totals -> 'strikes'``)."""
    seats_stmt, others_stmt = _recent_seats_statements(s.get_bind().dialect.name)
    rows = s.execute(seats_stmt, {"bot_id": bot_id, "limit": limit}).all()
    if not rows:
        return []
    others: dict[int, list[str]] = {r.match_id: [] for r in rows}
    for match_id, name in s.execute(others_stmt, {"bot_id": bot_id, "ids": list(others)}):
        others[match_id].append(name)
    return [BotSeatLine(r.match_id, r.kind, r.state, r.ruleset, r.seat, r.rank, r.score,
                        r.strikes, r.calls, r.p50_ms, r.p95_ms, r.result_id is not None,
                        tuple(r.result_strikes or ()), tuple(others[r.match_id]))
            for r in rows]
