"""Call a bot's HTTP endpoint under one hard wall-clock deadline, safely.

Bots are HTTP servers hosted by strangers, and the referee calls one every turn.
A bot may be slow, hostile or broken, and none of that may stall a game or
crash the referee, so :meth:`BotClient.call` never raises for anything the bot
does: it returns a :class:`CallResult` whose :class:`Fault` says what went
wrong.  It does not catch anything else: an exception that is not about this
exchange (a queue's job timeout raised by a signal handler, ``KeyboardInterrupt``)
propagates, and the connection it interrupted is closed.

Deadline design
---------------
Each call has ONE absolute deadline, ``time.monotonic() + deadline_s``.  The
client is a small HTTP/1.1 client on ``h11`` (the sans-IO HTTP/1.1 state
machine from python-hyper): h11 only parses and serialises bytes, it never
touches a socket, so every blocking operation of the exchange is ours, and each
is bounded by the time left until the deadline (or raises the timeout fault when none is
left) before it runs:

* DNS: :func:`referee.wire.netguard.resolve_checked` waits at most the time left
  (the lookup runs on a daemon thread, since ``getaddrinfo`` cannot be
  interrupted).
* TCP connect and the TLS handshake (``do_handshake_on_connect=False``, then one
  bounded ``do_handshake``) go through :func:`_bounded`, which sets the socket timeout
  to the time left.
* Every ``send`` and every ``recv`` of an open connection go through :func:`_send` and
  :func:`_recv`: an open connection is non-blocking, each operation is tried at once, and
  only when it would block does the call wait, in one ``poll`` of at most the time left.
  (A socket timeout costs two more system calls per operation, each releasing the GIL:
  setting it, and a ``poll`` before every operation, even one that would not block.  In
  a worker running a hundred matches, every release is a chance for another thread to
  take the interpreter.)

Because no socket operation can outlast the deadline and the loop re-reads the
clock before each one, the whole exchange is bounded whatever the bot does:
status line, headers and body are all just bytes fed to h11, so keep-alive or
``Connection: close``, HTTP/1.0 or 1.1, ``Content-Length``, chunked or
read-until-EOF framing all end at the deadline the same way.  (A TLS record
trickled byte by byte is cut off too: the handshake honours the socket timeout as a total,
retries included, and a read of an unfinished record waits in :func:`_recv`'s loop, which
re-reads the clock before each try.)  The previous design, ``requests``/urllib3
plus a watchdog thread that shut sockets down, failed exactly here: for responses
http.client treats as "will close" the socket changes hands and the watchdog lost it,
leaving only per-``recv`` timeouts that a trickler always beats.  A call that ends after
its deadline is a ``TIMEOUT`` whatever else happened, and nothing read from a call cut off
mid-way is trusted.

Connections and pinning
-----------------------
A new connection resolves the host through the SSRF guard and connects to
exactly the addresses it approved, at most :data:`MAX_CONNECT_ATTEMPTS` of them
(:data:`MAX_CONNECT_ATTEMPTS_PER_FAMILY` per address family), sharing the time
left between them so one black-holed address cannot use it all.  The host name
is never handed to anything else that could resolve it again, so DNS rebinding
cannot switch the target between check and connect.  The ``Host`` header, TLS
SNI and certificate verification still use the host name from the URL.  No
proxies and no ``.netrc`` are consulted (a proxy would bypass the pin).

Keep-alive: each client keeps up to ``pool_maxsize`` idle connections, so a
game's calls reuse one.  A pooled connection is checked before reuse (a closed
or chattering one is dropped), and a reused connection that still fails before
any byte of an answer (the bot's idle timeout racing our send) is retried on
another connection, within the same deadline.  Failures on a fresh connection
are never retried.  A bot can therefore see a request twice if it closes a
kept-alive connection after reading a request without answering it; bots must
answer repeats of a request the same way.

Thread- and fork-safety: calls on one client may run in parallel threads (each
holds its connection exclusively); after ``fork()`` a child forgets the idle
connections it inherited instead of sharing them with its parent.

Other rules: no redirects (a 3xx is a ``REDIRECT`` fault), 2xx only (of any other status
the first ``error_body_max`` bytes of the body are read, within the same deadline, and kept
in the result: a bot's 500 traceback is what its author needs to see), at most
:data:`MAX_HEADERS` response headers of at most 16 KiB in all, bodies capped at
``max_body`` bytes (counted while reading, so a lying or missing
``Content-Length`` does not help) and the whole answer at ``8 * max_body`` plus
160 KiB on the wire (chunk extensions, trailers and 1xx responses escape the body cap; at
most :data:`MAX_INFORMATIONAL` of those), ``Accept-Encoding: identity`` and no
decompression, strict JSON (UTF-8, no NaN/Infinity, no duplicate keys, an
object at top level).

Request signing
---------------
With ``secrets`` (the bot's, current first), every request, retries included, carries version
2 of the scheme (:mod:`referee.wire.signing`, ``docs/protocol.md``)::

    X-BigTwo-Timestamp: <unix seconds, decimal integer>
    X-BigTwo-Request-Id: <32 lowercase hex characters, fresh for every attempt>
    X-BigTwo-Signatures: v2=<hex>[, v2=<hex>]     one entry per secret, in the order given

signing the method, the request target exactly as it stands on the request line, the
timestamp, the request id and the exact body bytes; and, while ``legacy_v1`` is on (the
transition), the version 1 header ``X-BigTwo-Signature: sha256=<hex>`` under the first secret.
A retry on a fresh connection gets a new request id: a bot that saw the first attempt (and
remembers its id to refuse replays) must not refuse the second.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import json
import os
import re
import select
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, TypeVar

import h11

from referee.game.view import wire_bytes
from referee.wire.netguard import (
    DEFAULT_POLICY,
    AddressRefusedError,
    BadUrlError,
    GuardError,
    IPAddress,
    NetPolicy,
    ResolveFailedError,
    Resolver,
    ResolveTimeoutError,
    Target,
    check_url,
    resolve_checked,
)
from referee.wire.signing import (
    LEGACY_V1_DEFAULT,
    REQUEST_ID_HEADER,
    SIGNATURE_HEADER,
    SIGNATURES_HEADER,
    TIMESTAMP_HEADER,
    Signer,
    new_request_id,
    sign,
    update_holding_gil,
    verify_signature,
)

__all__ = [
    "DEFAULT_ERROR_BODY_MAX",
    "DEFAULT_MAX_BODY",
    "DEFAULT_USER_AGENT",
    "MAX_CONNECT_ATTEMPTS",
    "MAX_CONNECT_ATTEMPTS_PER_FAMILY",
    "MAX_HEADERS",
    "MAX_INFORMATIONAL",
    "REQUEST_ID_HEADER",
    "SIGNATURES_HEADER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "BotClient",
    "CallResult",
    "Fault",
    "sign",
    "verify_signature",
]

DEFAULT_MAX_BODY: Final = 64 * 1024
DEFAULT_ERROR_BODY_MAX: Final = 2048
"""Bytes of a non-2xx answer's body kept by default (what its author needs to debug it)."""
DEFAULT_USER_AGENT: Final = "BigTwoArena-Referee/0.1"

