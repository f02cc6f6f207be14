"""The web process as deployed (gunicorn with deploy/gunicorn.conf.py): a runaway request is
ended, and every instance has a control socket of its own."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from flask import Flask

from ..ports import closed_port, free_port
from .conftest import both_backends_drill_on_postgres, wait_for, worker_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home() -> Iterator[Path]:
    """gunicorn's HOME: short, because its control socket lives under it and a unix socket's
    path has at most 107 bytes (pytest-xdist's tmp paths alone come close)."""
    path = Path(tempfile.mkdtemp(prefix="arena-home-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def gunicorn(app: Flask, tmp_path: Path, home: Path) -> Iterator[Callable[..., str]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(**extra: str) -> str:
        port = free_port()
        env = worker_env(app)
        env.pop("XDG_RUNTIME_DIR", None)
        env.pop("DATABASE_STATEMENT_TIMEOUT_MS", None)
        env.update({"HOST": "127.0.0.1", "PORT": str(port), "WEB_CONCURRENCY": "1",
                    "WEB_THREADS": "4", "HOME": str(home), "WEB_REQUEST_TIMEOUT_S": "2",
                    "WEB_REQUEST_GRACE_S": "3", **extra})
        log = open(tmp_path / f"gunicorn-{port}.log", "wb")  # noqa: SIM115
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py",
             "tests.arena.gunicorn_slow_app:create()"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        base = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return requests.get(f"{base}/healthz", timeout=5).status_code == 200
            except requests.RequestException:
                return False

        wait_for(up, 60, what="gunicorn to serve")
        return base

    yield start
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def ended_within(url: str, limit_s: float) -> requests.Response | None:
    """The response (None: the connection was cut) of a request that must end well before
    its route would (60 s, or never); only the runaway route is timed."""
    t0 = time.monotonic()
    try:
        r: requests.Response | None = requests.get(url, timeout=limit_s)
    except requests.ConnectionError:
        r = None
    assert time.monotonic() - t0 < limit_s
    return r


@pytest.mark.drill
def test_a_runaway_python_request_is_ended(gunicorn: Callable[..., str]) -> None:
    base = gunicorn()
    r = ended_within(f"{base}/test-slow/python", 40)
    assert r is not None and r.status_code == 500
    assert r.json()["error"]["code"]
    assert requests.get(f"{base}/healthz", timeout=30).status_code == 200


@pytest.mark.drill
def test_a_request_blocked_outside_python_ends_with_its_worker(
    gunicorn: Callable[..., str]
) -> None:
    base = gunicorn()
    r = ended_within(f"{base}/test-slow/blocked", 40)
    assert r is None or r.status_code >= 500
    # gunicorn's arbiter started a fresh worker process.
    wait_for(lambda: requests.get(f"{base}/healthz", timeout=30).status_code == 200, 60,
             what="a fresh worker")


@both_backends_drill_on_postgres
def test_a_runaway_sql_statement_is_ended(app: Flask, gunicorn: Callable[..., str]) -> None:
    if app.config["DATABASE_URL"].startswith("sqlite"):
        pytest.skip("pg_sleep is PostgreSQL's")
    # No watchdog: the database's own statement_timeout must end the query.
    base = gunicorn(WEB_REQUEST_TIMEOUT_S="0", DATABASE_STATEMENT_TIMEOUT_MS="2000")
    r = ended_within(f"{base}/test-slow/sql", 40)
    assert r is not None and r.status_code == 500
    assert requests.get(f"{base}/healthz", timeout=30).status_code == 200


def test_each_web_worker_freezes_its_start_up_heap(gunicorn: Callable[..., str],
                                                   tmp_path: Path) -> None:
    """A full garbage collection stalls every request of its process while it walks the
    loaded app's objects; each worker takes them out of the walks once the app is loaded."""
    gunicorn()
    (log,) = tmp_path.glob("gunicorn-*.log")
    wait_for(lambda: "objects frozen" in log.read_text(), 60, what="the worker's heap line")
    frozen = re.search(r"heap settled: (\d+) objects frozen", log.read_text())
    assert frozen is not None and int(frozen.group(1)) > 50_000


@pytest.mark.drill
def test_each_instance_has_its_own_control_socket(
    gunicorn: Callable[..., str], home: Path
) -> None:
    gunicorn()
    gunicorn()
    # Each master opens its socket after booting its worker, so after /healthz answers.
    wait_for(lambda: len(list((home / ".gunicorn").glob("*.ctl"))) >= 2, 60,
             what="both control sockets")
    sockets = sorted((home / ".gunicorn").glob("*.ctl"))
    assert len(sockets) == 2, sockets
    assert not (home / ".gunicorn" / "gunicorn.ctl").exists()


def test_the_master_waits_for_the_database_and_gives_up_in_one_clear_line(
        app: Flask, tmp_path: Path, home: Path) -> None:
    """Started before PostgreSQL is up (or pointed at the wrong place), gunicorn does not
    fork workers that answer 500s: its master waits ``STARTUP_DB_WAIT_S``, then exits."""
    dead = f"postgresql+psycopg://nobody:hunter2@127.0.0.1:{closed_port()}/arena"
    env = worker_env(app)
    env.update({"HOST": "127.0.0.1", "PORT": str(free_port()), "WEB_CONCURRENCY": "1",
                "HOME": str(home), "DATABASE_URL": dead, "STARTUP_DB_WAIT_S": "1"})
    done = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py", "arena:create_app()"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "database unreachable at postgresql+psycopg://nobody:***@127.0.0.1" in out, out
    assert "hunter2" not in out and "Booting worker" not in out
