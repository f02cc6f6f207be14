"""Health checks run by jobs, never by web requests; probes that look like real matches; bots
paused for what they do in real matches; one endpoint, one live bot.

Real loopback bots, the real Redis, real ``arena worker`` processes (or a real RQ worker in
this process, :func:`~tests.arena.conftest.run_queued_jobs`).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from jsonschema import Draft202012Validator
from sqlalchemy import select, update

from arena.bots.sweep import sweep
from arena.core.models import Bot, BotVersion, HealthCheck
from arena.core.queue import get_queue
from arena.core.storage import get_db
from arena.ops.procs import Child
from arena.play.ladder import run_round
from referee.wire import httpbot
from sample_bots.sdk import make_server, serve_in_thread
from tests.referee import badbots as bb
from tests.referee import protocolbots as pb

from .conftest import (
    admin_headers,
    both_backends,
    both_backends_drill_on_postgres,
    register,
    run_queued_jobs,
    submit,
    wait_check,
    wait_for,
)
from .test_bench import end_bench

SCHEMAS = Path(__file__).resolve().parents[2] / "referee" / "schemas"
MATCH_ID = re.compile(r"m-[0-9a-f]{16}")


def first_legal(req: dict[str, Any]) -> str:
    return str(req["legal_moves"][0]["id"])


@pytest.fixture
def bot_clients(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every :class:`referee.wire.httpbot.BotClient` made in this process, by URL."""
    made: list[str] = []
    original = httpbot.BotClient.__init__

    def spy(self: httpbot.BotClient, base_url: str, *a: Any, **kw: Any) -> None:
        made.append(base_url)
        original(self, base_url, *a, **kw)

    monkeypatch.setattr(httpbot.BotClient, "__init__", spy)
    return made


# --- no web request calls a bot -----------------------------------------------------------


@both_backends
def test_no_web_request_calls_the_bot_a_worker_does(
    app: Flask, client: FlaskClient, bot_clients: list[str]
) -> None:
    """A bot URL that would hang every call: submission, URL change, re-check and the web
    form all answer while the bot has not even been connected to; the worker then does."""
    with bb.serving(bb.hang) as hanging, bb.serving(bb.hang) as other, \
            bb.serving(bb.hang) as third:
        bot_id, token = submit(client, "hangs", hanging.url)
        auth = {"Authorization": f"Bearer {token}"}
        r = client.patch(f"/api/bots/{bot_id}", json={"url": other.url}, headers=auth)
        assert r.status_code == 202
        r = client.post(f"/api/bots/{bot_id}/check", headers=auth)
        assert r.status_code == 202 and r.get_json()["check_url"]
        with client.session_transaction() as sess:
            sess["csrf"] = "t"
        r = client.post("/bots/new", data={"name": "form-bot", "url": third.url,
                                           "csrf_token": "t"}, follow_redirects=True)
        assert r.status_code == 200 and b'id="check-progress"' in r.data
        assert b'data-state="queued"' in r.data
        # Nothing in the web process has even made a client for a bot URL.
        assert bot_clients == []
        assert hanging.connections == other.connections == third.connections == 0
        # The instrument works: a worker (a real RQ worker, here in this process) calls.
        app.config["HEALTH_DESCRIBE_DEADLINE_MS"] = 300
        run_queued_jobs(app)
        assert third.connections >= 1 and other.connections >= 1
        assert set(bot_clients) >= {other.url, third.url}
    check = client.get(f"/api/bots/{bot_id}/check").get_json()
    assert check["done"] and check["reason"].endswith("no HTTP answer from the bot URL "
                                                      "within 0.3 s")


def test_no_route_makes_a_bot_client_whatever_it_is_sent(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str], bot_clients: list[str]
) -> None:
    """Every route of the app, every method it takes, with empty and with plausible bodies,
    as anonymous and as the operator: not one BotClient is made in the web process."""
    bot_id, token = submit(client, "someone", sample_bots["random"])
    ids = {"bot_id": bot_id, "match_id": 1, "tournament_id": 1, "token_id": 1, "webhook_id": 1,
           "challenge_id": 1}
    bodies: list[Any] = [None, {}, {"url": sample_bots["greedy"]},
                         {"name": "x2", "url": sample_bots["planner"]},
                         {"bots": [bot_id] * 4}, {"format": "knockout", "bots": [bot_id]}]
    sent = 0
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = rule.rule
        for name, value in ids.items():
            path = path.replace(f"<id:{name}>", str(value))
        assert "<" not in path, path
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            for headers in ({}, admin_headers(), {"Authorization": f"Bearer {token}"}):
                for body in bodies if method != "GET" else [None]:
                    client.open(path, method=method, json=body, headers=headers)
                    sent += 1
    assert sent > 100
    assert bot_clients == []


# --- one endpoint, one live bot -----------------------------------------------------------


