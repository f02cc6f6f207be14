"""Fixtures for the arena tests: real services, layered ``app`` -> ``client``.

* **Redis**: the machine's Redis on 127.0.0.1:6379 (``ARENA_TEST_REDIS_URL`` overrides it),
  in a database number of its own that this run claims with a marker key and flushes at the
  end; without a Redis server the run starts a private one (the embedded Redis code).  Each
  test gets its own queue name.
* **PostgreSQL**: ``ARENA_TEST_PG_URL`` or 127.0.0.1:5432 (users root, then postgres; trust
  auth).  Each test process migrates a template database ``arena_test_<random>_template``
  once, and every test gets a copy of it (``CREATE DATABASE ... TEMPLATE``), emptied in place
  for the process's next test after it when that provably equals a new copy, else dropped;
  on SQLite, a copy of a migrated file (tests/arena/databases.py).  The migration
  tests take an empty database instead (``empty_database_url``).  Tests that need PostgreSQL
  are marked ``postgres`` and skip, saying why, when the server is unreachable.
* **Bots**: real sample bots (``python -m sample_bots.NAME``) on loopback ports, started once
  per run; extra in-process bots (``sample_bots.sdk.serve_in_thread``) where a test needs to
  control one.
* **Workers**: real ``arena worker`` processes (``start_worker``), stopped after the test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis
from sqlalchemy import create_engine, text

from arena import create_app
from arena.core.queue import EmbeddedRedis, get_queue
from arena.core.storage import get_db
from arena.ops.procs import Child, start_arena, start_bot, stop_all
from tests.waiting import wait_for

from .databases import PgDatabases, sqlite_copy, sqlite_template

__all__ = ["wait_for"]  # tests import it from here

ADMIN = "test-admin-token-0123456789abcdefghij"  # long enough to start with
MARKER = "arena:test-run"


# --- Redis -------------------------------------------------------------------------------


def _claim_db(base: str) -> tuple[str, Redis] | None:
    run = uuid.uuid4().hex
    for db in range(15, 0, -1):
        r = Redis.from_url(f"{base}/{db}")
        if r.set(MARKER, run, nx=True, ex=3600) and r.dbsize() == 1:
            return f"{base}/{db}", r
        if r.get(MARKER) == run.encode():
            r.delete(MARKER)
    return None


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = os.environ.get("ARENA_TEST_REDIS_URL", "redis://127.0.0.1:6379")
    claimed = None
    try:
        Redis.from_url(base, socket_connect_timeout=2).ping()
        claimed = _claim_db(base)
    except Exception:
        claimed = None
    if claimed is not None:
        url, r = claimed
        yield url
        r.flushdb()
        return
    emb = EmbeddedRedis(Path(tmp_path_factory.mktemp("redis", numbered=True)))
    emb.start()
    yield emb.url
    emb.stop()


@pytest.fixture
def redis(redis_url: str) -> Redis:
    return Redis.from_url(redis_url)


# --- PostgreSQL --------------------------------------------------------------------------


def _pg_admin_url() -> tuple[str | None, str]:
    import psycopg

    given = os.environ.get("ARENA_TEST_PG_URL")
    candidates = [given] if given else [
        "postgresql://root@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test"]
    why = ""
    for url in candidates:
        try:
            with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
                conn.execute("SELECT 1")
            return url, ""
        except Exception as exc:
            why = f"{url}: {exc}".strip()
    return None, why


def pg_admin_or_skip() -> str:
    """The test server's admin URL; skips the test when PostgreSQL is unreachable, and fails
    it when ``ARENA_REQUIRE_POSTGRES`` is set (CI has PostgreSQL, .ci/run sets this: its
    tests must run there, never skip)."""
    admin, why = _pg_admin_url()
    if admin is None:
        if os.environ.get("ARENA_REQUIRE_POSTGRES"):
            pytest.fail(f"PostgreSQL unreachable but required ({why})")
        pytest.skip(f"PostgreSQL unreachable, postgres tests skipped ({why})")
    return admin


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[PgDatabases]:
    """This process's databases on the PostgreSQL server (the migrated template and a copy
    of it per test: tests/arena/databases.py), all dropped at the end."""
    dbs = PgDatabases(pg_admin_or_skip())
    yield dbs
    dbs.close()


@pytest.fixture(scope="session")
def pg_database(pg_databases: PgDatabases) -> Iterator[str]:
    """An empty database of the run's, for the tests that migrate for real."""
    name = f"{pg_databases.prefix}_empty"
    url = pg_databases.create(name)
    yield url
    pg_databases.drop(name)


