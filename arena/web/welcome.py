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
says so).
"""

from __future__ import annotations

import json
import secrets

from flask import Flask
from flask import session as cookie_session
from redis.exceptions import RedisError

from arena.core.queue import get_queue

SESSION_KEY = "welcome"
TTL_S = 600
"""How long the token waits for the welcome page (a redirect is followed at once)."""


def _key(app: Flask, bot_id: int, nonce: str) -> str:
    return f"{app.config['QUEUE_NAME']}:welcome:{bot_id}:{nonce}"


def keep(app: Flask, bot_id: int, token: str) -> bool:
    """Keep ``token`` for the welcome page of ``bot_id`` on this browser; False when Redis
    cannot keep it (the caller shows it at once)."""
    nonce = secrets.token_urlsafe(24)
    try:
        get_queue(app).redis.set(_key(app, bot_id, nonce), json.dumps({"token": token}),
                                 ex=TTL_S)
    except RedisError:
        return False
    cookie_session[SESSION_KEY] = {"bot": bot_id, "nonce": nonce}
    return True


def take(app: Flask, bot_id: int) -> str | None:
    """The token kept for ``bot_id``'s welcome page on this browser, once (None after)."""
    held = cookie_session.get(SESSION_KEY)
    if not isinstance(held, dict) or held.get("bot") != bot_id:
        return None
    cookie_session.pop(SESSION_KEY, None)
    nonce = held.get("nonce")
    if not isinstance(nonce, str):
        return None
    try:
        pipe = get_queue(app).redis.pipeline(transaction=True)
        pipe.get(_key(app, bot_id, nonce))
        pipe.delete(_key(app, bot_id, nonce))
        raw, _ = pipe.execute()
    except RedisError:
        return None
    if raw is None:
        return None
    try:
        token = json.loads(raw)["token"]
    except (ValueError, KeyError, TypeError):
        return None
    return token if isinstance(token, str) else None


__all__ = ["SESSION_KEY", "TTL_S", "keep", "take"]
