"""Processes that look after each other: the worker keeps its RQ loop and its clock alive,
and everything it starts dies with it.

Five duties, each closing a failure found by a fault drill:

* **Redis comes and goes.**  RQ's work loop quits for good on most Redis errors ("unhandled
  exception, quitting").  :func:`supervise_worker` runs the loop again, after waiting for Redis
  with a doubling back-off (``WORKER_REDIS_RETRY_MAX_S`` at most), under a fresh registration.
  Nothing is lost if Redis came back empty: the database is the source of truth and the
  reconciler (:mod:`arena.jobs.reconcile`) enqueues again whatever is unfinished.
* **Children die with their parent.**  :func:`arena.core.processes.die_with_parent` makes the
  calling process receive a signal when its parent dies.  The worker calls it in every
  process it forks (RQ's work horses and scheduler, through
  :func:`arena.core.processes.children_die_with_me`), and the clock calls it at start
  (:data:`arena.core.processes.PARENT_PID_ENV`, which :class:`ChildKeeper` sets).
* **A dead child is started again.**  :class:`ChildKeeper` runs a command (the clock), reaps
  it when it exits (no zombie) and starts it again after a back-off that doubles up to
  ``WORKER_CHILD_RESTART_MAX_S`` (and starts over once a child has lived a while).
* **RQ's scheduler is started again.**  It runs in a process of its own that exits on its
  first Redis error, while the worker's loop waits for Redis and goes on; RQ starts it again
  only in its maintenance pass, every 10 minutes, so a retry due in a second waited for
  minutes.  :class:`SchedulerKeeper` checks it every second and starts it again after a
  back-off that doubles up to ``WORKER_CHILD_RESTART_MAX_S`` (and starts over once a
  scheduler has lived a minute).
* **Names never collide.**  :func:`default_worker_name` is ``host.pid.random``; a name given
  explicitly whose registration belongs to a dead process of this host (a worker killed
  without a chance to unregister) is freed instead of blocking the new worker until RQ's
  registration expires (~8 minutes).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import redis.exceptions
from redis import Redis
from rq.exceptions import StopRequested

from arena.core.processes import PARENT_PID_ENV, pid_alive

from . import rq_adapter
from .backoff import Backoff

log = logging.getLogger(__name__)

REDIS_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)

EXIT_WEDGED = 3
"""Exit status of an ``arena worker`` that stopped because every thread of its pool is stuck
(:class:`WorkerWedgedError`): its process manager starts a fresh one (compose's
``restart: unless-stopped``, systemd's ``Restart=on-failure``)."""


class WorkerWedgedError(Exception):
    """The worker's loop stopped because every one of its job threads is stuck where
    nothing can stop it (abandoned after its timeout, still blocked).  A new loop in the
    same process would run beside them, holding their memory, connections and bookkeeping
    slots: the process must end and be replaced."""


# --- keeping a child alive -----------------------------------------------------------------


class ChildKeeper:
    """Keep one child process running: start it, reap it when it exits, start it again
    after a back-off, and stop it with :meth:`stop`.

    The child is started from the keeper's own thread, which lives as long as the keeper:
    Linux sends the parent-death signal when the *thread* that forked the child exits."""

    def __init__(self, name: str, argv: Sequence[str], env: Mapping[str, str], *,
                 restart_max_s: float = 30.0, healthy_after_s: float = 60.0) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = {**env, PARENT_PID_ENV: str(os.getpid())}
        self.backoff = Backoff(0.5, restart_max_s)
        self.healthy_after_s = healthy_after_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"keep-{name}")

    def start(self) -> ChildKeeper:
        self._thread.start()
        return self

    @property
    def pid(self) -> int | None:
        proc = self.proc
        return None if proc is None else proc.pid

    def _spawn(self) -> subprocess.Popen[bytes] | None:
        with self._lock:
            if self._stopping.is_set():
                return None
            self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL)
            self.starts += 1
            return self.proc

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                proc = self._spawn()
            except OSError as exc:
                log.error("could not start %s: %s", self.name, exc)
                proc = None
            if proc is None and self._stopping.is_set():
                return
            began = time.monotonic()
            code = proc.wait() if proc is not None else None  # reaps it: no zombie
            if self._stopping.is_set():
                return
            if time.monotonic() - began >= self.healthy_after_s:
                self.backoff.reset()
            wait = self.backoff.take()
            log.warning("%s exited (%s); starting it again in %.1fs", self.name, code, wait)
            self._stopping.wait(wait)

    def stop(self, grace_s: float = 10.0) -> None:
        with self._lock:
            self._stopping.set()
            proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._thread.join(timeout=grace_s)


