"""Every Redis client of the service is made here: straight to one server, or through Sentinel.

One address, a URL, says where the deployment's Redis is, and every process and every part
of one (the queue and its workers, rate limits, the read caches' shared tier, the live relay,
viewer counts, the clock's leader lock) builds its clients from it with :func:`connect` or
:func:`connect_async`:

``redis://``, ``rediss://``, ``unix://``
    one server (``REDIS_URL``, or the embedded one): redis-py's ``from_url``.
``redis+sentinel://[:password@]host:port[,host:port...]/service[?db=N&sentinel_password=...]``
    a primary found through Sentinel (the ``redis+sentinel`` notation of the ``limits``
    library, which the rate limits hand it in).  The settings ``REDIS_SENTINELS``,
    ``REDIS_SENTINEL_SERVICE``, ``REDIS_PASSWORD`` and ``REDIS_SENTINEL_PASSWORD`` are
    the documented way to ask for it; :func:`sentinel_url` turns them into this address,
    which is what a process hands its children in ``REDIS_URL`` (the worker's clock).

Why a client made through Sentinel survives a failover by itself: redis-py's
``Sentinel.master_for`` gives a client whose connections ask the sentinels for the primary's
address each time they connect.  When the primary dies, a command fails with a
``ConnectionError`` (connection refused or reset) and the connection is dropped; the next
attempt connects to whatever the sentinels then call the primary (the old one until they have
agreed it is down, ``down-after-milliseconds``; the promoted replica after).  A primary that
came back demoted answers writes with ``READONLY``, which the client turns into a
``ConnectionError`` too and reconnects.  So every caller's existing handling of a lost Redis
(the workers' back-off, the relay's retry, the caches stepping aside, the limits' in-memory
fallback) is also its handling of a failover: nothing else changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

import redis.asyncio
import redis.asyncio.sentinel
from redis import Redis
from redis.sentinel import Sentinel

SENTINEL_SCHEME = "redis+sentinel"

SENTINEL_TIMEOUT_S = 2.0
"""Longest wait for one sentinel to connect or answer.  A sentinel answers a question about
the primary in well under a millisecond; one that does not is skipped for the next, and the
question is asked again on every new connection, so a dead sentinel must cost little."""


@dataclass(frozen=True)
class SentinelAddress:
    """Where the primary is found: the sentinels, the name they know it by, the passwords."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    password: str = ""
    """Of the primary and its replicas (their ``requirepass``; empty: none)."""
    sentinel_password: str = ""
    """Of the sentinels themselves (their ``requirepass``; empty: none)."""
    db: int = 0

    def url(self) -> str:
        hosts = ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.sentinels)
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        query = {k: v for k, v in (("db", str(self.db) if self.db else ""),
                                   ("sentinel_password", self.sentinel_password)) if v}
        tail = f"?{urlencode(query)}" if query else ""
        return f"{SENTINEL_SCHEME}://{auth}{hosts}/{quote(self.service, safe='')}{tail}"

    def sentinel(self, **options: Any) -> Sentinel:
        """redis-py's sentinel manager; ``options`` go to the connections to the primary."""
        return Sentinel(list(self.sentinels),  # type: ignore[no-untyped-call]
                        sentinel_kwargs=self._sentinel_kwargs(), **self._data_kwargs(options))

    def async_sentinel(self, **options: Any) -> redis.asyncio.sentinel.Sentinel:
        return redis.asyncio.sentinel.Sentinel(  # type: ignore[no-untyped-call]
            list(self.sentinels), sentinel_kwargs=self._sentinel_kwargs(),
            **self._data_kwargs(options))

    def _sentinel_kwargs(self) -> dict[str, Any]:
        return {"password": self.sentinel_password or None,
                "socket_timeout": SENTINEL_TIMEOUT_S,
                "socket_connect_timeout": SENTINEL_TIMEOUT_S}

    def _data_kwargs(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return {"db": self.db, "password": self.password or None, **options}


def parse_hosts(text: str) -> tuple[tuple[str, int], ...]:
    """``host:port,host:port`` (an IPv6 host in brackets: ``[::1]:26379``) as pairs."""
    out: list[tuple[str, int]] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"a sentinel is host:port, not {item!r}")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no sentinel given")
    return tuple(out)


def parse_sentinel_url(url: str) -> SentinelAddress:
    """The address in a ``redis+sentinel://`` URL (module docstring)."""
    parts = urlsplit(url)
    if parts.scheme != SENTINEL_SCHEME:
        raise ValueError(f"not a {SENTINEL_SCHEME}:// URL")
    netloc = parts.netloc
    auth, _, hosts = netloc.rpartition("@")
    password = unquote(auth.partition(":")[2]) if auth else ""
    service = unquote(parts.path.strip("/"))
    if not service or "/" in service:
        raise ValueError(f"{SENTINEL_SCHEME}:// needs the service name as its path")
    query = parse_qs(parts.query)
    return SentinelAddress(parse_hosts(hosts), service, password,
                           query.get("sentinel_password", [""])[0],
                           int(query.get("db", ["0"])[0]))