MAX_CONNECT_ATTEMPTS: Final = 4
"""Most addresses one call tries to connect to, whatever the bot's name resolves to.

A name with 100 A records must not turn one call into 100 connection attempts
(a scanner's amplifier); two per family still survives one dead address."""
MAX_CONNECT_ATTEMPTS_PER_FAMILY: Final = 2
"""Most addresses of one family (IPv4, IPv6) one call tries."""
MAX_HEADERS: Final = 100
"""Most response header fields accepted (as http.client); more is a ``protocol`` fault."""
MAX_INFORMATIONAL: Final = 8
"""Most 1xx interim responses accepted before the final one; more is a ``protocol`` fault.

They do not count towards the body cap, so without a limit a bot could keep the referee
parsing ``100 Continue`` at loopback speed until the deadline."""

_MAX_HEAD_BYTES: Final = 16 * 1024  # status line + headers (h11's incomplete-event cap)
_RECV_SIZE: Final = 64 * 1024
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
    from the start of the call to the end of the body (or the failure).  ``body`` is the
    answer's body as received, when a whole one arrived in time, or the first
    ``error_body_max`` bytes of a non-2xx answer's body (empty otherwise): what a bot's author
    needs to see when it was not valid JSON or not a 2xx (the arena shows it to the owner).
    """

    ok: bool
    status: int | None
    data: dict[str, Any] | None
    latency_s: float
    fault: Fault | None
    detail: str
    body: bytes = b""


def _fail(
    fault: Fault, detail: str, latency: float, status: int | None = None, body: bytes = b""
) -> CallResult:
    return CallResult(
        ok=False,
        status=status,
        data=None,
        latency_s=latency,
        fault=fault,
        detail=detail[:_DETAIL_MAX],
        body=body,
    )


# --------------------------------------------------------------------------- signing


# The scheme lives in referee.wire.signing (imported above); these are its header lines.
_TIMESTAMP_LINE: Final = f"{TIMESTAMP_HEADER}: ".encode("ascii")
_REQUEST_ID_LINE: Final = f"{REQUEST_ID_HEADER}: ".encode("ascii")
_SIGNATURES_LINE: Final = f"{SIGNATURES_HEADER}: ".encode("ascii")
_SIGNATURE_LINE: Final = f"{SIGNATURE_HEADER}: ".encode("ascii")


# --------------------------------------------------------------------------- faults as exceptions


class _CallFaultError(Exception):
    """A classified bot fault raised inside an exchange and turned into a result."""

    def __init__(self, fault: Fault, detail: str, status: int | None = None,
                 body: bytes = b"") -> None:
        super().__init__(detail)
        self.fault, self.detail, self.status, self.body = fault, detail, status, body


class _StaleError(Exception):
    """A reused keep-alive connection died before any byte of the answer: retry elsewhere."""


_STATUS_FAULTS = frozenset({Fault.HTTP_STATUS, Fault.REDIRECT})
"""Faults decided by a complete response head: what comes after it cannot change them."""


def _timeout() -> _CallFaultError:
    return _CallFaultError(Fault.TIMEOUT, "no complete answer before the deadline")


# --------------------------------------------------------------------------- the choke points

_T = TypeVar("_T")


def _bounded(
    sock: socket.socket,
    deadline: float,
    op: Callable[..., _T],
    *args: Any,
    cap: float | None = None,
) -> _T:
    """Run one blocking socket operation, bounded by the call's absolute ``deadline``.

    Connecting and the TLS handshake go through here (an open connection's ``send`` and
    ``recv``, through :func:`_send` and :func:`_recv`): it sets the socket timeout to the
    time left (at most ``cap``) and turns a socket timeout into the call's ``TIMEOUT``
    fault, so no operation, and hence no sequence of them, can outlast the deadline.
    """
    left = deadline - time.monotonic()
    if left <= 0:
        raise _timeout()
    sock.settimeout(left if cap is None else min(left, cap))
    try:
        return op(*args)
    except TimeoutError:
        raise _timeout() from None


def _wait(sock: socket.socket, events: int, deadline: float) -> None:
    """Wait until ``sock`` is ready for ``events`` (``select.POLLIN``/``POLLOUT``) or the
    deadline passes (the caller's loop then raises the timeout)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _timeout()
    poller = select.poll()
    poller.register(sock, events)
    poller.poll(left * 1000)  # milliseconds, rounded up: never a busy wait at the end


def _recv(sock: socket.socket, deadline: float, *, wait: bool = False) -> bytes:
    """The next bytes from an open (non-blocking) connection, ``b""`` at its end, waiting at
    most until ``deadline``; a TLS record arriving in pieces is waited for piece by piece.
    ``wait``: nothing is expected yet (the request has just gone), so the first try is a
    wait rather than a read that would only say it would block."""
    if wait and not (isinstance(sock, ssl.SSLSocket) and sock.pending()):
        _wait(sock, select.POLLIN, deadline)
    while True:
        if deadline <= time.monotonic():
            raise _timeout()
        try:
            return sock.recv(_RECV_SIZE)
        except (BlockingIOError, ssl.SSLWantReadError):
            _wait(sock, select.POLLIN, deadline)
        except ssl.SSLWantWriteError:
            _wait(sock, select.POLLOUT, deadline)


def _send(sock: socket.socket, data: memoryview, deadline: float) -> int:
    """Send what an open (non-blocking) connection takes of ``data`` now, waiting at most
    until ``deadline`` for it to take any; returns how many bytes it took."""
    while True:
        if deadline <= time.monotonic():
            raise _timeout()
        try:
            return sock.send(data)
        except (BlockingIOError, ssl.SSLWantWriteError):
            _wait(sock, select.POLLOUT, deadline)
        except ssl.SSLWantReadError:
            _wait(sock, select.POLLIN, deadline)


# --------------------------------------------------------------------------- connections


def _connect_candidates(addresses: list[IPAddress]) -> list[IPAddress]:
    """The addresses one call may try, in resolver order, capped per family and in all."""
    picked: list[IPAddress] = []
    per_family: dict[int, int] = {}
    for addr in addresses:
        if per_family.get(addr.version, 0) >= MAX_CONNECT_ATTEMPTS_PER_FAMILY:
            continue
        per_family[addr.version] = per_family.get(addr.version, 0) + 1
        picked.append(addr)
        if len(picked) >= MAX_CONNECT_ATTEMPTS:
            break
    return picked


@dataclass(frozen=True, slots=True)
class _Request:
    wire: bytes
    """Exactly what goes on the wire: head and body."""
    event: h11.Request
    """What h11 is told was sent (method, target, framing), to read the answer right."""


class _Conn:
    """One open connection to a bot, with its h11 state machine.  Its socket is non-blocking
    from here on: :func:`_send` and :func:`_recv` bound each operation."""

    __slots__ = ("h11", "sock")

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD_BYTES)

    def close(self) -> None:
        # OSError: already closed by the peer; nothing left to release.
        with contextlib.suppress(OSError):
            self.sock.close()

    def looks_alive(self) -> bool:
        """Before reuse: an idle connection with anything to read was closed or is garbage
        (one non-blocking ``recv``)."""
        try:
            self.sock.recv(1)
        except (BlockingIOError, ssl.SSLWantReadError):
            return True  # nothing waiting: the normal case
        except OSError:
            return False
        return False  # EOF (b"") or unsolicited bytes


