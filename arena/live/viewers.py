"""How many spectators watch each live stream: written by the relay, read by the web.

Why through Redis: the web must never wait on the relay (a page render that asked the relay
over HTTP would hang with it), and there may be several relays.  Each relay writes, every
:data:`PUBLISH_S`, one hash per stream it serves (``<prefix>:viewers:match:<id>``: field
the relay's token, value its viewer count) and its own heartbeat in
``<prefix>:viewers:relays`` (field the token, value the unix time), every key with a TTL of
:data:`TTL_S`.  A reader sums the fields of the relays whose heartbeat is fresh: a relay
that died stops counting within :data:`TTL_S`, and when no relay is fresh the counts are
*unknown* (``None``, shown as "—"), not zero.

The reader (:class:`ViewerCounts`) asks Redis once per :data:`CACHE_S` per web process,
with a socket timeout of :data:`READ_TIMEOUT_S`: a slow or lost Redis costs a page at most
that, and then "—" until the next try.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from redis import Redis

from arena.core.redis_connect import connect

log = logging.getLogger(__name__)

PUBLISH_S = 2.0
"""How often a relay writes its counts."""
TTL_S = 10.0
"""How long a relay's counts (and its heartbeat) stand without being written again."""
CACHE_S = 2.0
"""How long a web process reuses the counts it read."""
READ_TIMEOUT_S = 0.25
"""A read of the counts gives up after this (the page says "—")."""

Stream = tuple[str, int]
"""A live stream: ("match" or "tournament", its id)."""


def viewers_key(prefix: str, kind: str, ident: int) -> str:
    return f"{prefix}:viewers:{kind}:{ident}"


def relays_key(prefix: str) -> str:
    return f"{prefix}:viewers:relays"


def publish_commands(prefix: str, token: str, counts: Mapping[Stream, int],
                     gone: Iterable[Stream], now: float) -> list[tuple[Any, ...]]:
    """The Redis commands one relay sends each :data:`PUBLISH_S` (kept apart from the relay's
    event loop so that the layout is written in one place, next to its reader)."""
    ttl = int(TTL_S)
    cmds: list[tuple[Any, ...]] = []
    for (kind, ident), n in counts.items():
        key = viewers_key(prefix, kind, ident)
        cmds.append(("HSET", key, token, n))
        cmds.append(("EXPIRE", key, ttl))
    for kind, ident in gone:
        cmds.append(("HDEL", viewers_key(prefix, kind, ident), token))
    cmds.append(("HSET", relays_key(prefix), token, f"{now:.3f}"))
    cmds.append(("EXPIRE", relays_key(prefix), ttl))
    return cmds


def read_counts(redis: Redis, prefix: str, streams: list[Stream],
                now: float | None = None) -> dict[Stream, int] | None:
    """Each stream's viewers (0 when nobody watches it), or None when no relay reports
    (counts unknown).  One round trip."""
    now = time.time() if now is None else now
    pipe = redis.pipeline(transaction=False)
    pipe.hgetall(relays_key(prefix))
    for kind, ident in streams:
        pipe.hgetall(viewers_key(prefix, kind, ident))
    answers: list[dict[Any, Any]] = pipe.execute()
    fresh = {_text(k) for k, v in answers[0].items() if now - float(_text(v)) < TTL_S}
    if not fresh:
        return None
    out: dict[Stream, int] = {}
    for stream, fields in zip(streams, answers[1:], strict=True):
        out[stream] = sum(int(_text(v)) for k, v in fields.items() if _text(k) in fresh)
    return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class ViewerCounts:
    """The counts as one web process last read them (thread-safe): at most one Redis read
    per :data:`CACHE_S`, bounded by :data:`READ_TIMEOUT_S`; None (unknown) on any failure.

    The cache keeps the streams of the last read; a stream it has not seen is read on the
    next call (pages ask for the few streams they show)."""

    def __init__(self, redis_url: str, prefix: str) -> None:
        self.prefix = prefix
        self.redis = connect(redis_url, socket_timeout=READ_TIMEOUT_S,
                             socket_connect_timeout=READ_TIMEOUT_S)
        self._lock = threading.Lock()
        self._at = -1e18
        self._known: dict[Stream, int] | None = None
        self._asked: frozenset[Stream] = frozenset()

    def get(self, streams: list[Stream]) -> dict[Stream, int] | None:
        wanted = frozenset(streams)
        now = time.monotonic()
        with self._lock:
            if now - self._at < CACHE_S and wanted <= self._asked:
                return self._known
        try:
            counts = read_counts(self.redis, self.prefix, sorted(wanted))
        except Exception as exc:  # Redis slow or down: unknown, the page still renders
            log.warning("viewer counts unavailable: %s", exc)
            counts = None
        with self._lock:
            self._at, self._known, self._asked = now, counts, wanted
        return counts
