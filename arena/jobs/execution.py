"""What the worker running a job can tell it: its wall-clock budget, to hand back, to give up.

A job in a forked RQ work horse is ended from outside (SIGALRM, SIGKILL).  A job running as a
thread of :class:`arena.jobs.threadpool_worker.ThreadPoolWorker` cannot be: a thread can neither be
interrupted in a blocking call nor safely killed, so the pool and the job cooperate through
one :class:`JobControl` per execution instead.  The pool sets it for the job's thread
(:func:`bind`) and flips its flags; the job body (:mod:`arena.jobs.bodies`) reads it
(:func:`current`) and checks it at every safe point, i.e. between two turns of a match, where
stopping writes nothing half-way.

* ``deadline``: the job's wall-clock budget (its RQ timeout) ran out: the job raises
  :class:`JobBudgetExceededError`, which RQ records as a failure (and retries).
* ``handback``: the worker is shutting down and its grace period is over: a match gives itself
  back to the queue (:class:`HandbackRequested`).
* ``abandoned``: the pool gave up on the job (it overran its budget by the hard grace without
  reaching a safe point, or the worker stopped cold): the job's RQ status is already settled,
  so the job must write nothing more and stop renewing its lease.

Outside the pool (a forked horse, a test calling the job as a plain function) :func:`current`
is a control that never fires; the horse's own death penalty covers timeouts there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class JobStopError(Exception):
    """Base of the ways a job is told to stop at a safe point."""


class JobBudgetExceededError(JobStopError):
    """The job ran past its wall-clock budget (its RQ timeout)."""


class HandbackRequested(JobStopError):  # noqa: N818 - a request, not an error
    """The worker is stopping: give the work back to the queue and return."""


class JobAbandonedError(JobStopError):
    """The worker gave up on this execution; write nothing, renew nothing."""


class JobControl:
    """One execution's budget and stop flags (set by the pool, read by the job)."""

    def __init__(self, budget_s: float | None = None) -> None:
        self.started = time.monotonic()
        self.deadline = None if budget_s is None else self.started + budget_s
        self.handback = threading.Event()
        self.abandoned = threading.Event()

    def expired(self, now: float | None = None) -> bool:
        return self.deadline is not None and (now or time.monotonic()) >= self.deadline

    def check(self) -> None:
        """Raise the reason to stop, if there is one (call at safe points only)."""
        if self.abandoned.is_set():
            raise JobAbandonedError("the worker abandoned this execution")
        if self.expired():
            assert self.deadline is not None
            raise JobBudgetExceededError(
                f"ran past its budget of {self.deadline - self.started:.0f} s")
        if self.handback.is_set():
            raise HandbackRequested("the worker is shutting down")


NEVER = JobControl()
"""The control of a job nobody supervises cooperatively (it never fires)."""

_local = threading.local()


def current() -> JobControl:
    """The control of the job running on this thread."""
    control: JobControl = getattr(_local, "control", NEVER)
    return control


@contextmanager
def bind(control: JobControl) -> Iterator[JobControl]:
    """Make ``control`` the current thread's control for the duration of the block."""
    previous = getattr(_local, "control", None)
    _local.control = control
    try:
        yield control
    finally:
        _local.control = previous if previous is not None else NEVER