_TLS_CONTEXTS: dict[str | None, ssl.SSLContext] = {}
_TLS_LOCK = threading.Lock()


def _tls_context(ca_bundle: str | None) -> ssl.SSLContext:
    """One verifying client context per trust store (loading the store is costly)."""
    with _TLS_LOCK:
        ctx = _TLS_CONTEXTS.get(ca_bundle)
        if ctx is None:
            ctx = ssl.create_default_context(cafile=ca_bundle)
            ctx.set_alpn_protocols(["http/1.1"])
            _TLS_CONTEXTS[ca_bundle] = ctx
        return ctx


_HEADS: dict[tuple[str, str, bool, tuple[tuple[str, str], ...]], tuple[bytes, h11.Request]] = {}
"""Per (method, target, with a body, fixed headers): the request line and fixed headers as
h11 serialised (and so validated) them, and the minimal h11 event for its bookkeeping.  Shared
by the clients of a process: a worker makes four clients a match, each calling a bot at the
same four targets as the last match's client did."""
_HEADS_MAX: Final = 8192


# Clients alive in this process, so that a fork()ed child can drop what it inherited.
_CLIENTS: Final[weakref.WeakSet[BotClient]] = weakref.WeakSet()


def _forget_connections_after_fork() -> None:
    global _TLS_LOCK
    _TLS_LOCK = threading.Lock()  # another thread may have held it at fork()
    for client in list(_CLIENTS):
        client._after_fork()


