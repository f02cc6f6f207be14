"""bot name trigrams: the bot list's name search finds its hits without walking every name

``ix_bots_name_trgm`` (PostgreSQL only): a GIN index of ``lower(name)``'s trigrams
(``pg_trgm``), for the bot list's search (``/bots?q=``, ``WHERE lower(name) LIKE
'%part%'``).  Without it the search walked the name index until a page of hits: a name
that matched nothing read every bot (158 ms at 100,000 bots), one whose hits sorted late
read every name before them.  With it the planner picks, per search, the name index (a
part most names hold) or the trigrams (a rare part: 0.2 ms when nothing matches).

``pg_trgm`` ships with PostgreSQL and is a trusted extension (any role that may create in
the database may add it, PostgreSQL 13 and later).  Where it cannot be added the upgrade
goes on without the index, and says so: the search works, walking the names as before
(docs/operations.md says how to add it later).  SQLite has no such index: the demo's few
bots are read whole.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07 19:10:00
"""

from __future__ import annotations

import logging

from alembic import op
from sqlalchemy.exc import DBAPIError

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

log = logging.getLogger("arena.migrations")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    try:
        with bind.begin_nested():  # a refusal must not abort the migration's transaction
            op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DBAPIError as exc:
        log.warning("pg_trgm could not be added (%s): the bot list's name search walks the "
                    "name index without ix_bots_name_trgm; see docs/operations.md",
                    str(exc.orig).strip().splitlines()[0])
        return
    op.execute("CREATE INDEX ix_bots_name_trgm ON bots USING gin (lower(name) gin_trgm_ops)")


def downgrade() -> None:
    # The extension stays: another schema may use it, and it costs nothing unused.
    op.execute("DROP INDEX IF EXISTS ix_bots_name_trgm")
