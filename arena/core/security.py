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
from collections.abc import Mapping
from typing import Any

from flask import Flask, current_app, has_request_context, request
from flask.sessions import SecureCookieSessionInterface

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


def may_read_metrics(token: str | None) -> bool:
    """Whether ``token`` is the ``METRICS_TOKEN`` (Prometheus) or the ``ADMIN_TOKEN``."""
    if not token:
        return False
    wanted = str(current_app.config["METRICS_TOKEN"] or "")
    if wanted and hmac.compare_digest(token.encode("utf-8"), wanted.encode("utf-8")):
        return True
    return is_admin(token)


def is_admin(token: str | None) -> bool:
    admin = str(current_app.config["ADMIN_TOKEN"] or "")
    if not admin or not token:
        return False
    return hmac.compare_digest(token.encode("utf-8"), admin.encode("utf-8"))


# --- refusing weak secrets at start-up -------------------------------------------------------

PLACEHOLDER_MARKS = ("replace-with", "change-me", "changeme", "placeholder", "your-", "secret-key",
                     "example")
"""Substrings of the values people copy from examples (``deploy/arena.env.example`` uses the
first one) and forget to change; a value holding one is refused whatever its length."""

MAKE_ONE = 'python -c "import secrets; print(secrets.token_urlsafe(32))"'


SECRET_SETTINGS = ("SECRET_KEY", "TOKEN_PEPPER", "SIGNING_KEY", "ADMIN_TOKEN", "METRICS_TOKEN")
"""The settings that are secrets (an empty TOKEN_PEPPER or SIGNING_KEY means SECRET_KEY)."""


class InsecureConfigError(RuntimeError):
    """A secret setting is a placeholder or too short: the service refuses to start."""


def secret_problems(config: Mapping[str, Any]) -> list[str]:
    """What is wrong with the :data:`SECRET_SETTINGS` (empty: fine).

    An empty ``ADMIN_TOKEN`` (admin API off), ``TOKEN_PEPPER`` or ``SIGNING_KEY``
    (SECRET_KEY is used) is fine, and an empty ``SECRET_KEY`` has been replaced by a
    generated one before this runs.
    """
    minimum = int(config["MIN_SECRET_LENGTH"])
    problems = []
    for name in SECRET_SETTINGS:
        value = str(config.get(name) or "")
        if not value:
            continue
        lowered = value.lower()
        if any(mark in lowered for mark in PLACEHOLDER_MARKS):
            problems.append(f"{name} is still a placeholder ({value[:12]}...)")
        elif len(value) < minimum:
            problems.append(f"{name} is {len(value)} characters long; it needs at least "
                            f"{minimum}")
    return problems


def refuse_weak_secrets(config: Mapping[str, Any]) -> None:
    """Raise :class:`InsecureConfigError` unless every secret is strong, except under
    ``DEBUG`` or ``TESTING`` (a developer's machine).  ``arena demo`` generates its own."""
    if config.get("DEBUG") or config.get("TESTING"):
        return
    problems = secret_problems(config)
    if problems:
        raise InsecureConfigError(
            "refusing to start: " + "; ".join(problems) + ".  Set each to a long random "
            f"value (make one with: {MAKE_ONE}), in the environment or deploy/.env.")


# --- cookies ---------------------------------------------------------------------------------


class SessionCookies(SecureCookieSessionInterface):
    """Flask's signed-cookie session (it carries only the CSRF token), with ``SameSite``
    from ``COOKIE_SAMESITE`` and ``Secure`` from ``COOKIE_SECURE``: ``auto`` marks the cookie
    ``Secure`` exactly when this request came over HTTPS - directly, or as the trusted proxy
    says in ``X-Forwarded-Proto`` (``TRUSTED_PROXY_HOPS``) - so a browser never sends it back
    over plain HTTP, while a plain-HTTP local demo still works."""

    def get_cookie_secure(self, app: Flask) -> bool:
        mode = str(app.config["COOKIE_SECURE"]).lower()
        if mode == "always":
            return True
        if mode == "never":
            return False
        return has_request_context() and request.is_secure

    def get_cookie_samesite(self, app: Flask) -> str:
        return str(app.config["COOKIE_SAMESITE"])


def check_cookie_settings(config: Mapping[str, Any]) -> None:
    if str(config["COOKIE_SECURE"]).lower() not in ("auto", "always", "never"):
        raise InsecureConfigError("COOKIE_SECURE must be auto, always or never, not "
                                  f"{config['COOKIE_SECURE']!r}")
    if str(config["COOKIE_SAMESITE"]) not in ("Lax", "Strict"):
        raise InsecureConfigError("COOKIE_SAMESITE must be Lax or Strict, not "
                                  f"{config['COOKIE_SAMESITE']!r}")
