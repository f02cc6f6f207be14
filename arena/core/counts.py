"""Maintained listing counts: the ``total`` of ``GET /api/bots`` (and of each ``?status=``)
and of ``GET /api/ratings`` (each family), kept in ``listing_counts`` (migration 0014)
instead of a ``count(*)`` per request, which read every live bot or every listed rating of
the family (15-27 ms of SQL at 100,000 bots).

Rows (:class:`~arena.core.models.ListingCount`)
-----------------------------------------------
``bots:<status>``
    The live (not deleted) bots of each status of :func:`~arena.core.models.bot_status`:
    ``active``, ``paused``, ``pending``, ``rejected``, ``unhealthy``.  The list's total is
    their sum, a filtered list's the one row; a missing row is 0.
``ratings:<family>``
    The ratings a family's leaderboard lists: its ratings of live bots
    (``arena.routes.ratings.listed``).

Who moves them, in the transaction that changes what they count
---------------------------------------------------------------
* Any change of bots or ratings made through the ORM's unit of work (a bot added, its
  status columns changed, deleted; a rating row added or removed): :func:`_after_flush`,
  a listener on every session's flush, computes the deltas from the rows the flush just
  wrote (the status columns keep their previous value, ``active_history``) and applies them
  in the same flush, so a rolled-back transaction or savepoint takes them back too.  A
  bot's deletion takes one off ``ratings:<family>`` for each family it has a rating in.
* The ledger's batch (:func:`arena.play.ledger_batch.apply_batch`) writes rating rows with
  plain statements: it adds the family's new rows of live bots itself (a bot's first
  rating in the family), under the family's ledger lock, so the counter row is only ever
  waited for by that family's own finishes (and a rare deletion).
* A bulk ``session.execute(update(Bot)...)`` that sets a status column: :func:`_on_execute`
  reads the matched rows' statuses before and after it and moves the counts by the
  difference.
* Only SQL that bypasses the session (a hand-made ``UPDATE bots SET owner_paused ...`` in
  ``psql``, a restore of some tables) can make them drift: ``arena db counts --check``.

Why this is exact under concurrency: every delta is an ``n = n + d`` upsert of a row
(never read, then written), taken in name order within a flush.  A deletion and a bot's
first rating cannot miss each other: a finishing transaction writes its seated bots' rows
(``idle_since``) before the ledger lock and reads whether they are deleted after it, and a
deletion writes the bot's row before reading its ratings, so one of the two waits for the
other's commit and then sees its rows.

``arena db counts --check`` compares every row with ``count(*)`` in one snapshot,
``--repair`` rewrites them (:func:`drift`, :func:`repair`).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, cast

from sqlalchemy import (
    Connection,
    Select,
    String,
    Table,
    bindparam,
    delete,
    event,
    func,
    literal,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Result
from sqlalchemy.orm import ORMExecuteState, Session, UOWTransaction, attributes

from .models import STATUS_COLUMNS, Bot, ListingCount, Rating, bot_status

BOT_STATUSES = ("active", "paused", "pending", "rejected", "unhealthy")
"""The statuses a live bot can have (:func:`~arena.core.models.bot_status` but deleted)."""
COUNTS = cast(Table, ListingCount.__table__)
STATUS_NAMES = tuple(c.key for c in STATUS_COLUMNS)


def bots_key(status: str) -> str:
    return f"bots:{status}"


def ratings_key(family: str) -> str:
    return f"ratings:{family}"


RECOUNT_SQL = """
SELECT 'bots:' || CASE WHEN owner_paused THEN 'paused'
                       WHEN check_state = 'pending' THEN 'pending'
                       WHEN check_state = 'failed' THEN 'rejected'
                       WHEN health_paused THEN 'unhealthy'
                       ELSE 'active' END AS name, count(*) AS n
FROM bots WHERE deleted_at IS NULL GROUP BY 1
UNION ALL
SELECT 'ratings:' || r.family AS name, count(*) AS n FROM ratings r
WHERE NOT EXISTS (SELECT 1 FROM bots b WHERE b.id = r.bot_id AND b.deleted_at IS NOT NULL)
GROUP BY r.family
"""
"""Every count from the rows themselves, in one set-based statement (one pass over the
bots and one over the ratings; the deleted bots, few, by ``ix_bots_deleted``): the
migration's backfill, the check's and the repair's truth, the bench seeder's fill.  The
status ``CASE`` is :func:`~arena.core.models.bot_status`'s order."""


# --- moving -----------------------------------------------------------------------------------


def add(conn: Connection | Session, deltas: Mapping[str, int]) -> None:
    """Add ``deltas`` (name -> change) to the counts, in name order, in the caller's
    transaction: one ``INSERT ... ON CONFLICT DO UPDATE SET n = n + d`` (a missing row
    starts at 0)."""
    rows = [{"name": k, "n": d} for k, d in sorted(deltas.items()) if d]
    if not rows:
        return
    c = conn.connection() if isinstance(conn, Session) else conn
    dialect = c.dialect.name
    if dialect in ("postgresql", "sqlite"):
        stmt = pg_insert(COUNTS) if dialect == "postgresql" else sqlite_insert(COUNTS)
        c.execute(stmt.on_conflict_do_update(index_elements=[COUNTS.c.name],
                                             set_={"n": COUNTS.c.n + stmt.excluded.n}), rows)
        return
    for r in rows:  # another database: update, else insert
        if not c.execute(COUNTS.update().where(COUNTS.c.name == r["name"])
                         .values(n=COUNTS.c.n + r["n"])).rowcount:
            c.execute(COUNTS.insert().values(**r))


