"""A bot's owner, signed in on this browser: for the pages only the owner may see.

An owner proves ownership with the owner token shown once at registration (the API takes it
as ``Authorization: Bearer``).  Pasting it into every page would be tiresome, so the bot page
lets the owner sign in once: the token is checked (:func:`arena.core.security.token_matches`) and
the session cookie (Flask's, signed with ``SECRET_KEY``; ``HttpOnly``, ``SameSite``,
``Secure`` as :class:`arena.core.security.SessionCookies` decides) records a proof for that bot,
``HMAC(SECRET_KEY, "owner" : bot id : stored token hash)``.  The proof is checked against
the bot's current token hash on every request, so it names one bot and dies with the token;
the token itself never goes into the cookie.  Signing out (a CSRF-checked POST) drops it.
At most :data:`MAX_BOTS` bots are remembered per browser (the cookie stays small).
"""

from __future__ import annotations

import hashlib
import hmac

from flask import current_app
from flask import session as cookie_session

from arena.core.models import Bot

SESSION_KEY = "owner_of"
MAX_BOTS = 20


def _proof(bot: Bot) -> str:
    key = str(current_app.config["SECRET_KEY"]).encode("utf-8")
    message = f"owner:{bot.id}:{bot.token_hash}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _signed_in() -> dict[str, str]:
    found = cookie_session.get(SESSION_KEY)
    if not isinstance(found, dict):
        return {}
    return {str(k): v for k, v in found.items() if isinstance(v, str)}


def sign_in(bot: Bot) -> None:
    """Remember on this browser that its user owns ``bot`` (the token was checked)."""
    owned = {k: v for k, v in _signed_in().items() if k != str(bot.id)}
    while len(owned) >= MAX_BOTS:
        owned.pop(next(iter(owned)))
    owned[str(bot.id)] = _proof(bot)
    cookie_session[SESSION_KEY] = owned


def sign_out(bot: Bot) -> None:
    owned = _signed_in()
    if owned.pop(str(bot.id), None) is not None:
        cookie_session[SESSION_KEY] = owned


def is_owner(bot: Bot) -> bool:
    """Whether this browser signed in as ``bot``'s owner (with its current token)."""
    sent = _signed_in().get(str(bot.id))
    return sent is not None and hmac.compare_digest(sent, _proof(bot))
