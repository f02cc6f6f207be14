"""An RQ worker that runs many jobs at once, each in a thread of one process.

Why
---
A match spends nearly all its time waiting for bots: with bots that think 500 ms, the referee
needs ~1-2 ms of CPU per move and waits the other 99.7 %.  RQ's default worker forks a work
horse per job and runs one job at a time, so a ladder sized for thousands of bots would need
hundreds of worker processes (~95 MB and a database connection each) to keep enough matches
waiting in parallel.  This worker keeps the queue as it is (jobs on Redis, workers on any
number of machines, RQ's registries and tools) and runs up to ``concurrency`` jobs in one
process, one thread per job, each running the ordinary synchronous job body.

Why threads and not an event loop
---------------------------------
The match engine (:mod:`referee`) and its HTTP caller are synchronous, deadline-enforcing
library code that also serves ``referee play`` and the tests; an event-loop runner would need
a second, async implementation of the bot caller and of the match loop, and every blocking
call in a job (SQLAlchemy, Redis) would have to be kept off the loop.  Threads run the code
that exists unchanged, and the GIL is no obstacle while a match uses ~0.3 % of a core: a
hundred matches with 500 ms bots need a third of one.  Threads cost ~100 KB of resident memory
each, nothing next to a process.  (RQ's own attempt at a ``ThreadPoolWorker``, rq/rq#1803, was
never merged; it used ``TimerDeathPenalty``, which raises an asynchronous exception into the
job's thread: that cannot interrupt a blocking call, and it can land anywhere, e.g. inside a
database transaction or a ``finally``.  This worker does not do that; see "timeouts".)

How a job runs
--------------
The main thread dequeues a job only when a slot is free (never more jobs than threads, so no
job waits in this process while another worker idles), creates its RQ execution (the job is
``started``, in the started registry, in the worker's execution index), and starts a thread
that performs it and records the outcome exactly as RQ's ``SimpleWorker`` does (finished or
failed registry, result, retry).  Between dequeues the main thread sends the heartbeats of the
worker and of every running execution every ``job_monitoring_interval`` (RQ's forking worker
does this while it waits for its horse), and RQ's registry maintenance runs as usual.

Timeouts
--------
A thread cannot be killed, so a job obeys a :class:`~arena.jobs.execution.JobControl`: at its RQ
timeout a match stops itself at its next turn (``JobBudgetExceededError``; RQ records the
failure and retries).  A job still running ``timeout_grace_s`` after its timeout is stuck
where it cannot stop itself (a hung database call, say): the worker records it as failed (RQ
retries it), stops renewing its match lease (so the reconciler hands the match to another
worker once it runs out), frees its slot and abandons the thread; if the thread wakes up later
it writes nothing (its lease is gone or, if it still finishes the match, the result is stored
once as always).  When as many threads are abandoned as there are slots the process is
wedged: its loop stops and sets ``wedged``, and the supervision ends the process
(:class:`~arena.jobs.supervisor.WorkerWedgedError`), so its process manager can start a
fresh one.

Shutdown
--------
SIGTERM or SIGINT: take no more jobs; let running jobs finish for ``shutdown_grace_s``; then
ask the matches still running to give themselves back to the queue at their next turn (they
are re-enqueued at once) and wait ``handback_s`` for that; whatever still runs is recorded as
failed and left to its lease and the reconciler.  A second signal skips straight to that last
step (cold shutdown).  SIGKILL loses nothing either: results are stored in one transaction,
and unfinished matches' leases run out.
"""

from __future__ import annotations

import gc
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import Any

import redis.exceptions
from flask import Flask
from redis import Redis
from rq import Queue
from rq.defaults import DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT
from rq.exceptions import DequeueTimeout, StopRequested
from rq.executions import Execution
from rq.job import Job
from rq.timeouts import BaseDeathPenalty
from rq.utils import now
from rq.worker import DequeueStrategy, WorkerStatus

from arena.core import bookkeeping, logs, metrics
from arena.core.heap import gc_thresholds, settle_heap

from . import rq_adapter
from .backoff import Backoff
from .execution import JobControl, bind