# --- keeping RQ's scheduler alive -----------------------------------------------------------


class SchedulerKeeper:
    """Start a worker's RQ scheduler again when its process has died.

    RQ starts the scheduler inside the worker's loop (``work(with_scheduler=True)``) and
    keeps the handle on ``worker.scheduler``; :meth:`watch` points the keeper at the worker
    of the current loop.  One thread for the worker process's whole life: the scheduler is
    forked from it, and Linux sends a child its parent-death signal when the *thread* that
    forked it exits (:func:`arena.core.processes.children_die_with_me`).  RQ's maintenance
    pass restarts a dead scheduler as well; both run under one lock, so they never start two.
    A scheduler that cannot take its queue's lock (another worker's scheduler holds it) is
    simply not started, as in RQ; the keeper tries again after its back-off."""

    def __init__(self, *, restart_max_s: float = 30.0, check_s: float = 1.0,
                 healthy_after_s: float = 60.0) -> None:
        self.backoff = Backoff(0.5, restart_max_s)
        self.check_s = check_s
        self.healthy_after_s = healthy_after_s
        self.restarts = 0
        self._worker: Any = None
        self._born = time.monotonic()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="keep-scheduler")

    def start(self) -> SchedulerKeeper:
        self._thread.start()
        return self

    def watch(self, worker: Any) -> None:
        """Look after ``worker``'s scheduler from now on (None: nobody's).  RQ's own
        maintenance pass then takes the keeper's lock, and the worker's teardown (the end of
        its loop, which stops its scheduler) lets go of it first: a scheduler started again
        behind a loop that is ending would outlive it beside the next loop's own."""
        with self._lock:
            self._worker = worker
            self._born = time.monotonic()
        if worker is None:
            return
        for hook in ("run_maintenance_tasks", "teardown"):
            if hasattr(worker, hook):
                setattr(worker, hook, self._locked(worker, getattr(worker, hook),
                                                   release=hook == "teardown"))

    def _locked(self, worker: Any, call: Callable[..., Any], *,
                release: bool) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                if release and self._worker is worker:
                    self._worker = None
                return call(*args, **kwargs)

        return run

    def stop(self) -> None:
        self._stopping.set()
        self.watch(None)

    def _dead_scheduler(self) -> tuple[Any, Any, Any] | None:
        """(worker, scheduler, its dead process), or None while there is nothing to do."""
        worker = self._worker
        scheduler = getattr(worker, "scheduler", None)
        if scheduler is None or rq_adapter.stop_requested(worker):
            return None
        process = rq_adapter.scheduler_process(scheduler)
        # Dead means exited: a process RQ has made but not started yet (``_process`` is set
        # before ``start()``, and forking a big worker takes a while on a busy machine) is
        # not alive either, and starting another one beside it left two schedulers.
        if process is None or process.is_alive() or process.exitcode is None:
            return None
        return worker, scheduler, process

    def _run(self) -> None:
        while not self._stopping.wait(self.check_s):
            with self._lock:
                dead = self._dead_scheduler()
                if dead is not None and time.monotonic() - self._born >= self.healthy_after_s:
                    self.backoff.reset()
            if dead is None:
                continue
            worker, scheduler, process = dead
            wait = self.backoff.take()
            log.warning("RQ's scheduler (pid %s) exited (%s); starting it again in %.1fs",
                        process.pid, process.exitcode, wait)
            if self._stopping.wait(wait):
                return
            self._restart(worker, scheduler, process)

    def _restart(self, worker: Any, scheduler: Any, process: Any) -> None:
        with self._lock:
            if self._dead_scheduler() != (worker, scheduler, process):
                return  # stopped, restarted by RQ's maintenance, or another loop meanwhile
            try:
                scheduler.acquire_locks(auto_start=True)
            except (*REDIS_ERRORS, redis.exceptions.RedisError) as exc:
                log.warning("could not start RQ's scheduler again: %s", exc)
                return
            started = rq_adapter.scheduler_process(scheduler)
            if started is not process:
                self.restarts += 1
                self._born = time.monotonic()
                log.info("RQ's scheduler started again (pid %s)", started.pid)


