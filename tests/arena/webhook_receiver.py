"""A real webhook receiver for the tests: an HTTP server on a loopback port, in a thread, that
records every request it gets (target, headers, exact body bytes) and every connection it
accepts, and answers from a script of statuses (the last one repeats), or hangs until the
test ends."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from referee.wire.signing import ReplayCache, verify_request


@dataclass(frozen=True)
class Received:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    def verify(self, secret: str, cache: ReplayCache | None = None) -> tuple[str, str] | None:
        """Why version 2 verification fails with ``secret`` (None: it verifies), exactly as a
        receiver does it (docs/notifications.md)."""
        return verify_request([secret.encode("ascii")], self.method, self.target, self.body,
                              self.headers, replay_cache=cache)


class Receiver:
    def __init__(self, statuses: tuple[int, ...] = (200,), *, hang: bool = False) -> None:
        self.requests: list[Received] = []
        self.connections = 0
        self.statuses = list(statuses)
        self.hang = hang
        self.released = threading.Event()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.requests.append(Received(self.command, self.path,
                                                      dict(self.headers.items()), body))
                    status = (receiver.statuses.pop(0) if len(receiver.statuses) > 1
                              else receiver.statuses[0])
                if receiver.hang:
                    receiver.released.wait(120)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self) -> Any:
                conn = super().get_request()
                with receiver.lock:
                    receiver.connections += 1
                return conn

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/hooks/arena") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
