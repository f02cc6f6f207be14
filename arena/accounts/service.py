"""The rules of owner accounts.

Usernames
    3-32 letters, digits, ``_``, ``.``, ``-``, starting with a letter or digit; unique
    whatever the case (``Account.username_key``).
Passwords
    ``PASSWORD_MIN``-``PASSWORD_MAX`` characters, not the username; hashed with argon2id
    (:mod:`.passwords`).  There is no e-mail reset: the operator prints a one-time reset link
    (:func:`start_reset`, ``arena account reset-password``) after checking who asks, by a
    channel of their own (docs/operations.md, "Account recovery").
Sign-in and its delay
    Each wrong password from a client (:func:`arena.web.limits.client_key`) for an account is
    counted (``SignInDelay``); past ``SIGN_IN_FREE_FAILURES`` that client must wait 1 s, 2 s,
    4 s, ... (at most ``SIGN_IN_MAX_DELAY_S``) before its next attempt on that account, and
    the attempt is refused unchecked until then.  Other clients are not slowed: guessing from
    one address gets slow fast, and nobody can lock the owner out.  A right password clears
    the client's count.  The per-address rate limit (``RATE_LIMIT_SIGN_IN_PER_CLIENT``) bounds
    the attempts on all accounts together.
API tokens
    Named, scoped (:data:`SCOPES`), shown once, stored as ``HMAC(pepper, token)``, prefixed
    :data:`TOKEN_PREFIX` (so a script's token is recognisable, and a leaked one findable by
    secret scanners).  A revoked token fails on the very next request: every use reads its row.
Bots
    A bot belongs to at most one account (``Bot.account_id``).  An account adopts a bot it
    does not own by proving the bot's owner token once; the owner token keeps working.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from flask import Flask
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena.core.models import (
    TOKEN_NAME_MAX,
    USERNAME_MAX,
    Account,
    AccountToken,
    Bot,
    SignInDelay,
    utcnow,
)
from arena.core.security import hash_token, new_token, token_matches

from . import passwords

USERNAME_RE = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{2,{USERNAME_MAX - 1}}}")
EMAIL_RE = re.compile(r"[^@\s]{1,64}@[^@\s]{1,189}")
TOKEN_PREFIX = "bta_"
SCOPES = {
    "bots:read": "read the account's bots as their owner: private URLs, last calls, versions",
    "bots:write": "change, pause, re-check, delete the account's bots, rotate their signing "
                  "secrets, and register new bots under the account",
}
"""Every scope an API token may carry, with what it allows."""


class UsernameTakenError(Exception):
    pass


class SignInDelayedError(Exception):
    """This client must wait ``wait_s`` seconds before trying this account again."""

    def __init__(self, wait_s: int) -> None:
        super().__init__(f"wait {wait_s} s")
        self.wait_s = wait_s


# --- checks of what people type --------------------------------------------------------------


def username_problem(username: str) -> str:
    if not USERNAME_RE.fullmatch(username):
        return (f"3 to {USERNAME_MAX} letters, digits, '_', '.' or '-', starting with a letter "
                "or digit")
    return ""


def password_problem(app: Flask, password: str, username: str = "") -> str:
    low, high = int(app.config["PASSWORD_MIN"]), int(app.config["PASSWORD_MAX"])
    if len(password) < low:
        return f"at least {low} characters"
    if len(password) > high:
        return f"at most {high} characters"
    if username and password.lower() == username.lower():
        return "not your username"
    return ""


def email_problem(email: str) -> str:
    if email and not EMAIL_RE.fullmatch(email):
        return "an address like name@example.org, or nothing"
    return ""


def token_name_problem(name: str) -> str:
    if not name or len(name) > TOKEN_NAME_MAX or not name.isprintable():
        return f"1 to {TOKEN_NAME_MAX} printable characters"
    return ""


def scopes_problem(scopes: list[str]) -> str:
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        return f"unknown scope {unknown[0]!r}; known: {', '.join(SCOPES)}"
    if not scopes:
        return "choose at least one scope"
    return ""


# --- accounts --------------------------------------------------------------------------------


def find(s: Session, username: str) -> Account | None:
    return s.scalar(select(Account).where(Account.username_key == username.lower()))


def sign_up(s: Session, app: Flask, *, username: str, password: str,
            email: str = "") -> Account:
    """A new account (the caller checked the username, password and e-mail and commits).
    Raises :class:`UsernameTakenError`."""
    if find(s, username) is not None:
        raise UsernameTakenError(username)
    now = utcnow()
    account = Account(username=username, username_key=username.lower(), email=email or None,
                      password_hash=passwords.hash_password(app, password), created_at=now,
                      password_changed_at=now)
    s.add(account)
    try:
        with s.begin_nested():
            s.flush()
    except IntegrityError:
        raise UsernameTakenError(username) from None
    return account


def set_password(s: Session, app: Flask, account: Account, password: str) -> None:
    """A new password: every browser signed in with the old one is signed out (their proof
    names the old hash, :mod:`.sessions`), and an outstanding reset link dies."""
    account.password_hash = passwords.hash_password(app, password)
    account.password_changed_at = utcnow()
    account.reset_hash = None
    account.reset_expires_at = None


def _delay(s: Session, account_id: int, client: str) -> SignInDelay | None:
    return s.get(SignInDelay, (account_id, client))


def wait_left(s: Session, account_id: int, client: str, now: dt.datetime) -> int:
    row = _delay(s, account_id, client)
    if row is None or row.until is None or row.until <= now:
        return 0
    return max(1, int((row.until - now).total_seconds() + 0.999))


def authenticate(s: Session, app: Flask, *, username: str, password: str,
                 client: str) -> Account | None:
    """The account if ``password`` is its password, else None (the caller commits either
    way: a failure is counted).  Raises :class:`SignInDelayedError` without checking the
    password while this client must wait for this account."""
    account = find(s, username)
    if account is None:
        passwords.burn(app, password)
        return None
    now = utcnow()
    wait = wait_left(s, account.id, client, now)
    if wait:
        raise SignInDelayedError(wait)
    if not passwords.verify_password(app, account.password_hash, password):
        _count_failure(s, app, account.id, client, now)
        return None
    row = _delay(s, account.id, client)
    if row is not None:
        s.delete(row)
    if passwords.needs_rehash(app, account.password_hash):
        account.password_hash = passwords.hash_password(app, password)
    return account


def _count_failure(s: Session, app: Flask, account_id: int, client: str,
                   now: dt.datetime) -> None:
    row = _delay(s, account_id, client)
    if row is None:
        row = SignInDelay(account_id=account_id, client=client, failures=0, until=None)
        s.add(row)
    row.failures += 1
    over = row.failures - int(app.config["SIGN_IN_FREE_FAILURES"])
    if over > 0:
        wait = min(float(app.config["SIGN_IN_MAX_DELAY_S"]), 2.0 ** min(over - 1, 30))
        row.until = now + dt.timedelta(seconds=wait)
    try:
        with s.begin_nested():
            s.flush()
    except IntegrityError:  # the same client's parallel failure inserted it: one is counted
        pass


# --- the operator's reset --------------------------------------------------------------------


def start_reset(s: Session, app: Flask, account: Account) -> str:
    """A one-time reset token for ``account`` (the operator hands its link to the owner after
    checking who they are); it replaces any earlier one and lives ``ACCOUNT_RESET_TTL_S``."""
    token = new_token()
    account.reset_hash = hash_token(token)
    account.reset_expires_at = utcnow() + dt.timedelta(
        seconds=float(app.config["ACCOUNT_RESET_TTL_S"]))
    return token


def account_for_reset(s: Session, token: str) -> Account | None:
    """The account whose live reset token this is, or None (unknown, used or expired)."""
    if not token:
        return None
    account = s.scalar(select(Account).where(Account.reset_hash == hash_token(token)))
    if account is None or account.reset_expires_at is None \
            or account.reset_expires_at <= utcnow():
        return None
    return account


# --- bots ------------------------------------------------------------------------------------


def owns(account: Account | None, bot: Bot) -> bool:
    return account is not None and bot.account_id is not None and bot.account_id == account.id


def bots_of(s: Session, account: Account) -> list[Bot]:
    """The account's live bots, by name."""
    return list(s.scalars(select(Bot).where(Bot.account_id == account.id,
                                            Bot.deleted_at.is_(None)).order_by(Bot.name)))


