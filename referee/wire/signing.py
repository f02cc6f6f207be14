"""Request signing between the arena and a bot: the scheme, both versions, and replay memory.

Why two versions
----------------
Version 1 (``X-BigTwo-Signature: sha256=<hex>``) signs ``timestamp + "." + body`` only.  A
request captured on the way (or logged by a careless proxy) could be sent again within the
bot's clock window, and a captured ``/start`` was also accepted at ``/end``: the method and the
path were not covered and nothing made a request unique.

Version 2 signs the method, the request target, the timestamp and a random request id along
with the body, so a signature is valid for exactly one request to exactly one path, and a bot
that remembers the ids it has accepted (:class:`ReplayCache`) refuses the same request twice::

    X-BigTwo-Timestamp: <unix seconds, decimal integer>
    X-BigTwo-Request-Id: <32 lowercase hex characters, random per request>
    X-BigTwo-Signatures: v2=<hex HMAC-SHA256(secret, message)>[, v2=<hex> ...]

    message = "v2" LF METHOD LF TARGET LF TIMESTAMP LF REQUEST_ID LF BODY

``METHOD`` is upper case (``GET``, ``POST``), ``TARGET`` the request target exactly as it
stands on the request line (path and query, e.g. ``/move`` or ``/bots/7/move?k=x``), ``BODY``
the exact body bytes (empty for ``GET``).  The key is the secret's ASCII characters.

The header is a comma-separated list of ``version=hex`` entries so that the scheme can evolve
without breaking bots: a bot accepts a request when *any* entry of a version it knows verifies
under *any* of its secrets, and ignores versions it does not know.  The arena lists one ``v2``
entry per secret in force: two while a rotated secret's grace period runs, so a bot restarted
with either secret keeps answering.

During the transition the arena also sends the version 1 header, so bots written against it
keep working; bots that know version 2 should verify it and ignore version 1.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets as _secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

__all__ = [
    "LEGACY_V1_DEFAULT",
    "MAX_SKEW_S",
    "REPLAY_CACHE_MAX",
    "REPLAY_WINDOW_S",
    "REQUEST_ID_HEADER",
    "SIGNATURES_HEADER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "ReplayCache",
    "Signer",
    "new_request_id",
    "parse_signatures",
    "sign",
    "sign_v2",
    "signatures_value",
    "update_holding_gil",
    "v2_message",
    "verify_request",
    "verify_signature",
    "verify_v2",
]

TIMESTAMP_HEADER: Final = "X-BigTwo-Timestamp"
"""Unix seconds at sending, a decimal integer (both versions)."""

SIGNATURE_HEADER: Final = "X-BigTwo-Signature"
"""Version 1: ``sha256=<hex HMAC(secret, timestamp + "." + body)>``; sent during the transition."""

REQUEST_ID_HEADER: Final = "X-BigTwo-Request-Id"
"""Version 2: 32 lowercase hex characters, random for every request (retries included)."""

SIGNATURES_HEADER: Final = "X-BigTwo-Signatures"
"""Version 2 onwards: a comma-separated list of ``version=hex`` signatures."""

LEGACY_V1_DEFAULT: Final = True
"""Whether senders (:class:`referee.wire.httpbot.BotClient`, the CLI, the health check) add
the version 1 header by default: on during the transition, so bots written against version 1
keep working.  The arena has its own switch (``SIGNATURE_V1``); docs/protocol.md says when
this default turns off."""

MAX_SKEW_S: Final = 300
"""How far (seconds) a request's timestamp may be from the bot's clock, either way."""

REPLAY_WINDOW_S: Final = 2 * MAX_SKEW_S + 60
"""How long a bot remembers an accepted request id: longer than any timestamp it accepts can
stay acceptable (a request stamped at the edge of the skew on the bot's fast clock), with a
minute to spare."""

REPLAY_CACHE_MAX: Final = 200_000
"""Request ids a :class:`ReplayCache` holds at most (about 30 MB): far above what any bot
receives in ten minutes from the arena (one request per move), and only a request that carries
a valid signature is remembered, so a stranger cannot fill it."""

_REQUEST_ID_LENGTH: Final = 32
_HEX: Final = frozenset("0123456789abcdef")


# --------------------------------------------------------------------------- version 1


def sign(secret: bytes, timestamp: int | str, body: bytes) -> str:
    """The version 1 ``X-BigTwo-Signature`` value for ``body`` sent at ``timestamp``."""
    message = str(timestamp).encode("ascii") + b"." + body
    return "sha256=" + hmac.new(secret, message, hashlib.sha256).hexdigest()


def _timestamp_ok(timestamp: str) -> bool:
    return timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12


def verify_signature(
    secret: bytes,
    timestamp: str,
    body: bytes,
    header: str,
    max_skew_s: float = MAX_SKEW_S,
    *,
    now: float | None = None,
) -> bool:
    """Check version 1 signature headers (bad format, stale timestamp or a wrong signature is
    False).  Kept for bots written against version 1; it cannot detect a replay."""
    if not _timestamp_ok(timestamp):
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > max_skew_s:
        return False
    expected = sign(secret, timestamp, body).encode("ascii")
    return hmac.compare_digest(expected, header.strip().encode("utf-8", "replace"))


# --------------------------------------------------------------------------- version 2


_IDS_PER_DRAW: Final = 64
"""Request ids drawn from the system's random source at once (one ``getrandom`` call, which
releases the GIL, for this many requests instead of one each: a worker signs every move)."""


class _RandomIds(threading.local):
    """Each thread's unused random bytes for request ids (per thread: no lock; emptied in a
    forked child, which must not send its parent's ids)."""

    def __init__(self) -> None:
        self.pool = b""
        self.at = 0
        self.generation = _fork_generation


