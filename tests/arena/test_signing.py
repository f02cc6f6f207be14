"""Per-bot signing secrets: issued once, derived (never stored), rotatable, and used to sign
every request of real matches and health checks against real SDK bots that verify them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, text

from arena.core.models import Bot, HealthCheck, MatchResult, MatchSeat
from arena.core.signing import derive_secret, signing_key
from arena.core.storage import get_db
from arena.jobs import bodies as jobs
from sample_bots import greedy_bot
from sample_bots.sdk import BotServer, parse_secrets, serve_in_thread

from .conftest import admin_headers, both_backends, wait_check


@pytest.fixture
def sdk_bots() -> Iterator[list[BotServer]]:
    servers = [serve_in_thread(greedy_bot.choose, name=f"g{i}") for i in range(4)]
    yield servers
    for s in servers:
        s.shutdown()
        s.server_close()


def register_all(client: FlaskClient, servers: list[BotServer]) -> list[dict[str, Any]]:
    out = []
    for server in servers:
        r = client.post("/api/bots", json={"name": server.info["name"], "url": server.url})
        assert r.status_code == 202, r.get_json()
        assert wait_check(client, r.get_json()["bot"]["id"])["state"] == "passed"
        out.append(r.get_json())
    return out


def play(app: Flask, client: FlaskClient, bot_ids: list[int]) -> dict[str, Any]:
    r = client.post("/api/matches", json={"bots": bot_ids, "deals": 1, "seed": 3},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    mid = r.get_json()["id"]
    with app.app_context():
        assert jobs.play_match(mid) == "finished"
    body: dict[str, Any] = client.get(f"/api/matches/{mid}").get_json()
    return body


@both_backends
def test_a_real_match_against_verifying_bots(app: Flask, client: FlaskClient,
                                             sdk_bots: list[BotServer]) -> None:
    created = register_all(client, sdk_bots)
    secrets = [c["signing_secret"] for c in created]
    assert len(set(secrets)) == 4 and all(re.fullmatch(r"[A-Za-z0-9_-]{43}", x) for x in secrets)
    # Each owner configures their bot with its secret; from now on it refuses anything else.
    for server, secret in zip(sdk_bots, secrets, strict=True):
        server.secrets = parse_secrets(secret)
    body = play(app, client, [c["bot"]["id"] for c in created])
    assert all(s["strikes"] == 0 for s in body["standings"]), body["strikes"]
    assert body["notes"] == [] and body["strikes"] == []
    # Health checks are signed too.
    with app.app_context():
        assert all(jobs.check_bot(c["bot"]["id"]) == "ok" for c in created)


@both_backends
def test_a_bot_with_the_wrong_secret_refuses_and_collects_strikes(
        app: Flask, client: FlaskClient, sdk_bots: list[BotServer]) -> None:
    created = register_all(client, sdk_bots)
    sdk_bots[0].secrets = parse_secrets("not-the-arena-secret")
    for server, c in zip(sdk_bots[1:], created[1:], strict=True):
        server.secrets = parse_secrets(c["signing_secret"])
    body = play(app, client, [c["bot"]["id"] for c in created])
    seat0 = [s for s in body["strikes"] if s["seat"] == 0]
    assert seat0 and all(s["reason"] == "http_status" and "401" in s["detail"] for s in seat0)
    assert {n["call"] for n in body["notes"] if n["seat"] == 0} == {"describe", "start", "end"}
    assert all(s["strikes"] == 0 for s in body["standings"] if s["seat"] != 0)
    with app.app_context():
        assert jobs.check_bot(created[0]["bot"]["id"]).startswith(
            "failed: GET /: HTTP error status: answered HTTP 401")


def test_rotation_changes_the_secret_for_the_next_match(
        app: Flask, client: FlaskClient, sdk_bots: list[BotServer]) -> None:
    """Without a grace period (``grace: false``, a leaked secret) the old secret is dead for
    the next match at once; the grace period itself is tested in test_signing_rotation."""
    created = register_all(client, sdk_bots)
    bot_id, token = created[0]["bot"]["id"], created[0]["token"]
    old = created[0]["signing_secret"]
    for server, c in zip(sdk_bots, created, strict=True):
        server.secrets = parse_secrets(c["signing_secret"])

    assert client.post(f"/api/bots/{bot_id}/signing-secret").status_code == 401
    other = {"Authorization": f"Bearer {created[1]['token']}"}
    assert client.post(f"/api/bots/{bot_id}/signing-secret", headers=other).status_code == 403
    r = client.post(f"/api/bots/{bot_id}/signing-secret", json={"grace": False},
                    headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    new = r.get_json()["signing_secret"]
    assert new != old and r.get_json()["signing_generation"] == 2
    assert r.get_json()["previous_secret_valid_until"] is None
    with app.app_context():
        assert new == derive_secret(signing_key(app), bot_id, 2)
        assert old == derive_secret(signing_key(app), bot_id, 1)

    # The bot still holds the old secret: the next match and check are refused...
    body = play(app, client, [c["bot"]["id"] for c in created])
    assert any(s["seat"] == 0 and "401" in s["detail"] for s in body["strikes"])
    # ...while accepting both during the switch loses nothing, and the new one alone works.
    sdk_bots[0].secrets = parse_secrets(f"{new},{old}")
    assert play(app, client, [c["bot"]["id"] for c in created])["strikes"] == []
    sdk_bots[0].secrets = parse_secrets(new)
    assert play(app, client, [c["bot"]["id"] for c in created])["strikes"] == []
    with app.app_context():
        assert jobs.check_bot(bot_id) == "ok"


def test_the_secret_is_shown_once_and_stored_nowhere(
        app: Flask, client: FlaskClient, sdk_bots: list[BotServer]) -> None:
    created = register_all(client, sdk_bots[:1])[0]
    bot_id, token, secret = created["bot"]["id"], created["token"], created["signing_secret"]
    auth = {"Authorization": f"Bearer {token}"}
    for path in (f"/api/bots/{bot_id}", f"/api/bots/{bot_id}/versions",
                 f"/api/bots/{bot_id}/health", f"/bots/{bot_id}"):
        for headers in ({}, auth, admin_headers()):
            assert secret not in client.get(path, headers=headers).get_data(as_text=True)
    # Every column of every table, as text: neither the secret nor the token is there.
    db = get_db(app)
    with db.engine.connect() as conn:
        tables = [t for t in db.engine.dialect.get_table_names(conn)
                  if t != "alembic_version"]
        dump = json.dumps([[list(map(str, row)) for row in
                            conn.execute(text(f'SELECT * FROM "{t}"'))] for t in tables])
    assert "bots" in tables and secret not in dump and token not in dump
    with get_db(app).begin() as s:
        bot = s.get(Bot, bot_id)
        assert bot is not None and bot.signing_generation == 1


def test_the_owner_rotates_on_the_bot_page(app: Flask, client: FlaskClient,
                                           sdk_bots: list[BotServer]) -> None:
    created = register_all(client, sdk_bots[:1])[0]
    bot_id, token, old = created["bot"]["id"], created["token"], created["signing_secret"]
    page = client.get(f"/bots/{bot_id}").get_data(as_text=True)
    assert "Rotate the signing secret" in page
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    path = f"/bots/{bot_id}/signing-secret"
    r = client.post(path, data={"csrf_token": csrf.group(1), "owner_token": "wrong"})
    assert r.status_code == 403 and "Owner token: wrong" in r.get_data(as_text=True)
    r = client.post(path, data={"csrf_token": "forged", "owner_token": token})
    assert r.status_code == 403
    with get_db(app).begin() as s:
        assert s.get(Bot, bot_id).signing_generation == 1  # type: ignore[union-attr]
    r = client.post(path, data={"csrf_token": csrf.group(1), "owner_token": token})
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    html = r.get_data(as_text=True)
    with app.app_context():
        new = derive_secret(signing_key(app), bot_id, 2)
    assert new in html and old not in html and token not in html
    assert new not in client.get(f"/bots/{bot_id}").get_data(as_text=True)


def test_the_web_form_shows_the_secret_once(app: Flask, client: FlaskClient,
                                            sdk_bots: list[BotServer]) -> None:
    page = client.get("/bots/new").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    r = client.post("/bots/new", data={"csrf_token": csrf.group(1), "name": "webbot",
                                       "url": sdk_bots[0].url})
    assert r.status_code == 303  # to the welcome page (tests/arena/test_welcome.py)
    r = client.get(r.headers["Location"])
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    with get_db(app).begin() as s:
        bot = s.scalar(select(Bot).where(Bot.name == "webbot"))
        assert bot is not None
        bot_id = bot.id
    with app.app_context():
        secret = derive_secret(signing_key(app), bot_id, 1)
    assert secret in r.get_data(as_text=True)
    assert secret not in client.get(f"/bots/{bot_id}").get_data(as_text=True)
    assert secret not in client.get(f"/bots/{bot_id}/welcome").get_data(as_text=True)


def test_changing_the_signing_key_changes_every_secret(app: Flask) -> None:
    with app.app_context():
        a = derive_secret(signing_key(app), 7, 1)
        app.config["SIGNING_KEY"] = "a key of its own"
        b = derive_secret(signing_key(app), 7, 1)
    assert a != b and a == derive_secret(app.config["SECRET_KEY"].encode(), 7, 1)


@pytest.mark.parametrize("v1", [True, False], ids=["SIGNATURE_V1 on", "SIGNATURE_V1 off"])
def test_requests_carry_the_signature_headers(app: Flask, client: FlaskClient,
                                              sdk_bots: list[BotServer], v1: bool) -> None:
    """What the bot receives, seen on the wire: every call is signed with the bot's secret
    (version 2, one entry), and carries version 1 exactly while SIGNATURE_V1 is on."""
    seen: list[dict[str, str]] = []
    server = sdk_bots[0]
    handler = server.RequestHandlerClass

    class Recording(handler):  # type: ignore[misc, valid-type]
        def _problem(self, body: bytes) -> Any:
            problem = super()._problem(body)
            seen.append({"path": self.path, "problem": str(problem), **{
                k: v for k, v in self.headers.items() if k.lower().startswith("x-bigtwo")}})
            return problem

    created = register_all(client, sdk_bots)
    for srv, c in zip(sdk_bots, created, strict=True):
        srv.secrets = parse_secrets(c["signing_secret"])
    server.RequestHandlerClass = Recording
    app.config["SIGNATURE_V1"] = v1
    seen.clear()
    play(app, client, [c["bot"]["id"] for c in created])
    with app.app_context():
        assert jobs.check_bot(created[0]["bot"]["id"]) == "ok"
    paths = {h["path"].split("?")[0] for h in seen}
    assert {"/", "/start", "/move", "/end"} <= paths
    assert all(h["problem"] == "None" for h in seen)
    assert all(re.fullmatch(r"v2=[0-9a-f]{64}", h["X-BigTwo-Signatures"]) for h in seen)
    assert len({h["X-BigTwo-Request-Id"] for h in seen}) == len(seen)
    assert all(("X-BigTwo-Signature" in h) is v1 for h in seen)
    with get_db(app).begin() as s:
        assert s.scalar(select(MatchResult.id)) is not None
        assert s.scalars(select(MatchSeat)).first() is not None
        assert s.scalars(select(HealthCheck)).first() is not None
