"""The SDK's HTTP server: endpoints, errors, keep-alive, signatures, fallback, card helpers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from referee.wire.signing import (
    REQUEST_ID_HEADER,
    SIGNATURE_HEADER,
    SIGNATURES_HEADER,
    TIMESTAMP_HEADER,
    new_request_id,
    sign,
    signatures_value,
)
from sample_bots.sdk import Cards, ReplayCache, answer_for, sign_v2, signature_ok
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]

MOVE = {
    "protocol": 1,
    "turn": 5,
    "hand": ["3D", "4C", "2S"],
    "legal_moves": [{"id": "4C", "cards": ["4C"]}, {"id": "pass", "cards": []}],
}


def first(request: dict[str, Any]) -> str:
    return request["legal_moves"][0]["id"]


def test_describe(serve: Any) -> None:
    _, client = serve(first, name="first", author="tests", version="9")
    status, headers, data = client.request("GET", "/")
    assert status == 200
    assert data == {"protocol": 1, "name": "first", "author": "tests", "version": "9"}
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) > 0


def test_start_and_end_accept_any_object_and_call_hooks(serve: Any) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    _, client = serve(
        first,
        on_start=lambda r: seen.append(("start", r)),
        on_end=lambda r: seen.append(("end", r)),
    )
    assert client.post("/start", {"protocol": 1, "match_id": "m", "seat": 0})[0:3:2] == (200, {})
    assert client.post("/end", {"protocol": 1, "scores": [1, -1]})[0:3:2] == (200, {})
    assert [k for k, _ in seen] == ["start", "end"]


def test_hook_bug_does_not_fail_start(serve: Any) -> None:
    def boom(_: dict[str, Any]) -> None:
        raise RuntimeError("bug")

    _, client = serve(first, on_start=boom)
    assert client.post("/start", {})[0] == 200


def test_move_answers_id_and_echoes_turn(serve: Any) -> None:
    _, client = serve(first)
    status, headers, data = client.post("/move", MOVE)
    assert status == 200
    assert data == {"move": "4C", "turn": 5}
    assert headers["content-length"] == str(len(json.dumps(data, separators=(",", ":"))))


def test_say_is_passed_on_and_cut(serve: Any) -> None:
    _, client = serve(lambda r: ("pass", "x" * 500))
    _, _, data = client.post("/move", MOVE)
    assert data["move"] == "pass" and len(data["say"]) == 140


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/move"), ("GET", "/nope"), ("POST", "/"), ("POST", "/nope")]
)
def test_unknown_paths_are_404(serve: Any, method: str, path: str) -> None:
    _, client = serve(first)
    status, _, data = client.request(method, path, b"{}" if method == "POST" else None)
    assert status == 404 and "error" in data


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[1, 2]", b'"text"', b"\xff\xfe", b"", b'{"legal_moves": []}', b"{}"],
)
def test_bad_move_bodies_are_400(serve: Any, body: bytes) -> None:
    _, client = serve(first)
    status, _, data = client.request("POST", "/move", body)
    assert status == 400 and isinstance(data["error"], str)
    # The connection stays usable after an error.
    assert client.request("GET", "/")[0] == 200


def test_bad_start_body_is_400(serve: Any) -> None:
    _, client = serve(first)
    assert client.request("POST", "/start", b"{oops")[0] == 400


def test_keep_alive_reuses_one_connection(serve: Any) -> None:
    _, client = serve(first)
    for _ in range(20):
        assert client.post("/move", MOVE)[0] == 200
    sock = client.conn.sock
    assert sock is not None
    client.post("/move", MOVE)
    assert client.conn.sock is sock  # still the same socket: HTTP/1.1 keep-alive


def test_choose_exception_falls_back_to_first_legal_move(serve: Any) -> None:
    def broken(_: dict[str, Any]) -> str:
        raise ZeroDivisionError

    _, client = serve(broken)
    status, _, data = client.post("/move", MOVE)
    assert status == 200
    assert data["move"] == "4C" and data["say"].startswith("fallback")
    assert client.post("/move", MOVE)[0] == 200  # the server lives on


def test_unlisted_answer_falls_back() -> None:
    answer = answer_for(lambda r: "2S", MOVE)
    assert answer["move"] == "4C"


def raw_exchange(server: Any, head: bytes) -> bytes:
    """Send raw request bytes and read until the server closes the connection."""
    host, port = server.server_address[:2]
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(head)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_large_body_is_refused_before_reading_it(serve: Any) -> None:
    server, _ = serve(first)
    reply = raw_exchange(
        server, b"POST /move HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n"
    )
    assert reply.startswith(b"HTTP/1.1 413")


def test_chunked_body_is_refused(serve: Any) -> None:
    server, _ = serve(first)
    reply = raw_exchange(
        server, b"POST /move HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    )
    assert reply.startswith(b"HTTP/1.1 411")


# --------------------------------------------------------------------------- signatures
# Requests are signed here by the referee's own signer (referee.wire.signing, the
# specification), so every test also proves that the SDK's copy of the check agrees with it.

SECRET = b"s3cret"


def signed(body: bytes, method: str = "POST", target: str = "/start", *,
           ts: int | None = None, secret: bytes | list[bytes] = SECRET,
           request_id: str | None = None, v1: bool = False) -> dict[str, str]:
    t = int(time.time()) if ts is None else ts
    rid = new_request_id() if request_id is None else request_id
    keys = secret if isinstance(secret, list) else [secret]
    headers = {TIMESTAMP_HEADER: str(t), REQUEST_ID_HEADER: rid,
               SIGNATURES_HEADER: signatures_value(keys, method, target, t, rid, body)}
    if v1:
        headers[SIGNATURE_HEADER] = sign(keys[0], t, body)
    return headers


def test_signature_required_when_secret_set(serve: Any) -> None:
    _, client = serve(first, secret=SECRET)
    body = json.dumps(MOVE).encode()
    assert client.request("POST", "/move", body)[0] == 401
    assert client.request("POST", "/move", body, signed(body, target="/move"))[0] == 200
    assert client.request("GET", "/", None, signed(b"", "GET", "/"))[0] == 200
    assert client.request("GET", "/")[0] == 401
    # The arena sends version 1 alongside during the transition: it is ignored, not needed.
    assert client.request("POST", "/move", body, signed(body, target="/move", v1=True))[0] == 200


@pytest.mark.parametrize(
    "make_headers",
    [
        lambda: signed(b"{}", secret=b"other"),
        lambda: signed(b"{}", ts=int(time.time()) - 301),
        lambda: signed(b"{}", ts=int(time.time()) + 400),
        lambda: {TIMESTAMP_HEADER: "abc", REQUEST_ID_HEADER: "0" * 32, SIGNATURES_HEADER: "v2=0"},
        lambda: signed(b'{"x": 1}'),  # signature of another body
        lambda: signed(b"{}", target="/end"),  # signed for another path
        lambda: signed(b"{}", target="/start?key=k"),  # another query
        lambda: signed(b"{}", method="GET"),  # another method
        lambda: signed(b"{}", request_id="A" * 32),
        lambda: {k: v for k, v in signed(b"{}", v1=True).items() if k != SIGNATURES_HEADER},
    ],
    ids=["other-secret", "too-old", "too-new", "garbage", "other-body", "other-path",
         "other-query", "other-method", "bad-request-id", "v1-only"],
)
def test_bad_signatures_are_401(serve: Any, make_headers: Any) -> None:
    # Timestamps are taken when the test runs, not when pytest collects it (a long suite
    # would otherwise bring "400 s in the future" within the allowed skew).
    _, client = serve(first, secret=SECRET)
    assert client.request("POST", "/start", b"{}", make_headers())[0] == 401


@pytest.mark.parametrize(
    ("make_headers", "reason", "words"),
    [
        (dict, "signature_missing",
         "X-BigTwo-Timestamp and X-BigTwo-Request-Id and X-BigTwo-Signatures missing"),
        (lambda: {TIMESTAMP_HEADER: str(int(time.time())), REQUEST_ID_HEADER: "0" * 32},
         "signature_missing", "X-BigTwo-Signatures missing"),
        (lambda: {**signed(b"{}"), SIGNATURES_HEADER: "v3=abc"}, "signature_missing",
         "no v2 signature"),
        (lambda: signed(b"{}", secret=b"other"), "bad_signature", "not signed with this bot"),
        (lambda: signed(b"{}", target="/end"), "bad_signature", "another path"),
        (lambda: signed(b"{}", ts=int(time.time()) - 1000), "stale_timestamp", "behind"),
        (lambda: signed(b"{}", ts=int(time.time()) + 1000), "stale_timestamp", "ahead of"),
        (lambda: {**signed(b"{}"), TIMESTAMP_HEADER: "-5"}, "bad_timestamp", "unix seconds"),
        (lambda: signed(b"{}", request_id="0" * 31), "bad_request_id", "32 lowercase hex"),
        (lambda: {TIMESTAMP_HEADER: str(int(time.time())),
                  SIGNATURE_HEADER: sign(SECRET, int(time.time()), b"{}")},
         "signature_v1_only", "upgrade the program that sent it"),
    ],
    ids=["nothing", "no-signature", "unknown-version", "wrong-secret", "wrong-path", "stale",
         "future", "bad-timestamp", "bad-request-id", "v1-only"],
)
def test_refusals_say_why_in_json(serve: Any, make_headers: Any, reason: str,
                                  words: str) -> None:
    _, client = serve(first, secret=SECRET)
    status, headers, body = client.request("POST", "/start", b"{}", make_headers())
    assert status == 401 and headers["content-type"] == "application/json"
    assert body["reason"] == reason and words in body["error"], body
    status, _, body = client.request("GET", "/", None, make_headers())
    assert status == 401 and body["reason"] in (reason, "bad_signature")


def test_the_same_request_is_accepted_once(serve: Any) -> None:
    server, client = serve(first, secret=SECRET)
    headers = signed(b"{}")
    assert client.request("POST", "/start", b"{}", headers)[0] == 200
    status, _, body = client.request("POST", "/start", b"{}", headers)
    assert status == 401 and body["reason"] == "replayed", body
    # A forged request does not burn an id: only verified ids are remembered.
    forged = signed(b"{}", secret=b"stranger")
    assert client.request("POST", "/start", b"{}", forged)[0] == 401
    assert len(server.replay_cache) == 1
    genuine = {**forged, **{k: v for k, v in signed(b"{}", request_id=forged[REQUEST_ID_HEADER])
                            .items() if k == SIGNATURES_HEADER}}
    assert client.request("POST", "/start", b"{}", genuine)[0] == 200


def test_several_secrets_are_accepted_while_switching(serve: Any) -> None:
    _, client = serve(first, secret="new-secret,old-secret")
    for key in (b"new-secret", b"old-secret"):
        assert client.request("POST", "/start", b"{}", signed(b"{}", secret=key))[0] == 200
    assert client.request("POST", "/start", b"{}", signed(b"{}", secret=b"third"))[0] == 401
    # The arena during a rotation's grace: one entry per secret; the bot holds either.
    both = [b"new-secret", b"third"]
    assert client.request("POST", "/start", b"{}", signed(b"{}", secret=both))[0] == 200
    _, client = serve(first, secret=[b"a-secret", "b-secret"])
    assert client.request("POST", "/start", b"{}", signed(b"{}", secret=b"b-secret"))[0] == 200


def test_no_secret_means_nothing_is_checked(serve: Any) -> None:
    _, client = serve(first, secret="")
    assert client.request("POST", "/start", b"{}")[0] == 200
    assert client.request("POST", "/start", b"{}", signed(b"{}", secret=b"whatever"))[0] == 200


def test_a_path_prefix_hides_the_endpoints(serve: Any) -> None:
    server, client = serve(first, path_prefix="/s3cr3t-path/")
    assert server.url.endswith("/s3cr3t-path")
    assert client.request("GET", "/s3cr3t-path?key=k")[0] == 200
    assert client.post("/s3cr3t-path/move?key=k", MOVE)[0] == 200
    assert client.request("GET", "/")[0] == 404
    for path in ("/move", "/s3cr3t-pathmove", "/other/move"):
        assert client.post(path, MOVE)[0] == 404, path


def test_the_sdk_copy_agrees_with_the_referee() -> None:
    from referee.wire.signing import sign_v2 as referee_sign_v2
    from referee.wire.signing import verify_v2

    body, ts, rid = b'{"a": 1}', int(time.time()), new_request_id()
    for method, target in (("POST", "/move"), ("GET", "/"), ("POST", "/p/move?k=%20x")):
        ours = sign_v2(SECRET, method, target, ts, rid, body)
        assert ours == referee_sign_v2(SECRET, method, target, ts, rid, body)
        headers = signed(body, method, target, ts=ts, request_id=rid)
        assert signature_ok(SECRET, method, target, body, headers.get)
        assert verify_v2([SECRET], method, target, body, timestamp=str(ts), request_id=rid,
                         signatures=headers[SIGNATURES_HEADER], replay_cache=None) is None
    assert not signature_ok(SECRET, "GET", "/", b"", {}.get)


def test_referee_health_check_passes_with_secret(serve: Any) -> None:
    from referee.runner.health import health_check
    from referee.wire.netguard import NetPolicy
    from sample_bots import planner_bot

    server, _ = serve(planner_bot.choose, name="planner", secret=SECRET)
    result = health_check(server.url, NetPolicy(allow_private=True), secret=SECRET)
    assert result.ok, result
    unsigned = health_check(server.url, NetPolicy(allow_private=True))
    assert not unsigned.ok


# --------------------------------------------------------------------------- command line


@pytest.mark.parametrize("variable", ["BIGTWO_SECRET", "BIGTWO_BOT_SECRET"])
def test_bot_runs_as_a_module_with_port_and_secret_env(variable: str) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIGTWO_")}
    env[variable] = SECRET.decode()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sample_bots.greedy_bot", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert f"127.0.0.1:{port}" in line and "verifying signatures" in line
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/", headers=signed(b"", "GET", "/"))
        resp = conn.getresponse()
        assert resp.status == 200
        assert json.loads(resp.read())["name"] == "greedy"
        body = json.dumps(MOVE).encode()
        conn.request("POST", "/move", body=body)
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 401
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# --------------------------------------------------------------------------- cards


def test_cards_follow_the_suit_order() -> None:
    std = Cards("DCHS")
    assert std.card("3D") < std.card("3C") < std.card("3H") < std.card("3S") < std.card("4D")
    assert std.card("2S") == 51 and std.card("10h") == std.card("TH")
    pusoy = Cards("CSHD")
    assert pusoy.card("3C") < pusoy.card("3S") < pusoy.card("3H") < pusoy.card("3D")
    assert pusoy.texts(pusoy.mask(["3D", "2C", "3C"])) == ["3C", "3D", "2C"]
    assert Cards("nonsense").suit_order == "DCHS"
    for bad in ["1D", "3X", "", "10", "JJD"]:
        with pytest.raises(ValueError):
            std.card(bad)


def test_cards_for_request() -> None:
    c = Cards.for_request({"rules": {"name": "x", "options": {"suit_order": "CDHS"}}})
    assert c.card("3C") < c.card("3D")
    assert Cards.for_request({}).suit_order == "DCHS"


# --------------------------------------------------------------------------- the documented example


def protocol_section(start: str, end: str) -> str:
    doc = (ROOT / "docs" / "protocol.md").read_text()
    return doc[doc.index(start):doc.index(end)]


def test_the_worked_signing_example_in_the_protocol_doc_is_right() -> None:
    """docs/protocol.md gives real bytes and real signatures: they must stay true, for the
    referee's signer (the specification), the SDK's copy, and the doc's own Python verifier."""
    import re

    from referee.wire.signing import sign_v2 as referee_sign_v2
    from referee.wire.signing import v2_message

    section = protocol_section("### Worked example", "### Transition from version 1")
    secret = re.search(r"^secret: (\S+)$", section, re.M)
    body = re.search(r"^body: (.+)$", section, re.M)
    ts = re.search(r"^X-BigTwo-Timestamp: (\d+)$", section, re.M)
    rid = re.search(r"^X-BigTwo-Request-Id: ([0-9a-f]{32})$", section, re.M)
    sig = re.search(r"^X-BigTwo-Signatures: (v2=[0-9a-f]{64})$", section, re.M)
    v1 = re.search(r"^X-BigTwo-Signature: (sha256=[0-9a-f]{64})$", section, re.M)
    get = re.search(r"`GET /` at the same second with the request id `([0-9a-f]{32})`.*?"
                    r"`v2=([0-9a-f]{64})`", section, re.S)
    message = re.search(r"```\n(v2\nPOST\n.*?)\n```", section, re.S)
    grace = re.search(r"^X-BigTwo-Signatures: (v2=[0-9a-f]{64}, v2=[0-9a-f]{64})$", section,
                      re.M)
    rotated = re.search(r"generation 2,\s+`(\S+)`", section)
    assert secret and body and ts and rid and sig and v1 and get and message and grace
    assert rotated
    key, raw, t = secret.group(1).encode("ascii"), body.group(1).encode("utf-8"), ts.group(1)
    assert f"({len(raw)} bytes" in section
    # The six lines shown are the exact message, and it signs to the value shown.
    assert message.group(1).encode() == v2_message("POST", "/start", t, rid.group(1), raw)
    for signer in (sign_v2, referee_sign_v2):
        assert "v2=" + signer(key, "POST", "/start", t, rid.group(1), raw) == sig.group(1)
        assert signer(key, "GET", "/", t, get.group(1), b"") == get.group(2)
    assert sign(key, t, raw) == v1.group(1)
    new = rotated.group(1).encode()
    assert grace.group(1) == signatures_value([new, key], "POST", "/start", t, rid.group(1), raw)
    # The secrets are what the arena derives for bot 42, generations 1 and 2, under that key.
    from arena.core.signing import derive_secret

    assert derive_secret(b"example-signing-key", 42, 1) == secret.group(1)
    assert derive_secret(b"example-signing-key", 42, 2) == rotated.group(1)
    # The transition section quotes the version 1 values of the same requests.
    transition = protocol_section("### Transition from version 1", "### The SDK verifies")
    assert sign(key, t, raw) in transition and sign(key, t, b"") in transition

    headers = {TIMESTAMP_HEADER: t, REQUEST_ID_HEADER: rid.group(1),
               SIGNATURES_HEADER: sig.group(1), SIGNATURE_HEADER: v1.group(1)}
    now = int(t) + 10
    # The SDK accepts it at that moment, once; not at /end, not a day later.
    cache = ReplayCache()
    assert signature_ok(key, "POST", "/start", raw, headers.get, replay_cache=cache, now=now)
    assert not signature_ok(key, "POST", "/start", raw, headers.get, replay_cache=cache,
                            now=now)
    assert not signature_ok(key, "POST", "/end", raw, headers.get, now=now)
    assert not signature_ok(key, "POST", "/start", raw, headers.get, now=int(t) + 86_400)

    # And so does the doc's own verifier, copied from the page and run as it stands.
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    scope: dict[str, Any] = {}
    exec(compile(code.group(1), "docs/protocol.md", "exec"), scope)
    verified = scope["verified"]
    assert verified([key], "POST", "/start", raw, headers, now=now)
    assert not verified([key], "POST", "/start", raw, headers, now=now)  # replayed
    assert not verified([key], "POST", "/end", raw, headers, now=now)
    assert not verified([key], "POST", "/start", raw + b" ", dict(headers, **{
        REQUEST_ID_HEADER: "f" * 32}), now=now)
    assert not verified([key], "POST", "/start", raw, headers, now=int(t) + 86_400)
    grace_headers = dict(headers, **{SIGNATURES_HEADER: grace.group(1),
                                     REQUEST_ID_HEADER: "a" * 32})
    assert verified([new], "POST", "/start", raw, grace_headers, now=now) is False  # other id
    assert verified([b"x", key], "GET", "/", b"", {
        TIMESTAMP_HEADER: t, REQUEST_ID_HEADER: get.group(1),
        SIGNATURES_HEADER: "v2=" + get.group(2)}, now=now)
