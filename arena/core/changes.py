"""Whether a request really changed what the pages show: the storage layer says, on commit.

Why
---
The response cache (:mod:`arena.web.readcache`, and its shared tier
:mod:`arena.web.sharedcache`) forgets every render when a request changes something, so
that a writer reads its own change at once.  It used to take *any* successful non-GET for
a change: a visitor signing out (a CSRF-checked POST that needs nobody signed in) emptied
every process's cache, and a flood of such no-op writes (778 sign-outs in 3 s) kept every
page uncached for everyone.

A list of "routes that write" would be forgotten by the next route, and a route that
declares its changes could declare them wrong.  The database knows: this module watches
every statement of the app's engine and marks the request when a transaction that
*changed rows pages show* commits.  Nothing else empties the cache, whatever the method:

* a statement that only reads (``SELECT``, ``PRAGMA``, ``SAVEPOINT``, ...) changes nothing;
* an ``INSERT``/``UPDATE``/``DELETE`` whose row count is 0 changed nothing (an update whose
  condition no longer held); the ORM emits no ``UPDATE`` for an attribute set to the value
  it already had;
* a write to a table no page shows (:data:`UNSHOWN`: the idempotency keys) changes nothing
  a visitor sees;
* anything else (another write, DDL, a statement this module cannot read) counts as a
  change: when unsure, the cache is emptied, as before;
* a transaction that rolls back changed nothing.

Writes outside a request (workers, the clock) are caught up with by the cache's time bound
(``READ_CACHE_S``), as before.
"""

from __future__ import annotations

import re
from typing import Any

from flask import g, has_app_context
from sqlalchemy import Engine, event

UNSHOWN = frozenset({"idempotency_keys", "accounts", "account_tokens", "sign_in_delays"})
"""Tables no page or public API answer shows: writes to them leave every render valid.  The
account tables show only on a signed-in account's own pages, which are never cached (a
flood of wrong passwords, each counted in ``sign_in_delays``, must not empty the cache)."""
PENDING = "arena_changed_rows"
"""Key in a connection's ``info``: its open transaction changed rows pages show."""
MARK = "arena_state_changed"
"""Attribute of Flask's ``g``: a transaction of this request committed such a change."""

_READ = re.compile(r"^\s*(?:SELECT|PRAGMA|SHOW|SET|BEGIN|SAVEPOINT|RELEASE|ROLLBACK|COMMIT|"
                   r"EXPLAIN|VALUES)\b", re.IGNORECASE)
_WRITE = re.compile(r'^\s*(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM)\s+'
                    r'(?:"?\w+"?\.)?"?(\w+)"?', re.IGNORECASE)


def changes_shown_rows(statement: str, rowcount: int) -> bool:
    """Whether a statement that ran (and reported ``rowcount``: -1 when unknown) changed
    rows that pages show (see the module docstring)."""
    if _READ.match(statement):
        return False
    write = _WRITE.match(statement)
    if write is None:
        return True  # DDL, a CTE, anything unread: count it
    if write.group(1).lower() in UNSHOWN:
        return False
    return rowcount != 0


def watch(engine: Engine) -> None:
    """Mark the current request (:func:`state_changed`) whenever a transaction of
    ``engine`` that changed shown rows commits."""

    @event.listens_for(engine, "after_cursor_execute")
    def _executed(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
                  executemany: bool) -> None:
        if not conn.info.get(PENDING) and changes_shown_rows(statement, cursor.rowcount):
            conn.info[PENDING] = True

    @event.listens_for(engine, "begin")
    def _begun(conn: Any) -> None:
        conn.info.pop(PENDING, None)

    @event.listens_for(engine, "rollback")
    def _rolled_back(conn: Any) -> None:
        # A connection that died mid-transaction (a failover, a restart) is rolled back
        # while invalidated: reading its ``info`` would try to reconnect and raise
        # PendingRollbackError from inside the rollback, so the caller saw that instead of
        # the OperationalError (and a finished match's store was not retried).  Its info
        # goes with the dead connection.
        if conn.invalidated:
            return
        conn.info.pop(PENDING, None)

    @event.listens_for(engine, "commit")
    def _committing(conn: Any) -> None:
        # Just before the commit itself: the cache is emptied after the request, once the
        # commit has happened (a failed commit empties it for nothing, which is harmless).
        if conn.info.pop(PENDING, False) and has_app_context():
            setattr(g, MARK, True)


def state_changed() -> bool:
    """Whether this request committed a change of rows that pages show."""
    return bool(g.get(MARK, False))