_fork_generation = 0
_ids = _RandomIds()


def _after_fork_in_child() -> None:
    global _fork_generation
    _fork_generation += 1


os.register_at_fork(after_in_child=_after_fork_in_child)


def new_request_id() -> str:
    """A fresh random request id (128 bits from the system's CSPRNG, lowercase hex)."""
    size = _REQUEST_ID_LENGTH // 2
    ids = _ids
    if ids.at + size > len(ids.pool) or ids.generation != _fork_generation:
        ids.pool = _secrets.token_bytes(size * _IDS_PER_DRAW)
        ids.at, ids.generation = 0, _fork_generation
    start = ids.at
    ids.at = start + size
    return ids.pool[start:start + size].hex()


def request_id_ok(request_id: str) -> bool:
    """Whether ``request_id`` has the form the scheme requires (32 lowercase hex)."""
    return len(request_id) == _REQUEST_ID_LENGTH and set(request_id) <= _HEX


def v2_message(
    method: str, target: str, timestamp: int | str, request_id: str, body: bytes
) -> bytes:
    """The exact bytes a version 2 signature covers."""
    head = f"v2\n{method.upper()}\n{target}\n{timestamp}\n{request_id}\n"
    return head.encode("utf-8") + body


def sign_v2(
    secret: bytes, method: str, target: str, timestamp: int | str, request_id: str, body: bytes
) -> str:
    """The hex HMAC-SHA256 of :func:`v2_message` under ``secret``."""
    message = v2_message(method, target, timestamp, request_id, body)
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def signatures_value(
    secrets: Sequence[bytes],
    method: str,
    target: str,
    timestamp: int | str,
    request_id: str,
    body: bytes,
) -> str:
    """The ``X-BigTwo-Signatures`` value: one ``v2=`` entry per secret, in the order given."""
    return ", ".join(
        "v2=" + sign_v2(key, method, target, timestamp, request_id, body) for key in secrets
    )


UPDATE_PIECE: Final = 2047
"""Longest piece of a message one HMAC ``update`` is given by :func:`update_holding_gil`:
CPython's OpenSSL hashes release the interpreter lock for an update of 2048 bytes or more."""


def update_holding_gil(mac: hmac.HMAC, data: bytes) -> None:
    """``mac.update(data)``, in pieces short enough that the interpreter lock is kept.

    A move request is ~3 KB, and hashing it takes a few microseconds; released for that long,
    the lock goes to one of a pool worker's hundred other threads, and taking it back costs
    this one a wait and a pair of context switches, many times the hashing itself."""
    if len(data) < UPDATE_PIECE:
        mac.update(data)
        return
    view = memoryview(data)
    for at in range(0, len(view), UPDATE_PIECE):
        mac.update(view[at:at + UPDATE_PIECE])