def _empty_pg(url: str) -> None:
    """Drop everything in the run's own database (whatever the migrations created)."""
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This process's migrated SQLite file, copied for each test."""
    return sqlite_template(tmp_path_factory.mktemp("template"))


# --- app and client ----------------------------------------------------------------------


def _backends() -> list[Any]:
    return ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=["sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    """The database under test; tests parametrize it with ``both_backends``."""
    value: str = request.param
    return value


both_backends = pytest.mark.parametrize("backend", _backends(), indirect=True)
"""Run a test on SQLite and on PostgreSQL."""

both_backends_drill_on_postgres = pytest.mark.parametrize(
    "backend",
    ["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.drill])],
    indirect=True)
"""Both databases, the PostgreSQL run in the drills (``make drills``, ``make check``): for a
test whose SQLite run is cheap enough for ``make test`` and whose PostgreSQL run is not (each
statement a round trip to the server, a copied database per test)."""


@pytest.fixture
def database_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The test's own database, migrated to the newest revision: a copy of the process's
    template (the migrations ran once, not per test); on PostgreSQL, possibly the previous
    test's copy emptied back to that (``PgDatabases.release``)."""
    if backend == "postgres":
        dbs: PgDatabases = request.getfixturevalue("pg_databases")
        name, url = dbs.copy()
        yield url
        dbs.release(name)
    else:
        template: Path = request.getfixturevalue("sqlite_template_path")
        yield sqlite_copy(template, tmp_path / "arena.sqlite3")


@pytest.fixture
def empty_database_url(backend: str, request: pytest.FixtureRequest,
                       tmp_path: Path) -> Iterator[str]:
    """An empty database (no schema): for the tests of the migrations themselves."""
    if backend == "postgres":
        url: str = request.getfixturevalue("pg_database")
        _empty_pg(url)
        yield url
        _empty_pg(url)
    else:
        yield f"sqlite:///{tmp_path / 'empty.sqlite3'}"


@pytest.fixture
def settings(tmp_path: Path, database_url: str, redis_url: str) -> dict[str, Any]:
    """The test overrides (one queue per test); tests may change them before ``app``."""
    return {
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "QUEUE_NAME": f"arena-test-{uuid.uuid4().hex[:8]}",
        "REDIS_NAMESPACE": f"arena-test-{uuid.uuid4().hex[:8]}",
        "SECRET_KEY": "test-pepper-0123456789abcdefghijklmnop",
        "ADMIN_TOKEN": ADMIN,
        "ALLOW_PRIVATE_BOT_URLS": True,
        # A well-behaved bot must pass its check on a saturated machine too (a submission's
        # check failed at 3 s with two CI runs at once): tests that time a check out set
        # their own deadline.
        "HEALTH_DEADLINE_MS": 10000,
        "LADDER_DEALS": 2,
        "MATCH_DEALS": 2,
        "LADDER_SEED": 7,
        # Tests register many bots from one address; tests/arena/test_limits.py turns the
        # limits on where it tests them.
        "RATE_LIMITS_ENABLED": False,
        # Tests read right after writing through other paths (jobs, the database);
        # tests/arena/test_readcache.py turns the response cache on where it tests it.
        "READ_CACHE_S": 0.0,
    }


@pytest.fixture
def app(settings: dict[str, Any]) -> Iterator[Flask]:
    """The app on the test's own migrated database (``database_url``)."""
    app = create_app(settings)
    yield app
    get_db(app).dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def admin_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}"}


