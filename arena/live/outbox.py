"""The live events of every match of a process, sent to Redis by one thread, in batches.

Why
---
A pool worker plays a hundred matches at once, and each turn of each publishes a ``turn``
event.  Sent by the match's own thread, every event was a Redis round trip of its own (a
pipeline of XADD and EXPIRE: checking out a connection, packing, parsing two replies,
checking it in), and that client-side work was a fifth of the interpreter time the whole
worker spent (``py-spy --gil`` on ``bench/concurrency.py``): time that every deadline of
every other match waits behind.  Here a match's thread only encodes its event and appends it
to a list; one sender thread wakes every ``LIVE_FLUSH_MS``, takes everything pending and sends
it in one command, a script that runs an XADD per event and one EXPIRE per stream
(:data:`_SEND_BATCH`; a pipeline of those commands cost the sender ~80 us of CPU an event).
A viewer sees a turn at most that much later, which nobody watching a card game can tell.

Guarantees
----------
* **Order:** one sender, first in first out: each stream gets its events in the order they
  were published.
* **Delivered before the job ends:** :meth:`Outbox.flush` waits until everything queued so
  far is sent (or dropped); a match's publisher flushes after its ``end`` event, so when a
  job has returned its events are in Redis, as before.
* **Never stops a match:** a Redis error drops that batch and stops the broadcast of every
  stream in it for good (logged once per batch), exactly as a failed publish did before; the
  matches play on.  A sender that cannot keep up (``MAX_PENDING`` events waiting) stops a
  stream the same way, so memory stays bounded.
* **The stream that floods is the one stopped:** when the outbox is full, the stream with
  the most events waiting loses them and its broadcast, not the stream whose event happened
  to come next.  The fastest match (a table of forfeited seats plays its turns at the
  engine's speed) cannot make the broadcast of a slower one stop.

One outbox per process and Redis client (:func:`outbox_for`); a forked process (RQ's work
horse) starts its own sender, since threads do not survive a fork.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from redis import Redis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

MAX_PENDING = 100_000
"""Events waiting to be sent beyond which new events are refused (their streams stop)."""


@dataclass(frozen=True, slots=True)
class Event:
    key: str
    kind: str
    body: bytes
    """The event's JSON, UTF-8 (:func:`arena.live.channel.encode`)."""
    max_len: int
    ttl_s: int