os.register_at_fork(after_in_child=_forget_connections_after_fork)


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


_DECODER: Final = json.JSONDecoder(
    parse_constant=_reject_constant, object_pairs_hook=_object_no_duplicates
)


def _parse_strict_json(body: bytes) -> tuple[dict[str, Any] | None, Fault | None, str]:
    try:
        text = body.decode("utf-8")
        value = _DECODER.decode(text)
    except UnicodeDecodeError:
        return None, Fault.NOT_JSON, "body is not UTF-8"
    except RecursionError:
        return None, Fault.NOT_JSON, "JSON nested too deeply"
    except ValueError as exc:
        return None, Fault.NOT_JSON, f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return None, Fault.BAD_SHAPE, f"top-level JSON is {type(value).__name__}, not an object"
    return value, None, ""


# --------------------------------------------------------------------------- one exchange

_STALE_ERRORS: Final = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def _send_on(conn: _Conn, request: _Request, deadline: float, reused: bool) -> None:
    """Send the request; a reused connection that fails here is stale.  (h11 is told what
    was sent only when the answer is read with it: see :func:`_plain_answer`.)"""
    sock = conn.sock
    view = memoryview(request.wire)
    try:
        while view:
            sent = _send(sock, view, deadline)
            view = view[sent:]
    except _STALE_ERRORS:
        if reused:
            raise _StaleError from None
        raise


_PLAIN_STATUS: Final = re.compile(rb"HTTP/1\.1 200 [\t \x21-\x7e\x80-\xff]*")
_PLAIN_FIELD: Final = re.compile(
    rb"([-!#$%&'*+.^_`|~0-9A-Za-z]+):[ \t]*"
    rb"((?:[\x21-\x7e\x80-\xff](?:[ \t\x21-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?)[ \t]*")
"""A header field as RFC 9110 and h11 write it (token, colon, a value of visible characters
and inner blanks, optional blanks around it)."""
_PLAIN_LENGTH: Final = re.compile(rb"[0-9]{1,18}")


def _plain_answer(data: bytes, max_body: int) -> bytes | None:
    """The body of ``data`` when it is, all of it, the plainest answer there is, else None.

    Nearly every answer a bot gives is one ``200`` with a ``Content-Length`` body, its whole
    head and body in the first read, on a connection kept alive.  Parsing those with h11
    was a sixth of the worker's CPU per move; this reads them directly, and hands *anything
    else* to h11, untouched: another status, HTTP/1.0, a head or body not complete in these
    bytes, bytes beyond the body, chunked or missing framing, ``Connection`` other than
    ``keep-alive``, more than :data:`MAX_HEADERS` fields, a field h11 would refuse, a body
    over ``max_body`` (h11's path then reports each as it always did).  What it accepts, h11
    accepts and reads the same way, and the connection stays reusable in both."""
    end = data.find(b"\r\n\r\n")
    if end < 0 or end + 4 > _MAX_HEAD_BYTES:
        return None
    lines = data[:end].split(b"\r\n")
    if len(lines) - 1 > MAX_HEADERS or _PLAIN_STATUS.fullmatch(lines[0]) is None:
        return None
    length: int | None = None
    for line in lines[1:]:
        field = _PLAIN_FIELD.fullmatch(line)
        if field is None:
            return None
        name = field.group(1).lower()
        if name == b"content-length":
            if length is not None or _PLAIN_LENGTH.fullmatch(field.group(2)) is None:
                return None
            length = int(field.group(2))
        elif name == b"transfer-encoding" or (
                name == b"connection" and field.group(2).lower() != b"keep-alive"):
            return None
    if length is None or length > max_body or len(data) - end - 4 != length:
        return None
    return data[end + 4:]


