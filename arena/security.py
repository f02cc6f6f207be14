"""Owner and admin tokens.

An owner token is 32 random bytes (URL-safe base64), shown once when the bot is created.  The
database keeps only ``HMAC-SHA256(pepper, token)``: the token has 256 bits of entropy, so a
fast keyed hash is as strong as a slow password hash here, and without the pepper (which is
not in the database) a stolen table does not even allow checking guesses.  Comparisons use
:func:`hmac.compare_digest` (constant time).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from flask import current_app, request

TOKEN_BYTES = 32


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def pepper() -> bytes:
    cfg = current_app.config
    return str(cfg["TOKEN_PEPPER"] or cfg["SECRET_KEY"]).encode("utf-8")


def hash_token(token: str, key: bytes | None = None) -> str:
    return hmac.new(key if key is not None else pepper(), token.encode("utf-8"),
                    hashlib.sha256).hexdigest()


def token_matches(token: str | None, stored_hash: str) -> bool:
    if not token:
        return False
    return hmac.compare_digest(hash_token(token).encode("ascii"), stored_hash.encode("ascii"))


def bearer_token() -> str | None:
    """The token of ``Authorization: Bearer <token>``, or None."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def is_admin(token: str | None) -> bool:
    admin = str(current_app.config["ADMIN_TOKEN"] or "")
    if not admin or not token:
        return False
    return hmac.compare_digest(token.encode("utf-8"), admin.encode("utf-8"))
