"""Challenges on demand (issue 21 §2): an owner plays one of its bots now against chosen bots
or a random set near its rating, within per-owner and per-target limits, never against a bot
that opted out or cannot play; challenges hold only their share of the workers, so the ladder
keeps playing; rated ones move ratings once, unrated ones never."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from arena.core.models import Bot, Challenge, Match, Rating, RatingEvent
from arena.core.queue import get_queue
from arena.core.storage import get_db
from arena.jobs import bodies as jobs
from arena.ops.procs import Child
from arena.play import challenges
from arena.play.ladder import run_round

from .conftest import admin_headers, both_backends, register, run_queued_jobs, wait_for
from .test_accounts import bearer, csrf, make_token, sign_up
from .test_openapi import check_answer


@pytest.fixture(autouse=True)
def cheap_hashes(settings: dict[str, Any]) -> None:
    """Small argon2 parameters: some tests sign up accounts (as tests/arena/test_accounts.py)."""
    settings.update(ARGON2_TIME_COST=1, ARGON2_MEMORY_KIB=1024, ARGON2_PARALLELISM=1)


def bots_with_tokens(client: FlaskClient, urls: list[str], prefix: str = "b") -> list[
        tuple[int, str]]:
    """Register a bot at each URL (its check passed): (id, owner token) each."""
    return [register(client, f"{prefix}{i}", url) for i, url in enumerate(urls)]


def challenge(client: FlaskClient, token: str, bot: int, **body: Any) -> Any:
    return client.post("/api/challenges", json={"bot": bot, **body}, headers=bearer(token))


def events_of(app: Flask, match_id: int) -> int:
    with get_db(app).begin() as s:
        return int(s.scalar(select(func.count()).select_from(RatingEvent)
                            .where(RatingEvent.match_id == match_id)) or 0)


def ratings_now(app: Flask) -> dict[tuple[int, str], tuple[float, int]]:
    with get_db(app).begin() as s:
        return {(r.bot_id, r.family): (r.rating, r.games) for r in s.scalars(select(Rating))}


def queued_job_ids(app: Flask) -> list[str]:
    return list(get_queue(app).queue.job_ids)


def match_kind(app: Flask, job_id: str) -> str:
    match_id = int(job_id.split("-")[1])
    with get_db(app).begin() as s:
        kind = s.scalar(select(Match.kind).where(Match.id == match_id))
    assert kind is not None
    return kind


# --- making one, and what it plays ------------------------------------------------------------


@both_backends
def test_an_unrated_challenge_plays_now_and_moves_no_rating(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str]) -> None:
    (a, token), *others = bots_with_tokens(client, [sample_bots[n] for n in (
        "random", "greedy", "planner", "random-2")])
    doc = client.get("/api/openapi.json").get_json()
    before = ratings_now(app)
    body = check_answer(doc, client, "post", "/api/challenges", "/api/challenges", 202,
                        json={"bot": a, "opponents": [b for b, _ in others], "deals": 1},
                        headers=bearer(token))
    assert body["state"] == "queued" and body["match_id"] and not body["rated"]
    assert body["queue_position"] == 1 and body["mode"] == "chosen"
    assert [o["id"] for o in body["opponents"]] == [b for b, _ in others]
    run_queued_jobs(app)
    done = check_answer(doc, client, "get", "/api/challenges/{challenge_id}",
                        f"/api/challenges/{body['id']}", 200)
    assert done["state"] == "finished" and done["queue_position"] is None
    assert done["match_url"] == f"/matches/{body['match_id']}"
    match = client.get(f"/api/matches/{body['match_id']}").get_json()
    assert match["kind"] == "challenge" and not match["rated"] and match["standings"]
    assert [x["bot"]["id"] for x in match["seats"]] == [a] + [b for b, _ in others]
    assert events_of(app, body["match_id"]) == 0 and ratings_now(app) == before


@both_backends
def test_a_rated_challenge_moves_ratings_once_like_a_ladder_match(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str]) -> None:
    (a, token), *others = bots_with_tokens(client, [sample_bots[n] for n in (
        "random", "greedy", "planner", "random-2")])
    r = challenge(client, token, a, opponents=[b for b, _ in others], deals=1, rated=True)
    assert r.status_code == 202, r.get_json()
    match_id = r.get_json()["match_id"]
    run_queued_jobs(app)
    assert events_of(app, match_id) == 4
    after = ratings_now(app)
    assert all(after[(b, "classic")][1] == 1 for b in [a] + [b for b, _ in others])
    # A second delivery of the same job plays nothing and applies nothing again.
    with app.app_context():
        jobs.play_match(match_id)
    assert events_of(app, match_id) == 4 and ratings_now(app) == after


def test_a_random_set_near_the_rating(app: Flask, client: FlaskClient,
                                      bot_urls: list[str]) -> None:
    ids = bots_with_tokens(client, bot_urls[:6])
    (a, token) = ids[0]
    with get_db(app).begin() as s:  # ratings far apart: the two closest are bots 1 and 2
        for i, (b, _) in enumerate(ids):
            s.add(Rating(bot_id=b, family="classic", rating=1500 + 100 * i, games=5))
    app.config["CHALLENGE_NEAR_POOL"] = 3
    r = challenge(client, token, a, deals=1)
    assert r.status_code == 202, r.get_json()
    body = r.get_json()
    assert body["mode"] == "near"
    assert sorted(o["id"] for o in body["opponents"]) == sorted(b for b, _ in ids[1:4])


# --- who may challenge ----------------------------------------------------------------------


@both_backends
def test_one_account_cannot_challenge_with_anothers_bot(
        app: Flask, client: FlaskClient, bot_urls: list[str]) -> None:
    alice, mallory = app.test_client(), app.test_client()
    sign_up(alice, "alice")
    sign_up(mallory, "mallory")
    a_rw = make_token(alice, "rw", ["bots:read", "bots:write"])
    a_r = make_token(alice, "r", ["bots:read"])
    m_rw = make_token(mallory, "rw", ["bots:read", "bots:write"])
    owned = []
    for i in range(4):
        r = client.post("/api/bots", json={"name": f"alices-{i}", "url": bot_urls[i]},
                        headers=bearer(a_rw))
        assert r.status_code == 202
        owned.append(r.get_json()["bot"]["id"])
    run_queued_jobs(app)
    other, other_token = register(client, "loner", bot_urls[4])
    mine, opponents = owned[0], owned[1:]
    want = {"opponents": opponents, "deals": 1}
    assert client.post("/api/challenges", json={"bot": mine, **want}).status_code == 401
    for token in (m_rw, other_token, a_r):
        r = challenge(client, token, mine, **want)
        assert r.status_code == 403, r.get_json()
    with get_db(app).begin() as s:
        assert s.scalar(select(func.count()).select_from(Challenge)) == 0
    # The form: mallory, signed in, cannot post alice's bot either.
    r = mallory.post("/challenges/new", data={
        "bot": str(mine), "opponents": ",".join(map(str, opponents)), "deals": "1",
        "csrf_token": csrf(mallory, "/account")})
    assert r.status_code == 403
    # Alice's token, her browser, the bot's owner token and the operator may.
    assert challenge(client, a_rw, mine, **want).status_code == 202
    app.config["CHALLENGE_OPEN_PER_OWNER"] = 10
    r = alice.post("/challenges/new", data={
        "bot": str(mine), "opponents": ",".join(map(str, opponents)), "deals": "1",
        "csrf_token": csrf(alice, "/challenges/new")})
    assert r.status_code == 303 and r.headers["Location"].startswith("/challenges/")
    assert alice.get(r.headers["Location"]).status_code == 200
    r = client.post("/api/challenges", json={"bot": other, "opponents": opponents[:3]},
                    headers=admin_headers())
    assert r.status_code == 202
    r = challenge(client, other_token, other, opponents=opponents[:3], deals=1)
    assert r.status_code == 202


def test_the_form_checks_csrf(app: Flask, client: FlaskClient, bot_urls: list[str]) -> None:
    ids = bots_with_tokens(client, bot_urls[:4])
    r = client.post("/challenges/new", data={"bot": str(ids[0][0]), "csrf_token": "forged"})
    assert r.status_code == 403
    assert "expired" in r.get_data(as_text=True)


# --- whom: opt-out and health ---------------------------------------------------------------


@both_backends
def test_refusals_name_why(app: Flask, client: FlaskClient, bot_urls: list[str]) -> None:
    ids = bots_with_tokens(client, bot_urls[:6])
    (a, token), (b, b_token), (c, _), (d, d_token), (e, _), (f, f_token) = ids
    app.config["CHALLENGE_OPEN_PER_OWNER"] = 10

    def refused(opponents: list[int], status: int, code: str, **more: Any) -> str:
        r = challenge(client, token, a, opponents=opponents, deals=1, **more)
        assert r.status_code == status, r.get_json()
        assert r.get_json()["error"]["code"] == code, r.get_json()
        return str(r.get_json()["error"]["message"])

    # The owner of b opts out through the API; d is paused; f is deleted.
    r = client.patch(f"/api/bots/{b}", json={"accepts_challenges": False},
                     headers=bearer(b_token))
    assert r.status_code == 200 and r.get_json()["accepts_challenges"] is False
    assert client.patch(f"/api/bots/{d}", json={"paused": True},
                        headers=bearer(d_token)).status_code == 200
    assert client.delete(f"/api/bots/{f}", headers=bearer(f_token)).status_code == 204
    with get_db(app).begin() as s:
        bot_e = s.get(Bot, e)
        assert bot_e is not None
        bot_e.health_paused, bot_e.pause_reason = True, "3 failed checks"
    assert "opted out" in refused([b, c, 999999], 409, "opponent_opted_out")
    assert "paused" in refused([c, d, b], 409, "opponent_paused")
    assert "benched" in refused([c, e, b], 409, "opponent_unhealthy")
    assert "deleted" in refused([c, f, b], 409, "opponent_deleted")
    refused([c, 999999, b], 404, "opponent_not_found")
    refused([c], 400, "wrong_seat_count")
    refused([c, c, c], 400, "duplicate_bot")
    refused([a, c, c], 400, "duplicate_bot")
    refused([c, a, b], 400, "self_challenge")
    refused([c, b, e], 400, "unknown_ruleset", ruleset="no-such-rules")
    # Too few eligible bots for a random set (b opted out, d paused, e benched, f gone).
    r = challenge(client, token, a, deals=1)
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "no_opponents"
    # Opting back in (the form on the bot page does the same: tests/web).
    client.patch(f"/api/bots/{b}", json={"accepts_challenges": True}, headers=bearer(b_token))
    client.patch(f"/api/bots/{d}", json={"paused": False}, headers=bearer(d_token))
    r = challenge(client, token, a, opponents=[b, c, d], deals=1)
    assert r.status_code == 202, r.get_json()
    # An unhealthy challenger may not challenge.
    r = challenge(client, bearer_token_of(ids, e), e, opponents=[b, c, d], deals=1)
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "bot_not_active"


def bearer_token_of(ids: list[tuple[int, str]], bot_id: int) -> str:
    return dict(ids)[bot_id]


def test_a_waiting_challenge_whose_opponent_left_is_refused_at_its_turn(
        app: Flask, client: FlaskClient, bot_urls: list[str]) -> None:
    app.config["CHALLENGE_SLOTS"] = 1
    ids = bots_with_tokens(client, bot_urls[:8])
    first = challenge(client, ids[0][1], ids[0][0], opponents=[b for b, _ in ids[1:4]], deals=1)
    second = challenge(client, ids[4][1], ids[4][0], opponents=[b for b, _ in ids[5:8]],
                       deals=1)
    assert first.get_json()["state"] == "queued"
    assert second.get_json()["state"] == "waiting"
    client.patch(f"/api/bots/{ids[5][0]}", json={"accepts_challenges": False},
                 headers=bearer(ids[5][1]))
    run_queued_jobs(app)  # the first plays; its end starts the line: the second is refused
    body = client.get(f"/api/challenges/{second.get_json()['id']}").get_json()
    assert body["state"] == "refused" and "does not accept challenges" in body["reason"]
    assert body["match_id"] is None


# --- limits ---------------------------------------------------------------------------------


@both_backends
def test_per_owner_limits(app: Flask, client: FlaskClient, bot_urls: list[str]) -> None:
    app.config.update(CHALLENGE_OPEN_PER_OWNER=1, CHALLENGE_PER_OWNER_PER_HOUR=2,
                      CHALLENGE_PER_TARGET_PER_HOUR=100)
    ids = bots_with_tokens(client, bot_urls[:4])
    (a, token), rest = ids[0], [b for b, _ in ids[1:]]
    assert challenge(client, token, a, opponents=rest, deals=1).status_code == 202
    r = challenge(client, token, a, opponents=rest, deals=1)  # its match is still queued
    assert r.status_code == 429, r.get_json()
    assert r.get_json()["error"]["code"] == "too_many_open_challenges"
    assert int(r.headers["Retry-After"]) > 0
    run_queued_jobs(app)
    assert challenge(client, token, a, opponents=rest, deals=1).status_code == 202
    run_queued_jobs(app)
    r = challenge(client, token, a, opponents=rest, deals=1)  # the third in an hour
    assert r.status_code == 429 and r.get_json()["error"]["code"] == "challenge_quota"
    assert 0 < int(r.headers["Retry-After"]) <= 3600
    # Another owner is not limited by this one.
    b, b_token = ids[1]
    r = challenge(client, b_token, b, opponents=[ids[0][0], *rest[1:]], deals=1)
    assert r.status_code == 202, r.get_json()


def test_per_target_limit(app: Flask, client: FlaskClient, bot_urls: list[str]) -> None:
    app.config.update(CHALLENGE_PER_TARGET_PER_HOUR=1)
    ids = bots_with_tokens(client, bot_urls[:7])
    target = ids[6][0]
    r = challenge(client, ids[0][1], ids[0][0], opponents=[ids[1][0], ids[2][0], target],
                  deals=1)
    assert r.status_code == 202
    r = challenge(client, ids[3][1], ids[3][0], opponents=[ids[4][0], ids[5][0], target],
                  deals=1)
    assert r.status_code == 429, r.get_json()
    assert r.get_json()["error"]["code"] == "opponent_challenged_too_often"
    assert f"bot {target}" in r.get_json()["error"]["message"]


def test_deals_are_bounded(app: Flask, client: FlaskClient, bot_urls: list[str]) -> None:
    app.config["CHALLENGE_MAX_DEALS"] = 5
    ids = bots_with_tokens(client, bot_urls[:4])
    r = challenge(client, ids[0][1], ids[0][0], opponents=[b for b, _ in ids[1:]], deals=6)
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "out_of_range"


def test_challenges_are_rate_limited(app: Flask, settings: dict[str, Any]) -> None:
    settings.update(RATE_LIMITS_ENABLED=True, RATE_LIMIT_CHALLENGES_PER_CLIENT="2 per minute")
    from arena import create_app

    limited_app = create_app(settings)
    c = limited_app.test_client()
    codes = [c.post("/api/challenges", json={"bot": 1}).status_code for _ in range(3)]
    assert 429 not in codes[:2] and codes[2] == 429


# --- the share of the workers ---------------------------------------------------------------


def test_the_slots_follow_the_share(app: Flask) -> None:
    app.config.update(CHALLENGE_SLOTS=0, CHALLENGE_SHARE=0.25, WORKER_CONCURRENCY=10)
    assert challenges.slots(app) == 2  # no worker alive counts as one: 0.25 x 1 x 10
    app.config.update(CHALLENGE_SHARE=0.01)
    assert challenges.slots(app) == 1  # never none
    app.config.update(CHALLENGE_SLOTS=3)
    assert challenges.slots(app) == 3


@both_backends
def test_with_the_challenge_slots_full_the_ladder_still_plays(
        app: Flask, client: FlaskClient, bot_urls: list[str]) -> None:
    """One challenge slot: the first challenge's match is queued, the others wait in the
    database; a ladder round still creates and enqueues its matches, and the queue holds one
    challenge job in front of them, never more.  The worker plays the ladder, and each
    finished challenge lets the next one in."""
    app.config.update(CHALLENGE_SLOTS=1, CHALLENGE_OPEN_PER_OWNER=5,
                      CHALLENGE_PER_TARGET_PER_HOUR=10)
    ids = bots_with_tokens(client, bot_urls[:12])
    made = []
    for n in range(3):
        r = challenge(client, ids[n][1], ids[n][0],
                      opponents=[b for b, _ in ids[3 + 3 * n:6 + 3 * n]], deals=1)
        assert r.status_code == 202, r.get_json()
        made.append(r.get_json())
    assert [c["state"] for c in made] == ["queued", "waiting", "waiting"]
    assert [c["queue_position"] for c in made[1:]] == [1, 2]
    assert made[1]["slots"] == {"used": 1, "of": 1}
    ladder = run_round(app)
    assert ladder, "the ladder made no match with the challenge slots full"
    kinds = [match_kind(app, j) for j in queued_job_ids(app)]
    assert kinds.count("challenge") == 1 and kinds.count("ladder") == len(ladder)
    run_queued_jobs(app)  # the burst also plays the challenges each finish lets in
    with get_db(app).begin() as s:
        states = dict(s.execute(select(Match.id, Match.state)).all())
        assert all(states[m] == "finished" for m in ladder)
        line = s.scalars(select(Challenge).order_by(Challenge.id)).all()
        assert [c.state for c in line] == ["started"] * 3
        assert all(states[c.match_id] == "finished" for c in line if c.match_id)


def test_only_a_challenges_match_ending_starts_waiting_challenges(
        app: Flask, client: FlaskClient, bot_urls: list[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a challenge's match holds a challenge slot, so only its end asks for the waiting
    challenges (a transaction a match, for nothing, at every ladder match's end): with the
    slot full, the ladder's matches end without asking, and the challenge's end starts the
    one waiting."""
    app.config.update(CHALLENGE_SLOTS=1, CHALLENGE_OPEN_PER_OWNER=5)
    ids = bots_with_tokens(client, bot_urls[:8])
    made = [challenge(client, ids[n][1], ids[n][0], opponents=[b for b, _ in ids[
        1 + 4 * n:4 + 4 * n]], deals=1).get_json() for n in range(2)]
    assert [c["state"] for c in made] == ["queued", "waiting"]
    ladder = run_round(app)
    assert ladder
    asked: list[int] = []
    real = jobs.start_challenges

    def counted(app_: Flask, match_id: int) -> None:
        asked.append(match_id)
        real(app_, match_id)

    monkeypatch.setattr(jobs, "start_challenges", counted)
    run_queued_jobs(app)
    with get_db(app).begin() as s:
        kinds = dict(s.execute(select(Match.id, Match.kind)).all())
        states = dict(s.execute(select(Match.id, Match.state)).all())
        line = s.scalars(select(Challenge).order_by(Challenge.id)).all()
    assert all(states[m] == "finished" for m in ladder)
    assert [c.state for c in line] == ["started"] * 2
    assert sorted(asked) == sorted(c.match_id for c in line)
    assert all(kinds[m] == "challenge" for m in asked)