class _Answer:
    """One answer while h11 parses it: what has come so far, and what each turn of it means.

    A non-2xx status (``error``) is the verdict as soon as its head is in: the first
    ``error_body_max`` bytes of its body are read for the owner's view, and whatever happens
    after the head (a stall, a reset, garbage, the deadline) still ends as that status.
    Methods that end the exchange raise, or return the exception to raise.
    """

    __slots__ = (
        "chunks", "eof", "error", "error_body_max", "got_bytes", "informational", "max_body",
        "received", "status", "total", "wire_limit",
    )

    def __init__(self, max_body: int, error_body_max: int) -> None:
        self.max_body = max_body
        self.error_body_max = error_body_max
        # Framing overhead (chunk headers and extensions, trailers, 1xx) escapes the body
        # cap, so the whole answer is capped too: generous for any sane framing.
        self.wire_limit = 8 * max_body + 10 * _MAX_HEAD_BYTES
        self.status: int | None = None
        self.error: int | None = None  # a non-2xx status: the first bytes of its body are read
        self.got_bytes = False
        self.eof = False
        self.chunks: list[bytes] = []
        self.total = 0
        self.informational = 0
        self.received = 0

    def status_fault(self) -> _CallFaultError:
        """The ``HTTP_STATUS`` fault of a non-2xx answer, with its body's first bytes."""
        assert self.error is not None
        body = b"".join(self.chunks)[: self.error_body_max]
        return _CallFaultError(Fault.HTTP_STATUS, f"HTTP {self.error}", self.error, body)

    def malformed(self, exc: h11.RemoteProtocolError, reused: bool) -> Exception:
        """What h11's refusal of the bytes means, given what came before it."""
        if self.error is not None:  # the status said it all: keep what came of the body
            return self.status_fault()
        if not self.eof:
            return _CallFaultError(Fault.PROTOCOL, f"malformed HTTP: {exc}", self.status)
        if reused and not self.got_bytes:
            return _StaleError()
        return _CallFaultError(
            Fault.CONNECTION, "connection closed before the answer was complete", self.status
        )

    def receive(self, sock: socket.socket, deadline: float, reused: bool,
                wait: bool = False) -> bytes:
        """The next bytes from the bot (``b""``: end of file), counted against the caps
        (``wait``: see :func:`_recv`)."""
        try:
            data = _recv(sock, deadline, wait=wait)
        except _CallFaultError:
            # The status was in before the deadline: it is the verdict, with what came of
            # its body (a body that stalls is no reason to call it a timeout).
            if self.error is not None:
                raise self.status_fault() from None
            raise
        except _STALE_ERRORS:
            if reused and not self.got_bytes:
                raise _StaleError from None
            if self.error is not None:
                raise self.status_fault() from None
            raise
        if data:
            self.got_bytes = True
            self.received += len(data)
            if self.received > self.wire_limit:
                raise _CallFaultError(
                    Fault.BODY_TOO_LARGE,
                    f"answer exceeds {self.wire_limit} bytes on the wire",
                    self.status,
                )
        else:
            self.eof = True
        return data

    def body_data(self, data: bytes | bytearray | memoryview) -> None:
        """A piece of the body: kept within the body cap (of a non-2xx, as much as is shown)."""
        if self.error is not None:
            self.chunks.append(bytes(data))
            self.total += len(data)
            if self.total >= self.error_body_max:  # enough to show: the rest is not read
                raise self.status_fault()
            return
        self.total += len(data)
        if self.total > self.max_body:
            raise _CallFaultError(
                Fault.BODY_TOO_LARGE, f"body exceeds {self.max_body} bytes", self.status
            )
        self.chunks.append(bytes(data))

    def head(self, status: int) -> None:
        """The final response's head (already checked by ``BotClient._check_head``)."""
        self.status = status
        if not 200 <= status < 300:
            self.error = status
            if not self.error_body_max:
                raise self.status_fault()

    def interim(self, status: int) -> None:
        """A 1xx before the final answer: at most :data:`MAX_INFORMATIONAL`, never 101."""
        if status == 101:
            raise _CallFaultError(Fault.PROTOCOL, "unasked-for 101 Switching Protocols")
        self.informational += 1
        if self.informational > MAX_INFORMATIONAL:
            raise _CallFaultError(Fault.PROTOCOL, f"more than {MAX_INFORMATIONAL} 1xx responses")

    def complete(self, machine: h11.Connection) -> tuple[int, bytes, bool]:
        """The whole answer is in: (status, body, connection reusable)."""
        assert self.status is not None
        if self.error is not None:
            raise self.status_fault()
        # A body read to EOF leaves h11 in DONE, but the connection is gone.
        reusable = (
            not self.eof and machine.our_state is h11.DONE and machine.their_state is h11.DONE
        )
        return self.status, b"".join(self.chunks), reusable

    def closed(self) -> _CallFaultError:
        """The connection closed before the end of the message."""
        if self.error is not None:
            return self.status_fault()
        return _CallFaultError(Fault.CONNECTION, "connection closed", self.status)


# --------------------------------------------------------------------------- client


