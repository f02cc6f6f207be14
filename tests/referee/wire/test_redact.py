"""Bot URLs never reach a match record: not as a seat's identity, not inside a fault detail.

The details come from real failures over loopback (TLS with an untrusted certificate, a closed
port, a redirect that echoes the URL, a player that raises with its URL in the message): the
texts the HTTP libraries build do carry host, path and query, which is what the scrubbing is
for.
"""

from __future__ import annotations

import json
import socket
import ssl
from pathlib import Path
from typing import Any

import pytest

from referee import find_ruleset
from referee.runner import log as mlog
from referee.runner.health import health_check
from referee.runner.match import Limits, MatchRecord, run_match
from referee.wire.httpbot import BotClient
from referee.wire.netguard import NetPolicy
from referee.wire.players import HttpPlayer, LocalPlayer, Player
from referee.wire.redact import REDACTED, UrlRedactor, scrub_generic
from tests.ports import closed_port
from tests.referee import badbots as bb

LOCAL = NetPolicy(allow_private=True)
SECRET_PARTS = ("s3cr3t-path", "hunter2", "bot.test")


def leaks(text: str) -> list[str]:
    return [p for p in SECRET_PARTS if p.lower() in text.lower()]


def first(request: dict[str, Any]) -> dict[str, Any]:
    return {"move": request["legal_moves"][0]["id"]}


# --------------------------------------------------------------------------- the scrubber


@pytest.mark.parametrize("spelling", [
    "https://bot.test:8443/s3cr3t-path?key=hunter2",
    "https://BOT.TEST:8443/s3cr3t-path/move?key=hunter2",
    "host='bot.test', port=8443",
    "bot.test:8443",
    "url: /s3cr3t-path/move?key=hunter2",
    "/S3CR3T-PATH",
    "key=hunter2",
    "the key hunter2 leaked",
    "redirect to 'http://elsewhere.example/x?y=z'",
    "connect to 203.0.113.9 failed",
    "connect to [2001:db8::1]:443 failed",
])
def test_every_spelling_of_the_url_is_removed(spelling: str) -> None:
    scrub = UrlRedactor(["https://bot.test:8443/s3cr3t-path?key=hunter2"])
    out = scrub(spelling)
    assert REDACTED in out
    assert not leaks(out)
    for fragment in ("elsewhere.example", "203.0.113.9", "2001:db8::1"):
        assert fragment not in out


@pytest.mark.parametrize("text", [
    "HTTP 500",
    "no complete answer within 2.000s",
    "unknown move id 'x'",
    "answered after 12:30:45",
    "[Errno 111] Connection refused",
])
def test_ordinary_texts_are_left_alone(text: str) -> None:
    assert UrlRedactor(["https://bot.test/s3cr3t-path?key=hunter2"])(text) == text
    assert scrub_generic(text) == text


def test_escaped_and_unescaped_spellings_are_both_removed() -> None:
    scrub = UrlRedactor(["https://bot.test/s3cr3t%2Dpath/k%C3%A9yring?key=hun%74er2"])
    for text in ("/s3cr3t-path", "/s3cr3t%2Dpath", "kéyring", "k%C3%A9yring", "hunter2",
                 "hun%74er2"):
        out = scrub(text)
        assert REDACTED in out and not any(
            p in out for p in ("s3cr3t", "kéy", "%C3", "hunter2", "hun%74")), (text, out)


def test_short_path_segments_and_values_are_not_words_to_remove() -> None:
    scrub = UrlRedactor(["http://h.example/a/move?x=1"])
    assert scrub("POST /move: HTTP 404") == "POST /move: HTTP 404"
    assert "h.example" not in scrub("h.example refused")


# --------------------------------------------------------------------------- real failures


@pytest.fixture(scope="module")
def untrusted_tls() -> ssl.SSLContext:
    trustme = pytest.importorskip("trustme")
    cert = trustme.CA().issue_cert("bot.test")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(ctx)
    return ctx


def tls_player(port: int) -> HttpPlayer:
    url = f"https://bot.test:{port}/s3cr3t-path?key=hunter2"
    client = BotClient(url, policy=LOCAL, resolver=lambda h: ["127.0.0.1"])
    return HttpPlayer(url, client=client, label="bot:1")


def test_client_texts_carry_no_path_or_query_and_scrubbing_holds(
        untrusted_tls: ssl.SSLContext) -> None:
    # The client's own fault texts never name the request path or query (it builds them
    # itself rather than passing on an HTTP library's exception text); scrubbing stays the
    # second line for whatever else a detail may carry.
    with bb.serving(bb.good_json(), tls=untrusted_tls) as bot:
        player = tls_player(bot.port)
        raw = player.client.call("/move", {}, 5.0)
        scrubbed = player.move({}, 5.0)
        player.close()
    assert raw.fault is not None and raw.fault.value == "tls"
    assert "s3cr3t-path" not in raw.detail and "hunter2" not in raw.detail, raw.detail
    assert scrubbed.fault == "tls" and not leaks(scrubbed.detail), scrubbed.detail