ExcInfo = tuple[type[BaseException] | None, BaseException | None, TracebackType | None]


class NoDeathPenalty(BaseDeathPenalty):
    """RQ wraps job callbacks in a death penalty; SIGALRM works only on the main thread, so
    in the pool they run without one (arena jobs have no callbacks)."""

    def setup_death_penalty(self) -> None:
        pass

    def cancel_death_penalty(self) -> None:
        pass


@dataclass(eq=False)
class Running:
    """One job executing on a thread of the pool."""

    job: Job
    queue: Queue
    execution: Execution
    control: JobControl
    thread: threading.Thread | None = None
    settled: bool = False
    """Set (under the pool lock) by whoever records the outcome first: the thread when the
    job ends, or the main thread when it gives the job up."""
    started: float = field(default_factory=time.monotonic)


class ThreadPoolWorker(rq_adapter.SignalHookedWorker):
    """An RQ worker running up to ``concurrency`` jobs at once in threads (module docstring)."""

    death_penalty_class = NoDeathPenalty

    def __init__(self, queues: Sequence[Queue], *, concurrency: int = 100,
                 shutdown_grace_s: float = 60.0, handback_s: float = 15.0,
                 timeout_grace_s: float = 60.0, tick_s: float = 1.0,
                 redis_retry_max_s: float = 30.0,
                 job_context: Callable[[], AbstractContextManager[Any]] = nullcontext,
                 **kwargs: Any) -> None:
        super().__init__(queues, **kwargs)
        self.max_connection_wait_time = redis_retry_max_s  # RQ's own ceiling (60 s) too
        self.redis_backoff = Backoff(0.5, redis_retry_max_s)
        """The wait between two attempts to reach a lost Redis: doubles per failed attempt
        from half a second up to ``redis_retry_max_s`` (``WORKER_REDIS_RETRY_MAX_S``), and
        starts over after any successful dequeue."""
        self.job_context = job_context
        """What every job's thread runs inside (the arena worker's: its app's context)."""
        if concurrency < 1:
            raise ValueError("a thread pool worker needs at least one thread")
        self.concurrency = concurrency
        self.shutdown_grace_s = shutdown_grace_s
        self.handback_s = handback_s
        self.timeout_grace_s = timeout_grace_s
        self.tick_s = tick_s
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._running: dict[str, Running] = {}
        self._abandoned: list[threading.Thread] = []
        self._stop_at: float | None = None
        self._cold = False
        self._next_beat = 0.0
        self.wedged = False

    # --- signals ---------------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Only flags here: the main loop notices within a tick.
        if self._stop_at is None:
            self._stop_at = time.monotonic()
            rq_adapter.mark_stop_requested(self)
            rq_adapter.set_shutdown_requested_date(self, now())
            self.log.info("Worker %s: warm shut down requested (%s)", self.name,
                          signal.Signals(signum).name)
        else:
            self._cold = True
            self.log.warning("Worker %s: cold shut down requested", self.name)
        with self._lock:
            self._changed.notify_all()

    def request_stop_execution(self, execution_id: str) -> None:
        self.log.warning("Worker %s: stopping one execution is not supported by the thread "
                         "pool worker (execution %s runs on)", self.name, execution_id)

    # --- the loop --------------------------------------------------------------------
    def work(self, burst: bool = False, logging_level: str | None = None,
             date_format: str = DEFAULT_LOGGING_DATE_FORMAT,
             log_format: str = DEFAULT_LOGGING_FORMAT, max_jobs: int | None = None,
             max_idle_time: int | None = None, with_scheduler: bool = False,
             dequeue_strategy: DequeueStrategy = DequeueStrategy.DEFAULT) -> bool:
        """Dequeue and run jobs until stopped (``burst``: until the queue is empty and the
        running jobs are done).  Returns whether any job was started, like RQ's worker."""
        self.bootstrap(logging_level, date_format, log_format)
        rq_adapter.set_dequeue_strategy(self, dequeue_strategy)
        if with_scheduler:
            rq_adapter.start_scheduler(self, burst, logging_level, date_format, log_format)
        rq_adapter.install_signal_handlers(self)  # through the supervision's chain, if any
        self.log.info("Worker %s: running up to %d jobs at once", self.name, self.concurrency)
        metrics.WORKER_JOB_SLOTS.set(self.concurrency)
        started = 0
        idle_since = time.monotonic()
        next_upkeep = 0.0
        try:
            while self._stop_at is None:
                try:
                    if time.monotonic() >= next_upkeep:  # once a tick, not once a job
                        next_upkeep = time.monotonic() + self.tick_s
                        self.check_for_suspension(burst)
                        if self.should_run_maintenance_tasks:
                            self.run_maintenance_tasks()  # type: ignore[no-untyped-call]
                        self._tend()
                        if self._wedged():
                            break
                    if not self._wait_for_slot():
                        continue
                    result = self._dequeue(None if burst else self.tick_s)
                    self.redis_backoff.reset()  # Redis answered
                    if result is not None:
                        self._start(*result)
                except StopRequested:  # suspended in burst mode
                    break
                except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
                    wait = self.redis_backoff.take()
                    self.log.error("Worker %s: Redis unreachable (%s); retrying in %.1f s "
                                   "(%d job(s) keep running)", self.name, exc, wait,
                                   len(self._running))
                    self._pause(wait)
                    continue
                if result is not None:
                    started += 1
                    idle_since = time.monotonic()
                    if max_jobs is not None and started >= max_jobs:
                        break
                    continue
                if self._running:
                    idle_since = time.monotonic()
                    if burst:
                        self._sleep(self.tick_s)  # wait for the running jobs, then look again
                    continue
                if burst:
                    self.log.info("Worker %s: done, quitting", self.name)
                    break
                if max_idle_time is not None and time.monotonic() - idle_since > max_idle_time:
                    self.log.info("Worker %s: idle for %d seconds, quitting", self.name,
                                  max_idle_time)
                    break
        except Exception:
            self.log.exception("Worker %s: unexpected error; stopping", self.name)
            self._stop_at = time.monotonic()
        finally:
            try:
                self._drain()
            finally:
                self.teardown()  # type: ignore[no-untyped-call]
        return bool(started)

    def _sleep(self, seconds: float) -> None:
        """Sleep, waking early when a job ends or a signal arrives."""
        with self._lock:
            self._changed.wait(seconds)

    def _pause(self, seconds: float) -> None:
        """Sleep the whole time unless a stop signal arrives (a job ending does not cut it
        short: the wait is a back-off, and its next attempt would only double it)."""
        until = time.monotonic() + seconds
        with self._lock:
            while self._stop_at is None and not self._cold:
                left = until - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)

    def _wait_for_slot(self) -> bool:
        with self._lock:
            if len(self._running) < self.concurrency:
                return True
            self._changed.wait(self.tick_s)
            return len(self._running) < self.concurrency

    def _dequeue(self, timeout: float | None) -> tuple[Job, Queue] | None:
        if not self._running:
            self.set_state(WorkerStatus.IDLE)
        try:
            result = self.queue_class.dequeue_any(
                rq_adapter.ordered_queues(self),
                None if timeout is None else max(1, round(timeout)),
                connection=self.connection, job_class=self.job_class,
                serializer=self.serializer, death_penalty_class=self.death_penalty_class)
        except DequeueTimeout:
            return None
        if result is None:
            return None
        job, queue = result
        self.reorder_queues(reference_queue=queue)
        job.redis_server_version = self.get_redis_server_version()  # type: ignore[no-untyped-call]
        self.log.info("Worker %s: %s: %s (%s)", self.name, queue.name, job.description, job.id,
                      extra={"job_id": job.id})
        return job, queue

    # --- one job -----------------------------------------------------------------------
    def _start(self, job: Job, queue: Queue) -> None:
        # The execution is created here (the job counts against this worker from now on);
        # the job's own bookkeeping (status ``started``) is done on its thread, so that the
        # main thread can hand out a burst of jobs quickly.
        execution = self.prepare_execution(job)
        timeout = job.timeout or self.queue_class.DEFAULT_TIMEOUT
        budget = None if timeout is None or float(timeout) < 0 else float(timeout)
        run = Running(job, queue, execution, JobControl(budget))
        run.thread = threading.Thread(target=self._perform, args=(run,), daemon=True,
                                      name=f"rq-job-{job.id}")
        with self._lock:
            self._running[execution.id] = run
            metrics.WORKER_JOBS_RUNNING.set(len(self._running))
        run.thread.start()

    def _perform(self, run: Running) -> None:
        """The job's thread: run it, then record the outcome unless it was given up.  Its
        log lines carry the job's id (:mod:`arena.core.logs`)."""
        with logs.bind(job_id=run.job.id):
            self._perform_job(run)

    def _perform_job(self, run: Running) -> None:
        job = run.job
        exc_info: ExcInfo | None = None
        value: Any = None
        try:
            self.prepare_job_execution(job, remove_from_intermediate_queue=len(self.queues) == 1)
        except Exception:
            # Redis failed before the job started: it is still in RQ's intermediate queue
            # and its execution expires from the started registry; RQ's maintenance puts
            # it back on the queue.
            self.log.exception("Worker %s: could not start job %s", self.name, job.id)
            with self._lock:
                run.settled = True
                self._running.pop(run.execution.id, None)
                metrics.WORKER_JOBS_RUNNING.set(len(self._running))
                self._changed.notify_all()
            return
        try:
            with self.job_context(), bind(run.control):
                value = job.perform()
        except Exception:
            exc_info = sys.exc_info()
        with self._lock:
            late, run.settled = run.settled, True
        if late:
            self.log.warning("Worker %s: job %s ended %.0f s after it was given up; its "
                             "outcome was not recorded", self.name, job.id,
                             time.monotonic() - run.started)
            return
        try:
            if exc_info is None:
                self._finalize_success(job, run.queue, run.execution, value)
            else:
                self._finalize_failure(job, run.queue, run.execution, exc_info)
        except Exception:
            # Redis down: the execution expires from the started registry, whose cleanup
            # retries the job; the match itself is safe in the database either way.
            self.log.exception("Worker %s: could not record the outcome of job %s",
                               self.name, job.id)
        finally:
            with self._lock:
                self._running.pop(run.execution.id, None)
                metrics.WORKER_JOBS_RUNNING.set(len(self._running))
                self._changed.notify_all()

    def _give_up(self, run: Running, why: str) -> None:
        """Record a job that cannot be waited for as failed (retried if it has retries) and
        abandon its thread: it writes nothing more and its lease is no longer renewed."""
        with self._lock:
            if run.settled:
                return
            run.settled = True
            self._running.pop(run.execution.id, None)
            metrics.WORKER_JOBS_RUNNING.set(len(self._running))
            if run.thread is not None:
                self._abandoned.append(run.thread)
            self._changed.notify_all()
        metrics.WORKER_JOBS_ABANDONED.inc()
        run.control.abandoned.set()
        self.log.warning("Worker %s: giving up job %s: %s", self.name, run.job.id, why)
        run.job.ended_at = now()
        try:
            self.handle_job_failure(run.job, run.queue,
                                    started_job_registry=run.queue.started_job_registry,
                                    exc_string=why, execution=run.execution)
        except Exception:
            self.log.exception("Worker %s: could not record job %s as failed", self.name,
                               run.job.id)

    # --- upkeep ------------------------------------------------------------------------
    def running(self) -> list[Running]:
        with self._lock:
            return list(self._running.values())

    def _tend(self) -> None:
        """Heartbeats of the worker and every execution (due every monitoring interval),
        then give up the jobs that overran their timeout by the grace."""
        clock = time.monotonic()
        runs = self.running()
        if clock >= self._next_beat:
            self._next_beat = clock + self.job_monitoring_interval
            self._beat(runs)
        for run in runs:
            deadline = run.control.deadline
            if deadline is not None and clock > deadline + self.timeout_grace_s:
                self._give_up(run, f"still running {clock - deadline:.0f} s after its timeout "
                                   f"of {run.job.timeout} s; its thread was abandoned")
        if not runs and self.get_state() == WorkerStatus.BUSY:
            self.set_state(WorkerStatus.IDLE)

    def _beat(self, runs: list[Running]) -> None:
        ttl = self.job_monitoring_interval + 60
        with self.connection.pipeline() as pipe:
            self.heartbeat(self.worker_ttl + 60, pipeline=pipe)
            for run in runs:
                run.execution.heartbeat(run.job.started_job_registry, ttl, pipeline=pipe)
                run.job.heartbeat(now(), ttl, pipeline=pipe)
            created = pipe.execute()[0]
        if created:  # the worker's hash had gone (Redis flushed or restarted): register again
            with self.connection.pipeline() as pipe:
                pipe.hset(self.key, mapping=self.serialize())
                rq_adapter.register(self, pipe)
                pipe.expire(self.key, self.worker_ttl + 60)
                pipe.execute()

    def _wedged(self) -> bool:
        with self._lock:
            self._abandoned = [t for t in self._abandoned if t.is_alive()]
            stuck = len(self._abandoned)
        if stuck >= self.concurrency:
            self.log.error("Worker %s: %d abandoned job threads are still stuck; stopping so "
                           "that a fresh process can take over", self.name, stuck)
            self.wedged = True
        return self.wedged

    def _drain(self) -> None:
        """Warm shutdown: wait, then ask for handbacks, then give up what is left."""
        if not self._running:
            return
        stop_at = self._stop_at if self._stop_at is not None else time.monotonic()
        try:
            self.set_shutdown_requested_date()  # type: ignore[no-untyped-call]
        except Exception:
            self.log.warning("Worker %s: could not record the shutdown request", self.name)
        self.log.info("Worker %s: waiting up to %.0f s for %d running job(s)", self.name,
                      self.shutdown_grace_s, len(self._running))
        self._wait_while_running(stop_at + self.shutdown_grace_s)
        runs = self.running()
        if runs and not self._cold:
            self.log.info("Worker %s: asking %d job(s) to hand their match back", self.name,
                          len(runs))
            for run in runs:
                run.control.handback.set()
            self._wait_while_running(time.monotonic() + self.handback_s)
        for run in self.running():
            self._give_up(run, "its worker stopped before the job ended; the match is left "
                               "to its lease and the reconciler")

    def _wait_while_running(self, until: float) -> None:
        while self._running and not self._cold and time.monotonic() < until:
            try:
                self._tend()
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
                self.log.error("Worker %s: Redis unreachable while stopping: %s", self.name, exc)
            with self._lock:
                if self._running and not self._cold:
                    self._changed.wait(min(self.tick_s, max(0.0, until - time.monotonic())))


