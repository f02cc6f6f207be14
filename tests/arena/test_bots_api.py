"""Bot submission and ownership through the API, against real sample bots on loopback."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from arena.core.models import Bot, BotVersion, HealthCheck
from arena.core.storage import get_db

from ..ports import closed_port_url
from .conftest import (
    admin_headers,
    both_backends,
    register,
    submit,
    wait_check,
)


def count(app: Flask, model: type) -> int:
    with get_db(app).begin() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


@both_backends
def test_submit_answers_at_once_and_a_worker_admits_the_bot(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    r = client.post("/api/bots", json={"name": "greedy", "url": sample_bots["greedy"]})
    assert r.status_code == 202
    body = r.get_json()
    token = body["token"]
    bot_id = body["bot"]["id"]
    assert len(token) >= 40
    assert body["bot"]["status"] == "pending" and body["bot"]["info"] == {}
    assert body["bot"]["check"]["state"] == "queued"
    assert body["bot"]["url"] == sample_bots["greedy"]
    assert r.headers["Location"].endswith(f"/api/bots/{bot_id}")
    assert body["check_url"].endswith(f"/api/bots/{bot_id}/check")
    # Pending: out of the ladder until the check has passed.
    assert client.get("/api/bots?status=pending").get_json()["total"] == 1
    assert client.get("/api/bots?status=active").get_json()["total"] == 0
    check = wait_check(client, bot_id)
    assert check["state"] == "passed" and check["purpose"] == "submit"
    assert check["move_ms"] is not None and check["bot_status"] == "active"
    bot = client.get(f"/api/bots/{bot_id}").get_json()
    assert bot["status"] == "active" and bot["info"]["name"] == "greedy"
    # Stored hashed, never in clear.
    with get_db(app).begin() as s:
        row = s.scalars(select(Bot)).one()
        assert token not in row.token_hash and len(row.token_hash) == 64
        assert s.scalar(select(func.count()).select_from(HealthCheck)) == 1
    # Public view: no token, no URL.
    public = client.get(f"/api/bots/{bot_id}").get_json()
    assert "token" not in public and "url" not in public and "pending_url" not in public
    mine = client.get(f"/api/bots/{bot_id}",
                      headers={"Authorization": f"Bearer {token}"}).get_json()
    assert mine["url"] == sample_bots["greedy"]


def test_name_taken_is_a_conflict(client: FlaskClient, sample_bots: dict[str, str]) -> None:
    register(client, "dup", sample_bots["random"])
    r = client.post("/api/bots", json={"name": "dup", "url": sample_bots["greedy"]})
    assert r.status_code == 409
    assert r.get_json()["error"]["code"] == "name_taken"


def test_failing_health_check_rejects_the_bot_with_the_reason(
    app: Flask, client: FlaskClient
) -> None:
    bot_id, _ = submit(client, "ghost", closed_port_url())
    check = wait_check(client, bot_id)
    assert check["state"] == "failed" and check["bot_status"] == "rejected"
    assert check["reason"] == "GET /: no HTTP answer from the bot URL within 3 s"
    assert check["describe_ms"] is None  # how fast it was refused is nobody's business
    assert client.get(f"/api/bots/{bot_id}").get_json()["status"] == "rejected"
    assert client.get("/api/bots?status=rejected").get_json()["total"] == 1


def test_a_bot_that_answers_garbage_is_refused(app: Flask, client: FlaskClient) -> None:
    from sample_bots.sdk import serve_in_thread

    server = serve_in_thread(lambda req: "not-a-move-id", name="liar")
    try:
        # The SDK falls back to a legal move when choose() answers nonsense, so this passes;
        # a bot whose GET / is wrong does not:
        register(client, "liar", server.url)
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
        bot_id, _ = submit(client, "wrong-protocol", f"http://127.0.0.1:{httpd.server_port}")
        check = wait_check(client, bot_id)
        assert check["state"] == "failed"
        assert check["reason"].startswith("GET /: bad description: 'protocol' must be 1")
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
    assert r.status_code == 202, r.get_json()
    body = r.get_json()
    # Until the new URL passes, the bot plays on the old one.
    assert body["bot"]["version"] == 1 and body["bot"]["url"] == sample_bots["random"]
    assert body["bot"]["pending_url"] == sample_bots["greedy"]
    assert body["bot"]["status"] == "active" and body["bot"]["check"]["purpose"] == "url_change"
    check = wait_check(client, bot_id)
    assert check["state"] == "passed" and check["purpose"] == "url_change"
    mine = client.get(f"/api/bots/{bot_id}", headers=auth).get_json()
    assert mine["version"] == 2 and mine["url"] == sample_bots["greedy"]
    assert mine["pending_url"] is None
    versions = client.get(f"/api/bots/{bot_id}/versions", headers=auth).get_json()["items"]
    assert [(v["version"], v["url"]) for v in versions] == [
        (1, sample_bots["random"]), (2, sample_bots["greedy"])]
    # A URL that fails its check keeps the old version, which went on playing meanwhile.
    r = client.patch(f"/api/bots/{bot_id}", json={"url": closed_port_url()}, headers=auth)
    assert r.status_code == 202
    check = wait_check(client, bot_id)
    assert check["state"] == "failed" and "no HTTP answer" in check["reason"]
    mine = client.get(f"/api/bots/{bot_id}", headers=auth).get_json()
    assert mine["status"] == "active" and mine["url"] == sample_bots["greedy"]
    assert mine["pending_url"] is None and mine["version"] == 2
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


def test_lists_are_paginated(client: FlaskClient, bot_urls: list[str]) -> None:
    for i in range(5):
        register(client, f"bot{i}", bot_urls[i])
    page = client.get("/api/bots?limit=2&page=2").get_json()
    assert [b["name"] for b in page["items"]] == ["bot2", "bot3"]
    assert page["total"] == 5 and page["next_page"] == 3
    last = client.get("/api/bots?limit=2&page=3").get_json()
    assert last["next_page"] is None and len(last["items"]) == 1
    assert client.get("/api/bots?limit=1000").status_code == 400
