"""Live matches for real: a real worker plays real bots, publishes to the real Redis, the real
relay (``arena live``) streams it, and the test reads the stream as a spectator would.

* the stream shows the match turn by turn, and no card that is still hidden (in a hand,
  not yet played) appears in any event before its deal's end;
* at each deal's end the hands are revealed, equal to the log's;
* a viewer that reconnects with ``Last-Event-ID`` resumes with no gap and no duplicate,
  also while the match is being played;
* the bounds: per-address streams, request size, request time, unknown matches.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis

from arena.live.channel import LivePublisher, match_key, prefix_of
from arena.ops.procs import Child, start_relay, stop_all
from referee import find_ruleset
from referee.game.cards import mask_texts
from referee.runner.match import run_match
from referee.wire.players import HttpPlayer
from sample_bots import greedy_bot
from sample_bots.sdk import serve_in_thread
from tests.arena.conftest import admin_headers, register, wait_for, worker_env
from tests.arena.sse import Event, Stream

CARD = re.compile(r"(?<![A-Za-z0-9])[3-9TJQKA2][DCHS](?![A-Za-z0-9])")


def cards_in(text: str) -> set[str]:
    return set(CARD.findall(text))


@pytest.fixture
def relay(app: Flask) -> Iterator[Callable[..., str]]:
    """Start the relay with extra settings; returns its base URL."""
    children: list[Child] = []

    def start(**overrides: Any) -> str:
        env = {**worker_env(app), **{k: str(v) for k, v in overrides.items()}}
        child = start_relay(env)
        children.append(child)
        assert child.url is not None
        return child.url

    yield start
    stop_all(children)


def open_when_live(url: str, timeout_s: float = 60.0, **kw: Any) -> Stream:
    """Open the stream as soon as the match has live events (404 before it started)."""
    deadline = time.monotonic() + timeout_s
    while True:
        s = Stream(url, **kw)
        if s.status == 200 or time.monotonic() > deadline:
            return s
        s.close()
        time.sleep(0.05)


def new_match(client: FlaskClient, bots: list[int], deals: int = 2, seed: int = 5) -> int:
    r = client.post("/api/matches", json={"bots": bots, "deals": deals, "seed": seed},
                    headers=admin_headers())
    assert r.status_code == 202, r.get_json()
    return int(r.get_json()["id"])


def read_all(stream: Stream) -> list[Event]:
    return list(stream.events())


def check_no_hidden_card(events: list[Event], log: dict[str, Any]) -> None:
    """Every card in an event before its deal's end was played in that deal by then."""
    deal_of: dict[int, dict[str, Any]] = {d["index"]: d for d in log["deals"]}
    played: set[str] = set()
    current: int | None = None
    for ev in events:
        body = ev.json
        if ev.event == "deal":
            current, played = body["deal"], set()
        elif ev.event == "turn":
            turn = deal_of[body["deal"]]["turns"][body["turn"]]
            if turn["move"] != "pass":
                played |= set(turn["move"].split("-"))
        if ev.event == "deal_end":
            current = None
            continue
        if current is None:
            continue
        held = {c for hand in deal_of[current]["hands"] for c in hand}
        leaked = (cards_in(ev.data) & held) - played
        assert not leaked, f"{ev.event} {ev.id} showed {sorted(leaked)} before the deal's end"


