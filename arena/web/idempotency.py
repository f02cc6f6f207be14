"""``Idempotency-Key``: a retried creating request gets the first one's response, and nothing
is created twice (migration 0004, table ``idempotency_keys``).

A client that lost a response (timeout, dropped connection) cannot tell whether its bot,
match or tournament was created; a blind retry used to create a second one, or fail with 409
for a bot whose one-time owner token the client never saw.  With a key::

    POST /api/bots
    Idempotency-Key: 6f0c2f1e-...   (1 to 255 visible ASCII characters, e.g. a UUID)

the first request's response (status, body, ``Location``) is stored under the triple
(key, method and path, caller), and:

* a retry with the same key and the same body gets that response again, marked
  ``Idempotent-Replayed: true``, and creates nothing;
* the same key with another body: 422 ``idempotency_key_reused``;
* the same key while the first request still runs: 409 ``idempotency_in_progress`` with
  ``Retry-After`` (the first holds the key for at most ``IDEMPOTENCY_IN_PROGRESS_S``; after
  that it is presumed dead and a retry takes the key over);
* errors (4xx, 5xx) are not stored: they created nothing, and a retry runs again;
* keys are forgotten after ``IDEMPOTENCY_TTL_S``.

**One transaction.**  A view that creates builds its response *before* committing and
commits with :func:`commit` (instead of ``session.commit()``), which writes the stored
response into the same transaction as the rows it describes: either both are committed or
neither, so there is no moment at which a bot exists but its response is lost.  The write is
conditional on the claim this request holds, so if a retry took the key over (the first
request stalled past ``IDEMPOTENCY_IN_PROGRESS_S``) the first request's creation rolls back
instead of making a second row.  A view that commits on its own (the operator's steps, which
commit inside the service) still gets the key; its response is stored right after.

**Secrets.**  The response of ``POST /api/bots`` carries the one-time owner token, so no
stored response is readable from the database: the row is found by
``HMAC(SECRET_KEY, caller | route | key)`` and its response is encrypted (AES-256-GCM) under a
key derived from ``SECRET_KEY`` *and the Idempotency-Key itself*, which is never stored.  Only
the client holding the key (and the server's secret) can get the response back.

**Whose key, and who gets the secrets back.**  A key is scoped to its caller:

* with a bearer token, a hash of the token (only its holder can send it);
* without one, with a key the service issued (:func:`issue_key`, ``POST
  /api/idempotency-keys``: random, and signed with ``SECRET_KEY`` so it cannot be made up),
  the key itself: only the client it was given to holds it, whatever address it retries from;
* without either, the client (:func:`arena.core.clients.client_key`: an IPv4 address or an
  IPv6 /64).  Many people can share one address (a NAT, a campus, a phone network) and a key
  of their own making can be the same as another's (a constant, a hash of the body, a key
  copied from the docs), so such a key proves nothing about *who* retries: a replay to such
  a caller still creates nothing, but carries none of the answer's secrets (the fields the
  view declares with ``@idempotent(secrets=...)``, e.g. the one-time owner token and the
  signing secret), which are ``null`` in it and named in ``Idempotent-Secrets-Withheld``.
  A replayed creation thus hands a secret only to the request that created it, or to the
  holder of the same bearer token or issued key.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from flask import Response, current_app, g, request
from sqlalchemy import Integer, LargeBinary, String, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from arena.core.clients import client_key
from arena.core.models import Base, utcnow
from arena.core.security import bearer_token
from arena.core.storage import end_request_transaction, get_db

from .errors import ApiError, BodyError, parse_json

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

HEADER = "Idempotency-Key"
IDEMPOTENT_MARK = "_arena_idempotent"
SECRETS_MARK = "_arena_idempotent_secrets"
"""The fields a view declared secret (:func:`idempotent`)."""
"""Set on the views that honour the header (the OpenAPI document names it for them)."""
KEY_RE = re.compile(r"^[\x21-\x7e]{1,255}$")
ISSUED_PREFIX = "ik1."
"""Start of a key the service issued (:func:`issue_key`): ``ik1.<random>.<signature>``."""
WITHHELD_HEADER = "Idempotent-Secrets-Withheld"
KEPT_HEADERS = ("Content-Type", "Location", "Cache-Control")
PURGE_BATCH = 100


class IdempotencyKey(Base):
    """One Idempotency-Key of one caller on one route: ``running`` while its first request
    runs (held by ``claim`` until ``locked_until``), then ``done`` with the response."""

    __tablename__ = "idempotency_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    """HMAC-SHA256(SECRET_KEY, caller, route, key), hex: the key itself is never stored."""
    route: Mapped[str] = mapped_column(String(200))
    """Method and path (``POST /api/bots``), for the operator's eyes."""
    fingerprint: Mapped[str] = mapped_column(String(64))
    """HMAC of the request body (canonical JSON), to refuse the key with another body."""
    state: Mapped[str] = mapped_column(String(16))
    claim: Mapped[str] = mapped_column(String(32))
    locked_until: Mapped[dt.datetime] = mapped_column()
    status: Mapped[int | None] = mapped_column(Integer, default=None)
    response: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    """12-byte nonce + AES-GCM ciphertext of the stored response."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(index=True)


@dataclass
class Claim:
    row_id: int
    token: str
    key_hash: str
    cipher_key: bytes
    recorded: bool = False


# --- keys, fingerprints, encryption ----------------------------------------------------------


def _secret() -> bytes:
    return str(current_app.config["SECRET_KEY"]).encode("utf-8")


def _mac(*parts: str | bytes) -> bytes:
    msg = b"\x00".join(p.encode("utf-8") if isinstance(p, str) else p for p in parts)
    return hmac.new(_secret(), msg, hashlib.sha256).digest()


def issue_key() -> str:
    """A key for an anonymous client: 144 random bits, signed with ``SECRET_KEY`` (nothing is
    stored; :func:`is_issued` checks the signature)."""
    nonce = secrets.token_urlsafe(18)
    return f"{ISSUED_PREFIX}{nonce}.{_issued_signature(nonce)}"


def _issued_signature(nonce: str) -> str:
    return base64.urlsafe_b64encode(_mac("issued-key", nonce)[:18]).decode("ascii")


def is_issued(key: str) -> bool:
    """Whether ``key`` is one :func:`issue_key` made (with this ``SECRET_KEY``)."""
    if not key.startswith(ISSUED_PREFIX):
        return False
    nonce, dot, signature = key[len(ISSUED_PREFIX):].partition(".")
    return bool(dot) and hmac.compare_digest(signature, _issued_signature(nonce))


def caller(key: str) -> tuple[str, bool]:
    """Whose key it is, and whether that proves the retry comes from the first request's
    client (see the module docstring): a hash of the bearer token, an issued key, else the
    client's address (which proves nothing)."""
    token = bearer_token()
    if token is not None:
        return "token:" + hashlib.sha256(token.encode("utf-8")).hexdigest(), True
    if is_issued(key):
        return "issued", True
    return "client:" + client_key(request.remote_addr), False


