"""Matches: through the queue with a real worker, and the job body's idempotency."""

from __future__ import annotations

import datetime as dt
import html
import json
import random
import re
import threading

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select, update

from arena.core.models import Bot, Match, MatchResult, Rating, RatingEvent, utcnow
from arena.core.storage import get_db
from arena.jobs import bodies as jobs
from arena.play.matches import create_match, default_limits, job_timeout
from arena.play.ratings import check
from referee.runner import log as referee_log
from referee.runner.faults import plain_fault

from .brokenbot import SECRET_PATH, broken_bot
from .conftest import admin_headers, both_backends, register, wait_for


def counts(app: Flask, match_id: int) -> tuple[int, int]:
    with get_db(app).begin() as s:
        results = s.scalar(select(func.count()).select_from(MatchResult)
                           .where(MatchResult.match_id == match_id))
        events = s.scalar(select(func.count()).select_from(RatingEvent)
                          .where(RatingEvent.match_id == match_id))
    return int(results or 0), int(events or 0)


def new_match(app: Flask, bot_ids: list[int], **kw: object) -> int:
    with get_db(app).begin() as s:
        bots = [s.get(Bot, b) for b in bot_ids]
        m = create_match(s, bots=[b for b in bots if b is not None], ruleset="standard",
                         deals=int(kw.get("deals", 1)),  # type: ignore[call-overload]
                         limits=default_limits(app.config), kind="admin", seed=3)
        return m.id


