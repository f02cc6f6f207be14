"""Notifications (issue 21 §4): owners' webhooks, signed events sent by queue jobs to a real
receiver on loopback, retries with doubling waits, the deadline, the SSRF guard before any
connection, events written with the change that causes them (and never for a change rolled
back), and authorization: an owner never sees or touches another owner's webhooks."""

from __future__ import annotations

import datetime as dt
import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select, update

from arena.bots.bench import bench
from arena.bots.service import apply_check
from arena.core.models import Account, Bot, HealthCheck, utcnow
from arena.core.queue import get_queue
from arena.core.storage import get_db
from arena.core.webhook_models import Webhook, WebhookDelivery
from arena.jobs import bodies
from arena.notify import delivery, webhooks
from arena.play.matches import default_limits
from arena.tournaments import service as tournaments
from referee.runner.health import HealthResult
from referee.wire.signing import ReplayCache

from .conftest import both_backends, both_backends_drill_on_postgres, run_queued_jobs
from .test_accounts import bearer, csrf, make_token, new_bot, sign_up
from .test_openapi import check_answer
from .webhook_receiver import Receiver

RW = ["bots:read", "bots:write"]


@pytest.fixture(autouse=True)
def cheap_hashes(settings: dict[str, Any]) -> None:
    """argon2id with small parameters (as tests/arena/test_accounts.py: many sign-ups)."""
    settings.update(ARGON2_TIME_COST=1, ARGON2_MEMORY_KIB=1024, ARGON2_PARALLELISM=1)


@pytest.fixture
def alice(app: Flask) -> FlaskClient:
    c = app.test_client()
    sign_up(c, "alice")
    return c


@pytest.fixture
def mallory(app: Flask) -> FlaskClient:
    c = app.test_client()
    sign_up(c, "mallory")
    return c


@pytest.fixture
def receiver() -> Iterator[Callable[..., Receiver]]:
    made: list[Receiver] = []

    def make(statuses: tuple[int, ...] = (200,), *, hang: bool = False) -> Receiver:
        r = Receiver(statuses, hang=hang)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def register(client: FlaskClient, token: str, url: str, **extra: Any) -> dict[str, Any]:
    r = client.post("/api/webhooks", json={"url": url, **extra}, headers=bearer(token))
    assert r.status_code == 201, r.get_json()
    body: dict[str, Any] = r.get_json()
    return body


def deliveries_of(app: Flask, webhook_id: int) -> list[WebhookDelivery]:
    with get_db(app).begin() as s:
        return list(s.scalars(select(WebhookDelivery).where(
            WebhookDelivery.webhook_id == webhook_id).order_by(WebhookDelivery.id)))


def the_delivery(app: Flask, webhook_id: int) -> WebhookDelivery:
    rows = deliveries_of(app, webhook_id)
    assert len(rows) == 1, rows
    return rows[0]


def queued_jobs(app: Flask) -> list[str]:
    return list(get_queue(app).queue.job_ids)


def time_passes(app: Flask, delivery_id: int) -> None:
    """The retry's wait is over (instead of waiting it: no test sleeps)."""
    with get_db(app).begin() as s:
        s.execute(update(WebhookDelivery).where(WebhookDelivery.id == delivery_id)
                  .values(next_attempt_at=utcnow() - dt.timedelta(seconds=1)))


def bench_bot(app: Flask, bot_id: int, reason: str = "forfeited its last 3 matches") -> None:
    with get_db(app).begin() as s:
        bot = s.get(Bot, bot_id)
        assert bot is not None
        bench(app, s, bot, reason, for_matches=True)


# --- a real receiver -------------------------------------------------------------------------


