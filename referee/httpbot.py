"""Call a bot's HTTP endpoint under one hard wall-clock deadline, safely.

Bots are HTTP servers hosted by strangers, and the referee calls one every turn.
A bot may be slow, hostile or broken, and none of that may stall a game or
crash the referee, so :meth:`BotClient.call` never raises for anything the bot
does: it always returns a :class:`CallResult` whose :class:`Fault` says what
went wrong.

Deadline design
---------------
``requests``/urllib3 timeouts bound each socket operation, not the whole call:
a bot that sends one byte of its headers or body every second keeps every
``recv`` short and can hold the caller forever.  Each call therefore has ONE
absolute deadline (``time.monotonic() + deadline_s``) enforced per phase:

* DNS: :func:`referee.netguard.resolve_checked` runs the lookup on a daemon
  thread and waits at most until the deadline (``getaddrinfo`` itself cannot be
  interrupted, so the caller abandons it rather than waiting).
* TCP connect: a single blocking operation, so a socket timeout of "time left"
  bounds it exactly.
* TLS handshake, sending, status line, headers, body: a process-wide watchdog
  thread keeps a heap of armed calls.  Each connection keeps a ``dup()`` of its
  socket registered with the current call; when a deadline passes, the watchdog
  calls ``shutdown(SHUT_RDWR)`` on it, which wakes any thread blocked in
  ``recv``/``send`` on that connection at once (``close()`` would not), so the
  trickling read fails and the call returns.  The duplicate descriptor is what
  makes this safe: it stays valid while ``ssl`` wraps or urllib3 closes the
  original object, and because it is only closed after being detached from the
  watchdog under a lock, the watchdog can never shut down a recycled descriptor
  number belonging to someone else.  Socket timeouts are still set to the time
  left as a second line of defence.

A call whose watchdog fired, or that finished after its deadline, is a
``TIMEOUT`` whatever else happened.  The cost per call is one heap push and
two short lock sections; the benchmark in ``bench/http_caller.py`` measures it.

Pin-to-checked-address design
-----------------------------
The HTTP adapter mounted on each client's ``requests.Session`` uses urllib3
connection classes whose ``_new_conn`` resolves the host through the SSRF
guard and connects to exactly the addresses it approved: the hostname is never
handed to anything else that could resolve it again, so DNS rebinding cannot
switch the target between check and connect.  Everything above the socket is
unchanged, so the ``Host`` header, TLS SNI and certificate verification still
use the hostname from the URL.  The guard runs for every new connection;
reused keep-alive connections stay pinned to the address they were opened to.
Proxy environment variables and ``.netrc`` are ignored (``trust_env = False``)
since a proxy would bypass the pin.  The connection classes refuse to connect
outside a :class:`BotClient` call, so the adapter cannot be misused unguarded.

Why not a library: ``advocate`` (the requests wrapper built for this) was last
released in 2020 and requires ``urllib3<2``, so it cannot run with current
requests; this module follows the same idea (validate in ``_new_conn``,
connect to the validated address) on urllib3 2.x.

Keep-alive: one pooled session per bot, so a game's calls reuse one
connection.  A pooled connection the bot closed while idle fails before any
answer; only that case is retried, within the same deadline (see
:meth:`BotClient._send`).

Other rules: no redirects (a 3xx is a ``REDIRECT`` fault), 2xx only, bodies
capped at ``max_body`` bytes (counted while reading, so a lying or missing
``Content-Length`` does not help), ``Accept-Encoding: identity`` and no
decompression, strict JSON (UTF-8, no NaN/Infinity, no duplicate keys, an
object at top level).

Request signing
---------------
With a ``secret``, every request carries::

    X-BigTwo-Timestamp: <unix seconds, decimal integer>
    X-BigTwo-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>

where ``body`` is the exact bytes sent (empty for GET).  A bot verifies with
:func:`verify_signature`, which also rejects timestamps more than
``max_skew_s`` away from its clock to limit replay.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import heapq
import hmac
import http.client
import ipaddress
import itertools
import json
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import requests
import requests.adapters
import urllib3.exceptions
from requests.structures import CaseInsensitiveDict
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from referee.netguard import (
    DEFAULT_POLICY,
    AddressRefusedError,
    BadUrlError,
    GuardError,
    NetPolicy,
    ResolveFailedError,
    Resolver,
    ResolveTimeoutError,
    Target,
    check_url,
    resolve_checked,
)

__all__ = [
    "DEFAULT_MAX_BODY",
    "DEFAULT_USER_AGENT",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "BotClient",
    "CallResult",
    "Fault",
    "sign",
    "verify_signature",
]

DEFAULT_MAX_BODY: Final = 64 * 1024
DEFAULT_USER_AGENT: Final = "BigTwoArena-Referee/0.1"
SIGNATURE_HEADER: Final = "X-BigTwo-Signature"
TIMESTAMP_HEADER: Final = "X-BigTwo-Timestamp"
_DETAIL_MAX: Final = 300


# --------------------------------------------------------------------------- results


class Fault(StrEnum):
    """Why a call to a bot failed.  Every value is the bot's (or its URL's) fault."""

    TIMEOUT = "timeout"  # no complete answer before the deadline (any phase)
    DNS = "dns"  # the host name does not resolve
    REFUSED_ADDRESS = "refused_address"  # SSRF guard: address not allowed by policy
    BAD_URL = "bad_url"  # the bot URL itself is malformed or of a refused form
    CONNECTION = "connection"  # refused, reset, or closed before the answer was complete
    TLS = "tls"  # handshake or certificate failure
    PROTOCOL = "protocol"  # not valid HTTP/1.1 (bad status line, header limits, chunking)
    HTTP_STATUS = "http_status"  # a final status other than 2xx or 3xx
    REDIRECT = "redirect"  # a 3xx: never followed
    BODY_TOO_LARGE = "body_too_large"
    NOT_JSON = "not_json"  # not strict JSON in UTF-8
    BAD_SHAPE = "bad_shape"  # valid JSON, but not an object at the top level


@dataclass(frozen=True, slots=True)
class CallResult:
    """Outcome of one call: ``ok`` with ``data``, or a ``fault`` with a ``detail``.

    ``status`` is the HTTP status when one was received.  ``latency_s`` runs
    from the start of the call to the end of the body (or the failure).
    """

    ok: bool
    status: int | None
    data: dict[str, Any] | None
    latency_s: float
    fault: Fault | None
    detail: str


def _fail(fault: Fault, detail: str, latency: float, status: int | None = None) -> CallResult:
    return CallResult(
        ok=False,
        status=status,
        data=None,
        latency_s=latency,
        fault=fault,
        detail=detail[:_DETAIL_MAX],
    )


# --------------------------------------------------------------------------- signing


def sign(secret: bytes, timestamp: int | str, body: bytes) -> str:
    """Return the ``X-BigTwo-Signature`` value for ``body`` sent at ``timestamp``."""
    message = str(timestamp).encode("ascii") + b"." + body
    return "sha256=" + hmac.new(secret, message, hashlib.sha256).hexdigest()


def verify_signature(
    secret: bytes,
    timestamp: str,
    body: bytes,
    header: str,
    max_skew_s: float = 300.0,
    *,
    now: float | None = None,
) -> bool:
    """Check a request's signature headers; for bot implementations.

    ``timestamp`` and ``header`` are the raw ``X-BigTwo-Timestamp`` and
    ``X-BigTwo-Signature`` values, ``body`` the exact request body bytes.
    Returns ``False`` for a bad format, a timestamp further than ``max_skew_s``
    from ``now`` (default: the current time), or a wrong signature (compared in
    constant time).
    """
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > max_skew_s:
        return False
    expected = sign(secret, timestamp, body).encode("ascii")
    return hmac.compare_digest(expected, header.strip().encode("utf-8", "replace"))


# --------------------------------------------------------------------------- watchdog


def _hard_shutdown(sock: socket.socket) -> None:
    # OSError: already closed or never connected, so nothing left to interrupt.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Watch:
    """One armed call: the sockets to shut down if its deadline passes."""

    __slots__ = ("_lock", "_socks", "active", "deadline", "fired")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.active = True
        self.fired = False
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            if self.fired:
                _hard_shutdown(sock)  # connected after the deadline: cut at once
            elif self.active and not any(s is sock for s in self._socks):
                self._socks.append(sock)

    def release(self, sock: socket.socket) -> None:
        """Forget ``sock``; after this returns the watchdog will not touch it."""
        with self._lock:
            self._socks = [s for s in self._socks if s is not sock]

    def fire(self) -> None:
        with self._lock:
            if not self.active:
                return
            self.fired = True
            for sock in self._socks:
                _hard_shutdown(sock)

    def disarm(self) -> bool:
        """End the call; return whether the deadline fired."""
        with self._lock:
            self.active = False
            self._socks.clear()
            return self.fired


class _Watchdog:
    """A single daemon thread that fires watches whose deadline has passed."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, _Watch]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        # After fork() the child has no watchdog thread (and may have inherited a
        # held lock).  Without a reset, a forking worker (RQ forks per job) would
        # silently fall back to per-read timeouts, which trickling bots defeat.
        os.register_at_fork(after_in_child=self._reset_after_fork)

    def _reset_after_fork(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap = []
        self._thread = None

    def arm(self, deadline: float) -> _Watch:
        watch = _Watch(deadline)
        with self._cond:
            heapq.heappush(self._heap, (deadline, next(self._seq), watch))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="bigtwo-watchdog", daemon=True
                )
                self._thread.start()
            if self._heap[0][2] is watch:
                self._cond.notify()
        return watch

    def _run(self) -> None:
        with self._cond:
            while True:
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, _, watch = self._heap[0]
                if not watch.active:
                    heapq.heappop(self._heap)  # lazily drop finished calls
                    continue
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                self._cond.release()
                try:
                    watch.fire()
                finally:
                    self._cond.acquire()