def fingerprint() -> str:
    """The request's body (canonical when it is JSON, so key order does not matter)."""
    raw = request.get_data(cache=True)
    try:
        body = json.dumps(parse_json(raw, int(current_app.config["MAX_JSON_DEPTH"])),
                          sort_keys=True, separators=(",", ":")).encode("utf-8")
    except BodyError:
        body = raw
    return _mac("fingerprint", request.query_string, body).hex()


def _seal(cipher_key: bytes, aad: str, resp: Response) -> bytes:
    doc = {"status": resp.status_code,
           "headers": {h: resp.headers[h] for h in KEPT_HEADERS if h in resp.headers},
           "body": base64.b64encode(resp.get_data()).decode("ascii")}
    nonce = os.urandom(12)
    return nonce + AESGCM(cipher_key).encrypt(nonce, json.dumps(doc).encode(), aad.encode())


def _open(cipher_key: bytes, aad: str, sealed: bytes, withhold: tuple[str, ...]) -> Response:
    """The stored response, replayed; the fields named in ``withhold`` (the view's secrets,
    for a caller that does not prove it is the first request's) are ``null`` in it."""
    doc = json.loads(AESGCM(cipher_key).decrypt(sealed[:12], sealed[12:], aad.encode()))
    body = base64.b64decode(doc["body"])
    withheld: list[str] = []
    if withhold:
        answer = json.loads(body)
        if isinstance(answer, dict):
            withheld = [name for name in withhold if answer.get(name) is not None]
            answer.update(dict.fromkeys(withheld))
            answer["secrets_withheld"] = withheld
            body = json.dumps(answer).encode("utf-8")
    resp = Response(body, status=int(doc["status"]))
    for name, value in doc["headers"].items():
        resp.headers[name] = value
    resp.headers["Idempotent-Replayed"] = "true"
    if withheld:
        resp.headers[WITHHELD_HEADER] = ", ".join(withheld)
    return resp


