"""The listings' maintained counts (arena/core/counts.py, migration 0014): ``GET /api/bots``
and ``GET /api/ratings`` answer their ``total`` from ``listing_counts``, which every write of
bots and ratings moves in its own transaction, so it always equals ``count(*)``."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select, text, update

from arena.core import counts
from arena.core.models import Bot, Match, MatchResult, Rating, utcnow
from arena.core.storage import get_db
from arena.jobs import bodies
from arena.ops.cli import main
from arena.play.ledger_batch import Applied, apply_batch, count_and_lock
from arena.play.ratings import Placement, apply_result, lock_family

from .conftest import admin_headers, both_backends, worker_env
from .test_ledger import played, running_matches

STATES: dict[str, dict[str, Any]] = {
    "active": {"check_state": "passed"},
    "paused": {"check_state": "passed", "owner_paused": True},
    "pending": {"check_state": "pending"},
    "rejected": {"check_state": "failed"},
    "unhealthy": {"check_state": "passed", "health_paused": True},
}


def new_bot(name: str, **columns: Any) -> Bot:
    return Bot(name=name, url=f"http://127.0.0.1:9/{name}", token_hash="0" * 64, **columns)


def drift(app: Flask) -> dict[str, tuple[int, int]]:
    with get_db(app).engine.connect() as conn:
        return counts.drift(conn)


def totals(client: FlaskClient) -> dict[str, int]:
    """``GET /api/bots``' total, unfiltered (``""``) and per status."""
    out = {"": client.get("/api/bots").get_json()["total"]}
    for status in STATES:
        out[status] = client.get(f"/api/bots?status={status}").get_json()["total"]
    return out


def truly(app: Flask) -> dict[str, int]:
    """What ``count(*)`` says the totals are (the list's own filters, counted)."""
    with get_db(app).begin() as s:
        rows = s.execute(select(*counts.STATUS_COLUMNS).where(Bot.deleted_at.is_(None))).all()
    from arena.core.models import bot_status

    statuses = [bot_status(*r) for r in rows]
    return {"": len(statuses), **{x: statuses.count(x) for x in STATES}}


@both_backends
def test_every_change_of_a_bots_status_moves_the_lists_totals(app: Flask,
                                                              client: FlaskClient) -> None:
    with get_db(app).begin() as s:
        ids = {}
        for status, columns in STATES.items():
            for i in range(2):
                b = new_bot(f"{status}-{i}", **columns)
                s.add(b)
                s.flush()
                ids[status, i] = b.id
    assert totals(client) == truly(app) == {"": 10, **dict.fromkeys(STATES, 2)}
    # A column changed on a bot loaded in an earlier transaction (its old value is loaded
    # as it is replaced: active_history), several in one flush, and a no-op change.
    with get_db(app).begin() as s:
        s.get(Bot, ids["pending", 0]).check_state = "passed"  # type: ignore[union-attr]
        s.get(Bot, ids["pending", 1]).check_state = "failed"  # type: ignore[union-attr]
        s.get(Bot, ids["active", 0]).health_paused = True  # type: ignore[union-attr]
        s.get(Bot, ids["paused", 0]).owner_paused = True  # type: ignore[union-attr]
    with get_db(app).begin() as s:
        bot = s.get(Bot, ids["unhealthy", 0])
        s.expire(bot)
        bot.health_paused = False  # type: ignore[union-attr]
    assert totals(client) == truly(app) == {"": 10, "active": 3, "paused": 2, "pending": 0,
                                            "rejected": 3, "unhealthy": 2}
    # Through the API: pausing, resuming and deleting (a paused bot, then an active one).
    patch = client.patch(f"/api/bots/{ids['active', 1]}", json={"paused": True},
                         headers=admin_headers())
    assert patch.status_code == 200
    client.patch(f"/api/bots/{ids['paused', 1]}", json={"paused": False},
                 headers=admin_headers())
    for key in (("paused", 0), ("unhealthy", 0)):
        assert client.delete(f"/api/bots/{ids[key]}", headers=admin_headers()).status_code == 204
    assert totals(client) == truly(app) == {"": 8, "active": 2, "paused": 1, "pending": 0,
                                            "rejected": 3, "unhealthy": 2}
    assert drift(app) == {}


