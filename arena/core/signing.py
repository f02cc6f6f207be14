"""Per-bot request-signing secrets: issued at registration, rotatable, never stored.

Every request the arena sends to a bot (``GET /``, ``/start``, ``/move``, ``/end``, in matches
and in health checks) carries ``X-BigTwo-Timestamp`` and ``X-BigTwo-Signature: sha256=<hex
HMAC-SHA256(secret, timestamp + "." + body)>`` (``docs/protocol.md``), so a bot can refuse
requests that do not come from the arena.

The secret of bot ``id`` is *derived*, not stored::

    secret = base64url(HMAC-SHA256(SIGNING_KEY or SECRET_KEY, f"bot:{id}:{generation}"))

and the database keeps only ``Bot.signing_generation``, a counter.  Why this is as safe as
storing the secret encrypted: with encryption at rest, the database holds ciphertext and the
key lives outside it (configuration); a stolen database reveals nothing, a stolen key plus the
database reveals every secret.  Here the database holds ``(id, generation)`` and the key lives
in the same place; a stolen database reveals nothing (HMAC-SHA256 is a PRF: without the key its
outputs are unpredictable even for known inputs), and a stolen key reveals every secret, as
before.  Nothing is lost, and there is no ciphertext to leak, back up or migrate.  The same
holds for the web tier: a secret exists in memory only while a request is being signed or while
it is shown to its owner once.

Consequences, documented in ``docs/operations.md``:

* **Rotating a bot's secret** (the owner, ``POST /api/bots/<id>/signing-secret``) increments
  the generation: the old secret is dead for every request signed from then on.  A match that
  has already built its players keeps signing with the secret it started with until it ends;
  every later match and health check uses the new one.
* **Rotating SIGNING_KEY** (or SECRET_KEY while SIGNING_KEY is empty) changes *every* bot's
  secret at once, and nobody can look the new ones up: each owner must rotate to learn theirs,
  and bots that verify signatures refuse the arena until then.  So set ``SIGNING_KEY`` of its
  own, and rotate it only when it has leaked.
* Domain separation: the message ``bot:<id>:<n>`` cannot collide with the owner-token hashes
  made under the same key when ``TOKEN_PEPPER`` is also empty (tokens are base64url, which has
  no ``:``), nor with Flask's cookie signatures (itsdangerous derives its own key first).

The secret is 43 base64url characters; a bot uses those ASCII characters themselves as the
HMAC key (it does not decode them).
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from flask import Flask

from .models import Bot


def signing_key(app: Flask) -> bytes:
    """The server key bot secrets are derived under (``SIGNING_KEY``, else ``SECRET_KEY``)."""
    cfg = app.config
    key = str(cfg["SIGNING_KEY"] or cfg["SECRET_KEY"])
    if not key:
        raise RuntimeError("SECRET_KEY (or SIGNING_KEY) must be set to sign bot requests")
    return key.encode("utf-8")


def derive_secret(key: bytes, bot_id: int, generation: int) -> str:
    """The signing secret of generation ``generation`` of bot ``bot_id`` under ``key``."""
    digest = hmac.new(key, f"bot:{bot_id}:{generation}".encode("ascii"), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def bot_secret(app: Flask, bot: Bot) -> str:
    """The bot's current signing secret (show it only to its owner, only when issued)."""
    return derive_secret(signing_key(app), bot.id, bot.signing_generation)


def secret_bytes(app: Flask, bot: Bot) -> bytes:
    """The HMAC key the arena signs the bot's requests with: the secret's ASCII bytes."""
    return bot_secret(app, bot).encode("ascii")


def rotate(app: Flask, bot: Bot) -> str:
    """Start a new generation and return its secret (the caller commits)."""
    bot.signing_generation = (bot.signing_generation or 0) + 1
    return bot_secret(app, bot)


__all__ = ["bot_secret", "derive_secret", "rotate", "secret_bytes", "signing_key"]
