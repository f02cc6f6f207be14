"""The shipped production shape - nginx with ``deploy/nginx.conf`` in front of gunicorn with
``deploy/gunicorn.conf.py`` - on loopback: slow clients cannot starve it, nginx cuts them by
its timeouts, and what reaches the app is what the app expects (complete requests, the real
client address, JSON errors).

Skipped (saying so) when nginx is not installed, except where ``ARENA_REQUIRE_NGINX`` is set
(``.ci/run`` installs nginx and sets it): there it fails instead.
"""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from redis import Redis

from arena.ops.edge import NGINX_CONF, nginx_binary, start_gunicorn, start_nginx, wait_http
from arena.ops.procs import Child, stop_all
from tests.ports import free_port

from .slowclients import Crowd, wait_until

pytestmark = pytest.mark.drill

SLOWLORIS = 300
SLOW_BODIES = 50
STALLED_BODIES = 10
PROBES = 20
PROBE_TIMEOUT_S = 5.0
CUT_MARGIN_S = 60.0
"""How late after its timeout nginx may cut a slow client on a saturated machine."""


def nginx_timeout(name: str) -> float:
    m = re.search(rf"^\s*{name}\s+(\d+)s;", NGINX_CONF.read_text(), re.M)
    assert m, f"{name} not in {NGINX_CONF}"
    return float(m.group(1))




def redis_url() -> str | None:
    url = os.environ.get("ARENA_TEST_REDIS_URL", "redis://127.0.0.1:6379") + "/0"
    try:
        Redis.from_url(url, socket_connect_timeout=2).ping()
    except Exception:
        return None
    return url


@dataclass
class Edge:
    nginx: str
    gunicorn: str


@pytest.fixture(scope="module")
def edge() -> Iterator[Edge]:
    if nginx_binary() is None:
        if os.environ.get("ARENA_REQUIRE_NGINX"):
            pytest.fail("nginx is not installed but ARENA_REQUIRE_NGINX is set")
        pytest.skip("nginx is not installed (Debian: apt-get install nginx); the production "
                    "shape tests are skipped")
    runtime = Path(tempfile.mkdtemp(prefix="arena-edge-"))
    redis = redis_url()
    env = {
        **os.environ,
        "ARENA_INSTANCE_PATH": str(runtime / "instance"),
        "SECRET_KEY": uuid.uuid4().hex + uuid.uuid4().hex,
        "TRUSTED_PROXY_HOPS": "1",
        "QUEUE_NAME": f"arena-edge-{uuid.uuid4().hex[:8]}",
        # A namespace of its own: without a DATABASE_URL every edge (another test run's on
        # this machine's Redis too) would count its rate limits under the embedded default.
        "REDIS_NAMESPACE": f"arena-edge-{uuid.uuid4().hex[:8]}",
        "RATE_LIMITS_ENABLED": "1" if redis else "0",
        "RATE_LIMIT_BOT_SUBMIT_PER_CLIENT": "3 per minute",
        "REDIS_URL": redis or "",
    }
    env.pop("ADMIN_TOKEN", None)
    children: list[Child] = []
    try:
        gport, nport = free_port(), free_port()
        gunicorn = start_gunicorn(host="127.0.0.1", port=gport, env=env)
        children.append(gunicorn)
        wait_http(f"http://127.0.0.1:{gport}/healthz", timeout_s=120, child=gunicorn)
        nginx = start_nginx(listen_host="127.0.0.1", listen_port=nport,
                            upstream=f"127.0.0.1:{gport}", runtime_dir=runtime / "nginx")
        children.append(nginx)
        wait_http(f"http://127.0.0.1:{nport}/healthz", timeout_s=60, child=nginx)
        yield Edge(nginx=f"http://127.0.0.1:{nport}", gunicorn=f"http://127.0.0.1:{gport}")
    finally:
        stop_all(children)


def test_slow_clients_cannot_starve_the_production_shape(edge: Edge) -> None:
    port = int(edge.nginx.rsplit(":", 1)[1])
    crowd = Crowd("127.0.0.1", port, every_s=1.0)
    try:
        crowd.open("slowloris", SLOWLORIS)
        crowd.open("slow_body", SLOW_BODIES)
        crowd.open("stalled_body", STALLED_BODIES)
        crowd.start()
        # A well-behaved client meanwhile: every probe answered (each within 5 s).
        with requests.Session() as s:
            for _ in range(PROBES):
                r = s.get(f"{edge.nginx}/healthz", timeout=PROBE_TIMEOUT_S)
                assert r.status_code == 200 and r.json() == {"status": "ok"}
            for _ in range(PROBES // 2):  # and new connections too
                r = requests.get(f"{edge.nginx}/healthz", timeout=PROBE_TIMEOUT_S)
                assert r.status_code == 200
        assert crowd.open_count("slowloris") > 0, "the slow clients were cut before the probes"
        # nginx cuts the tricklers by its header timeout (counted from the connection's
        # start, so trickling does not extend it) and the stalled bodies by its body timeout.
        header_s, body_s = nginx_timeout("client_header_timeout"), nginx_timeout(
            "client_body_timeout")
        wait_until(lambda: crowd.open_count("slowloris") == 0
                   and crowd.open_count("stalled_body") == 0,
                   timeout_s=max(header_s, body_s) + CUT_MARGIN_S,
                   what="nginx to cut the slowloris and stalled-body connections")
        for c in crowd.of("slowloris"):
            assert c.closed_at is not None and c.closed_at - c.opened_at >= header_s - 1, (
                "cut before client_header_timeout: by something else than the timeout")
            assert c.sent >= 2  # it was trickling, and that did not keep it alive
        for c in crowd.of("stalled_body"):
            assert c.closed_at is not None and c.closed_at - c.opened_at >= body_s - 1
        # The app is still fine.
        assert requests.get(f"{edge.nginx}/healthz", timeout=PROBE_TIMEOUT_S).status_code == 200
    finally:
        crowd.close()


def test_nginx_refuses_big_bodies_with_the_apps_json_error(edge: Edge) -> None:
    r = requests.post(f"{edge.nginx}/api/bots", data=b"x" * (100 * 1024),
                      headers={"Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "body_too_large"


def test_a_forged_x_forwarded_for_does_not_evade_the_limit_through_nginx(edge: Edge) -> None:
    if redis_url() is None:
        pytest.skip("no Redis on 127.0.0.1:6379: the rate limit through nginx is not tested")
    body = {"name": "bad name", "url": "http://x"}  # refused before any outside call
    for i in range(3):
        r = requests.post(f"{edge.nginx}/api/bots", json=body, timeout=30,
                          headers={"X-Forwarded-For": f"10.1.2.{i}"})
        assert r.status_code == 400, r.text
    r = requests.post(f"{edge.nginx}/api/bots", json=body, timeout=30,
                      headers={"X-Forwarded-For": "10.1.2.200"})
    assert r.status_code == 429, r.text
    assert r.json()["error"]["code"] == "rate_limited" and int(r.headers["Retry-After"]) >= 1