def adopt(account: Account, bot: Bot, owner_token: str) -> bool:
    """Put ``bot`` under ``account`` if ``owner_token`` is the bot's owner token (the caller
    commits); False, changing nothing, otherwise.  A bot of another account moves too: its
    owner token is the proof of ownership the arena has always trusted."""
    if bot.deleted_at is not None or not token_matches(owner_token, bot.token_hash):
        return False
    bot.account_id = account.id
    bot.updated_at = utcnow()
    return True


# --- API tokens ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenUse:
    """Who an account token acts for, and what it may do."""

    account: Account
    token: AccountToken

    def allows(self, scope: str) -> bool:
        return scope in self.token.scope_set


def live_tokens(s: Session, account: Account) -> list[AccountToken]:
    return list(s.scalars(select(AccountToken).where(
        AccountToken.account_id == account.id, AccountToken.revoked_at.is_(None))
        .order_by(AccountToken.id)))


def create_token(s: Session, account: Account, name: str,
                 scopes: list[str]) -> tuple[AccountToken, str]:
    """A new token (the caller checked the name and scopes, and commits); the plaintext is
    returned to be shown once."""
    plain = TOKEN_PREFIX + new_token()
    row = AccountToken(account_id=account.id, name=name, token_hash=hash_token(plain),
                       scopes=" ".join(sorted(set(scopes))), created_at=utcnow())
    s.add(row)
    s.flush()
    return row, plain


def revoke_token(s: Session, account: Account, token_id: int) -> bool:
    """Revoke one of ``account``'s tokens (another account's is not found: False)."""
    row = s.get(AccountToken, token_id)
    if row is None or row.account_id != account.id or row.revoked_at is not None:
        return False
    row.revoked_at = utcnow()
    return True


def looks_like_account_token(token: str | None) -> bool:
    return bool(token) and str(token).startswith(TOKEN_PREFIX)


def use_token(s: Session, token: str | None) -> TokenUse | None:
    """Whom a bearer token acts for, if it is a live account token (read from the database on
    every request: revoking takes effect at once)."""
    if not looks_like_account_token(token):
        return None
    assert token is not None
    row = s.scalar(select(AccountToken).where(AccountToken.token_hash == hash_token(token),
                                              AccountToken.revoked_at.is_(None)))
    if row is None:
        return None
    account = s.get(Account, row.account_id)
    if account is None:
        return None
    return TokenUse(account, row)
