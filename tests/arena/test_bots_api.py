"""Bot submission and ownership through the API, against real sample bots on loopback."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from arena.models import Bot, BotVersion, HealthCheck
from arena.storage import get_db

from .conftest import admin_headers, both_backends, closed_port_url, register


def count(app: Flask, model: type) -> int:
    with get_db(app).begin() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


@both_backends
def test_submit_checks_health_and_shows_the_token_once(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    r = client.post("/api/bots", json={"name": "greedy", "url": sample_bots["greedy"]})
    assert r.status_code == 201
    body = r.get_json()
    token = body["token"]
    assert len(token) >= 40
    assert body["bot"]["status"] == "active"
    assert body["bot"]["url"] == sample_bots["greedy"]
    assert body["bot"]["info"]["name"] == "greedy"
    assert r.headers["Location"].endswith(f"/api/bots/{body['bot']['id']}")
    # Stored hashed, never in clear.
    with get_db(app).begin() as s:
        bot = s.scalars(select(Bot)).one()
        assert token not in bot.token_hash and len(bot.token_hash) == 64
        assert s.scalar(select(func.count()).select_from(HealthCheck)) == 1
    # Public view: no token, no URL.
    public = client.get(f"/api/bots/{body['bot']['id']}").get_json()
    assert "token" not in public and "url" not in public
    mine = client.get(f"/api/bots/{body['bot']['id']}",
                      headers={"Authorization": f"Bearer {token}"}).get_json()
    assert mine["url"] == sample_bots["greedy"]


def test_name_taken_is_a_conflict(client: FlaskClient, sample_bots: dict[str, str]) -> None:
    register(client, "dup", sample_bots["random"])
    r = client.post("/api/bots", json={"name": "dup", "url": sample_bots["greedy"]})
    assert r.status_code == 409
    assert r.get_json()["error"]["code"] == "name_taken"


def test_failing_health_check_is_refused_with_the_reason(app: Flask, client: FlaskClient) -> None:
    r = client.post("/api/bots", json={"name": "ghost", "url": closed_port_url()})
    assert r.status_code == 422
    err = r.get_json()["error"]
    assert err["code"] == "health_check_failed"
    assert "connection" in err["message"]
    assert err["health"]["ok"] is False
    assert count(app, Bot) == 0 and count(app, HealthCheck) == 0


def test_a_bot_that_answers_garbage_is_refused(app: Flask, client: FlaskClient) -> None:
    from sample_bots.sdk import serve_in_thread

    server = serve_in_thread(lambda req: "not-a-move-id", name="liar")
    try:
        # The SDK falls back to a legal move when choose() answers nonsense, so this passes;
        # a bot whose GET / is wrong does not:
        assert client.post("/api/bots", json={"name": "liar", "url": server.url}
                           ).status_code == 201
    finally:
        server.shutdown()
        server.server_close()

    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"protocol": 99}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        r = client.post("/api/bots", json={"name": "wrong-protocol",
                                           "url": f"http://127.0.0.1:{httpd.server_port}"})
        assert r.status_code == 422
        assert r.get_json()["error"]["message"].startswith("health check failed: GET /")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_ssrf_guard_refuses_private_urls_unless_the_operator_allows_them(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    app.config["ALLOW_PRIVATE_BOT_URLS"] = False
    for url in (sample_bots["random"], "http://localhost:8000", "http://0x7f.1/",
                "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/",
                "ftp://example.org/", "http://user@example.org/"):
        r = client.post("/api/bots", json={"name": "sneaky", "url": url})
        assert r.status_code == 422, url
        assert r.get_json()["error"]["code"] == "url_refused", url
    # Allowing private addresses still never allows link-local (cloud metadata).
    app.config["ALLOW_PRIVATE_BOT_URLS"] = True
    r = client.post("/api/bots", json={"name": "sneaky",
                                       "url": "http://169.254.169.254/latest/meta-data/"})
    assert r.status_code == 422 and r.get_json()["error"]["code"] == "url_refused"
    assert count(app, Bot) == 0


@both_backends
def test_owner_changes_url_pauses_and_deletes(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    bot_id, token = register(client, "mine", sample_bots["random"])
    auth = {"Authorization": f"Bearer {token}"}
    r = client.patch(f"/api/bots/{bot_id}", json={"url": sample_bots["greedy"]}, headers=auth)
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["version"] == 2
    versions = client.get(f"/api/bots/{bot_id}/versions", headers=auth).get_json()["items"]
    assert [(v["version"], v["url"]) for v in versions] == [
        (1, sample_bots["random"]), (2, sample_bots["greedy"])]
    # A URL that fails its check keeps the old version.
    r = client.patch(f"/api/bots/{bot_id}", json={"url": closed_port_url()}, headers=auth)
    assert r.status_code == 422
    assert count(app, BotVersion) == 2
    r = client.patch(f"/api/bots/{bot_id}", json={"paused": True}, headers=auth)
    assert r.get_json()["status"] == "paused"
    r = client.patch(f"/api/bots/{bot_id}", json={"paused": False}, headers=auth)
    assert r.get_json()["status"] == "active"
    # The operator may act on any bot.
    r = client.patch(f"/api/bots/{bot_id}", json={"paused": True}, headers=admin_headers())
    assert r.status_code == 200
    assert client.delete(f"/api/bots/{bot_id}", headers=auth).status_code == 204
    assert client.get(f"/api/bots/{bot_id}").status_code == 404
    assert client.get("/api/bots").get_json()["total"] == 0


def test_tokens_are_required_and_checked(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    a, token_a = register(client, "alice", sample_bots["random"])
    b, _ = register(client, "bob", sample_bots["greedy"])
    cases = [
        ({}, 401),
        ({"Authorization": "Bearer "}, 401),
        ({"Authorization": f"Basic {token_a}"}, 401),
        ({"Authorization": "Bearer wrong"}, 403),
        ({"Authorization": f"Bearer {token_a}"}, 403),  # alice's token on bob's bot
    ]
    for headers, status in cases:
        assert client.patch(f"/api/bots/{b}", json={"paused": True},
                            headers=headers).status_code == status, headers
        assert client.delete(f"/api/bots/{b}", headers=headers).status_code == status
    assert client.get(f"/api/bots/{b}").get_json()["status"] == "active"
    # Admin endpoints refuse owner tokens, and everything when no ADMIN_TOKEN is set.
    r = client.post("/api/matches", json={"bots": [a, b]},
                    headers={"Authorization": f"Bearer {token_a}"})
    assert r.status_code == 403
    app.config["ADMIN_TOKEN"] = ""
    r = client.post("/api/matches", json={"bots": [a, b]}, headers=admin_headers())
    assert r.status_code == 403 and r.get_json()["error"]["code"] == "admin_disabled"


def test_lists_are_paginated(client: FlaskClient, sample_bots: dict[str, str]) -> None:
    for i in range(5):
        register(client, f"bot{i}", sample_bots["random"])
    page = client.get("/api/bots?limit=2&page=2").get_json()
    assert [b["name"] for b in page["items"]] == ["bot2", "bot3"]
    assert page["total"] == 5 and page["next_page"] == 3
    last = client.get("/api/bots?limit=2&page=3").get_json()
    assert last["next_page"] is None and len(last["items"]) == 1
    assert client.get("/api/bots?limit=1000").status_code == 400
