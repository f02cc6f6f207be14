"""The deployment-wide tier of the response cache: renders kept in Redis for every web process.

Why
---
:class:`arena.web.readcache.ReadCache` keeps answers in one process's memory, so a deployment
of M web processes on N machines renders each public URL up to N x M times per
``READ_CACHE_S``, and the first visitors of a URL in each process wait for a render even
when another process rendered the same page a moment before.  With 16 clients on a busy
bot's page, a tournament page or the home page at 10,000 bots and 1,000,000 matches, that
wait was the whole p95 (``bench/read_path.py``: 90-220 ms with two gunicorn processes,
each render slowed by the hits it competes with).  On a miss of its own memory a process
asks this tier first, in one round trip, and a render made anywhere in the deployment is
reused everywhere.

Freshness: the same bound, and a writer sees its change
-------------------------------------------------------
An entry carries the wall-clock time at which its render started (when it read its data)
and is given out for at most ``READ_CACHE_S`` after it (the machines of a deployment keep
their clocks in step; an entry stamped "in the future" by a fast clock is not trusted).
It also carries the deployment's *generation* as it was when its render started: a counter
that every request changing what pages show, through any web process, increments
(:meth:`SharedTier.bump`; :mod:`arena.core.changes` says which requests do), read in the same
round trip as the entry.  An entry whose generation is not the current one is never
given out, so a render that began before a write is dead at once in every process, and the
writer, reading through whichever process, sees its change.  (Writes by workers, such as a
finished match, are caught up with by the time bound, as in each process's own memory.)

Failure
-------
The tier is an optimisation: a Redis error or timeout (``SOCKET_TIMEOUT_S``) makes it step
aside for ``PAUSE_AFTER_ERROR_S`` (logged once per pause) while each process's memory goes
on alone; a page never fails because the tier did.

Format
------
Not pickle (whoever can write to the Redis would run code in every web process): one line
of JSON (status, headers, start time, generation, the CSRF slot the render used) and the
body's bytes.  Each process writes its own :data:`arena.web.readcache.TOKEN_SLOT` where a
visitor's token goes, so a stored render's slot is swapped for the reader's own.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from redis import Redis
from redis.exceptions import RedisError

from arena.core.redis_connect import connect

log = logging.getLogger(__name__)

SOCKET_TIMEOUT_S = 0.25
"""Longest wait for the Redis answer of one lookup or store (a loopback or LAN round trip
is well under a millisecond; longer means Redis is in trouble, and rendering is cheaper)."""
PAUSE_AFTER_ERROR_S = 5.0
"""How long the tier steps aside after a Redis error."""
MAX_ENTRY_BYTES = 1 << 20
"""Larger answers stay in the process's own memory only (every page is far below this)."""


@dataclass(frozen=True)
class SharedEntry:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    started_wall: float
    """``time.time()`` at which its render started, on the machine that rendered it."""


class SharedTier:
    """One app's view of the deployment's shared renders (thread-safe)."""

    def __init__(self, connect: Callable[[], Redis], namespace: str, max_age_s: float,
                 slot: str, wall: Callable[[], float] = time.time) -> None:
        self._connect = connect
        self._redis: Redis | None = None
        self.prefix = f"{namespace}:readcache"
        self.generation_key = f"{self.prefix}:generation"
        self.max_age_s = max_age_s
        self.slot = slot
        self.wall = wall
        self._lock = threading.Lock()
        self._paused_until = 0.0

    # --- Redis, or stepping aside -----------------------------------------------------------
    def _client(self) -> Redis | None:
        if time.monotonic() < self._paused_until:
            return None
        with self._lock:
            if self._redis is None:
                self._redis = self._connect()
            return self._redis

    def _failed(self, what: str, exc: Exception) -> None:
        with self._lock:
            first = time.monotonic() >= self._paused_until
            self._paused_until = time.monotonic() + PAUSE_AFTER_ERROR_S
        if first:
            log.warning("shared read cache: %s failed (%s); each process caches alone for "
                        "%.0f s", what, exc, PAUSE_AFTER_ERROR_S)

    def _key(self, key: str) -> str:
        return f"{self.prefix}:entry:{key}"

    # --- the three operations ---------------------------------------------------------------
    def lookup(self, key: str) -> tuple[SharedEntry | None, int | None]:
        """The entry for ``key`` if one is fresh and of the current generation, and the
        current generation (``None`` when the tier is unavailable: then do not store)."""
        client = self._client()
        if client is None:
            return None, None
        try:
            raw_generation, raw = client.mget([self.generation_key, self._key(key)])
        except RedisError as exc:
            self._failed("a lookup", exc)
            return None, None
        generation = int(raw_generation or 0)
        if not isinstance(raw, bytes):  # none stored (this client never decodes to str)
            return None, generation
        entry = self._decode(raw, generation)
        return entry, generation

    def store(self, key: str, status: int, headers: list[tuple[str, str]], body: bytes,
              started_wall: float, generation: int) -> None:
        """Keep a render that started at ``started_wall`` in ``generation`` for the others
        (for what is left of its life)."""
        left_ms = int((started_wall + self.max_age_s - self.wall()) * 1000)
        if left_ms <= 0 or len(body) > MAX_ENTRY_BYTES:
            return
        client = self._client()
        if client is None:
            return
        head = json.dumps({"s": status, "h": headers, "t": started_wall, "g": generation,
                           "k": self.slot}, separators=(",", ":")).encode()
        try:
            client.set(self._key(key), head + b"\n" + body, px=left_ms)
        except RedisError as exc:
            self._failed("a store", exc)

    def bump(self) -> None:
        """A change of what pages show went through this process: every render stored
        before it is stale."""
        client = self._client()
        if client is None:
            return
        try:
            client.incr(self.generation_key)
        except RedisError as exc:
            self._failed("a generation bump", exc)

    # --- format -----------------------------------------------------------------------------
    def _decode(self, raw: bytes, generation: int) -> SharedEntry | None:
        head, sep, body = raw.partition(b"\n")
        if not sep:
            return None
        try:
            meta = json.loads(head)
            started, status = float(meta["t"]), int(meta["s"])
            headers = [(str(k), str(v)) for k, v in meta["h"]]
            stored_generation, slot = int(meta["g"]), str(meta["k"])
        except (ValueError, KeyError, TypeError):
            return None
        age = self.wall() - started
        if stored_generation != generation or not 0 <= age < self.max_age_s:
            return None
        if slot != self.slot:
            body = body.replace(slot.encode(), self.slot.encode())
        return SharedEntry(status, headers, body, started)


def shared_redis(url: str) -> Redis:
    """A connection with short timeouts (the tier must never hold a page up)."""
    return connect(url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S)