def add_live_ratings(conn: Connection | Session, family: str, bot_ids: Iterable[int]) -> None:
    """Count the family's new rating rows of ``bot_ids`` that belong to live bots: one
    ``INSERT ... SELECT count(*) ... ON CONFLICT DO UPDATE`` (the ledger's one extra
    statement under its lock, only when a batch rates a bot for the first time there)."""
    ids = sorted(set(bot_ids))
    c = conn.connection() if isinstance(conn, Session) else conn
    dialect = c.dialect.name
    if not ids:
        return
    if dialect not in ("postgresql", "sqlite"):
        add(c, {ratings_key(family): len(live_bots(c, ids))})
        return
    stmt = pg_insert(COUNTS) if dialect == "postgresql" else sqlite_insert(COUNTS)
    c.execute(stmt.from_select(["name", "n"], select(
        literal(ratings_key(family), String), func.count()).select_from(Bot).where(
            Bot.id.in_(ids), Bot.deleted_at.is_(None)))
        .on_conflict_do_update(index_elements=[COUNTS.c.name],
                               set_={"n": COUNTS.c.n + stmt.excluded.n}))


def _before(obj: Bot, key: str) -> Any:
    """The value a status column had before this flush (``active_history`` loaded it when
    it was changed; a previous None is recorded as no deleted value)."""
    h = attributes.get_history(obj, key)
    if h.deleted:
        return h.deleted[0]
    if h.added:
        return None
    return h.unchanged[0] if h.unchanged else getattr(obj, key)


def _status_now(obj: Bot) -> str:
    return bot_status(*(getattr(obj, k) for k in STATUS_NAMES))


def _status_before(obj: Bot) -> str:
    return bot_status(*(_before(obj, k) for k in STATUS_NAMES))


def live_bots(conn: Connection, bot_ids: Iterable[int]) -> set[int]:
    """Which of ``bot_ids`` are not deleted (the ones whose ratings a leaderboard lists)."""
    ids = sorted(set(bot_ids))
    if not ids:
        return set()
    return set(conn.scalars(select(Bot.id).where(Bot.id.in_(ids), Bot.deleted_at.is_(None))))


def _move(deltas: Counter[str], flipped: dict[int, int], bot_id: int, before: str,
          now: str) -> None:
    """Count a bot's move from status ``before`` to ``now`` (``deleted`` counts nowhere; a
    bot deleted or brought back goes in ``flipped``: -1 or +1, its ratings move with it)."""
    if before == now:
        return
    deltas[bots_key(before)] -= 1
    deltas[bots_key(now)] += 1
    if (before == "deleted") != (now == "deleted"):
        flipped[bot_id] = 1 if before == "deleted" else -1
    deltas.pop(bots_key("deleted"), None)


def _bot_deltas(new: list[Bot], changed: list[Bot], gone: list[Bot]
                ) -> tuple[Counter[str], dict[int, int]]:
    """The status counts a flush's bots move, and the bots it deleted (-1) or brought back
    (+1), whose ratings move with them."""
    deltas: Counter[str] = Counter()
    flipped: dict[int, int] = {}
    for b in new:
        deltas[bots_key(_status_now(b))] += 1
    for b in gone:
        deltas[bots_key(_status_before(b))] -= 1
    for b in changed:
        _move(deltas, flipped, b.id, _status_before(b), _status_now(b))
    deltas.pop(bots_key("deleted"), None)
    return deltas, flipped


def _rating_deltas(conn: Connection, new: list[Rating], gone: list[Rating],
                   flipped: dict[int, int]) -> Counter[str]:
    """The family counts a flush's ratings move: a rating added or removed counts by its
    bot then; a deleted (or returning) bot's other ratings move with it."""
    deltas: Counter[str] = Counter()
    fresh = {(r.bot_id, r.family) for r in new + gone}
    if flipped:
        for bot_id, family in conn.execute(select(Rating.bot_id, Rating.family).where(
                Rating.bot_id.in_(sorted(flipped)))):
            if (bot_id, family) not in fresh:
                deltas[ratings_key(family)] += flipped[bot_id]
    listed_now = live_bots(conn, [r.bot_id for r in new + gone])
    for r in new:
        if r.bot_id in listed_now:
            deltas[ratings_key(r.family)] += 1
    for r in gone:  # listed before this flush: now, unless it flipped here
        if (r.bot_id in listed_now) != (flipped.get(r.bot_id, 0) == 1):
            deltas[ratings_key(r.family)] -= 1
    return deltas


