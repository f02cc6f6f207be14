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
  ``legal_moves`` list) is ``400`` with ``{"error": ...}``; a missing, wrong, stale or
  replayed signature, when a secret is configured, is ``401`` with ``{"error", "reason"}``.
* With ``path_prefix`` (``--path-prefix /s3cr3t-path``) the endpoints live under that prefix
  (``/s3cr3t-path/move``) and everything else is ``404``: register
  ``https://host/s3cr3t-path`` and keep the URL to yourself (the arena never shows it to
  anyone but you).  A query in the registered URL (``?key=...``) is sent with every request
  and ignored here.

**When ``choose`` fails.**  A bug in ``choose`` (an exception, or an answer that is not one of
the listed ids) must not cost the match: the server logs the traceback to stderr and answers
the *first listed legal move*, with ``"say": "fallback: ..."``.  A legal move is always
better than a 500, which the referee would count as a fault and replace with its own
fallback anyway.  The server itself keeps running.

**Signatures.**  Given the signing secret the arena issued for the bot (``--secret`` or the
``BIGTWO_SECRET`` environment variable; ``BIGTWO_BOT_SECRET`` is still read), the server
verifies every request by default with version 2 of the scheme (docs/protocol.md, "Request
signing"): ``X-BigTwo-Timestamp`` (unix seconds, within 300 s of the bot's clock),
``X-BigTwo-Request-Id`` (32 lowercase hex) and ``X-BigTwo-Signatures: v2=<hex>[, v2=<hex>]``,
an HMAC-SHA256 under the secret of ``"v2\nMETHOD\nTARGET\nTIMESTAMP\nREQUEST_ID\n" + body``
(the target exactly as on the request line).  It remembers the ids it accepted for
:data:`REPLAY_WINDOW_S` seconds, so a captured request is refused when sent again, to the
same path or another.  Unsigned, wrongly signed, stale and replayed requests get ``401``
with ``{"error", "reason"}``; so does a request signed with version 1 only
(``X-BigTwo-Signature``, which the arena still sends alongside version 2 for older bots):
version 1 cannot detect a replay, and accepting it would let anyone strip the version 2
headers from a captured request and replay it.  The secret's characters themselves are the
HMAC key.  Several secrets separated by commas (``BIGTWO_SECRET=new,old``) are all accepted.
Without a secret nothing is checked.

**Latency.**  HTTP/1.1 keep-alive (one connection per referee, reused every turn), Nagle's
algorithm off, ``Content-Length`` on every answer, and one thread per connection.

**Thinking time.**  ``--think-ms N`` (``think_ms=`` of :func:`make_server`) makes the bot
wait N milliseconds before it answers each ``/move``, so that people watching a match live can
follow it (the sample bots move in a millisecond or two).  At most :data:`MAX_THINK_MS`
(500 ms), half the arena's default per-move deadline (1000 ms): a thinking bot is slow to
watch, never late.

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
from collections import OrderedDict
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

DEFAULT_PORT = 8000
"""Port a bot started with :func:`run` listens on without ``--port``."""

SECRET_ENV = "BIGTWO_SECRET"
"""Environment variable holding the signing secret (several: comma-separated)."""
LEGACY_SECRET_ENV = "BIGTWO_BOT_SECRET"
"""Older name of :data:`SECRET_ENV`, read when it is not set."""
TIMESTAMP_HEADER = "X-BigTwo-Timestamp"
REQUEST_ID_HEADER = "X-BigTwo-Request-Id"
SIGNATURES_HEADER = "X-BigTwo-Signatures"
SIGNATURE_HEADER = "X-BigTwo-Signature"
"""Version 1's header: still sent by the arena during the transition, never trusted here."""
REPLAY_WINDOW_S = 2 * MAX_SKEW_S + 60
"""How long an accepted request id is remembered: longer than any timestamp stays acceptable."""
REPLAY_CACHE_MAX = 200_000
"""Most request ids remembered (only signed requests are, so a stranger cannot fill it)."""
_HEX = frozenset("0123456789abcdef")

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
# A copy of the version 2 check (the SDK imports nothing of the project; docs/protocol.md
# "Request signing" is the specification, and tests prove this copy agrees with the
# referee's).


def sign_v2(
    secret: bytes, method: str, target: str, timestamp: int | str, request_id: str, body: bytes
) -> str:
    """The hex HMAC-SHA256, under ``secret``, of the version 2 message of a request."""
    message = f"v2\n{method.upper()}\n{target}\n{timestamp}\n{request_id}\n".encode() + body
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def parse_secrets(value: bytes | str | Sequence[bytes | str] | None) -> list[bytes]:
    """The HMAC keys a secret setting names: one secret, a comma-separated list, or a list."""
    if value is None:
        return []
    items: Sequence[bytes | str]
    if isinstance(value, bytes):
        items = value.split(b",")
    elif isinstance(value, str):
        items = value.split(",")
    else:
        items = value
    keys = [i.strip().encode("utf-8") if isinstance(i, str) else i.strip() for i in items]
    return [k for k in keys if k]


class ReplayCache:
    """The request ids this bot accepted in the last :data:`REPLAY_WINDOW_S` seconds (the
    oldest are forgotten first beyond :data:`REPLAY_CACHE_MAX`).  Thread-safe."""

    def __init__(self, window_s: float = REPLAY_WINDOW_S, max_entries: int = REPLAY_CACHE_MAX,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._window, self._max, self._clock = window_s, max_entries, clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._seen)

    def remember(self, request_id: str) -> bool:
        """Record ``request_id``; False when it was already accepted within the window."""
        with self._lock:
            now = self._clock()
            while self._seen:
                oldest, at = next(iter(self._seen.items()))
                if now - at <= self._window and len(self._seen) < self._max:
                    break
                del self._seen[oldest]
            if request_id in self._seen:
                return False
            self._seen[request_id] = now
            return True


HeaderLookup = Callable[[str], "str | None"]
"""How the check reads a request header by name (e.g. ``handler.headers.get``)."""


def signature_problem(
    secrets: bytes | Sequence[bytes],
    method: str,
    target: str,
    body: bytes,
    header: HeaderLookup,
    *,
    replay_cache: ReplayCache | None = None,
    now: float | None = None,
) -> tuple[str, str] | None:
    """Why a request is not acceptable, as ``(reason, message)``, or None when its version 2
    signature verifies under one of ``secrets``, its timestamp is fresh and (with a
    ``replay_cache``) its request id was not accepted before.

    ``target`` is the request target exactly as on the request line (path and query).  A
    request that carries only the version 1 header is refused (``signature_v1_only``): it
    can be replayed, and the arena sends version 2 to every bot."""
    keys = [secrets] if isinstance(secrets, bytes) else list(secrets)
    timestamp = header(TIMESTAMP_HEADER)
    request_id = header(REQUEST_ID_HEADER)
    signatures = header(SIGNATURES_HEADER)
    if not signatures and header(SIGNATURE_HEADER):
        return "signature_v1_only", (
            f"this request carries only the version 1 signature ({SIGNATURE_HEADER}), which "
            f"does not protect against replays; this bot requires version 2 "
            f"({SIGNATURES_HEADER} with {REQUEST_ID_HEADER}): upgrade the program that sent "
            "it (the arena and python -m referee send both versions)"
        )
    missing = [
        name
        for name, value in ((TIMESTAMP_HEADER, timestamp), (REQUEST_ID_HEADER, request_id),
                            (SIGNATURES_HEADER, signatures))
        if not value
    ]
    if missing or not timestamp or not request_id or not signatures:
        return "signature_missing", (
            f"this bot only answers signed requests: {' and '.join(missing)} missing"
        )
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        return "bad_timestamp", f"{TIMESTAMP_HEADER} must be unix seconds (a decimal integer)"
    current = time.time() if now is None else now
    skew = current - int(timestamp)
    if abs(skew) > MAX_SKEW_S:
        return "stale_timestamp", (
            f"{TIMESTAMP_HEADER} is {abs(skew):.0f} s {'behind' if skew > 0 else 'ahead of'} "
            f"this bot's clock (at most {MAX_SKEW_S} s accepted): a replayed request, or a "
            "clock that needs fixing"
        )
    if len(request_id) != 32 or not set(request_id) <= _HEX:
        return "bad_request_id", f"{REQUEST_ID_HEADER} must be 32 lowercase hex characters"
    offered = []
    for entry in signatures.split(","):
        version, sep, digest = entry.strip().partition("=")
        if sep and version.strip() == "v2" and digest.strip():
            offered.append(digest.strip().encode("utf-8", "replace"))
    if not offered:
        return "signature_missing", f"{SIGNATURES_HEADER} has no v2 signature"
    if not any(
        hmac.compare_digest(sign_v2(key, method, target, timestamp, request_id, body).encode(),
                            digest)
        for key in keys
        for digest in offered
    ):
        return "bad_signature", (
            f"{SIGNATURES_HEADER} does not match: the request was not signed with this bot's "
            "secret (rotated? set the new one), was changed on the way, or was sent to another "
            "path or with another method than it was signed for"
        )
    if replay_cache is not None and not replay_cache.remember(request_id):
        return "replayed", (
            f"{REQUEST_ID_HEADER} {request_id} was already accepted: a replayed request"
        )
    return None


def signature_ok(
    secrets: bytes | Sequence[bytes],
    method: str,
    target: str,
    body: bytes,
    header: HeaderLookup,
    *,
    replay_cache: ReplayCache | None = None,
    now: float | None = None,
) -> bool:
    """Whether a request passes :func:`signature_problem`."""
    return signature_problem(secrets, method, target, body, header,
                             replay_cache=replay_cache, now=now) is None


# --------------------------------------------------------------------------- server


MAX_THINK_MS = 500
"""Longest ``--think-ms``: half the arena's default per-move deadline (1000 ms), so that a
thinking bot never draws on its time bank."""


def think_ms_arg(text: str) -> int:
    """``--think-ms``: a whole number of milliseconds from 0 to :data:`MAX_THINK_MS`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of milliseconds: {text!r}") from None
    if not 0 <= value <= MAX_THINK_MS:
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_THINK_MS} (half the arena's "
                                         "default move deadline)")
    return value


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
        secret: bytes | Sequence[bytes] | None = None,
        on_start: Hook | None = None,
        on_end: Hook | None = None,
        verbose: bool = False,
        path_prefix: str = "",
        think_ms: int = 0,
    ) -> None:
        if not 0 <= think_ms <= MAX_THINK_MS:
            raise ValueError(f"think_ms must be from 0 to {MAX_THINK_MS}")
        self.think_s = think_ms / 1000.0
        self.choose = choose
        self.info = {"protocol": PROTOCOL, **info}
        self.secrets = parse_secrets(secret)
        self.replay_cache = ReplayCache()
        self.path_prefix = "/" + path_prefix.strip("/") if path_prefix.strip("/") else ""
        self.on_start = on_start
        self.on_end = on_end
        self.verbose = verbose
        super().__init__(address, BotHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}{self.path_prefix}"


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

    def _target(self) -> str:
        """The request target exactly as on the request line (what the signature covers):
        ``self.path`` may have been tidied by the server."""
        parts = self.requestline.split(" ")
        return parts[1] if len(parts) == 3 else self.path

    def _problem(self, body: bytes) -> tuple[str, str] | None:
        if not self.server.secrets:
            return None
        return signature_problem(
            self.server.secrets,
            self.command,
            self._target(),
            body,
            self.headers.get,
            replay_cache=self.server.replay_cache,
        )

    def _authorised(self, body: bytes) -> bool:
        problem = self._problem(body)
        if problem is not None:
            reason, message = problem
            self._send(401, {"error": message, "reason": reason})
        return problem is None

    def _endpoint(self) -> str | None:
        """The protocol path asked for (``/``, ``/move``, ...), or None outside the prefix."""
        path = self.path.split("?", 1)[0]
        prefix = self.server.path_prefix
        if not prefix:
            return path
        if path == prefix:
            return "/"
        return path[len(prefix) :] if path.startswith(prefix + "/") else None

    # -- verbs ------------------------------------------------------------------------
    def do_GET(self) -> None:
        if not self._authorised(b""):
            return
        if self._endpoint() != "/":
            self._error(404, "not found")
            return
        self._send(200, self.server.info)

    def do_HEAD(self) -> None:
        status = 401 if self._problem(b"") else 200 if self._endpoint() == "/" else 404
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self._read_body()
        if body is None or not self._authorised(body):
            return
        path = self._endpoint()
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
        if self.server.think_s:
            time.sleep(self.server.think_s)  # --think-ms: visible to spectators, never late
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
    secret: bytes | str | Sequence[bytes | str] | None = None,
    on_start: Hook | None = None,
    on_end: Hook | None = None,
    verbose: bool = False,
    path_prefix: str = "",
    think_ms: int = 0,
) -> BotServer:
    """A bound (not yet serving) bot server; ``port=0`` picks a free port (see ``.url``).

    ``secret``: the arena's signing secret for this bot (or several, comma-separated or as a
    list); when given, every request is verified and refused with 401 if it is not signed
    with one of them.  ``path_prefix``: serve the endpoints under this path only.
    ``think_ms``: wait that long before each ``/move`` answer (0 to :data:`MAX_THINK_MS`)."""
    info = {"name": name, "author": author, "version": version}
    return BotServer(
        (host, port),
        choose,
        info,
        secret=parse_secrets(secret) or None,
        on_start=on_start,
        on_end=on_end,
        verbose=verbose,
        path_prefix=path_prefix,
        think_ms=think_ms,
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
    """Parse ``--host``, ``--port``, ``--secret``, ``--path-prefix``, ``--think-ms``,
    ``--verbose`` and serve until interrupted."""
    ap = argparse.ArgumentParser(prog=name, description=f"Big Two bot {name!r} (protocol v1)")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT,
                    help=f"port to listen on (default {DEFAULT_PORT}; 0: any free)")
    ap.add_argument(
        "--secret",
        default=os.environ.get(SECRET_ENV) or os.environ.get(LEGACY_SECRET_ENV),
        help=f"the arena's signing secret for this bot; requests not signed with it get 401 "
        f"(several: comma-separated; default: ${SECRET_ENV}; none: nothing is checked)",
    )
    ap.add_argument(
        "--path-prefix",
        default="",
        help="serve the endpoints under this path only (e.g. a secret /s3cr3t-path)",
    )
    ap.add_argument("--think-ms", type=think_ms_arg, default=0, metavar="MS",
                    help=f"wait MS milliseconds before answering each move, so spectators can "
                    f"follow a match live (0 to {MAX_THINK_MS}; default 0)")
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
        path_prefix=args.path_prefix,
        think_ms=args.think_ms,
    )
    checking = "verifying signatures" if server.secrets else "not checking signatures"
    print(f"{name} listening on {server.url} ({checking})", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


__all__ = [
    "DEFAULT_PORT",
    "MAX_THINK_MS",
    "RANKS",
    "SECRET_ENV",
    "BotServer",
    "Cards",
    "ReplayCache",
    "answer_for",
    "legal_ids",
    "make_server",
    "parse_secrets",
    "rank",
    "rule_options",
    "run",
    "serve_in_thread",
    "sign_v2",
    "signature_ok",
    "signature_problem",
]
