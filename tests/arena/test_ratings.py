"""Multiplayer Elo: known values, invariants, and recompute == incremental."""

from __future__ import annotations

import itertools
import random

import pytest
from flask import Flask
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select

from arena.core.models import Rating, RatingEvent
from arena.core.storage import get_db
from arena.play.ratings import Placement, check, combine, elo_deltas, expected, recompute

from .conftest import both_backends


def test_two_player_match_is_classic_elo() -> None:
    assert elo_deltas([1500, 1500], [1, 2], 32) == [16.0, -16.0]
    assert elo_deltas([1500, 1500], [1, 1], 32) == [0.0, 0.0]
    # 400 points apart: the favourite expects 10/11 of a point.
    win, lose = elo_deltas([1900, 1500], [1, 2], 32)
    assert win == pytest.approx(32 * (1 - 10 / 11))
    assert lose == pytest.approx(-win)
    assert expected(1900, 1500) == pytest.approx(10 / 11)


def test_four_seat_match_from_equal_ratings() -> None:
    # From equal ratings every pair expects 1/2; K/(n-1) = 32/3 per pair.
    # Seat 0 beats all three: 3 * 1/2 * 32/3 = +16; the last loses 16; the middle +-16/3.
    d = elo_deltas([1500] * 4, [1, 2, 3, 4], 32)
    assert d == pytest.approx([16, 16 / 3, -16 / 3, -16])
    # Ties are draws between the tied seats.
    d = elo_deltas([1500] * 4, [1, 2, 2, 4], 32)
    assert d == pytest.approx([16, 0, 0, -16])


@given(
    st.lists(st.floats(min_value=800, max_value=2400), min_size=2, max_size=4).flatmap(
        lambda rs: st.tuples(
            st.just(rs), st.lists(st.integers(1, len(rs)), min_size=len(rs), max_size=len(rs))
        )
    )
)
def test_zero_sum_and_bounded(case: tuple[list[float], list[int]]) -> None:
    ratings, ranks = case
    deltas = elo_deltas(ratings, ranks, 32)
    assert sum(deltas) == pytest.approx(0, abs=1e-9)
    assert all(abs(d) <= 32 + 1e-9 for d in deltas)
    best = min(ranks)
    for d, r in zip(deltas, ranks, strict=True):
        if r == best and ranks.count(best) == 1:
            assert d > 0


def test_a_bot_in_several_seats_counts_once_with_its_best_rank() -> None:
    assert combine([Placement(7, 3), Placement(2, 2), Placement(7, 1), Placement(5, 4)]) == [
        Placement(2, 2), Placement(5, 4), Placement(7, 1)]


@both_backends
def test_incremental_ratings_equal_the_recompute(app: Flask) -> None:
    """Known results applied one by one (the finish path) equal a replay from scratch."""
    from arena.core.models import Bot, BotVersion, Match, MatchResult, MatchSeat, utcnow
    from arena.play.ratings import apply_result, lock_family

    rng = random.Random(5)
    db = get_db(app)
    with db.begin() as s:
        bots = []
        for i in range(6):
            b = Bot(name=f"b{i}", url="http://x", token_hash="0" * 64)
            s.add(b)
            s.flush()
            s.add(BotVersion(bot_id=b.id, version=1, url="http://x"))
            bots.append(b)
        s.flush()
        versions = {v.bot_id: v.id for v in s.scalars(select(BotVersion))}
        for n in range(25):
            table = rng.sample([b.id for b in bots], 4)
            ranks = [rng.randint(1, 4) for _ in table]
            m = Match(kind="admin", state="finished", ruleset="standard", family="classic",
                      deals=1, seed=n, limits={}, rated=n % 7 != 3, finished_at=utcnow())
            s.add(m)
            s.flush()
            for seat, (bot_id, rank) in enumerate(zip(table, ranks, strict=True)):
                s.add(MatchSeat(match_id=m.id, seat=seat, bot_id=bot_id,
                                bot_version_id=versions[bot_id], rank=rank))
            lock_family(s, "classic")
            res = MatchResult(match_id=m.id, family="classic", totals={}, log_gz=b"")
            s.add(res)
            s.flush()
            if m.rated:
                apply_result(s, family="classic", result_id=res.id, match_id=m.id,
                             placements=[Placement(b, r) for b, r in zip(table, ranks,
                                                                         strict=True)],
                             initial=1500.0, k=32.0)
    with db.begin() as s:
        assert check(s, "classic", initial=1500.0, k=32.0) == []
        again = recompute(s, "classic", initial=1500.0, k=32.0)
        stored = {r.bot_id: r.rating for r in s.scalars(select(Rating))}
        assert stored == again.ratings  # exactly, not approximately
        assert sum(stored.values()) == pytest.approx(1500.0 * len(stored))
        # The history chains: each event starts where the previous one of the bot ended.
        for bot_id in stored:
            events = s.scalars(select(RatingEvent).where(RatingEvent.bot_id == bot_id)
                               .order_by(RatingEvent.id)).all()
            assert events[0].before == 1500.0
            for a, b in itertools.pairwise(events):
                assert b.before == a.after
            assert events[-1].after == stored[bot_id]
        # A tampered rating is caught.
        row = s.scalars(select(Rating)).first()
        assert row is not None
        row.rating += 0.001
        s.flush()
        assert len(check(s, "classic", initial=1500.0, k=32.0)) == 1
        s.rollback()


