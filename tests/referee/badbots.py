"""Adversarial bot servers on loopback, misbehaving at the byte level.

Each :class:`BadBot` is a raw-socket server on ``127.x.y.z`` and an ephemeral
port, with one thread per connection running a *behaviour*: a function that
gets the accepted socket and the server and does whatever a hostile or broken
bot might do.  Raw sockets rather than ``http.server`` because the interesting
failures (trickling one byte at a time, lying about Content-Length, resetting
with SO_LINGER 0) happen below what an HTTP framework lets you control.

Only ever binds to loopback: tests must not send traffic anywhere else.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.waiting import wait_for

Behaviour = Callable[[socket.socket, "BadBot"], None]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


def read_request(conn: socket.socket, buf: bytearray) -> Request | None:
    """Read one HTTP/1.1 request (Content-Length bodies only); None on EOF."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buf.extend(chunk)
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        rest += chunk
    body, remainder = rest[:length], rest[length:]
    buf[:] = remainder
    return Request(method, path, headers, body)


def response_bytes(body: bytes, status: str = "200 OK", *, content_type: str = "application/json",
                   extra: str = "", content_length: int | None = None) -> bytes:
    length = len(body) if content_length is None else content_length
    head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {length}\r\n{extra}\r\n")
    return head.encode("latin-1") + body