@both_backends_drill_on_postgres
def test_a_signed_event_reaches_a_real_receiver_and_verifies(
        app: Flask, alice: FlaskClient, client: FlaskClient,
        receiver: Callable[..., Receiver]) -> None:
    rx = receiver()
    token = make_token(alice, "rw", RW)
    doc = client.get("/api/openapi.json").get_json()
    made = check_answer(doc, client, "post", "/api/webhooks", "/api/webhooks", 201,
                        json={"url": rx.url("/hooks/arena?k=1")}, headers=bearer(token))
    hook_id, secret = made["id"], made["secret"]
    assert len(secret) == 43 and made["events"] == sorted(webhooks.SUBSCRIBABLE)
    queued = check_answer(doc, client, "post", "/api/webhooks/{webhook_id}/test",
                          f"/api/webhooks/{hook_id}/test", 202, headers=bearer(token))
    # The request only wrote a row and queued a job: nothing has called the receiver.
    assert queued["state"] == "pending" and rx.connections == 0
    assert f"webhook-{queued['id']}-1" in queued_jobs(app)
    run_queued_jobs(app)  # a real RQ worker runs the job
    assert len(rx.requests) == 1
    got = rx.requests[0]
    assert got.method == "POST" and got.target == "/hooks/arena?k=1"
    assert got.headers["Content-Type"] == "application/json"
    assert got.verify(secret, ReplayCache()) is None
    assert got.verify("another-secret-0123456789abcdefghijklmnopq") is not None
    payload = json.loads(got.body)
    assert payload["event"] == "webhook.test" and payload["id"] == queued["event_id"]
    assert payload["webhook_id"] == hook_id
    log = check_answer(doc, client, "get", "/api/webhooks/{webhook_id}/deliveries",
                       f"/api/webhooks/{hook_id}/deliveries", 200, headers=bearer(token))
    line = log["items"][0]
    assert (line["state"], line["attempts"], line["response_status"]) == ("delivered", 1, 200)
    assert isinstance(line["latency_ms"], int) and line["next_attempt_at"] is None
    assert line["payload"] == payload
    listed = check_answer(doc, client, "get", "/api/webhooks", "/api/webhooks", 200,
                          headers=bearer(token))
    assert [(h["id"], h["deliveries"]) for h in listed["items"]] == [(hook_id,
                                                                      {"delivered": 1})]
    assert "secret" not in listed["items"][0]
    # Deleted: gone from the list, and what was still waiting is cancelled by its job.
    bench_bot(app, new_bot(client, "alices", token)[0])
    assert client.delete(f"/api/webhooks/{hook_id}", headers=bearer(token)).status_code == 204
    run_queued_jobs(app)
    assert [d.state for d in deliveries_of(app, hook_id)] == ["delivered", "cancelled"]
    assert len(rx.requests) == 1
    assert client.get("/api/webhooks", headers=bearer(token)).get_json()["items"] == []


def test_retries_wait_twice_as_long_each_time_until_the_receiver_answers(
        app: Flask, alice: FlaskClient, client: FlaskClient,
        receiver: Callable[..., Receiver]) -> None:
    rx = receiver((500, 503, 200))
    token = make_token(alice, "rw", RW)
    hook = register(client, token, rx.url())
    d_id = client.post(f"/api/webhooks/{hook['id']}/test", headers=bearer(token)).get_json()["id"]
    first = float(app.config["WEBHOOK_RETRY_FIRST_S"])
    for n, status in ((1, 500), (2, 503)):
        run_queued_jobs(app)
        d = the_delivery(app, hook["id"])
        assert (d.state, d.attempts, d.response_status) == ("retrying", n, status)
        assert d.error == f"answered HTTP {status}"
        assert d.next_attempt_at is not None and d.last_attempt_at is not None
        assert d.next_attempt_at - d.last_attempt_at >= dt.timedelta(seconds=first * 2 ** (n - 1))
        # Not due yet: the sweep enqueues nothing, and an early job does nothing.
        assert delivery.sweep(app) == []
        assert delivery.attempt(app, d_id, n + 1) == "not due yet"
        assert delivery.attempt(app, d_id, n) .startswith("not this attempt")
        time_passes(app, d_id)
        assert delivery.sweep(app) == [d_id]
        assert delivery.sweep(app) == []  # already on the queue
    run_queued_jobs(app)
    d = the_delivery(app, hook["id"])
    assert (d.state, d.attempts, d.response_status, d.error) == ("delivered", 3, 200, "")
    # The same event each time (the same bytes, the same id), signed afresh each time.
    assert len({r.body for r in rx.requests}) == 1 and len(rx.requests) == 3
    cache = ReplayCache()
    assert all(r.verify(hook["secret"], cache) is None for r in rx.requests)