# --- claiming a key --------------------------------------------------------------------------


def _purge_expired(s: Session, now: dt.datetime) -> None:
    expired = (select(IdempotencyKey.id).where(IdempotencyKey.expires_at <= now)
               .order_by(IdempotencyKey.id).limit(PURGE_BATCH)
               .with_for_update(skip_locked=True))
    s.execute(delete(IdempotencyKey).where(IdempotencyKey.id.in_(expired)))


def _claim(key_hash: str, route: str, fp: str, cipher_key: bytes,
           withhold: tuple[str, ...] = ()) -> Claim | Response:
    """Take the key for this request, or say why not (a replay, without the fields named
    in ``withhold``; 409; 422)."""
    cfg = current_app.config
    db = get_db()
    end_request_transaction()  # nothing of the request may hold a lock meanwhile (SQLite)
    for _ in range(3):  # a concurrent first insert makes us read again
        now = utcnow()
        token = secrets.token_hex(16)
        lock = now + dt.timedelta(seconds=float(cfg["IDEMPOTENCY_IN_PROGRESS_S"]))
        try:
            with db.begin() as s:
                _purge_expired(s, now)
                row = s.scalars(select(IdempotencyKey)
                                .where(IdempotencyKey.key_hash == key_hash)).first()
                if row is None:
                    row = IdempotencyKey(
                        key_hash=key_hash, route=route, fingerprint=fp, state="running",
                        claim=token, locked_until=lock, created_at=now,
                        expires_at=now + dt.timedelta(seconds=float(cfg["IDEMPOTENCY_TTL_S"])))
                    s.add(row)
                    s.flush()
                    return Claim(row.id, token, key_hash, cipher_key)
                if not hmac.compare_digest(row.fingerprint, fp):
                    raise ApiError(422, "idempotency_key_reused",
                                   f"this {HEADER} was used with another request body; "
                                   "use a new key for a new request")
                if row.state == "done" and row.response is not None:
                    try:
                        return _open(cipher_key, key_hash, row.response, withhold)
                    except (InvalidTag, ValueError, KeyError):
                        log.exception("idempotency: stored response %s unreadable", row.id)
                        raise ApiError(409, "idempotency_unreadable",
                                       "the stored response for this key cannot be read; "
                                       "use a new key") from None
                if row.locked_until > now:
                    raise ApiError(409, "idempotency_in_progress",
                                   f"a request with this {HEADER} is still running; retry "
                                   "in a moment", retry_after=1)
                # The first request outlived its hold: it is dead (or will roll back).
                took = s.execute(update(IdempotencyKey)
                                 .where(IdempotencyKey.id == row.id,
                                        IdempotencyKey.claim == row.claim)
                                 .values(claim=token, locked_until=lock))
                if took.rowcount == 1:  # type: ignore[attr-defined]
                    return Claim(row.id, token, key_hash, cipher_key)
        except IntegrityError:
            continue
    raise ApiError(409, "idempotency_in_progress",
                   f"a request with this {HEADER} is still running; retry in a moment",
                   retry_after=1)