_WATCHDOG: Final = _Watchdog()


@dataclass(slots=True)
class _CallState:
    """What a connection needs to know about the call that is using it."""

    deadline: float
    policy: NetPolicy
    resolver: Resolver | None
    watch: _Watch
    connections_opened: int = 0


_CURRENT_CALL: Final[contextvars.ContextVar[_CallState | None]] = contextvars.ContextVar(
    "bigtwo_current_call", default=None
)


# --------------------------------------------------------------------------- pinned connections


def _open_pinned(conn: HTTPConnection, state: _CallState) -> socket.socket:
    """Resolve through the guard and connect to one of the approved addresses."""
    remaining = state.deadline - time.monotonic()
    addresses = resolve_checked(conn.host, state.policy, timeout=remaining, resolver=state.resolver)
    last_error: OSError | None = None
    for index, addr in enumerate(addresses):
        remaining = state.deadline - time.monotonic()
        if remaining <= 0:
            break
        # Share the time left between the addresses still to try, so one
        # black-holed address cannot use up the whole deadline.
        attempt_timeout = remaining / (len(addresses) - index)
        family = socket.AF_INET if isinstance(addr, ipaddress.IPv4Address) else socket.AF_INET6
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            for option in conn.socket_options or ():
                sock.setsockopt(*option)
            if conn.source_address:
                sock.bind(conn.source_address)
            sock.settimeout(attempt_timeout)
            sock.connect((str(addr), conn.port))
        except OSError as exc:
            sock.close()
            last_error = exc
            continue
        sock.settimeout(max(0.001, state.deadline - time.monotonic()))
        return sock
    if last_error is None or isinstance(last_error, TimeoutError):
        raise urllib3.exceptions.ConnectTimeoutError(
            conn, f"no connection to {conn.host} before the deadline"
        )
    raise urllib3.exceptions.NewConnectionError(
        conn, f"failed to connect to {conn.host}: {last_error}"
    )


