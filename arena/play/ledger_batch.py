"""A batch of results applied to a family's ratings in a fixed, small number of statements,
whatever the batch's size: what the finishing transaction does while it holds the family's
ledger lock (:mod:`arena.jobs.ledger`).

Why
---
No two transactions of a family overlap between taking its ledger lock and their commit,
so a family stores at most *results per transaction / lock hold* results a second.  The hold
was nine statements, each a round trip to the database in which the holder waits for the
server and then for a CPU of its own (``bench/ledger_throughput.py`` measured 250-320 ms a
transaction on a loaded host): the lock itself, the results' insert, a read of the duplicate
sets, the rating rows' read, then the unit of work's inserts of new rating rows, updates of
the others, the events' insert and the family's counter, then the commit.

How
---
The lock and the family's counter are one ``UPDATE ... RETURNING`` (:func:`count_and_lock`);
which matches are rotations of duplicate sets is read before the lock (fixed when a match is
made); then the results' insert (their ids, handed out under the lock, are the order of
application), the rating rows' read (locked, in bot order), the arithmetic in Python, one
insert-or-update of every rating row the batch moves, one insert of its events, the commit:
six round trips instead of nine, with no unit of work to flush.  The arithmetic is
:func:`arena.play.ratings.apply_result`'s, so ratings still equal a recompute.

Fewer is possible on PostgreSQL (the results' insert and the rows' read in one statement of
two CTEs, the rows' upsert and the events' insert in another), but those statements have a
new shape for every batch size: compiled under the lock each time (~15 ms of CPU a batch
here), they were no faster than these four, whose compiled forms are cached.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Select, Table, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from arena.core import counts
from arena.core.models import Rating, RatingEvent, RatingFamily

from .ratings import Placement, combine, elo_deltas, lock_family

RATINGS = cast(Table, Rating.__table__)
EVENTS = cast(Table, RatingEvent.__table__)
"""The tables themselves: the batch's rows are plain values, written with Core statements
(no ORM objects to build and flush while the lock is held)."""


def count_and_lock(s: Session, family: str, results: int) -> None:
    """Lock the family's ledger row for the rest of the transaction and count ``results``
    more results in it, in one statement (creating the row first if needed)."""
    counted = s.execute(
        update(RatingFamily).where(RatingFamily.name == family)
        .values(results=RatingFamily.results + results)
        .returning(RatingFamily.results)
        .execution_options(synchronize_session=False)).first()
    if counted is None:  # the family's first result: create the row, then count
        row = lock_family(s, family)
        row.results += results
        s.flush()


@dataclass(frozen=True)
class Applied:
    """One result to apply: its id, its match, its placements and Elo factor."""

    result_id: int
    match_id: int
    placements: Sequence[Placement]
    k: float


def _lock_ratings(family: str, bots: Sequence[int]) -> Select[int, float, int]:
    """The family's rating rows of ``bots``, locked in bot order."""
    return (select(Rating.bot_id, Rating.rating, Rating.games)
            .where(Rating.family == family, Rating.bot_id.in_(bots))
            .order_by(Rating.bot_id).with_for_update())


def _arithmetic(family: str, items: Sequence[Applied], current: dict[int, tuple[float, int]],
                *, initial: float, now: dt.datetime
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rating rows and events of ``items`` applied in order from ``current`` (bot ->
    rating, games; a bot without a row starts at ``initial``): the arithmetic of
    :func:`arena.play.ratings.apply_result`, so the ratings equal a recompute."""
    current = dict(current)
    moved: dict[int, None] = {}
    events: list[dict[str, Any]] = []
    for a in items:
        ps = combine(a.placements)
        before = [current.get(p.bot_id, (initial, 0))[0] for p in ps]
        deltas = elo_deltas(before, [p.rank for p in ps], a.k)
        for p, r0, d in zip(ps, before, deltas, strict=True):
            games = current.get(p.bot_id, (initial, 0))[1] + 1
            current[p.bot_id] = (r0 + d, games)
            moved[p.bot_id] = None
            events.append({"result_id": a.result_id, "match_id": a.match_id,
                           "bot_id": p.bot_id, "family": family, "before": r0,
                           "after": r0 + d, "games": games, "created_at": now})
    rows = [{"bot_id": b, "family": family, "rating": current[b][0], "games": current[b][1],
             "updated_at": now} for b in sorted(moved)]
    return rows, events


def apply_batch(s: Session, family: str, items: Sequence[Applied], *, initial: float,
                now: dt.datetime) -> None:
    """Apply ``items`` (in result-id order) to the family's ratings and record their events,
    in three statements: the rows read and locked, every moved row written, the events
    inserted; one more when a bot has its first rating in the family (its leaderboard's
    count, :mod:`arena.core.counts`).  The caller holds the family's lock."""
    if not items:
        return
    bots = sorted({p.bot_id for a in items for p in a.placements})
    current = {b: (r, g) for b, r, g in s.execute(_lock_ratings(family, bots))}
    rows, events = _arithmetic(family, items, current, initial=initial, now=now)
    new = [r for r in rows if r["bot_id"] not in current]
    upsert(s, [r for r in rows if r["bot_id"] in current], new)
    s.execute(insert(EVENTS), events)
    if new:  # bots' first ratings in the family: its leaderboard lists the live ones
        # (read after the lock; the finish wrote these bots' rows before taking it, so a
        # deletion of one of them committed first or waits for this commit: counts.py)
        counts.add_live_ratings(s, family, [r["bot_id"] for r in new])


def upsert(s: Session, old: list[dict[str, Any]], new: list[dict[str, Any]]) -> None:
    """Write the rating rows: one insert-or-update on PostgreSQL and SQLite (a round trip,
    whatever the mix), plain statements elsewhere."""
    table = RATINGS
    dialect = s.get_bind().dialect.name
    if dialect in ("postgresql", "sqlite"):
        stmt = (pg_insert(table) if dialect == "postgresql" else sqlite_insert(table))
        stmt = stmt.on_conflict_do_update(
            index_elements=[table.c.bot_id, table.c.family],
            set_={"rating": stmt.excluded.rating, "games": stmt.excluded.games,
                  "updated_at": stmt.excluded.updated_at})
        s.execute(stmt, old + new)
        return
    if new:
        s.execute(insert(table), new)
    for r in old:
        s.execute(update(table).where(table.c.bot_id == r["bot_id"],
                                      table.c.family == r["family"]).values(**r))
