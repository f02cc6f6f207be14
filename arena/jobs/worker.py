"""Worker processes: RQ workers that run :mod:`arena.jobs.bodies`, and the clock beside them.

``arena worker`` builds the app once (configuration from the environment), connects to its
Redis and runs an RQ worker on ``QUEUE_NAME``: by default a
:class:`~arena.jobs.threadpool_worker.ThreadPoolWorker` running up to ``WORKER_CONCURRENCY`` jobs
at once in threads (matches wait on bots, not on the CPU); with ``WORKER_CONCURRENCY=0``
RQ's forking worker, one job at a time in a work horse that RQ kills at its timeout.
Unless ``WORKER_CLOCK`` is off or ``--no-clock`` is given, it also starts ``arena clock`` as a
child process and stops it on exit.  Supervision (reconnecting to Redis, restarting the clock,
children dying with the worker, unique names) lives in :mod:`arena.jobs.supervisor`.

The worker owns the app: it pushes the app's context around every job (the job bodies,
:mod:`arena.jobs.bodies`, find it as ``current_app`` and never import the worker) and imports
the job bodies before its first job.  ``rq worker -w arena.jobs.worker.AppWorker --url
$REDIS_URL arena`` works as well: that worker builds the app from the environment
(:func:`worker_app`).
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

from flask import Flask
from rq import Worker
from rq.job import Job

from arena.core import logs, metrics
from arena.core.processes import children_die_with_me
from arena.core.queue import QueueService, get_queue
from arena.core.rediskeys import child_env

from . import supervisor
from .threadpool_worker import ThreadPoolWorker, pool_worker

_APP: Flask | None = None


def worker_app() -> Flask:
    """The process's app, built once from the environment."""
    global _APP
    if _APP is None:
        from arena import create_app

        _APP = create_app()
    return _APP


def set_worker_app(app: Flask) -> None:
    global _APP
    _APP = app


def start_clock(app: Flask) -> supervisor.ChildKeeper:
    """``arena clock`` as a child that dies with this process and is restarted if it dies."""
    env = dict(os.environ)
    # The clock is a process of its own: not of this worker's metrics folder, if it has one.
    env.pop(metrics.MULTIPROC_ENV, None)
    env.pop(metrics.PRIVATE_ENV, None)
    # The embedded Redis, or the redis+sentinel:// address, if that is what we use.
    env["REDIS_URL"] = get_queue(app).url
    if app.config["DATABASE_URL"]:
        env["DATABASE_URL"] = str(app.config["DATABASE_URL"])
    env.update(child_env(app.config))  # the worker's Redis namespace, whatever set it
    return supervisor.ChildKeeper(
        "clock", [sys.executable, "-m", "arena", "clock"], env,
        restart_max_s=float(app.config["WORKER_CHILD_RESTART_MAX_S"]),
    ).start()


class AppWorker(Worker):
    """RQ's forking worker, running each job (in its work horse) inside the app's context."""

    def __init__(self, *args: Any, app: Flask | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.app = app if app is not None else worker_app()

    def monitor_work_horse(self, job: Job, *args: Any, **kwargs: Any) -> None:
        """Wait for the horse (RQ), then fold its metrics into the worker's archive: one
        process per job would otherwise leave two files per job in the metrics folder
        (:func:`arena.core.metrics.mark_process_dead`)."""
        horse = self.horse_pid
        try:
            super().monitor_work_horse(job, *args, **kwargs)
        finally:
            if horse:
                metrics.mark_process_dead(horse)

    def perform_job(self, job: Job, *args: Any, **kwargs: Any) -> bool:
        with self.app.app_context(), logs.bind(job_id=job.id):
            return super().perform_job(job, *args, **kwargs)


def make_worker(app: Flask, q: QueueService,
                name: str | None = None) -> AppWorker | ThreadPoolWorker:
    """The thread pool worker (``WORKER_CONCURRENCY`` jobs at once), or with 0 RQ's forking
    worker (one job at a time)."""
    # Import the job bodies now, not inside the first job, so that a job marked started
    # claims its match within milliseconds (until then a reconciler that finds the match's
    # lease expired would enqueue it once more: harmless, but a wasted delivery).
    from . import bodies  # noqa: F401

    if int(app.config["WORKER_CONCURRENCY"]) > 0:
        return pool_worker(app, [q.queue], q.redis, name)
    worker = AppWorker([q.queue], connection=q.redis, name=name, app=app)
    # RQ's own dequeue loop waits for a lost Redis up to this (its default: 60 s).
    worker.max_connection_wait_time = float(app.config["WORKER_REDIS_RETRY_MAX_S"])
    return worker


def run_worker(app: Flask, *, burst: bool = False, clock: bool | None = None,
               name: str | None = None) -> bool:
    """Run an RQ worker on the app's queue until stopped (or, with ``burst``, until the
    queue is empty).  Returns whether it stopped cleanly."""
    set_worker_app(app)
    logs.configure(str(app.config["LOG_FORMAT"]), process="worker")
    metrics.serve_port(str(app.config["METRICS_HOST"]), int(app.config["WORKER_METRICS_PORT"]))
    if metrics.multiprocess_dir() is not None:
        atexit.register(metrics.remove_private_dir)
    q = get_queue(app)
    with_clock = bool(app.config["WORKER_CLOCK"]) if clock is None else clock
    children_die_with_me()  # work horses and RQ's scheduler
    child = start_clock(app) if with_clock and not burst else None
    try:
        return supervisor.supervise_worker(
            q.redis,
            lambda worker_name: make_worker(app, q, worker_name),
            name=name,
            burst=burst,
            with_scheduler=bool(app.config["WORKER_RQ_SCHEDULER"]),
            retry_max_s=float(app.config["WORKER_REDIS_RETRY_MAX_S"]),
            queue_names=[q.queue.name],
            scheduler_restart_max_s=float(app.config["WORKER_CHILD_RESTART_MAX_S"]),
        )
    finally:
        if child is not None:
            child.stop()