def test_the_clock_starts_waiting_challenges(app: Flask, client: FlaskClient,
                                             bot_urls: list[str]) -> None:
    """A slot freed without a worker's call (a crash) is filled by the clock's duty."""
    from arena.jobs.clock import Clock

    app.config.update(CHALLENGE_SLOTS=1, LADDER_ENABLED=False)
    ids = bots_with_tokens(client, bot_urls[:8])
    first = challenge(client, ids[0][1], ids[0][0], opponents=[b for b, _ in ids[1:4]],
                      deals=1).get_json()
    second = challenge(client, ids[4][1], ids[4][0], opponents=[b for b, _ in ids[5:8]],
                       deals=1).get_json()
    with get_db(app).begin() as s:
        m = s.get(Match, first["match_id"])
        assert m is not None
        m.state = "failed"
    assert "challenges" in Clock(app).tick()
    assert client.get(f"/api/challenges/{second['id']}").get_json()["state"] == "queued"


# --- end to end ---------------------------------------------------------------------------


def test_a_challenge_played_by_a_worker_process(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str],
        start_worker: Callable[[], Child]) -> None:
    (a, token), *others = bots_with_tokens(client, [sample_bots[n] for n in (
        "random", "greedy", "planner", "greedy-2")])
    r = challenge(client, token, a, opponents=[b for b, _ in others], deals=2, rated=True)
    assert r.status_code == 202, r.get_json()
    assert r.headers["Location"] == f"/challenges/{r.get_json()['id']}"
    start_worker()

    def finished() -> Any:
        body = client.get(f"/api/challenges/{r.get_json()['id']}").get_json()
        return body if body["state"] == "finished" else None

    body = wait_for(finished, 120, what="the challenge's match to finish")
    match = client.get(f"/api/matches/{body['match_id']}").get_json()
    assert match["kind"] == "challenge" and len(match["rating_changes"]) == 4
    assert all(x["latency"]["calls"] > 0 for x in match["standings"])
    page = client.get(body["url"]).get_data(as_text=True)
    assert f'href="/matches/{body["match_id"]}"' in page


@both_backends
def test_a_retried_challenge_with_its_idempotency_key_makes_one_challenge(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str]) -> None:
    """A client that lost the answer retries with the same ``Idempotency-Key``: it gets the
    first answer again and no second challenge (nor a second match) is made; the same key with
    another body is refused."""
    (a, token), *others = bots_with_tokens(client, [sample_bots[n] for n in (
        "random", "greedy", "planner", "random-2")])
    headers = {**bearer(token), "Idempotency-Key": "retry-me-1"}
    body = {"bot": a, "opponents": [b for b, _ in others], "deals": 1}
    first = client.post("/api/challenges", json=body, headers=headers)
    assert first.status_code == 202, first.get_json()
    again = client.post("/api/challenges", json=body, headers=headers)
    assert again.status_code == 202 and again.headers.get("Idempotent-Replayed") == "true"
    assert again.get_json() == first.get_json()
    other = client.post("/api/challenges", json={**body, "deals": 2}, headers=headers)
    assert other.status_code == 422, other.get_json()
    assert other.get_json()["error"]["code"] == "idempotency_key_reused"
    with get_db(app).begin() as s:
        assert s.scalar(select(func.count()).select_from(Challenge)) == 1
        assert s.scalar(select(func.count()).select_from(Match)) == 1