# --- worker names --------------------------------------------------------------------------


def default_worker_name() -> str:
    """``host.pid.random``: unique on one host and across restarts, readable in ``rq info``."""
    host = socket.gethostname().split(".")[0] or "host"
    return f"{host}.{os.getpid()}.{secrets.token_hex(3)}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def free_stale_name(connection: Redis, name: str, queue_names: Sequence[str] = ()) -> bool:
    """Remove the registration of worker ``name`` if it belongs to a dead process of this
    host (or to this very process: an earlier run of the loop).  Returns whether it did."""
    from rq import Worker

    key = f"{Worker.redis_worker_namespace_prefix}{name}"
    raw: dict[Any, Any] = dict(connection.hgetall(key))
    fields = {_text(k): _text(v) for k, v in raw.items()}
    if not fields or "death" in fields:
        return False
    host = fields.get("hostname", "")
    pid_raw = fields.get("pid", "")
    if host != socket.gethostname() or not pid_raw.isdigit():
        return False
    pid = int(pid_raw)
    if pid != os.getpid() and pid_alive(pid):
        return False
    queues = [q for q in fields.get("queues", "").split(",") if q]
    stale = Worker(queues or list(queue_names) or ["default"], connection=connection,
                   name=name)
    with connection.pipeline() as p:
        rq_adapter.unregister(stale, p)
        p.delete(key)
        p.execute()
    log.warning("freed the stale registration of worker %s (pid %s is gone)", name, pid)
    return True


# --- the supervised work loop --------------------------------------------------------------


class WorkerLike(Protocol):
    name: str

    def work(self, burst: bool = ..., logging_level: str | None = ...,
             *args: Any, **kwargs: Any) -> bool: ...


def wait_for_redis(connection: Redis, backoff: Backoff, stopping: threading.Event) -> bool:
    """Ping until Redis answers (True) or a stop is requested (False)."""
    while not stopping.is_set():
        try:
            connection.ping()
            backoff.reset()
            return True
        except REDIS_ERRORS as exc:
            wait = backoff.take()
            log.warning("Redis unreachable (%s); trying again in %.1fs", exc, wait)
            stopping.wait(wait)
    return False


def _forget(worker: WorkerLike) -> None:
    """Tidy what a worker whose loop died on a Redis error left behind (best effort)."""
    with contextlib.suppress(Exception):
        worker.unsubscribe()  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        worker.register_death()  # type: ignore[attr-defined]


def _chain_stop(worker: WorkerLike, stopping: threading.Event) -> None:
    """A worker installs its own SIGTERM/SIGINT handlers when its loop starts (RQ's
    ``request_stop``: warm shutdown; other worker classes their own).  Wrap whatever it
    installed so the request is noted here too (the loop is then not started again), and
    honour a signal that came before its handlers were in place."""
    install = rq_adapter.signal_installer(worker)

    def chained(handler: Any) -> Callable[[int, Any], None]:
        def on_signal(signum: int, frame: Any) -> None:
            stopping.set()
            if callable(handler):
                handler(signum, frame)

        return on_signal

    def install_chained() -> None:
        install()
        own = signal.getsignal(signal.SIGTERM)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, chained(signal.getsignal(sig)))
        if stopping.is_set():  # a signal came before the worker's handlers were in place:
            rq_adapter.mark_stop_requested(worker)  # RQ's loop flag
            if callable(own):  # and whatever the worker's own handler does
                with contextlib.suppress(StopRequested):  # RQ's, outside its loop
                    own(signal.SIGTERM, None)

    rq_adapter.replace_signal_installer(worker, install_chained)


