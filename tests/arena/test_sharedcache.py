"""The deployment-wide tier of the response cache (:mod:`arena.web.sharedcache`), on the real
Redis: one render serves every process, within the same bound; a write through any process
stales what was stored before it; a Redis that fails or holds garbage costs a render, never
a page."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from redis import Redis

from arena import create_app
from arena.core.rediskeys import namespace_of
from arena.core.storage import get_db, upgrade
from arena.web.readcache import TOKEN_SLOT, ReadCache, get_cache
from arena.web.sharedcache import SharedTier

from ..ports import closed_port
from .conftest import both_backends
from .test_readcache import Clock, statements

Processes = tuple[Flask, Flask, Clock]


@pytest.fixture
def processes(settings: dict[str, Any]) -> Iterator[Processes]:
    """Two apps on one database and one Redis namespace: two web processes of a deployment
    (each with its own memory), on one clock."""
    wall = Clock()
    apps = [create_app({**settings, "READ_CACHE_S": 5.0}) for _ in range(2)]
    upgrade(get_db(apps[0]))
    for app in apps:
        cache = get_cache(app)
        assert cache is not None and cache.shared is not None
        cache.clock = cache.shared.wall = wall
    yield apps[0], apps[1], wall
    for app in apps:
        get_db(app).dispose()


@both_backends
def test_a_render_in_one_process_serves_the_others(processes: Processes) -> None:
    a, b, _ = processes
    first = a.test_client().get("/api/bots")
    sent = statements(b)
    other = b.test_client().get("/api/bots")
    assert sent == []  # nothing rendered in b
    assert other.get_data() == first.get_data() and other.headers["Age"] == "0"
    cache = get_cache(b)
    assert cache is not None and cache.shared_hits == 1 and cache.misses == 0


@both_backends
def test_a_write_through_any_process_stales_every_earlier_render(
        processes: Processes, settings: dict[str, Any]) -> None:
    a, b, wall = processes
    assert a.test_client().get("/api/bots").get_json()["total"] == 0  # stored for everyone
    r = b.test_client().post("/api/bots", json={"name": "late", "url": "http://127.0.0.1:9/x"})
    assert r.status_code == 202
    assert b.test_client().get("/api/bots").get_json()["total"] == 1  # the writer's process
    newcomer = create_app({**settings, "READ_CACHE_S": 5.0})  # a process that starts now
    cache = get_cache(newcomer)
    assert cache is not None and cache.shared is not None
    cache.clock = cache.shared.wall = wall
    try:
        assert newcomer.test_client().get("/api/bots").get_json()["total"] == 1
    finally:
        get_db(newcomer).dispose()


@both_backends
def test_no_shared_answer_is_older_than_the_bound(processes: Processes) -> None:
    a, b, wall = processes
    a.test_client().get("/api/bots")
    wall.now += 5.0  # the whole bound: gone for everyone (and Redis drops it too)
    sent = statements(b)
    fresh = b.test_client().get("/api/bots")
    assert sent and "Age" not in fresh.headers


@both_backends
def test_an_aging_answer_is_rendered_anew_not_refetched_at_the_same_age(
        processes: Processes) -> None:
    """Past half its life an entry is refreshed by one request; the shared copy is as old
    (this process stored it), so that request renders instead of taking it back."""
    a, _, wall = processes
    client = a.test_client()
    client.get("/api/bots")
    wall.now += 2.6
    sent = statements(a)
    again = client.get("/api/bots")
    assert sent and "Age" not in again.headers


@both_backends
def test_a_shared_form_page_gets_each_visitors_token_whoever_rendered_it(
        processes: Processes) -> None:
    a, b, _ = processes
    # Each process writes its own slot where a visitor's token goes: stand in for a
    # renderer whose slot differs from this process's.
    cache_a = get_cache(a)
    assert cache_a is not None and cache_a.shared is not None
    cache_a.shared.slot = "csrfslot" + "0" * 32
    rendered = a.test_client().get("/bots/new")
    assert rendered.status_code == 200
    key = next(k for k in Redis.from_url(str(a.config["REDIS_URL"])).scan_iter(
        f"{namespace_of(a.config)}:readcache:entry:*"))
    raw = Redis.from_url(str(a.config["REDIS_URL"])).get(key)
    assert raw is not None and TOKEN_SLOT.encode() in raw  # what a's render wrote
    # Rewrite the stored render as a process with the other slot would have stored it.
    Redis.from_url(str(a.config["REDIS_URL"])).set(
        key, raw.replace(TOKEN_SLOT.encode(), cache_a.shared.slot.encode()), px=5000)
    visitor = b.test_client()
    page = visitor.get("/bots/new")
    assert page.headers["Age"] == "0"
    tokens = re.findall(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))
    assert len(tokens) == 1 and "csrfslot" not in tokens[0]
    ok = visitor.post("/bots/new", data={"csrf_token": tokens[0], "name": "x", "url": "nope"})
    assert ok.status_code == 400 and "expired" not in ok.get_data(as_text=True)


def test_garbage_in_redis_is_a_miss_not_an_error(redis: Redis, redis_url: str) -> None:
    wall = Clock()
    tier = SharedTier(lambda: Redis.from_url(redis_url), "arena-test-garbage", 5.0, TOKEN_SLOT,
                      wall=wall)
    for junk in (b"no newline", b"{not json\nbody", b'{"s":200}\nbody',
                 b'{"s":"x","h":[],"t":0,"g":0,"k":""}\n'):
        redis.set("arena-test-garbage:readcache:entry:k", junk, px=5000)
        assert tier.lookup("k") == (None, 0)
    redis.delete("arena-test-garbage:readcache:entry:k")


def test_a_failing_redis_costs_a_render_and_one_warning_not_a_page(
        caplog: pytest.LogCaptureFixture) -> None:
    port = closed_port()
    tier = SharedTier(lambda: Redis.from_url(f"redis://127.0.0.1:{port}/0",
                                             socket_connect_timeout=0.2, socket_timeout=0.2),
                      "arena-test-down", 5.0, TOKEN_SLOT)
    cache = ReadCache(5.0, 2**20, shared=tier)
    app = Flask(__name__)
    renders: list[int] = []

    def render() -> Any:
        renders.append(1)
        return app.make_response("fresh")

    with caplog.at_level(logging.WARNING, logger="arena.web.sharedcache"), \
            app.test_request_context("/"):
        for key in ("a", "b", "c"):
            assert cache.answer(key, render).get_data() == b"fresh"
        cache.clear()  # a write: the bump fails quietly too
    assert len(renders) == 3
    warnings = [r for r in caplog.records if "shared read cache" in r.getMessage()]
    assert len(warnings) == 1  # then it steps aside instead of timing out on every miss
