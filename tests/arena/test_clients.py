"""One rule for "one client" (:mod:`arena.core.clients`): IPv4 exact, IPv6 per /64, IPv4-mapped
IPv6 as IPv4, and every counter of the service follows it: the rate limits, the live relay's
streams per client, the scope of an anonymous ``Idempotency-Key``.  A module that reads a
client's address and is not checked here fails :func:`test_every_reader_of_an_address_is_a_
counter_checked_here`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis

import arena
from arena.core.clients import client_key
from arena.live.channel import match_key, prefix_of
from arena.ops.procs import Child, start_relay, stop_all
from tests.arena.conftest import worker_env
from tests.arena.sse import Stream


@pytest.mark.parametrize(("addr", "client"), [
    ("203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
    ("2001:DB8:1:2::abcd", "2001:db8:1:2::/64"),
    ("[2001:db8:1:2::1]", "2001:db8:1:2::/64"),
    ("fe80::1%eth0", "fe80::/64"),
    ("::ffff:203.0.113.7", "203.0.113.7"),
    ("::1", "::/64"),
    ("not an address", "not an address"),
    ("", "unknown"),
    (None, "unknown"),
])
def test_the_rule(addr: str | None, client: str) -> None:
    assert client_key(addr) == client


def test_neighbours_in_one_64_are_one_client_and_the_next_64_another() -> None:
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:9::9")
    assert client_key("2001:db8:1:2::1") != client_key("2001:db8:1:3::1")
    assert client_key("203.0.113.7") != client_key("203.0.113.8")


# --- every counter ------------------------------------------------------------------------------

COUNTERS = {
    "web/limits.py": "the rate limits (tests/arena/test_limits.py and below)",
    "web/idempotency.py": "the scope of an anonymous Idempotency-Key (below)",
    "live/relay.py": "the live relay's streams per client (below)",
}
"""Every module that reads a client's address, and where its counting is checked."""
READS_ADDRESS = re.compile(r"remote_addr|peername|x-forwarded-for", re.IGNORECASE)


def test_every_reader_of_an_address_is_a_counter_checked_here() -> None:
    root = Path(arena.__file__).parent
    readers = set()
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        if rel in ("core/clients.py", "__init__.py", "core/config.py"):  # rule; ProxyFix; settings
            continue
        code = "\n".join(line for line in path.read_text().splitlines()
                         if not line.lstrip().startswith(("#", '"', "'", "``", ":")))
        if READS_ADDRESS.search(code):
            readers.add(rel)
    assert readers <= set(COUNTERS), f"new readers of a client address: {readers - set(COUNTERS)}"
    for rel in COUNTERS:
        assert "client_key(" in (root / rel).read_text(), f"{rel} does not use client_key"


def from_addr(addr: str) -> dict[str, Any]:
    return {"environ_base": {"REMOTE_ADDR": addr}}


@pytest.fixture
def settings(settings: dict[str, Any]) -> dict[str, Any]:
    settings.update({"RATE_LIMITS_ENABLED": True,
                     "RATE_LIMIT_BOT_SUBMIT_PER_CLIENT": "2 per minute"})
    return settings


def test_the_rate_limits_count_a_mapped_ipv4_as_the_ipv4(client: FlaskClient) -> None:
    body = {"name": "bad name", "url": "http://x"}  # refused before any outside call, counted
    for addr in ("198.51.100.61", "::ffff:198.51.100.61"):
        assert client.post("/api/bots", json=body, **from_addr(addr)).status_code == 400
    assert client.post("/api/bots", json=body, **from_addr("198.51.100.61")).status_code == 429
    for addr in ("2001:db8:7:7::1", "2001:db8:7:7::2"):
        assert client.post("/api/bots", json=body, **from_addr(addr)).status_code == 400
    assert client.post("/api/bots", json=body, **from_addr("2001:db8:7:7:1::3")).status_code == 429


def test_an_anonymous_idempotency_key_belongs_to_the_64(
    app: Flask, client: FlaskClient, sample_bots: dict[str, str]
) -> None:
    """The same key and body from two addresses of one /64 are one client's retry: the
    second is a replay and creates nothing (from another /64 it would be a new request)."""
    body = {"name": "sixty-four", "url": sample_bots["random"]}
    headers = {"Idempotency-Key": "k-64-0001"}
    first = client.post("/api/bots", json=body, headers=headers,
                        **from_addr("2001:db8:5:5::1"))
    assert first.status_code == 202, first.get_json()
    again = client.post("/api/bots", json=body, headers=headers,
                        **from_addr("2001:db8:5:5:abcd::2"))
    assert again.status_code == 202 and again.headers["Idempotent-Replayed"] == "true"
    other = client.post("/api/bots", json=body, headers=headers,
                        **from_addr("2001:db8:5:6::1"))
    assert other.status_code == 409 and "Idempotent-Replayed" not in other.headers


@pytest.fixture
def relay(app: Flask) -> Iterator[Callable[..., str]]:
    children: list[Child] = []

    def start(**overrides: Any) -> str:
        child = start_relay({**worker_env(app), **{k: str(v) for k, v in overrides.items()}})
        children.append(child)
        assert child.url is not None
        return child.url

    yield start
    stop_all(children)


def test_the_relay_counts_streams_per_client_by_the_same_rule(
    app: Flask, redis: Redis, relay: Callable[..., str]
) -> None:
    base = relay(LIVE_MAX_VIEWERS_PER_IP=1, TRUSTED_PROXY_HOPS=1)
    key = match_key(prefix_of(app.config), 91)
    redis.xadd(key, {"t": "start", "d": "{}"})
    url = f"{base}/live/matches/91/events"

    def via(addr: str) -> Stream:
        return Stream(url, headers={"X-Forwarded-For": addr})

    try:
        with via("2001:db8:9:9::1") as first:
            assert first.status == 200
            with via("2001:db8:9:9:ffff::2") as neighbour:  # the same /64: the same client
                assert neighbour.status == 429
            with via("2001:db8:9:a::1") as next_64:
                assert next_64.status == 200
        with via("198.51.100.9") as v4:
            assert v4.status == 200
            with via("::ffff:198.51.100.9") as mapped:
                assert mapped.status == 429
    finally:
        redis.delete(key)
