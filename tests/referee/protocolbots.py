"""Protocol-speaking bot servers on loopback: well-behaved, or misbehaving on chosen moves.

A :class:`ProtocolBot` answers ``GET /``, ``/start``, ``/move`` and ``/end`` like a real bot
(keep-alive, raw sockets as in :mod:`tests.referee.badbots`, so misbehaviour can go below
HTTP).  ``bad_moves`` picks which of its moves go wrong: the i-th *distinct* ``(deal_id,
turn)`` it is asked about, so a request the referee repeats (the stale-connection retry)
misbehaves the same way.  Only ever binds to 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from referee.game.cards import card_text
from referee.wire.signing import (
    REQUEST_ID_HEADER,
    SIGNATURES_HEADER,
    TIMESTAMP_HEADER,
    ReplayCache,
    verify_v2,
)
from tests.referee.badbots import BadBot, Request, read_request, response_bytes

Policy = Callable[[dict[str, Any]], dict[str, Any]]
Misbehaviour = Callable[[socket.socket, "ProtocolBot", dict[str, Any]], bool]
"""Does something bad instead of answering; returns whether to keep serving the connection."""


def first_legal(request: dict[str, Any]) -> dict[str, Any]:
    return {"move": request["legal_moves"][0]["id"], "turn": request["turn"]}


def by_cards(request: dict[str, Any]) -> dict[str, Any]:
    """Answers with cards rather than an id: the last legal move's cards."""
    return {"cards": request["legal_moves"][-1]["cards"], "say": "cards, not ids"}


@dataclass
class ProtocolBot:
    name: str = "proto"
    policy: Policy = first_legal
    misbehave: Misbehaviour | None = None
    bad_moves: set[int] = field(default_factory=set)
    """Which of its moves (0-based, by distinct deal and turn) misbehave."""
    secret: bytes | None = None
    description: dict[str, Any] | None = None
    delay_s: float = 0.0
    """Wait this long before every good /move answer."""
    server: BadBot | None = None
    moves: list[dict[str, Any]] = field(default_factory=list)
    """Every /move body received (repeats included)."""
    starts: list[dict[str, Any]] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    describes: int = 0
    bad_signatures: int = 0
    """Requests whose version 2 signature did not verify, or that replayed an accepted one
    (the reasons are in ``signature_problems``)."""
    signature_problems: list[str] = field(default_factory=list)
    replay_cache: ReplayCache = field(default_factory=ReplayCache)
    keys: dict[tuple[str, int], int] = field(default_factory=dict)

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    def key_index(self, body: dict[str, Any]) -> int:
        key = (str(body.get("deal_id")), int(body.get("turn", -1)))
        return self.keys.setdefault(key, len(self.keys))

    def _check_signature(self, req: Request) -> None:
        """Verify as a careful bot does (version 2, remembering request ids): a stale-connection
        retry is signed afresh, so it must never read as a replay."""
        if self.secret is None:
            return
        problem = verify_v2(
            [self.secret],
            req.method,
            req.path,
            req.body,
            timestamp=req.headers.get(TIMESTAMP_HEADER.lower()),
            request_id=req.headers.get(REQUEST_ID_HEADER.lower()),
            signatures=req.headers.get(SIGNATURES_HEADER.lower()),
            replay_cache=self.replay_cache,
        )
        if problem is not None:
            self.bad_signatures += 1
            self.signature_problems.append(problem[0])

    def serve(self, conn: socket.socket, server: BadBot) -> None:
        buf = bytearray()
        while True:
            req = read_request(conn, buf)
            if req is None:
                return
            server.record(req)
            self._check_signature(req)
            if req.method == "GET":
                self.describes += 1
                info = self.description or {
                    "protocol": 1, "name": self.name, "author": "tests", "version": "1.0"}
                conn.sendall(response_bytes(json.dumps(info).encode()))
                continue
            body = json.loads(req.body)
            if req.path.endswith("/start"):
                self.starts.append(body)
                conn.sendall(response_bytes(b"{}"))
            elif req.path.endswith("/end"):
                self.ends.append(body)
                conn.sendall(response_bytes(b"{}"))
            else:
                self.moves.append(body)
                if self.misbehave is not None and self.key_index(body) in self.bad_moves:
                    if not self.misbehave(conn, self, body):
                        return
                    continue
                if self.delay_s and server.stop.wait(self.delay_s):
                    return
                conn.sendall(response_bytes(json.dumps(self.policy(body)).encode()))

    def start(self) -> ProtocolBot:
        self.server = BadBot(lambda c, s: self.serve(c, s)).start()
        return self

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


@contextlib.contextmanager
def running(*bots: ProtocolBot) -> Iterator[list[ProtocolBot]]:
    started = [b.start() for b in bots]
    try:
        yield started
    finally:
        for b in started:
            b.close()


# --------------------------------------------------------------------------- misbehaviours


def _json(conn: socket.socket, data: Any) -> bool:
    conn.sendall(response_bytes(json.dumps(data).encode()))
    return True


def hang(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    assert bot.server is not None
    bot.server.stop.wait(30)
    return False


def sleep_past(seconds: float) -> Misbehaviour:
    def run(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
        assert bot.server is not None
        if not bot.server.stop.wait(seconds):
            conn.sendall(response_bytes(json.dumps(first_legal(body)).encode()))
        return False

    return run


def trickle(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    assert bot.server is not None
    answer = json.dumps(first_legal(body)).encode()
    conn.sendall(response_bytes(b"", content_length=len(answer)))
    for i in range(len(answer)):
        if bot.server.stop.wait(0.25):
            return False
        conn.sendall(answer[i : i + 1])
    return False


def huge(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    assert bot.server is not None
    size = 10 * 1024 * 1024
    conn.sendall(response_bytes(b"", content_length=size))
    block = b" " * 65536
    sent = 0
    while sent < size and not bot.server.stop.is_set():
        conn.sendall(block)
        sent += len(block)
    return False


def invalid_json(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    conn.sendall(response_bytes(b'{"move": "3D",'))
    return True


def wrong_types(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    return _json(conn, {"move": 42})


def unknown_id(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    return _json(conn, {"move": "zz-not-a-move"})


def not_in_hand(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    held = set(body["hand"])
    other = next(card_text(c) for c in range(52) if card_text(c) not in held)
    return _json(conn, {"cards": [other]})


def redirect(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    conn.sendall(response_bytes(b"", "302 Found", extra="Location: http://10.0.0.1/move\r\n"))
    return False


def error_500(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    conn.sendall(response_bytes(b'{"error": "boom"}', "500 Internal Server Error"))
    return False


def reset(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()
    return False


def close_mid_body(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    conn.sendall(response_bytes(b'{"move": "3', content_length=100))
    conn.shutdown(socket.SHUT_RDWR)
    return False


def wrong_turn(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    return _json(conn, {"move": body["legal_moves"][0]["id"], "turn": body["turn"] + 1})


def not_an_object(conn: socket.socket, bot: ProtocolBot, body: dict[str, Any]) -> bool:
    conn.sendall(response_bytes(b'["3D"]'))
    return True