@both_backends
def test_a_rolled_back_savepoint_takes_its_counts_back(app: Flask) -> None:
    with get_db(app).begin() as s:
        s.add(new_bot("kept", check_state="passed"))
        with pytest.raises(RuntimeError), s.begin_nested():
            s.add(new_bot("undone", check_state="passed"))
            s.flush()
            raise RuntimeError("undo")
    with get_db(app).begin() as s:
        assert counts.bots_total(s) == counts.bots_total(s, "active") == 1
    assert drift(app) == {}


@both_backends
def test_a_bulk_update_through_the_session_moves_the_counts_too(app: Flask,
                                                                client: FlaskClient) -> None:
    """``session.execute(update(Bot)...)`` bypasses the flush: the statuses of the rows it
    matches are read before and after it, and a deleted bot's ratings leave its families."""
    with get_db(app).begin() as s:
        bots = [new_bot(f"bulk-{i}", check_state="passed") for i in range(5)]
        s.add_all(bots)
        s.flush()
        ids = [b.id for b in bots]
        s.add_all([Rating(bot_id=b, family="classic", rating=1500.0, games=1) for b in ids[:3]])
    with get_db(app).begin() as s:
        s.execute(update(Bot).where(Bot.id.in_(ids[:2])).values(owner_paused=True))
        s.execute(update(Bot).where(Bot.id == ids[2]).values(deleted_at=utcnow()))
        s.execute(update(Bot).values(idle_since=utcnow()))  # no status column: nothing moves
        s.execute(update(Bot).where(Bot.id == ids[3]).values({Bot.check_state: "failed"}))
    assert totals(client) == truly(app) == {"": 4, "active": 1, "paused": 2, "pending": 0,
                                            "rejected": 1, "unhealthy": 0}
    assert client.get("/api/ratings").get_json()["total"] == 2
    assert drift(app) == {}


@both_backends
def test_first_ratings_count_once_and_a_deleted_bots_leave_the_leaderboard(
        app: Flask, client: FlaskClient) -> None:
    """The ledger (a batch of plain statements) counts a bot's first rating in a family;
    a bot rated again adds nothing; a deleted bot is taken off each family it was rated
    in, and one deleted before its first rating is never counted."""
    matches = running_matches(app, 6)
    with app.app_context():
        assert bodies.store_batch(app, [(matches[0], f"token-{matches[0]}", played(0))]) == [
            "finished"]
    with get_db(app).begin() as s:
        rated = set(s.scalars(select(Rating.bot_id)))
        bot_ids = sorted(s.scalars(select(Bot.id)))
    assert client.get("/api/ratings").get_json()["total"] == len(rated)
    # Another family, through the ORM's apply_result: the flush counts its new rows.
    with get_db(app).begin() as s:
        lock_family(s, "other")
        m = Match(kind="admin", state="finished", ruleset="standard", family="other",
                  deals=1, seed=1, limits={}, rated=True)
        s.add(m)
        s.flush()
        res = MatchResult(match_id=m.id, family="other", totals={}, log_gz=b"")
        s.add(res)
        s.flush()
        apply_result(s, family="other", result_id=res.id, match_id=m.id,
                     placements=[Placement(b, i) for i, b in enumerate(bot_ids[:3])],
                     initial=1500.0, k=32.0)
    assert client.get("/api/ratings?family=other").get_json()["total"] == 3
    gone = min(rated)
    unrated = sorted(set(bot_ids) - rated)
    assert unrated
    assert client.delete(f"/api/bots/{gone}", headers=admin_headers()).status_code == 204
    for b in unrated:  # deleted before their first rating: the rest of the matches rate them
        assert client.delete(f"/api/bots/{b}", headers=admin_headers()).status_code == 204
    left = set(bot_ids[:3]) - {gone, *unrated}
    assert client.get("/api/ratings?family=other").get_json()["total"] == len(left) < 3
    with app.app_context():
        assert bodies.store_batch(app, [(m, f"token-{m}", played(i))
                                        for i, m in enumerate(matches[1:])]) == ["finished"] * 5
    with get_db(app).begin() as s:
        assert set(unrated) <= set(s.scalars(select(Rating.bot_id)))  # rated, but deleted
        listed = set(s.scalars(select(Rating.bot_id).join(Bot, Bot.id == Rating.bot_id).where(
            Rating.family == "classic", Bot.deleted_at.is_(None))))
    assert client.get("/api/ratings").get_json()["total"] == len(listed) == len(rated - {gone})
    assert drift(app) == {}