def test_attempts_are_bounded(app: Flask, alice: FlaskClient, client: FlaskClient,
                              receiver: Callable[..., Receiver]) -> None:
    app.config["WEBHOOK_MAX_ATTEMPTS"] = 2
    rx = receiver((500,))
    token = make_token(alice, "rw", RW)
    hook = register(client, token, rx.url())
    d_id = client.post(f"/api/webhooks/{hook['id']}/test", headers=bearer(token)).get_json()["id"]
    run_queued_jobs(app)
    time_passes(app, d_id)
    delivery.sweep(app)
    run_queued_jobs(app)
    d = the_delivery(app, hook["id"])
    assert (d.state, d.attempts, d.next_attempt_at) == ("failed", 2, None)
    assert delivery.sweep(app) == [] and len(rx.requests) == 2


def test_the_back_off_doubles_up_to_its_ceiling(app: Flask) -> None:
    app.config.update(WEBHOOK_RETRY_FIRST_S=30, WEBHOOK_RETRY_MAX_S=200)
    assert [delivery.retry_wait_s(app, n) for n in range(1, 6)] == [30, 60, 120, 200, 200]


@pytest.mark.parametrize(("url", "base", "path"), [
    ("http://h:1/hooks/arena?k=1", "http://h:1/hooks?k=1", "arena"),
    ("http://h:1/hooks/", "http://h:1/hooks", ""),
    ("http://h:1/hook", "http://h:1", "hook"),
    ("http://h:1", "http://h:1", ""),
])
def test_the_request_target_is_the_urls_own(url: str, base: str, path: str) -> None:
    assert delivery.split_url(url) == (base, path)


def test_a_receiver_that_hangs_costs_only_its_own_delivery(
        app: Flask, alice: FlaskClient, client: FlaskClient,
        receiver: Callable[..., Receiver]) -> None:
    app.config["MATCH_CALL_DEADLINE_MS"] = 500
    stuck, fine = receiver(hang=True), receiver()
    token = make_token(alice, "rw", RW)
    slow_hook = register(client, token, stuck.url())
    good_hook = register(client, token, fine.url())
    bench_bot(app, new_bot(client, "alices", token)[0])
    run_queued_jobs(app)
    slow, good = the_delivery(app, slow_hook["id"]), the_delivery(app, good_hook["id"])
    assert (good.state, good.response_status) == ("delivered", 200)
    assert (slow.state, slow.attempts, slow.response_status) == ("retrying", 1, None)
    assert slow.error.startswith("timeout") and slow.latency_ms is not None
    assert slow.latency_ms >= 500
    assert len(stuck.requests) == 1  # it was called, and cut off at the deadline


# --- the SSRF guard --------------------------------------------------------------------------