@pytest.mark.drill
@both_backends
def test_a_full_match_through_the_queue(
    app: Flask, client: FlaskClient, four_bots: list[int], start_worker: object
) -> None:
    r = client.post("/api/matches", json={"bots": four_bots, "deals": 2, "seed": 11},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    match_id = r.get_json()["id"]
    assert r.get_json()["state"] == "queued"
    start_worker()  # type: ignore[operator]

    def finished() -> dict[str, object] | None:
        body = client.get(f"/api/matches/{match_id}").get_json()
        return body if body["state"] == "finished" else None

    body = wait_for(finished, 60, what="the match to finish")
    assert body["attempts"] == 1
    standings = body["standings"]
    assert sorted(s["seat"] for s in standings) == [0, 1, 2, 3]
    assert [s["rank"] for s in standings] == sorted(s["rank"] for s in standings)
    for seat in standings:
        assert seat["latency"]["calls"] > 0 and seat["latency"]["p50_ms"] is not None
        assert seat["strikes"] == 0
    assert len(body["rating_changes"]) == 4
    assert abs(sum(c["delta"] for c in body["rating_changes"])) < 0.05
    assert counts(app, match_id) == (1, 4)

    # The log replays exactly, in both forms.
    doc = client.get(f"/api/matches/{match_id}/log").get_json()
    assert referee_log.verify(doc).ok
    r = client.get(f"/api/matches/{match_id}/log?format=jsonl")
    assert r.mimetype == "application/x-ndjson"
    lines = [json.loads(x) for x in r.data.decode().splitlines()]
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "match_end"
    assert referee_log.verify(referee_log.from_lines(lines)).ok

    board = client.get("/api/ratings?family=classic").get_json()
    assert [e["rank"] for e in board["items"]] == [1, 2, 3, 4]
    assert all(e["provisional"] and e["games"] == 1 for e in board["items"])
    history = client.get(f"/api/bots/{four_bots[0]}/ratings").get_json()["items"]
    assert len(history) == 1 and history[0]["match_id"] == match_id
    assert len(client.get(f"/api/matches?bot={four_bots[0]}").get_json()["items"]) == 1
    assert len(client.get("/api/matches?state=finished").get_json()["items"]) == 1
    with get_db(app).begin() as s:
        assert check(s, "classic", initial=1500.0, k=32.0) == []


@both_backends
def test_duplicate_delivery_stores_one_result(app: Flask, four_bots: list[int]) -> None:
    match_id = new_match(app, four_bots)
    with app.app_context():
        assert jobs.play_match(match_id) == "finished"
        assert jobs.play_match(match_id) == "already finished"
    assert counts(app, match_id) == (1, 4)
    with get_db(app).begin() as s:
        assert sum(r.games for r in s.scalars(select(Rating))) == 4


@both_backends
def test_concurrent_deliveries_claim_once(app: Flask, four_bots: list[int]) -> None:
    match_id = new_match(app, four_bots)
    outcomes: list[str] = []
    barrier = threading.Barrier(3)

    def deliver() -> None:
        barrier.wait()
        outcomes.append(jobs.run_match_job(app, match_id))

    threads = [threading.Thread(target=deliver) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert outcomes.count("finished") == 1, outcomes
    assert sorted(o for o in outcomes if o != "finished") in (
        ["already finished", "already finished"],
        ["already finished", "held by another worker"],
        ["held by another worker", "held by another worker"],
    ), outcomes
    assert counts(app, match_id) == (1, 4)


@both_backends
def test_a_stale_worker_cannot_store_a_result(app: Flask, four_bots: list[int]) -> None:
    """Worker A stalls past its lease; B takes over; A's late result is refused."""
    match_id = new_match(app, four_bots)
    assert jobs.claim(app, match_id, "token-a") == "claimed"
    assert jobs.claim(app, match_id, "token-b") == "held by another worker"
    with get_db(app).begin() as s:
        s.execute(update(Match).where(Match.id == match_id)
                  .values(lease_expires_at=utcnow() - dt.timedelta(seconds=1)))
    assert jobs.claim(app, match_id, "token-b") == "claimed"

    class NoHeartbeat:
        def __init__(self, token: str) -> None:
            self.token, self.lost = token, threading.Event()

    with pytest.raises(jobs.LeaseLostError):  # A does not even start: B holds the match
        jobs.play(app, match_id, NoHeartbeat("token-a"))
    record = jobs.play(app, match_id, NoHeartbeat("token-b"))
    assert jobs.finish(app, match_id, "token-a", record) == "lease lost before finishing"
    assert counts(app, match_id) == (0, 0)
    assert jobs.finish(app, match_id, "token-b", record) == "finished"
    assert jobs.finish(app, match_id, "token-b", record) == "lease lost before finishing"
    assert counts(app, match_id) == (1, 4)
    with get_db(app).begin() as s:
        m = s.get(Match, match_id)
        assert m is not None and m.state == "finished" and m.attempts == 2


def test_attempts_are_capped(app: Flask, four_bots: list[int]) -> None:
    app.config["MATCH_MAX_ATTEMPTS"] = 1
    match_id = new_match(app, four_bots)
    assert jobs.claim(app, match_id, "a") == "claimed"
    with get_db(app).begin() as s:
        s.execute(update(Match).where(Match.id == match_id)
                  .values(lease_expires_at=utcnow() - dt.timedelta(seconds=1)))
    assert jobs.claim(app, match_id, "b") == "failed"
    with get_db(app).begin() as s:
        m = s.get(Match, match_id)
        assert m is not None and m.state == "failed" and "gave up" in m.error


def test_an_infrastructure_error_gives_the_match_back(app: Flask, four_bots: list[int],
                                                      monkeypatch: object) -> None:
    match_id = new_match(app, four_bots)

    def boom(*a: object, **k: object) -> None:
        raise RuntimeError("database went away")

    monkeypatch.setattr(jobs, "finish", boom)  # type: ignore[attr-defined]
    try:
        jobs.run_match_job(app, match_id)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the error must reach RQ, which retries the job")
    with get_db(app).begin() as s:
        m = s.get(Match, match_id)
        assert m is not None and m.state == "queued" and m.lease_token is None
        assert "database went away" in m.error
    monkeypatch.undo()  # type: ignore[attr-defined]
    assert jobs.run_match_job(app, match_id) == "finished"


def test_job_timeout_covers_the_worst_case(app: Flask, four_bots: list[int]) -> None:
    match_id = new_match(app, four_bots, deals=3)
    with get_db(app).begin() as s:
        m = s.get(Match, match_id)
        assert m is not None
        t = job_timeout(m, app.config)
    # 3 deals * 260 turns * 1 s + 4 banks * 10 s + 12 calls * 5 s + margin 120 s.
    assert t == 780 + 40 + 60 + 120


@pytest.mark.drill
@both_backends
def test_concurrent_finishes_keep_ratings_equal_to_the_recompute(
    app: Flask, client: FlaskClient, bot_urls: list[str], start_worker: object
) -> None:
    """Two workers finish overlapping matches at the same time: the family lock orders
    the rating updates, so the stored ratings equal a replay in result order."""
    from .conftest import register

    ids = [register(client, f"bot-{i}", bot_urls[i])[0] for i in range(6)]
    rng = random.Random(4)
    matches = []
    for n in range(8):
        r = client.post("/api/matches", json={"bots": rng.sample(ids, 4), "deals": 1, "seed": n},
                        headers=admin_headers())
        assert r.status_code == 202
        matches.append(r.get_json()["id"])
    start_worker()  # type: ignore[operator]
    start_worker()  # type: ignore[operator]

    def all_done() -> bool:
        return all(client.get(f"/api/matches/{m}").get_json()["state"] == "finished"
                   for m in matches)

    wait_for(all_done, 120, every_s=0.3, what="eight matches on two workers")
    with get_db(app).begin() as s:
        assert check(s, "classic", initial=1500.0, k=32.0) == []
        assert sum(r.games for r in s.scalars(select(Rating))) == 8 * 4


# --- strike details in words -------------------------------------------------------------------

EXCEPTION_TEXT = re.compile(r"\w+Error\b|Errno|\w+Exception\b|Traceback")
"""What the HTTP caller's own texts and a bot's traceback look like (class names, errno)."""


def test_strikes_read_in_words_on_every_public_channel(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str]) -> None:
    """A real match against a bot that answers 500 (a traceback), resets the connection and
    answers garbage: the match page, the match API, the replay, the log and the bot's page
    (its strikes) say what went
    wrong in words (referee.runner.faults), with no exception class name, address or URL."""
    with broken_bot() as bot:
        broken, _ = register(client, "broken", bot.url)
        others = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
        match_id = new_match(app, [broken, *others], deals=2)
        with app.app_context():
            assert jobs.play_match(match_id) == "finished"
    m = client.get(f"/api/matches/{match_id}").get_json()
    mine = [s for s in m["strikes"] if s["seat"] == 0]
    words = {s["reason"]: s["detail"] for s in mine}
    assert words == {"http_status": "answered HTTP 500; a 200 with a JSON object is expected",
                     "connection": plain_fault("connection"), "not_json": plain_fault("not_json")}
    assert words["connection"].startswith("no HTTP answer")
    page = client.get(f"/matches/{match_id}").get_data(as_text=True)
    for sentence in words.values():
        assert html.escape(sentence, quote=True) in page or sentence in page, sentence
    replay = client.get(f"/matches/{match_id}/replay.json").get_json()
    turns = [t for d in replay["deals"] for t in d["turns"] if t["fault"] in words]
    assert turns and all(t["detail"] == words[t["fault"]] for t in turns)
    log = client.get(f"/api/matches/{match_id}/log").get_data(as_text=True)
    assert referee_log.verify(json.loads(log)).ok
    bot_page = client.get(f"/bots/{broken}").get_data(as_text=True)  # its strikes table
    assert html.escape(words["connection"], quote=True) in bot_page
    for text in (json.dumps(m), page, json.dumps(replay), log, bot_page):
        assert not EXCEPTION_TEXT.search(text), EXCEPTION_TEXT.search(text)
        assert SECRET_PATH not in text and "127.0.0.1" not in text


@both_backends
def test_a_match_claimed_as_the_database_goes_away_is_given_back_once_it_answers(
    app: Flask, four_bots: list[int], monkeypatch: object,
) -> None:
    """Found by the PostgreSQL failover drill: a job that had claimed its match when the
    primary died failed reading the table, and left the match ``running`` under a lease
    nobody renewed: RQ's retry found it held, and it waited ``LEASE_S`` for the reconciler.
    Now the claim is given back as soon as the database answers again (the give-back is
    tried until then), and the retry plays it."""
    from sqlalchemy.exc import OperationalError

    match_id = new_match(app, four_bots)
    real_give_back = jobs.give_back
    tries: list[int] = []

    def table_gone(*a: object, **k: object) -> None:
        raise OperationalError("SELECT", {}, Exception("server closed the connection"))

    def give_back_when_back(*a: object, **k: object) -> None:
        tries.append(1)
        if len(tries) < 3:  # the database answers again at the third try
            raise OperationalError("UPDATE", {}, Exception("connection refused"))
        real_give_back(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(jobs, "load_table", table_gone)  # type: ignore[attr-defined]
    monkeypatch.setattr(jobs, "give_back", give_back_when_back)  # type: ignore[attr-defined]
    with pytest.raises(OperationalError):
        jobs.run_match_job(app, match_id)
    assert len(tries) == 3
    with get_db(app).begin() as s:
        m = s.get(Match, match_id)
        assert m is not None and m.state == "queued" and m.lease_token is None
    monkeypatch.undo()  # type: ignore[attr-defined]
    assert jobs.run_match_job(app, match_id) == "finished"  # RQ's retry, at once


@both_backends
def test_a_claim_whose_answer_was_lost_is_given_back_once_the_database_answers(
    app: Flask, four_bots: list[int], monkeypatch: object,
) -> None:
    """Found by the PostgreSQL failover drill: a claim that committed as the primary died,
    its answer lost with the connection, left the match held under the job's token with no
    lease renewed; RQ's retry found it held and it waited ``LEASE_S``.  Now the job gives
    back whatever it holds once the database answers, and the retry plays it."""
    from sqlalchemy.exc import OperationalError

    match_id = new_match(app, four_bots)
    real_claim = jobs.claim

    def committed_but_unheard(*a: object, **k: object) -> str:
        real_claim(*a, **k)  # type: ignore[arg-type]
        raise OperationalError("COMMIT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(jobs, "claim", committed_but_unheard)  # type: ignore[attr-defined]
    with pytest.raises(OperationalError):
        jobs.run_match_job(app, match_id)
    with get_db(app).begin() as s:
        m = s.get(Match, match_id)
        assert m is not None and m.state == "queued" and m.lease_token is None
    monkeypatch.undo()  # type: ignore[attr-defined]
    assert jobs.run_match_job(app, match_id) == "finished"  # RQ's retry, at once
