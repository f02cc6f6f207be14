"""A deadline for every web request, enforced inside the gunicorn worker process.

Gunicorn's ``timeout`` cannot end a runaway request under gthread workers: it only acts
when a worker's main loop stops sending heartbeats, and that loop keeps running while a
request thread spins or waits forever.  So each worker process runs a watchdog
(:class:`Deadlines`, wired by the hooks in ``deploy/gunicorn.conf.py``):

1. a request still running ``limit_s`` after it started gets :class:`RequestTimeout` raised
   in its thread (``PyThreadState_SetAsyncExc``): Python code (a loop, a slow template) stops
   at its next bytecode, and the client gets an error response;
2. one still running ``grace_s`` later is blocked in C (a socket, a lock, the database): the
   worker process exits, so gunicorn's arbiter starts a fresh one (the other requests of that
   process are cut off too: the last resort, logged as such).

SQL gets its own limit from the database itself: the web process sets
``DATABASE_STATEMENT_TIMEOUT_MS`` (PostgreSQL's ``statement_timeout``), so a slow query ends
with an error instead of holding a thread and a connection.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


class RequestTimeout(Exception):  # noqa: N818 -- named for what the client sees
    """Raised inside a request thread that ran past its deadline."""


@dataclass
class Active:
    started: float
    label: str
    raised: bool = False


def raise_in_thread(thread_id: int, exc: type[BaseException]) -> bool:
    """Raise ``exc`` in another thread of this process at its next bytecode."""
    done = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                                      ctypes.py_object(exc))
    return bool(done == 1)


def _exit_process() -> None:
    os._exit(1)  # not gunicorn's boot-error codes (3, 4): the arbiter starts a new worker


class Deadlines:
    """The requests running in this process and the watchdog that ends the overdue ones."""

    def __init__(self, limit_s: float, grace_s: float = 5.0, *,
                 on_stuck: Callable[[], None] = _exit_process) -> None:
        self.limit_s = limit_s
        self.grace_s = grace_s
        self.on_stuck = on_stuck
        self.active: dict[int, Active] = {}
        self.lock = threading.Lock()
        self.timed_out = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def started(self, label: str) -> None:
        with self.lock:
            self.active[threading.get_ident()] = Active(time.monotonic(), label)

    def ended(self) -> None:
        with self.lock:
            self.active.pop(threading.get_ident(), None)

    def check(self, now: float | None = None) -> None:
        """One look at the running requests (the watchdog calls it twice a second)."""
        now = time.monotonic() if now is None else now
        stuck = []
        with self.lock:  # held while raising: a request cannot end in between
            for tid, req in self.active.items():
                age = now - req.started
                if age >= self.limit_s and not req.raised:
                    req.raised = True
                    self.timed_out += 1
                    log.error("request %s ran %.1fs, past its %.1fs deadline: ending it",
                              req.label, age, self.limit_s)
                    raise_in_thread(tid, RequestTimeout)
                elif req.raised and age >= self.limit_s + self.grace_s:
                    stuck.append(req)
        if stuck:
            log.critical("requests %s are stuck outside Python past their deadline; "
                         "restarting this worker process", [r.label for r in stuck])
            self.on_stuck()

    def _run(self) -> None:
        every = max(0.05, min(0.5, self.limit_s / 4))
        while not self._stop.wait(every):
            try:
                self.check()
            except Exception:  # the watchdog must outlive any one bad look
                log.exception("request deadline check failed")

    def start(self) -> Deadlines:
        self._thread = threading.Thread(target=self._run, daemon=True, name="request-deadline")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()


_CURRENT: Deadlines | None = None


def install(limit_s: float, grace_s: float = 5.0) -> Deadlines | None:
    """Start this process's watchdog (gunicorn's ``post_worker_init``); 0 disables it."""
    global _CURRENT
    if limit_s <= 0:
        return None
    _CURRENT = Deadlines(limit_s, grace_s).start()
    return _CURRENT


def request_started(label: str) -> None:
    if _CURRENT is not None:
        _CURRENT.started(label)


def request_ended() -> None:
    if _CURRENT is not None:
        _CURRENT.ended()