@both_backends
def test_one_endpoint_belongs_to_one_live_bot(
    client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    url = sample_bots["random"]  # http://127.0.0.1:<port>
    port = url.rsplit(":", 1)[1]
    first, token = register(client, "first", url)
    for spelling in (url + "/", url.upper(),
                     f"http://127.1:{port}", f"http://127.0.0.1:{port}/?x=1",
                     f"http://user@127.0.0.1:{port}/"):
        r = client.post("/api/bots", json={"name": "second", "url": spelling})
        if r.status_code == 422:  # the guard refuses user info anyway
            continue
        assert r.status_code == 409, (spelling, r.get_json())
        err = r.get_json()["error"]
        assert err["code"] == "endpoint_taken" and f"#{first}" in err["message"]
    # Another path on the same server is another endpoint.
    r = client.post("/api/bots", json={"name": "other-path", "url": url + "/bot-b"})
    assert r.status_code == 202
    # A URL change to a taken endpoint is refused too, and a pending one is reserved.
    second, token2 = register(client, "second", sample_bots["greedy"])
    auth2 = {"Authorization": f"Bearer {token2}"}
    r = client.patch(f"/api/bots/{second}", json={"url": url + "/"}, headers=auth2)
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "endpoint_taken"
    r = client.patch(f"/api/bots/{second}", json={"url": sample_bots["planner"]},
                     headers=auth2)
    assert r.status_code == 202  # not run yet: planner's endpoint is reserved for "second"
    r = client.post("/api/bots", json={"name": "third", "url": sample_bots["planner"]})
    assert r.status_code == 409
    # Deleting a bot frees its endpoint.
    assert client.delete(f"/api/bots/{first}",
                         headers={"Authorization": f"Bearer {token}"}).status_code == 204
    r = client.post("/api/bots", json={"name": "heir", "url": url})
    assert r.status_code == 202
    # Bots that shared an endpoint before the rule (migration 0003 left the younger without
    # one) are never seated together: the admin API refuses.
    with get_db(client.application).begin() as s:
        s.execute(update(Bot).where(Bot.id == second).values(url=url + "/", endpoint=None))
        s.execute(update(BotVersion).where(BotVersion.bot_id == second)
                  .values(url=url + "/"))
    heir = client.get("/api/bots?status=pending").get_json()["items"][-1]["id"]
    with get_db(client.application).begin() as s:
        s.execute(update(Bot).where(Bot.id == heir).values(check_state="passed"))
    r = client.post("/api/matches", json={"bots": [second, heir], "ruleset": "heads-up"},
                    headers=admin_headers())
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "duplicate_endpoint"


def test_the_form_refuses_a_taken_endpoint(client: FlaskClient,
                                           sample_bots: dict[str, str]) -> None:
    register(client, "first", sample_bots["random"])
    with client.session_transaction() as sess:
        sess["csrf"] = "t"
    r = client.post("/bots/new", data={"name": "again", "url": sample_bots["random"] + "/",
                                       "csrf_token": "t"})
    assert r.status_code == 400 and b"already belongs to bot #1" in r.data


# --- the probe looks like a real match ----------------------------------------------------


def _same_fields(probe: dict[str, Any], real: dict[str, Any]) -> None:
    """The same top-level fields and rule options (two turns of a deal differ in values,
    the table's combination among them, not in fields)."""
    assert set(probe) == set(real)
    assert set(probe["rules"]) == set(real["rules"])
    assert set(probe["rules"]["options"]) == set(real["rules"]["options"])


def _item_keys(body: dict[str, Any], field: str) -> set[str]:
    return {k for item in body[field] for k in item}


def _keys(value: Any, prefix: str = "") -> set[str]:
    """Every key path in a JSON value (list items merged): ``seats[].name``, ``rules.name``."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(prefix + k)
            out |= _keys(v, f"{prefix}{k}.")
    elif isinstance(value, list):
        for v in value:
            out |= _keys(v, f"{prefix[:-1]}[].")
    return out


def test_probe_requests_look_like_a_real_ladder_match(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str],
    start_worker: Callable[[], Child],
) -> None:
    """What a bot receives in a health check and in a real ladder match: the same schemas,
    the same key sets, the same id formats, the same headers, the same /start facts."""
    start_worker()
    bot = pb.ProtocolBot(name="watcher")
    with pb.running(bot):
        bot_id, _ = register(client, "watcher", bot.url)
        probe_start, probe_move = bot.starts[0], bot.moves[0]
        assert server_requests(bot, "/start")
        probe_headers = server_requests(bot, "/move")[0]
        for name in ("random", "greedy", "planner"):
            register(client, name, sample_bots[name])
        n_starts = len(bot.starts)
        assert run_round(app, max_matches=1)
        wait_for(lambda: len(bot.ends) == 1, 120, what="the ladder match to end")
        match_start, match_move = bot.starts[n_starts], bot.moves[len(bot.moves) - 1]
        match_headers = server_requests(bot, "/move")[-1]
    for name, probe, real in (("start-request", probe_start, match_start),
                              ("move-request", probe_move, match_move)):
        validator = Draft202012Validator(json.loads((SCHEMAS / f"{name}.json").read_text()))
        assert not list(validator.iter_errors(probe)), name
        assert not list(validator.iter_errors(real)), name
        assert set(probe) == set(real), name
    assert _keys(probe_start) == _keys(match_start)
    first_real = next(m for m in bot.moves if m["match_id"] == match_start["match_id"])
    for probe, real in ((probe_move, first_real), (probe_move, match_move)):
        _same_fields(probe, real)
        assert _item_keys(probe, "legal_moves") == _item_keys(real, "legal_moves")
    for probe, real in ((probe_start, match_start), (probe_move, match_move)):
        assert MATCH_ID.fullmatch(probe["match_id"]) and MATCH_ID.fullmatch(real["match_id"])
        assert probe["match_id"] != real["match_id"]
    assert probe_move["deal_id"] == probe_move["match_id"] + "/0"
    assert match_move["deal_id"].startswith(match_move["match_id"] + "/")
    for key in ("deals", "deadline_ms", "time_bank_ms", "max_strikes", "players", "rules"):
        assert probe_start[key] == match_start[key], key
    assert [s["name"] for s in probe_start["seats"]].count("watcher") == 1
    assert set(probe_headers) == set(match_headers)
    for key in ("user-agent", "content-type", "accept"):
        assert probe_headers.get(key) == match_headers.get(key), key
    # And the public API knows no match by the id a bot was told.
    assert MATCH_ID.fullmatch(match_start["match_id"])
    assert client.get(f"/api/bots/{bot_id}").get_json()["status"] == "active"


def server_requests(bot: pb.ProtocolBot, path: str) -> list[dict[str, str]]:
    assert bot.server is not None
    return [dict(r.headers) for r in bot.server.requests if r.path.endswith(path)]


# --- paused for what it does in real matches ----------------------------------------------


@pytest.fixture
def revivable() -> Iterator[dict[str, Any]]:
    """A real SDK bot that can be killed and brought back on the same port."""
    state: dict[str, Any] = {"server": serve_in_thread(first_legal, name="phoenix")}
    state["port"] = state["server"].server_address[1]
    state["url"] = state["server"].url

    def kill() -> None:
        state["server"].shutdown()
        state["server"].server_close()

    def revive() -> None:
        server = make_server(first_legal, name="phoenix", port=state["port"])
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        state["server"] = server

    state["kill"], state["revive"] = kill, revive
    yield state
    kill()


def admin_match(client: FlaskClient, bots: list[int], **limits: int) -> int:
    r = client.post("/api/matches", headers=admin_headers(), json={
        "bots": bots, "deals": 1, "rated": False,
        "limits": {"deadline_ms": 500, "time_bank_ms": 0, "call_deadline_ms": 500, **limits}})
    assert r.status_code == 202, r.get_json()
    return int(r.get_json()["id"])


def finished(client: FlaskClient, match_id: int) -> bool:
    return bool(client.get(f"/api/matches/{match_id}").get_json()["state"] == "finished")


@both_backends_drill_on_postgres
def test_a_dead_bot_leaves_the_ladder_after_two_forfeits_and_returns_after_a_check(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str], revivable: dict[str, Any],
    start_worker: Callable[[], Child],
) -> None:
    dead, _ = register(client, "phoenix", revivable["url"])
    others = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
    revivable["kill"]()
    start_worker()
    first = admin_match(client, [dead, *others], max_strikes=3)
    wait_for(lambda: finished(client, first), 120, what="match 1")
    assert client.get(f"/api/bots/{dead}").get_json()["status"] == "active"  # one is luck
    second = admin_match(client, [*others, dead], max_strikes=3)
    wait_for(lambda: finished(client, second), 120, what="match 2")
    body = client.get(f"/api/bots/{dead}").get_json()
    assert body["status"] == "unhealthy"
    reason = body["health"]["pause_reason"]
    assert reason.startswith("forfeited its last 2 matches") and f"#{second}" in reason
    page = client.get(f"/bots/{dead}").get_data(as_text=True)
    assert "Out of the ladder:" in page and "forfeited its last 2 matches" in page
    assert client.get(f"/api/bots/{dead}/check").get_json()["pause_reason"] == reason
    # Out of the ladder: three others cannot fill a table of four.
    assert run_round(app) == []
    # Back up; benched for its matches, the sweep leaves it alone until the bench is over
    # (tests/arena/test_bench.py), then checks it, and one pass returns it.
    revivable["revive"]()
    app.config["HEALTH_SWEEP_INTERVAL_S"] = 0.0
    assert dead not in sweep(app)
    end_bench(app, dead)
    assert dead in sweep(app)
    wait_for(lambda: client.get(f"/api/bots/{dead}").get_json()["status"] == "active", 60,
             what="the sweep's check to restore the bot")
    body = client.get(f"/api/bots/{dead}").get_json()
    assert body["health"]["pause_reason"] == ""
    # Its old forfeits no longer count: one new forfeit does not pause it again.
    revivable["kill"]()
    third = admin_match(client, [dead, *others], max_strikes=3)
    wait_for(lambda: finished(client, third), 120, what="match 3")
    assert client.get(f"/api/bots/{dead}").get_json()["status"] == "active"
    assert run_round(app) != []  # back in the ladder: a table of four again


@pytest.mark.drill
def test_a_bot_faulting_on_many_moves_is_paused_without_forfeiting(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str],
    start_worker: Callable[[], Child],
) -> None:
    """Every second move an unknown id (the probe, its first move, is fine): it never
    forfeits (no strike cap), but its fault rate pauses it after one match."""
    flaky = pb.ProtocolBot(name="flaky", misbehave=pb.unknown_id,
                           bad_moves=set(range(1, 10_000, 2)))
    with pb.running(flaky):
        bot_id, _ = register(client, "flaky", flaky.url)
        others = [register(client, n, sample_bots[n])[0] for n in ("random", "greedy",
                                                                  "planner")]
        start_worker()
        r = client.post("/api/matches", headers=admin_headers(), json={
            "bots": [bot_id, *others], "deals": 6, "seed": 11, "rated": False,
            "limits": {"max_strikes": 10_000}})
        match_id = r.get_json()["id"]
        wait_for(lambda: finished(client, match_id), 180, what="the match")
    match = client.get(f"/api/matches/{match_id}").get_json()
    seat = next(x for x in match["seats"] if x["bot"]["id"] == bot_id)
    assert not seat["forfeited"] and seat["strikes"] >= 10
    body = client.get(f"/api/bots/{bot_id}").get_json()
    assert body["status"] == "unhealthy"
    assert body["health"]["pause_reason"].startswith("faults on ")
    assert "over its last 1 matches" in body["health"]["pause_reason"]


def test_healthy_bots_are_not_paused(
    app: Flask, client: FlaskClient, four_bots: list[int], start_worker: Callable[[], Child]
) -> None:
    start_worker()
    ids = [admin_match(client, four_bots) for _ in range(3)]
    wait_for(lambda: all(finished(client, m) for m in ids), 180, what="three matches")
    assert {client.get(f"/api/bots/{b}").get_json()["status"] for b in four_bots} == {"active"}


# --- lost checks, the progress view -------------------------------------------------------


def test_a_lost_check_is_enqueued_again_by_the_sweep(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    bot_id, _ = submit(client, "lost", sample_bots["random"])
    get_queue(app).queue.empty()  # Redis lost the job
    app.config["HEALTH_CHECK_REQUEUE_AFTER_S"] = 0.0
    sweep(app)
    run_queued_jobs(app)
    check = client.get(f"/api/bots/{bot_id}/check").get_json()
    assert check["state"] == "passed", check
    with get_db(app).begin() as s:
        assert len(s.scalars(select(HealthCheck)).all()) == 1


def test_the_bot_page_shows_the_check_progress_and_result(
    client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    bot_id, _ = submit(client, "newbie", sample_bots["greedy"])
    page = client.get(f"/bots/{bot_id}").get_data(as_text=True)
    assert 'id="check-progress"' in page and 'data-state="queued"' in page
    assert f'data-check-url="/api/bots/{bot_id}/check"' in page
    assert "/static/check.js" in page and "<script>" not in page  # local JS only
    wait_check(client, bot_id)
    page = client.get(f"/bots/{bot_id}").get_data(as_text=True)
    assert "badge-active" in page
    with get_db(client.application).begin() as s:
        bot = s.get(Bot, bot_id)
        assert bot is not None and bot.check_state == "passed"


def test_a_refused_check_takes_as_long_as_a_silent_one(
    app: Flask, client: FlaskClient
) -> None:
    """How long a check takes must not tell a closed port from an open one: a refused
    connection is held to the ``GET /`` deadline like a silent server (only the misbehaving
    side is timed, from below)."""
    import time

    from ..ports import closed_port_url

    app.config["HEALTH_DESCRIBE_DEADLINE_MS"] = 600
    bot_id, _ = submit(client, "closed", closed_port_url())
    t0 = time.monotonic()
    run_queued_jobs(app)
    assert time.monotonic() - t0 >= 0.6
    check = client.get(f"/api/bots/{bot_id}/check").get_json()
    assert check["reason"] == "GET /: no HTTP answer from the bot URL within 0.6 s"
