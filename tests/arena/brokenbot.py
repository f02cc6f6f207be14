"""A loopback bot that breaks the way real ones do, for the arena's tests: after a few good
moves (the health probe passes) it cycles through a 500 with a Python traceback as its body,
a connection reset (TCP RST) and an answer that is not JSON, with a good move in between.

Its URL has a secret path, and its traceback names that URL, an address and an exception
class: what no public page may show, and what its owner's view shows scrubbed.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET_PATH = "/s3cr3t-bot-path"
GOOD_MOVES = 3
"""Moves answered well first (the health probe's among them)."""


class BrokenBot:
    def __init__(self) -> None:
        self.moves = 0
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_port}{SECRET_PATH}"

    def traceback(self) -> bytes:
        return (f"Traceback (most recent call last):\n  File \"bot.py\", line 12, in move\n"
                f"    requests.get('{self.url}/state')\n"
                f"ZeroDivisionError: division by zero <script>alert(1)</script>\n").encode()

    def next_kind(self) -> str:
        with self.lock:
            self.moves += 1
            n = self.moves
        if n <= GOOD_MOVES:
            return "good"
        return ("500", "reset", "garbage", "good")[n % 4]


@contextmanager
def broken_bot() -> Iterator[BrokenBot]:
    bot = BrokenBot()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, body: bytes, status: int = 200, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(b'{"protocol": 1, "name": "broken", "author": "tests", "version": "1"}')

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if not self.path.endswith("/move"):
                self._send(b"{}")
                return
            kind = bot.next_kind()
            if kind == "500":
                self._send(bot.traceback(), 500, "text/plain")
            elif kind == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
            elif kind == "garbage":
                self._send(b"<html>oops</html>")
            else:
                move = json.loads(body)["legal_moves"][0]["id"]
                self._send(json.dumps({"move": move}).encode())

        def log_message(self, *a: object) -> None:
            pass

    bot.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=bot.server.serve_forever, daemon=True).start()
    try:
        yield bot
    finally:
        bot.server.shutdown()
        bot.server.server_close()