# --- bots --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sample_bots() -> Iterator[dict[str, str]]:
    """Real sample bot processes: name -> URL."""
    children: list[Child] = []
    urls: dict[str, str] = {}
    try:
        for name, module in [("random", "random_bot"), ("greedy", "greedy_bot"),
                             ("planner", "planner_bot"), ("random-2", "random_bot"),
                             ("greedy-2", "greedy_bot")]:
            child = start_bot(module)
            children.append(child)
            assert child.url is not None
            urls[name] = child.url
        yield urls
    finally:
        stop_all(children)


@pytest.fixture(scope="session")
def bot_urls() -> Iterator[list[str]]:
    """Twelve more real bots (sample strategies served by the SDK, in this process), each at
    an endpoint of its own: for tests that need more bots than ``sample_bots`` has (one
    endpoint may be registered by one live bot only)."""
    from sample_bots import greedy_bot, random_bot
    from sample_bots.sdk import serve_in_thread

    servers = [serve_in_thread(greedy_bot.choose if i % 2 else random_bot.make_choose(i),
                               name=f"farm-{i}") for i in range(12)]
    try:
        yield [srv.url for srv in servers]
    finally:
        for srv in servers:
            srv.shutdown()
            srv.server_close()


def run_queued_jobs(app: Flask) -> None:
    """Run what is queued with a real RQ worker (in this process, burst mode): the health
    checks the web requests enqueued, as any worker would."""
    from rq import SimpleWorker

    q = get_queue(app)
    with app.app_context():
        SimpleWorker([q.queue], connection=q.redis).work(burst=True,
                                                         logging_level="WARNING")


def wait_check(client: FlaskClient, bot_id: int, timeout_s: float = 60.0) -> dict[str, Any]:
    """Poll the bot's check until it is done (running the queued jobs meanwhile)."""
    app = client.application

    def done() -> dict[str, Any] | None:
        run_queued_jobs(app)
        body: dict[str, Any] = client.get(f"/api/bots/{bot_id}/check").get_json()
        return body if body.get("done") else None

    result: dict[str, Any] = wait_for(done, timeout_s, what=f"the check of bot {bot_id}")
    return result


def submit(client: FlaskClient, name: str, url: str) -> tuple[int, str]:
    """``POST /api/bots``: 202 at once, with the check queued (nothing has called the bot)."""
    r = client.post("/api/bots", json={"name": name, "url": url})
    assert r.status_code == 202, r.get_json()
    body = r.get_json()
    assert body["bot"]["status"] == "pending" and body["check_url"]
    return body["bot"]["id"], body["token"]


def register(client: FlaskClient, name: str, url: str) -> tuple[int, str]:
    """Submit a bot and wait until its health check has passed (it is then ``active``)."""
    bot_id, token = submit(client, name, url)
    check = wait_check(client, bot_id)
    assert check["state"] == "passed", check
    return bot_id, token


@pytest.fixture
def four_bots(client: FlaskClient, sample_bots: dict[str, str]) -> list[int]:
    names = ["random", "greedy", "planner", "random-2"]
    return [register(client, n, sample_bots[n])[0] for n in names]


# --- workers -----------------------------------------------------------------------------


def worker_env(app: Flask) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("DATABASE_URL", "REDIS_URL", "QUEUE_NAME", "REDIS_NAMESPACE", "SECRET_KEY",
                "ADMIN_TOKEN",
                "LEASE_S", "MATCH_JOB_RETRIES", "MATCH_MAX_ATTEMPTS", "WORKER_CONCURRENCY",
                "WORKER_SHUTDOWN_GRACE_S", "WORKER_HANDBACK_S", "WORKER_TIMEOUT_GRACE_S"):
        value = app.config[key]
        env[key] = str(value)
    env["ALLOW_PRIVATE_BOT_URLS"] = "1" if app.config["ALLOW_PRIVATE_BOT_URLS"] else "0"
    env["ARENA_INSTANCE_PATH"] = app.instance_path
    env["WORKER_CLOCK"] = "0"
    return env


@pytest.fixture
def start_worker(app: Flask) -> Iterator[Callable[[], Child]]:
    children: list[Child] = []

    def start() -> Child:
        child = start_arena(["worker", "--no-clock"], env=worker_env(app), name="worker")
        children.append(child)
        return child

    yield start
    stop_all(children)