class Outbox:
    """Events waiting for the sender thread, and the streams whose broadcast has stopped."""

    def __init__(self, redis: Redis, interval_s: float) -> None:
        self.redis, self.interval_s = redis, interval_s
        self._cond = threading.Condition()
        self._pending: list[Event] = []
        self._waiting: dict[str, int] = {}
        """How many of the pending events each stream has."""
        self._queued = 0
        """Sequence number of the newest event queued."""
        self._done = 0
        """Sequence number of the newest event sent or dropped."""
        self._hurry = False
        self.broken: set[str] = set()
        self._thread: threading.Thread | None = None

    def put(self, event: Event) -> bool:
        """Queue one event; False when its stream's broadcast has stopped."""
        with self._cond:
            if event.key in self.broken:
                return False
            if len(self._pending) >= MAX_PENDING and self._stop_the_flood() == event.key:
                return False
            self._start()
            if not self._pending:  # the first of a batch wakes an idle sender
                self._cond.notify_all()
            self._pending.append(event)
            self._waiting[event.key] = self._waiting.get(event.key, 0) + 1
            self._queued += 1
            return True

    def _stop_the_flood(self) -> str:
        """Stop the stream with the most events waiting and drop them (the outbox is full;
        called with the lock held); returns its key."""
        key = max(self._waiting, key=self._waiting.__getitem__)
        self.broken.add(key)
        log.warning("%s: live events stop (%d of the %d events waiting to be sent are its)",
                    key, self._waiting.pop(key), len(self._pending))
        self._pending = [e for e in self._pending if e.key != key]
        return key

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until everything queued so far is sent or dropped (False: timed out)."""
        with self._cond:
            target = self._queued
            if self._done >= target:
                return True
            self._hurry = True
            self._cond.notify_all()
            return self._cond.wait_for(lambda: self._done >= target, timeout_s)

    def forget(self, key: str) -> None:
        """A stream's publisher is done with it: its stopped mark is not needed any more."""
        with self._cond:
            self.broken.discard(key)

    def _start(self) -> None:
        if self._thread is None:  # called with the lock held
            self._thread = threading.Thread(target=self._run, name="live-outbox", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._hurry)  # idle: no wake-ups
                if not self._hurry:  # let the batch gather for one interval
                    self._cond.wait_for(lambda: self._hurry, self.interval_s)
                batch, self._pending, self._hurry = self._pending, [], False
                self._waiting = {}
                upto = self._queued
            if batch:
                try:
                    self._send(batch)
                except Exception:  # the sender must outlive any batch, or every flush waits
                    log.exception("live events stop for a batch of %d", len(batch))
                    with self._cond:
                        self.broken.update(e.key for e in batch)
            with self._cond:
                self._done = upto
                self._cond.notify_all()

    def _send(self, batch: list[Event]) -> None:
        keys: dict[str, int] = {}  # each stream's place in KEYS, 1-based (Lua's)
        ttls: list[int] = []
        args: list[str | bytes | int] = [len(batch)]
        for e in batch:
            at = keys.get(e.key)
            if at is None:
                at = keys[e.key] = len(keys) + 1
                ttls.append(e.ttl_s)
            else:
                ttls[at - 1] = e.ttl_s
            args += (at, e.kind, e.body, e.max_len)
        pipe = self.redis.pipeline(transaction=False)
        pipe.eval(_SEND_BATCH, len(keys), *keys, *args, *ttls)
        try:
            reply = pipe.execute(raise_on_error=False)[0]
        except RedisError as exc:  # the connection: nothing of the batch is known to be sent
            failed = set(keys)
            reason = str(exc)
        else:
            if isinstance(reply, Exception):  # the script itself was refused
                failed, reason = set(keys), str(reply)
            else:  # a command refused (a key of another type, say): only its stream stops
                streams = list(keys)
                failed = {streams[int(i) - 1] for i in reply[1:]}
                reason = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
        if failed:
            with self._cond:
                self.broken.update(failed)
            log.warning("live events stop for %d streams (%s); their matches play on",
                        len(failed), reason)


_SEND_BATCH = """
local n = tonumber(ARGV[1])
local failed = {""}
local broken = {}
local at = 2
for _ = 1, n do
  local k = tonumber(ARGV[at])
  local added = redis.pcall("XADD", KEYS[k], "MAXLEN", "~", ARGV[at + 3], "*",
                            "t", ARGV[at + 1], "d", ARGV[at + 2])
  if type(added) == "table" and added.err and not broken[k] then
    broken[k] = true
    failed[1] = added.err
    failed[#failed + 1] = k
  end
  at = at + 4
end
for k = 1, #KEYS do
  if not broken[k] then redis.pcall("EXPIRE", KEYS[k], ARGV[at + k - 1]) end
end
return failed
"""
"""A batch in one command: an ``XADD`` per event, in order, then an ``EXPIRE`` per stream
after its last event; returns the first error's text and the streams (places in ``KEYS``)
whose ``XADD`` was refused.  One command instead of one per event and stream: packing and
reading a command a turn was most of the sender's CPU (Redis scripts replicate their effects,
so ``*`` ids are safe)."""


_boxes: dict[tuple[int, int], Outbox] = {}
_boxes_lock = threading.Lock()


def outbox_for(redis: Redis, interval_s: float) -> Outbox:
    """This process's outbox for ``redis`` (created with its sender on first use)."""
    key = (os.getpid(), id(redis))
    with _boxes_lock:
        box = _boxes.get(key)
        if box is None or box.redis is not redis:
            box = _boxes[key] = Outbox(redis, interval_s)
        return box


def _forget_after_fork() -> None:
    global _boxes_lock
    _boxes.clear()  # the parent's senders do not exist here
    _boxes_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
