"""Request signing, version 2: what a signature binds, and how a bot refuses a replay."""

from __future__ import annotations

import hashlib
import hmac
import os
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from referee.wire.httpbot import BotClient
from referee.wire.signing import (
    REPLAY_WINDOW_S,
    ReplayCache,
    Signer,
    new_request_id,
    parse_signatures,
    request_id_ok,
    sign_v2,
    signatures_value,
    v2_message,
    verify_v2,
)

SECRET = b"DUFLI6Ma1-aOxJAagp3Dx2p5GZP-eHP3rd-qtiO6fDs"
BODY = b'{"protocol":1,"type":"start","match_id":"1234","seat":2}'
TS = "1767225600"
RID = "0123456789abcdef0123456789abcdef"


def test_the_worked_example_byte_for_byte() -> None:
    """The vector docs/protocol.md gives (also checkable with openssl)."""
    assert v2_message("POST", "/start", TS, RID, BODY) == (
        b"v2\nPOST\n/start\n1767225600\n0123456789abcdef0123456789abcdef\n" + BODY
    )
    assert (
        sign_v2(SECRET, "POST", "/start", TS, RID, BODY)
        == "f838a5484c04f5eec5692a45b07b3abf2942496bd4313ec1a05f1286e34c976b"
    )
    assert (
        sign_v2(SECRET, "GET", "/", TS, "fedcba9876543210fedcba9876543210", b"")
        == "9138c1b7c5c46d7a3588a027b26c054e0e76e353ac488664cf60697a22de66e8"
    )


def check(
    method: str = "POST",
    target: str = "/start",
    body: bytes = BODY,
    *,
    secrets: tuple[bytes, ...] = (SECRET,),
    signed: tuple[str, str, bytes] = ("POST", "/start", BODY),
    timestamp: str | None = TS,
    request_id: str | None = RID,
    cache: ReplayCache | None = None,
    now: float = float(TS),
    header: str | None = None,
) -> str | None:
    m, t, b = signed
    if header is None:
        header = signatures_value([SECRET], m, t, TS, RID, b)
    problem = verify_v2(
        secrets,
        method,
        target,
        body,
        timestamp=timestamp,
        request_id=request_id,
        signatures=header,
        replay_cache=cache,
        now=now,
    )
    return None if problem is None else problem[0]


def test_a_signature_is_valid_for_one_method_one_path_one_body() -> None:
    assert check() is None
    assert check(target="/end") == "bad_signature"  # a captured /start sent to /end
    assert check(method="GET") == "bad_signature"
    assert check(body=BODY + b" ") == "bad_signature"
    assert check(secrets=(b"another secret",)) == "bad_signature"
    assert check(request_id="f" * 32) == "bad_signature"  # the id is covered too


def test_the_same_request_is_accepted_once() -> None:
    cache = ReplayCache()
    assert check(cache=cache) is None
    assert check(cache=cache) == "replayed"
    assert check(cache=cache, target="/end") == "bad_signature"


def test_an_id_is_remembered_only_after_its_signature_verified() -> None:
    """A stranger's forged request must not burn the arena's next id."""
    cache = ReplayCache()
    assert check(cache=cache, secrets=(b"wrong",)) == "bad_signature"
    assert len(cache) == 0
    assert check(cache=cache) is None


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"timestamp": None}, "signature_missing"),
        ({"request_id": None}, "signature_missing"),
        ({"header": ""}, "signature_missing"),
        ({"header": "v9=abc"}, "signature_missing"),
        ({"timestamp": "17e8"}, "bad_timestamp"),
        ({"timestamp": "-1"}, "bad_timestamp"),
        ({"now": float(TS) + 301}, "stale_timestamp"),
        ({"now": float(TS) - 301}, "stale_timestamp"),
        ({"request_id": RID.upper()}, "bad_request_id"),
        ({"request_id": RID[:-1]}, "bad_request_id"),
    ],
)
def test_each_refusal_names_its_reason(kwargs: dict[str, object], reason: str) -> None:
    assert check(**kwargs) == reason  # type: ignore[arg-type]


def test_the_edge_of_the_clock_window_is_accepted() -> None:
    assert check(now=float(TS) + 300) is None
    assert check(now=float(TS) - 300) is None


def test_any_listed_signature_under_any_secret_verifies() -> None:
    """During a rotation's grace the arena lists one v2 entry per secret; a bot may hold
    either secret, and unknown versions are ignored."""
    old, new = b"old-secret", b"new-secret"
    both = signatures_value([new, old], "POST", "/start", TS, RID, BODY)
    assert parse_signatures(both)[0][0] == "v2" and len(parse_signatures(both)) == 2
    assert check(secrets=(old,), header=both) is None
    assert check(secrets=(new,), header=both) is None
    assert check(secrets=(b"third",), header=both) == "bad_signature"
    future = "v3=deadbeef, " + signatures_value([SECRET], "POST", "/start", TS, RID, BODY)
    assert check(header=future) is None


def test_parse_signatures_drops_malformed_entries() -> None:
    assert parse_signatures(" v2=ab ,junk, =cd, v3=, v4=ef") == [("v2", "ab"), ("v4", "ef")]