def test_the_ssrf_guard_refuses_private_addresses_before_any_connection(
        app: Flask, alice: FlaskClient, client: FlaskClient,
        receiver: Callable[..., Receiver], monkeypatch: pytest.MonkeyPatch) -> None:
    app.config["ALLOW_PRIVATE_BOT_URLS"] = False
    token = make_token(alice, "rw", RW)
    rx = receiver()
    for url in (rx.url(), "http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data/",
                "http://[::1]:8080/", "http://0x7f.1/", "http://user@example.org/",
                "ftp://example.org/"):
        r = client.post("/api/webhooks", json={"url": url}, headers=bearer(token))
        assert r.status_code == 422 and r.get_json()["error"]["code"] == "url_refused", url
    # Webhooks stored when the policy allowed them (or names that now resolve privately) are
    # refused when sent, before any socket connects: nothing is opened outside loopback,
    # and the loopback receiver sees no connection either.
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect
    opened: list[Any] = []

    def getaddrinfo(host: Any, *args: Any, **kw: Any) -> Any:
        if host == "hooks.internal.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 0))]
        return real_getaddrinfo(host, *args, **kw)

    def connect(sock: socket.socket, address: Any) -> Any:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not str(
                address[0]).startswith("127."):
            opened.append(address)
        return real_connect(sock, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    with get_db(app).begin() as s:
        account_id = s.scalar(select(Account.id).where(Account.username_key == "alice"))
        ids = []
        for url in ("http://10.1.2.3:8080/hook", "http://hooks.internal.test:8080/hook",
                    rx.url(), "http://[fd00:ec2::254]/"):
            hook = Webhook(account_id=account_id, url=url, events="webhook.test")
            s.add(hook)
            s.flush()
            ids.append(webhooks.send_test(app, s, webhooks.Owner(account_id=account_id),
                                          hook).id)
    for d_id in ids:
        assert delivery.attempt(app, d_id, 1) == "failed"
    with get_db(app).begin() as s:
        rows = s.scalars(select(WebhookDelivery).where(WebhookDelivery.id.in_(ids))).all()
        assert all(d.error.startswith("refused_address") for d in rows), [d.error for d in rows]
        assert all(d.response_status is None for d in rows)
    assert opened == [] and rx.connections == 0 and rx.requests == []


# --- events come with the change that causes them --------------------------------------------


def test_a_change_rolled_back_notifies_nobody(app: Flask, alice: FlaskClient,
                                              client: FlaskClient,
                                              receiver: Callable[..., Receiver]) -> None:
    rx = receiver()
    token = make_token(alice, "rw", RW)
    hook = register(client, token, rx.url())
    bot_id, _ = new_bot(client, "alices", token)
    before = queued_jobs(app)
    with pytest.raises(RuntimeError), get_db(app).begin() as s:
        bot = s.get(Bot, bot_id)
        assert bot is not None
        bench(app, s, bot, "three forfeits", for_matches=True)
        raise RuntimeError("the rest of the transaction failed")
    assert deliveries_of(app, hook["id"]) == [] and queued_jobs(app) == before
    with get_db(app).begin() as s:
        assert s.get(Bot, bot_id).health_paused is False  # type: ignore[union-attr]
    bench_bot(app, bot_id, "three forfeits")
    d = the_delivery(app, hook["id"])
    assert d.event == "bot.benched" and f"webhook-{d.id}-1" in queued_jobs(app)
    assert d.payload["data"]["bots"] == [{"id": bot_id, "name": "alices"}]
    assert d.payload["data"]["reason"] == "three forfeits"
    assert d.payload["data"]["cause"] == "matches" and d.payload["data"]["bench_ends"]


@pytest.mark.drill
@both_backends
def test_each_event_comes_from_where_it_happens(app: Flask, alice: FlaskClient,
                                               client: FlaskClient,
                                               receiver: Callable[..., Receiver]) -> None:
    rx = receiver()
    token = make_token(alice, "rw", RW)
    hook = register(client, token, rx.url())
    bots = [new_bot(client, f"alices-{i}", token)[0] for i in range(4)]
    with get_db(app).begin() as s:
        s.execute(update(Bot).where(Bot.id.in_(bots)).values(check_state="passed"))
    # A benched bot passes a check: it is back.
    with get_db(app).begin() as s:
        bot = s.get(Bot, bots[0])
        assert bot is not None
        bench(app, s, bot, "health checks failed", for_matches=False)
    with get_db(app).begin() as s:
        bot = s.get(Bot, bots[0])
        assert bot is not None
        check = HealthCheck(bot_id=bot.id, at=utcnow(), url=bot.url, ok=False, reason="",
                            state="running", purpose="sweep")
        s.add(check)
        s.flush()
        apply_check(app, s, bot, check, HealthResult(ok=True, reason="", info={"name": "x"},
                                                     describe_ms=1.0, move_ms=1.0))
        assert not bot.health_paused
    # A forfeit, as the finishing transaction tells it.
    with get_db(app).begin() as s:
        seats = [SimpleNamespace(seat=0, bot_id=bots[1], forfeited=False, strikes=0),
                 SimpleNamespace(seat=1, bot_id=bots[2], forfeited=True, strikes=5)]
        bodies.tell_forfeits(app, s, SimpleNamespace(id=77, ruleset="standard",  # type: ignore[arg-type]
                                                     rated=True), seats)  # type: ignore[arg-type]
    # A tournament starts and ends (cancelled).
    with get_db(app).begin() as s:
        entrants = list(s.scalars(select(Bot).where(Bot.id.in_(bots))))
        t = tournaments.create_tournament(s, name="cup", format="round_robin",
                                          ruleset="standard", bots=entrants, deals=1,
                                          limits=default_limits(app.config))
        tid = t.id
    tournaments.start(app, tid)
    tournaments.cancel(app, tid)
    got = [(d.event, d.payload["data"]) for d in deliveries_of(app, hook["id"])]
    assert [e for e, _ in got] == ["bot.benched", "bot.back", "match.forfeited",
                                   "tournament.starting", "tournament.finished"]
    assert got[0][1]["cause"] == "checks" and got[0][1]["bench_ends"] is None
    assert got[1][1]["bots"] == [{"id": bots[0], "name": "alices-0"}]
    assert got[2][1]["match"]["id"] == 77 and got[2][1]["bots"] == [
        {"id": bots[2], "name": "alices-2"}]
    assert got[3][1]["tournament"]["name"] == "cup" and len(got[3][1]["bots"]) == 4
    assert got[4][1]["tournament"]["state"] == "cancelled"
    run_queued_jobs(app)
    assert {json.loads(r.body)["event"] for r in rx.requests} >= {
        "bot.benched", "bot.back", "match.forfeited", "tournament.starting"}


def test_a_webhook_hears_only_the_events_it_chose(app: Flask, alice: FlaskClient,
                                                  client: FlaskClient,
                                                  receiver: Callable[..., Receiver]) -> None:
    token = make_token(alice, "rw", RW)
    hook = register(client, token, receiver().url(), events=["match.forfeited"])
    assert hook["events"] == ["match.forfeited"]
    r = client.post("/api/webhooks", json={"url": receiver().url(), "events": ["bot.eaten"]},
                    headers=bearer(token))
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "bad_events"
    bench_bot(app, new_bot(client, "alices", token)[0])
    assert deliveries_of(app, hook["id"]) == []


# --- who sees what ---------------------------------------------------------------------------


@both_backends
def test_an_owner_never_sees_or_touches_another_owners_webhooks(
        app: Flask, alice: FlaskClient, mallory: FlaskClient, client: FlaskClient,
        receiver: Callable[..., Receiver]) -> None:
    a_rw, a_r = make_token(alice, "rw", RW), make_token(alice, "r", ["bots:read"])
    m_rw = make_token(mallory, "rw", RW)
    a_bot, a_bot_token = new_bot(client, "alices", a_rw)
    m_bot, m_bot_token = new_bot(client, "mallorys", m_rw)
    lone_bot, lone_token = new_bot(client, "lone")  # no account: its owner token only
    a_hook = register(client, a_rw, receiver().url("/alice"))
    m_hook = register(client, m_rw, receiver().url("/mallory"))
    lone_hook = register(client, lone_token, receiver().url("/lone"), bot_id=lone_bot)
    assert (lone_hook["bot_id"], lone_hook["account_id"]) == (lone_bot, None)

    def listed(token: str, query: str = "") -> list[int]:
        r = client.get(f"/api/webhooks{query}", headers=bearer(token))
        assert r.status_code == 200, r.get_json()
        return [h["id"] for h in r.get_json()["items"]]

    assert listed(a_rw) == [a_hook["id"]] and listed(a_r) == [a_hook["id"]]
    assert listed(m_rw) == [m_hook["id"]]
    assert listed(lone_token, f"?bot_id={lone_bot}") == [lone_hook["id"]]
    assert listed(a_bot_token, f"?bot_id={a_bot}") == []  # the bot token's own: none
    # Not the asker's: "not found" on every route, whoever asks.
    for hook in (a_hook, lone_hook):
        for token in (m_rw, m_bot_token, a_bot_token if hook is lone_hook else lone_token):
            for method, path in (("DELETE", ""), ("POST", "/test"), ("GET", "/deliveries")):
                r = client.open(f"/api/webhooks/{hook['id']}{path}", method=method,
                                headers=bearer(token))
                assert r.status_code == 404, (method, path, hook["id"], r.get_json())
    # Tokens that cannot act: none, unknown, revoked-looking, wrong scope, another bot's.
    assert client.get("/api/webhooks").status_code == 401
    assert client.get("/api/webhooks", headers=bearer("bta_made-up")).status_code == 401
    assert client.delete(f"/api/webhooks/{a_hook['id']}").status_code == 401
    r = client.post("/api/webhooks", json={"url": receiver().url()}, headers=bearer(a_r))
    assert r.status_code == 403
    assert client.delete(f"/api/webhooks/{a_hook['id']}", headers=bearer(a_r)).status_code == 403
    r = client.post("/api/webhooks", json={"url": receiver().url(), "bot_id": a_bot},
                    headers=bearer(m_bot_token))
    assert r.status_code == 403
    r = client.post("/api/webhooks", json={"url": receiver().url()}, headers=bearer(lone_token))
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "bot_id_missing"
    # Events go to their bots' owners only, naming only their bots.
    for bot_id in (a_bot, m_bot, lone_bot):
        bench_bot(app, bot_id)
    for hook, bot_id, name in ((a_hook, a_bot, "alices"), (m_hook, m_bot, "mallorys"),
                               (lone_hook, lone_bot, "lone")):
        d = the_delivery(app, hook["id"])
        assert d.payload["data"]["bots"] == [{"id": bot_id, "name": name}]
    # The pages: mallory's shows none of alice's, and its forms refuse alice's webhook.
    page = mallory.get("/account/webhooks").get_data(as_text=True)
    assert "/mallory" in page and "/alice" not in page
    token = csrf(mallory, "/account/webhooks")
    for action in ("test", "delete"):
        r = mallory.post(f"/account/webhooks/{a_hook['id']}/{action}", data={"csrf_token": token})
        assert r.status_code == 404, action
    assert len(deliveries_of(app, a_hook["id"])) == 1
    assert listed(a_rw) == [a_hook["id"]]


def test_the_page_registers_tests_and_deletes_with_csrf(
        app: Flask, alice: FlaskClient, client: FlaskClient,
        receiver: Callable[..., Receiver]) -> None:
    rx = receiver()
    assert client.get("/account/webhooks").status_code == 303  # signed out: to the sign-in
    r = alice.post("/account/webhooks", data={"url": rx.url(), "csrf_token": "forged"})
    assert r.status_code == 403
    token = csrf(alice, "/account/webhooks")
    r = alice.post("/account/webhooks", data={"url": "http://user@example.org/",
                                              "csrf_token": token})
    assert r.status_code == 400 and "URL: url refused" in r.get_data(as_text=True)
    r = alice.post("/account/webhooks", data={"url": rx.url(), "event": "bot.benched",
                                              "csrf_token": token})
    with get_db(app).begin() as s:
        hook = s.scalars(select(Webhook)).one()
    # Redirect after POST: the page it leads to shows the secret once; a reload registers
    # nothing again and shows no secret.
    assert r.status_code == 303
    assert r.headers["Location"].endswith(f"/account/webhooks?created={hook.id}#webhook-{hook.id}")
    r = alice.get(f"/account/webhooks?created={hook.id}")
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    assert 'id="new-secret"' in r.get_data(as_text=True)
    again = alice.get(f"/account/webhooks?created={hook.id}").get_data(as_text=True)
    assert 'id="new-secret"' not in again and "its secret was shown once" in again
    with get_db(app).begin() as s:
        assert s.scalars(select(Webhook.id)).all() == [hook.id]
    assert hook.event_set == {"bot.benched"}
    assert alice.post(f"/account/webhooks/{hook.id}/test", data={}).status_code == 403
    r = alice.post(f"/account/webhooks/{hook.id}/test", data={"csrf_token": token})
    assert r.status_code == 303
    run_queued_jobs(app)
    page = alice.get("/account/webhooks").get_data(as_text=True)
    assert 'data-state="delivered"' in page and 'id="new-secret"' not in page
    r = alice.post(f"/account/webhooks/{hook.id}/delete", data={"csrf_token": token})
    assert r.status_code == 303
    assert "data-webhook=" not in alice.get("/account/webhooks").get_data(as_text=True)


def test_an_owner_has_a_bounded_number_of_webhooks(app: Flask, alice: FlaskClient,
                                                  client: FlaskClient,
                                                  receiver: Callable[..., Receiver]) -> None:
    app.config["WEBHOOKS_PER_OWNER"] = 2
    token = make_token(alice, "rw", RW)
    for _ in range(2):
        register(client, token, receiver().url())
    r = client.post("/api/webhooks", json={"url": receiver().url()}, headers=bearer(token))
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "too_many_webhooks"


def test_a_lost_attempt_counts_and_is_tried_again(app: Flask, alice: FlaskClient,
                                                  client: FlaskClient,
                                                  receiver: Callable[..., Receiver]) -> None:
    """A worker that died mid-attempt leaves the delivery ``sending``; the sweep makes it a
    failed attempt, due at once; and a delivery whose first job was lost is enqueued again."""
    rx = receiver()
    token = make_token(alice, "rw", RW)
    hook = register(client, token, rx.url())
    d_id = client.post(f"/api/webhooks/{hook['id']}/test", headers=bearer(token)).get_json()["id"]
    get_queue(app).queue.empty()  # the job is lost
    assert delivery.sweep(app) == [d_id]
    get_queue(app).queue.empty()
    long_ago = utcnow() - dt.timedelta(hours=1)
    with get_db(app).begin() as s:
        s.execute(update(WebhookDelivery).where(WebhookDelivery.id == d_id).values(
            state="sending", attempts=1, last_attempt_at=long_ago))
    assert delivery.sweep(app) == [d_id]
    d = the_delivery(app, hook["id"])
    assert (d.state, d.error) == ("retrying", "the worker sending it was lost")
    run_queued_jobs(app)
    assert the_delivery(app, hook["id"]).state == "delivered" and len(rx.requests) == 1


def documented_verifier() -> Callable[..., bool]:
    """The standard-library ``verify`` that docs/notifications.md gives receivers."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "notifications.md").read_text()
    section = text.split("## Verifying the signature", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict[str, Any] = {}
    exec(compile(code, "docs/notifications.md", "exec"), scope)
    verify: Callable[..., bool] = scope["verify"]
    return verify


def test_the_documented_verifier_accepts_a_real_event_and_nothing_else(
        app: Flask, alice: FlaskClient, client: FlaskClient,
        receiver: Callable[..., Receiver]) -> None:
    rx = receiver()
    token = make_token(alice, "rw", RW)
    hook = register(client, token, rx.url("/hooks/arena?k=1"))
    client.post(f"/api/webhooks/{hook['id']}/test", headers=bearer(token))
    run_queued_jobs(app)
    got = rx.requests[0]
    verify = documented_verifier()
    assert verify(hook["secret"], got.target, got.headers, got.body)
    assert not verify(hook["secret"], got.target, got.headers, got.body + b" ")
    assert not verify(hook["secret"], "/hooks/other", got.headers, got.body)
    other = register(client, token, rx.url())
    assert not verify(other["secret"], got.target, got.headers, got.body)


def test_the_webhook_reads_cost_a_fixed_number_of_statements(
        app: Flask, alice: FlaskClient, client: FlaskClient) -> None:
    """The page, the list and a delivery log: the same statements for one webhook with one
    delivery as for five with thirty each (no query per webhook or per delivery), and the
    page shows each webhook's newest deliveries only."""
    from arena.routes.webhooks import LOG_LINES

    from .test_read_path import counting

    token = make_token(alice, "rw", RW)
    with get_db(app).begin() as s:
        account_id = s.scalar(select(Account.id).where(Account.username_key == "alice"))
    counts: dict[str, list[int]] = {"page": [], "list": [], "log": []}
    page = ""
    for hooks, each in ((1, 1), (5, 30)):
        with get_db(app).begin() as s:
            s.execute(update(Webhook).values(deleted_at=utcnow()))
            made = []
            for _ in range(hooks):
                hook = Webhook(account_id=account_id, url="http://127.0.0.1:9/h",
                               events="bot.benched")
                s.add(hook)
                s.flush()
                made.append(hook)
                for _ in range(each):
                    webhooks.send_test(app, s, webhooks.Owner(account_id=account_id), hook)
            first = made[0].id
        get_queue(app).queue.empty()
        for name, url, who in (("page", "/account/webhooks", alice),
                               ("list", "/api/webhooks", client),
                               ("log", f"/api/webhooks/{first}/deliveries", client)):
            who.get(url, headers=bearer(token))  # warm
            with counting(app) as statements:
                r = who.get(url, headers=bearer(token))
            assert r.status_code == 200
            counts[name].append(len(statements))
            if name == "page":
                page = r.get_data(as_text=True)
    assert all(max(c) - min(c) <= 1 for c in counts.values()), counts
    assert page.count("data-webhook=") == 5
    assert page.count("<tr data-delivery=") == 5 * LOG_LINES


def test_a_retry_with_the_same_idempotency_key_makes_one_webhook_and_one_test_event(
        app: Flask, alice: FlaskClient, client: FlaskClient,
        receiver: Callable[..., Receiver]) -> None:
    """The signing secret is shown once: a client that lost that answer retries with its
    ``Idempotency-Key`` and gets the same webhook and secret again, not a second webhook; a
    retried "send test event" queues one delivery."""
    token = make_token(alice, "rw", RW)
    headers = {**bearer(token), "Idempotency-Key": "hook-retry-1"}
    body = {"url": receiver().url()}
    first = client.post("/api/webhooks", json=body, headers=headers)
    assert first.status_code == 201, first.get_json()
    again = client.post("/api/webhooks", json=body, headers=headers)
    assert again.status_code == 201 and again.headers.get("Idempotent-Replayed") == "true"
    assert again.get_json() == first.get_json() and len(first.get_json()["secret"]) == 43
    assert again.headers["Cache-Control"] == "no-store"
    hook_id = first.get_json()["id"]
    with get_db(app).begin() as s:
        assert s.scalar(select(func.count()).select_from(Webhook)) == 1
    test_headers = {**bearer(token), "Idempotency-Key": "hook-test-1"}
    sent = client.post(f"/api/webhooks/{hook_id}/test", headers=test_headers)
    assert sent.status_code == 202, sent.get_json()
    resent = client.post(f"/api/webhooks/{hook_id}/test", headers=test_headers)
    assert resent.status_code == 202 and resent.get_json() == sent.get_json()
    assert len(deliveries_of(app, hook_id)) == 1 and len(queued_jobs(app)) == 1