def is_sentinel_url(url: str) -> bool:
    return url.startswith(f"{SENTINEL_SCHEME}://")


def sentinel_url(config: Mapping[str, Any]) -> str:
    """The ``redis+sentinel://`` address the Sentinel settings describe (empty: not set)."""
    hosts = str(config.get("REDIS_SENTINELS") or "").strip()
    if not hosts:
        return ""
    service = str(config.get("REDIS_SENTINEL_SERVICE") or "").strip()
    if not service:
        raise ValueError("REDIS_SENTINELS is set: REDIS_SENTINEL_SERVICE must name the primary")
    return SentinelAddress(parse_hosts(hosts), service,
                           str(config.get("REDIS_PASSWORD") or ""),
                           str(config.get("REDIS_SENTINEL_PASSWORD") or "")).url()


def configured_url(config: Mapping[str, Any]) -> str:
    """The deployment's Redis as its settings give it: Sentinel (which wins), ``REDIS_URL``,
    or empty (the embedded Redis, which :mod:`arena.core.queue` starts)."""
    return sentinel_url(config) or str(config.get("REDIS_URL") or "")


def connect(url: str, **options: Any) -> Redis:
    """A client of the Redis at ``url`` (module docstring); ``options`` are redis-py's
    connection keywords (timeouts, ``decode_responses``...)."""
    if is_sentinel_url(url):
        address = parse_sentinel_url(url)
        sentinel = address.sentinel(**options)
        return cast(Redis, sentinel.master_for(address.service))  # type: ignore[no-untyped-call]
    return Redis.from_url(url, **options)


class _BlockingSentinelPool(redis.asyncio.sentinel.SentinelConnectionPool,
                            redis.asyncio.BlockingConnectionPool):
    """A sentinel pool whose callers queue for a free connection at the limit instead of
    failing (the relay's viewers reading their history all at once)."""


def connect_async(url: str, *, max_connections: int | None = None,
                  pool_timeout: float | None = None, **options: Any) -> redis.asyncio.Redis:
    """An asyncio client of the Redis at ``url``.  With ``max_connections``, a blocking pool:
    at the limit, a caller waits up to ``pool_timeout`` for a connection to be free."""
    pool: dict[str, Any] = ({"max_connections": max_connections, "timeout": pool_timeout}
                            if max_connections is not None else {})
    if is_sentinel_url(url):
        address = parse_sentinel_url(url)
        sentinel = address.async_sentinel(**options)
        if pool:
            pool["connection_pool_class"] = _BlockingSentinelPool
        return cast(redis.asyncio.Redis, sentinel.master_for(address.service, **pool))
    if pool:
        return redis.asyncio.Redis(connection_pool=redis.asyncio.BlockingConnectionPool.from_url(
            url, **pool, **options))
    return redis.asyncio.Redis.from_url(url, **options)


def limits_storage(url: str) -> tuple[str, dict[str, Any]]:
    """The ``limits`` library's storage URI and options for the Redis at ``url``: its
    ``redis+sentinel`` storage with the same sentinels, counting on the primary only (a
    replica's copy lags, and a limit read there would let a burst through)."""
    if not is_sentinel_url(url):
        if url.startswith("unix://"):
            url = "redis+unix://" + url[len("unix://"):]
        return url, {}
    address = parse_sentinel_url(url)
    hosts = ",".join(f"{h}:{p}" for h, p in address.sentinels)
    options: dict[str, Any] = {
        "use_replicas": False,
        "sentinel_kwargs": {"password": address.sentinel_password or None,
                            "socket_timeout": SENTINEL_TIMEOUT_S,
                            "socket_connect_timeout": SENTINEL_TIMEOUT_S},
        "db": address.db,
    }
    if address.password:
        options["password"] = address.password
    return f"{SENTINEL_SCHEME}://{hosts}/{address.service}", options


def redacted(url: str) -> str:
    """``url`` without its passwords (for logs and messages)."""
    if not url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc and "password" not in parts.query:
        return url
    auth, _, hosts = parts.netloc.rpartition("@")
    netloc = (f"{auth.partition(':')[0]}:***@{hosts}" if auth else hosts)
    query = "&".join(f"{k}=***" if "password" in k else f"{k}={v[0]}"
                     for k, v in parse_qs(parts.query).items())
    return parts._replace(netloc=netloc, query=query).geturl()
