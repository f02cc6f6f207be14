"""``arena serve``, ``worker`` and ``clock`` check their database before they start work
(:mod:`arena.ops.startup`): each is run here as a real process against a PostgreSQL port where
nothing listens, one that starts answering during the wait, real databases that are not
migrated, and migrated ones (the happy path, PostgreSQL and the embedded SQLite)."""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import requests
from flask import Flask

from arena.core.storage import Database, head_revision, upgrade
from arena.ops.procs import Child

from ..ports import closed_port, free_port
from .conftest import pg_admin_or_skip, wait_for, worker_env
from .test_cli import bare_env

pytestmark = pytest.mark.drill

HEAD = head_revision()
PASSWORD = "s3cret-pw"

# A command line per long-running command; none of them returns by itself once started.
COMMANDS = {
    "serve": ["serve", "--port", "{port}"],
    "worker": ["worker", "--burst", "--no-clock"],
    "clock": ["clock"],
}


def argv(command: str) -> list[str]:
    return [a.format(port=free_port()) for a in COMMANDS[command]]


def run_arena(args: list[str], env: dict[str, str], cwd: Path
              ) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "arena", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def service_env(tmp_path: Path, redis_url: str, database_url: str,
                **extra: str) -> dict[str, str]:
    return bare_env(tmp_path, DATABASE_URL=database_url, REDIS_URL=redis_url,
                    QUEUE_NAME=f"arena-startup-{uuid.uuid4().hex[:8]}",
                    SECRET_KEY="startup-test-secret-0123456789abcdef", **extra)


def attempts(stderr: str) -> list[int]:
    return [int(n) for n in re.findall(r"not reachable \(attempt (\d+)\)", stderr)]


# --- nothing listens -------------------------------------------------------------------------


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unreachable_database_is_retried_then_named_without_its_password(
        tmp_path: Path, redis_url: str, command: str) -> None:
    port = closed_port()
    env = service_env(tmp_path, redis_url,
                      f"postgresql://nobody:{PASSWORD}@127.0.0.1:{port}/arena",
                      STARTUP_DB_WAIT_S="1.5")
    proc = run_arena(argv(command), env, tmp_path / "cwd")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and PASSWORD not in proc.stderr
    tried = attempts(proc.stderr)
    assert len(tried) >= 2 and tried == list(range(1, len(tried) + 1)), proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Error: database unreachable at "
                           f"postgresql+psycopg://nobody:***@127.0.0.1:{port}/arena "), last
    assert "giving up" in proc.stderr


class Forwarder:
    """A TCP forwarder from a loopback port to PostgreSQL: the server "comes up" on that
    port when the forwarder starts listening."""

    def __init__(self, port: int, target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server(("127.0.0.1", port))
        self.sockets: list[socket.socket] = [self.server]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.server.accept()
                upstream = socket.create_connection(self.target)
                self.sockets += [conn, upstream]
                for a, b in ((conn, upstream), (upstream, conn)):
                    threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        for s in self.sockets:
            s.close()


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_database_that_comes_up_during_the_wait_is_used(
        app: Flask, tmp_path: Path) -> None:
    from sqlalchemy.engine import make_url

    real = make_url(str(app.config["DATABASE_URL"]))
    port = free_port()
    env = {**worker_env(app), "DATABASE_URL": str(real.set(host="127.0.0.1", port=port)),
           "STARTUP_DB_WAIT_S": "60", "ARENA_DEMO_RECORD": str(tmp_path / "none.json")}
    err = tmp_path / "stderr"
    with err.open("w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "arena", *COMMANDS["worker"]], env=env,
                                stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                                start_new_session=True)
    child = Child("worker", proc)
    forwarder = None
    try:
        wait_for(lambda: attempts(err.read_text()) or proc.poll() is not None, 60,
                 what="the first failed attempt")
        assert proc.poll() is None, err.read_text()
        forwarder = Forwarder(port, (real.host or "127.0.0.1", real.port or 5432))
        assert proc.wait(timeout=120) == 0, err.read_text()
    finally:
        child.stop()
        if forwarder is not None:
            forwarder.close()
    out = err.read_text()
    assert re.search(r"reachable \(attempt [2-9]\d*\), schema at revision " + str(HEAD), out), out
    assert "Traceback" not in out


# --- a real database, not migrated -------------------------------------------------------------


@pytest.fixture
def scratch_database() -> Iterator[str]:
    """A new, empty PostgreSQL database on the test server, dropped afterwards."""
    admin = pg_admin_or_skip()
    name = f"arena_startup_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{admin.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.postgres
@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unmigrated_database_ends_the_process_with_the_command_to_run(
        tmp_path: Path, redis_url: str, scratch_database: str, command: str) -> None:
    proc = run_arena(argv(command), service_env(tmp_path, redis_url, scratch_database),
                     tmp_path / "cwd")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"Error: database schema at revision none, code needs {HEAD}: run `arena init-db`")


