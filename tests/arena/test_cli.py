"""The ``arena`` command, in process and (the demo) as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from flask import Flask

from arena.cli import main
from arena.storage import current_revision, get_db

from .conftest import worker_env
from .test_migrations import head_revision


@pytest.fixture
def env(app: Flask, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = worker_env(app)
    for key in ("DATABASE_URL", "REDIS_URL", "QUEUE_NAME", "SECRET_KEY", "ADMIN_TOKEN",
                "ARENA_INSTANCE_PATH", "ALLOW_PRIVATE_BOT_URLS"):
        monkeypatch.setenv(key, values[key])
    return values


def test_init_db_is_idempotent(app: Flask, env: dict[str, str],
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init-db"]) == 0
    assert main(["migrate"]) == 0
    assert current_revision(get_db(app)) == head_revision(get_db(app))
    assert "database ready" in capsys.readouterr().out


def test_operational_commands(app: Flask, env: dict[str, str], four_bots: list[int],
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ladder"]) == 0
    assert "created 1 match(es)" in capsys.readouterr().out
    assert main(["reconcile"]) == 0
    assert "re-enqueued 0 queued" in capsys.readouterr().out
    assert main(["sweep"]) == 0
    assert main(["ratings", "--check"]) == 0
    assert main(["ratings"]) == 0
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "ELO_K = 32.0" in out and "ADMIN_TOKEN = (set)" in out
    assert "test-admin-token" not in out
    assert main(["no-such-command"]) != 0


def test_demo_once_runs_everything_and_exits(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "DATABASE_URL", "ARENA_INSTANCE_PATH")}
    proc = subprocess.run(
        [sys.executable, "-m", "arena", "demo", "--once", "--port", "0", "--matches", "2",
         "--deals", "1", "--instance", str(tmp_path / "demo")],
        env=env, capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout
    assert "(embedded)" in out
    assert "2/2 matches finished" in out
    assert "standings (classic rating family)" in out
    assert "open http://127.0.0.1:" in out
    for name in ("planner", "greedy", "random"):
        assert f"bot {name}" in out


def test_the_procfile_web_line_serves_the_app(app: Flask, tmp_path: Path) -> None:
    """``web:`` from the Procfile, as a real gunicorn process on a loopback port."""
    import shlex
    import socket
    import time

    import requests

    from arena.procs import Child

    procfile = Path(__file__).resolve().parents[2] / "Procfile"
    line = next(x for x in procfile.read_text().splitlines() if x.startswith("web:"))
    argv = shlex.split(line.split(":", 1)[1])
    assert argv[0] == "gunicorn"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**worker_env(app), "HOST": "127.0.0.1", "PORT": str(port), "WEB_CONCURRENCY": "1"}
    bindir = Path(sys.executable).parent
    proc = subprocess.Popen([str(bindir / argv[0]), *argv[1:]], env=env, cwd=procfile.parent,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    child = Child("gunicorn", proc)
    try:
        # gunicorn is the well-behaved party here: on a saturated machine it may take many
        # seconds to boot and to answer its first request, so wait on readiness generously
        # (a refused connection or a slow first answer both mean "not ready yet").
        deadline = time.monotonic() + 120
        while True:
            try:
                r = requests.get(f"http://127.0.0.1:{port}/readyz", timeout=30)
                break
            except requests.RequestException:
                assert proc.poll() is None, "gunicorn exited"
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.2)
        assert r.status_code == 200 and r.json()["checks"]["redis"] == "ok"
        r = requests.post(f"http://127.0.0.1:{port}/api/bots", data="{", timeout=30,
                          headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "malformed_json"
    finally:
        child.stop()
