"""Bookkeeping slots: a match's heavy work that no deadline waits for, a few threads at a time.

Why
---
A pool worker (:mod:`arena.jobs.threadpool_worker`) runs a hundred matches as threads of one
process, and a thread whose bot answered, or whose deadline fired, must win the interpreter
(the GIL) to notice.  Python hands the GIL round the runnable threads about once per switch
interval, so that wait grows with the number of threads that want the interpreter at the
same moment.  During play those are few: a turn is a millisecond of work in half a second of
waiting.  But matches come in waves: a tournament round or a burst of ladder jobs starts a
hundred of them within a second, and matches dealt alike finish their deals alike.  Then a
hundred threads claim their matches, build a deal's replay or store a result (5-20 ms of
interpreter each: SQLAlchemy, JSON, gzip) all at once, and a deadline that fires in the
middle of the wave waits behind all of them: ``bench/concurrency.py`` measured the deadline
overshoot's tail (p99 24-39 ms, max 35-99 ms) in exactly those waves, at the first and the
last turns, and under 9 ms between them.

So that work takes a slot first: at most ``WORKER_BOOKKEEPING_SLOTS`` threads do it at once,
the others wait for a slot in a lock (holding no interpreter), and a wave of a hundred
finishes becomes a short queue of them, while the turns of every other match, and their
deadlines, go on between.  The work is the same and nobody's clock is waiting on it: a
result stored 100 ms later changes nothing, a deadline noticed 100 ms late is a hard
deadline that is not.

What takes a slot: claiming a match and reading its seats, the live ``start`` event,
building a finished deal's replay for the live channel, storing the result with its ratings
and call records, and the tournament's follow-up.  What never does: anything a bot's call or
a turn waits for.  A holder never waits for another slot (each use is one flat block), and
a slot is taken before a database transaction opens, never inside one, so no thread waits
for a slot while holding a connection.

A slot is a courtesy, not a lock: a thread that has waited ``WORKER_BOOKKEEPING_WAIT_S`` for
one goes ahead without it.  A holder can be stuck where nothing can stop it (a claim
waiting on a row lock that someone else holds, a database that stopped answering), and
with strict slots two such holders would stop every other match of the process from
starting or finishing; this way they delay the others by that wait, never more.

Outside a pool worker (RQ's forking worker, ``referee play``, the tests) there is one match
per process and no gate: :func:`slot` is free until :func:`configure` sets a size.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from . import metrics


class Gate:
    """At most ``slots`` holders at once (0: no limit), each newcomer waiting at most
    ``wait_s`` for its turn; counts the threads waiting and those that went ahead."""

    def __init__(self, slots: int, wait_s: float = 5.0) -> None:
        if slots < 0:
            raise ValueError(f"bookkeeping slots must be >= 0, got {slots}")
        if wait_s <= 0:
            raise ValueError(f"the wait for a bookkeeping slot must be > 0, got {wait_s}")
        self.slots, self.wait_s = slots, wait_s
        self._sem = threading.BoundedSemaphore(slots) if slots else None
        self._lock = threading.Lock()
        self.waiting = 0
        """Threads waiting for a slot now (what a wave of matches queues up)."""
        self.went_ahead = 0
        """Threads that waited ``wait_s`` in vain and went ahead without a slot."""

    @contextmanager
    def slot(self) -> Iterator[None]:
        sem = self._sem
        if sem is None:
            yield
            return
        held = sem.acquire(blocking=False)
        if not held:
            with self._lock:
                self.waiting += 1
            t0 = time.perf_counter()
            try:
                held = sem.acquire(timeout=self.wait_s)
            finally:
                with self._lock:
                    self.waiting -= 1
                    self.went_ahead += not held
                metrics.BOOKKEEPING_WAIT.observe(time.perf_counter() - t0)
                if not held:
                    metrics.BOOKKEEPING_WENT_AHEAD.inc()
        try:
            yield
        finally:
            if held:
                sem.release()


gate = Gate(0)
"""The process's gate: no limit until :func:`configure` (a pool worker) sets one."""


def configure(slots: int, wait_s: float = 5.0) -> None:
    """Set the process's number of bookkeeping slots (0: no limit) and how long a thread
    waits for one before it goes ahead without."""
    global gate
    gate = Gate(slots, wait_s)


def slot() -> AbstractContextManager[None]:
    """Hold one of the process's bookkeeping slots for the block (waiting, without the
    interpreter, until one is free)."""
    return gate.slot()
