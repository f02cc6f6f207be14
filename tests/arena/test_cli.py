"""The ``arena`` command, in process and (the demo) as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from flask import Flask

from arena.core.storage import current_revision, get_db
from arena.ops.cli import main

from ..ports import closed_port, free_port
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


@pytest.mark.drill
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


@pytest.mark.drill
def test_the_procfile_web_line_serves_the_app(app: Flask, tmp_path: Path) -> None:
    """``web:`` from the Procfile, as a real gunicorn process on a loopback port."""
    import shlex
    import time

    import requests

    from arena.ops.procs import Child

    procfile = Path(__file__).resolve().parents[2] / "Procfile"
    line = next(x for x in procfile.read_text().splitlines() if x.startswith("web:"))
    argv = shlex.split(line.split(":", 1)[1])
    assert argv[0] == "gunicorn"
    port = free_port()
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


# --- finding the instance: the running demo, or words instead of a traceback ----------------

LOCAL = ("REDIS_URL", "DATABASE_URL", "ARENA_INSTANCE_PATH", "SECRET_KEY", "QUEUE_NAME")


def bare_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a new terminal: no instance configured, a private demo record."""
    env = {k: v for k, v in os.environ.items() if k not in LOCAL}
    env["ARENA_DEMO_RECORD"] = str(tmp_path / "demo-record.json")
    env.update(extra)
    return env


def arena(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "arena", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


READ_COMMANDS = [["ratings"], ["ratings", "--check"], ["tournament", "list"],
                 ["tournament", "show", "1"],
                 # Over ten seconds each in tests/durations.json: drills (docs/contributing.md).
                 pytest.param(["ladder"], id="ladder", marks=pytest.mark.drill),
                 pytest.param(["sweep"], id="sweep", marks=pytest.mark.drill),
                 ["reconcile"]]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=" ".join)
def test_a_missing_database_is_explained_and_nothing_is_created(tmp_path: Path,
                                                                args: list[str]) -> None:
    nowhere = tmp_path / "nowhere"
    proc = arena(args, bare_env(tmp_path, ARENA_INSTANCE_PATH=str(nowhere)), tmp_path / "cwd")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"no arena database at {nowhere / 'arena.sqlite3'}" in proc.stderr
    assert "ARENA_INSTANCE_PATH" in proc.stderr and "arena init-db" in proc.stderr
    assert not nowhere.exists()
    assert files_under(tmp_path / "cwd") == []  # no instance/ where the command ran


