"""Every use of RQ's internals, in one place: what the pool worker and the supervision need
from RQ beyond its public API.

RQ's worker has no public hook for what the service needs (run many jobs in threads of one
process: :mod:`arena.jobs.threadpool_worker`; chain its stop signal and keep it registered
through a Redis restart: :mod:`arena.jobs.supervisor`), so they reach into
``rq.worker.BaseWorker``'s private members and ``rq.worker_registration``.  Those may change in
any RQ release: ``pyproject.toml`` pins ``rq>=3.0,<3.1``, and tests/arena/test_rq_adapter.py
drives each member below through RQ's own code, so an RQ that renames or rewires one fails
there, by name, before anything subtle happens in a worker.  docs/operations.md ("Upgrading
RQ") says what to do then.

The private members, each used only through this module:

``_install_signal_handlers()``
    RQ's work loop calls it once before its first job.  The pool worker installs its own
    handlers there (:class:`SignalHookedWorker`); the supervision wraps whatever a worker
    installs (:func:`signal_installer`, :func:`replace_signal_installer`).
``_start_scheduler(burst, logging_level, date_format, log_format)``
    Starts RQ's scheduler beside the worker (:func:`start_scheduler`).
``_ordered_queues``
    The queues in the order the next dequeue tries them (:func:`ordered_queues`).
``_dequeue_strategy``
    Read by ``reorder_queues`` after every job (:func:`set_dequeue_strategy`).
``_stop_requested``
    RQ's loop flag: set, the loop ends before its next job (:func:`mark_stop_requested`,
    :func:`stop_requested`).
``_shutdown_requested_date``
    What ``set_shutdown_requested_date()`` writes to the worker's hash
    (:func:`set_shutdown_requested_date`).

and of ``rq.scheduler.RQScheduler``: ``_process`` (the scheduler's process, or None before
its first start: :func:`scheduler_process`);

and from ``rq.worker_registration``: ``register`` and ``unregister`` (the set of workers that
``rq info`` and RQ's registry cleanup read: :func:`register`, :func:`unregister`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from redis.client import Pipeline
from rq import Queue, worker_registration
from rq.worker import BaseWorker, DequeueStrategy

PRIVATE_MEMBERS = (
    "_install_signal_handlers",
    "_start_scheduler",
    "_ordered_queues",
    "_dequeue_strategy",
    "_stop_requested",
    "_shutdown_requested_date",
)
"""The private members of ``rq.worker.BaseWorker`` the service uses (each has its test)."""

SCHEDULER_PRIVATE_MEMBERS = ("_process",)
"""The private members of ``rq.scheduler.RQScheduler`` the service uses."""


class SignalHookedWorker(BaseWorker):
    """RQ's base worker whose signal-handler hook has a public name: a subclass overrides
    :meth:`install_signal_handlers`, and RQ's private hook calls it."""

    def _install_signal_handlers(self) -> None:
        self.install_signal_handlers()

    def install_signal_handlers(self) -> None:
        """Install this worker's SIGTERM/SIGINT handlers (RQ's: a warm, then a cold stop)."""
        BaseWorker._install_signal_handlers(self)  # type: ignore[no-untyped-call]


def signal_installer(worker: Any) -> Callable[[], None]:
    """What the worker's loop will call to install its signal handlers."""
    install: Callable[[], None] = worker._install_signal_handlers
    return install


def replace_signal_installer(worker: Any, install: Callable[[], None]) -> None:
    """Make the worker's loop call ``install`` (on this instance) to install its handlers."""
    worker._install_signal_handlers = install


def install_signal_handlers(worker: Any) -> None:
    """Install the worker's signal handlers now, through whatever installer it has."""
    signal_installer(worker)()


def start_scheduler(worker: BaseWorker, burst: bool, logging_level: str | None,
                    date_format: str, log_format: str) -> None:
    """Start RQ's scheduler beside the worker, as RQ's own loop does."""
    worker._start_scheduler(burst, logging_level, date_format, log_format)


def scheduler_process(scheduler: Any) -> Any:
    """The process RQ's scheduler runs in (a ``multiprocessing`` process: ``is_alive()``,
    ``pid``, ``exitcode``), or None before it was first started."""
    return scheduler._process


def ordered_queues(worker: BaseWorker) -> list[Queue]:
    """The worker's queues, in the order its next dequeue tries them."""
    queues: list[Queue] = worker._ordered_queues
    return queues


def set_dequeue_strategy(worker: BaseWorker, strategy: DequeueStrategy) -> None:
    """How ``reorder_queues`` orders the queues after each job."""
    worker._dequeue_strategy = strategy


def stop_requested(worker: Any) -> bool:
    """Whether the worker's loop was told to stop (RQ's loop flag)."""
    return bool(getattr(worker, "_stop_requested", False))


def mark_stop_requested(worker: Any) -> None:
    """Tell RQ's loop to end before its next job (what its own stop signal handler sets)."""
    worker._stop_requested = True


def set_shutdown_requested_date(worker: BaseWorker, when: dt.datetime) -> None:
    """When a stop was asked for: ``set_shutdown_requested_date()`` writes it to Redis."""
    worker._shutdown_requested_date = when


def register(worker: BaseWorker, pipeline: Pipeline) -> None:
    """Add the worker to the registry of live workers (``rq info``, RQ's cleanup)."""
    worker_registration.register(worker, pipeline)


def unregister(worker: BaseWorker, pipeline: Pipeline) -> None:
    """Take the worker out of the registry of live workers."""
    worker_registration.unregister(worker, pipeline)


def delete_job(job: Any) -> None:
    """``job.delete()``, also for a job whose execution record is half gone.

    RQ 3.0's ``Job.delete`` fetches every execution its job's execution registry lists and
    raises ``ValueError("Execution ... not found in Redis")`` when one's hash is gone, which a
    work horse killed mid-job leaves behind.  It raises half-way: the job is already out of
    its registries but its hash stays, with status ``scheduled``, where no sweep finds it
    again (seen in CI under load: the stale retry never went away).  The dangling list is
    dropped and the deletion done again, which is then complete."""
    try:
        job.delete()
    except ValueError:
        job.connection.delete(job.execution_registry.key)
        job.delete()
