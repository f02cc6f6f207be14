"""``Idempotency-Key``: a retry gets the first response and creates nothing; another body is
a 422; a key in use is a 409; keys expire; the stored response (with the one-time owner
token) is unreadable from the database; concurrent duplicates store one row.  On SQLite and
PostgreSQL, over the test client and over a real loopback server."""

from __future__ import annotations

import base64
import datetime as dt
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select, update
from werkzeug.serving import make_server

from arena.core.models import Bot, Match, utcnow
from arena.core.storage import get_db, session
from arena.core.tournament_models import Tournament
from arena.web.errors import ApiError
from arena.web.idempotency import IdempotencyKey, _claim, _mac, commit

from .conftest import ADMIN, both_backends, wait_for

ADMIN_H = {"Authorization": f"Bearer {ADMIN}"}


def count(app: Flask, model: Any) -> int:
    with get_db(app).begin() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


def key() -> str:
    return str(uuid.uuid4())


def issued(client: FlaskClient, addr: str = "127.0.0.1") -> str:
    r = client.post("/api/idempotency-keys", environ_base={"REMOTE_ADDR": addr})
    assert r.status_code == 201 and r.headers["Cache-Control"] == "no-store", r.get_json()
    value: str = r.get_json()["key"]
    return value


@pytest.fixture
def live(app: Flask) -> Iterator[str]:
    """The app on a real threaded HTTP server on loopback."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


# --- bots: the one-time token ----------------------------------------------------------------


@both_backends
def test_a_retried_bot_submission_gets_the_same_token_and_creates_one_bot(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    k = issued(client)  # anonymous: a key the service issued (see the NAT tests below)
    body = {"name": "retrier", "url": sample_bots["random"]}
    first = client.post("/api/bots", json=body, headers={"Idempotency-Key": k})
    assert first.status_code == 202, first.get_json()
    assert "Idempotent-Replayed" not in first.headers
    again = client.post("/api/bots", json=dict(reversed(body.items())),  # key order: same body
                        headers={"Idempotency-Key": k})
    assert again.status_code == 202
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers["Cache-Control"] == "no-store"
    assert count(app, Bot) == 1 and count(app, IdempotencyKey) == 1
    token = again.get_json()["token"]
    bot_id = again.get_json()["bot"]["id"]
    r = client.patch(f"/api/bots/{bot_id}", json={"paused": True},
                     headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200  # the replayed token is the real one
    # Without a key, the same body is a new request (and the name is taken).
    assert client.post("/api/bots", json=body).status_code == 409


@both_backends
def test_the_stored_response_is_unreadable_from_the_database(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    k = "my-very-own-key-" + key()
    r = client.post("/api/bots", json={"name": "sealed", "url": sample_bots["greedy"]},
                    headers={"Idempotency-Key": k})
    token = r.get_json()["token"]
    with get_db(app).begin() as s:
        row = s.scalars(select(IdempotencyKey)).one()
        dump = repr([getattr(row, c.name) for c in IdempotencyKey.__table__.columns])
        sealed = row.response
    assert row.state == "done" and row.status == 202 and row.route == "POST /api/bots"
    assert sealed is not None
    for secret in (token, k, base64.b64encode(token.encode()).decode(), "sealed",
                   sample_bots["greedy"]):
        assert secret not in dump
        assert secret.encode() not in sealed
    # The server's secret alone does not open it: the key is part of the cipher key.
    with app.test_request_context():
        assert _mac("encrypt", "client:127.0.0.1", "POST /api/bots", k) != \
            _mac("encrypt", "client:127.0.0.1", "POST /api/bots", k + "x")


@both_backends
def test_the_same_key_with_another_body_is_a_422(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    k = key()
    assert client.post("/api/bots", json={"name": "one", "url": sample_bots["random"]},
                       headers={"Idempotency-Key": k}).status_code == 202
    r = client.post("/api/bots", json={"name": "two", "url": sample_bots["random"]},
                    headers={"Idempotency-Key": k})
    assert r.status_code == 422 and r.get_json()["error"]["code"] == "idempotency_key_reused"
    assert count(app, Bot) == 1


@both_backends
def test_keys_belong_to_their_caller_and_route(
    app: Flask, client: FlaskClient, four_bots: list[int], bot_urls: list[str]
) -> None:
    k = key()
    # Endpoints of their own: one endpoint belongs to one live bot (four_bots holds theirs).
    a = client.post("/api/bots", json={"name": "from-a", "url": bot_urls[0]},
                    headers={"Idempotency-Key": k}, environ_base={"REMOTE_ADDR": "10.1.1.1"})
    b = client.post("/api/bots", json={"name": "from-b", "url": bot_urls[1]},
                    headers={"Idempotency-Key": k}, environ_base={"REMOTE_ADDR": "10.1.1.2"})
    assert (a.status_code, b.status_code) == (202, 202)
    m = client.post("/api/matches", json={"bots": four_bots},
                    headers={**ADMIN_H, "Idempotency-Key": k})
    assert m.status_code == 202


@both_backends
def test_errors_are_not_stored_so_a_fixed_retry_runs(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    k = key()
    r = client.post("/api/bots", json={"name": "bad name", "url": sample_bots["random"]},
                    headers={"Idempotency-Key": k})
    assert r.status_code == 400
    assert count(app, IdempotencyKey) == 0
    r = client.post("/api/bots", json={"name": "good-name", "url": sample_bots["random"]},
                    headers={"Idempotency-Key": k})
    assert r.status_code == 202


@pytest.mark.parametrize("value", ["", " ", "a b", "x" * 256, "é"])
def test_a_malformed_key_is_a_400(client: FlaskClient, value: str) -> None:
    r = client.post("/api/matches", json={"bots": [1, 2, 3, 4]},
                    headers={**ADMIN_H, "Idempotency-Key": value.encode().decode("latin-1")})
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "bad_idempotency_key"


# --- matches and tournaments -------------------------------------------------------------------


@both_backends
def test_a_retried_match_creation_creates_one_match(
    app: Flask, client: FlaskClient, four_bots: list[int]
) -> None:
    k = key()
    first = client.post("/api/matches", json={"bots": four_bots, "seed": 5},
                        headers={**ADMIN_H, "Idempotency-Key": k})
    assert first.status_code == 202, first.get_json()
    for _ in range(3):
        again = client.post("/api/matches", json={"bots": four_bots, "seed": 5},
                            headers={**ADMIN_H, "Idempotency-Key": k})
        assert again.status_code == 202 and again.get_json() == first.get_json()
    assert count(app, Match) == 1


@both_backends
def test_a_retried_tournament_creation_replays_the_started_tournament(
    app: Flask, client: FlaskClient, four_bots: list[int]
) -> None:
    app.config["REDIS_URL"] = "redis://127.0.0.1:1/0"  # matches stay queued; fine here
    k = key()
    body = {"format": "round_robin", "bots": four_bots, "deals": 1, "start": True}
    first = client.post("/api/tournaments", json=body, headers={**ADMIN_H, "Idempotency-Key": k})
    assert first.status_code == 201, first.get_json()
    assert first.get_json()["state"] == "running"
    again = client.post("/api/tournaments", json=body, headers={**ADMIN_H, "Idempotency-Key": k})
    assert again.status_code == 201 and again.get_json() == first.get_json()
    assert count(app, Tournament) == 1


@both_backends
def test_keys_expire(app: Flask, client: FlaskClient, four_bots: list[int]) -> None:
    app.config["IDEMPOTENCY_TTL_S"] = 0.0
    k = key()
    for _ in range(2):
        r = client.post("/api/matches", json={"bots": four_bots},
                        headers={**ADMIN_H, "Idempotency-Key": k})
        assert r.status_code == 202 and "Idempotent-Replayed" not in r.headers
    assert count(app, Match) == 2
    assert count(app, IdempotencyKey) == 1  # the expired one was purged


# --- a key in use ------------------------------------------------------------------------------


@both_backends
def test_a_key_held_by_a_running_request_is_a_409_until_its_hold_ends(app: Flask) -> None:
    """The claim step itself, against the real database: a second claim while the first
    holds the key is refused; after the hold a retry takes it over, and the first request's
    late commit then rolls back instead of storing a second creation."""
    with app.test_request_context("/api/matches", method="POST", json={}):
        first = _claim("h" * 64, "POST /api/matches", "f" * 64, b"k" * 32)
        assert not isinstance(first, type(None)) and hasattr(first, "token")
        with pytest.raises(ApiError) as info:
            _claim("h" * 64, "POST /api/matches", "f" * 64, b"k" * 32)
        assert info.value.status == 409 and info.value.code == "idempotency_in_progress"
        with get_db(app).begin() as db:  # the first request outlived its hold
            db.execute(update(IdempotencyKey).values(
                locked_until=utcnow() - dt.timedelta(seconds=1)))
        second = _claim("h" * 64, "POST /api/matches", "f" * 64, b"k" * 32)
        assert hasattr(second, "token") and second.token != first.token  # type: ignore[union-attr]
        from flask import g, jsonify

        g.arena_idempotency = first
        s = session()
        s.add(Bot(name="late", url="http://x", token_hash="0" * 64))
        s.flush()
        with pytest.raises(ApiError) as info:
            commit(s, jsonify({}))
        assert info.value.status == 409
    assert count(app, Bot) == 0  # the stalled request's creation rolled back


@pytest.mark.postgres
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_retry_while_the_first_request_runs_gets_409_then_the_replay(
    app: Flask, live: str, four_bots: list[int], settings: dict[str, Any]
) -> None:
    dsn = str(settings["DATABASE_URL"]).replace("postgresql+psycopg://", "postgresql://")
    k = key()
    headers = {**ADMIN_H, "Idempotency-Key": k}
    body = {"bots": four_bots}
    results: list[requests.Response] = []
    with psycopg.connect(dsn) as lock:
        lock.execute("LOCK TABLE matches IN EXCLUSIVE MODE")  # the first request waits inside
        t = threading.Thread(target=lambda: results.append(
            requests.post(f"{live}/api/matches", json=body, headers=headers, timeout=120)))
        t.start()

        def waiting() -> bool:
            with psycopg.connect(dsn, autocommit=True) as c:
                row = c.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                                "current_database() AND wait_event_type = 'Lock'").fetchone()
                return bool(row and row[0])

        wait_for(waiting, what="the first request to wait on the lock")
        r = requests.post(f"{live}/api/matches", json=body, headers=headers, timeout=60)
        assert r.status_code == 409, r.text
        assert r.json()["error"]["code"] == "idempotency_in_progress"
        assert r.headers["Retry-After"] == "1"
        lock.rollback()
    t.join(timeout=120)
    assert results and results[0].status_code == 202, results
    r = requests.post(f"{live}/api/matches", json=body, headers=headers, timeout=60)
    assert r.status_code == 202 and r.json() == results[0].json()
    assert count(app, Match) == 1


@both_backends
def test_concurrent_requests_with_one_key_store_one_row(
    app: Flask, live: str, four_bots: list[int]
) -> None:
    k = key()
    n = 8
    barrier = threading.Barrier(n)
    results: list[requests.Response] = []
    lock = threading.Lock()

    def go() -> None:
        barrier.wait()
        r = requests.post(f"{live}/api/matches", json={"bots": four_bots},
                          headers={**ADMIN_H, "Idempotency-Key": k}, timeout=120)
        with lock:
            results.append(r)

    threads = [threading.Thread(target=go) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert len(results) == n
    created = [r for r in results if r.status_code == 202]
    refused = [r for r in results if r.status_code == 409]
    assert len(created) + len(refused) == n, [r.status_code for r in results]
    assert created and all(r.json() == created[0].json() for r in created)
    assert all(r.json()["error"]["code"] == "idempotency_in_progress" for r in refused)
    assert count(app, Match) == 1 and count(app, IdempotencyKey) == 1


@both_backends
def test_a_retried_secret_rotation_shows_the_same_secret_and_rotates_once(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    r = client.post("/api/bots", json={"name": "rotor", "url": sample_bots["random"]})
    bot_id, token = r.get_json()["bot"]["id"], r.get_json()["token"]
    k = key()
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": k}
    first = client.post(f"/api/bots/{bot_id}/signing-secret", headers=headers)
    assert first.status_code == 200, first.get_json()
    again = client.post(f"/api/bots/{bot_id}/signing-secret", headers=headers)
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    with get_db(app).begin() as s:
        assert s.get(Bot, bot_id).signing_generation == first.get_json()["signing_generation"]


# --- a request holds no lock after it ends (SQLite: one writer at a time) ----------------------
#
# On SQLite every transaction of the app holds the database's one write lock (BEGIN IMMEDIATE).
# The request's own session still held its transaction when the key was released (after a
# failure) or stored (after a view that commits on its own), on a second connection of the
# same thread: it waited SQLITE_BUSY_TIMEOUT_S (30 s) on itself, failed with "database is
# locked", and the key stayed held for IDEMPOTENCY_IN_PROGRESS_S (120 s).  The assertions are
# on behaviour: a retry at once runs again (or replays), never "still running".


@both_backends
def test_a_failed_submission_frees_its_key_at_once(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    body = {"name": "taken", "url": sample_bots["random"]}
    assert client.post("/api/bots", json=body).status_code == 202
    k = key()
    for _ in range(2):  # the view read the database, then refused: the retry runs again
        r = client.post("/api/bots", json=body, headers={"Idempotency-Key": k})
        assert r.status_code == 409, r.get_json()
        assert r.get_json()["error"]["code"] == "name_taken"
    assert count(app, IdempotencyKey) == 0


@both_backends
def test_a_failed_match_creation_frees_its_key_at_once(
    app: Flask, client: FlaskClient, four_bots: list[int]
) -> None:
    body = {"bots": [*four_bots[:3], 999999]}
    k = key()
    for _ in range(2):
        r = client.post("/api/matches", json=body, headers={**ADMIN_H, "Idempotency-Key": k})
        assert r.status_code == 404, r.get_json()
    assert count(app, IdempotencyKey) == 0 and count(app, Match) == 0


@both_backends
def test_a_step_that_commits_on_its_own_stores_its_answer_at_once(
    app: Flask, client: FlaskClient, four_bots: list[int]
) -> None:
    """An operator step commits inside the service and reads the tournament again in the
    request's session: its answer is stored right after, and a retry replays it."""
    r = client.post("/api/tournaments", json={"format": "round_robin", "bots": four_bots},
                    headers=ADMIN_H)
    assert r.status_code == 201, r.get_json()
    tid = r.get_json()["id"]
    headers = {**ADMIN_H, "Idempotency-Key": key()}
    first = client.post(f"/api/tournaments/{tid}/cancel", headers=headers)
    assert first.status_code == 200, first.get_json()
    again = client.post(f"/api/tournaments/{tid}/cancel", headers=headers)
    assert again.status_code == 200 and again.headers.get("Idempotent-Replayed") == "true"
    assert again.get_json() == first.get_json()