def _raising_bot(request: dict[str, Any]) -> Any:
    """An in-process bot whose exception text carries a URL and an address."""
    raise RuntimeError("GET https://bot.test/s3cr3t-path?key=hunter2 failed at 198.51.100.7")


def redirecting(conn: socket.socket, bot: bb.BadBot) -> None:
    """Answers every request with a redirect that echoes the bot's own secret URL."""
    data = bb.response_bytes(b"", "302 Found",
                             extra="Location: https://bot.test/s3cr3t-path?key=hunter2\r\n")
    buf = bytearray()
    while bb.read_request(conn, buf) is not None:
        conn.sendall(data)


@pytest.fixture(scope="module")
def failing_match(untrusted_tls: ssl.SSLContext) -> MatchRecord:
    port = closed_port()
    with (bb.serving(bb.good_json(), tls=untrusted_tls) as tls_bot,
          bb.serving(redirecting) as redirect_bot):
        players: list[Player] = [
            tls_player(tls_bot.port),
            HttpPlayer(f"http://127.0.0.1:{port}/s3cr3t-path?key=hunter2", policy=LOCAL,
                       label="bot:2"),
            HttpPlayer(f"{redirect_bot.url}/s3cr3t-path?key=hunter2", policy=LOCAL,
                       label="bot:3"),
            LocalPlayer(_raising_bot, label="bot:4"),
        ]
        try:
            return run_match(find_ruleset("standard"), players, 3, 1,
                             Limits(deadline_ms=3000, max_strikes=2, call_deadline_ms=3000))
        finally:
            for p in players:
                p.close()


def test_a_match_of_failing_bots_records_no_url(failing_match: MatchRecord,
                                                tmp_path: Path) -> None:
    reasons = {(s.seat, s.reason) for s in failing_match.strikes}
    assert {(0, "tls"), (1, "connection"), (2, "redirect"), (3, "exception")} <= reasons
    assert {n.call for n in failing_match.notes} >= {"describe"}
    doc = mlog.to_document(failing_match)
    assert [s["player"] for s in doc["seats"]] == ["bot:1", "bot:2", "bot:3", "bot:4"]
    for lines in (False, True):
        text = mlog.dumps(doc, lines=lines)
        assert not leaks(text), [x for x in text.split('"') if leaks(x)][:5]
        assert "127.0.0.1" not in text and "198.51.100.7" not in text
        assert "url" not in json.loads(text.splitlines()[0]).get("seats", [{}])[0]
    assert mlog.verify(doc).ok


def test_health_check_reasons_carry_no_url(untrusted_tls: ssl.SSLContext) -> None:
    url = f"http://127.0.0.1:{closed_port()}/s3cr3t-path?key=hunter2"
    result = health_check(url, LOCAL)
    assert not result.ok
    assert result.reason == "GET /: no HTTP answer from the bot URL within 2 s"
    assert not leaks(result.reason) and "127.0.0.1" not in result.reason


def test_local_players_take_a_label() -> None:
    rules = find_ruleset("standard")
    rec = run_match(rules, [LocalPlayer(first, label=f"L{i}") for i in range(4)], 1, 1)
    assert [s.player for s in rec.seats] == ["L0", "L1", "L2", "L3"]


def test_the_secret_path_and_query_reach_the_bot_and_every_call_is_signed() -> None:
    """The URL is private, not crippled: the bot is called at its path with its query, and
    (with a secret) every request, GET included, carries a valid signature."""
    from referee.wire.httpbot import verify_signature
    from referee.wire.signing import verify_v2

    secret = b"DUFLI6Ma1-aOxJAagp3Dx2p5GZP-eHP3rd-qtiO6fDs"
    with bb.serving(bb.good_json()) as bot:
        player = HttpPlayer(f"{bot.url}/s3cr3t-path?key=hunter2", policy=LOCAL, secret=secret)
        try:
            assert player.describe(5.0).ok and player.move({"turn": 0}, 5.0).ok
        finally:
            player.close()
        seen = [(r.method, r.path) for r in bot.requests]
        assert seen == [("GET", "/s3cr3t-path/?key=hunter2"),
                        ("POST", "/s3cr3t-path/move?key=hunter2")]
        for r in bot.requests:  # version 2 covers the path and query as sent
            assert verify_v2([secret], r.method, r.path, r.body,
                             timestamp=r.headers["x-bigtwo-timestamp"],
                             request_id=r.headers["x-bigtwo-request-id"],
                             signatures=r.headers["x-bigtwo-signatures"],
                             replay_cache=None) is None
            assert verify_signature(secret, r.headers["x-bigtwo-timestamp"], r.body,
                                    r.headers["x-bigtwo-signature"])
