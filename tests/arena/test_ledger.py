"""Group commit of finished matches (arena/jobs/ledger.py): many results in one transaction,
each stored once, ratings equal to a recompute, and a match that cannot be stored leaves the
others of its batch alone."""

from __future__ import annotations

import random
import threading

import pytest
from flask import Flask
from sqlalchemy import event, func, select

from arena.core.models import (
    Bot,
    BotVersion,
    Match,
    MatchResult,
    MatchSeat,
    Rating,
    RatingEvent,
    RatingFamily,
    utcnow,
)
from arena.core.storage import get_db
from arena.jobs import bodies
from arena.jobs.ledger import Batcher
from arena.jobs.result_spool import FinishedResult
from arena.play.ratings import check
from referee import find_ruleset
from referee.runner.match import run_match
from referee.wire.players import LocalPlayer

from .conftest import both_backends


def played(seed: int) -> FinishedResult:
    rec = run_match(find_ruleset("standard"),
                    [LocalPlayer(lambda r: {"move": r["legal_moves"][0]["id"]}, name=f"p{i}")
                     for i in range(4)], seed=seed, deals=1)
    return FinishedResult.of(rec)


def running_matches(app: Flask, n: int, bots: int = 6) -> list[int]:
    """``n`` rated matches running under the lease ``token-<id>``, among ``bots`` bots."""
    rng = random.Random(3)
    with get_db(app).begin() as s:
        ids = []
        for i in range(bots):
            b = Bot(name=f"ledger-{i}", url=f"http://x/{i}", token_hash="0" * 64,
                    check_state="passed")
            s.add(b)
            s.flush()
            s.add(BotVersion(bot_id=b.id, version=1, url=b.url))
            ids.append(b.id)
        s.flush()
        versions = {v.bot_id: v.id for v in s.scalars(select(BotVersion))}
        matches = []
        for n_ in range(n):
            m = Match(kind="admin", state="running", ruleset="standard", family="classic",
                      deals=1, seed=n_, limits={}, rated=True, created_at=utcnow(),
                      attempts=1, enqueues=1, error="")
            s.add(m)
            s.flush()
            m.lease_token = f"token-{m.id}"
            for seat, bot_id in enumerate(rng.sample(ids, 4)):
                s.add(MatchSeat(match_id=m.id, seat=seat, bot_id=bot_id,
                                bot_version_id=versions[bot_id]))
            matches.append(m.id)
    return matches


def stored(app: Flask) -> tuple[int, int]:
    with get_db(app).begin() as s:
        results = s.scalar(select(func.count()).select_from(MatchResult))
        events = s.scalar(select(func.count()).select_from(RatingEvent))
    return int(results or 0), int(events or 0)


@both_backends
def test_concurrent_finishes_share_transactions_and_ratings_equal_a_recompute(
        app: Flask) -> None:
    matches = running_matches(app, 24)
    results = {m: played(m) for m in matches}
    together: list[int] = []
    real = bodies._store_together

    def counting(app_: Flask, works: list[tuple[int, str, FinishedResult]]) -> list[str]:
        together.append(len(works))
        return real(app_, works)

    outcomes: dict[int, str] = {}
    barrier = threading.Barrier(len(matches))

    def finish(m: int) -> None:
        with app.app_context():
            barrier.wait()
            outcomes[m] = bodies.finish(app, m, f"token-{m}", results[m])

    bodies._store_together = counting  # type: ignore[assignment]
    try:
        threads = [threading.Thread(target=finish, args=(m,)) for m in matches]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        bodies._store_together = real  # type: ignore[assignment]
    assert set(outcomes.values()) == {"finished"} and len(outcomes) == len(matches)
    assert sum(together) == len(matches)
    assert stored(app) == (len(matches), 4 * len(matches))
    with get_db(app).begin() as s:
        assert check(s, "classic", initial=1500.0, k=32.0) == []
        assert sum(r.games for r in s.scalars(select(Rating))) == 4 * len(matches)
        assert all(m.state == "finished" for m in s.scalars(select(Match)))
    # Finished again (a second delivery): nothing more is stored.
    with app.app_context():
        assert bodies.finish(app, matches[0], f"token-{matches[0]}", results[matches[0]]) == (
            "lease lost before finishing")
    assert stored(app) == (len(matches), 4 * len(matches))


@both_backends
def test_a_lost_lease_in_a_batch_writes_nothing_for_its_match(app: Flask) -> None:
    a, b, c = running_matches(app, 3)
    with app.app_context():
        outcomes = bodies.store_batch(app, [(a, f"token-{a}", played(1)),
                                            (b, "not-the-token", played(2)),
                                            (c, f"token-{c}", played(3))])
    assert outcomes == ["finished", "lease lost before finishing", "finished"]
    with get_db(app).begin() as s:
        assert s.get(Match, b).state == "running"  # type: ignore[union-attr]
        assert s.scalar(select(func.count()).select_from(MatchSeat)
                        .where(MatchSeat.match_id == b, MatchSeat.rank.is_not(None))) == 0
        assert check(s, "classic", initial=1500.0, k=32.0) == []
    assert stored(app) == (2, 8)