# --- anonymous keys: a replay hands a secret only to the request that created it -------------
#
# Two people behind one NAT (one address) who send the same key and body used to get each
# other's stored answer, the one-time owner token and the signing secret included.


@both_backends
def test_two_clients_behind_one_address_never_get_each_others_secrets(
    app: Flask, live: str, sample_bots: dict[str, str]
) -> None:
    """Over a real loopback server: both clients are 127.0.0.1, with a key of their own
    making that happens to be the same (a constant, a hash of the body...)."""
    body = {"name": "shared-nat", "url": sample_bots["random"]}
    headers = {"Idempotency-Key": "submit-shared-nat"}
    alice, bob = requests.Session(), requests.Session()
    first = alice.post(f"{live}/api/bots", json=body, headers=headers, timeout=60)
    assert first.status_code == 202, first.text
    secrets = [first.json()["token"], first.json()["signing_secret"]]
    assert all(secrets)
    replay = bob.post(f"{live}/api/bots", json=body, headers=headers, timeout=60)
    assert replay.status_code == 202 and replay.headers["Idempotent-Replayed"] == "true"
    for secret in secrets:
        assert secret not in replay.text and secret not in str(replay.headers)
    got = replay.json()
    assert got["token"] is None and got["signing_secret"] is None
    assert got["secrets_withheld"] == ["token", "signing_secret"]
    assert replay.headers["Idempotent-Secrets-Withheld"] == "token, signing_secret"
    assert got["bot"] == first.json()["bot"]  # the rest is the first answer: nothing new made
    assert count(app, Bot) == 1


