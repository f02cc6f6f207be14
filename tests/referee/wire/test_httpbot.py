"""The deadline-enforcing bot caller, against real misbehaving servers on loopback.

Timing assertions are deliberately loose (deadline 0.3 s, must return within
1.5 s): they prove the caller is cut off at the deadline rather than held for
seconds, without being flaky on a loaded CI machine.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from referee.wire.httpbot import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    BotClient,
    CallResult,
    Fault,
    sign,
    verify_signature,
)
from referee.wire.netguard import NetPolicy
from referee.wire.signing import (
    REQUEST_ID_HEADER,
    SIGNATURES_HEADER,
    ReplayCache,
    parse_signatures,
    request_id_ok,
    verify_v2,
)
from tests.ports import closed_port
from tests.referee import badbots as bb

LOCAL = NetPolicy(allow_private=True)
DEADLINE = 0.3
SLACK = 1.5  # generous upper bound for "returned at the deadline"
AMPLE = 60.0
"""The deadline of a call whose bot is not slow (a good answer, garbage, a fast failure): only
misbehaving-in-time bots are timed, so on a saturated machine no other call may run into it."""


def call_once(behaviour: bb.Behaviour, deadline: float = DEADLINE, **client_kw: object
              ) -> tuple[CallResult, float, bb.BadBot]:
    with bb.serving(behaviour) as bot:
        client = BotClient(bot.url, policy=LOCAL, **client_kw)  # type: ignore[arg-type]
        try:
            t0 = time.monotonic()
            result = client.call("/move", {"hand": ["3D", "4C"]}, deadline)
            elapsed = time.monotonic() - t0
        finally:
            client.close()
        return result, elapsed, bot


# --------------------------------------------------------------------------- happy path


def test_good_bot_returns_object() -> None:
    result, elapsed, bot = call_once(bb.good_json({"play": ["3D"]}), deadline=AMPLE)
    assert result.ok and result.fault is None
    assert result.status == 200
    assert result.data == {"play": ["3D"]}
    assert 0 < result.latency_s <= elapsed
    req = bot.requests[0]
    assert req.method == "POST" and req.path == "/move"
    assert req.headers["content-type"] == "application/json"
    assert req.body == b'{"hand":["3D","4C"]}'  # compact, serialised once
    assert req.headers["accept-encoding"] == "identity"
    assert SIGNATURE_HEADER.lower() not in req.headers


def test_base_path_is_joined() -> None:
    with bb.serving(bb.good_json()) as bot:
        with BotClient(bot.url + "/bots/alice/", policy=LOCAL) as client:
            assert client.call("turn", {}, AMPLE).ok
            assert client.get("/info", AMPLE).ok
        assert [r.path for r in bot.requests] == ["/bots/alice/turn", "/bots/alice/info"]
        assert bot.requests[1].method == "GET" and bot.requests[1].body == b""


def test_keep_alive_reuses_one_connection() -> None:
    with bb.serving(bb.good_json()) as bot:
        with BotClient(bot.url, policy=LOCAL) as client:
            results = [client.call("/move", {"i": i}, AMPLE) for i in range(20)]
        assert all(r.ok for r in results)
        assert [r.data for r in results][-1] == {"ok": True, "n": 20}
        assert bot.connections == 1


def test_the_encoder_writes_every_body_it_is_given_and_the_signature_covers_it() -> None:
    """A sender's own ``encoder`` (the arena's worker gives orjson) writes the bodies sent,
    and the signature covers exactly those bytes."""
    secret = b"k" * 32
    result, _, bot = call_once(bb.good_json(), deadline=AMPLE, secret=secret,
                               encoder=lambda payload: b'{"hand": ["3D", "4C"]}')
    assert result.ok
    req = bot.requests[0]
    assert req.body == b'{"hand": ["3D", "4C"]}'
    assert v2_problem(req, [secret]) is None


def test_body_until_eof_without_content_length() -> None:
    result, _, _ = call_once(bb.until_eof_body(b'{"a": 1}'), deadline=AMPLE)
    assert result.ok and result.data == {"a": 1}


def test_body_exactly_at_cap_is_accepted() -> None:
    body = b'{"a":"' + b"x" * 92 + b'"}'
    assert len(body) == 100
    ok, _, _ = call_once(bb.raw_answer(bb.response_bytes(body)), AMPLE, max_body=100)
    assert ok.ok
    over, _, _ = call_once(bb.raw_answer(bb.response_bytes(body + b" ")), AMPLE,
                      max_body=100)
    assert over.fault is Fault.BODY_TOO_LARGE


# --------------------------------------------------------------------------- deadline

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"

DEADLINE_CASES: dict[str, bb.Behaviour] = {
    "hangs after reading the request": bb.hang,
    "never reads the request": bb.silent,
    "sleeps past the deadline": bb.sleep_then_answer(3.0),
    # Byte intervals far below the per-operation socket timeout: only the
    # whole-call deadline can stop these.
    "trickles the status line and headers": bb.trickle(bb.response_bytes(b'{"a":1}'), 0.02),
    "trickles the body": bb.trickle(b'{"a":"' + b"x" * 392 + b'"}', 0.02, head_at_once=HEAD),
    "trickles a header line forever": bb.trickle(
        b"X-Pad: " + b"y" * 1000, 0.01, head_at_once=b"HTTP/1.1 200 OK\r\n"),
}


@pytest.mark.parametrize("behaviour", DEADLINE_CASES.values(), ids=DEADLINE_CASES.keys())
def test_deadline_cuts_off_misbehaving_bot(behaviour: bb.Behaviour) -> None:
    result, elapsed, _ = call_once(behaviour)
    assert result.fault is Fault.TIMEOUT, result
    assert not result.ok and result.data is None
    assert DEADLINE * 0.9 <= elapsed < SLACK


def test_trickled_status_is_not_trusted_after_cutoff() -> None:
    # A status line cut mid-way can still parse; the result must not claim a 200.
    result, _, _ = call_once(bb.trickle(bb.response_bytes(b'{"a":1}'), 0.02))
    assert result.fault is Fault.TIMEOUT and result.status is None


def test_deadline_covers_dns_resolution() -> None:
    release = threading.Event()
    calls: list[str] = []

    def slow_resolver(host: str) -> list[str]:
        calls.append(host)
        release.wait(10)
        return ["127.0.0.1"]

    try:
        with BotClient("http://slow-dns.test:9/", policy=LOCAL, resolver=slow_resolver) as c:
            t0 = time.monotonic()
            result = c.call("/move", {}, DEADLINE)
            elapsed = time.monotonic() - t0
    finally:
        release.set()
    assert calls == ["slow-dns.test"]
    assert result.fault is Fault.TIMEOUT
    assert elapsed < SLACK


def test_deadline_covers_tls_handshake(tmp_path: Path) -> None:
    # A "TLS server" that trickles the header of a 16 KiB handshake record:
    # OpenSSL waits for the whole record, each byte resets the socket timeout.
    record = b"\x16\x03\x03\x40\x00" + b"\x02" * 2000
    with bb.serving(bb.trickle_raw(record, 0.02)) as bot:
        url = f"https://bot.test:{bot.port}/"
        with BotClient(url, policy=LOCAL, resolver=lambda h: ["127.0.0.1"]) as client:
            t0 = time.monotonic()
            result = client.call("/move", {}, DEADLINE)
            elapsed = time.monotonic() - t0
    assert result.fault is Fault.TIMEOUT, result
    assert elapsed < SLACK


def test_zero_deadline_sends_nothing() -> None:
    with bb.serving(bb.good_json()) as bot, BotClient(bot.url, policy=LOCAL) as client:
        result = client.call("/move", {}, 0.0)
        assert result.fault is Fault.TIMEOUT
        assert bot.connections_until_now() == 0


def test_timeout_does_not_poison_the_pool() -> None:
    with (bb.serving(bb.scripted([1.0, 0.0, 0.0])) as bot,
          BotClient(bot.url, policy=LOCAL) as client):
        first = client.call("/move", {}, DEADLINE)
        second = client.call("/move", {}, AMPLE)
        third = client.call("/move", {}, AMPLE)
    assert first.fault is Fault.TIMEOUT
    assert second.ok and third.ok, (second, third)
    assert second.data == {"i": 1} and third.data == {"i": 2}


def test_concurrent_calls_each_meet_their_deadline() -> None:
    results: list[tuple[CallResult, float]] = []
    lock = threading.Lock()
    with bb.serving(bb.hang) as bot, BotClient(bot.url, policy=LOCAL) as client:

        def worker(deadline: float) -> None:
            t0 = time.monotonic()
            r = client.call("/move", {}, deadline)
            with lock:
                results.append((r, time.monotonic() - t0 - deadline))

        threads = [threading.Thread(target=worker, args=(0.2 + 0.1 * i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert len(results) == 4
    assert all(r.fault is Fault.TIMEOUT for r, _ in results)
    assert all(over < 1.0 for _, over in results)


# --------------------------------------------------------------------------- faults

REDIRECT_TRAP: list[bb.BadBot] = []


def _redirect_behaviour() -> bb.Behaviour:
    trap = REDIRECT_TRAP[0]
    return bb.raw_answer(bb.response_bytes(
        b"", "302 Found", extra=f"Location: http://127.0.0.1:{trap.port}/move\r\n"))


FAULT_CASES: dict[str, tuple[Callable[[], bb.Behaviour], Fault]] = {
    "10 MB body with Content-Length": (lambda: bb.huge_body(10_000_000), Fault.BODY_TOO_LARGE),
    "10 MB chunked body": (lambda: bb.huge_body(10_000_000, chunked=True), Fault.BODY_TOO_LARGE),
    "not JSON": (lambda: bb.raw_answer(bb.response_bytes(b"<html>hi</html>")), Fault.NOT_JSON),
    "truncated JSON": (lambda: bb.raw_answer(bb.response_bytes(b'{"a": ')), Fault.NOT_JSON),
    "NaN": (lambda: bb.raw_answer(bb.response_bytes(b'{"a": NaN}')), Fault.NOT_JSON),
    "Infinity": (lambda: bb.raw_answer(bb.response_bytes(b'{"a": -Infinity}')), Fault.NOT_JSON),
    "duplicate keys": (lambda: bb.raw_answer(bb.response_bytes(b'{"a":1,"a":2}')),
                       Fault.NOT_JSON),
    "not UTF-8": (lambda: bb.raw_answer(bb.response_bytes(b'{"a":"\xff"}')), Fault.NOT_JSON),
    "deeply nested": (lambda: bb.raw_answer(bb.response_bytes(
        b'{"a":' + b"[" * 30000 + b"]" * 30000 + b"}")), Fault.NOT_JSON),
    "empty body": (lambda: bb.raw_answer(bb.response_bytes(b"")), Fault.NOT_JSON),
    "JSON array": (lambda: bb.raw_answer(bb.response_bytes(b"[1, 2]")), Fault.BAD_SHAPE),
    "JSON string": (lambda: bb.raw_answer(bb.response_bytes(b'"move"')), Fault.BAD_SHAPE),
    "JSON null": (lambda: bb.raw_answer(bb.response_bytes(b"null")), Fault.BAD_SHAPE),
    "JSON number": (lambda: bb.raw_answer(bb.response_bytes(b"42")), Fault.BAD_SHAPE),
    "302 redirect": (_redirect_behaviour, Fault.REDIRECT),
    "500": (lambda: bb.raw_answer(bb.response_bytes(b"{}", "500 Internal Server Error")),
            Fault.HTTP_STATUS),
    "404": (lambda: bb.raw_answer(bb.response_bytes(b"{}", "404 Not Found")), Fault.HTTP_STATUS),
    "reset (SO_LINGER 0)": (lambda: bb.reset, Fault.CONNECTION),
    "closes mid-body": (lambda: bb.close_mid_body, Fault.CONNECTION),
    "closes without answering": (lambda: bb.close_after_request, Fault.CONNECTION),
    "bad status line": (lambda: bb.raw_answer(b"HTTP/1.1 abc\r\n\r\n"), Fault.PROTOCOL),
    "chunk extensions padding tiny chunks": (lambda: bb.raw_answer(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + (b"1;pad=" + b"x" * 8000 + b"\r\n \r\n") * 200 + b"0\r\n\r\n"),
        Fault.BODY_TOO_LARGE),
    "endless 100 Continue": (lambda: bb.raw_answer(
        b"HTTP/1.1 100 Continue\r\n\r\n" * 5000 + bb.response_bytes(b"{}")), Fault.PROTOCOL),
    "a few 1xx, then the answer": (lambda: bb.raw_answer(
        b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" * 3 + bb.response_bytes(b"[]")),
        Fault.BAD_SHAPE),
    "not HTTP at all": (lambda: bb.raw_answer(b"SSH-2.0-OpenSSH\r\n\r\n"), Fault.PROTOCOL),
    "too many headers": (lambda: bb.raw_answer(
        b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 200 + b"Content-Length: 2\r\n\r\n{}"),
        Fault.PROTOCOL),
}


@pytest.fixture(scope="module", autouse=True)
def redirect_trap() -> Iterator[bb.BadBot]:
    with bb.serving(bb.good_json()) as trap:
        REDIRECT_TRAP[:] = [trap]
        yield trap


@pytest.mark.parametrize(("make", "fault"), FAULT_CASES.values(), ids=FAULT_CASES.keys())
def test_fault(make: Callable[[], bb.Behaviour], fault: Fault) -> None:
    result, elapsed, _ = call_once(make(), deadline=AMPLE)
    assert result.fault is fault, result
    assert not result.ok and result.data is None
    assert result.detail
    assert elapsed < AMPLE / 2  # the fault ended the call, not the deadline


TRACEBACK = (b"Traceback (most recent call last):\n  File \"bot.py\", line 12, in move\n"
             b"ZeroDivisionError: division by zero\n")


def test_a_non_2xx_answer_keeps_the_first_bytes_of_its_body() -> None:
    """A bot's 500 traceback is what its author needs: the first ``error_body_max`` bytes
    of the body come back with the fault (the rest is not read), and none without it."""
    padded = TRACEBACK + b"x" * 5000
    answer = bb.response_bytes(padded, "500 Internal Server Error", content_type="text/plain")
    result, _, _ = call_once(bb.raw_answer(answer), deadline=AMPLE, error_body_max=100)
    assert result.fault is Fault.HTTP_STATUS and result.status == 500
    assert result.body == padded[:100] and result.detail == "HTTP 500"
    short = bb.response_bytes(TRACEBACK, "404 Not Found", content_type="text/plain")
    result, _, _ = call_once(bb.raw_answer(short), deadline=AMPLE)
    assert result.fault is Fault.HTTP_STATUS and result.body == TRACEBACK  # the default cap
    result, _, _ = call_once(bb.raw_answer(short), deadline=AMPLE, error_body_max=0)
    assert result.fault is Fault.HTTP_STATUS and result.body == b""


def test_a_non_2xx_answer_cut_short_is_still_its_status() -> None:
    """A 500 whose connection closes in the middle of its body is still an HTTP 500, with
    what came of the body (as before the body was read: the status decides the fault)."""
    def half(conn: socket.socket, bot: bb.BadBot) -> None:
        if bb.read_request(conn, bytearray()) is None:
            return
        conn.sendall(bb.response_bytes(TRACEBACK, "500 Internal Server Error",
                                       content_length=len(TRACEBACK) + 500))
        conn.shutdown(socket.SHUT_RDWR)

    result, _, _ = call_once(half, deadline=AMPLE)
    assert result.fault is Fault.HTTP_STATUS and result.status == 500
    assert result.body == TRACEBACK


def test_a_non_2xx_answer_whose_body_stalls_is_its_status_at_the_deadline() -> None:
    """The body of a 500 is read for its author only within the call's deadline; when it
    stalls, the call ends at the deadline as the HTTP 500 it is, not as a timeout."""
    release = threading.Event()

    def stall(conn: socket.socket, bot: bb.BadBot) -> None:
        if bb.read_request(conn, bytearray()) is None:
            return
        conn.sendall(bb.response_bytes(TRACEBACK, "500 Internal Server Error",
                                       content_length=len(TRACEBACK) + 500))
        release.wait(30)

    try:
        result, elapsed, _ = call_once(stall)
    finally:
        release.set()
    assert result.fault is Fault.HTTP_STATUS and result.status == 500
    assert result.body == TRACEBACK
    assert DEADLINE * 0.9 <= elapsed < SLACK  # the deadline still ended the call


def test_redirect_is_never_followed(redirect_trap: bb.BadBot) -> None:
    before = redirect_trap.connections_until_now()
    result, _, _ = call_once(_redirect_behaviour(), deadline=AMPLE)
    assert result.fault is Fault.REDIRECT and result.status == 302
    assert str(redirect_trap.port) in result.detail
    assert redirect_trap.connections_until_now() == before + 1  # our first probe only


def test_connection_refused() -> None:
    port = closed_port()  # nothing listens there
    with BotClient(f"http://127.0.0.1:{port}", policy=LOCAL) as client:
        result = client.call("/move", {}, AMPLE)
    assert result.fault is Fault.CONNECTION


def test_unresolvable_name_is_dns_fault() -> None:
    def nx(host: str) -> list[str]:
        raise OSError("NXDOMAIN")

    with BotClient("http://nowhere.test/", policy=LOCAL, resolver=nx) as client:
        assert client.call("/move", {}, AMPLE).fault is Fault.DNS


def test_bad_url_never_raises() -> None:
    for url in ("ftp://127.0.0.1/", "http://user@127.0.0.1/", "not a url", "http://[::1"):
        with BotClient(url, policy=LOCAL) as client:
            result = client.call("/move", {}, AMPLE)
        assert result.fault is Fault.BAD_URL, url


def test_unserialisable_payload_is_the_callers_bug() -> None:
    with BotClient("http://127.0.0.1:9/", policy=LOCAL) as client:
        with pytest.raises(ValueError):
            client.call("/move", {"x": float("nan")}, AMPLE)
        with pytest.raises(TypeError):
            client.call("/move", {"x": object()}, AMPLE)


# --------------------------------------------------------------------------- signing


def v2_problem(req: bb.Request, secrets: list[bytes],
               cache: ReplayCache | None = None) -> str | None:
    """What a bot verifying version 2 says of a request as it arrived (None: accepted)."""
    problem = verify_v2(
        secrets, req.method, req.path, req.body,
        timestamp=req.headers.get(TIMESTAMP_HEADER.lower()),
        request_id=req.headers.get(REQUEST_ID_HEADER.lower()),
        signatures=req.headers.get(SIGNATURES_HEADER.lower()),
        replay_cache=cache,
    )
    return None if problem is None else problem[0]


def test_signature_round_trip() -> None:
    secret = b"s3cret-for-alice"
    with (bb.serving(bb.good_json()) as bot,
          BotClient(bot.url + "/p?k=v", policy=LOCAL, secret=secret) as client):
        assert client.call("/move", {"seat": 2, "hand": ["3D"]}, AMPLE).ok
        assert client.get("/info", AMPLE).ok
    assert [(r.method, r.path) for r in bot.requests] == [("POST", "/p/move?k=v"),
                                                         ("GET", "/p/info?k=v")]
    cache = ReplayCache()
    for req in bot.requests:
        ts = req.headers[TIMESTAMP_HEADER.lower()]
        assert abs(int(ts) - time.time()) < 60
        assert re.fullmatch(r"v2=[0-9a-f]{64}", req.headers[SIGNATURES_HEADER.lower()])
        assert v2_problem(req, [secret], cache) is None
        assert v2_problem(req, [secret], cache) == "replayed"
        assert v2_problem(req, [b"other secret"]) == "bad_signature"
        assert v2_problem(bb.Request(req.method, req.path, req.headers, req.body + b" "),
                          [secret]) == "bad_signature"
        # Version 1 travels alongside during the transition (same secret, same timestamp).
        sig = req.headers[SIGNATURE_HEADER.lower()]
        assert sig.startswith("sha256=") and len(sig) == 7 + 64
        assert verify_signature(secret, ts, req.body, sig)
        assert not verify_signature(secret, str(int(ts) + 1), req.body, sig)
    assert bot.requests[0].body == b'{"seat":2,"hand":["3D"]}'
    ids = {r.headers[REQUEST_ID_HEADER.lower()] for r in bot.requests}
    assert len(ids) == 2 and all(request_id_ok(i) for i in ids)


def test_one_v2_signature_per_secret_and_v1_only_while_asked() -> None:
    new, old = b"the-new-secret", b"the-old-secret"
    with bb.serving(bb.good_json()) as bot:
        with BotClient(bot.url, policy=LOCAL, secrets=[new, old], legacy_v1=False) as client:
            assert client.call("/start", {"seat": 1}, AMPLE).ok
        with BotClient(bot.url, policy=LOCAL, secrets=[new, old]) as client:
            assert client.call("/start", {"seat": 1}, AMPLE).ok
    lean, full = bot.requests
    assert SIGNATURE_HEADER.lower() not in lean.headers
    for req in (lean, full):
        entries = parse_signatures(req.headers[SIGNATURES_HEADER.lower()])
        assert [v for v, _ in entries] == ["v2", "v2"]
        assert v2_problem(req, [new]) is None and v2_problem(req, [old]) is None
        assert v2_problem(req, [b"third"]) == "bad_signature"
    # Version 1 carries one signature: the first (current) secret's.
    ts = full.headers[TIMESTAMP_HEADER.lower()]
    assert verify_signature(new, ts, full.body, full.headers[SIGNATURE_HEADER.lower()])
    assert not verify_signature(old, ts, full.body, full.headers[SIGNATURE_HEADER.lower()])
    with pytest.raises(ValueError, match="not both"):
        BotClient("http://127.0.0.1:9", policy=LOCAL, secret=new, secrets=[old])


def test_a_retried_request_is_signed_afresh() -> None:
    """The stale-connection retry sends the request again: with a new request id (and a
    valid signature), so a bot that remembers ids and saw the first attempt answers it."""
    secret = b"s3cret"
    with (bb.serving(bb.answer_then_read_and_close) as bot,
          BotClient(bot.url, policy=LOCAL, secret=secret) as client):
        assert client.call("/move", {"i": 0}, AMPLE).ok
        assert client.call("/move", {"i": 1}, AMPLE).ok  # read, dropped, then retried
    first, dropped, retried = bot.requests
    assert dropped.body == retried.body == b'{"i":1}'
    assert bot.connections == 2
    cache = ReplayCache()
    assert [v2_problem(r, [secret], cache) for r in (first, dropped, retried)] == [None] * 3
    assert dropped.headers[REQUEST_ID_HEADER.lower()] != retried.headers[REQUEST_ID_HEADER.lower()]


def test_verify_signature_rejects_stale_and_malformed() -> None:
    secret, body = b"k", b'{"a":1}'
    now = 1_700_000_000
    good = sign(secret, now, body)
    assert verify_signature(secret, str(now), body, good, now=now + 299)
    assert not verify_signature(secret, str(now), body, good, now=now + 301)
    assert not verify_signature(secret, str(now), body, good, now=now - 301)
    assert not verify_signature(secret, "17e8", body, good, now=now)
    assert not verify_signature(secret, "-1", body, good, now=now)
    assert not verify_signature(secret, str(now), body, good.upper(), now=now)
    assert not verify_signature(secret, str(now), body, "sha1=" + good[7:], now=now)
    assert not verify_signature(secret, str(now), body, "sha256=ü", now=now)
    assert not verify_signature(secret, str(now), body, "", now=now)
    # The documented scheme, spelled out independently:
    import hashlib
    import hmac

    expected = hmac.new(secret, f"{now}.".encode() + body, hashlib.sha256).hexdigest()
    assert good == "sha256=" + expected


# --------------------------------------------------------------------------- pinning


def _record_connects(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    seen: list[object] = []
    real = socket.socket.connect

    def recording(self: socket.socket, address: object) -> None:
        seen.append(address)
        real(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", recording)
    return seen


def test_connects_to_the_checked_address_not_a_rebound_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter([["127.0.0.2"]] + [["127.0.0.3"]] * 10)
    asked: list[str] = []

    def rebinding(host: str) -> list[str]:
        asked.append(host)
        return next(answers)

    with (bb.serving(bb.good_json(), host="127.0.0.2") as real,
          bb.serving(bb.good_json(), host="127.0.0.3", port=real.port) as trap):
        connects = _record_connects(monkeypatch)
        with BotClient(f"http://rebind.test:{real.port}/", policy=LOCAL,
                       resolver=rebinding) as client:
            results = [client.call("/move", {}, AMPLE) for _ in range(5)]
        assert all(r.ok for r in results)
        # Resolved once, for the one connection, which went where the check said.
        assert asked == ["rebind.test"]
        assert connects == [("127.0.0.2", real.port)]
        assert real.connections == 1 and trap.connections == 0
        # Host header still names the host, not the pinned address.
        assert real.requests[0].headers["host"] == f"rebind.test:{real.port}"


def test_mixed_answers_are_refused_without_connecting(monkeypatch: pytest.MonkeyPatch) -> None:
    connects = _record_connects(monkeypatch)
    with BotClient("http://mixed.test/", resolver=lambda h: ["127.0.0.1", "169.254.169.254"],
                   policy=LOCAL) as client:
        result = client.call("/move", {}, AMPLE)
    assert result.fault is Fault.REFUSED_ADDRESS
    assert "169.254.169.254" in result.detail
    assert connects == []


# --------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def tls_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, str]:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("bot.test")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(ctx)
    ca_path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    return ctx, str(ca_path)


def test_https_pins_address_but_verifies_hostname(tls_setup: tuple[ssl.SSLContext, str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, ca_path = tls_setup
    sni: list[str | None] = []
    ctx.sni_callback = lambda sock, name, _ctx: sni.append(name)  # type: ignore[assignment]
    with bb.serving(bb.good_json({"tls": True}), host="127.0.0.2", tls=ctx) as bot:
        connects = _record_connects(monkeypatch)
        with BotClient(f"https://bot.test:{bot.port}/", policy=LOCAL, ca_bundle=ca_path,
                       resolver=lambda h: ["127.0.0.2"]) as client:
            results = [client.call("/move", {}, AMPLE) for _ in range(3)]
        assert all(r.ok for r in results), results
        assert results[0].data == {"tls": True}
        assert connects == [("127.0.0.2", bot.port)]
        assert sni == ["bot.test"]
        assert bot.requests[0].headers["host"] == f"bot.test:{bot.port}"


def test_https_wrong_hostname_is_tls_fault(tls_setup: tuple[ssl.SSLContext, str]) -> None:
    ctx, ca_path = tls_setup
    with (bb.serving(bb.good_json(), tls=ctx) as bot,
          BotClient(f"https://impostor.test:{bot.port}/", policy=LOCAL, ca_bundle=ca_path,
                    resolver=lambda h: ["127.0.0.1"]) as client):
        result = client.call("/move", {}, AMPLE)
    assert result.fault is Fault.TLS, result


def test_https_untrusted_certificate_is_tls_fault(
        tls_setup: tuple[ssl.SSLContext, str]) -> None:
    ctx, _ = tls_setup
    with (bb.serving(bb.good_json(), tls=ctx) as bot,
          BotClient(f"https://bot.test:{bot.port}/", policy=LOCAL,
                    resolver=lambda h: ["127.0.0.1"]) as client):
        result = client.call("/move", {}, AMPLE)
    assert result.fault is Fault.TLS, result


def test_json_result_roundtrip_types() -> None:
    payload = {"s": "ü", "n": 1, "f": 1.5, "l": [True, None], "o": {"k": "v"}}
    result, _, _ = call_once(bb.raw_answer(bb.response_bytes(json.dumps(payload).encode())),
                             AMPLE)
    assert result.ok and result.data == payload


def test_falls_through_to_the_next_checked_address() -> None:
    with bb.serving(bb.good_json(), host="127.0.0.2") as bot:
        # Nothing listens on 127.0.0.3 at that port: refused, then the next answer.
        answers = ["127.0.0.3", "127.0.0.2"]
        with BotClient(f"http://two.test:{bot.port}/", policy=LOCAL,
                       resolver=lambda h: answers) as client:
            result = client.call("/move", {}, AMPLE)
    assert result.ok, result


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_deadline_still_enforced_in_a_forked_worker() -> None:
    # Start the watchdog in this process first, then fork (as RQ does per job):
    # the child must get a working watchdog of its own.
    trickler = bb.trickle(b'{"a":"' + b"x" * 392 + b'"}', 0.02, head_at_once=HEAD)
    with bb.serving(trickler) as bot, BotClient(bot.url, policy=LOCAL) as client:
        assert client.call("/move", {}, 0.1).fault is Fault.TIMEOUT
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: report and leave without running pytest's teardown
            code = 1
            try:
                child = BotClient(bot.url, policy=LOCAL)
                t0 = time.monotonic()
                r = child.call("/move", {}, DEADLINE)
                os.write(write_end, json.dumps(
                    {"fault": r.fault and r.fault.value,
                     "elapsed": time.monotonic() - t0}).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            report = json.loads(pipe.read() or b"{}")
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert report["fault"] == "timeout"
    assert report["elapsed"] < SLACK


def test_stale_pooled_connection_is_retried_on_a_fresh_one() -> None:
    with (bb.serving(bb.one_answer_then_close) as bot,
          BotClient(bot.url, policy=LOCAL) as client):
        results = [client.call("/move", {"i": i}, AMPLE) for i in range(30)]
    assert [r.fault for r in results] == [None] * 30
    assert len(bot.requests) == 30  # each answered exactly once: the stale sends never arrived


def test_failure_on_a_fresh_connection_is_not_retried() -> None:
    result, _, bot = call_once(bb.close_after_request, deadline=AMPLE)
    assert result.fault is Fault.CONNECTION
    assert bot.connections == 1


# --------------------------------------------------------------------------- not our exceptions


def test_async_exception_during_a_call_propagates_and_drops_the_connection() -> None:
    # A queue's job timeout arrives as an exception raised by a signal handler, here while
    # the call waits for a hanging bot's answer.  It must leave BotClient.call unchanged
    # (not become a bot fault), and the interrupted connection must not be reused.
    with bb.alarm_raises() as fire, bb.serving(
            bb.interrupting(bb.scripted([30.0, 0.0]), fire)) as bot:
        with BotClient(bot.url, policy=LOCAL) as client:
            t0 = time.monotonic()
            with pytest.raises(bb.JobTimeout):
                client.call("/move", {}, 10.0)
            assert time.monotonic() - t0 < 5.0
            assert client.call("/move", {}, AMPLE).ok
        assert bot.connections == 2


def test_async_exception_during_dns_propagates() -> None:
    release = threading.Event()
    with bb.alarm_raises() as fire:

        def resolver(host: str) -> list[str]:
            fire()
            release.wait(10)
            return ["127.0.0.1"]

        try:
            with (BotClient("http://slow.test:9/", policy=LOCAL, resolver=resolver) as c,
                  pytest.raises(bb.JobTimeout)):
                c.call("/move", {}, 10.0)
        finally:
            release.set()


def test_async_exception_during_tls_handshake_propagates(
        tls_setup: tuple[ssl.SSLContext, str]) -> None:
    ctx, ca_path = tls_setup
    with (bb.alarm_raises() as fire,
          bb.serving(bb.interrupting(bb.tls_trickled_handshake(ctx, 0.05), fire)) as bot,
          BotClient(f"https://bot.test:{bot.port}/", policy=LOCAL, ca_bundle=ca_path,
                    resolver=lambda h: ["127.0.0.1"]) as client,
          pytest.raises(bb.JobTimeout)):
        client.get("/", 10.0)


# --------------------------------------------------------------------------- connection attempts


def test_connection_attempts_per_call_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.wire.httpbot import MAX_CONNECT_ATTEMPTS_PER_FAMILY

    port = closed_port()  # nothing listens on that port on any of the addresses below
    many = [f"127.0.0.{i}" for i in range(2, 102)]
    connects = _record_connects(monkeypatch)
    with BotClient(f"http://many.test:{port}/", policy=LOCAL, resolver=lambda h: many) as client:
        result = client.call("/move", {}, AMPLE)
    assert result.fault is Fault.CONNECTION
    assert connects == [(a, port) for a in many[:MAX_CONNECT_ATTEMPTS_PER_FAMILY]]


def test_connection_attempts_are_capped_per_family_and_in_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.wire.httpbot import MAX_CONNECT_ATTEMPTS

    port = closed_port()
    v4 = [f"127.0.0.{i}" for i in range(2, 52)]
    v6 = [f"::ffff:127.0.1.{i}" for i in range(2, 52)]  # IPv4-mapped loopback, over AF_INET6
    mixed = [a for pair in zip(v4, v6, strict=True) for a in pair]
    connects = _record_connects(monkeypatch)
    with BotClient(f"http://many.test:{port}/", policy=LOCAL,
                   resolver=lambda h: mixed) as client:
        result = client.call("/move", {}, AMPLE)
    assert result.fault is Fault.CONNECTION
    tried = [ipaddress.ip_address(c[0]) for c in connects]  # type: ignore[index]
    assert len(tried) == MAX_CONNECT_ATTEMPTS
    assert tried == [ipaddress.ip_address(a) for a in (v4[0], v6[0], v4[1], v6[1])]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_does_not_share_the_parents_pooled_connection() -> None:
    # RQ forks a work horse per job: a child must open its own connection rather than
    # interleave requests with its parent on an inherited one.
    with bb.serving(bb.good_json()) as bot, BotClient(bot.url, policy=LOCAL) as client:
        assert client.call("/move", {"who": "parent"}, AMPLE).ok
        assert bot.connections == 1
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = 0 if client.call("/move", {"who": "child"}, AMPLE).ok else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert bot.connections == 2
        assert client.call("/move", {"who": "parent"}, AMPLE).ok  # its own connection intact
        assert bot.connections == 2


# --- the plain answer, read without h11 --------------------------------------------------------


def _h11_body(data: bytes, max_body: int) -> bytes | None:
    """What h11 makes of ``data`` as the answer to a POST: the body of a complete 200
    answer, else None."""
    import h11

    machine = h11.Connection(h11.CLIENT)
    machine.send(h11.Request(method="POST", target="/move",
                             headers=[("Host", "bot"), ("Content-Length", "2")]))
    machine.send(h11.Data(data=b"{}"))
    machine.send(h11.EndOfMessage())
    machine.receive_data(data)
    body = b""
    try:
        while True:
            event = machine.next_event()
            if event is h11.NEED_DATA:
                return None
            if isinstance(event, h11.Response):
                if event.status_code != 200 or len(event.headers) > 100:
                    return None
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return body if len(body) <= max_body else None
            else:
                return None
    except h11.RemoteProtocolError:
        return None


PLAIN_CASES = [
    b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{"move":"x"}',
    b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length:12 \r\n'
    b'Connection: keep-alive\r\n\r\n{"move":"x"}',
    b'HTTP/1.1 200 \r\nX-Empty:\r\nContent-Length: 2\r\n\r\n{}',
    # Each of these is left to h11 (and the client reads it there as before):
    b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{"move":"x"}extra',
    b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{"move"',
    b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Length: 12\r\n\r\n{"move":"x"}',
    b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
    b'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}',
    b'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}',
    b'HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}',
    b'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}',
    b'HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 2\r\n\r\n{}',
    b'HTTP/1.1 200 OK\r\nX: a\x00b\r\nContent-Length: 2\r\n\r\n{}',
    b'HTTP/1.1 200 OK\r\n Folded: x\r\nContent-Length: 2\r\n\r\n{}',
    b'HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}',
    b'HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n' + b"x" * 5000,
    b'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n',
    b'HTTP/1.1 200 OK\n\nContent-Length: 2\r\n\r\n{}',
]


@pytest.mark.parametrize("data", PLAIN_CASES)
def test_a_plain_answer_is_read_as_h11_reads_it(data: bytes) -> None:
    """What the client reads without h11 it reads exactly as h11 would; anything else it
    leaves to h11 (None)."""
    from referee.wire.httpbot import _plain_answer

    mine = _plain_answer(data, 4096)
    if mine is not None:
        assert mine == _h11_body(data, 4096)
    assert (mine is not None) == (data in PLAIN_CASES[:3])


def test_plain_and_h11_answers_share_one_kept_connection() -> None:
    """An answer read without h11 and one read with it (chunked) on one kept-alive
    connection: both bodies arrive and the connection is reused."""
    answers = [b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{"move":"a"}',
               b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'
               b'c\r\n{"move":"b"}\r\n0\r\n\r\n',
               b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{"move":"c"}']
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def serve() -> None:
        conn, _ = server.accept()
        accepted.append(1)
        with conn:
            for answer in answers:
                buf = b""
                while b"\r\n\r\n" not in buf or not buf.endswith(b"}"):
                    buf += conn.recv(65536)
                conn.sendall(answer)
            conn.recv(1)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    port = server.getsockname()[1]
    with BotClient(f"http://127.0.0.1:{port}", policy=NetPolicy(allow_private=True)) as c:
        moves = [c.call("/move", {"turn": i}, 5.0).data for i in range(3)]
    server.close()
    assert moves == [{"move": "a"}, {"move": "b"}, {"move": "c"}]
    assert accepted == [1]