@dataclass
class BadBot:
    """A loopback server running ``behaviour`` on every accepted connection."""

    behaviour: Behaviour
    host: str = "127.0.0.1"
    port: int = 0
    connections: int = 0
    requests: list[Request] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    tls: ssl.SSLContext | None = None
    _sock: socket.socket | None = None
    _conns: list[socket.socket] = field(default_factory=list)
    _peers: list[tuple[str, int]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> BadBot:
        assert self.host.startswith("127.") or self.host == "::1", "loopback only"
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(64)
        self.port = sock.getsockname()[1]
        self._sock = sock
        threading.Thread(target=self._accept_loop, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _accept_loop(self) -> None:
        assert self._sock is not None
        while not self.stop.is_set():
            try:
                conn, peer = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._conns.append(conn)
                self._peers.append(peer[:2])
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn.settimeout(5)
                conn = self.tls.wrap_socket(conn, server_side=True)
                conn.settimeout(None)
            self.behaviour(conn, self)
        except (OSError, ssl.SSLError):
            pass  # the client hung up on us: expected for most behaviours
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def connections_until_now(self) -> int:
        """How many connections reached this bot before this call, every one of them counted:
        for "nothing connected" without sleeping first.  A probe connection made now is
        accepted after every earlier one (a listening socket hands them out in the order they
        arrived), so once the probe is counted, so is each earlier one.  The probe is left
        out of the answer (it still adds one to :attr:`connections`)."""
        with socket.create_connection((self.host, self.port), timeout=60) as probe:
            me = probe.getsockname()[:2]

            def counted() -> bool:
                with self._lock:
                    return me in self._peers

            wait_for(counted, 60, every_s=0.01, what="the probe connection to be accepted")
            with self._lock:
                return self._peers.index(me)

    def record(self, req: Request) -> None:
        with self._lock:
            self.requests.append(req)

    def close(self) -> None:
        self.stop.set()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        with self._lock:
            for conn in self._conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def serving(behaviour: Behaviour, host: str = "127.0.0.1", port: int = 0,
            tls: ssl.SSLContext | None = None) -> Iterator[BadBot]:
    bot = BadBot(behaviour, host=host, port=port, tls=tls).start()
    try:
        yield bot
    finally:
        bot.close()


# --------------------------------------------------------------------------- behaviours


def good_json(payload: Any = None) -> Behaviour:
    """A well-behaved keep-alive bot answering every request with a JSON object."""

    def run(conn: socket.socket, bot: BadBot) -> None:
        buf = bytearray()
        while True:
            req = read_request(conn, buf)
            if req is None:
                return
            bot.record(req)
            answer = payload if payload is not None else {"ok": True, "n": len(bot.requests)}
            conn.sendall(response_bytes(json.dumps(answer).encode()))

    return run


def raw_answer(data: bytes) -> Behaviour:
    """Read the request, send ``data`` verbatim, keep the connection open."""

    def run(conn: socket.socket, bot: BadBot) -> None:
        buf = bytearray()
        req = read_request(conn, buf)
        if req is None:
            return
        bot.record(req)
        conn.sendall(data)
        bot.stop.wait(10)

    return run


def hang(conn: socket.socket, bot: BadBot) -> None:
    """Accept, read the request, never answer."""
    read_request(conn, bytearray())
    bot.stop.wait(30)


def silent(conn: socket.socket, bot: BadBot) -> None:
    """Accept and never even read."""
    bot.stop.wait(30)


def sleep_then_answer(seconds: float) -> Behaviour:
    def run(conn: socket.socket, bot: BadBot) -> None:
        if read_request(conn, bytearray()) is None:
            return
        if bot.stop.wait(seconds):
            return
        conn.sendall(response_bytes(b'{"late":true}'))

    return run


def trickle(data: bytes, interval: float = 0.02, *, head_at_once: bytes = b"") -> Behaviour:
    """Send ``head_at_once`` then ``data`` one byte every ``interval`` seconds."""

    def run(conn: socket.socket, bot: BadBot) -> None:
        if read_request(conn, bytearray()) is None:
            return
        if head_at_once:
            conn.sendall(head_at_once)
        for i in range(len(data)):
            if bot.stop.wait(interval):
                return
            conn.sendall(data[i : i + 1])
        bot.stop.wait(10)

    return run


def huge_body(size: int, *, chunked: bool = False) -> Behaviour:
    def run(conn: socket.socket, bot: BadBot) -> None:
        if read_request(conn, bytearray()) is None:
            return
        block = b"[" + b"1," * 32767 + b"1]"  # ~64 KiB of valid JSON, repeated
        if chunked:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            sent = 0
            while sent < size and not bot.stop.is_set():
                conn.sendall(b"%x\r\n%s\r\n" % (len(block), block))
                sent += len(block)
            conn.sendall(b"0\r\n\r\n")
        else:
            conn.sendall(response_bytes(b"", content_length=size))
            sent = 0
            while sent < size and not bot.stop.is_set():
                part = block[: size - sent]
                conn.sendall(part)
                sent += len(part)
        bot.stop.wait(5)

    return run


def reset(conn: socket.socket, bot: BadBot) -> None:
    """Read the request, then abort the connection with a TCP RST (SO_LINGER 0)."""
    read_request(conn, bytearray())
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def close_mid_body(conn: socket.socket, bot: BadBot) -> None:
    """Promise 100 bytes, send 10, close cleanly."""
    if read_request(conn, bytearray()) is None:
        return
    conn.sendall(response_bytes(b'{"a": 1234', content_length=100))
    time.sleep(0.05)
    conn.shutdown(socket.SHUT_RDWR)


def close_after_request(conn: socket.socket, bot: BadBot) -> None:
    """Read the request and close without answering."""
    read_request(conn, bytearray())
    conn.shutdown(socket.SHUT_RDWR)


def scripted(delays: list[float]) -> Behaviour:
    """Keep-alive bot that waits ``delays[i]`` before answering its i-th request overall."""

    def run(conn: socket.socket, bot: BadBot) -> None:
        buf = bytearray()
        while True:
            req = read_request(conn, buf)
            if req is None:
                return
            bot.record(req)
            i = len(bot.requests) - 1
            if i < len(delays) and bot.stop.wait(delays[i]):
                return
            conn.sendall(response_bytes(json.dumps({"i": i}).encode()))

    return run


def trickle_raw(data: bytes, interval: float = 0.02) -> Behaviour:
    """Without reading anything, send ``data`` one byte every ``interval`` seconds."""

    def run(conn: socket.socket, bot: BadBot) -> None:
        for i in range(len(data)):
            if bot.stop.wait(interval):
                return
            conn.sendall(data[i : i + 1])
        bot.stop.wait(10)

    return run


def until_eof_body(body: bytes) -> Behaviour:
    """HTTP/1.0-style answer: no Content-Length, the body ends when the connection closes."""

    def run(conn: socket.socket, bot: BadBot) -> None:
        if read_request(conn, bytearray()) is None:
            return
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body)
        conn.shutdown(socket.SHUT_WR)

    return run


def one_answer_then_close(conn: socket.socket, bot: BadBot) -> None:
    """Answer one request, then close without announcing ``Connection: close``.

    What a bot's idle keep-alive timeout looks like from the referee's side.
    """
    req = read_request(conn, bytearray())
    if req is None:
        return
    bot.record(req)
    conn.sendall(response_bytes(b'{"a": 1}'))


def answer_then_read_and_close(conn: socket.socket, bot: BadBot) -> None:
    """Answer the first request of a connection; read the second and close unanswered.

    What a bot whose idle timeout fires just as the next request arrives looks like: the
    referee retries that request on a fresh connection (which this answers again)."""
    buf = bytearray()
    req = read_request(conn, buf)
    if req is None:
        return
    bot.record(req)
    conn.sendall(response_bytes(b'{"a": 1}'))
    req = read_request(conn, buf)
    if req is not None:
        bot.record(req)


# --------------------------------------------------------------------------- framings x phases
# Every way an HTTP/1.x response can delimit its body, so deadline tests can show that none
# of them stretches the call: the client must stop at its deadline whichever framing the bot
# picks and wherever (status line, headers, body) it starts trickling.

FRAMINGS: tuple[str, ...] = (
    "keep-alive+content-length",
    "close+content-length",
    "no-length-read-to-eof",
    "http/1.0",
    "chunked",
    "chunked+close",
)
PHASES: tuple[str, ...] = ("status-line", "headers", "body")

DESCRIPTION = {"protocol": 1, "name": "trickler", "author": "tests", "version": "1"}


def framed_response(framing: str, body: bytes) -> tuple[bytes, bytes, bytes]:
    """``(status line, header block with its blank line, body bytes on the wire)``."""
    status = b"HTTP/1.0 200 OK\r\n" if framing == "http/1.0" else b"HTTP/1.1 200 OK\r\n"
    headers = b"Content-Type: application/json\r\n"
    wire = body
    if framing in ("keep-alive+content-length", "close+content-length", "http/1.0"):
        headers += b"Content-Length: %d\r\n" % len(body)
    if framing in ("chunked", "chunked+close"):
        headers += b"Transfer-Encoding: chunked\r\n"
        wire = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    if "close" in framing.split("+"):
        headers += b"Connection: close\r\n"
    return status, headers + b"\r\n", wire


def padded_body(size: int) -> bytes:
    """A JSON object of exactly ``size`` bytes (>= 10)."""
    return b'{"pad":"' + b"x" * (size - 10) + b'"}'


def trickle_framed(framing: str, phase: str, interval: float, *, body_size: int = 200,
                   describe_first: bool = False) -> Behaviour:
    """Answer with ``framing``, sending everything before ``phase`` at once and the rest one
    byte every ``interval`` seconds.  ``describe_first`` answers ``GET /`` properly first (so a
    health check gets as far as its probe ``/move``)."""
    status, head, wire = framed_response(framing, padded_body(body_size))
    at_once = {"status-line": b"", "headers": status, "body": status + head}[phase]
    slow = (status + head + wire)[len(at_once):]

    def run(conn: socket.socket, bot: BadBot) -> None:
        buf = bytearray()
        req = read_request(conn, buf)
        if req is None:
            return
        if describe_first and req.method == "GET":
            conn.sendall(response_bytes(json.dumps(DESCRIPTION).encode()))
            req = read_request(conn, buf)
            if req is None:
                return
        bot.record(req)
        conn.sendall(at_once)
        for i in range(len(slow)):
            if bot.stop.wait(interval):
                return
            conn.sendall(slow[i : i + 1])
        bot.stop.wait(10)

    return run


def trickle_forever(framing: str, interval: float = 0.02, *,
                    describe_first: bool = False) -> Behaviour:
    """A body that never ends: spaces to EOF, or endless one-byte chunks, or endless headers.

    ``describe_first`` as for :func:`trickle_framed`."""
    if framing == "chunked":
        head, unit = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n"), b"1\r\n \r\n"
    elif framing == "headers":
        head, unit = b"HTTP/1.1 200 OK\r\n", b"X-A: b\r\n"
    else:
        head, unit = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b" "

    def run(conn: socket.socket, bot: BadBot) -> None:
        buf = bytearray()
        req = read_request(conn, buf)
        if req is None:
            return
        if describe_first and req.method == "GET":
            conn.sendall(response_bytes(json.dumps(DESCRIPTION).encode()))
            if read_request(conn, buf) is None:
                return
        conn.sendall(head)
        while not bot.stop.wait(interval):  # until the client leaves or the test ends
            conn.sendall(unit)

    return run


def tls_trickled_handshake(ctx: ssl.SSLContext, interval: float = 0.02) -> Behaviour:
    """A real TLS server (``ctx``) whose handshake bytes go out one every ``interval`` s.

    The handshake runs over memory BIOs so that this server, not ``ssl``, decides the pace of
    every byte it sends; use with ``BadBot(tls=None)``.
    """

    def run(conn: socket.socket, bot: BadBot) -> None:
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ctx.wrap_bio(incoming, outgoing, server_side=True)
        conn.settimeout(0.05)
        while not bot.stop.is_set():
            with contextlib.suppress(ssl.SSLWantReadError):
                tls.do_handshake()
            pending = outgoing.read()
            for i in range(len(pending)):
                if bot.stop.wait(interval):
                    return
                conn.sendall(pending[i : i + 1])
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            if not data:
                return
            incoming.write(data)

    return run


# ------------------------------------------------------------------ asynchronous exceptions


class JobTimeout(Exception):  # noqa: N818 - named like the exception it stands in for
    """Stands in for a job queue's timeout exception.

    RQ's ``JobTimeoutException`` is raised by a SIGALRM handler in whatever code the job is
    running, and it subclasses ``Exception``: a caller that catches ``Exception`` would turn
    the queue's own timeout into a bot fault and keep the stuck job running.
    """


@contextlib.contextmanager
def alarm_raises(exc_type: type[BaseException] = JobTimeout) -> Iterator[Callable[[], None]]:
    """Install a SIGALRM handler raising ``exc_type`` (as RQ's death penalty does) in the
    main thread; yields ``fire()``, which any thread may call to deliver SIGALRM to the main
    thread (thread-directed, so it interrupts the main thread's blocking call)."""
    main = threading.main_thread().ident
    assert main is not None and threading.current_thread() is threading.main_thread()

    def handler(signum: int, frame: object) -> None:
        raise exc_type("the job's time is up")

    def fire() -> None:
        signal.pthread_kill(main, signal.SIGALRM)

    old = signal.signal(signal.SIGALRM, handler)
    try:
        yield fire
    finally:
        signal.signal(signal.SIGALRM, old)


def interrupting(behaviour: Behaviour, fire: Callable[[], None], after_s: float = 0.2
                 ) -> Behaviour:
    """Run ``behaviour``; ``after_s`` seconds into the first connection, call ``fire()``."""
    fired = threading.Event()

    def run(conn: socket.socket, bot: BadBot) -> None:
        if not fired.is_set():
            fired.set()
            threading.Timer(after_s, fire).start()
        behaviour(conn, bot)

    return run
