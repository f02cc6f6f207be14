"""Issue 17 §4: a request captured on the way cannot be played again.

The referee's own client signs a ``/start`` to a real SDK bot through a relay on loopback that
keeps a copy of every byte it forwards (what an eavesdropper or a careless proxy holds); the
copy is then sent to the bot again, unchanged and pointed at ``/end``, and stripped of its
version 2 headers: each is refused.  And a real match against four verifying SDK bots: every
request they receive is verified and accepted, none refused.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from referee.game.presets import find_ruleset
from referee.runner.match import run_match
from referee.wire.httpbot import BotClient
from referee.wire.netguard import NetPolicy
from referee.wire.players import HttpPlayer
from sample_bots import greedy_bot
from sample_bots.sdk import BotHandler, BotServer, serve_in_thread

LOCAL = NetPolicy(allow_private=True)
SECRET = b"DUFLI6Ma1-aOxJAagp3Dx2p5GZP-eHP3rd-qtiO6fDs"
START = {"protocol": 1, "type": "start", "match_id": "1234", "seat": 2}


class Relay:
    """A loopback TCP relay to ``upstream`` that records what clients send through it."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.captured = bytearray()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream, timeout=30)
            threading.Thread(target=self._pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False),
                             daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                if record:
                    self.captured += data
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._sock.close()


def send_raw(address: tuple[str, int], wire: bytes) -> tuple[int, dict[str, Any]]:
    """Send ``wire`` as it is on a new connection; the status and the JSON body."""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(wire)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        head, _, body = answer.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
        while len(body) < length:
            body += sock.recv(65536)
    return int(head.split(b" ")[1]), json.loads(body)


@pytest.fixture
def bot() -> Iterator[BotServer]:
    server = serve_in_thread(greedy_bot.choose, name="greedy", secret=SECRET)
    yield server
    server.shutdown()
    server.server_close()


def capture_start(bot: BotServer) -> bytes:
    """The exact bytes of one ``/start`` the referee's client sent the bot (accepted)."""
    relay = Relay(bot.server_address[:2])
    try:
        with BotClient(f"http://127.0.0.1:{relay.port}", secrets=[SECRET], policy=LOCAL) as c:
            result = c.call("/start", START, 30.0)
        assert result.ok and result.status == 200, result
    finally:
        relay.close()
    wire = bytes(relay.captured)
    assert wire.startswith(b"POST /start HTTP/1.1\r\n") and wire.endswith(
        json.dumps(START, separators=(",", ":")).encode())
    return wire


def test_a_captured_start_is_refused_at_start_and_at_end(bot: BotServer) -> None:
    wire = capture_start(bot)
    address = bot.server_address[:2]
    status, body = send_raw(address, wire)
    assert (status, body["reason"]) == (401, "replayed"), body
    to_end = wire.replace(b"POST /start ", b"POST /end ", 1)
    status, body = send_raw(address, to_end)
    assert (status, body["reason"]) == (401, "bad_signature"), body
    # Nor can the version 1 header that still travels with it be used instead.
    downgraded = re.sub(rb"X-BigTwo-(Signatures|Request-Id): [^\r]*\r\n", b"", wire)
    assert b"X-BigTwo-Signature: sha256=" in downgraded
    status, body = send_raw(address, downgraded)
    assert (status, body["reason"]) == (401, "signature_v1_only"), body
    assert len(bot.replay_cache) == 1  # the one genuine request


def test_every_request_of_a_real_match_is_verified() -> None:
    """Four SDK bots, each with its own secret, play a match from the referee: every request
    each one receives passes the check (and its id is remembered), none is refused."""
    checked: list[tuple[int, str, str, object]] = []
    lock = threading.Lock()

    class Recording(BotHandler):
        def _problem(self, body: bytes) -> tuple[str, str] | None:
            problem = super()._problem(body)
            with lock:
                checked.append((self.server.server_address[1], self.command,
                                self.path, problem))
            return problem

    secrets = [f"secret-of-bot-{i}".encode() for i in range(4)]
    servers = [serve_in_thread(greedy_bot.choose, name=f"g{i}", secret=s)
               for i, s in enumerate(secrets)]
    try:
        for server in servers:
            server.RequestHandlerClass = Recording
        players = [HttpPlayer(s.url, secrets=[k], policy=LOCAL)
                   for s, k in zip(servers, secrets, strict=True)]
        rec = run_match(find_ruleset("standard"), players, 5, 2)
        for p in players:
            p.close()
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    assert rec.strikes == [] and rec.notes == [] and rec.forfeits == []
    assert checked and all(problem is None for *_, problem in checked)
    assert {path for _, _, path, _ in checked} == {"/", "/start", "/move", "/end"}
    for server in servers:
        received = [c for c in checked if c[0] == server.server_address[1]]
        assert len(server.replay_cache) == len(received) > 2


@pytest.mark.parametrize("bot_module", ["greedy_bot", "planner_bot", "random_bot"])
def test_the_sample_bots_as_shipped_pass_the_conformance_kits_signing_checks(
        bot_module: str) -> None:
    """The SDK as it is, given its secret, passes every check of the kit's signing family
    (unsigned, wrong secret, stale, replayed, another path, two secrets, v2 only)."""
    import importlib

    from referee.cli.conformance_kit import PASS, Kit
    from referee.runner.match import Limits

    module = importlib.import_module(f"sample_bots.{bot_module}")
    server = serve_in_thread(module.choose, name=bot_module, secret=SECRET)
    try:
        report = Kit(server.url, secret=SECRET, policy=LOCAL,
                     limits=Limits(deadline_ms=10_000, call_deadline_ms=10_000)).run()
    finally:
        server.shutdown()
        server.server_close()
    signing = {c.id: c.status for c in report.checks if c.family == "signing"}
    assert len(signing) == 9 and set(signing.values()) == {PASS}, signing
    assert report.ok, [(c.id, c.detail) for c in report.checks if c.status != PASS]