def test_request_ids_are_fresh_and_well_formed() -> None:
    ids = {new_request_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(request_id_ok(i) for i in ids)


def test_request_ids_differ_between_threads_and_after_a_fork() -> None:
    """Ids are drawn in batches per thread: no two threads, and no forked child and its
    parent, may hand out the same ones."""
    new_request_id()  # this thread's batch is drawn
    seen: list[str] = []
    threads = [threading.Thread(target=lambda: seen.extend(new_request_id() for _ in range(100)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        try:
            os.write(write, " ".join(new_request_id() for _ in range(10)).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        child = f.read().split()
    parent = [new_request_id() for _ in range(10)]
    everything = seen + child + parent
    assert len(child) == 10 and len(set(everything)) == len(everything) == 420


def test_the_cache_forgets_after_its_window_and_beyond_its_size() -> None:
    clock = [0.0]
    cache = ReplayCache(clock=lambda: clock[0])
    assert cache.remember("a")
    clock[0] = REPLAY_WINDOW_S
    assert not cache.remember("a")
    clock[0] = REPLAY_WINDOW_S * 2 + 1
    assert cache.remember("a")  # "a" was forgotten (its timestamp is stale by now anyway)

    small = ReplayCache(max_entries=3, clock=lambda: 0.0)
    for rid in "wxyz":
        assert small.remember(rid)
    assert len(small) == 3
    assert small.remember("w")  # the oldest went first
    assert not small.remember("z")


def test_the_cache_accepts_an_id_once_across_threads() -> None:
    cache = ReplayCache()
    wins: list[bool] = []
    barrier = threading.Barrier(16)

    def race() -> None:
        barrier.wait()
        wins.append(cache.remember("same"))

    threads = [threading.Thread(target=race) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins.count(True) == 1


@given(
    method=st.sampled_from(["GET", "POST"]),
    target=st.text(alphabet="/abcdefgh?=&0123456789", min_size=1, max_size=30),
    body=st.binary(max_size=200),
    other=st.text(alphabet="/abcdefgh?=&0123456789", min_size=1, max_size=30),
)
def test_changing_the_target_breaks_the_signature(
    method: str, target: str, body: bytes, other: str
) -> None:
    header = signatures_value([SECRET], method, target, TS, RID, body)
    ok = verify_v2(
        [SECRET], method, target, body,
        timestamp=TS, request_id=RID, signatures=header, replay_cache=None, now=float(TS),
    )
    assert ok is None
    moved = verify_v2(
        [SECRET], method, other, body,
        timestamp=TS, request_id=RID, signatures=header, replay_cache=None, now=float(TS),
    )
    assert (moved is None) == (other == target)


@given(
    secrets=st.lists(st.binary(min_size=1, max_size=64), min_size=1, max_size=3),
    method=st.sampled_from(["GET", "POST", "post"]),
    target=st.text(alphabet="/abc?=&%09", max_size=30),
    body=st.binary(max_size=300),
)
def test_the_signer_signs_exactly_as_the_scheme(secrets: list[bytes], method: str,
                                                 target: str, body: bytes) -> None:
    """The sender's precomputed-key signer gives the same bytes as the specification."""
    assert Signer(secrets).signatures(method, target, TS, RID, body) == signatures_value(
        secrets, method, target, TS, RID, body)


@pytest.mark.parametrize("size", [0, 1, 2046, 2047, 2048, 4094, 4095, 3000, 20000])
def test_the_signer_signs_a_long_body_in_pieces_exactly_as_the_scheme(size: int) -> None:
    """Bodies around and past the piece the hashes are fed (update_holding_gil: 2047
    bytes, so the interpreter lock is kept) sign as the specification does, in both
    versions."""
    from referee.wire.signing import UPDATE_PIECE, sign, update_holding_gil

    assert UPDATE_PIECE < 2048
    body = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert Signer([SECRET, b"old"]).signatures("POST", "/move", TS, RID, body) == (
        signatures_value([SECRET, b"old"], "POST", "/move", TS, RID, body))
    mac = hmac.new(SECRET, digestmod=hashlib.sha256)
    update_holding_gil(mac, body)
    assert mac.hexdigest() == hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    wire = BotClient("http://127.0.0.1:9/", secret=SECRET, legacy_v1=True)._request(
        "POST", "/move", body).wire
    head = dict(line.split(": ", 1) for line in
                wire.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")[1:])
    assert head["X-BigTwo-Signature"] == sign(SECRET, head["X-BigTwo-Timestamp"], body)


def test_verify_request_reads_the_headers_whatever_their_case() -> None:
    """What a webhook receiver (or a bot) calls with its framework's headers."""
    from referee.wire.signing import verify_request

    sig = signatures_value([SECRET], "POST", "/hooks?k=1", TS, RID, BODY)
    for names in (("X-BigTwo-Timestamp", "X-BigTwo-Request-Id", "X-BigTwo-Signatures"),
                  ("x-bigtwo-timestamp", "x-bigtwo-request-id", "x-bigtwo-signatures")):
        headers = dict(zip(names, (TS, RID, sig), strict=True))
        assert verify_request([SECRET], "POST", "/hooks?k=1", BODY, headers,
                              now=float(TS)) is None
        refusal = verify_request([SECRET], "POST", "/hooks", BODY, headers, now=float(TS))
        assert refusal is not None and refusal[0] == "bad_signature"
    refusal = verify_request([SECRET], "POST", "/hooks", BODY, {}, now=float(TS))
    assert refusal is not None and refusal[0] == "signature_missing"