@pytest.mark.drill
def test_config_opens_no_database_and_creates_nothing(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    proc = arena(["config"], bare_env(tmp_path, ARENA_INSTANCE_PATH=str(nowhere)),
                 tmp_path / "cwd")
    assert proc.returncode == 0, proc.stderr
    assert "DATABASE_URL = ''" in proc.stdout
    assert not nowhere.exists() and files_under(tmp_path / "cwd") == []


@pytest.mark.drill
def test_an_uninitialised_database_says_run_init_db(tmp_path: Path) -> None:
    import sqlite3

    inst = tmp_path / "inst"
    inst.mkdir()
    sqlite3.connect(inst / "arena.sqlite3").close()  # an empty database file
    env = bare_env(tmp_path, ARENA_INSTANCE_PATH=str(inst))
    proc = arena(["tournament", "list"], env, tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "has no arena tables yet: run `arena init-db`" in proc.stderr
    assert files_under(inst) == ["arena.sqlite3"]  # no secret key written by a read command
    assert arena(["init-db"], env, tmp_path).returncode == 0
    proc = arena(["tournament", "list"], env, tmp_path)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr


@pytest.mark.drill
def test_an_unreachable_database_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    port = closed_port()
    env = bare_env(tmp_path, DATABASE_URL=f"postgresql://nobody:pw@127.0.0.1:{port}/arena")
    proc = arena(["ratings"], env, tmp_path / "cwd")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"cannot open the database postgresql+psycopg://nobody:***@127.0.0.1:{port}/arena" \
        in proc.stderr
    assert files_under(tmp_path / "cwd") == []


@pytest.mark.drill
def test_a_demo_record_is_used_only_while_its_demo_runs_and_only_if_trusted(
        tmp_path: Path) -> None:
    from arena.ops import demo_record

    inst = tmp_path / "demo-instance"
    assert arena(["init-db"], bare_env(tmp_path, ARENA_INSTANCE_PATH=str(inst)),
                 tmp_path).returncode == 0
    env = bare_env(tmp_path)
    path = Path(env["ARENA_DEMO_RECORD"])
    record = demo_record.DemoRecord(pid=os.getpid(), instance=str(inst),
                                    database=f"sqlite:///{inst / 'arena.sqlite3'}",
                                    redis="redis://127.0.0.1:1/0", web="http://127.0.0.1:1")
    demo_record.write(record, path)
    proc = arena(["tournament", "list"], env, tmp_path / "cwd")
    assert proc.returncode == 0, proc.stderr
    assert f"using the demo running on this machine (pid {os.getpid()}, instance {inst}" \
        in proc.stderr
    # An explicit instance wins over the demo.
    other = arena(["ratings"], {**env, "ARENA_INSTANCE_PATH": str(tmp_path / "x")}, tmp_path)
    assert other.returncode == 1 and "using the demo" not in other.stderr
    # A record others could have written is not trusted.
    path.chmod(0o666)
    proc = arena(["tournament", "list"], env, tmp_path / "cwd")
    assert proc.returncode == 1 and "using the demo" not in proc.stderr
    # A record whose process is gone is ignored; a demo removes only its own record.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    demo_record.write(demo_record.DemoRecord(**{**record.__dict__,
                                                "pid": int(dead.stdout)}), path)
    proc = arena(["tournament", "list"], env, tmp_path / "cwd")
    assert proc.returncode == 1 and "no arena database" in proc.stderr
    demo_record.remove(os.getpid(), path)
    assert path.exists()
    assert files_under(tmp_path / "cwd") == []


@pytest.mark.drill
def test_demo_on_a_taken_port_and_commands_from_another_terminal(tmp_path: Path) -> None:
    """``make demo`` while port 5000's owner (AirPlay) listens: the demo serves on a free
    port and says which; commands in another terminal find the demo while it runs."""
    import queue
    import signal
    import socket
    import threading
    import time

    import requests

    taken = socket.create_server(("127.0.0.1", 0))  # a real listener holds the port
    port = taken.getsockname()[1]
    env = bare_env(tmp_path)
    record = Path(env["ARENA_DEMO_RECORD"])
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena", "demo", "--port", str(port), "--matches", "1",
         "--deals", "1", "--workers", "1", "--tournament", "none"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    out = proc.stdout
    threading.Thread(target=lambda: [lines.put(x) for x in out], daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + 300  # generous: the demo is the well-behaved party
    try:
        while not any("Ctrl-C to stop" in x for x in seen):  # the demo is ready
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                assert proc.poll() is None, "the demo exited:\n" + "".join(seen)
                assert time.monotonic() < deadline, "the demo is not ready:\n" + "".join(seen)
        text = "".join(seen)
        assert f"port {port} is in use by another program; serving on the free port" in text
        web = next(x for x in seen if x.startswith("web: ")).split()[1]
        assert not web.endswith(f":{port}")
        assert requests.get(f"{web}/healthz", timeout=30).status_code == 200
        assert record.exists()

        elsewhere = tmp_path / "another-terminal"
        ratings = arena(["ratings"], env, elsewhere)
        assert ratings.returncode == 0, ratings.stderr
        assert "classic:" in ratings.stdout and "games" in ratings.stdout
        assert "using the demo running on this machine" in ratings.stderr
        listed = arena(["tournament", "list"], env, elsewhere)
        assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
        assert files_under(elsewhere) == []
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=120)
        taken.close()
    assert not record.exists()  # the demo took its record away
    after = arena(["tournament", "list"], {**env, "ARENA_INSTANCE_PATH": str(tmp_path / "i")},
                  tmp_path / "another-terminal")
    assert after.returncode == 1 and "no arena database" in after.stderr