@pytest.mark.drill
def test_a_spectator_watches_a_real_match_and_sees_no_hidden_card(
        app: Flask, client: FlaskClient, four_bots: list[int], start_worker: Callable[[], Child],
        relay: Callable[..., str]) -> None:
    base = relay()
    match_id = new_match(client, four_bots, deals=2)
    start_worker()
    with open_when_live(f"{base}/live/matches/{match_id}/events") as stream:
        assert stream.status == 200
        assert stream.headers["content-type"] == "text/event-stream"
        events = read_all(stream)
    wait_for(lambda: client.get(f"/api/matches/{match_id}").get_json()["state"] == "finished",
             what="the match to be stored")
    log = client.get(f"/api/matches/{match_id}/log").get_json()
    kinds = [e.event for e in events]
    assert kinds[0] == "start" and kinds[-1] == "end"
    # The states the match page's badge follows (static/replay.js): running, then finished.
    assert events[0].json["state"] == "running"
    assert events[-1].json["state"] == "finished"
    assert events[-1].json["totals"] == log["result"]["totals"]
    assert kinds.count("deal") == kinds.count("deal_end") == 2
    for d in log["deals"]:
        turns = [e.json for e in events if e.event == "turn" and e.json["deal"] == d["index"]]
        assert [t["turn"] for t in turns] == list(range(len(d["turns"])))
        for t, logged in zip(turns, d["turns"], strict=True):
            assert t["seat"] == logged["seat"]
            assert set(t["cards"]) == (set() if logged["move"] == "pass"
                                       else set(logged["move"].split("-")))
            assert "legal" not in t and "say" not in t and "detail" not in t
        end = next(e.json for e in events if e.event == "deal_end"
                   and e.json["deal"] == d["index"])
        assert end["revealed"] is True
        assert end["frames"]["hands"] == d["hands"]  # revealed at the deal's end, exactly
        assert end["outcome"] == d["outcome"]
    ids = [e.id for e in events]
    assert all(ids) and len(set(ids)) == len(ids)
    check_no_hidden_card(events, log)
    # The seed decides every hand: no spectator learns it before the match is over.
    assert "seed" in client.get(f"/api/matches/{match_id}").get_json()


def test_the_checker_catches_a_hidden_card(app: Flask) -> None:
    log = {"deals": [{"index": 0, "hands": [["3D", "4D"], ["5S"]],
                      "turns": [{"move": "3D"}]}]}
    events = [Event("1-0", "deal", '{"deal":0}'),
              Event("2-0", "turn", '{"deal":0,"turn":0,"cards":["3D"],"x":"5S"}')]
    with pytest.raises(AssertionError, match="5S"):
        check_no_hidden_card(events, log)


@pytest.mark.drill
def test_reconnecting_resumes_with_no_gap_and_no_duplicate(
        app: Flask, client: FlaskClient, redis: Redis, relay: Callable[..., str],
        sample_bots: dict[str, str], start_worker: Callable[[], Child]) -> None:
    # One slow bot, so that the viewer reconnects while the match is being played.
    def slow(request: dict[str, Any]) -> str:
        time.sleep(0.02)
        return str(greedy_bot.choose(request))

    srv = serve_in_thread(slow, name="slow")
    try:
        bots = [register(client, "slow", srv.url)[0]] + [
            register(client, n, sample_bots[n])[0] for n in ("random", "greedy", "planner")]
        base = relay()
        match_id = new_match(client, bots, deals=2, seed=9)
        start_worker()
        url = f"{base}/live/matches/{match_id}/events"
        got: list[Event] = []
        reconnects = 0
        last: str | None = None
        seed_hidden = False
        while not got or got[-1].event != "end":
            with open_when_live(url, last_event_id=last) as stream:
                assert stream.status == 200
                for ev in stream.events():
                    got.append(ev)
                    if len(got) == 3:  # the match is being played: its seed stays secret
                        shown = client.get(f"/api/matches/{match_id}").get_json()
                        page = client.get(f"/matches/{match_id}").get_data(as_text=True)
                        assert shown["state"] == "running"
                        seed_hidden = "seed" not in shown and "seed 9" not in page
                    if ev.event == "turn" and ev.json["turn"] % 7 == 3:
                        break  # drop the connection now and then, mid-deal
                last = got[-1].id
                reconnects += 1
        key = match_key(prefix_of(app.config), match_id)
        stored = [entry_id.decode() for entry_id, _ in redis.xrange(key)]
        assert [e.id for e in got] == stored  # every event once, in order
        assert reconnects > 3 and seed_hidden
        # Reconnecting after the final event: 204, the browser stops reconnecting.
        with Stream(url, last_event_id=got[-1].id) as after:
            assert after.status == 204
        with Stream(url, last_event_id=got[5].id) as again:
            assert [e.id for e in again.events()] == stored[6:]
    finally:
        srv.shutdown()
        srv.server_close()