@both_backends
def test_an_issued_key_replays_the_secrets_to_its_holder_only(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    body = {"name": "issued", "url": sample_bots["greedy"]}
    mine, theirs = issued(client), issued(client)
    assert mine != theirs
    first = client.post("/api/bots", json=body, headers={"Idempotency-Key": mine})
    assert first.status_code == 202
    # The holder retries from another address (a phone changing networks): the whole answer.
    again = client.post("/api/bots", json=body, headers={"Idempotency-Key": mine},
                        environ_base={"REMOTE_ADDR": "198.51.100.23"})
    assert again.status_code == 202 and again.get_json() == first.get_json()
    assert "Idempotent-Secrets-Withheld" not in again.headers
    # Another client's key from the same address is another request (the name is taken).
    other = client.post("/api/bots", json=body, headers={"Idempotency-Key": theirs})
    assert other.status_code == 409 and "Idempotent-Replayed" not in other.headers
    # A key that only looks issued proves nothing: its replay withholds the secrets.
    forged = mine[:-2] + ("AA" if not mine.endswith("AA") else "BB")
    assert client.post("/api/bots", json={"name": "forged", "url": sample_bots["planner"]},
                       headers={"Idempotency-Key": forged}).status_code == 202
    replay = client.post("/api/bots", json={"name": "forged", "url": sample_bots["planner"]},
                         headers={"Idempotency-Key": forged})
    assert replay.get_json()["token"] is None
    assert count(app, Bot) == 2


def test_every_secret_an_idempotent_answer_shows_is_declared(app: Flask) -> None:
    """A replay withholds the fields a view declares with ``@idempotent(secrets=...)``: every
    field of an idempotent route's answer that is a token or a secret must be declared, or an
    anonymous replay would hand it out."""
    from pydantic import BaseModel

    from arena.web.idempotency import IDEMPOTENT_MARK, SECRETS_MARK
    from arena.web.openapi import OP_MARK

    undeclared = []
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        if not getattr(view, IDEMPOTENT_MARK, False):
            continue
        declared = set(getattr(view, SECRETS_MARK, ()))
        op = getattr(view, OP_MARK)
        for shape, _ in op.answers.values():
            if not (isinstance(shape, type) and issubclass(shape, BaseModel)):
                continue
            for name in shape.model_fields:
                secret = name == "token" or name.endswith("secret")
                if secret and name not in declared:
                    undeclared.append(f"{rule.rule}: {name}")
    assert not undeclared, f"secrets an anonymous replay would show: {undeclared}"


NOT_IDEMPOTENT = {
    "/api/idempotency-keys": "issues a signed random key and stores nothing: a retry is as good "
                             "as the first answer",
    "/api/account/bots/<id:bot_id>/adopt": "sets the bot's account; a retry sets it again and "
                                           "creates nothing",
}
"""The only ``POST /api/...`` routes without ``Idempotency-Key``, with why a blind retry of
each is harmless."""


def test_every_api_post_takes_an_idempotency_key_or_says_why_not(app: Flask) -> None:
    """A client that lost an answer must be able to retry any ``POST /api/...`` without making
    a second thing (a webhook, a challenge, a delivery...): every such route is
    ``@idempotent``, or is listed in NOT_IDEMPOTENT with the reason a retry is harmless."""
    from arena.web.idempotency import IDEMPOTENT_MARK

    posts = {rule.rule: bool(getattr(app.view_functions[rule.endpoint], IDEMPOTENT_MARK, False))
             for rule in app.url_map.iter_rules()
             if "POST" in (rule.methods or ()) and rule.rule.startswith("/api/")}
    missing = sorted(r for r, marked in posts.items() if not marked and r not in NOT_IDEMPOTENT)
    assert not missing, f"POST routes a lost answer cannot be retried on: {missing}"
    stale = sorted(r for r in NOT_IDEMPOTENT if r not in posts or posts[r])
    assert not stale, f"NOT_IDEMPOTENT names routes that are gone or idempotent now: {stale}"