def _after_flush(s: Session, _ctx: UOWTransaction) -> None:
    """Move the counts by what this flush wrote of bots and ratings (see the module)."""
    bots_new = [o for o in s.new if isinstance(o, Bot)]
    bots_changed = [o for o in s.dirty if isinstance(o, Bot) and s.is_modified(o)]
    bots_gone = [o for o in s.deleted if isinstance(o, Bot)]
    ratings_new = [o for o in s.new if isinstance(o, Rating)]
    ratings_gone = [o for o in s.deleted if isinstance(o, Rating)]
    if not (bots_new or bots_changed or bots_gone or ratings_new or ratings_gone):
        return
    with s.no_autoflush:
        conn = s.connection()
        deltas, flipped = _bot_deltas(bots_new, bots_changed, bots_gone)
        deltas.update(_rating_deltas(conn, ratings_new, ratings_gone, flipped))
        add(conn, deltas)


def _sets_status(stmt: Any) -> bool:
    """Whether an ``UPDATE`` statement sets one of the status columns."""
    values = getattr(stmt, "_values", None) or dict(getattr(stmt, "_ordered_values", None) or ())
    return any(getattr(k, "key", k) in STATUS_NAMES for k in values)


def _on_execute(state: ORMExecuteState) -> Result[Any] | None:
    """A bulk ``session.execute(update(Bot)...)`` that sets a status column: the statuses
    of the rows it matches read (and locked) before it, read again after, and the counts
    moved by the difference, in the same transaction.  Any other statement runs as it is
    (the finish's ``idle_since`` update costs a look at its columns)."""
    stmt = state.statement
    if not stmt.is_update:  # a class attribute: every read returns here at once
        return None
    if not (state.is_update and getattr(getattr(stmt, "table", None), "name", None)
            == Bot.__tablename__ and _sets_status(stmt)):
        return None
    conn = state.session.connection()
    where = getattr(stmt, "whereclause", None)
    read = select(Bot.id, *STATUS_COLUMNS).order_by(Bot.id).with_for_update()
    before = {r[0]: bot_status(*r[1:]) for r in conn.execute(
        read if where is None else read.where(where))}
    result = state.invoke_statement()
    deltas: Counter[str] = Counter()
    flipped: dict[int, int] = {}
    if before:
        for r in conn.execute(select(Bot.id, *STATUS_COLUMNS).where(
                Bot.id.in_(sorted(before)))):
            _move(deltas, flipped, r[0], before[r[0]], bot_status(*r[1:]))
    deltas.update(_rating_deltas(conn, [], [], flipped))
    add(conn, deltas)
    return result


event.listen(Session, "after_flush", _after_flush)
event.listen(Session, "do_orm_execute", _on_execute)


# --- reading ----------------------------------------------------------------------------------


def total(s: Session, names: Iterable[str]) -> int:
    """The sum of these counts (a missing row is 0): one statement by primary key."""
    return int(s.scalar(_total_statement(), {"names": sorted(set(names))}) or 0)


@functools.cache
def _total_statement() -> Select[int]:
    """:func:`total`'s statement, built once (``names`` bound)."""
    return (select(func.coalesce(func.sum(ListingCount.n), 0))
            .where(ListingCount.name.in_(bindparam("names", expanding=True))))


def bots_total(s: Session, status: str | None = None) -> int:
    """``count(*)`` of the live bots (of one status): ``GET /api/bots``' total."""
    return total(s, [bots_key(status)] if status else [bots_key(x) for x in BOT_STATUSES])


def ratings_total(s: Session, family: str) -> int:
    """``count(*)`` of a family's listed ratings: ``GET /api/ratings``' total."""
    return total(s, [ratings_key(family)])


# --- checking and repairing -----------------------------------------------------------------


def recount(conn: Connection | Session) -> dict[str, int]:
    """Every count from the rows (:data:`RECOUNT_SQL`)."""
    return {str(name): int(n) for name, n in conn.execute(text(RECOUNT_SQL))}


def stored(conn: Connection | Session) -> dict[str, int]:
    return {str(name): int(n) for name, n in conn.execute(select(COUNTS.c.name, COUNTS.c.n))}


def drift(conn: Connection | Session) -> dict[str, tuple[int, int]]:
    """The counts that differ from ``count(*)``: name -> (stored, counted); a missing row
    and a zero are the same."""
    have, want = stored(conn), recount(conn)
    return {k: (have.get(k, 0), want.get(k, 0)) for k in sorted(set(have) | set(want))
            if have.get(k, 0) != want.get(k, 0)}


def repair(conn: Connection) -> dict[str, tuple[int, int]]:
    """Rewrite every count from the rows; returns the drift it fixed.  On PostgreSQL the
    table is locked (``EXCLUSIVE``: readers go on) first, so a transaction that moves a
    count either committed before the recount, which sees its rows, or moves it after
    the rewrite, from the recounted value: its delta is counted once either way."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("LOCK TABLE listing_counts IN EXCLUSIVE MODE"))
    fixed = drift(conn)
    if fixed:
        conn.execute(delete(COUNTS))
        rows = [{"name": k, "n": n} for k, n in sorted(recount(conn).items())]
        if rows:
            conn.execute(COUNTS.insert(), rows)
    return fixed
