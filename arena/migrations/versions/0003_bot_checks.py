"""bot checks off the web thread: admission state, pending URLs, endpoints, pause reasons

Revision ID: 0003
Revises: 0005 (re-chained onto main's 0005 when rebasing)
Create Date: 2026-12-01 09:30:00

Existing bots were health-checked synchronously when they were submitted, so they start out
``passed``.  Each live bot gets the normalized endpoint of its URL; where several live bots
share one (possible before this revision), the oldest keeps it and the others keep none: they
go on playing (the ladder still never seats one endpoint twice), and their next URL change
takes an endpoint like any bot's.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import arena.core.models

revision = "0003"
down_revision = "0005"
branch_labels = None
depends_on = None


def _endpoint(url: str) -> str | None:
    from referee.wire.netguard import GuardError, NetPolicy, check_url

    try:
        t = check_url(url, NetPolicy(allow_private=True))
    except GuardError:
        return None
    host = f"[{t.host}]" if ":" in t.host else t.host
    return f"{t.scheme}://{host}:{t.port}{t.base_path or '/'}"


def upgrade() -> None:
    # Plain ADD COLUMN and CREATE INDEX: a batch copy of ``bots`` would break on SQLite's
    # foreign keys once other tables point at it.
    op.add_column("bots", sa.Column("endpoint", sa.Text(), nullable=True))
    op.add_column("bots", sa.Column("pending_url", sa.Text(), nullable=True))
    op.add_column("bots", sa.Column("pending_endpoint", sa.Text(), nullable=True))
    op.add_column("bots", sa.Column("check_state", sa.String(length=16), nullable=False,
                                    server_default="passed"))
    op.add_column("bots", sa.Column("pause_reason", sa.Text(), nullable=False,
                                    server_default=""))
    op.add_column("bots", sa.Column("judged_since", arena.core.models.UTCDateTime(),
                                    nullable=True))
    op.add_column("health_checks", sa.Column("state", sa.String(length=16), nullable=False,
                                             server_default="done"))
    op.add_column("health_checks", sa.Column("purpose", sa.String(length=16), nullable=False,
                                             server_default="sweep"))
    op.add_column("health_checks", sa.Column("finished_at", arena.core.models.UTCDateTime(),
                                             nullable=True))
    conn = op.get_bind()
    bots = sa.table("bots", sa.column("id", sa.Integer()), sa.column("url", sa.Text()),
                    sa.column("deleted_at", sa.DateTime()),
                    sa.column("endpoint", sa.Text()))
    taken: set[str] = set()
    rows = conn.execute(sa.select(bots.c.id, bots.c.url)
                        .where(bots.c.deleted_at.is_(None)).order_by(bots.c.id)).all()
    for bot_id, url in rows:
        endpoint = _endpoint(url)
        if endpoint is None or endpoint in taken:
            continue
        taken.add(endpoint)
        conn.execute(sa.update(bots).where(bots.c.id == bot_id).values(endpoint=endpoint))
    op.create_index("uq_bots_endpoint", "bots", ["endpoint"], unique=True)
    op.create_index("uq_bots_pending_endpoint", "bots", ["pending_endpoint"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_bots_pending_endpoint", table_name="bots")
    op.drop_index("uq_bots_endpoint", table_name="bots")
    for table, column in (("health_checks", "finished_at"), ("health_checks", "purpose"),
                          ("health_checks", "state"), ("bots", "judged_since"),
                          ("bots", "pause_reason"), ("bots", "check_state"),
                          ("bots", "pending_endpoint"), ("bots", "pending_url"),
                          ("bots", "endpoint")):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
