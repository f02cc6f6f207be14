"""Per-bot request-signing secrets: issued at registration, rotatable, never stored.

Every request the arena sends to a bot (``GET /``, ``/start``, ``/move``, ``/end``, in matches
and in health checks) is signed with the bot's secret (``referee.wire.signing``: version 2,
plus version 1 while ``SIGNATURE_V1`` is on; ``docs/protocol.md``), so a bot can refuse
requests that do not come from the arena, and requests replayed.

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
  the generation and starts a **grace period** (``SIGNING_ROTATION_GRACE_S``, an hour): every
  match and health check that starts within it signs with the new *and* the previous secret
  (two ``v2=`` entries, :func:`signing_for`), so a bot still running with the old
  secret, or restarted with the new one, keeps answering; afterwards only the new one.  The
  database keeps the previous generation and the rotation's time for that.  Version 1
  (``SIGNATURE_V1``) carries one signature, under the new secret: the grace needs version 2.
  A rotation with ``grace: false`` (a leaked secret) ends the old secret at once.  A match
  that has already built its players keeps signing with the secrets it started with until
  it ends.
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
import datetime as dt
import hashlib
import hmac
from dataclasses import dataclass

from flask import Flask

from .models import Bot, utcnow


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


def webhook_secret(app: Flask, webhook_id: int, generation: int) -> str:
    """The signing secret of a webhook (issue 21 §4), derived like a bot's and never stored:
    ``base64url(HMAC-SHA256(key, "webhook:<id>:<generation>"))``.  The ``webhook:`` prefix
    keeps it apart from every bot secret (``bot:``) and owner-token hash under the same key.
    Shown to the owner once, when the webhook is made; the receiver uses its ASCII characters
    as the HMAC key, as a bot does."""
    message = f"webhook:{webhook_id}:{generation}".encode("ascii")
    digest = hmac.new(signing_key(app), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def bot_secret(app: Flask, bot: Bot) -> str:
    """The bot's current signing secret (show it only to its owner, only when issued)."""
    return derive_secret(signing_key(app), bot.id, bot.signing_generation)


def secret_bytes(app: Flask, bot: Bot) -> bytes:
    """The HMAC key the arena signs the bot's requests with: the secret's ASCII bytes."""
    return bot_secret(app, bot).encode("ascii")


def grace_until(app: Flask, bot: Bot) -> dt.datetime | None:
    """When the previous secret stops being signed with, or None when no grace applies (no
    rotation yet, a rotation without grace, or no grace configured)."""
    grace = float(app.config["SIGNING_ROTATION_GRACE_S"])
    if bot.signing_previous_generation is None or bot.signing_rotated_at is None or grace <= 0:
        return None
    return bot.signing_rotated_at + dt.timedelta(seconds=grace)


def in_grace(app: Flask, bot: Bot, now: dt.datetime | None = None) -> dt.datetime | None:
    """:func:`grace_until` while it is still ahead of ``now``, else None."""
    until = grace_until(app, bot)
    return until if until is not None and (now or utcnow()) < until else None


@dataclass(frozen=True, slots=True)
class Signing:
    """How the arena signs one bot's requests: its secrets in force, current first (one
    ``v2=`` entry each), and whether version 1 goes too."""

    secrets: tuple[bytes, ...]
    legacy_v1: bool


def signing_for(app: Flask, bot: Bot, now: dt.datetime | None = None) -> Signing:
    """The secrets in force for ``bot`` at ``now``: the current one, and the previous one
    while a rotation's grace period runs; version 1 as ``SIGNATURE_V1`` says (it carries one
    signature, under the current secret)."""
    key = signing_key(app)
    secrets = [derive_secret(key, bot.id, bot.signing_generation).encode("ascii")]
    previous = bot.signing_previous_generation
    if previous is not None and previous != bot.signing_generation and in_grace(app, bot, now):
        secrets.append(derive_secret(key, bot.id, previous).encode("ascii"))
    return Signing(tuple(secrets), bool(app.config["SIGNATURE_V1"]))


def rotate(app: Flask, bot: Bot, *, grace: bool = True, now: dt.datetime | None = None) -> str:
    """Start a new generation and return its secret (the caller commits).  With ``grace``
    the secret in force until now stays in force beside the new one for
    ``SIGNING_ROTATION_GRACE_S``; without, it stops at once (a leak).  A second rotation
    within a grace period keeps only the secret it replaces: the one before that was never
    meant to outlive the first rotation's grace."""
    current = bot.signing_generation or 1
    bot.signing_previous_generation = current if grace else None
    bot.signing_rotated_at = now or utcnow()
    bot.signing_generation = current + 1
    return bot_secret(app, bot)


__all__ = ["Signing", "bot_secret", "derive_secret", "grace_until", "in_grace", "rotate",
           "secret_bytes", "signing_for", "signing_key", "webhook_secret"]
