"""The welcome page's one read: a new bot's owner token, shown once, after a redirect.

The web form's ``POST /bots/new`` answers with a redirect (303) to ``/bots/<id>/welcome``,
so reloading the welcome page does not post the form again (which read like a failure: the
browser's "resubmit?" dialog, then "a bot called ... exists already").  The token must still
be shown exactly once, and never travel in a URL (browser history, ``Referer``, proxy logs)
or sit in the session cookie (Flask's cookie is signed, not encrypted: :mod:`arena.web.owners`
keeps tokens out of it too).  So the POST keeps it in Redis under a random name for
:data:`TTL_S` seconds, and puts only that name in the session; the welcome page takes it
(read and delete in one transaction) and shows it.  A reload finds nothing and says the token
was shown already.  Without Redis the form shows the page at once, as before (:func:`keep`
says so).  :func:`keep_once` and :func:`take_once` do the same for any other secret a form
creates (a webhook's signing secret on ``/account/webhooks``).
"""

from __future__ import annotations

import json
import secrets

from flask import Flask
from flask import session as cookie_session
from redis.exceptions import RedisError

from arena.core.queue import get_queue
from arena.core.rediskeys import redis_key

SESSION_KEY = "welcome"
TTL_S = 600
"""How long the token waits for the welcome page (a redirect is followed at once)."""


def _key(app: Flask, what: str, ident: int, nonce: str) -> str:
    return redis_key(app.config, what, str(ident), nonce)


def _session_key(what: str) -> str:
    return SESSION_KEY if what == "welcome" else f"once:{what}"


def keep_once(app: Flask, what: str, ident: int, value: str) -> bool:
    """Keep ``value`` (a secret shown once) for the next page about ``what`` ``ident`` on this
    browser; False when Redis cannot keep it (the caller shows it at once)."""
    nonce = secrets.token_urlsafe(24)
    try:
        get_queue(app).redis.set(_key(app, what, ident, nonce), json.dumps({"value": value}),
                                 ex=TTL_S)
    except RedisError:
        return False
    cookie_session[_session_key(what)] = {"id": ident, "nonce": nonce}
    return True


def take_once(app: Flask, what: str, ident: int) -> str | None:
    """What :func:`keep_once` kept for ``what`` ``ident`` on this browser, once (None after)."""
    held = cookie_session.get(_session_key(what))
    if not isinstance(held, dict) or held.get("id") != ident:
        return None
    cookie_session.pop(_session_key(what), None)
    nonce = held.get("nonce")
    if not isinstance(nonce, str):
        return None
    try:
        pipe = get_queue(app).redis.pipeline(transaction=True)
        pipe.get(_key(app, what, ident, nonce))
        pipe.delete(_key(app, what, ident, nonce))
        raw, _ = pipe.execute()
    except RedisError:
        return None
    if raw is None:
        return None
    try:
        value = json.loads(raw)["value"]
    except (ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, str) else None


def keep(app: Flask, bot_id: int, token: str) -> bool:
    """Keep ``token`` for the welcome page of ``bot_id`` on this browser."""
    return keep_once(app, "welcome", bot_id, token)


def take(app: Flask, bot_id: int) -> str | None:
    """The token kept for ``bot_id``'s welcome page on this browser, once (None after)."""
    return take_once(app, "welcome", bot_id)


__all__ = ["SESSION_KEY", "TTL_S", "keep", "keep_once", "take", "take_once"]
