"""The account signed in on this browser.

As for a bot's owner (:mod:`arena.web.owners`), the session cookie (Flask's, signed with
``SECRET_KEY``; ``HttpOnly``, ``SameSite``, ``Secure`` as
:class:`arena.core.security.SessionCookies` decides) carries a proof, never a secret:
``{"id": account id, "proof": HMAC(SECRET_KEY, "account" : id : password hash)}``.  It is
checked against the account's current password hash on every request, so changing or
resetting the password signs every browser out.  Signing in gives the browser a new CSRF
token (a token planted before sign-in is worth nothing after it); signing out (a CSRF-checked
POST) drops the proof.  A session holding ``account`` is never answered from the shared
response cache (:mod:`arena.web.readcache` caches only sessions holding the CSRF token).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from flask import current_app, g
from flask import session as cookie_session
from sqlalchemy.orm import Session

from arena.core.models import Account

SESSION_KEY = "account"


def _proof(account: Account) -> str:
    key = str(current_app.config["SECRET_KEY"]).encode("utf-8")
    message = f"account:{account.id}:{account.password_hash}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def sign_in(account: Account) -> None:
    cookie_session[SESSION_KEY] = {"id": account.id, "proof": _proof(account)}
    cookie_session["csrf"] = secrets.token_urlsafe(24)
    g.pop("arena_account", None)


def sign_out() -> None:
    cookie_session.pop(SESSION_KEY, None)
    g.pop("arena_account", None)


def current(s: Session) -> Account | None:
    """The account this browser is signed in as (checked once per request), or None."""
    if "arena_account" in g:
        found: Account | None = g.arena_account
        return found
    account = None
    held = cookie_session.get(SESSION_KEY)
    if isinstance(held, dict) and isinstance(held.get("id"), int) \
            and isinstance(held.get("proof"), str):
        row = s.get(Account, held["id"])
        if row is not None and hmac.compare_digest(held["proof"], _proof(row)):
            account = row
    g.arena_account = account
    return account