@pytest.mark.postgres
def test_an_older_or_unknown_schema_is_named(tmp_path: Path, redis_url: str,
                                             scratch_database: str) -> None:
    db = Database(scratch_database.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        upgrade(db, "0006")
        env = service_env(tmp_path, redis_url, scratch_database)
        proc = run_arena(argv("worker"), env, tmp_path / "cwd")
        assert proc.returncode == 1
        assert proc.stderr.strip().splitlines()[-1] == (
            f"Error: database schema at revision 0006, code needs {HEAD}: "
            "run `arena init-db`")
        with db.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
        proc = run_arena(argv("worker"), env, tmp_path / "cwd")
        assert proc.returncode == 1
        assert ("database schema at revision 9999, code needs " f"{HEAD}: 9999 is no "
                "migration of this code") in proc.stderr
    finally:
        db.dispose()


# --- the happy path ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_migrated_database_lets_each_command_start(app: Flask, tmp_path: Path) -> None:
    env = {**worker_env(app), "ARENA_DEMO_RECORD": str(tmp_path / "none.json")}
    proc = run_arena(COMMANDS["worker"], env, tmp_path / "cwd")
    assert proc.returncode == 0, proc.stderr
    assert f"reachable (attempt 1), schema at revision {HEAD}" in proc.stderr

    port = free_port()
    err = tmp_path / "stderr"
    with err.open("w") as f:
        servers = [subprocess.Popen(
            [sys.executable, "-m", "arena", *args], env=env, stdin=subprocess.DEVNULL,
            stdout=f, stderr=f, start_new_session=True)
            for args in (["serve", "--port", str(port)], ["clock"])]
    children = [Child("serve", servers[0]), Child("clock", servers[1])]
    try:
        def healthy() -> bool:
            assert servers[0].poll() is None, err.read_text()
            with contextlib.suppress(requests.RequestException):
                return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).ok
            return False

        wait_for(healthy, 120, what="arena serve")
        wait_for(lambda: re.search(r"arena\.jobs\.clock clock \S+ started", err.read_text()),
                 120, what="arena clock")
        assert servers[1].poll() is None, err.read_text()
    finally:
        for c in children:
            c.stop()
    assert "Traceback" not in err.read_text()


def test_the_embedded_sqlite_database_is_migrated_at_start(tmp_path: Path,
                                                           redis_url: str) -> None:
    from arena.core.storage import current_revision

    inst = tmp_path / "instance"
    env = bare_env(tmp_path, ARENA_INSTANCE_PATH=str(inst), REDIS_URL=redis_url,
                   QUEUE_NAME=f"arena-startup-{uuid.uuid4().hex[:8]}")
    proc = run_arena(COMMANDS["worker"], env, tmp_path / "cwd")
    assert proc.returncode == 0, proc.stderr
    assert f"migrated from revision none to {HEAD} (embedded SQLite)" in proc.stderr
    db = Database(f"sqlite:///{inst / 'arena.sqlite3'}")
    try:
        assert current_revision(db) == HEAD
    finally:
        db.dispose()
    proc = run_arena(COMMANDS["worker"], env, tmp_path / "cwd")  # at head: nothing to do
    assert proc.returncode == 0 and f"at revision {HEAD}" in proc.stderr, proc.stderr