class Signer:
    """:func:`signatures_value` for fixed secrets, with each key's HMAC state computed once:
    a sender signs every request to a bot with the same secrets (the arena's hot path)."""

    __slots__ = ("_macs",)

    def __init__(self, secrets: Sequence[bytes]) -> None:
        self._macs = [hmac.new(key, digestmod=hashlib.sha256) for key in secrets]

    def signatures(
        self, method: str, target: str, timestamp: int | str, request_id: str, body: bytes
    ) -> str:
        """The same value as :func:`signatures_value` with these secrets."""
        head = v2_message(method, target, timestamp, request_id, b"")
        entries = []
        for base in self._macs:
            mac = base.copy()
            mac.update(head)
            update_holding_gil(mac, body)
            entries.append("v2=" + mac.hexdigest())
        return ", ".join(entries)


def parse_signatures(value: str) -> list[tuple[str, str]]:
    """``"v2=ab, v3=cd"`` -> ``[("v2", "ab"), ("v3", "cd")]``; malformed entries are dropped."""
    out: list[tuple[str, str]] = []
    for entry in value.split(","):
        version, sep, digest = entry.strip().partition("=")
        if sep and version and digest:
            out.append((version.strip(), digest.strip()))
    return out


class ReplayCache:
    """The request ids a bot has accepted in the last :data:`REPLAY_WINDOW_S` seconds.

    Thread-safe.  Ids are remembered only after their signature verified, so every entry was
    made by the arena; the oldest are forgotten first once :data:`REPLAY_CACHE_MAX` is reached.
    """

    def __init__(
        self,
        window_s: float = REPLAY_WINDOW_S,
        max_entries: int = REPLAY_CACHE_MAX,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._window = window_s
        self._max = max_entries
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._seen)

    def remember(self, request_id: str) -> bool:
        """Record ``request_id``; False when it was already seen within the window."""
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


def verify_v2(
    secrets: Iterable[bytes],
    method: str,
    target: str,
    body: bytes,
    *,
    timestamp: str | None,
    request_id: str | None,
    signatures: str | None,
    replay_cache: ReplayCache | None,
    now: float | None = None,
    max_skew_s: float = MAX_SKEW_S,
) -> tuple[str, str] | None:
    """Why a request fails version 2 verification, as ``(reason, message)``, or None.

    Reasons: ``signature_missing``, ``bad_timestamp``, ``stale_timestamp``,
    ``bad_request_id``, ``bad_signature``, ``replayed``.  The request id is remembered in
    ``replay_cache`` only once the signature verified.
    """
    missing = [
        name
        for name, value in (
            (TIMESTAMP_HEADER, timestamp),
            (REQUEST_ID_HEADER, request_id),
            (SIGNATURES_HEADER, signatures),
        )
        if not value
    ]
    if missing or timestamp is None or request_id is None or signatures is None:
        return "signature_missing", (
            f"this bot only answers signed requests: {' and '.join(missing)} missing"
        )
    if not _timestamp_ok(timestamp):
        return "bad_timestamp", f"{TIMESTAMP_HEADER} must be unix seconds (a decimal integer)"
    current = time.time() if now is None else now
    skew = current - int(timestamp)
    if abs(skew) > max_skew_s:
        return "stale_timestamp", (
            f"{TIMESTAMP_HEADER} is {abs(skew):.0f} s {'behind' if skew > 0 else 'ahead of'} "
            f"this bot's clock (at most {max_skew_s:.0f} s accepted): a replayed request, or a "
            "clock that needs fixing"
        )
    if not request_id_ok(request_id):
        return "bad_request_id", f"{REQUEST_ID_HEADER} must be 32 lowercase hex characters"
    offered = [digest for version, digest in parse_signatures(signatures) if version == "v2"]
    if not offered:
        return "signature_missing", f"{SIGNATURES_HEADER} has no v2 signature"
    keys = list(secrets)
    if not any(
        hmac.compare_digest(
            sign_v2(key, method, target, timestamp, request_id, body).encode("ascii"),
            digest.encode("utf-8", "replace"),
        )
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


def verify_request(
    secrets: Iterable[bytes],
    method: str,
    target: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    replay_cache: ReplayCache | None = None,
    now: float | None = None,
) -> tuple[str, str] | None:
    """:func:`verify_v2` with the three headers read from ``headers`` as a server received
    them, whatever the case of their names: what a receiver of the arena's webhooks (or a
    bot) calls with its framework's request.  ``(reason, message)``, or None to accept."""
    folded = {name.lower(): value for name, value in headers.items()}
    return verify_v2(
        secrets, method, target, body,
        timestamp=folded.get(TIMESTAMP_HEADER.lower()),
        request_id=folded.get(REQUEST_ID_HEADER.lower()),
        signatures=folded.get(SIGNATURES_HEADER.lower()),
        replay_cache=replay_cache, now=now,
    )