class _WatchedMixin:
    """Keeps a duplicate of the connection's socket registered with the current call."""

    _bt_dup: socket.socket | None = None
    _bt_watch: _Watch | None = None

    def _bt_attach(self) -> None:
        state = _CURRENT_CALL.get()
        if self._bt_dup is None or state is None:
            return
        if self._bt_watch is not None and self._bt_watch is not state.watch:
            self._bt_watch.release(self._bt_dup)
        self._bt_watch = state.watch
        state.watch.attach(self._bt_dup)

    def _bt_drop(self) -> None:
        dup, watch = self._bt_dup, self._bt_watch
        self._bt_dup = self._bt_watch = None
        if dup is not None:
            if watch is not None:
                watch.release(dup)
            dup.close()

    def _bt_connect(self, conn: HTTPConnection) -> socket.socket:
        state = _CURRENT_CALL.get()
        if state is None:
            raise AddressRefusedError("bot connections are only opened inside a BotClient call")
        self._bt_drop()
        state.connections_opened += 1
        sock = _open_pinned(conn, state)
        self._bt_dup = sock.dup()
        self._bt_attach()
        return sock


class _PinnedHTTPConnection(_WatchedMixin, HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return self._bt_connect(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        self._bt_attach()
        super().request(*args, **kwargs)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._bt_drop()


class _PinnedHTTPSConnection(_PinnedHTTPConnection, HTTPSConnection):
    """The same pinning and watching over TLS (HTTPSConnection subclasses HTTPConnection, so
    the methods above reach the TLS versions through ``super()``)."""


class _PinnedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _PinnedHTTPConnection


class _PinnedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _PinnedHTTPSConnection


class _PinnedAdapter(requests.adapters.HTTPAdapter):
    """A requests adapter whose pools use the guarded, pinned connection classes."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _PinnedHTTPPool,
            "https": _PinnedHTTPSPool,
        }


# --------------------------------------------------------------------------- JSON


class _StrictJsonError(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _StrictJsonError(f"{name} is not JSON")


def _object_no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _StrictJsonError(f"duplicate key {key[:40]!r}")
            seen.add(key)
    return obj


def _parse_strict_json(body: bytes) -> tuple[dict[str, Any] | None, Fault | None, str]:
    try:
        text = body.decode("utf-8")
        value = json.loads(
            text, parse_constant=_reject_constant, object_pairs_hook=_object_no_duplicates
        )
    except UnicodeDecodeError:
        return None, Fault.NOT_JSON, "body is not UTF-8"
    except RecursionError:
        return None, Fault.NOT_JSON, "JSON nested too deeply"
    except ValueError as exc:
        return None, Fault.NOT_JSON, f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return None, Fault.BAD_SHAPE, f"top-level JSON is {type(value).__name__}, not an object"
    return value, None, ""


# --------------------------------------------------------------------------- errors


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception, its causes/contexts and exceptions carried in args (bounded)."""
    found: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo and len(found) < 16:
        e = todo.pop()
        if any(e is f for f in found):
            continue
        found.append(e)
        todo.extend(a for a in e.args if isinstance(a, BaseException))
        reason = getattr(e, "reason", None)
        if isinstance(reason, BaseException):
            todo.append(reason)
        for linked in (e.__cause__, e.__context__):
            if linked is not None:
                todo.append(linked)
    return found


def _classify_error(exc: BaseException) -> tuple[Fault, str]:
    chain = _causes(exc)
    for e in chain:
        if isinstance(e, AddressRefusedError):
            return Fault.REFUSED_ADDRESS, str(e)
        if isinstance(e, BadUrlError):
            return Fault.BAD_URL, str(e)
        if isinstance(e, ResolveTimeoutError):
            return Fault.TIMEOUT, str(e)
        if isinstance(e, ResolveFailedError):
            return Fault.DNS, str(e)
        if isinstance(e, GuardError):
            return Fault.REFUSED_ADDRESS, str(e)
    for e in chain:
        # urllib3's NewConnectionError subclasses ConnectTimeoutError for history's
        # sake, but it means "connection failed", e.g. refused.
        if isinstance(e, urllib3.exceptions.NewConnectionError):
            return Fault.CONNECTION, f"cannot connect: {e}"
    for e in chain:
        if isinstance(
            e, requests.exceptions.Timeout | urllib3.exceptions.TimeoutError | TimeoutError
        ):
            return Fault.TIMEOUT, "timed out"
    for e in chain:
        if isinstance(e, requests.exceptions.SSLError | urllib3.exceptions.SSLError):
            return Fault.TLS, f"TLS failure: {e}"
    for e in chain:
        if isinstance(
            e, http.client.IncompleteRead | http.client.RemoteDisconnected | ConnectionError
        ):
            return Fault.CONNECTION, f"{type(e).__name__}: {e}"
        if isinstance(
            e,
            http.client.HTTPException
            | urllib3.exceptions.InvalidChunkLength
            | urllib3.exceptions.HeaderParsingError,
        ):
            return Fault.PROTOCOL, f"malformed HTTP: {type(e).__name__}: {e}"
    return Fault.CONNECTION, f"{type(exc).__name__}: {exc}"


def _is_stale_connection(exc: BaseException) -> bool:
    """Did a reused connection die before any answer (closed or reset by the peer)?"""
    return any(
        isinstance(
            e,
            http.client.RemoteDisconnected
            | ConnectionResetError
            | BrokenPipeError
            | ConnectionAbortedError,
        )
        for e in _causes(exc)
    )


# --------------------------------------------------------------------------- client


class BotClient:
    """A pooled, keep-alive, SSRF-guarded HTTP client for one bot.

    ``base_url`` is the bot's registered URL; paths given to :meth:`call` and
    :meth:`get` are appended to it.  ``policy`` decides which addresses may be
    reached (see :mod:`referee.netguard`); ``resolver`` replaces the system
    resolver (tests, or a caching resolver); ``ca_bundle`` replaces the system
    trust store for https (tests).  A malformed or refused URL does not raise
    here: every call then returns a ``BAD_URL``/``REFUSED_ADDRESS`` fault, so a
    bad registration costs a bot its games, not the referee its loop.

    Safe to share between threads; each call is independent.
    """

    def __init__(
        self,
        base_url: str,
        *,
        secret: bytes | None = None,
        policy: NetPolicy = DEFAULT_POLICY,
        max_body: int = DEFAULT_MAX_BODY,
        user_agent: str = DEFAULT_USER_AGENT,
        resolver: Resolver | None = None,
        ca_bundle: str | None = None,
        pool_maxsize: int = 4,
    ) -> None:
        if max_body < 0:
            raise ValueError("max_body must be >= 0")
        self.base_url = base_url
        self.policy = policy
        self.max_body = max_body
        self._secret = secret
        self._resolver = resolver
        self._pool_maxsize = pool_maxsize
        self._target: Target | None = None
        self._refusal: tuple[Fault, str] | None = None
        try:
            self._target = check_url(base_url, policy)
        except BadUrlError as exc:
            self._refusal = (Fault.BAD_URL, str(exc))
        except AddressRefusedError as exc:
            self._refusal = (Fault.REFUSED_ADDRESS, str(exc))
        session = requests.Session()
        session.trust_env = False  # no proxies, no .netrc: they would bypass the pin
        session.headers = CaseInsensitiveDict(
            {
                "User-Agent": user_agent,
                "Accept": "application/json",
                "Accept-Encoding": "identity",
                "Connection": "keep-alive",
            }
        )
        session.verify = ca_bundle if ca_bundle is not None else True
        adapter = _PinnedAdapter(pool_connections=1, pool_maxsize=pool_maxsize, max_retries=0)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        self._session = session

    @property
    def target(self) -> Target | None:
        """The validated URL, or ``None`` if it was refused."""
        return self._target

    def call(self, path: str, payload: Mapping[str, object], deadline_s: float) -> CallResult:
        """POST ``payload`` as JSON to ``path`` and return the bot's JSON object.

        Raises only for the caller's own errors (``payload`` not serialisable
        as strict JSON); everything the bot does is reported in the result.
        """
        body = json.dumps(
            payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode("utf-8")
        return self._exchange("POST", path, body, deadline_s)

    def get(self, path: str, deadline_s: float) -> CallResult:
        """GET ``path`` (e.g. a health or info endpoint) under the same rules."""
        return self._exchange("GET", path, None, deadline_s)

    def close(self) -> None:
        """Close pooled connections."""
        self._session.close()

    def __enter__(self) -> BotClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _exchange(
        self, method: str, path: str, body: bytes | None, deadline_s: float
    ) -> CallResult:
        start = time.monotonic()
        if self._refusal is not None or self._target is None:
            fault, detail = self._refusal or (Fault.BAD_URL, "no URL")
            return _fail(fault, detail, time.monotonic() - start)
        if deadline_s <= 0:
            return _fail(Fault.TIMEOUT, "deadline already passed", 0.0)
        deadline = start + deadline_s
        headers: dict[str, str] = {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self._secret is not None:
            timestamp = str(int(time.time()))
            headers[TIMESTAMP_HEADER] = timestamp
            headers[SIGNATURE_HEADER] = sign(self._secret, timestamp, body or b"")
        url = self._target.url(path)

        watch = _WATCHDOG.arm(deadline)
        state = _CallState(deadline, self.policy, self._resolver, watch)
        token = _CURRENT_CALL.set(state)
        outcome: CallResult | None = None
        error: BaseException | None = None
        response: requests.Response | None = None
        try:
            response = self._send(state, method, url, body, headers)
            outcome = self._read(response, start)
        except Exception as exc:  # classified below, after the watchdog is disarmed
            error = exc
        finally:
            fired = watch.disarm()
            _CURRENT_CALL.reset(token)
            if response is not None and (outcome is None or not outcome.ok):
                response.close()  # discard a connection in an unknown state
        latency = time.monotonic() - start
        status = outcome.status if outcome is not None else None
        if fired or latency > deadline_s:
            # Authoritative: once the watchdog has shut the socket down, what was
            # read may *look* complete (EOF ends a body without Content-Length, a
            # cut status line can still parse), so nothing read is trusted.
            return _fail(Fault.TIMEOUT, f"no complete answer within {deadline_s:.3f}s", latency)
        if error is not None:
            fault, detail = _classify_error(error)
            return _fail(fault, detail, latency, status)
        assert outcome is not None
        return outcome

    def _send(
        self, state: _CallState, method: str, url: str, body: bytes | None, headers: dict[str, str]
    ) -> requests.Response:
        """Send the request; retry only when a pooled connection turned out stale.

        A kept-alive connection the bot closed while it sat idle in the pool
        fails the moment it is reused, before any byte of an answer: the bot's
        idle timeout, not its behaviour.  urllib3 checks for this before reuse,
        but the close can still race with the send, so such a failure is
        retried (within the same deadline) on another connection.  Failures on
        a freshly opened connection are never retried.  A bot can therefore
        see a request twice if it closes a kept-alive connection after reading
        a request without answering it; bots must answer repeats of a request
        the same way.
        """
        retries = self._pool_maxsize
        while True:
            opened_before = state.connections_opened
            remaining = max(0.001, state.deadline - time.monotonic())
            try:
                return self._session.request(
                    method,
                    url,
                    data=body,
                    headers=headers,
                    timeout=(remaining, remaining),
                    allow_redirects=False,
                    stream=True,
                )
            except requests.exceptions.ConnectionError as exc:
                reused = state.connections_opened == opened_before
                if not (
                    reused
                    and retries > 0
                    and _is_stale_connection(exc)
                    and not state.watch.fired
                    and time.monotonic() < state.deadline
                ):
                    raise
                retries -= 1

    def _read(self, response: requests.Response, start: float) -> CallResult:
        status = response.status_code
        if 300 <= status < 400:
            location = response.headers.get("Location", "")[:100]
            return _fail(
                Fault.REDIRECT,
                f"HTTP {status} redirect to {location!r} not followed",
                time.monotonic() - start,
                status,
            )
        if not 200 <= status < 300:
            return _fail(Fault.HTTP_STATUS, f"HTTP {status}", time.monotonic() - start, status)
        declared = response.headers.get("Content-Length", "").strip()
        if declared.isdigit() and int(declared) > self.max_body:
            return _fail(
                Fault.BODY_TOO_LARGE,
                f"Content-Length {declared} exceeds {self.max_body} bytes",
                time.monotonic() - start,
                status,
            )
        raw = response.raw
        chunks: list[bytes] = []
        total = 0
        while total <= self.max_body:
            chunk = raw.read(self.max_body + 1 - total, decode_content=False)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > self.max_body:
            return _fail(
                Fault.BODY_TOO_LARGE,
                f"body exceeds {self.max_body} bytes",
                time.monotonic() - start,
                status,
            )
        raw.release_conn()  # whole body read: the connection goes back to the pool
        data, fault, detail = _parse_strict_json(b"".join(chunks))
        latency = time.monotonic() - start
        if fault is not None:
            return _fail(fault, detail, latency, status)
        return CallResult(
            ok=True, status=status, data=data, latency_s=latency, fault=None, detail=""
        )
