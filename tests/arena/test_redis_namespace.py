"""Drill: two deployments share one Redis.

Found in a drill: the clock's leader key was ``arena:clock:leader`` for every deployment,
so two deployments on one Redis shared one leader and one of them got no ladder, reconciler
or sweep; RQ's keys were shared too.  Here two deployments (two databases, nothing set but
their ``DATABASE_URL``) run real workers with their clocks on one redis-server of the
test's own, play ladder matches and serve pages: each elects its own leader and plays its
own ladder, and afterwards every key in that Redis belongs to one of the two namespaces.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from redis import Redis
from sqlalchemy import func, select

from arena import create_app
from arena.core.models import Match
from arena.core.rediskeys import EMBEDDED_NAMESPACE, derived_namespace, namespace_of
from arena.core.storage import get_db, upgrade
from arena.ops.procs import Child, stop_all

from .conftest import wait_for, worker_env
from .drills import SlowTable, start_logged
from .test_supervision import PrivateRedis
from .test_threadpool_worker import assert_ratings_exact

pytestmark = pytest.mark.drill


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.kill()


@pytest.fixture
def bots() -> Iterator[SlowTable]:
    table = SlowTable(move_s=0.0)
    yield table
    table.close()


@pytest.fixture
def workers() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    stop_all(started)


def finished_ids(app: Flask) -> list[int]:
    with get_db(app).begin() as s:
        return list(s.scalars(select(Match.id).where(Match.state == "finished")))


def deployment_env(app: Flask, redis_url: str) -> dict[str, str]:
    """A worker (with its clock) of the app's deployment, configured as an operator would:
    its DATABASE_URL and REDIS_URL, no namespace of any kind (it is derived)."""
    env = worker_env(app)
    for name in ("REDIS_NAMESPACE", "RQ_KEY_PREFIX"):
        env.pop(name, None)
    env.update({"REDIS_URL": redis_url, "WORKER_CLOCK": "1", "WORKER_CONCURRENCY": "8",
                "CLOCK_TICK_S": "0.2", "LADDER_INTERVAL_S": "1",
                "LADDER_MAX_MATCHES_PER_ROUND": "1", "LADDER_DEALS": "1"})
    return env


def test_two_deployments_on_one_redis_keep_to_their_own_namespaces(
    settings: dict[str, Any], tmp_path: Path, bots: SlowTable, private_redis: PrivateRedis,
    workers: list[Child],
) -> None:
    apps: list[Flask] = []
    for name in ("a", "b"):
        # Registration runs its health checks through the suite's own Redis; the run below
        # uses the private one only.
        cfg = {**settings, "INSTANCE_PATH": str(tmp_path / name),
               "DATABASE_URL": f"sqlite:///{tmp_path / name}.sqlite3"}
        cfg.pop("REDIS_NAMESPACE")
        app = create_app(cfg)
        upgrade(get_db(app))
        bots.register(app.test_client())
        apps.append(app)
    spaces = [namespace_of(a.config) for a in apps]
    assert spaces == [derived_namespace(str(a.config["DATABASE_URL"])) for a in apps]
    assert spaces[0] != spaces[1] and EMBEDDED_NAMESPACE not in spaces

    for i, app in enumerate(apps):
        workers.append(start_logged(["worker"], deployment_env(app, private_redis.url),
                                    tmp_path / f"worker-{i}.log", f"worker-{i}"))
    # Each deployment's clock leads its own deployment: both ladders run.
    for app in apps:
        wait_for(lambda app=app: len(finished_ids(app)) >= 1, 120,
                 what=f"ladder matches in {namespace_of(app.config)}")
    r = Redis.from_url(private_redis.url)
    holders = [r.get(f"{ns}:clock:leader") for ns in spaces]
    assert all(holders) and holders[0] != holders[1], holders

    stop_all(workers)
    # The web tier of each deployment (its pages, with the limits and the shared read
    # cache on) writes under its namespace too.
    for app in apps:
        web = create_app({**app.config, "INSTANCE_PATH": app.instance_path,
                          "REDIS_URL": private_redis.url, "RATE_LIMITS_ENABLED": True,
                          "READ_CACHE_S": 60.0, "READ_CACHE_SHARED": True})
        client = web.test_client()
        for path in ("/", "/leaderboard", "/matches", "/api/ratings"):
            assert client.get(path).status_code == 200, path
        get_db(web).dispose()

    keys = sorted(k.decode() for k in r.scan_iter(count=1000))
    strays = [k for k in keys if not k.startswith((f"{spaces[0]}:", f"{spaces[1]}:"))]
    assert keys and not strays, strays
    for ns in spaces:
        mine = [k for k in keys if k.startswith(f"{ns}:")]
        kinds = {k.split(":")[1] for k in mine}
        assert {"rq", "live", "bot-calls", "readcache", "limits"} <= kinds, (ns, kinds)
    for app in apps:
        ids = finished_ids(app)
        with get_db(app).begin() as s:
            assert s.scalar(select(func.count()).select_from(Match)) >= len(ids)
        assert_ratings_exact(app, ids)
    assert not os.environ.get("REDIS_NAMESPACE")