class BotClient:
    """A pooled, keep-alive, SSRF-guarded HTTP client for one bot.

    ``base_url`` is the bot's registered URL; paths given to :meth:`call` and
    :meth:`get` are appended to it.  ``policy`` decides which addresses may be
    reached (see :mod:`referee.wire.netguard`); ``resolver`` replaces the system
    resolver (tests, or a caching resolver); ``ca_bundle`` replaces the system
    trust store for https (tests); ``error_body_max`` is how many bytes of a non-2xx
    answer's body are read and kept (0: none, the call ends at the status line).
    ``secrets`` sign every request (version 2, one ``v2=`` entry per secret, current first;
    ``secret`` is the same for one secret); ``legacy_v1`` adds the version 1 header under the
    first secret, for bots written against it (see the module docstring).  A
    malformed or refused URL does not raise
    here: every call then returns a ``BAD_URL``/``REFUSED_ADDRESS`` fault, so a
    bad registration costs a bot its games, not the referee its loop.  ``encoder`` writes
    every request body (default: :func:`referee.game.view.wire_bytes`, the standard
    library's strict JSON); a sender with many requests a second gives a faster one that
    writes the same JSON.

    Safe to share between threads; each call is independent.
    """

    def __init__(
        self,
        base_url: str,
        *,
        secret: bytes | None = None,
        secrets: Sequence[bytes] = (),
        legacy_v1: bool = LEGACY_V1_DEFAULT,
        policy: NetPolicy = DEFAULT_POLICY,
        max_body: int = DEFAULT_MAX_BODY,
        user_agent: str = DEFAULT_USER_AGENT,
        resolver: Resolver | None = None,
        ca_bundle: str | None = None,
        pool_maxsize: int = 4,
        error_body_max: int = DEFAULT_ERROR_BODY_MAX,
        encoder: Callable[[Mapping[str, object]], bytes] | None = None,
    ) -> None:
        if max_body < 0:
            raise ValueError("max_body must be >= 0")
        if error_body_max < 0:
            raise ValueError("error_body_max must be >= 0")
        if secret is not None and secrets:
            raise ValueError("give secret or secrets, not both")
        self.base_url = base_url
        self.policy = policy
        self.max_body = max_body
        self.error_body_max = min(error_body_max, max_body)
        self._secrets: tuple[bytes, ...] = (secret,) if secret is not None else tuple(secrets)
        self._signer = Signer(self._secrets)
        self._legacy_v1 = legacy_v1 and bool(self._secrets)
        self._v1_mac = hmac.new(self._secrets[0] if self._secrets else b"",
                                digestmod=hashlib.sha256)
        """Version 1's HMAC state under the first secret (``sign()``), copied per call."""
        self._encoder = encoder
        self._resolver = resolver
        self._ca_bundle = ca_bundle
        self._pool_maxsize = pool_maxsize
        self._idle: list[_Conn] = []
        self._lock = threading.Lock()
        self._target: Target | None = None
        self._refusal: tuple[Fault, str] | None = None
        try:
            self._target = check_url(base_url, policy)
        except BadUrlError as exc:
            self._refusal = (Fault.BAD_URL, str(exc))
        except AddressRefusedError as exc:
            self._refusal = (Fault.REFUSED_ADDRESS, str(exc))
        self._host = "" if self._target is None else self._target.origin.split("://", 1)[1]
        self._static_headers = [
            ("Host", self._host),
            ("User-Agent", user_agent),
            ("Accept", "application/json"),
            ("Accept-Encoding", "identity"),
            ("Connection", "keep-alive"),
        ]
        self._header_key = tuple(self._static_headers)
        _CLIENTS.add(self)

    @property
    def target(self) -> Target | None:
        """The validated URL, or ``None`` if it was refused."""
        return self._target

    def call(self, path: str, payload: Mapping[str, object], deadline_s: float) -> CallResult:
        """POST ``payload`` as JSON to ``path`` and return the bot's JSON object.

        Raises only for the caller's own errors (``payload`` not serialisable
        as strict JSON); everything the bot does is reported in the result.  The body is
        written by the client's ``encoder``.
        """
        body = (self._encoder or wire_bytes)(payload)
        return self._exchange("POST", path, body, deadline_s)

    def get(self, path: str, deadline_s: float) -> CallResult:
        """GET ``path`` (e.g. a health or info endpoint) under the same rules."""
        return self._exchange("GET", path, None, deadline_s)

    def close(self) -> None:
        """Close pooled connections (a later call opens new ones)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __enter__(self) -> BotClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _after_fork(self) -> None:
        # The parent still owns these sockets: closing ours only drops our
        # descriptors (no shutdown, no TLS close_notify), so the parent is unaffected.
        self._lock = threading.Lock()
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _exchange(
        self, method: str, path: str, body: bytes | None, deadline_s: float
    ) -> CallResult:
        start = time.monotonic()
        target = self._target
        if self._refusal is not None or target is None:
            fault, detail = self._refusal or (Fault.BAD_URL, "no URL")
            return _fail(fault, detail, time.monotonic() - start)
        if deadline_s <= 0:
            return _fail(Fault.TIMEOUT, "deadline already passed", 0.0)
        deadline = start + deadline_s
        where = f"{target.base_path}/{path.lstrip('/')}"
        if target.query:  # before the query: /s3cr3t?key=k + /move is /s3cr3t/move?key=k
            where = f"{where}?{target.query}"
        try:
            status, raw = self._send_with_retry(method, where, body, deadline)
        except _CallFaultError as exc:
            fault, detail, status_seen, error_body = exc.fault, exc.detail, exc.status, exc.body
        except (GuardError, OSError, h11.RemoteProtocolError) as exc:
            fault, detail = _classify(exc)
            status_seen, error_body = None, b""
        else:
            latency = time.monotonic() - start
            if latency > deadline_s:
                return _fail(Fault.TIMEOUT, f"answered after {latency:.3f}s", latency)
            data, json_fault, json_detail = _parse_strict_json(raw)
            if json_fault is not None:
                return _fail(json_fault, json_detail, latency, status, raw)
            return CallResult(
                ok=True, status=status, data=data, latency_s=latency, fault=None, detail="",
                body=raw,
            )
        latency = time.monotonic() - start
        if fault is Fault.TIMEOUT or (latency > deadline_s and fault not in _STATUS_FAULTS):
            # Nothing read from a call cut off at its deadline is trusted, but a non-2xx
            # status whose whole head came in time (h11 parsed it): its body is only read
            # for the owner's view, up to the deadline.
            return _fail(Fault.TIMEOUT, f"no complete answer within {deadline_s:.3f}s", latency)
        return _fail(fault, detail, latency, status_seen, error_body)

    def _request(self, method: str, target: str, body: bytes | None) -> _Request:
        """The bytes to send, and the h11 event that tells the parser what was sent.

        The fixed part (request line, Host, User-Agent, ...) is serialised by h11 once per
        (method, target), which validates it; what varies per call is digits and hex only
        (Content-Length, timestamp, request id, signatures).  Called once per attempt: a
        retry is signed afresh, with a request id of its own.  h11 is told about the request
        with an event holding only the method, target and Host, as if it had no body: that
        is all it uses to read the response (HEAD or CONNECT framing, keep-alive,
        100-continue, none of which the other headers or the body change).  Validating every
        header on every call was the largest part of the client's CPU per call.
        """
        key = (method, target, body is not None, self._header_key)
        found = _HEADS.get(key)
        if found is None:
            headers = list(self._static_headers)
            if body is not None:
                headers.append(("Content-Type", "application/json"))
            wire = h11.Connection(h11.CLIENT).send(
                h11.Request(method=method, target=target, headers=headers)
            )
            assert wire is not None and wire.endswith(b"\r\n\r\n")
            event = h11.Request(method=method, target=target, headers=[("Host", self._host)])
            if len(_HEADS) >= _HEADS_MAX:
                _HEADS.clear()
            found = _HEADS[key] = (wire[:-2], event)
        head, event = found
        parts = [head]
        if body is not None:
            parts.append(b"Content-Length: %d\r\n" % len(body))
        if self._secrets:
            parts.append(self._signature_lines(method, target, body or b""))
        parts.append(b"\r\n")
        if body:
            parts.append(body)
        return _Request(b"".join(parts), event)

    def _signature_lines(self, method: str, target: str, body: bytes) -> bytes:
        """The signature header lines of one attempt: a new timestamp and request id."""
        timestamp = str(int(time.time()))
        request_id = new_request_id()
        value = self._signer.signatures(method, target, timestamp, request_id, body)
        lines = b"".join((
            _TIMESTAMP_LINE, timestamp.encode("ascii"), b"\r\n",
            _REQUEST_ID_LINE, request_id.encode("ascii"), b"\r\n",
            _SIGNATURES_LINE, value.encode("ascii"), b"\r\n",
        ))
        if self._legacy_v1:  # sign()'s value, from the key's HMAC state computed once
            mac = self._v1_mac.copy()
            mac.update(timestamp.encode("ascii") + b".")
            update_holding_gil(mac, body)
            lines += _SIGNATURE_LINE + b"sha256=" + mac.hexdigest().encode("ascii") + b"\r\n"
        return lines

    def _send_with_retry(
        self, method: str, target: str, body: bytes | None, deadline: float
    ) -> tuple[int, bytes]:
        """One exchange; a reused connection that turned out stale is replaced and retried
        (each attempt signed afresh, see :meth:`_request`)."""
        retries = self._pool_maxsize
        while True:
            request = self._request(method, target, body)
            conn, reused = self._checkout(deadline)
            done = False
            try:
                status, raw, reusable = self._exchange_on(conn, request, deadline, reused)
                if reusable:  # (h11, when it read the answer, is ready for the next one)
                    self._checkin(conn)
                    done = True
                return status, raw
            except _StaleError:
                if retries <= 0:
                    raise _CallFaultError(
                        Fault.CONNECTION, "connection closed before the answer"
                    ) from None
                retries -= 1
            finally:
                if not done:
                    conn.close()

    def _checkout(self, deadline: float) -> tuple[_Conn, bool]:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._open(deadline), False
            if conn.looks_alive():
                return conn, True
            conn.close()

    def _checkin(self, conn: _Conn) -> None:
        with self._lock:
            if len(self._idle) < self._pool_maxsize:
                self._idle.append(conn)
                return
        conn.close()

    def _open(self, deadline: float) -> _Conn:
        """Resolve through the guard, connect to an approved address, do TLS if asked."""
        target = self._target
        assert target is not None
        left = deadline - time.monotonic()
        if left <= 0:
            raise _timeout()
        addresses = _connect_candidates(
            resolve_checked(target.host, self.policy, timeout=left, resolver=self._resolver)
        )
        sock: socket.socket | None = None
        last_error: OSError | None = None
        for index, addr in enumerate(addresses):
            left = deadline - time.monotonic()
            if left <= 0:
                raise _timeout()
            family = socket.AF_INET if isinstance(addr, ipaddress.IPv4Address) else socket.AF_INET6
            try:
                candidate = socket.socket(family, socket.SOCK_STREAM)
            except OSError as exc:  # e.g. no IPv6 on this host: try the next address
                last_error = exc
                continue
            try:
                candidate.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                # Share the time left between the addresses still to try.
                share = left / (len(addresses) - index)
                where = (str(addr), target.port)
                _bounded(candidate, deadline, candidate.connect, where, cap=share)
            except _CallFaultError:
                candidate.close()
                if index == len(addresses) - 1:
                    raise
                continue
            except OSError as exc:
                candidate.close()
                last_error = exc
                continue
            except BaseException:
                candidate.close()
                raise
            sock = candidate
            break
        if sock is None:
            detail = f"cannot connect to {target.host}: {last_error}"
            raise _CallFaultError(Fault.CONNECTION, detail)
        if target.scheme == "https":
            sock = self._handshake(sock, target, deadline)
        return _Conn(sock)

    def _handshake(self, sock: socket.socket, target: Target, deadline: float) -> socket.socket:
        try:
            tls = _tls_context(self._ca_bundle).wrap_socket(
                sock, server_hostname=target.host, do_handshake_on_connect=False
            )
        except BaseException:
            sock.close()
            raise
        try:
            _bounded(tls, deadline, tls.do_handshake)
        except ssl.SSLError as exc:
            tls.close()
            raise _CallFaultError(Fault.TLS, f"TLS failure: {exc}") from None
        except BaseException:
            tls.close()
            raise
        return tls

    def _exchange_on(
        self, conn: _Conn, request: _Request, deadline: float, reused: bool
    ) -> tuple[int, bytes, bool]:
        """Send the request and read the answer: (status, body, connection reusable).

        The plainest answer, whole in the first read, is read directly
        (:func:`_plain_answer`); any other, h11 turns into events, and :class:`_Answer`
        keeps what has come so far and decides what each event and each failure means (a
        non-2xx status whose head is in is the verdict, whatever happens to its body after
        it).
        """
        _send_on(conn, request, deadline, reused)
        answer = _Answer(self.max_body, self.error_body_max)
        first = answer.receive(conn.sock, deadline, reused, wait=True)
        if first:
            body = _plain_answer(first, self.max_body)
            if body is not None:
                return 200, body, True
        # Anything else is h11's to read, from the first byte: tell it what was sent.
        machine = conn.h11
        machine.send(request.event)
        machine.send(h11.EndOfMessage())
        machine.receive_data(first)
        while True:
            try:
                event = machine.next_event()
            except h11.RemoteProtocolError as exc:
                raise answer.malformed(exc, reused) from None
            if event is h11.NEED_DATA:
                machine.receive_data(answer.receive(conn.sock, deadline, reused))
                continue
            kind = type(event)
            if kind is h11.Data:
                assert isinstance(event, h11.Data)
                answer.body_data(event.data)
            elif kind is h11.Response:
                assert isinstance(event, h11.Response)
                self._check_head(event)
                answer.head(event.status_code)
            elif kind is h11.EndOfMessage:
                status, raw, reusable = answer.complete(machine)
                if reusable:
                    machine.start_next_cycle()
                return status, raw, reusable
            elif kind is h11.InformationalResponse:
                assert isinstance(event, h11.InformationalResponse)
                answer.interim(event.status_code)
            else:  # ConnectionClosed before the end of the message; h11 raises for that
                raise answer.closed()

    def _check_head(self, response: h11.Response) -> None:
        status = response.status_code
        headers = response.headers
        if len(headers) > MAX_HEADERS:
            raise _CallFaultError(Fault.PROTOCOL, f"more than {MAX_HEADERS} header fields", status)
        if 300 <= status < 400:
            location = next((v for k, v in headers if k == b"location"), b"")
            shown = location[:100].decode("latin-1")
            raise _CallFaultError(
                Fault.REDIRECT, f"HTTP {status} redirect to {shown!r} not followed", status
            )
        if not 200 <= status < 300:
            return  # its body's first bytes are read (see _exchange_on)
        for name, value in headers:
            if name == b"content-length" and int(value) > self.max_body:
                raise _CallFaultError(
                    Fault.BODY_TOO_LARGE,
                    f"Content-Length {int(value)} exceeds {self.max_body} bytes",
                    status,
                )



def _classify(exc: BaseException) -> tuple[Fault, str]:
    """The fault for an exception raised by the guard, the socket layer or h11."""
    if isinstance(exc, AddressRefusedError):
        return Fault.REFUSED_ADDRESS, str(exc)
    if isinstance(exc, BadUrlError):
        return Fault.BAD_URL, str(exc)
    if isinstance(exc, ResolveTimeoutError):
        return Fault.TIMEOUT, str(exc)
    if isinstance(exc, ResolveFailedError):
        return Fault.DNS, str(exc)
    if isinstance(exc, GuardError):
        return Fault.REFUSED_ADDRESS, str(exc)
    if isinstance(exc, TimeoutError):
        return Fault.TIMEOUT, "timed out"
    if isinstance(exc, ssl.SSLError):
        return Fault.TLS, f"TLS failure: {exc}"
    if isinstance(exc, h11.RemoteProtocolError):
        return Fault.PROTOCOL, f"malformed HTTP: {exc}"
    return Fault.CONNECTION, f"{type(exc).__name__}: {exc}"
