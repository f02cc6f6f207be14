"""Live streams through the shipped production shape: nginx (``deploy/nginx.conf``) in front
of the live relay (``arena live``) and gunicorn, on loopback.

An event published while a viewer is connected reaches it through nginx at once (nginx
must not buffer the stream), ``Last-Event-ID`` resumes through nginx, and the relay counts
streams per client address from nginx's ``X-Forwarded-For`` (one trusted hop).

Skipped (saying so) when nginx is not installed, except where ``ARENA_REQUIRE_NGINX`` is set.
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from redis import Redis

from arena.live.channel import match_key
from arena.ops.edge import nginx_binary, start_gunicorn, start_nginx, wait_http
from arena.ops.procs import Child, start_relay, stop_all
from tests.arena.conftest import wait_for
from tests.arena.sse import Stream

from .test_slow_clients import free_port, redis_url

pytestmark = pytest.mark.drill


@dataclass
class LiveEdge:
    nginx: str
    redis: Redis
    prefix: str


@pytest.fixture(scope="module")
def live_edge() -> Iterator[LiveEdge]:
    if nginx_binary() is None:
        if os.environ.get("ARENA_REQUIRE_NGINX"):
            pytest.fail("nginx is not installed but ARENA_REQUIRE_NGINX is set")
        pytest.skip("nginx is not installed (Debian: apt-get install nginx); the production "
                    "shape tests are skipped")
    url = redis_url()
    if url is None:
        pytest.skip("no Redis on 127.0.0.1:6379: the live relay needs one")
    runtime = Path(tempfile.mkdtemp(prefix="arena-live-edge-"))
    queue = f"arena-live-edge-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "ARENA_INSTANCE_PATH": str(runtime / "instance"),
           "SECRET_KEY": uuid.uuid4().hex + uuid.uuid4().hex, "TRUSTED_PROXY_HOPS": "1",
           "QUEUE_NAME": queue, "REDIS_NAMESPACE": queue, "REDIS_URL": url,
           "RATE_LIMITS_ENABLED": "0",
           "LIVE_MAX_VIEWERS_PER_IP": "2"}
    env.pop("ADMIN_TOKEN", None)
    children: list[Child] = []
    try:
        gport, nport = free_port(), free_port()
        gunicorn = start_gunicorn(host="127.0.0.1", port=gport, env=env)
        children.append(gunicorn)
        relay = start_relay({**env, "LIVE_WEB_URL": f"http://127.0.0.1:{gport}"})
        children.append(relay)
        wait_http(f"http://127.0.0.1:{gport}/healthz", timeout_s=120, child=gunicorn)
        assert relay.url is not None
        nginx = start_nginx(listen_host="127.0.0.1", listen_port=nport,
                            upstream=f"127.0.0.1:{gport}", runtime_dir=runtime / "nginx",
                            live_upstream=relay.url.removeprefix("http://"))
        children.append(nginx)
        wait_http(f"http://127.0.0.1:{nport}/live/healthz", timeout_s=60, child=nginx)
        yield LiveEdge(f"http://127.0.0.1:{nport}", Redis.from_url(url), f"{queue}:live")
    finally:
        stop_all(children)


def test_events_pass_through_nginx_as_they_come(live_edge: LiveEdge) -> None:
    key = match_key(live_edge.prefix, 5)
    r = live_edge.redis
    first = r.xadd(key, {"t": "start", "d": '{"n":0}'}).decode()
    try:
        url = f"{live_edge.nginx}/live/matches/5/events"
        with Stream(url) as viewer:
            assert viewer.status == 200
            assert viewer.headers["content-type"] == "text/event-stream"
            events = viewer.events()
            assert next(events).id == first
            # Published now, while the viewer waits: it must come through before any end.
            for n in range(1, 4):
                sent = r.xadd(key, {"t": "turn", "d": f'{{"n":{n}}}'}).decode()
                got = next(events)
                assert (got.id, got.event, got.json) == (sent, "turn", {"n": n})
        # Resuming through nginx: from the event after the one named.
        with Stream(url, last_event_id=first) as again:
            ids = [e.id for _, e in zip(range(3), again.events(), strict=False)]
        assert ids == [x.decode() for x, _ in r.xrange(key)][1:4]
    finally:
        r.delete(key)


def relay_viewers(live_edge: LiveEdge) -> int:
    with urllib.request.urlopen(f"{live_edge.nginx}/live/healthz", timeout=30) as r:
        return int(json.load(r)["viewers"])


def test_streams_are_counted_per_client_behind_nginx(live_edge: LiveEdge) -> None:
    # The previous test's streams count until the relay sees them closed (through nginx, a
    # moment later; on a saturated machine long enough for the second stream to get a 429).
    wait_for(lambda: relay_viewers(live_edge) == 0, 60, what="earlier streams to be let go")
    key = match_key(live_edge.prefix, 6)
    live_edge.redis.xadd(key, {"t": "start", "d": "{}"})
    url = f"{live_edge.nginx}/live/matches/6/events"
    try:
        with Stream(url) as a, Stream(url) as b:
            assert a.status == b.status == 200
            with Stream(url) as c:  # nginx's X-Forwarded-For names this client: the third
                assert c.status == 429
            # Whatever the client claims in its own X-Forwarded-For, nginx replaces it.
            with Stream(url, headers={"X-Forwarded-For": "203.0.113.9"}) as d:
                assert d.status == 429
    finally:
        live_edge.redis.delete(key)
