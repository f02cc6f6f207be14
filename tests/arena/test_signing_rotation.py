"""Issue 19 §4: rotating the signing secret must not bench the bot.

After a rotation the arena signs with the new and the previous secret (two ``v2=`` entries)
for SIGNING_ROTATION_GRACE_S, so a bot still running with the old secret, or restarted with
the new one, keeps answering: real SDK bots that verify every request, real matches through a
real RQ worker, on both databases.  After the grace, or with ``grace: false``, the old secret
is refused.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from arena.core.models import Bot, utcnow
from arena.core.signing import derive_secret, grace_until, rotate, signing_for, signing_key
from arena.core.storage import get_db
from arena.jobs import bodies as jobs
from sample_bots import greedy_bot
from sample_bots.sdk import BotServer, parse_secrets, serve_in_thread

from .conftest import (
    admin_headers,
    both_backends,
    both_backends_drill_on_postgres,
    run_queued_jobs,
    wait_check,
)


@pytest.fixture
def sdk_bots() -> Iterator[list[BotServer]]:
    servers = [serve_in_thread(greedy_bot.choose, name=f"r{i}") for i in range(4)]
    yield servers
    for s in servers:
        s.shutdown()
        s.server_close()


def register_verifying(client: FlaskClient, servers: list[BotServer]) -> list[dict[str, Any]]:
    """Register each bot, then give it its secret: from then on it refuses anything else."""
    out = []
    for server in servers:
        r = client.post("/api/bots", json={"name": server.info["name"], "url": server.url})
        assert r.status_code == 202, r.get_json()
        assert wait_check(client, r.get_json()["bot"]["id"])["state"] == "passed"
        server.secrets = parse_secrets(r.get_json()["signing_secret"])
        out.append(r.get_json())
    return out


def play_through_worker(client: FlaskClient, bot_ids: list[int]) -> dict[str, Any]:
    """A match queued as the operator queues one, played by a real RQ worker."""
    r = client.post("/api/matches", json={"bots": bot_ids, "deals": 1},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    run_queued_jobs(client.application)
    body: dict[str, Any] = client.get(f"/api/matches/{r.get_json()['id']}").get_json()
    assert body["state"] == "finished", body
    return body


def rotate_api(client: FlaskClient, bot: dict[str, Any], **body: Any) -> dict[str, Any]:
    r = client.post(f"/api/bots/{bot['bot']['id']}/signing-secret", json=body or None,
                    headers={"Authorization": f"Bearer {bot['token']}"})
    assert r.status_code == 200, r.get_json()
    answer: dict[str, Any] = r.get_json()
    return answer


def stored_bot(app: Flask, bot_id: int) -> Bot:
    with get_db(app).begin() as s:
        bot = s.get(Bot, bot_id)
        assert bot is not None
        s.expunge(bot)
        return bot


def end_the_grace(app: Flask, bot_id: int) -> None:
    """Move the rotation back past its grace period, as the clock would."""
    grace = float(app.config["SIGNING_ROTATION_GRACE_S"])
    with get_db(app).begin() as s:
        bot = s.get(Bot, bot_id)
        assert bot is not None and bot.signing_rotated_at is not None
        bot.signing_rotated_at -= dt.timedelta(seconds=grace + 1)


@both_backends_drill_on_postgres
def test_a_bot_holding_the_old_secret_keeps_playing_through_the_grace(
        app: Flask, client: FlaskClient, sdk_bots: list[BotServer]) -> None:
    created = register_verifying(client, sdk_bots)
    ids = [c["bot"]["id"] for c in created]
    old = created[0]["signing_secret"]
    before = utcnow()
    answer = rotate_api(client, created[0])
    new = answer["signing_secret"]
    assert new != old and answer["signing_generation"] == 2
    until = dt.datetime.fromisoformat(answer["previous_secret_valid_until"].replace("Z",
                                                                                    "+00:00"))
    grace = dt.timedelta(seconds=float(app.config["SIGNING_ROTATION_GRACE_S"]))
    assert before + grace <= until <= utcnow() + grace
    assert answer["signing_note"].startswith(f"Until {answer['previous_secret_valid_until']}")

    # The owner has not restarted the bot yet: it still holds only the OLD secret.
    assert sdk_bots[0].secrets == [old.encode()]
    body = play_through_worker(client, ids)
    assert body["strikes"] == [] and body["notes"] == [], body
    assert all(s["strikes"] == 0 and not s.get("forfeited") for s in body["standings"])
    with app.app_context():
        assert jobs.check_bot(ids[0]) == "ok"
    bot = stored_bot(app, ids[0])
    assert not bot.health_paused and bot.health_failures == 0
    assert client.get(f"/api/bots/{ids[0]}").get_json()["status"] == "active"

    # Restarted with the new secret alone, it answers too.
    sdk_bots[0].secrets = parse_secrets(new)
    assert play_through_worker(client, ids)["strikes"] == []

    # After the grace the old secret signs nothing: the bot that kept it is refused.
    sdk_bots[0].secrets = parse_secrets(old)
    end_the_grace(app, ids[0])
    body = play_through_worker(client, ids)
    seat0 = [s for s in body["strikes"] if s["seat"] == 0]
    assert seat0 and all(s["reason"] == "http_status" and "401" in s["detail"] for s in seat0)
    assert all(s["seat"] == 0 for s in body["strikes"])
    with app.app_context():
        verdict = jobs.check_bot(ids[0])
        assert verdict.startswith("failed: GET /: HTTP error status")
        assert "answered HTTP 401" in verdict


@both_backends
def test_without_grace_the_old_secret_stops_at_once(
        app: Flask, client: FlaskClient, sdk_bots: list[BotServer]) -> None:
    created = register_verifying(client, sdk_bots)
    answer = rotate_api(client, created[0], grace=False)
    assert answer["previous_secret_valid_until"] is None
    assert answer["signing_note"].startswith("The previous secret stopped at once")
    body = play_through_worker(client, [c["bot"]["id"] for c in created])
    assert any(s["seat"] == 0 and "401" in s["detail"] for s in body["strikes"])


def test_a_grace_rotation_refuses_bad_bodies(app: Flask, client: FlaskClient,
                                             sdk_bots: list[BotServer]) -> None:
    created = register_verifying(client, sdk_bots[:1])
    path = f"/api/bots/{created[0]['bot']['id']}/signing-secret"
    auth = {"Authorization": f"Bearer {created[0]['token']}"}
    for bad in ({"grace": "soon"}, {"grace": None}, {"other": 1}, [1]):
        r = client.post(path, json=bad, headers=auth)
        assert r.status_code == 400 and r.get_json()["error"], (bad, r.get_json())
    assert stored_bot(app, created[0]["bot"]["id"]).signing_generation == 1


def test_the_secrets_in_force(app: Flask) -> None:
    """Current first, the previous one during the grace only; a second rotation within a
    grace keeps only the secret it replaced; version 1 follows SIGNATURE_V1."""
    bot = Bot(id=7, signing_generation=1)
    t0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    with app.app_context():
        key = signing_key(app)

        def gen(n: int) -> bytes:
            return derive_secret(key, 7, n).encode()

        assert signing_for(app, bot, t0).secrets == (gen(1),)
        rotate(app, bot, now=t0)
        grace = dt.timedelta(seconds=float(app.config["SIGNING_ROTATION_GRACE_S"]))
        assert grace_until(app, bot) == t0 + grace
        assert signing_for(app, bot, t0).secrets == (gen(2), gen(1))
        assert signing_for(app, bot, t0 + grace - dt.timedelta(seconds=1)).secrets == (
            gen(2), gen(1))
        assert signing_for(app, bot, t0 + grace).secrets == (gen(2),)
        rotate(app, bot, now=t0 + dt.timedelta(minutes=5))
        assert signing_for(app, bot, t0 + dt.timedelta(minutes=6)).secrets == (gen(3), gen(2))
        rotate(app, bot, grace=False, now=t0 + dt.timedelta(minutes=7))
        assert signing_for(app, bot, t0 + dt.timedelta(minutes=8)).secrets == (gen(4),)
        assert grace_until(app, bot) is None
        rotate(app, bot, now=t0)
        app.config["SIGNING_ROTATION_GRACE_S"] = 0
        assert signing_for(app, bot, t0).secrets == (gen(5),)
        assert signing_for(app, bot, t0).legacy_v1 is True
        app.config["SIGNATURE_V1"] = False
        assert signing_for(app, bot, t0).legacy_v1 is False


def test_the_pages_say_the_grace(app: Flask, client: FlaskClient,
                                 sdk_bots: list[BotServer]) -> None:
    created = register_verifying(client, sdk_bots[:1])
    bot_id, token = created[0]["bot"]["id"], created[0]["token"]
    page = client.get(f"/bots/{bot_id}").get_data(as_text=True)
    assert "60 minutes the previous secret too" in page and 'data-test="grace"' not in page
    assert 'name="no_grace"' in page
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    path = f"/bots/{bot_id}/signing-secret"
    r = client.post(path, data={"csrf_token": csrf.group(1), "owner_token": token})
    html = r.get_data(as_text=True)
    until = grace_until(app, stored_bot(app, bot_id))
    assert until is not None
    shown = until.strftime("%Y-%m-%d %H:%M")
    assert r.status_code == 200 and 'data-test="grace"' in html and f"{shown} UTC" in html
    page = client.get(f"/bots/{bot_id}").get_data(as_text=True)
    assert 'data-test="grace"' in page and f"{shown} UTC" in page
    # A leak: no grace, said so, and the bot page no longer shows one.
    r = client.post(path, data={"csrf_token": csrf.group(1), "owner_token": token,
                                "no_grace": "1"})
    html = r.get_data(as_text=True)
    assert r.status_code == 200 and 'data-test="no-grace"' in html
    assert stored_bot(app, bot_id).signing_previous_generation is None
    assert 'data-test="grace"' not in client.get(f"/bots/{bot_id}").get_data(as_text=True)
