"""Misbehaving HTTP clients on loopback, for tests/deploy and bench/slow_clients.py.

* **slowloris**: sends a request line, then one more header byte every ``every_s`` seconds,
  and never ends its headers;
* **slow body**: sends complete headers announcing a body, then one body byte every
  ``every_s`` seconds;
* **stalled body**: sends complete headers and a few body bytes, then nothing.

One thread drives every connection of a :class:`Crowd` and records when the server closed
each one (EOF or reset), so a test can check who cut them and when.  Traffic goes only to
the loopback address it is given.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

KINDS = ("slowloris", "slow_body", "stalled_body")


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll ``predicate`` (the misbehaving party's state) until it holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


@dataclass
class Conn:
    kind: str
    sock: socket.socket
    opened_at: float
    closed_at: float | None = None
    sent: int = 0


@dataclass
class Crowd:
    host: str
    port: int
    every_s: float = 1.0
    conns: list[Conn] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def open(self, kind: str, n: int) -> None:
        assert kind in KINDS and self.host in ("127.0.0.1", "::1", "localhost")
        for i in range(n):
            sock = socket.create_connection((self.host, self.port), timeout=30)
            sock.setblocking(False)
            if kind == "slowloris":
                first = f"GET /healthz?slow={i} HTTP/1.1\r\nHost: {self.host}\r\n".encode()
            else:
                first = (f"POST /api/bots HTTP/1.1\r\nHost: {self.host}\r\n"
                         "Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
                         '{"name": "').encode()
            sock.sendall(first)
            self.conns.append(Conn(kind, sock, time.monotonic()))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        for c in self.conns:
            sel.register(c.sock, selectors.EVENT_READ, c)
        next_send = time.monotonic() + self.every_s
        while not self._stop.is_set():
            timeout = max(0.0, next_send - time.monotonic())
            for key, _ in sel.select(timeout=min(timeout, 0.2)):
                c = key.data
                try:
                    data = c.sock.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:  # closed by the server (an answer, if any, is ignored)
                    c.closed_at = time.monotonic()
                    sel.unregister(c.sock)
            if time.monotonic() >= next_send:
                next_send += self.every_s
                for c in self.conns:
                    if c.closed_at is not None or c.kind == "stalled_body":
                        continue
                    try:
                        c.sock.send(b"X" if c.kind == "slowloris" else b"a")
                        c.sent += 1
                    except BlockingIOError:
                        pass
                    except OSError:
                        c.closed_at = time.monotonic()
                        with contextlib.suppress(KeyError, ValueError):
                            sel.unregister(c.sock)
        sel.close()

    def of(self, kind: str) -> list[Conn]:
        return [c for c in self.conns if c.kind == kind]

    def open_count(self, kind: str) -> int:
        return sum(1 for c in self.of(kind) if c.closed_at is None)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for c in self.conns:
            with contextlib.suppress(OSError):
                c.sock.close()