def test_families() -> None:
    from arena.core.families import family_of

    assert family_of("standard") == family_of("taiwan") == family_of("big-two") == "classic"
    assert family_of("hong-kong") == family_of("hong-kong-two-high") == "hong-kong"
    assert family_of("singapore") == "singapore"  # no triples or flushes: other play
    assert family_of("lukang") == "lukang"
    assert family_of("three-player-stock") == "three-player-stock"
    from referee import find_ruleset

    three = find_ruleset("standard", players=3)
    assert family_of(three) == "classic/3p"
    with pytest.raises(ValueError):
        family_of("chess")


@pytest.mark.drill
@both_backends
def test_the_check_reads_one_snapshot_while_matches_finish(
    app: Flask, client: object, four_bots: list[int], start_worker: object
) -> None:
    """The drill: ``arena ratings --check`` on a busy database, results and ratings read
    at different moments, reported differences that were only matches finishing in between.
    Two real workers finish matches while the check runs again and again: no alarm."""
    from sqlalchemy import func

    from arena.core.models import Match
    from arena.ops.cli import main
    from arena.play.ratings import check_all

    from .conftest import admin_headers, wait_for

    total = 40
    for i in range(total):
        # Of 1 to 4 deals: a worker plays all its matches at once, and matches of one length
        # would all finish in one burst, maybe before the first check begins.
        r = client.post("/api/matches",  # type: ignore[attr-defined]
                        json={"bots": four_bots, "deals": 1 + i % 4, "seed": i},
                        headers=admin_headers())
        assert r.status_code == 202
    start_worker()  # type: ignore[operator]
    start_worker()  # type: ignore[operator]
    db = get_db(app)

    def done() -> int:
        with db.begin() as s:
            return int(s.scalar(select(func.count()).select_from(Match)
                                .where(Match.state == "finished")) or 0)

    wait_for(lambda: done() >= 2, 90, what="the first matches")
    # A check raced the workers when a match finished while it ran; how many checks get
    # to race depends on the machine's load (the workers may outpace a starved checker), so
    # what is required is that some did, and that none of them raised an alarm.
    raced, alarms = 0, []
    while (before := done()) < total:
        names, problems = check_all(db, initial=float(app.config["ELO_INITIAL"]),
                                    k=float(app.config["ELO_K"]))
        assert names == ["classic"]
        raced += done() > before
        alarms += problems
    assert raced >= 1, "the matches finished before the check could race them"
    assert alarms == []
    wait_for(lambda: done() == total, 90, what="every match")
    import os

    os.environ.update(DATABASE_URL=str(app.config["DATABASE_URL"]),
                      ARENA_INSTANCE_PATH=app.instance_path)
    try:
        assert main(["ratings", "--check"]) == 0
    finally:
        os.environ.pop("DATABASE_URL", None)
        os.environ.pop("ARENA_INSTANCE_PATH", None)


# --- the rating charts' points -----------------------------------------------------------