@both_backends
def test_a_refused_result_is_stored_alone_and_undone_alone(app: Flask) -> None:
    a, b = running_matches(app, 2)
    with get_db(app).begin() as s:  # b's result is there already (another attempt's)
        s.add(MatchResult(match_id=b, family="classic", totals={}, log_gz=b"",
                          created_at=utcnow()))
    with app.app_context():
        outcomes = bodies.store_batch(app, [(a, f"token-{a}", played(1)),
                                            (b, f"token-{b}", played(2))])
    assert outcomes == ["finished", "duplicate result refused"]
    with get_db(app).begin() as s:
        assert s.get(Match, a).state == "finished"  # type: ignore[union-attr]
        assert s.get(Match, b).state == "running"  # type: ignore[union-attr]
        assert s.scalar(select(func.count()).select_from(RatingEvent)
                        .where(RatingEvent.match_id == b)) == 0
    assert stored(app) == (2, 4)


def test_a_failed_batch_is_every_waiting_finishs_error() -> None:
    release = threading.Event()
    calls: list[list[int]] = []

    def store(works: list[int]) -> list[str]:
        calls.append(list(works))
        if len(calls) == 1:
            release.wait(10)  # the first batch (one finish) stores while the others queue
            return ["finished"]
        raise RuntimeError("the database went away")

    batcher = Batcher(store, lambda: threading.Lock())
    out: dict[int, object] = {}

    def submit(n: int) -> None:
        try:
            out[n] = batcher.submit(n)
        except RuntimeError as exc:
            out[n] = exc

    first = threading.Thread(target=submit, args=(0,))
    first.start()
    while not calls:
        threading.Event().wait(0.01)
    others = [threading.Thread(target=submit, args=(n,)) for n in (1, 2, 3)]
    for t in others:
        t.start()
    while len(batcher._queue) < 3:
        threading.Event().wait(0.01)
    release.set()
    for t in [first, *others]:
        t.join(10)
    assert out[0] == "finished"
    assert calls[1] == [1, 2, 3]
    assert all(isinstance(out[n], RuntimeError) for n in (1, 2, 3))


@pytest.mark.parametrize("n", [1, 40])
def test_a_batch_holds_at_most_max_batch(n: int) -> None:
    from arena.jobs.ledger import MAX_BATCH

    sizes: list[int] = []
    gate = threading.Event()

    def store(works: list[int]) -> list[str]:
        sizes.append(len(works))
        gate.wait(10)
        return ["finished"] * len(works)

    batcher = Batcher(store, lambda: threading.Lock())
    threads = [threading.Thread(target=batcher.submit, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    while sum(len(q) for q in [batcher._queue]) + sum(sizes) < n:
        threading.Event().wait(0.01)
    gate.set()
    for t in threads:
        t.join(10)
    assert sum(sizes) == n and max(sizes) <= MAX_BATCH


@both_backends
def test_a_match_whose_store_fails_fails_alone(app: Flask) -> None:
    a, b = running_matches(app, 2)
    with get_db(app).begin() as s:  # b's data does not fit its result: a seat is missing
        s.execute(MatchSeat.__table__.delete().where(MatchSeat.match_id == b,
                                                     MatchSeat.seat == 3))
    with app.app_context():
        outcomes = bodies.store_batch(app, [(a, f"token-{a}", played(1)),
                                            (b, f"token-{b}", played(2))])
    assert outcomes[0] == "finished" and isinstance(outcomes[1], KeyError)
    with get_db(app).begin() as s:
        assert s.get(Match, a).state == "finished"  # type: ignore[union-attr]
        assert s.get(Match, b).state == "running"  # type: ignore[union-attr]
        assert check(s, "classic", initial=1500.0, k=32.0) == []
    assert stored(app) == (1, 4)


@both_backends
@pytest.mark.parametrize("n", [1, 6])
def test_the_lock_is_held_for_a_few_statements_whatever_the_batch(app: Flask, n: int) -> None:
    """No two transactions of a family overlap from its ledger lock to their commit, so every
    statement in between is a round trip the whole family waits for (on a loaded host, one
    wait for the server and one for a CPU each): the lock and the family's counter are one
    statement, then four for the whole batch (the results, the rating rows read, every moved
    row written, the events), then the commit.  The unit of work used to take eight.  A
    batch that rates a bot for the first time in the family (here: every bot is new) adds
    one, the leaderboard's listing count (arena.core.counts)."""
    ids = running_matches(app, n)
    with get_db(app).begin() as s:  # not the family's first result (that one creates its row)
        s.add(RatingFamily(name="classic", results=3))
    statements: list[str] = []

    def executed(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(" ".join(statement.split()).lower())

    engine = get_db(app).engine
    event.listen(engine, "before_cursor_execute", executed)
    try:
        with app.app_context():
            outcomes = bodies.store_batch(app, [(m, f"token-{m}", played(i))
                                                for i, m in enumerate(ids)])
    finally:
        event.remove(engine, "before_cursor_execute", executed)
    assert outcomes == ["finished"] * n
    lock = next(i for i, q in enumerate(statements) if "rating_families" in q)
    assert statements[lock].startswith("update rating_families"), statements[lock]
    held = [q for q in statements[lock + 1:] if not q.startswith(("commit", "release"))]
    counting = [q for q in held if "listing_counts" in q]
    assert len(counting) == 1 and len(held) == 5, held
    with get_db(app).begin() as s:
        assert check(s, "classic", initial=1500.0, k=32.0) == []
        assert s.get(RatingFamily, "classic").results == 3 + n  # type: ignore[union-attr]
    assert stored(app) == (n, 4 * n)
