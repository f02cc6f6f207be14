"""Exact bytes to a bot, through the SSRF guard: for the requests the arena's caller never sends.

The conformance kit calls a bot through :class:`referee.wire.httpbot.BotClient`, so it sees
what the arena sees.  A few checks must send what that client never would: a request with no
signature, one signed with the wrong secret or for another path, the very same bytes twice
(a replay), several requests on one connection that the kit itself holds (to know it was one).
This module sends such bytes and reads one answer per request, nothing more.

The address is resolved and checked by :func:`referee.wire.netguard.resolve_checked` and the
connection goes to exactly that address, as the arena's caller does (a kit run without
``--allow-private`` does not call loopback or private addresses either).  Each exchange is
bounded by a deadline: a watchdog shuts the socket down when it passes, whatever the bot
trickles.  Answers are parsed by :mod:`http.client`, which is strict enough for a verdict
(status, ``Connection: close``, the body up to the arena's size cap).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from referee.wire.httpbot import DEFAULT_MAX_BODY, DEFAULT_USER_AGENT
from referee.wire.netguard import GuardError, NetPolicy, Target, check_url, resolve_checked


@dataclass(frozen=True)
class RawAnswer:
    """One answer: ``status`` (None when no HTTP answer came), its ``body`` (at most the
    arena's cap), whether the bot kept the connection open, the latency, and ``error`` in
    words when something went wrong below HTTP."""

    status: int | None
    body: bytes
    keep_alive: bool
    latency_s: float
    error: str = ""
    closed: bool = False
    """The bot closed (or reset) the connection before any answer: nothing hung."""


_CLOSED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
           ConnectionAbortedError)
"""What reading an answer raises when the bot closed the connection instead of answering."""


def request_target(target: Target, path: str) -> str:
    """The request target for ``path`` on the bot's URL, as the arena's caller writes it
    (the URL's path, then ``path``, then the URL's query)."""
    where = f"{target.base_path}/{path.lstrip('/')}"
    return f"{where}?{target.query}" if target.query else where


def request_bytes(
    target: Target,
    method: str,
    where: str,
    body: bytes | None,
    headers: Sequence[tuple[str, str]] = (),
) -> bytes:
    """A complete HTTP/1.1 request with the arena's fixed headers and ``headers`` after them."""
    host = target.origin.split("://", 1)[1]
    lines = [
        f"{method} {where} HTTP/1.1",
        f"Host: {host}",
        f"User-Agent: {DEFAULT_USER_AGENT}",
        "Accept: application/json",
        "Accept-Encoding: identity",
        "Connection: keep-alive",
    ]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


class RawConnection:
    """One connection to the bot, opened through the guard; :meth:`exchange` sends one
    request's bytes and reads its answer.  Use as a context manager."""

    def __init__(self, url: str, policy: NetPolicy, timeout_s: float) -> None:
        self.target = check_url(url, policy)
        self._policy = policy
        self._sock: socket.socket | None = None
        self._timeout_s = timeout_s
        self.error = ""

    def open(self) -> bool:
        """Connect (resolving through the guard, TLS for https); False with ``error`` set."""
        target = self.target
        try:
            addresses = resolve_checked(target.host, self._policy, timeout=self._timeout_s)
            sock = socket.create_connection((str(addresses[0]), target.port),
                                            timeout=self._timeout_s)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if target.scheme == "https":
                ctx = ssl.create_default_context()
                ctx.set_alpn_protocols(["http/1.1"])
                sock = ctx.wrap_socket(sock, server_hostname=target.host)
        except (GuardError, OSError) as exc:
            self.error = f"cannot connect: {type(exc).__name__}"
            return False
        self._sock = sock
        return True

    def exchange(self, wire: bytes, method: str, deadline_s: float) -> RawAnswer:
        """Send ``wire`` and read one answer within ``deadline_s`` (from now)."""
        start = time.monotonic()
        sock = self._sock
        if sock is None:
            return RawAnswer(None, b"", False, 0.0, self.error or "not connected")
        timer = threading.Timer(deadline_s, _shut, (sock,))
        timer.daemon = True
        timer.start()
        try:
            sock.settimeout(deadline_s)
            sock.sendall(wire)
            response = http.client.HTTPResponse(sock, method=method)
            response.begin()
            body = response.read(DEFAULT_MAX_BODY + 1)
            keep = not response.will_close
            response.close()
        except (OSError, http.client.HTTPException) as exc:
            latency = time.monotonic() - start
            late = latency >= deadline_s
            self.close()
            closed = not late and isinstance(exc, _CLOSED)
            what = f"no complete answer within {deadline_s:g} s" if late else (
                "the connection closed before any answer" if closed else
                f"no valid HTTP answer ({type(exc).__name__})")
            return RawAnswer(None, b"", False, latency, what, closed)
        finally:
            timer.cancel()
        latency = time.monotonic() - start
        if not keep:
            self.close()
        return RawAnswer(response.status, body, keep, latency)

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None

    def __enter__(self) -> RawConnection:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


__all__ = ["RawAnswer", "RawConnection", "request_bytes", "request_target"]