def test_bounds_of_the_relay(app: Flask, redis: Redis, relay: Callable[..., str]) -> None:
    base = relay(LIVE_MAX_VIEWERS_PER_IP=2, LIVE_HEADER_TIMEOUT_S=0.5)
    key = match_key(prefix_of(app.config), 77)
    redis.xadd(key, {"t": "start", "d": "{}"})
    url = f"{base}/live/matches/77/events"
    with Stream(url) as a, Stream(url) as b:
        assert a.status == b.status == 200
        with Stream(url) as c:
            assert c.status == 429
    with Stream(f"{base}/live/matches/78/events") as missing:
        assert missing.status == 404
    with Stream(url, headers={"X-Big": "x" * 9000}) as big:
        assert big.status == 431
    # A request that never ends is cut: the relay closes the connection.
    with socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1]))) as sock:
        sock.sendall(b"GET /live/matches/77/events HTTP/1.1\r\n")
        sock.settimeout(30)
        assert sock.recv(100) == b""
    redis.delete(key)


def test_publishing_never_stops_a_match(app: Flask, sample_bots: dict[str, str]) -> None:
    dead = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
    rules = find_ruleset("standard")
    pub = LivePublisher(dead, app.config, 1, rules, reveal=True)
    players = [HttpPlayer(sample_bots[n]) for n in ("random", "greedy", "planner", "random-2")]
    try:
        record = run_match(rules, players, 3, 1, watcher=pub)
    finally:
        for p in players:
            p.close()
    pub.flush()
    assert pub.broken and record.deals[0].outcome is not None


def test_the_event_size_bound_counts_bytes(app: Flask, redis: Redis) -> None:
    """``LIVE_EVENT_MAX_BYTES`` bounds an event's UTF-8 bytes, not its characters: a start
    event whose bot names are written beyond ASCII (2 bytes a character) is refused when its
    bytes pass the bound although its characters do not."""
    app.config["LIVE_EVENT_MAX_BYTES"] = 1000
    rules = find_ruleset("standard")
    pub = LivePublisher(redis, app.config, 4343, rules, reveal=True)
    try:
        fits = {"seats": [{"name": "é" * 60} for _ in range(4)]}     # ~520 bytes
        over = {"seats": [{"name": "é" * 200} for _ in range(4)]}    # ~1,690 bytes, 890 chars
        text = json.dumps(over, ensure_ascii=False)
        assert len(text) < 1000 < len(text.encode())
        pub.publish("start", fits)
        pub.publish("start", over)
        pub.close()
        sent = [f[b"d"] for _, f in redis.xrange(pub.key)]
    finally:
        redis.delete(pub.key)
    assert len(sent) == 1 and len(sent[0]) <= 1000 and "é" in sent[0].decode()


def test_hands_are_kept_when_the_deals_will_be_dealt_again(
        app: Flask, redis: Redis, sample_bots: dict[str, str]) -> None:
    rules = find_ruleset("standard")
    pub = LivePublisher(redis, app.config, 4242, rules, reveal=False)
    players = [HttpPlayer(sample_bots[n]) for n in ("random", "greedy", "planner", "random-2")]
    try:
        record = run_match(rules, players, 3, 1, watcher=pub)
    finally:
        for p in players:
            p.close()
    pub.close()
    entries = redis.xrange(pub.key)
    redis.delete(pub.key)
    held = {c for hand in record.deals[0].hands for c in mask_texts(hand)}
    end = [f for _, f in entries if f[b"t"] == b"deal_end"]
    assert len(end) == 1 and b'"revealed":false' in end[0][b"d"]
    played = set()
    for _, f in entries:
        if f[b"t"] == b"turn":
            played |= cards_in(f[b"d"].decode())
    assert played <= held
    assert not cards_in(end[0][b"d"].decode())


@pytest.mark.drill
def test_a_crowd_joining_at_once_gets_the_whole_match(app: Flask, redis: Redis,
                                                      relay: Callable[..., str]) -> None:
    base = relay(LIVE_MAX_VIEWERS_PER_IP=500)
    key = match_key(prefix_of(app.config), 91)
    pipe = redis.pipeline()
    pipe.xadd(key, {"t": "start", "d": "{}"})
    for n in range(2000):
        pipe.xadd(key, {"t": "turn", "d": f'{{"n":{n},"pad":"{"x" * 200}"}}'})
    pipe.xadd(key, {"t": "end", "d": '{"state":"finished"}'})
    pipe.execute()
    stored = [entry_id.decode() for entry_id, _ in redis.xrange(key)]
    try:
        crowd = [Stream(f"{base}/live/matches/91/events") for _ in range(150)]
        try:
            assert {s.status for s in crowd} == {200}
            for s in crowd:
                assert [e.id for e in s.events()] == stored
        finally:
            for s in crowd:
                s.close()
    finally:
        redis.delete(key)
