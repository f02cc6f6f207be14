"""The one factory of Redis clients: addresses, settings, and a failover followed for real.

The full drill (web, worker, clock, relay and bots through a failover) is
tests/arena/test_sentinel_drill.py; here the pieces.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.sentinel import SentinelConnectionPool

from arena import create_app
from arena.core.queue import get_queue
from arena.core.redis_connect import (
    SentinelAddress,
    configured_url,
    connect,
    connect_async,
    limits_storage,
    parse_hosts,
    parse_sentinel_url,
    redacted,
    sentinel_url,
)
from arena.web.limits import storage

from .sentinels import SentinelCluster, cluster_or_skip, wait_until


def test_a_sentinel_address_round_trips_through_its_url() -> None:
    address = SentinelAddress((("127.0.0.1", 26379), ("::1", 26380)), "arena",
                              password="p@ss:w/rd", sentinel_password="s&cret", db=2)
    url = address.url()
    assert url.startswith("redis+sentinel://:p%40ss%3Aw%2Frd@127.0.0.1:26379,[::1]:26380/arena?")
    assert parse_sentinel_url(url) == address
    assert "p@ss" not in redacted(url) and "s&cret" not in redacted(url)
    assert "s%26cret" not in redacted(url)
    assert redacted("redis://:pw@host:6379/0") == "redis://:***@host:6379/0"
    assert redacted("redis://host:6379/0") == "redis://host:6379/0"


def test_sentinel_hosts_are_checked() -> None:
    assert parse_hosts(" a:1 , [::1]:2,") == (("a", 1), ("::1", 2))
    for bad in ("", "a", "a:", ":1", "a:b"):
        with pytest.raises(ValueError):
            parse_hosts(bad)
    with pytest.raises(ValueError, match="service"):
        parse_sentinel_url("redis+sentinel://a:1/")


def test_the_sentinel_settings_win_over_redis_url() -> None:
    cfg: dict[str, Any] = {"REDIS_URL": "redis://x:6379/0", "REDIS_SENTINELS": "",
                           "REDIS_SENTINEL_SERVICE": "arena"}
    assert configured_url(cfg) == "redis://x:6379/0"
    cfg.update(REDIS_SENTINELS="s1:26379,s2:26379", REDIS_PASSWORD="pw",
               REDIS_SENTINEL_PASSWORD="spw")
    url = configured_url(cfg)
    assert url == sentinel_url(cfg)
    assert parse_sentinel_url(url) == SentinelAddress(
        (("s1", 26379), ("s2", 26379)), "arena", "pw", "spw")
    cfg["REDIS_SENTINEL_SERVICE"] = ""
    with pytest.raises(ValueError, match="REDIS_SENTINEL_SERVICE"):
        configured_url(cfg)


def test_the_limits_get_their_sentinel_storage_on_the_primary_only() -> None:
    uri, options = limits_storage(
        SentinelAddress((("s1", 1), ("s2", 2)), "svc", "pw", "spw", db=3).url())
    assert uri == "redis+sentinel://s1:1,s2:2/svc"
    assert options["use_replicas"] is False
    assert options["password"] == "pw" and options["db"] == 3
    assert options["sentinel_kwargs"]["password"] == "spw"
    assert limits_storage("unix:///tmp/r.sock?db=0") == ("redis+unix:///tmp/r.sock?db=0", {})
    assert limits_storage("redis://h:1/0") == ("redis://h:1/0", {})


def test_a_sentinel_app_never_starts_the_embedded_redis(settings: dict[str, Any]) -> None:
    app = create_app({**settings, "REDIS_URL": "", "REDIS_SENTINELS": "127.0.0.1:1",
                      "REDIS_SENTINEL_SERVICE": "nowhere", "RATE_LIMITS_ENABLED": True})
    q = get_queue(app)
    assert q.url == "redis+sentinel://127.0.0.1:1/nowhere"
    assert isinstance(q.redis.connection_pool, SentinelConnectionPool)
    assert storage(app)[0] == "redis+sentinel://127.0.0.1:1/nowhere"
    assert not (Path(app.instance_path) / "redis.sock").exists()
    # No sentinel answers: the app starts and serves all the same (the limits count in memory).
    assert app.test_client().get("/healthz").status_code == 200


# --- a real failover -----------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SentinelCluster]:
    made = cluster_or_skip(tmp_path / "sentinel", "connect-test")
    try:
        made.start()
        yield made
    finally:
        made.stop()


def test_sync_and_async_clients_follow_a_failover_by_themselves(
        cluster: SentinelCluster) -> None:
    url = SentinelAddress(parse_hosts(cluster.hosts), cluster.service).url()
    sync = connect(url, socket_timeout=5, socket_connect_timeout=2)
    sync.set("k", 1)

    async def both() -> None:
        plain = connect_async(url, decode_responses=True, socket_connect_timeout=2)
        pooled = connect_async(url, max_connections=2, pool_timeout=10, decode_responses=True,
                               socket_connect_timeout=2)
        assert await plain.get("k") == "1" and await pooled.get("k") == "1"
        old = cluster.kill_primary()
        cluster.wait_failover(old, 60)
        for client in (plain, pooled):
            deadline = asyncio.get_running_loop().time() + 60
            while True:  # the first command after the kill may fail: then it reconnects
                try:
                    await client.incr("k")
                    break
                except Exception:
                    assert asyncio.get_running_loop().time() < deadline
                    await asyncio.sleep(0.1)
        assert await pooled.get("k") in ("2", "3")  # the write before the kill was replicated
        for client in (plain, pooled):  # and the connections to the sentinels
            await client.aclose()
            await client.connection_pool.sentinel_manager.aclose()  # type: ignore[attr-defined]

    asyncio.run(both())
    wait_until("the sync client to reach the new primary", lambda: sync.incr("k") >= 3, 60)
    _host, port = sync.connection_pool.get_master_address()  # type: ignore[attr-defined]
    assert port != cluster.data_ports[0]
    sync.close()
    sync.connection_pool.sentinel_manager.close()  # type: ignore[attr-defined]