def _histories(app: Flask, lengths: list[int]) -> dict[int, int]:
    """Bots with rating histories of ``lengths`` games (each game its own finished match and
    result), the first bot's game 3 recorded twice (the newer event must win); returns each
    bot's count of games."""
    from arena.core.models import Bot, Match, MatchResult, utcnow

    rng = random.Random(11)
    games_of: dict[int, int] = {}
    with get_db(app).begin() as s:
        for i, n in enumerate(lengths):
            b = Bot(name=f"h{i}", url="http://x", token_hash="0" * 64)
            s.add(b)
            s.flush()
            rating = 1500.0
            numbers = list(range(1, n + 1)) + ([3] if i == 0 and n >= 3 else [])
            for g in numbers:
                m = Match(kind="admin", state="finished", ruleset="standard",
                          family="classic", deals=1, seed=g, limits={}, finished_at=utcnow())
                s.add(m)
                s.flush()
                res = MatchResult(match_id=m.id, family="classic", totals={}, log_gz=b"")
                s.add(res)
                s.flush()
                after = rating + rng.uniform(-20, 20)
                s.add(RatingEvent(result_id=res.id, match_id=m.id, bot_id=b.id,
                                  family="classic", before=rating, after=after, games=g))
                rating = after
            games_of[b.id] = n
    return games_of


def _reference(app: Flask, games_of: dict[int, int],
               points: int) -> dict[int, list[tuple[float, float]]]:
    """The chart's points read the slow, obvious way: every event of the bot, the newest of
    each game number, at :func:`sample_games`'s numbers."""
    from arena.play.ratings import sample_games

    out = {}
    with get_db(app).begin() as s:
        for bot_id, n in games_of.items():
            by_games = {e.games: e for e in s.scalars(
                select(RatingEvent).where(RatingEvent.bot_id == bot_id)
                .order_by(RatingEvent.id))}
            wanted = sample_games(n, points - 1)
            line = [(0.0, by_games[1].before)] if wanted else []
            out[bot_id] = line + [(float(g), by_games[g].after) for g in wanted]
    return out


@both_backends
def test_rating_series_are_the_sampled_events_in_one_statement(app: Flask) -> None:
    """Every line of a chart is its bot's events at :func:`sample_games`'s numbers, the
    newest event of a game number winning, whether PostgreSQL reads a history as one range
    or probes it (``dense``); and on PostgreSQL all the lines cost one statement."""
    from sqlalchemy import event

    from arena.play.ratings import rating_series

    games_of = _histories(app, [12, 0, 1, 2, 9, 10, 17, 40, 41])
    db = get_db(app)
    for points in (10, 11, 200):
        want = _reference(app, games_of, points)
        for dense in (0, 2, 1000):
            seen: list[str] = []

            def count(*args: object, seen: list[str] = seen) -> None:
                seen.append(str(args[2]))

            with db.begin() as s:
                event.listen(db.engine, "before_cursor_execute", count)
                try:
                    got = rating_series(s, "classic", games_of, points, dense=dense)
                finally:
                    event.remove(db.engine, "before_cursor_execute", count)
            assert got == want, (points, dense)
            if db.dialect == "postgresql":
                assert len(seen) == 1, seen


def test_postgres_samples_the_games_sample_games_does() -> None:
    """The server's arithmetic for a history read as one range (``SAMPLED_GAME_PG``) keeps
    exactly :func:`sample_games`' numbers, for every history of up to 600 games and charts
    of 2 to 200 points."""
    import psycopg

    from arena.play.ratings import SAMPLED_GAME_PG, sample_games

    from .conftest import pg_admin_or_skip

    sql = ("SELECT p.n, array_agg(games ORDER BY games) FROM generate_series(1, 600) AS p(n) "
           "CROSS JOIN LATERAL generate_series(1, p.n) AS e(games) "
           f"WHERE {SAMPLED_GAME_PG.replace(':k', '%(k)s')} GROUP BY p.n ORDER BY p.n")
    with psycopg.connect(pg_admin_or_skip()) as conn:
        for points in (3, 4, 10, 11, 60, 200):
            k = max(2, points - 1)
            got = dict(conn.execute(sql, {"k": k}).fetchall())
            assert got == {n: sample_games(n, points - 1) for n in range(1, 601)}, points


def test_sample_games_is_evenly_spaced_rounding_half_up() -> None:
    from arena.play.ratings import sample_games

    # 1 + 9 * i / 6 for i = 0..6: 1, 2.5, 4, 5.5, 7, 8.5, 10 -> halves round up.
    assert sample_games(10, 7) == [1, 3, 4, 6, 7, 9, 10]
    assert sample_games(10, 1) == [1, 10]
