"""Password hashing: argon2id through argon2-cffi, a maintained binding of the reference
implementation.  The parameters come from the settings (``ARGON2_*``); every stored hash
carries its own, so changing the settings rehashes a password at its owner's next sign-in
(:func:`needs_rehash`) and never breaks an old one."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from flask import Flask


def hasher(app: Flask) -> PasswordHasher:
    """The app's hasher (one per app: the tests build apps with cheaper parameters)."""
    found: PasswordHasher | None = app.extensions.get("arena.argon2")
    if found is None:
        cfg = app.config
        found = PasswordHasher(time_cost=int(cfg["ARGON2_TIME_COST"]),
                               memory_cost=int(cfg["ARGON2_MEMORY_KIB"]),
                               parallelism=int(cfg["ARGON2_PARALLELISM"]))
        app.extensions["arena.argon2"] = found
    return found


def hash_password(app: Flask, password: str) -> str:
    return hasher(app).hash(password)


def verify_password(app: Flask, stored: str, password: str) -> bool:
    try:
        return hasher(app).verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(app: Flask, stored: str) -> bool:
    return hasher(app).check_needs_rehash(stored)


def burn(app: Flask, password: str) -> None:
    """Spend the time of one verification for a username that does not exist, so the answer
    takes as long as for a wrong password (no timing difference to list usernames by)."""
    dummy: str | None = app.extensions.get("arena.argon2.dummy")
    if dummy is None:
        dummy = app.extensions["arena.argon2.dummy"] = hash_password(app, "not a password")
    verify_password(app, dummy, password)
