"""Before a long-running process starts work: is its database there, and migrated?

``arena serve``, ``arena worker`` and ``arena clock`` are often started by a supervisor
(compose, systemd, a Procfile runner) at the same moment as PostgreSQL, or before an
operator has run the release's migration.  Started blind, the web process answered 500s, the
clock logged a failed tick every second and a worker failed every job it took.  So each of
them first calls :func:`wait_for_database`:

* **Not reachable** (the server is not up yet, or the URL is wrong): try again with a
  doubling back-off (half a second up to :data:`MAX_BACKOFF_S`) until ``STARTUP_DB_WAIT_S``
  has passed, logging one line per attempt; then give up with ``database unreachable at
  <url>`` (the password hidden).
* **Reachable, schema not this code's**: give up at once (waiting would not migrate it):
  ``database schema at revision X, code needs Y: run `arena init-db```.
* **SQLite** (the embedded mode, one machine): a file is not "up" or "down", and there is
  no separate release step to run the migrations, so the process brings the schema up to date
  itself, as ``arena demo`` does.  A server database is never migrated here: that is the
  release's one-shot ``arena init-db`` (the ``migrate`` service of
  ``deploy/docker-compose.yml``), not something every worker should race to do.

Giving up raises :class:`~arena.ops.cli_app.DatabaseNotReady`: one line on stderr, exit status 1.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from alembic.runtime.migration import MigrationContext
from flask import Flask
from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from arena.core.storage import (
    current_revision,
    database_url,
    get_db,
    head_revision,
    known_revisions,
    upgrade,
)

from .cli_app import DatabaseNotReady

log = logging.getLogger(__name__)

FIRST_BACKOFF_S = 0.5
"""Wait after the first failed attempt (it doubles after each further one)."""
MAX_BACKOFF_S = 8.0
"""Longest wait between two attempts."""
MAX_CONNECT_TIMEOUT_S = 10
"""Longest one connection attempt may take (a host that drops packets instead of refusing
would otherwise hold an attempt for the kernel's TCP timeout, minutes)."""


def shown_url(url: str) -> str:
    """``url`` as it may be logged: the password replaced by ``***``."""
    return make_url(url).render_as_string(hide_password=True)


def _reason(exc: BaseException) -> str:
    """The first line of what the driver said (not the SQLAlchemy boilerplate around it)."""
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _probe_engine(url: str, limit_s: float) -> Engine:
    """An engine of its own for the attempts: no pool (each attempt is a new connection)
    and a bounded connection timeout."""
    args: dict[str, Any] = {}
    if make_url(url).get_backend_name() == "postgresql":
        # libpq takes whole seconds and treats 1 as 2; never 0 (that means "wait forever").
        args["connect_timeout"] = max(2, min(MAX_CONNECT_TIMEOUT_S, int(limit_s or 10)))
    return create_engine(url, poolclass=NullPool, connect_args=args)


def _revision(engine: Engine) -> str | None:
    """One attempt: connect, and read the schema's revision (None: no arena tables)."""
    with engine.connect() as conn:
        rev: str | None = MigrationContext.configure(conn).get_current_revision()
        return rev


def wait_for_database(app: Flask, *, what: str) -> None:
    """Return once ``app``'s database answers and is at this code's newest migration (after
    migrating it, on SQLite); raise :class:`DatabaseNotReady` when it did not answer within
    ``STARTUP_DB_WAIT_S`` or its schema is another one.  ``what`` names the process in the
    log lines (``arena worker``)."""
    url = database_url(app)
    where = shown_url(url)
    want = head_revision()
    if make_url(url).get_backend_name() == "sqlite":
        _migrate_embedded(app, where, want, what)
        return
    limit_s = max(0.0, float(app.config["STARTUP_DB_WAIT_S"]))
    # Alembic says "Context impl PostgresqlImpl." on each attempt: nothing for an operator.
    logging.getLogger("alembic.runtime.migration").setLevel(logging.WARNING)
    engine = _probe_engine(url, limit_s)
    try:
        have, tries = _first_answer(engine, where, what, limit_s)
    finally:
        engine.dispose()
    log.info("%s: database %s reachable (attempt %d), schema at revision %s", what, where,
             tries, have or "none")
    if have != want:
        raise DatabaseNotReady(schema_mismatch(have, want))


def _first_answer(engine: Engine, where: str, what: str,
                  limit_s: float) -> tuple[str | None, int]:
    """The schema's revision once the database answers, and the attempts it took."""
    deadline = time.monotonic() + limit_s
    backoff = FIRST_BACKOFF_S
    tries = 0
    while True:
        tries += 1
        try:
            return _revision(engine), tries
        except SQLAlchemyError as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                log.error("%s: database %s not reachable (attempt %d): %s; giving up "
                          "(STARTUP_DB_WAIT_S=%g)", what, where, tries, _reason(exc), limit_s)
                raise DatabaseNotReady(
                    f"database unreachable at {where} (tried {tries} time(s) over "
                    f"{limit_s:g} s, STARTUP_DB_WAIT_S; last: {_reason(exc)})") from None
            pause = min(backoff, left)
            log.warning("%s: database %s not reachable (attempt %d): %s; next attempt in "
                        "%.1f s", what, where, tries, _reason(exc), pause)
            time.sleep(pause)
            backoff = min(backoff * 2, MAX_BACKOFF_S)


def schema_mismatch(have: str | None, want: str | None) -> str:
    """What to tell an operator whose database is at ``have`` while the code needs ``want``."""
    said = f"database schema at revision {have or 'none'}, code needs {want}"
    if have is not None and have not in known_revisions():
        return (f"{said}: {have} is no migration of this code (a newer release's?); run the "
                "release that migrated it, or restore a database of this one")
    return f"{said}: run `arena init-db`"


def _migrate_embedded(app: Flask, where: str, want: str | None, what: str) -> None:
    """The embedded SQLite database: bring it to ``want`` (creating it if need be)."""
    db = get_db(app)
    try:
        have = current_revision(db)
    except SQLAlchemyError as exc:  # an unwritable folder, a file that is no database
        raise DatabaseNotReady(f"database unreachable at {where}: {_reason(exc)}") from None
    if have == want:
        log.info("%s: database %s at revision %s", what, where, have)
        return
    if have is not None and have not in known_revisions():
        raise DatabaseNotReady(schema_mismatch(have, want))
    upgrade(db)
    log.info("%s: database %s migrated from revision %s to %s (embedded SQLite)", what,
             where, have or "none", want)