def _release(claim: Claim) -> None:
    """The request failed: forget the key so that a retry runs again (at once: the request's
    own transaction ends first, or on SQLite this would wait on its lock)."""
    try:
        end_request_transaction()
        with get_db().begin() as s:
            s.execute(delete(IdempotencyKey).where(IdempotencyKey.id == claim.row_id,
                                                   IdempotencyKey.claim == claim.token,
                                                   IdempotencyKey.state == "running"))
    except Exception:  # the hold expires by itself
        log.exception("idempotency: could not release key %s", claim.row_id)


def _store(s: Session, claim: Claim, resp: Response) -> bool:
    done = s.execute(update(IdempotencyKey)
                     .where(IdempotencyKey.id == claim.row_id,
                            IdempotencyKey.claim == claim.token)
                     .values(state="done", status=resp.status_code,
                             response=_seal(claim.cipher_key, claim.key_hash, resp)))
    return bool(done.rowcount == 1)  # type: ignore[attr-defined]


# --- the two things views use ----------------------------------------------------------------


def commit(s: Session, resp: Response) -> Response:
    """Commit the view's transaction, with the response stored in it when the request came
    with an ``Idempotency-Key`` (and succeeded).  May be called again after later steps: the
    stored response is then the newest one committed."""
    claim: Claim | None = g.get("arena_idempotency")
    if claim is not None and 200 <= resp.status_code < 300:
        if not _store(s, claim, resp):
            s.rollback()
            raise ApiError(409, "idempotency_in_progress",
                           f"another request took this {HEADER} over; retry to get its "
                           "response", retry_after=1)
        claim.recorded = True
    s.commit()
    return resp


@overload
def idempotent(view: F) -> F: ...


@overload
def idempotent(*, secrets: tuple[str, ...]) -> Callable[[F], F]: ...


def idempotent(view: F | None = None, *,
               secrets: tuple[str, ...] = ()) -> F | Callable[[F], F]:
    """Honour ``Idempotency-Key`` on a creating view (see the module docstring); as
    ``@idempotent`` or ``@idempotent(secrets=("token", ...))``, naming the top-level fields of
    the view's JSON answer that a replay gives only to a caller who proves it is the first
    request's (a bearer token, an issued key)."""
    declared = secrets

    def wrap(v: F) -> F:
        return _idempotent(v, declared)

    return wrap if view is None else wrap(view)


def _idempotent(view: F, secret_fields: tuple[str, ...]) -> F:
    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        raw = request.headers.get(HEADER)
        if raw is None:
            return view(*args, **kwargs)
        if not KEY_RE.match(raw):
            raise ApiError(400, "bad_idempotency_key",
                           f"{HEADER} must be 1 to 255 visible ASCII characters (a UUID, say)")
        route = f"{request.method} {request.path}"
        who, proven = caller(raw)
        key_hash = _mac("lookup", who, route, raw).hex()
        cipher_key = _mac("encrypt", who, route, raw)
        claimed = _claim(key_hash, route, fingerprint(), cipher_key,
                         () if proven else secret_fields)
        if isinstance(claimed, Response):
            return claimed
        g.arena_idempotency = claimed
        try:
            resp = current_app.make_response(view(*args, **kwargs))
        except BaseException:
            _release(claimed)
            raise
        finally:
            g.pop("arena_idempotency", None)
        if not 200 <= resp.status_code < 300:
            _release(claimed)
        elif not claimed.recorded:
            # The view committed on its own: store the response right after (the view's
            # session may still hold a transaction, for its reads: end it first).
            end_request_transaction()
            with get_db().begin() as s:
                _store(s, claimed, resp)
        return resp

    wrapper.__dict__[IDEMPOTENT_MARK] = True
    wrapper.__dict__[SECRETS_MARK] = secret_fields
    return wrapper  # type: ignore[return-value]
