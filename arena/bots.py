"""Bots: submission, URL changes (new versions), health checks and the health state machine.

Health: every check is stored (:class:`~arena.models.HealthCheck`).  A passing check clears
the failure count and, if the sweep had paused the bot, returns it to the ladder; a failing
one counts, and ``HEALTH_FAILURES_TO_PAUSE`` failures in a row pause it (``unhealthy``).
"""

from __future__ import annotations

import re

from flask import Flask
from sqlalchemy.orm import Session

from referee.health import HealthResult, health_check
from referee.netguard import GuardError, NetPolicy, check_url

from .models import Bot, BotVersion, HealthCheck, utcnow

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def policy(app: Flask) -> NetPolicy:
    return NetPolicy(allow_private=bool(app.config["ALLOW_PRIVATE_BOT_URLS"]))


def name_problem(name: str, max_len: int) -> str | None:
    if not 1 <= len(name) <= max_len:
        return f"name must be 1 to {max_len} characters"
    if not NAME_RE.match(name):
        return "name may hold letters, digits, '_', '.' and '-' and must start with a " \
               "letter or digit"
    return None


def url_problem(app: Flask, url: str) -> str | None:
    """Why the SSRF guard refuses the URL's spelling or literal address (None: fine)."""
    max_len = int(app.config["BOT_URL_MAX"])
    if not 1 <= len(url) <= max_len:
        return f"url must be 1 to {max_len} characters"
    try:
        check_url(url, policy(app))
    except GuardError as exc:
        return f"url refused: {exc}"
    return None


def run_health_check(app: Flask, url: str, *, secret: bytes | None = None) -> HealthResult:
    """Check ``url``; ``secret`` (the bot's, :func:`arena.signing.secret_bytes`) signs the
    requests.  The reason is already scrubbed of the URL (``referee.redact``)."""
    return health_check(
        url,
        policy(app),
        secret=secret,
        deadline_ms=int(app.config["HEALTH_DEADLINE_MS"]),
        describe_deadline_ms=int(app.config["HEALTH_DESCRIBE_DEADLINE_MS"]),
    )


def record_health(app: Flask, s: Session, bot: Bot, result: HealthResult) -> None:
    now = utcnow()
    s.add(HealthCheck(bot_id=bot.id, at=now, url=bot.url, ok=result.ok, reason=result.reason,
                      describe_ms=result.describe_ms, move_ms=result.move_ms))
    bot.last_health_at = now
    bot.last_health_reason = result.reason
    if result.ok:
        bot.health_failures = 0
        if bot.health_paused:
            bot.health_paused = False
            bot.idle_since = now
        if result.info is not None:
            bot.info = dict(result.info)
    else:
        bot.health_failures += 1
        if bot.health_failures >= int(app.config["HEALTH_FAILURES_TO_PAUSE"]):
            bot.health_paused = True


def create_bot(s: Session, *, name: str, url: str, token_hash: str,
               result: HealthResult) -> Bot:
    now = utcnow()
    info = dict(result.info or {})
    bot = Bot(name=name, url=url, version=1, token_hash=token_hash, created_at=now,
              updated_at=now, idle_since=now, info=info, owner_paused=False,
              health_paused=False, health_failures=0, last_health_at=now,
              last_health_reason="")
    s.add(bot)
    s.flush()
    s.add(BotVersion(bot_id=bot.id, version=1, url=url, created_at=now, info=info))
    s.add(HealthCheck(bot_id=bot.id, at=now, url=url, ok=True, reason="",
                      describe_ms=result.describe_ms, move_ms=result.move_ms))
    return bot


def new_version(s: Session, bot: Bot, url: str, result: HealthResult) -> BotVersion:
    now = utcnow()
    info = dict(result.info or {})
    bot.version += 1
    bot.url = url
    bot.info = info
    bot.updated_at = now
    bot.health_failures = 0
    bot.health_paused = False
    bot.last_health_at = now
    bot.last_health_reason = ""
    version = BotVersion(bot_id=bot.id, version=bot.version, url=url, created_at=now,
                         info=info)
    s.add(version)
    s.add(HealthCheck(bot_id=bot.id, at=now, url=url, ok=True, reason="",
                      describe_ms=result.describe_ms, move_ms=result.move_ms))
    return version
