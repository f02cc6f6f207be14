"""The job queue: Redis (``REDIS_URL``, or a private embedded one) and the RQ queue.

Jobs are enqueued by dotted path with ids only (``arena.jobs.bodies.play_match(match_id)``); workers
import them.  Everything a job needs is in the database, so a lost Redis loses no work: the
reconciler (:mod:`arena.jobs.reconcile`) enqueues again whatever the database says is unfinished.

Where Redis is: the Sentinel settings (``REDIS_SENTINELS``...), else ``REDIS_URL``, else the
instance's private embedded Redis (:mod:`arena.core.embedded_redis`; it outlives any one of
the processes that use it).  The connection is made by :mod:`arena.core.redis_connect`, like
every other Redis client of the service.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, current_app
from redis import Redis
from rq import Queue, Retry, Worker
from rq.job import Job

from .embedded_redis import (  # re-exported: the queue's public names
    EmbeddedRedis,
    RedisUnavailableError,
    embedded_dir,
    ensure_embedded,
    redis_binary,
)
from .redis_connect import configured_url, connect

__all__ = ["EmbeddedRedis", "QueueService", "RedisUnavailableError", "embedded_dir",
           "ensure_embedded", "get_queue", "init_app", "redis_binary"]

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
        """Where the app's Redis is (a ``redis+sentinel://`` address with Sentinel): what
        every client is made from and what a child process is handed in ``REDIS_URL``."""
        if self._url is None:
            self._url = configured_url(self.app.config) or ensure_embedded(self.app)
        return self._url

    @property
    def redis(self) -> Redis:
        if self._redis is None:
            self._redis = connect(self.url, socket_timeout=10, socket_connect_timeout=5)
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

    def workers(self) -> int:
        """How many workers listen on the queue now (RQ's registry of live workers); 0 when
        none does or Redis does not answer."""
        try:
            return int(Worker.count(queue=self.queue))
        except Exception:
            return 0

    def position(self, job_id: str | None) -> int | None:
        """Where a waiting job stands on the queue (0: taken next), or None (not waiting,
        unknown, or Redis does not answer)."""
        if not job_id:
            return None
        try:
            found = self.queue.get_job_position(job_id)
        except Exception:
            return None
        return None if found is None else int(found)

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
