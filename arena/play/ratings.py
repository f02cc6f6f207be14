"""Multiplayer Elo over match standings, applied once per result, and recomputed from scratch.

Convention
----------
A match of ``n`` seats is scored as the ``n(n-1)/2`` pairwise games between its seats, from
the final standings: the better-ranked bot of a pair wins it (score 1), equal ranks draw
(1/2).  With ratings ``R`` *before* the match,

    E_ij = 1 / (1 + 10 ** ((R_j - R_i) / 400))
    R_i' = R_i + K / (n - 1) * sum_{j != i} (S_ij - E_ij)

so a two-seat match is classic Elo with factor ``K`` (``ELO_K``), and a bot that beats every
other seat of a four-seat table gains at most ``K``.  Updates are simultaneous (all from the
ratings before the match) and zero-sum.  Ratings start at ``ELO_INITIAL``; a rating is
*provisional* until the bot has ``ELO_PROVISIONAL_GAMES`` rated matches in the family.

Order and recompute
-------------------
Results are applied in the order of ``MatchResult.id`` within a family: the finishing
transaction locks the family's :class:`~arena.core.models.RatingFamily` row *before* it inserts
the result, so ids are handed out in the order ratings are applied.  :func:`recompute`
replays every stored result of a family in that order with the same arithmetic and must give
exactly the stored ratings (``arena ratings --check``).  The check reads results and ratings
in one snapshot (:func:`snapshot`): read at different moments, a match finishing in between
would look like a difference.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from arena.core.models import MatchResult, MatchSeat, Rating, RatingEvent, RatingFamily, utcnow
from arena.core.storage import READ_SNAPSHOT

from . import duplicate_sets

if TYPE_CHECKING:
    from arena.core.storage import Database


def expected(r_i: float, r_j: float) -> float:
    return 1.0 / (1.0 + float(10.0 ** ((r_j - r_i) / 400.0)))


def elo_deltas(ratings: Sequence[float], ranks: Sequence[int], k: float) -> list[float]:
    """Rating changes of each seat (same order as ``ratings``); lower rank is better."""
    n = len(ratings)
    if n != len(ranks):
        raise ValueError("one rank per rating")
    if n < 2:
        return [0.0] * n
    per_pair = k / (n - 1)
    out = []
    for i in range(n):
        total = 0.0
        for j in range(n):
            if i == j:
                continue
            s = 1.0 if ranks[i] < ranks[j] else 0.5 if ranks[i] == ranks[j] else 0.0
            total += s - expected(ratings[i], ratings[j])
        out.append(per_pair * total)
    return out


@dataclass(frozen=True)
class Placement:
    bot_id: int
    rank: int


def combine(placements: Sequence[Placement]) -> list[Placement]:
    """One placement per bot (a bot in several seats keeps its best rank): Elo is between
    bots, and a bot does not play itself."""
    best: dict[int, int] = {}
    for p in placements:
        best[p.bot_id] = min(p.rank, best.get(p.bot_id, p.rank))
    return [Placement(b, r) for b, r in sorted(best.items())]


@dataclass(frozen=True)
class Outcome:
    """What a finished match applies to the ratings: these placements with this K."""

    placements: list[Placement]
    k: float


SET_UNKNOWN = -1
"""``rating_outcome``'s ``set_id`` when the caller does not know the match's set."""


def rating_outcome(s: Session, match_id: int, k: float,
                   seats: Sequence[MatchSeat] | None = None,
                   set_id: int | None = SET_UNKNOWN) -> Outcome | None:
    """What the finished, rated match ``match_id`` (its seats' results and its result row
    written) applies to the ratings: its own ranks with factor ``k``.  A rotation of a ladder
    duplicate set applies nothing, except the one that completes the set, which applies the
    set's combined result with ``k`` times its rotations (:mod:`arena.play.duplicate_sets`).
    The finish and :func:`recompute` both ask here; ``seats``: the match's seats, when the
    caller holds them already (the finish, which just wrote their ranks), and ``set_id``
    None when it knows the match is in no duplicate set."""
    if set_id == SET_UNKNOWN:
        set_id = duplicate_sets.set_of(s, match_id)
    if set_id is None:
        if seats is None:
            seats = s.scalars(select(MatchSeat).where(MatchSeat.match_id == match_id)).all()
        return Outcome(combine([Placement(x.bot_id, x.rank or 0) for x in seats]), k)
    if not duplicate_sets.completes(s, set_id, match_id):
        return None
    siblings = duplicate_sets.set_matches(s, set_id)
    ranks = duplicate_sets.combined_ranks(duplicate_sets.seat_lines(s, siblings))
    return Outcome([Placement(b, r) for b, r in ranks.items()], k * len(siblings))


def apply_result(
    s: Session,
    *,
    family: str,
    result_id: int,
    match_id: int,
    placements: Sequence[Placement],
    initial: float,
    k: float,
    rows: dict[int, Rating] | None = None,
) -> list[RatingEvent]:
    """Apply one result to the stored ratings (in the caller's transaction, which holds the
    family lock) and record the events.  The ``(match_id, bot_id)`` unique constraint on the
    events makes a second application fail instead of counting twice.  ``rows``: the
    family's rating rows of these bots, when the caller locked them already
    (:func:`locked_ratings`; a bot's new row is added to it)."""
    bots = combine(placements)
    if rows is None:
        rows = locked_ratings(s, family, [p.bot_id for p in bots])
    for p in bots:
        row = rows.get(p.bot_id)
        if row is None:
            row = Rating(bot_id=p.bot_id, family=family, rating=initial, games=0)
            s.add(row)
        rows[p.bot_id] = row
    before = [rows[p.bot_id].rating for p in bots]
    deltas = elo_deltas(before, [p.rank for p in bots], k)
    now = utcnow()
    events = []
    for p, r0, d in zip(bots, before, deltas, strict=True):
        row = rows[p.bot_id]
        row.rating = r0 + d
        row.games += 1
        row.updated_at = now
        ev = RatingEvent(
            result_id=result_id,
            match_id=match_id,
            bot_id=p.bot_id,
            family=family,
            before=r0,
            after=row.rating,
            games=row.games,
            created_at=now,
        )
        s.add(ev)
        events.append(ev)
    return events


def locked_ratings(s: Session, family: str, bot_ids: Sequence[int]) -> dict[int, Rating]:
    """The family's rating rows of ``bot_ids``, locked in one statement (in bot order)."""
    return {r.bot_id: r for r in s.scalars(
        select(Rating).where(Rating.family == family, Rating.bot_id.in_(sorted(set(bot_ids))))
        .order_by(Rating.bot_id).with_for_update()
        .execution_options(populate_existing=True))}


def lock_family(s: Session, family: str) -> RatingFamily:
    """Lock (creating if needed) the family's ledger row for the rest of the transaction."""
    row = s.get(RatingFamily, family, with_for_update=True)
    if row is None:
        from sqlalchemy.exc import IntegrityError

        try:
            with s.begin_nested():
                s.add(RatingFamily(name=family, results=0))
        except IntegrityError:
            pass  # created concurrently; lock it below
        row = s.get(RatingFamily, family, with_for_update=True, populate_existing=True)
        assert row is not None
    return row


# --- recompute ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Recomputed:
    family: str
    ratings: dict[int, float]
    games: dict[int, int]
    results: int


def recompute(s: Session, family: str, *, initial: float, k: float) -> Recomputed:
    """Replay every stored result of ``family`` in apply order from the initial rating."""
    ratings: dict[int, float] = {}
    games: dict[int, int] = {}
    results = s.scalars(
        select(MatchResult).where(MatchResult.family == family).order_by(MatchResult.id)
    ).all()
    for res in results:
        if not _is_rated(s, res.match_id):
            continue
        outcome = rating_outcome(s, res.match_id, k)
        if outcome is None:
            continue
        bots = outcome.placements
        before = [ratings.get(p.bot_id, initial) for p in bots]
        for p, r0, d in zip(bots, before, elo_deltas(before, [p.rank for p in bots], outcome.k),
                            strict=True):
            ratings[p.bot_id] = r0 + d
            games[p.bot_id] = games.get(p.bot_id, 0) + 1
    return Recomputed(family, ratings, games, len(results))


def _is_rated(s: Session, match_id: int) -> bool:
    from arena.core.models import Match

    m = s.get(Match, match_id)
    return bool(m is not None and m.rated)


def check(s: Session, family: str, *, initial: float, k: float) -> list[str]:
    """Differences between the stored ratings and a recompute (empty: they agree exactly)."""
    again = recompute(s, family, initial=initial, k=k)
    stored = {r.bot_id: r for r in s.scalars(select(Rating).where(Rating.family == family))}
    problems = []
    for bot_id in sorted(set(stored) | set(again.ratings)):
        row = stored.get(bot_id)
        want = again.ratings.get(bot_id)
        if row is None or want is None:
            problems.append(f"{family}: bot {bot_id}: stored {row and row.rating}, "
                            f"recomputed {want}")
        elif row.rating != want or row.games != again.games[bot_id]:
            problems.append(f"{family}: bot {bot_id}: stored {row.rating} ({row.games} games), "
                            f"recomputed {want} ({again.games[bot_id]} games)")
    return problems


@contextmanager
def snapshot(db: Database) -> Iterator[Session]:
    """A read-only session in which every query sees the same committed state: a
    ``REPEATABLE READ READ ONLY`` transaction on PostgreSQL, one deferred read transaction on
    SQLite (WAL: a snapshot from the first read on, without taking the write lock)."""
    options: dict[str, object] = {READ_SNAPSHOT: True}
    if db.dialect == "postgresql":
        options.update(isolation_level="REPEATABLE READ", postgresql_readonly=True)
    with db.engine.connect() as conn:
        conn = conn.execution_options(**options)
        with conn.begin(), Session(bind=conn) as s:
            yield s


def check_all(db: Database, *, initial: float, k: float,
              family: str | None = None) -> tuple[list[str], list[str]]:
    """``arena ratings --check``: the families checked and the differences found, all read
    in one snapshot."""
    with snapshot(db) as s:
        names = [family] if family else families(s)
        problems: list[str] = []
        for name in names:
            problems += check(s, name, initial=initial, k=k)
    return names, problems


def families(s: Session) -> list[str]:
    return list(s.scalars(select(RatingFamily.name).order_by(RatingFamily.name)))


def provisional(games: int, threshold: int) -> bool:
    return games < threshold


def leaderboard_key(ratings: Mapping[int, float]) -> list[int]:
    return sorted(ratings, key=lambda b: (-ratings[b], b))


# --- reading (pages) ---------------------------------------------------------------------


def sample_games(games: int, points: int) -> list[int]:
    """At most ``points`` evenly spaced game numbers from 1 to ``games``, always both ends
    (the whole history when it is short): ``1 + (games - 1) * i / (k - 1)`` for ``i`` in
    ``0 .. k - 1`` (``k = max(2, points)``), rounded half up in integers so that PostgreSQL
    computes the very same numbers (:data:`SAMPLED_PG`; for a short history they are every
    game)."""
    if games <= 0:
        return []
    if games <= points:
        return list(range(1, games + 1))
    k = max(2, points)
    return sorted({1 + (2 * i * (games - 1) + k - 1) // (2 * (k - 1)) for i in range(k)})


DENSE = 3
"""On PostgreSQL a history of at most ``DENSE`` times the points drawn is read whole from the
index and filtered by the server (one index range of a few hundred rows); a longer one is
probed at each sampled game (one index descent a point: the busy bot's 62,500 games read
whole cost 31 ms, probed 0.8 ms).  Past three times the points a probe per point reads
fewer pages than the whole range, whose rows lie on a page each in a real history."""

SAMPLED_GAME_PG = """(games = 1 OR (
    ((2 * CAST(games AS bigint) - 3) * (:k - 1) + 2 * (p.n - 1) - 1)
      / NULLIF(2 * (p.n - 1), 0) <= :k - 1
    AND ((2 * CAST(games AS bigint) - 3) * (:k - 1) + 2 * (p.n - 1) - 1)
      / NULLIF(2 * (p.n - 1), 0) * (2 * (p.n - 1)) < (2 * CAST(games AS bigint) - 1) * (:k - 1)))"""
"""Whether game ``games`` is one of :func:`sample_games`' ``:k`` evenly spaced numbers of a
history of ``p.n`` games, by arithmetic (:data:`SAMPLED_PG`)."""

SAMPLED_PG = text(f"""
SELECT bot_id, array_agg(games ORDER BY games), array_agg(after ORDER BY games),
       min(before) FILTER (WHERE games = 1)
FROM (
  SELECT DISTINCT ON (p.bot_id, e.games) p.bot_id, e.games, e.before, e.after
  FROM unnest(CAST(:bots AS integer[]), CAST(:games AS integer[])) AS p(bot_id, n)
  CROSS JOIN LATERAL (
      SELECT games, before, after, id FROM rating_events
      WHERE p.n <= :dense AND bot_id = p.bot_id AND family = :family AND games <= p.n
        AND {SAMPLED_GAME_PG}
      UNION ALL
      SELECT games, before, after, id FROM rating_events
      WHERE p.n > :dense AND bot_id = p.bot_id AND family = :family
        AND games = ANY(ARRAY(SELECT CAST(1 + (2 * i * (p.n - 1) + :k - 1) / (2 * (:k - 1))
                                          AS integer)
                              FROM generate_series(CAST(0 AS bigint), :k - 1) AS i))
  ) AS e
  ORDER BY p.bot_id, e.games, e.id DESC
) AS newest
GROUP BY bot_id
""")
"""Every line's sampled events in one statement (PostgreSQL), a row a line: its game numbers,
its ratings after them, and its rating before game 1.  The game numbers are
:func:`sample_games`' computed by the server from each bot's count of games ``n`` (only two
arrays of a chart's size are sent); the newest event of a game number is kept (``DISTINCT
ON``, by id).  Each bot is read by its index as one range or by probes (:data:`DENSE`; the
``p.n`` conditions are one-time filters per bot).

A history read as one range keeps the sampled games by arithmetic, not by looking each one
up in the list of samples (a list of ``k`` an event: 3,200 events x 199 samples for the 10M
bench's leaderboard): game ``g`` is sampled when some ``i`` in ``0 .. k - 1`` rounds to it,
``1 + round_half_up(i (n - 1) / (k - 1)) = g``, that is when the smallest ``i`` with
``i d >= (2g - 3)(k - 1)`` (``d = 2(n - 1)``; integer ceiling) is at most ``k - 1`` and
has ``i d < (2g - 1)(k - 1)``; game 1 always is (``i = 0``).  The lines come as arrays: a
row an event cost a row object each, half the client's time for 1,600 points
(tests/arena/test_ratings.py checks both against :func:`sample_games` for every ``n`` up to
600)."""


def rating_series(s: Session, family: str, games_of: Mapping[int, int],
                  points: int, *, dense: int = DENSE) -> dict[int, list[tuple[float, float]]]:
    """Each bot's rating history in ``family`` downsampled server-side: ``(games played,
    rating after them)`` at no more than ``points`` evenly spaced games (plus the starting
    rating at 0 games), whatever the length of the history.

    ``games_of`` maps each bot to its rated games in the family (``Rating.games``: the
    newest event's ``games``); the number of bots is the caller's fixed bound (a chart's
    lines).  On PostgreSQL one statement for all of them, the sample computed by the server
    (:data:`SAMPLED_PG`, ``dense``: :data:`DENSE`): the leaderboard's 8 lines of 200 points
    cost 15-21 ms as one statement a line, each sending its 199 game numbers and building
    ORM rows, and 4-5 ms so (10,000 bots, 1M matches).  Elsewhere (SQLite: in the process,
    no round trips to save) one statement a bot."""
    k = max(2, points - 1)
    out: dict[int, list[tuple[float, float]]] = {b: [] for b in games_of}
    wanted = {b: n for b, n in games_of.items() if n > 0}
    if wanted and s.get_bind().dialect.name == "postgresql":
        for bot_id, games, afters, first_before in s.connection().execute(SAMPLED_PG, {
                "bots": list(wanted), "games": list(wanted.values()), "family": family,
                "k": k, "dense": dense * k}):
            line = out[bot_id]
            if games[0] == 1:
                line.append((0.0, float(first_before)))
            line += zip(map(float, games), map(float, afters), strict=True)
        return out
    for bot_id, games in wanted.items():
        found: dict[int, tuple[float, float]] = {}
        for g, before, after in s.connection().execute(
                select(RatingEvent.games, RatingEvent.before, RatingEvent.after)
                .where(RatingEvent.bot_id == bot_id, RatingEvent.family == family,
                       RatingEvent.games.in_(sample_games(games, points - 1)))
                .order_by(RatingEvent.games, RatingEvent.id)):
            found[g] = (before, after)  # ordered by id: the newest wins
        line = out[bot_id]
        if 1 in found:
            line.append((0.0, float(found[1][0])))
        line += [(float(g), float(found[g][1])) for g in sorted(found)]
    return out
