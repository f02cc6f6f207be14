"""A tiny SDK that turns ``choose(request) -> move id`` into a Big Two bot web server.

The sample bots speak only the wire protocol (protocol v1: HTTP + JSON), so this module
imports nothing from the rest of the project: copy it next to your own bot and it works
against any implementation of the protocol.

    from sample_bots.sdk import run

    def choose(request: dict) -> str:
        return request["legal_moves"][0]["id"]

    if __name__ == "__main__":
        run(choose, name="first-legal", author="me", version="1")

Endpoints served:

* ``GET /`` answers ``{"protocol": 1, "name", "author", "version"}``.
* ``POST /start`` and ``POST /end`` accept any JSON object and answer ``{}`` (optional hooks).
* ``POST /move`` calls ``choose`` and answers ``{"move": id, "turn": turn}`` (plus ``say``
  when ``choose`` returns ``(id, say)``).
* Anything else is ``404``; a body that is not a JSON object (or a ``/move`` body without a
  ``legal_moves`` list) is ``400`` with ``{"error": ...}``; a wrong or missing signature, when
  a secret is configured, is ``401``.

**When ``choose`` fails.**  A bug in ``choose`` (an exception, or an answer that is not one of
the listed ids) must not cost the match: the server logs the traceback to stderr and answers
the *first listed legal move*, with ``"say": "fallback: ..."``.  A legal move is always
better than a 500, which the referee would count as a fault and replace with its own
fallback anyway.  The server itself keeps running.

**Signatures.**  With ``--secret`` (or the ``BIGTWO_BOT_SECRET`` environment variable), every
request must carry ``X-BigTwo-Timestamp`` (unix seconds) and ``X-BigTwo-Signature:
sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>`` with the timestamp within 300 s of
the bot's clock.

**Latency.**  HTTP/1.1 keep-alive (one connection per referee, reused every turn), Nagle's
algorithm off, ``Content-Length`` on every answer, and one thread per connection.

On start the server prints ``<name> listening on http://host:port`` to stderr (with
``--port 0`` that is how a launcher learns the port).

Card helpers for strategies: :class:`Cards` knows the rank order (``3 < 4 < ... < A < 2``) and
the suit order in force (``rules.options.suit_order``), and maps card texts such as ``"TS"`` to
ints whose natural order is the rule set's card order.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROTOCOL = 1
RANKS = "3456789TJQKA2"
"""Rank letters, lowest first (the two is highest)."""
STANDARD_SUIT_ORDER = "DCHS"
MAX_BODY = 1 << 20
"""Largest request body read (bytes); bigger ones are refused with 413."""
MAX_SKEW_S = 300
"""Signed requests whose timestamp is further than this from our clock are refused."""
IDLE_TIMEOUT_S = 120
"""A keep-alive connection idle this long is closed (the referee reconnects)."""
SECRET_ENV = "BIGTWO_BOT_SECRET"
SIGNATURE_HEADER = "X-BigTwo-Signature"
TIMESTAMP_HEADER = "X-BigTwo-Timestamp"

Request = dict[str, Any]
Choose = Callable[[Request], "str | tuple[str, str]"]
Hook = Callable[[Request], Any]


# --------------------------------------------------------------------------- cards


class Cards:
    """Card texts <-> ints under one rule set's suit order.

    A card's int is ``rank * 4 + suit_rank`` where rank 0 is the three and 12 the two, and
    suit_rank is the suit's position in ``suit_order`` (lowest first).  So ``int`` order is the
    rule set's total card order, ``c >> 2`` is the rank and ``c & 3`` the suit rank.
    """

    __slots__ = ("_cache", "suit_order", "suit_rank")

    def __init__(self, suit_order: str = STANDARD_SUIT_ORDER) -> None:
        so = suit_order.upper() if isinstance(suit_order, str) else ""
        if sorted(so) != sorted(STANDARD_SUIT_ORDER):
            so = STANDARD_SUIT_ORDER
        self.suit_order = so
        self.suit_rank = {s: i for i, s in enumerate(so)}
        self._cache: dict[str, int] = {}

    @classmethod
    def for_request(cls, request: Request) -> Cards:
        """The card order of the rule set a ``/move`` request names."""
        return cls(rule_options(request).get("suit_order", STANDARD_SUIT_ORDER))

    def card(self, text: str) -> int:
        """``"3D"`` -> int (also accepts ``"10S"`` and lower case)."""
        got = self._cache.get(text)
        if got is None:
            got = self._cache[text] = self._parse(text)
        return got

    def _parse(self, text: str) -> int:
        t = text.strip().upper()
        rank_text, suit = t[:-1], t[-1:]
        if rank_text == "10":
            rank_text = "T"
        if len(rank_text) != 1 or rank_text not in RANKS or suit not in self.suit_rank:
            raise ValueError(f"not a card: {text!r}")
        return RANKS.index(rank_text) * 4 + self.suit_rank[suit]

    def text(self, c: int) -> str:
        return RANKS[c >> 2] + self.suit_order[c & 3]

    def cards(self, texts: Sequence[str]) -> list[int]:
        """Card ints of ``texts``, sorted low to high."""
        return sorted(self.card(t) for t in texts)

    def mask(self, texts: Sequence[str]) -> int:
        """The cards as a bit set (bit ``c`` for card int ``c``)."""
        m = 0
        for t in texts:
            m |= 1 << self.card(t)
        return m

    def texts(self, mask: int) -> list[str]:
        """Card texts of a bit set, low to high."""
        out = []
        while mask:
            low = mask & -mask
            out.append(self.text(low.bit_length() - 1))
            mask ^= low
        return out


def rank(c: int) -> int:
    """Rank index of a card int: 0 = three ... 11 = ace, 12 = two."""
    return c >> 2


def rule_options(request: Request) -> dict[str, Any]:
    rules = request.get("rules")
    opts = rules.get("options") if isinstance(rules, dict) else None
    return opts if isinstance(opts, dict) else {}


def legal_ids(request: Request) -> list[str]:
    """The ids of the listed legal moves, in the order given."""
    return [m["id"] for m in request.get("legal_moves", ()) if isinstance(m, dict) and "id" in m]


# --------------------------------------------------------------------------- signatures


def sign(secret: bytes, timestamp: int | str, body: bytes) -> str:
    """The ``X-BigTwo-Signature`` value for ``body`` sent at ``timestamp``."""
    message = str(timestamp).encode("ascii") + b"." + body
    return "sha256=" + hmac.new(secret, message, hashlib.sha256).hexdigest()


def signature_ok(
    secret: bytes, timestamp: str | None, body: bytes, header: str | None, now: float | None = None
) -> bool:
    """Whether the signature headers of a request are valid and fresh."""
    if not timestamp or not header:
        return False
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > MAX_SKEW_S:
        return False
    expected = sign(secret, timestamp, body).encode("ascii")
    return hmac.compare_digest(expected, header.strip().encode("utf-8", "replace"))


# --------------------------------------------------------------------------- server


class BotServer(ThreadingHTTPServer):
    """A threading HTTP server holding one bot's ``choose`` function and settings."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        choose: Choose,
        info: dict[str, Any],
        *,
        secret: bytes | None = None,
        on_start: Hook | None = None,
        on_end: Hook | None = None,
        verbose: bool = False,
    ) -> None:
        self.choose = choose
        self.info = {"protocol": PROTOCOL, **info}
        self.secret = secret
        self.on_start = on_start
        self.on_end = on_end
        self.verbose = verbose
        super().__init__(address, BotHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


class BotHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = IDLE_TIMEOUT_S
    server: BotServer
    server_version = "BigTwoSampleBot/1"

    # -- plumbing --------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, payload: Any) -> None:
        body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"error": message})

    def _read_body(self) -> bytes | None:
        """The request body, or None after answering an error (the connection then closes)."""
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            self._error(411, "send a Content-Length, not a chunked body")
            return None
        raw = self.headers.get("Content-Length", "0")
        try:
            length = int(raw)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._error(400, "bad Content-Length")
            return None
        if length > MAX_BODY:
            self.close_connection = True
            self._error(413, "body too large")
            return None
        return self.rfile.read(length) if length else b""

    def _authorised(self, body: bytes) -> bool:
        secret = self.server.secret
        if secret is None:
            return True
        ok = signature_ok(
            secret, self.headers.get(TIMESTAMP_HEADER), body, self.headers.get(SIGNATURE_HEADER)
        )
        if not ok:
            self._error(401, "missing or bad request signature")
        return ok

    # -- verbs ------------------------------------------------------------------------
    def do_GET(self) -> None:
        if not self._authorised(b""):
            return
        if self.path.split("?", 1)[0] != "/":
            self._error(404, "not found")
            return
        self._send(200, self.server.info)

    def do_HEAD(self) -> None:
        self.send_response(200 if self.path == "/" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self._read_body()
        if body is None or not self._authorised(body):
            return
        path = self.path.split("?", 1)[0]
        if path not in ("/start", "/move", "/end"):
            self._error(404, "not found")
            return
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            self._error(400, "the body must be a JSON object")
            return
        if not isinstance(data, dict):
            self._error(400, "the body must be a JSON object")
            return
        if path == "/move":
            self._move(data)
            return
        hook = self.server.on_start if path == "/start" else self.server.on_end
        if hook is not None:
            try:
                hook(data)
            except Exception:  # a hook bug must not fail the request
                traceback.print_exc(file=sys.stderr)
        self._send(200, {})

    def _move(self, data: Request) -> None:
        moves = data.get("legal_moves")
        if not isinstance(moves, list) or not moves:
            self._error(400, "a /move body needs a non-empty legal_moves list")
            return
        ids = legal_ids(data)
        if not ids:
            self._error(400, "legal_moves holds no move ids")
            return
        answer = answer_for(self.server.choose, data, ids)
        self._send(200, answer)


def answer_for(choose: Choose, request: Request, ids: list[str] | None = None) -> dict[str, Any]:
    """The ``/move`` answer for ``request``: ``choose``'s move, or the first legal move (with a
    ``say`` that explains) when ``choose`` raises or names a move that is not listed."""
    ids = legal_ids(request) if ids is None else ids
    say: str | None = None
    try:
        got = choose(request)
        if isinstance(got, tuple):
            move, say = got
        else:
            move = got
        if move not in ids:
            raise ValueError(f"choose returned {move!r}, which is not a listed move id")
    except Exception as e:
        traceback.print_exc(file=sys.stderr)
        move, say = ids[0], f"fallback: {type(e).__name__}"
    answer: dict[str, Any] = {"move": move}
    if "turn" in request:
        answer["turn"] = request["turn"]
    if say:
        answer["say"] = str(say)[:140]
    return answer


def make_server(
    choose: Choose,
    *,
    name: str,
    author: str = "",
    version: str = "1",
    host: str = "127.0.0.1",
    port: int = 0,
    secret: bytes | str | None = None,
    on_start: Hook | None = None,
    on_end: Hook | None = None,
    verbose: bool = False,
) -> BotServer:
    """A bound (not yet serving) bot server; ``port=0`` picks a free port (see ``.url``)."""
    if isinstance(secret, str):
        secret = secret.encode("utf-8")
    info = {"name": name, "author": author, "version": version}
    return BotServer(
        (host, port),
        choose,
        info,
        secret=secret or None,
        on_start=on_start,
        on_end=on_end,
        verbose=verbose,
    )


def serve_in_thread(choose: Choose, **kw: Any) -> BotServer:
    """Start a bot server on a background thread (for tests and in-process tools); stop it
    with ``server.shutdown(); server.server_close()``."""
    server = make_server(choose, **kw)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    return server


def run(
    choose: Choose,
    name: str,
    author: str = "",
    version: str = "1",
    argv: Sequence[str] | None = None,
    *,
    on_start: Hook | None = None,
    on_end: Hook | None = None,
) -> None:
    """Parse ``--host``, ``--port``, ``--secret``, ``--verbose`` and serve until interrupted."""
    ap = argparse.ArgumentParser(prog=name, description=f"Big Two bot {name!r} (protocol v1)")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on")
    ap.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free)")
    ap.add_argument(
        "--secret",
        default=os.environ.get(SECRET_ENV),
        help=f"shared secret for request signatures (default: ${SECRET_ENV}; none: unsigned)",
    )
    ap.add_argument("--verbose", action="store_true", help="log every request")
    args = ap.parse_args(argv)
    server = make_server(
        choose,
        name=name,
        author=author,
        version=version,
        host=args.host,
        port=args.port,
        secret=args.secret,
        on_start=on_start,
        on_end=on_end,
        verbose=args.verbose,
    )
    print(f"{name} listening on {server.url}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


__all__ = [
    "RANKS",
    "BotServer",
    "Cards",
    "answer_for",
    "legal_ids",
    "make_server",
    "rank",
    "rule_options",
    "run",
    "serve_in_thread",
    "sign",
    "signature_ok",
]
