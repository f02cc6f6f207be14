"""Rate limits, counted in the real Redis: the (N+1)-th request of a window gets a JSON 429
with ``Retry-After``; clients, owners and classes are counted apart; ``X-Forwarded-For`` is
believed only from the configured number of trusted proxies."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis

from arena import create_app
from arena.core.rediskeys import redis_key
from arena.core.storage import get_db, upgrade

from .conftest import ADMIN, register

N = 3


@pytest.fixture
def settings(settings: dict[str, Any]) -> dict[str, Any]:
    settings.update({
        "RATE_LIMITS_ENABLED": True,
        "RATE_LIMIT_BOT_SUBMIT_PER_CLIENT": f"{N} per minute",
        "RATE_LIMIT_URL_CHANGE_PER_CLIENT": "100 per minute",
        "RATE_LIMIT_URL_CHANGE_PER_OWNER": f"{N} per minute",
        "RATE_LIMIT_DOWNLOADS_PER_CLIENT": f"{N} per minute",
        "RATE_LIMIT_PAGES_PER_CLIENT": f"{N} per minute",
        "RATE_LIMIT_ADMIN_PER_CLIENT": f"{N} per minute",
    })
    return settings


def from_addr(addr: str, **headers: str) -> dict[str, Any]:
    return {"environ_base": {"REMOTE_ADDR": addr}, "headers": headers}


def submit(client: FlaskClient, addr: str = "198.51.100.7", **headers: str) -> Any:
    # A bad name: refused before any outside call, and still counted.
    return client.post("/api/bots", json={"name": "bad name", "url": "http://x"},
                       **from_addr(addr, **headers))


def assert_429(r: Any) -> None:
    assert r.status_code == 429, (r.status_code, r.data[:200])
    assert r.mimetype == "application/json"
    err = r.get_json()["error"]
    assert err["code"] == "rate_limited"
    assert "retry in" in err["message"] and str(N) in err["message"]
    retry = int(r.headers["Retry-After"])
    assert 1 <= retry <= 60
    assert err["retry_after"] >= 1


def test_the_request_after_the_limit_gets_a_json_429_with_retry_after(
    client: FlaskClient
) -> None:
    for _ in range(N):
        r = submit(client)
        assert r.status_code == 400, r.get_json()
        assert r.headers["X-RateLimit-Limit"] == str(N)
        assert "Retry-After" not in r.headers  # only a refusal says when to come back
    assert_429(submit(client))
    assert_429(client.post("/bots/new", data={"name": "x"}, **from_addr("198.51.100.7")))
    assert client.get("/bots/new", **from_addr("198.51.100.7")).status_code == 200  # GET: free


def test_different_clients_are_counted_apart(client: FlaskClient) -> None:
    for _ in range(N):
        submit(client, "198.51.100.1")
    assert_429(submit(client, "198.51.100.1"))
    assert submit(client, "198.51.100.2").status_code == 400


def test_a_forged_x_forwarded_for_does_not_evade_the_limit(client: FlaskClient) -> None:
    # No trusted proxy (TRUSTED_PROXY_HOPS = 0): the header is the client's own words.
    for i in range(N):
        assert submit(client, "198.51.100.3", **{"X-Forwarded-For": f"10.9.9.{i}"}
                      ).status_code == 400
    assert_429(submit(client, "198.51.100.3", **{"X-Forwarded-For": "10.9.9.250"}))


def test_behind_a_trusted_proxy_the_forwarded_client_counts(
    app: Flask, settings: dict[str, Any]
) -> None:
    app = create_app({**settings, "TRUSTED_PROXY_HOPS": 1})
    client = app.test_client()
    proxy = "127.0.0.1"
    # What the client wrote itself stays on the left; the proxy appends what it saw.
    for i in range(N):
        r = submit(client, proxy, **{"X-Forwarded-For": f"10.0.0.{i}, 203.0.113.5"})
        assert r.status_code == 400
    assert_429(submit(client, proxy, **{"X-Forwarded-For": "10.0.0.99, 203.0.113.5"}))
    assert submit(client, proxy, **{"X-Forwarded-For": "203.0.113.6"}).status_code == 400
    get_db(app).dispose()


def test_ipv6_clients_count_per_64(client: FlaskClient) -> None:
    for i in range(N):
        submit(client, f"2001:db8:1:2::{i + 1}")
    assert_429(submit(client, "2001:db8:1:2:ffff::9"))
    assert submit(client, "2001:db8:1:3::1").status_code == 400
    assert submit(client, "::ffff:198.51.100.60").status_code == 400  # mapped IPv4: itself


def test_url_changes_count_per_owner_token_from_any_address(
    client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    bot_id, token = register(client, "mover", sample_bots["random"])
    auth = {"Authorization": f"Bearer {token}"}
    for i in range(N):
        r = client.patch(f"/api/bots/{bot_id}", json={"url": "http://169.254.169.254/"},
                         **from_addr(f"198.51.100.{100 + i}", **auth))
        assert r.status_code == 422  # refused by the SSRF guard, counted all the same
    r = client.patch(f"/api/bots/{bot_id}", json={"url": "http://169.254.169.254/"},
                     **from_addr("198.51.100.200", **auth))
    assert_429(r)
    # Pausing changes no URL: not counted.
    for _ in range(N + 1):
        r = client.patch(f"/api/bots/{bot_id}", json={"paused": True},
                         **from_addr("198.51.100.201", **auth))
        assert r.status_code == 200


@pytest.mark.parametrize(("method", "path", "headers", "status"), [
    ("GET", "/api/ratings", {}, 200),
    ("GET", "/leaderboard", {}, 200),
    ("GET", "/api/matches?bot=1", {}, 200),
    ("GET", "/api/matches/1/log", {}, 404),
    ("GET", "/matches/1/replay.json", {}, 404),
    ("GET", "/api/tournaments/1/archive", {}, 404),
    ("POST", "/api/matches", {"Authorization": "Bearer wrong"}, 403),
    ("POST", "/api/ladder/rounds", {"Authorization": f"Bearer {ADMIN}"}, 202),
])
def test_every_class_of_limit(client: FlaskClient, method: str, path: str,
                              headers: dict[str, str], status: int) -> None:
    for _ in range(N):
        r = client.open(path, method=method, **from_addr("198.51.100.9", **headers))
        assert r.status_code == status, r.data[:200]
    assert_429(client.open(path, method=method, **from_addr("198.51.100.9", **headers)))


def test_a_class_is_one_bucket_across_its_routes(client: FlaskClient) -> None:
    addr = from_addr("198.51.100.10")
    assert client.get("/api/ratings", **addr).status_code == 200
    assert client.get("/api/bots", **addr).status_code == 200
    assert client.get("/leaderboard", **addr).status_code == 200
    assert_429(client.get("/api/matches", **addr))
    assert client.get("/api/matches/1/log", **addr).status_code == 404  # another class


def test_counters_live_in_redis_and_are_shared_by_every_process(
    app: Flask, client: FlaskClient, settings: dict[str, Any], redis: Redis
) -> None:
    for _ in range(N):
        submit(client, "198.51.100.11")
    prefix = redis_key(settings, "limits")
    keys = [k.decode() for k in redis.scan_iter(match=f"{prefix}:*/client:198.51.100.11/*")]
    assert keys and all("RATE_LIMIT_BOT_SUBMIT_PER_CLIENT" in k for k in keys), keys
    other = create_app(settings)  # another web process of the same deployment
    upgrade(get_db(other))
    assert_429(submit(other.test_client(), "198.51.100.11"))
    get_db(other).dispose()


def test_with_redis_down_each_process_still_counts(settings: dict[str, Any]) -> None:
    app = create_app({**settings, "REDIS_URL": "redis://127.0.0.1:1/0"})
    upgrade(get_db(app))
    client = app.test_client()
    for _ in range(N):
        assert submit(client, "198.51.100.12").status_code == 400
    assert_429(submit(client, "198.51.100.12"))
    get_db(app).dispose()


def test_a_limit_that_is_not_a_limit_stops_the_start(settings: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="RATE_LIMIT_PAGES_PER_CLIENT"):
        create_app({**settings, "RATE_LIMIT_PAGES_PER_CLIENT": "lots"})


def test_limits_can_be_turned_off(settings: dict[str, Any]) -> None:
    app = create_app({**settings, "RATE_LIMITS_ENABLED": False})
    client = app.test_client()
    for _ in range(N + 2):
        assert submit(client, "198.51.100.13").status_code == 400
    get_db(app).dispose()


# --- every state-changing route is limited ------------------------------------------------------

SAFE = {"GET", "HEAD", "OPTIONS"}


def test_every_state_changing_route_counts_against_a_class(app: Flask) -> None:
    """Any method but GET, HEAD, OPTIONS on any route counts against a class that no request
    of it is exempt from: a flood of writes, even of writes that change nothing, is bounded
    per client.  A new route without one fails here."""
    from arena.web.limits import counted_methods

    unlimited = []
    for rule in app.url_map.iter_rules():
        writes = set(rule.methods or ()) - SAFE
        if not writes:
            continue
        counted = counted_methods(app.view_functions[rule.endpoint])
        if counted is not None and not writes <= counted:
            unlimited.append(f"{sorted(writes - counted)} {rule.rule}")
    assert not unlimited, f"state-changing routes without a rate limit class: {unlimited}"


def csrf_of(client: FlaskClient, path: str) -> str:
    import re

    page = client.get(path, **from_addr("198.51.100.77")).get_data(as_text=True)
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


@pytest.fixture
def owner_settings(settings: dict[str, Any]) -> dict[str, Any]:
    settings.update({"RATE_LIMIT_SIGN_IN_PER_CLIENT": f"{N} per minute",
                     "RATE_LIMIT_BOT_OWNER_PER_CLIENT": "100 per minute",
                     "RATE_LIMIT_BOT_OWNER_PER_OWNER": f"{N} per minute"})
    return settings


def test_sign_outs_and_sign_ins_are_limited(
    owner_settings: dict[str, Any], client: FlaskClient
) -> None:
    """A sign-out needs only the visitor's own CSRF token and nobody signed in: a flood of
    them is cut off per client (sign-ins share the bucket: guesses of the owner token)."""
    r = client.post("/api/bots", json={"name": "signed", "url": "http://127.0.0.1:9/s"},
                    **from_addr("198.51.100.76"))
    bot_id = r.get_json()["bot"]["id"]
    csrf = csrf_of(client, f"/bots/{bot_id}")
    out = {"data": {"csrf_token": csrf}, **from_addr("198.51.100.77")}
    for _ in range(N - 1):
        assert client.post(f"/bots/{bot_id}/owner/sign-out", **out).status_code == 303
    wrong = {"data": {"csrf_token": csrf, "owner_token": "guess"}, **from_addr("198.51.100.77")}
    assert client.post(f"/bots/{bot_id}/owner", **wrong).status_code == 403
    assert_429(client.post(f"/bots/{bot_id}/owner/sign-out", **out))
    assert_429(client.post(f"/bots/{bot_id}/owner", **wrong))
    other = {"data": {"csrf_token": csrf}, **from_addr("198.51.100.78")}
    assert client.post(f"/bots/{bot_id}/owner/sign-out", **other).status_code == 303


def test_an_owners_changes_are_limited_pausing_included(
    owner_settings: dict[str, Any], client: FlaskClient
) -> None:
    """Pausing and resuming is free of the URL-change limit but not of the owner's: each
    toggle is a real change (it empties the response cache for everyone)."""
    r = client.post("/api/bots", json={"name": "toggler", "url": "http://127.0.0.1:9/t"},
                    **from_addr("198.51.100.80"))
    bot_id, token = r.get_json()["bot"]["id"], r.get_json()["token"]
    auth = {"Authorization": f"Bearer {token}"}
    for i in range(N):
        r = client.patch(f"/api/bots/{bot_id}", json={"paused": i % 2 == 0},
                         **from_addr(f"198.51.100.{81 + i}", **auth))
        assert r.status_code == 200
    assert_429(client.patch(f"/api/bots/{bot_id}", json={"paused": False},
                            **from_addr("198.51.100.90", **auth)))
    assert_429(client.post(f"/api/bots/{bot_id}/signing-secret",
                           **from_addr("198.51.100.91", **auth)))
    assert_429(client.delete(f"/api/bots/{bot_id}", **from_addr("198.51.100.92", **auth)))
