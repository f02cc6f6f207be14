"""Group commit of finished matches: the results a process is storing at once share one
transaction, so one commit (one WAL flush) under the family's ledger lock stores them all.

Why
---
A finish applies its result to the ratings under the rating family's ledger lock
(:func:`arena.play.ratings.lock_family`), and a row lock is held until the transaction's
commit returns, the disk's flush of the write-ahead log included.  So every finish of a
family waits for the flush of the one before it, and a family stores at most one result per
flush: ``bench/ledger_throughput.py`` measured the commit under the lock as most of the
hold on a busy disk, and results per second per family as the flush rate.  PostgreSQL's own
group commit cannot help, since the lock lets only one of them commit at a time.

How
---
The threads of a process that finish matches at the same moment queue their finishes here;
the first becomes the *leader* and stores up to :data:`MAX_BATCH` of them in one
transaction (in a bookkeeping slot), and the others wait for their outcome (holding no slot
and no connection).  In the transaction, first every match's own writes (the ``finished``
state under its lease, the seats, the bots' idle time and health judgement; a match whose
lease is lost is found by the first of them and writes nothing); then the ledger lock, once
per family; then each match's result, ratings and rating events, in queue order; then one
commit.  Whoever queues while a batch is being stored is in the next one.  A process
finishing one match at a time stores batches of one: the same statements as before.

What does not change: a match's writes are all stored or none (a batch whose ledger part
fails for one of its matches, say a result stored already by another attempt, is stored
again one match per transaction, each as before); results are inserted under the lock, so
their ids are the order the ratings were applied in (what ``arena ratings --check``
replays); a result is applied once (the unique result and rating events refuse a second);
the family lock is taken after the bot rows, never before them, in every transaction.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask

MAX_BATCH = 32
"""Most finishes stored in one transaction (a batch holds the ledger lock for its matches'
ledger writes and one commit)."""


@dataclass(eq=False)
class Pending:
    """One finish waiting for its batch: what to store, then its outcome or error."""

    work: Any
    outcome: str | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


StoreBatch = Callable[[list[Any]], list[Any]]
"""Stores a batch in one transaction: an outcome per item, in order (an exception: that
item's error, raised in its own thread); raises if the batch failed as a whole (then every
item's finish sees that error)."""


class Batcher:
    """The queue of one process's finishes and its current leader (one per app)."""

    def __init__(self, store: StoreBatch, around: Callable[[], Any]) -> None:
        self.pid = os.getpid()
        self.store = store
        self.around = around
        """What the leader stores a batch inside (a bookkeeping slot)."""
        self._lock = threading.Lock()
        self._queue: list[Pending] = []
        self._leading = False

    def submit(self, work: Any) -> str:
        """Store ``work`` in the next batch; returns its outcome (raises its error)."""
        mine = Pending(work)
        with self._lock:
            self._queue.append(mine)
            lead = not self._leading
            if lead:
                self._leading = True
        if lead:
            self._lead()
        mine.done.wait()
        if mine.error is not None:
            raise mine.error
        assert mine.outcome is not None
        return mine.outcome

    def _lead(self) -> None:
        """Store batches until the queue is empty (ours is in the first)."""
        while True:
            with self._lock:
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                if not batch:
                    self._leading = False
                    return
            try:
                with self.around():
                    outcomes = self.store([p.work for p in batch])
            except BaseException as exc:  # every finish of the batch sees it
                for p in batch:
                    p.error = exc
            else:
                for p, outcome in zip(batch, outcomes, strict=True):
                    if isinstance(outcome, BaseException):
                        p.error = outcome
                    else:
                        p.outcome = outcome
            for p in batch:
                p.done.set()


def batcher_for(app: Flask, store: StoreBatch, around: Callable[[], Any]) -> Batcher:
    """The app's batcher in this process (made on first use; a forked child makes its own:
    its parent's leader is not there)."""
    found: Batcher | None = app.extensions.get("arena.ledger")
    if found is None or found.pid != os.getpid():
        with _made:
            found = app.extensions.get("arena.ledger")
            if found is None or found.pid != os.getpid():
                found = app.extensions["arena.ledger"] = Batcher(store, around)
    return found


_made = threading.Lock()
