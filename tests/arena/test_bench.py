"""Coming back (issue 19 §4): when an unhealthy bot returns, "check now", and the back-off.

A bot that passes the probe but forfeits its matches (:class:`tests.arena.test_bot_calls.
Flaky`: good answers early in a deal, garbage and unknown ids later) once came back at every
sweep and cost its opponents a match each time.  Now each match bench lasts ``HEALTH_BENCH_S``,
doubled for each earlier one within ``HEALTH_BENCH_WINDOW_S``, at most ``HEALTH_BENCH_MAX_S``;
no check returns the bot before the bench ends, and the sweep checks it as soon as it has.
Everything runs through the real paths on both databases: matches by the job body, checks by
the sweep and by a real RQ worker (``run_queued_jobs``), pages and API through the app.
Time passing is the one thing simulated: :func:`end_bench` moves the bench into the past.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from arena.bots.bench import BENCH
from arena.bots.sweep import sweep
from arena.core.models import Bot, HealthCheck, utcnow
from arena.core.queue import get_queue
from arena.core.storage import get_db
from arena.jobs import bodies as jobs
from arena.play.matches import create_match, default_limits

from .conftest import both_backends, register, run_queued_jobs
from .test_bot_calls import Flaky, csrf, flaky, sign_in  # noqa: F401

BASE, CAP = 100.0, 350.0


def benches(app: Flask, bot_id: int) -> list[HealthCheck]:
    with get_db(app).begin() as s:
        rows = list(s.scalars(select(HealthCheck).where(
            HealthCheck.bot_id == bot_id, HealthCheck.purpose == BENCH)
            .order_by(HealthCheck.id)))
        s.expunge_all()
    return rows


def length_s(row: HealthCheck) -> float:
    assert row.finished_at is not None
    return (row.finished_at - row.at).total_seconds()


def end_bench(app: Flask, bot_id: int, *, older_by_s: float = 1.0) -> None:
    """Time passes: the bot's newest bench ended ``older_by_s`` seconds ago (its start moves
    back as much, so its length stays what it was)."""
    with get_db(app).begin() as s:
        row = s.scalars(select(HealthCheck).where(HealthCheck.bot_id == bot_id,
                                                  HealthCheck.purpose == BENCH)
                        .order_by(HealthCheck.id.desc()).limit(1)).one()
        assert row.finished_at is not None
        shift = row.finished_at - utcnow() + dt.timedelta(seconds=older_by_s)
        row.at, row.finished_at = row.at - shift, row.finished_at - shift


def status(client: FlaskClient, bot_id: int) -> str:
    return str(client.get(f"/api/bots/{bot_id}").get_json()["status"])


def forfeit_a_match(app: Flask, bots: list[Bot | None]) -> None:
    """A real match the flaky bot forfeits: its first bad answer (late in a deal) is its one
    strike allowed; three deals, so that no short deal can spare it."""
    with get_db(app).begin() as s:
        seated = [s.get(Bot, b.id) for b in bots if b is not None]
        limits = dataclasses.replace(default_limits(app.config), max_strikes=1)
        match = create_match(s, bots=[b for b in seated if b is not None], ruleset="standard",
                             deals=3, limits=limits, kind="admin")
        match_id = match.id
    with app.app_context():
        assert jobs.play_match(match_id) == "finished"


@both_backends
def test_a_bot_that_fails_its_matches_is_benched_longer_each_time(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str],
        flaky: Flaky) -> None:  # noqa: F811
    app.config.update(HEALTH_BENCH_S=BASE, HEALTH_BENCH_MAX_S=CAP,
                      HEALTH_PAUSE_FORFEITS_IN_A_ROW=1, HEALTH_SWEEP_INTERVAL_S=0.0)
    bot_id, _ = register(client, "flaky", flaky.url)  # it passes the probe
    others = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
    with get_db(app).begin() as s:
        table = [s.get(Bot, b) for b in [bot_id, *others]]
        s.expunge_all()
    lengths = []
    for round_ in range(3):
        forfeit_a_match(app, table)
        assert status(client, bot_id) == "unhealthy", round_
        rows = benches(app, bot_id)
        assert len(rows) == round_ + 1
        lengths.append(length_s(rows[-1]))
        # While benched, the sweep leaves it alone however due it is, and a check that
        # passes does not return it.
        assert bot_id not in sweep(app)
        with get_db(app).begin() as s:
            bot = s.get(Bot, bot_id)
            assert bot is not None
            bot.last_health_at = utcnow() - dt.timedelta(hours=1)
        assert bot_id not in sweep(app)
        page = client.get(f"/bots/{bot_id}").get_data(as_text=True)
        assert "Benched until" in page and 'data-test="bench-event"' in page
        assert "The next automatic check is due in" in page
        health = client.get(f"/api/bots/{bot_id}/health").get_json()["items"]
        assert health[0]["purpose"] == "bench" and health[0]["until"] is not None
        # The bench ends: the next sweep checks it at once, a real check job returns it.
        end_bench(app, bot_id)
        assert bot_id in sweep(app)
        run_queued_jobs(app)
        assert status(client, bot_id) == "active", round_
    assert lengths == [BASE, 2 * BASE, CAP]  # doubled, then capped
    # Benches older than the window no longer count: the next one is short again.
    app.config["HEALTH_BENCH_WINDOW_S"] = 60.0
    with get_db(app).begin() as s:
        for row in s.scalars(select(HealthCheck).where(HealthCheck.bot_id == bot_id,
                                                       HealthCheck.purpose == BENCH)):
            row.at -= dt.timedelta(seconds=120)
    forfeit_a_match(app, table)
    assert length_s(benches(app, bot_id)[-1]) == BASE


@both_backends
def test_a_check_that_passes_during_the_bench_waits_for_its_end(
        app: Flask, client: FlaskClient, sample_bots: dict[str, str],
        flaky: Flaky) -> None:  # noqa: F811
    app.config.update(HEALTH_PAUSE_FORFEITS_IN_A_ROW=1, HEALTH_RECHECK_MIN_INTERVAL_S=0.0)
    bot_id, token = register(client, "flaky", flaky.url)
    others = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
    with get_db(app).begin() as s:
        table = [s.get(Bot, b) for b in [bot_id, *others]]
        s.expunge_all()
    forfeit_a_match(app, table)
    assert status(client, bot_id) == "unhealthy"
    auth = {"Authorization": f"Bearer {token}"}
    assert client.post(f"/api/bots/{bot_id}/check", headers=auth).status_code == 202
    run_queued_jobs(app)
    check = client.get(f"/api/bots/{bot_id}/check").get_json()
    assert check["done"] and check["state"] == "passed"
    assert status(client, bot_id) == "unhealthy"  # benched: the pass is recorded, it waits
    end_bench(app, bot_id)
    assert client.post(f"/api/bots/{bot_id}/check", headers=auth).status_code == 202
    run_queued_jobs(app)
    assert status(client, bot_id) == "active"


def test_check_now_is_the_owners_csrf_checked_and_rate_limited(
        app: Flask, client: FlaskClient, flaky: Flaky) -> None:  # noqa: F811
    bot_id, token = register(client, "flaky", flaky.url)
    stranger = app.test_client()
    r = stranger.post(f"/bots/{bot_id}/check", data={"csrf_token": csrf(stranger, bot_id)})
    assert r.status_code == 403 and "Sign in with the bot&#39;s owner token" in r.get_data(
        as_text=True)
    assert sign_in(client, bot_id, token).status_code == 303
    page = client.get(f"/bots/{bot_id}").get_data(as_text=True)
    assert 'data-test="check-now"' in page
    assert client.post(f"/bots/{bot_id}/check", data={}).status_code == 403  # no CSRF token
    r = client.post(f"/bots/{bot_id}/check", data={"csrf_token": csrf(client, bot_id)})
    assert r.status_code == 303 and r.headers["Location"].endswith(f"/bots/{bot_id}")
    with get_db(app).begin() as s:
        check = s.scalars(select(HealthCheck).where(HealthCheck.bot_id == bot_id)
                          .order_by(HealthCheck.id.desc()).limit(1)).one()
        check_id, purpose, state = check.id, check.purpose, check.state
    assert (purpose, state) == ("recheck", "queued")
    assert get_queue(app).job_status(f"check-{bot_id}-{check_id}") == "queued"  # a real job
    # Asked again at once: refused, on the page and in the API, saying when to ask again.
    r = client.post(f"/bots/{bot_id}/check", data={"csrf_token": csrf(client, bot_id)})
    assert r.status_code == 409
    assert re.search(r"ask again in \d+ (s|min)", r.get_data(as_text=True))
    r = client.post(f"/api/bots/{bot_id}/check", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 429 and r.get_json()["error"]["code"] == "too_soon"
    assert int(r.headers["Retry-After"]) >= 1
    run_queued_jobs(app)
    with get_db(app).begin() as s:
        done = s.get(HealthCheck, check_id)
        assert done is not None and done.state == "done" and done.ok
    page = client.get(f"/bots/{bot_id}").get_data(as_text=True)
    assert "asked for by the owner" in page and "Next automatic health check due" in page