def pool_worker(app: Flask, queues: Sequence[Queue], connection: Redis,
                name: str | None = None) -> ThreadPoolWorker:
    """A pool worker configured from the app's settings (``WORKER_*``)."""
    cfg = app.config
    sys.setswitchinterval(float(cfg["WORKER_SWITCH_INTERVAL_MS"]) / 1000)
    thresholds = gc_thresholds(str(cfg["WORKER_GC_THRESHOLDS"]))
    if thresholds:
        gc.set_threshold(*thresholds)
    bookkeeping.configure(int(cfg["WORKER_BOOKKEEPING_SLOTS"]),
                          float(cfg["WORKER_BOOKKEEPING_WAIT_S"]))
    worker = ThreadPoolWorker(
        queues,
        connection=connection,
        name=name,
        concurrency=int(cfg["WORKER_CONCURRENCY"]),
        shutdown_grace_s=float(cfg["WORKER_SHUTDOWN_GRACE_S"]),
        handback_s=float(cfg["WORKER_HANDBACK_S"]),
        timeout_grace_s=float(cfg["WORKER_TIMEOUT_GRACE_S"]),
        redis_retry_max_s=float(cfg["WORKER_REDIS_RETRY_MAX_S"]),
        job_context=app.app_context,
    )
    settle_heap()
    return worker