def _register_again_when_forgotten(worker: WorkerLike) -> None:
    """RQ's dequeue loop survives a Redis restart by itself, but a Redis that came back
    empty has forgotten the worker (``rq info`` and RQ's own registry cleanup would not see
    it).  After each heartbeat, register again if the registration is gone."""
    original = worker.heartbeat  # type: ignore[attr-defined]
    w: Any = worker

    def heartbeat(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        # Asked on the worker's own connection even when the heartbeat went into a pipeline
        # (the thread pool worker beats that way): membership does not depend on it.
        conn = w.connection
        if not conn.sismember(w.redis_workers_keys, w.key):
            log.warning("worker %s: Redis forgot this worker; registering again", w.name)
            with conn.pipeline() as p:
                p.hset(w.key, mapping=w.serialize())
                rq_adapter.register(w, p)
                p.expire(w.key, w.worker_ttl + 60)
                p.execute()
        return out

    w.heartbeat = heartbeat


def supervise_worker(connection: Redis, make_worker: Callable[[str], WorkerLike], *,
                     name: str | None = None, burst: bool = False,
                     with_scheduler: bool = True, retry_max_s: float = 30.0,
                     queue_names: Sequence[str] = (),
                     scheduler_restart_max_s: float = 30.0) -> bool:
    """Run RQ work loops until a stop is requested (SIGTERM/SIGINT) or, with ``burst``, the
    queue is empty; a loop that ends on a Redis error is started again once Redis answers.
    Returns True: it only returns when it stopped as asked.  A worker whose loop stopped
    because it is wedged is not started again: :class:`WorkerWedgedError`.  With
    ``with_scheduler`` (and not ``burst``), a :class:`SchedulerKeeper` starts RQ's scheduler
    again when it dies."""
    keeper = (SchedulerKeeper(restart_max_s=scheduler_restart_max_s).start()
              if with_scheduler and not burst else None)
    try:
        return _supervise(connection, make_worker, name=name, burst=burst,
                          with_scheduler=with_scheduler, retry_max_s=retry_max_s,
                          queue_names=queue_names, keeper=keeper)
    finally:
        if keeper is not None:
            keeper.stop()


def _supervise(connection: Redis, make_worker: Callable[[str], WorkerLike], *,
               name: str | None, burst: bool, with_scheduler: bool, retry_max_s: float,
               queue_names: Sequence[str], keeper: SchedulerKeeper | None) -> bool:
    stopping = threading.Event()
    backoff = Backoff(0.5, retry_max_s)

    def on_signal(signum: int, frame: object) -> None:
        stopping.set()

    def ours() -> None:  # between loops (and while Redis is away) a signal ends it all
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    while True:
        ours()
        if not wait_for_redis(connection, backoff, stopping):
            return True
        worker_name = name or default_worker_name()
        worker: WorkerLike | None = None
        try:
            try:
                if name:
                    free_stale_name(connection, name, queue_names)
                worker = make_worker(worker_name)
                _chain_stop(worker, stopping)
                _register_again_when_forgotten(worker)
                if keeper is not None:
                    keeper.watch(worker)
                worker.work(burst=burst, with_scheduler=with_scheduler, logging_level="INFO")
            finally:
                if keeper is not None:
                    keeper.watch(None)  # this loop's scheduler is stopped with it
                ours()  # RQ's handlers would raise StopRequested outside its loop
        except StopRequested:
            # RQ's handler raises this; outside its loop (a signal between installing the
            # handlers and entering the loop) nothing tore the worker down: its scheduler
            # process would keep this one from exiting.
            if worker is not None:
                with contextlib.suppress(Exception):
                    worker.teardown()  # type: ignore[attr-defined]
            return True
        except REDIS_ERRORS as exc:
            log.error("worker %s lost Redis (%s); waiting for it", worker_name, exc)
            if worker is not None:
                _forget(worker)
            continue
        if getattr(worker, "wedged", False):
            log.error("worker %s is wedged (every job thread stuck); exiting so that a fresh "
                      "process takes over", worker_name)
            raise WorkerWedgedError(worker_name)
        if stopping.is_set() or burst:
            return True
        # The loop quit on its own (RQ logs "unhandled exception, quitting"): start again.
        log.error("worker %s quit its loop; starting it again", worker_name)
        _forget(worker)
        stopping.wait(backoff.take())