@both_backends
def test_the_check_finds_drift_and_the_repair_fixes_it(app: Flask,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """SQL that bypasses the session (an ``UPDATE`` typed in psql) moves no count: the
    check says so and exits 1, the repair rewrites the counts, and the check passes again."""
    for key, value in worker_env(app).items():
        monkeypatch.setenv(key, value)
    with get_db(app).begin() as s:
        s.add_all([new_bot(f"b{i}", check_state="passed") for i in range(3)])
    assert main(["db", "counts", "--check"]) == 0
    assert "every count equals count(*)" in capsys.readouterr().out
    with get_db(app).engine.begin() as conn:
        conn.execute(text("UPDATE bots SET owner_paused = true WHERE name = 'b0'"))
    assert drift(app) == {"bots:active": (3, 2), "bots:paused": (0, 1)}
    assert main(["db", "counts", "--check"]) == 1
    out = capsys.readouterr().out
    assert "bots:active: 3  (count(*): 2: DRIFT)" in out and "2 count(s) drifted" in out
    assert main(["db", "counts", "--repair"]) == 0
    assert "2 count(s) repaired" in capsys.readouterr().out
    assert drift(app) == {}
    assert main(["db", "counts", "--check"]) == 0
    assert main(["db", "counts"]) == 0
    assert "bots:active: 2\nbots:paused: 1" in capsys.readouterr().out


only_postgres = pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)


def _rate(app: Flask, family: str, bots: list[int], rng: random.Random) -> None:
    """A finish as the ledger does it, in a transaction of its own: the bots' rows first,
    then the family's lock and counter, the result, the ratings (a bot's first counted)."""
    with get_db(app).begin() as s:
        s.scalars(select(Bot.id).where(Bot.id.in_(bots)).order_by(Bot.id).with_for_update())
        s.execute(update(Bot).where(Bot.id.in_(bots)).values(idle_since=utcnow()))
        m = Match(kind="admin", state="finished", ruleset="standard", family=family, deals=1,
                  seed=rng.randrange(1000), limits={}, rated=True)
        s.add(m)
        s.flush()
        count_and_lock(s, family, 1)
        res = MatchResult(match_id=m.id, family=family, totals={}, log_gz=b"")
        s.add(res)
        s.flush()
        apply_batch(s, family, [Applied(res.id, m.id, [Placement(b, i) for i, b in
                                                       enumerate(bots)], 32.0)],
                    initial=1500.0, now=utcnow())


@only_postgres
def test_concurrent_adds_ratings_and_deletions_end_equal_to_count(app: Flask) -> None:
    """Threads in real transactions at once: new bots submitted and admitted, finishes
    rating bots for the first time in two families, deletions of rated and unrated bots.
    Every count equals ``count(*)`` at the end."""
    with get_db(app).begin() as s:
        pool = [new_bot(f"pool-{i}", check_state="passed") for i in range(24)]
        s.add_all(pool)
        s.flush()
        ids = [b.id for b in pool]
    doomed = set(random.Random(5).sample(ids, 6))
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def run(work: Any) -> None:
        try:
            with app.app_context():
                start.wait()
                work()
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    def adder(n: int) -> Any:
        def work() -> None:
            for i in range(8):
                with get_db(app).begin() as s:
                    b = new_bot(f"new-{n}-{i}")
                    s.add(b)
                if i % 2:
                    with get_db(app).begin() as s:
                        s.get(Bot, b.id).check_state = "passed"  # type: ignore[union-attr]
        return work

    def rater(n: int) -> Any:
        def work() -> None:
            rng = random.Random(n)
            for i in range(10):
                _rate(app, ("classic", "other")[(n + i) % 2], sorted(rng.sample(ids, 4)), rng)
        return work

    def deleter() -> None:
        for b in sorted(doomed):
            with get_db(app).begin() as s:
                s.get(Bot, b).deleted_at = utcnow()  # type: ignore[union-attr]

    threads = [threading.Thread(target=run, args=(w,)) for w in (
        adder(0), adder(1), rater(0), rater(1), rater(2), deleter)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert drift(app) == {}
    with get_db(app).begin() as s:
        assert counts.bots_total(s) == 24 + 16 - 6
        assert counts.bots_total(s, "pending") == 8
        for family in ("classic", "other"):
            listed = s.scalar(select(func.count()).select_from(Rating).join(
                Bot, Bot.id == Rating.bot_id).where(Rating.family == family,
                                                    Bot.deleted_at.is_(None)))
            assert counts.ratings_total(s, family) == listed and listed
