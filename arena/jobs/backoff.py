"""A doubling wait with a ceiling: how the worker waits for a lost Redis (its dequeue loop,
:mod:`arena.jobs.threadpool_worker`, and its supervision, :mod:`arena.jobs.supervisor`), how
the supervisor waits before starting a dead clock again, and how a finished match waits for
its database (:mod:`arena.jobs.bodies`).

One class for all of them so that ``WORKER_REDIS_RETRY_MAX_S`` means the same thing
everywhere: the longest wait between two attempts, whatever else happens meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Backoff:
    """A wait that doubles from ``first_s`` up to ``max_s``; :meth:`reset` starts over.

    Only :meth:`take` advances it: one failed attempt, one doubling.  (The pool worker's own
    loop used to double its wait each time it woke up, and a finishing match wakes it up, so
    a worker with matches finishing during a Redis outage reached RQ's 60 s ceiling within
    seconds and took its first job 43 s after Redis was back.)"""

    first_s: float = 0.5
    max_s: float = 30.0
    next_s: float = 0.0

    def __post_init__(self) -> None:
        if self.first_s <= 0 or self.max_s <= 0:
            raise ValueError("a back-off needs positive waits")
        self.next_s = min(self.first_s, self.max_s)

    def take(self) -> float:
        """The wait before the next attempt (each call doubles the one after it)."""
        wait, self.next_s = self.next_s, min(self.max_s, self.next_s * 2)
        return min(wait, self.max_s)

    def reset(self) -> None:
        """An attempt succeeded: the next failure waits ``first_s`` again."""
        self.next_s = min(self.first_s, self.max_s)
